"""The evaluations table: loading, validation and the validated :class:`Evaluations`.

One row per evaluation: ``query_id``, ``order`` (the original indices shown at prompt
positions 1..k, space-separated and 1-based: ``"3 1 2 5 4"`` means position 1 shows
the 3rd retrieved candidate), ``selected_position`` (1..k; empty = discarded
generation) and optional ``model``, ``temperature``, ``k``, ``condition``.

Rows are numbered from 1 in the order of the table (the header is not a row), so
"row 17" is the 17th evaluation of the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._io import plain
from .._read import check_file, check_ids
from .._read import read_table as read_file
from ..exceptions import InputError

__all__ = ["Evaluations", "GROUP_COLUMNS", "evaluations_from_table", "group_table", "read_table"]

GROUP_COLUMNS = ("model", "k", "temperature", "condition")
REQUIRED_COLUMNS = ("query_id", "order", "selected_position")

MSG_MISSING_COLUMN = "the evaluations table has no column `{col}` (columns: {cols})"
MSG_EMPTY = "the evaluations table has no rows"
MSG_BAD_SUFFIX = "cannot read {path}: use a .csv or .parquet file"
MSG_NO_FILE = "no such file: {path}"
#: Columns holding ids: a control character in one is refused (``m\\x00x`` is not ``m``).
ID_COLUMNS = ("query_id", "model", "condition")
MSG_ORDER_TOKENS = "row {row}, column `order`: {value!r} is not a list of integers"
MSG_NOT_PERMUTATION = "row {row}, column `order`: {value!r} is not a permutation of 1..{k}"
#: The start of both mixed-length messages below (which one depends on the `k` column).
MSG_MIXED_K = (
    "column `order`: mixed k within one analysis group (row {row0} has k = {k0}, "
    "row {row1} has k = {k1})"
)
#: Orders of different lengths whose `k` column agrees with them: split by k.
MSG_MIXED_K_BY = MSG_MIXED_K + "; analyse each k separately with `--by k`"
#: Orders of different lengths and no `k` column: most likely one order is wrong.
MSG_MIXED_K_NO_COLUMN = MSG_MIXED_K + (
    "; the table has no `k` column: fix row {row1}'s order (every order lists each of "
    "the k candidates once){split}"
)
MSG_SPLIT_HINT = (
    ", or, if the table mixes candidate-set sizes, add a `k` column and analyse with "
    "`--by k`"
)
MSG_K_COLUMN = (
    "row {row}, column `k`: {value!r} does not match the order length {k}; fix that "
    "row's order (it lists each of the k candidates once) or its `k`"
)
MSG_ORDER_FRACTION = (
    "row {row}, column `order`: {value!r} holds {entry!r}, which is not a whole number; "
    "an order lists original indices 1..k as integers"
)
#: The evaluation key: one row per key in a table written by `positional run`.
KEY_COLUMNS = ("model", "k", "temperature", "condition", "query_id", "perm_index",
               "sample_index")
MSG_DUPLICATE_KEY = (
    "data rows {rows} have the same evaluation key ({key}){more}; each evaluation must "
    "appear once (was a table concatenated twice, or two runs merged?): drop the "
    "repeated rows, or analyse the tables separately"
)
MSG_K_TOO_SMALL = "row {row}, column `order`: k must be >= 2, got {k}"
MSG_POSITION = "row {row}, column `selected_position`: {value!r} is not a position in 1..{k}"
MSG_QUERY_ID = "row {row}, column `query_id`: missing query id"
MSG_BY_COLUMN = "`by`: unknown column `{col}`; choose from {choices}"
MSG_NO_VALID = "no valid evaluation left (all {n} generations were discarded)"


@dataclass(frozen=True, eq=False)
class Evaluations:
    """A validated analysis group: valid evaluations as arrays, discards as counts.

    All indices are 0-based. Only valid (non-discarded) evaluations are stored; the
    queries are those with at least one valid evaluation.

    Attributes
    ----------
    k : int
        Number of candidates (prompt positions).
    query_ids : ndarray of shape (n_queries,)
        The query ids, in order of first appearance.
    query : ndarray of int64, shape (n,)
        Query code (index into ``query_ids``) of each valid evaluation.
    orders : ndarray of int64, shape (n, k)
        ``orders[e, p]`` = original index shown at prompt position ``p``.
    position : ndarray of int64, shape (n,)
        Selected prompt position P.
    item : ndarray of int64, shape (n,)
        Selected original index I = sigma^{-1}(P).
    rows : ndarray of int64, shape (n,)
        1-based row number of each valid evaluation in the source table.
    n_discarded : int
        Discarded generations (empty ``selected_position``) in the group.
    n_queries_all_discarded : int
        Queries whose every generation was discarded (not in ``query_ids``).
    discarded_query, discarded_orders : ndarray of int64, shapes (m,) and (m, k)
        Query code and order of each discarded generation of a query in
        ``query_ids`` (what :func:`~recaudit.positional.discard_check` needs to test
        whether discards depend on the order); empty when nothing was discarded.

    Notes
    -----
    Per-evaluation choice-probability vectors (logprob-based) are read by
    :func:`~recaudit.positional.exact_evaluations_from_table` into
    :class:`~recaudit.positional.ExactEvaluations` (exact mode).
    """

    k: int
    query_ids: npt.NDArray[Any]
    query: npt.NDArray[np.int64]
    orders: npt.NDArray[np.int64]
    position: npt.NDArray[np.int64]
    item: npt.NDArray[np.int64]
    rows: npt.NDArray[np.int64]
    n_discarded: int = 0
    n_queries_all_discarded: int = 0
    discarded_query: npt.NDArray[np.int64] = field(
        default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    discarded_orders: npt.NDArray[np.int64] = field(
        default_factory=lambda: np.zeros((0, 0), dtype=np.int64), repr=False)

    @property
    def n_queries(self) -> int:
        """Queries with at least one valid evaluation."""
        return int(self.query_ids.size)

    @property
    def n_evaluations(self) -> int:
        """Valid evaluations."""
        return int(self.item.size)

    def evaluations_per_query(self) -> npt.NDArray[np.int64]:
        """l_j, the number of valid evaluations of each query."""
        return np.bincount(self.query, minlength=self.n_queries)

    def to_frame(self) -> pd.DataFrame:
        """The valid evaluations as an evaluations table (1-based, as in the files)."""
        return pd.DataFrame(
            {
                "query_id": self.query_ids[self.query],
                "order": [" ".join(map(str, row)) for row in (self.orders + 1).tolist()],
                "selected_position": self.position + 1,
            }
        )


def read_table(source: str | Path | pd.DataFrame) -> pd.DataFrame:
    """Read an evaluations table from CSV/Parquet (or take a DataFrame, uncopied).

    Files go through the reading layer (:mod:`recaudit._read`): bytes that are not
    UTF-8, a corrupt Parquet file, a CSV the parser rejects or a header without rows
    are an :class:`InputError` naming the file. A table whose evaluation keys
    (:data:`KEY_COLUMNS`, those present; checked when ``perm_index`` or
    ``sample_index`` is a column) repeat is refused naming the rows: a repeated
    evaluation would be counted twice.
    """
    if isinstance(source, pd.DataFrame):
        table = source
    else:
        path = check_file(source, "evaluations table", missing=MSG_NO_FILE)
        suffix = path.suffix.lower()
        if suffix == ".csv":
            table = read_file(path, what="evaluations table",
                              dtype={"query_id": str, "order": str})
        elif suffix in (".parquet", ".pq"):
            table = read_file(path, what="evaluations table")
        else:
            raise InputError(MSG_BAD_SUFFIX.format(path=path))
        check_ids(table, ID_COLUMNS, path=path, what="evaluations table")
    for col in REQUIRED_COLUMNS:
        if col not in table.columns:
            raise InputError(
                MSG_MISSING_COLUMN.format(col=col, cols=", ".join(map(str, table.columns)))
            )
    if len(table) == 0:
        raise InputError(MSG_EMPTY)
    if "_row" not in table.columns:  # a group of group_table was checked whole
        check_unique_keys(table)
    return table


def check_unique_keys(table: pd.DataFrame) -> None:
    """Refuse repeated evaluation keys (see :func:`read_table`), naming the rows.

    Without ``perm_index`` and ``sample_index`` a table has no evaluation identity
    (several evaluations of one query with one order are legitimate: a sampled
    design draws with replacement, the ``decoding`` condition repeats the identity
    order), so nothing is checked.
    """
    if "perm_index" not in table.columns and "sample_index" not in table.columns:
        return
    cols = [c for c in KEY_COLUMNS if c in table.columns]
    repeated = table.duplicated(cols, keep=False).to_numpy()
    if not repeated.any():
        return
    first = int(np.argmax(repeated))
    key = table.iloc[first][cols]
    same = np.flatnonzero(repeated & _null_equal(table[cols], key))
    shown = ", ".join(str(i + 1) for i in same[:10]) + (" ..." if same.size > 10 else "")
    n_rows = int(repeated.sum())
    more = f"; {n_rows} rows in all repeat a key" if n_rows > same.size else ""
    text = ", ".join(f"{c}={key[c]!r}" for c in cols)
    raise InputError(MSG_DUPLICATE_KEY.format(rows=shown, key=text, more=more))


def _null_equal(frame: pd.DataFrame, key: pd.Series) -> npt.NDArray[np.bool_]:
    """Rows equal to ``key`` where missing values count as equal (as in
    ``DataFrame.duplicated``)."""
    eq = np.ones(len(frame), dtype=bool)
    for c in frame.columns:
        col = frame[c]
        if pd.isna(key[c]):
            eq &= col.isna().to_numpy()
        else:
            eq &= (col == key[c]).fillna(False).to_numpy(dtype=bool)
    return eq


def group_table(
    table: pd.DataFrame, by: Sequence[str]
) -> list[tuple[dict[str, Any], pd.DataFrame]]:
    """Split the table into analysis groups (sorted by key); keeps 1-based row numbers."""
    table = _with_row_numbers(table)
    for col in by:
        if col not in table.columns or col == "_row":
            raise InputError(
                MSG_BY_COLUMN.format(
                    col=col, choices=", ".join(c for c in table.columns if c != "_row")
                )
            )
    if not by:
        return [({}, table)]
    groups = table.groupby(list(by), sort=True, dropna=False)
    return [(dict(zip(by, key, strict=True)), part) for key, part in groups]


def evaluations_from_table(table: pd.DataFrame | str | Path) -> Evaluations:
    """Validate one analysis group of the evaluations table.

    Raises
    ------
    InputError
        On a missing column, a malformed order (not a permutation of 1..k), a
        selected position outside 1..k, a ``k`` column that disagrees with the order,
        mixed k, or a missing query id -- naming the row and the column.
    """
    table = _with_row_numbers(read_table(table))
    rows = table["_row"].to_numpy(dtype=np.int64)
    orders = _parse_orders(table["order"].tolist(), rows,
                           k_column=table["k"] if "k" in table.columns else None)
    k = orders.shape[1]
    qid = table["query_id"]
    missing = np.flatnonzero(qid.isna().to_numpy())
    if missing.size:
        raise InputError(MSG_QUERY_ID.format(row=rows[missing[0]]))
    position, discarded = _parse_positions(table["selected_position"], rows, k)
    valid = ~discarded
    if not valid.any():
        raise InputError(MSG_NO_VALID.format(n=int(discarded.sum())))
    all_codes, all_ids = pd.factorize(qid, sort=False)
    kept_codes, query = np.unique(all_codes[valid], return_inverse=True)
    orders_v = orders[valid]
    pos_v = position[valid]
    lost = discarded & np.isin(all_codes, kept_codes)  # of a query with a valid one
    return Evaluations(
        k=k,
        query_ids=np.asarray(all_ids)[kept_codes],
        query=query.astype(np.int64),
        orders=orders_v,
        position=pos_v,
        item=orders_v[np.arange(pos_v.size), pos_v],
        rows=rows[valid],
        n_discarded=int(discarded.sum()),
        n_queries_all_discarded=int(all_ids.size - kept_codes.size),
        discarded_query=np.searchsorted(kept_codes, all_codes[lost]).astype(np.int64),
        discarded_orders=orders[lost],
    )


def _with_row_numbers(table: pd.DataFrame) -> pd.DataFrame:
    if "_row" in table.columns:
        return table
    return table.assign(_row=np.arange(1, len(table) + 1))


def _order_entry(token: Any) -> int:
    """One order entry as an int; a float must be whole (``2.0``), never truncated
    (``1.9`` is an error, not ``1``); bools and other types are errors."""
    if isinstance(token, bool | np.bool_):
        raise TypeError(token)
    if isinstance(token, int | np.integer):
        return int(token)
    if isinstance(token, float | np.floating):
        if not float(token).is_integer():
            raise _Fraction(token)
        return int(token)
    if isinstance(token, str):
        return int(token)
    raise TypeError(token)


class _Fraction(ValueError):
    """An order entry that is a number but not a whole one (internal)."""


def _parse_orders(values: list[Any], rows: npt.NDArray[np.int64],
                  k_column: pd.Series | None = None) -> npt.NDArray[np.int64]:
    """Orders as 0-based original indices, shape (n, k).

    Every order must be a permutation of 1..k with one k for all rows. With a ``k``
    column, each row's order length is checked against its k first (that row is
    then named); orders of different lengths whose k column agrees are mixed
    candidate-set sizes, to be analysed ``--by k``.
    """
    parsed: list[list[int]] = []
    for value, row in zip(values, rows, strict=True):
        if isinstance(value, str):
            tokens: Sequence[Any] = value.replace(",", " ").split()
        elif isinstance(value, Sequence | np.ndarray):
            tokens = list(value)
        else:
            raise InputError(MSG_ORDER_TOKENS.format(row=row, value=plain(value)))
        try:
            parsed.append([_order_entry(t) for t in tokens])
        except _Fraction as exc:
            raise InputError(MSG_ORDER_FRACTION.format(row=row, value=_show(value),
                                                       entry=plain(exc.args[0]))) from None
        except (TypeError, ValueError, OverflowError):
            raise InputError(MSG_ORDER_TOKENS.format(row=row, value=_show(value))) from None
    lengths = np.array([len(p) for p in parsed])
    if k_column is not None:
        kcol = pd.to_numeric(k_column, errors="coerce").to_numpy(dtype=float,
                                                                 na_value=np.nan)
        bad = np.flatnonzero(kcol != lengths)
        if bad.size:
            i = bad[0]
            raise InputError(MSG_K_COLUMN.format(row=rows[i], value=plain(k_column.iloc[i]),
                                                 k=lengths[i]))
    values_, counts = np.unique(lengths, return_counts=True)
    if values_.size > 1:
        count = dict(zip(values_.tolist(), counts.tolist(), strict=True))
        first = {v: int(np.argmax(lengths == v)) for v in count}
        # the most common length (ties: the earliest row's) is the reference
        modal = min(count, key=lambda v: (-count[v], first[v]))
        i0 = first[modal]
        i1 = int(np.argmax(lengths != modal))
        fields = {"row0": rows[i0], "k0": int(lengths[i0]), "row1": rows[i1],
                  "k1": int(lengths[i1])}
        if k_column is not None:  # every row agrees with its k: mixed sizes
            raise InputError(MSG_MIXED_K_BY.format(**fields))
        minority = int((lengths == lengths[i1]).sum())
        raise InputError(MSG_MIXED_K_NO_COLUMN.format(
            **fields, split=MSG_SPLIT_HINT if minority > 1 else ""))
    k0 = int(lengths[0])
    if k0 < 2:
        raise InputError(MSG_K_TOO_SMALL.format(row=rows[0], k=k0))
    orders = np.array(parsed, dtype=np.int64)
    bad = np.flatnonzero((np.sort(orders, axis=1) != np.arange(1, k0 + 1)).any(axis=1))
    if bad.size:
        i = bad[0]
        raise InputError(MSG_NOT_PERMUTATION.format(row=rows[i], value=_show(values[i]),
                                                    k=k0))
    return orders - 1


def _show(value: Any) -> Any:
    """An order cell as messages show it (an array as a plain list, numpy scalars as
    Python ones: numpy 2's repr would print ``np.int64(3)``)."""
    return value.tolist() if isinstance(value, np.ndarray) else plain(value)


def _parse_positions(
    column: pd.Series, rows: npt.NDArray[np.int64], k: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    raw = column.astype("string").str.strip()
    discarded = (raw.isna() | (raw == "")).to_numpy()
    numeric = pd.to_numeric(raw.where(~pd.Series(discarded, index=raw.index)), errors="coerce")
    values = numeric.to_numpy(dtype=float, na_value=np.nan)
    ok = np.isfinite(values) & (values == np.round(values)) & (values >= 1) & (values <= k)
    bad = np.flatnonzero(~ok & ~discarded)
    if bad.size:
        i = bad[0]
        raise InputError(MSG_POSITION.format(row=rows[i], value=plain(column.iloc[i]), k=k))
    position = np.where(discarded, 0, values - 1).astype(np.int64)
    return position, discarded
