"""Shared statistics helpers, checked against scipy and statsmodels."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from recaudit import InputError
from recaudit._stats import (
    BCA_METHOD,
    CI_RULES,
    RULE_METHOD,
    as_generator,
    basic_interval,
    bca_interval,
    binomial_interval,
    bootstrap_interval,
    bootstrap_weights,
    folded_basic_interval,
    holm,
    jackknife_bias_corrected,
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


def _rd(u: np.ndarray, p: np.ndarray, axis: int = -1) -> np.ndarray:
    """RD of the means of two samples (scipy's vectorised statistic)."""
    return _gap(np.mean(u, axis=axis), np.mean(p, axis=axis))


def _gap(mu: np.ndarray, mp: np.ndarray) -> np.ndarray:
    """RD of two group means."""
    return (mu - mp) / (mu + mp)


def _bca_by_hand(reps: np.ndarray, est: float, samples: list[np.ndarray],
                 stat: Any, level: float = 0.95) -> tuple[float, float]:
    """Efron & Tibshirani (1993), eq. 14.14-14.15, the jackknife by deleting each unit of
    each sample in a loop (scipy's multi-sample form of the acceleration)."""
    below = (np.sum(reps < est) + np.sum(reps <= est)) / (2 * reps.size)
    z0 = stats.norm.ppf(below)
    num = den = 0.0
    for j, sample in enumerate(samples):
        loo = []
        for i in range(sample.size):
            args = list(samples)
            args[j] = np.delete(sample, i)
            loo.append(stat(*args))
        t = np.array(loo)
        u = (sample.size - 1) * (t.mean() - t)
        num += np.sum(u**3) / sample.size**3
        den += np.sum(u**2) / sample.size**2
    a = num / (6 * den**1.5)
    out = []
    for alpha in ((1 - level) / 2, (1 + level) / 2):
        z = stats.norm.ppf(alpha)
        out.append(np.quantile(reps, stats.norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z)))))
    return out[0], out[1]


def _ratio_data(seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """A large group and a small, zero-inflated one (a small protected group's metric)."""
    rng = np.random.default_rng(seed)
    xu = rng.exponential(size=200)
    xp = rng.exponential(size=30) * (rng.random(30) < 0.3)
    return xu, xp


def _stratified_rd_replicates(xu: np.ndarray, xp: np.ndarray, n_boot: int,
                              seed: int) -> np.ndarray:
    x = np.r_[xu, xp]
    strata = np.r_[np.zeros(xu.size), np.ones(xp.size)]
    reps = []
    for w in bootstrap_weights(x.size, n_boot, np.random.default_rng(seed), strata=strata):
        reps.append(_gap(w[:, : xu.size] @ xu / xu.size, w[:, xu.size :] @ xp / xp.size))
    return np.concatenate(reps)


def test_bca_interval_by_hand() -> None:
    xu, xp = _ratio_data()
    reps = _stratified_rd_replicates(xu, xp, 2000, 0)
    est = float(_rd(xu, xp))
    loo = [(xu.sum() - xu) / (xu.size - 1), (xp.sum() - xp) / (xp.size - 1)]
    jack = [_gap(loo[0], np.full(xu.size, xp.mean())), _gap(np.full(xp.size, xu.mean()), loo[1])]
    ci = bca_interval(reps, est, jack)
    low, high = _bca_by_hand(reps, est, [xu, xp], _rd)
    assert (ci.low, ci.high) == pytest.approx((low, high), abs=1e-12)
    assert ci.method == BCA_METHOD and ci.confidence_level == 0.95
    # the correction matters here: the percentile interval is visibly elsewhere
    pct = percentile_interval(reps)
    assert abs(pct.low - ci.low) + abs(pct.high - ci.high) > 0.02


def test_against_scipy_bootstrap_bca_ratio() -> None:
    """The stratified user bootstrap + bca_interval against scipy's multi-sample BCa."""
    xu, xp = _ratio_data()
    ref = stats.bootstrap((xu, xp), _rd, method="BCa", n_resamples=20000,
                          random_state=1, vectorized=True).confidence_interval
    reps = _stratified_rd_replicates(xu, xp, 20000, 2)
    jack = [np.array([_rd(np.delete(xu, i), xp) for i in range(xu.size)]),
            np.array([_rd(xu, np.delete(xp, i)) for i in range(xp.size)])]
    ci = bca_interval(reps, float(_rd(xu, xp)), jack)
    # Monte-Carlo error of a 95 % bound at 20,000 resamples: ~0.003 here
    assert ci.low == pytest.approx(ref.low, abs=0.01)
    assert ci.high == pytest.approx(ref.high, abs=0.01)


def test_bca_interval_without_bias_or_acceleration_is_the_percentile_one() -> None:
    reps = np.r_[np.linspace(-1.0, 1.0, 1001)]
    # half the replicates below 0 (z0 = 0), a jackknife with no spread (a = 0)
    ci = bca_interval(reps, 0.0, [np.ones(10)])
    pct = percentile_interval(reps)
    assert (ci.low, ci.high) == pytest.approx((pct.low, pct.high), abs=1e-12)
    # strata of one unit (no jackknife) give a = 0 too
    assert bca_interval(reps, 0.0, [np.array([3.0]), np.array([])]).low == pytest.approx(pct.low)


def test_bca_interval_degenerate_cases() -> None:
    # every replicate equal to the estimate (a group with all metric values at 0): [θ, θ]
    ci = bca_interval(np.ones(200), 1.0, [np.ones(30), np.full(900, 1.0)])
    assert (ci.low, ci.high) == (1.0, 1.0)
    # every replicate above the estimate: z0 is clipped, the bounds stay finite replicates
    reps = np.linspace(1.0, 2.0, 200)
    ci = bca_interval(reps, 0.5, [np.arange(10.0)])
    assert 1.0 <= ci.low <= ci.high <= 2.0
    # undefined replicates are dropped; none left or an undefined estimate: nan bounds
    with_nan = np.r_[reps, np.full(50, np.nan)]
    assert bca_interval(with_nan, 0.5, [np.arange(10.0)]) == ci
    assert np.isnan(bca_interval(np.full(5, np.nan), 0.5, [np.arange(3.0)]).low)
    assert np.isnan(bca_interval(reps, np.nan, [np.arange(3.0)]).high)
    # 1 - a (z0 + z) <= 0 (a = 0.16, every replicate below the estimate: z0 = 3.9): the
    # upper level is 1, the largest replicate, not the formula's fold-over to the bottom
    skewed = np.r_[-100.0, np.zeros(99)]
    ci = bca_interval(np.linspace(1.0, 2.0, 10000), 2.5, [skewed], confidence_level=0.99)
    assert ci.high == 2.0 and 1.99 < ci.low <= 2.0


def test_jackknife_bias_correction_of_the_plug_in_variance() -> None:
    """Quenouille's correction turns the plug-in variance into the unbiased one exactly;
    with two samples the per-sample terms add (a difference of plug-in variances)."""
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=15), rng.exponential(size=9)

    def stat(a: np.ndarray, b: np.ndarray) -> float:
        return float(a.var() - b.var())

    jack = [np.array([stat(np.delete(x, i), y) for i in range(x.size)]),
            np.array([stat(x, np.delete(y, i)) for i in range(y.size)])]
    got = jackknife_bias_corrected(stat(x, y), jack)
    assert got == pytest.approx(x.var(ddof=1) - y.var(ddof=1), rel=1e-12)
    # clipped to the support; strata of one unit and nan values add nothing; nan stays nan
    assert jackknife_bias_corrected(0.9, [np.array([0.0, 0.5])], support=(-1, 1)) == 1.0
    assert jackknife_bias_corrected(0.3, [np.array([5.0]), np.array([0.3, 0.3, np.nan])]) == 0.3
    assert np.isnan(jackknife_bias_corrected(np.nan, [np.ones(3)]))
