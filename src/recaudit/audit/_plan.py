"""The plan of an audit: its inputs (catalog, queries, candidate sets, template) and
every evaluation key with its rendered request.

:func:`prepare_inputs` builds the inputs in memory (or, on resume, reads the queries and
candidate sets back from the run folder, never from the embedder); :func:`build_tasks`
expands the design into :class:`~recaudit.audit.EvalTask` objects; :func:`write_inputs`
writes the folder's input files once everything validated. The run folder holds::

    config.resolved.json   the resolved config (paths absolute, no secrets)
    run.json               which backends answered (name, model id, base_url), per session
    queries.parquet        query_id, text, template_id
    candidates.parquet     k, query_id, original_index, item_id, title, description, score
    journal.sqlite         one row per evaluation (see recaudit.audit._journal)
    evaluations.parquet    the analyze-input table, written when every key is complete
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._io import write_atomic
from .._read import read_table
from .._seeds import stable_words
from ..exceptions import InputError, JournalError
from ..llm import (
    Candidate,
    CandidateSource,
    Catalog,
    ColumnMap,
    PromptTemplate,
    Query,
    Retriever,
    candidates_from_frame,
    candidates_to_frame,
    generate_queries,
    load_catalog,
    load_queries,
    parse_answer,
    positional_identifiers,
    random_labels,
    ranking_schema,
    ranking_template,
    render_request,
)
from ._config import AuditConfig, config_to_dict
from ._designs import design_orders, pob_icm_design_notes
from ._journal import EvalKey
from ._runner import EvalTask

__all__ = [
    "CANDIDATES",
    "EVALUATIONS",
    "JOURNAL",
    "MANIFEST",
    "QUERIES",
    "RESOLVED",
    "AuditInputs",
    "answer_schema",
    "build_tasks",
    "design_notes",
    "parse_position",
    "prepare_inputs",
    "prompt_length_warning",
    "write_inputs",
]

JOURNAL = "journal.sqlite"
EVALUATIONS = "evaluations.parquet"
CANDIDATES = "candidates.parquet"
QUERIES = "queries.parquet"
RESOLVED = "config.resolved.json"
MANIFEST = "run.json"

MSG_FOLDER_INPUTS = (
    "run folder {run_dir}: its candidates.parquet holds no candidate set for {what} of "
    "this config; resume with the config the run was started with, or start a new run "
    "in another `--out`"
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

CandidateSets = Mapping[int, Mapping[str, tuple[Candidate, ...]]]


@dataclass(frozen=True)
class AuditInputs:
    """What the plan is built from: the catalog, the template, the queries and the
    candidate sets by k (query id -> candidates in original order)."""

    catalog: Catalog
    template: PromptTemplate
    queries: tuple[Query, ...]
    candidates: CandidateSets


def parse_position(text: str, identifiers: tuple[str, ...]) -> tuple[int | None, str | None]:
    """The runner's parse function: :func:`recaudit.llm.parse_answer` as
    ``(position or None, discard_reason or None)``."""
    parsed = parse_answer(text, identifiers)
    return parsed.position, parsed.discard_reason


def _rng(*parts: object) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(stable_words(*parts)))


def load_config_catalog(cfg: AuditConfig) -> Catalog:
    """The catalog of ``[catalog]`` (its column map applied)."""
    columns = ColumnMap.myntra() if isinstance(cfg.catalog.columns, str) \
        else dict(cfg.catalog.columns)
    return load_catalog(cfg.catalog.path, columns=columns)


def prepare_inputs(cfg: AuditConfig, *, run_dir: Path, resume: bool,
                   retriever: CandidateSource | None, say: Callable[[str], None],
                   catalog: Catalog | None = None,
                   on_embed: Callable[[int, int], None] | None = None) -> AuditInputs:
    """The catalog, template, queries and candidate sets of a run.

    A new run generates (or reads) the queries and retrieves their candidates; a
    resumed one reads both back from ``run_dir`` (:data:`QUERIES`, :data:`CANDIDATES`).
    ``on_embed(done, total)`` hears the catalog's embedding (skipped when cached).
    """
    if catalog is None:
        say("loading the catalog")
        catalog = load_config_catalog(cfg)
    template = PromptTemplate.from_file(cfg.prompt.template) \
        if cfg.prompt.template is not None \
        else ranking_template() if cfg.prompt.answer == "ranking" else PromptTemplate.default()
    if resume:
        queries, candidates = _read_run_inputs(run_dir, cfg)
        return AuditInputs(catalog, template, queries, candidates)
    say("preparing the queries")
    if cfg.queries.n is None:
        queries = tuple(load_queries(cfg.queries.file or ""))
    else:
        queries = tuple(generate_queries(catalog, cfg.queries.n, rng=_rng("queries", cfg.seed)))
    say("retrieving candidates")
    if retriever is None:
        retriever = Retriever(cfg.retrieval.model, cache_dir=cfg.retrieval.cache_dir)
    candidates = {k: retriever.retrieve(catalog, queries, k=k, progress=on_embed)
                  for k in cfg.retrieval.k}
    return AuditInputs(catalog, template, queries, candidates)


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


def _candidates_frame(queries: tuple[Query, ...], candidates: CandidateSets) -> pd.DataFrame:
    frames = []
    for k, by_query in candidates.items():
        frame = candidates_to_frame(by_query, queries=queries)
        frame.insert(0, "k", k)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def write_inputs(run_dir: Path, cfg: AuditConfig, inputs: AuditInputs, *,
                 config_hash: str) -> None:
    """Create ``run_dir`` and write the resolved config, queries and candidate sets
    (each atomically)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    resolved = dict(config_to_dict(cfg), catalog_sha256=inputs.catalog.sha256,
                    config_hash=config_hash)
    write_atomic(run_dir / RESOLVED, lambda p: p.write_text(
        json.dumps(resolved, indent=2, sort_keys=True), encoding="utf-8"))
    write_atomic(run_dir / QUERIES, lambda p: pd.DataFrame(
        [{"query_id": q.query_id, "text": q.text, "template_id": q.template_id,
          "source_item_id": q.source_item_id} for q in inputs.queries]).to_parquet(p, index=False))
    write_atomic(run_dir / CANDIDATES, lambda p: _candidates_frame(
        inputs.queries, inputs.candidates).to_parquet(p, index=False))


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


def _response_format(cfg: AuditConfig, identifiers: tuple[str, ...]) -> dict[str, Any] | None:
    """The request's ``response_format``: with ``prompt.constrained``, the schema of the
    answer asked for (:func:`answer_schema`, or :func:`recaudit.llm.ranking_schema`)."""
    if not cfg.prompt.constrained:
        return None
    if cfg.prompt.answer == "ranking":
        return {"type": "json_object", "schema": ranking_schema(identifiers)}
    return answer_schema(identifiers)


def _request_seed(cfg: AuditConfig, key: EvalKey) -> int:
    return stable_words("seed", cfg.seed, key.k, key.temperature, key.condition,
                        key.query_id, key.perm_index, key.sample_index)[0] & 0x7FFFFFFF


#: One cell of a query's plan: (perm_index, sample_index, order).
_Cell = tuple[int, int, tuple[int, ...]]


def _query_cells(cfg: AuditConfig, k: int, query_id: str,
                 shared: np.ndarray | None) -> tuple[list[_Cell], list[_Cell]]:
    """The designed cells (the design's orders, ``samples_per_order`` each) and the
    repeated identity cells (as many) of one query."""
    orders = shared if shared is not None else design_orders(
        cfg.design.kind, k, cfg.design.n_perms, rng=_rng("orders", cfg.seed, k, query_id))
    spo = cfg.design.samples_per_order
    designed = [(pi, si, tuple(int(x) for x in orders[pi]))
                for pi in range(len(orders)) for si in range(spo)]
    identity = tuple(range(1, k + 1))
    return designed, [(0, si, identity) for si in range(len(designed))]


def _cell_tasks(cfg: AuditConfig, template: PromptTemplate, q: Query, condition: str,
                cell: _Cell, cands: tuple[Candidate, ...], k: int) -> list[EvalTask]:
    """One cell's tasks: every model x temperature under the cell's order and labels."""
    pi, si, order = cell
    labelled = condition in ("labels", "labels_permutation") or \
        cfg.prompt.identifiers == "labels"
    idents = tuple(random_labels(k, rng=_rng("labels", cfg.seed, k, q.query_id, pi, si))) \
        if labelled else tuple(positional_identifiers(k))
    schema = _response_format(cfg, idents)
    out = []
    for model in cfg.models:
        # a constrained local backend enforces the pick's schema itself; a ranking's
        # schema goes to the llama.cpp engine with the request
        fmt = None if model.backend == "local" and cfg.prompt.answer == "pick" else schema
        for t in cfg.temperatures:
            key = EvalKey(model.name, k, t, condition, q.query_id, pi, si)
            req = render_request(
                template, q.text, cands, order, identifiers=idents, temperature=t,
                seed=_request_seed(cfg, key), max_tokens=cfg.prompt.max_tokens,
                choice_probabilities=cfg.prompt.choice_probabilities,
                response_format=fmt, query_id=q.query_id,
            )
            out.append(EvalTask(key=key, request=req, candidates=cands,
                                answer=cfg.prompt.answer))
    return out


def build_tasks(
    cfg: AuditConfig,
    *,
    queries: tuple[Query, ...],
    candidates: CandidateSets,
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
    tasks: list[EvalTask] = []
    for k in cfg.retrieval.k:
        shared = design_orders("shared", k, cfg.design.n_perms, rng=_rng("orders", cfg.seed, k)) \
            if cfg.design.kind == "shared" else None
        for q in queries:
            designed, repeated = _query_cells(cfg, k, q.query_id, shared)
            for condition in cfg.conditions:
                cells = designed if condition in ("permutation", "labels_permutation") \
                    else repeated
                for cell in cells:
                    tasks += _cell_tasks(cfg, template, q, condition, cell,
                                         candidates[k][q.query_id], k)
    return tasks


def design_notes(cfg: AuditConfig) -> list[str]:
    """Before a run: the k at which the design leaves POB-ICM without power
    (:func:`~recaudit.audit.pob_icm_design_notes`)."""
    d = cfg.design
    return pob_icm_design_notes(cfg.retrieval.k, kind=d.kind, n_queries=cfg.queries.n,
                                n_perms=d.n_perms, samples_per_order=d.samples_per_order)
