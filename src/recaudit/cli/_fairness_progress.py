"""Progress bars of ``recaudit fairness run``, drawn from the study's events."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

__all__ = ["StudyProgress"]


class StudyProgress:
    """A :data:`~recaudit.fairness.study._run.Progress` callback drawing rich bars.

    One bar of models per dataset and one of grid points per model being trained;
    a resumed model, one scored again under a new protocol and every finished one get
    a line.

    Parameters
    ----------
    console : rich.console.Console
        Where the bars go (the CLI's stderr console).
    n_models : int
        Models plus baselines of each dataset.
    disable : bool
        No bars (``--quiet``).
    """

    def __init__(self, console: Console, *, n_models: int, disable: bool) -> None:
        self.bars = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
            console=console,
            disable=disable,
        )
        self.n_models = n_models
        self.models: TaskID | None = None
        self.grid: TaskID | None = None
        self._handlers: dict[str, Callable[[dict[str, Any]], None]] = {
            "dataset": self._dataset,
            "model": self._model,
            "grid": self._grid,
            "done": self._done,
            "rescore": self._rescore,
        }

    def __enter__(self) -> StudyProgress:
        self.bars.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.bars.__exit__(exc_type, exc, tb)

    def __call__(self, event: str, fields: dict[str, Any]) -> None:
        """Draw one event of :func:`~recaudit.fairness.study.run_fairness_study` (others
        are ignored)."""
        handler = self._handlers.get(event)
        if handler is not None:
            handler(fields)

    def _dataset(self, fields: dict[str, Any]) -> None:
        self.models = self.bars.add_task(f"{fields['name']}: models", total=self.n_models)

    def _model(self, fields: dict[str, Any]) -> None:
        self.grid = None
        if fields["skipped"]:
            self.bars.console.print(f"  {fields['name']}: done in an earlier run, skipped")
            self._advance_models()
        else:
            self.grid = self.bars.add_task(
                f"  {fields['name']}: grid points", total=fields["n_grid"]
            )

    def _grid(self, fields: dict[str, Any]) -> None:
        if self.grid is not None:
            self.bars.update(self.grid, completed=fields["index"])

    def _done(self, fields: dict[str, Any]) -> None:
        if self.grid is not None:
            self.bars.update(self.grid, completed=self.bars.tasks[self.grid].total)
        self._advance_models()
        self.bars.console.print(f"  {fields['name']}: {fields['seconds']:.1f} s")

    def _rescore(self, fields: dict[str, Any]) -> None:
        protocols = ", ".join(fields["protocols"])
        self.bars.console.print(f"  {fields['name']}: lists for {protocols} from its checkpoint")

    def _advance_models(self) -> None:
        if self.models is not None:
            self.bars.advance(self.models)
