"""POB-UNBP: a lower confidence bound on the TV distance of positions from uniform."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import stats

from .._records import as_mapping, need, number
from ..exceptions import InputError
from ._evaluations import Evaluations

__all__ = ["PobUnbpResult", "pob_unbp", "query_position_shares"]

Variance = Literal["pooled", "per_position"]
Side = Literal["both", "under", "over"]

MSG_ALPHA = "`alpha` must be in (0, 1), got {value!r}"
MSG_EPSILON = "`epsilon` must be in [0, 1), got {value!r}"
MSG_VARIANCE = "`variance` must be 'pooled' or 'per_position', got {value!r}"
MSG_SIDE = "`side` must be 'both', 'under' or 'over', got {value!r}"
MSG_TWO_QUERIES = "POB-UNBP needs >= 2 queries with a valid evaluation, got {n}"

_ZERO = 1e-12  # |qhat_p - 1/k| below this is floating-point noise, i.e. exact uniformity


@dataclass(frozen=True, eq=False)
class PobUnbpResult:
    """Result of :func:`pob_unbp`.

    Attributes
    ----------
    L : float
        Lower confidence bound on TV(q, Uniform_k) at level ``alpha`` (a fraction).
    L_under, L_over : float
        The bounds built from the upper (avoided positions) and the lower (favoured
        positions) one-sided bounds.
    pvalue : float
        Smallest alpha at which ``L(alpha) > epsilon``.
    reject : bool
        ``L > epsilon`` (equivalently ``pvalue < alpha``).
    epsilon, alpha : float
        The tolerated drift and the level.
    lower, upper : ndarray of shape (k,)
        The one-sided bounds D_p and U_p of the position-selection probabilities
        (empty when read back from JSON, which does not hold them).
    variance, side : str
        The choices used (see :func:`pob_unbp`).
    """

    L: float
    L_under: float
    L_over: float
    pvalue: float
    reject: bool
    epsilon: float
    alpha: float
    lower: npt.NDArray[np.float64] = field(default_factory=lambda: np.empty(0), repr=False)
    upper: npt.NDArray[np.float64] = field(default_factory=lambda: np.empty(0), repr=False)
    variance: str = "pooled"
    side: str = "both"
    method: str = "POB-UNBP (union bound, Student t quantiles)"

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any], *, alpha: float) -> PobUnbpResult:
        """Read the ``pob_unbp`` object of ``recaudit positional analyze --json`` back.

        ``alpha`` is the analysis's level (the object does not repeat it); ``variance``
        is ``"pooled"`` when the object has none (exact mode). The one-sided bounds
        are not in the JSON: ``lower`` and ``upper`` are empty.
        """
        what = "PobUnbpResult"
        obj = as_mapping(obj, what)
        return cls(
            L=number(obj, "L", what),
            L_under=number(obj, "L_under", what),
            L_over=number(obj, "L_over", what),
            pvalue=number(obj, "pvalue", what),
            reject=bool(need(obj, "reject", what)),
            epsilon=number(obj, "epsilon", what),
            alpha=alpha,
            variance=str(obj.get("variance") or "pooled"),
        )


def query_position_shares(evals: Evaluations) -> npt.NDArray[np.float64]:
    """Y[j, p]: the share of query j's valid evaluations that selected position p."""
    counts = np.bincount(
        evals.query * evals.k + evals.position, minlength=evals.n_queries * evals.k
    ).reshape(evals.n_queries, evals.k)
    return counts / counts.sum(axis=1, keepdims=True)


def pob_unbp(
    evals: Evaluations,
    *,
    alpha: float = 0.05,
    epsilon: float = 0.0,
    variance: Variance = "pooled",
    side: Side = "both",
) -> PobUnbpResult:
    r"""POB-UNBP: test H0(eps): TV(q, Uniform_k) <= eps via a lower confidence bound.

    With per-query position shares ``Y_j(p)`` (i.i.d. over queries, mean ``q_p``),
    one-sided bounds at level ``alpha / (2k)`` each (union bound over 2k bounds) are

    .. math:: U_p, D_p = \bar Y(p) \pm t_{n-1,\,1-\alpha/(2k)}\, s / \sqrt{n},

    and since :math:`TV(q, u) = \sum_p (q_p - 1/k)^+ = \sum_p (1/k - q_p)^+`,

    .. math:: L = \max\Big(\sum_p (1/k - U_p)^+,\ \sum_p (D_p - 1/k)^+\Big)

    is a lower confidence bound on TV. Reject H0(eps) when ``L > eps``; the p-value is
    the smallest alpha at which ``L(alpha) > eps``, i.e.
    ``min(1, 2k * P(T_{n-1} > z*))`` with ``z* = sup{z : L(z) > eps}``. The spec's
    normal quantile is replaced by Student's t with n - 1 degrees of freedom (our
    choice): identical for large n, it keeps the type-I error at alpha with 30
    queries, where the skewed share of a favoured position makes z anti-conservative.

    Parameters
    ----------
    evals : Evaluations
        One validated analysis group (one evaluation per query is enough).
    alpha : float, default 0.05
        Level of the test.
    epsilon : float, default 0
        Tolerated TV drift (0 for zero temperature).
    variance : {'pooled', 'per_position'}, default 'pooled'
        ``'pooled'`` (our default) uses one ``s^2 = mean_p var_j Y_j(p)`` for every
        position: under H0(0) a uniform random order makes the k coordinates
        exchangeable, and a per-position sd shrinks exactly where the mean is low,
        which makes ``'per_position'`` anti-conservative for k >= 10 with 20
        evaluations per query (measured in docs/positional-statistics.md).
    side : {'both', 'under', 'over'}, default 'both'
        ``'both'`` is the spec's ``max(L_under, L_over)`` with 2k bounds;
        ``'under'`` / ``'over'`` use one side with k bounds at ``alpha / k``.

    Returns
    -------
    PobUnbpResult
        ``pvalue`` is 0 when the shares do not vary across queries and the plug-in
        TV exceeds eps (the bound does not depend on alpha then).

    References
    ----------
    Peláez-González, Herrera, Herrera-Poyatos, arXiv 2610.37962, Proposition 2 and
    Theorem 1 (TV of the position law is at most eps under eps-absence of bias).
    """
    alpha, epsilon, n_sides = _pob_unbp_iv(alpha, epsilon, variance, side, evals.n_queries)
    return _pob_unbp_shares(query_position_shares(evals), alpha, epsilon, variance, side,
                            n_sides)


def _pob_unbp_shares(
    shares: npt.NDArray[np.float64], alpha: float, epsilon: float, variance: str,
    side: str, n_sides: int,
) -> PobUnbpResult:
    """POB-UNBP from per-query position shares (n, k) (validated arguments); also
    used with per-query mean choice probabilities (recaudit.positional._exact)."""
    n, k = shares.shape
    mean = shares.mean(axis=0)
    var = shares.var(axis=0, ddof=1)
    sd = np.full(k, np.sqrt(var.mean())) if variance == "pooled" else np.sqrt(var)
    h = sd / np.sqrt(n)
    over = mean - 1.0 / k
    over[np.abs(over) < _ZERO] = 0.0
    under = -over
    z = float(stats.t.isf(alpha / (n_sides * k), df=n - 1))
    l_under = _side_bound(under, h, z) if side in ("both", "under") else 0.0
    l_over = _side_bound(over, h, z) if side in ("both", "over") else 0.0
    bound = max(l_under, l_over)
    terms = [t for s, t in (("under", under), ("over", over)) if side in ("both", s)]
    z_star = max(_z_star(t, h, epsilon) for t in terms)
    pvalue = float(min(1.0, n_sides * k * stats.t.sf(z_star, df=n - 1)))
    return PobUnbpResult(
        L=bound,
        L_under=l_under,
        L_over=l_over,
        pvalue=pvalue,
        reject=bool(bound > epsilon),
        epsilon=epsilon,
        alpha=alpha,
        lower=mean - z * h,
        upper=mean + z * h,
        variance=variance,
        side=side,
    )


def _reject_many(shares: npt.NDArray[np.float64], alpha: float) -> npt.NDArray[np.bool_]:
    """``pob_unbp(...).reject`` (defaults: pooled variance, both sides, eps = 0) of
    many data sets at once.

    Parameters
    ----------
    shares : ndarray of shape (R, n, k)
        ``Y_j(p)`` of R data sets with n queries each (:func:`query_position_shares`).
    alpha : float
        Level.

    Returns
    -------
    ndarray of bool, shape (R,)
        ``L > 0``: some position's share is outside its one-sided bound.
    """
    _, n, k = shares.shape
    over = shares.mean(axis=1) - 1.0 / k
    over[np.abs(over) < _ZERO] = 0.0
    h = np.sqrt(shares.var(axis=1, ddof=1).mean(axis=1, keepdims=True)) / np.sqrt(n)
    z = float(stats.t.isf(alpha / (2 * k), df=n - 1))
    l_under = np.clip(-over - z * h, 0.0, None).sum(axis=1)
    l_over = np.clip(over - z * h, 0.0, None).sum(axis=1)
    return np.asarray(np.maximum(l_under, l_over) > 0.0)


def _side_bound(c: npt.NDArray[np.float64], h: npt.NDArray[np.float64], z: float) -> float:
    """sum_p (c_p - z h_p)^+."""
    return float(np.clip(c - z * h, 0.0, None).sum())


def _z_star(c: npt.NDArray[np.float64], h: npt.NDArray[np.float64], eps: float) -> float:
    """sup{z : sum_p (c_p - z h_p)^+ > eps}, by bisection (the sum is non-increasing)."""
    lo, hi = -40.0, 40.0
    if _side_bound(c, h, hi) > eps:
        return np.inf
    if _side_bound(c, h, lo) <= eps:
        return -np.inf
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if _side_bound(c, h, mid) > eps:
            lo = mid
        else:
            hi = mid
    return lo


def _pob_unbp_iv(
    alpha: float, epsilon: float, variance: str, side: str, n_queries: int = 2
) -> tuple[float, float, int]:
    if not 0.0 < float(alpha) < 1.0:
        raise InputError(MSG_ALPHA.format(value=alpha))
    if not 0.0 <= float(epsilon) < 1.0:
        raise InputError(MSG_EPSILON.format(value=epsilon))
    if variance not in ("pooled", "per_position"):
        raise InputError(MSG_VARIANCE.format(value=variance))
    if side not in ("both", "under", "over"):
        raise InputError(MSG_SIDE.format(value=side))
    if n_queries < 2:
        raise InputError(MSG_TWO_QUERIES.format(n=n_queries))
    return float(alpha), float(epsilon), 2 if side == "both" else 1
