"""The simulation study of the spec's section 8: data generator and power grid."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numba
import numpy as np
import numpy.typing as npt

from .._limits import SIMULATION_BATCH, check_simulation
from .._records import as_mapping, integer, number, text
from .._stats import (
    ConfidenceInterval,
    Estimate,
    as_generator,
    binomial_interval,
    monte_carlo_pvalue,
)
from ..exceptions import InputError
from ._evaluations import Evaluations
from ._icm import MSG_N_RESAMPLES, _chi2_statistic, _null_statistics, _permutation_labels
from ._rng import bounded, rng_state, uniform, word
from ._unbp import MSG_TWO_QUERIES, _reject_many

__all__ = [
    "PowerRow",
    "PowerStudy",
    "TESTS",
    "exact_query_shares",
    "power_study",
    "simulate_evaluations",
]

TESTS = ("pob_icm", "pob_unbp")

MSG_POSITIVE = "`{name}` must be an integer >= {low}, got {value!r}"
MSG_P_BIAS = "`p_bias` must be in [0, 1], got {value!r}"
MSG_TESTS = "`tests` must be a subset of {choices}, got {value!r}"
MSG_ALPHA = "`alpha` must be in (0, 1), got {value!r}"
MSG_ICM_CANNOT_REJECT = (
    "`n_resamples` = {value} gives POB-ICM no p-value below 1/(1 + {value}) = {pmin:.3g}, "
    "above alpha = {alpha:g}: its rejection rate would be 0 by construction, not a "
    "measurement; use `n_resamples` >= {need} (or leave POB-ICM out of `tests`)"
)

_MAX_K_CODED = 20  # 20! < 2**63: larger k is simulated by simulate_evaluations
_BATCH_EVALUATIONS = SIMULATION_BATCH  # evaluations simulated per batch of replications


def simulate_evaluations(
    n_queries: int,
    *,
    k: int,
    n_perms: int = 20,
    p_bias: float = 0.0,
    rng: np.random.Generator | int | None = None,
    return_truth: bool = False,
) -> Any:
    """Simulate an analysis group under the spec's generative model (section 8).

    Each query draws a relevance set R, uniform over the non-empty subsets of its k
    candidates; each of its ``n_perms`` evaluations shows the candidates in a
    permutation drawn uniformly with replacement and selects the item at the FIRST
    prompt position with probability ``p_bias``, otherwise an item of R uniformly.
    ``p_bias = 0`` is the null. The strong-bias rate of query j (share of selections
    outside R) is ``p_bias * (k - |R_j|) / k``.

    Returns
    -------
    Evaluations, or (Evaluations, relevant) with ``return_truth=True`` where
    ``relevant`` is the (n_queries, k) boolean matrix of relevance sets.
    """
    n_queries, k, n_perms, p_bias = _simulate_iv(n_queries, k, n_perms, p_bias)
    gen = as_generator(rng)
    relevant = random_relevance_sets(n_queries, k, gen)
    n = n_queries * n_perms
    query = np.repeat(np.arange(n_queries, dtype=np.int64), n_perms)
    orders = gen.permuted(np.tile(np.arange(k, dtype=np.int64), (n, 1)), axis=1)
    keys = np.where(relevant[query], gen.random((n, k)), -1.0)
    item = np.argmax(keys, axis=1)
    biased = gen.random(n) < p_bias
    item[biased] = orders[biased, 0]
    evals = evaluations_from_draws(k, n_queries, query, orders, item)
    return (evals, relevant) if return_truth else evals


def random_relevance_sets(
    n_queries: int, k: int, gen: np.random.Generator
) -> npt.NDArray[np.bool_]:
    """(n_queries, k) membership of relevance sets uniform over the non-empty subsets
    (k fair coins per query, redrawn for a query that got none)."""
    relevant = gen.random((n_queries, k)) < 0.5
    empty = ~relevant.any(axis=1)
    while empty.any():
        relevant[empty] = gen.random((int(empty.sum()), k)) < 0.5
        empty = ~relevant.any(axis=1)
    return relevant


def evaluations_from_draws(
    k: int,
    n_queries: int,
    query: npt.NDArray[np.int64],
    orders: npt.NDArray[np.int64],
    item: npt.NDArray[np.int64],
) -> Evaluations:
    """Simulated evaluations (valid by construction): queries ``q1..qn``, the selected
    position found in each order, rows numbered from 1."""
    position = np.argmax(orders == item[:, None], axis=1)
    return Evaluations(
        k=k,
        query_ids=np.array([f"q{j + 1}" for j in range(n_queries)]),
        query=query,
        orders=orders,
        position=position.astype(np.int64),
        item=item.astype(np.int64),
        rows=np.arange(1, query.size + 1, dtype=np.int64),
    )


def exact_query_shares(
    n_reps: int, n_queries: int, *, k: int, n_perms: int, p_bias: float,
    gen: np.random.Generator,
) -> npt.NDArray[np.float64]:
    r"""Per-query mean choice probabilities of ``n_reps`` data sets of the spec's
    section-8 model (exact mode), shape (n_reps, n_queries, k).

    Evaluation e of query j shows a uniformly random order sigma_e; its exact position
    law is :math:`\pi_e(p) = p_{bias} 1\{p = 1\} + (1 - p_{bias})
    1\{\sigma_e^{-1}(p) \in R_j\} / |R_j|` (the law :func:`simulate_evaluations`
    samples from), and the returned value is :math:`\bar\pi_j = \frac1{l_j}\sum_e \pi_e`.
    Relevance sets as in :func:`random_relevance_sets`.
    """
    rel = random_relevance_sets(n_reps * n_queries, k, gen).reshape(n_reps, n_queries, 1, k)
    orders = np.argsort(gen.random((n_reps, n_queries, n_perms, k)), axis=-1)
    shown = np.take_along_axis(np.broadcast_to(rel, orders.shape), orders, axis=-1)
    probs = (1.0 - p_bias) * shown / shown.sum(axis=-1, keepdims=True)
    probs[..., 0] += p_bias
    return np.asarray(probs.mean(axis=2))


@dataclass(frozen=True)
class PowerRow:
    """Rejection rate of one test at one grid point, with its Wilson CI."""

    test: str
    k: int
    queries: int
    perms: int
    p_bias: float
    reps: int
    rejection_rate: float
    ci_low: float
    ci_high: float

    def to_dict(self) -> dict[str, Any]:
        """The JSON row of ``recaudit positional simulate --json``."""
        return asdict(self)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> PowerRow:
        """Read :meth:`to_dict` back: every number strict, a missing or wrong key named."""
        what = "PowerRow (a `recaudit positional simulate --json` row)"
        obj = as_mapping(obj, what)
        return cls(test=text(obj, "test", what), k=integer(obj, "k", what),
                   queries=integer(obj, "queries", what),
                   perms=integer(obj, "perms", what), p_bias=number(obj, "p_bias", what),
                   reps=integer(obj, "reps", what),
                   rejection_rate=number(obj, "rejection_rate", what),
                   ci_low=number(obj, "ci_low", what), ci_high=number(obj, "ci_high", what))

    @property
    def rejection(self) -> Estimate:
        """The rejection rate with its Wilson interval, as an :class:`Estimate`."""
        return Estimate(self.rejection_rate, ConfidenceInterval(
            self.ci_low, self.ci_high, 0.95, "Wilson score interval"))


@dataclass(frozen=True)
class PowerStudy:
    """All rows of a :func:`power_study` grid."""

    rows: tuple[PowerRow, ...]
    alpha: float

    def power_table(self, power: float = 0.8) -> dict[tuple[str, int, float], int | None]:
        """Per (test, k, p_bias > 0): the smallest number of queries on the grid whose
        rejection rate reaches ``power`` (``None`` when no grid point reaches it)."""
        out: dict[tuple[str, int, float], int | None] = {}
        for row in sorted(self.rows, key=lambda r: (r.test, r.k, r.p_bias, r.queries)):
            if row.p_bias == 0:
                continue
            key = (row.test, row.k, row.p_bias)
            out.setdefault(key, None)
            if out[key] is None and row.rejection_rate >= power:
                out[key] = row.queries
        return out


def power_study(
    *,
    k: Sequence[int] = (5, 10, 15, 20),
    queries: Sequence[int] = (50, 100, 200),
    perms: int = 20,
    p_bias: Sequence[float] = (0.0, 0.1, 0.2),
    reps: int = 1000,
    alpha: float = 0.05,
    n_resamples: int = 199,
    tests: Sequence[str] = TESTS,
    rng: np.random.Generator | int | None = None,
    progress: Callable[[int], None] | None = None,
) -> PowerStudy:
    """Rejection rates of POB-ICM and POB-UNBP over a simulation grid (spec section 8).

    For every (k, number of queries, p_bias) the same ``reps`` simulated data sets are
    tested by every test in ``tests`` at level ``alpha`` (POB-UNBP with eps = 0,
    POB-ICM with ``n_resamples`` shuffles). ``p_bias = 0`` rows are type-I errors.
    ``progress`` is called with the number of replications just finished.

    Notes
    -----
    The data sets of a grid point are simulated in batches by a numba kernel (the
    model of :func:`simulate_evaluations`, drawn from a xoshiro256** stream seeded by
    ``rng``; :func:`simulate_evaluations` itself for k > 20) and tested on arrays:
    POB-UNBP vectorised over the batch, POB-ICM through the kernel of
    :func:`pob_icm` with the same p-value. No table is built or validated -- the data
    are valid by construction. ``n_resamples`` (B = 199 by default) bounds the ICM
    p-value below by 1 / (B + 1) = 0.005, ample for a decision at alpha = 0.05.

    References
    ----------
    Peláez-González, Herrera, Herrera-Poyatos, arXiv 2610.37962, simulation appendix.
    """
    ks, qs, pbs, reps, alpha, tests = _power_study_iv(k, queries, perms, p_bias, reps, alpha, tests)
    if "pob_icm" in tests:
        _can_reject_iv(n_resamples, alpha)
    check_simulation(ks=ks, queries=qs, perms=perms, reps=reps,
                     n_resamples=n_resamples if "pob_icm" in tests else 0)
    if "pob_unbp" in tests and min(qs) < 2:
        raise InputError(MSG_TWO_QUERIES.format(n=min(qs)))
    gen = as_generator(rng)
    rows: list[PowerRow] = []
    for kk in ks:
        for n_q in qs:
            for pb in pbs:
                hits = dict.fromkeys(tests, 0)
                batch = max(1, _BATCH_EVALUATIONS // (n_q * perms))
                for start in range(0, reps, batch):
                    item, position, label = _simulate_batch(
                        min(batch, reps - start), n_q, kk, perms, pb, gen
                    )
                    if "pob_unbp" in tests:
                        hits["pob_unbp"] += int(
                            _reject_many(_shares(position, n_q, kk), alpha).sum()
                        )
                    if "pob_icm" in tests:
                        hits["pob_icm"] += _icm_rejections(
                            item, label, n_q, kk, n_resamples, alpha, gen
                        )
                    if progress is not None:
                        progress(item.shape[0])
                for test in tests:
                    ci = binomial_interval(hits[test], reps)
                    rows.append(
                        PowerRow(test, kk, n_q, perms, pb, reps, hits[test] / reps, ci.low, ci.high)
                    )
    return PowerStudy(rows=tuple(rows), alpha=alpha)


def _simulate_batch(
    n_reps: int, n_queries: int, k: int, perms: int, p_bias: float, gen: np.random.Generator
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``(item, position, label)`` of ``n_reps`` simulated data sets, each of shape
    (n_reps, n_queries * perms), evaluations grouped by query (``perms`` each).

    ``label`` identifies the permutation: its Fisher-Yates code for k <= 20 (any
    injective code will do), the index among the distinct permutations otherwise.
    """
    shape = (n_reps, n_queries * perms)
    item = np.empty(shape, np.int64)
    position = np.empty(shape, np.int64)
    label = np.empty(shape, np.int64)
    if k <= _MAX_K_CODED:
        _simulate_coded(n_queries, k, perms, p_bias, rng_state(gen), item, position, label)
        return item, position, label
    for r in range(n_reps):
        ev = simulate_evaluations(n_queries, k=k, n_perms=perms, p_bias=p_bias, rng=gen)
        item[r], position[r], label[r] = ev.item, ev.position, _permutation_labels(ev.orders)[0]
    return item, position, label


@numba.njit(cache=True, nogil=True)
def _simulate_coded(
    n_queries: int,
    k: int,
    perms: int,
    p_bias: float,
    state: npt.NDArray[np.uint64],
    item: npt.NDArray[np.int64],
    position: npt.NDArray[np.int64],
    label: npt.NDArray[np.int64],
) -> None:  # pragma: no cover - compiled
    """The model of :func:`simulate_evaluations`, one row of the outputs per data set.

    R = the candidates whose bit is set in k random bits (redrawn when none is: a
    uniform non-empty subset); the permutation is a Fisher-Yates shuffle of 0..k-1
    whose draws j_t (t = k-1..1) give the label ``sum_t j_t prod_{u<t}(u+1)``, a
    bijection onto 0..k!-1; the item is the first shown with probability ``p_bias``,
    else uniform over R, and the position is where the permutation shows it.
    """
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    sigma = np.empty(k, np.int64)
    members = np.empty(k, np.int64)
    for r in range(item.shape[0]):
        e = 0
        for _ in range(n_queries):
            mask = np.uint64(0)
            while mask == 0:
                s0, s1, s2, s3, w = word(s0, s1, s2, s3)
                mask = w >> np.uint64(64 - k)
            n_rel = 0
            for i in range(k):
                if (mask >> np.uint64(i)) & np.uint64(1):
                    members[n_rel] = i
                    n_rel += 1
            for _ in range(perms):
                for i in range(k):
                    sigma[i] = i
                code = np.int64(0)
                for t in range(k - 1, 0, -1):
                    s0, s1, s2, s3, j = bounded(s0, s1, s2, s3, np.uint64(t + 1))
                    tmp = sigma[t]
                    sigma[t] = sigma[j]
                    sigma[j] = tmp
                    code = code * (t + 1) + j
                s0, s1, s2, s3, u = uniform(s0, s1, s2, s3)
                if u < p_bias:
                    chosen, pos = sigma[0], 0
                else:
                    s0, s1, s2, s3, d = bounded(s0, s1, s2, s3, np.uint64(n_rel))
                    chosen, pos = members[d], 0
                    while sigma[pos] != chosen:
                        pos += 1
                item[r, e], position[r, e], label[r, e] = chosen, pos, code
                e += 1
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3


def _shares(position: npt.NDArray[np.int64], n_queries: int, k: int) -> npt.NDArray[np.float64]:
    """Y_j(p) of each data set, shape (R, n_queries, k), as :func:`query_position_shares`."""
    n_reps, n = position.shape
    perms = n // n_queries
    cells = np.arange(n_reps * n_queries).repeat(perms) * k + position.ravel()
    counts = np.bincount(cells, minlength=n_reps * n_queries * k)
    return counts.reshape(n_reps, n_queries, k) / perms


def _icm_rejections(
    item: npt.NDArray[np.int64],
    label: npt.NDArray[np.int64],
    n_queries: int,
    k: int,
    n_resamples: int,
    alpha: float,
    gen: np.random.Generator,
) -> int:
    """How many of the data sets POB-ICM rejects at ``alpha`` (p as in :func:`pob_icm`)."""
    statistic, null = _icm_batch(item, label, n_queries, k, n_resamples, rng_state(gen))
    return sum(monte_carlo_pvalue(s, b) <= alpha for s, b in zip(statistic, null, strict=True))


@numba.njit(cache=True, nogil=True)
def _icm_batch(
    item: npt.NDArray[np.int64],
    label: npt.NDArray[np.int64],
    n_queries: int,
    k: int,
    n_resamples: int,
    state: npt.NDArray[np.uint64],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:  # pragma: no cover
    """X^2 and its within-query null of each row (data set); labels are compacted to
    0..C-1 first (by sorting)."""
    n_reps, n = item.shape
    offsets = np.arange(0, n + 1, n // n_queries)
    statistic = np.empty(n_reps)
    null = np.empty((n_reps, n_resamples))
    compact = np.empty(n, np.int64)
    for r in range(n_reps):
        order = np.argsort(label[r])
        n_labels = 0
        for e in range(n):
            if e > 0 and label[r, order[e]] != label[r, order[e - 1]]:
                n_labels += 1
            compact[order[e]] = n_labels
        n_labels += 1
        statistic[r] = _chi2_statistic(item[r], compact, k, n_labels)
        _null_statistics(item[r], compact, offsets, k, n_labels, state, null[r])
    return statistic, null


def _simulate_iv(
    n_queries: int, k: int, n_perms: int, p_bias: float
) -> tuple[int, int, int, float]:
    for name, value, low in (("n_queries", n_queries, 1), ("k", k, 2), ("n_perms", n_perms, 1)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            raise InputError(MSG_POSITIVE.format(name=name, low=low, value=value))
    if not 0.0 <= float(p_bias) <= 1.0:
        raise InputError(MSG_P_BIAS.format(value=p_bias))
    return int(n_queries), int(k), int(n_perms), float(p_bias)


def _can_reject_iv(n_resamples: Any, alpha: float) -> int:
    """``n_resamples`` if POB-ICM's +1-corrected p-value can reach ``alpha``: its
    smallest value is :math:`1/(1+B)`, so :math:`B \\ge \\lceil 1/\\alpha \\rceil - 1`
    shuffles are needed (19 at 0.05); fewer make every rejection rate 0."""
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int | np.integer) \
            or n_resamples < 0:
        raise InputError(MSG_N_RESAMPLES.format(value=n_resamples))
    need = max(1, math.ceil(1.0 / alpha - 1.0 - 1e-9))
    if n_resamples < need:
        raise InputError(MSG_ICM_CANNOT_REJECT.format(
            value=n_resamples, pmin=1.0 / (1 + n_resamples), alpha=alpha, need=need))
    return int(n_resamples)


def _power_study_iv(
    k: Sequence[int],
    queries: Sequence[int],
    perms: int,
    p_bias: Sequence[float],
    reps: int,
    alpha: float,
    tests: Sequence[str],
) -> tuple[list[int], list[int], list[float], int, float, list[str]]:
    ks = [_simulate_iv(1, kk, perms, 0.0)[1] for kk in k]
    qs = [_simulate_iv(q, 2, perms, 0.0)[0] for q in queries]
    pbs = [_simulate_iv(1, 2, perms, pb)[3] for pb in p_bias]
    if isinstance(reps, bool) or not isinstance(reps, int | np.integer) or reps < 1:
        raise InputError(MSG_POSITIVE.format(name="reps", low=1, value=reps))
    if not 0.0 < float(alpha) < 1.0:
        raise InputError(MSG_ALPHA.format(value=alpha))
    if not tests or any(t not in TESTS for t in tests):
        raise InputError(MSG_TESTS.format(choices=TESTS, value=list(tests)))
    return ks, qs, pbs, int(reps), float(alpha), list(tests)
