"""The page primitives every section builder uses: cells, tables, figures, sections,
and the formatting of numbers, p-values and intervals.

Every number printed on the page carries ``data-path`` (where it lives in the sidecar
JSON, ``/``-separated) and ``data-value`` (the number itself, as JSON), so the page and
the sidecar can be checked against each other and tables sort on exact values.
Strings reach the page only through jinja2's autoescaping or :class:`Markup.format`,
which escapes its arguments.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from markupsafe import Markup

from .._stats import ConfidenceInterval, Estimate

__all__ = [
    "NAN_ESTIMATE",
    "Cell",
    "Fig",
    "HasCI",
    "Section",
    "Table",
    "ci_cell",
    "ci_num",
    "finite",
    "fmt",
    "fmt_ci",
    "fmt_p",
    "json_value",
    "levels",
    "num",
    "p_cell",
    "span",
]


class HasCI(Protocol):
    """What the page shows of an estimate: ``value`` and ``ci`` (``Estimate``,
    ``PositionalBiasResult``, ``StrongBiasResult``)."""

    @property
    def value(self) -> float: ...

    @property
    def ci(self) -> ConfidenceInterval: ...


#: An estimate that was not computed (shown as ``n/a``, ``null`` in the sidecar).
NAN_ESTIMATE = Estimate(math.nan, ConfidenceInterval(math.nan, math.nan, 0.95, "not computed"))


@dataclass(frozen=True)
class Cell:
    """One table cell; ``path`` and ``value`` are set for numbers, ``css`` is a class."""

    text: str
    path: str = ""
    value: Any = None
    css: str = ""


@dataclass(frozen=True)
class Table:
    """A sortable table."""

    id: str
    caption: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]


@dataclass(frozen=True)
class Fig:
    """A figure: inline SVG and a caption saying what to look for."""

    id: str
    title: str
    caption: str
    svg: str


@dataclass(frozen=True)
class Section:
    """A titled part of the page."""

    id: str
    title: str
    figures: tuple[Fig, ...] = ()
    tables: tuple[Table, ...] = ()
    notes: tuple[str, ...] = ()


def finite(x: Any) -> bool:
    """True for a finite number (not a bool, not ``None``)."""
    return (isinstance(x, int | float | np.integer | np.floating) and not isinstance(x, bool)
            and math.isfinite(x))


def fmt(x: Any, digits: int = 3) -> str:
    """``x`` with ``digits`` decimals, ``n/a`` when undefined."""
    return f"{x:.{digits}f}" if finite(x) else "n/a"


def fmt_p(p: Any) -> str:
    """A p-value: three decimals, ``< 0.001`` below, ``n/a`` when undefined."""
    if not finite(p):
        return "n/a"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def fmt_ci(est: HasCI) -> str:
    """``value [low, high]`` (one decimal from 10 on), the value alone without a CI."""
    digits = 1 if math.isfinite(est.value) and abs(est.value) >= 10 else 3
    if not math.isfinite(est.ci.low) or not math.isfinite(est.ci.high):
        return fmt(est.value, digits)
    return f"{fmt(est.value, digits)} [{fmt(est.ci.low, digits)}, {fmt(est.ci.high, digits)}]"


def json_value(x: Any) -> Any:
    """``x`` as strict JSON values (non-finite floats as ``None``), recursively."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, np.generic):
        return json_value(x.item())
    if isinstance(x, Mapping):
        return {str(k): json_value(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [json_value(v) for v in x]
    return x


def num(path: str, value: Any, text: str) -> Markup:
    """A number in running text, tagged with its sidecar path."""
    return Markup('<span class="num" data-path="{}" data-value="{}">{}</span>').format(
        path, json.dumps(json_value(value)), text
    )


def ci_num(path: str, est: HasCI) -> Markup:
    """An estimate with its CI in running text (tagged with ``path/value``)."""
    return num(f"{path}/value", est.value, fmt_ci(est))


def num_cell(path: str, value: Any, text: str) -> Cell:
    """A number in a table, tagged with its sidecar path; ``n/a`` when undefined."""
    return Cell(text, path, value) if finite(value) else Cell("n/a", path, None)


def ci_cell(path: str, est: HasCI) -> Cell:
    """An estimate with its CI in a table (tagged with ``path/value``)."""
    return Cell(fmt_ci(est), f"{path}/value", est.value)


def p_cell(path: str, raw: float, holm: float) -> Cell:
    """The Holm-adjusted p-value when there is one, else the raw one."""
    if math.isfinite(holm):
        return Cell(fmt_p(holm), f"{path}/pvalue_holm", holm)
    return Cell(fmt_p(raw), f"{path}/pvalue", raw)


def span(values: Sequence[int]) -> str:
    """``lo to hi`` (or the one value)."""
    lo, hi = min(values), max(values)
    return str(lo) if lo == hi else f"{lo} to {hi}"


def levels(values: Sequence[float]) -> str:
    """The distinct values, sorted, comma-separated."""
    return ", ".join(f"{v:g}" for v in sorted(set(values)))
