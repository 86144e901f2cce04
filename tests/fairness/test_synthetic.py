"""The known-truth generator: tail shape, planted means against a large draw, seeding."""

from __future__ import annotations

import numpy as np
import pytest

from recaudit import InputError
from recaudit.fairness import METRICS, long_tail_stats, per_user_metrics
from recaudit.fairness.simulation._lists import planted_truth, simulate_interbias, zipf_exponent


@pytest.mark.parametrize("share", [0.65, 0.8, 0.9])
def test_zipf_exponent_hits_the_share(share: float) -> None:
    s = zipf_exponent(400, share)
    w = np.arange(1, 401) ** -s
    assert w[:80].sum() / w.sum() == pytest.approx(share, abs=1e-9)
    with pytest.raises(InputError, match="top_share"):
        zipf_exponent(400, 0.1)


@pytest.mark.parametrize(("share", "n_train"), [(0.65, 20), (0.8, 10), (0.9, 20)])
def test_training_tail_matches_the_target(share: float, n_train: int) -> None:
    d = simulate_interbias(3000, rng=np.random.default_rng(0), top_share=share, n_train=n_train)
    assert long_tail_stats(d.train).top_share == pytest.approx(share, abs=0.01)


@pytest.mark.parametrize("rd", [0.0, 0.2])
def test_planted_means_against_a_large_draw(rd: float) -> None:
    rng = np.random.default_rng(1)
    d = simulate_interbias(40_000, rng=rng, rd=rd, base_hit=0.4, n_test=5, list_length=20)
    m = per_user_metrics(d.recs, d.test, n=[5, 10, 20]).merge(d.users, on="user_id")
    truth = planted_truth(n_test=5, list_length=20, base_hit=0.4, rd=rd, n=[5, 10, 20])
    for key in (f"{name}@{c}" for name in METRICS for c in (5, 10, 20)):
        for group, label in (("F", "protected"), ("M", "unprotected")):
            x = m.loc[m.gender == group, key]
            se = x.std() / np.sqrt(len(x))
            assert abs(x.mean() - truth[key][label]) < 4.5 * se + 1e-12, (key, group)
        if key.split("@")[0] in ("precision", "recall", "ndcg"):
            assert truth[key]["rd"] == pytest.approx(rd)


def test_seeded_and_valid() -> None:
    a = simulate_interbias(30, rng=np.random.default_rng(5))
    b = simulate_interbias(30, rng=np.random.default_rng(5))
    assert a.recs.equals(b.recs) and a.users.equals(b.users)
    # lists never repeat an item nor recommend a training item
    assert not a.recs.duplicated(["user_id", "item_id"]).any()
    assert a.recs.merge(a.train, on=["user_id", "item_id"]).empty
    with pytest.raises(InputError, match="Generator"):
        simulate_interbias(10, rng=5)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="rd"):
        simulate_interbias(10, rng=np.random.default_rng(0), rd=0.9, base_hit=0.9)
