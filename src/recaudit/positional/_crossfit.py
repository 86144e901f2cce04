"""PB (TV of the position law from uniform) and the position-driven share, cross-fitted.

The plug-in TV(q_hat, u) is biased upward by sampling noise (it is > 0 under exact
uniformity), and its bootstrap centres on that bias. Here the favoured positions are
chosen on one half of the queries and their excess share is measured on the other
half, so noise that makes a position look favoured in the first half averages out in
the second; halves are swapped and the split repeated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from .._records import as_mapping, number, positions
from .._stats import ConfidenceInterval, Estimate, as_generator
from ..exceptions import InputError
from ._bootstrap import check_bootstrap_args
from ._evaluations import Evaluations
from ._unbp import query_position_shares

__all__ = [
    "CrossFit",
    "PositionalBiasResult",
    "crossfit_shares",
    "pb_from_shares",
    "share_upper_bound",
    "positional_bias",
    "positional_bias_crossfit",
]

#: Threshold (in standard errors) of the favoured-set selection: position p is
#: favoured when its excess share on the training folds exceeds THRESHOLD standard
#: errors (docs/decisions/, "PB is cross-fitted").
THRESHOLD = 1.0
#: Folds of the cross-fit and random fold assignments averaged.
N_FOLDS = 5
N_REPEATS = 4
#: Bootstrap resamples of the cross-fit's standard error.
N_BOOT_SE = 200
#: All subsets are candidate favoured sets of the upper bound up to this k, the
#: prefix sets of the positions sorted by excess share above it.
EXHAUSTIVE_K = 12


@dataclass(frozen=True)
class CrossFit:
    """The cross-fitted excess share of the favoured positions, with bootstrap replicates.

    ``tv`` estimates TV(q, u) = sum of the favoured positions' excess shares
    q(A) - |A| / k; ``share`` the position-driven share (q(A) - |A| / k) k / (k - |A|)
    (a position-driven selection lands on a favoured position, every other position
    keeps the baseline share). ``*_boot`` are their values on query-bootstrap
    resamples (the whole cross-fit rerun on each) and ``weights`` those resamples'
    query weights (n_boot, n), so that other statistics can be bootstrapped jointly;
    ``favoured`` the positions the rule picks on all queries (0-based). ``n_queries``,
    ``set_size``, ``set_theta`` and ``set_se`` describe the candidate favoured sets of
    the upper bounds on all queries (with k positions: their sizes |A|, excess shares theta_A and
    standard errors), computed once for PB's and the share's bound.
    """

    tv: float
    share: float
    tv_boot: npt.NDArray[np.float64]
    share_boot: npt.NDArray[np.float64]
    favoured: npt.NDArray[np.int64]
    weights: npt.NDArray[np.float64]
    n_queries: int
    k: int
    set_size: npt.NDArray[np.int64]
    set_theta: npt.NDArray[np.float64]
    set_se: npt.NDArray[np.float64]


@dataclass(frozen=True)
class PositionalBiasResult:
    """PB with its CI and the plug-in beside it.

    Attributes
    ----------
    value : float
        The cross-fitted estimate of TV(q, Uniform_k), clipped at 0.
    ci : ConfidenceInterval
        Lower end: cross-fitted estimate - t se (clipped at 0); upper end: the
        larger of that estimate + t se and max over candidate sets A of
        (excess share of A + t se_A).
    plugin : float
        TV(q_hat, Uniform_k), the paper's plug-in (biased upward).
    favoured : tuple of int
        The favoured positions the selection rule picks on all queries (1-based).
    """

    value: float
    ci: ConfidenceInterval
    plugin: float
    favoured: tuple[int, ...]

    def to_dict(self) -> dict[str, object]:
        """``{"value", "ci_low", "ci_high", "plugin", "favoured_positions"}``."""
        return {
            "value": self.value,
            "ci_low": self.ci.low,
            "ci_high": self.ci.high,
            "plugin": self.plugin,
            "favoured_positions": list(self.favoured),
        }

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any], *, confidence_level: float = 0.95
                  ) -> PositionalBiasResult:
        """Read :meth:`to_dict`'s JSON back (``null`` as ``nan``; the JSON does not
        hold the interval's level: ``confidence_level``)."""
        what = "PositionalBiasResult"
        obj = as_mapping(obj, what)
        est = Estimate.from_dict(obj, confidence_level=confidence_level)
        return cls(value=est.value, ci=est.ci, plugin=number(obj, "plugin", what),
                   favoured=positions(obj, "favoured_positions", what))


def crossfit_shares(
    shares: npt.NDArray[np.float64], gen: np.random.Generator, n_boot: int = N_BOOT_SE,
    boot_weights: npt.NDArray[np.float64] | None = None,
) -> CrossFit:
    """Cross-fit the favoured-position excess on all queries and on bootstrap resamples.

    Parameters
    ----------
    shares : ndarray of shape (n, k)
        Per-query position shares Y_j(p).
    gen : numpy.random.Generator
        Draws the fold assignments and the bootstrap weights.
    n_boot : int
        Query-bootstrap resamples (multinomial weights; a resampled query keeps its
        fold, so no query is trained and scored on at once).
    boot_weights : ndarray of shape (n_boot, n), optional
        The resamples' query weights, given (a paired comparison resamples two systems'
        queries jointly); then ``n_boot`` is their number of rows.
    """
    n, k = shares.shape
    folds = min(N_FOLDS, n)
    assignments = [gen.permutation(n) % folds for _ in range(N_REPEATS)]
    drawn = (gen.multinomial(n, np.full(n, 1.0 / n), size=n_boot) if boot_weights is None
             else boot_weights)
    weights = np.vstack([np.ones((1, n)), drawn]).astype(float)
    tv, share = _crossfit_weighted(shares, weights, assignments)
    member, theta, se = _set_stats(shares, exhaustive=True)
    return CrossFit(float(tv[0]), float(share[0]), tv[1:], share[1:], _favoured(shares),
                    weights[1:], n, k, member.sum(axis=1), theta, se)


def _crossfit_weighted(
    shares: npt.NDArray[np.float64],
    weights: npt.NDArray[np.float64],
    assignments: list[npt.NDArray[np.int64]],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Cross-fitted (tv, share) for each row of query weights (B, n), vectorised."""
    n, k = shares.shape
    dev = shares - 1.0 / k
    dev2 = dev**2
    tv = np.zeros(weights.shape[0])
    share = np.zeros(weights.shape[0])
    for fold in assignments:
        for h in range(int(fold.max()) + 1):
            train = fold != h
            w_train = weights[:, train]
            n_train = np.maximum(w_train.sum(axis=1, keepdims=True), 1e-12)
            mean = w_train @ dev[train] / n_train
            var = np.maximum(w_train @ dev2[train] / n_train - mean**2, 0.0)
            var *= n_train / np.maximum(n_train - 1.0, 1.0)
            favoured = mean > THRESHOLD * np.sqrt(var / n_train)
            scored = ((weights[:, ~train] @ dev[~train]) * favoured).sum(axis=1)
            size = favoured.sum(axis=1)
            tv += scored
            share += np.where(size < k, scored * k / np.maximum(k - size, 1), 0.0)
    total = weights.sum(axis=1) * len(assignments)
    return tv / total, share / total


def positional_bias_crossfit(
    evals: Evaluations,
    *,
    confidence_level: float,
    gen: np.random.Generator,
    fit: CrossFit | None = None,
) -> PositionalBiasResult:
    r"""PB = TV(q, Uniform_k) by cross-fitting, with a CI that covers at every size.

    :math:`TV(q, u) = \max_A \theta_A`, :math:`\theta_A = q(A) - |A|/k`, maximised by
    the favoured positions :math:`A^* = \{p : q_p > 1/k\}`. In each of ``N_FOLDS``
    folds of the queries the favoured set :math:`\hat A` is chosen on the other folds
    (position p when its mean excess share exceeds ``THRESHOLD`` standard errors) and
    :math:`\theta_{\hat A}` is measured on the held-out fold; the fold assignment is
    repeated ``N_REPEATS`` times. Since :math:`\theta_A = 0` for every A under
    uniformity, the estimate is unbiased at TV = 0 (before clipping at 0); elsewhere
    its bias is the selection regret :math:`TV - E\,\theta_{\hat A} \ge 0`. Its
    standard error is the sd of the whole cross-fit rerun on ``N_BOOT_SE`` query
    bootstrap resamples (the per-query contributions are dependent through the
    selection, so their own sd understates it).

    CI: lower end :math:`\widehat{PB} - t\,se`; upper end the larger of
    :math:`\widehat{PB} + t\,se` and :math:`\max_A(\hat\theta_A + t\,\widehat{se}_A)`
    on all queries, over every subset A for k <= ``EXHAUSTIVE_K`` and the prefix sets
    of the positions sorted by excess share above. The latter is a valid upper bound
    whenever :math:`A^*` is a candidate (:math:`\hat\theta_{A^*} + t\,se` covers
    :math:`\theta_{A^*} = TV` on its own; maximising over A only raises it), so the
    interval does not rely on the estimate being unbiased. Bias, coverage and the
    share of intervals containing 0 under no bias are measured in
    docs/positional-statistics.md (``benchmarks/validate_positional.py``).

    References
    ----------
    Chernozhukov, V. et al. (2018). Double/debiased machine learning for treatment
    and structural parameters. Econometrics Journal 21(1), C1-C68 (cross-fitting).
    Peláez-González, Herrera, Herrera-Poyatos, arXiv 2610.37962 (PB).
    """
    shares = query_position_shares(evals)
    return pb_from_shares(shares, fit if fit is not None else crossfit_shares(shares, gen),
                          confidence_level)


def pb_from_shares(
    shares: npt.NDArray[np.float64], fit: CrossFit, confidence_level: float
) -> PositionalBiasResult:
    """PB of :func:`positional_bias_crossfit` from per-query shares (n, k) and their
    cross-fit (also used with the per-query mean choice probabilities of exact mode)."""
    n, k = shares.shape
    plugin = float(0.5 * np.abs(shares.mean(axis=0) - 1.0 / k).sum())
    se = float(np.std(fit.tv_boot, ddof=1)) if n >= 2 else np.nan
    t = _t(confidence_level, n)
    upper = max(fit.tv + t * se, _upper_bound(fit, t))
    top = 1.0 - 1.0 / k  # the largest TV from uniform
    ci = ConfidenceInterval(min(top, max(0.0, fit.tv - t * se)), min(top, max(0.0, upper)),
                            confidence_level,
                            "cross-fitted, bootstrap se; upper: max over favoured sets")
    return PositionalBiasResult(
        max(0.0, fit.tv), ci, plugin, tuple(int(p) + 1 for p in fit.favoured)
    )


def positional_bias_from_shares(
    shares: npt.NDArray[np.float64],
    *,
    n_boot: int = N_BOOT_SE,
    confidence_level: float = 0.95,
    rng: np.random.Generator | int | None = None,
) -> PositionalBiasResult:
    """PB (cross-fitted, as :func:`positional_bias`) from per-query position shares.

    ``shares`` (n, k): row j is query j's share of selections at each prompt position
    (:func:`~recaudit.positional.query_position_shares`), or in exact mode the mean of
    its choice-probability vectors; a sequential run reads its PB and CI at each look
    from it.
    """
    shares = np.asarray(shares, dtype=float)
    if shares.ndim != 2 or shares.shape[0] < 1 or shares.shape[1] < 2:
        raise InputError(f"`shares` must be (n_queries, k) with k >= 2, got {shares.shape}")
    gen = as_generator(rng)
    return pb_from_shares(shares, crossfit_shares(shares, gen, n_boot=n_boot),
                          confidence_level)


def positional_bias(
    evals: Evaluations,
    *,
    n_boot: int = N_BOOT_SE,
    confidence_level: float = 0.95,
    rng: np.random.Generator | int | None = None,
) -> PositionalBiasResult:
    """PB, positional bias: TV(q, Uniform_k), cross-fitted, with the plug-in beside it.

    The estimator, its CI and their measured bias and coverage are those of
    :func:`positional_bias_crossfit` (``n_boot`` query-bootstrap resamples of the
    cross-fit give its standard error); :func:`~recaudit.positional.analyze` reports
    the same result as ``pb``.

    Examples
    --------
    >>> from recaudit.positional import simulate_evaluations, positional_bias
    >>> ev = simulate_evaluations(300, k=5, p_bias=0.0, rng=0)
    >>> res = positional_bias(ev, rng=0)
    >>> res.value < res.plugin   # the plug-in is biased upward by noise
    True
    """
    n_boot, confidence_level = check_bootstrap_args(n_boot, confidence_level)
    gen = as_generator(rng)
    fit = crossfit_shares(query_position_shares(evals), gen, n_boot=n_boot)
    return positional_bias_crossfit(evals, confidence_level=confidence_level, gen=gen, fit=fit)


def _t(confidence_level: float, n: int) -> float:
    return float(stats.t.isf((1.0 - confidence_level) / 2.0, df=max(n - 1, 1)))


def _favoured(shares: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """Positions whose mean excess share exceeds THRESHOLD standard errors (all queries)."""
    n, k = shares.shape
    if n < 2:
        return np.zeros(0, dtype=np.int64)
    mean = shares.mean(axis=0) - 1.0 / k
    se = shares.std(axis=0, ddof=1) / np.sqrt(n)
    return np.flatnonzero(mean > THRESHOLD * se).astype(np.int64)


def _candidates(mean: npt.NDArray[np.float64], exhaustive: bool) -> npt.NDArray[np.bool_]:
    """Candidate favoured sets (rows: membership over positions), never all k: every
    subset when ``exhaustive`` and k <= EXHAUSTIVE_K, else the prefix sets of the
    positions sorted by ``mean`` (descending)."""
    k = mean.size
    if exhaustive and k <= EXHAUSTIVE_K:
        codes = np.arange(1, 2**k - 1)
        return ((codes[:, None] >> np.arange(k)) & 1).astype(bool)
    order = np.argsort(-mean, kind="stable")
    member = np.zeros((k - 1, k), dtype=bool)
    for m in range(1, k):
        member[m - 1, order[:m]] = True
    return member


def _set_stats(
    shares: npt.NDArray[np.float64], exhaustive: bool
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Candidate sets, their excess shares theta_A and standard errors."""
    n, k = shares.shape
    member = _candidates(shares.mean(axis=0), exhaustive)
    per_query = shares @ member.T.astype(float)  # (n, sets)
    theta = per_query.mean(axis=0) - member.sum(axis=1) / k
    se = per_query.std(axis=0, ddof=1) / np.sqrt(n) if n > 1 else np.zeros(theta.size)
    return member, theta, se


def _upper_bound(fit: CrossFit, t: float) -> float:
    """max over candidate sets A (and the empty set) of theta_A + t se_A."""
    if fit.n_queries < 2:
        return np.nan
    return float(max(0.0, np.max(fit.set_theta + t * fit.set_se)))


def share_upper_bound(fit: CrossFit, confidence_level: float) -> float:
    r"""Upper confidence bound on the position-driven share,
    :math:`\max_A \frac{k}{k - |A|}(\hat\theta_A + t\,\widehat{se}_A)` over the
    candidate sets with at most k/2 positions.

    Valid (at level (1 + confidence_level) / 2 on its own) whenever the favoured
    positions are a candidate: the share is :math:`\theta_{A^*} k / (k - |A^*|)` when
    every other position keeps the baseline share, and one term of the max covers it.
    Favoured positions are assumed to be fewer than half of the positions (the others
    define the baseline).
    """
    n, k = fit.n_queries, fit.k
    if n < 2:
        return np.nan
    size = fit.set_size
    keep = size <= k // 2
    t = _t(confidence_level, n)
    bound = (fit.set_theta[keep] + t * fit.set_se[keep]) * k / (k - size[keep])
    return float(max(0.0, np.max(bound))) if bound.size else 0.0
