"""Ranked-list statistics per analysis group: :func:`topn_bias` on each cell of a run.

A ``[prompt] answer = "ranking"`` run journals every evaluation's whole ranking (column
``ranking``); :func:`topn_groups` splits its table by the run's cells, as
:func:`~recaudit.positional.analyze_groups` does, runs :func:`topn_bias` on each and
adjusts the rank-bias test's p-values across the cells with Holm (the same family
rule as the top-1 tests). The result reads its own JSON back (``topn.json``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._records import as_mapping, need
from .._stats import as_generator, holm
from ..exceptions import InputError
from ._analyze import _plain
from ._evaluations import group_table, read_table
from ._options import AnalysisOptions
from ._topn import TopNResult, topn_bias

__all__ = ["RankingGroup", "TopNGroups", "has_rankings", "topn_groups"]

MSG_NO_RANKINGS = ("the table holds no ranking (column `ranking` empty or absent): audit "
                   "with `[prompt] answer = \"ranking\"`")
MSG_IN_GROUP = "group {group}: {error}"
_FIELDS = ("result", "pvalue_holm", "reason")


@dataclass(frozen=True)
class RankingGroup:
    """One cell's ranked-list statistics.

    Attributes
    ----------
    group : dict
        The cell's keys (e.g. ``model``, ``k``, ``temperature``, ``condition``).
    result : TopNResult or None
        :func:`topn_bias` of the cell; ``None`` when it holds no ranking (every answer
        discarded), with ``reason``.
    pvalue_holm : float
        The rank-bias test's p-value, Holm-adjusted across the cells (``nan`` without
        a result).
    reason : str or None
        Why ``result`` is ``None``.
    """

    group: dict[str, Any]
    result: TopNResult | None
    pvalue_holm: float
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The group keys, ``result`` (:meth:`TopNResult.to_dict` or null),
        ``pvalue_holm`` and ``reason``."""
        return {**self.group, "result": None if self.result is None else self.result.to_dict(),
                "pvalue_holm": None if np.isnan(self.pvalue_holm) else self.pvalue_holm,
                "reason": self.reason}


@dataclass(frozen=True)
class TopNGroups:
    """:func:`topn_groups`'s result: one :class:`RankingGroup` per cell, in key order."""

    by: tuple[str, ...]
    groups: tuple[RankingGroup, ...]

    def to_list(self) -> list[dict[str, Any]]:
        """One JSON object per cell (``topn.json``)."""
        return [g.to_dict() for g in self.groups]

    @classmethod
    def from_list(cls, rows: Sequence[Mapping[str, Any]]) -> TopNGroups:
        """Read :meth:`to_list` back; every number strict, a missing key named. The
        group keys are the keys besides ``result``, ``pvalue_holm`` and ``reason``."""
        if not isinstance(rows, list):
            raise InputError("topn.json: the top level must be a list of cells")
        first = as_mapping(rows[0], "topn.json cell 1") if rows else {}
        by = tuple(key for key in first if key not in _FIELDS)
        groups = []
        for i, raw in enumerate(rows):
            what = f"topn.json cell {i + 1}"
            row = as_mapping(raw, what)
            result = need(row, "result", what)
            p = need(row, "pvalue_holm", what)
            reason = row.get("reason")
            groups.append(RankingGroup(
                group={name: need(row, name, what) for name in by},
                result=None if result is None else TopNResult.from_dict(result),
                pvalue_holm=float("nan") if p is None else _probability(p, what),
                reason=reason if isinstance(reason, str) else None))
        return cls(by=tuple(by), groups=tuple(groups))


def _probability(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not 0.0 <= float(value) <= 1.0:
        raise InputError(f"{what}: `pvalue_holm` must be a number in [0, 1], got {value!r}")
    return float(value)


def has_rankings(table: pd.DataFrame) -> bool:
    """Whether an evaluations table holds at least one ranking (a ranking run's)."""
    return "ranking" in table.columns and bool(table["ranking"].notna().any())


def topn_groups(data: pd.DataFrame | str | Path, options: AnalysisOptions | None = None,
                *, by: Sequence[str], rng: np.random.Generator | int | None = None
                ) -> TopNGroups:
    """:func:`topn_bias` on each group of ``by`` columns; Holm across the groups.

    Parameters
    ----------
    data : DataFrame or path
        An evaluations table with a ``ranking`` column (a ranking run's).
    options : AnalysisOptions, optional
        ``n_resamples`` (the permutation test's B), ``n_boot`` and
        ``confidence_level`` (the query-bootstrap intervals) are used.
    by : sequence of str
        The grouping columns (a run's cells: ``model``, ``k``, ``temperature``,
        ``condition``).
    rng : Generator, int or None
        One child stream per group, in key order.

    Returns
    -------
    TopNGroups
        Holm (1979) step-down adjustment of the rank-bias p-values over the groups
        that hold a ranking.
    """
    settings = AnalysisOptions() if options is None else options
    table = read_table(data)
    if not has_rankings(table):
        raise InputError(MSG_NO_RANKINGS)
    parts = group_table(table, list(by))
    streams = as_generator(rng).spawn(len(parts))
    results: list[tuple[dict[str, Any], TopNResult | None, str | None]] = []
    for (keys, part), stream in zip(parts, streams, strict=True):
        name = ", ".join(f"{k}={v}" for k, v in keys.items())
        if not part["ranking"].notna().any():
            results.append((_plain(keys), None, "every answer of the cell was discarded"))
            continue
        try:
            res = topn_bias(part.loc[:, ["query_id", "order", "ranking"]],
                            n_resamples=settings.n_resamples, n_boot=settings.n_boot,
                            confidence_level=settings.confidence_level, rng=stream)
        except InputError as exc:
            raise InputError(MSG_IN_GROUP.format(group=name, error=exc)) from exc
        results.append((_plain(keys), res, None))
    adjusted = holm([np.nan if r is None else r.pvalue for _, r, _ in results])
    return TopNGroups(by=tuple(by), groups=tuple(
        RankingGroup(keys, res, float(p), reason)
        for (keys, res, reason), p in zip(results, adjusted, strict=True)))
