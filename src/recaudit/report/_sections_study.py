"""The report's study section: a positional run folder with ``study.json``.

``recaudit positional study`` writes ``study.json`` beside ``analysis.json``; when it is
there, the positional report gains the per-cell metrics with CIs, sPB beside its
decoding-only noise floor, and the Wilcoxon, IoU and dispersion tables. Every number
cell points into the sidecar's ``study`` object (``data-path``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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


def _est_cell(path: str, row: Mapping[str, Any] | None) -> Cell:
    if row is None:
        return Cell("-")
    est, lo, hi = row.get("estimate"), row.get("ci_low"), row.get("ci_high")
    if not finite(est):
        return Cell("n/a", f"{path}/estimate", None)
    digits = 1 if abs(float(est or 0.0)) >= 10 else 3
    text = fmt(est, digits) + (f" [{fmt(lo, digits)}, {fmt(hi, digits)}]"
                                if finite(lo) and finite(hi) else "")
    return Cell(text, f"{path}/estimate", est)


def _p_cell(path: str, row: Mapping[str, Any] | None) -> Cell:
    if row is None:
        return Cell("-")
    p = row.get("p_holm")
    if finite(p):
        return Cell(fmt_p(p), f"{path}/p_holm", p)
    return Cell(fmt_p(row.get("p_value")), f"{path}/p_value", row.get("p_value"))


def _cell_value(metric: str, path: str, row: Mapping[str, Any] | None) -> Cell:
    if metric == "pob_icm":
        return _p_cell(path, row)
    if metric == "pob_unbp_L" and row is not None and finite(row.get("estimate")):
        p = row.get("p_holm") if finite(row.get("p_holm")) else row.get("p_value")
        return Cell(f"{100 * row['estimate']:.2f} pp ({fmt_p(p)})", f"{path}/estimate",
                    row["estimate"])
    return _est_cell(path, row)


def _row_index(study: Mapping[str, Any]) -> dict[tuple[Any, ...], int]:
    """``(analysis, model, k, temperature, condition, metric)`` -> index in ``rows``."""
    return {(r["analysis"], r["model"], r["k"], r["temperature"], r["condition"],
             r["metric"]): i for i, r in enumerate(study.get("rows") or [])}


def _cell_row(study: Mapping[str, Any], index: Mapping[tuple[Any, ...], int],
              cell: tuple[Any, ...], base: str) -> tuple[Cell, ...]:
    rows = list(study.get("rows") or [])

    def get(analysis: str, metric: str) -> tuple[str, Mapping[str, Any] | None]:
        i = index.get((analysis, *cell, metric))
        return (f"{base}/rows/{i}", None) if i is None else (f"{base}/rows/{i}", rows[i])

    out = [Cell(str(cell[0])), Cell(str(cell[1]), value=cell[1]),
           Cell(f"{cell[2]:g}"), Cell(str(cell[3]))]
    for metric in _CELL_METRICS:
        path, row = get("full", metric)
        out.append(_cell_value(metric, path, row))
    path, row = get("complete_case", "spb")
    out.append(_est_cell(path, row))
    path, row = get("full", "pb")
    out.append(Cell(str(row["n_queries"]) if row else "-"))
    return tuple(out)


def _cell_notes(study: Mapping[str, Any]) -> tuple[str, ...]:
    rows = list(study.get("rows") or [])
    skipped = list(study.get("skipped") or [])
    reasons = sorted({f"{s.get('what')}: {s.get('reason')}" for s in skipped})
    settings = study.get("settings") or {}
    return (
        f"Complete cases: {settings.get('n_queries_complete', 'n/a')} queries; "
        f"{settings.get('n_queries_with_discards', 'n/a')} with a discarded generation are "
        "left out of the complete-case analysis.",
        *(f"Not computed - {r}" for r in reasons),
        *sorted({f"POB-ICM: {r['note']}" for r in rows if r.get("metric") == "pob_icm"
                 and str(r.get("note") or "").startswith(ICM_NO_REPEATS_START)}),
    )


def cells_section(study: Mapping[str, Any], *, base: str = "study") -> Section:
    """Every cell of the study grid (full analysis, complete-case sPB beside it)."""
    rows = list(study.get("rows") or [])
    index = _row_index(study)
    cells = sorted({(r["model"], r["k"], r["temperature"], r["condition"]) for r in rows
                    if r["metric"] == "pb"}, key=lambda c: (str(c[0]), c[1], c[2], str(c[3])))
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


def _comparison_row(c: Mapping[str, Any], p: str) -> tuple[Cell, ...]:
    hl = {"estimate": c.get("effect"), "ci_low": c.get("ci_low"), "ci_high": c.get("ci_high")}
    iou = {"estimate": c.get("iou"), "ci_low": c.get("iou_ci_low"),
           "ci_high": c.get("iou_ci_high")}
    return (
        Cell(str(c["analysis"])), Cell(str(c["model"])), Cell(str(c["k"]), value=c["k"]),
        Cell(f"{c['temperature']:g}"), Cell(str(c["comparison"])),
        Cell(f"{c['n_used']} / {c['n_pairs']}", f"{p}/n_used", c["n_used"]),
        Cell(f"{fmt(c.get('mean_a'))} vs {fmt(c.get('mean_b'))}", f"{p}/mean_a",
             c.get("mean_a")),
        Cell(_est_cell(p, hl).text, f"{p}/effect", c.get("effect")),
        Cell(fmt_p(c.get("pvalue")), f"{p}/pvalue", c.get("pvalue")),
        Cell(fmt_p(c.get("pvalue_holm")), f"{p}/pvalue_holm", c.get("pvalue_holm")),
        Cell(_est_cell(p, iou).text, f"{p}/iou", c.get("iou")),
    )


def comparisons_section(study: Mapping[str, Any], *, base: str = "study") -> Section:
    """The paired counterfactual comparisons (Wilcoxon, Hodges-Lehmann, IoU)."""
    rows = tuple(_comparison_row(c, f"{base}/comparisons/{i}")
                 for i, c in enumerate(study.get("comparisons") or []))
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


def _dispersion_row(d: Mapping[str, Any], p: str) -> tuple[Cell, ...]:
    slope = {"estimate": d.get("slope"), "ci_low": d.get("ci_low"), "ci_high": d.get("ci_high")}
    return (
        Cell(str(d["analysis"])), Cell(str(d["model"])), Cell(str(d["k"]), value=d["k"]),
        Cell(f"{d['temperature']:g}"), Cell(str(d["condition"])),
        Cell(_est_cell(p, slope).text, f"{p}/slope", d.get("slope")),
        Cell(fmt_p(d.get("pvalue")), f"{p}/pvalue", d.get("pvalue")),
        Cell(fmt_p(d.get("pvalue_holm")), f"{p}/pvalue_holm", d.get("pvalue_holm")),
        Cell(str(d["n_queries"]), f"{p}/n_queries", d["n_queries"]),
    )


def dispersion_section(study: Mapping[str, Any], *, base: str = "study") -> Section:
    """The retrieval-score dispersion regressions (WLS, HC1)."""
    rows = tuple(_dispersion_row(d, f"{base}/dispersion/{i}")
                 for i, d in enumerate(study.get("dispersion") or []))
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


def study_sections(study: Mapping[str, Any], *, base: str = "study") -> list[Section]:
    """The study's sections (cells, comparisons, dispersion), in page order."""
    return [cells_section(study, base=base), comparisons_section(study, base=base),
            dispersion_section(study, base=base)]
