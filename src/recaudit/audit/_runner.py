"""The asyncio runner: evaluate every planned key once, journaling each result.

The runner is independent of where tasks come from (see :mod:`recaudit.audit._run`)
and of where results go (a :class:`~recaudit.audit._journal.ResultSink`): it pulls
:class:`EvalTask` objects through a fixed pool of ``concurrency`` workers, sends each
request to its backend, parses the answer to a prompt position and writes one
:class:`~recaudit.audit._journal.EvalRecord` per task as soon as it is known.

A backend that gives up (:class:`~recaudit.exceptions.EndpointError` or any other
exception) produces a ``failed`` record -- never a crash, never a gap. After
``max_consecutive_failures`` failures in a row on one model, the endpoint is
considered down: the runner stops scheduling, lets in-flight calls finish, and raises
an :class:`~recaudit.exceptions.EndpointError` that says how many evaluations are
missing and that ``--resume`` will run them.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Protocol

from .._io import write_text_atomic
from .._limits import DEFAULT_CONCURRENCY
from ..exceptions import EndpointError, InputError
from ..llm import Backend, Candidate, ChatRequest, ChatResponse, parse_ranking
from ..llm.backends import describe_backend
from ._journal import EvalKey, EvalRecord, ResultSink

__all__ = [
    "EvalTask",
    "ParseFn",
    "RunProgress",
    "RunSummary",
    "describe_backends",
    "record_from_response",
    "run_tasks",
    "write_manifest",
]

#: ``parse(text, identifiers) -> (position or None, discard_reason or None)``.
ParseFn = Callable[[str, tuple[str, ...]], tuple[int | None, str | None]]

MSG_ABORT = (
    "model {model!r}: {n} evaluations in a row failed (last: {last}); stopped the run "
    "with {missing} of {total} evaluations still missing ({failed} recorded as failed). "
    "Fix the endpoint, then rerun with `--resume` to run exactly the missing ones"
)


@dataclass(frozen=True)
class EvalTask:
    """One planned evaluation.

    Attributes
    ----------
    key : EvalKey
        Its identity.
    request : ChatRequest
        What to send; ``request.order`` and ``request.identifiers`` describe the
        prompt positions.
    candidates : tuple of Candidate
        The query's candidates in ORIGINAL order (to name the selected item).
    answer : {"pick", "ranking"}
        What the prompt asks for (``[prompt] answer``): one identifier, read by the
        run's parser, or a ranking of all k, read by :func:`recaudit.llm.parse_ranking`
        (its first item is the evaluation's selection).
    """

    key: EvalKey
    request: ChatRequest
    candidates: tuple[Candidate, ...]
    answer: Literal["pick", "ranking"] = "pick"


@dataclass(frozen=True)
class RunSummary:
    """What one :func:`run_tasks` call did.

    Attributes
    ----------
    total : int
        Tasks planned in this call (the missing keys).
    ok, discarded, failed : int
        Records written per status.
    retries : int
        Backend retries summed over calls.
    elapsed_s : float
        Wall time.
    aborted : bool
        The run stopped early because an endpoint kept failing.
    """

    total: int
    ok: int
    discarded: int
    failed: int
    retries: int
    elapsed_s: float
    aborted: bool

    @property
    def calls_per_s(self) -> float:
        """Completed records per second of wall time."""
        done = self.ok + self.discarded + self.failed
        return done / self.elapsed_s if self.elapsed_s > 0 else float("nan")


class RunProgress(Protocol):
    """Receives live counts (the CLI shows them with rich).

    A display may also implement :class:`EmbeddingProgress`; :func:`run_audit` then
    reports the catalog's embedding to it (a first run's slowest silent step).
    """

    def start(self, total: int) -> None: ...

    def update(self, *, done: int, discarded: int, failed: int, retries: int) -> None: ...


class EmbeddingProgress(Protocol):
    """Optional part of a run display: catalog titles embedded so far, of the total."""

    def embedding(self, done: int, total: int) -> None: ...


def describe_backends(backends: Mapping[tuple[str, int], object]) -> list[dict[str, object]]:
    """One entry per config model and k: which backend answered (for ``run.json``).

    Each entry has ``model`` (the config's model label), ``k``, ``backend`` (kind or
    class), ``name`` (e.g. ``"local:model.gguf+constrained"``) and what the backend's
    ``describe()`` adds (for an OpenAI endpoint: ``model_id`` and ``base_url`` without
    credentials or query string).
    """
    return [{"model": model, "k": k, **describe_backend(b)}
            for (model, k), b in sorted(backends.items())]


def write_manifest(path: str | os.PathLike[str],
                   backends: Mapping[tuple[str, int], object], *, resume: bool,
                   executor: str = "local") -> None:
    """Record which backends ran, in ``run.json`` (one session per run or resume).

    ``{"recaudit_version": ..., "sessions": [{"started_utc", "resume", "executor",
    "backends"}]}`` with ``backends`` from :func:`describe_backends` (empty with the Ray
    executor, whose workers build their own); a resume appends a session, so
    a run finished by another model build or endpoint says so. Written atomically.
    """
    from .. import __version__

    path = Path(path)
    sessions: list[object] = []
    if resume and path.exists():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # unreadable: keep the run going, start afresh
            old = {}
        if isinstance(old, dict) and isinstance(old.get("sessions"), list):
            sessions = old["sessions"]
    manifest = {"recaudit_version": __version__, "sessions": sessions}
    sessions.append({"started_utc": datetime.now(UTC).isoformat(timespec="seconds"),
                     "resume": resume, "executor": executor,
                     "backends": describe_backends(backends)})
    text = json.dumps(manifest, indent=2)
    write_text_atomic(path, text)


@dataclass
class _Counters:
    ok: int = 0
    discarded: int = 0
    failed: int = 0
    retries: int = 0
    consecutive: dict[str, int] = field(default_factory=dict)
    last_error: str = ""
    abort_model: str | None = None


async def run_tasks(
    tasks: Iterable[EvalTask],
    *,
    backends: Mapping[tuple[str, int], Backend],
    sink: ResultSink,
    parse: ParseFn,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: RunProgress | None = None,
    max_consecutive_failures: int = 5,
    progress_interval_s: float = 0.1,
) -> RunSummary:
    """Evaluate ``tasks`` and write one record per task to ``sink``.

    Parameters
    ----------
    tasks : iterable of EvalTask
        The keys to run (on resume: only the missing ones).
    backends : mapping of (model, k) to Backend
        The backend answering each task, looked up by ``(key.model, key.k)``.
    sink : ResultSink
        Receives each record as soon as it is known (the journal commits it).
    parse : callable
        ``parse(text, identifiers) -> (position, discard_reason)``.
    concurrency : int
        Number of evaluations in flight at once.
    progress : RunProgress, optional
        Live counts: updated at most every ``progress_interval_s`` and once at the end
        (a display refreshed per call costs CPU that the calls need).
    max_consecutive_failures : int
        Failures in a row on one model after which the run stops (endpoint down).
    progress_interval_s : float
        Least time between two progress updates.

    Returns
    -------
    RunSummary

    Raises
    ------
    EndpointError
        When a model's backend failed ``max_consecutive_failures`` times in a row; every
        result obtained so far is already in ``sink``.
    """
    task_list, concurrency = _run_tasks_iv(tasks, backends, concurrency,
                                           max_consecutive_failures)
    counters = _Counters()
    queue: asyncio.Queue[EvalTask] = asyncio.Queue()
    for task in task_list:
        queue.put_nowait(task)
    if progress is not None:
        progress.start(len(task_list))
    t0 = time.perf_counter()
    last_update = t0

    def report() -> None:
        assert progress is not None
        progress.update(
            done=counters.ok + counters.discarded + counters.failed,
            discarded=counters.discarded,
            failed=counters.failed,
            retries=counters.retries,
        )

    async def worker() -> None:
        nonlocal last_update
        while counters.abort_model is None:
            try:
                task = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            record = await _evaluate(task, backends[(task.key.model, task.key.k)], parse)
            sink.write(record)
            _count(counters, record, max_consecutive_failures)
            if progress is not None:
                now = time.perf_counter()
                if now - last_update >= progress_interval_s:
                    last_update = now
                    report()

    await asyncio.gather(*(worker() for _ in range(min(concurrency, max(1, len(task_list))))))
    if progress is not None:
        report()
    summary = RunSummary(
        total=len(task_list),
        ok=counters.ok,
        discarded=counters.discarded,
        failed=counters.failed,
        retries=counters.retries,
        elapsed_s=time.perf_counter() - t0,
        aborted=counters.abort_model is not None,
    )
    if counters.abort_model is not None:
        raise EndpointError(
            MSG_ABORT.format(
                model=counters.abort_model,
                n=max_consecutive_failures,
                last=counters.last_error,
                missing=summary.total - summary.ok - summary.discarded,
                total=summary.total,
                failed=summary.failed,
            )
        )
    return summary


def _count(counters: _Counters, record: EvalRecord, limit: int) -> None:
    model = record.key.model
    counters.retries += record.retries
    if record.status == "failed":
        counters.failed += 1
        counters.consecutive[model] = counters.consecutive.get(model, 0) + 1
        counters.last_error = f"{record.error_class}: {record.error_message}"
        if counters.consecutive[model] >= limit and counters.abort_model is None:
            counters.abort_model = model
        return
    counters.consecutive[model] = 0
    if record.status == "ok":
        counters.ok += 1
    else:
        counters.discarded += 1


async def _evaluate(task: EvalTask, backend: Backend, parse: ParseFn) -> EvalRecord:
    req = task.request
    t0 = time.perf_counter()
    try:
        resp = await backend.complete(req)
    except Exception as exc:  # noqa: BLE001 -- a failing backend must not lose the run
        message = str(exc) if isinstance(exc, EndpointError) else str(exc)[:500]
        return EvalRecord(key=task.key, status="failed", order=req.order,
                          identifiers=req.identifiers, error_class=type(exc).__name__,
                          error_message=message, latency_s=time.perf_counter() - t0,
                          retries=_retries_of(exc))
    return record_from_response(task, resp, parse)


def record_from_response(task: EvalTask, resp: ChatResponse, parse: ParseFn) -> EvalRecord:
    """The journal record of ``task`` answered by ``resp``: the answer parsed to a
    prompt position (``ok``; a ranking answer also keeps its whole ranking) or kept
    with its reason (``discarded``). The live runner
    and batch results (:mod:`recaudit.audit._batch`) both go through it."""
    req = task.request
    ranking: tuple[int, ...] | None = None
    if task.answer == "ranking":
        parsed = parse_ranking(resp.text, req.identifiers)
        ranking, reason = parsed.positions, parsed.discard_reason
        position = None if ranking is None else ranking[0]
    else:
        position, reason = parse(resp.text, req.identifiers)
    original = None if position is None else req.order[position - 1]
    item_id = next((c.item_id for c in task.candidates if c.original_index == original), None)
    return EvalRecord(
        key=task.key,
        status="discarded" if position is None else "ok",
        order=req.order,
        identifiers=req.identifiers,
        selected_position=position,
        selected_original_index=original,
        selected_item_id=item_id,
        raw_response=resp.text,
        discard_reason=(reason or "unparsed") if position is None else None,
        latency_s=resp.latency_s,
        prompt_tokens=resp.prompt_tokens,
        completion_tokens=resp.completion_tokens,
        retries=resp.retries,
        choice_probs=resp.choice_probs,
        outside_mass=resp.outside_mass,
        ranking=ranking,
    )


def _retries_of(exc: BaseException) -> int:
    value = getattr(exc, "retries", 0)
    return value if isinstance(value, int) else 0


def _run_tasks_iv(
    tasks: Iterable[EvalTask],
    backends: Mapping[tuple[str, int], Backend],
    concurrency: int,
    max_consecutive_failures: int,
) -> tuple[list[EvalTask], int]:
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise InputError(f"`concurrency` must be an integer >= 1, got {concurrency!r}")
    if max_consecutive_failures < 1:
        raise InputError(
            f"`max_consecutive_failures` must be >= 1, got {max_consecutive_failures!r}"
        )
    task_list = list(tasks)
    missing = sorted({(t.key.model, t.key.k) for t in task_list} - set(backends))
    if missing:
        raise InputError(
            f"`backends` has no backend for (model, k) {missing}; add one per model and k"
        )
    for t in task_list:
        if len(t.request.order) != t.key.k or len(t.request.identifiers) != t.key.k:
            raise InputError(
                f"task {t.key}: `request.order` and `request.identifiers` must have "
                f"k={t.key.k} entries"
            )
    return task_list, concurrency
