"""The Ray executor: evaluate an audit's missing keys on the workers of a Ray cluster.

``recaudit positional run CONFIG.toml --executor ray [--ray-address ADDRESS]`` plans the
run exactly as the local executor does (:func:`recaudit.audit.run_audit`); only the
step "evaluate the missing keys" differs:

- one :class:`EvalActor` per worker CPU (``num_cpus=1`` each), started by
  :class:`RayPool` as soon as ``run_audit`` has validated the config, so actor start-up
  and model loading overlap the driver's catalog, retrieval and planning. An actor
  builds the backends of the config ONCE (a local model is loaded once per actor, with
  ``n_threads=1``), and answers batches of :class:`~._runner.EvalTask`
  with the ordinary asyncio runner (:func:`~._runner.run_tasks`) into an in-memory
  sink, returning the :class:`~._journal.EvalRecord` list;
- the driver keeps two batches in flight per actor (one computing, one waiting on the
  actor), sized GUIDED (large while much remains, small at the end so the actors
  finish together), streams finished batches back with
  ``ray.wait`` and alone writes the journal (one upsert per record, as the local
  executor does), so resume and exactly-once are unchanged;
- a dead actor (:class:`ray.exceptions.RayActorError`, e.g. its worker process was
  killed) is replaced by a new one and the keys of its unfinished batches that are not
  journaled are resubmitted. Each resubmitted record carries ``retries + 1`` (the
  journal shows it needed a second attempt); the journal's keyed upsert keeps one row
  per key whatever happens;
- an HTTP (``openai``) backend's ``rate_limit_per_s`` and ``concurrency`` are split
  evenly over the actors (each actor gets ``limit / n_actors``): the cluster as a whole
  never exceeds the configured rate, with no per-call round trip to a shared
  token-bucket actor (see ``docs/scaling.md``).
"""

from __future__ import annotations

import math
import os
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from .._ray_session import NAMESPACE, ray_session
from ..exceptions import EndpointError, InputError
from ..llm.backends import OpenAIParams
from ._config import AuditConfig, config_backends
from ._executor import Backends, RunContext
from ._journal import EvalRecord, MemorySink, ResultSink
from ._runner import MSG_ABORT, EvalTask, ParseFn, RunProgress, RunSummary, _count, _Counters

__all__ = [
    "ActorStartup",
    "ActorStats",
    "RayExecutor",
    "RayOptions",
    "RayPool",
    "run_tasks_ray",
    "worker_config",
]

#: Batches kept in flight per actor (one computing, one queued).
IN_FLIGHT_PER_ACTOR = 2
#: Actor replacements after which the run stops (something kills every worker).
MAX_REPLACEMENTS = 20
#: Seconds an actor waits for its models to load before the run ends with an
#: EndpointError instead of waiting for ever (a 135M GGUF loads in 2-4 s, the
#: transformers engine's dequantised SmolLM2 in ~95 s on a loaded 2-core machine).
LOAD_TIMEOUT_S = 900.0
MSG_LOAD_TIMEOUT = ("the models did not load within {s:.0f} s on a Ray worker (pid {pid}); "
                    "run with --executor local to see the load's own error")

MSG_REPLACED = (
    "the Ray executor replaced {n} dead actors; the cluster keeps losing workers. "
    "Journaled results are kept: fix the cluster, then rerun with `--resume`"
)


@dataclass(frozen=True)
class RayOptions:
    """How the Ray executor splits the work.

    Attributes
    ----------
    n_actors : int or None
        Evaluation actors (default: the cluster's CPU count, at least 1).
    batch_size : int or None
        Evaluations per batch sent to an actor (default: guided, ``ceil(remaining /
        (4 * n_actors))`` between 1 and 32, see :func:`_next_batch`).
    """

    n_actors: int | None = None
    batch_size: int | None = None


def worker_config(cfg: AuditConfig, n_actors: int) -> AuditConfig:
    """The config one actor builds its backends from.

    ``openai`` models get ``rate_limit_per_s / n_actors`` and
    ``ceil(concurrency / n_actors)``: the cluster's total rate never exceeds the
    configured one. The run's ``concurrency`` is split the same way.
    """
    models = []
    for m in cfg.models:
        p = m.params
        if isinstance(p, OpenAIParams):
            rate = None if p.rate_limit_per_s is None else p.rate_limit_per_s / n_actors
            p = replace(p, rate_limit_per_s=rate,
                        concurrency=max(1, math.ceil(p.concurrency / n_actors)))
        models.append(replace(m, params=p))
    return replace(cfg, models=tuple(models),
                   concurrency=max(1, math.ceil(cfg.concurrency / n_actors)))


@dataclass(frozen=True)
class ActorStartup:
    """When one actor's start-up phases ended (wall-clock epoch seconds).

    Attributes
    ----------
    pid : int
        The worker process.
    process_start : float or None
        The worker process's creation (``psutil``; None without it). Ray starts idle
        workers ahead, so this can precede the actor's creation.
    init : float
        ``EvalActor.__init__`` entered: the worker imported recaudit and unpickled the
        config (the actor's class and arguments travel pickled).
    imports_done : float
        torch and transformers imported (only when a ``local`` model is configured;
        otherwise equal to ``init``'s end).
    ready : float
        Every model's backends built (local models loaded).
    cpu_s : float
        The worker process's CPU seconds at ``ready``.
    loads : tuple of (str, float, bool)
        Per local model: name, load seconds (``LocalBackend.load_s``) and whether the
        dequantised weights cache was hit.
    """

    pid: int
    process_start: float | None
    init: float
    imports_done: float
    ready: float
    cpu_s: float
    loads: tuple[tuple[str, float, bool], ...]


@dataclass(frozen=True)
class ActorStats:
    """What one actor did so far (see :meth:`EvalActor.stats`).

    Attributes
    ----------
    pid : int
        The worker process.
    evaluations : int
        Records returned.
    batches : int
        Batches answered.
    busy_s : float
        Wall seconds spent answering batches (one at a time, see :meth:`EvalActor.run`).
    busy_cpu_s : float
        The process's CPU seconds over those intervals (all its threads).
    torch_threads : int or None
        ``torch.get_num_threads()`` in the actor (None when torch is not imported).
    """

    pid: int
    evaluations: int
    batches: int
    busy_s: float
    busy_cpu_s: float
    torch_threads: int | None


def _process_start() -> float | None:
    try:
        import psutil
    except ImportError:
        return None
    return float(psutil.Process().create_time())


class EvalActor:
    """Evaluates batches of tasks on one Ray worker (wrapped by ``ray.remote``).

    Backends are built on first use of each model and kept for the actor's life.
    """

    def __init__(self, cfg: AuditConfig, parse: ParseFn) -> None:
        self._init = time.time()
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        self.cfg = cfg
        self.parse = parse
        self.backends: dict[tuple[str, int], Any] = {}
        self._lock: Any = None
        self._warming: Any = None
        self._n = self._batches = 0
        self._busy_s = self._busy_cpu_s = 0.0

    def pid(self) -> int:
        """The worker process id (tests kill it)."""
        return os.getpid()

    def _batch_lock(self) -> Any:
        import asyncio

        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    def _warmed(self) -> Any:
        """The one load of this actor's backends (an asyncio task, started on first use)."""
        import asyncio

        if self._warming is None:
            self._warming = asyncio.ensure_future(asyncio.to_thread(self._warm))
        return self._warming

    async def warm(self) -> ActorStartup:
        """Build every model's backends now (loads local models); time the phases.

        The load runs once, in a worker thread, whichever of :meth:`warm` and the
        first :meth:`run` arrives first (Ray does not order an async actor's calls:
        first batches were measured starting before ``warm`` and loading the model
        inside the batch); both await it, and the event loop stays free meanwhile
        (:meth:`pid` and :meth:`stats` answer during the load).
        """
        return await self._loaded()

    async def _loaded(self) -> ActorStartup:
        """The load's result, or an EndpointError after :data:`LOAD_TIMEOUT_S`."""
        import asyncio

        try:
            result: ActorStartup = await asyncio.wait_for(asyncio.shield(self._warmed()),
                                                          LOAD_TIMEOUT_S)
        except TimeoutError:
            raise EndpointError(MSG_LOAD_TIMEOUT.format(s=LOAD_TIMEOUT_S,
                                                        pid=os.getpid())) from None
        return result

    def _warm(self) -> ActorStartup:
        if any(_on_transformers(m) for m in self.cfg.models):
            import torch  # noqa: F401 -- timed apart from the model load
            import transformers  # noqa: F401
        imports_done = time.time()
        loads = []
        for model in self.cfg.models:
            if model.name not in {m for m, _ in self.backends}:
                built = config_backends(self.cfg, (model,))
                self.backends.update(built)
                inner = getattr(next(iter(built.values())), "backend", None) \
                    or next(iter(built.values()))
                if hasattr(inner, "load_s"):
                    loads.append((model.name, float(inner.load_s),
                                  getattr(inner, "loaded_from", None) is not None))
        return ActorStartup(pid=os.getpid(), process_start=_process_start(), init=self._init,
                            imports_done=imports_done, ready=time.time(),
                            cpu_s=time.process_time(), loads=tuple(loads))

    def stats(self) -> ActorStats:
        """Evaluations, busy wall and CPU so far, and torch's thread count."""
        torch = sys.modules.get("torch")
        return ActorStats(pid=os.getpid(), evaluations=self._n, batches=self._batches,
                          busy_s=self._busy_s, busy_cpu_s=self._busy_cpu_s,
                          torch_threads=None if torch is None else int(torch.get_num_threads()))

    def _backends_for(self, tasks: Sequence[EvalTask]) -> dict[tuple[str, int], Any]:
        needed = {t.key.model for t in tasks} - {m for m, _ in self.backends}
        for model in self.cfg.models:
            if model.name in needed:
                self.backends.update(config_backends(self.cfg, (model,)))
        return self.backends

    async def run(self, tasks: list[EvalTask]) -> tuple[list[EvalRecord], bool]:
        """Evaluate ``tasks``; return their records and whether an endpoint gave up.

        Batches run one after the other (an async actor would otherwise interleave the
        driver's two in-flight batches, and both would finish late): the second waits
        here while the first computes, and is ready to start the moment it ends.
        """
        from ._runner import run_tasks

        await self._loaded()
        async with self._batch_lock():
            t0, cpu0 = time.perf_counter(), time.process_time()
            sink = MemorySink()
            aborted = False
            try:
                await run_tasks(tasks, backends=self._backends_for(tasks), sink=sink,
                                parse=self.parse, concurrency=self.cfg.concurrency,
                                max_consecutive_failures=self.cfg.max_consecutive_failures)
            except EndpointError:
                aborted = True
            self._busy_s += time.perf_counter() - t0
            self._busy_cpu_s += time.process_time() - cpu0
            self._n += len(sink.records)
            self._batches += 1
        return list(sink.records.values()), aborted


def _on_transformers(model: Any) -> bool:
    """Whether ``model`` runs on the transformers engine (torch is imported for it only:
    a llama.cpp actor never loads torch)."""
    engine = getattr(model.params, "resolved_engine", None)
    return model.backend == "local" and engine is not None and engine() == "transformers"


def _next_batch(pending: list[EvalTask], size: int | None, n_slots: int) -> list[EvalTask]:
    """Take the next batch from the front of ``pending`` (reversed: the end is the front).

    Batches hold one model (an actor loads a model on its first batch of it). Without
    a fixed ``size`` the batch is GUIDED (as OpenMP's ``schedule(guided)``):
    ``ceil(remaining / (2 * n_slots))`` tasks, between 1 and 32 -- large while much
    remains (few round trips), small at the end, so the actors finish within about
    one small batch of each other instead of one idling while the other computes a
    large last batch.
    """
    n = size or max(1, min(32, math.ceil(len(pending) / (2 * n_slots))))
    model = pending[-1].key.model
    batch: list[EvalTask] = []
    while pending and len(batch) < n and pending[-1].key.model == model:
        batch.append(pending.pop())
    return batch


def _pool_iv(options: RayOptions, n_cpus: int) -> int:
    n_actors = options.n_actors if options.n_actors is not None else max(1, n_cpus)
    if isinstance(n_actors, bool) or not isinstance(n_actors, int) or n_actors < 1:
        raise InputError(f"`n_actors` must be an integer >= 1, got {options.n_actors!r}")
    size = options.batch_size
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
        raise InputError(f"`batch_size` must be an integer >= 1, got {size!r}")
    return n_actors


class RayPool:
    """The evaluation actors of one audit, started early and reused across calls.

    Creating the pool connects to Ray (:class:`ray_session`), starts one
    :class:`EvalActor` per cluster CPU and asks each to build its backends at once
    (``warm``), so actor start-up and model loading overlap whatever the driver does
    next (catalog, retrieval, planning). :meth:`run` may be called several times
    (e.g. rounds of a sequential audit) with the same warm actors. Use as a context
    manager or call :meth:`close`.

    Parameters
    ----------
    cfg : AuditConfig
        Backends are built from it on each actor (see :func:`worker_config`).
    parse : callable
        ``parse(text, identifiers) -> (position, discard_reason)``, run on the actors.
    address : str, optional
        Ray address (``None``: the current connection or a new local cluster).
    options : RayOptions, optional
        Actors and batch size.
    """

    def __init__(self, cfg: AuditConfig, *, parse: ParseFn, address: str | None = None,
                 options: RayOptions | None = None) -> None:
        self.cfg = cfg
        self.options = options or RayOptions()
        self._session = ray_session(address)
        ray = self._ray = self._session.__enter__()
        try:
            self.n_actors = _pool_iv(self.options, int(ray.cluster_resources().get("CPU", 1)))
            self._wcfg = worker_config(cfg, self.n_actors)
            self._parse = parse
            self._remote = ray.remote(num_cpus=1, max_restarts=0)(EvalActor)
            self._run_id = uuid.uuid4().hex[:8]
            self._serial = 0
            self.created = time.time()
            self._warm: dict[int, Any] = {}
            self.actors = [self._new_actor() for _ in range(self.n_actors)]
        except BaseException:
            self._session.__exit__(None, None, None)
            raise
        self.replaced = 0
        self._closed = False

    def _new_actor(self) -> Any:
        actor = self._remote.options(name=f"eval-{self._run_id}-{self._serial}",
                                     namespace=NAMESPACE).remote(self._wcfg, self._parse)
        self._serial += 1
        # load the models now; a failure shows on the first batch
        self._warm[id(actor)] = actor.warm.remote()
        return actor

    def startup(self, timeout: float | None = None) -> list[ActorStartup]:
        """The start-up phases of the current actors (waits until they are ready).

        Times are epoch seconds, comparable with :attr:`created` (when this pool asked
        Ray for the actors). Actors that died or did not answer within ``timeout`` are
        left out.
        """
        ray, out = self._ray, []
        for actor in self.actors:
            try:
                out.append(ray.get(self._warm[id(actor)], timeout=timeout))
            except (ray.exceptions.RayError, KeyError):
                continue
        return out

    def stats(self) -> list[ActorStats]:
        """Each current actor's :class:`ActorStats` (dead actors are left out)."""
        ray, out = self._ray, []
        for actor in self.actors:
            try:
                out.append(ray.get(actor.stats.remote(), timeout=30))
            except ray.exceptions.RayError:
                continue
        return out

    def __enter__(self) -> RayPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the actors and disconnect (if this pool connected); idempotent."""
        for actor in self.actors:
            self._ray.kill(actor)
        self.actors = []
        if not self._closed:
            self._closed = True
            self._session.__exit__(None, None, None)

    def run(self, tasks: Sequence[EvalTask], *, sink: ResultSink,
            progress: RunProgress | None = None) -> RunSummary:
        """Evaluate ``tasks`` on the actors; write every record to ``sink`` here.

        Returns
        -------
        RunSummary
            ``retries`` includes one per resubmitted evaluation.

        Raises
        ------
        EndpointError
            An endpoint failed ``max_consecutive_failures`` times in a row, or the
            cluster kept killing actors; every result obtained is already in ``sink``.
        """
        ray, cfg = self._ray, self.cfg
        todo = list(tasks)
        t0 = time.perf_counter()
        if progress is not None:
            progress.start(len(todo))
        dispatch = _Dispatch(self, todo, sink, cfg.max_consecutive_failures)
        for _ in range(IN_FLIGHT_PER_ACTOR):
            for slot in range(self.n_actors):
                dispatch.submit(slot)
        while dispatch.in_flight:
            ready, _ = ray.wait(list(dispatch.in_flight), num_returns=1)
            slot, batch = dispatch.in_flight.pop(ready[0])
            try:
                records, aborted = ray.get(ready[0])
            except ray.exceptions.RayActorError:
                self._replace_dead(slot)
                dispatch.requeue(batch)
            else:
                dispatch.journal(records, aborted, batch)
                if progress is not None:
                    c = dispatch.counters
                    progress.update(done=c.ok + c.discarded + c.failed, discarded=c.discarded,
                                    failed=c.failed, retries=c.retries)
            dispatch.submit(slot)
        return dispatch.summary(time.perf_counter() - t0)

    def _replace_dead(self, slot: int) -> None:
        """The actor of ``slot`` failed a batch: replace it if it died (once per death;
        its other in-flight batch fails the same way)."""
        if not _alive(self._ray, self.actors[slot]):
            self.replaced += 1
            if self.replaced > MAX_REPLACEMENTS:
                raise EndpointError(MSG_REPLACED.format(n=self.replaced - 1)) from None
            self.actors[slot] = self._new_actor()


class _Dispatch:
    """The driver's side of one :meth:`RayPool.run`: what is pending, in flight,
    resubmitted and journaled, and the counts."""

    def __init__(self, pool: RayPool, todo: list[EvalTask], sink: ResultSink,
                 max_failures: int) -> None:
        self.pool, self.sink, self.max_failures = pool, sink, max_failures
        self.total = len(todo)
        # one model after the other; pop() from the end = submission order
        self.pending = [t for m in dict.fromkeys(t.key.model for t in todo)
                        for t in todo if t.key.model == m][::-1]
        self.queue: list[list[EvalTask]] = []  # resubmitted batches, sent first
        self.n_slots = IN_FLIGHT_PER_ACTOR * pool.n_actors
        self.in_flight: dict[Any, tuple[int, list[EvalTask]]] = {}
        self.resubmitted: set[Any] = set()
        self.written: set[Any] = set()
        self.counters = _Counters()

    def submit(self, slot: int) -> None:
        """Send the next batch to ``slot``'s actor (none once an endpoint gave up)."""
        if self.counters.abort_model is not None or not (self.queue or self.pending):
            return
        batch = self.queue.pop() if self.queue else _next_batch(
            self.pending, self.pool.options.batch_size, self.n_slots)
        self.in_flight[self.pool.actors[slot].run.remote(batch)] = (slot, batch)

    def requeue(self, batch: list[EvalTask]) -> None:
        """A batch lost with its actor: resubmit what is not journaled yet."""
        lost = [t for t in batch if t.key not in self.written]
        self.resubmitted.update(t.key for t in lost)
        if lost:
            self.queue.append(lost)

    def journal(self, records: list[EvalRecord], aborted: bool,
                batch: list[EvalTask]) -> None:
        """Write a finished batch's records (a resubmitted one counts a retry)."""
        for record in records:
            if record.key in self.resubmitted:
                record = replace(record, retries=record.retries + 1)
            self.sink.write(record)
            self.written.add(record.key)
            _count(self.counters, record, self.max_failures)
        if aborted and self.counters.abort_model is None:
            self.counters.abort_model = batch[0].key.model

    def summary(self, elapsed_s: float) -> RunSummary:
        """The run's summary; an endpoint that gave up is an :class:`EndpointError`."""
        c = self.counters
        summary = RunSummary(total=self.total, ok=c.ok, discarded=c.discarded,
                             failed=c.failed, retries=c.retries, elapsed_s=elapsed_s,
                             aborted=c.abort_model is not None)
        if c.abort_model is not None:
            raise EndpointError(MSG_ABORT.format(
                model=c.abort_model, n=self.max_failures,
                last=c.last_error or "the endpoint kept failing",
                missing=summary.total - summary.ok - summary.discarded, total=summary.total,
                failed=summary.failed))
        return summary


def run_tasks_ray(
    tasks: Sequence[EvalTask],
    *,
    cfg: AuditConfig,
    sink: ResultSink,
    parse: ParseFn,
    address: str | None = None,
    options: RayOptions | None = None,
    progress: RunProgress | None = None,
    pool: RayPool | None = None,
) -> RunSummary:
    """Evaluate ``tasks`` on Ray actors; write every record to ``sink`` on the driver.

    Parameters
    ----------
    tasks : sequence of EvalTask
        The missing keys.
    cfg : AuditConfig
        Backends are built from it on each actor (see :func:`worker_config`).
    sink : ResultSink
        The journal; written only here, in the driver process.
    parse : callable
        ``parse(text, identifiers) -> (position, discard_reason)``.
    address : str, optional
        Ray address (``None``: the current connection or a new local cluster).
    options : RayOptions, optional
        Actors and batch size.
    progress : RunProgress, optional
        Live counts.
    pool : RayPool, optional
        Warm actors to use (and leave running); default: a pool for this call.

    Returns
    -------
    RunSummary
        ``retries`` includes one per resubmitted evaluation.

    Raises
    ------
    EndpointError
        See :meth:`RayPool.run`.
    """
    if pool is not None:
        return pool.run(tasks, sink=sink, progress=progress)
    if not tasks:  # a finished run resumed: nothing to send, no cluster needed
        if progress is not None:
            progress.start(0)
        return RunSummary(total=0, ok=0, discarded=0, failed=0, retries=0, elapsed_s=0.0,
                          aborted=False)
    with RayPool(cfg, parse=parse, address=address, options=options) as own:
        return own.run(tasks, sink=sink, progress=progress)


def _alive(ray: Any, actor: Any) -> bool:
    """Whether ``actor`` still answers (a dead one raises at once)."""
    try:
        ray.get(actor.pid.remote(), timeout=30)
    except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
        return False
    return True


class RayExecutor:
    """The :class:`~recaudit.audit._executor.Executor` of ``executor="ray"``.

    Its :class:`RayPool` starts when the executor is created (before the plan, so actor
    start-up and model loading overlap the driver's catalog, retrieval and planning);
    :meth:`run` sends the keys without a completed row to the actors and journals every
    record here.
    """

    name = "ray"

    def __init__(self, cfg: AuditConfig, *, parse: ParseFn, address: str | None = None,
                 options: RayOptions | None = None) -> None:
        #: The actors build their own backends: none in this process.
        self.backends: Backends = {}
        self.pool = RayPool(cfg, parse=parse, address=address, options=options)

    def run(self, tasks: Sequence[EvalTask], context: RunContext) -> RunSummary:
        """Evaluate ``context.todo(tasks)`` on the actors (:meth:`RayPool.run`)."""
        return self.pool.run(context.todo(tasks), sink=context.journal,
                             progress=context.progress)

    def close(self) -> None:
        """Stop the actors and disconnect."""
        self.pool.close()
