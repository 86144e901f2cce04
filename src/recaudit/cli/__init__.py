"""The ``recaudit`` command line: ``recaudit <study> <verb>``.

Thin by design: each verb parses its options, calls the library and prints. Exit
codes: 0 ok, 1 bias found (only with ``--fail-on-bias``), 2 usage or input error.
"""

from __future__ import annotations

import os
import sys

import typer

from .fairness import app as fairness_app
from .joint import joint_command
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
app.command("joint")(joint_command)


#: Environment that silences third-party progress bars and log chatter (tqdm, hence
#: RecBole's; transformers' "Loading weights" bars; the Hugging Face hub's) when the
#: command line was asked for quiet or machine-readable output. Set before any of those
#: libraries is imported (the commands import them lazily).
QUIET_ENVIRONMENT = {
    "TQDM_DISABLE": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
}


def silence_third_party(argv: list[str]) -> None:
    """With ``--quiet`` or ``--json`` in ``argv``, set :data:`QUIET_ENVIRONMENT`."""
    if "--quiet" in argv or "--json" in argv:
        os.environ.update(QUIET_ENVIRONMENT)


def main() -> None:
    """Entry point of the ``recaudit`` console script."""
    silence_third_party(sys.argv[1:])
    app()
