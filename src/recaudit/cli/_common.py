"""Helpers shared by the CLI modules: JSON output and error reporting."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import threading
import warnings
from collections.abc import Callable, Iterator
from functools import wraps
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from .._io import to_jsonable
from ..exceptions import InputError, RecauditError, RecauditWarning

__all__ = ["err_console", "evaluations_file", "exit_on_error", "print_json", "to_jsonable"]

err_console = Console(stderr=True)
#: Ctrl-C outside a run's evaluations (a run says what it journaled, see
#: recaudit.audit.AuditInterrupted).
MSG_INTERRUPTED = "interrupted"

#: Exit codes of a command stopped by a signal: 128 + the signal's number.
EXIT_SIGINT = 130
EXIT_SIGTERM = 143

P = ParamSpec("P")
R = TypeVar("R")


MSG_NO_EVALUATIONS = ("{folder}: no evaluations.parquet; pass an evaluations table or a "
                      "`recaudit positional run` folder")


def evaluations_file(path: Path) -> Path:
    """``path``, or a run folder's ``evaluations.parquet`` (an :class:`InputError` when
    the folder has none)."""
    if not path.is_dir():
        return path
    table = path / "evaluations.parquet"
    if not table.is_file():
        raise InputError(MSG_NO_EVALUATIONS.format(folder=path))
    return table


def print_json(obj: Any) -> None:
    """Print ``obj`` as one JSON document on stdout (NaN/inf become ``null``)."""
    typer.echo(json.dumps(to_jsonable(obj), indent=2, allow_nan=False))


#: The characters ``str.splitlines`` breaks at: escaped in a printed message, so that a
#: value from the user's data (a column name with a \\x1c in it) cannot split it.
_LINE_BREAKS = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def _safe(text: str) -> str:
    """Text any terminal can print on one line: what no encoding can show (a lone
    surrogate an endpoint sent) and every line break become escapes (\\uXXXX, \\x1c),
    never a UnicodeEncodeError or a second line."""
    text = _LINE_BREAKS.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"),
                            text)
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _show_warning(message: Warning | str, category: type[Warning], filename: str,
                  lineno: int, file: Any = None, line: str | None = None) -> None:
    if issubclass(category, RecauditWarning):
        err_console.print(f"[bold yellow]warning:[/] {escape(_safe(str(message)))}",
                          highlight=False, markup=True, soft_wrap=True)
    else:
        _default_showwarning(message, category, filename, lineno, file, line)


_default_showwarning = warnings.showwarning


@contextlib.contextmanager
def sigterm_as_sigint() -> Iterator[list[bool]]:
    """While open, SIGTERM takes the path of Ctrl-C (SIGINT): it calls the SIGINT
    handler in force (Python's, which raises :class:`KeyboardInterrupt`, or the one
    ``asyncio.run`` installs, which cancels the run's task so that what is done is
    journaled), so a run ended by ``kill`` stops as cleanly and says the same. Yields a
    one-item list set to ``True`` once SIGTERM came (the exit code is then 143).
    Outside the main thread (where no handler can be set) it does nothing."""
    came = [False]
    if threading.current_thread() is not threading.main_thread():
        yield came
        return

    def on_term(signum: int, frame: Any) -> None:
        came[0] = True
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)
        else:  # SIGINT ignored (a background job) or default: stop anyway
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield came
    finally:
        signal.signal(signal.SIGTERM, previous)


def exit_on_error(fn: Callable[P, R]) -> Callable[P, R]:
    """Run a command: a :class:`RecauditError` becomes a red one-line message and exit
    code 2; Ctrl-C a one-line message (how much of a run is journaled, see
    :class:`~recaudit.audit.AuditInterrupted`) and exit code 130, SIGTERM the same
    message and exit code 143 (:func:`sigterm_as_sigint`); a
    :class:`~recaudit.exceptions.RecauditWarning` a yellow ``warning:`` line."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        terminated = [False]
        try:
            with warnings.catch_warnings(), sigterm_as_sigint() as terminated:
                warnings.showwarning = _show_warning
                warnings.simplefilter("always", RecauditWarning)
                return fn(*args, **kwargs)
        except KeyboardInterrupt as exc:
            text = str(exc) or MSG_INTERRUPTED
            err_console.print(f"[bold yellow]{escape(_safe(text))}[/]", highlight=False,
                              markup=True, soft_wrap=True)
            raise typer.Exit(code=EXIT_SIGTERM if terminated[0] else EXIT_SIGINT) from None
        except RecauditError as exc:
            message = f"[bold red]error:[/] {escape(_safe(str(exc)))}"
            err_console.print(message, highlight=False, markup=True, soft_wrap=True)
            raise typer.Exit(code=2) from exc

    return wrapper
