"""The metrics PS, PB and sPB, each with a query-bootstrap CI (percentile; the pairwise
PS: bootstrap-t)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .._records import as_mapping, integer, optional_number
from .._stats import (
    DEFAULT_N_BOOT,
    ConfidenceInterval,
    Estimate,
    as_generator,
    studentized_interval,
)
from ..exceptions import InputError
from ._bootstrap import bootstrap_ci, check_bootstrap_args
from ._evaluations import Evaluations
from ._unbp import query_position_shares

__all__ = [
    "StrongBiasResult",
    "permutation_sensitivity",
    "plugin_positional_bias",
    "strong_positional_bias",
]

MSG_KIND = "`kind` must be 'modal' or 'pairwise', got {value!r}"
MSG_ONE_ORDER = (
    "pairwise PS needs a query evaluated under >= 2 different orders; every query was "
    "seen in one order only (an identity-order condition such as 'decoding')"
)
MSG_TAU = "`tau` must be 'auto' or a number in (0, 1], got {value!r}"
MSG_FOLDS = "`n_folds` must be an integer >= 2, got {value!r}"
MSG_REPEATS = "`n_repeats` must be an integer >= 1, got {value!r}"
#: Default number of fold assignments sPB averages over (docs/decisions/0036,
#: "sPB averages over repeated fold assignments").
SPB_REPEATS = 20
MSG_SPB_P_HAT = "`p_hat` must be a number in [0, 1] or None, got {value!r}"
MSG_P_HAT_FIXED_TAU = "`p_hat` is the 'auto' rule's share: pass it with tau='auto', not tau={tau!r}"
MSG_FEW_EVALUATIONS = (
    "row {row}, column `query_id`: query {query!r} has {n} valid evaluation(s); "
    "{what} needs >= 2 per query"
)


def item_counts(evals: Evaluations) -> npt.NDArray[np.int64]:
    """C[j, i]: how often query j selected original index i."""
    return np.bincount(
        evals.query * evals.k + evals.item, minlength=evals.n_queries * evals.k
    ).reshape(evals.n_queries, evals.k)


def permutation_sensitivity(
    evals: Evaluations,
    *,
    kind: Literal["modal", "pairwise"] = "modal",
    n_boot: int = DEFAULT_N_BOOT,
    confidence_level: float = 0.95,
    rng: np.random.Generator | int | None = None,
) -> Estimate:
    r"""PS, permutation sensitivity: how often reordering changes the recommendation.

    ``kind='modal'`` (the paper's code):
    :math:`PS_j = 1 - \max_i c_{ji} / l_j`, an unbiased estimate of a quantity that
    depends on the number of orders l_j (the modal item's share among l_j draws), so
    audits with different numbers of orders are not comparable. ``kind='pairwise'``
    (the headline of :func:`~recaudit.positional.analyze`): the probability that two
    evaluations of the query under two different orders select different items,

    .. math:: PS_j = 1 - \frac{\sum_i c_{ji}(c_{ji} - 1) - \sum_{o,i} c_{joi}(c_{joi} - 1)}
                           {l_j(l_j - 1) - \sum_o l_{jo}(l_{jo} - 1)},

    where :math:`c_{joi}` counts the selections of i under order o: a U-statistic over
    the pairs of evaluations with different orders, unbiased for
    :math:`1 - \sum_i \bar P_j(i)^2` (:math:`\bar P_j` = the choice law under a random
    order) whatever l_j is, and free of the repeated samples of one order that a
    decoding-noise design adds. A query seen in one order only has no such pair and is
    left out (an :class:`InputError` when no query has two orders).
    :math:`PS = \frac1n \sum_j PS_j`.

    Intervals, both over queries with ``n_boot`` resamples from ``rng``. The modal PS
    keeps the paper's percentile bootstrap. The pairwise PS, a mean of independent
    per-query values, gets the bootstrap-t interval
    (:func:`recaudit._stats.studentized_interval`)

    .. math:: \bigl[PS - t^*_{(1+c)/2}\, s/\sqrt n,\; PS - t^*_{(1-c)/2}\, s/\sqrt n\bigr],
              \qquad T^* = (PS^* - PS) / (s^* / \sqrt n),

    (:math:`s^2` the sample variance of the PS_j, :math:`t^*_a` the a-quantile of the
    resampled :math:`T^*`), clipped to [0, 1]. Measured against the simulation
    models' truth at 100 queries it covers 0.947 with nearly equal misses on both
    sides, where the percentile interval covered 0.939 and the Student-t interval
    0.943 with 2.4 times as many misses on one side as on the other (the PS_j are
    skewed; docs/positional-statistics.md, "Validation against known truth";
    docs/decisions/0046).

    References
    ----------
    Peláez-González, Herrera, Herrera-Poyatos, arXiv 2610.37962 (PS).
    Efron, B. & Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 12-13.
    Hall, P. (1988). Theoretical comparison of bootstrap confidence intervals. Annals of
    Statistics 16(3), 927-953.
    DiCiccio, T. J. & Efron, B. (1996). Bootstrap confidence intervals. Statistical
    Science 11(3), 189-228.

    Examples
    --------
    >>> from recaudit.positional import simulate_evaluations, permutation_sensitivity
    >>> ev = simulate_evaluations(100, k=5, p_bias=0.0, rng=0)
    >>> round(permutation_sensitivity(ev, rng=0).value, 3)
    0.386
    """
    n_boot, confidence_level = check_bootstrap_args(n_boot, confidence_level)
    if kind not in ("modal", "pairwise"):
        raise InputError(MSG_KIND.format(value=kind))
    counts = item_counts(evals).astype(float)
    size = counts.sum(axis=1)
    if kind == "modal":
        per_query = 1.0 - counts.max(axis=1) / size
    else:
        _require_two(evals, "pairwise PS")
        per_query = _pairwise_across_orders(evals, counts)
        if not np.isfinite(per_query).any():
            raise InputError(MSG_ONE_ORDER)
        per_query = per_query[np.isfinite(per_query)]
        return studentized_estimate(per_query, n_boot, confidence_level, as_generator(rng))
    return _mean_estimate(per_query, n_boot, confidence_level, as_generator(rng))


def studentized_estimate(per_query: npt.NDArray[np.float64], n_boot: int,
                         confidence_level: float, gen: np.random.Generator) -> Estimate:
    """The mean of per-query rates in [0, 1] with its bootstrap-t interval (pairwise PS)."""
    ci = studentized_interval(per_query, n_boot=n_boot, rng=gen,
                              confidence_level=confidence_level, bounds=(0.0, 1.0))
    return Estimate(float(per_query.mean()), ci)


def _pairwise_across_orders(
    evals: Evaluations, counts: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Per query: share of pairs of evaluations under different orders that disagree
    (``nan`` for a query seen in one order only)."""
    _, order_id = np.unique(evals.orders, axis=0, return_inverse=True)
    order_id = np.asarray(order_id).reshape(-1)
    n_orders = int(order_id.max()) + 1
    k = evals.k
    cell = (evals.query * n_orders + order_id) * k + evals.item
    uniq, c = np.unique(cell, return_counts=True)
    same_item = np.bincount(uniq // (n_orders * k), weights=c * (c - 1.0),
                            minlength=evals.n_queries)
    qo, lo = np.unique(evals.query * n_orders + order_id, return_counts=True)
    same_pairs = np.bincount(qo // n_orders, weights=lo * (lo - 1.0), minlength=evals.n_queries)
    size = counts.sum(axis=1)
    pairs = size * (size - 1.0) - same_pairs
    agree = (counts * (counts - 1.0)).sum(axis=1) - same_item
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pairs > 0, 1.0 - agree / np.where(pairs > 0, pairs, 1.0), np.nan)


def plugin_positional_bias(
    evals: Evaluations,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    confidence_level: float = 0.95,
    rng: np.random.Generator | int | None = None,
) -> Estimate:
    r"""The paper's plug-in PB: TV of the estimated position distribution from uniform.

    Biased upward (> 0 under exact uniformity); :func:`~recaudit.positional.positional_bias`
    is the validated estimator, which reports this value as ``plugin``. Used here for
    the ``'auto'`` rule's :math:`\hat p` of the paper's sPB.

    :math:`PB = \frac12 \sum_p |\hat q_p - 1/k|` with
    :math:`\hat q_p = \frac1n \sum_j Y_j(p)` (each query weighs equally). The plug-in is
    biased upward (it is > 0 under exact uniformity); read it beside the POB-UNBP
    lower bound L. Percentile bootstrap CI over queries.

    References
    ----------
    Peláez-González, Herrera, Herrera-Poyatos, arXiv 2610.37962 (PB).
    """
    n_boot, confidence_level = check_bootstrap_args(n_boot, confidence_level)
    shares = query_position_shares(evals)
    k = evals.k

    def tv(means: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return 0.5 * np.abs(means - 1.0 / k).sum(axis=1, keepdims=True)

    value = float(tv(shares.mean(axis=0, keepdims=True))[0, 0])
    (ci,) = bootstrap_ci(
        shares, tv, n_boot=n_boot, confidence_level=confidence_level, rng=as_generator(rng)
    )
    return Estimate(value, ci)


@dataclass(frozen=True)
class StrongBiasResult:
    """sPB with its CI and the relevance-set rule used.

    ``tau`` is the fixed threshold (``None`` with the ``'auto'`` rule) and ``p_hat``
    the estimated position-driven share of the ``'auto'`` rule (``None`` otherwise).
    """

    value: float
    ci: ConfidenceInterval
    tau: float | None
    p_hat: float | None
    n_folds: int
    n_repeats: int = 1

    def to_dict(self) -> dict[str, float | int | None]:
        """``{"value", "ci_low", "ci_high", "tau", "p_hat", "n_folds", "n_repeats"}``."""
        return {
            "value": self.value,
            "ci_low": self.ci.low,
            "ci_high": self.ci.high,
            "tau": self.tau,
            "p_hat": self.p_hat,
            "n_folds": self.n_folds,
            "n_repeats": self.n_repeats,
        }

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any], *, confidence_level: float = 0.95
                  ) -> StrongBiasResult:
        """Read :meth:`to_dict`'s JSON back (``null`` as ``nan``)."""
        what = "StrongBiasResult"
        obj = as_mapping(obj, what)
        est = Estimate.from_dict(obj, confidence_level=confidence_level)
        return cls(value=est.value, ci=est.ci, tau=optional_number(obj, "tau", what),
                   p_hat=optional_number(obj, "p_hat", what),
                   n_folds=integer(obj, "n_folds", what),
                   n_repeats=integer(obj, "n_repeats", what))


def strong_positional_bias(
    evals: Evaluations,
    *,
    tau: float | Literal["auto"] = "auto",
    p_hat: float | None = None,
    n_folds: int = 5,
    n_repeats: int = SPB_REPEATS,
    n_boot: int = DEFAULT_N_BOOT,
    confidence_level: float = 0.95,
    rng: np.random.Generator | int | None = None,
) -> StrongBiasResult:
    r"""sPB, strong positional bias: share of recommendations outside the relevance set.

    The relevance set :math:`R_j(\tau)` is the smallest set of query j's most
    frequently recommended items whose cumulative share is >= tau (ties broken by
    original index, i.e. retrieval rank). Each query's evaluations are split at random
    into ``min(n_folds, l_j)`` folds; R_j is built from the other folds and the held-out
    fold is scored. One random fold assignment a gives
    :math:`O_j^{(a)}` = held-out selections outside R_j, summed over the folds; repeated
    cross-validation averages ``n_repeats`` = A independent assignments,

    .. math:: sPB_j = \frac{1}{A} \sum_{a=1}^{A} O_j^{(a)} / l_j,
              \qquad sPB = \frac1n \sum_j sPB_j,

    with a percentile bootstrap CI over queries of the averaged :math:`sPB_j`. The
    estimand is the expected CV estimate over fold assignments; averaging only removes
    the fold lottery (its Monte-Carlo variance shrinks like 1/A), which the bootstrap
    over queries does not see. ``n_repeats=1`` is single-split CV.

    ``tau='auto'`` (our rule, calibrated across instances) lets the threshold depend on
    the size m of the candidate set: R_j is the smallest top-m set with cumulative
    share :math:`\ge 1 - \hat p (k - m) / k`, where
    :math:`\hat p = \min(1, \widehat{PB} / (1 - 1/k))` estimates the share of
    position-driven selections from all queries. Reason: if a share p of selections
    goes to the item at a uniformly random favoured position, the true R keeps exactly
    :math:`1 - p(k - |R|)/k` of the selections and every smaller top set keeps less,
    so the rule recovers R in the population. A number ``tau`` is the spec's fixed
    threshold. docs/positional-statistics.md reports how close each comes to the truth.

    ``p_hat`` (``'auto'`` rule only) fixes :math:`\hat p` instead of estimating it from
    ``evals``: an identity-order condition (``decoding``, ``labels``), where a position
    is a retrieval rank, is scored with the :math:`\hat p` of the permuted condition
    (docs/decisions/0058, "Identity-order cells borrow the permuted cell's sPB threshold").

    ``n_repeats`` (default 20, docs/decisions/0036 "sPB averages over repeated fold
    assignments") sets A; the ``'auto'`` rule's :math:`\hat p` comes from PB on all
    evaluations, so it does not depend on the folds.

    References
    ----------
    Peláez-González, Herrera, Herrera-Poyatos, arXiv 2610.37962 (sPB).
    Kim, J.-H. (2009). Estimating classification error rate: Repeated
    cross-validation, repeated hold-out and bootstrap. Comput. Statist. Data Anal.
    53(11), 3735-3745 (repeated k-fold CV).
    """
    n_boot, confidence_level = check_bootstrap_args(n_boot, confidence_level)
    tau_value, n_folds, n_repeats = _strong_positional_bias_iv(evals, tau, n_folds, n_repeats)
    if p_hat is not None:
        if isinstance(p_hat, bool) or not isinstance(p_hat, int | float | np.floating) \
                or not 0.0 <= float(p_hat) <= 1.0:
            raise InputError(MSG_SPB_P_HAT.format(value=p_hat))
        if tau_value is not None:
            raise InputError(MSG_P_HAT_FIXED_TAU.format(tau=tau))
        p_hat = float(p_hat)
    gen = as_generator(rng)
    per_query, threshold, used = _per_query_spb(
        evals, tau_value, p_hat, n_folds, gen, n_repeats
    )
    est = _mean_estimate(per_query, n_boot, confidence_level, gen)
    return StrongBiasResult(est.value, est.ci, tau_value, used, n_folds, n_repeats)


def estimate_p_hat(evals: Evaluations, rng: np.random.Generator | int = 0) -> float:
    r"""The ``'auto'`` rule's position-driven share :math:`\hat p = \min(1, PB / (1 - 1/k))`,
    PB the plug-in (:func:`plugin_positional_bias`; ``rng`` is only consumed, the
    plug-in value does not depend on it)."""
    pb = plugin_positional_bias(evals, n_boot=1, rng=rng).value
    return float(min(1.0, pb / (1.0 - 1.0 / evals.k)))


def spb_thresholds(k: int, tau: float | None, p_hat: float | None) -> npt.NDArray[np.float64]:
    r"""Cumulative-share threshold of a top-m set, m = 1..k.

    A fixed ``tau`` gives ``tau`` for every m; the ``'auto'`` rule (``tau=None``) gives
    :math:`1 - \hat p (k - m) / k` (see :func:`strong_positional_bias`).
    """
    if tau is not None:
        return np.full(k, float(tau))
    if p_hat is None:
        raise InputError("`p_hat` is needed with the 'auto' rule (tau=None)")
    return 1.0 - float(p_hat) * (k - np.arange(1, k + 1)) / k


def _per_query_spb(
    evals: Evaluations,
    tau: float | None,
    p_hat: float | None,
    n_folds: int,
    gen: np.random.Generator,
    n_repeats: int = 1,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], float | None]:
    """Per-query cross-validated sPB, the thresholds used and p_hat (auto rule).

    With ``tau=None`` and ``p_hat=None``, p_hat is estimated from ``evals`` (consuming
    ``gen`` exactly as :func:`strong_positional_bias` always has).
    """
    if tau is None and p_hat is None:
        p_hat = estimate_p_hat(evals, gen)
    elif tau is not None:
        p_hat = None
    threshold = spb_thresholds(evals.k, tau, p_hat)
    outside = _cross_validated_outside(evals, threshold, n_folds, gen, n_repeats)
    return outside, threshold, p_hat


def relevance_sets(
    evals: Evaluations, threshold: npt.NDArray[np.float64] | None = None
) -> npt.NDArray[np.bool_]:
    r"""R_j on all of query j's evaluations: ``(n_queries, k)`` membership by original index.

    The same rule as the cross-validated sets of :func:`strong_positional_bias`: the
    smallest top-m set (by count, ties by original index) whose cumulative share
    reaches ``threshold[m - 1]``; without ``threshold``, the ``'auto'`` rule's
    :math:`1 - \hat p (k - m)/k` with :math:`\hat p` from all of ``evals``
    (:func:`estimate_p_hat`, in-sample).
    """
    if threshold is None:
        threshold = spb_thresholds(evals.k, None, estimate_p_hat(evals))
    return _top_sets(item_counts(evals)[:, None, :], threshold)[:, 0, :]


def _top_sets(
    counts: npt.NDArray[np.int64], threshold: npt.NDArray[np.float64]
) -> npt.NDArray[np.bool_]:
    """Membership of the smallest top-m set reaching ``threshold[m-1]`` along the last axis."""
    srt = np.argsort(-counts, axis=-1, kind="stable")
    sorted_counts = np.take_along_axis(counts, srt, axis=-1)
    total = counts.sum(axis=-1, keepdims=True)
    reached = np.cumsum(sorted_counts, axis=-1) >= threshold * total - 1e-9
    done = np.cumsum(reached, axis=-1) > 0
    member_sorted = np.concatenate([np.ones_like(done[..., :1]), ~done[..., :-1]], axis=-1)
    relevant = np.zeros_like(member_sorted)
    np.put_along_axis(relevant, srt, member_sorted, axis=-1)
    return relevant


def _cross_validated_outside(
    evals: Evaluations,
    threshold: npt.NDArray[np.float64],
    n_folds: int,
    gen: np.random.Generator,
    n_repeats: int = 1,
) -> npt.NDArray[np.float64]:
    """Per query: share of held-out selections outside the training folds' R.

    R is the smallest top-m set (by training count, ties by original index) whose
    cumulative share reaches ``threshold[m - 1]``. The share is averaged over
    ``n_repeats`` independent fold assignments, all drawn at once as an
    ``(n_repeats, n_evaluations)`` block of random keys (with ``n_repeats=1`` the
    stream is consumed exactly as single-split CV always has).
    """
    k, nq, reps = evals.k, evals.n_queries, n_repeats
    n = evals.query.size
    size = evals.evaluations_per_query()
    folds_per_query = np.minimum(n_folds, size)
    # Random fold of each evaluation in each repeat: its rank within (repeat, query)
    # under random keys, modulo the query's number of folds.
    keys = gen.random((reps, n)).ravel()
    query = np.tile(evals.query, reps)
    repeat = np.repeat(np.arange(reps), n)
    order = np.lexsort((keys, query, repeat))
    starts = np.concatenate([[0], np.cumsum(size)[:-1]])
    within = np.arange(n) - np.repeat(starts, size)  # rank within query, sorted order
    rank = np.empty_like(order)
    rank[order] = np.tile(within, reps)
    fold = rank % folds_per_query[query]
    cell = ((repeat * nq + query) * n_folds + fold) * k + np.tile(evals.item, reps)
    held = np.bincount(cell, minlength=reps * nq * n_folds * k).reshape(reps, nq, n_folds, k)
    train = held.sum(axis=2, keepdims=True) - held
    relevant = _top_sets(train, threshold)
    outside = (held * ~relevant).sum(axis=(2, 3))  # (repeats, queries)
    return outside.mean(axis=0) / size


def _mean_estimate(
    per_query: npt.NDArray[np.float64],
    n_boot: int,
    confidence_level: float,
    gen: np.random.Generator,
) -> Estimate:
    (ci,) = bootstrap_ci(
        per_query[:, None],
        lambda m: m,
        n_boot=n_boot,
        confidence_level=confidence_level,
        rng=gen,
    )
    return Estimate(float(per_query.mean()), ci)


def _require_two(evals: Evaluations, what: str) -> None:
    size = evals.evaluations_per_query()
    few = np.flatnonzero(size < 2)
    if few.size:
        j = few[0]
        row = evals.rows[np.flatnonzero(evals.query == j)[0]]
        raise InputError(
            MSG_FEW_EVALUATIONS.format(row=row, query=str(evals.query_ids[j]), n=size[j], what=what)
        )


def _strong_positional_bias_iv(
    evals: Evaluations, tau: float | str, n_folds: int, n_repeats: int = 1
) -> tuple[float | None, int, int]:
    if isinstance(n_folds, bool) or not isinstance(n_folds, int | np.integer) or n_folds < 2:
        raise InputError(MSG_FOLDS.format(value=n_folds))
    n_repeats = check_n_repeats(n_repeats)
    if isinstance(tau, str):
        if tau != "auto":
            raise InputError(MSG_TAU.format(value=tau))
        tau_value = None
    elif isinstance(tau, bool) or not 0.0 < float(tau) <= 1.0:
        raise InputError(MSG_TAU.format(value=tau))
    else:
        tau_value = float(tau)
    _require_two(evals, "sPB (cross-validation)")
    return tau_value, int(n_folds), n_repeats


def check_n_repeats(n_repeats: object) -> int:
    """``n_repeats`` as an int >= 1, else :class:`InputError` naming it."""
    if isinstance(n_repeats, bool) or not isinstance(n_repeats, int | np.integer) \
            or n_repeats < 1:
        raise InputError(MSG_REPEATS.format(value=n_repeats))
    return int(n_repeats)
