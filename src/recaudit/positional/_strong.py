"""Strong and soft positional bias: a relevance-set model shared across queries.

sPB as the spec defines it -- the share of selections outside the query's relevance
set -- needs the relevance set's size, which ~20 evaluations of one query cannot
reveal at k >= 10 (relevant items never seen count as "outside"; the paper's
cross-validated estimator is biased by +4 pp at k = 10). Here the sizes are not
estimated per query: their distribution across queries is (empirical Bayes), from the
selections at the positions that position does not favour, which are draws from the
query's relevance alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from math import comb
from typing import Any

import numba
import numpy as np
import numpy.typing as npt
from scipy import special, stats

from .._records import as_mapping, need, number, positions
from .._stats import ConfidenceInterval, Estimate, as_generator, percentile_interval
from ..exceptions import InputError
from ._bootstrap import check_bootstrap_args
from ._crossfit import N_BOOT_SE, CrossFit, crossfit_shares, share_upper_bound
from ._evaluations import Evaluations
from ._strong_landing import landing_strong, novelty
from ._unbp import query_position_shares

__all__ = ["StrongSoftResult", "strong_soft_bias", "strong_soft_split"]

#: Grid of the floor share (selections at unfavoured positions that land uniformly on
#: the k candidates: decoding noise, missed position effects).
FLOORS = np.round(np.arange(0.0, 0.5001, 0.025), 4)
_EM_TOL = 1e-7
#: Most EM iterations of a fit, on all data or a bootstrap resample (warm-started from
#: the full-data G): each stops at the tolerance. A cap of 40 per refit cut the
#: bootstrap's spread where the relevance sets are weakly identified (a strong position
#: effect leaves ~2 selections per query to learn them): sPB coverage 0.69 against 0.93
#: at k = 10, p_bias 0.9 (docs/positional-statistics.md, "Where position dominates").
_EM_MAX = 500
#: Fewest queries with >= 2 selections at the unfavoured positions for the relevance
#: model to be identified: one selection per query says nothing about the size of its
#: relevance set (any item is seen with probability 1/k, whatever the set), so with
#: fewer such queries (fewer than all, in a group of under 5 queries, which gets no
#: interval anyway) sPB and soft bias are reported as their identification bounds.
MIN_INFORMATIVE_QUERIES = 5
NOTE_UNIDENTIFIED = (
    "not identified: {n} of {q} queries have two or more selections at the unfavoured "
    "positions (at least {m} are needed to learn the relevance sets), so the split into "
    "strong and soft is only bounded: sPB in [0, share (1 - 1/k)], soft in [share / k, "
    "share], with the share's CI"
)
#: Support of H, the free-form distribution of the choice probabilities r_j(i) that
#: widens the intervals: GRID_POINTS probabilities, _GRID_LOW of them in [0, 4/k].
GRID_POINTS = 61
_GRID_LOW = 41
#: Most EM iterations of H on all data and of a bootstrap refit (warm-started).
_H_MAX = 500
_H_TOL = 1e-10


@dataclass(frozen=True)
class StrongSoftResult:
    """Positional bias split into strong and soft, each with a CI.

    Attributes
    ----------
    strong : Estimate
        sPB: share of selections that position moves out of the query's relevance
        set, :math:`E_j[\\beta (k - |R_j|) / k]`.
    soft : Estimate
        Share of position-driven selections that land inside the relevance set,
        :math:`E_j[\\beta |R_j| / k]`.
    positional_share : Estimate
        :math:`\\beta`, the share of selections made by position (strong + soft).
    mean_set_size : float
        Estimated :math:`E|R_j|`.
    floor : float
        Estimated floor share at the unfavoured positions.
    favoured : tuple of int
        The favoured positions (1-based) whose selections the relevance model leaves
        out.
    note : str or None
        Why the split is not identified (:data:`NOTE_UNIDENTIFIED`): then ``strong``
        and ``soft`` have no value (``nan``) and their intervals are the
        identification bounds, and ``mean_set_size`` and ``floor`` are ``nan``.
    upper_if_spread : float
        sPB's upper end if the floor were not decoding noise but a position effect
        spread evenly over the unfavoured positions, which lands uniformly as noise
        does and cannot be told from it: ``strong.ci.high + (1 - share_low) * max eps
        (1 - E|R|/k)`` over the floors in the floor's profile-likelihood interval,
        share_low the lower end of the position-driven share's CI: every selection the
        fit leaves to the floor counted as position-driven (``nan`` when not identified
        or in files written before it).
    """

    strong: Estimate
    soft: Estimate
    positional_share: Estimate
    mean_set_size: float
    floor: float
    favoured: tuple[int, ...]
    note: str | None = None
    upper_if_spread: float = math.nan

    def to_dict(self) -> dict[str, object]:
        """JSON shape: ``strong``/``soft``/``positional_share`` estimates and the fit."""
        return {
            "strong": self.strong.to_dict(),
            "soft": self.soft.to_dict(),
            "positional_share": self.positional_share.to_dict(),
            "mean_set_size": self.mean_set_size,
            "floor": self.floor,
            "favoured_positions": list(self.favoured),
            "note": self.note,
            "upper_if_spread": self.upper_if_spread,
        }

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any], *, confidence_level: float = 0.95
                  ) -> StrongSoftResult:
        """Read :meth:`to_dict`'s JSON back (``null`` as ``nan``)."""
        what = "StrongSoftResult"
        obj = as_mapping(obj, what)

        def est(key: str) -> Estimate:
            return Estimate.from_dict(need(obj, key, what), confidence_level=confidence_level)

        return cls(strong=est("strong"), soft=est("soft"),
                   positional_share=est("positional_share"),
                   mean_set_size=number(obj, "mean_set_size", what),
                   floor=number(obj, "floor", what),
                   favoured=positions(obj, "favoured_positions", what),
                   note=split_note(obj, what), upper_if_spread=spread_upper(obj, what))


def split_note(obj: Mapping[str, Any], what: str) -> str | None:
    """The optional ``note`` of a split's JSON (absent in files written before it)."""
    value = obj.get("note")
    if value is None or isinstance(value, str):
        return value
    raise InputError(f"{what}.note must be a string or null, got {value!r}: rewrite the "
                     "file with `recaudit positional analyze --json`")


def spread_upper(obj: Mapping[str, Any], what: str) -> float:
    """The optional ``upper_if_spread`` of a split's JSON (``nan`` when absent or null:
    files written before it)."""
    if obj.get("upper_if_spread") is None:
        return math.nan
    return number(obj, "upper_if_spread", what)


def strong_soft_bias(
    evals: Evaluations,
    *,
    n_boot: int = N_BOOT_SE,
    confidence_level: float = 0.95,
    rng: np.random.Generator | int | None = None,
) -> StrongSoftResult:
    """sPB (strong), soft bias and the position-driven share of one analysis group.

    The relevance-set model of :func:`strong_soft_split`, with the position-driven
    share cross-fitted on ``n_boot`` query-bootstrap resamples;
    :func:`~recaudit.positional.analyze` reports the same numbers as ``spb``,
    ``spb_soft`` and ``positional_share``. The paper's cross-validated estimator is
    :func:`~recaudit.positional.strong_positional_bias`.

    Examples
    --------
    >>> from recaudit.positional import simulate_evaluations, strong_soft_bias
    >>> ev = simulate_evaluations(300, k=10, p_bias=0.1, rng=0)
    >>> res = strong_soft_bias(ev, rng=0)
    >>> 0.03 < res.strong.value < 0.07   # truth: 0.1 (1 - E|R| / k) = 0.05
    True
    """
    n_boot, confidence_level = check_bootstrap_args(n_boot, confidence_level)
    gen = as_generator(rng)
    fit = crossfit_shares(query_position_shares(evals), gen, n_boot=n_boot)
    return strong_soft_split(evals, fit, confidence_level=confidence_level)


def strong_soft_split(
    evals: Evaluations,
    fit: CrossFit,
    *,
    confidence_level: float,
) -> StrongSoftResult:
    r"""sPB (strong), soft bias and the position-driven share, with bootstrap CIs.

    Model (the paper's generative story, section 8 of the spec): a selection of query
    j is made by position with probability :math:`\beta` (the item at a favoured
    position) and otherwise from the query's position-free choice law
    :math:`r_j = (1 - \epsilon)\,\mathrm{Unif}(R_j) + \epsilon\,\mathrm{Unif}_k`:
    uniformly over a relevance set :math:`R_j`, or -- with a floor share
    :math:`\epsilon` -- over all k candidates (decoding noise). Because the order is
    uniformly random, a position-driven selection lands uniformly on the k
    candidates, so position moves a share :math:`\beta\,TV(r_j, \mathrm{Unif}_k)` of the
    selections away from where :math:`r_j` puts them:

    .. math:: sPB = \beta\,(1 - \epsilon)(1 - E|R_j|/k), \qquad
              soft = \beta - sPB,

    strong bias the share displaced out of the relevance set (for a crisp set without
    noise, exactly the spec's share of selections outside :math:`R_j`), soft bias the
    position-driven selections that land where the query's own choice law would have
    put them.

    Where a position-driven selection lands is not assumed: a model that uses position
    only to choose among relevant candidates lands inside :math:`R_j` and has no strong
    bias. sPB is estimated as the share :math:`\lambda` of the favoured-position
    selections that land as a uniform landing would, read from their novelty against
    the other positions' (:func:`~recaudit.positional._strong_landing.novelty`; exact
    under position-free landing), times what uniformly landing selections put outside
    the sets (:func:`~recaudit.positional._strong_landing.landing_strong`):
    :math:`\lambda = 1` gives the formula above, :math:`\lambda = 0` gives sPB = 0.

    :math:`\beta` is the cross-fitted position-driven share
    (:func:`~recaudit.positional._crossfit.crossfit_shares`: excess share of the
    favoured positions A, scaled by k / (k - |A|)). The distribution G of
    :math:`|R_j|` over 1..k is the nonparametric maximum-likelihood estimate (EM;
    Laird 1978) from each query's selections at the unfavoured positions, which are
    draws from :math:`(1 - \epsilon)\,\mathrm{Unif}(R_j) + \epsilon\,\mathrm{Unif}_k`:
    with counts :math:`c_i` of the d distinct items seen,

    .. math:: P(c \mid s) = \binom{k}{s}^{-1} \sum_t e_t\,\binom{k - d}{s - t},

    where :math:`e_t` is the coefficient of :math:`x^t` in
    :math:`\prod_i (b^{c_i} + a^{c_i} x)`, :math:`a = (1-\epsilon)/s + \epsilon/k`,
    :math:`b = \epsilon/k` (t of the seen items in :math:`R_j`, the other s - t among
    the unseen). :math:`\epsilon` maximises the profile likelihood over ``FLOORS``
    (every fourth floor first, then the neighbours of the best).
    CIs: percentile, over query-bootstrap resamples of the cross-fit's share and the
    EM refitted on the same resample (warm-started, to convergence, at the chosen floor). For strong
    and soft bias this interval is joined (union) with the same bootstrap's interval
    of a free-form model (:func:`_free_form_displaced`: the distribution of the choice
    probabilities of no assumed form), because under graded relevance the
    set-plus-floor law displaces about 3 % too much and the interval alone covered
    0.725 at 500 queries (docs/decisions/0045); each upper
    end is raised, where lower, to the share's upper bound over favoured sets
    (:func:`~recaudit.positional._crossfit.share_upper_bound`) times the estimated part
    of the share it concerns, since the cross-fitted share is biased low when a
    position effect is too weak to be selected; for strong bias that part reads
    :math:`\lambda`'s upper bootstrap quantile, not :math:`\hat\lambda`, which is 0 on
    the few favoured selections of a weak effect (docs/decisions/0419). For
    graded relevance (no crisp set) :math:`(k - |R_j|)/k` generalises to
    :math:`TV(r_j, \mathrm{Unif}_k)`, which this model approximates; the bias it
    leaves is measured in docs/positional-statistics.md.

    References
    ----------
    Laird, N. (1978). Nonparametric maximum likelihood estimation of a mixing
    distribution. JASA 73(364), 805-811.
    Peláez-González, Herrera, Herrera-Poyatos, arXiv 2610.37962 (sPB; soft vs strong
    bias named as future work).
    """
    sets = _fit_sets(evals, fit)
    if isinstance(sets, int):
        return _unidentified(fit, confidence_level, sets, evals.n_queries)
    k, floor, strong, gs, g = evals.k, sets.floor, sets.strong, sets.gs, sets.gs[0]
    favoured, counts = fit.favoured, sets.counts
    lik, best, best_ll = sets.lik, sets.best, sets.best_ll
    sizes = np.arange(1, k + 1)
    mean_size = float(g @ sizes)
    # the free-form model below assumes the paper's uniform landing, beta (1 - eps)
    # (1 - E|R| / k): it is scaled by the share of that the data show outside the sets
    shares = np.concatenate(([fit.share], fit.share_boot))
    uniform = shares * (1.0 - floor) * (1.0 - (gs @ sizes) / k)
    landing = np.clip(np.divide(strong, uniform, out=np.ones_like(strong),
                                where=uniform > 1e-12), 0.0, 1.0)
    beta = fit.share
    boot = np.column_stack((strong[1:], fit.share_boot - strong[1:]))
    displaced = float(np.clip(strong[0] / beta, 0.0, 1.0)) if beta > 0 else 0.0
    values = (strong[0], beta - strong[0])
    free = _free_form_displaced(counts, fit.weights) * landing[1:]
    free_boot = np.column_stack((fit.share_boot * free, fit.share_boot * (1.0 - free)))
    # the cross-fitted share loses the selection regret when a position effect is weak:
    # each upper end is at least the share's upper bound over favoured sets times the
    # part of it that the estimate assigns to strong / soft / all
    top = share_upper_bound(fit, confidence_level)
    # lambda-hat collapses to 0 on the few favoured selections of a weak effect: the
    # strong part's upper end reads lambda's upper quantile, not its point (0419)
    strong_part = max(displaced, float(np.quantile(landing[1:], 0.5 + confidence_level / 2))
                      * (1.0 - floor) * (1.0 - mean_size / k))
    ests = []
    for i, (v, part) in enumerate(zip(values, (strong_part, 1.0 - displaced), strict=True)):
        ci = _clip(percentile_interval(boot[:, i], confidence_level=confidence_level))
        # strong and soft: the union with the free-form model's interval
        other = _clip(percentile_interval(free_boot[:, i], confidence_level=confidence_level))
        ci = ConfidenceInterval(min(ci.low, other.low), max(ci.high, other.high),
                                ci.confidence_level, ci.method)
        if np.isfinite(top):
            ci = ConfidenceInterval(ci.low, min(1.0, max(ci.high, top * part)),
                                    ci.confidence_level,
                                    "percentile bootstrap; upper: max over favoured sets")
        ests.append(Estimate(min(max(0.0, v), max(0.0, beta)), ci))
    ests.append(_share_estimate(fit, confidence_level))
    # every selection the fit leaves to the floor (all but the position-driven share)
    spread = _floor_upper(lik, g, best, best_ll, confidence_level) * (1.0 - ests[2].ci.low)
    return StrongSoftResult(
        strong=ests[0],
        soft=ests[1],
        positional_share=ests[2],
        mean_set_size=mean_size,
        floor=floor,
        favoured=tuple(int(p) + 1 for p in favoured),
        upper_if_spread=min(1.0, ests[0].ci.high + spread),
    )


@dataclass(frozen=True)
class _SetFit:
    """The relevance-set fit of one group: the unfavoured positions' counts, the
    likelihoods at the chosen floor, the size distributions (row 0: all queries; then
    one per bootstrap resample of the cross-fit) and sPB on each."""

    keep: npt.NDArray[np.bool_]
    counts: npt.NDArray[np.int64]
    lik: npt.NDArray[np.float64]
    best: int
    best_ll: float
    floor: float
    gs: npt.NDArray[np.float64]
    strong: npt.NDArray[np.float64]


def _fit_sets(evals: Evaluations, fit: CrossFit) -> _SetFit | int:
    """The relevance-set fit, or the number of informative queries when there are too
    few (:data:`MIN_INFORMATIVE_QUERIES`) to learn the sets."""
    k = evals.k
    clean = np.ones(k, dtype=bool)
    clean[fit.favoured] = False
    keep = clean[evals.position]
    counts = np.bincount(
        evals.query[keep] * k + evals.item[keep], minlength=evals.n_queries * k
    ).reshape(evals.n_queries, k)
    informative = int(np.count_nonzero(counts.sum(axis=1) >= 2))
    if informative < min(MIN_INFORMATIVE_QUERIES, evals.n_queries):
        return informative
    lik = _likelihoods(counts, k)  # (floors, n, k): P(counts_j | s = 1..k)
    ones = np.ones(evals.n_queries)
    coarse = range(0, FLOORS.size, 4)
    best, _, _ = _profile(lik, ones, None, coarse, _EM_MAX)
    fine = range(max(0, best - 3), min(FLOORS.size, best + 4))
    best, g, best_ll = _profile(lik, ones, None, fine, _EM_MAX)
    floor = float(FLOORS[best])
    per_query = np.bincount(evals.query, minlength=evals.n_queries).astype(float)
    n_boot = fit.share_boot.size
    gs = np.empty((n_boot + 1, k))
    gs[0] = g
    for b in range(n_boot):
        gs[b + 1] = _em(lik[best], fit.weights[b], g.copy(), _EM_MAX, _EM_TOL)[0]
    weights = np.vstack((np.ones(evals.n_queries), fit.weights))
    strong = landing_strong(novelty(evals, ~keep),
                            _outside_shares(lik[best], gs, floor), per_query, weights)
    return _SetFit(keep, counts, lik, best, best_ll, floor, gs, strong)


def split_replicates(
    evals: Evaluations, fit: CrossFit
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None:
    """sPB and the position-driven share on all queries (element 0) and on each of the
    cross-fit's bootstrap resamples (``fit.weights``), or None when the relevance sets
    are not identified: the replicates a paired comparison of two systems differences
    (soft bias is their difference)."""
    sets = _fit_sets(evals, fit)
    if isinstance(sets, int):
        return None
    return sets.strong, np.concatenate(([fit.share], fit.share_boot))


def _floor_upper(lik: npt.NDArray[np.float64], g: npt.NDArray[np.float64], best: int,
                 best_ll: float, confidence_level: float) -> float:
    """The most that the floor could put outside the relevance sets within its profile-
    likelihood interval: max eps (1 - E|R|/k) over the floors whose log-likelihood is
    within chi2_1(level) / 2 of the best (Wilks), each with its own G."""
    k = lik.shape[2]
    cut = best_ll - 0.5 * float(stats.chi2.ppf(confidence_level, 1))
    ones = np.ones(lik.shape[1])
    most = float(FLOORS[best]) * (1.0 - float(g @ np.arange(1, k + 1)) / k)
    for f in range(best + 1, FLOORS.size):
        gf, ll = _em(lik[f], ones, g.copy(), _EM_MAX, _EM_TOL)
        if ll < cut:
            break
        most = max(most, float(FLOORS[f]) * (1.0 - float(gf @ np.arange(1, k + 1)) / k))
    return most


def _unidentified(fit: CrossFit, confidence_level: float, informative: int,
                  n_queries: int) -> StrongSoftResult:
    """The split's identification bounds when the relevance sets cannot be learned.

    sPB = beta (1 - eps)(1 - E|R|/k) with E|R| in [1, k] and eps in [0, 1] lies in
    [0, beta (1 - 1/k)], soft = beta - sPB in [beta / k, beta]; with beta's interval
    [lo, hi] the bounds are [0, hi (1 - 1/k)] and [lo / k, hi] (Manski 2003, ch. 1:
    an interval for a partially identified quantity).
    """
    k = fit.k
    share = _share_estimate(fit, confidence_level)
    lo, hi = share.ci.low, share.ci.high
    method = "identification bounds (relevance sets not identified)"
    none = math.nan
    strong = Estimate(none, ConfidenceInterval(0.0, min(1.0, hi * (1.0 - 1.0 / k)),
                                               confidence_level, method))
    soft = Estimate(none, ConfidenceInterval(lo / k, hi, confidence_level, method))
    return StrongSoftResult(
        strong=strong, soft=soft, positional_share=share, mean_set_size=none, floor=none,
        favoured=tuple(int(p) + 1 for p in fit.favoured),
        note=NOTE_UNIDENTIFIED.format(n=informative, q=n_queries, m=MIN_INFORMATIVE_QUERIES),
    )


def _outside_shares(lik: npt.NDArray[np.float64], gs: npt.NDArray[np.float64],
                    floor: float) -> npt.NDArray[np.float64]:
    """(b, n): (1 - eps)(1 - E[|R_j| | data_j] / k) under each size distribution of
    ``gs`` (rows), the posterior over sizes proportional to G(s) P(counts_j | s)."""
    k = gs.shape[1]
    total = gs @ lik.T  # (b, n)
    size = np.divide((gs * np.arange(1, k + 1)) @ lik.T, total,
                     out=np.full_like(total, k / 2), where=total > 0)
    return (1.0 - floor) * (1.0 - size / k)


def _share_estimate(fit: CrossFit, confidence_level: float) -> Estimate:
    """beta, the position-driven share: the percentile interval of its bootstrap, the
    upper end raised to the share's bound over favoured sets."""
    ci = _clip(percentile_interval(fit.share_boot, confidence_level=confidence_level))
    top = share_upper_bound(fit, confidence_level)
    if np.isfinite(top):
        ci = ConfidenceInterval(ci.low, min(1.0, max(ci.high, top)), ci.confidence_level,
                                "percentile bootstrap; upper: max over favoured sets")
    return Estimate(max(0.0, fit.share), ci)


def _free_form_displaced(
    counts: npt.NDArray[np.int64], weights: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    r"""E_j TV(r_j, u) = k E_H (x - 1/k)_+ on each bootstrap resample (rows of query
    ``weights``), H the distribution of the choice probabilities x = r_j(i) over
    queries and candidates, of no assumed form (a crisp set, a set plus a floor and
    graded relevance are all distributions H): its NPMLE on ``probability_grid`` under
    the composite likelihood :math:`\prod_{j,i} \int x^{c_{ji}} (1 - x)^{m_j - c_{ji}}
    dH(x)` (item i got :math:`c_{ji}` of query j's :math:`m_j` selections at the
    unfavoured positions; rows with the same (m, c) pooled), refitted on each resample
    from the full-data fit."""
    k = counts.shape[1]
    grid = probability_grid(k)
    draws, hits, incidence = _patterns(counts)
    lik = _binomial_likelihoods(draws, hits, grid)
    h, _ = _em(lik, incidence.sum(axis=0), np.full(grid.size, 1.0 / grid.size), _H_MAX,
               _H_TOL)
    excess = k * np.maximum(grid - 1.0 / k, 0.0)  # TV contribution of one candidate
    pooled = weights @ incidence
    return np.array([float(_em(lik, pooled[b], h.copy(), _H_MAX, _H_TOL)[0] @ excess)
                     for b in range(pooled.shape[0])])


def probability_grid(k: int) -> npt.NDArray[np.float64]:
    """Support of H: ``GRID_POINTS`` choice probabilities, 1/k among them, three in
    four of them below 4/k (where the candidates of a query with k >= 5 mostly are)."""
    low = np.linspace(0.0, 4.0 / k, _GRID_LOW) if k > 4 else np.linspace(0.0, 1.0, _GRID_LOW)
    high = np.linspace(low[-1], 1.0, GRID_POINTS - _GRID_LOW + 1)[1:]
    return np.unique(np.concatenate((low, high, [1.0 / k])))


def _patterns(
    counts: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The distinct (m_j, c_ji) pairs of a count table (n, k) -- draws m_j, hits c_ji --
    and the incidence (n, pairs): how many of query j's candidates have each pair."""
    n, k = counts.shape
    draws = counts.sum(axis=1)
    rows = np.repeat(np.arange(n), k)
    code = draws[rows] * (int(counts.max(initial=0)) + 1) + counts.ravel()
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    incidence = np.zeros((n, first.size))
    np.add.at(incidence, (rows, inverse.ravel()), 1.0)
    return draws[rows[first]], counts.ravel()[first], incidence


def _binomial_likelihoods(
    draws: npt.NDArray[np.int64], hits: npt.NDArray[np.int64], grid: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """x^c (1 - x)^(m - c) for every pooled row (m, c) and grid point x, each row
    scaled by its maximum (the binomial coefficient and the scale drop out of EM)."""
    c = hits[:, None].astype(float)
    rest = (draws - hits)[:, None].astype(float)
    loglik = special.xlogy(c, grid) + special.xlog1py(rest, -grid)  # 0 log 0 = 0
    loglik -= loglik.max(axis=1, keepdims=True)
    return np.ascontiguousarray(np.exp(loglik))


def _clip(ci: ConfidenceInterval) -> ConfidenceInterval:
    return ConfidenceInterval(max(0.0, ci.low), max(0.0, ci.high), ci.confidence_level,
                              ci.method)


def _profile(
    lik: npt.NDArray[np.float64],
    weights: npt.NDArray[np.float64],
    start: npt.NDArray[np.float64] | None,
    floors: range,
    max_iter: int,
) -> tuple[int, npt.NDArray[np.float64], float]:
    """Best floor index, its G and log-likelihood over ``floors`` (EM per floor)."""
    k = lik.shape[2]
    best, best_g, best_ll = -1, np.full(k, 1.0 / k), -np.inf
    for f in floors:
        g0 = np.full(k, 1.0 / k) if start is None else start.copy()
        g, ll = _em(lik[f], weights, g0, max_iter, _EM_TOL)
        if ll > best_ll:
            best, best_g, best_ll = f, g, ll
    return best, best_g, best_ll


@numba.njit(cache=True)
def _em(
    lik: npt.NDArray[np.float64],
    weights: npt.NDArray[np.float64],
    g: npt.NDArray[np.float64],
    max_iter: int,
    tol: float,
) -> tuple[npt.NDArray[np.float64], float]:  # pragma: no cover - compiled
    """NPMLE of the mixing weights g over sizes by EM (Laird 1978); rows of ``lik``
    are P(data_j | s) scaled by a per-row constant (the log-likelihood is up to it)."""
    n, k = lik.shape
    total = weights.sum()
    ll_old = -np.inf
    ll = -np.inf
    for _ in range(max_iter):
        new = np.zeros(k)
        ll = 0.0
        for j in range(n):
            if weights[j] == 0.0:
                continue
            den = 0.0
            for s in range(k):
                den += g[s] * lik[j, s]
            ll += weights[j] * np.log(den)
            for s in range(k):
                new[s] += weights[j] * g[s] * lik[j, s] / den
        g = new / total
        if ll - ll_old < tol * max(1.0, abs(ll)):
            break
        ll_old = ll
    return g, ll


def _likelihoods(counts: npt.NDArray[np.int64], k: int) -> npt.NDArray[np.float64]:
    """P(counts_j | |R_j| = s, floor) for every floor of FLOORS, query j, s = 1..k,
    each query's row scaled by one constant across floors and sizes."""
    binom = np.array([[comb(a, b) for b in range(k + 1)] for a in range(k + 1)], dtype=float)
    out = _likelihood_kernel(counts, k, FLOORS.astype(np.float64), binom)
    scale = out.max(axis=(0, 2), keepdims=True)
    scale[scale <= 0.0] = 1.0
    return np.asarray(out / scale)


@numba.njit(cache=True)
def _likelihood_kernel(
    counts: npt.NDArray[np.int64],
    k: int,
    floors: npt.NDArray[np.float64],
    binom: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:  # pragma: no cover - compiled
    n = counts.shape[0]
    out = np.empty((floors.size, n, k))
    top = counts.max() + 1
    pow_a = np.empty(top)
    pow_b = np.empty(top)
    poly = np.empty(k + 1)
    for j in range(n):
        seen, d = _seen_counts(counts[j])
        for f in range(floors.size):
            for s in range(1, k + 1):
                if d == 0:
                    out[f, j, s - 1] = 1.0
                    continue
                eps = floors[f]
                _powers((1.0 - eps) / s + eps / k, eps / k, pow_a, pow_b)
                out[f, j, s - 1] = _set_likelihood(seen, d, s, k, pow_a, pow_b, poly, binom)
    return out


@numba.njit(cache=True)
def _seen_counts(
    row: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], int]:  # pragma: no cover - compiled
    """The positive counts of one query's row (first d entries) and d."""
    seen = np.empty(row.size, np.int64)
    d = 0
    for c in row:
        if c > 0:
            seen[d] = c
            d += 1
    return seen, d


@numba.njit(cache=True)
def _powers(
    a: float, b: float, pow_a: npt.NDArray[np.float64], pow_b: npt.NDArray[np.float64]
) -> None:  # pragma: no cover - compiled
    """pow_a[c] = a^c, pow_b[c] = b^c, in place."""
    pow_a[0] = 1.0
    pow_b[0] = 1.0
    for c in range(1, pow_a.size):
        pow_a[c] = pow_a[c - 1] * a
        pow_b[c] = pow_b[c - 1] * b


@numba.njit(cache=True)
def _set_likelihood(
    seen: npt.NDArray[np.int64],
    d: int,
    s: int,
    k: int,
    pow_a: npt.NDArray[np.float64],
    pow_b: npt.NDArray[np.float64],
    poly: npt.NDArray[np.float64],
    binom: npt.NDArray[np.float64],
) -> float:  # pragma: no cover - compiled
    """P(counts | |R| = s) of one query with d > 0 seen items (their counts ``seen``),
    given the powers of a = (1 - eps)/s + eps/k and b = eps/k; ``poly`` is work space
    for e_t, the coefficients of prod_i (b^c_i + a^c_i x)."""
    poly[0] = 1.0
    for t in range(1, d + 1):
        poly[t] = 0.0
    for idx in range(d):
        pa = pow_a[seen[idx]]
        pb = pow_b[seen[idx]]
        for t in range(idx + 1, 0, -1):
            poly[t] = poly[t] * pb + poly[t - 1] * pa
        poly[0] = poly[0] * pb
    total = 0.0
    for t in range(0, min(s, d) + 1):
        if s - t <= k - d:
            total += poly[t] * binom[k - d, s - t]
    return total / binom[k, s]
