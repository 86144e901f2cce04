"""Where an audit's evaluations run: one interface, three implementations.

:func:`~recaudit.audit.run_audit` plans the run, opens the journal, then hands every
planned task to an :class:`Executor` chosen by name (:func:`make_executor`):

- ``local`` (:class:`LocalExecutor`): this process's asyncio runner
  (:func:`~recaudit.audit._runner.run_tasks`) over the keys without a completed row;
- ``sequential`` (:class:`SequentialExecutor`): the same runner, round by round, until
  each cell's anytime-valid test rejects or its budget is spent
  (:mod:`recaudit.audit._sequential_driver`);
- ``ray`` (:class:`~recaudit.audit._ray_executor.RayExecutor`): actors on a Ray
  cluster answer batches; this process alone writes the journal.

An executor is created before the plan (the Ray actors start while the driver loads
the catalog and retrieves candidates) and closed after the run, whatever happened.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..llm import Backend
from ._config import AuditConfig
from ._journal import EvalKey, Journal
from ._runner import EvalTask, ParseFn, RunProgress, RunSummary, run_tasks
from ._sequential_driver import SequentialOptions, drive_sequential

__all__ = [
    "Backends",
    "Executor",
    "LocalExecutor",
    "RunContext",
    "SequentialExecutor",
    "close_backends",
]

#: The backends of a run: one per (model name, k).
Backends = dict[tuple[str, int], Backend]


@dataclass(frozen=True)
class RunContext:
    """What an executor needs besides the tasks.

    Attributes
    ----------
    cfg : AuditConfig
        The run's config (``concurrency``, ``max_consecutive_failures``, ``seed``).
    journal : Journal
        Where every record goes (written in this process only).
    done : collection of EvalKey
        Keys with a completed journal row (not run again).
    run_dir : Path
        The run folder (the sequential driver writes ``sequential.json`` there).
    parse : callable
        ``parse(text, identifiers) -> (position, discard_reason)``.
    say : callable
        Short descriptions of what happens.
    progress : RunProgress or None
        Live counts.
    """

    cfg: AuditConfig
    journal: Journal
    done: Collection[EvalKey]
    run_dir: Path
    parse: ParseFn
    say: Callable[[str], None]
    progress: RunProgress | None = None

    def todo(self, tasks: Sequence[EvalTask]) -> list[EvalTask]:
        """The tasks without a completed journal row."""
        return [t for t in tasks if t.key not in self.done]


class Executor(Protocol):
    """Evaluates the planned tasks of one audit, journaling every result.

    Attributes
    ----------
    name : str
        ``"local"``, ``"sequential"`` or ``"ray"`` (recorded in ``run.json``).
    backends : dict
        The backends built in THIS process (``{}`` for Ray, whose actors build their
        own); a backend wrapper (a mitigation) may replace them before :meth:`run`.
    """

    name: str
    backends: Backends

    def run(self, tasks: Sequence[EvalTask], context: RunContext) -> RunSummary:
        """Evaluate what ``tasks`` still needs (see each implementation); return what
        this call did. Raises :class:`~recaudit.exceptions.EndpointError` when an
        endpoint kept failing (what was obtained is journaled)."""
        ...

    def close(self) -> None:
        """Release backends, loops, actors (idempotent)."""
        ...


async def close_backends(backends: Mapping[tuple[str, int], Backend]) -> None:
    """Close each distinct backend once."""
    for backend in {id(b): b for b in backends.values()}.values():
        await backend.aclose()


class _InProcess:
    """Backends built here, closed in the event loop that used them."""

    name = "local"

    def __init__(self, backends: Backends) -> None:
        self.backends = backends
        self._closed = False

    async def _batch(self, todo: list[EvalTask], context: RunContext,
                     progress: RunProgress | None) -> RunSummary:
        cfg = context.cfg
        return await run_tasks(todo, backends=self.backends, sink=context.journal,
                               parse=context.parse, concurrency=cfg.concurrency,
                               progress=progress,
                               max_consecutive_failures=cfg.max_consecutive_failures)

    def _run_then_close(self, work: Callable[[], Awaitable[RunSummary]]) -> RunSummary:
        self._closed = True  # the backends close in the loop that ran them

        async def main() -> RunSummary:
            try:
                return await work()
            finally:
                await close_backends(self.backends)

        return asyncio.run(main())

    def close(self) -> None:
        """Close the backends if :meth:`run` never did."""
        if not self._closed:
            self._closed = True
            asyncio.run(close_backends(self.backends))


class LocalExecutor(_InProcess):
    """The asyncio runner in this process, over the keys without a completed row."""

    name = "local"

    def run(self, tasks: Sequence[EvalTask], context: RunContext) -> RunSummary:
        """Run ``context.todo(tasks)`` with ``cfg.concurrency`` workers."""
        todo = context.todo(tasks)
        return self._run_then_close(lambda: self._batch(todo, context, context.progress))


class SequentialExecutor(_InProcess):
    """Rounds of the asyncio runner until every cell's anytime-valid test rejects or
    its budget is spent (:func:`~recaudit.audit._sequential_driver.drive_sequential`).
    """

    name = "local"  # run.json records where evaluations ran: this process

    def __init__(self, backends: Backends, options: SequentialOptions) -> None:
        super().__init__(backends)
        self.options = options

    def run(self, tasks: Sequence[EvalTask], context: RunContext) -> RunSummary:
        """Drive ALL planned ``tasks`` round by round (the journal says which are done)."""
        async def batch(todo: list[EvalTask]) -> RunSummary:
            return await self._batch(todo, context, None)

        return self._run_then_close(lambda: drive_sequential(
            self.options, context.cfg, tasks, context.journal, context.run_dir, batch,
            context.say, context.progress))
