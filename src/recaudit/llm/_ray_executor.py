"""The Ray executor: evaluate an audit's missing keys on the workers of a Ray cluster.

``recaudit positional run CONFIG.toml --executor ray [--ray-address ADDRESS]`` plans the
run exactly as the local executor does (:func:`recaudit.llm._audit.run_audit`); only the
step "evaluate the missing keys" differs:

- one :class:`EvalActor` per worker CPU (``num_cpus=1`` each), started by
  :class:`RayPool` as soon as ``run_audit`` has validated the config, so actor start-up
  and model loading overlap the driver's catalog, retrieval and planning. An actor
  builds the backends of the config ONCE (a local model is loaded once per actor, with
  ``n_threads=1``), and answers batches of :class:`~._runner.EvalTask`
  with the ordinary asyncio runner (:func:`~._runner.run_tasks`) into an in-memory
  sink, returning the :class:`~._journal.EvalRecord` list;
- the driver keeps two batches in flight per actor, streams finished batches back with
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
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..exceptions import ConfigError, EndpointError, InputError, MissingExtraError
from ._config import AuditConfig, OpenAIParams
from ._journal import EvalRecord, MemorySink, ResultSink
from ._runner import MSG_ABORT, EvalTask, ParseFn, RunProgress, RunSummary, _count, _Counters

__all__ = ["EXECUTORS", "RayOptions", "RayPool", "import_ray", "ray_session", "run_tasks_ray"]

#: Accepted values of ``--executor``.
EXECUTORS = ("local", "ray")
#: Namespace of the evaluation actors (tests find them there by name).
NAMESPACE = "recaudit"
#: Batches kept in flight per actor (one computing, one queued).
IN_FLIGHT_PER_ACTOR = 2
#: Actor replacements after which the run stops (something kills every worker).
MAX_REPLACEMENTS = 20

MSG_EXECUTOR = "`executor` must be one of {allowed}, got {value!r}"
MSG_ADDRESS = "`ray_address` is only used with `executor='ray'` (got executor={executor!r})"
MSG_REPLACED = (
    "the Ray executor replaced {n} dead actors; the cluster keeps losing workers. "
    "Journaled results are kept: fix the cluster, then rerun with `--resume`"
)


def import_ray() -> Any:
    """Import :mod:`ray` or raise :class:`~recaudit.exceptions.MissingExtraError`."""
    try:
        import ray
    except ImportError as exc:
        raise MissingExtraError("ray", "ray") from exc
    return ray


def check_executor(executor: str, ray_address: str | None) -> str:
    """Validate ``executor`` / ``ray_address`` (shared by the positional and fairness runs)."""
    if executor not in EXECUTORS:
        raise ConfigError(MSG_EXECUTOR.format(allowed=EXECUTORS, value=executor))
    if ray_address is not None and executor != "ray":
        raise ConfigError(MSG_ADDRESS.format(executor=executor))
    if executor == "ray":
        import_ray()
    return executor


class ray_session:  # noqa: N801 -- used as a context manager, like open()
    """Connect to Ray for the duration of a ``with`` block.

    Reuses a connection the caller already opened (``ray.is_initialized()``); otherwise
    connects to ``address`` (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``) or,
    with ``address=None``, starts a local cluster on this machine, and shuts down what
    it started on exit.
    """

    def __init__(self, address: str | None = None) -> None:
        self.address = address
        self._ray = import_ray()
        self._started = False

    def __enter__(self) -> Any:
        ray = self._ray
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"log_to_driver": False, "namespace": NAMESPACE}
            if self.address is None:
                kwargs["include_dashboard"] = False
            ray.init(address=self.address, **kwargs)
            self._started = True
        return ray

    def __exit__(self, *exc: object) -> None:
        if self._started:
            self._ray.shutdown()


@dataclass(frozen=True)
class RayOptions:
    """How the Ray executor splits the work.

    Attributes
    ----------
    n_actors : int or None
        Evaluation actors (default: the cluster's CPU count, at least 1).
    batch_size : int or None
        Evaluations per batch sent to an actor (default: enough for about 4 batches
        per actor, between 1 and 32; smaller batches stream results back sooner).
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


class EvalActor:
    """Evaluates batches of tasks on one Ray worker (wrapped by ``ray.remote``).

    Backends are built on first use of each model and kept for the actor's life.
    """

    def __init__(self, cfg: AuditConfig, parse: ParseFn) -> None:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        self.cfg = cfg
        self.parse = parse
        self.backends: dict[tuple[str, int], Any] = {}

    def pid(self) -> int:
        """The worker process id (tests kill it)."""
        return os.getpid()

    def warm(self) -> int:
        """Build every model's backends now (loads local models); returns the pid."""
        from ._audit import build_backends

        for model in self.cfg.models:
            if model.name not in {m for m, _ in self.backends}:
                self.backends.update(build_backends(replace(self.cfg, models=(model,))))
        return os.getpid()

    def _backends_for(self, tasks: Sequence[EvalTask]) -> dict[tuple[str, int], Any]:
        from ._audit import build_backends

        needed = {t.key.model for t in tasks} - {m for m, _ in self.backends}
        for model in self.cfg.models:
            if model.name in needed:
                self.backends.update(build_backends(replace(self.cfg, models=(model,))))
        return self.backends

    async def run(self, tasks: list[EvalTask]) -> tuple[list[EvalRecord], bool]:
        """Evaluate ``tasks``; return their records and whether an endpoint gave up."""
        from ._runner import run_tasks

        sink = MemorySink()
        aborted = False
        try:
            await run_tasks(tasks, backends=self._backends_for(tasks), sink=sink,
                            parse=self.parse, concurrency=self.cfg.concurrency,
                            max_consecutive_failures=self.cfg.max_consecutive_failures)
        except EndpointError:
            aborted = True
        return list(sink.records.values()), aborted


def _batches(tasks: list[EvalTask], size: int) -> list[list[EvalTask]]:
    # keep one model per batch (an actor loads a model on its first batch of it)
    by_model: dict[str, list[EvalTask]] = {}
    for t in tasks:
        by_model.setdefault(t.key.model, []).append(t)
    return [group[i:i + size] for group in by_model.values()
            for i in range(0, len(group), size)]


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
            self.actors = [self._new_actor() for _ in range(self.n_actors)]
        except BaseException:
            self._session.__exit__(None, None, None)
            raise
        self.replaced = 0

    def _new_actor(self) -> Any:
        actor = self._remote.options(name=f"eval-{self._run_id}-{self._serial}",
                                     namespace=NAMESPACE).remote(self._wcfg, self._parse)
        self._serial += 1
        actor.warm.remote()  # load the models now; a failure shows on the first batch
        return actor

    def __enter__(self) -> RayPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the actors and disconnect (if this pool connected)."""
        for actor in self.actors:
            self._ray.kill(actor)
        self.actors = []
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
        counters = _Counters()
        t0 = time.perf_counter()
        if progress is not None:
            progress.start(len(todo))
        size = self.options.batch_size or max(
            1, min(32, math.ceil(len(todo) / (4 * self.n_actors))))
        queue = _batches(todo, size)
        queue.reverse()  # pop() from the end = submission order
        in_flight: dict[Any, tuple[int, list[EvalTask]]] = {}
        resubmitted: set[Any] = set()
        written: set[Any] = set()

        def submit(slot: int) -> None:
            batch = queue.pop()
            in_flight[self.actors[slot].run.remote(batch)] = (slot, batch)

        for _ in range(IN_FLIGHT_PER_ACTOR):
            for slot in range(self.n_actors):
                if queue:
                    submit(slot)
        while in_flight:
            ready, _ = ray.wait(list(in_flight), num_returns=1)
            ref = ready[0]
            slot, batch = in_flight.pop(ref)
            try:
                records, aborted = ray.get(ref)
            except ray.exceptions.RayActorError:
                # the actor died: replace it (once per death) and requeue what is not
                # journaled yet; its other in-flight batch fails the same way
                if not _alive(ray, self.actors[slot]):
                    self.replaced += 1
                    if self.replaced > MAX_REPLACEMENTS:
                        raise EndpointError(MSG_REPLACED.format(n=self.replaced - 1)) from None
                    self.actors[slot] = self._new_actor()
                lost = [t for t in batch if t.key not in written]
                resubmitted.update(t.key for t in lost)
                if lost:
                    queue.append(lost)
                if counters.abort_model is None and queue:
                    submit(slot)
                continue
            for record in records:
                if record.key in resubmitted:
                    record = replace(record, retries=record.retries + 1)
                sink.write(record)
                written.add(record.key)
                _count(counters, record, cfg.max_consecutive_failures)
            if aborted and counters.abort_model is None:
                counters.abort_model = batch[0].key.model
            if progress is not None:
                progress.update(done=counters.ok + counters.discarded + counters.failed,
                                discarded=counters.discarded, failed=counters.failed,
                                retries=counters.retries)
            if counters.abort_model is None and queue:
                submit(slot)
        summary = RunSummary(
            total=len(todo), ok=counters.ok, discarded=counters.discarded,
            failed=counters.failed, retries=counters.retries,
            elapsed_s=time.perf_counter() - t0, aborted=counters.abort_model is not None,
        )
        if counters.abort_model is not None:
            raise EndpointError(MSG_ABORT.format(
                model=counters.abort_model, n=cfg.max_consecutive_failures,
                last=counters.last_error or "the endpoint kept failing",
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
