"""``recaudit report SOURCE``: the HTML audit report of a run (and its JSON sidecar)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from ._common import err_console, exit_on_error, print_json

__all__ = ["report"]


@exit_on_error
def report(
    source: Annotated[
        Path,
        typer.Argument(
            help="A positional or fairness run folder, or the JSON of "
            "`recaudit positional analyze --json` / `recaudit fairness evaluate --json`.",
        ),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--output", "-o", help="Where to write the page; the JSON sidecar goes beside it."
        ),
    ] = Path("report.html"),
    kind: Annotated[
        str | None,
        typer.Option(help="positional or fairness (default: recognised from SOURCE)."),
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the sidecar (every number on the page) on stdout.")
    ] = False,
) -> None:
    """Render one self-contained HTML report (inline SVG, works offline) for a run."""
    if kind not in (None, "positional", "fairness"):
        raise typer.BadParameter("must be 'positional' or 'fairness'", param_hint="--kind")
    chosen: Literal["positional", "fairness"] | None = kind  # type: ignore[assignment]
    from .._io import check_output
    from ..report import build_report  # here: `recaudit --help` does not load the report

    check_output(output, what="`--output`", example="report.html")
    result = build_report(source, kind=chosen)
    html_path, json_path = result.save(output)
    if json_output:
        print_json(result.data)
    else:
        err_console.print(
            f"wrote {html_path} and {json_path} ({result.kind} report)", highlight=False
        )
