"""``recaudit fairness ...`` commands."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from ._common import err_console, exit_on_error, print_json

__all__ = ["app"]

app = typer.Typer(help="The fairness study.", no_args_is_help=True)


@app.command("run")
@exit_on_error
def run(
    config: Annotated[
        Path | None,
        typer.Argument(help="Study TOML file; omit to use the packaged ML-100K config."),
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option(help="Override the path of the (single) dataset in the config."),
    ] = None,
    output: Annotated[Path | None, typer.Option(help="Override the run folder.")] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the results JSON on stdout.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress bars.")] = False,
) -> None:
    """Train the study's models, write top-N lists and results (resumable)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from ..exceptions import ConfigError
    from ..fairness import default_config_path, load_config, run_study

    study = load_config(config or default_config_path())
    if data is not None:
        if len(study.datasets) != 1:
            raise ConfigError("`--data` needs a config with exactly one [[datasets]] table")
        study = replace(study, datasets=(replace(study.datasets[0], path=data),))
    if output is not None:
        study = replace(study, output=output)

    bars = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=err_console,
        disable=quiet,
    )
    n_models = len(study.models) + len(study.baselines)
    tasks: dict[str, Any] = {}

    def on_event(event: str, fields: dict[str, Any]) -> None:
        if event == "dataset":
            tasks["models"] = bars.add_task(f"{fields['name']}: models", total=n_models)
        elif event == "model":
            tasks.pop("grid", None)
            if fields["skipped"]:
                bars.console.print(f"  {fields['name']}: done in an earlier run, skipped")
                bars.advance(tasks["models"])
            else:
                tasks["grid"] = bars.add_task(
                    f"  {fields['name']}: grid points", total=fields["n_grid"]
                )
        elif event == "grid" and "grid" in tasks:
            bars.update(tasks["grid"], completed=fields["index"])
        elif event == "done":
            if "grid" in tasks:
                grid_task = tasks["grid"]
                bars.update(grid_task, completed=bars.tasks[grid_task].total)
            bars.advance(tasks["models"])
            bars.console.print(f"  {fields['name']}: {fields['seconds']:.1f} s")

    with bars:
        result = run_study(study, progress=on_event)
    if json_output:
        print_json(result.to_dict())
    elif not quiet:
        err_console.print(f"results: {result.output / 'results.json'}")
