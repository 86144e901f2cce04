"""Shared statistics helpers, checked against scipy and statsmodels."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from recaudit import InputError
from recaudit._stats import (
    as_generator,
    binomial_interval,
    bootstrap_weights,
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
