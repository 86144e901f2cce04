"""Coalesce the runner's concurrent ``complete`` calls into ``complete_batch`` calls.

An in-process model answers a batch of prompts in about the time of a few single ones;
:class:`BatchingBackend` is the adapter the backend factory puts in front of a local
model with ``batch_size > 1``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from ...exceptions import InputError
from .._types import ChatRequest, ChatResponse

__all__ = ["BatchBackend", "BatchingBackend", "describe_backend"]


class BatchBackend(Protocol):
    """A backend that can also answer a list of requests in one blocking call."""

    name: str

    def complete_batch(self, requests: Sequence[ChatRequest]) -> list[ChatResponse]: ...

    async def aclose(self) -> None: ...


def describe_backend(backend: object) -> dict[str, object]:
    """What a backend says of itself (``describe()``), or its class and ``name``."""
    describe = getattr(backend, "describe", None)
    if callable(describe):
        return dict(describe())
    return {"backend": type(backend).__name__, "name": getattr(backend, "name", None)}


class BatchingBackend:
    """Coalesce concurrent ``complete`` calls into ``complete_batch`` calls.

    An in-process model answers a batch of prompts in about the time of a few single
    ones (one forward pass per decoding step for all rows). The runner's workers each
    await ``complete``; this adapter collects the requests that arrive while the
    previous batch runs (up to ``max_batch``) and sends them together, in a worker
    thread. Results still reach the journal one record per evaluation.

    Parameters
    ----------
    backend : object with ``complete_batch``
        E.g. :class:`~recaudit.llm.backends.LocalBackend`.
    max_batch : int
        Largest batch; the run's ``concurrency`` must be at least this high (checked
        by the audit config).
    """

    def __init__(self, backend: BatchBackend, *, max_batch: int = 8) -> None:
        if isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1:
            raise InputError(f"`max_batch` must be an integer >= 1, got {max_batch!r}")
        self.backend = backend
        self.name = backend.name
        self.max_batch = max_batch
        self._pending: list[tuple[ChatRequest, asyncio.Future[ChatResponse]]] = []
        self._drainer: asyncio.Task[None] | None = None

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Queue ``request`` for the next batch and wait for its response."""
        future: asyncio.Future[ChatResponse] = asyncio.get_running_loop().create_future()
        self._pending.append((request, future))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        while self._pending:
            await asyncio.sleep(0)  # let workers that are ready queue their requests
            batch = self._pending[: self.max_batch]
            del self._pending[: self.max_batch]
            try:
                responses = await asyncio.to_thread(self.backend.complete_batch,
                                                    [r for r, _ in batch])
            except Exception as exc:  # noqa: BLE001 -- handed to every caller
                for _, fut in batch:
                    fut.set_exception(exc)
            else:
                for (_, fut), resp in zip(batch, responses, strict=True):
                    fut.set_result(resp)

    async def aclose(self) -> None:
        """Close the wrapped backend."""
        await self.backend.aclose()

    def describe(self) -> dict[str, object]:
        """The wrapped backend's description plus ``max_batch``."""
        return {**describe_backend(self.backend), "max_batch": self.max_batch}
