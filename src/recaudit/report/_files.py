"""The files the report's loaders open: a results JSON, a table, the first that exists.

Every read goes through :mod:`recaudit._read`, so a damaged file is an
:class:`~recaudit.InputError` naming it; the JSON's values are then read by the one
number rule of :mod:`recaudit._records`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from .._read import read_json, read_table

__all__ = ["first_file", "read_json_file", "read_table_file"]


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
