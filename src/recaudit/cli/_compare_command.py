"""``recaudit positional compare``: paired comparisons of positional bias between systems."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from .._stats import DEFAULT_N_BOOT
from ..exceptions import InputError
from ._analysis_options import NBoot, Seed
from ._common import evaluations_file, print_json
from ._positional_tables import console

__all__ = ["compare_command"]

MSG_BY_ONE = "--by {by}: give exactly one run folder or table with --by, got {n}"
MSG_NO_BY = "--by {by}: the table has no column {by!r}; use a column such as model or condition"


def _systems(paths: list[Path], by: str | None) -> dict[str, Any]:
    from ..positional import evaluations_from_table, read_table

    if by is None:
        names = [p.name if p.is_dir() else p.stem for p in paths]
        names = names if len(set(names)) == len(names) else [str(p) for p in paths]
        return {n: evaluations_from_table(read_table(evaluations_file(p)))
                for n, p in zip(names, paths, strict=True)}
    if len(paths) != 1:
        raise InputError(MSG_BY_ONE.format(by=by, n=len(paths)))
    table = read_table(evaluations_file(paths[0]))
    if by not in table.columns:
        raise InputError(MSG_NO_BY.format(by=by))
    return {str(name): evaluations_from_table(group.reset_index(drop=True))
            for name, group in table.groupby(by, dropna=False, sort=True)}


def compare_command(
    evals: Annotated[list[Path], typer.Argument(
        help="Two or more run folders or evaluations tables; or one with --by.")],
    by: Annotated[str | None, typer.Option(
        help="Compare the groups of one run by this column (model, condition).")] = None,
    adjust: Annotated[str, typer.Option(
        help="Multiple-comparison adjustment across pairs: holm, bh or none.")] = "holm",
    n_boot: NBoot = DEFAULT_N_BOOT,
    seed: Seed = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON rows.")] = False,
) -> None:
    """Compare the positional bias of systems pair by pair (paired query bootstrap)."""
    from ..positional import compare_systems
    from ..report import comparison_verdict

    rows = [c.to_dict() for c in compare_systems(_systems(evals, by), adjust=adjust,
                                                 n_boot=n_boot, rng=seed)]
    if json_output:
        print_json(rows)
        return
    table = Table(title=f"Paired comparisons (adjust: {adjust})")
    for col in ("a", "b", "measure", "a - b", "CI", "p", "p adj.", "paired"):
        table.add_column(col)
    for r in rows:
        if not math.isfinite(r["difference"]):  # a system's split is not identified
            table.add_row(r["a"], r["b"], r["measure"], "not identified", "", "", "",
                          "yes" if r["paired"] else "no")
            continue
        table.add_row(r["a"], r["b"], r["measure"], f"{r['difference']:+.3f}",
                      f"[{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]", f"{r['pvalue']:.3g}",
                      f"{r['pvalue_adjusted']:.3g}", "yes" if r["paired"] else "no")
    console.print(table)
    console.print(comparison_verdict(rows))
