"""Small file helpers shared by every command: atomic writes and strict JSON values."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["MSG_CANNOT_WRITE", "MSG_OUTPUT_IS_DIRECTORY", "MSG_OUTPUT_PARENT", "check_output",
           "plain", "to_jsonable", "write_atomic", "write_bytes_atomic", "write_text_atomic"]


MSG_OUTPUT_IS_DIRECTORY = (
    "{what} {path} is a folder; give a file name (e.g. {example})"
)
MSG_OUTPUT_PARENT = "{what} {path}: {parent} is not a folder; give a path inside a folder"
MSG_CANNOT_WRITE = "cannot write {what} {path}: {error}"


def check_output(path: str | os.PathLike[str], *, what: str, example: str) -> Path:
    """``path`` as a :class:`~pathlib.Path` if a file can be written there: not an
    existing folder, and no ancestor that exists as a file; otherwise an
    :class:`~recaudit.exceptions.InputError` naming it (``example``: a file name to
    suggest, such as ``report.html``)."""
    from .exceptions import InputError

    p = Path(path)
    if p.is_dir():
        raise InputError(MSG_OUTPUT_IS_DIRECTORY.format(what=what, path=p,
                                                        example=p / example))
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise InputError(MSG_OUTPUT_PARENT.format(what=what, path=p, parent=parent))
            break
    return p


def write_atomic(path: str | os.PathLike[str], write: Callable[[Path], object]) -> None:
    """Write ``path`` through ``write(tmp)`` and rename ``tmp`` over it.

    Readers (and a resume after a crash) see the old file or the whole new one, never
    a half-written one: ``os.replace`` is atomic on one file system. The temporary name
    carries the process id, so processes writing the same path at once (two runs
    filling one cache) never write into each other's temporary file; a failed
    ``write`` removes its temporary file.
    """
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """:func:`write_atomic` of bytes."""
    write_atomic(path, lambda tmp: tmp.write_bytes(data))


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """:func:`write_atomic` of a UTF-8 text."""
    write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def plain(value: Any) -> Any:
    """A numpy scalar as the Python scalar it holds (``np.int64(3)`` -> ``3``),
    recursively through lists and tuples; anything else unchanged.

    For error messages that show a data value with ``!r``: numpy 2 spells the repr of
    its scalars with the type (``np.int64(3)``, ``np.str_('F')``), numpy 1 did not.
    """
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    return value


def to_jsonable(obj: Any) -> Any:
    """Numpy scalars/arrays to Python, non-finite floats and ``pd.NA`` to ``None``,
    recursively through mappings, lists and tuples: a value ``json.dumps(...,
    allow_nan=False)`` accepts."""
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return to_jsonable(obj.item())
    pandas = sys.modules.get("pandas")  # only a loaded pandas can have made pd.NA
    if pandas is not None and obj is pandas.NA:
        return None
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj
