"""``recaudit positional ...`` commands."""

from __future__ import annotations

import importlib.resources
import tomllib
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from ..exceptions import ConfigError, RecauditError
from ._common import err_console, exit_on_error, print_json

__all__ = ["app"]

app = typer.Typer(help="The positional study.", no_args_is_help=True)

DEMO_CATALOG = Path("../shared/data/myntra/myntra_products_catalog.csv")
MSG_DEMO_CATALOG = (
    "demo catalog not found at {path}; pass `--catalog PATH` (the Myntra catalog "
    "myntra_products_catalog.csv, or any CSV with ProductID, ProductName and "
    "Description columns)"
)


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


def _execute(cfg: Any, *, out: Path, resume: bool, as_json: bool, quiet: bool,
             analyze: bool) -> None:
    """Run the audit with a progress display, then analyse (shared by run and demo)."""
    from ..llm._audit import run_audit

    live = not (quiet or as_json)

    def say(msg: str) -> None:
        if live:
            err_console.print(f"[dim]{msg}...[/]", highlight=False)

    if live:
        with _progress_display() as display:
            result = run_audit(cfg, out_dir=out, resume=resume,
                               progress=_RichProgress(display), on_phase=say)
    else:
        result = run_audit(cfg, out_dir=out, resume=resume)
    if live:
        err_console.print(
            f"[green]done:[/] {result.planned} evaluations ({result.ok} valid, "
            f"{result.discarded} discarded; {result.ran_now} run now, "
            f"{result.summary.retries} retries) -> {result.evaluations_path}",
            highlight=False,
        )
    analysis = _analyze_run(result.evaluations_path, seed=cfg.seed,
                            quiet=not live) if analyze else None
    if as_json:
        print_json({"run": result.to_dict(), "analysis": analysis})
    elif analysis is not None:
        _print_analysis(analysis)
    elif live and not analyze:
        err_console.print(f"analyse with `recaudit positional analyze "
                          f"{result.evaluations_path}`", highlight=False)


def _analyze_run(path: Path, *, seed: int, quiet: bool) -> list[dict[str, Any]] | None:
    """Analyse a finished run with :mod:`recaudit.positional` (grouped, Holm).

    A table the statistics cannot use (e.g. every answer discarded) is reported with
    the command to retry, not as a failed run: the evaluations are safe on disk.
    """
    from ..positional import analyze_groups

    if not quiet:
        err_console.print("[dim]analysing (POB-ICM, POB-UNBP, PS, PB, sPB)...[/]")
    try:
        grouped = analyze_groups(path, by=["model", "k", "temperature", "condition"],
                                 rng=seed)
    except RecauditError as exc:
        err_console.print(f"[yellow]analysis skipped:[/] {exc}; inspect the table and run "
                          f"`recaudit positional analyze {path}`", highlight=False)
        return None
    return grouped.to_list()


def _fmt(value: Any, pct: bool = False) -> str:
    if value is None:
        return "-"
    return f"{100 * value:.1f}%" if pct else f"{value:.3g}"


def _print_analysis(groups: list[dict[str, Any]]) -> None:
    table = Table(title="positional bias (p-values Holm-adjusted across groups)",
                  title_justify="left")
    for col in ("group", "queries", "valid", "disc.", "ICM p", "UNBP L", "UNBP p",
                "PS", "PB", "sPB"):
        table.add_column(col, no_wrap=True)
    for g in groups:
        label = "/".join(str(g[c]) for c in ("model", "k", "temperature", "condition")
                         if c in g)
        table.add_row(
            label, str(g["n_queries"]), str(g["n_evaluations"]), str(g["n_discarded"]),
            _fmt(g["pob_icm"]["pvalue_holm"]), _fmt(g["pob_unbp"]["L"], pct=True),
            _fmt(g["pob_unbp"]["pvalue_holm"]), _fmt(g["ps"]["value"], pct=True),
            _fmt(g["pb"]["value"], pct=True), _fmt(g["spb"]["value"], pct=True),
        )
    err_console.print(table)
    for g in groups:
        dist = " ".join(f"{100 * p:.0f}%" for p in g["position_distribution"])
        err_console.print(f"{g.get('model', '')} {g.get('condition', '')}: selected "
                          f"positions 1..{g['k']}: {dist}", highlight=False)


@app.command("run")
@exit_on_error
def run(
    config: Annotated[Path, typer.Argument(help="The audit config (TOML).")],
    out: Annotated[Path | None, typer.Option(
        "--out", help="Run folder (default: runs/<config name>).")] = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Continue the run in --out: run exactly the missing keys.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress display.")] = False,
    analyze: Annotated[bool, typer.Option(
        "--analyze/--no-analyze", help="Run the statistics after the run.")] = True,
) -> None:
    """Run an audit from CONFIG: every evaluation journaled, resumable after a crash.

    Writes RUN_DIR/evaluations.parquet and prints the positional statistics.
    """
    from ..llm._config import load_config

    cfg = load_config(config)
    _execute(cfg, out=out or Path("runs") / config.stem, resume=resume, as_json=as_json,
             quiet=quiet, analyze=analyze)


# -- demo -------------------------------------------------------------------------


def _demo_config(catalog: Path, queries: int, perms: int, k: int) -> Any:
    from ..llm._config import parse_config

    configs = importlib.resources.files("recaudit.llm").joinpath("configs")
    data = tomllib.loads(configs.joinpath("demo.toml").read_text(encoding="utf-8"))
    data["prompt"]["template"] = str(configs.joinpath(data["prompt"]["template"]))
    data["catalog"]["path"] = str(catalog)
    data["queries"]["n"] = queries
    data["design"]["n_perms"] = perms
    data["retrieval"]["k"] = [k]
    return parse_config(data, base_dir=Path.cwd())


@app.command("demo")
@exit_on_error
def demo(
    catalog: Annotated[Path, typer.Option(help="Product catalog (Myntra CSV).")] = DEMO_CATALOG,
    queries: Annotated[int, typer.Option(help="Number of generated queries.", min=1)] = 30,
    perms: Annotated[int, typer.Option(help="Random orders per query.", min=1)] = 10,
    k: Annotated[int, typer.Option(help="Candidates per query.", min=2)] = 5,
    out: Annotated[Path, typer.Option(help="Run folder.")] = Path("runs/demo"),
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress display.")] = False,
) -> None:
    """A real small audit end to end: Myntra catalog, packaged embedder, packaged
    SmolLM2-135M in-process; then the statistics. Rerunning continues the run."""
    if not catalog.is_file():
        raise ConfigError(MSG_DEMO_CATALOG.format(path=catalog))
    cfg = _demo_config(catalog, queries, perms, k)
    _execute(cfg, out=out, resume=(out / "journal.sqlite").exists(), as_json=as_json,
             quiet=quiet, analyze=True)
