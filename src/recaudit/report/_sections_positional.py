"""The positional report's sections, one builder per section, and its verdict.

Each builder takes the loaded :class:`PositionalRun` (the library's grouped analysis
and the run folder's companions) and returns one :class:`Section`; numbers point into
the sidecar that :func:`positional_data` builds (``groups/<i>/...``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from markupsafe import Markup

from ..positional import IDENTITY_ORDER
from . import _plots
from ._load_positional import Configuration, PositionalRun
from ._page import (
    Cell,
    Fig,
    HasCI,
    Section,
    Table,
    ci_cell,
    ci_num,
    fmt,
    levels,
    num,
    p_cell,
    span,
)
from ._plain import (
    DECODING,
    HtmlWords,
    chance_sentence,
    comparison_verdict,
    headline_configuration,
    how_much_paragraph,
    permuted_configurations,
    position_sentence,
    spread_shown,
)

__all__ = [
    "audited",
    "discards_section",
    "distribution_section",
    "heatmap_section",
    "metrics_section",
    "noise_floor_section",
    "positional_data",
    "positional_verdict",
    "power_section",
    "primary_condition",
]

def primary_condition(groups: Sequence[Configuration]) -> str:
    """The most frequent permuted condition (the audited one); the most frequent
    identity-order one (``IDENTITY_ORDER``) only when the run has no other."""
    counts: dict[str, int] = {}
    for g in groups:
        counts[g.condition] = counts.get(g.condition, 0) + 1
    permuted = [c for c in counts if c not in IDENTITY_ORDER] or list(counts)
    return max(permuted, key=lambda c: (counts[c], c)) if permuted else DECODING


def audited(run: PositionalRun) -> list[Configuration]:
    """The configurations of the primary condition (what the figures show)."""
    primary = primary_condition(run.groups)
    return [g for g in run.groups if g.condition == primary]


def _condition_note(run: PositionalRun) -> str:
    primary = primary_condition(run.groups)
    return f" (condition {primary})" if primary else ""


def _models(run: PositionalRun) -> list[str]:
    return list(dict.fromkeys(g.model for g in run.groups))


def _reference_temperature(run: PositionalRun) -> float:
    return min(g.temperature for g in audited(run))


def _icm_p(g: Configuration) -> float:
    return g.icm_pvalue_holm if math.isfinite(g.icm_pvalue_holm) else g.icm_pvalue


# ------------------------------------------------------------------------ verdict
def _summary(run: PositionalRun, groups: Sequence[Configuration]) -> dict[str, Any]:
    return {
        "models": len(dict.fromkeys(g.model for g in groups)),
        "configurations": len(groups),
        "valid_evaluations": sum(g.n_evaluations for g in groups),
        "unbp_rejected": sum(g.unbp_reject for g in groups),
        "icm_rejected": sum(_icm_p(g) <= run.alpha for g in groups),
    }


def _what_was_audited(run: PositionalRun, groups: Sequence[Configuration],
                      summary: dict[str, Any]) -> Markup:
    n = len(groups)
    holm = len(run.groups) > 1 and any(
        math.isfinite(g.unbp_pvalue_holm) or math.isfinite(g.icm_pvalue_holm) for g in groups
    )

    def count(key: str) -> Markup:
        return num(f"summary/{key}", summary[key], str(summary[key]))

    return Markup(
        "In the tests' terms: we audited {} model{} in {} configuration{} (k in {{{}}}, "
        "temperature in {{{}}}): "
        "{} valid evaluations in all, {} queries per configuration. "
    ).format(
        count("models"), "s" if summary["models"] != 1 else "", count("configurations"),
        "s" if n != 1 else "", levels([g.k for g in groups]),
        levels([g.temperature for g in groups]), count("valid_evaluations"),
        span([g.n_queries for g in groups]),
    ) + Markup(
        "At alpha = {}{}, POB-UNBP rejected the null of no positional bias in "
        "<strong>{} of {}</strong> configurations and POB-ICM in <strong>{} of {}</strong>. "
    ).format(
        num("alpha", run.alpha, f"{run.alpha:g}"),
        " (Holm-adjusted across configurations)" if holm else "",
        count("unbp_rejected"), count("configurations"), count("icm_rejected"),
        count("configurations"),
    )


def _strongest(i: int, worst: Configuration) -> Markup:
    return Markup(
        "The strongest positional bias is {}at k = {}, T = {:g}: PB = {} "
        "(POB-UNBP lower bound L = {} pp), sPB = {}{}, PS = {}. "
    ).format(
        "" if worst.model == "(all)" else f"{worst.model} ", worst.k, worst.temperature,
        ci_num(f"groups/{i}/pb", worst.pb),
        num(f"groups/{i}/pob_unbp/L", worst.unbp_lower_bound,
            fmt(100 * worst.unbp_lower_bound, 1)),
        ci_num(f"groups/{i}/spb", worst.spb),
        f" {UNIDENTIFIED_MARK}" if worst.spb_note is not None else "",
        ci_num(f"groups/{i}/ps", worst.ps),
    )


def _clean_models(run: PositionalRun, groups: Sequence[Configuration]) -> Markup:
    models = list(dict.fromkeys(g.model for g in groups))
    clean = [
        m for m in models
        if not any(g.model == m and (g.unbp_reject or _icm_p(g) <= run.alpha) for g in groups)
    ]
    if clean:
        return Markup("No test rejected in any configuration of: {}. ").format(", ".join(clean))
    return Markup("Every model was found positionally biased in at least one configuration. ")


def _noise_floor_sentence(run: PositionalRun) -> Markup:
    floors = [(i, g) for i, g in enumerate(run.groups)
              if g.condition == DECODING and math.isfinite(g.spb_paper.value)]
    if not floors:
        return Markup("")
    i, top = max(floors, key=lambda ig: ig[1].spb_paper.value)
    return Markup(
        "With the candidate order fixed (decoding noise only), the paper's "
        "cross-validated sPB reaches at most {} ({}, k = {}, T = {:g}): its values "
        "near this floor are noise, not bias."
    ).format(ci_num(f"groups/{i}/spb_paper", top.spb_paper), top.model, top.k, top.temperature)


def positional_verdict(run: PositionalRun) -> tuple[Markup, dict[str, Any]]:
    """The verdict, three paragraphs, and the counts it quotes (the sidecar's ``summary``).

    First in plain words what the configuration with the largest PB did by prompt
    position and whether that is more than chance; then how much position decided
    (the position-driven share, its strong/soft split, PB and how they relate:
    :mod:`._plain`); then the same in the tests' and metrics' terms, with the counts
    of every configuration.
    """
    groups = [run.groups[i] for i in permuted_configurations(run.groups)]
    summary = _summary(run, groups)
    words, i = HtmlWords(), headline_configuration(run.groups)
    worst = run.groups[i]
    lead = position_sentence(words, run.groups, i) + (
        chance_sentence(words, worst, i, run.alpha, holm=len(run.groups) > 1)
        if run.sequential is None else _sequential_sentence(words, run, worst))
    detail = Markup("").join([
        _what_was_audited(run, groups, summary),
        _strongest(i, worst),
        _clean_models(run, groups),
        _noise_floor_sentence(run),
    ])
    paragraphs = [(lead, "lead"), (how_much_paragraph(words, worst, i), "how-much"),
                  (detail, "detail")]
    if run.comparisons is not None:  # several models: which is less biased, how sure
        paragraphs.insert(2, (Markup("<strong>Models compared:</strong> {}").format(
            comparison_verdict(run.comparisons.to_list(), run.alpha)), "compare"))
    return Markup("\n").join(
        Markup('<p class="{}">{}</p>').format(css, text.strip())
        for text, css in paragraphs if text.strip()), summary


def _sequential_sentence(words: HtmlWords, run: PositionalRun, g: Configuration) -> Markup:
    """After a sequential run its anytime-valid decision is the verdict's test (the
    fixed-sample p-values are descriptive): how many cells rejected and, for the
    headline configuration's cell, its E-value against the threshold."""
    audit = run.sequential
    assert audit is not None
    cells = audit.cells
    rejected = sum(c.decision == "rejected" for c in cells)
    alpha = audit.options.alpha
    text = words.fill(
        "An anytime-valid sequential test decided this audit (so the fixed-sample p-values "
        "on this page are descriptive only): it rejected \u201cthe selected position is "
        "uniform\u201d in {} of {} cell(s) at alpha = {} across cells",
        str(rejected), str(len(cells)), num("sequential/options/alpha", alpha, f"{alpha:g}"))
    key = (g.model, g.k, g.temperature, g.condition)
    j = next((n for n, c in enumerate(cells)
              if (c.model, c.k, c.temperature, c.condition) == key), None)
    ev = None if j is None else cells[j].evidence
    if j is None or ev is None:
        return words.join([text, words.fill(". ")])
    return words.join([text, words.fill(
        " (here E = {} against the threshold {} after {} evaluations). ",
        num(f"sequential/cells/{j}/e_value", ev.e_value, f"{ev.e_value:.3g}"),
        num(f"sequential/cells/{j}/threshold", ev.threshold, f"{ev.threshold:g}"),
        str(ev.evaluations_used))])


# ----------------------------------------------------------------------- sections
def distribution_section(run: PositionalRun) -> Section:
    """Where the answers land: the position distribution per k, one panel per model."""
    groups, models, cond = audited(run), _models(run), _condition_note(run)
    figs = []
    for k in sorted({g.k for g in groups}):
        at_k = [g for g in groups if g.k == k]
        by_model = {
            m: [g for g in at_k if g.model == m] for m in models if any(g.model == m for g in at_k)
        }
        figs.append(Fig(
            f"fig-dist-k{k}",
            f"Position-selection distribution, k = {k}",
            f"Share of valid answers that picked each prompt position{cond}, with 95% CIs, "
            "one colour per temperature. Without positional bias every point sits on the "
            f"dashed uniform line 1/k = {1 / k:.3g}; look for positions whose whole interval "
            "lies above it (favoured, typically the first or last) or below it (avoided).",
            _plots.position_distribution(by_model, k=k, fig_id=f"fig-dist-k{k}"),
        ))
    return Section("distribution", "Where the answers land", figures=tuple(figs))


def heatmap_section(run: PositionalRun) -> Section:
    """Relevance or position: the selection-rate matrices at the lowest temperature."""
    groups, ref_t = audited(run), _reference_temperature(run)
    figs = []
    for k in sorted({g.k for g in groups}):
        at_ref = [g for g in groups if g.k == k and g.temperature == ref_t]
        figs.append(Fig(
            f"fig-heat-k{k}",
            f"Selection rates, k = {k}, T = {ref_t:g}",
            "Rate at which the candidate with original (retrieval) index i was chosen when "
            "shown at prompt position p. Differences between rows are relevance (retrieval "
            "order matters, as it should); differences between columns are position: a "
            "bright column means a position wins whatever is shown there. White: never shown "
            "there.",
            _plots.selection_heatmaps(at_ref, k=k, fig_id=f"fig-heat-k{k}"),
        ))
    return Section("heatmap", "Relevance or position?", figures=tuple(figs))


#: Marks an sPB whose soft/strong split is not identified (its interval is the bounds).
UNIDENTIFIED_MARK = "(bounds)"


#: Marks an sPB whose floor could be a position effect spread over several positions.
SPREAD_MARK = "\u2020"


def _spb_cell(path: str, g: Configuration) -> Cell:
    """sPB with its CI, or ``n/a [bounds] (bounds)`` when the split is not identified;
    ``† <= x`` when its floor, if position-driven, could raise it to x."""
    cell = ci_cell(path, g.spb)
    if g.spb_note is not None:
        return Cell(f"{cell.text} {UNIDENTIFIED_MARK}", cell.path, cell.value)
    upper = g.spb_upper_if_spread
    if spread_shown(upper, g.spb.ci.high):
        return Cell(f"{cell.text} {SPREAD_MARK} \u2264 {fmt(upper, 3)}", cell.path,
                    cell.value)  # the bound: the sidecar's groups/i/spb_upper_if_spread
    return cell


def _tests_table(groups: Sequence[Configuration]) -> Table:
    """Every configuration: the two tests and the three effect sizes."""
    rows = []
    for i, g in enumerate(groups):
        p = f"groups/{i}"
        rows.append((
            Cell(g.model),
            Cell(str(g.k), f"{p}/k", g.k),
            Cell(f"{g.temperature:g}", f"{p}/temperature", g.temperature),
            Cell(g.condition or "-"),
            Cell(str(g.n_queries), f"{p}/n_queries", g.n_queries),
            Cell(str(g.n_evaluations), f"{p}/n_evaluations", g.n_evaluations),
            Cell(str(g.n_discarded), f"{p}/n_discarded", g.n_discarded),
            Cell(fmt(g.icm_statistic, 1), f"{p}/pob_icm/statistic", g.icm_statistic),
            p_cell(f"{p}/pob_icm", g.icm_pvalue, g.icm_pvalue_holm),
            Cell(fmt(100 * g.unbp_lower_bound, 1), f"{p}/pob_unbp/L", g.unbp_lower_bound),
            p_cell(f"{p}/pob_unbp", g.unbp_pvalue, g.unbp_pvalue_holm),
            Cell("yes" if g.unbp_reject else "no"),
            ci_cell(f"{p}/ps", g.ps),
            ci_cell(f"{p}/pb", g.pb),
            _spb_cell(f"{p}/spb", g),
        ))
    return Table(
        id="tab-groups",
        caption="Every configuration. p-values are Holm-adjusted across configurations when "
        "the analysis provides it. L is the POB-UNBP lower confidence bound on the total "
        "variation distance to uniform, in percentage points. sPB marked "
        f"{UNIDENTIFIED_MARK} is not identified (too few queries with repeated selections "
        "at the unfavoured positions): n/a with the identification bounds as its interval. "
        f"sPB marked {SPREAD_MARK} has selections at the unfavoured positions that land "
        "uniformly, as decoding noise does; if they were a position effect spread over "
        "several positions (which the data cannot tell apart) sPB could be as large as the "
        "number after \u2264 (JSON spb.upper_if_spread). Click a header to sort.",
        columns=("model", "k", "T", "condition", "queries", "valid evals", "discarded",
                 "ICM chi2", "ICM p", "UNBP L (pp)", "UNBP p", "UNBP rejects", "PS [95% CI]",
                 "PB [95% CI]", "sPB [95% CI]"),
        rows=tuple(rows),
    )


def metrics_section(run: PositionalRun) -> Section:
    """Effect sizes across models, k and temperature, and the table of every test."""
    colors = {m: i for i, m in enumerate(_models(run))}
    return Section(
        "metrics",
        "Effect sizes across models, k and temperature",
        figures=(Fig(
            "fig-metrics",
            "PS, PB and sPB with 95% CIs",
            "PS: how often reordering the candidates changes the recommendation. PB: "
            "total variation distance of the position distribution to uniform (0 = no "
            "positional preference). sPB: share of answers outside the query's relevance "
            f"set (strong bias){_condition_note(run)}. Bands are query-level bootstrap CIs; "
            "look for lines whose band clears zero, and for trends with k and temperature.",
            _plots.metric_lines(audited(run), colors=colors, fig_id="fig-metrics"),
        ),),
        tables=(_tests_table(run.groups),),
    )


def noise_floor_section(run: PositionalRun) -> Section:
    """sPB beside its decoding-only noise floor (a note when there is no decoding cell)."""
    decoding = {(g.model, g.k, g.temperature): g for g in run.groups if g.condition == DECODING}
    pairs = [
        (g, decoding[(g.model, g.k, g.temperature)])
        for g in audited(run)
        if (g.model, g.k, g.temperature) in decoding and g.condition != DECODING
    ]
    title = "sPB against its noise floor"
    if not pairs:
        return Section("noise-floor", title, notes=(
            "No decoding-only condition (condition `decoding`) in this run: the sPB "
            "noise floor cannot be shown.",
        ))
    return Section("noise-floor", title, figures=(Fig(
        "fig-noise",
        "sPB beside the decoding-only noise floor",
        "Filled circles: sPB of the audited condition; open squares: sPB with "
        "the candidate order fixed, so only decoding randomness moves the "
        "answer. Strong positional bias is the part of sPB that clearly exceeds "
        "the noise floor: look for circles whose interval lies to the right of "
        "the square's.",
        _plots.noise_floor(pairs, fig_id="fig-noise"),
    ),))


def _discard_tables(run: PositionalRun) -> tuple[Table, ...]:
    rows = []
    for j, (m, by_reason) in enumerate(run.discards.items()):
        total, n = sum(by_reason.values()), run.generations.get(m, 0)
        share = total / max(n, 1)
        rows.append((
            Cell(m),
            Cell(str(n), f"discards/{j}/generations", n),
            Cell(str(total), f"discards/{j}/discarded", total),
            Cell(f"{100 * share:.1f}%", f"discards/{j}/share", share),
            Cell(", ".join(f"{r}: {c}" for r, c in by_reason.items()) or "-"),
        ))
    tables = [Table(
        "tab-discards",
        "Discarded generations per model (answers that did not parse to exactly one valid "
        "identifier; never guessed, never silently dropped).",
        ("model", "generations", "discarded", "share", "by reason"),
        tuple(rows),
    )]
    examples = tuple(
        (Cell(e.model), Cell(e.reason), Cell(e.raw_response, css="raw"))
        for e in run.discard_examples
    )
    if examples:
        tables.append(Table(
            "tab-discard-examples",
            "Examples of discarded answers, verbatim (first 200 characters, at most 3 per "
            "model).",
            ("model", "reason", "raw answer"),
            examples,
        ))
    return tuple(tables)


def _discard_notes(run: PositionalRun) -> tuple[str, ...]:
    """Per configuration with discards: whether they depend on the order shown
    (:class:`~recaudit.positional.DiscardCheck`) and how far PB of all answers can be."""
    notes = []
    for g in run.groups:
        c = g.analysis.discard_check
        if c is None:
            continue
        if c.depends_on_order(g.analysis.alpha):
            notes.append(
                f"{g.label}: the discards depend on the order shown (z = {c.z:+.2f}, "
                f"p = {c.pvalue:.3g}). PB, the position distribution, the positional "
                "share and POB-UNBP's bound describe the answers that parsed, not the "
                f"model: PB of all its answers lies within +-{c.pb_shift_bound:.3f} of "
                "the PB shown. sPB and PS held under such discards in validation "
                "(docs/validation-positional.md).")
        else:
            test = ("" if c.z is None else
                    f" (z = {c.z:+.2f}, p = {c.pvalue:.3g}; the check cannot see a "
                    "dependence when the picks do not follow the candidates)")
            notes.append(
                f"{g.label}: no dependence of the discards on the order was found{test}; "
                f"whatever made them, PB of all answers lies within "
                f"+-{c.pb_shift_bound:.3f} of the PB shown.")
    return tuple(notes)


def discards_section(run: PositionalRun) -> Section:
    """Discarded generations per model and reason, with verbatim examples, and whether
    they depend on the order shown."""
    return Section(
        "discards",
        "Discarded generations",
        figures=(Fig(
            "fig-discards",
            "Discarded generations per model",
            "Share of each model's generations that were discarded, by reason. A high "
            "share means the model often ignores the answer format; discards that depend "
            "on the order shown bias PB and POB-UNBP (the notes below test for it).",
            _plots.discards(run.discards, run.generations, fig_id="fig-discards"),
        ),),
        tables=_discard_tables(run),
        notes=_discard_notes(run),
    )


def power_section(run: PositionalRun) -> Section:
    """The simulation study's power curves (only with ``simulation.json``)."""
    return Section(
        "power",
        "Power of the tests (simulation)",
        figures=(Fig(
            "fig-power",
            "Power curves",
            "Share of simulated runs in which each test rejected, against the "
            "probability p_bias of picking the first position regardless of "
            "relevance (spec section 8), with 95% CIs. At p_bias = 0 the curve is "
            "the type-I error and should sit on the dotted alpha line; the p_bias "
            "where a curve crosses the dashed 80% line is the smallest bias the test "
            "reliably detects.",
            _plots.power_curves(run.simulation, alpha=run.alpha, fig_id="fig-power"),
        ),),
    )


# ------------------------------------------------------------------------ sidecar
def _estimate_dict(est: HasCI) -> dict[str, float]:
    return {"value": est.value, "ci_low": est.ci.low, "ci_high": est.ci.high}


def group_dict(g: Configuration) -> dict[str, Any]:
    """One configuration in the sidecar's ``groups`` (every number the page shows of it)."""
    return {
        "model": g.model,
        "k": g.k,
        "temperature": g.temperature,
        "condition": g.condition,
        "n_queries": g.n_queries,
        "n_evaluations": g.n_evaluations,
        "n_discarded": g.n_discarded,
        "pob_icm": {
            "statistic": g.icm_statistic,
            "pvalue": g.icm_pvalue,
            "pvalue_asymptotic": g.icm_pvalue_asymptotic,
            "pvalue_holm": g.icm_pvalue_holm,
        },
        "pob_unbp": {
            "L": g.unbp_lower_bound,
            "pvalue": g.unbp_pvalue,
            "reject": g.unbp_reject,
            "pvalue_holm": g.unbp_pvalue_holm,
        },
        "pb": {**_estimate_dict(g.pb), "plugin": g.pb_plugin},
        **{name: _estimate_dict(getattr(g, name)) for name in (
            "ps", "spb", "spb_soft", "positional_share", "spb_paper")},
        "spb_note": g.spb_note,
        "spb_upper_if_spread": g.spb_upper_if_spread,
        "position_distribution": [_estimate_dict(p) for p in g.position_distribution],
        "selection_rate_matrix": g.selection_rate_matrix,
    }


def _simulation_dict(run: PositionalRun) -> list[dict[str, Any]]:
    return [
        {
            "test": r.test, "k": r.k, "queries": r.queries, "perms": r.perms,
            "p_bias": r.p_bias, "reps": r.reps,
            **{key.replace("value", "rejection_rate"): v
               for key, v in _estimate_dict(r.rejection).items()},
        }
        for r in run.simulation
    ]


def positional_data(run: PositionalRun, summary: dict[str, Any]) -> dict[str, Any]:
    """The sidecar's positional part: every number the sections show, by path."""
    return {
        "alpha": run.alpha,
        "summary": summary,
        "primary_condition": primary_condition(run.groups),
        "reference_temperature": _reference_temperature(run),
        "groups": [group_dict(g) for g in run.groups],
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
        "simulation": _simulation_dict(run),
        **({"study": run.study.to_dict()} if run.study is not None else {}),
        **({"sequential": run.sequential.to_dict()} if run.sequential is not None
           else {}),
        **({"spend": run.spend.to_dict()} if run.spend is not None else {}),
        **({"rankings": run.rankings.to_list()} if run.rankings is not None else {}),
        **({"comparisons": run.comparisons.to_list()} if run.comparisons is not None
           else {}),
        "reproduction": {
            "config_file": run.config_name,
            "config": run.config_text,
            "seed": run.seed,
            "versions": dict(run.versions),
            "engines": [dict(e) for e in run.engines],
        },
        **({"mitigation": {**run.mitigation.to_dict(), "out": run.source}}
           if run.mitigation is not None else {}),
    }
