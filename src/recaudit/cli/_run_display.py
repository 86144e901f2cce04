"""Live progress displays of the positional commands (rich, on stderr)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from ._common import err_console

__all__ = ["RichProgress", "phase_printer", "progress_bar", "progress_display"]


def progress_bar(quiet: bool) -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
        disable=quiet,
    )


class _RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:.1f}/s" if speed else "-/s", style="progress.data.speed")


class RichProgress:
    """The runner's live display: done/total, rate, ETA, discards, retries, failures."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task: Any = None
        self._embed: Any = None

    def embedding(self, done: int, total: int) -> None:
        """The catalog's embedding (first run over a catalog: about a minute)."""
        if self._embed is None:
            self._embed = self._progress.add_task("embedding the catalog", total=total,
                                                  discarded=0, retries=0, failed=0)
        self._progress.update(self._embed, completed=done)

    def start(self, total: int) -> None:
        self._task = self._progress.add_task("evaluating", total=total, discarded=0,
                                             retries=0, failed=0)

    def update(self, *, done: int, discarded: int, failed: int, retries: int) -> None:
        self._progress.update(self._task, completed=done, discarded=discarded,
                              retries=retries, failed=failed)


def progress_display() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        _RateColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TimeElapsedColumn(),
        TextColumn("discards {task.fields[discarded]}  retries {task.fields[retries]}  "
                   "failed {task.fields[failed]}"),
        console=err_console,
        transient=False,
    )


def phase_printer(live: bool) -> Callable[[str], None]:
    """The progress-phase printer: dim lines on stderr when live, else silent."""

    def say(msg: str) -> None:
        if live:
            err_console.print(f"[dim]{msg}...[/]", highlight=False)

    return say
