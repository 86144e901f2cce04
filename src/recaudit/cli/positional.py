"""``recaudit positional ...`` commands: ``analyze``, ``simulate``, ``run``, ``demo``.

Thin: each command parses its options, calls :mod:`recaudit.positional` and prints.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text
from typer.core import TyperCommand

from ..exceptions import InputError
from ._analysis_options import (
    Alpha,
    Epsilon,
    NBoot,
    NResamples,
    Seed,
    SpbRepeats,
    Tau,
    analysis_options,
)
from ._common import err_console, exit_on_error, print_json

__all__ = ["analyze_command", "app", "demo_command", "mitigate_command", "run_command",
           "simulate_command", "study_command", "topn_command"]

app = typer.Typer(help="The positional study.", no_args_is_help=True)
console = Console()

MSG_NUMBER_LIST = "`{option}`: {value!r} is not a list of numbers"

class _MultiValueCommand(TyperCommand):
    """Lets ``--k 5 10 15 20`` give several values to one option.

    Click options take a fixed number of values; before parsing, the tokens after a
    multi-value option (up to the next ``--option``) are joined with commas, and the
    option's callback splits them again. ``--k 5 --k 10`` and ``--k 5,10`` work too.
    """

    multi_value_options: tuple[str, ...] = ("--k", "--queries", "--p-bias")

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # click.Context
        joined: list[str] = []
        i = 0
        while i < len(args):
            token = args[i]
            joined.append(token)
            i += 1
            if token in self.multi_value_options:
                values = []
                while i < len(args) and not args[i].startswith("--"):
                    values.append(args[i])
                    i += 1
                if values:
                    joined.append(",".join(values))
        return super().parse_args(ctx, joined)


def _number_list(kind: Callable[[str], Any], option: str) -> Callable[[list[str]], list[Any]]:
    def parse(values: list[str]) -> list[Any]:
        out = []
        for value in values:
            for token in value.replace(",", " ").split():
                try:
                    out.append(kind(token))
                except ValueError:
                    raise typer.BadParameter(
                        MSG_NUMBER_LIST.format(option=option, value=token)
                    ) from None
        return out

    return parse


def _progress(quiet: bool) -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
        disable=quiet,
    )


@app.command("analyze")
@exit_on_error
def analyze_command(
    evals: Annotated[Path, typer.Argument(
        help="Evaluations table (.csv or .parquet), or a run folder (its "
        "evaluations.parquet).")],
    by: Annotated[
        str | None, typer.Option(help="Analyse each group of these columns, e.g. model,k.")
    ] = None,
    alpha: Alpha = 0.05,
    epsilon: Epsilon = 0.0,
    tau: Tau = "auto",
    spb_repeats: SpbRepeats = None,
    n_resamples: NResamples = 9999,
    n_boot: NBoot = 2000,
    seed: Seed = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    quiet: Annotated[bool, typer.Option(help="No progress bars.")] = False,
    fail_on_bias: Annotated[
        bool, typer.Option(help="Exit 1 if any test rejects (Holm-adjusted with --by).")
    ] = False,
    exact: Annotated[bool, typer.Option(
        "--exact", help="Use each evaluation's choice-probability vector (column "
        "choice_probs) instead of the sampled choice: POB-UNBP, PS, PB, sPB without "
        "decoding noise; no POB-ICM (docs/exact-and-sequential.md).")] = False,
) -> None:
    """Test an evaluations table for positional bias (POB-ICM, POB-UNBP, PS, PB, sPB)."""
    from ..positional import analyze, analyze_groups, read_table

    options = analysis_options(alpha=alpha, epsilon=epsilon, tau=tau, spb_repeats=spb_repeats,
                               n_resamples=n_resamples, n_boot=n_boot)
    if evals.is_dir():
        evals = evals / "evaluations.parquet"
        if not evals.is_file():
            raise InputError(f"{evals.parent}: no evaluations.parquet; pass the evaluations "
                             "table or a `recaudit positional run` folder")
    columns = [c.strip() for c in by.split(",") if c.strip()] if by else []
    if exact:
        from ..positional import analyze_exact, analyze_exact_groups
        from ..positional._analyze_exact import read_exact_table

        _analyze_and_print(read_exact_table(evals), columns, single=analyze_exact,
                           grouped=analyze_exact_groups, label=" (exact)",
                           printer=_print_exact, options=options, seed=seed, quiet=quiet,
                           json_output=json_output, fail_on_bias=fail_on_bias)
        return
    _analyze_and_print(read_table(evals), columns, single=analyze, grouped=analyze_groups,
                       label="", printer=_print_analysis, options=options, seed=seed,
                       quiet=quiet, json_output=json_output, fail_on_bias=fail_on_bias)


def _analyze_and_print(table: Any, columns: list[str], *, single: Callable[..., Any],
                       grouped: Callable[..., Any], label: str,
                       printer: Callable[[list[dict[str, Any]], list[str]], None],
                       options: Any, seed: int | None, quiet: bool, json_output: bool,
                       fail_on_bias: bool) -> None:
    """`analyze` in either mode: ``single`` (one group) or ``grouped`` (``--by``, Holm)
    with a progress bar, then JSON or ``printer``; exit 1 on a rejection with
    ``--fail-on-bias``."""
    with _progress(quiet or json_output) as bar:
        if columns:
            n_groups = (int(table.groupby(columns, dropna=False).ngroups)
                        if all(c in table.columns for c in columns) else 1)
            task = bar.add_task(f"analysing groups{label}", total=n_groups)
            result = grouped(table, options, by=columns, rng=seed,
                             progress=lambda n: bar.advance(task, n))
            rows = result.to_list()
        else:
            task = bar.add_task(f"analysing{label}", total=1)
            result = single(table, options, rng=seed)
            bar.advance(task)
            rows = [result.to_dict()]
    if json_output:
        print_json(rows if columns else rows[0])
    else:
        printer(rows, columns)
    if fail_on_bias and result.rejects:
        raise typer.Exit(code=1)


def _unbp_and_effect_lines(holm: str) -> list[tuple[str, Callable[[dict[str, Any]], str]]]:
    """The summary lines both modes print: POB-UNBP, PS, PB, sPB, position shares."""
    return [
        (
            f"POB-UNBP L, pp (p{holm})",
            lambda r: (
                _na(r["pob_unbp"], "L")
                or (
                    f"{100 * r['pob_unbp']['L']:.2f} "
                    f"({r['pob_unbp'].get('pvalue_holm', r['pob_unbp']['pvalue']):.3g})"
                )
            ),
        ),
        ("PS [95% CI]", lambda r: _fmt(r["ps"])),
        ("PB [95% CI]", lambda r: _fmt(r["pb"])),
        ("sPB [95% CI]", lambda r: _fmt(r["spb"])),
        ("soft bias [95% CI]", lambda r: _fmt(r["spb_soft"]) if "spb_soft" in r else "n/a"),
        ("position shares", lambda r: " ".join(f"{q:.2f}" for q in r["position_distribution"])),
    ]


def _print_exact(rows: list[dict[str, Any]], by: list[str]) -> None:
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
    verdict = f"alpha = {rows[0]['alpha']}" + (", Holm across groups" if by else "")
    biased = [_group_name(r, by) for r in rows
              if r["pob_unbp"].get("reject_holm", r["pob_unbp"]["reject"])]
    if biased:
        console.print(f"[bold red]Positional bias detected[/] by POB-UNBP on choice "
                      f"probabilities ({verdict}) in: {'; '.join(biased)}")
    else:
        console.print(f"[bold green]No positional bias detected[/] by POB-UNBP on choice "
                      f"probabilities ({verdict})")


@app.command("simulate", cls=_MultiValueCommand)
@exit_on_error
def simulate_command(
    k: Annotated[
        list[str], typer.Option("--k", help="Numbers of candidates, e.g. --k 5 10 15 20.")
    ] = ["5", "10", "15", "20"],  # noqa: B006 - typer reads defaults, never mutates them
    queries: Annotated[
        list[str], typer.Option(help="Numbers of queries, e.g. --queries 50 100 200.")
    ] = ["50", "100", "200"],  # noqa: B006
    perms: Annotated[int, typer.Option(help="Permutations (evaluations) per query.")] = 20,
    p_bias: Annotated[
        list[str], typer.Option(help="Probabilities of picking the first position.")
    ] = ["0", "0.05", "0.1"],  # noqa: B006
    reps: Annotated[int, typer.Option(help="Replications per grid point.")] = 1000,
    alpha: Annotated[float, typer.Option(help="Level of both tests.")] = 0.05,
    n_resamples: Annotated[int, typer.Option(help="POB-ICM shuffles per replication.")] = 199,
    seed: Annotated[int | None, typer.Option(help="Random seed.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    quiet: Annotated[bool, typer.Option(help="No progress bars.")] = False,
) -> None:
    """Run the simulation study: type-I error and power of POB-ICM and POB-UNBP."""
    from ..positional import power_study

    ks = _number_list(int, "--k")(k)
    qs = _number_list(int, "--queries")(queries)
    pbs = _number_list(float, "--p-bias")(p_bias)
    if not ks or not qs or not pbs:
        raise InputError("`--k`, `--queries` and `--p-bias` each need at least one value")
    total = len(ks) * len(qs) * len(pbs) * reps
    with _progress(quiet or json_output) as bar:
        task = bar.add_task("simulating", total=total)
        study = power_study(
            k=ks,
            queries=qs,
            perms=perms,
            p_bias=pbs,
            reps=reps,
            alpha=alpha,
            n_resamples=n_resamples,
            rng=seed,
            progress=lambda n: bar.advance(task, n),
        )
    if json_output:
        print_json([row.to_dict() for row in study.rows])
        return
    table = Table(title=f"Rejection rates at alpha = {alpha} ({reps} replications)")
    for col in ("test", "k", "queries", "p_bias", "rate", "95% Wilson CI"):
        table.add_column(col, justify="right")
    for r in study.rows:
        table.add_row(
            r.test,
            str(r.k),
            str(r.queries),
            f"{r.p_bias:g}",
            f"{r.rejection_rate:.3f}",
            f"[{r.ci_low:.3f}, {r.ci_high:.3f}]",
        )
    console.print(table)
    for (test, kk, pb), n in study.power_table(0.8).items():
        console.print(
            f"{test} k={kk} p_bias={pb:g}: 80% power at "
            + (f"{n} queries" if n is not None else "no grid point")
        )


def _print_analysis(rows: list[dict[str, Any]], by: list[str]) -> None:
    holm = ", Holm" if by else ""
    names = [_group_name(r, by) for r in rows]
    lines: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("k", lambda r: str(r["k"])),
        ("queries / evaluations", lambda r: f"{r['n_queries']} / {r['n_evaluations']}"),
        ("discarded generations", lambda r: str(r["n_discarded"])),
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
            lambda r: _na(r["pob_icm"], "statistic") or f"{r['pob_icm']['pvalue_asymptotic']:.3g}",
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
    verdict = f"alpha = {rows[0]['alpha']}" + (", Holm across groups" if by else "")
    biased = [
        name
        for name, r in zip(names, rows, strict=True)
        if r["pob_icm"].get("reject_holm", r["pob_icm"]["reject"])
        or r["pob_unbp"].get("reject_holm", r["pob_unbp"]["reject"])
    ]
    if biased:
        console.print(f"[bold red]Positional bias detected[/] ({verdict}) in: {'; '.join(biased)}")
    else:
        console.print(f"[bold green]No positional bias detected[/] ({verdict})")


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
    stats = [(label, [cell(r) for r in rows]) for label, cell in lines]
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


def _fmt(est: dict[str, Any]) -> str:
    if _na(est, "value"):
        return "n/a"
    if est["ci_low"] is None:  # too few queries for an interval (``ci_reason``)
        return f"{est['value']:.3f} (no CI)"
    return f"{est['value']:.3f} [{est['ci_low']:.3f}, {est['ci_high']:.3f}]"


def _na(stat: dict[str, Any], key: str) -> str:
    """``"n/a"`` when the statistic was not computed (its ``key`` is null), else ``""``."""
    return "n/a" if stat[key] is None else ""


# -- run and demo (llm-runner) -------------------------------------------------------

# -- run --------------------------------------------------------------------------


class _RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:.1f}/s" if speed else "-/s", style="progress.data.speed")


class _RichProgress:
    """The runner's live display: done/total, rate, ETA, discards, retries, failures."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task: Any = None
        self._embed: Any = None

    def embedding(self, done: int, total: int) -> None:
        """The catalog's embedding (first run over a catalog: about a minute)."""
        if self._embed is None:
            self._embed = self._progress.add_task("embedding the catalog", total=total,
                                                  discarded=0, retries=0, failed=0)
        self._progress.update(self._embed, completed=done)

    def start(self, total: int) -> None:
        self._task = self._progress.add_task("evaluating", total=total, discarded=0,
                                             retries=0, failed=0)

    def update(self, *, done: int, discarded: int, failed: int, retries: int) -> None:
        self._progress.update(self._task, completed=done, discarded=discarded,
                              retries=retries, failed=failed)


def _progress_display() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        _RateColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TimeElapsedColumn(),
        TextColumn("discards {task.fields[discarded]}  retries {task.fields[retries]}  "
                   "failed {task.fields[failed]}"),
        console=err_console,
        transient=False,
    )


def _say(live: bool) -> Callable[[str], None]:
    """The progress-phase printer: dim lines on stderr when live, else silent."""

    def say(msg: str) -> None:
        if live:
            err_console.print(f"[dim]{msg}...[/]", highlight=False)

    return say


def _design_notes(cfg: Any, live: bool) -> None:
    """Before a run: warn when the design leaves POB-ICM without power at some k."""
    from ..audit import design_notes

    if live:
        for note in design_notes(cfg):
            err_console.print(f"[yellow]note:[/] {note}", highlight=False)


def _execute(cfg: Any, *, out: Path, resume: bool, as_json: bool, quiet: bool,
             analyze: bool, sequential: Any = None, executor: str = "local",
             ray_address: str | None = None, options: Any = None,
             report: bool = False) -> None:
    """Run the audit with a progress display, then analyse (shared by run and demo)."""
    from ..audit import GROUP_BY, run_and_analyze

    live = not (quiet or as_json)
    _design_notes(cfg, live)
    settings: dict[str, Any] = {
        "out_dir": out, "resume": resume, "sequential": sequential, "executor": executor,
        "ray_address": ray_address, "analysis": "groups" if analyze else "none",
        "options": options}
    if live:
        with _progress_display() as display:
            done = run_and_analyze(cfg, progress=_RichProgress(display), on_phase=_say(live),
                                   **settings)
    else:
        done = run_and_analyze(cfg, **settings)
    result = done.audit
    if done.sequential is not None and live:
        _print_sequential(done.sequential)
        if analyze:
            err_console.print("[yellow]note:[/] after a sequential stop the fixed-sample "
                              "p-values below are descriptive only; the sequential decision "
                              "above is the valid test", highlight=False)
    if live:
        err_console.print(
            f"[green]done:[/] {result.planned} evaluations ({result.ok} valid, "
            f"{result.discarded} discarded; {result.ran_now} run now, "
            f"{result.summary.retries} retries; at most {cfg.concurrency} in flight) -> "
            f"{result.evaluations_path}", highlight=False,
        )
    _print_skipped(done.analysis)
    page = _write_report(result.run_dir) if report and done.analysis is not None \
        and done.analysis.rows is not None else None
    if as_json:
        print_json({**done.to_dict(), **({"report": str(page)} if page else {})})
        return
    if done.analysis is not None and done.analysis.rows is not None:
        _print_analysis(done.analysis.rows, list(GROUP_BY))
    elif live and not analyze:
        err_console.print(f"analyse with `recaudit positional analyze "
                          f"{result.evaluations_path}`", highlight=False)


def _write_report(run_dir: Path) -> Path:
    """The run's HTML report (``RUN_DIR/report.html`` + its JSON sidecar)."""
    from ..report import build_report

    html_path, _ = build_report(run_dir, kind="positional").save(run_dir / "report.html")
    return html_path


def _print_skipped(analysis: Any) -> None:
    """A table the statistics could not use: the reason and the command to retry."""
    if analysis is not None and analysis.skipped is not None:
        err_console.print(f"[yellow]analysis skipped:[/] {analysis.skipped}",
                          highlight=False)


def _print_sequential(doc: dict[str, Any]) -> None:
    """One line per cell of RUN_DIR/sequential.json."""
    for c in doc["cells"]:
        err_console.print(
            f"[bold]sequential[/] {c['model']} k={c['k']} t={c['temperature']} "
            f"{c['condition']}: {c['decision']} after {c.get('evaluations_used', 0)} "
            f"evaluations (E = {c.get('e_value', 1.0):.3g}, threshold "
            f"{1 / doc['alpha_per_cell']:.3g})", highlight=False)


@app.command("run")
@exit_on_error
def run_command(
    config: Annotated[Path, typer.Argument(help="The audit config (TOML).")],
    out: Annotated[Path | None, typer.Option(
        "--out", help="Run folder (default: runs/<config name>).")] = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Continue the run in --out: run exactly the missing keys.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress display.")] = False,
    analyze: Annotated[bool, typer.Option(
        "--analyze/--no-analyze", help="Run the statistics after the run.")] = True,
    sequential: Annotated[bool, typer.Option(
        "--sequential", help="Evaluate in rounds; stop each (model, k, temperature, "
        "condition) cell when an anytime-valid test rejects uniformity.")] = False,
    alpha: Alpha = 0.05,
    max_evaluations: Annotated[int, typer.Option(
        "--max-evaluations", min=1, help="Budget per cell of --sequential.")] = 2000,
    executor: Annotated[str, typer.Option(
        "--executor", help="Where evaluations run: local (asyncio) or ray (a Ray cluster; "
        "needs the `ray` extra).")] = "local",
    ray_address: Annotated[str | None, typer.Option(
        "--ray-address", help="Ray cluster address with --executor ray (default: start "
        "a local cluster).")] = None,
    tau: Tau = "auto",
    spb_repeats: SpbRepeats = None,
    n_resamples: NResamples = 9999,
    n_boot: NBoot = 2000,
) -> None:
    """Run an audit from CONFIG: every evaluation journaled, resumable after a crash.

    Writes RUN_DIR/evaluations.parquet and prints the positional statistics; with
    --sequential also RUN_DIR/sequential.json (decision and evidence per cell).
    """
    from ..audit import SequentialOptions, load_config

    options = analysis_options(alpha=alpha, tau=tau, spb_repeats=spb_repeats,
                               n_resamples=n_resamples, n_boot=n_boot)
    cfg = load_config(config)
    seq = SequentialOptions(alpha=options.alpha, max_evaluations=max_evaluations) \
        if sequential else None
    _execute(cfg, out=out or Path("runs") / config.stem, resume=resume, as_json=as_json,
             quiet=quiet, analyze=analyze, sequential=seq, executor=executor,
             ray_address=ray_address, options=options)


# -- demo -------------------------------------------------------------------------


@app.command("demo")
@exit_on_error
def demo_command(
    catalog: Annotated[Path | None, typer.Option(
        help="Product catalog (Myntra CSV). Default: demo.toml's [catalog] path, from "
             "the current folder.", show_default=False)] = None,
    queries: Annotated[int | None, typer.Option(
        help="Number of generated queries. Default: demo.toml's [queries] n.",
        min=1, show_default=False)] = None,
    perms: Annotated[int | None, typer.Option(
        help="Random orders per query. Default: demo.toml's [design] n_perms.",
        min=1, show_default=False)] = None,
    k: Annotated[int | None, typer.Option(
        help="Candidates per query. Default: demo.toml's [retrieval] k.",
        min=2, show_default=False)] = None,
    out: Annotated[Path, typer.Option(help="Run folder.")] = Path("runs/demo"),
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress display.")] = False,
) -> None:
    """A real small audit end to end: Myntra catalog, packaged embedder, packaged
    SmolLM2-135M in-process; then the statistics. Rerunning continues the run.
    Every setting comes from the packaged recaudit/llm/configs/demo.toml unless an
    option overrides it."""
    from ..audit import demo_config

    cfg = demo_config(catalog, queries, perms, k)
    _execute(cfg, out=out, resume=(out / "journal.sqlite").exists(), as_json=as_json,
             quiet=quiet, analyze=True, report=True)
    page = out / "report.html"
    if page.is_file() and not as_json:
        console.print(f"[green]report:[/] open {page.resolve().as_uri()} in a browser "
                      f"(the verdict, every number with its CI, the plots)", highlight=False)


# -- study (positional-study) ---------------------------------------------------------

#: Metrics shown in the study's summary table (the tidy table has all of them).
_STUDY_SUMMARY = ("pob_unbp_L", "pb", "spb", "spb_noise_floor")


def _fmt_row(r: Any) -> str:
    import math

    if r is None or not math.isfinite(r["estimate"]):
        return "n/a"
    ci = "" if not math.isfinite(r["ci_low"]) else f" [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
    p = "" if not math.isfinite(r["p_holm"]) else f" p={r['p_holm']:.3g}"
    return f"{r['estimate']:.3f}{ci}{p}"


def _print_study(study: Any) -> None:
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
    import math

    return isinstance(x, int | float) and math.isfinite(x)


@app.command("study")
@exit_on_error
def study_command(
    config: Annotated[Path | None, typer.Argument(
        help="The study config (TOML): its k, temperatures and conditions are the grid.")
    ] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Run folder (default: runs/<config name>).")] = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Continue the run in --out (e.g. one made by `positional run`).")
    ] = False,
    analyze_only: Annotated[Path | None, typer.Option(
        "--analyze-only", help="Re-analyse this finished run folder; run nothing.")] = None,
    alpha: Alpha = 0.05,
    n_boot: NBoot = 2000,
    n_resamples: NResamples = 9999,
    seed: Seed = None,
    tau: Tau = "auto",
    spb_repeats: SpbRepeats = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress display.")] = False,
) -> None:
    """Run the positional study grid (k x temperature x condition) and its analyses.

    Writes RUN_DIR/study.parquet, study.csv (one row per model, k, temperature,
    condition, analysis, metric), study.json and analysis.json; `recaudit report
    RUN_DIR` renders them.
    """
    live = not (quiet or as_json)
    options = analysis_options(alpha=alpha, tau=tau, spb_repeats=spb_repeats,
                               n_resamples=n_resamples, n_boot=n_boot)
    if analyze_only is not None:
        if config is not None or out is not None or resume:
            raise InputError("`--analyze-only RUN_DIR` runs nothing: drop CONFIG, `--out` "
                             "and `--resume`")
        from ..positional._study import analyze_study_folder

        study = analyze_study_folder(analyze_only, options, rng=seed, progress=_say(live))
        paths = study.save(analyze_only)
        summary: dict[str, Any] = {"run": None, "files": {k: str(v) for k, v in paths.items()},
                                   **{k: v for k, v in study.to_dict().items()
                                      if k in ("settings", "skipped")}}
    else:
        if config is None:
            raise InputError("give the study CONFIG (TOML), or `--analyze-only RUN_DIR`")
        from ..audit import load_config, run_study

        cfg = load_config(config)
        _design_notes(cfg, live)
        settings: dict[str, Any] = {"out_dir": out or Path("runs") / config.stem,
                                    "resume": resume, "seed": seed, "options": options}
        if live:
            with _progress_display() as display:
                result = run_study(cfg, progress=_RichProgress(display), on_phase=_say(live),
                                   **settings)
        else:
            result = run_study(cfg, **settings)
        study, summary = result.study, result.to_dict()
    if as_json:
        print_json(summary)
        return
    if not quiet:
        _print_study(study)
        err_console.print(f"[green]written:[/] {', '.join(summary['files'].values())}",
                          highlight=False)


# -- mitigate (mitigation, measured) ---------------------------------------------------


@app.command("mitigate")
@exit_on_error
def mitigate_command(
    config: Annotated[Path, typer.Argument(
        help="The audit config (TOML) with a [mitigation] table.")],
    out: Annotated[Path | None, typer.Option(
        "--out", help="Output folder (default: runs/<config name>-mitigate); one run "
        "folder per arm inside, resumed when present.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")
                       ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress display.")] = False,
    tau: Tau = "auto",
    spb_repeats: SpbRepeats = None,
) -> None:
    """Audit the same model with and without each mitigation (order-ensemble voting,
    prior calibration, canonical order) and compare PB, sPB, PS, agreement with the
    unmitigated relevance sets, and cost. Writes OUT/mitigation.json."""
    from ..audit import load_mitigation_config, mitigate

    chosen = analysis_options(tau=tau, spb_repeats=spb_repeats)
    cfg, mcfg = load_mitigation_config(config)
    folder = out or Path("runs") / f"{config.stem}-mitigate"
    live = not (quiet or as_json)
    settings: dict[str, Any] = {"out_dir": folder, "tau": chosen.tau,
                                "spb_repeats": chosen.spb_repeats}
    if live:
        with _progress_display() as display:
            done = mitigate(cfg, mcfg, on_phase=_say(live),
                            progress=lambda: _RichProgress(display), **settings)
    else:
        done = mitigate(cfg, mcfg, **settings)
    _print_skipped(done.analysis)
    if as_json:
        print_json(done.comparison)
        return
    _print_mitigation(done.comparison)
    if live:
        err_console.print(f"[green]wrote[/] {done.path}; render it with "
                          f"`recaudit report {folder}`", highlight=False)


def _print_mitigation(result: dict[str, Any]) -> None:
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


# -- topn (top-N positional bias) ------------------------------------------------------


MSG_TOPN_NO_PROBS_COLUMN = (
    "{path} has no `choice_probs` column; run the audit with `[prompt] "
    "choice_probabilities = true`"
)
MSG_TOPN_NO_PROBS = (
    "{path}: `choice_probs` is empty in all {n} rows: the run did not record choice "
    "probabilities (the config had `[prompt] choice_probabilities = false`, or the "
    "endpoint returned no logprobs); run the audit with `[prompt] choice_probabilities "
    "= true` against an endpoint that returns logprobs (or the `local` backend)"
)
MSG_TOPN_BAD_PROBS = (
    "{path}: data row {row}, column `choice_probs`: {value!r} is not a JSON list of "
    "numbers"
)
MSG_TOPN_NO_MODEL = "`--by {model}`: no row of {path} has `model` = {model!r}"


def _rankings_from_probs(data: Any, path: Path) -> Any:
    """The rankings table (query_id, order, ranking) of an evaluations table's
    ``choice_probs``; a row without a vector is a discarded ranking."""
    import pandas as pd

    from ..llm._ranking import ranking_from_choice_probs

    if "choice_probs" not in data.columns:
        raise InputError(MSG_TOPN_NO_PROBS_COLUMN.format(path=path))
    rankings = []
    for row, p in enumerate(data["choice_probs"].astype(object).tolist(), start=1):
        if p is None or (isinstance(p, float) and p != p) or p is pd.NA \
                or (isinstance(p, str) and not p.strip()):
            rankings.append("")
            continue
        try:
            vector = json.loads(p) if isinstance(p, str) else list(p)
            ranking = ranking_from_choice_probs(vector)
        except (TypeError, ValueError):
            raise InputError(MSG_TOPN_BAD_PROBS.format(path=path, row=row,
                                                       value=p)) from None
        rankings.append(" ".join(map(str, ranking)))
    if not any(rankings):
        raise InputError(MSG_TOPN_NO_PROBS.format(path=path, n=len(rankings)))
    return pd.DataFrame({"query_id": data["query_id"].to_numpy(),
                         "order": data["order"].to_numpy(), "ranking": rankings})


@app.command("topn")
@exit_on_error
def topn_command(
    table: Annotated[Path, typer.Argument(
        help="A rankings table (query_id, order, ranking) or, with --from-choice-probs, "
        "an evaluations table with choice_probs (.csv or .parquet).")],
    from_choice_probs: Annotated[bool, typer.Option(
        "--from-choice-probs", help="Rank the positions by each evaluation's choice "
        "probabilities (the model's probability ranking).")] = False,
    by: Annotated[str | None, typer.Option(
        help="Filter: only rows whose `model` column equals this.")] = None,
    statistic: Annotated[str, typer.Option(
        help="rank_bias (omnibus) or spearman (directional).")] = "rank_bias",
    n_resamples: Annotated[int, typer.Option(help="Within-query shuffles.")] = 9999,
    n_boot: Annotated[int, typer.Option(help="Bootstrap resamples of each CI.")] = 2000,
    alternative: Annotated[str, typer.Option(
        help="For spearman: greater (primacy) or two-sided.")] = "greater",
    seed: Annotated[int | None, typer.Option(help="Random seed.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Top-N positional bias: does the rank an item receives depend on its prompt
    position? (Spearman position-rank statistic, within-query permutation test, mean
    rank by position, rank bias RB, top-1 PB.)"""
    from .._read import read_table as read_file
    from ..positional import topn_bias

    if not table.is_file():
        raise InputError(f"{table}: no such file")
    what = "evaluations table" if from_choice_probs else "rankings table"
    data = read_file(table, what=what, dtype={"query_id": str, "order": str})
    if by is not None:
        if "model" not in data.columns:
            raise InputError("`--by`: the table has no `model` column")
        data = data[data["model"] == by]
        if len(data) == 0:
            raise InputError(MSG_TOPN_NO_MODEL.format(model=by, path=table))
    if from_choice_probs:
        data = _rankings_from_probs(data, table)
    result = topn_bias(data, statistic=statistic,  # type: ignore[arg-type]
                       n_resamples=n_resamples, n_boot=n_boot,
                       alternative=alternative,  # type: ignore[arg-type]
                       rng=seed)
    if as_json:
        print_json(result.to_dict())
        return
    out = Table(title=f"Top-N positional bias (k = {result.k}, {result.n_queries} queries, "
                f"{result.n_evaluations} rankings, {result.n_discarded} discarded)")
    out.add_column("statistic")
    out.add_column("value [95% CI]", justify="right")
    out.add_row("mean Spearman(position, rank)", _fmt(result.spearman.to_dict()))
    out.add_row(f"test statistic ({result.statistic_name})", f"{result.statistic:.4f}")
    out.add_row(f"permutation p ({result.alternative}, B = {result.n_resamples})",
                f"{result.pvalue:.4g}")
    out.add_row("rank bias RB", _fmt(result.rank_bias.to_dict()))
    out.add_row("top-1 PB", _fmt(result.top1_pb.to_dict()))
    for p, e in enumerate(result.mean_rank, start=1):
        out.add_row(f"mean rank at position {p} (order-free {(result.k + 1) / 2:g})",
                    _fmt(e.to_dict()))
    console.print(out)
