"""Assemble the report: the sidecar data, the verdict, tables, figures and the page.

Every number printed on the page carries ``data-path`` (where it lives in the sidecar
JSON, ``/``-separated) and ``data-value`` (the number itself, as JSON), so the page and
the sidecar can be checked against each other and tables sort on exact values.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
from markupsafe import Markup

from .. import __version__
from .._read import read_json
from ..exceptions import InputError
from . import _plots
from ._load import (
    METRIC_ORDER,
    FairnessModel,
    FairnessRun,
    Interval,
    Kind,
    PositionalGroup,
    PositionalRun,
    load,
)

__all__ = ["Report", "build_report"]

_DECODING = "decoding"
_SORT_JS = """\
document.querySelectorAll("table.sortable").forEach(function (table) {
  var heads = table.querySelectorAll("thead th");
  heads.forEach(function (th, col) {
    th.tabIndex = 0;
    function sort() {
      var asc = th.getAttribute("aria-sort") !== "ascending";
      heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var numeric = rows.some(function (r) { return r.cells[col].hasAttribute("data-value"); });
      function key(row) {
        var cell = row.cells[col];
        if (!numeric) { return cell.textContent.trim().toLowerCase(); }
        var x = parseFloat(cell.getAttribute("data-value"));
        return isNaN(x) ? null : x;
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === y) { return 0; }
        if (x === null) { return 1; }
        if (y === null) { return -1; }
        return (x < y ? -1 : 1) * (asc ? 1 : -1);
      });
      rows.forEach(function (r) { body.appendChild(r); });
    }
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sort(); } });
  });
});
"""


# ------------------------------------------------------------------ page pieces
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


def _fmt(x: float, digits: int = 3) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def _fmt_p(p: float) -> str:
    if not math.isfinite(p):
        return "n/a"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _fmt_ci(est: Interval) -> str:
    digits = 1 if math.isfinite(est.value) and abs(est.value) >= 10 else 3
    if not math.isfinite(est.ci_low) or not math.isfinite(est.ci_high):
        return _fmt(est.value, digits)
    return f"{_fmt(est.value, digits)} [{_fmt(est.ci_low, digits)}, {_fmt(est.ci_high, digits)}]"


def _json_value(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, np.generic):
        return _json_value(x.item())
    if isinstance(x, Mapping):
        return {str(k): _json_value(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_json_value(v) for v in x]
    return x


def _num(path: str, value: float, text: str) -> Markup:
    """A number in running text, tagged with its sidecar path."""
    return Markup('<span class="num" data-path="{}" data-value="{}">{}</span>').format(
        path, json.dumps(_json_value(value)), text
    )


def _ci_num(path: str, est: Interval) -> Markup:
    return _num(f"{path}/value", est.value, _fmt_ci(est))


def _ci_cell(path: str, est: Interval) -> Cell:
    return Cell(_fmt_ci(est), f"{path}/value", est.value)


def _p_cell(path: str, raw: float, holm: float) -> Cell:
    if math.isfinite(holm):
        return Cell(_fmt_p(holm), f"{path}/pvalue_holm", holm)
    return Cell(_fmt_p(raw), f"{path}/pvalue", raw)


def _span(values: Sequence[int]) -> str:
    lo, hi = min(values), max(values)
    return str(lo) if lo == hi else f"{lo} to {hi}"


def _levels(values: Sequence[float]) -> str:
    return ", ".join(f"{v:g}" for v in sorted(set(values)))


# --------------------------------------------------------------------- positional
def _primary_condition(groups: Sequence[PositionalGroup]) -> str:
    counts: dict[str, int] = {}
    for g in groups:
        if g.condition != _DECODING:
            counts[g.condition] = counts.get(g.condition, 0) + 1
    return max(counts, key=lambda c: (counts[c], c)) if counts else _DECODING


def _icm_p(g: PositionalGroup) -> float:
    return g.icm_pvalue_holm if math.isfinite(g.icm_pvalue_holm) else g.icm_pvalue


def _positional_verdict(
    run: PositionalRun, index: Mapping[int, int]
) -> tuple[Markup, dict[str, Any]]:
    """One paragraph in plain words and the counts it quotes (the sidecar's ``summary``).

    ``index`` maps ``id(group)`` to the group's position in the sidecar.
    """
    groups = run.groups
    audited = [g for g in groups if g.condition != _DECODING] or list(groups)
    models = list(dict.fromkeys(g.model for g in audited))
    n = len(audited)
    holm = any(
        math.isfinite(g.unbp_pvalue_holm) or math.isfinite(g.icm_pvalue_holm) for g in audited
    )
    summary = {
        "models": len(models),
        "configurations": n,
        "valid_evaluations": sum(g.n_evaluations for g in audited),
        "unbp_rejected": sum(g.unbp_reject for g in audited),
        "icm_rejected": sum(_icm_p(g) <= run.alpha for g in audited),
    }

    def count(key: str) -> Markup:
        return _num(f"summary/{key}", summary[key], str(summary[key]))

    parts = [
        Markup(
            "We audited {} model{} in {} configuration{} (k in {{{}}}, temperature in {{{}}}): "
            "{} valid evaluations in all, {} queries per configuration. "
        ).format(
            count("models"),
            "s" if len(models) != 1 else "",
            count("configurations"),
            "s" if n != 1 else "",
            _levels([g.k for g in audited]),
            _levels([g.temperature for g in audited]),
            count("valid_evaluations"),
            _span([g.n_queries for g in audited]),
        ),
        Markup(
            "At alpha = {}{}, POB-UNBP rejected the null of no positional bias in "
            "<strong>{} of {}</strong> configurations and POB-ICM in <strong>{} of {}</strong>. "
        ).format(
            _num("alpha", run.alpha, f"{run.alpha:g}"),
            " (Holm-adjusted across configurations)" if holm else "",
            count("unbp_rejected"),
            count("configurations"),
            count("icm_rejected"),
            count("configurations"),
        ),
    ]
    worst = max(audited, key=lambda g: g.pb.value if math.isfinite(g.pb.value) else -1.0)
    i = index[id(worst)]
    parts.append(
        Markup(
            "The strongest positional bias is {} at k = {}, T = {:g}: PB = {} "
            "(POB-UNBP lower bound L = {} pp), sPB = {}, PS = {}. "
        ).format(
            worst.model,
            worst.k,
            worst.temperature,
            _ci_num(f"groups/{i}/pb", worst.pb),
            _num(
                f"groups/{i}/pob_unbp/L",
                worst.unbp_lower_bound,
                _fmt(100 * worst.unbp_lower_bound, 1),
            ),
            _ci_num(f"groups/{i}/spb", worst.spb),
            _ci_num(f"groups/{i}/ps", worst.ps),
        )
    )
    if math.isfinite(worst.positional_share.value):
        parts.append(
            Markup(
                "Position made {} of its selections: {} were moved out of the query's "
                "relevance set (strong bias, sPB) and {} landed on a relevant item anyway "
                "(soft bias). "
            ).format(
                _ci_num(f"groups/{i}/positional_share", worst.positional_share),
                _ci_num(f"groups/{i}/spb", worst.spb),
                _ci_num(f"groups/{i}/spb_soft", worst.spb_soft),
            )
        )
    clean = [
        m
        for m in models
        if not any(g.model == m and (g.unbp_reject or _icm_p(g) <= run.alpha) for g in audited)
    ]
    if clean:
        parts.append(
            Markup("No test rejected in any configuration of: {}. ").format(", ".join(clean))
        )
    else:
        parts.append(
            Markup("Every model was found positionally biased in at least one configuration. ")
        )
    floors = [g for g in groups
              if g.condition == _DECODING and math.isfinite(g.spb_paper.value)]
    if floors:
        top = max(floors, key=lambda g: g.spb_paper.value)
        parts.append(
            Markup(
                "With the candidate order fixed (decoding noise only), the paper's "
                "cross-validated sPB reaches at most {} ({}, k = {}, T = {:g}): its values "
                "near this floor are noise, not bias."
            ).format(
                _ci_num(f"groups/{index[id(top)]}/spb_paper", top.spb_paper), top.model, top.k,
                top.temperature,
            )
        )
    return Markup("").join(parts), summary


def _positional_table(groups: Sequence[PositionalGroup]) -> Table:
    rows = []
    for i, g in enumerate(groups):
        p = f"groups/{i}"
        rows.append(
            (
                Cell(g.model),
                Cell(str(g.k), f"{p}/k", g.k),
                Cell(f"{g.temperature:g}", f"{p}/temperature", g.temperature),
                Cell(g.condition or "-"),
                Cell(str(g.n_queries), f"{p}/n_queries", g.n_queries),
                Cell(str(g.n_evaluations), f"{p}/n_evaluations", g.n_evaluations),
                Cell(str(g.n_discarded), f"{p}/n_discarded", g.n_discarded),
                Cell(_fmt(g.icm_statistic, 1), f"{p}/pob_icm/statistic", g.icm_statistic),
                _p_cell(f"{p}/pob_icm", g.icm_pvalue, g.icm_pvalue_holm),
                Cell(_fmt(100 * g.unbp_lower_bound, 1), f"{p}/pob_unbp/L", g.unbp_lower_bound),
                _p_cell(f"{p}/pob_unbp", g.unbp_pvalue, g.unbp_pvalue_holm),
                Cell("yes" if g.unbp_reject else "no"),
                _ci_cell(f"{p}/ps", g.ps),
                _ci_cell(f"{p}/pb", g.pb),
                _ci_cell(f"{p}/spb", g.spb),
            )
        )
    return Table(
        id="tab-groups",
        caption="Every configuration. p-values are Holm-adjusted across configurations when "
        "the analysis provides it. L is the POB-UNBP lower confidence bound on the total "
        "variation distance to uniform, in percentage points. Click a header to sort.",
        columns=(
            "model",
            "k",
            "T",
            "condition",
            "queries",
            "valid evals",
            "discarded",
            "ICM chi2",
            "ICM p",
            "UNBP L (pp)",
            "UNBP p",
            "UNBP rejects",
            "PS [95% CI]",
            "PB [95% CI]",
            "sPB [95% CI]",
        ),
        rows=tuple(rows),
    )


def _render_positional(run: PositionalRun) -> tuple[dict[str, Any], list[Section], Markup]:
    groups = run.groups
    index = {id(g): i for i, g in enumerate(groups)}
    primary = _primary_condition(groups)
    audited = [g for g in groups if g.condition == primary]
    models = list(dict.fromkeys(g.model for g in groups))
    colors = {m: i for i, m in enumerate(models)}
    ref_t = min(g.temperature for g in audited)
    cond = f" (condition {primary})" if primary else ""
    sections: list[Section] = []

    dist_figs, heat_figs = [], []
    for k in sorted({g.k for g in audited}):
        at_k = [g for g in audited if g.k == k]
        by_model = {
            m: [g for g in at_k if g.model == m] for m in models if any(g.model == m for g in at_k)
        }
        dist_figs.append(
            Fig(
                f"fig-dist-k{k}",
                f"Position-selection distribution, k = {k}",
                f"Share of valid answers that picked each prompt position{cond}, with 95% CIs, "
                "one colour per temperature. Without positional bias every point sits on the "
                f"dashed uniform line 1/k = {1 / k:.3g}; look for positions whose whole interval "
                "lies above it (favoured, typically the first or last) or below it (avoided).",
                _plots.position_distribution(by_model, k=k, fig_id=f"fig-dist-k{k}"),
            )
        )
        at_ref = [g for g in at_k if g.temperature == ref_t]
        heat_figs.append(
            Fig(
                f"fig-heat-k{k}",
                f"Selection rates, k = {k}, T = {ref_t:g}",
                "Rate at which the candidate with original (retrieval) index i was chosen when "
                "shown at prompt position p. Differences between rows are relevance (retrieval "
                "order matters, as it should); differences between columns are position: a "
                "bright column means a position wins whatever is shown there. White: never shown "
                "there.",
                _plots.selection_heatmaps(at_ref, k=k, fig_id=f"fig-heat-k{k}"),
            )
        )
    sections.append(Section("distribution", "Where the answers land", figures=tuple(dist_figs)))
    sections.append(Section("heatmap", "Relevance or position?", figures=tuple(heat_figs)))
    sections.append(
        Section(
            "metrics",
            "Effect sizes across models, k and temperature",
            figures=(
                Fig(
                    "fig-metrics",
                    "PS, PB and sPB with 95% CIs",
                    "PS: how often reordering the candidates changes the recommendation. PB: "
                    "total variation distance of the position distribution to uniform (0 = no "
                    "positional preference). sPB: share of answers outside the query's relevance "
                    f"set (strong bias){cond}. Bands are query-level bootstrap CIs; look for "
                    "lines whose band clears zero, and for trends with k and temperature.",
                    _plots.metric_lines(audited, colors=colors, fig_id="fig-metrics"),
                ),
            ),
            tables=(_positional_table(groups),),
        )
    )
    decoding = {(g.model, g.k, g.temperature): g for g in groups if g.condition == _DECODING}
    pairs = [
        (g, decoding[(g.model, g.k, g.temperature)])
        for g in audited
        if (g.model, g.k, g.temperature) in decoding and g.condition != _DECODING
    ]
    if pairs:
        sections.append(
            Section(
                "noise-floor",
                "sPB against its noise floor",
                figures=(
                    Fig(
                        "fig-noise",
                        "sPB beside the decoding-only noise floor",
                        "Filled circles: sPB of the audited condition; open squares: sPB with "
                        "the candidate order fixed, so only decoding randomness moves the "
                        "answer. Strong positional bias is the part of sPB that clearly exceeds "
                        "the noise floor: look for circles whose interval lies to the right of "
                        "the square's.",
                        _plots.noise_floor(pairs, fig_id="fig-noise"),
                    ),
                ),
            )
        )
    else:
        sections.append(
            Section(
                "noise-floor",
                "sPB against its noise floor",
                notes=(
                    "No decoding-only condition (condition `decoding`) in this run: the sPB "
                    "noise floor cannot be shown.",
                ),
            )
        )

    discard_rows = []
    for j, (m, by_reason) in enumerate(run.discards.items()):
        total, n = sum(by_reason.values()), run.generations.get(m, 0)
        share = total / max(n, 1)
        discard_rows.append(
            (
                Cell(m),
                Cell(str(n), f"discards/{j}/generations", n),
                Cell(str(total), f"discards/{j}/discarded", total),
                Cell(f"{100 * share:.1f}%", f"discards/{j}/share", share),
                Cell(", ".join(f"{r}: {c}" for r, c in by_reason.items()) or "-"),
            )
        )
    example_rows = tuple(
        (Cell(e.model), Cell(e.reason), Cell(e.raw_response, css="raw"))
        for e in run.discard_examples
    )
    tables = [
        Table(
            "tab-discards",
            "Discarded generations per model (answers that did not parse to exactly one valid "
            "identifier; never guessed, never silently dropped).",
            ("model", "generations", "discarded", "share", "by reason"),
            tuple(discard_rows),
        )
    ]
    if example_rows:
        tables.append(
            Table(
                "tab-discard-examples",
                "Examples of discarded answers, verbatim (first 200 characters, at most 3 per "
                "model).",
                ("model", "reason", "raw answer"),
                example_rows,
            )
        )
    sections.append(
        Section(
            "discards",
            "Discarded generations",
            figures=(
                Fig(
                    "fig-discards",
                    "Discarded generations per model",
                    "Share of each model's generations that were discarded, by reason. A high "
                    "share means the model often ignores the answer format; if discards depend "
                    "on the order shown, they can bias the tests: compare with the complete-case "
                    "analysis.",
                    _plots.discards(run.discards, run.generations, fig_id="fig-discards"),
                ),
            ),
            tables=tuple(tables),
        )
    )

    if run.simulation:
        sections.append(
            Section(
                "power",
                "Power of the tests (simulation)",
                figures=(
                    Fig(
                        "fig-power",
                        "Power curves",
                        "Share of simulated runs in which each test rejected, against the "
                        "probability p_bias of picking the first position regardless of "
                        "relevance (spec section 8), with 95% CIs. At p_bias = 0 the curve is "
                        "the type-I error and should sit on the dotted alpha line; the p_bias "
                        "where a curve crosses the dashed 80% line is the smallest bias the test "
                        "reliably detects.",
                        _plots.power_curves(run.simulation, alpha=run.alpha, fig_id="fig-power"),
                    ),
                ),
            )
        )

    if run.study is not None:  # `recaudit positional study` folder (positional-study)
        from ._study import study_sections

        sections.extend(study_sections(run.study))
    if run.sequential is not None:  # `recaudit positional run --sequential` folder
        from ._sequential import sequential_sections

        sections.extend(sequential_sections(run.sequential))
    verdict, summary = _positional_verdict(run, index)
    data: dict[str, Any] = {
        "alpha": run.alpha,
        "summary": summary,
        "primary_condition": primary,
        "reference_temperature": ref_t,
        "groups": [g.to_dict() for g in groups],
        "discards": [
            {
                "model": m,
                "generations": run.generations.get(m, 0),
                "discarded": sum(c.values()),
                "share": sum(c.values()) / max(run.generations.get(m, 0), 1),
                "by_reason": dict(c),
            }
            for m, c in run.discards.items()
        ],
        "discard_examples": [
            {"model": e.model, "reason": e.reason, "raw_response": e.raw_response}
            for e in run.discard_examples
        ],
        "simulation": [
            {
                "test": r.test,
                "k": r.k,
                "queries": r.queries,
                "perms": r.perms,
                "p_bias": r.p_bias,
                "reps": r.reps,
                **{
                    k.replace("value", "rejection_rate"): v
                    for k, v in r.rejection_rate.to_dict().items()
                },
            }
            for r in run.simulation
        ],
        **({"study": run.study} if run.study is not None else {}),
        **({"sequential": run.sequential} if run.sequential is not None else {}),
        "reproduction": {
            "config_file": run.config_name,
            "config": run.config_text,
            "seed": run.seed,
            "versions": dict(run.versions),
        },
    }
    return data, sections, verdict


# ----------------------------------------------------------------------- fairness
def _ns(models: Sequence[FairnessModel]) -> list[int]:
    return sorted({n for m in models for (_, n) in m.ib})


def _fairness_verdict(run: FairnessRun, metric: str, n: int, front: Sequence[int]) -> Markup:
    """One paragraph in plain words (group sizes are quoted from the sidecar's summary)."""
    models = run.models
    groups = Markup(", ").join(
        Markup("{} ({} users)").format(g, _num(f"summary/groups/{j}/n_users", c, str(c)))
        for j, (g, c) in enumerate(models[0].n_users.items())
    )
    key = (metric, n)
    sig = [
        (i, m)
        for i, m in enumerate(models)
        if key in m.rd
        and (m.rd[key].pvalue_holm if math.isfinite(m.rd[key].pvalue_holm) else m.rd[key].pvalue)
        <= run.alpha
    ]
    parts = [
        Markup("We compared {} model{} on the user groups {}{}. ").format(
            len(models),
            "s" if len(models) != 1 else "",
            groups,
            Markup(" (protected group: {})").format(run.protected) if run.protected else "",
        )
    ]
    if sig:
        parts.append(
            Markup(
                "At alpha = {}, the {}@{} gap between groups is significant for {} "
                "(permutation test of RD). "
            ).format(
                _num("alpha", run.alpha, f"{run.alpha:g}"),
                metric,
                n,
                Markup(", ").join(
                    Markup("{} (RD = {})").format(
                        m.name, _ci_num(f"models/{i}/rd/{metric}@{n}", m.rd[key].estimate)
                    )
                    for i, m in sig
                ),
            )
        )
    else:
        parts.append(
            Markup(
                "At alpha = {}, no model shows a significant {}@{} gap between groups "
                "(permutation test of RD). "
            ).format(_num("alpha", run.alpha, f"{run.alpha:g}"), metric, n)
        )
    ranked = sorted(range(len(models)), key=lambda i: models[i].ib[key].value)
    best, worst = ranked[0], ranked[-1]
    parts.append(
        Markup(
            "IB-{}@{} (higher = more combined bias) ranges from {} for {} to {} for {}. "
        ).format(
            metric,
            n,
            _ci_num(f"models/{best}/ib/{metric}@{n}", models[best].ib[key]),
            models[best].name,
            _ci_num(f"models/{worst}/ib/{metric}@{n}", models[worst].ib[key]),
            models[worst].name,
        )
    )
    parts.append(
        Markup("On the accuracy-bias Pareto front: {}; {}.").format(
            ", ".join(models[i].name for i in front),
            "no single model is best on both"
            if len(front) > 1
            else "one model is both the most accurate and the least biased",
        )
    )
    return Markup("").join(parts)


def _render_fairness(run: FairnessRun) -> tuple[dict[str, Any], list[Section], Markup]:
    models = run.models
    colors = {m.name: i for i, m in enumerate(models)}
    ns = _ns(models)
    metrics = [m for m in METRIC_ORDER if any((m, n) in models[0].ib for n in ns)] or list(
        dict.fromkeys(name for name, _ in models[0].ib)
    )
    metric = metrics[0]
    main_n = 10 if 10 in ns else ns[len(ns) // 2]
    fronts = {
        n: _plots.pareto_front(
            [(m.ib[(metric, n)].value, m.overall[(metric, n)].value) for m in models]
        )
        for n in ns
    }
    sections: list[Section] = []
    group_names = list(models[0].group_metrics)
    bar_metrics = [
        m for m in METRIC_ORDER if any((m, main_n) in g for g in models[0].group_metrics.values())
    ]
    groups_section = Section(
        "groups",
        "Quality per user group",
        figures=(
            Fig(
                "fig-groups",
                f"Per-group metrics @ {main_n}",
                f"Mean metric@{main_n} per user group ({', '.join(group_names)}) with user-level "
                "bootstrap 95% CIs (other N: the sidecar). Look for pairs of bars whose "
                "intervals do not overlap: the recommender serves one group worse. Small gaps "
                "can hide behind popularity bias (see the long tail below).",
                _plots.group_bars(
                    models, n=main_n, metrics=bar_metrics or metrics, fig_id="fig-groups"
                ),
            ),
        ),
    )
    nrd_rows, ib_rows = [], []
    for i, m in enumerate(models):
        for name in metrics:
            nrd_row, ib_row = [Cell(m.name), Cell(name)], [Cell(m.name), Cell(name)]
            for n in ns:
                key = f"{name}@{n}"
                nrd = m.nrd.get((name, n), Interval(math.nan, math.nan, math.nan))
                nrd_row.append(_ci_cell(f"models/{i}/nrd/{key}", nrd))
                rd = m.rd.get((name, n))
                nrd_row.append(
                    _p_cell(f"models/{i}/rd/{key}", rd.pvalue, rd.pvalue_holm)
                    if rd
                    else Cell("n/a")
                )
                ib_row.append(
                    _ci_cell(
                        f"models/{i}/ib/{key}",
                        m.ib.get((name, n), Interval(math.nan, math.nan, math.nan)),
                    )
                )
            nrd_rows.append(tuple(nrd_row))
            ib_rows.append(tuple(ib_row))
    inter_bias_section = (
        Section(
            "inter-bias",
            "Inter-bias: NRD and IB",
            tables=(
                Table(
                    "tab-nrd",
                    "NRD = (RD + 1) / 2 in [0, 1]: 0.5 means equal quality for both groups, "
                    "above 0.5 favours the unprotected group. p: permutation test of the group "
                    "gap (Holm-adjusted when available).",
                    ("model", "metric", *[c for n in ns for c in (f"NRD@{n} [95% CI]", f"p@{n}")]),
                    tuple(nrd_rows),
                ),
                Table(
                    "tab-ib",
                    "IB = sqrt(NRD x (1 - item coverage)) in [0, 1]: higher means more overall "
                    "bias (a quality gap against the protected group and/or low coverage).",
                    ("model", "metric", *[f"IB@{n} [95% CI]" for n in ns]),
                    tuple(ib_rows),
                ),
            ),
        ),
    )
    pop_ns = [n for n in ns if all(n in m.popularity and n in m.coverage for m in models)]
    acc_rows = tuple(
        (
            Cell(m.name),
            _ci_cell(f"models/{i}/overall/{metric}@{main_n}", m.overall[(metric, main_n)]),
            Cell(
                _fmt(m.coverage[main_n]), f"models/{i}/item_coverage/{main_n}", m.coverage[main_n]
            ),
            _ci_cell(f"models/{i}/avg_popularity/{main_n}", m.popularity[main_n])
            if main_n in m.popularity
            else Cell("n/a"),
        )
        for i, m in enumerate(models)
    )
    figs = []
    if pop_ns:
        figs.append(
            Fig(
                "fig-coverage",
                "Item coverage against average popularity",
                "One point per model (x whiskers: 95% CI of the average popularity). Popularity "
                "bias shows as points in the lower right: the model recommends the same popular "
                "items to everyone, so coverage is low.",
                _plots.coverage_popularity(models, ns=pop_ns, colors=colors, fig_id="fig-coverage"),
            )
        )
    figs.append(
        Fig(
            "fig-tradeoff",
            f"Accuracy against inter-bias ({metric})",
            f"Overall {metric}@N against IB-{metric}@N, with 95% CIs. Up and to the left is "
            "better on both. Models with a black outline are on the Pareto front (dashed): no "
            "other model is both more accurate and less biased.",
            _plots.tradeoff(models, ns=ns, metric=metric, colors=colors, fig_id="fig-tradeoff"),
        )
    )
    sections.append(
        Section(
            "tradeoff",
            "Popularity, coverage and the accuracy-bias trade-off",
            notes=()
            if pop_ns
            else (
                "Average popularity is absent from the results: the coverage-popularity plot is "
                "not drawn.",
            ),
            figures=tuple(figs),
            tables=(
                Table(
                    "tab-accuracy",
                    f"Accuracy, coverage and popularity at N = {main_n}.",
                    (
                        "model",
                        f"{metric}@{main_n} [95% CI]",
                        f"item coverage@{main_n}",
                        f"avg popularity@{main_n} [95% CI]",
                    ),
                    acc_rows,
                ),
            ),
        )
    )
    sections += [*inter_bias_section, groups_section]
    long_tail: dict[str, Any] = {}
    if run.long_tail is not None:
        counts = run.long_tail.counts
        head = max(1, math.ceil(0.2 * len(counts)))
        share = sum(counts[:head]) / max(sum(counts), 1)
        long_tail = {
            "n_items": len(counts),
            "n_interactions": sum(counts),
            "head_items": head,
            "head_share": share,
            "counts": list(counts),
            "head": [
                {"item": h.item, "title": h.title, "interactions": h.interactions}
                for h in run.long_tail.head
            ],
        }
        sections.append(
            Section(
                "long-tail",
                "The dataset's long tail",
                figures=(
                    Fig(
                        "fig-long-tail",
                        "Interactions per item",
                        "Items sorted by number of interactions, log scale. The steeper the drop "
                        "after the shaded head, the more a recommender can score by recommending "
                        "popular items, and the more popularity bias can mask group unfairness.",
                        _plots.long_tail(counts, head_share=share, fig_id="fig-long-tail"),
                    ),
                ),
                tables=(
                    Table(
                        "tab-head",
                        "The most interacted-with items.",
                        ("item", "title", "interactions"),
                        tuple(
                            (
                                Cell(h.item),
                                Cell(h.title),
                                Cell(
                                    str(h.interactions),
                                    f"long_tail/head/{j}/interactions",
                                    h.interactions,
                                ),
                            )
                            for j, h in enumerate(run.long_tail.head)
                        ),
                    ),
                ),
            )
        )
    data = {
        "alpha": run.alpha,
        "summary": {
            "groups": [{"name": g, "n_users": c} for g, c in models[0].n_users.items()],
        },
        "protected_group": run.protected,
        "headline": {"metric": metric, "n": main_n},
        "models": [m.to_dict() for m in models],
        "pareto_front": {f"{metric}@{n}": [models[i].name for i in f] for n, f in fronts.items()},
        "long_tail": long_tail,
    }
    return data, sections, _fairness_verdict(run, metric, main_n, fronts[main_n])


# --------------------------------------------------------------------------- page
@dataclass(frozen=True)
class Report:
    """A rendered audit report: one self-contained HTML page and its JSON sidecar.

    Attributes
    ----------
    kind : {"positional", "fairness"}
        Which study the report is about.
    html : str
        The page; works offline (inline SVG, inline CSS and script, no fetch).
    sidecar : str
        The JSON sidecar text, holding every number shown on the page.
    """

    kind: Kind
    html: str
    sidecar: str

    @property
    def data(self) -> dict[str, Any]:
        """The sidecar as a fresh dict (changing it does not change the report)."""
        return json.loads(self.sidecar)

    def to_json(self) -> str:
        """The sidecar JSON text."""
        return self.sidecar

    def save(self, path: Path | str) -> tuple[Path, Path]:
        """Write the page to ``path`` and the sidecar beside it (``.json`` suffix).

        Returns
        -------
        tuple of Path
            The HTML path and the sidecar path.
        """
        html_path = Path(path)
        json_path = html_path.with_suffix(".json")
        if json_path == html_path:
            raise InputError(f"the report path must not end in .json, got {html_path}")
        html_path.parent.mkdir(parents=True, exist_ok=True)
        html_path.write_text(self.html, encoding="utf-8")
        json_path.write_text(self.sidecar + "\n", encoding="utf-8")
        return html_path, json_path


def _generated_at() -> str:
    """Now (UTC), or ``SOURCE_DATE_EPOCH`` when set, for reproducible builds."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = datetime.fromtimestamp(int(epoch), UTC) if epoch else datetime.now(UTC)
    return moment.replace(microsecond=0).isoformat()


def _environment() -> dict[str, str]:
    return {
        "recaudit": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "jinja2": jinja2.__version__,
    }


def _env() -> jinja2.Environment:
    loader = jinja2.PackageLoader("recaudit.report", "templates")
    env = jinja2.Environment(
        loader=loader,
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["jsonnum"] = lambda value: json.dumps(_json_value(value))
    return env


def build_report(
    source: Path | str | Mapping[str, Any] | list, *, kind: Kind | None = None
) -> Report:
    """Build the audit report of a positional or fairness run.

    Parameters
    ----------
    source : Path, str, dict or list
        A run folder (positional: ``analysis.json`` [+ ``evaluations.parquet``,
        ``simulation.json``, ``config.resolved.*``]; fairness: ``results.json``
        [+ ``long_tail.parquet``]), a JSON file, or the parsed JSON of
        ``recaudit positional analyze --json`` / ``recaudit fairness evaluate --json``.
    kind : {"positional", "fairness"}, optional
        Skip recognition of the source.

    Returns
    -------
    Report
        ``.html`` (the page), ``.data`` (the sidecar), ``.save(path)``.

    Raises
    ------
    InputError
        Unrecognised source, or a missing file or key (named, with the command that
        produces it).

    Examples
    --------
    >>> report = build_report(Path("runs/positional-2026-11-29"))  # doctest: +SKIP
    >>> report.save("report.html")  # doctest: +SKIP
    """
    run = load(source, kind=kind)
    if isinstance(run, PositionalRun):
        data, sections, verdict = _render_positional(run)
        run_kind: Kind = "positional"
        title = "Positional bias audit"
        # `recaudit positional mitigate` folders: a before/after section
        mitigation = Path(source) / "mitigation.json" if isinstance(source, str | Path) else None
        if mitigation is not None and mitigation.is_file():
            doc = read_json(mitigation, what="the mitigation comparison")
            if not isinstance(doc, dict):
                raise InputError(f"{mitigation} is not a mitigation.json written by "
                                 "`recaudit positional mitigate`; run it again")
            data["mitigation"] = dict(doc, out=str(source))
    else:
        data, sections, verdict = _render_fairness(run)
        run_kind = "fairness"
        title = "Inter-bias (fairness) audit"
    generated_at = _generated_at()
    environment = _environment()
    figures = [f for s in sections for f in s.figures]
    sidecar = {
        "kind": run_kind,
        "source": run.source,
        "generated_at": generated_at,
        "rendered_with": environment,
        "verdict": verdict.striptags(),
        **data,
        "figures": [{"id": f.id, "title": f.title, "caption": f.caption} for f in figures],
        "missing": list(run.missing),
    }
    digest = base64.b64encode(hashlib.sha256(_SORT_JS.encode()).digest()).decode()
    html = (
        _env()
        .get_template(f"{run_kind}.html.j2")
        .render(
            title=title,
            run=run,
            kind=run_kind,
            verdict=verdict,
            sections=sections,
            generated_at=generated_at,
            environment=environment,
            data=data,
            script=Markup(_SORT_JS),
            script_hash=f"sha256-{digest}",
        )
    )
    return Report(
        kind=run_kind,
        html=html,
        sidecar=json.dumps(_json_value(sidecar), indent=1, allow_nan=False),
    )
