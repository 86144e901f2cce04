"""``recaudit fairness ...`` commands: parse the options, call the library, print.

``evaluate`` reads the tables and calls :func:`recaudit.fairness.evaluate` with one
:class:`~recaudit.fairness.EvaluateOptions`; ``run`` calls
:func:`recaudit.fairness.study.run_fairness_study`. The tables are drawn by
:mod:`._fairness_tables`, the progress bars by :mod:`._fairness_progress`.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from .._stats import DEFAULT_N_BOOT, DEFAULT_N_PERMUTATIONS
from ..exceptions import ConfigError, InputError, RecauditWarning
from ._common import err_console, exit_on_error, print_json
from ._fairness_progress import StudyProgress
from ._fairness_tables import print_comparison, print_evaluation, protocol_shift_table

if TYPE_CHECKING:  # pandas and the library are imported by the commands: `--help` stays fast
    import pandas as pd

    from ..fairness import FairnessEvaluation
    from ..fairness.study import FairnessStudyConfig

__all__ = ["app"]

app = typer.Typer(help="The fairness study.", no_args_is_help=True)

ID_COLUMNS = ("user_id", "item_id")
RECBOLE_SUFFIXES = (".inter", ".user", ".item", ".tsv")
N_VALUES_MSG = "`--n` takes integers (e.g. `--n 5 10 15` or `--n 5,10,15`), got {value!r}"
EXTRA_ARGS_MSG = "unexpected arguments {args}: only `--n` takes several values"
POPULARITY_GROUP_COLUMN = "popularity_group"
POPULARITY_GROUP_MSG = (
    "`--attribute popularity_group` needs `--train` (the groups are computed from the "
    "training interactions), or a `popularity_group` column in `--users`"
)
POPULARITY_GROUPS_NEED_TRAIN_MSG = (
    "`--popularity-groups` needs `--train` (the groups are computed from the training "
    "interactions): pass `--train` or drop `--popularity-groups`"
)
PER_USER_SUFFIX_MSG = (
    "`--per-user` must name a .csv or .parquet file, got {path}"
)
PER_USER_SUFFIXES = (".csv", ".parquet")
MODEL_NAME_MSG = ("`--model` must be a printable, non-empty name (e.g. `--model MostPop`), "
                  "got {model!r}")

PopularityGroupsOption = Annotated[str | None, typer.Option(
    "--popularity-groups", metavar="METHOD",
    help="How users are grouped by the popularity of their --train items (the "
    "popularity_group attribute and popularity groups in --json): abdollahpouri "
    "(default; niche / diverse / blockbuster), abdollahpouri:cumulative (head = the "
    "items holding 20 % of the interactions) or quantile:Q (Q groups of equal size).")]
PerUserOption = Annotated[Path | None, typer.Option(
    "--per-user", metavar="FILE",
    help="Also write one row per evaluated user (.csv or .parquet): group, every "
    "metric@N and, with --train, the user's ARP/APLT/ACLT/novelty@N, profile figures "
    "and popularity group.")]


def _read_table(path: Path, name: str) -> pd.DataFrame:
    """Read a CSV/TSV/Parquet table (or a RecBole atomic file) with string ids.

    RecBole atomic files (``.inter``, ``.user``, ``.item``) are tab-separated with
    ``name:type`` headers; the ``:type`` suffix is dropped. ``user_id`` and
    ``item_id`` are read as strings in every table so that ids match across files.
    """
    from .._read import check_file, check_header, check_ids, read_table

    what = f"`--{name}` file"
    check_file(path, what, missing="`--{name}` file not found: {path}".replace(
        "{name}", name))
    sep = "\t" if path.suffix.lower() in RECBOLE_SUFFIXES else ","
    table = read_table(path, what=what, sep=sep, low_memory=False)
    table.columns = [str(c).split(":")[0] for c in table.columns]
    check_header(list(table.columns), path, what)  # `item_id:token` and `item_id:float`
    check_ids(table, ID_COLUMNS, path=path, what=what)
    for column in ID_COLUMNS:
        if column in table.columns:
            ok = table[column].notna()
            table[column] = table[column].where(~ok, table[column].astype(str))
    return table


def _read_tables(users_table: pd.DataFrame, users: Path,
                 **paths: Path | None) -> dict[str, pd.DataFrame]:
    """Every table given (by its option's name) and the users table read, their ids
    checked to be written alike across files (``12`` here and ``12.0`` there is
    refused: no id would join, see docs/decisions/)."""
    from .._read import check_id_spelling

    tables = {name: _read_table(path, name) for name, path in paths.items()
              if path is not None}
    named = [(f"`--{name}` file", str(paths[name]), t) for name, t in tables.items()]
    check_id_spelling([*named, ("`--users` file", str(users), users_table)], ID_COLUMNS)
    return tables


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


def _override(
    study: FairnessStudyConfig, data: Path | None, output: Path | None
) -> FairnessStudyConfig:
    """The config with ``--data`` (its single dataset's path) and ``--output`` applied."""
    if data is not None:
        if len(study.datasets) != 1:
            raise ConfigError("`--data` needs a config with exactly one [[datasets]] table")
        study = replace(study, datasets=(replace(study.datasets[0], path=data),))
    if output is not None:
        study = replace(study, output=output)
    return study


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
        str, typer.Option(help="Attribute column; comma-separated for intersections; "
                          "`popularity_group` is computed from --train.")
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
        Path | None, typer.Option(help="Training interactions user_id,item_id (popularity "
                                  "figures, popularity-bias metrics, popularity groups).")
    ] = None,
    n_boot: Annotated[int, typer.Option(
        help="Bootstrap resamples of each CI (0 = no CIs).")] = DEFAULT_N_BOOT,
    n_resamples: Annotated[int, typer.Option(
        help="Permutations of the protected labels for the gap test (0 = no p-values).")]
        = DEFAULT_N_PERMUTATIONS,
    seed: Annotated[int | None, typer.Option(min=0, help="Random seed (>= 0).")] = None,
    min_group_size: Annotated[int, typer.Option(help="Minimum users per group.")] = 20,
    confidence_level: Annotated[float, typer.Option(help="CI level.")] = 0.95,
    resample_coverage: Annotated[
        bool,
        typer.Option(
            "--resample-coverage", help="Recompute item coverage in each bootstrap resample."
        ),
    ] = False,
    candidates: Annotated[Path | None, typer.Option(
        help="Each user's candidates user_id,item_id under a sampled --protocol: every "
        "recommended and every test item must be one.")] = None,
    protocol: Annotated[str | None, typer.Option(
        help="How --recs were ranked: full (default, the whole catalog) or uniN / popN "
        "(e.g. uni100: within --candidates).")] = None,
    popularity_groups: PopularityGroupsOption = None,
    per_user: PerUserOption = None,
    model: Annotated[str | None, typer.Option(
        "--model", help="The recommender's name: `model` in --json, the name "
        "`recaudit report` shows (default: none).", show_default=False)] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Per-group top-N metrics, item coverage, RD/NRD/IB with CIs and p-values.

    With --train: the popularity figures and ARP, APLT, ACLT, PopRSP, PopREO and
    novelty overall and per group with CIs (`popularity_bias` in --json), and the
    `popularity_group` attribute (niche / diverse / blockbuster users). With
    --candidates and a sampled --protocol (uni100, pop100, ...): the lists were ranked
    within each user's candidates; the sampled-metrics warning goes to stderr and to
    `warnings` in --json. --per-user FILE writes the per-user rows.
    """
    from ..fairness import EvaluateOptions, evaluate, parse_popularity_groups, resolve_protocol

    options = EvaluateOptions(
        n=tuple(_parse_n(n, list(ctx.args))),
        n_boot=n_boot,
        n_resamples=n_resamples,
        min_group_size=min_group_size,
        confidence_level=confidence_level,
        resample_coverage=resample_coverage,
        popularity_groups=parse_popularity_groups(
            "abdollahpouri" if popularity_groups is None else popularity_groups,
            name="`--popularity-groups`"),
    )
    if popularity_groups is not None and train is None:
        raise InputError(POPULARITY_GROUPS_NEED_TRAIN_MSG)
    if model is not None and (not model.strip() or not model.isprintable()):
        raise InputError(MODEL_NAME_MSG.format(model=model))
    if per_user is not None and per_user.suffix.lower() not in PER_USER_SUFFIXES:
        raise InputError(PER_USER_SUFFIX_MSG.format(path=per_user))
    if per_user is not None:
        from .._io import check_output

        check_output(per_user, what="`--per-user` file", example="per_user.csv")
    used_protocol = resolve_protocol(protocol, candidates)
    attributes = [a.strip() for a in attribute.split(",")]
    users_table = _read_table(users, "users")
    needs_train = POPULARITY_GROUP_COLUMN in attributes
    if needs_train and train is None and POPULARITY_GROUP_COLUMN not in users_table.columns:
        raise InputError(POPULARITY_GROUP_MSG)
    tables = _read_tables(users_table, users, recs=recs, test=test, items=items, train=train,
                          candidates=candidates)
    result = evaluate(
        tables["recs"],
        tables["test"],
        users_table,
        attribute=attributes,
        protected=[v.strip() for v in protected.split(",")],
        n_items=n_items,
        items=tables.get("items"),
        train=tables.get("train"),
        options=options,
        rng=seed,
        candidates=tables.get("candidates"),
        protocol=used_protocol,
    )
    for warning in result.warnings:
        warnings.warn(warning, RecauditWarning, stacklevel=1)
    if per_user is not None:
        _write_per_user(result, per_user)
    _print_result(result, model=model, json_output=json_output)


def _print_result(result: FairnessEvaluation, *, model: str | None, json_output: bool) -> None:
    """The evaluation as JSON (``model`` first when named) or as tables."""
    if json_output:
        print_json({"model": model.strip(), **result.to_dict()} if model else result.to_dict())
        return
    console = Console()
    if model:
        console.print(f"model: {model.strip()}", highlight=False, markup=False)
    print_evaluation(result, console)


def _write_per_user(result: FairnessEvaluation, path: Path) -> None:
    """``result.per_user`` as CSV or Parquet (by the suffix), written atomically."""
    from .._io import MSG_CANNOT_WRITE, write_atomic
    from .._read import one_line

    table = result.per_user
    if table is None:  # only an evaluation read back from JSON has no rows
        return
    try:
        if path.suffix.lower() == ".parquet":
            write_atomic(path, lambda p: table.to_parquet(p, index=False))
        else:
            write_atomic(path, lambda p: table.to_csv(p, index=False))
    except OSError as exc:  # no permission, a missing folder, a full disk
        raise InputError(MSG_CANNOT_WRITE.format(what="`--per-user` file", path=path,
                                                 error=one_line(exc))) from None


RECS_ITEM_MSG = ("`--recs` takes NAME=PATH (e.g. `--recs LightGCN=recs/lightgcn.csv`), "
                 "got {value!r}")
RECS_TWICE_MSG = "`--recs` names the model {name!r} twice; give every model its own name"
HEADLINE_KEYS = ("ndcg@10",)


def _named_recs(values: list[str]) -> dict[str, Path]:
    """``NAME=PATH`` pairs of ``--recs``, in order, names unique."""
    out: dict[str, Path] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name.strip() or not path.strip() or not name.strip().isprintable():
            raise InputError(RECS_ITEM_MSG.format(value=value))
        if name.strip() in out:
            raise InputError(RECS_TWICE_MSG.format(name=name.strip()))
        out[name.strip()] = Path(path.strip())
    return out


@app.command(
    "compare",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": False},
)
@exit_on_error
def compare_command(
    ctx: typer.Context,
    recs: Annotated[list[str], typer.Option(
        "--recs", metavar="NAME=PATH",
        help="A model's top-N lists (user_id,item_id,rank), named; twice or more.")],
    test: Annotated[Path, typer.Option(help="Held-out items: user_id,item_id.")],
    users: Annotated[Path, typer.Option(help="user_id plus attribute columns.")],
    attribute: Annotated[str, typer.Option(
        help="Attribute column; comma-separated for intersections.")],
    protected: Annotated[str, typer.Option(
        help="Protected value; comma-separated, one per attribute.")],
    n: Annotated[list[str] | None, typer.Option(
        "--n", metavar="N ...", help="Cut-offs: --n 5 10 15 (default 5 10 15).")] = None,
    items: Annotated[Path | None, typer.Option(help="Item catalog with item_id.")] = None,
    n_items: Annotated[int | None, typer.Option(help="Catalog size |I|.")] = None,
    train: Annotated[Path | None, typer.Option(
        help="Training interactions (only widen the catalog).")] = None,
    stat_test: Annotated[str, typer.Option(
        "--stat-test", help="Test of the per-user means: permutation (paired), t (paired "
        "t) or wilcoxon (signed-rank); the gaps (RD, NRD) always use the paired "
        "permutation.")] = "permutation",
    adjust: Annotated[str, typer.Option(
        help="Multiple-comparison adjustment within each family (the rows of one kind "
        "over every pair, metric and cut-off): holm, bh or none.")] = "holm",
    n_boot: Annotated[int, typer.Option(
        help="Bootstrap resamples of each CI (>= 1).")] = DEFAULT_N_BOOT,
    n_resamples: Annotated[int, typer.Option(
        help="Paired permutations of each test (>= 1; raised to what the adjustment "
        "needs).")] = DEFAULT_N_PERMUTATIONS,
    seed: Annotated[int | None, typer.Option(min=0, help="Random seed (>= 0).")] = None,
    min_group_size: Annotated[int, typer.Option(help="Minimum users per group.")] = 20,
    confidence_level: Annotated[float, typer.Option(help="CI level.")] = 0.95,
    candidates: Annotated[Path | None, typer.Option(
        help="Each user's candidates user_id,item_id under a sampled --protocol: every "
        "model's recommended and every test item must be one.")] = None,
    protocol: Annotated[str | None, typer.Option(
        help="How every --recs was ranked: full (default) or uniN / popN (within "
        "--candidates).")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Compare recommenders, paired by user: every metric, group and gap (RD, NRD, IB).

    Every pair of --recs models evaluated on the same --test and --users: the difference
    of each model's mean metric (all users and each group) and of its group gap, with
    a user-bootstrap CI and a paired test, adjusted within each family of rows
    (--adjust); IB by a test that swaps whole lists, its CI from the delete-one-user
    jackknife (both models' coverage recomputed without each user). The table shows NDCG@10;
    --json has every row (`rows`). Under a sampled --protocol the sampled-metrics
    warning goes to stderr and to `warnings` in --json.
    """
    from ..fairness import EvaluateOptions, compare_models, resolve_protocol

    options = EvaluateOptions(n=tuple(_parse_n(n, list(ctx.args))), n_boot=n_boot,
                              n_resamples=n_resamples, min_group_size=min_group_size,
                              confidence_level=confidence_level)
    named = _named_recs(recs)
    used_protocol = resolve_protocol(protocol, candidates)
    users_table = _read_table(users, "users")
    tables = _read_tables(users_table, users, test=test, items=items, train=train,
                          candidates=candidates,
                          **{f"recs {name}": path for name, path in named.items()})
    result = compare_models(
        {name: tables[f"recs {name}"] for name in named}, tables["test"], users_table,
        attribute=[a.strip() for a in attribute.split(",")],
        protected=[v.strip() for v in protected.split(",")], n_items=n_items,
        items=tables.get("items"), train=tables.get("train"), options=options,
        stat_test=stat_test, adjust=adjust, rng=seed, candidates=tables.get("candidates"),
        protocol=used_protocol)
    for warning in result.warnings:
        warnings.warn(warning, RecauditWarning, stacklevel=1)
    if json_output:
        print_json(result.to_dict())
        return
    print_comparison(result, keys=HEADLINE_KEYS)


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
    """Train the study's models, write top-N lists and results (resumable).

    With more than one `[study] protocols`, a table of how each model's NDCG@10,
    RD-NDCG@10 and IB-NDCG@10 move between them (`protocol_shifts` in --json).
    """
    from ..fairness.study import default_config_path, load_fairness_config, run_fairness_study

    study = _override(load_fairness_config(config or default_config_path()), data, output)
    n_models = len(study.models) + len(study.baselines)
    with StudyProgress(err_console, n_models=n_models, disable=quiet) as progress:
        result = run_fairness_study(study, progress=progress, executor=executor,
                                    ray_address=ray_address)
    shifts = result.protocol_shifts()
    if json_output:
        print_json(result.to_dict() | ({"protocol_shifts": shifts} if shifts else {}))
        return
    if shifts:
        Console().print(protocol_shift_table(shifts))
    if not quiet:
        err_console.print(f"results: {Path(study.output) / 'results.json'}")
