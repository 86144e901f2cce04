"""POB-ICM: independence of the selected original index and the applied permutation."""

from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np
import numpy.typing as npt
from scipy import stats

from .._stats import as_generator, monte_carlo_pvalue
from ..exceptions import InputError
from ._evaluations import Evaluations

__all__ = ["PobIcmResult", "contingency_table", "pob_icm"]

MSG_N_RESAMPLES = "`n_resamples` must be an integer >= 1, got {value!r}"

_CHUNK_BYTES = 32_000_000


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
        The X^2 of each shuffle.
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
    null_distribution: npt.NDArray[np.float64] = field(repr=False)
    method: str = "POB-ICM (query-level permutation test)"


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

    Returns
    -------
    PobIcmResult

    Notes
    -----
    The asymptotic p-value uses ``chi2((R-1)(C-1))``; with sampled permutations and
    k >= 10 nearly every column holds a single query's evaluations, expected counts
    are far below 5 and evaluations are not independent, so only the permutation
    p-value is valid. The shuffle is an exact Fisher-Yates within each query
    (Lemire's multiply-shift bounded draws with rejection, 16-bit slices of the
    generator's raw 64-bit output), compiled with numba: one resample costs O(N).

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
    n_resamples, gen = _pob_icm_iv(n_resamples, rng)
    labels, n_labels = _permutation_labels(evals.orders)
    item = evals.item
    n = item.size
    table = np.bincount(item * n_labels + labels, minlength=evals.k * n_labels).reshape(
        evals.k, n_labels
    )
    rows = table.sum(axis=1).astype(float)
    cols = table.sum(axis=0).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        weight = np.where(np.outer(rows, cols) > 0, 1.0 / np.outer(rows, cols), 0.0)
    statistic = float(n * np.sum(table.astype(float) ** 2 * weight) - n)
    n_rows, n_cols = int((rows > 0).sum()), int((cols > 0).sum())
    df = (n_rows - 1) * (n_cols - 1)
    p_asym = float(stats.chi2.sf(statistic, df)) if df > 0 else 1.0

    sort = np.argsort(evals.query, kind="stable")
    sizes = np.bincount(evals.query)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    # Labels renumbered by first appearance in query order, cells = label * k + item:
    # a query's cells then sit close together in memory.
    _, first, relabel = np.unique(labels[sort], return_index=True, return_inverse=True)
    rank = np.empty_like(first)
    rank[np.argsort(first)] = np.arange(first.size)
    label_s = rank[relabel.reshape(-1)].astype(np.int64)
    item_s = item[sort]
    inv_rows = np.where(rows > 0, 1.0 / np.maximum(rows, 1.0), 0.0)
    inv_cols = np.where(cols > 0, 1.0 / np.maximum(cols, 1.0), 0.0)[labels[sort]]
    inv_cols_relabelled = np.empty(n_labels)
    inv_cols_relabelled[label_s] = inv_cols
    movable = _movable_queries(evals.query, item, labels, evals.k, n_labels)
    bits = 16 if sizes.max(initial=1) <= 1 << 15 else 32
    per_word = 64 // bits
    words = (n + n // 64 + 64) // per_word + 1
    null = np.empty(n_resamples)
    chunk = max(1, _CHUNK_BYTES // (8 * words))
    for start in range(0, n_resamples, chunk):
        b = min(chunk, n_resamples - start)
        raw = gen.bit_generator.random_raw(size=(b, words))
        _null_statistics(
            item_s,
            label_s,
            offsets,
            movable,
            inv_rows,
            inv_cols_relabelled,
            evals.k,
            raw,
            bits,
            null[start : start + b],
        )
    return PobIcmResult(
        statistic=statistic,
        pvalue=monte_carlo_pvalue(statistic, null),
        pvalue_asymptotic=p_asym,
        df=df,
        n_rows=n_rows,
        n_columns=n_cols,
        n_resamples=n_resamples,
        null_distribution=null,
    )


def _pob_icm_iv(
    n_resamples: int, rng: np.random.Generator | int | None
) -> tuple[int, np.random.Generator]:
    if (
        isinstance(n_resamples, bool)
        or not isinstance(n_resamples, int | np.integer)
        or n_resamples < 1
    ):
        raise InputError(MSG_N_RESAMPLES.format(value=n_resamples))
    return int(n_resamples), as_generator(rng)


def _movable_queries(
    query: npt.NDArray[np.int64],
    item: npt.NDArray[np.int64],
    labels: npt.NDArray[np.int64],
    k: int,
    n_labels: int,
) -> npt.NDArray[np.int64]:
    """Queries whose shuffle can change the table: >= 2 distinct items and labels."""
    n_q = int(query.max()) + 1
    items = np.bincount(np.unique(query * k + item) // k, minlength=n_q)
    perms = np.bincount(np.unique(query * n_labels + labels) // n_labels, minlength=n_q)
    return np.flatnonzero((items > 1) & (perms > 1)).astype(np.int64)


def _permutation_labels(orders: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], int]:
    uniq, inverse = np.unique(orders, axis=0, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), int(uniq.shape[0])


@numba.njit(cache=True, nogil=True)
def _null_statistics(
    item: npt.NDArray[np.int64],
    label: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
    movable: npt.NDArray[np.int64],
    inv_rows: npt.NDArray[np.float64],
    inv_cols: npt.NDArray[np.float64],
    k: int,
    raw: npt.NDArray[np.uint64],
    bits: int,
    out: npt.NDArray[np.float64],
) -> None:  # pragma: no cover - compiled
    """X^2 after one within-query shuffle of the labels per row of ``raw``.

    Row b of ``raw`` feeds resample b. Only ``movable`` queries (two distinct items
    and two distinct labels) are shuffled: the others cannot change the table.
    """
    counts = np.zeros(inv_cols.size * k, dtype=np.int64)
    perm = np.empty(item.size, dtype=np.int64)
    for b in range(out.size):
        _shuffle_within(perm, label, offsets, movable, raw[b], bits)
        out[b] = _chi2_fixed_margins(item, perm, inv_rows, inv_cols, k, counts)


@numba.njit(cache=True)
def _shuffle_within(
    perm: npt.NDArray[np.int64],
    label: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
    movable: npt.NDArray[np.int64],
    raw: npt.NDArray[np.uint64],
    bits: int,
) -> None:  # pragma: no cover - compiled
    """Fisher-Yates within each movable query, with Lemire's exact bounded draws
    (multiply-shift with rejection) from ``bits``-bit slices of the raw words."""
    perm[:] = label
    shift = 2 if bits == 16 else 1  # log2 of slices per word
    mask = np.uint64((1 << bits) - 1)
    n_slices = raw.size << shift
    draw = 0
    for q in movable:
        lo = offsets[q]
        for t in range(offsets[q + 1] - 1, lo, -1):
            m = np.uint64(t - lo + 1)
            word = raw[draw >> shift]
            prod = ((word >> np.uint64(bits * (draw & ((1 << shift) - 1)))) & mask) * m
            draw = draw + 1 if draw + 1 < n_slices else 0
            if (prod & mask) < m:  # Lemire (2019): reject the biased sliver
                floor = (mask + np.uint64(1) - m) % m
                while (prod & mask) < floor:
                    word = raw[draw >> shift]
                    x = (word >> np.uint64(bits * (draw & ((1 << shift) - 1)))) & mask
                    prod = x * m
                    draw = draw + 1 if draw + 1 < n_slices else 0
            j = lo + np.int64(prod >> np.uint64(bits))
            tmp = perm[t]
            perm[t] = perm[j]
            perm[j] = tmp


@numba.njit(cache=True)
def _chi2_fixed_margins(
    item: npt.NDArray[np.int64],
    perm: npt.NDArray[np.int64],
    inv_rows: npt.NDArray[np.float64],
    inv_cols: npt.NDArray[np.float64],
    k: int,
    counts: npt.NDArray[np.int64],
) -> float:  # pragma: no cover - compiled
    """``X^2 = N sum_c N_c^2 / (r_i c_s) - N`` (both margins fixed), accumulated as
    cells fill (``N_c^2`` grows by ``2 N_c + 1``): O(N). Leaves ``counts`` zeroed."""
    n = item.size
    total = 0.0
    for e in range(n):
        c = perm[e] * k + item[e]
        m_c = counts[c]
        total += inv_rows[item[e]] * inv_cols[perm[e]] * (2 * m_c + 1)
        counts[c] = m_c + 1
    for e in range(n):
        counts[perm[e] * k + item[e]] = 0
    return n * total - n
