"""Tolerant key lookup and file helpers shared by the report's loaders.

The loaders accept small naming variations (``sPB`` / ``spb``, ``pob-icm`` /
``pob_icm``) and are strict about essentials: a missing key raises
:class:`~recaudit.InputError` naming the key, where it was expected and the command
that writes it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from .._read import read_json, read_table
from ..exceptions import InputError

__all__ = ["find", "first_file", "need", "norm", "read_json_file", "read_table_file", "to_float"]


def norm(key: str) -> str:
    """A key in lower case with spaces and dashes as underscores."""
    return re.sub(r"[\s\-]+", "_", str(key).strip().lower())


def find(obj: Mapping[str, Any], *aliases: str) -> Any:
    """Return ``obj[key]`` for the first key whose normalised form is an alias."""
    wanted = {norm(a) for a in aliases}
    for key, value in obj.items():
        if norm(key) in wanted:
            return value
    return None


def need(obj: Mapping[str, Any], where: str, command: str, *aliases: str) -> Any:
    """:func:`find`, but a key that is absent (not merely ``null``) is an error."""
    value = find(obj, *aliases)
    if value is None and not any(norm(k) in {norm(a) for a in aliases} for k in obj):
        raise InputError(f"{where}: missing key `{aliases[0]}`; it is written by {command}")
    return value


def to_float(value: Any) -> float:
    """JSON number or ``null`` -> float (``null`` -> nan)."""
    if value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise InputError(f"expected a number, got {value!r}") from exc


def first_file(folder: Path, *names: str) -> Path | None:
    """The first of ``names`` that is a file in ``folder``."""
    for name in names:
        if (folder / name).is_file():
            return folder / name
    return None


def read_json_file(path: Path) -> Any:
    """A results file's JSON."""
    return read_json(path, what="results file")


def read_table_file(path: Path) -> pd.DataFrame:
    """A parquet or CSV table (empty allowed)."""
    return read_table(path, what="table", parquet=path.suffix != ".csv", allow_empty=True)
