"""Model-vs-model comparisons inside each cell of one run (``compare.json``).

A run with several models answers the same queries under the same orders in every cell
(model x k x temperature x condition), so every pair of models is compared within each
cell with the paired design of :func:`compare_systems`; the whole run is one family:
the p-values and intervals of each measure are adjusted across every pair of every cell.
The result reads its own JSON back (the report's comparison section).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._multiplicity import check_adjust
from .._records import as_mapping
from .._stats import DEFAULT_N_BOOT, as_generator
from ..exceptions import InputError
from ._bootstrap import check_bootstrap_args
from ._compare import Comparison, Pair, compare_family
from ._evaluations import evaluations_from_table, group_table, read_table

__all__ = ["CellComparison", "RunComparisons", "compare_cells"]

MSG_ONE_SYSTEM = ("comparing needs >= 2 values of `{by}` in one cell, got {n}: a run with "
                  "one model has nothing to compare")
_FIELDS = tuple(f.name for f in fields(Comparison))
_REQUIRED = tuple(f.name for f in fields(Comparison) if f.default is MISSING)


@dataclass(frozen=True)
class CellComparison:
    """One pair of systems and one measure inside one cell."""

    cell: dict[str, Any]
    comparison: Comparison

    def to_dict(self) -> dict[str, Any]:
        """The cell's keys, then the comparison's fields."""
        return {**self.cell, **self.comparison.to_dict()}


@dataclass(frozen=True)
class RunComparisons:
    """:func:`compare_cells`'s result: every row of the run's family, in cell order.

    Attributes
    ----------
    by : str
        The column whose values are the systems (``model``).
    within : tuple of str
        The cell columns (``k``, ``temperature``, ``condition``).
    rows : tuple of CellComparison
    """

    by: str
    within: tuple[str, ...]
    rows: tuple[CellComparison, ...]

    def to_list(self) -> list[dict[str, Any]]:
        """One JSON object per row (``compare.json``)."""
        return [r.to_dict() for r in self.rows]

    @classmethod
    def from_list(cls, rows: Sequence[Mapping[str, Any]], *, by: str = "model"
                  ) -> RunComparisons:
        """Read :meth:`to_list` back: the cell keys are the keys besides the
        comparison's fields."""
        if not isinstance(rows, list):
            raise InputError("compare.json: the top level must be a list of rows")
        out = []
        within: tuple[str, ...] = ()
        for i, raw in enumerate(rows):
            row = as_mapping(raw, f"compare.json row {i + 1}")
            missing = [f for f in _REQUIRED if f not in row]
            if missing:
                raise InputError(f"compare.json row {i + 1}: missing {', '.join(missing)}")
            within = tuple(k for k in row if k not in _FIELDS)
            out.append(CellComparison({k: row[k] for k in within},
                                      Comparison.from_dict(row)))
        return cls(by=by, within=within, rows=tuple(out))


def compare_cells(data: pd.DataFrame | str | Path, *, by: str = "model",
                  within: Sequence[str] = ("k", "temperature", "condition"),
                  adjust: str = "holm", n_boot: int = DEFAULT_N_BOOT,
                  confidence_level: float = 0.95,
                  rng: np.random.Generator | int | None = None) -> RunComparisons:
    """Compare every pair of ``by`` values inside each cell of ``within`` columns.

    Parameters
    ----------
    data : DataFrame or path
        An evaluations table (a run's ``evaluations.parquet``).
    by : str
        The systems' column.
    within : sequence of str
        The cell columns present in the table (absent ones are skipped).
    adjust, n_boot, confidence_level
        As :func:`compare_systems`; the family is every pair of every cell.
    rng : Generator, int or None

    Raises
    ------
    InputError
        ``by`` missing, or a cell with fewer than two systems.
    """
    n_boot, confidence_level = check_bootstrap_args(n_boot, confidence_level)
    check_adjust(adjust)
    table = read_table(data)
    if by not in table.columns:
        raise InputError(f"`by`: the table has no column {by!r}")
    cells = [c for c in within if c in table.columns]
    pairs: list[Pair] = []
    keys: list[dict[str, Any]] = []
    for cell, part in group_table(table, cells):
        systems = {str(name): evaluations_from_table(group.reset_index(drop=True))
                   for name, group in part.groupby(by, dropna=False, sort=True)}
        if len(systems) < 2:
            raise InputError(MSG_ONE_SYSTEM.format(by=by, n=len(systems)))
        for a, b in combinations(systems, 2):
            pairs.append((a, systems[a], b, systems[b]))
            keys.append({k: v.item() if isinstance(v, np.generic) else v
                         for k, v in cell.items()})
    rows = compare_family(pairs, adjust=adjust, n_boot=n_boot,
                          confidence_level=confidence_level, gen=as_generator(rng))
    per_pair = len(rows) // max(len(pairs), 1)
    return RunComparisons(by=by, within=tuple(cells), rows=tuple(
        CellComparison(keys[i // per_pair], Comparison(**r)) for i, r in enumerate(rows)))
