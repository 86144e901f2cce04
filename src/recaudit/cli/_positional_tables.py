"""The positional commands' terminal output: summary tables readable at any width.

Every table here takes the JSON rows the library's results give (``to_dict``/
``to_list``), so what is printed is what ``--json`` prints.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from ._common import err_console

console = Console()

__all__ = [
    "console",
    "fmt_estimate",
    "print_analysis",
    "print_exact",
    "print_mitigation",
    "print_rankings",
    "print_sequential",
    "print_sequential_verdict",
    "print_skipped",
    "print_study",
]


def _p(p: float) -> str:
    """A p-value to 3 significant digits; one that underflows to 0 as ``< 1e-300``."""
    return "< 1e-300" if p == 0 else f"{p:.3g}"


def _unbp_and_effect_lines(holm: str) -> list[tuple[str, Callable[[dict[str, Any]], str]]]:
    """The summary lines both modes print: POB-UNBP, PS, PB, sPB, position shares."""
    return [
        (
            f"POB-UNBP L, pp (p{holm})",
            lambda r: (
                _na(r["pob_unbp"], "L")
                or (
                    f"{100 * r['pob_unbp']['L']:.2f} "
                    f"({_p(r['pob_unbp'].get('pvalue_holm', r['pob_unbp']['pvalue']))})"
                )
            ),
        ),
        ("PS [95% CI]", lambda r: fmt_estimate(r["ps"])),
        ("PB [95% CI]", lambda r: fmt_estimate(r["pb"])),
        ("sPB [95% CI]", lambda r: _split_cell(r, "spb")),
        ("soft bias [95% CI]", lambda r: _split_cell(r, "spb_soft") if "spb_soft" in r else "n/a"),
        ("position shares", lambda r: " ".join(f"{q:.2f}" for q in r["position_distribution"])),
    ]


def print_exact(rows: list[dict[str, Any]], by: list[str]) -> None:
    holm = ", Holm" if by else ""
    lines: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("k", lambda r: str(r["k"])),
        ("queries / evaluations", lambda r: f"{r['n_queries']} / {r['n_evaluations']}"),
        ("rows without a vector", lambda r: str(r["n_missing"])),
        ("mean outside mass",
         lambda r: "n/a" if r["outside_mass"] is None else f"{r['outside_mass']:.3f}"),
        *_unbp_and_effect_lines(holm),
    ]
    _print_groups("Positional bias from choice probabilities (exact mode)", rows, by, lines)
    if (reason := _untested(rows)) is not None:
        console.print(f"[bold yellow]No positional test applies[/]: {reason}", highlight=False)
        return
    verdict = f"alpha = {rows[0]['alpha']}" + (", Holm across groups" if by else "")
    biased = [_group_name(r, by) for r in rows
              if r["pob_unbp"].get("reject_holm", r["pob_unbp"]["reject"])]
    if biased:
        console.print(f"[bold red]Positional bias detected[/] by POB-UNBP on choice "
                      f"probabilities ({verdict}) in: {'; '.join(biased)}")
    else:
        console.print(f"[bold green]No positional bias detected[/] by POB-UNBP on choice "
                      f"probabilities ({verdict})")


def _untested(rows: list[dict[str, Any]]) -> str | None:
    """Why no group ran a positional test (the reasons the groups' POB tests give), or
    None when some group ran one."""
    for r in rows:
        for test in ("pob_icm", "pob_unbp"):
            obj = r.get(test)
            if obj is not None and obj.get("pvalue") is not None:
                return None
    reasons = sorted({str(r["pob_unbp"]["reason"]) for r in rows
                      if (r.get("pob_unbp") or {}).get("reason")})
    return "; ".join(reasons) if reasons else None


def print_analysis(rows: list[dict[str, Any]], by: list[str], *,
                   verdict: bool = True) -> None:
    holm = ", Holm" if by else ""
    names = [_group_name(r, by) for r in rows]
    lines: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("k", lambda r: str(r["k"])),
        ("queries / evaluations", lambda r: f"{r['n_queries']} / {r['n_evaluations']}"),
        ("discarded generations", lambda r: str(r["n_discarded"])),
        ("discards vs order: z (p); PB shift bound", _discard_line),
        ("queries without PS / sPB (< 2 valid)", lambda r: str(r["n_queries_excluded_ps"])),
        (
            f"POB-ICM X2 (p{holm})",
            lambda r: (
                _na(r["pob_icm"], "statistic")
                or (
                    f"{r['pob_icm']['statistic']:.1f} "
                    f"({r['pob_icm'].get('pvalue_holm', r['pob_icm']['pvalue']):.4g})"
                )
            ),
        ),
        (
            "POB-ICM asymptotic p",
            lambda r: _na(r["pob_icm"], "statistic") or (
                "n/a (blind)" if r["pob_icm"].get("caveat")
                else _p(r["pob_icm"]["pvalue_asymptotic"])),
        ),
        *_unbp_and_effect_lines(holm),
    ]
    _print_groups("Positional bias", rows, by, lines)
    caveats: dict[str, list[str]] = {}  # one line per distinct caveat, its groups named
    for name, r in zip(names, rows, strict=True):
        if r["pob_icm"].get("caveat"):
            caveats.setdefault(r["pob_icm"]["caveat"], []).append(name)
    for text, groups in caveats.items():
        where = groups[0] if len(groups) == 1 else f"{len(groups)} groups: {'; '.join(groups)}"
        console.print(f"[yellow]POB-ICM ({where}):[/] {text}", highlight=False)
    _warn_discards(rows, names)
    if not verdict:  # a sequential run's verdict is its sequential decision
        _print_notes(rows, names, tests=False)
        return
    if (reason := _untested(rows)) is not None:
        console.print(f"[bold yellow]No positional test applies[/]: {reason}; the PB and "
                      "shares above describe where the answers sit in that order, not a "
                      "position effect", highlight=False)
        return
    level = f"alpha = {rows[0]['alpha']}" + (", Holm across groups" if by else "")
    biased = [
        name
        for name, r in zip(names, rows, strict=True)
        if r["pob_icm"].get("reject_holm", r["pob_icm"]["reject"])
        or r["pob_unbp"].get("reject_holm", r["pob_unbp"]["reject"])
    ]
    if biased:
        flagged = [n for n in biased if _order_dependent(rows[names.index(n)])]
        console.print(f"[bold red]Positional bias detected[/] ({level}) in: {'; '.join(biased)}"
                      + (f" -- but the discards depend on the order in {'; '.join(flagged)}:"
                         " see the warning above" if flagged else ""))
    else:
        console.print(f"[bold green]No positional bias detected[/] ({level})")
    _print_notes(rows, names, tests=True)


MSG_DISCARDS_ORDER = (
    "discards depend on the order shown in {where} (z = {z:+.2f}, p = {p:.3g}): PB, the "
    "position distribution, the positional share and POB-UNBP's bound describe the "
    "parseable answers; PB of all answers lies within +-{bound:.3f} of PB (sPB and PS "
    "held in validation; docs/validation-positional.md, 'Discards that depend on the "
    "answer')")


def _discard_line(r: dict[str, Any]) -> str:
    """``z (p); +-bound`` of ``discard_check``, ``-`` without discards."""
    c = r.get("discard_check")
    if c is None:
        return "-"
    test = "n/a" if c["z"] is None else f"{c['z']:+.2f} ({c['pvalue']:.3g})"
    return f"{test}; +-{c['pb_shift_bound']:.3f}"


def _order_dependent(r: dict[str, Any]) -> bool:
    """Whether the group's discard check rejects at its alpha."""
    c = r.get("discard_check")
    return c is not None and c["pvalue"] is not None and c["pvalue"] <= r["alpha"]


def _warn_discards(rows: list[dict[str, Any]], names: list[str]) -> None:
    """One warning per group whose discards depend on the order (at its alpha)."""
    for name, r in zip(names, rows, strict=True):
        if _order_dependent(r):
            c = r["discard_check"]
            console.print("[yellow]warning:[/] " + MSG_DISCARDS_ORDER.format(
                where=name, z=c["z"], p=c["pvalue"], bound=c["pb_shift_bound"]),
                highlight=False)


def _topn_line(fmt: Callable[[dict[str, Any]], str]) -> Callable[[dict[str, Any]], str]:
    return lambda r: "n/a" if r["result"] is None else fmt(r["result"])


def print_rankings(rows: list[dict[str, Any]], by: list[str]) -> None:
    """A ranking run's ranked-list statistics per cell (``topn.json`` rows)."""
    lines: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("rankings / discarded",
         _topn_line(lambda t: f"{t['n_evaluations']} / {t['n_discarded']}")),
        ("Kendall tau (position, rank)", _topn_line(lambda t: fmt_estimate(
            t["kendall_tau"]))),
        ("rank bias RB", _topn_line(lambda t: fmt_estimate(t["rank_bias"]))),
        ("RB test p (Holm)", lambda r: "n/a" if r["pvalue_holm"] is None
         else f"{r['pvalue_holm']:.4g}"),
        ("displacement, first / last position", _topn_line(lambda t: (
            f"{t['displacement'][0]['value']:+.2f} / {t['displacement'][-1]['value']:+.2f}"))),
    ]
    _print_groups("Ranked lists (whole rankings; the top-1 measures above read their "
                  "first item)", rows, by, lines)


def _split_note(row: dict[str, Any]) -> str | None:
    """Why the row's strong/soft split is not identified (``analyze``'s note), or None."""
    spb = row.get("spb")
    return spb.get("note") if isinstance(spb, dict) else None


def _spread_note(row: dict[str, Any]) -> str | None:
    """What sPB's upper end would be if the floor were a position effect spread over the
    unfavoured positions (``analyze``'s ``upper_if_spread``), when it matters."""
    from ..report import spread_shown

    spb = row.get("spb")
    if not isinstance(spb, dict) or _split_note(row) is not None:
        return None
    upper, high, floor = spb.get("upper_if_spread"), spb.get("ci_high"), spb.get("floor")
    if not all(isinstance(v, (int, float)) for v in (upper, high, floor)):
        return None
    if not spread_shown(float(upper), float(high)):  # type: ignore[arg-type]
        return None
    return (f"{floor:.0%} of the selections at the unfavoured positions land uniformly, as "
            "decoding noise does; if they were a position effect spread over several "
            f"positions (which the data cannot tell apart), sPB could be up to {upper:.1%}")


def _split_cell(row: dict[str, Any], key: str) -> str:
    """sPB or soft bias with its CI; ``not identified [low, high]`` (the identification
    bounds) when the split is not identified -- its reason is printed below the table."""
    if _split_note(row) is None:
        return fmt_estimate(row[key])
    est = row[key]
    if _na(est, "ci_low") or _na(est, "ci_high"):
        return "not identified"
    return f"not identified [{est['ci_low']:.3f}, {est['ci_high']:.3f}]"


def _print_notes(rows: list[dict[str, Any]], names: list[str], *, tests: bool) -> None:
    """Below the table: why a split is not identified, then the verdict in plain words
    (what the model did by position, whether that is chance, how much position decided)."""
    from rich.markup import escape

    from ..exceptions import InputError
    from ..report import plain_summary

    notes: dict[str, list[str]] = {}
    for name, r in zip(names, rows, strict=True):
        if (note := _split_note(r)) is not None:
            notes.setdefault(note, []).append(name)
    for note, groups in notes.items():
        where = groups[0] if len(groups) == 1 else f"{len(groups)} groups: {'; '.join(groups)}"
        console.print(f"[yellow]sPB and soft bias ({escape(where)}):[/] {escape(note)}",
                      highlight=False)
    for name, r in zip(names, rows, strict=True):
        if (spread := _spread_note(r)) is not None:
            console.print(f"[yellow]sPB ({escape(name)}):[/] {escape(spread)}", highlight=False)
    try:
        words = plain_summary(rows, tests=tests)
    except (InputError, KeyError, TypeError, ValueError):  # rows the words cannot read:
        return  # the table above has said everything already
    for paragraph in words.split("\n\n") if words else ():
        # wrapped here, at spaces only: "p < 0.001" and "95% CI" hold non-breaking spaces
        console.print()
        console.print(escape(textwrap.fill(paragraph, width=max(console.width - 1, 40),
                                           break_on_hyphens=False, break_long_words=False)),
                      highlight=False, soft_wrap=True)


def _group_name(row: dict[str, Any], by: list[str]) -> str:
    return ", ".join(f"{c}={row[c]}" for c in by) or "all"


def _print_groups(title: str, rows: list[dict[str, Any]], by: list[str],
                  lines: list[tuple[str, Callable[[dict[str, Any]], str]]]) -> None:
    """The statistics of each group, readable at any terminal width.

    Keys with one value across the groups go to the title. When it fits
    ``console.width``: one table, a row per statistic, a column per group (headed by
    its varying keys; one group: a ``value`` column). Otherwise (many groups, e.g. a
    study grid): a row per group, its varying keys as the first columns, and the
    statistics split over as many tables as needed to fit (:func:`_print_packed`).
    No cell is cut short.
    """
    from rich.measure import Measurement

    varying = [c for c in by if len({str(r[c]) for r in rows}) > 1]
    table = Table(title=_titled(title, rows[0], [c for c in by if c not in varying]))
    table.add_column("statistic", overflow="fold")
    for r in rows:
        table.add_column(_group_name(r, varying) if varying else "value", justify="right",
                         overflow="fold")
    for label, cell in lines:
        table.add_row(label, *[cell(r) for r in rows])
    # natural width (Measurement clamps to the options' max_width: measure unbounded)
    unbounded = console.options.update(width=10**6)
    if Measurement.get(console, unbounded, table).maximum <= console.width:
        console.print(table)
        return
    varying = varying or by[:1]
    title = _titled(title, rows[0], [c for c in by if c not in varying])
    keys = [(_SHORT_KEYS.get(c, c), [_key_text(r[c]) for r in rows]) for c in varying]
    # a statistic that is also a key column (``k`` with ``--by k``) is printed once
    stats = [(label, [cell(r) for r in rows]) for label, cell in lines
             if label not in varying]
    _print_packed(title, keys, stats)


def _titled(title: str, row: dict[str, Any], constant: list[str]) -> str:
    """``title (key=value, ...)`` for the keys every group shares."""
    if not constant:
        return title
    return title + " (" + ", ".join(f"{c}={row[c]}" for c in constant) + ")"


#: Short headers of group keys in the packed tables.
_SHORT_KEYS = {"temperature": "T"}


def _key_text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _print_packed(title: str, keys: list[tuple[str, list[str]]],
                  stats: list[tuple[str, list[str]]]) -> None:
    """Tables with the ``keys`` columns first and the ``stats`` columns split to fit.

    Column widths are the longest cell (or header word); statistics are packed
    greedily, in order, into tables no wider than ``console.width``. A single column
    wider than what is left (a long position-share list) wraps at spaces, and every
    column folds rather than ending in an ellipsis.
    """
    from rich.cells import cell_len

    def width(header: str, cells: list[str]) -> int:
        words = [cell_len(w) for w in header.split()] or [0]
        return max([*words, *(cell_len(c) for c in cells)])

    overhead = 3  # one space of padding each side and a border
    base = 1 + sum(width(h, c) + overhead for h, c in keys)
    room = console.width - base
    if room < 12 + overhead:  # the keys alone fill the terminal: one block per group
        for j in range(len(stats[0][1]) if stats else 0):
            name = ", ".join(f"{h}={c[j]}" for h, c in keys)
            block = Table(title=f"{title}: {name}" if name else title)
            block.add_column("statistic", overflow="fold")
            block.add_column("value", justify="right", overflow="fold")
            for header, cells in stats:
                block.add_row(header, cells[j])
            console.print(block)
        return
    chunks: list[list[tuple[str, list[str]]]] = [[]]
    used = 0
    for stat in stats:
        need = width(*stat) + overhead
        if chunks[-1] and used + need > room:
            chunks.append([])
            used = 0
        chunks[-1].append(stat)
        used += need
    n = len(chunks)
    for i, chunk in enumerate(chunks, start=1):
        table = Table(title=title + (f" [{i}/{n}]" if n > 1 else ""))
        # fixed widths: the longest cell or header word, so headers wrap at spaces and
        # cells fit; only a statistic wider than the room left folds (never an ellipsis)
        for header, cells in keys:
            table.add_column(header, overflow="fold", width=width(header, cells))
        for header, cells in chunk:
            table.add_column(header, justify="right", overflow="fold",
                             width=max(1, min(width(header, cells), room - overhead)))
        for j in range(len(keys[0][1]) if keys else len(chunk[0][1])):
            table.add_row(*[c[j] for _, c in keys], *[c[j] for _, c in chunk])
        console.print(table)


def fmt_estimate(est: dict[str, Any]) -> str:
    if _na(est, "value"):
        return "n/a"
    if _na(est, "ci_low"):  # too few queries for an interval (``ci_reason``)
        return f"{est['value']:.3f} (no CI)"
    return f"{est['value']:.3f} [{est['ci_low']:.3f}, {est['ci_high']:.3f}]"


def _na(stat: dict[str, Any], key: str) -> str:
    """``"n/a"`` when the statistic was not computed (its ``key`` is null or nan, as in
    the rows before they are written as JSON), else ``""``."""
    value = stat[key]
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else ""


def print_skipped(analysis: Any) -> None:
    """A table the statistics could not use: the reason and the command to retry."""
    if analysis is not None and analysis.skipped is not None:
        err_console.print(f"[yellow]analysis skipped:[/] {analysis.skipped}",
                          highlight=False)


def print_sequential_verdict(doc: dict[str, Any]) -> None:
    """The verdict of a sequential run: its anytime-valid decisions, not the
    fixed-sample tests printed above it."""
    biased = [f"{c['model']} k={c['k']} t={c['temperature']} {c['condition']}"
              for c in doc["cells"] if c["decision"] == "rejected"]
    alpha = doc.get("options", {}).get("alpha", doc["alpha_per_cell"] * doc["n_cells"])
    level = f"sequential test, alpha = {alpha} over {doc['n_cells']} cell(s)"
    if biased:
        console.print(f"[bold red]Positional bias detected[/] ({level}) in: {'; '.join(biased)}")
    else:
        console.print(f"[bold green]No positional bias detected[/] ({level}; the budget "
                      "ran out before the evidence reached the threshold)")


def print_sequential(doc: dict[str, Any]) -> None:
    """One line per cell of RUN_DIR/sequential.json."""
    for c in doc["cells"]:
        pb = c.get("pb") or {}
        on = "choice probabilities" if c.get("answers") == "exact" else "answers"
        width = "" if pb.get("ci_low") is None else (
            f"; PB on the {on} {pb['value']:.3f} [{pb['ci_low']:.3f}, {pb['ci_high']:.3f}] "
            f"({pb['n_queries']} queries)")
        used, at = c.get("evaluations_used", 0), (c.get("evaluations_at_checkpoints") or [0])[-1]
        when = (f"after {at} evaluations, ran to {used} for PB's interval"
                if c.get("reject") and width and 0 < at < used else f"after {used} evaluations")
        err_console.print(
            f"[bold]sequential[/] {c['model']} k={c['k']} t={c['temperature']} "
            f"{c['condition']}: {c['decision']} {when} (E = {c.get('e_value', 1.0):.3g}, "
            f"threshold {1 / doc['alpha_per_cell']:.3g}){width}", highlight=False)


#: Metrics shown in the study's summary table (the tidy table has all of them).
_STUDY_SUMMARY = ("pob_unbp_L", "pb", "spb", "spb_noise_floor")


def _fmt_row(r: Any) -> str:

    if r is None or not math.isfinite(r["estimate"]):
        return "n/a"
    ci = "" if not math.isfinite(r["ci_low"]) else f" [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
    p = "" if not math.isfinite(r["p_holm"]) else f" p={r['p_holm']:.3g}"
    return f"{r['estimate']:.3f}{ci}{p}"


def print_study(study: Any) -> None:
    """Rich tables: per cell (full analysis) and the comparisons, full vs complete case."""
    frame = study.table
    full = frame[frame["analysis"] == "full"]
    cells = full[full["metric"].isin(_STUDY_SUMMARY)]
    keys: list[tuple[str, list[str]]] = [(h, []) for h in ("model", "k", "T", "condition")]
    stats: list[tuple[str, list[str]]] = [(m, []) for m in _STUDY_SUMMARY]
    for key, part in cells.groupby(["model", "k", "temperature", "condition"], sort=True):
        by_metric = {r["metric"]: r for r in part.to_dict(orient="records")}
        for (_, column), text in zip(keys, (str(key[0]), str(key[1]), f"{key[2]:g}",
                                            str(key[3])), strict=True):
            column.append(text)
        for (metric, column) in stats:
            column.append(_fmt_row(by_metric.get(metric)))
    if keys[0][1]:
        _print_packed("Positional study: cells (full analysis)", keys, stats)
    comp = frame[frame["metric"] == "spb_difference"]
    if len(comp):
        ctab = Table(title="Counterfactual comparisons: per-instance sPB difference "
                     "(Hodges-Lehmann [CI], Holm p; full | complete case)")
        for col in ("model", "k", "T", "comparison", "full", "complete case", "note"):
            ctab.add_column(col, justify="left" if col in ("comparison", "note") else "right",
                            overflow="fold")
        for key, part in comp.groupby(["model", "k", "temperature", "condition"], sort=True):
            by_analysis = {r["analysis"]: r for r in part.to_dict(orient="records")}
            full_row = by_analysis.get("full")
            note = ""
            if full_row is not None and not _finite(full_row["estimate"]):
                note = "skipped" if full_row["n_queries"] == 0 else "no change"
            ctab.add_row(str(key[0]), str(key[1]), f"{key[2]:g}", str(key[3]),
                         _fmt_row(full_row), _fmt_row(by_analysis.get("complete_case")), note)
        console.print(ctab)
    for reason in sorted({str(r["reason"]) for r in study.skipped}):
        console.print(f"[yellow]not computed:[/] {reason}", highlight=False)
    s = study.settings
    console.print(f"complete cases: {s['n_queries_complete']} queries "
                  f"({s['n_queries_with_discards']} with a discarded generation left out)")


def _finite(x: Any) -> bool:
    """True for a finite number."""

    return isinstance(x, int | float) and math.isfinite(x)


def print_mitigation(result: dict[str, Any]) -> None:
    def est(e: dict[str, Any] | None) -> str:
        if e is None or e.get("value") is None:
            return "n/a"
        lo, hi = e.get("ci_low"), e.get("ci_high")
        ci = "" if lo is None or hi is None else f" [{lo:.3f}, {hi:.3f}]"
        return f"{e['value']:.3f}{ci}"

    for g in result["groups"]:
        table = Table(title=f"Mitigation: {g['model']}, k={g['k']}, t={g['temperature']:g}, "
                      f"{g['condition']} (95% CIs, query bootstrap)")
        truth = any(a.get("inside_true_set") for a in g["arms"])
        for col in ("mitigation", "PB", "sPB", "PS", "inside unmitigated R",
                    "IoU of R", *(("inside TRUE R",) if truth else ()), "calls x", "tokens x"):
            table.add_column(col, justify="right")
        for a in g["arms"]:
            tok = a["tokens_multiplier"]
            table.add_row(a["mitigation"], est(a["pb"]), est(a["spb"]), est(a["ps"]),
                          est(a["inside_unmitigated_set"]), est(a["iou_relevance_sets"]),
                          *((est(a.get("inside_true_set")),) if truth else ()),
                          f"{a['calls_multiplier']:.2f}",
                          "n/a" if tok is None else f"{tok:.2f}")
        console.print(table)
