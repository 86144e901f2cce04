"""IB rows of `compare_models` have an interval: the delete-one-user jackknife of
D = IB_A - IB_B with both models' NRD and item coverage recomputed without each user
(decision 0417). The fast jackknife matches a loop that recomputes IB on the n - 1
other users; the row's interval is D +- t_{n-1} se_J, finite and around D."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from _fm_data import synthetic
from scipy import stats

from recaudit.fairness import EvaluateOptions, compare_models, evaluate
from recaudit.fairness._compare_interbias import CoverageDesign, PairCoverage, ib_jackknife

CUTS = (3, 6)


def _naive_ib(x: np.ndarray, items: np.ndarray, prot: np.ndarray, keep: np.ndarray,
              n_items: int, cut_of_key: np.ndarray) -> np.ndarray:
    """IB of each key on the users ``keep`` from the definitions."""
    xs, ps = x[keep], prot[keep]
    pg, ug = xs[ps].mean(axis=0), xs[~ps].mean(axis=0)
    nrd = ((ug - pg) / (ug + pg) + 1) / 2
    ic = np.array([np.unique(items[keep, :c][items[keep, :c] >= 0]).size / n_items
                   for c in CUTS])
    return np.sqrt(nrd * (1 - ic[cut_of_key]))


def test_the_jackknife_is_the_loop_over_users() -> None:
    """Random metric values, lists with pads, a shared catalog: se_J to 1e-12."""
    gen = np.random.default_rng(17)
    n, n_items, k = 23, 40, 4
    prot = np.arange(n) % 3 == 0
    x_a, x_b = gen.random((n, k)), gen.random((n, k)) * 0.8
    items_a = np.stack([gen.choice(n_items, 6, replace=False) for _ in range(n)])
    items_b = np.stack([gen.choice(n_items // 2, 6, replace=False) for _ in range(n)])
    items_b[gen.random(n) < 0.3, 4:] = -1  # shorter lists
    design = CoverageDesign(cuts=CUTS, cut_of_key=np.array([0, 1, 0, 1]), n_items=n_items)
    se = ib_jackknife(x_a, x_b, prot, PairCoverage(items_a, items_b, design), design)
    d = np.array([_naive_ib(x_a, items_a, prot, np.arange(n) != u, n_items,
                            design.cut_of_key)
                  - _naive_ib(x_b, items_b, prot, np.arange(n) != u, n_items,
                              design.cut_of_key) for u in range(n)])
    naive = np.sqrt((n - 1) / n * ((d - d.mean(axis=0)) ** 2).sum(axis=0))
    assert np.all(naive > 0)
    np.testing.assert_allclose(se, naive, rtol=0, atol=1e-12)


def _ib_by_evaluate(recs: pd.DataFrame, test: pd.DataFrame, users: pd.DataFrame,
                    n_items: int) -> float:
    ev = evaluate(recs, test, users, attribute="gender", protected="F", n_items=n_items,
                  options=EvaluateOptions(n=(10,), n_boot=0, n_resamples=0,
                                          min_group_size=1))
    return float(ev.inter_bias["ndcg@10"].ib.value)


def test_the_row_s_interval_is_the_jackknife_of_evaluate_s_ib() -> None:
    """End to end: leaving each user out of the tables and calling `evaluate` gives the
    D_(-u) whose jackknife se makes the row's interval D +- t_{n-1} se_J (the old rows
    had nan); the Holm interval uses the same se at the family's level."""
    recs, test, users = synthetic(n_users=14, n_items=80, length=10, seed=11)
    other, _, _ = synthetic(n_users=14, n_items=80, length=10, seed=12, gap=0.5)
    other = other[other["rank"] <= 7]
    n_items = 80
    result = compare_models({"A": recs, "B": other}, test, users, attribute="gender",
                            protected="F", n_items=n_items, rng=0, options=EvaluateOptions(
                                n=(10,), n_boot=50, n_resamples=99, min_group_size=1))
    row = next(r for r in result.rows if r.metric == "ib_ndcg@10")
    d = []
    for u in users.user_id:
        keep = users[users.user_id != u]
        d.append(_ib_by_evaluate(recs[recs.user_id != u], test[test.user_id != u], keep,
                                 n_items)
                 - _ib_by_evaluate(other[other.user_id != u], test[test.user_id != u], keep,
                                   n_items))
    n = len(d)
    se = math.sqrt((n - 1) / n * float(np.sum((np.array(d) - np.mean(d)) ** 2)))
    half = float(stats.t.ppf(0.975, n - 1)) * se
    assert math.isfinite(row.ci_low) and math.isfinite(row.ci_high) and se > 0
    assert row.ci_low < row.difference < row.ci_high
    assert row.ci_low == pytest.approx(row.difference - half, abs=1e-12)
    assert row.ci_high == pytest.approx(row.difference + half, abs=1e-12)
    fam = float(stats.t.ppf(0.5 + row.adjusted_level / 2, n - 1)) * se
    assert row.adjusted_level > 0.95
    assert row.ci_low_adjusted == pytest.approx(row.difference - fam, abs=1e-12)
    assert row.ci_high_adjusted == pytest.approx(row.difference + fam, abs=1e-12)


def test_a_group_of_one_leaves_an_undefined_jackknife() -> None:
    """Leaving out the only protected user empties its group: no se, no interval."""
    gen = np.random.default_rng(2)
    n = 8
    prot = np.zeros(n, dtype=bool)
    prot[0] = True
    items = np.stack([gen.choice(30, 6, replace=False) for _ in range(n)])
    design = CoverageDesign(cuts=CUTS, cut_of_key=np.array([0, 1]), n_items=30)
    se = ib_jackknife(gen.random((n, 2)), gen.random((n, 2)), prot,
                      PairCoverage(items, items[::-1], design), design)
    assert np.isnan(se).all()
