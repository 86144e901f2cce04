"""Coverage, exposure Gini, average popularity, long-tail profile."""

from __future__ import annotations

import numpy as np
import pytest

from recaudit import InputError
from recaudit.fairness import _exposure as mod
from recaudit.fairness import (
    average_popularity,
    exposure_gini,
    gini_index,
    item_coverage,
    popularity_profile,
)
from recaudit.fairness._exposure import _coverage_replicates

TOP = np.array([[0, 1, 2], [0, 3, -1], [4, 0, 1]])


def test_item_coverage_hand() -> None:
    np.testing.assert_allclose(item_coverage(TOP, n_items=10, n=[1, 2, 3]), [0.2, 0.4, 0.5])


def test_against_recbole_coverage_and_gini() -> None:
    metrics = pytest.importorskip("recbole.evaluator.metrics")
    rng = np.random.default_rng(0)
    top = np.vstack([rng.choice(40, size=10, replace=False) for _ in range(50)])
    cfg = {"topk": [5, 10], "metric_decimal_place": 8}
    cov = metrics.ItemCoverage(cfg)
    gini = metrics.GiniIndex(cfg)
    np.testing.assert_allclose(
        item_coverage(top, n_items=60, n=[5, 10]),
        [cov.get_coverage(top[:, :k], 60) for k in (5, 10)],
    )
    np.testing.assert_allclose(
        exposure_gini(top, n_items=60, n=[5, 10]),
        [gini.get_gini(top[:, :k], 60) for k in (5, 10)],
    )


def test_gini_index_extremes() -> None:
    assert gini_index([3, 3, 3]) == 0.0
    assert gini_index([0, 0, 0]) == 0.0
    assert gini_index([0, 0, 0, 10]) == pytest.approx(0.75)  # (n - 1) / n
    with pytest.raises(InputError, match="`values`"):
        gini_index([1, -1])


def test_average_popularity_ignores_padding() -> None:
    pop = np.array([10.0, 20, 30, 40, 50])
    # user 2 has a list of 2 at N=3: mean over its 2 items
    arp = average_popularity(TOP, pop, n=[1, 3])
    np.testing.assert_allclose(arp, [(10 + 10 + 50) / 3, (20 + 25 + 80 / 3) / 3])
    with pytest.raises(InputError, match="`popularity`"):
        average_popularity(TOP, pop[:3], n=[1])


def test_popularity_profile() -> None:
    p = popularity_profile(np.array([0, 5, 50, 30, 10, 5]))
    assert p.n_items == 6 and p.n_interactions == 100
    assert p.n_head_items == 1 and p.is_head.tolist() == [False, False, True, False, False, False]
    assert p.top20_interaction_share == pytest.approx(0.8)  # ceil(1.2) = 2 items: 50 + 30
    np.testing.assert_array_equal(p.counts_sorted, [50, 30, 10, 5, 5, 0])
    with pytest.raises(InputError, match=r"`head_share` must be in \(0, 1\)"):
        popularity_profile([1, 2], head_share=1.5)


def test_bad_top_items() -> None:
    with pytest.raises(InputError, match="`top_items`"):
        item_coverage(np.array([[0.5, 1.0]]), n_items=3, n=[2])
    with pytest.raises(InputError, match="`n_items`"):
        item_coverage(TOP, n_items=3, n=[2])
    assert "{n_max}" in mod.TOP_ITEMS_MSG


def test_coverage_replicates_match_direct_computation() -> None:
    rng = np.random.default_rng(1)
    top = np.vstack([rng.choice(30, size=6, replace=False) for _ in range(20)])
    w = rng.multinomial(20, np.full(20, 1 / 20), size=8)
    reps = _coverage_replicates(top, 40, (2, 6), w)
    for b in range(8):
        chosen = top[w[b] > 0]
        np.testing.assert_allclose(reps[b], item_coverage(chosen, n_items=40, n=[2, 6]))
