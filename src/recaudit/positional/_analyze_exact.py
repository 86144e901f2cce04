"""Exact mode over groups: :func:`analyze_exact` per group, Holm across the groups.

The command-line seam of ``recaudit positional analyze --exact`` (docs/exact-and-sequential.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._read import check_ids
from .._read import read_table as read_file
from .._stats import as_generator, holm
from ..exceptions import InputError
from ._analysis_json import holm_column
from ._analyze import MSG_IN_GROUP, _plain
from ._evaluations import ID_COLUMNS, check_unique_keys, group_table, read_table
from ._exact import MSG_EXACT_TAU, ExactAnalysis, analyze_exact
from ._options import AnalysisOptions

__all__ = [
    "EXACT_COLUMNS",
    "GroupedExactAnalysis",
    "analyze_exact_groups",
    "check_exact_columns",
    "read_exact_table",
]

#: Columns exact mode reads (``outside_mass`` is optional).
EXACT_COLUMNS = ("query_id", "order", "choice_probs")
MSG_EXACT_COLUMNS = (
    "exact mode needs column(s) {missing} (the table has: {have}); `choice_probs` holds "
    "each evaluation's choice-probability vector: run the audit with `[prompt] "
    "choice_probabilities = true` on a backend that reports them (local, openai with "
    "logprobs, simulated), or drop `--exact` to analyse the sampled choices"
)


@dataclass(frozen=True, eq=False)
class GroupedExactAnalysis:
    """Per-group exact analyses; POB-UNBP p-values Holm-adjusted across the groups."""

    by: tuple[str, ...]
    groups: tuple[ExactAnalysis, ...]
    pob_unbp_pvalue_holm: npt.NDArray[np.float64] = field(repr=False)

    @property
    def rejects(self) -> bool:
        """True when a Holm-adjusted POB-UNBP p-value is < alpha (nan: not run)."""
        return any(self.pob_unbp_pvalue_holm[i] < g.alpha for i, g in enumerate(self.groups))

    def to_list(self) -> list[dict[str, Any]]:
        """One JSON object per group, ``pob_unbp`` with ``pvalue_holm``/``reject_holm``."""
        out = []
        for i, g in enumerate(self.groups):
            d = g.to_dict()
            ok = g.pob_unbp is not None
            p = float(self.pob_unbp_pvalue_holm[i])
            d["pob_unbp"]["pvalue_holm"] = p if ok else None
            d["pob_unbp"]["reject_holm"] = bool(p < g.alpha) if ok else None
            out.append(d)
        return out

    @classmethod
    def from_list(cls, rows: Sequence[Mapping[str, Any]], *, by: Sequence[str] | None = None,
                  confidence_level: float = 0.95) -> GroupedExactAnalysis:
        """Read :meth:`to_list`'s JSON back (``by`` defaults to the first row's group
        keys)."""
        groups = tuple(ExactAnalysis.from_dict(row, confidence_level=confidence_level)
                       for row in rows)
        if by is None:
            by = tuple(groups[0].group) if groups else ()
        return cls(by=tuple(by), groups=groups,
                   pob_unbp_pvalue_holm=holm_column(rows, "pob_unbp"))


def read_exact_table(source: pd.DataFrame | str | Path) -> pd.DataFrame:
    """Read an evaluations table for exact mode; every missing column named at once.

    Unlike :func:`~recaudit.positional.read_table` it does not need
    ``selected_position`` (exact mode reads the vectors, not the sampled choice).
    """
    if isinstance(source, pd.DataFrame):
        table = source
    else:
        path = Path(source)
        if path.is_file() and path.suffix.lower() == ".csv":
            table = read_file(path, what="evaluations table",
                              dtype={"query_id": str, "order": str})
        elif path.is_file() and path.suffix.lower() in (".parquet", ".pq"):
            table = read_file(path, what="evaluations table")
        else:
            return read_table(path)  # its message: no such file / unknown suffix
        check_ids(table, ID_COLUMNS, path=path, what="evaluations table")
    check_exact_columns(table)
    check_unique_keys(table)
    return table


def check_exact_columns(table: pd.DataFrame) -> None:
    """Raise :class:`InputError` naming every column exact mode needs and lacks."""
    missing = [c for c in EXACT_COLUMNS if c not in table.columns]
    if missing:
        raise InputError(MSG_EXACT_COLUMNS.format(
            missing=", ".join(f"`{c}`" for c in missing),
            have=", ".join(map(str, table.columns)) or "none"))


def analyze_exact_groups(
    data: pd.DataFrame | str | Path,
    options: AnalysisOptions | None = None,
    *,
    by: Sequence[str],
    rng: np.random.Generator | int | None = None,
    progress: Callable[[int], None] | None = None,
) -> GroupedExactAnalysis:
    """:func:`~recaudit.positional.analyze_exact` on each group of ``by``; Holm across groups.

    Holm's step-down adjustment (Holm 1979) is applied to the groups' POB-UNBP
    p-values (a group with < 2 queries has none and stays out of the family).
    ``progress`` is called with 1 after each group.

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scand. J.
    Statist. 6, 65-70.
    """
    opts = AnalysisOptions() if options is None else options
    if opts.tau != "auto":
        raise InputError(MSG_EXACT_TAU)
    table = read_exact_table(data)
    gen = as_generator(rng)
    results = []
    for keys, part in group_table(table, list(by)):
        try:
            res = analyze_exact(part, opts, rng=gen.spawn(1)[0])
        except InputError as exc:
            name = ", ".join(f"{k}={v}" for k, v in keys.items())
            raise InputError(MSG_IN_GROUP.format(group=name, error=exc)) from exc
        results.append(_with_group(res, _plain(keys)))
        if progress is not None:
            progress(1)
    pvalues = [np.nan if r.pob_unbp is None else r.pob_unbp.pvalue for r in results]
    return GroupedExactAnalysis(by=tuple(by), groups=tuple(results),
                                pob_unbp_pvalue_holm=holm(pvalues))


def _with_group(res: ExactAnalysis, keys: dict[str, Any]) -> ExactAnalysis:
    return replace(res, group=keys)
