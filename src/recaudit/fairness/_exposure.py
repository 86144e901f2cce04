"""Beyond-accuracy figures of top-N lists: coverage, popularity, exposure inequality.

The lists enter as a ``users x L`` matrix of integer item codes (``-1`` past the end
of a short list), items being coded ``0 .. n_codes-1`` with ``n_codes <= n_items``
(catalog items that never appear anywhere need no code: they are simply never
recommended).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from .._records import as_mapping, integer, number
from ..exceptions import InputError
from ._metrics import _n_iv

__all__ = [
    "PopularityProfile",
    "average_popularity",
    "exposure_gini",
    "gini_index",
    "item_coverage",
    "popularity_profile",
]

TOP_ITEMS_MSG = (
    "`top_items` must be a 2-D integer array of item codes (-1 = no item) with at least "
    "max(n) = {n_max} columns, got shape {shape}"
)
N_ITEMS_MSG = "`n_items` must be an integer >= the number of distinct item codes ({k}), got {n}"
POPULARITY_MSG = (
    "`popularity` must be a 1-D array of finite counts >= 0 with one entry per item code "
    "(at least {k}), got shape {shape}"
)
GINI_MSG = "`values` must be a non-empty 1-D array of finite values >= 0"
HEAD_SHARE_MSG = "`head_share` must be in (0, 1), got {value!r}"


def _top_items_iv(
    top_items: npt.ArrayLike, n: int | Sequence[int]
) -> tuple[npt.NDArray[np.int64], tuple[int, ...]]:
    ns = _n_iv(n)
    m = np.asarray(top_items)
    if (
        m.ndim != 2
        or m.shape[1] < ns[-1]
        or not np.issubdtype(m.dtype, np.integer)
        or (m.size and m.min() < -1)
    ):
        raise InputError(TOP_ITEMS_MSG.format(n_max=ns[-1], shape=m.shape))
    return m.astype(np.int64, copy=False), ns


def _n_items_iv(n_items: int, top_items: npt.NDArray[np.int64]) -> int:
    k = int(top_items.max(initial=-1)) + 1
    if (
        not isinstance(n_items, int | np.integer)
        or isinstance(n_items, bool)
        or n_items < max(k, 1)
    ):
        raise InputError(N_ITEMS_MSG.format(k=k, n=n_items))
    return int(n_items)


def _exposure_counts(
    top_items: npt.NDArray[np.int64], ns: tuple[int, ...], n_items: int
) -> npt.NDArray[np.int64]:
    """How many lists, truncated at each cut-off, contain each item.

    Returns shape ``(len(ns), n_items)``; rank blocks between consecutive cut-offs are
    counted once and accumulated.
    """
    out = np.zeros((len(ns), n_items), dtype=np.int64)
    running = np.zeros(n_items, dtype=np.int64)
    start = 0
    for j, c in enumerate(ns):
        block = top_items[:, start:c].ravel()
        running += np.bincount(block[block >= 0], minlength=n_items)
        out[j] = running
        start = c
    return out


def item_coverage(
    top_items: npt.ArrayLike, *, n_items: int, n: int | Sequence[int] = (5, 10, 15)
) -> npt.NDArray[np.float64]:
    r"""Item coverage of the lists truncated at every cut-off.

    .. math:: IC@N = \frac{|\bigcup_u L_u@N|}{|I|}

    the share of the catalog ``I`` that appears in at least one list (Ge, Delgado-
    Battenfeld & Jannach 2010, "Beyond accuracy"; the paper's IC).

    Parameters
    ----------
    top_items : array_like of int, shape (n_users, L)
        Item codes by rank, ``-1`` where a list is shorter.
    n_items : int
        Catalog size ``|I|``.
    n : int or sequence of int
        Cut-offs.

    Returns
    -------
    ndarray of shape (len(n),)
        IC at each cut-off, smallest first.
    """
    m, ns = _top_items_iv(top_items, n)
    size = _n_items_iv(n_items, m)
    return np.count_nonzero(_exposure_counts(m, ns, size), axis=1) / size


def gini_index(values: npt.ArrayLike) -> float:
    r"""Gini index of non-negative values (0 = equal, -> 1 = concentrated).

    .. math:: G = \frac{\sum_{i=1}^{n} (2i - n - 1)\, x_{(i)}}{n \sum_i x_i}

    with ``x_(i)`` sorted ascending (the form used by RecBole's ``GiniIndex``); ``0``
    when every value is 0.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size == 0 or not np.isfinite(x).all() or (x < 0).any():
        raise InputError(GINI_MSG)
    total = x.sum()
    if total == 0:
        return 0.0
    i = np.arange(1, x.size + 1)
    return float(np.sum((2 * i - x.size - 1) * np.sort(x)) / (x.size * total))


def exposure_gini(
    top_items: npt.ArrayLike, *, n_items: int, n: int | Sequence[int] = (5, 10, 15)
) -> npt.NDArray[np.float64]:
    """Gini index of item exposure in the lists truncated at every cut-off.

    Exposure of item ``i`` at ``N`` = number of lists whose top ``N`` contain ``i``;
    the Gini index (:func:`gini_index`) is taken over all ``n_items`` catalog items,
    never-recommended items counting with exposure 0 (as RecBole's ``GiniIndex``).
    """
    m, ns = _top_items_iv(top_items, n)
    size = _n_items_iv(n_items, m)
    return np.array([gini_index(counts) for counts in _exposure_counts(m, ns, size)])


def average_popularity(
    top_items: npt.ArrayLike, popularity: npt.ArrayLike, *, n: int | Sequence[int] = (5, 10, 15)
) -> npt.NDArray[np.float64]:
    r"""Average recommendation popularity (ARP) at every cut-off.

    .. math:: ARP@N = \frac{1}{|U'|}\sum_{u\in U'} \frac{1}{|L_u@N|}\sum_{i\in L_u@N} \phi(i)

    where ``phi(i)`` is the popularity the caller supplies -- in
    :func:`recaudit.fairness.evaluate`, the number of training interactions of ``i``
    -- and ``U'`` the users with a non-empty list (Abdollahpouri, Burke & Mobasher
    2019, "Managing popularity bias in recommender systems with personalized
    re-ranking"). Pass ``popularity / popularity.max()`` for a [0, 1] scale.
    """
    m, ns = _top_items_iv(top_items, n)
    pop = np.asarray(popularity, dtype=np.float64)
    k = int(m.max(initial=-1)) + 1
    if pop.ndim != 1 or pop.size < k or not np.isfinite(pop).all() or (pop < 0).any():
        raise InputError(POPULARITY_MSG.format(k=k, shape=pop.shape))
    listed = m >= 0
    per_rank = np.where(listed, pop[np.where(listed, m, 0)], 0.0)
    out = []
    for c in ns:
        length = listed[:, :c].sum(axis=1)
        some = length > 0
        out.append(
            float(np.mean(per_rank[some, :c].sum(axis=1) / length[some])) if some.any() else np.nan
        )
    return np.array(out)


@dataclass(frozen=True)
class PopularityProfile:
    """Long-tail statistics of an item-popularity vector.

    Attributes
    ----------
    n_items : int
        Catalog size (items with popularity 0 included).
    n_interactions : int
        Sum of the popularity counts.
    gini : float
        Gini index of popularity over the catalog (:func:`gini_index`).
    head_share : float
        Share of interactions defining the short head (0.2 by default).
    n_head_items : int
        The fewest most-popular items that together hold ``head_share`` of all
        interactions (the "short head"); the others are the long tail.
    head_item_fraction : float
        ``n_head_items / n_items``.
    top20_interaction_share : float
        Share of interactions held by the 20 % most popular items.
    is_head : ndarray of bool
        Short-head membership of each item (same order as the input).
    counts_sorted : ndarray
        Popularity sorted descending: the long-tail curve to plot.
    """

    n_items: int
    n_interactions: int
    gini: float
    head_share: float
    n_head_items: int
    head_item_fraction: float
    top20_interaction_share: float
    is_head: npt.NDArray[np.bool_]
    counts_sorted: npt.NDArray[np.float64]

    def to_dict(self) -> dict[str, float | int]:
        """The scalar fields (not the per-item arrays)."""
        return {
            "n_items": self.n_items,
            "n_interactions": self.n_interactions,
            "gini": self.gini,
            "head_share": self.head_share,
            "n_head_items": self.n_head_items,
            "head_item_fraction": self.head_item_fraction,
            "top20_interaction_share": self.top20_interaction_share,
        }

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any], *, where: str = "popularity") -> PopularityProfile:
        """Read :meth:`to_dict`'s scalars back; the per-item arrays come back empty."""
        obj = as_mapping(obj, where)
        return cls(
            n_items=integer(obj, "n_items", where),
            n_interactions=integer(obj, "n_interactions", where),
            gini=number(obj, "gini", where),
            head_share=number(obj, "head_share", where),
            n_head_items=integer(obj, "n_head_items", where),
            head_item_fraction=number(obj, "head_item_fraction", where),
            top20_interaction_share=number(obj, "top20_interaction_share", where),
            is_head=np.zeros(0, dtype=bool),
            counts_sorted=np.zeros(0, dtype=np.float64),
        )


def popularity_profile(popularity: npt.ArrayLike, *, head_share: float = 0.2) -> PopularityProfile:
    """Long-tail profile of item popularity (e.g. training interactions per item).

    The short head is the smallest set of most popular items holding at least
    ``head_share`` of all interactions, following Abdollahpouri et al. (2019); the
    rest is the long tail. Ties at the boundary are broken by item order.

    Examples
    --------
    >>> p = popularity_profile([50, 30, 10, 5, 5, 0])
    >>> p.n_head_items, round(p.gini, 3)
    (1, 0.55)
    """
    if not (isinstance(head_share, float | int) and 0 < head_share < 1):
        raise InputError(HEAD_SHARE_MSG.format(value=head_share))
    pop = np.asarray(popularity, dtype=np.float64)
    gini = gini_index(pop)
    order = np.argsort(-pop, kind="stable")
    ranked = pop[order]
    total = ranked.sum()
    cum = np.cumsum(ranked)
    n_head = int(np.searchsorted(cum, head_share * total - 1e-9 * total) + 1) if total > 0 else 0
    is_head = np.zeros(pop.size, dtype=bool)
    is_head[order[:n_head]] = True
    k20 = int(np.ceil(0.2 * pop.size))
    return PopularityProfile(
        n_items=int(pop.size),
        n_interactions=int(round(total)),
        gini=gini,
        head_share=float(head_share),
        n_head_items=n_head,
        head_item_fraction=n_head / pop.size,
        top20_interaction_share=float(cum[k20 - 1] / total) if total > 0 else np.nan,
        is_head=is_head,
        counts_sorted=ranked,
    )


def _coverage_replicates(
    top_items: npt.NDArray[np.int64],
    n_items: int,
    ns: tuple[int, ...],
    weights: npt.NDArray[np.int64],
) -> npt.NDArray[np.float64]:
    """IC@N of bootstrap resamples of users, one row per resample.

    An item is covered in a resample when some user with a positive weight has it in
    the top ``N``: ``covered = (W @ A_N) > 0`` with ``A_N`` the sparse users x items
    incidence of the lists at ``N``. ``A_N`` is accumulated rank block by rank block,
    so the cost is one sparse product with ``nnz = users x max(n)`` per chunk.
    """
    n_users = top_items.shape[0]
    n_codes = int(top_items.max(initial=-1)) + 1
    out = np.empty((weights.shape[0], len(ns)))
    if n_codes == 0:
        out[:] = 0.0
        return out
    w = weights.astype(np.float64)
    reach = np.zeros((weights.shape[0], n_codes))
    start = 0
    for j, c in enumerate(ns):
        block = top_items[:, start:c]
        rows, cols = np.nonzero(block >= 0)
        a = sp.csr_matrix((np.ones(rows.size), (rows, block[rows, cols])), shape=(n_users, n_codes))
        reach += (a.T @ w.T).T
        out[:, j] = np.count_nonzero(reach > 0, axis=1) / n_items
        start = c
    return out


def _coverage_jackknife(
    top_items: npt.NDArray[np.int64], n_items: int, ns: tuple[int, ...]
) -> npt.NDArray[np.float64]:
    """IC@N with each user left out in turn: ``(n_users, len(ns))``.

    Leaving user ``u`` out uncovers exactly the items of its top ``N`` that no other
    user lists: with ``A_N`` the binary users x items incidence and ``c = 1^T A_N`` the
    number of users listing each item, ``IC_(u) = IC - (A_N 1[c = 1])_u / |I|``.
    """
    n_users = top_items.shape[0]
    n_codes = int(top_items.max(initial=-1)) + 1
    out = np.empty((n_users, len(ns)))
    if n_codes == 0:
        out[:] = 0.0
        return out
    for j, c in enumerate(ns):
        block = top_items[:, :c]
        rows, cols = np.nonzero(block >= 0)
        a = sp.csr_matrix((np.ones(rows.size), (rows, block[rows, cols])),
                          shape=(n_users, n_codes))
        a.sum_duplicates()
        a.data[:] = 1.0
        holders = np.asarray(a.sum(axis=0)).ravel()
        alone = a @ (holders == 1).astype(np.float64)
        out[:, j] = (np.count_nonzero(holders) - alone) / n_items
    return out
