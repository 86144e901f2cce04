"""The journal's columns, defined once, and the records that fill them.

:data:`COLUMNS` lists every column of the journal's ``evaluations`` table (in its SQL
order) with its SQLite type, where its value comes from, and its dtype in the
evaluations table; the ``CREATE TABLE`` and upsert statements
(:data:`SCHEMA`, :data:`UPSERT`), the row an :class:`EvalRecord` writes
(:meth:`EvalRecord.to_row`), the evaluations table (:func:`records_to_frame`,
:data:`EVALUATION_COLUMNS`) and the columns added to older journals on open are all
derived from it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import pandas as pd

__all__ = [
    "COLUMNS",
    "EVALUATION_COLUMNS",
    "KEY_FIELDS",
    "SCHEMA",
    "TEXT_FIELDS",
    "UPSERT",
    "Column",
    "EvalKey",
    "EvalRecord",
    "MemorySink",
    "ResultSink",
    "escape_row",
    "records_to_frame",
    "unescape_row",
]

Status = Literal["ok", "discarded", "failed"]


def _join(values: Iterable[Any]) -> str:
    return " ".join(map(str, values))


@dataclass(frozen=True)
class Column:
    """One column of the journal's ``evaluations`` table.

    Attributes
    ----------
    name : str
        The column (and :class:`EvalRecord` / :class:`EvalKey` field) name.
    sql : str
        Its SQLite declaration after the name (type and constraints).
    source : {"key", "record", "journal", "escape"}
        Where the value comes from: the :class:`EvalKey`, the :class:`EvalRecord`
        (through ``encode``), the journal itself (``attempts``), or
        :func:`escape_row` (``escaped``).
    dtype : str or None
        Its dtype in the evaluations table; ``None``: not in the table.
    table_order : int or None
        Its place in the evaluations table (``EVALUATION_COLUMNS``).
    encode : callable, optional
        Record value -> stored text (``order``, ``identifiers``, ``choice_probs``).
    insert, update : str
        The upsert's value on insert and on replacing a failed row (``attempts``
        counts up); default ``:name`` and ``excluded.name``.
    added : bool
        Added after the first journals were written: older journals gain it (NULL)
        on open, and rows without it read as missing.
    """

    name: str
    sql: str
    source: Literal["key", "record", "journal", "escape"] = "record"
    dtype: str | None = None
    table_order: int | None = None
    encode: Callable[[Any], str] | None = None
    insert: str | None = None
    update: str | None = None
    added: bool = False

    @property
    def quoted(self) -> str:
        """The name as SQL (``order`` is a keyword)."""
        return f'"{self.name}"' if self.name == "order" else self.name


COLUMNS: tuple[Column, ...] = (
    Column("model", "TEXT NOT NULL", "key", "string", 3),
    Column("k", "INTEGER NOT NULL", "key", "int64", 4),
    Column("temperature", "REAL NOT NULL", "key", "float64", 5),
    Column("condition", "TEXT NOT NULL", "key", "string", 6),
    Column("query_id", "TEXT NOT NULL", "key", "string", 0),
    Column("perm_index", "INTEGER NOT NULL", "key", "int64", 7),
    Column("sample_index", "INTEGER NOT NULL", "key", "int64", 8),
    Column("status", "TEXT NOT NULL CHECK (status IN ('ok', 'discarded', 'failed'))"),
    Column("order", "TEXT NOT NULL", dtype="string", table_order=1, encode=_join),
    Column("identifiers", "TEXT NOT NULL", dtype="string", table_order=9, encode=_join),
    Column("selected_position", "INTEGER", dtype="Int64", table_order=2),
    Column("selected_original_index", "INTEGER", dtype="Int64", table_order=10),
    Column("selected_item_id", "TEXT", dtype="string", table_order=11),
    Column("raw_response", "TEXT", dtype="string", table_order=12),
    Column("discard_reason", "TEXT", dtype="string", table_order=13),
    Column("error_class", "TEXT"),
    Column("error_message", "TEXT"),
    Column("latency_s", "REAL", dtype="float64", table_order=14),
    Column("prompt_tokens", "INTEGER", dtype="Int64", table_order=15),
    Column("completion_tokens", "INTEGER", dtype="Int64", table_order=16),
    Column("retries", "INTEGER NOT NULL DEFAULT 0", dtype="int64", table_order=17),
    Column("choice_probs", "TEXT", dtype="string", table_order=18, encode=json.dumps),
    Column("attempts", "INTEGER NOT NULL DEFAULT 1", "journal", insert="1",
           update="evaluations.attempts + 1"),
    Column("outside_mass", "REAL", dtype="float64", table_order=19, added=True),
    Column("escaped", "TEXT", "escape", "string", 20, added=True),
    Column("ranking", "TEXT", dtype="string", table_order=21, encode=_join, added=True),
)

#: The evaluation key: the journal's primary key, in order.
KEY_FIELDS = tuple(c.name for c in COLUMNS if c.source == "key")
#: Columns of the evaluations table, in order.
TABLE_COLUMNS = tuple(sorted((c for c in COLUMNS if c.table_order is not None),
                             key=lambda c: c.table_order or 0))
#: Columns of ``evaluations.parquet`` (the analyze-input schema), in order.
EVALUATION_COLUMNS = tuple(c.name for c in TABLE_COLUMNS)
#: Text columns that may carry what an endpoint returned: escaped when no UTF-8 store
#: can hold them (the key columns come from validated inputs and are never escaped).
TEXT_FIELDS = ("order", "identifiers", "selected_item_id", "raw_response", "discard_reason",
               "error_class", "error_message")

_KEY = ", ".join(KEY_FIELDS)
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (\n    key TEXT PRIMARY KEY,\n    value TEXT NOT NULL\n);\n"
    "CREATE TABLE IF NOT EXISTS evaluations (\n"
    + "".join(f"    {c.quoted} {c.sql},\n" for c in COLUMNS)
    + f"    PRIMARY KEY ({_KEY})\n);\n"
)
UPSERT = (
    f"INSERT INTO evaluations ({', '.join(c.quoted for c in COLUMNS)}) "
    f"VALUES ({', '.join(c.insert or ':' + c.name for c in COLUMNS)}) "
    f"ON CONFLICT ({_KEY}) DO UPDATE SET "
    + ", ".join(f"{c.quoted} = {c.update or 'excluded.' + c.quoted}"
                for c in COLUMNS if c.source != "key")
    + " WHERE evaluations.status = 'failed'"
)


@dataclass(frozen=True, order=True)
class EvalKey:
    """The identity of one evaluation (the journal's primary key)."""

    model: str
    k: int
    temperature: float
    condition: str
    query_id: str
    perm_index: int
    sample_index: int


@dataclass(frozen=True)
class EvalRecord:
    """The outcome of one evaluation, as journaled.

    Attributes
    ----------
    key : EvalKey
        Which evaluation.
    status : {"ok", "discarded", "failed"}
        ``failed`` means the backend gave up; it is retried on resume.
    order : tuple of int
        Original indices shown at prompt positions 1..k.
    identifiers : tuple of str
        Identifiers shown at prompt positions 1..k.
    selected_position, selected_original_index : int or None
        1-based; ``None`` for discarded and failed rows.
    selected_item_id, raw_response, discard_reason : str or None
        The chosen item, the verbatim answer, and why it was discarded.
    error_class, error_message : str or None
        For failed rows: the exception class and a secret-free message.
    latency_s : float or None
        Wall time of the call including retries.
    prompt_tokens, completion_tokens : int or None
        As reported by the backend.
    retries : int
        Retries the call needed.
    choice_probs : tuple of float or None
        Identifier probabilities at the answer slot (prompt-position order).
    outside_mass : float or None
        Probability mass at the answer slot outside the identifiers (journals
        written before this column existed read it as missing).
    ranking : tuple of int or None
        A ranking answer's prompt positions, best first (``[prompt] answer =
        "ranking"``; its first item is ``selected_position``); ``None`` otherwise.
    """

    key: EvalKey
    status: Status
    order: tuple[int, ...]
    identifiers: tuple[str, ...]
    selected_position: int | None = None
    selected_original_index: int | None = None
    selected_item_id: str | None = None
    raw_response: str | None = None
    discard_reason: str | None = None
    error_class: str | None = None
    error_message: str | None = None
    latency_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    retries: int = 0
    choice_probs: tuple[float, ...] | None = None
    outside_mass: float | None = None
    ranking: tuple[int, ...] | None = None

    def to_row(self) -> dict[str, object]:
        """Flatten to the journal's column names (:data:`COLUMNS` with a source)."""
        row: dict[str, object] = {}
        for c in COLUMNS:
            if c.source == "key":
                row[c.name] = getattr(self.key, c.name)
            elif c.source == "record":
                value = getattr(self, c.name)
                row[c.name] = value if c.encode is None or value is None else c.encode(value)
        return escape_row(row)


def _storable(text: str) -> bool:
    """Whether UTF-8 (SQLite text, Parquet, JSON files) can hold ``text``."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def escape_row(row: dict[str, object]) -> dict[str, object]:
    """Store each :data:`TEXT_FIELDS` value that UTF-8 cannot hold (a lone surrogate)
    as its JSON string literal, naming those fields in ``row["escaped"]``
    (comma-separated; ``None`` when nothing was escaped). In place; returns ``row``."""
    escaped = []
    for name in TEXT_FIELDS:
        value = row.get(name)
        if isinstance(value, str) and not _storable(value):
            row[name] = json.dumps(value)  # ASCII: every surrogate as a \\uXXXX escape
            escaped.append(name)
    row["escaped"] = ",".join(escaped) or None
    return row


def unescape_row(row: Mapping[str, object]) -> dict[str, object]:
    """The exact text of a journal or evaluations-table row: the fields named in its
    ``escaped`` column are decoded from their JSON string literals (see
    :func:`escape_row`). Returns a new dict.

    Examples
    --------
    >>> unescape_row({"raw_response": '"a\\\\ud800"', "escaped": "raw_response"})["raw_response"]
    'a\\ud800'
    """
    out = dict(row)
    names = out.get("escaped")
    if isinstance(names, str) and names:
        for name in names.split(","):
            value = out.get(name)
            if isinstance(value, str):
                out[name] = json.loads(value)
    return out


class ResultSink(Protocol):
    """Where the runner puts results (the journal, or memory for benchmarks)."""

    def write(self, record: EvalRecord) -> None: ...


class MemorySink:
    """A :class:`ResultSink` that keeps records in a dict (no durability)."""

    def __init__(self) -> None:
        self.records: dict[EvalKey, EvalRecord] = {}

    def write(self, record: EvalRecord) -> None:
        """Keep ``record`` unless a completed record of its key is already held."""
        old = self.records.get(record.key)
        if old is None or old.status == "failed":
            self.records[record.key] = record


def records_to_frame(rows: Iterable[Mapping[str, object]]) -> pd.DataFrame:
    """Build the evaluations table from journal rows (failed rows must be excluded).

    Parameters
    ----------
    rows : iterable of mapping
        Rows as produced by :meth:`EvalRecord.to_row` or read from the journal.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`EVALUATION_COLUMNS`, sorted by key, each with its
        :attr:`Column.dtype` (nullable ``Int64`` for positions and token counts).
    """
    df = pd.DataFrame(list(rows))
    if df.empty:
        df = pd.DataFrame(columns=[*EVALUATION_COLUMNS, "status"])
    for c in COLUMNS:  # rows of a journal older than the column
        if c.added and c.name not in df.columns:
            df[c.name] = None
    df = df.sort_values(list(KEY_FIELDS), kind="mergesort").reset_index(drop=True)
    out = df.loc[:, list(EVALUATION_COLUMNS)].copy()
    for c in TABLE_COLUMNS:
        if c.dtype == "Int64":
            out[c.name] = pd.array(out[c.name].astype("float").round(), dtype="Int64")
        else:
            out[c.name] = out[c.name].astype(c.dtype)
    return out
