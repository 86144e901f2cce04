"""The one reading layer: every file a command reads goes through here.

Evaluations and rankings tables, catalogs, query files, the fairness tables and
dataset files, TOML configs and prompt templates, the JSON a report is built from:
each is read by one of :func:`read_text`, :func:`read_table`, :func:`read_jsonl`,
:func:`read_json` or :func:`read_toml`. Every way a file can fail to parse -- bytes
that are not UTF-8, a corrupt or truncated Parquet file, a CSV the parser rejects, a
file with a header and no data rows, an empty file, a JSON ``\\ud800`` escape (a lone
surrogate: half of a UTF-16 pair, which no UTF-8 file, SQLite text or Parquet string
can hold) -- becomes an :class:`~recaudit.exceptions.InputError` (a
:class:`~recaudit.exceptions.ConfigError` for TOML) whose message is one line naming
the file, where in it (data row, file line, column) and the fix. The command line turns
it into ``error: ...`` and exit code 2, never a traceback.

Row numbering, the same in every message of recaudit: **data rows are counted from
1 and the header is not a row** ("data row 3" is the third record under the header);
"file line" counts every line of the file from 1, header included.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .exceptions import ConfigError, InputError

if TYPE_CHECKING:  # pandas is imported by the readers that build a table
    import pandas as pd

__all__ = [
    "MSG_EMPTY_FILE",
    "MSG_NOT_UTF8",
    "MSG_NO_ROWS",
    "MSG_PARQUET",
    "MSG_SURROGATE",
    "MSG_TABLE",
    "find_surrogate",
    "one_line",
    "read_json",
    "read_jsonl",
    "read_table",
    "read_text",
    "read_toml",
]

MSG_NOT_FOUND = "{what} not found: {path}"
MSG_NOT_UTF8 = (
    "{what} {path}: bytes that are not valid UTF-8 in data row {row} (file line {line})"
    "{column}; re-save the file as UTF-8"
)
MSG_NOT_UTF8_TEXT = (
    "{what} {path}: bytes that are not valid UTF-8 at file line {line}; re-save the file "
    "as UTF-8"
)
MSG_EMPTY_FILE = "{what} {path} is empty; it needs a header row and at least one data row"
MSG_EMPTY_JSONL = "{what} {path} is empty; it needs at least one line holding a JSON object"
MSG_NO_ROWS = (
    "{what} {path} has a header but no data rows; it needs at least one data row"
)
MSG_TABLE = (
    "{what} {path} does not parse as {kind} ({error}); fix the file (one header row, "
    "every row with the header's number of fields, quotes closed) or re-export it"
)
MSG_PARQUET = (
    "{what} {path} is not a readable Parquet file ({error}); re-write it (e.g. "
    "pandas.DataFrame.to_parquet) or pass a .csv"
)
MSG_SURROGATE = (
    "{what} {path}: data row {row}{column} holds a lone surrogate {escape} (half of a "
    "UTF-16 pair, not a character: no UTF-8 file can hold it); replace it with the "
    "character meant, or remove it"
)
MSG_JSON_LINE = (
    "{what} {path}: data row {row} (file line {line}) is not a JSON object: {error}"
)
MSG_JSON = "cannot read {path} as JSON ({what}): {error}; fix or regenerate the file"
MSG_JSON_SURROGATE = (
    "cannot read {path} as JSON ({what}): it holds a lone surrogate {escape} at {where} "
    "(half of a UTF-16 pair, not a character); regenerate the file"
)
MSG_TOML = "{what} {path} is not valid TOML: {error}"
MSG_UNREADABLE = "cannot read {what} {path}: {error}"

#: Longest third-party error text quoted in a message.
_MAX_ERROR = 160
_SURROGATE = re.compile("[\ud800-\udfff]")


def one_line(text: object, limit: int = _MAX_ERROR) -> str:
    """``text`` on one line (whitespace runs collapsed), cut to ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def find_surrogate(value: Any) -> tuple[str, str] | None:
    """The first lone surrogate in the strings of ``value`` (recursively through
    mappings and lists, keys included): ``(escape, where)`` such as
    ``("\\ud800", "key 'title', item 2")`` (``where`` is empty for a bare string), or
    ``None``."""
    if isinstance(value, str):
        m = _SURROGATE.search(value)
        return None if m is None else (f"\\u{ord(m.group()):04x}", "")
    parts: list[tuple[Any, str]] = []
    if isinstance(value, Mapping):
        for k, v in value.items():
            parts += [(k, f"key {k!r}"), (v, f"key {k!r}")]
    elif isinstance(value, list | tuple):
        parts = [(v, f"item {i}") for i, v in enumerate(value)]
    for part, label in parts:
        found = find_surrogate(part)
        if found is not None:
            return found[0], label + (f", {found[1]}" if found[1] else "")
    return None


def _check_file(path: Path, what: str) -> Path:
    if not path.is_file():
        raise InputError(MSG_NOT_FOUND.format(what=what, path=path))
    return path


def _read_bytes(path: Path, what: str) -> bytes:
    _check_file(path, what)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(MSG_UNREADABLE.format(what=what, path=path,
                                               error=one_line(exc))) from exc


def _decode(raw: bytes, path: Path, what: str, *, sep: str | None,
            quoting: int = csv.QUOTE_MINIMAL) -> str:
    """UTF-8 (a BOM is dropped); an undecodable byte is located by data row, file line
    and (for tables, ``sep`` given) column."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(_decode_message(path, raw, exc, what, sep=sep,
                                         quoting=quoting)) from None


def _decode_message(path: Path, raw: bytes, exc: UnicodeDecodeError, what: str, *,
                    sep: str | None, quoting: int = csv.QUOTE_MINIMAL) -> str:
    prefix = raw[: exc.start].decode("utf-8", errors="replace")
    line = prefix.count("\n") + 1
    if sep is None:
        return MSG_NOT_UTF8_TEXT.format(what=what, path=path, line=line)
    try:  # a sentinel keeps the last (cut) field
        records = list(csv.reader(io.StringIO(prefix + "\x00"), delimiter=sep,
                                  quoting=quoting))  # type: ignore[arg-type]
    except csv.Error:
        records = []
    header = records[0] if records else []
    row = max(len(records) - 1, 1)
    field_index = len(records[-1]) - 1 if records else 0
    column = f", column {header[field_index]!r}" if 0 <= field_index < len(header) \
        and len(records) > 1 else ""
    if len(records) <= 1:  # the byte is in the header line
        return MSG_NOT_UTF8_TEXT.format(what=what, path=path, line=line)
    return MSG_NOT_UTF8.format(what=what, path=path, row=row, line=line, column=column)


#: Largest file whose undecodable byte is located by data row and column (a larger
#: one is scanned in chunks for the file line only).
_LOCATE_WHOLE_BYTES = 256 * 2**20


def _locate_bad_utf8(path: Path, what: str, *, sep: str, quoting: int) -> str:
    """The message for a table with bytes that are not UTF-8 (error path only)."""
    if path.stat().st_size <= _LOCATE_WHOLE_BYTES:
        raw = path.read_bytes()
        try:
            raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            return _decode_message(path, raw, exc, what, sep=sep, quoting=quoting)
        return MSG_NOT_UTF8_TEXT.format(what=what, path=path, line="?")
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    line = 1
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(2**20), b""):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                line += chunk[: max(exc.start, 0)].count(b"\n")
                break
            line += chunk.count(b"\n")
    return MSG_NOT_UTF8_TEXT.format(what=what, path=path, line=line)


def read_text(path: str | Path, *, what: str) -> str:
    """The UTF-8 text of ``path`` (a BOM dropped).

    Parameters
    ----------
    path : path-like
        The file.
    what : str
        What the file is, for messages (e.g. ``"query file"``).

    Raises
    ------
    InputError
        Missing or unreadable file, bytes that are not UTF-8 (the file line named).
    """
    p = Path(path)
    return _decode(_read_bytes(p, what), p, what, sep=None)


def read_table(path: str | Path, *, what: str, sep: str | None = None,
               dtype: Any = None, allow_empty: bool = False,
               parquet: bool | None = None, **csv_options: Any) -> pd.DataFrame:
    """A CSV/TSV or Parquet table, every parse failure an :class:`InputError`.

    Parameters
    ----------
    path : path-like
        The file; ``.parquet``/``.pq`` is read as Parquet, anything else as
        delimited text.
    what : str
        What the file is, for messages (e.g. ``"evaluations table"``,
        ``"`--recs` file"``).
    sep : str, optional
        Field separator of a text table (default ``","``; ``"\\t"`` for ``.tsv``).
    dtype : optional
        Passed to :func:`pandas.read_csv` (Parquet keeps its own types).
    allow_empty : bool
        Accept a table with columns and no rows (default: an error).
    parquet : bool, optional
        Force (``True``) or rule out (``False``) Parquet regardless of the suffix.
    **csv_options
        More :func:`pandas.read_csv` options (``keep_default_na``, ``quoting``,
        ``names``, ``header``, ...).

    Raises
    ------
    InputError
        Missing file; undecodable bytes (data row, file line and column named); a text
        table the parser rejects; an unreadable Parquet file; an empty file; a header
        without data rows (unless ``allow_empty``). (A Parquet string that is not UTF-8
        fails pyarrow's full validation, so no lone surrogate comes out of a Parquet
        file, with pandas 2 or 3.)
    """
    import pandas as pd

    p = Path(path)
    is_parquet = p.suffix.lower() in (".parquet", ".pq") if parquet is None else parquet
    if is_parquet:
        _check_file(p, what)
        try:
            # pyarrow checks UTF-8 only when strings become Python objects: pandas 2 does
            # that while reading, pandas 3 keeps them in Arrow and would fail later, at
            # first use; a full validation first refuses such a file under both
            import pyarrow.parquet as pq

            pq.read_table(p).validate(full=True)
            frame = pd.read_parquet(p)
        except Exception as exc:  # noqa: BLE001 -- pyarrow raises many types for one cause
            raise InputError(MSG_PARQUET.format(
                what=what, path=p, error=one_line(f"{type(exc).__name__}: {exc}"))) from None
    else:
        _check_file(p, what)
        if sep is None:
            sep = "\t" if p.suffix.lower() in (".tsv", ".tab") else ","
        # pandas streams the file (no copy of a multi-GB table in memory) and decodes it
        # strictly; only on a decoding error is the file scanned to locate the byte
        try:
            frame = pd.read_csv(p, sep=sep, dtype=dtype, encoding="utf-8-sig",
                                **csv_options)
        except UnicodeDecodeError:
            quoting = int(csv_options.get("quoting", csv.QUOTE_MINIMAL))
            raise InputError(_locate_bad_utf8(p, what, sep=sep, quoting=quoting)) from None
        except pd.errors.EmptyDataError:
            raise InputError(MSG_EMPTY_FILE.format(what=what, path=p)) from None
        except OSError as exc:
            raise InputError(MSG_UNREADABLE.format(what=what, path=p,
                                                   error=one_line(exc))) from None
        except Exception as exc:  # noqa: BLE001 -- the C parser's errors have many types
            kind = "CSV" if sep == "," else "tab-separated text" if sep == "\t" \
                else f"{sep!r}-separated text"
            raise InputError(MSG_TABLE.format(what=what, path=p, kind=kind,
                                              error=one_line(exc))) from None
    if len(frame) == 0 and not allow_empty:
        raise InputError(MSG_NO_ROWS.format(what=what, path=p))
    return frame


def read_jsonl(path: str | Path, *, what: str) -> list[dict[str, Any]]:
    """The objects of a JSON Lines file (one per non-blank line).

    Raises
    ------
    InputError
        Missing file, undecodable bytes, a line that is not a JSON object (its data
        row and file line named), a lone surrogate escape (``\\ud800``) in a key or
        value, a file without any object.
    """
    p = Path(path)
    raw = _read_bytes(p, what)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:  # locate it by data row (non-blank line) and line
        lines = raw[: exc.start].split(b"\n")
        row = sum(1 for ln in lines[:-1] if ln.strip()) + 1
        raise InputError(MSG_NOT_UTF8.format(what=what, path=p, row=row, line=len(lines),
                                             column="")) from None
    records: list[dict[str, Any]] = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        row = len(records) + 1
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise InputError(MSG_JSON_LINE.format(what=what, path=p, row=row, line=line_no,
                                                  error=one_line(exc))) from None
        if not isinstance(obj, dict):
            raise InputError(MSG_JSON_LINE.format(what=what, path=p, row=row, line=line_no,
                                                  error=f"a JSON {type(obj).__name__}"))
        found = find_surrogate(obj)
        if found is not None:
            column = f", {found[1]}" if found[1] else ""
            raise InputError(MSG_SURROGATE.format(what=what, path=p, row=row,
                                                  column=column, escape=found[0]))
        records.append(obj)
    if not records:
        raise InputError(MSG_EMPTY_JSONL.format(what=what, path=p))
    return records


def read_json(path: str | Path, *, what: str) -> Any:
    """A JSON document.

    Raises
    ------
    InputError
        Missing file, undecodable bytes, invalid JSON, a lone surrogate escape.
    """
    p = Path(path)
    text = read_text(p, what=what)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InputError(MSG_JSON.format(path=p, what=what, error=one_line(exc))) from None
    found = find_surrogate(data)
    if found is not None:
        raise InputError(MSG_JSON_SURROGATE.format(path=p, what=what, escape=found[0],
                                                   where=found[1] or "the top level"))
    return data


def read_toml(path: str | Path, *, what: str = "config file") -> dict[str, Any]:
    """A TOML document; every failure (missing file, bytes that are not UTF-8,
    invalid TOML) is a :class:`~recaudit.exceptions.ConfigError` naming the file."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(MSG_NOT_FOUND.format(what=what, path=p))
    try:
        text = read_text(p, what=what)
    except InputError as exc:
        raise ConfigError(str(exc)) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(MSG_TOML.format(what=what, path=p, error=one_line(exc))) from None
