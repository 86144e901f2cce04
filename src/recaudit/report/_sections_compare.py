"""The report's model-comparison section: a positional run folder with ``compare.json``.

A run with several models writes ``compare.json``
(:class:`recaudit.positional.RunComparisons`): every pair of models within each cell,
paired on the same queries and orders, the p-values and intervals of each measure
adjusted across the whole run. The page shows a forest plot of the PB differences with
their adjusted intervals, a table of every measure, and the verdict names the less
biased model (:func:`._plain.comparison_verdict`). Every number cell points into the
sidecar's ``comparisons`` list (``data-path``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from ..positional import CellComparison, RunComparisons
from ._page import Cell, Fig, Section, Table, finite, fmt_p, num_cell
from ._plots import _domain, _frame
from ._svg import BandScale, LinearScale, text_width

__all__ = ["Difference", "comparison_section", "forest_plot"]

_MEASURE_NAMES = {"pb_plugin": "PB", "first": "first-position lift", "spb": "sPB",
                  "soft": "soft bias", "positional_share": "position-driven share"}
_INK, _LIGHT = "#0072B2", "#9ab8d6"


def _cell_label(r: CellComparison) -> str:
    c = r.cell
    parts = [f"k={c['k']}" if "k" in c else "",
             f"T={float(c['temperature']):g}" if "temperature" in c else "",
             str(c["condition"]) if c.get("condition") not in (None, "permutation") else ""]
    return ", ".join(p for p in parts if p)


def _label(r: CellComparison, many_cells: bool) -> str:
    pair = f"{r.comparison.a} - {r.comparison.b}"
    return f"{pair} ({_cell_label(r)})" if many_cells else pair


class Difference(Protocol):
    """What a forest plot draws of one comparison (:class:`recaudit.positional.Comparison`,
    :class:`recaudit.fairness.MetricComparison`)."""

    @property
    def difference(self) -> float: ...
    @property
    def ci_low(self) -> float: ...
    @property
    def ci_high(self) -> float: ...
    @property
    def ci_low_adjusted(self) -> float: ...
    @property
    def ci_high_adjusted(self) -> float: ...
    @property
    def pvalue_adjusted(self) -> float: ...


def forest_plot(labels: Sequence[str], rows: Sequence[Difference], *, xlabel: str,
                own: str, fig_id: str) -> str:
    """One difference per row: the point, the family-adjusted interval (dark) and the
    row's own interval (light, legend ``own``), against the vertical no-difference
    line; a row whose difference is undefined is left empty."""
    left = max(text_width(label) for label in labels) + 24
    canvas, (box,) = _frame(1, ncols=1, height=max(60.0, 26.0 * len(rows)), left=left,
                            legend=[("-", _INK, "", "adjusted CI (the family's level)"),
                                    ("-", _LIGHT, "", own),
                                    ("--", "#555555", "", "no difference (0)")])
    values = [v for c in rows for v in (c.difference, c.ci_low_adjusted, c.ci_high_adjusted,
                                        c.ci_low, c.ci_high)]
    lo, hi = _domain(values, include=(0.0,))
    x = LinearScale(lo, hi, box[0], box[0] + box[2])
    y = BandScale(len(rows), box[1], box[1] + box[3], tuple(labels))
    p = canvas.panel(box, x, y, xlabel=xlabel)
    p.line([0.0, 0.0], [-0.5, len(rows) - 0.5], color="#555555", dash="5 3", width=1.1)
    for i, c in enumerate(rows):
        if not math.isfinite(c.difference):
            continue
        p.errorbar(0, i + 0.18, c.ci_low, c.ci_high, color=_LIGHT, horizontal=True)
        p.errorbar(0, i, c.ci_low_adjusted, c.ci_high_adjusted, color=_INK, horizontal=True)
        p.point(c.difference, i, color=_INK, r=3.4,
                title=f"{labels[i]}: {c.difference:+.3f}, adjusted CI "
                      f"[{c.ci_low_adjusted:+.3f}, {c.ci_high_adjusted:+.3f}], "
                      f"adjusted p {fmt_p(c.pvalue_adjusted)}")
    return canvas.svg(fig_id)


def comparison_section(comparisons: RunComparisons, *, alpha: float) -> Section:
    """The forest plot of PB differences, the table of every measure, the method."""
    rows = list(comparisons.rows)
    many_cells = len({tuple(sorted(r.cell.items())) for r in rows}) > 1
    table_rows = []
    for i, r in enumerate(rows):
        c, path = r.comparison, f"comparisons/{i}"
        ci = (f"[{c.ci_low_adjusted:+.3f}, {c.ci_high_adjusted:+.3f}]"
              if finite(c.ci_low_adjusted) and finite(c.ci_high_adjusted) else "n/a")
        table_rows.append((
            Cell(_cell_label(r)), Cell(c.a), Cell(c.b),
            Cell(_MEASURE_NAMES.get(c.measure, c.measure)),
            num_cell(f"{path}/value_a", c.value_a, f"{c.value_a:.3f}"),
            num_cell(f"{path}/value_b", c.value_b, f"{c.value_b:.3f}"),
            num_cell(f"{path}/difference", c.difference, f"{c.difference:+.3f}"),
            num_cell(f"{path}/ci_low_adjusted", c.ci_low_adjusted, ci),
            num_cell(f"{path}/pvalue_adjusted", c.pvalue_adjusted, fmt_p(c.pvalue_adjusted))
            if finite(c.pvalue_adjusted) else Cell("not identified"),
            Cell("yes" if c.paired else "no"),
        ))
    pb = [r for r in rows if r.comparison.measure == "pb_plugin"]
    first = rows[0].comparison if rows else None
    level = "" if first is None else (
        f"{first.adjust}: intervals at the family's level (Bonferroni-simultaneous with "
        "holm, false-coverage-rate with bh)")
    figures = (Fig(
        "fig-compare", "Which model is less position-biased",
        "Difference in PB between two models (a - b) in each cell, paired on the same "
        "queries and orders, with the interval adjusted for every comparison on this page "
        "(dark) and the pair's own 95% interval (light). An interval entirely left of the "
        "dashed line: a is less position-biased; entirely right: b is; across it: no "
        "clear difference.", forest_plot(
            [_label(r, many_cells) for r in pb], [r.comparison for r in pb],
            xlabel="PB(a) - PB(b): below 0, a is less position-biased",
            own="the pair's own 95% CI", fig_id="fig-compare")),) if pb else ()
    table = Table(
        "tab-compare",
        "Every pair of models and measure: each model's value, the difference a - b, its "
        f"adjusted interval and adjusted p-value ({level}), and whether the design was "
        "paired (same queries and orders).",
        ("cell", "a", "b", "measure", "a's value", "b's value", "a - b", "adjusted CI",
         "adjusted p", "paired"),
        tuple(table_rows),
    )
    notes = (
        f"Tests at alpha = {alpha}: a paired query bootstrap of each difference "
        "(queries resampled jointly for both models), the centred bootstrap test of no "
        "difference, p-values adjusted across every pair, cell and measure family of "
        "the run; sPB, soft bias and the position-driven share are refitted on 200 "
        "resamples. Method and validation: docs/validation-positional.md, \"Comparing "
        "systems\".",
    )
    return Section("compare", "Comparing the models", figures=figures, tables=(table,),
                   notes=notes)
