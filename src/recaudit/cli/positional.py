"""``recaudit positional ...`` commands: ``analyze``, ``simulate``, ``run``, ``demo``.

Thin: each command parses its options, calls :mod:`recaudit.positional` and prints.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from typer.core import TyperCommand

from .._stats import DEFAULT_N_BOOT
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
from ._common import err_console, evaluations_file, exit_on_error, print_json
from ._compare_command import compare_command
from ._plan_command import plan_command
from ._positional_tables import (
    console,
    fmt_estimate,
    print_analysis,
    print_exact,
    print_mitigation,
    print_rankings,
    print_sequential,
    print_sequential_verdict,
    print_skipped,
    print_study,
)
from ._run_display import RichProgress, phase_printer, progress_bar, progress_display

__all__ = ["analyze_command", "app", "demo_command", "mitigate_command", "plan_command",
           "run_command", "simulate_command", "study_command", "topn_command"]

app = typer.Typer(help="The positional study.", no_args_is_help=True)
#: The demo stops a cell once its test has decided and PB's 95 % CI on the choice
#: probabilities is this wide (decision 0416): a verdict with an interval, not a bare one.
DEMO_CI_WIDTH = 0.1
app.command("plan")(exit_on_error(plan_command))
app.command("compare")(exit_on_error(compare_command))

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
    n_boot: NBoot = DEFAULT_N_BOOT,
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
    from ..positional import analyze, analyze_groups, read_table, run_seed

    options = analysis_options(alpha=alpha, epsilon=epsilon, tau=tau, spb_repeats=spb_repeats,
                               n_resamples=n_resamples, n_boot=n_boot)
    evals = evaluations_file(evals)
    seed = run_seed(evals.parent) if seed is None else seed
    columns = [c.strip() for c in by.split(",") if c.strip()] if by else []
    if exact:
        from ..positional import analyze_exact, analyze_exact_groups, read_exact_table

        _analyze_and_print(read_exact_table(evals), columns, single=analyze_exact,
                           grouped=analyze_exact_groups, label=" (exact)",
                           printer=print_exact, options=options, seed=seed, quiet=quiet,
                           json_output=json_output, fail_on_bias=fail_on_bias)
        return
    _analyze_and_print(read_table(evals), columns, single=analyze, grouped=analyze_groups,
                       label="", printer=print_analysis, options=options, seed=seed,
                       quiet=quiet, json_output=json_output, fail_on_bias=fail_on_bias)


def _analyze_and_print(table: Any, columns: list[str], *, single: Callable[..., Any],
                       grouped: Callable[..., Any], label: str,
                       printer: Callable[[list[dict[str, Any]], list[str]], None],
                       options: Any, seed: int | None, quiet: bool, json_output: bool,
                       fail_on_bias: bool) -> None:
    """`analyze` in either mode: ``single`` (one group) or ``grouped`` (``--by``, Holm)
    with a progress bar, then JSON or ``printer``; exit 1 on a rejection with
    ``--fail-on-bias``."""
    with progress_bar(quiet or json_output) as bar:
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
    with progress_bar(quiet or json_output) as bar:
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


# -- run ---------------------------------------------------------------------------


def _design_notes(cfg: Any, live: bool) -> None:
    """Before a run: warn when the design leaves POB-ICM without power at some k."""
    from ..audit import design_notes

    if live:
        for note in design_notes(cfg):
            err_console.print(f"[yellow]note:[/] {note}", highlight=False)


def _execute(cfg: Any, *, out: Path, run: Any, as_json: bool, quiet: bool,
             analyze: bool, options: Any = None, report: bool = False) -> None:
    """Run the audit with a progress display, then analyse (shared by run and demo);
    ``run`` is the invocation's :class:`~recaudit.audit.RunOptions`."""
    from ..audit import GROUP_BY, run_and_analyze

    live = not (quiet or as_json)
    _design_notes(cfg, live)
    settings: dict[str, Any] = {
        "out_dir": out, "run": run, "analysis": "groups" if analyze else "none",
        "options": options}
    if live:
        with progress_display() as display:
            done = run_and_analyze(cfg, progress=RichProgress(display),
                                   on_phase=phase_printer(live), **settings)
    else:
        done = run_and_analyze(cfg, **settings)
    result = done.audit
    if done.sequential is not None and live:
        print_sequential(done.sequential)
        if analyze:
            err_console.print("[yellow]note:[/] after a sequential stop the fixed-sample "
                              "p-values below are descriptive only; the sequential decision "
                              "above is the valid test", highlight=False)
    if live:
        err_console.print(
            f"[green]done:[/] {result.ok + result.discarded} of {result.planned} planned "
            f"evaluations ({result.ok} valid, {result.discarded} discarded; "
            f"{result.ran_now} run now, "
            f"{result.summary.retries} retries; at most {cfg.concurrency} in flight) -> "
            f"{result.evaluations_path}", highlight=False,
        )
    print_skipped(done.analysis)
    page = _write_report(result.run_dir) if report and done.analysis is not None \
        and done.analysis.rows is not None else None
    if as_json:
        print_json({**done.to_dict(), **({"report": str(page)} if page else {})})
        return
    if done.analysis is not None and done.analysis.rows is not None:
        print_analysis(done.analysis.rows, list(GROUP_BY), verdict=done.sequential is None)
        if done.analysis.topn is not None:
            print_rankings(done.analysis.topn, list(GROUP_BY))
        if done.analysis.comparisons is not None:
            from ..report import comparison_verdict

            said = escape(comparison_verdict(done.analysis.comparisons))
            console.print(f"[bold]Models compared:[/] {said}", highlight=False)
    if page is not None and not quiet:
        console.print(f"[green]report:[/] open {page.resolve().as_uri()} in a browser "
                      f"(the verdict, every number with its CI, the plots)", highlight=False)
    if done.sequential is not None:
        print_sequential_verdict(done.sequential)
    elif live and not analyze:
        err_console.print(f"analyse with `recaudit positional analyze "
                          f"{result.evaluations_path}`", highlight=False)


def _write_report(run_dir: Path) -> Path:
    """The run's HTML report (``RUN_DIR/report.html`` + its JSON sidecar)."""
    from ..report import build_report

    html_path, _ = build_report(run_dir, kind="positional").save(run_dir / "report.html")
    return html_path


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
    report: Annotated[bool, typer.Option(
        "--report/--no-report", help="Write RUN_DIR/report.html after the statistics, "
        "as `demo` does.")] = True,
    sequential: Annotated[bool, typer.Option(
        "--sequential", help="Evaluate in rounds; stop each (model, k, temperature, "
        "condition) cell when an anytime-valid test rejects uniformity.")] = False,
    alpha: Alpha = 0.05,
    max_evaluations: Annotated[int, typer.Option(
        "--max-evaluations", min=1, help="Budget per cell of --sequential.")] = 2000,
    ci_width: Annotated[float | None, typer.Option(
        "--ci-width", help="With --sequential: stop each cell once the 95% CI of its PB "
        "is at most this wide (e.g. 0.05), over at least 10 queries, rejected or not, "
        "instead of at the rejection.")] = None,
    executor: Annotated[str, typer.Option(
        "--executor", help="Where evaluations run: local (asyncio) or ray (a Ray cluster; "
        "needs the `ray` extra).")] = "local",
    ray_address: Annotated[str | None, typer.Option(
        "--ray-address", help="Ray cluster address with --executor ray (default: start "
        "a local cluster).")] = None,
    tau: Tau = "auto",
    spb_repeats: SpbRepeats = None,
    n_resamples: NResamples = 9999,
    n_boot: NBoot = DEFAULT_N_BOOT,
    plan: Annotated[Path | None, typer.Option(
        "--plan", help="Size the run by a plan (`recaudit positional plan --json > "
        "PLAN.json`): its k, orders, queries and stopping replace the config's.")] = None,
    design: Annotated[str | None, typer.Option(
        "--design", help="The plan's design to run (default: the one marked cheapest "
        "adequate).")] = None,
    batch_file: Annotated[Path | None, typer.Option(
        "--batch-file", help="Send nothing: write the evaluations still to ask as an "
        "OpenAI Batch API requests file (JSONL) and journal them as pending (with "
        "--sequential: the next round of each open cell).")] = None,
    batch_results: Annotated[Path | None, typer.Option(
        "--batch-results", help="Read a batch's output file (JSONL) into the journal "
        "of the run in --out, exactly once (with --resume).")] = None,
    batch_errors: Annotated[Path | None, typer.Option(
        "--batch-errors", help="Also read the batch's error file: its evaluations are "
        "planned again.")] = None,
    batch_resend_pending: Annotated[bool, typer.Option(
        "--batch-resend-pending", help="With --batch-file: also write the evaluations "
        "pending in earlier batch files (a batch lost without an error file).")] = False,
) -> None:
    """Run an audit from CONFIG: every evaluation journaled, resumable after a crash.

    Writes RUN_DIR/evaluations.parquet and prints the positional statistics; with
    --sequential also RUN_DIR/sequential.json (decision and evidence per cell).
    """
    from ..audit import SequentialOptions, apply_plan, choose_design, load_audit_config

    options = analysis_options(alpha=alpha, tau=tau, spb_repeats=spb_repeats,
                               n_resamples=n_resamples, n_boot=n_boot)
    cfg = load_audit_config(config)
    if ci_width is not None and not sequential:
        raise InputError("--ci-width stops a --sequential run: add --sequential")
    seq = SequentialOptions(alpha=options.alpha, max_evaluations=max_evaluations,
                            ci_width=ci_width) if sequential else None
    if plan is not None:
        from .._read import read_json

        chosen = choose_design(read_json(plan, what="plan"), design)
        cfg, planned_seq = apply_plan(cfg, chosen)
        seq = seq or planned_seq
        if not (quiet or as_json):
            err_console.print(
                f"plan: design {chosen.design!r}, k = {chosen.k}, {chosen.queries} queries "
                f"x {chosen.orders} orders" + (
                    "; choice probabilities recorded: analyse with `recaudit positional "
                    "analyze RUN_DIR --exact`" if chosen.design.startswith("exact") else ""),
                highlight=False)
    if batch_file or batch_results or batch_errors:  # provider batch files: docs/runner.md
        from ._batch import batch_run

        if executor != "local":
            raise InputError("`--batch-file`/`--batch-results` send nothing from here: "
                             "drop `--executor`")
        batch_run(cfg, out=out or Path("runs") / config.stem, resume=resume, sequential=seq,
                  batch_file=batch_file, batch_results=batch_results,
                  batch_errors=batch_errors, as_json=as_json, quiet=quiet,
                  resend_pending=batch_resend_pending, analyze=analyze, options=options)
        return
    from ..audit import RunOptions

    run = RunOptions(resume=resume, executor=executor, ray_address=ray_address, sequential=seq)
    _execute(cfg, out=out or Path("runs") / config.stem, run=run, as_json=as_json,
             quiet=quiet, analyze=analyze, options=options, report=report)


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
    sequential: Annotated[bool, typer.Option(
        "--sequential/--fixed", help="--sequential (default): stop once an anytime-valid "
        "test on the recorded choice probabilities decides and PB's CI is --ci-width wide "
        "(usually a fraction of the evaluations); --fixed: run every planned evaluation.")
    ] = True,
    ci_width: Annotated[float, typer.Option(
        "--ci-width", help="With --sequential: the 95% CI width of PB (on the choice "
        "probabilities) at which a cell stops.")] = DEMO_CI_WIDTH,
    alpha: Alpha = 0.05,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress display.")] = False,
) -> None:
    """A real small audit end to end: Myntra catalog, packaged embedder, packaged
    SmolLM2-135M in-process; then the statistics. Rerunning continues the run. Settings
    from the packaged recaudit/llm/configs/demo.toml unless an option overrides them;
    by default sequential stopping on the exact choice probabilities."""
    from ..audit import RunOptions, SequentialOptions, demo_config

    cfg = demo_config(catalog, queries, perms, k)
    budget = (cfg.queries.n or 1) * (cfg.design.n_perms or 1) * cfg.design.samples_per_order
    seq = SequentialOptions(alpha=alpha, max_evaluations=budget,
                            ci_width=ci_width) if sequential else None
    _execute(cfg, out=out, run=RunOptions(resume=(out / "journal.sqlite").exists(),
                                          sequential=seq),
             as_json=as_json, quiet=quiet, analyze=True, report=True,
             options=analysis_options(alpha=alpha))


# -- study (positional-study) ---------------------------------------------------------


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
    n_boot: NBoot = DEFAULT_N_BOOT,
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
        from ..positional import analyze_study_folder

        study = analyze_study_folder(analyze_only, options, rng=seed, progress=phase_printer(live))
        paths = study.save(analyze_only)
        summary: dict[str, Any] = {"run": None, "files": {k: str(v) for k, v in paths.items()},
                                   **{k: v for k, v in study.to_dict().items()
                                      if k in ("settings", "skipped")}}
    else:
        if config is None:
            raise InputError("give the study CONFIG (TOML), or `--analyze-only RUN_DIR`")
        from ..audit import load_audit_config, run_positional_study

        cfg = load_audit_config(config)
        _design_notes(cfg, live)
        settings: dict[str, Any] = {"out_dir": out or Path("runs") / config.stem,
                                    "resume": resume, "seed": seed, "options": options}
        if live:
            with progress_display() as display:
                result = run_positional_study(cfg, progress=RichProgress(display),
                                   on_phase=phase_printer(live), **settings)
        else:
            result = run_positional_study(cfg, **settings)
        study, summary = result.study, result.to_dict()
    if as_json:
        print_json(summary)
        return
    if not quiet:
        print_study(study)
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
        with progress_display() as display:
            done = mitigate(cfg, mcfg, on_phase=phase_printer(live),
                            progress=lambda: RichProgress(display), **settings)
    else:
        done = mitigate(cfg, mcfg, **settings)
    print_skipped(done.analysis)
    if as_json:
        print_json(done.comparison)
        return
    print_mitigation(done.comparison)
    if live:
        err_console.print(f"[green]wrote[/] {done.path}; render it with "
                          f"`recaudit report {folder}`", highlight=False)


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
    "numbers: non-negative probabilities summing to 1, as `analyze --exact` requires"
)
MSG_TOPN_PICKS = (
    "{path}: no evaluation holds a ranking (the run asked for one pick each, or every "
    "ranking answer was discarded: see `discard_reason`); audit with `[prompt] answer "
    "= \"ranking\"`, or rank by choice probabilities with --from-choice-probs"
)
MSG_TOPN_NO_MODEL = "`--by {model}`: no row of {path} has `model` = {model!r}"


def _rankings_from_probs(data: Any, path: Path) -> Any:
    """The rankings table (query_id, order, ranking) of an evaluations table's
    ``choice_probs``; a row without a vector is a discarded ranking."""
    import pandas as pd

    from ..llm import ranking_from_choice_probs
    from ..positional import choice_probs_vector

    if "choice_probs" not in data.columns:
        raise InputError(MSG_TOPN_NO_PROBS_COLUMN.format(path=path))
    rankings = []
    for row, p in enumerate(data["choice_probs"].astype(object).tolist(), start=1):
        if p is None or (isinstance(p, float) and p != p) or p is pd.NA \
                or (isinstance(p, str) and not p.strip()):
            rankings.append("")
            continue
        try:
            ranking = ranking_from_choice_probs(choice_probs_vector(p, row=row).tolist())
        except InputError:
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
        help="A rankings table (query_id, order, ranking; .csv or .parquet), a run "
        "folder of a `[prompt] answer = \"ranking\"` audit, or, with "
        "--from-choice-probs, an evaluations table or run folder with choice_probs.")],
    from_choice_probs: Annotated[bool, typer.Option(
        "--from-choice-probs", help="Rank the positions by each evaluation's choice "
        "probabilities (the model's probability ranking).")] = False,
    by: Annotated[str | None, typer.Option(
        help="Filter: only rows whose `model` column equals this.")] = None,
    statistic: Annotated[str, typer.Option(
        help="rank_bias (omnibus) or spearman (directional).")] = "rank_bias",
    n_resamples: Annotated[int, typer.Option(help="Within-query shuffles.")] = 9999,
    n_boot: NBoot = DEFAULT_N_BOOT,
    alternative: Annotated[str, typer.Option(
        help="For spearman: greater (primacy) or two-sided.")] = "greater",
    seed: Annotated[int | None, typer.Option(help="Random seed.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Top-N positional bias: does the rank an item receives depend on its prompt
    position? (Spearman position-rank statistic, within-query permutation test, mean
    rank by position, rank bias RB, top-1 PB.)"""
    from .._read import check_file, check_ids
    from .._read import read_table as read_file
    from ..positional import topn_bias

    what = "evaluations table" if from_choice_probs else "rankings table"
    table = evaluations_file(table)
    check_file(table, what, missing="{path}: no such file")
    data = read_file(table, what=what, dtype={"query_id": str, "order": str})
    check_ids(data, ("query_id", "model"), path=table, what=what)
    if by is not None:
        if "model" not in data.columns:
            raise InputError("`--by`: the table has no `model` column")
        data = data[data["model"] == by]
        if len(data) == 0:
            raise InputError(MSG_TOPN_NO_MODEL.format(model=by, path=table))
    if from_choice_probs:
        data = _rankings_from_probs(data, table)
    elif "selected_position" in data.columns and "ranking" in data.columns \
            and data["ranking"].isna().all():
        raise InputError(MSG_TOPN_PICKS.format(path=table))
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
    out.add_row("mean Spearman(position, rank)", fmt_estimate(result.spearman.to_dict()))
    out.add_row("mean Kendall tau(position, rank)", fmt_estimate(result.kendall.to_dict()))
    out.add_row(f"test statistic ({result.statistic_name})", f"{result.statistic:.4f}")
    out.add_row(f"permutation p ({result.alternative}, B = {result.n_resamples})",
                f"{result.pvalue:.4g}")
    out.add_row("rank bias RB", fmt_estimate(result.rank_bias.to_dict()))
    out.add_row("top-1 PB", fmt_estimate(result.top1_pb.to_dict()))
    for p, (e, d) in enumerate(zip(result.mean_rank, result.displacement, strict=True),
                               start=1):
        out.add_row(f"mean rank at position {p} (order-free {(result.k + 1) / 2:g}; "
                    f"displacement)", f"{fmt_estimate(e.to_dict())}; {d.value:+.3f}")
    console.print(out)
