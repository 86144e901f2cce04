"""Per-user top-N ranking metrics: the vectorised kernel and the table builder.

A recommender's output is a table of top-N lists (``user_id, item_id, rank``) and the
ground truth a table of held-out interactions (``user_id, item_id``). Both are turned
into integer codes once; the lists become a ``users x N`` matrix of item codes and a
boolean *hit matrix* of the same shape (``H[u, r-1]`` is true when the item at rank
``r`` is one of ``u``'s test items). Cumulative sums along the rows then give every
metric at every cut-off ``N`` at once, with no per-user Python loop.

Definitions (binary relevance; ``L_u`` the list of user ``u`` truncated at ``N``,
``T_u`` its set of test items):

- Precision@N = |L_u ∩ T_u| / N
- Recall@N = |L_u ∩ T_u| / |T_u|
- Hit@N = 1[|L_u ∩ T_u| > 0]
- MRR@N = 1 / (rank of the first relevant item in L_u), 0 if there is none
- NDCG@N = DCG@N / IDCG@N with DCG@N = sum_{r<=N} H[u, r-1] / log2(r + 1) and
  IDCG@N the DCG of min(|T_u|, N) relevant items at the top (Järvelin & Kekäläinen
  2002).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._io import plain
from ..exceptions import InputError

__all__ = ["METRICS", "per_user_metrics", "ranking_metrics"]

#: The metrics computed for every user, in reporting order.
METRICS: tuple[str, ...] = ("ndcg", "precision", "recall", "hit", "mrr")

#: Rows in messages are data rows counted from 1 (the header is not a row) -- the
#: position in the table, not its index label -- as in every recaudit message.
MISSING_COLUMNS_MSG = "`{table}` must have columns {required}; missing {missing}"
MISSING_VALUE_MSG = "`{table}` has a missing value in column `{column}` at row {row}"
BAD_RANK_MSG = "`recs` column `rank` must hold integers >= 1; row {row} has {value!r}"
UNKNOWN_USER_MSG = "`{table}` has user_id {user!r} (row {row}) that is not in `users`{hint}"
DTYPE_HINT = " (user_id dtypes differ: {table} {dtype}, users {users_dtype})"
UNKNOWN_ITEM_MSG = (
    "`{table}` has item_id {item!r} (row {row}) that is not in the item catalog `items`"
)
DUPLICATE_RANK_MSG = "`recs` has duplicated (user_id, rank) = ({user!r}, {rank}) at row {row}"
RANK_GAP_MSG = (
    "`recs` ranks of user_id {user!r} have gaps: {count} rows but max rank {max_rank}"
    " (ranks must be 1..{count})"
)
DUPLICATE_ITEM_MSG = "`recs` recommends item_id {item!r} twice to user_id {user!r}"
BAD_N_MSG = "`n` must be a non-empty sequence of distinct integers >= 1, got {n!r}"
HITS_SHAPE_MSG = (
    "`hits` must be a 2-D boolean array with at least max(n) = {n_max} columns, got shape {shape}"
)
N_RELEVANT_MSG = (
    "`n_relevant` must hold one integer >= 1 per row of `hits` "
    "(users without test items are excluded before scoring)"
)


def _n_iv(n: int | Sequence[int]) -> tuple[int, ...]:
    """Validate the cut-offs: distinct integers >= 1, returned sorted."""
    values = (n,) if isinstance(n, int | np.integer) else tuple(n)
    if (
        not values
        or not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in values)
        or min(values) < 1
        or len(set(values)) != len(values)
    ):
        raise InputError(BAD_N_MSG.format(n=n))
    return tuple(sorted(int(v) for v in values))


def _ranking_metrics_iv(
    hits: npt.ArrayLike, n_relevant: npt.ArrayLike, n: int | Sequence[int]
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64], tuple[int, ...]]:
    ns = _n_iv(n)
    h = np.asarray(hits)
    if h.ndim != 2 or h.shape[1] < ns[-1] or not (h.dtype == bool or np.isin(h, (0, 1)).all()):
        raise InputError(HITS_SHAPE_MSG.format(n_max=ns[-1], shape=h.shape))
    r = np.asarray(n_relevant)
    if r.shape != (h.shape[0],) or not np.issubdtype(r.dtype, np.integer) or (r < 1).any():
        raise InputError(N_RELEVANT_MSG)
    return h.astype(bool, copy=False), r.astype(np.int64, copy=False), ns


def ranking_metrics(
    hits: npt.ArrayLike, n_relevant: npt.ArrayLike, *, n: int | Sequence[int] = (5, 10, 15)
) -> dict[str, npt.NDArray[np.float64]]:
    r"""Per-user Precision, Recall, Hit, MRR and NDCG at every cut-off, vectorised.

    With ``c_u(N) = sum_{r<=N} H[u, r-1]`` the number of hits in the top ``N``:

    .. math::

        P@N = c_u(N)/N,\quad R@N = c_u(N)/|T_u|,\quad Hit@N = 1[c_u(N) > 0],\quad
        MRR@N = 1[f_u \le N]/f_u,\quad
        NDCG@N = \frac{\sum_{r\le N} H[u,r-1]/\log_2(r+1)}
                      {\sum_{r\le \min(|T_u|,N)} 1/\log_2(r+1)}

    where ``f_u`` is the rank of the first hit. NDCG follows Järvelin & Kekäläinen
    [1]_ with binary gains, as in RecBole and ranx.

    Parameters
    ----------
    hits : array_like of bool, shape (n_users, L)
        ``hits[u, r-1]`` is true when the item at rank ``r`` of user ``u``'s list is
        relevant; positions past the end of a short list are false. ``L >= max(n)``.
    n_relevant : array_like of int, shape (n_users,)
        ``|T_u|``, the number of test items of each user (>= 1).
    n : int or sequence of int
        Cut-offs.

    Returns
    -------
    dict of str to ndarray of shape (n_users, len(n))
        One array per name in :data:`METRICS`; column ``j`` is the ``j``-th smallest
        cut-off.

    References
    ----------
    .. [1] Järvelin, K. & Kekäläinen, J. (2002). Cumulated gain-based evaluation of IR
       techniques. ACM TOIS 20(4), 422-446.

    Examples
    --------
    >>> import numpy as np
    >>> m = ranking_metrics(np.array([[False, True, False]]), np.array([2]), n=[1, 3])
    >>> m["mrr"].tolist(), m["recall"].tolist()
    ([[0.0, 0.5]], [[0.0, 0.5]])
    """
    h, rel, ns = _ranking_metrics_iv(hits, n_relevant, n)
    width = ns[-1]
    h = h[:, :width]
    # one product gives hit counts and DCG at every cut-off: columns of `weights` are
    # 1[r <= N] and 1[r <= N] / log2(r + 1) over the ranks r = 1..max(n)
    upto = np.arange(width)[:, None] < np.asarray(ns)[None, :]
    discount = 1.0 / np.log2(np.arange(2, width + 2))
    weights = np.hstack([upto, upto * discount[:, None]]).astype(np.float64)
    both = h.astype(np.float64) @ weights
    cum, dcg = both[:, : len(ns)], both[:, len(ns) :]
    ideal = np.cumsum(discount)
    idcg = ideal[np.minimum(rel[:, None], np.asarray(ns)[None, :]) - 1]
    first = np.argmax(h, axis=1)
    found = h[np.arange(h.shape[0]), first]
    mrr = np.where(
        found[:, None] & (first[:, None] < np.asarray(ns)[None, :]),
        1.0 / (first[:, None] + 1.0),
        0.0,
    )
    return {
        "ndcg": dcg / idcg,
        "precision": cum / np.asarray(ns, dtype=np.float64),
        "recall": cum / rel[:, None],
        "hit": (cum > 0).astype(np.float64),
        "mrr": mrr,
    }


@dataclass(frozen=True)
class TopNLists:
    """Top-N lists and ground truth as integer codes (internal, built once).

    Attributes
    ----------
    user_ids : pandas.Index
        Ids of the rows of the matrices below (users of the ``users`` index).
    items : ndarray of int64, shape (n_users, n_max)
        Item code at each rank, ``-1`` past the end of a short (or missing) list.
    hits : ndarray of bool, shape (n_users, n_max)
        Whether the item at each rank is one of the user's test items.
    n_relevant : ndarray of int64, shape (n_users,)
        Number of distinct test items of each user.
    has_list : ndarray of bool, shape (n_users,)
        Whether the user has at least one row in ``recs``.
    """

    user_ids: pd.Index
    items: npt.NDArray[np.int64]
    hits: npt.NDArray[np.bool_]
    n_relevant: npt.NDArray[np.int64]
    has_list: npt.NDArray[np.bool_]

    def subset(self, mask: npt.NDArray[np.bool_]) -> TopNLists:
        """The lists of the users selected by a boolean mask."""
        return TopNLists(
            self.user_ids[mask],
            self.items[mask],
            self.hits[mask],
            self.n_relevant[mask],
            self.has_list[mask],
        )


def _columns_iv(table: pd.DataFrame, name: str, required: Sequence[str]) -> None:
    if not isinstance(table, pd.DataFrame):
        raise InputError(f"`{name}` must be a pandas DataFrame, got {type(table).__name__}")
    missing = [c for c in required if c not in table.columns]
    if missing:
        raise InputError(
            MISSING_COLUMNS_MSG.format(table=name, required=list(required), missing=missing)
        )
    for column in required:
        isna = table[column].isna().to_numpy()
        if isna.any():
            row = int(np.argmax(isna)) + 1  # data rows count from 1
            raise InputError(MISSING_VALUE_MSG.format(table=name, column=column, row=row))


def _run_starts(v: npt.NDArray[Any]) -> npt.NDArray[np.intp]:
    """Positions where a new run of equal consecutive values starts."""
    return np.flatnonzero(np.concatenate(([True], v[1:] != v[:-1])))


#: Integer ids spanning at most this many values are coded through a lookup table.
_LOOKUP_SPAN = 50_000_000


def _int_span(arrays: Sequence[npt.NDArray[Any]]) -> tuple[int, int] | None:
    """``(min, max)`` of integer arrays when a lookup table over them is affordable."""
    # signed (or narrow unsigned) integers only: uint64 - int would become float
    if not arrays or not all(
        np.issubdtype(a.dtype, np.signedinteger)
        or (np.issubdtype(a.dtype, np.unsignedinteger) and a.dtype.itemsize < 8)
        for a in arrays
    ):
        return None
    full = [a for a in arrays if a.size]
    if not full:
        return None
    lo = min(int(a.min()) for a in full)
    hi = max(int(a.max()) for a in full)
    return (lo, hi) if hi - lo < _LOOKUP_SPAN else None


def _union_index(arrays: Sequence[npt.NDArray[Any]]) -> pd.Index:
    """Distinct ids of several arrays (a bitmap for compact integer ids, else hashing)."""
    span = _int_span(arrays)
    if span is None:
        return pd.Index(pd.unique(np.concatenate(arrays))) if arrays else pd.Index([])
    lo, hi = span
    present = np.zeros(hi - lo + 1, dtype=bool)
    for a in arrays:
        present[a - lo] = True
    return pd.Index(np.flatnonzero(present) + lo)


def _codes(values: pd.Series, index: pd.Index) -> npt.NDArray[np.int64]:
    """Positions of ``values`` in ``index`` (-1 when absent).

    Compact integer ids go through a lookup table (no hashing); other ids are hashed
    once per run of equal consecutive values (top-N tables are usually grouped by
    user) and the codes repeated.
    """
    v = values.to_numpy()
    if v.size == 0:
        return np.zeros(0, dtype=np.int64)
    keys = index.to_numpy()
    span = _int_span([v, keys])
    if span is not None:
        lo, hi = span
        table = np.full(hi - lo + 1, -1, dtype=np.int64)
        table[keys - lo] = np.arange(keys.size)
        return table[v - lo]
    starts = _run_starts(v)
    if starts.size > v.size // 2:
        return index.get_indexer(v).astype(np.int64, copy=False)
    heads = index.get_indexer(v[starts]).astype(np.int64, copy=False)
    return np.repeat(heads, np.diff(np.append(starts, v.size)))


def _raise_unknown(
    codes: npt.NDArray[np.int64], table: pd.DataFrame, name: str, index: pd.Index, kind: str
) -> None:
    bad = codes < 0
    if bad.any():
        pos = int(np.argmax(bad))
        column = table[f"{kind}_id"]
        if kind == "user":
            hint = (
                DTYPE_HINT.format(table=name, dtype=column.dtype, users_dtype=index.dtype)
                if column.dtype != index.dtype
                else ""
            )
            raise InputError(
                UNKNOWN_USER_MSG.format(
                    table=name, user=plain(column.iloc[pos]), row=pos + 1, hint=hint
                )
            )
        raise InputError(
            UNKNOWN_ITEM_MSG.format(table=name, item=plain(column.iloc[pos]), row=pos + 1)
        )


def _lists_iv(
    recs: pd.DataFrame,
    ucode: npt.NDArray[np.int64],
    rank: npt.NDArray[np.int64],
    icode: npt.NDArray[np.int64],
    user_index: pd.Index,
    n_max: int,
) -> npt.NDArray[np.int64]:
    """Check that every user's ranks are exactly 1..count; return the item matrix.

    A user whose max rank differs from its row count has a duplicate or a gap, told
    apart on its own rows. Otherwise every rank lies in 1..count_u and the rows are
    scattered into the ``(user, rank)`` slots: a duplicate leaves fewer filled slots
    than rows. ``pandas.duplicated`` is used only to name the offending row (or when
    the slot space is too large to scatter into).
    """
    n_users = len(user_index)
    count = np.bincount(ucode, minlength=n_users)
    max_rank = np.zeros(n_users, dtype=np.int64)
    np.maximum.at(max_rank, ucode, rank)
    bad_users = np.flatnonzero(max_rank != count)
    if bad_users.size:
        u = int(bad_users[0])
        rows = np.flatnonzero(ucode == u)
        again = pd.Series(rank[rows]).duplicated().to_numpy()
        if again.any():
            pos = rows[int(np.argmax(again))]
            raise InputError(
                DUPLICATE_RANK_MSG.format(user=plain(user_index[u]), rank=rank[pos], row=pos + 1)
            )
        raise InputError(
            RANK_GAP_MSG.format(user=plain(user_index[u]), count=count[u], max_rank=max_rank[u])
        )
    width = int(count.max(initial=0))
    slots = ucode * width + rank - 1
    if n_users * width <= _LOOKUP_SPAN:
        full = np.full(n_users * width, -1, dtype=np.int64)
        full[slots] = icode
        if np.count_nonzero(full >= 0) == slots.size:
            lists = full.reshape(n_users, width)
            if width >= n_max:
                return np.ascontiguousarray(lists[:, :n_max])
            pad = np.full((n_users, n_max - width), -1, dtype=np.int64)
            return np.hstack([lists, pad])
    dup = pd.Series(slots).duplicated().to_numpy()
    if dup.any():
        pos = int(np.argmax(dup))
        raise InputError(
            DUPLICATE_RANK_MSG.format(
                user=plain(recs["user_id"].iloc[pos]), rank=rank[pos], row=pos + 1
            )
        )
    keep = rank <= n_max
    items = np.full((n_users, n_max), -1, dtype=np.int64)
    items[ucode[keep], rank[keep] - 1] = icode[keep]
    return items


def build_top_n(
    recs: pd.DataFrame,
    test: pd.DataFrame,
    *,
    user_index: pd.Index,
    item_index: pd.Index,
    n_max: int,
) -> TopNLists:
    """Validate ``recs``/``test`` and build the code matrices (internal).

    ``recs`` needs ``user_id, item_id, rank`` with ranks 1..L_u per user (no gaps, no
    duplicates); rows with rank > ``n_max`` are checked and then ignored. ``test``
    needs ``user_id, item_id``; duplicated test pairs count once. Every user must be
    in ``user_index`` and every item in ``item_index`` (the catalog). Users of
    ``user_index`` absent from ``recs`` get an empty list (no hits).
    """
    _columns_iv(recs, "recs", ("user_id", "item_id", "rank"))
    _columns_iv(test, "test", ("user_id", "item_id"))
    n_users = len(user_index)

    rank_raw = recs["rank"].to_numpy()
    if not np.issubdtype(rank_raw.dtype, np.number) or rank_raw.dtype == bool:
        raise InputError(BAD_RANK_MSG.format(row=1, value=plain(recs["rank"].iloc[0])))
    if np.issubdtype(rank_raw.dtype, np.integer):
        bad = rank_raw < 1
    else:
        bad = ~(np.isfinite(rank_raw) & (rank_raw >= 1) & (rank_raw == np.floor(rank_raw)))
    if bad.any():
        pos = int(np.argmax(bad))
        raise InputError(BAD_RANK_MSG.format(row=pos + 1, value=plain(rank_raw[pos])))
    rank = rank_raw.astype(np.int64, copy=False)

    ucode = _codes(recs["user_id"], user_index)
    _raise_unknown(ucode, recs, "recs", user_index, "user")
    icode = _codes(recs["item_id"], item_index)
    _raise_unknown(icode, recs, "recs", item_index, "item")
    items = _lists_iv(recs, ucode, rank, icode, user_index, n_max)
    ordered = np.sort(items, axis=1)
    twice = (ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)
    if twice.any():
        u, j = np.argwhere(twice)[0]
        raise InputError(
            DUPLICATE_ITEM_MSG.format(
                item=plain(item_index[ordered[u, j]]), user=plain(user_index[u])
            )
        )

    t_ucode = _codes(test["user_id"], user_index)
    _raise_unknown(t_ucode, test, "test", user_index, "user")
    t_icode = _codes(test["item_id"], item_index)
    _raise_unknown(t_icode, test, "test", item_index, "item")
    n_codes = max(len(item_index), 1)
    test_keys = np.unique(t_ucode * n_codes + t_icode)
    n_relevant = np.bincount(test_keys // n_codes, minlength=n_users).astype(np.int64)

    # keys of empty slots are -1, which matches no test key
    rec_keys = np.where(
        items >= 0, np.arange(n_users, dtype=np.int64)[:, None] * n_codes + items, -1
    )
    hits = np.zeros(items.shape, dtype=bool)
    if test_keys.size:
        slot = np.minimum(np.searchsorted(test_keys, rec_keys), test_keys.size - 1)
        hits = test_keys[slot] == rec_keys
    has_recs = np.asarray((items >= 0).any(axis=1), dtype=bool)
    return TopNLists(user_index, items, hits, n_relevant, has_recs)


def per_user_metrics(
    recs: pd.DataFrame, test: pd.DataFrame, *, n: int | Sequence[int] = (5, 10, 15)
) -> pd.DataFrame:
    """Per-user top-N metrics of a recommender's lists against held-out items.

    Parameters
    ----------
    recs : pandas.DataFrame
        Columns ``user_id, item_id, rank`` (ranks 1..L per user, no gaps).
    test : pandas.DataFrame
        Columns ``user_id, item_id``: the held-out relevant items.
    n : int or sequence of int
        Cut-offs.

    Returns
    -------
    pandas.DataFrame
        One row per user with at least one test item (users without test items are
        excluded; a test user without a list scores 0): ``user_id``, ``n_relevant``
        and one column ``<metric>@<N>`` per metric of :data:`METRICS` and cut-off.

    See Also
    --------
    ranking_metrics : the kernel and the formulas.
    """
    ns = _n_iv(n)
    _columns_iv(recs, "recs", ("user_id", "item_id", "rank"))
    _columns_iv(test, "test", ("user_id", "item_id"))
    heads = [t["user_id"].to_numpy() for t in (recs, test)]
    user_index = _union_index([h[_run_starts(h)] for h in heads if h.size])
    item_index = _union_index([t["item_id"].to_numpy() for t in (recs, test)])
    lists = build_top_n(recs, test, user_index=user_index, item_index=item_index, n_max=ns[-1])
    lists = lists.subset(lists.n_relevant > 0)
    values = ranking_metrics(lists.hits, lists.n_relevant, n=ns)
    out = pd.DataFrame({"user_id": lists.user_ids.to_numpy(), "n_relevant": lists.n_relevant})
    for name in METRICS:
        for j, cut in enumerate(ns):
            out[f"{name}@{cut}"] = values[name][:, j]
    return out
