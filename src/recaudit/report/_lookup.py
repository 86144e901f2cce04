"""Tolerant key lookup and file helpers shared by the report's loaders.

The loaders accept small naming variations (``sPB`` / ``spb``, ``pob-icm`` /
``pob_icm``) and are strict about essentials: a missing key raises
:class:`~recaudit.InputError` naming the key, where it was expected and the command
that writes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from .._read import read_json, read_table
from .._records import find_key, json_float, json_int, need_key, norm_key

__all__ = ["find", "first_file", "need", "norm", "read_json_file", "read_table_file", "to_float",
           "to_int"]


#: The tolerant readers are shared with the fairness results' ``from_dict``.
norm = norm_key
find = find_key
need = need_key
to_float = json_float
to_int = json_int


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
