"""The study's statistics against scipy, statsmodels and hand computations."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from recaudit._stats import holm
from recaudit.exceptions import InputError
from recaudit.positional import (
    complete_case,
    dispersion_regression,
    hodges_lehmann,
    instance_spb,
    paired_wilcoxon,
    relevance_iou,
    set_iou,
    simulate_evaluations,
    strong_positional_bias,
)
from recaudit.positional._counterfactual import MSG_REG_CONSTANT, signed_rank_cdf
from recaudit.positional._metrics import item_counts, relevance_sets, spb_thresholds


def test_against_scipy_wilcoxon_zero_differences_excluded():
    a = np.array([0.5, 0.2, 0.3, 0.3, 0.9, 0.1, 0.4, 0.8, 0.6, 0.0, 0.7, 0.35])
    b = np.array([0.1, 0.2, 0.0, 0.3, 0.2, 0.15, 0.1, 0.3, 0.6, 0.05, 0.1, 0.2])
    res = paired_wilcoxon(a, b)
    d = (a - b)[a != b]
    ref = stats.wilcoxon(d)  # zeros dropped first: scipy may use the exact null
    assert res.n_pairs == 12 and res.n_used == 9  # three unchanged instances dropped
    assert res.statistic == pytest.approx(ref.statistic)
    assert res.pvalue == pytest.approx(ref.pvalue)
    # the same statistic as scipy's own zero_method="wilcox" on the pairs
    # (scipy < 1.13 warns that zeros were dropped and the normal approximation is used;
    # newer scipy does not: the warning is not part of what is tested)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert res.statistic == stats.wilcoxon(a, b, zero_method="wilcox").statistic
    assert res.mean_a == pytest.approx(a.mean()) and res.mean_b == pytest.approx(b.mean())
    assert res.median_difference == pytest.approx(np.median(a - b))


def test_wilcoxon_all_unchanged_is_not_a_test():
    x = np.array([0.2, 0.4, 0.1])
    res = paired_wilcoxon(x, x)
    assert res.n_used == 0 and np.isnan(res.pvalue) and "zero" in res.method


def test_wilcoxon_validates():
    with pytest.raises(InputError, match="same length"):
        paired_wilcoxon([1.0, 2.0], [1.0])
    with pytest.raises(InputError, match="non-finite"):
        paired_wilcoxon([1.0, np.nan], [1.0, 2.0])


def test_signed_rank_cdf_against_enumeration():
    n = 6
    sums = [sum(r for r, s in zip(range(1, n + 1), signs, strict=True) if s)
            for signs in itertools.product([0, 1], repeat=n)]
    counts = np.bincount(sums, minlength=n * (n + 1) // 2 + 1)
    np.testing.assert_allclose(signed_rank_cdf(n), np.cumsum(counts) / 2**n)


def test_hodges_lehmann_against_brute_force():
    rng = np.random.default_rng(3)
    d = rng.normal(0.3, 1.0, size=15)
    walsh = sorted((d[i] + d[j]) / 2 for i in range(15) for j in range(i, 15))
    est = hodges_lehmann(d)
    assert est.value == pytest.approx(np.median(walsh))
    # exact 95% bound for n = 15: c = 26 (tables: T+ lower critical value 25)
    assert est.ci.low == pytest.approx(walsh[25]) and est.ci.high == pytest.approx(walsh[-26])
    assert est.ci.low <= est.value <= est.ci.high


def test_hodges_lehmann_ci_is_the_inversion_of_the_signed_rank_test():
    # shifts inside the CI are not rejected by the exact two-sided test at 5%
    rng = np.random.default_rng(5)
    d = rng.normal(1.0, 1.0, size=12)
    est = hodges_lehmann(d)
    for shift, inside in ((est.ci.low + 1e-9, True), (est.ci.high - 1e-9, True),
                          (est.ci.low - 1e-3, False), (est.ci.high + 1e-3, False)):
        p = stats.wilcoxon(d - shift, method="exact").pvalue
        assert (p > 0.05) == inside, (shift, p)


def test_hodges_lehmann_large_n_and_tiny_n():
    rng = np.random.default_rng(0)
    big = hodges_lehmann(rng.normal(0.5, 1.0, size=400))
    assert big.ci.low < 0.5 < big.ci.high
    tiny = hodges_lehmann([0.1, 0.2, 0.3, 0.4, 0.5])  # n = 5: no 95% interval exists
    assert np.isnan(tiny.ci.low) and tiny.value == pytest.approx(0.3)


def test_iou_on_known_sets():
    a = [[1, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 0]]
    b = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0], [0, 1, 1, 1]]
    np.testing.assert_allclose(set_iou(a, b), [0.5, 0.0, 1.0, 0.5])


def test_relevance_iou_pairs_by_query_and_is_one_for_identical_sets():
    ev = simulate_evaluations(40, k=5, p_bias=0.2, rng=1)
    a = instance_spb(ev, rng=1)
    b = instance_spb(ev, p_hat=a.p_hat, rng=2)  # same data, other folds: same full-data sets
    res = relevance_iou(a, b, n_boot=200, rng=0)
    assert res.n_queries == 40 and res.mean.value == 1.0
    other = instance_spb(simulate_evaluations(40, k=5, p_bias=0.6, rng=9), rng=3)
    res2 = relevance_iou(a, other, n_boot=200, rng=0)
    assert res2.mean.value < 1.0 and res2.mean.ci.low <= res2.mean.value <= res2.mean.ci.high


def test_instance_spb_mean_is_the_cell_spb():
    ev = simulate_evaluations(60, k=5, p_bias=0.3, rng=4)
    inst = instance_spb(ev, rng=7)
    cell = strong_positional_bias(ev, rng=7)
    assert inst.spb.mean() == pytest.approx(cell.value)
    assert inst.p_hat == pytest.approx(cell.p_hat)
    fixed = instance_spb(ev, tau=0.8, rng=7)
    assert fixed.spb.mean() == pytest.approx(strong_positional_bias(ev, tau=0.8, rng=7).value)


def test_relevance_sets_against_a_loop():
    ev = simulate_evaluations(30, k=6, p_bias=0.3, rng=2)
    thr = spb_thresholds(6, None, 0.3)
    sets = relevance_sets(ev, thr)
    for j, counts in enumerate(item_counts(ev)):
        order = sorted(range(6), key=lambda i: (-counts[i], i))
        total, cum = counts.sum(), 0
        for m, i in enumerate(order, start=1):
            cum += counts[i]
            if cum >= thr[m - 1] * total - 1e-9:
                break
        expected = np.zeros(6, dtype=bool)
        expected[order[:m]] = True
        np.testing.assert_array_equal(sets[j], expected)


def test_against_numpy_hc1_sandwich():
    rng = np.random.default_rng(11)
    n = 80
    s = rng.gamma(2.0, 0.05, size=n)
    w = rng.integers(5, 21, size=n).astype(float)
    y = 20 + 30 * (s - s.mean()) + rng.normal(0, 1, size=n) * (1 + 40 * s)
    res = dispersion_regression(y, s, w)
    z = (s - s.mean()) / s.std(ddof=1)
    X = np.column_stack([np.ones(n), z])
    W = np.diag(w)
    bread = np.linalg.inv(X.T @ W @ X)
    beta = bread @ X.T @ W @ y
    e = y - X @ beta
    meat = X.T @ W @ np.diag(e**2) @ W @ X
    cov = n / (n - 2) * bread @ meat @ bread
    se = np.sqrt(cov[1, 1])
    assert res.slope.value == pytest.approx(beta[1])
    assert res.intercept == pytest.approx(beta[0])
    assert res.std_error == pytest.approx(se)
    assert res.pvalue == pytest.approx(2 * stats.norm.sf(abs(beta[1] / se)))
    assert res.slope.ci.low == pytest.approx(beta[1] - stats.norm.ppf(0.975) * se)
    assert res.n_queries == n and res.sum_weights == w.sum()


def test_dispersion_validates():
    with pytest.raises(InputError, match="same for every query"):
        dispersion_regression([1.0, 2.0, 3.0], [0.1, 0.1, 0.1], [1, 1, 1])
    assert "slope is not identified" in MSG_REG_CONSTANT
    with pytest.raises(InputError, match=">= 3 queries"):
        dispersion_regression([1.0, 2.0], [0.1, 0.2], [1, 1])
    with pytest.raises(InputError, match="weights"):
        dispersion_regression([1.0, 2.0, 3.0], [0.1, 0.2, 0.3], [-1, 1, 1])


def test_holm_against_statsmodels():
    p = [0.01, 0.04, 0.03, 0.20, np.nan]
    out = holm(p)
    np.testing.assert_allclose(out[:4], multipletests(p[:4], method="holm")[1])
    assert np.isnan(out[4])


def test_complete_case_keeps_queries_without_discards_per_model_and_k():
    t = pd.DataFrame({
        "model": ["m"] * 6 + ["n"] * 2,
        "k": [5] * 8,
        "temperature": [0.0] * 8,
        "condition": ["permutation", "decoding"] * 4,
        "query_id": ["a", "a", "b", "b", "c", "c", "a", "a"],
        "order": ["1 2 3 4 5"] * 8,
        "selected_position": [1, None, 2, 3, 4, 1, 2, 2],
    })
    cc = complete_case(t)
    assert cc.n_queries_dropped == 1 and cc.n_queries_kept == 3
    kept = set(zip(cc.table["model"], cc.table["query_id"], strict=True))
    assert kept == {("m", "b"), ("m", "c"), ("n", "a")}
    assert len(cc.table) == 6


def test_holm_with_gaps_against_statsmodels():
    rng = np.random.default_rng(8)
    for m in (1, 2, 5, 17):
        p = rng.uniform(0, 0.2, size=m)
        p[rng.random(m) < 0.2] = np.nan
        ok = np.isfinite(p)
        got = holm(list(p))
        assert np.isnan(got[~ok]).all()
        if ok.any():
            np.testing.assert_allclose(got[ok], multipletests(p[ok], method="holm")[1])
    assert holm([0.04, 0.04]).tolist() == [0.08, 0.08]
