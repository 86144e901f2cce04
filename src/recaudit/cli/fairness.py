"""``recaudit fairness ...`` commands."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from ..exceptions import InputError
from ._common import err_console, exit_on_error, print_json

if TYPE_CHECKING:  # pandas is imported where a table is read: `recaudit --help` stays fast
    import pandas as pd

__all__ = ["app"]

app = typer.Typer(help="The fairness study.", no_args_is_help=True)

ID_COLUMNS = ("user_id", "item_id")
RECBOLE_SUFFIXES = (".inter", ".user", ".item", ".tsv")
N_VALUES_MSG = "`--n` takes integers (e.g. `--n 5 10 15` or `--n 5,10,15`), got {value!r}"
EXTRA_ARGS_MSG = "unexpected arguments {args}: only `--n` takes several values"


def _read_table(path: Path, name: str) -> pd.DataFrame:
    """Read a CSV/TSV/Parquet table (or a RecBole atomic file) with string ids.

    RecBole atomic files (``.inter``, ``.user``, ``.item``) are tab-separated with
    ``name:type`` headers; the ``:type`` suffix is dropped. ``user_id`` and
    ``item_id`` are read as strings in every table so that ids match across files.
    """
    from .._read import read_table

    if not path.is_file():
        raise InputError(f"`--{name}` file not found: {path}")
    sep = "\t" if path.suffix.lower() in RECBOLE_SUFFIXES else ","
    table = read_table(path, what=f"`--{name}` file", sep=sep, low_memory=False)
    table.columns = [str(c).split(":")[0] for c in table.columns]
    for column in ID_COLUMNS:
        if column in table.columns:
            ok = table[column].notna()
            table[column] = table[column].where(~ok, table[column].astype(str))
    return table


def _parse_n(values: list[str] | None, extra: list[str]) -> list[int]:
    """Cut-offs from ``--n 5 10 15``, ``--n 5,10,15`` or repeated ``--n``.

    Click gives an option one value; the following bare values land in the
    command's extra arguments (the command has no positional argument), so they are
    taken as more cut-offs when ``--n`` was given.
    """
    if extra and not values:
        raise InputError(EXTRA_ARGS_MSG.format(args=extra))
    tokens = [t for v in [*(values or ["5,10,15"]), *extra] for t in v.split(",") if t.strip()]
    try:
        return [int(t) for t in tokens]
    except ValueError:
        bad = [t for t in tokens if not t.strip().lstrip("-").isdigit()]
        raise InputError(N_VALUES_MSG.format(value=bad[0] if bad else tokens)) from None


def _fmt(value: float, ci_low: float = float("nan"), ci_high: float = float("nan")) -> str:
    """``value [low, high]``; the bounds are left out when not computed."""
    if value is None or math.isnan(value):
        return "undefined"
    if ci_low is None or math.isnan(ci_low):
        return f"{value:.4f}"
    return f"{value:.4f} [{ci_low:.4f}, {ci_high:.4f}]"


def _print_tables(result: dict[str, Any], console: Console) -> None:
    groups = result["groups"]
    metrics_table = Table(title=f"Group means ({result['n_users']} users)")
    metrics_table.add_column("metric")
    for name, g in groups.items():
        tag = " (protected)" if g["protected"] else ""
        metrics_table.add_column(f"{name}{tag}, n={g['n_users']}")
    metrics_table.add_column("overall")
    for key, est in result["overall"].items():
        cells = [_fmt(**g[key]) for g in groups.values()]
        metrics_table.add_row(key, *cells, _fmt(**est))
    console.print(metrics_table)

    rd, nrd, ib = result["rd"], result["nrd"], result["ib"]
    gap_table = Table(title=f"Inter-bias: protected {result['protected']!r} vs all others")
    for column in ("metric", "RD", "p", "p (Holm)", "NRD", "IB"):
        gap_table.add_column(column)
    for key, r in rd.items():
        gap_table.add_row(
            key,
            _fmt(r["value"], r["ci_low"], r["ci_high"]),
            f"{r['pvalue']:.4g}",
            f"{r['pvalue_holm']:.4g}",
            _fmt(nrd[key]["value"], nrd[key]["ci_low"], nrd[key]["ci_high"]),
            _fmt(ib[key]["value"], ib[key]["ci_low"], ib[key]["ci_high"]),
        )
    console.print(gap_table)

    exposure = Table(title=f"Exposure ({result['n_items']} items, {result['catalog_source']})")
    exposure.add_column("N")
    names = ["item_coverage", "gini_exposure", "avg_popularity", "long_tail_share"]
    present = [k for k in names if f"{k}@{result['n'][0]}" in result]
    for k in present:
        exposure.add_column(k)
    for c in result["n"]:
        row = []
        for k in present:
            v = result[f"{k}@{c}"]
            row.append(_fmt(**v) if isinstance(v, dict) else _fmt(v))
        exposure.add_row(str(c), *row)
    console.print(exposure)
    console.print(
        f"excluded users without test items: {result['n_users_excluded']}; "
        f"evaluated users without a list (scored 0): {result['n_users_without_recs']}"
    )


@app.command(
    "evaluate",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": False},
)
@exit_on_error
def evaluate_command(
    ctx: typer.Context,
    recs: Annotated[Path, typer.Option(help="Top-N lists: user_id,item_id,rank (CSV/Parquet).")],
    test: Annotated[Path, typer.Option(help="Held-out items: user_id,item_id.")],
    users: Annotated[Path, typer.Option(help="user_id plus attribute columns.")],
    attribute: Annotated[
        str, typer.Option(help="Attribute column; comma-separated for intersections.")
    ],
    protected: Annotated[
        str, typer.Option(help="Protected value; comma-separated, one per attribute.")
    ],
    n: Annotated[
        list[str] | None,
        typer.Option("--n", metavar="N ...", help="Cut-offs: --n 5 10 15 (default 5 10 15)."),
    ] = None,
    items: Annotated[Path | None, typer.Option(help="Item catalog with item_id.")] = None,
    n_items: Annotated[int | None, typer.Option(help="Catalog size |I|.")] = None,
    train: Annotated[
        Path | None, typer.Option(help="Training interactions (item popularity).")
    ] = None,
    n_boot: Annotated[int, typer.Option(help="Bootstrap resamples (0 = no CIs).")] = 1000,
    n_resamples: Annotated[int, typer.Option(help="Permutations (0 = no p-values).")] = 999,
    seed: Annotated[int | None, typer.Option(help="Random seed.")] = None,
    min_group_size: Annotated[int, typer.Option(help="Minimum users per group.")] = 20,
    confidence_level: Annotated[float, typer.Option(help="CI level.")] = 0.95,
    resample_coverage: Annotated[
        bool,
        typer.Option(
            "--resample-coverage", help="Recompute item coverage in each bootstrap resample."
        ),
    ] = False,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Per-group top-N metrics, item coverage, RD/NRD/IB with CIs and p-values."""
    from ..fairness import evaluate

    cutoffs = _parse_n(n, list(ctx.args))
    attributes = [a.strip() for a in attribute.split(",")]
    values = [v.strip() for v in protected.split(",")]
    result = evaluate(
        _read_table(recs, "recs"),
        _read_table(test, "test"),
        _read_table(users, "users"),
        attribute=attributes,
        protected=values,
        n=cutoffs,
        n_items=n_items,
        items=None if items is None else _read_table(items, "items"),
        train=None if train is None else _read_table(train, "train"),
        n_boot=n_boot,
        n_resamples=n_resamples,
        min_group_size=min_group_size,
        confidence_level=confidence_level,
        resample_coverage=resample_coverage,
        rng=seed,
    )
    payload = result.to_dict()
    if json_output:
        print_json(payload)
    else:
        _print_tables(payload, Console())


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
    executor: Annotated[str, typer.Option(
        "--executor", help="Where models train: local, or ray (each grid point a one-CPU "
        "Ray task; needs the `ray` extra).")] = "local",
    ray_address: Annotated[str | None, typer.Option(
        "--ray-address", help="Ray cluster address with --executor ray (default: start "
        "a local cluster).")] = None,
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
        result = run_study(study, progress=on_event, executor=executor,
                           ray_address=ray_address)
    if json_output:
        print_json(result.to_dict())
    elif not quiet:
        err_console.print(f"results: {result.output / 'results.json'}")
