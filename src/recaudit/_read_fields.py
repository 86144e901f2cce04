"""The bound on one text field of a table (issue 34): CSV/TSV and Parquet alike.

A field of tens of megabytes is no id, label or title; one took ``fairness evaluate``
above 3 GiB as its string was copied through the pipeline. The readers of
:mod:`recaudit._read` call these checks before the strings reach pandas objects.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .exceptions import InputError

if TYPE_CHECKING:  # pandas and pyarrow are imported by the readers that use them
    import pandas as pd

__all__ = ["MAX_FIELD_CHARS", "MSG_FIELD", "check_arrow_field_sizes", "check_field_sizes"]


#: Longest text field a table may hold: ids, labels, titles and descriptions are far
#: shorter; one field of tens of megabytes took `fairness evaluate` above 3 GiB as its
#: strings were copied through the pipeline (issue 34).
MAX_FIELD_CHARS = 1_000_000
MSG_FIELD = ("{what} {path}: row {row}, column {column!r} holds a field of {n:,} "
             "characters; a field may hold at most {limit:,} (ids, labels, titles, "
             "descriptions): cut or remove it")


def _lines_bound_fields(path: Path) -> bool:
    """Whether the bytes alone show no field over :data:`MAX_FIELD_CHARS` (a file that
    small, or no quote and no line that long): 0.02 s on 1M rows of ids, not 1.2 s."""
    import numpy as np

    size = path.stat().st_size
    if size <= MAX_FIELD_CHARS:
        return True
    data = np.memmap(path, dtype=np.uint8, mode="r")
    if (data == ord('"')).any():
        return False
    breaks = np.flatnonzero(data == ord("\n"))
    edges = np.concatenate(([-1], breaks, [size]))
    return bool(np.diff(edges).max() - 1 <= MAX_FIELD_CHARS)


def check_field_sizes(frame: pd.DataFrame, path: Path, what: str) -> None:
    """Refuse a text field longer than :data:`MAX_FIELD_CHARS` (data row and column
    named), before any reader copies it."""
    import numpy as np

    if _lines_bound_fields(path):
        return
    for column in frame.columns:
        values = frame[column]
        if values.dtype.kind not in "OSU" and str(values.dtype) != "string":
            continue
        try:  # vectorised; NaN for a value that is not text
            lengths = values.str.len().fillna(0).to_numpy(dtype=float)
        except AttributeError:  # no text in the column at all
            continue
        if lengths.size and lengths.max() > MAX_FIELD_CHARS:
            row = int(np.argmax(lengths)) + 1
            raise InputError(MSG_FIELD.format(what=what, path=path, row=row, column=column,
                                              n=int(lengths.max()), limit=MAX_FIELD_CHARS))


def check_arrow_field_sizes(table: Any, path: Path, what: str) -> None:
    """:func:`check_field_sizes` for a Parquet file's Arrow table (text and binary
    columns; their lengths in characters / bytes), before it becomes Python objects."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for name, column in zip(table.column_names, table.columns, strict=True):
        kind = column.type
        if pa.types.is_dictionary(kind):
            column, kind = column.cast(kind.value_type), kind.value_type
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            lengths = pc.utf8_length(column)
        elif pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
            lengths = pc.binary_length(column)
        else:
            continue
        longest = pc.max(lengths).as_py()
        if longest is not None and longest > MAX_FIELD_CHARS:
            row = int(pc.index(lengths, longest).as_py()) + 1
            raise InputError(MSG_FIELD.format(what=what, path=path, row=row, column=name,
                                              n=int(longest), limit=MAX_FIELD_CHARS))
