"""Helpers shared by the CLI modules: JSON output and error reporting."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from typing import Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from .._io import to_jsonable
from ..exceptions import RecauditError

__all__ = ["err_console", "exit_on_error", "print_json", "to_jsonable"]

err_console = Console(stderr=True)

P = ParamSpec("P")
R = TypeVar("R")


def print_json(obj: Any) -> None:
    """Print ``obj`` as one JSON document on stdout (NaN/inf become ``null``)."""
    typer.echo(json.dumps(to_jsonable(obj), indent=2, allow_nan=False))


def exit_on_error(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn a :class:`RecauditError` into a red one-line message and exit code 2."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except RecauditError as exc:
            # text no terminal encoding can show (a lone surrogate an endpoint sent)
            # is printed as a \\uXXXX escape, never a UnicodeEncodeError
            text = str(exc).encode("utf-8", "backslashreplace").decode("utf-8")
            message = f"[bold red]error:[/] {escape(text)}"
            err_console.print(message, highlight=False, markup=True, soft_wrap=True)
            raise typer.Exit(code=2) from exc

    return wrapper
