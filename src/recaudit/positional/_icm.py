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
    p-value is valid. The shuffle draws 32-bit uniforms and maps them to ``[0, m)``
    by multiply-shift, with a bias below ``m / 2^32`` (negligible for m <= 10^4).

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
    with np.errstate(divide="ignore"):
        weight = np.where(np.outer(rows, cols) > 0, 1.0 / np.outer(rows, cols), 0.0)
    statistic = float(n * np.sum(table.astype(float) ** 2 * weight) - n)
    n_rows, n_cols = int((rows > 0).sum()), int((cols > 0).sum())
    df = (n_rows - 1) * (n_cols - 1)
    p_asym = float(stats.chi2.sf(statistic, df)) if df > 0 else 1.0

    sort = np.argsort(evals.query, kind="stable")
    offsets = np.concatenate([[0], np.cumsum(np.bincount(evals.query))]).astype(np.int64)
    item_s = item[sort]
    label_s = labels[sort].astype(np.int64)
    null = np.empty(n_resamples)
    chunk = max(1, _CHUNK_BYTES // (4 * max(n, 1)))
    for start in range(0, n_resamples, chunk):
        b = min(chunk, n_resamples - start)
        raw = gen.bit_generator.random_raw(size=(b, (n + 1) // 2))
        _null_statistics(item_s, label_s, offsets, weight.ravel(), n_labels, raw,
                         null[start:start + b])
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
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int | np.integer) or n_resamples < 1:
        raise InputError(MSG_N_RESAMPLES.format(value=n_resamples))
    return int(n_resamples), as_generator(rng)


def _permutation_labels(orders: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], int]:
    uniq, inverse = np.unique(orders, axis=0, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), int(uniq.shape[0])


@numba.njit(cache=True, nogil=True)
def _null_statistics(
    item: npt.NDArray[np.int64],
    label: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
    weight: npt.NDArray[np.float64],
    n_labels: int,
    raw: npt.NDArray[np.uint64],
    out: npt.NDArray[np.float64],
) -> None:  # pragma: no cover - compiled
    """X^2 after one within-query shuffle of the labels per row of ``raw``.

    With both margins fixed, ``X^2 = N sum_c N_c^2 w_c - N`` with
    ``w_c = 1 / (r_i c_s)``; the sum is accumulated as cells fill
    (``N_c^2`` grows by ``2 N_c + 1``), so one resample costs O(N).
    """
    n = item.size
    counts = np.zeros(weight.size, dtype=np.int64)
    perm = np.empty(n, dtype=np.int64)
    mask = np.uint64(0xFFFFFFFF)
    for b in range(out.size):
        perm[:] = label
        draw = 0
        for q in range(offsets.size - 1):
            lo = offsets[q]
            for t in range(offsets[q + 1] - 1, lo, -1):
                word = raw[b, draw >> 1]
                u = (word >> np.uint64(32 * (draw & 1))) & mask
                j = lo + np.int64((u * np.uint64(t - lo + 1)) >> np.uint64(32))
                draw += 1
                tmp = perm[t]
                perm[t] = perm[j]
                perm[j] = tmp
        total = 0.0
        for e in range(n):
            c = item[e] * n_labels + perm[e]
            m = counts[c]
            total += weight[c] * (2 * m + 1)
            counts[c] = m + 1
        for e in range(n):
            counts[item[e] * n_labels + perm[e]] = 0
        out[b] = n * total - n
