"""Config -> plan -> run -> evaluations table.

:func:`run_audit` is what ``recaudit positional run`` calls. It validates and builds
everything in memory first (catalog, backends, queries, candidate sets, the full list of
evaluation keys), and only then creates the run folder, so a bad config leaves nothing
half-written. The run folder holds::

    config.resolved.json   the resolved config (paths absolute, no secrets)
    run.json               which backends answered (name, model id, base_url), per session
    queries.parquet        query_id, text, template_id
    candidates.parquet     k, query_id, original_index, item_id, title, description, score
    journal.sqlite         one row per evaluation (see recaudit.llm._journal)
    evaluations.parquet    the analyze-input table, written when every key is complete

A resumed run re-reads the queries and candidate sets from the folder (not from the
embedder), checks the config hash and catalog hash against the journal, and runs exactly
the keys without a completed row.
"""

from __future__ import annotations

import asyncio
import json
import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._io import write_atomic
from .._read import read_table
from ..exceptions import ConfigError, EndpointError, InputError, JournalError, RecauditWarning
from ._catalog import ColumnMap, load_catalog
from ._config import (
    AuditConfig,
    LocalParams,
    OpenAIParams,
    SimulatedParams,
    config_fingerprint,
    config_to_dict,
    legacy_config_hash,
)
from ._designs import design_orders
from ._journal import CONFIG_META, MSG_REJECTED, EvalKey, Journal, check_meta, read_meta
from ._parse import parse_answer
from ._prompt import PromptTemplate, positional_identifiers, random_labels, render_request
from ._queries import Query, generate_queries, load_queries
from ._ray_executor import RayPool, check_executor, run_tasks_ray
from ._retrieval import Retriever, candidates_from_frame, candidates_to_frame
from ._runner import (
    BatchingBackend,
    EvalTask,
    RunProgress,
    RunSummary,
    run_tasks,
    write_manifest,
)
from ._sequential import SequentialOptions, check_sequential_config, drive_sequential
from ._types import Backend, Candidate
from .backends._openai import OpenAIBackend
from .backends._simulated import SimulatedBackend, SimulationProfile, stable_words

__all__ = [
    "AuditInterrupted",
    "AuditResult",
    "answer_schema",
    "build_backends",
    "build_tasks",
    "prompt_length_warning",
    "run_audit",
]

JOURNAL = "journal.sqlite"
#: ``run_audit(wrap_backends=...)``: (backends, template, queries, candidates by k) ->
#: the backends to run.
WrapBackends = Callable[
    [dict[tuple[str, int], Backend], PromptTemplate, tuple[Query, ...],
     Mapping[int, Mapping[str, tuple[Candidate, ...]]]],
    dict[tuple[str, int], Backend],
]
EVALUATIONS = "evaluations.parquet"
CANDIDATES = "candidates.parquet"
QUERIES = "queries.parquet"
RESOLVED = "config.resolved.json"
MSG_FOLDER_INPUTS = (
    "run folder {run_dir}: its candidates.parquet holds no candidate set for {what} of "
    "this config; resume with the config the run was started with, or start a new run "
    "in another `--out`"
)
MANIFEST = "run.json"


MSG_INTERRUPTED = (
    "interrupted: {done} of {planned} evaluations are journaled in {journal}{failed}; "
    "rerun the same command with `--resume` to run the remaining {missing}"
)
MSG_LONG_PROMPTS = (
    "{n} of {total} prompts are longer than ~{limit:,} tokens, far beyond the context "
    "window of most models (the longest: query {query!r} at k={k}, ~{tokens:,} tokens "
    "from {chars:,} characters; its longest candidate is item {item!r}, {field_chars:,} "
    "characters of title and description); the endpoint will truncate or reject them: "
    "shorten those catalog texts, or use a template that leaves descriptions out"
)
#: Prompts longer than this many (estimated) tokens are warned about before a run.
PROMPT_WARN_TOKENS = 32_768
#: Characters per token of the estimate (English text under the common BPE
#: tokenizers: about 4).
CHARS_PER_TOKEN = 4


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


def prompt_length_warning(tasks: list[EvalTask], *,
                          limit_tokens: int = PROMPT_WARN_TOKENS) -> str | None:
    """A warning when some rendered prompts are far beyond a model's context (e.g. a
    catalog with a 2 MB description), else ``None``.

    Tokens are estimated as characters / :data:`CHARS_PER_TOKEN` (no tokenizer is
    loaded: the endpoint's is unknown); the warning names the longest prompt and its
    longest candidate.
    """
    limit_chars = limit_tokens * CHARS_PER_TOKEN
    long: list[tuple[int, EvalTask]] = []
    for t in tasks:
        chars = sum(len(m.content) for m in t.request.messages)
        if chars > limit_chars:
            long.append((chars, t))
    if not long:
        return None
    chars, worst = max(long, key=lambda x: x[0])
    item = max(worst.candidates, key=lambda c: len(c.title) + len(c.description))
    return MSG_LONG_PROMPTS.format(
        n=len(long), total=len(tasks), limit=limit_tokens, query=worst.key.query_id,
        k=worst.key.k, tokens=chars // CHARS_PER_TOKEN, chars=chars, item=item.item_id,
        field_chars=len(item.title) + len(item.description))


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
    """

    run_dir: Path
    evaluations_path: Path
    planned: int
    ran_now: int
    ok: int
    discarded: int
    summary: RunSummary

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
        }


def answer_schema(identifiers: tuple[str, ...]) -> dict[str, Any]:
    """The ``response_format`` used with ``prompt.constrained = true``.

    A JSON schema allowing exactly ``{"article_number": <identifier>}``; servers that
    honour it (llama.cpp, vLLM) decode under a grammar, which changes the system under
    test -- the run records it in its config.
    """
    values: list[int | str] = [int(i) if i.isdigit() else i for i in identifiers]
    schema = {
        "type": "object",
        "properties": {"article_number": {"enum": values}},
        "required": ["article_number"],
    }
    return {"type": "json_object", "schema": schema}


def build_backends(cfg: AuditConfig) -> dict[tuple[str, int], Backend]:
    """One backend per (model name, k) (instances are shared across k when they can).

    Parameters
    ----------
    cfg : AuditConfig
        The config.
    """
    out: dict[tuple[str, int], Backend] = {}
    for m in cfg.models:
        p = m.params
        shared: Backend | None = None
        if isinstance(p, OpenAIParams):
            shared = OpenAIBackend(
                p.base_url, p.model, api_key_env=p.api_key_env, concurrency=p.concurrency,
                rate_limit_per_s=p.rate_limit_per_s, timeout_s=p.timeout_s,
                max_retries=p.max_retries, name=m.name,
                rng=np.random.default_rng(stable_words("jitter", cfg.seed, m.name)),
            )
        elif isinstance(p, LocalParams):
            from .backends._local import LocalBackend

            # `[prompt] constrained` selects the backend's constrained mode (its
            # equivalent of a JSON-schema `response_format`)
            local = LocalBackend(p.model, n_threads=p.n_threads,
                                 constrained=cfg.prompt.constrained)
            shared = local if p.batch_size == 1 else BatchingBackend(local,
                                                                     max_batch=p.batch_size)
        for k in cfg.retrieval.k:
            if shared is not None:
                out[(m.name, k)] = shared
            elif isinstance(p, SimulatedParams):
                profile = SimulationProfile(
                    p_bias=p.p_bias, position_weights=p.position_weights,
                    max_relevant=p.max_relevant, discard_rate=p.discard_rate,
                    delay_s=p.delay_s,
                )
                out[(m.name, k)] = SimulatedBackend(profile, k=k, seed=cfg.seed, name=m.name)
    return out


def _rng(*parts: object) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(stable_words(*parts)))


def _request_seed(cfg: AuditConfig, key: EvalKey) -> int:
    return stable_words("seed", cfg.seed, key.k, key.temperature, key.condition,
                        key.query_id, key.perm_index, key.sample_index)[0] & 0x7FFFFFFF


def build_tasks(
    cfg: AuditConfig,
    *,
    queries: tuple[Query, ...],
    candidates: Mapping[int, Mapping[str, tuple[Candidate, ...]]],
    template: PromptTemplate,
) -> list[EvalTask]:
    """Every evaluation key of the config, with its rendered request.

    Orders and labels derive from ``(seed, k, query_id)`` only -- not from the model,
    temperature or condition -- so the designs are paired across them (the
    ``shared`` design uses one set of orders for all queries of a k).

    - ``permutation``: the design's orders, ``samples_per_order`` each;
    - ``decoding``: the identity order, as many samples as ``permutation`` has;
    - ``labels``: the identity order with fresh random labels per evaluation;
    - ``labels_permutation``: the design's orders with random labels.

    ``prompt.identifiers = "labels"`` uses random labels in every condition.
    """
    spo = cfg.design.samples_per_order
    tasks: list[EvalTask] = []
    for k in cfg.retrieval.k:
        identity = tuple(range(1, k + 1))
        shared_orders = None
        if cfg.design.kind == "shared":
            shared_orders = design_orders("shared", k, cfg.design.n_perms,
                                          rng=_rng("orders", cfg.seed, k))
        for q in queries:
            cands = candidates[k][q.query_id]
            orders = shared_orders if shared_orders is not None else design_orders(
                cfg.design.kind, k, cfg.design.n_perms,
                rng=_rng("orders", cfg.seed, k, q.query_id))
            designed = [(pi, si, tuple(int(x) for x in orders[pi]))
                        for pi in range(len(orders)) for si in range(spo)]
            repeated = [(0, si, identity) for si in range(len(designed))]
            for condition in cfg.conditions:
                cells = designed if condition in ("permutation", "labels_permutation") \
                    else repeated
                labelled = condition in ("labels", "labels_permutation") or \
                    cfg.prompt.identifiers == "labels"
                for pi, si, order in cells:
                    idents = tuple(random_labels(k, rng=_rng("labels", cfg.seed, k,
                                                             q.query_id, pi, si))) \
                        if labelled else tuple(positional_identifiers(k))
                    schema = answer_schema(idents) if cfg.prompt.constrained else None
                    for model in cfg.models:
                        # a constrained local backend enforces the schema itself
                        fmt = None if model.backend == "local" else schema
                        for t in cfg.temperatures:
                            key = EvalKey(model.name, k, t, condition, q.query_id, pi, si)
                            req = render_request(
                                template, q.text, cands, order, identifiers=idents,
                                temperature=t, seed=_request_seed(cfg, key),
                                max_tokens=cfg.prompt.max_tokens,
                                choice_probabilities=cfg.prompt.choice_probabilities,
                                response_format=fmt, query_id=q.query_id,
                            )
                            tasks.append(EvalTask(key=key, request=req, candidates=cands))
    return tasks


def _parse(text: str, identifiers: tuple[str, ...]) -> tuple[int | None, str | None]:
    parsed = parse_answer(text, identifiers)
    return parsed.position, parsed.discard_reason


def _candidates_frame(queries: tuple[Query, ...],
                      candidates: Mapping[int, Mapping[str, tuple[Candidate, ...]]]
                      ) -> pd.DataFrame:
    frames = []
    for k, by_query in candidates.items():
        frame = candidates_to_frame(by_query, queries=queries)
        frame.insert(0, "k", k)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def _read_run_inputs(run_dir: Path, cfg: AuditConfig
                     ) -> tuple[tuple[Query, ...], dict[int, dict[str, tuple[Candidate, ...]]]]:
    try:
        qdf = read_table(run_dir / QUERIES, what="the run's queries")
        cdf = read_table(run_dir / CANDIDATES, what="the run's candidate sets")
    except InputError as exc:
        raise JournalError(f"run folder {run_dir} lacks readable {QUERIES}/{CANDIDATES} "
                           f"({exc}); start a new run in another `--out`") from None
    queries = tuple(Query(str(r.query_id), str(r.text), str(r.template_id),
                          str(r.source_item_id)) for r in qdf.itertuples(index=False))
    cands = {int(k): candidates_from_frame(part) for k, part in cdf.groupby("k")}
    missing = sorted(set(cfg.retrieval.k) - set(cands))
    lacking = [q.query_id for q in queries for k in cfg.retrieval.k
               if k in cands and q.query_id not in cands[k]]
    if missing or lacking:
        raise JournalError(MSG_FOLDER_INPUTS.format(
            run_dir=run_dir, what=f"k = {missing}" if missing else f"query {lacking[0]!r}"))
    return queries, cands


def _run_audit_iv(cfg: AuditConfig, out_dir: str | os.PathLike[str], resume: bool) -> Path:
    if not isinstance(cfg, AuditConfig):
        raise ConfigError(f"`cfg` must be an AuditConfig, got {type(cfg).__name__}")
    run_dir = Path(out_dir)
    journal = run_dir / JOURNAL
    if resume and not journal.exists():
        raise JournalError(f"no journal at {journal}; there is nothing to resume "
                           "(drop `--resume` to start a run)")
    if not resume and journal.exists():
        raise JournalError(f"{run_dir} already holds a run ({JOURNAL}); pass `--resume` "
                           "to continue it or choose another `--out`")
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"`--out` {run_dir} exists and is not a folder")
    return run_dir


def run_audit(
    cfg: AuditConfig,
    *,
    out_dir: str | os.PathLike[str],
    resume: bool = False,
    progress: RunProgress | None = None,
    retriever: Retriever | None = None,
    on_phase: Callable[[str], None] | None = None,
    sequential: SequentialOptions | None = None,
    executor: str = "local",
    ray_address: str | None = None,
    wrap_backends: WrapBackends | None = None,
) -> AuditResult:
    """Run (or resume) an audit and write its evaluations table.

    Parameters
    ----------
    cfg : AuditConfig
        From :func:`~recaudit.llm.load_config`.
    out_dir : path-like
        The run folder (created after everything validated).
    resume : bool
        Continue the run in ``out_dir``: run exactly the keys without a completed
        journal row (never-run keys and ``failed`` ones).
    progress : RunProgress, optional
        Live counts.
    retriever : Retriever, optional
        Reuse a loaded retriever (default: one built from ``[retrieval]``).
    on_phase : callable, optional
        Called with a short description of each preparation step.
    sequential : SequentialOptions, optional
        Run in rounds and stop each cell when an anytime-valid test rejects
        uniformity or its budget is spent (:mod:`recaudit.llm._sequential`; writes
        ``sequential.json``); the evaluations table then holds the keys run. Local
        executor only.
    executor : {"local", "ray"}
        Where evaluations run: this process's asyncio runner, or the workers of a Ray
        cluster (:mod:`recaudit.llm._ray_executor`; the journal is still written here).
    ray_address : str, optional
        Ray cluster address for ``executor="ray"`` (default: a new local cluster).
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
        (:func:`prompt_length_warning`).
    """
    run_dir = _run_audit_iv(cfg, out_dir, resume)
    check_executor(executor, ray_address)
    if sequential is not None:
        check_sequential_config(cfg)
        if executor != "local":
            raise ConfigError("`--sequential` runs on the local executor only; drop "
                              "`--executor ray` (or run the sequential audit without it)")
    if wrap_backends is not None and executor != "local":
        raise ConfigError("backend wrappers (mitigations) run on the local executor only; "
                          "drop `--executor ray`")
    say = on_phase or (lambda _msg: None)
    say("loading the catalog")
    columns = ColumnMap.myntra() if isinstance(cfg.catalog.columns, str) \
        else dict(cfg.catalog.columns)
    catalog = load_catalog(cfg.catalog.path, columns=columns)
    template = PromptTemplate.default() if cfg.prompt.template is None \
        else PromptTemplate.from_file(cfg.prompt.template)
    say("starting the backends")
    # the Ray executor builds the backends on its workers, while this process plans
    backends = build_backends(cfg) if executor == "local" else {}
    pool = RayPool(cfg, parse=_parse, address=ray_address) if executor == "ray" else None
    chash, identity = config_fingerprint(cfg)
    meta = {"config_hash": chash, "catalog_sha256": catalog.sha256, CONFIG_META: identity}
    # a journal written before config_identity carries the older hash of this config
    also_accept = {"config_hash": {legacy_config_hash(cfg)}}
    closed = False
    try:
        if resume:
            # refuse another config before reading the folder (its k may not be ours);
            # the journal checks again under its lock
            stored = read_meta(run_dir / JOURNAL)
            if stored:
                check_meta(run_dir / JOURNAL, stored, meta, also_accept)
            queries, candidates = _read_run_inputs(run_dir, cfg)
        else:
            say("preparing the queries")
            if cfg.queries.n is None:
                queries = tuple(load_queries(cfg.queries.file or ""))
            else:
                queries = tuple(generate_queries(catalog, cfg.queries.n,
                                                 rng=_rng("queries", cfg.seed)))
            say("retrieving candidates")
            if retriever is None:
                retriever = Retriever(cfg.retrieval.model, cache_dir=cfg.retrieval.cache_dir)
            candidates = {k: retriever.retrieve(catalog, queries, k=k)
                          for k in cfg.retrieval.k}
        tasks = build_tasks(cfg, queries=queries, candidates=candidates, template=template)
        warning = prompt_length_warning(tasks)
        if warning is not None:  # before the run: the CLI prints it as `warning: ...`
            warnings.warn(warning, RecauditWarning, stacklevel=2)
        if wrap_backends is not None:
            backends = wrap_backends(backends, template, queries, candidates)
        if not resume:
            run_dir.mkdir(parents=True, exist_ok=True)
            resolved = dict(config_to_dict(cfg), catalog_sha256=catalog.sha256,
                            config_hash=chash)
            write_atomic(run_dir / RESOLVED, lambda p: p.write_text(
                json.dumps(resolved, indent=2, sort_keys=True), encoding="utf-8"))
            write_atomic(run_dir / QUERIES, lambda p: pd.DataFrame(
                [{"query_id": q.query_id, "text": q.text, "template_id": q.template_id,
                  "source_item_id": q.source_item_id} for q in queries]).to_parquet(p, index=False))
            write_atomic(run_dir / CANDIDATES,
                          lambda p: _candidates_frame(queries, candidates).to_parquet(
                              p, index=False))
        with Journal(run_dir / JOURNAL, meta=meta, resume=resume, background=True,
                     also_accept=also_accept) as journal:
            # a session is recorded only once the journal is ours (not for a refused
            # resume: another config, or the journal held by another process)
            write_manifest(run_dir / MANIFEST, backends, resume=resume, executor=executor)
            done = journal.completed_keys()
            todo = [t for t in tasks if t.key not in done]
            say(f"running {len(todo)} of {len(tasks)} evaluations")
            closed = True
            try:
                if sequential is not None:
                    summary = asyncio.run(_run_sequential(sequential, tasks, backends,
                                                          journal, cfg, run_dir, say, progress))
                elif executor == "ray":
                    summary = run_tasks_ray(todo, cfg=cfg, sink=journal, parse=_parse,
                                            pool=pool, progress=progress)
                else:
                    summary = asyncio.run(_run(todo, backends, journal, cfg, progress))
            except KeyboardInterrupt as exc:
                raise _interrupted(journal, len(tasks)) from exc
            counts = journal.counts()
            if journal.rejected:
                key, error = journal.rejected[0]
                raise JournalError(MSG_REJECTED.format(path=journal.path,
                                                       n=len(journal.rejected),
                                                       key=key, error=error))
            if counts["failed"]:
                raise EndpointError(
                    f"{counts['failed']} evaluations failed (see `error_class` in "
                    f"{run_dir / JOURNAL}); rerun with `--resume` to retry exactly those")
            table = journal.to_frame()
        write_atomic(run_dir / EVALUATIONS, lambda p: table.to_parquet(p, index=False))
    finally:
        if pool is not None:
            pool.close()
        if not closed:
            asyncio.run(_close(backends))
    return AuditResult(
        run_dir=run_dir,
        evaluations_path=run_dir / EVALUATIONS,
        planned=len(tasks),
        ran_now=len(todo) if sequential is None else summary.total,
        ok=counts["ok"],
        discarded=counts["discarded"],
        summary=summary,
    )


def _interrupted(journal: Journal, planned: int) -> AuditInterrupted:
    """The interrupt with its counts (the results queued so far are committed first)."""
    counts = journal.counts()
    done = counts["ok"] + counts["discarded"]
    failed = f" ({counts['failed']} more failed)" if counts["failed"] else ""
    return AuditInterrupted(
        MSG_INTERRUPTED.format(done=done, planned=planned, journal=journal.path,
                               failed=failed, missing=planned - done),
        journaled=done, failed=counts["failed"], planned=planned)


async def _run(todo: list[EvalTask], backends: dict[tuple[str, int], Backend],
               journal: Journal, cfg: AuditConfig, progress: RunProgress | None
               ) -> RunSummary:
    try:
        return await run_tasks(todo, backends=backends, sink=journal, parse=_parse,
                               concurrency=cfg.concurrency, progress=progress,
                               max_consecutive_failures=cfg.max_consecutive_failures)
    finally:
        await _close(backends)


async def _run_sequential(options: SequentialOptions, tasks: list[EvalTask],
                          backends: dict[tuple[str, int], Backend], journal: Journal,
                          cfg: AuditConfig, run_dir: Path, say: Callable[[str], None],
                          progress: RunProgress | None) -> RunSummary:
    async def batch(todo: list[EvalTask]) -> RunSummary:
        return await run_tasks(todo, backends=backends, sink=journal, parse=_parse,
                               concurrency=cfg.concurrency,
                               max_consecutive_failures=cfg.max_consecutive_failures)

    try:
        return await drive_sequential(options, cfg, tasks, journal, run_dir, batch, say,
                                      progress)
    finally:
        await _close(backends)


async def _close(backends: Mapping[tuple[str, int], Backend]) -> None:
    for backend in {id(b): b for b in backends.values()}.values():
        await backend.aclose()
