"""Helpers shared by the CLI modules: JSON output and error reporting."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from functools import wraps
from typing import Any, ParamSpec, TypeVar

import numpy as np
import typer
from rich.console import Console
from rich.markup import escape

from ..exceptions import RecauditError

__all__ = ["err_console", "exit_on_error", "print_json", "to_jsonable"]

err_console = Console(stderr=True)

P = ParamSpec("P")
R = TypeVar("R")


def to_jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays and non-finite floats (-> None) for ``json``."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return to_jsonable(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


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
            message = f"[bold red]error:[/] {escape(str(exc))}"
            err_console.print(message, highlight=False, markup=True, soft_wrap=True)
            raise typer.Exit(code=2) from exc

    return wrapper
