"""The ``recaudit`` command line: ``recaudit <study> <verb>``.

Thin by design: each verb parses its options, calls the library and prints. Exit
codes: 0 ok, 1 bias found (only with ``--fail-on-bias``), 2 usage or input error.
"""

from __future__ import annotations

import typer

from .fairness import app as fairness_app
from .positional import app as positional_app
from .report import report

__all__ = ["app", "main"]

app = typer.Typer(
    name="recaudit",
    help="Audit recommender systems for bias with real statistics.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(positional_app, name="positional")
app.add_typer(fairness_app, name="fairness")
app.command("report")(report)


def main() -> None:
    """Entry point of the ``recaudit`` console script."""
    app()
