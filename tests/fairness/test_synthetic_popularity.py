"""The truth of the popularity figures in the validation harness (`popularity_figures`)."""

from __future__ import annotations

import numpy as np
import pytest

from recaudit.fairness import EvaluateOptions, evaluate
from recaudit.fairness.simulation._lists import (
    PROFILE_NAMES,
    popularity_figures,
    simulate_interbias,
)

SIM = {"n_items": 400, "n_train": 20, "n_test": 5, "list_length": 20, "base_hit": 0.15}


def _section(res, cut: int) -> dict[str, float]:
    """`evaluate`'s popularity section flattened with `popularity_figures`' names."""
    pb = res.popularity_bias
    out = {k: e.value for k, e in pb.overall.items() if k.endswith(f"@{cut}")}
    out |= {k: e.value for k, e in pb.profile_overall.items()}
    for g, table in pb.profile_groups.items():
        out |= {f"{g}:{k}": e.value for k, e in table.items()}
    for label, group in pb.user_popularity_groups.items():
        out |= {f"{label}:{k}": e.value for k, e in group.metrics.items() if k.endswith(f"@{cut}")}
        out |= {f"{label}:{k}": e.value for k, e in group.profile.items()}
    return out


@pytest.mark.parametrize(("share", "rd", "grouping", "n_groups"), [
    (0.65, 0.0, "abdollahpouri", 3), (0.85, 0.2, "abdollahpouri", 3),
    (0.85, 0.1, "quantile:4", 4), (0.65, 0.1, "abdollahpouri:cumulative", 3)])
def test_against_evaluate(share: float, rd: float, grouping: str, n_groups: int) -> None:
    d = simulate_interbias(800, rng=np.random.default_rng(11), top_share=share, rd=rd, **SIM)
    options = EvaluateOptions(n=(10,), n_boot=0, n_resamples=0, popularity_groups=grouping)
    res = evaluate(d.recs, d.test, d.users, attribute="gender", protected="F", n_items=400,
                   train=d.train, options=options, rng=0)
    mine = popularity_figures(d, n=10, n_items=400, popularity_groups=grouping)
    theirs = _section(res, 10)
    assert set(mine) == set(theirs)
    assert len(mine) == 6 + 3 + 2 * 3 + n_groups * (6 + 3)
    for key, value in mine.items():
        assert value == pytest.approx(theirs[key], rel=1e-9, abs=1e-12), key


@pytest.mark.parametrize("share", [0.65, 0.85])
def test_tail_shares_against_the_closed_form(share: float) -> None:
    # every user draws n_train + n_test distinct items and the split is uniform: in the
    # population both tail shares are the tail's share of the expected interactions
    d = simulate_interbias(20_000, rng=np.random.default_rng(2), top_share=share, **SIM)
    fig = popularity_figures(d, n=10, n_items=400)
    for f in ("profile_tail_share", "test_tail_share"):
        assert fig[f] == pytest.approx(1 - share, abs=0.01), f
        assert fig[f"F:{f}"] == pytest.approx(fig[f"M:{f}"], abs=0.006), f
    # niche users are those with the most tail in training, blockbuster users the least
    tails = [fig[f"{g}:profile_tail_share"] for g in ("niche", "diverse", "blockbuster")]
    assert tails == sorted(tails, reverse=True)
    assert set(PROFILE_NAMES) <= set(fig)


def test_profile_popularity_scales_with_the_users() -> None:
    # popularity counts distinct training users, the user included: 1 + (n - 1) c
    big = popularity_figures(
        simulate_interbias(10_000, rng=np.random.default_rng(3), top_share=0.85, **SIM),
        n=10, n_items=400,
    )
    small = [
        popularity_figures(
            simulate_interbias(500, rng=np.random.default_rng(10 + k), top_share=0.85, **SIM),
            n=10, n_items=400,
        )
        for k in range(6)
    ]
    scale = 499 / 9_999
    for name, expected in (("profile_popularity", 1 + (big["profile_popularity"] - 1) * scale),
                           ("arp@10", big["arp@10"] * scale)):
        x = np.array([s[name] for s in small])
        # 4 Monte-Carlo s.e. of the mean of the small draws (the big one's error is ~4x less)
        assert abs(x.mean() - expected) < 4 * x.std(ddof=1) / np.sqrt(x.size), name
