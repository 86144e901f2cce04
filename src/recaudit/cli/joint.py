"""``recaudit joint``: one audit of an LLM recommender for both biases (MovieLens)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from .._stats import DEFAULT_N_BOOT
from ._common import err_console, exit_on_error, print_json
from ._positional_tables import console, print_analysis
from ._run_display import RichProgress, phase_printer, progress_display

__all__ = ["joint_command"]


@exit_on_error
def joint_command(
    data: Annotated[Path, typer.Option(
        help="A MovieLens folder in RecBole's atomic format (*.inter, *.item, *.user), "
             "e.g. ml-100k.", show_default=False)],
    users: Annotated[int, typer.Option(help="Users sampled (one request each).")] = 100,
    orders: Annotated[int, typer.Option(help="Random candidate orders per user.")] = 4,
    k: Annotated[int, typer.Option(help="Candidates per prompt (item-kNN).")] = 5,
    history: Annotated[int, typer.Option(help="Liked movies in each request.")] = 10,
    model: Annotated[str, typer.Option(
        help="A packaged model (smollm2-135m, gemma3-270m) or a GGUF file.")] = "smollm2-135m",
    attribute: Annotated[str, typer.Option(help="The users' protected attribute.")] = "gender",
    protected: Annotated[str, typer.Option(help="Its protected value.")] = "F",
    n_boot: Annotated[int, typer.Option(help="Bootstrap resamples per interval.")]
        = DEFAULT_N_BOOT,
    min_group_size: Annotated[int, typer.Option(
        help="Users a group needs for its metrics.")] = 20,
    seed: Annotated[int, typer.Option(help="Seeds the users, orders and resampling.")] = 2026,
    n_threads: Annotated[int, typer.Option(help="CPU threads of the engine.")] = 2,
    out: Annotated[Path, typer.Option(help="Output folder (rerunning continues the run).")]
        = Path("runs/joint"),
    report: Annotated[bool, typer.Option(
        "--report/--no-report", help="Write the positional run's HTML report.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print joint.json on stdout.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress display.")] = False,
) -> None:
    """Audit an LLM recommender for positional AND popularity/group bias from one run:
    each user's liked history as the request, item-kNN candidates in random orders, the
    packaged model in-process; then its positional bias, the group and popularity bias
    of what it recommends beside the retriever's, and whether position acts differently
    on long-tail movies (docs/joint-audit.md)."""
    from ..audit import GROUP_BY
    from ..joint import JOINT_FILE, JointOptions, joint_summary, run_joint_audit

    options = JointOptions(data=data, users=users, orders=orders, k=k, history=history,
                           model=model, attribute=attribute, protected=protected,
                           n_boot=n_boot, min_group_size=min_group_size, seed=seed,
                           n_threads=n_threads)
    live = not (quiet or as_json)
    if live:
        with progress_display() as display:
            result = run_joint_audit(options, out, progress=RichProgress(display),
                                     on_phase=phase_printer(live))
    else:
        result = run_joint_audit(options, out)
    page = None
    if report:
        from ..report import build_report

        page, _ = build_report(result.run_dir, kind="positional").save(
            result.run_dir / "report.html")
    if as_json:
        print_json(result.to_dict())
        return
    print_analysis([result.positional.to_dict()], list(GROUP_BY))
    for line in joint_summary(result):
        console.print()
        console.print(escape(textwrap.fill(line, width=max(console.width - 1, 40),
                                           break_on_hyphens=False, break_long_words=False)),
                      highlight=False, soft_wrap=True)
    if not quiet:
        err_console.print(f"\n[green]everything:[/] {out / JOINT_FILE}"
                          + (f"; the positional report: {page.resolve().as_uri()}" if page
                             else ""), highlight=False)
