"""The report's sequential section: a positional run folder with ``sequential.json``.

``recaudit positional run --sequential`` writes ``sequential.json`` (one object per
(model, k, temperature, condition) cell: the e-process decision, evaluations used
against the budget, E at stopping, the path of E at round ends, the per-position
confidence sequences at stopping). The page shows the decision table, the E-value
paths and the confidence sequences; every number cell points into the sidecar's
``sequential`` object (``data-path``).
"""

from __future__ import annotations

from ..audit import SequentialAudit, SequentialCell, SequentialPb
from . import _plots
from ._page import Cell, Fig, Section, Table, finite, fmt_p, num_cell

__all__ = ["sequential_sections"]

_DECISIONS = {
    "rejected": "rejected uniformity (stopped)",
    "budget_spent": "not rejected, budget spent",
    "plan_exhausted": "not rejected, every planned evaluation used",
    "running": "running (not finished)",
    "ci_width_reached": "not rejected, PB known to the requested CI width (stopped)",
}


def _pb_cell(path: str, pb: SequentialPb | None) -> Cell:
    """PB with its CI at the cell's last look (``--ci-width`` runs)."""
    if pb is None or not (finite(pb.value) and finite(pb.ci_low) and finite(pb.ci_high)):
        return Cell("n/a", f"{path}/value", None)
    return Cell(f"{pb.value:.3f} [{pb.ci_low:.3f}, {pb.ci_high:.3f}]", f"{path}/value",
                pb.value)


def _decision_row(c: SequentialCell, p: str, key: tuple[Cell, ...], level: float,
                  width: float | None) -> tuple[Cell, ...]:
    """The decision table's row of cell ``c`` (``p``: its sidecar path)."""
    ev = c.evidence
    used = 0 if ev is None else ev.evaluations_used
    valid = None if ev is None else ev.valid_evaluations
    e = None if ev is None else ev.e_value
    thr = 1.0 / level if ev is None else ev.threshold
    pvalue = None if ev is None else ev.pvalue
    return (
        *key,
        Cell(_DECISIONS.get(c.decision, c.decision),
             css="reject" if c.decision == "rejected" else ""),
        num_cell(f"{p}/evaluations_used", used, str(used)),
        num_cell(f"{p}/budget", c.budget, str(c.budget)),
        num_cell(f"{p}/valid_evaluations", valid, str(valid)),
        num_cell(f"{p}/e_value", e, f"{e:.3g} / {thr:.3g}" if finite(e) else ""),
        num_cell(f"{p}/pvalue", pvalue, fmt_p(pvalue)),
        *((_pb_cell(f"{p}/pb", None if ev is None else ev.pb),) if width is not None
          else ()),
    )


def _cs_rows(c: SequentialCell, p: str, key: tuple[Cell, ...]) -> list[tuple[Cell, ...]]:
    """The confidence-sequence rows of cell ``c``: one per position."""
    ev = c.evidence
    if ev is None:
        return []
    rows = []
    for j, (lo, hi) in enumerate(zip(ev.cs_low, ev.cs_high, strict=False)):
        n = ev.counts[j] if j < len(ev.counts) else None
        rows.append((*key, Cell(str(j + 1), value=j + 1),
                     num_cell(f"{p}/counts/{j}", n, str(n)),
                     num_cell(f"{p}/cs_low/{j}", lo, f"{lo:.3f}" if finite(lo) else ""),
                     num_cell(f"{p}/cs_high/{j}", hi, f"{hi:.3f}" if finite(hi) else "")))
    return rows


def sequential_sections(doc: SequentialAudit, *, base: str = "sequential") -> list[Section]:
    """The sequential decision table, the E-value paths and the confidence sequences."""
    cells = doc.cells
    level = doc.alpha_per_cell
    options = doc.options
    width = options.ci_width
    rows, cs_rows = [], []
    for i, c in enumerate(cells):
        p = f"{base}/cells/{i}"
        key = (Cell(c.model), Cell(str(c.k), value=c.k), Cell(f"{c.temperature:g}"),
               Cell(c.condition))
        rows.append(_decision_row(c, p, key, level, width))
        cs_rows.extend(_cs_rows(c, p, key))
    n_rej = sum(c.decision == "rejected" for c in cells)
    alpha = options.alpha
    notes = (
        f"{n_rej} of {len(cells)} cell(s) rejected \"the selected position is uniform\" with "
        f"an anytime-valid test (e-process, Ville's inequality) at alpha = {alpha} across "
        f"cells (Bonferroni: {level:.3g} per cell, threshold E >= {1 / level:.3g}). After a "
        "sequential stop the fixed-sample p-values elsewhere on this page are descriptive "
        "only; this decision is the valid test.",
        f"Budget: at most {options.max_evaluations} evaluations per cell, in "
        f"rounds of {options.round_evaluations}; method {options.method}.",
        *((f"Each cell stopped once the 95% CI of its PB was at most {width:g} wide "
           "(--ci-width), rejected or not; the interval's coverage after such a stop is "
           "measured in docs/exact-and-sequential.md.",) if width is not None else ()),
    )
    table = Table(
        "tab-sequential",
        "Sequential decision per cell: evaluations used against the cell's maximum "
        "(budget), valid (non-discarded) evaluations the e-process saw, E at stopping "
        "against the rejection threshold 1/alpha, and the anytime-valid p-value "
        "min(1, 1/max E).",
        ("model", "k", "T", "condition", "decision", "evaluations used", "max evaluations",
         "valid evaluations", "E at stop / threshold", "anytime p",
         *(("PB at stop [95% CI]",) if width is not None else ())),
        tuple(rows),
    )
    cs_table = Table(
        "tab-sequential-cs",
        "Confidence sequences at stopping: for each cell and prompt position, the count of "
        "selections and the anytime-valid simultaneous interval for the position's "
        "selection probability (uniform = 1/k).",
        ("model", "k", "T", "condition", "position", "selections", "CS low", "CS high"),
        tuple(cs_rows),
    )
    figures: tuple[Fig, ...] = ()
    if any(c.evidence is not None and c.evidence.log_e_path for c in cells):
        figures = (Fig(
            "fig-sequential",
            "E-value paths",
            "The e-process of each cell after every round (log10 scale), against the number "
            "of valid evaluations. A cell stops and rejects uniformity when its path reaches "
            "the dashed threshold 1/alpha (per cell); under no positional bias the path "
            "stays below it with probability >= 1 - alpha at all times. Filled end marker: "
            "rejected; open: not (yet).",
            _plots.e_value_paths(cells, alpha_per_cell=level, fig_id="fig-sequential"),
        ),)
    return [Section("sequential", "Sequential audit (anytime-valid)", figures=figures,
                    tables=(table, cs_table) if cs_rows else (table,), notes=notes)]
