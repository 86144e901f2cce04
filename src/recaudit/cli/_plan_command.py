"""``recaudit positional plan``: an audit's size and cost before its first call.

Thin: parses and bounds the options, reads a pilot run through :mod:`._pilot`, calls
:func:`recaudit.positional.plan_audit` and prints the designs side by side (``--json``:
the list of designs, each self-contained for a run). A pilot that recorded
choice-probability vectors gives two effects: its answers' for the sampled designs, its
vectors' for the exact ones; each design says which it was planned with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from ..exceptions import InputError
from ._common import err_console, print_json
from ._positional_tables import console

__all__ = ["BOUNDS", "parse_price", "plan_command"]

#: (smallest, largest) accepted value of every numeric option. k: the simulator codes
#: orders up to k = 20 (the paper's largest); the others bound the work a plan does.
BOUNDS: dict[str, tuple[float, float]] = {
    "--k": (2, 20),
    "--orders": (1, 10_000),
    "--temperatures": (1, 100),
    "--p-bias": (0.0, 1.0),
    "--pb": (0.0, 0.95),
    "--power": (0.01, 0.999),
    "--alpha": (1e-6, 0.5),
    "--queries": (2, 1_000_000),
    "--half-width": (1e-4, 0.5),
    "--reps": (20, 20_000),
    "--half-width-reps": (10, 5_000),
    "--prompt-tokens": (0.0, 10_000_000.0),
    "--completion-tokens": (0.0, 10_000_000.0),
    "--calls-per-s": (1e-6, 1_000_000.0),
    "--price-per-mtok": (0.0, 100_000.0),
    "--seed": (0, 2**63 - 1),
    "--batch-discount": (0.01, 1.0),
}

MSG_BOUND = ("`{option}` must be between {low:g} and {high:g} (the largest accepted "
             "value is {high:g}), got {value!r}")
MSG_EFFECT = ("give the effect to detect: `--p-bias P` (spec section 8), `--pb X` (a "
              "total-variation size) or `--pilot RUN` (estimated from a pilot run)")
MSG_TWO_EFFECTS = "give one effect: `--p-bias`, `--pb` or `--pilot`, not {given}"
MSG_WIDTH_OR_QUERIES = ("give `--half-width` (size for a CI width) or `--queries` (a size "
                        "to evaluate), not both")
MSG_WIDTH_SEQUENTIAL = ("`--half-width` sizes the fixed designs (a CI width is a fixed-sample "
                        "target); drop `--sequential` (`run --sequential --ci-width` stops "
                        "a cell once PB's CI is that narrow)")
MSG_PRICE = ("`--price-per-mtok` must be one price or IN/OUT prices per million tokens, "
             "e.g. 0.15 or 0.15/0.60; got {value!r}")
NOTE_NO_ANSWERS = ("the pilot's answers give no effect ({reason}); the sampled designs "
                   "are planned with its vectors' effect")
def _bounded(option: str, value: float | None) -> None:
    if value is None:
        return
    low, high = BOUNDS[option]
    if not low <= value <= high:  # also refuses nan
        raise InputError(MSG_BOUND.format(option=option, low=low, high=high, value=value))


def parse_price(text: str | None) -> tuple[float | None, float | None]:
    """``"0.15"`` -> (0.15, 0.15); ``"0.15/0.60"`` or ``"0.15,0.60"`` -> (0.15, 0.60)."""
    if text is None:
        return None, None
    parts = text.replace(",", "/").split("/")
    try:
        prices = [float(p) for p in parts]
    except ValueError:
        raise InputError(MSG_PRICE.format(value=text)) from None
    if len(prices) not in (1, 2):
        raise InputError(MSG_PRICE.format(value=text))
    for p in prices:
        _bounded("--price-per-mtok", p)
    return prices[0], prices[-1]


def _check_effect(p_bias: float | None, pb: float | None, pilot: Path | None) -> None:
    """Exactly one effect: ``--p-bias``, ``--pb`` or ``--pilot``."""
    given = [name for name, v in (("--p-bias", p_bias), ("--pb", pb), ("--pilot", pilot))
             if v is not None]
    if not given:
        raise InputError(MSG_EFFECT)
    if len(given) > 1:
        raise InputError(MSG_TWO_EFFECTS.format(given=" and ".join(given)))


def _designs(exact: bool, sequential: bool, half_width: float | None = None,
             queries: int | None = None) -> list[str]:
    """All designs; with a flag, the fixed baseline and the flagged design(s); for a
    CI width (``--half-width``), the fixed designs."""
    if half_width is not None:
        if queries is not None:
            raise InputError(MSG_WIDTH_OR_QUERIES)
        if sequential:
            raise InputError(MSG_WIDTH_SEQUENTIAL)
        return ["fixed", "exact"]
    if exact and sequential:
        return ["fixed", "exact", "exact+sequential"]
    if exact:
        return ["fixed", "exact"]
    if sequential:
        return ["fixed", "sequential"]
    return ["fixed", "sequential", "exact", "exact+sequential"]


def plan_command(
    k: Annotated[int, typer.Option("--k", help="Candidates per query.")] = 5,
    orders: Annotated[int, typer.Option("--orders", help="Random orders (calls) per query.")
                      ] = 20,
    temperatures: Annotated[int, typer.Option(
        "--temperatures", help="Temperature cells audited alike (calls multiply; each "
        "cell tested at alpha / temperatures).")] = 1,
    p_bias: Annotated[float | None, typer.Option(
        "--p-bias", help="Effect: the spec's section-8 p_bias (one favoured position).",
        show_default=False)] = None,
    pb: Annotated[float | None, typer.Option(
        "--pb", help="Effect: PB, the total-variation distance of positions from uniform.",
        show_default=False)] = None,
    pilot: Annotated[Path | None, typer.Option(
        "--pilot", help="Effect, tokens and rate from a pilot run folder.",
        show_default=False)] = None,
    pilot_model: Annotated[str | None, typer.Option(
        "--pilot-model", help="The pilot's model to plan from (when it has several).",
        show_default=False)] = None,
    power: Annotated[float, typer.Option("--power", help="Target power per cell.")] = 0.8,
    alpha: Annotated[float, typer.Option("--alpha", help="Family-wise level.")] = 0.05,
    queries: Annotated[int | None, typer.Option(
        "--queries", help="Evaluate this many queries per cell instead of sizing for "
        "--power.", show_default=False)] = None,
    half_width: Annotated[float | None, typer.Option(
        "--half-width", help="Size the fixed designs for PB's 95% CI half-width at most "
        "this (e.g. 0.01 for +-1 pp) instead of --power.", show_default=False)] = None,
    exact: Annotated[bool, typer.Option(
        "--exact", help="Plan exact mode (choice probabilities) beside the fixed design.")
    ] = False,
    sequential: Annotated[bool, typer.Option(
        "--sequential", help="Plan the sequential design beside the fixed one.")] = False,
    price_per_mtok: Annotated[str | None, typer.Option(
        "--price-per-mtok", help="Price per million tokens: one, or IN/OUT (e.g. "
        "0.15/0.60).", show_default=False)] = None,
    batch: Annotated[bool, typer.Option(
        "--batch", help="Price the calls as a provider batch (OpenAI Batch API and its "
        "clones: half price, answers within 24 h; see --batch-discount).")] = False,
    batch_discount: Annotated[float | None, typer.Option(
        "--batch-discount", help="Share of the price a batch costs (implies --batch; "
        "default 0.5).", show_default=False)] = None,
    prompt_tokens: Annotated[float | None, typer.Option(
        "--prompt-tokens", help="Prompt tokens per call (default: the pilot's mean).",
        show_default=False)] = None,
    completion_tokens: Annotated[float | None, typer.Option(
        "--completion-tokens", help="Completion tokens per call (default: the pilot's).",
        show_default=False)] = None,
    calls_per_s: Annotated[float | None, typer.Option(
        "--calls-per-s", help="Backend rate (default: the pilot's).", show_default=False)
    ] = None,
    reps: Annotated[int, typer.Option(
        "--reps", help="Simulated paths of the sequential test.")] = 400,
    half_width_reps: Annotated[int, typer.Option(
        "--half-width-reps", help="Simulated data sets per PB half-width.")] = 100,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the simulations.")] = 0,
    json_output: Annotated[bool, typer.Option("--json", help="Print the designs as JSON.")
                           ] = False,
) -> None:
    """Before the first call: queries for a target power (or for PB's CI half-width,
    --half-width; or the power and half-width at --queries), calls, tokens, wall time
    and money for each design."""
    from ..positional import CallCost, plan_audit

    for option, value in (("--k", k), ("--orders", orders), ("--temperatures", temperatures),
                          ("--p-bias", p_bias), ("--pb", pb), ("--power", power),
                          ("--alpha", alpha), ("--queries", queries), ("--reps", reps),
                          ("--half-width", half_width),
                          ("--half-width-reps", half_width_reps),
                          ("--prompt-tokens", prompt_tokens),
                          ("--completion-tokens", completion_tokens),
                          ("--calls-per-s", calls_per_s), ("--seed", seed),
                          ("--batch-discount", batch_discount)):
        _bounded(option, value)
    _check_effect(p_bias, pb, pilot)
    designs = _designs(exact, sequential, half_width, queries)
    price_in, price_out = parse_price(price_per_mtok)
    effect, exact_effect, measured = _effect(k, p_bias, pb, pilot, pilot_model, seed)
    from ..audit import BATCH_DISCOUNT

    chosen = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
              "calls_per_s": calls_per_s}
    cost = CallCost(**{n: v if v is not None else measured.get(n) for n, v in chosen.items()},
                    price_in=price_in, price_out=price_out,
                    source="pilot" if pilot is not None else "given",
                    batch_discount=batch_discount if batch_discount is not None
                    else BATCH_DISCOUNT if batch else 1.0)
    from ..audit import SequentialOptions

    plan = plan_audit(effect, exact_effect=exact_effect, orders=orders,
                      temperatures=temperatures, alpha=alpha,
                      power=power, queries=queries, designs=designs, cost=cost, reps=reps,
                      half_width_reps=half_width_reps, half_width=half_width,
                      round_evaluations=SequentialOptions().round_evaluations, rng=seed)
    if json_output:
        print_json(plan.to_list())
        return
    print_plan(plan.to_dict())


def _effect(k: int, p_bias: float | None, pb: float | None, pilot: Path | None,
            pilot_model: str | None, seed: int) -> tuple[Any, Any, dict[str, Any]]:
    """The effect to plan for, the exact designs' when it differs (a pilot's vectors';
    else None) and, from a pilot, its measured tokens and rate."""
    from ..positional import Effect

    if pilot is not None:
        from ._pilot import read_pilot

        run = read_pilot(pilot, k=k, model=pilot_model)
        measured = {"prompt_tokens": run.prompt_tokens,
                    "completion_tokens": run.completion_tokens,
                    "calls_per_s": run.calls_per_s}
        return (*_pilot_effects(run.table, run.exact, seed), measured)
    if p_bias is not None:
        return Effect.from_p_bias(p_bias, k=k), None, {}
    return Effect(k=k, pb=float(pb or 0.0), source="pb"), None, {}


def _pilot_effects(table: Any, exact: bool, seed: int) -> tuple[Any, Any]:
    """The pilot's answers' effect (the sampled designs') and, when it recorded
    choice-probability vectors, theirs (the exact designs'; else None: the answers'
    plans every design). Answers that give no effect beside vectors: the vectors'
    plans every design, with a note."""
    from ..positional import effect_from_evaluations

    vectors = effect_from_evaluations(table, exact=True, rng=seed) if exact else None
    try:
        answers = effect_from_evaluations(table, exact=False, rng=seed)
    except InputError as exc:
        if vectors is None:
            raise
        note = NOTE_NO_ANSWERS.format(reason=escape(str(exc)))
        err_console.print(f"[yellow]note:[/] {note}", highlight=False)
        return vectors, None
    return answers, vectors


def _fmt(value: Any, spec: str, none: str = "-") -> str:
    return none if value is None else format(value, spec)


def _compact(value: float | None) -> str:
    """1234 -> 1.2k, 66_000 -> 66k, 1_900_000 -> 1.9M."""
    if value is None:
        return "-"
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            digits = 0 if abs(value) >= 10 * scale else 1
            return f"{value / scale:.{digits}f}{suffix}"
    return f"{value:.0f}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _effect_title(eff: dict[str, Any], exact: dict[str, Any] | None) -> str:
    """The planned effect(s) for the table's title."""
    source = {"p_bias": "section-8 p_bias", "pb": "PB", "pilot": "pilot"}[eff["source"]]
    if exact is not None:
        return (f"PB = {eff['pb']:.4f} on the {eff.get('measured_on') or 'answers'} "
                f"(sampled designs), {exact['pb']:.4f} on the "
                f"{exact.get('measured_on') or 'vectors'} (exact designs), {source}")
    on = f" on the {eff['measured_on']}" if eff.get("measured_on") else ""
    return f"PB = {eff['pb']:.4f} (p_bias {eff['p_bias']:.4f}, {source}{on})"


def print_plan(doc: dict[str, Any]) -> None:
    """The designs side by side (``AuditPlan.to_dict()``), the cheapest adequate marked
    with ``*``; readable at 80 columns. A pilot's plan says in the title what each
    design's effect was measured on (the sampled designs the answers, the exact ones the
    vectors; ``--json`` has it per design)."""
    eff = doc["effect"]
    d0 = doc["designs"][0]
    width = doc.get("target_half_width")
    target = (f"power at {doc['queries_given']} queries" if doc["queries_given"]
              else f"queries for PB ± {width:g}" if width is not None
              else f"queries for {doc['target_power']:.0%} power")
    table = Table(title=f"k = {d0['k']}, {d0['orders']} orders/query, {d0['temperatures']} "
                  f"cell(s), alpha = {d0['alpha']:g}; "
                  f"{_effect_title(eff, doc.get('exact_effect'))}; {target}",
                  box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    designs = doc["designs"]
    columns = ["design", "queries", "power", "calls", "PB ±"]
    if any(d["prompt_tokens"] is not None for d in designs):
        columns.append("tokens")
    columns += [c for c, key in (("time", "wall_s"), ("money", "money"))
                if any(d[key] is not None for d in designs)]
    for col in columns:
        table.add_column(col, justify="left" if col == "design" else "right", no_wrap=True)
    for d in designs:
        cells = {"design": d["design"] + (" *" if d["cheapest"] else ""),
                 "queries": _fmt(d["queries"], ","), "power": _fmt(d["power"], ".2f"),
                 "calls": _compact(d["calls"]) + (
                     f"/{_compact(d['calls_max'])}" if "sequential" in d["design"]
                     and d["calls_max"] is not None else ""),
                 "PB ±": _fmt(d["pb_half_width"], ".4f"),
                 "tokens": "-" if d["prompt_tokens"] is None else
                 f"{_compact(d['prompt_tokens'])}/{_compact(d['completion_tokens'])}",
                 "time": _duration(d["wall_s"]), "money": _fmt(d["money"], ",.2f")}
        table.add_row(*(cells[c] for c in columns))
    console.print(table)
    simulated = [d for d in designs if d["power_se"] is not None]
    legend = ["power simulated: Monte-Carlo SE " + ", ".join(
        f"{d['power_se']:.3f} ({d['design']})" for d in simulated)] if simulated else []
    if any("sequential" in d["design"] for d in designs):
        legend.append("sequential designs: calls expected/budget")
    legend.append("PB ±: half-width of PB's 95% CI; tokens: prompt/completion")
    discount = float(doc["cost"].get("batch_discount", 1.0))
    if discount < 1.0:
        legend.append(f"money at the batch price ({discount:g} x the live price; the "
                      "provider answers within its batch window, e.g. 24 h)")
    if any(d["cheapest"] for d in designs):
        goal = (f"PB ± {width:g}" if width is not None
                else f"{doc['target_power']:.0%} power")
        legend.insert(0, f"* cheapest design reaching {goal}")
    for line in legend:
        console.print(line, highlight=False)
    for d in doc["designs"]:
        if d["note"]:
            err_console.print(f"[yellow]note:[/] {d['design']}: {d['note']}", highlight=False)
    for note in doc["notes"]:
        err_console.print(f"[yellow]note:[/] {note}", highlight=False)
