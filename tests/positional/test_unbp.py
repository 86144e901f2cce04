"""POB-UNBP: the bound, its p-value by inversion, and its calibration."""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy import stats

from recaudit import InputError
from recaudit.positional import (
    Evaluations,
    _unbp,
    pob_unbp,
    query_position_shares,
    simulate_evaluations,
)


def test_bound_by_hand(biased: Evaluations) -> None:
    y = query_position_shares(biased)
    n, k = y.shape
    h = np.sqrt(y.var(axis=0, ddof=1).mean() / n)
    z = stats.t.isf(0.05 / (2 * k), df=n - 1)
    m = y.mean(axis=0)
    expected = max(
        np.clip(1 / k - m - z * h, 0, None).sum(), np.clip(m - 1 / k - z * h, 0, None).sum()
    )
    res = pob_unbp(biased)
    assert res.L == pytest.approx(expected)
    assert res.reject and res.L_over > res.L_under
    np.testing.assert_allclose(res.upper - res.lower, 2 * z * h)


@pytest.mark.parametrize("epsilon", [0.0, 0.05, 0.1])
def test_pvalue_is_the_smallest_rejecting_alpha(biased: Evaluations, epsilon: float) -> None:
    p = pob_unbp(biased, epsilon=epsilon).pvalue
    assert 0 < p < 1
    assert pob_unbp(biased, alpha=min(p * 1.01, 0.999), epsilon=epsilon).L > epsilon
    assert pob_unbp(biased, alpha=p * 0.99, epsilon=epsilon).L <= epsilon + 1e-12


def test_larger_epsilon_means_larger_pvalue(biased: Evaluations) -> None:
    ps = [pob_unbp(biased, epsilon=e).pvalue for e in (0.0, 0.05, 0.1, 0.2)]
    assert ps == sorted(ps)
    assert not pob_unbp(biased, epsilon=0.5).reject


def test_type_one_error_holds_for_k_5_to_20() -> None:
    # Small version of the calibration table in docs/positional-statistics.md.
    rng = np.random.default_rng(2026)
    reps = 150
    for k in (5, 10, 15, 20):
        rejections = sum(
            pob_unbp(simulate_evaluations(30, k=k, n_perms=20, rng=rng)).reject for _ in range(reps)
        )
        # binomial(150, 0.05) exceeds 16 with probability < 0.5%
        assert rejections <= 16, (k, rejections)


def test_power_against_one_favoured_position() -> None:
    ev = simulate_evaluations(100, k=10, n_perms=20, p_bias=0.1, rng=1)
    assert pob_unbp(ev).reject
    assert pob_unbp(ev, side="over").reject


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"alpha": 0.0}, _unbp.MSG_ALPHA.format(value=0.0)),
        ({"epsilon": -0.1}, _unbp.MSG_EPSILON.format(value=-0.1)),
        ({"variance": "sample"}, _unbp.MSG_VARIANCE.format(value="sample")),
        ({"side": "left"}, _unbp.MSG_SIDE.format(value="left")),
    ],
)
def test_arguments_are_validated(biased: Evaluations, kwargs: dict, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        pob_unbp(biased, **kwargs)


def test_needs_two_queries() -> None:
    ev = simulate_evaluations(1, k=3, n_perms=5, rng=0)
    with pytest.raises(InputError, match=re.escape(_unbp.MSG_TWO_QUERIES.format(n=1))):
        pob_unbp(ev)
