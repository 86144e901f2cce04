"""The simulation study of the spec's section 8: data generator and power grid."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .._stats import as_generator, binomial_interval
from ..exceptions import InputError
from ._evaluations import Evaluations
from ._icm import pob_icm
from ._unbp import pob_unbp

__all__ = ["PowerRow", "PowerStudy", "TESTS", "simulate_evaluations", "power_study"]

TESTS = ("pob_icm", "pob_unbp")

MSG_POSITIVE = "`{name}` must be an integer >= {low}, got {value!r}"
MSG_P_BIAS = "`p_bias` must be in [0, 1], got {value!r}"
MSG_TESTS = "`tests` must be a subset of {choices}, got {value!r}"
MSG_ALPHA = "`alpha` must be in (0, 1), got {value!r}"


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
    relevant = gen.random((n_queries, k)) < 0.5
    empty = ~relevant.any(axis=1)
    while empty.any():
        relevant[empty] = gen.random((int(empty.sum()), k)) < 0.5
        empty = ~relevant.any(axis=1)
    n = n_queries * n_perms
    query = np.repeat(np.arange(n_queries, dtype=np.int64), n_perms)
    orders = gen.permuted(np.tile(np.arange(k, dtype=np.int64), (n, 1)), axis=1)
    keys = np.where(relevant[query], gen.random((n, k)), -1.0)
    item = np.argmax(keys, axis=1)
    biased = gen.random(n) < p_bias
    item[biased] = orders[biased, 0]
    position = np.argmax(orders == item[:, None], axis=1)
    evals = Evaluations(
        k=k,
        query_ids=np.array([f"q{j + 1}" for j in range(n_queries)]),
        query=query,
        orders=orders,
        position=position.astype(np.int64),
        item=item.astype(np.int64),
        rows=np.arange(1, n + 1, dtype=np.int64),
    )
    return (evals, relevant) if return_truth else evals


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

    References
    ----------
    Peláez-González, Herrera, Herrera-Poyatos, arXiv 2610.37962, simulation appendix.
    """
    ks, qs, pbs, reps, alpha, tests = _power_study_iv(k, queries, perms, p_bias, reps, alpha, tests)
    gen = as_generator(rng)
    rows: list[PowerRow] = []
    for kk in ks:
        for n_q in qs:
            for pb in pbs:
                hits = dict.fromkeys(tests, 0)
                for _ in range(reps):
                    ev = simulate_evaluations(n_q, k=kk, n_perms=perms, p_bias=pb, rng=gen)
                    if "pob_unbp" in tests:
                        hits["pob_unbp"] += bool(pob_unbp(ev, alpha=alpha).reject)
                    if "pob_icm" in tests:
                        hits["pob_icm"] += (
                            pob_icm(ev, n_resamples=n_resamples, rng=gen).pvalue <= alpha
                        )
                    if progress is not None:
                        progress(1)
                for test in tests:
                    ci = binomial_interval(int(hits[test]), reps)
                    rows.append(
                        PowerRow(test, kk, n_q, perms, pb, reps, hits[test] / reps, ci.low, ci.high)
                    )
    return PowerStudy(rows=tuple(rows), alpha=alpha)


def _simulate_iv(
    n_queries: int, k: int, n_perms: int, p_bias: float
) -> tuple[int, int, int, float]:
    for name, value, low in (("n_queries", n_queries, 1), ("k", k, 2), ("n_perms", n_perms, 1)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            raise InputError(MSG_POSITIVE.format(name=name, low=low, value=value))
    if not 0.0 <= float(p_bias) <= 1.0:
        raise InputError(MSG_P_BIAS.format(value=p_bias))
    return int(n_queries), int(k), int(n_perms), float(p_bias)


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
