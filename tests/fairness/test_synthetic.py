"""The known-truth generator: tail shape, planted means against a large draw, seeding."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from recaudit import InputError
from recaudit.fairness import METRICS, long_tail_stats, per_user_metrics
from recaudit.fairness.simulation import simulate_lists
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


def test_simulate_lists_plants_the_group_hit_rates() -> None:
    """A new recommender on a data set: its hits per user / n_test estimate each group's
    hit probability base_hit (1 -+ rd), within 4 standard errors of a large draw."""
    d = simulate_interbias(20_000, rng=np.random.default_rng(2), protected_share=0.3)
    recs = simulate_lists(d, rng=np.random.default_rng(3), base_hit=0.25, rd=0.2)
    assert len(recs) == 20 * 20_000 and recs.groupby("user_id")["rank"].max().eq(20).all()
    # still no training item and no repeat; the hits are test items
    assert not recs.duplicated(["user_id", "item_id"]).any()
    assert recs.merge(d.train, on=["user_id", "item_id"]).empty
    hits = recs.merge(d.test, on=["user_id", "item_id"]).groupby("user_id").size()
    rate = (hits.reindex(d.users["user_id"], fill_value=0) / 5).to_numpy()
    for group, pi in (("F", 0.25 * 0.8), ("M", 0.25 * 1.2)):
        x = rate[(d.users["gender"] == group).to_numpy()]
        assert abs(x.mean() - pi) < 4 * np.sqrt(pi * (1 - pi) / (5 * x.size)), group


def test_simulate_lists_seeded_and_checked() -> None:
    d = simulate_interbias(100, rng=np.random.default_rng(0))
    a = simulate_lists(d, rng=np.random.default_rng(1))
    assert a.equals(simulate_lists(d, rng=np.random.default_rng(1)))
    assert not a.equals(simulate_lists(d, rng=np.random.default_rng(2)))
    assert not a.equals(d.recs)
    assert a[["user_id", "rank"]].equals(d.recs[["user_id", "rank"]])
    assert len(simulate_lists(d, rng=np.random.default_rng(1), list_length=10)) == 1000
    with pytest.raises(InputError, match="Generator"):
        simulate_lists(d, rng=1)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="rd"):
        simulate_lists(d, rng=np.random.default_rng(0), rd=0.5, base_hit=0.7)
    with pytest.raises(InputError, match="n_items"):
        simulate_lists(d, rng=np.random.default_rng(0), list_length=380)
    with pytest.raises(InputError, match="test items"):
        simulate_lists(dataclasses.replace(d, test=d.test.iloc[1:]), rng=np.random.default_rng(0))
