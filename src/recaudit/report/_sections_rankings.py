"""The report's ranked-list section: a ``[prompt] answer = "ranking"`` run folder.

Such a run writes ``topn.json`` (:class:`recaudit.positional.TopNGroups`, one cell per
model, k, temperature and condition): Kendall's tau between prompt order and output
order, the rank bias RB with its permutation test (Holm across cells) and the
displacement of each prompt position's item from its order-free mean rank. The rest
of the page reads the lists' first items (the evaluations' ``selected_position``).
Every number cell points into the sidecar's ``rankings`` list (``data-path``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..positional import RankingGroup, TopNGroups
from ._page import Cell, Fig, Section, Table, ci_cell, fmt_p
from ._plots import _ci_point, _domain, _frame, _lin, _short, _values

__all__ = ["rankings_section"]


def _name(g: RankingGroup) -> str:
    keys = g.group
    parts = [str(keys.get("model", ""))]
    if "temperature" in keys:
        parts.append(f"T={float(keys['temperature']):g}")
    if keys.get("condition") not in (None, "permutation"):
        parts.append(str(keys["condition"]))
    return ", ".join(p for p in parts if p)


def _figure(groups: Sequence[RankingGroup]) -> str:
    """Displacement of each prompt position's item, with CIs, one panel per cell."""
    cells = [g for g in groups if g.result is not None]
    canvas, boxes = _frame(len(cells), ncols=4, height=150,
                           legend=[("--", "#555555", "", "no position effect (0)")])
    yd = _domain([v for g in cells for v in _values(g.result.displacement)  # type: ignore[union-attr]
                  ], include=(0.0,))
    for i, (box, g) in enumerate(zip(boxes, cells, strict=True)):
        res = g.result
        assert res is not None
        x, y = _lin(box, (0.5, res.k + 0.5), yd)
        p = canvas.panel(box, x, y, title=_short(_name(g)), xlabel="prompt position",
                         ylabel="rank - order-free mean" if i % 4 == 0 else "")
        p.hline(0.0)
        for pos, est in enumerate(res.displacement, start=1):
            _ci_point(p, pos, est, color="#0072B2", r=2.6,
                      title=f"{_name(g)}, position {pos}: displacement")
    return canvas.svg("fig-rankings")


def _plain_words(groups: Sequence[RankingGroup], alpha: float) -> str:
    """One sentence per finding, without acronyms first."""
    moved = [g for g in groups if g.result is not None and g.pvalue_holm <= alpha]
    if not moved:
        return ("In no cell did the rank an item received depend detectably on where it was "
                f"shown (rank-bias test, Holm across cells, alpha = {alpha}).")
    g = max(moved, key=lambda c: abs(c.result.kendall.value))  # type: ignore[union-attr]
    res = g.result
    assert res is not None
    first, last = res.displacement[0].value, res.displacement[-1].value
    return (f"The prompt order moved the rankings in {len(moved)} of {len(groups)} cell(s). "
            f"Strongest in {_name(g)}: the item shown first was ranked on average "
            f"{abs(first):.2f} places {'better' if first < 0 else 'worse'} than it would be "
            f"without a position effect, the item shown last {abs(last):.2f} places "
            f"{'better' if last < 0 else 'worse'} (Kendall's tau between prompt order and "
            f"output order {res.kendall.value:.3f}).")


def rankings_section(groups: TopNGroups, *, alpha: float) -> Section:
    """The ranked-list table, the displacement figure and the plain-words finding."""
    rows = []
    for i, g in enumerate(groups.groups):
        path = f"rankings/{i}/result"
        res = g.result
        if res is None:
            rows.append((Cell(_name(g)), Cell(str(g.group.get("k", ""))),
                         Cell(g.reason or "no ranking"), Cell(""), Cell(""), Cell(""),
                         Cell("")))
            continue
        rows.append((
            Cell(_name(g)), Cell(str(res.k), value=res.k),
            Cell(f"{res.n_evaluations} / {res.n_discarded}", f"{path}/n_evaluations",
                 res.n_evaluations),
            ci_cell(f"{path}/kendall_tau", res.kendall),
            ci_cell(f"{path}/rank_bias", res.rank_bias),
            Cell(fmt_p(g.pvalue_holm), f"rankings/{i}/pvalue_holm", g.pvalue_holm,
                 css="reject" if g.pvalue_holm <= alpha else ""),
            ci_cell(f"{path}/top1_pb", res.top1_pb),
        ))
    table = Table(
        "tab-rankings",
        "Ranked-list answers per cell: rankings kept / discarded, Kendall's tau between "
        "prompt order and output order (> 0: earlier shown, ranked better), the rank bias "
        "RB (0: no position effect) with its within-query permutation test (Holm across "
        "cells) and the top-1 PB of the lists' first items, each with its 95% query-"
        "bootstrap CI.",
        ("cell", "k", "rankings / discarded", "Kendall tau [95% CI]", "RB [95% CI]",
         "RB test p (Holm)", "top-1 PB [95% CI]"),
        tuple(rows),
    )
    figures: tuple[Fig, ...] = ()
    if any(g.result is not None for g in groups.groups):
        figures = (Fig(
            "fig-rankings", "Where each prompt position's item lands in the ranking",
            "Mean rank received by the item shown at each prompt position minus its "
            "order-free expectation (k+1)/2, with 95% CIs: below 0 the position helps "
            "(ranked better than its content alone explains), above 0 it hurts. A flat "
            "line at 0 is no position effect.",
            _figure(groups.groups)),)
    notes = (
        _plain_words(groups.groups, alpha),
        "The other sections read each list's first item as the model's pick (PS, PB, "
        "sPB, POB-ICM, POB-UNBP), comparable with a top-1 audit of the same model; a "
        "discarded ranking (not a permutation of the shown identifiers) is a discard "
        "there too. Method and validation: docs/ranked-lists.md.",
    )
    return Section("rankings", "Ranked-list answers", figures=figures, tables=(table,),
                   notes=notes)
