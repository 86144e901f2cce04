"""Shared statistics helpers, checked against scipy and statsmodels."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from recaudit import InputError
from recaudit._stats import (
    CI_RULES,
    RULE_METHOD,
    as_generator,
    basic_interval,
    binomial_interval,
    bootstrap_interval,
    bootstrap_weights,
    folded_basic_interval,
    holm,
    monte_carlo_pvalue,
    percentile_interval,
)


def test_against_statsmodels_holm() -> None:
    p = np.array([0.01, 0.04, 0.03, 0.2, 0.005])
    np.testing.assert_allclose(holm(p), multipletests(p, method="holm")[1])


def test_holm_keeps_nan_out_of_the_family() -> None:
    out = holm([0.01, np.nan, 0.04])
    assert np.isnan(out[1])
    np.testing.assert_allclose(out[[0, 2]], multipletests([0.01, 0.04], method="holm")[1])


def test_monte_carlo_pvalue_plus_one() -> None:
    assert monte_carlo_pvalue(10.0, np.zeros(99)) == pytest.approx(1 / 100)
    assert monte_carlo_pvalue(0.0, np.zeros(99)) == 1.0
    assert monte_carlo_pvalue(-1.0, np.zeros(9), alternative="less") == pytest.approx(0.1)


def test_bootstrap_weights_sum_to_n_and_respect_strata() -> None:
    rng = np.random.default_rng(0)
    strata = np.array([0] * 7 + [1] * 3)
    chunks = list(bootstrap_weights(10, 250, rng, strata=strata, chunk_size=100))
    w = np.vstack(chunks)
    assert w.shape == (250, 10)
    assert (w[:, :7].sum(axis=1) == 7).all()
    assert (w[:, 7:].sum(axis=1) == 3).all()


def test_against_scipy_bootstrap_mean() -> None:
    rng = np.random.default_rng(1)
    x = rng.exponential(size=300)
    w = np.vstack(list(bootstrap_weights(x.size, 4000, np.random.default_rng(2))))
    ours = percentile_interval(w @ x / x.size)
    ref = stats.bootstrap(
        (x,), np.mean, method="percentile", n_resamples=4000, random_state=3
    ).confidence_interval
    assert ours.low == pytest.approx(ref.low, abs=0.02)
    assert ours.high == pytest.approx(ref.high, abs=0.02)


def test_percentile_interval_all_nan() -> None:
    ci = percentile_interval([np.nan, np.nan])
    assert np.isnan(ci.low) and np.isnan(ci.high)


def test_against_statsmodels_wilson() -> None:
    ci = binomial_interval(40, 200)
    ref = stats.binomtest(40, 200).proportion_ci(method="wilson")
    assert ci.low == pytest.approx(ref.low) and ci.high == pytest.approx(ref.high)


def test_as_generator() -> None:
    g = np.random.default_rng(5)
    assert as_generator(g) is g
    assert as_generator(3).integers(100) == np.random.default_rng(3).integers(100)
    with pytest.raises(InputError, match="`rng`"):
        as_generator("seed")  # type: ignore[arg-type]


def test_basic_interval_by_hand() -> None:
    # sorted replicates 0.1 0.2 0.4 0.5 0.9: quantiles 0.25 / 0.75 are 0.2 / 0.5
    ci = basic_interval([0.1, 0.4, 0.2, np.nan, 0.9, 0.5], 0.3, confidence_level=0.5)
    assert (ci.low, ci.high) == pytest.approx((0.6 - 0.5, 0.6 - 0.2))
    assert ci.method == RULE_METHOD["basic"] == "basic bootstrap"
    assert np.isnan(basic_interval([np.nan], 0.3).low)
    assert np.isnan(basic_interval([0.1, 0.2], np.nan).high)


def test_basic_interval_is_clipped_to_the_support() -> None:
    # replicates 0.1 0.2 0.4 0.5 0.9 around 0.1: the reflection is [-0.3, 0.0] unclipped
    reps = [0.1, 0.4, 0.2, 0.9, 0.5]
    free = basic_interval(reps, 0.1, confidence_level=0.5)
    assert (free.low, free.high) == pytest.approx((-0.3, 0.0))
    ci = basic_interval(reps, 0.1, confidence_level=0.5, support=(0.0, 1.0))
    assert (ci.low, ci.high) == pytest.approx((0.0, 0.0))
    high = basic_interval([0.5, 0.6, 0.7], 0.8, confidence_level=0.5, support=(0.0, 1.0))
    assert high.high == 1.0 and high.low == pytest.approx(2 * 0.8 - 0.65)
    # the rule passes the support to the basic interval only
    assert bootstrap_interval("basic", reps, 0.1, confidence_level=0.5,
                              support=(0.0, 1.0)) == ci
    assert bootstrap_interval("percentile", [-0.5, 0.5], 0.0, support=(0.0, 1.0)).low < 0


def test_basic_interval_equals_scipy_on_its_replicates() -> None:
    x = np.random.default_rng(4).exponential(size=200)
    res = stats.bootstrap((x,), np.mean, method="basic", n_resamples=999, random_state=5)
    ci = basic_interval(res.bootstrap_distribution, float(x.mean()))
    assert ci.low == pytest.approx(res.confidence_interval.low, rel=1e-12)
    assert ci.high == pytest.approx(res.confidence_interval.high, rel=1e-12)
    # a percentile interval of the same replicates is the reflection around the estimate
    pct = percentile_interval(res.bootstrap_distribution)
    assert ci.low + pct.high == pytest.approx(2 * x.mean()) == ci.high + pct.low


def test_folded_basic_interval_by_hand() -> None:
    z = np.array([-0.3, -0.1, 0.0, 0.2, 0.4])  # quantiles 0.25 / 0.75 of z: -0.1 / 0.2
    d = np.tanh(z)
    # positive: [tanh(2 z - 0.2), tanh(2 z + 0.1)] at z = atanh(0.1)
    ci = folded_basic_interval(d, 0.1, confidence_level=0.5)
    zh = np.arctanh(0.1)
    assert (ci.low, ci.high) == pytest.approx((np.tanh(2 * zh - 0.2), np.tanh(2 * zh + 0.1)))
    assert ci.method == "basic bootstrap on atanh, folded"
    # straddling 0: [0, max |bound|]
    ci = folded_basic_interval(d, 0.0, confidence_level=0.5)
    assert (ci.low, ci.high) == pytest.approx((0.0, np.tanh(0.2)))
    # negative: the bounds' absolute values, in order
    zh = np.arctanh(-0.5)
    ci = folded_basic_interval(d, -0.5, confidence_level=0.5)
    assert (ci.low, ci.high) == pytest.approx((-np.tanh(2 * zh + 0.1), -np.tanh(2 * zh - 0.2)))


def test_folded_basic_interval_is_the_basic_one_on_atanh() -> None:
    rng = np.random.default_rng(6)
    d = np.tanh(rng.normal(0.4, 0.1, size=500))
    est = 0.35
    ci = folded_basic_interval(d, est)
    z = basic_interval(np.arctanh(d), float(np.arctanh(est)))
    assert (ci.low, ci.high) == pytest.approx((np.tanh(z.low), np.tanh(z.high)))
    mirrored = folded_basic_interval(-d, -est)  # the sign of d does not matter
    assert (mirrored.low, mirrored.high) == pytest.approx((ci.low, ci.high))
    # and a fold at 0 contains 0 where the percentile interval of |d*| does not
    near = np.tanh(rng.normal(0.0, 0.1, size=500))
    assert folded_basic_interval(near, 0.02).low == 0.0
    assert percentile_interval(np.abs(near)).low > 0.0


def test_folded_basic_interval_at_one() -> None:
    d = np.array([1.0] * 50 + [0.9, 0.8, 0.95] * 10)
    # the estimate at 1: the reflection is degenerate, the percentile interval of |d*|
    ci, pct = folded_basic_interval(d, 1.0), percentile_interval(d)
    assert (ci.low, ci.high) == (pct.low, pct.high)
    assert ci.method == "percentile bootstrap of |d| (estimate at |d| = 1)"
    ci = folded_basic_interval(-d, -1.0)
    assert (ci.low, ci.high) == (pct.low, pct.high)
    # the upper quantile at 1 (clipped): the lower signed bound goes to -1, folded [0, 1]
    ci = folded_basic_interval(d, 0.97)
    assert ci.method == RULE_METHOD["basic-atanh-folded"]
    assert ci.low == 0.0 and ci.high == pytest.approx(1.0, abs=1e-6)
    assert folded_basic_interval(d, 0.97, confidence_level=0.5).high == pytest.approx(1.0)
    # one replicate at 1 outside the quantiles used leaves the interval inside (0, 1)
    d = np.concatenate([np.tanh(np.random.default_rng(7).normal(0.5, 0.1, 199)), [1.0]])
    ci = folded_basic_interval(d, 0.45)
    z = basic_interval(np.arctanh(d[:-1].tolist() + [1 - 1e-12]), float(np.arctanh(0.45)))
    assert (ci.low, ci.high) == pytest.approx((np.tanh(z.low), np.tanh(z.high)))
    assert 0 < ci.low < ci.high < 1
    assert np.isnan(folded_basic_interval(d, np.nan).low)  # P_H + P_T = 0: undefined
    assert np.isnan(folded_basic_interval([np.nan, np.nan], 0.2).high)


def test_bootstrap_interval_dispatches_on_the_rule() -> None:
    r = np.random.default_rng(8).normal(size=300)
    assert bootstrap_interval("percentile", r, 5.0) == percentile_interval(r)
    assert bootstrap_interval("basic", r, 0.1) == basic_interval(r, 0.1)
    d = np.tanh(r / 10)
    assert bootstrap_interval("basic-atanh-folded", d, 0.1) == folded_basic_interval(d, 0.1)
    assert set(RULE_METHOD) == set(CI_RULES)
    with pytest.raises(InputError, match="`rule`"):
        bootstrap_interval("bca", r, 0.0)
