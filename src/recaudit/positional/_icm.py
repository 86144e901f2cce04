"""POB-ICM: independence of the selected original index and the applied permutation."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np
import numpy.typing as npt
from scipy import stats

from .._records import as_mapping, integer, number
from .._stats import as_generator, monte_carlo_pvalue
from ..exceptions import InputError
from ._evaluations import Evaluations
from ._rng import bounded, rng_state

__all__ = ["PobIcmResult", "contingency_table", "pob_icm"]

MSG_N_RESAMPLES = "`n_resamples` must be an integer >= 1, got {value!r}"
MSG_N_JOBS = "`n_jobs` must be an integer >= 1, got {value!r}"

_BLOCK = 2048  # resamples per random stream (and per thread task)


@dataclass(frozen=True, eq=False)
class PobIcmResult:
    """Result of :func:`pob_icm`.

    Attributes
    ----------
    statistic : float
        Pearson chi-square X^2 of the (selected original index x permutation) table.
    pvalue : float
        Query-level permutation p-value, ``(1 + #{X2_b >= X2_obs}) / (B + 1)``.
    pvalue_asymptotic : float
        ``P(chi2_df >= X2_obs)``; unreliable with sparse columns (see Notes of
        :func:`pob_icm`).
    df : int
        ``(R - 1)(C - 1)`` over the non-empty rows and columns.
    n_rows, n_columns : int
        Non-empty rows (selected original indices) and columns (distinct permutations).
    n_resamples : int
        B, the number of within-query shuffles.
    null_distribution : ndarray of shape (B,)
        The X^2 of each shuffle (empty when read back from JSON, which does not hold
        it).
    n_in_repeated_columns : int
        Evaluations whose permutation column holds at least two evaluations. Only
        these can move X^2 under the within-query shuffle; when it is 0 (sampled
        orders at k >= 10 almost never repeat) ``X^2 = N(R - 1)`` under every shuffle
        and ``p = 1`` by construction: see :attr:`caveat`.
    method : str
        Name of the test.
    """

    statistic: float
    pvalue: float
    pvalue_asymptotic: float
    df: int
    n_rows: int
    n_columns: int
    n_resamples: int
    null_distribution: npt.NDArray[np.float64] = field(
        default_factory=lambda: np.empty(0), repr=False)
    n_in_repeated_columns: int = 0
    method: str = "POB-ICM (query-level permutation test)"

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> PobIcmResult:
        """Read the ``pob_icm`` object of ``recaudit positional analyze --json`` back.

        The JSON does not hold the null distribution: it is empty.
        """
        what = "PobIcmResult"
        obj = as_mapping(obj, what)
        return cls(
            statistic=number(obj, "statistic", what),
            pvalue=number(obj, "pvalue", what),
            pvalue_asymptotic=number(obj, "pvalue_asymptotic", what),
            df=integer(obj, "df", what),
            n_rows=integer(obj, "n_rows", what),
            n_columns=integer(obj, "n_columns", what),
            n_resamples=integer(obj, "n_resamples", what),
            n_in_repeated_columns=integer(obj, "n_in_repeated_columns", what),
        )

    @property
    def caveat(self) -> str | None:
        """Why this p-value cannot show bias, or ``None``: no permutation column holds
        two evaluations, so the test has no power whatever the model does."""
        if self.n_in_repeated_columns > 0 or self.n_rows < 2:
            return None
        return MSG_ICM_NO_REPEATS.format(n=self.n_columns)


#: The caveat of a POB-ICM whose permutation columns never repeat (spec section 4:
#: "conservative and weak when columns are sparse").
MSG_ICM_NO_REPEATS = (
    "no permutation column repeats ({n} columns, one evaluation each): X2 = N(R - 1) "
    "under every within-query shuffle, so p = 1 by construction and POB-ICM cannot see "
    "bias here; read POB-UNBP, or use a shared or exhaustive design (repeated orders)"
)


def contingency_table(evals: Evaluations) -> npt.NDArray[np.int64]:
    """The k x C table N[i, s] of selected original index i by applied permutation s.

    Columns are the distinct permutations that occur (in lexicographic order); rows
    are all k original indices (empty rows included).
    """
    labels, n_labels = _permutation_labels(evals.orders)
    cells = evals.item * n_labels + labels
    return np.bincount(cells, minlength=evals.k * n_labels).reshape(evals.k, n_labels)


def pob_icm(
    evals: Evaluations,
    *,
    n_resamples: int = 9999,
    rng: np.random.Generator | int | None = None,
    n_jobs: int = 1,
) -> PobIcmResult:
    r"""POB-ICM: chi-square test of independence of selected item and permutation.

    Builds ``N[i, s]`` = number of evaluations that selected ORIGINAL index ``i``
    under permutation ``s`` (not the displayed slot, which depends on the permutation
    even without bias) and computes Pearson's statistic over its non-empty rows and
    columns,

    .. math:: X^2 = \sum_{i,s} \frac{(N_{is} - E_{is})^2}{E_{is}},
              \quad E_{is} = \frac{N_{i\cdot} N_{\cdot s}}{N}.

    Evaluations of one query are dependent, so the null distribution is built by
    shuffling, within each query, which permutation label goes with which outcome
    (both margins are preserved), B times; ``p = (1 + #{X2_b >= X2_obs}) / (B + 1)``.
    When every query always yields the same item every shuffle reproduces the table
    and ``p = 1``.

    Parameters
    ----------
    evals : Evaluations
        One validated analysis group.
    n_resamples : int, default 9999
        Number of within-query shuffles B.
    rng : numpy.random.Generator or int, optional
        Source of randomness.
    n_jobs : int, default 1
        Threads computing the null distribution. The resamples are drawn in blocks of
        2,048, each from its own stream seeded by ``rng`` up front, so the result for
        a given seed does not depend on ``n_jobs``.

    Returns
    -------
    PobIcmResult

    Notes
    -----
    The asymptotic p-value uses ``chi2((R-1)(C-1))``; with sampled permutations and
    k >= 10 nearly every column holds a single query's evaluations, expected counts
    are far below 5 and evaluations are not independent, so only the permutation
    p-value is valid. The shuffle is an exact Fisher-Yates within each query
    (Lemire's bounded draws from a xoshiro256** stream seeded by ``rng``), compiled
    with numba. Shuffling the items against the labels is the same permutation law
    as shuffling the labels; a column seen once adds ``1 / r_i`` whatever item lands
    on it, so only the slots of repeated permutations are drawn (a partial
    Fisher-Yates) and one resample costs O(evaluations with a repeated permutation):
    O(N) at k = 5, almost nothing at k >= 10 with sampled permutations.

    References
    ----------
    Peláez-González, Herrera, Herrera-Poyatos, "Statistical Detection of Positional
    Bias in LLM-Based Recommender Systems", arXiv 2610.37962, section POB-ICM.
    Pearson, K. (1900). Phil. Mag. 50(302), 157-175.

    Examples
    --------
    >>> from recaudit.positional import simulate_evaluations, pob_icm
    >>> ev = simulate_evaluations(50, k=5, n_perms=20, p_bias=0.3, rng=0)
    >>> pob_icm(ev, n_resamples=199, rng=1).pvalue
    0.005
    """
    n_resamples, gen, n_jobs = _pob_icm_iv(n_resamples, rng, n_jobs)
    labels, n_labels = _permutation_labels(evals.orders)
    table = np.bincount(evals.item * n_labels + labels, minlength=evals.k * n_labels)
    table = table.reshape(evals.k, n_labels)
    n_rows = int((table.sum(axis=1) > 0).sum())
    col_counts = table.sum(axis=0)
    n_cols = int((col_counts > 0).sum())
    n_repeated = int(col_counts[col_counts >= 2].sum())
    df = (n_rows - 1) * (n_cols - 1)
    sort = np.argsort(evals.query, kind="stable")
    offsets = np.concatenate([[0], np.cumsum(np.bincount(evals.query))]).astype(np.int64)
    item, label = evals.item[sort], labels[sort]
    statistic = _chi2_statistic(item, label, evals.k, n_labels)
    p_asym = float(stats.chi2.sf(statistic, df)) if df > 0 else 1.0
    null = np.empty(n_resamples)
    blocks = [
        (null[start : start + _BLOCK], rng_state(gen)) for start in range(0, n_resamples, _BLOCK)
    ]

    def run(block: tuple[npt.NDArray[np.float64], npt.NDArray[np.uint64]]) -> None:
        _null_statistics(item, label, offsets, evals.k, n_labels, block[1], block[0])

    if n_jobs == 1 or len(blocks) == 1:
        for block in blocks:
            run(block)
    else:
        with ThreadPoolExecutor(max_workers=min(n_jobs, len(blocks))) as pool:
            list(pool.map(run, blocks))
    return PobIcmResult(
        statistic=statistic,
        pvalue=monte_carlo_pvalue(statistic, null),
        pvalue_asymptotic=p_asym,
        df=df,
        n_rows=n_rows,
        n_columns=n_cols,
        n_resamples=n_resamples,
        null_distribution=null,
        n_in_repeated_columns=n_repeated,
    )


def _pob_icm_iv(
    n_resamples: int, rng: np.random.Generator | int | None, n_jobs: int
) -> tuple[int, np.random.Generator, int]:
    if (
        isinstance(n_resamples, bool)
        or not isinstance(n_resamples, int | np.integer)
        or n_resamples < 1
    ):
        raise InputError(MSG_N_RESAMPLES.format(value=n_resamples))
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int | np.integer) or n_jobs < 1:
        raise InputError(MSG_N_JOBS.format(value=n_jobs))
    return int(n_resamples), as_generator(rng), int(n_jobs)


def _permutation_labels(orders: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], int]:
    uniq, inverse = np.unique(orders, axis=0, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), int(uniq.shape[0])


@numba.njit(cache=True, nogil=True)
def _chi2_statistic(
    item: npt.NDArray[np.int64], label: npt.NDArray[np.int64], k: int, n_labels: int
) -> float:  # pragma: no cover - compiled
    """Pearson's X^2 of the (item x label) table over its non-empty rows and columns,
    ``N sum_c N_c^2 / (r_i c_s) - N``."""
    n = item.size
    rows = np.zeros(k, np.int64)
    cols = np.zeros(n_labels, np.int64)
    counts = np.zeros(k * n_labels, np.int64)
    for e in range(n):
        rows[item[e]] += 1
        cols[label[e]] += 1
        counts[label[e] * k + item[e]] += 1
    total = 0.0
    for s in range(n_labels):
        for i in range(k):
            m_c = counts[s * k + i]
            if m_c > 0:
                total += m_c * m_c / (rows[i] * cols[s])
    # X^2 >= 0; rounding leaves -0.0 or -1e-13 on a table with no association
    return max(n * total - n, 0.0)


@numba.njit(cache=True, nogil=True)
def _null_statistics(
    item: npt.NDArray[np.int64],
    label: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
    k: int,
    n_labels: int,
    state: npt.NDArray[np.uint64],
    out: npt.NDArray[np.float64],
) -> None:  # pragma: no cover - compiled
    """X^2 after each of ``out.size`` independent within-query shuffles.

    Evaluations are grouped by query (query q is ``offsets[q]:offsets[q + 1]``).
    Both margins are fixed, so ``X^2 = N (S + sum_multi N_c^2 w_c) - N`` with
    ``w_c = 1 / (r_i c_s)``: a column s seen once (``c_s = 1``, "singleton") adds
    ``1 / r_i`` of whichever item lands on it. A shuffle therefore only has to
    choose the items of a query's non-singleton slots -- a partial Fisher-Yates of
    the query's items, one draw per such slot -- and the singletons take the rest:
    ``S`` = constant minus the ``1 / r_i`` of the items drawn. Queries whose shuffle
    cannot change the table (one item, one permutation, or no non-singleton slot)
    are folded into constant base counts. ``state`` (xoshiro256**) is advanced.
    """
    inv_r, multi, w = _margin_weights(item, label, k, n_labels)
    base, movable, const, n_pool, n_slot = _fixed_queries(item, label, offsets, k, inv_r, multi,
                                                          w.size)
    pool, pool_off, cell, slot_off, single = _movable_slots(item, label, offsets, k, multi,
                                                            movable, n_pool, n_slot)
    base_sq = 0.0
    for c in range(base.size):
        base_sq += base[c] * base[c] * w[c]
    counts = base.copy()
    dense = base.size <= n_slot  # reset every cell, or only the ones drawn
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    for b in range(out.size):
        s0, s1, s2, s3 = _shuffle_into(pool, pool_off, cell, slot_off, counts, s0, s1, s2, s3)
        total = const + base_sq
        for u in range(single.size):
            if single[u]:
                for t in range(slot_off[u + 1] - slot_off[u]):
                    total -= inv_r[pool[pool_off[u] + t]]
        total += _squares_and_reset(counts, base, w, dense, pool, pool_off, cell, slot_off)
        out[b] = item.size * total - item.size
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3


@numba.njit(cache=True, nogil=True)
def _margin_weights(
    item: npt.NDArray[np.int64], label: npt.NDArray[np.int64], k: int, n_labels: int,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """``1 / r_i``, the compact id of each non-singleton column, ``w_c = 1 / (r_i c_s)``."""
    rows = np.zeros(k, np.int64)
    cols = np.zeros(n_labels, np.int64)
    for e in range(item.size):
        rows[item[e]] += 1
        cols[label[e]] += 1
    inv_r = np.zeros(k)
    for i in range(k):
        if rows[i] > 0:
            inv_r[i] = 1.0 / rows[i]
    multi = np.full(n_labels, -1, np.int64)
    n_multi = 0
    for s in range(n_labels):
        if cols[s] >= 2:
            multi[s] = n_multi
            n_multi += 1
    w = np.zeros(n_multi * k)
    for s in range(n_labels):
        if multi[s] >= 0:
            for i in range(k):
                w[multi[s] * k + i] = inv_r[i] / cols[s]
    return inv_r, multi, w


@numba.njit(cache=True, nogil=True)
def _fixed_queries(
    item: npt.NDArray[np.int64], label: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64], k: int, inv_r: npt.NDArray[np.float64],
    multi: npt.NDArray[np.int64], n_cells: int,
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.bool_], float, int, int]:
    """Which queries a shuffle can change; the others folded into base counts.

    Returns the base cell counts, the movable mask, the singleton constant and the
    numbers of pooled items and non-singleton slots of the movable queries.
    """
    n_q = offsets.size - 1
    base = np.zeros(n_cells, np.int32)
    seen = np.zeros(k, np.int64)
    movable = np.zeros(n_q, np.bool_)
    const = 0.0
    n_pool, n_slot = 0, 0
    for q in range(n_q):
        lo, hi = offsets[q], offsets[q + 1]
        distinct, varied, slots = 0, False, 0
        for e in range(lo, hi):
            if seen[item[e]] != q + 1:
                seen[item[e]] = q + 1
                distinct += 1
            varied = varied or label[e] != label[lo]
            slots += multi[label[e]] >= 0
        movable[q] = distinct >= 2 and varied and slots >= 1
        if movable[q]:
            n_pool += hi - lo
            n_slot += slots
        for e in range(lo, hi):
            if movable[q]:
                const += inv_r[item[e]] if slots < hi - lo else 0.0
            elif multi[label[e]] >= 0:
                base[multi[label[e]] * k + item[e]] += 1
            else:
                const += inv_r[item[e]]
    return base, movable, const, n_pool, n_slot


@numba.njit(cache=True, nogil=True)
def _movable_slots(
    item: npt.NDArray[np.int64], label: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64], k: int, multi: npt.NDArray[np.int64],
    movable: npt.NDArray[np.bool_], n_pool: int, n_slot: int,
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64], npt.NDArray[np.int32],
           npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Each movable query's items (reshuffled in place), its slots' cell offsets
    (compact column id * k), and whether it has a singleton slot."""
    n_mov = int(movable.sum())
    pool = np.empty(n_pool, np.int32)
    pool_off = np.zeros(n_mov + 1, np.int64)
    cell = np.empty(n_slot, np.int32)
    slot_off = np.zeros(n_mov + 1, np.int64)
    single = np.empty(n_mov, np.bool_)
    u = 0
    for q in range(offsets.size - 1):
        if movable[q]:
            p, s = pool_off[u], slot_off[u]
            for e in range(offsets[q], offsets[q + 1]):
                pool[p] = item[e]
                p += 1
                if multi[label[e]] >= 0:
                    cell[s] = multi[label[e]] * k
                    s += 1
            single[u] = s - slot_off[u] < p - pool_off[u]
            pool_off[u + 1], slot_off[u + 1] = p, s
            u += 1
    return pool, pool_off, cell, slot_off, single


@numba.njit(cache=True, nogil=True)
def _shuffle_into(
    pool: npt.NDArray[np.int32], pool_off: npt.NDArray[np.int64],
    cell: npt.NDArray[np.int32], slot_off: npt.NDArray[np.int64],
    counts: npt.NDArray[np.int32], s0: np.uint64, s1: np.uint64, s2: np.uint64,
    s3: np.uint64,
) -> tuple[np.uint64, np.uint64, np.uint64, np.uint64]:
    """One within-query shuffle of every movable query, its slots counted."""
    for u in range(pool_off.size - 1):
        lo, size = pool_off[u], pool_off[u + 1] - pool_off[u]
        so, m = slot_off[u], slot_off[u + 1] - slot_off[u]
        # partial Fisher-Yates from the current arrangement: uniform whatever it is
        for t in range(min(m, size - 1)):
            s0, s1, s2, s3, d = bounded(s0, s1, s2, s3, np.uint64(size - t))
            tmp = pool[lo + t]
            pool[lo + t] = pool[lo + t + d]
            pool[lo + t + d] = tmp
        for t in range(m):
            counts[cell[so + t] + pool[lo + t]] += 1
    return s0, s1, s2, s3


@numba.njit(cache=True, nogil=True)
def _squares_and_reset(
    counts: npt.NDArray[np.int32], base: npt.NDArray[np.int32], w: npt.NDArray[np.float64],
    dense: bool, pool: npt.NDArray[np.int32], pool_off: npt.NDArray[np.int64],
    cell: npt.NDArray[np.int32], slot_off: npt.NDArray[np.int64],
) -> float:
    """``sum_c (N_c^2 - base_c^2) w_c`` over the cells drawn, counts reset to base."""
    total = 0.0
    if dense:
        for c in range(counts.size):
            total += (counts[c] * counts[c] - base[c] * base[c]) * w[c]
            counts[c] = base[c]
        return total
    for u in range(pool_off.size - 1):
        for t in range(slot_off[u + 1] - slot_off[u]):
            c = cell[slot_off[u] + t] + pool[pool_off[u] + t]
            total += (counts[c] * counts[c] - base[c] * base[c]) * w[c]
            counts[c] = base[c]
    return total
