"""Config -> plan -> run -> evaluations table.

:func:`run_audit` is what ``recaudit positional run`` calls. It validates and builds
everything in memory first (catalog, backends, queries, candidate sets, the full list of
evaluation keys, :mod:`recaudit.audit._plan`), and only then creates the run folder, so
a bad config leaves nothing half-written. The evaluations run on an executor chosen by
name (:mod:`recaudit.audit._executor`).

A resumed run re-reads the queries and candidate sets from the folder (not from the
embedder), checks the config hash and catalog hash against the journal, and runs exactly
the keys without a completed row.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._io import write_atomic
from .._ray_session import check_executor
from ..exceptions import ConfigError, EndpointError, JournalError, RecauditWarning
from ..llm import Backend, Candidate, CandidateSource, Catalog, PromptTemplate, Query
from ._config import (
    AuditConfig,
    config_backends,
    config_fingerprint,
    effective_concurrency,
    legacy_config_hash,
)
from ._executor import Executor, LocalExecutor, RunContext, SequentialExecutor
from ._journal import CONFIG_META, MSG_REJECTED, Journal, check_meta, read_meta
from ._plan import (
    EVALUATIONS,
    JOURNAL,
    MANIFEST,
    AuditInputs,
    build_tasks,
    load_config_catalog,
    parse_position,
    prepare_inputs,
    prompt_length_warning,
    write_inputs,
)
from ._run_options import RunOptions
from ._runner import RunProgress, RunSummary, write_manifest
from ._sequential_driver import SequentialOptions, check_sequential_config
from ._spend import record_spend

__all__ = [
    "EXECUTOR_NAMES",
    "AuditInterrupted",
    "AuditResult",
    "make_executor",
    "run_audit",
]

#: ``run_audit(wrap_backends=...)``: (backends, template, queries, candidates by k) ->
#: the backends to run.
WrapBackends = Callable[
    [dict[tuple[str, int], Backend], PromptTemplate, tuple[Query, ...],
     Mapping[int, Mapping[str, tuple[Candidate, ...]]]],
    dict[tuple[str, int], Backend],
]
#: The executors :func:`make_executor` builds.
EXECUTOR_NAMES = ("local", "sequential", "ray")

MSG_INTERRUPTED = (
    "interrupted: {done} of {planned} evaluations are journaled in {journal}{failed}; "
    "rerun the same command with `--resume` to run the remaining {missing}"
)
MSG_WRAP_RAY = ("backend wrappers (mitigations) run on the local executor only; "
                "drop `--executor ray`")


class AuditInterrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) during a run: what is journaled is kept, ``--resume`` goes on.

    A :class:`KeyboardInterrupt` (callers that stop on one still do); ``str(exc)`` says
    how many evaluations are journaled and how to continue.

    Attributes
    ----------
    journaled, failed, planned : int
        Completed and failed rows in the journal; keys in the plan.
    """

    def __init__(self, message: str, *, journaled: int, failed: int, planned: int) -> None:
        super().__init__(message)
        self.journaled = journaled
        self.failed = failed
        self.planned = planned


@dataclass(frozen=True)
class AuditResult:
    """What :func:`run_audit` did.

    Attributes
    ----------
    run_dir : Path
        The run folder.
    evaluations_path : Path
        ``run_dir / "evaluations.parquet"``.
    planned : int
        Keys in the plan.
    ran_now : int
        Keys evaluated by this call (the rest were already journaled).
    ok, discarded : int
        Rows per outcome in the final table.
    summary : RunSummary
        This call's runner summary (rate, retries).
    concurrency : dict
        The in-flight limits the run used: ``{"total": cfg.concurrency, "per_model":
        {name: limit}}`` (``openai`` models' ``concurrency``, local models'
        ``batch_size``; docs/runner.md, "Concurrency").
    """

    run_dir: Path
    evaluations_path: Path
    planned: int
    ran_now: int
    ok: int
    discarded: int
    summary: RunSummary
    concurrency: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (for ``--json``)."""
        return {
            "run_dir": str(self.run_dir),
            "evaluations": str(self.evaluations_path),
            "planned": self.planned,
            "ran_now": self.ran_now,
            "ok": self.ok,
            "discarded": self.discarded,
            "retries": self.summary.retries,
            "elapsed_s": self.summary.elapsed_s,
            "calls_per_s": self.summary.calls_per_s,
            "concurrency": self.concurrency,
        }


def _run_audit_iv(cfg: AuditConfig, out_dir: str | os.PathLike[str], run: RunOptions,
                  wrapping: bool) -> Path:
    if not isinstance(cfg, AuditConfig):
        raise ConfigError(f"`cfg` must be an AuditConfig, got {type(cfg).__name__}")
    if not isinstance(run, RunOptions):
        raise ConfigError(f"`run` must be RunOptions, got {type(run).__name__}")
    run_dir = Path(out_dir)
    journal = run_dir / JOURNAL
    if run.resume and not journal.exists():
        raise JournalError(f"no journal at {journal}; there is nothing to resume "
                           "(drop `--resume` to start a run)")
    if not run.resume and journal.exists():
        raise JournalError(f"{run_dir} already holds a run ({JOURNAL}); pass `--resume` "
                           "to continue it or choose another `--out`")
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"`--out` {run_dir} exists and is not a folder")
    check_executor(run.executor, run.ray_address)  # Ray installed, when asked for
    if run.sequential is not None:
        check_sequential_config(cfg)
    if wrapping and run.executor != "local":
        raise ConfigError(MSG_WRAP_RAY)
    return run_dir


def make_executor(name: str, cfg: AuditConfig, *, sequential: SequentialOptions | None = None,
                  ray_address: str | None = None) -> Executor:
    """The executor called ``name`` (one of :data:`EXECUTOR_NAMES`) for ``cfg``.

    ``local`` and ``sequential`` build the backends here; ``ray`` starts its actors,
    which build their own.
    """
    if name == "ray":
        from ._ray_executor import RayExecutor

        return RayExecutor(cfg, parse=parse_position, address=ray_address)
    if name == "sequential":
        if sequential is None:
            raise ConfigError("the `sequential` executor needs SequentialOptions")
        return SequentialExecutor(config_backends(cfg), sequential)
    if name == "local":
        return LocalExecutor(config_backends(cfg))
    raise ConfigError(f"`executor` must be one of {', '.join(EXECUTOR_NAMES)}, got {name!r}")


def _journal_meta(cfg: AuditConfig, catalog_sha256: str
                  ) -> tuple[dict[str, str], dict[str, set[str]]]:
    """The journal's identity of this run, and the older config hash also accepted (a
    journal written before ``config_identity`` carries it)."""
    chash, identity = config_fingerprint(cfg)
    meta = {"config_hash": chash, "catalog_sha256": catalog_sha256, CONFIG_META: identity}
    return meta, {"config_hash": {legacy_config_hash(cfg)}}


def _inputs(cfg: AuditConfig, catalog: Catalog, run_dir: Path, resume: bool,
            retriever: CandidateSource | None, say: Callable[[str], None],
            progress: RunProgress | None = None,
            ) -> tuple[AuditInputs, dict[str, str], dict[str, set[str]]]:
    meta, also_accept = _journal_meta(cfg, catalog.sha256)
    if resume:
        # refuse another config before reading the folder (its k may not be ours);
        # the journal checks again under its lock
        stored = read_meta(run_dir / JOURNAL)
        if stored:
            check_meta(run_dir / JOURNAL, stored, meta, also_accept)
    # a display that also draws the catalog's embedding (EmbeddingProgress) gets it
    on_embed = getattr(progress, "embedding", None)
    inputs = prepare_inputs(cfg, run_dir=run_dir, resume=resume, retriever=retriever,
                            say=say, catalog=catalog, on_embed=on_embed)
    return inputs, meta, also_accept


def _finish(journal: Journal, run_dir: Path) -> dict[str, int]:
    """The journal's counts; a refused record or a failed evaluation is an error."""
    counts = journal.counts()
    if journal.rejected:
        key, error = journal.rejected[0]
        raise JournalError(MSG_REJECTED.format(path=journal.path, n=len(journal.rejected),
                                               key=key, error=error))
    if counts["failed"]:
        raise EndpointError(
            f"{counts['failed']} evaluations failed (see `error_class` in "
            f"{run_dir / JOURNAL}); rerun with `--resume` to retry exactly those")
    return counts


def run_audit(
    cfg: AuditConfig,
    *,
    out_dir: str | os.PathLike[str],
    run: RunOptions | None = None,
    progress: RunProgress | None = None,
    retriever: CandidateSource | None = None,
    on_phase: Callable[[str], None] | None = None,
    wrap_backends: WrapBackends | None = None,
) -> AuditResult:
    """Run (or resume) an audit and write its evaluations table.

    Parameters
    ----------
    cfg : AuditConfig
        From :func:`~recaudit.audit.load_audit_config`.
    out_dir : path-like
        The run folder (created after everything validated).
    run : RunOptions, optional
        How this invocation runs it (:class:`~recaudit.audit.RunOptions`: resume,
        executor, Ray address, sequential stopping; default: a new local run). A
        sequential run uses the ``sequential`` executor
        (:mod:`recaudit.audit._sequential_driver`; writes ``sequential.json``; the
        evaluations table then holds the keys run).
    progress : RunProgress, optional
        Live counts.
    retriever : Retriever, optional
        Reuse a loaded retriever (default: one built from ``[retrieval]``).
    on_phase : callable, optional
        Called with a short description of each preparation step.
    wrap_backends : callable, optional
        ``wrap_backends(backends, template, queries, candidates)`` returns the
        backends to run instead (e.g. mitigation wrappers, :mod:`recaudit.llm._mitigation`);
        called once the plan is built, with what re-rendering a request needs. Local
        executor only.

    Returns
    -------
    AuditResult

    Raises
    ------
    ConfigError, InputError
        Before anything is written.
    JournalError
        ``out_dir`` already holds a run (without ``resume``), holds none (with it), or
        holds one with another config or catalog.
    EndpointError
        An endpoint kept failing: what was obtained is journaled; ``resume`` later.
    AuditInterrupted
        Ctrl-C during the run (a :class:`KeyboardInterrupt`): what was obtained is
        journaled; the message says how much and that ``resume`` continues.

    Warns
    -----
    RecauditWarning
        Before the run, when prompts are far beyond a model's context
        (:func:`~recaudit.audit._plan.prompt_length_warning`).
    """
    run = RunOptions() if run is None else run
    run_dir = _run_audit_iv(cfg, out_dir, run, wrap_backends is not None)
    say = on_phase or (lambda _msg: None)
    say("loading the catalog")
    catalog = load_config_catalog(cfg)
    say("starting the backends")
    # the Ray executor builds the backends on its workers, while this process plans
    runner = make_executor("sequential" if run.sequential is not None else run.executor, cfg,
                           sequential=run.sequential, ray_address=run.ray_address)
    try:
        inputs, meta, also_accept = _inputs(cfg, catalog, run_dir, run.resume, retriever, say,
                                            progress)
        tasks = build_tasks(cfg, queries=inputs.queries, candidates=inputs.candidates,
                            template=inputs.template)
        warning = prompt_length_warning(tasks)
        if warning is not None:  # before the run: the CLI prints it as `warning: ...`
            warnings.warn(warning, RecauditWarning, stacklevel=2)
        if wrap_backends is not None:
            runner.backends = wrap_backends(runner.backends, inputs.template, inputs.queries,
                                            inputs.candidates)
        if not run.resume:
            write_inputs(run_dir, cfg, inputs, config_hash=meta["config_hash"])
        with Journal(run_dir / JOURNAL, meta=meta, resume=run.resume, background=True,
                     also_accept=also_accept) as journal:
            # a session is recorded only once the journal is ours (not for a refused
            # resume: another config, or the journal held by another process)
            write_manifest(run_dir / MANIFEST, runner.backends, resume=run.resume,
                           executor=run.executor)
            context = RunContext(cfg=cfg, journal=journal, done=journal.completed_keys(),
                                 run_dir=run_dir, parse=parse_position, say=say,
                                 progress=progress)
            say(f"running {len(context.todo(tasks))} of {len(tasks)} evaluations")
            started = time.perf_counter()
            try:
                summary = runner.run(tasks, context)
            except KeyboardInterrupt as exc:
                raise _interrupted(journal, len(tasks)) from exc
            wall_s = time.perf_counter() - started
            counts = _finish(journal, run_dir)
            table = journal.to_frame()
        write_atomic(run_dir / EVALUATIONS, lambda p: table.to_parquet(p, index=False))
        record_spend(run_dir / MANIFEST, table, wall_s=wall_s, ran_now=summary.total,
                     prices=_prices(cfg))
    finally:
        runner.close()
    return AuditResult(run_dir=run_dir, evaluations_path=run_dir / EVALUATIONS,
                       planned=len(tasks), ran_now=summary.total, ok=counts["ok"],
                       discarded=counts["discarded"], summary=summary,
                       concurrency=effective_concurrency(cfg))


def _prices(cfg: AuditConfig) -> dict[str, tuple[float, float]]:
    """Each priced model's (prompt, completion) price per million tokens."""
    prices = {m.name: getattr(m.params, "price_per_mtok", None) for m in cfg.models}
    return {name: p for name, p in prices.items() if p is not None}


def _interrupted(journal: Journal, planned: int) -> AuditInterrupted:
    """The interrupt with its counts (the results queued so far are committed first)."""
    counts = journal.counts()
    done = counts["ok"] + counts["discarded"]
    failed = f" ({counts['failed']} more failed)" if counts["failed"] else ""
    return AuditInterrupted(
        MSG_INTERRUPTED.format(done=done, planned=planned, journal=journal.path,
                               failed=failed, missing=planned - done),
        journaled=done, failed=counts["failed"], planned=planned)
