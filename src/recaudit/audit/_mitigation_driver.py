"""``recaudit positional mitigate``: audit a model with and without each mitigation.

The config is an audit config (docs/runner.md) plus a ``[mitigation]`` table
(:mod:`recaudit.audit._mitigation_config`). Each ARM (``none`` and every method) is an
ordinary run folder ``OUT/<arm>`` whose model names carry the mitigation
(``smollm2+ensemble(m=3,majority)``), so every arm reuses the runner and journal,
resumes after a crash, and can be analysed alone with ``recaudit positional analyze``.
The mitigations are backend WRAPPERS (:mod:`recaudit.llm._mitigation`, part of the
system under test), handed to :func:`~recaudit.audit.run_audit` through its
``wrap_backends`` seam. :func:`mitigate` runs the arms, compares them
(:func:`~recaudit.audit.mitigation_comparison`, ``OUT/mitigation.json``) and
analyses ``OUT`` as one positional run folder (:func:`~recaudit.audit.analyze_run`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .._io import write_text_atomic
from .._read import read_json
from .._seeds import stable_words
from ..exceptions import InputError
from ..llm import (
    Backend,
    CalibratedBackend,
    Candidate,
    CandidateSource,
    CanonicalOrderBackend,
    Catalog,
    ChatRequest,
    OrderEnsembleBackend,
    PositionPrior,
    PromptContext,
    PromptTemplate,
    Query,
    Retriever,
    estimate_position_prior,
    generate_queries,
    positional_identifiers,
    random_labels,
    render_request,
)
from ..positional import AnalysisOptions
from ._analysis import RunAnalysis, analyze_run
from ._config import AuditConfig
from ._executor import Backends
from ._mitigation_compare import (
    ArmRun,
    mitigation_comparison,
    write_combined,
    write_mitigation_json,
)
from ._mitigation_config import MitigationConfig
from ._plan import JOURNAL, answer_schema, load_config_catalog
from ._run import run_audit
from ._run_options import RunOptions
from ._runner import RunProgress

__all__ = [
    "MitigationRun",
    "calibration_queries",
    "calibration_requests",
    "mitigate",
    "run_mitigation",
]

PRIOR_JSON = "calibration_prior.json"
CandidateSets = Mapping[int, Mapping[str, tuple[Candidate, ...]]]


def _arm_config(cfg: AuditConfig, suffix: str) -> AuditConfig:
    models = tuple(replace(m, name=m.name + suffix) for m in cfg.models)
    return replace(cfg, models=models)


def _contexts(template: PromptTemplate, queries: tuple[Query, ...],
              candidates: CandidateSets) -> dict[int, PromptContext]:
    texts = {q.query_id: q.text for q in queries}
    return {k: PromptContext(template, texts, dict(by_q)) for k, by_q in candidates.items()}


def _rng(*parts: object) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(stable_words(*parts)))


def calibration_queries(cfg: AuditConfig, mcfg: MitigationConfig, catalog: Any,
                        audited: tuple[Query, ...]) -> tuple[Query, ...]:
    """``mcfg.calibration_queries`` generated queries whose texts (case-insensitive)
    and source items differ from every audited query; ids ``cal0001``...."""
    texts = {q.text.casefold() for q in audited}
    sources = {q.source_item_id for q in audited}
    want = mcfg.calibration_queries
    pool = generate_queries(catalog, want + len(audited),
                            rng=_rng("calibration-queries", cfg.seed))
    kept = [q for q in pool if q.text.casefold() not in texts
            and q.source_item_id not in sources][:want]
    if len(kept) < want:
        raise InputError(f"only {len(kept)} calibration queries disjoint from the audited "
                         f"ones could be generated; lower `mitigation.calibration.queries`")
    return tuple(replace(q, query_id=f"cal{i + 1:04d}") for i, q in enumerate(kept))


def calibration_requests(cfg: AuditConfig, mcfg: MitigationConfig, template: PromptTemplate,
                         queries: tuple[Query, ...],
                         candidates: Mapping[str, tuple[Candidate, ...]], *, k: int,
                         constrained_format: bool) -> list[ChatRequest]:
    """Each calibration query under ``calibration_orders`` uniform random orders."""
    out = []
    for q in queries:
        gen = _rng("calibration-orders", cfg.seed, k, q.query_id)
        for o in range(mcfg.calibration_orders):
            order = tuple(int(x) + 1 for x in gen.permutation(k))
            idents = (random_labels(k, rng=_rng("calibration-labels", cfg.seed, k,
                                                q.query_id, o))
                      if cfg.prompt.identifiers == "labels" else positional_identifiers(k))
            fmt = answer_schema(idents) if constrained_format else None
            out.append(render_request(template, q.text, candidates[q.query_id], order,
                                      identifiers=idents, temperature=0.0, seed=o,
                                      max_tokens=cfg.prompt.max_tokens,
                                      choice_probabilities=True, response_format=fmt,
                                      query_id=q.query_id))
    return out


def _prior_store(out_dir: Path) -> dict[str, Any]:
    path = out_dir / PRIOR_JSON
    if path.is_file():
        loaded = read_json(path, what="the calibration priors")
        if isinstance(loaded, dict):
            return loaded
        raise InputError(f"{path} is not a priors file written by `recaudit positional "
                         "mitigate`; delete it to calibrate again")
    return {}


class _Calibration:
    """The calibration arm's priors: estimated once per (model, k) on calibration
    queries disjoint from the audited ones, kept in ``OUT/calibration_prior.json``."""

    def __init__(self, cfg: AuditConfig, mcfg: MitigationConfig, out_dir: Path,
                 say: Callable[[str], None], retriever: CandidateSource | None) -> None:
        self.cfg, self.mcfg, self.out_dir, self.say = cfg, mcfg, out_dir, say
        self.retriever = retriever
        self.store = _prior_store(out_dir)
        self._sets: tuple[tuple[Query, ...], dict[int, Any]] | None = None

    def _calibration_sets(self, audited: tuple[Query, ...]
                          ) -> tuple[tuple[Query, ...], dict[int, Any]]:
        if self._sets is None:
            cfg = self.cfg
            self.say("generating calibration queries")
            catalog: Catalog = load_config_catalog(cfg)
            cal_q = calibration_queries(cfg, self.mcfg, catalog, audited)
            ret = self.retriever or Retriever(cfg.retrieval.model,
                                              cache_dir=cfg.retrieval.cache_dir)
            self._sets = cal_q, {kk: ret.retrieve(catalog, cal_q, k=kk)
                                 for kk in cfg.retrieval.k}
        return self._sets

    def prior(self, name: str, k: int, inner: Backend, template: PromptTemplate,
              audited: tuple[Query, ...]) -> PositionPrior:
        """The prior of model ``name`` at ``k`` (estimated now unless stored)."""
        suffix = self.mcfg.suffix("calibration")
        key = f"{name}|k={k}|{suffix}"
        if key not in self.store:
            cal_q, cal_c = self._calibration_sets(audited)
            kind = next(m.backend for m in self.cfg.models if m.name == name)
            reqs = calibration_requests(
                self.cfg, self.mcfg, template, cal_q, cal_c[k], k=k,
                constrained_format=self.cfg.prompt.constrained and kind != "local")
            self.say(f"estimating the position prior of {name} (k={k}, {len(reqs)} calls)")
            prior = asyncio.run(estimate_position_prior(inner, reqs,
                                                        concurrency=self.cfg.concurrency))
            self.store[key] = dict(prior.to_dict(),
                                   calibration_query_ids=[q.query_id for q in cal_q])
            self.out_dir.mkdir(parents=True, exist_ok=True)
            write_text_atomic(self.out_dir / PRIOR_JSON, json.dumps(self.store, indent=2))
        rec = self.store[key]
        return PositionPrior(tuple(rec["weights"]), rec["n_requests"], rec["n_queries"],
                             rec["calls"], rec["prompt_tokens"], rec["completion_tokens"])


def _make_wrapper(method: str, cfg: AuditConfig, mcfg: MitigationConfig, out_dir: Path,
                  priors: dict[str, PositionPrior], say: Callable[[str], None],
                  retriever: CandidateSource | None = None) -> Callable[..., Backends]:
    """The ``wrap_backends`` of one arm (see :func:`~recaudit.audit.run_audit`)."""

    def calibrated(backends: Backends, template: PromptTemplate,
                   queries: tuple[Query, ...]) -> Backends:
        calibration = _Calibration(cfg, mcfg, out_dir, say, retriever)
        suffix = mcfg.suffix("calibration")
        out: Backends = {}
        for (arm_name, k), inner in backends.items():
            name = arm_name.removesuffix(suffix)
            prior = priors[f"{name}|{k}"] = calibration.prior(name, k, inner, template,
                                                               queries)
            out[(arm_name, k)] = CalibratedBackend(
                inner, prior, decision=mcfg.calibration_decision)  # type: ignore[arg-type]
        return out

    def wrap(backends: Backends, template: PromptTemplate, queries: tuple[Query, ...],
             candidates: CandidateSets) -> Backends:
        if method == "calibration":
            return calibrated(backends, template, queries)
        contexts = _contexts(template, queries, candidates)
        wrappers: dict[int, Backend] = {}
        for inner in backends.values():
            if id(inner) not in wrappers:
                wrappers[id(inner)] = OrderEnsembleBackend(
                    inner, contexts, m=mcfg.ensemble_m,
                    vote=mcfg.ensemble_vote,  # type: ignore[arg-type]
                ) if method == "ensemble" else CanonicalOrderBackend(
                    inner, contexts, by=mcfg.canonical_by)  # type: ignore[arg-type]
        return {key: wrappers[id(inner)] for key, inner in backends.items()}

    return wrap


def run_mitigation(cfg: AuditConfig, mcfg: MitigationConfig, *, out_dir: str | Path,
                   progress: Callable[[], RunProgress] | None = None,
                   on_phase: Callable[[str], None] | None = None,
                   retriever: CandidateSource | None = None) -> list[ArmRun]:
    """Run (or resume) the unmitigated arm and one arm per method.

    Parameters
    ----------
    cfg, mcfg : AuditConfig, MitigationConfig
    out_dir : path-like
        ``OUT``; arm ``a`` runs in ``OUT/a`` (resumed when its journal exists).
    progress : callable, optional
        Returns a fresh :class:`~recaudit.audit.RunProgress` per arm.
    on_phase : callable, optional
        Called with short descriptions of each step.
    retriever : Retriever, optional
        Reuse a loaded retriever (default: one from ``[retrieval]``).

    Returns
    -------
    list of ArmRun
    """
    out = Path(out_dir)
    say = on_phase or (lambda _m: None)
    arms: list[ArmRun] = []
    for method in ("none", *mcfg.methods):
        say(f"arm `{method}`")
        run_dir = out / method
        priors: dict[str, PositionPrior] = {}
        wrap = None if method == "none" else _make_wrapper(method, cfg, mcfg, out, priors, say,
                                                           retriever)
        result = run_audit(_arm_config(cfg, mcfg.suffix(method)), out_dir=run_dir,
                           run=RunOptions(resume=(run_dir / JOURNAL).exists()),
                           progress=progress() if progress else None, on_phase=say,
                           retriever=retriever, wrap_backends=wrap)
        arms.append(ArmRun(method, run_dir, result.evaluations_path, priors))
    return arms


@dataclass(frozen=True)
class MitigationRun:
    """What :func:`mitigate` did.

    Attributes
    ----------
    arms : list of ArmRun
        One run folder per arm.
    comparison : dict
        The comparison's JSON, as ``mitigation.json`` holds it (the ``to_dict`` of
        :func:`~recaudit.audit.mitigation_comparison`'s result).
    path : Path
        ``OUT/mitigation.json``.
    analysis : RunAnalysis
        The grouped analysis of ``OUT`` (every arm's rows, by model name).
    """

    arms: list[ArmRun]
    comparison: dict[str, Any]
    path: Path
    analysis: RunAnalysis


def mitigate(cfg: AuditConfig, mcfg: MitigationConfig, *, out_dir: str | Path,
             tau: float | Literal["auto"] = "auto", spb_repeats: int | None = None,
             progress: Callable[[], RunProgress] | None = None,
             on_phase: Callable[[str], None] | None = None,
             retriever: CandidateSource | None = None) -> MitigationRun:
    """Run every arm (:func:`run_mitigation`), compare them, write ``mitigation.json``,
    and analyse ``OUT`` as one positional run folder (:func:`analyze_run`).

    ``tau`` and ``spb_repeats`` are sPB's threshold rule and repeated cross-validation
    (``None``: the default) in both the comparison and the analysis.
    """
    from ..positional import SPB_REPEATS

    folder = Path(out_dir)
    say = on_phase or (lambda _m: None)
    arms = run_mitigation(cfg, mcfg, out_dir=folder, progress=progress, on_phase=on_phase,
                          retriever=retriever)
    say("comparing the arms (PB, sPB, PS, agreement, cost)")
    repeats = SPB_REPEATS if spb_repeats is None else spb_repeats
    comparison = mitigation_comparison(arms, mcfg, seed=cfg.seed, cfg=cfg, tau=tau,
                                       spb_repeats=repeats)
    path = write_mitigation_json(comparison, folder)
    # OUT is also a positional run folder: every arm's rows, analysed per model name
    say("analysing (POB-ICM, POB-UNBP, PS, PB, sPB)")
    analysis = analyze_run(write_combined(arms, folder),
                           AnalysisOptions(tau=tau, spb_repeats=repeats), seed=cfg.seed)
    return MitigationRun(arms=arms, comparison=comparison.to_dict(), path=path,
                        analysis=analysis)
