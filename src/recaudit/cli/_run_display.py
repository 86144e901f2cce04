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


def _rate(task: Task) -> float | None:
    """Items per second: rich's windowed speed, else the average since the start (the
    window needs two updates within 30 s, which slow evaluations do not give)."""
    speed = task.finished_speed or task.speed
    if speed:
        return float(speed)
    elapsed = task.elapsed
    return task.completed / elapsed if elapsed and task.completed else None


class _RateColumn(ProgressColumn):
    """``1.8/s`` (or ``12 s/it`` when slower than one per second)."""

    def render(self, task: Task) -> Text:
        rate = _rate(task)
        if not rate:
            return Text("", style="progress.data.speed")
        text = f"{rate:.1f}/s" if rate >= 1 else f"{1 / rate:.0f} s/it"
        return Text(text, style="progress.data.speed")


class _EtaColumn(ProgressColumn):
    """``ETA 0:42`` from the rate above; nothing before the first item."""

    def render(self, task: Task) -> Text:
        rate = _rate(task)
        if task.finished or not rate or task.total is None:
            return Text("")
        left = int((task.total - task.completed) / rate)
        return Text(f"ETA {left // 60}:{left % 60:02d}", style="progress.remaining")


class _TroubleColumn(ProgressColumn):
    """Discards, retries and failures, shown only once there are any."""

    def render(self, task: Task) -> Text:
        parts = [f"{task.fields.get(name, 0)} {name}" for name in
                 ("discarded", "retries", "failed") if task.fields.get(name, 0)]
        return Text(", ".join(parts), style="yellow")


class RichProgress:
    """The runner's live display: done/total, rate, ETA, discards, retries, failures.
    The embedding bar leaves the screen once the catalog is embedded."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task: Any = None
        self._embed: Any = None

    def embedding(self, done: int, total: int) -> None:
        """The catalog's embedding (first run over a catalog only)."""
        if self._embed is None:
            self._embed = self._progress.add_task("embedding", total=total)
        self._progress.update(self._embed, completed=done)
        if done >= total:
            self._progress.remove_task(self._embed)

    def start(self, total: int) -> None:
        self._task = self._progress.add_task("evaluating", total=total)

    def update(self, *, done: int, discarded: int, failed: int, retries: int) -> None:
        self._progress.update(self._task, completed=done, discarded=discarded,
                              retries=retries, failed=failed)


def progress_display() -> Progress:
    """One line per task that fits 80 columns: ``evaluating ━━━━ 37/160 4.1/s ETA 0:30``
    (+ discards, retries, failures when there are any)."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(bar_width=16),
        MofNCompleteColumn(),
        _RateColumn(),
        _EtaColumn(),
        _TroubleColumn(),
        console=err_console,
        transient=False,
    )


def phase_printer(live: bool) -> Callable[[str], None]:
    """The progress-phase printer: dim lines on stderr when live, else silent."""

    def say(msg: str) -> None:
        if live:
            err_console.print(f"[dim]{msg}...[/]", highlight=False)

    return say
