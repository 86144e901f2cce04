"""The report's study section: a positional run folder with ``study.json``.

``recaudit positional study`` writes ``study.json`` beside ``analysis.json``; when it is
there, the positional report gains the per-cell metrics with CIs, sPB beside its
decoding-only noise floor, and the Wilcoxon, IoU and dispersion tables. Every number
cell points into the sidecar's ``study`` object (``data-path``).
"""

from __future__ import annotations

from ..positional import StudyComparison, StudyDispersion, StudyFile, StudyRow
from ._page import Cell, Section, Table, finite, fmt, fmt_p

#: How ``recaudit.positional._icm.MSG_ICM_NO_REPEATS`` starts (the study rows carry the
#: message as text; a test keeps the two in step).
ICM_NO_REPEATS_START = "no permutation column repeats"

__all__ = ["cells_section", "comparisons_section", "dispersion_section", "study_sections"]

_CELL_METRICS = ("pob_icm", "pob_unbp_L", "ps", "pb", "spb", "spb_noise_floor")
_CELL_LABELS = {
    "pob_icm": "POB-ICM p (Holm)",
    "pob_unbp_L": "POB-UNBP L (Holm p)",
    "ps": "PS [95% CI]",
    "pb": "PB [95% CI]",
    "spb": "sPB [95% CI]",
    "spb_noise_floor": "sPB noise floor [95% CI]",
}
#: A cell of the grid: (model, k, temperature, condition).
_Key = tuple[str, int, float, str]


def _est_text(est: float, lo: float, hi: float) -> str:
    """``est [lo, hi]`` (one decimal from 10 on; the value alone without a CI)."""
    digits = 1 if abs(est) >= 10 else 3
    return fmt(est, digits) + (f" [{fmt(lo, digits)}, {fmt(hi, digits)}]"
                               if finite(lo) and finite(hi) else "")


def _est_cell(path: str, row: StudyRow | None) -> Cell:
    if row is None:
        return Cell("-")
    if not finite(row.estimate):
        return Cell("n/a", f"{path}/estimate", None)
    return Cell(_est_text(row.estimate, row.ci_low, row.ci_high), f"{path}/estimate",
                row.estimate)


def _p_cell(path: str, row: StudyRow | None) -> Cell:
    if row is None:
        return Cell("-")
    if finite(row.p_holm):
        return Cell(fmt_p(row.p_holm), f"{path}/p_holm", row.p_holm)
    return Cell(fmt_p(row.p_value), f"{path}/p_value", row.p_value)


def _cell_value(metric: str, path: str, row: StudyRow | None) -> Cell:
    if metric == "pob_icm":
        return _p_cell(path, row)
    if metric == "pob_unbp_L" and row is not None and finite(row.estimate):
        p = row.p_holm if finite(row.p_holm) else row.p_value
        return Cell(f"{100 * row.estimate:.2f} pp ({fmt_p(p)})", f"{path}/estimate",
                    row.estimate)
    return _est_cell(path, row)


def _row_index(study: StudyFile) -> dict[tuple[str, str, int, float, str, str], int]:
    """``(analysis, model, k, temperature, condition, metric)`` -> index in ``rows``."""
    return {(r.analysis, r.model, r.k, r.temperature, r.condition, r.metric): i
            for i, r in enumerate(study.rows)}


def _cell_row(study: StudyFile, index: dict[tuple[str, str, int, float, str, str], int],
              cell: _Key, base: str) -> tuple[Cell, ...]:
    def get(analysis: str, metric: str) -> tuple[str, StudyRow | None]:
        i = index.get((analysis, *cell, metric))
        return (f"{base}/rows/{i}", None if i is None else study.rows[i])

    out = [Cell(cell[0]), Cell(str(cell[1]), value=cell[1]), Cell(f"{cell[2]:g}"),
           Cell(cell[3])]
    for metric in _CELL_METRICS:
        path, row = get("full", metric)
        out.append(_cell_value(metric, path, row))
    path, row = get("complete_case", "spb")
    out.append(_est_cell(path, row))
    path, row = get("full", "pb")
    out.append(Cell(str(row.n_queries) if row else "-"))
    return tuple(out)


def _cell_notes(study: StudyFile) -> tuple[str, ...]:
    reasons = sorted({f"{s.what}: {s.reason}" for s in study.skipped})
    settings = study.settings
    return (
        f"Complete cases: {settings.n_queries_complete} queries; "
        f"{settings.n_queries_with_discards} with a discarded generation are "
        "left out of the complete-case analysis.",
        *(f"Not computed - {r}" for r in reasons),
        *sorted({f"POB-ICM: {r.note}" for r in study.rows if r.metric == "pob_icm"
                 and r.note.startswith(ICM_NO_REPEATS_START)}),
    )


def cells_section(study: StudyFile, *, base: str = "study") -> Section:
    """Every cell of the study grid (full analysis, complete-case sPB beside it)."""
    index = _row_index(study)
    cells = sorted({(r.model, r.k, r.temperature, r.condition) for r in study.rows
                    if r.metric == "pb"})
    table = Table(
        "tab-study-cells",
        "Every cell of the study grid (full analysis): POB-ICM and POB-UNBP with Holm across "
        "cells, PS, PB and sPB with query-level bootstrap CIs; the sPB noise floor is the "
        "decoding-only cell at the same model, k and temperature (same relevance threshold); "
        "the complete-case sPB drops queries with any discarded generation.",
        ("model", "k", "T", "condition", *(_CELL_LABELS[m] for m in _CELL_METRICS),
         "sPB, complete case", "queries"),
        tuple(_cell_row(study, index, cell, base) for cell in cells),
    )
    return Section("study-cells", "Study grid: every cell", tables=(table,),
                   notes=_cell_notes(study))


def _comparison_row(c: StudyComparison, p: str) -> tuple[Cell, ...]:
    return (
        Cell(c.analysis), Cell(c.model), Cell(str(c.k), value=c.k),
        Cell(f"{c.temperature:g}"), Cell(c.comparison),
        Cell(f"{c.n_used} / {c.n_pairs}", f"{p}/n_used", c.n_used),
        Cell(f"{fmt(c.mean_a)} vs {fmt(c.mean_b)}", f"{p}/mean_a", c.mean_a),
        Cell(_est_text(c.effect, c.ci_low, c.ci_high) if finite(c.effect) else "n/a",
             f"{p}/effect", c.effect),
        Cell(fmt_p(c.pvalue), f"{p}/pvalue", c.pvalue),
        Cell(fmt_p(c.pvalue_holm), f"{p}/pvalue_holm", c.pvalue_holm),
        Cell(_est_text(c.iou, c.iou_ci_low, c.iou_ci_high) if finite(c.iou) else "n/a",
             f"{p}/iou", c.iou),
    )


def comparisons_section(study: StudyFile, *, base: str = "study") -> Section:
    """The paired counterfactual comparisons (Wilcoxon, Hodges-Lehmann, IoU)."""
    rows = tuple(_comparison_row(c, f"{base}/comparisons/{i}")
                 for i, c in enumerate(study.comparisons))
    return Section(
        "study-comparisons",
        "Counterfactual comparisons (paired, per instance)",
        tables=(Table(
            "tab-study-comparisons",
            "Paired Wilcoxon signed-rank tests (Wilcoxon 1945) of per-instance sPB "
            "differences a - b, unchanged instances excluded (n used / pairs), Holm across "
            "models; effect = Hodges-Lehmann shift with its signed-rank CI. IoU: mean overlap "
            "of the per-query relevance sets of the two conditions (1 = same sets).",
            ("analysis", "model", "k", "T", "comparison", "n used / pairs", "mean sPB a vs b",
             "HL shift [95% CI]", "p", "p (Holm)", "relevance IoU [95% CI]"),
            rows,
        ),) if rows else (),
        notes=() if rows else ("The grid allows no paired comparison (see below).",),
    )


def _dispersion_row(d: StudyDispersion, p: str) -> tuple[Cell, ...]:
    return (
        Cell(d.analysis), Cell(d.model), Cell(str(d.k), value=d.k),
        Cell(f"{d.temperature:g}"), Cell(d.condition),
        Cell(_est_text(d.slope, d.ci_low, d.ci_high) if finite(d.slope) else "n/a",
             f"{p}/slope", d.slope),
        Cell(fmt_p(d.pvalue), f"{p}/pvalue", d.pvalue),
        Cell(fmt_p(d.pvalue_holm), f"{p}/pvalue_holm", d.pvalue_holm),
        Cell(str(d.n_queries), f"{p}/n_queries", d.n_queries),
    )


def dispersion_section(study: StudyFile, *, base: str = "study") -> Section:
    """The retrieval-score dispersion regressions (WLS, HC1)."""
    rows = tuple(_dispersion_row(d, f"{base}/dispersion/{i}")
                 for i, d in enumerate(study.dispersion))
    return Section(
        "study-dispersion",
        "Retrieval-score dispersion",
        tables=(Table(
            "tab-study-dispersion",
            "Weighted least squares of the % of a query's valid evaluations outside its "
            "relevance set on the standardized SD of its candidates' retrieval scores "
            "(weights = valid evaluations); slope in percentage points per SD, two-sided Wald "
            "tests with HC1 standard errors (White 1980; MacKinnon & White 1985), Holm across "
            "all slopes of an analysis.",
            ("analysis", "model", "k", "T", "condition", "slope, pp per SD [95% CI]", "p",
             "p (Holm)", "queries"),
            rows,
        ),) if rows else (),
        notes=() if rows else ("No dispersion regression (see below).",),
    )


def study_sections(study: StudyFile, *, base: str = "study") -> list[Section]:
    """The study's sections (cells, comparisons, dispersion), in page order."""
    return [cells_section(study, base=base), comparisons_section(study, base=base),
            dispersion_section(study, base=base)]
