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
import hashlib
import io
import json
import re
import stat
import sys
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._read_fields import check_arrow_field_sizes, check_field_sizes
from .exceptions import ConfigError, InputError

if TYPE_CHECKING:  # pandas is imported by the readers that build a table
    import pandas as pd

__all__ = [
    "MSG_CONTROL_ID",
    "MSG_DUPLICATE_HEADER",
    "MSG_DUPLICATE_KEY",
    "MSG_EMPTY_FILE",
    "MSG_ID_SPELLING",
    "MSG_IS_DIRECTORY",
    "MSG_NOT_REGULAR",
    "MSG_NUL",
    "MSG_TOO_DEEP",
    "MSG_NOT_UTF8",
    "MSG_NO_ROWS",
    "MSG_PARQUET",
    "MSG_SURROGATE",
    "MSG_TABLE",
    "check_file",
    "check_header",
    "check_id_spelling",
    "check_ids",
    "file_sha256",
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
MSG_IS_DIRECTORY = "{what} {path} is a folder, not a file; pass the file itself"
MSG_NOT_REGULAR = (
    "{what} {path} is a {kind}, not a regular file; save what it holds to a file and "
    "pass that"
)
MSG_DUPLICATE_HEADER = (
    "{what} {path}: the header names column {column!r} twice (columns {first} and "
    "{second}); rename or remove one (a reader would silently take the first)"
)
MSG_DUPLICATE_KEY = (
    "{what} {path}: data row {row} (file line {line}) names key {key!r} twice; remove one "
    "(a reader would silently keep the last)"
)
MSG_NUL = (
    "{what} {path}: a NUL byte (\\x00) in data row {row} (file line {line}){column}; a "
    "value cannot hold one (the parser would cut the value there, so two different ids "
    "could merge); remove it or re-export the file"
)
MSG_CONTROL_ID = (
    "{what} {path}: data row {row}, column {column!r}: the id {value} holds the control "
    "character {char}; an id cannot hold one (ids that differ by it would print the "
    "same); remove it"
)
MSG_ID_SPELLING = (
    "{what_a} {path_a} writes {column} {value_a!r} (data row {row_a}) where {what_b} "
    "{path_b} writes {value_b!r} (data row {row_b}); {n} ids match only when read as "
    "numbers, so they would not join (every metric of them 0); write the ids the same "
    "way in every file (e.g. re-export without the '.0' a float column adds)"
)
MSG_TOO_DEEP = (
    "{what} {path} is nested deeper than its reader follows (more than about {depth} "
    "levels of lists or tables); no file recaudit reads is this deep: fix or regenerate it"
)

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


_KINDS = ((stat.S_ISFIFO, "FIFO (named pipe)"), (stat.S_ISSOCK, "socket"),
          (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"))


def check_file(path: str | Path, what: str, *, missing: str = MSG_NOT_FOUND,
               error: type[InputError] = InputError) -> Path:
    """``path`` if it is a regular file; otherwise an ``error`` saying what it is.

    A missing path gets ``missing`` (formatted with ``what`` and ``path``: callers keep
    their own wording), a folder :data:`MSG_IS_DIRECTORY`, a FIFO, socket or device
    :data:`MSG_NOT_REGULAR` (reading a FIFO would block until a writer comes).
    """
    p = Path(path)
    try:
        mode = p.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise error(missing.format(what=what, path=p)) from None
    except OSError as exc:  # a path too long, a loop of links, a folder without x
        raise error(MSG_UNREADABLE.format(what=what, path=p, error=one_line(exc))) from None
    if stat.S_ISREG(mode):
        return p
    if stat.S_ISDIR(mode):
        raise error(MSG_IS_DIRECTORY.format(what=what, path=p))
    kind = next((name for test, name in _KINDS if test(mode)), "special file")
    raise error(MSG_NOT_REGULAR.format(what=what, path=p, kind=kind))


def _check_file(path: Path, what: str) -> Path:
    return check_file(path, what)


def file_sha256(path: str | Path, *, what: str) -> str:
    """The SHA-256 (hex) of a file's bytes, read in 1 MiB chunks; a missing,
    special or unreadable file is an :class:`InputError` naming it (a file hashed to
    identify a run goes through the same checks as a file read)."""
    p = check_file(path, what)
    h = hashlib.sha256()
    try:
        with p.open("rb") as fh:
            for chunk in iter(lambda: fh.read(2**20), b""):
                h.update(chunk)
    except OSError as exc:
        raise InputError(MSG_UNREADABLE.format(what=what, path=p,
                                               error=one_line(exc))) from None
    return h.hexdigest()


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
    row, column = _locate(prefix, sep=sep, quoting=quoting)
    if row == 0:  # the byte is in the header line
        return MSG_NOT_UTF8_TEXT.format(what=what, path=path, line=line)
    return MSG_NOT_UTF8.format(what=what, path=path, row=row, line=line, column=column)


def _locate(prefix: str, *, sep: str, quoting: int) -> tuple[int, str]:
    """Where a table's text ``prefix`` ends: ``(data row, ", column 'name'")`` (row 0:
    the header line, without a column)."""
    try:  # a sentinel keeps the last (cut) field
        records = list(csv.reader(io.StringIO(prefix + "\x01"), delimiter=sep,
                                  quoting=quoting))  # type: ignore[arg-type]
    except csv.Error:
        records = []
    if len(records) <= 1:
        return 0, ""
    header = records[0]
    field_index = len(records[-1]) - 1
    column = f", column {header[field_index]!r}" if 0 <= field_index < len(header) else ""
    return len(records) - 1, column


def _refuse_nul(path: Path, what: str, *, sep: str, quoting: int) -> None:
    """A NUL byte anywhere in a text table is refused, located by data row and column:
    pandas' parser ends a value at a NUL, so ``m\\x00x`` would be read as ``m``."""
    offset, seen = -1, 0
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(2**20), b""):
            found = chunk.find(b"\x00")
            if found >= 0:
                offset = seen + found
                break
            seen += len(chunk)
    if offset < 0:
        return
    with path.open("rb") as fh:
        prefix = fh.read(offset).decode("utf-8-sig", errors="replace")
    row, column = _locate(prefix, sep=sep, quoting=quoting)
    raise InputError(MSG_NUL.format(what=what, path=path, row=row or "(the header)",
                                    line=prefix.count("\n") + 1, column=column))


def check_header(names: list[Any], path: Path, what: str) -> None:
    """Refuse a header that names one column twice (:data:`MSG_DUPLICATE_HEADER`)."""
    seen: dict[str, int] = {}
    for i, name in enumerate(names, start=1):
        key = str(name)
        if key in seen:
            raise InputError(MSG_DUPLICATE_HEADER.format(what=what, path=path, column=key,
                                                         first=seen[key], second=i))
        seen[key] = i


def _csv_header(path: Path, *, sep: str, quoting: int) -> list[str]:
    """The first record of a text table as written (pandas renames a repeated name
    ``x`` to ``x.1``, so the header is read again to see it)."""
    try:
        with path.open(encoding="utf-8-sig", errors="replace", newline="") as fh:
            return next(csv.reader(fh, delimiter=sep, quoting=quoting),  # type: ignore[arg-type]
                        [])
    except (OSError, csv.Error):
        return []


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
        try:  # the schema first: a repeated column name fails pq.read_table obscurely
            import pyarrow.parquet as pq

            names = pq.read_schema(p).names
        except Exception as exc:  # noqa: BLE001 -- pyarrow raises many types for one cause
            raise InputError(MSG_PARQUET.format(
                what=what, path=p, error=one_line(f"{type(exc).__name__}: {exc}"))) from None
        check_header(names, p, what)
        try:
            # pyarrow checks UTF-8 only when strings become Python objects: pandas 2 does
            # that while reading, pandas 3 keeps them in Arrow and would fail later, at
            # first use; a full validation first refuses such a file under both
            table = pq.read_table(p)
            table.validate(full=True)
        except Exception as exc:  # noqa: BLE001 -- pyarrow raises many types for one cause
            raise InputError(MSG_PARQUET.format(
                what=what, path=p, error=one_line(f"{type(exc).__name__}: {exc}"))) from None
        check_arrow_field_sizes(table, p, what)  # before pandas copies the strings
        try:
            frame = pd.read_parquet(p)
        except Exception as exc:  # noqa: BLE001 -- pyarrow raises many types for one cause
            raise InputError(MSG_PARQUET.format(
                what=what, path=p, error=one_line(f"{type(exc).__name__}: {exc}"))) from None
    else:
        _check_file(p, what)
        if sep is None:
            sep = "\t" if p.suffix.lower() in (".tsv", ".tab") else ","
        quoting = int(csv_options.get("quoting", csv.QUOTE_MINIMAL))
        _refuse_nul(p, what, sep=sep, quoting=quoting)
        # pandas streams the file (no copy of a multi-GB table in memory) and decodes it
        # strictly; only on a decoding error is the file scanned to locate the byte
        try:
            frame = pd.read_csv(p, sep=sep, dtype=dtype, encoding="utf-8-sig",
                                **csv_options)
        except UnicodeDecodeError:
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
        if csv_options.get("names") is None \
                and csv_options.get("header", "infer") is not None:
            check_header(_csv_header(p, sep=sep, quoting=quoting), p, what)
        check_field_sizes(frame, p, what)
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
            obj = json.loads(line, object_pairs_hook=_unique_keys)
            found = find_surrogate(obj)
        except _RepeatedKey as exc:
            raise InputError(MSG_DUPLICATE_KEY.format(what=what, path=p, row=row, line=line_no,
                                                      key=exc.key)) from None
        except ValueError as exc:
            raise InputError(MSG_JSON_LINE.format(what=what, path=p, row=row, line=line_no,
                                                  error=one_line(exc))) from None
        except RecursionError:
            raise InputError(MSG_TOO_DEEP.format(what=what, path=p,
                                                 depth=_max_depth())) from None
        if not isinstance(obj, dict):
            raise InputError(MSG_JSON_LINE.format(what=what, path=p, row=row, line=line_no,
                                                  error=f"a JSON {type(obj).__name__}"))
        if found is not None:
            column = f", {found[1]}" if found[1] else ""
            raise InputError(MSG_SURROGATE.format(what=what, path=p, row=row,
                                                  column=column, escape=found[0]))
        records.append(obj)
    if not records:
        raise InputError(MSG_EMPTY_JSONL.format(what=what, path=p))
    return records


class _RepeatedKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's dict; a key written twice is refused (``json`` keeps the last:
    the JSON Lines twin of a header naming a column twice)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(key)
            seen.add(key)
    return out


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
        found = find_surrogate(data)
    except ValueError as exc:
        raise InputError(MSG_JSON.format(path=p, what=what, error=one_line(exc))) from None
    except RecursionError:  # json's scanner recurses once per level
        raise InputError(MSG_TOO_DEEP.format(what=what, path=p,
                                             depth=_max_depth())) from None
    if found is not None:
        raise InputError(MSG_JSON_SURROGATE.format(path=p, what=what, escape=found[0],
                                                   where=found[1] or "the top level"))
    return data


def read_toml(path: str | Path, *, what: str = "config file") -> dict[str, Any]:
    """A TOML document; every failure (missing file, bytes that are not UTF-8,
    invalid TOML) is a :class:`~recaudit.exceptions.ConfigError` naming the file."""
    p = check_file(path, what, error=ConfigError)
    try:
        text = read_text(p, what=what)
    except InputError as exc:
        raise ConfigError(str(exc)) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(MSG_TOML.format(what=what, path=p, error=one_line(exc))) from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise ConfigError(MSG_TOO_DEEP.format(what=what, path=p,
                                              depth=_max_depth())) from None


def _max_depth() -> int:
    """About how deep a document the recursive parsers follow (Python's recursion
    limit, less the frames of the caller)."""
    return max(sys.getrecursionlimit() - 100, 100)


#: Control characters (Unicode category Cc: C0, DEL, C1) refused in an id.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_CONTROL_NAMES = {"\x00": "NUL", "\t": "tab", "\n": "line feed", "\r": "carriage return",
                  "\x1b": "escape", "\x7f": "delete"}


def check_ids(frame: pd.DataFrame, columns: Iterable[str], *, path: str | Path,
              what: str) -> None:
    """Refuse an id holding a control character (NUL, tab, newline, escape, DEL, ...)
    in the ``columns`` of ``frame`` that exist, naming the file, data row (from 1)
    and column (:data:`MSG_CONTROL_ID`).

    Ids such as ``m\\x00x`` and ``m`` print alike and some tools cut a value at a
    NUL, so two different models, users or items would seem to merge; an id never
    needs one. Only string values are looked at (numbers and missing values pass).
    """
    for column in columns:
        if column not in frame.columns:
            continue
        values = frame[column]
        if values.dtype.kind in "biuf":
            continue
        text = values.astype(object).map(lambda v: isinstance(v, str)
                                         and _CONTROL.search(v) is not None)
        hits = text.to_numpy(dtype=bool)
        if not hits.any():
            continue
        index = int(hits.argmax())
        value = str(values.iloc[index])
        char = _CONTROL.search(value).group()  # type: ignore[union-attr]
        name = _CONTROL_NAMES.get(char, f"U+{ord(char):04X}")
        raise InputError(MSG_CONTROL_ID.format(
            what=what, path=path, row=index + 1, column=column,
            value=one_line(ascii(value), 60), char=f"{ascii(char)} ({name})"))


_INTEGER = re.compile(r"[+-]?\d+(?:\.0*)?")


def _as_integer(value: str) -> str | None:
    """``value``'s integer spelled plainly (``"12.0"``, ``"012"``, ``"+12"`` -> ``"12"``),
    or ``None`` for an id that is not an integer."""
    text = value.strip()
    if len(text) > 40 or _INTEGER.fullmatch(text) is None:
        return None
    return str(int(text.split(".")[0]))


def check_id_spelling(tables: Sequence[tuple[str, str | Path, pd.DataFrame]],
                      columns: Iterable[str]) -> None:
    """Refuse two files that write the same integer id two ways (``12.0`` and ``12``).

    For each of ``columns`` and each pair of ``(what, path, frame)`` holding it, the
    distinct ids are compared as written and as integers (:func:`_as_integer`); when
    more pairs match as integers than as written, the ids would silently fail to join
    (every metric 0), so the first such pair of spellings is named
    (:data:`MSG_ID_SPELLING`). Ids are compared as strings (``str`` of each value).
    """
    for column in columns:
        present = [(what, path, frame[column], _spellings(frame[column]))
                   for what, path, frame in tables if column in frame.columns]
        for i, a in enumerate(present):
            for b in present[i + 1:]:
                _compare_spelling(column, a, b)


def _spellings(values: pd.Series) -> dict[str, set[str]]:
    """Each integer id of ``values`` -> the ways it is written."""
    out: dict[str, set[str]] = {}
    for v in values.dropna().unique():
        text = str(v)
        n = _as_integer(text)
        if n is not None:
            out.setdefault(n, set()).add(text)
    return out


def _first_row(values: pd.Series, text: str) -> int:
    """The data row (from 1) of the first value written ``text``."""
    return int((values.astype(str) == text).to_numpy().argmax()) + 1


def _compare_spelling(column: str,
                      a: tuple[str, str | Path, pd.Series, dict[str, set[str]]],
                      b: tuple[str, str | Path, pd.Series, dict[str, set[str]]]) -> None:
    # an integer written in both files, never the same way in both
    only_as_int = [n for n in a[3].keys() & b[3].keys() if not a[3][n] & b[3][n]]
    if not only_as_int:
        return
    n = min(only_as_int, key=lambda t: (len(t), t))
    value_a, value_b = min(a[3][n]), min(b[3][n])
    raise InputError(MSG_ID_SPELLING.format(
        what_a=a[0], path_a=a[1], what_b=b[0], path_b=b[1], column=column,
        value_a=value_a, value_b=value_b, row_a=_first_row(a[2], value_a),
        row_b=_first_row(b[2], value_b), n=len(only_as_int)))
