"""``recaudit positional ...`` commands."""

from __future__ import annotations

import typer

__all__ = ["app"]

app = typer.Typer(help="The positional study.", no_args_is_help=True)
