"""``recaudit positional mitigate``: audit a model with and without each mitigation.

The config is an audit config (docs/runner.md) plus a ``[mitigation]`` table::

    [mitigation]
    methods = ["ensemble", "calibration", "canonical"]   # any subset, in this order
    n_boot = 2000                 # bootstrap resamples of every CI
    [mitigation.ensemble]
    m = 3                         # orders per evaluation
    vote = "majority"             # or "borda" (needs choice probabilities)
    [mitigation.calibration]
    queries = 10                  # calibration queries, disjoint from the audited ones
    orders = 5                    # random orders per calibration query
    decision = "argmax"           # or "sample"
    [mitigation.canonical]
    by = "retrieval"              # or "item_id"

Each ARM (``none`` and every method) is an ordinary run folder ``OUT/<arm>`` whose
model names carry the mitigation (``smollm2+ensemble(m=3,majority)``), so every arm
reuses the runner and journal, resumes after a crash, and can be analysed alone with
``recaudit positional analyze``. The comparison (:func:`compare_arms`) is written to
``OUT/mitigation.json``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._io import to_jsonable, write_atomic, write_text_atomic
from .._read import read_json
from .._stats import Estimate, as_generator
from .._toml import read_toml
from ..exceptions import ConfigError, InputError
from ..positional import analyze, evaluations_from_table
from ..positional._bootstrap import bootstrap_ci
from ..positional._evaluations import Evaluations
from ..positional._metrics import N_REPEATS, plugin_positional_bias
from ._audit import answer_schema, run_audit
from ._catalog import ColumnMap, load_catalog
from ._config import AuditConfig, SimulatedParams, parse_config
from ._mitigation import (
    CalibratedBackend,
    CanonicalOrderBackend,
    OrderEnsembleBackend,
    PositionPrior,
    PromptContext,
    estimate_position_prior,
)
from ._prompt import PromptTemplate, positional_identifiers, random_labels, render_request
from ._queries import Query, generate_queries
from ._retrieval import Retriever
from ._types import Backend, Candidate, ChatRequest
from .backends._simulated import SimulatedBackend, SimulationProfile, stable_words

__all__ = [
    "Agreement",
    "ArmRun",
    "MitigationConfig",
    "agreement",
    "write_combined",
    "write_mitigation_json",
    "compare_arms",
    "load_mitigation_config",
    "relevance_sets",
    "run_mitigation",
]

METHODS = ("ensemble", "calibration", "canonical")
GROUP = ("k", "temperature", "condition")
MITIGATION_JSON = "mitigation.json"
PRIOR_JSON = "calibration_prior.json"
_SECTION_KEYS: dict[str, tuple[str, ...]] = {
    "ensemble": ("m", "vote"),
    "calibration": ("queries", "orders", "decision"),
    "canonical": ("by",),
}


@dataclass(frozen=True)
class MitigationConfig:
    """The ``[mitigation]`` table (module docstring)."""

    methods: tuple[str, ...] = METHODS
    ensemble_m: int = 3
    ensemble_vote: str = "majority"
    calibration_queries: int = 10
    calibration_orders: int = 5
    calibration_decision: str = "argmax"
    canonical_by: str = "retrieval"
    n_boot: int = 2000

    def suffix(self, method: str) -> str:
        """What an arm appends to every model name."""
        if method == "none":
            return ""
        if method == "ensemble":
            return f"+ensemble(m={self.ensemble_m},{self.ensemble_vote})"
        if method == "calibration":
            return (f"+calibrated({self.calibration_decision},q={self.calibration_queries},"
                    f"o={self.calibration_orders})")
        return f"+canonical({self.canonical_by})"


def load_mitigation_config(path: str | Path) -> tuple[AuditConfig, MitigationConfig]:
    """Read an audit config with a ``[mitigation]`` table.

    Raises
    ------
    ConfigError
        Unknown keys (named, with the allowed ones), bad values, or a bad audit config.
    """
    path = Path(path)
    data = dict(read_toml(path))
    table = data.pop("mitigation", {})
    audit = parse_config(data, base_dir=path.resolve().parent)
    return audit, parse_mitigation(table)


def parse_mitigation(t: Any) -> MitigationConfig:
    """Validate a ``[mitigation]`` mapping."""
    if not isinstance(t, Mapping):
        raise ConfigError("`mitigation` must be a table (`[mitigation]`)")
    allowed = ("methods", "n_boot", *METHODS)
    for key in t:
        if key not in allowed:
            raise ConfigError(f"unknown key `mitigation.{key}`; allowed keys in "
                              f"[mitigation]: {', '.join(allowed)}")
    methods = t.get("methods", list(METHODS))
    if (not isinstance(methods, list) or not methods or any(m not in METHODS for m in methods)
            or len(set(methods)) != len(methods)):
        raise ConfigError(f"`mitigation.methods` must be a non-empty list of distinct "
                          f"values from {', '.join(METHODS)}; got {methods!r}")
    sub: dict[str, Mapping[str, Any]] = {}
    for name, keys in _SECTION_KEYS.items():
        s = t.get(name, {})
        if not isinstance(s, Mapping):
            raise ConfigError(f"`mitigation.{name}` must be a table")
        for key in s:
            if key not in keys:
                raise ConfigError(f"unknown key `mitigation.{name}.{key}`; allowed keys in "
                                  f"[mitigation.{name}]: {', '.join(keys)}")
        sub[name] = s

    def integer(where: str, value: Any, minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError(f"`mitigation.{where}` must be an integer >= {minimum}, "
                              f"got {value!r}")
        return value

    def choice(where: str, value: Any, choices: tuple[str, ...]) -> str:
        if value not in choices:
            raise ConfigError(f"`mitigation.{where}` must be one of {', '.join(choices)}; "
                              f"got {value!r}")
        return str(value)

    ens, cal, can = sub["ensemble"], sub["calibration"], sub["canonical"]
    return MitigationConfig(
        methods=tuple(m for m in METHODS if m in methods),
        ensemble_m=integer("ensemble.m", ens.get("m", 3), 1),
        ensemble_vote=choice("ensemble.vote", ens.get("vote", "majority"),
                             ("majority", "borda")),
        calibration_queries=integer("calibration.queries", cal.get("queries", 10), 1),
        calibration_orders=integer("calibration.orders", cal.get("orders", 5), 1),
        calibration_decision=choice("calibration.decision", cal.get("decision", "argmax"),
                                    ("argmax", "sample")),
        canonical_by=choice("canonical.by", can.get("by", "retrieval"),
                            ("retrieval", "item_id")),
        n_boot=integer("n_boot", t.get("n_boot", 2000), 1),
    )


# -- running the arms -------------------------------------------------------------------


def _arm_config(cfg: AuditConfig, suffix: str) -> AuditConfig:
    models = tuple(replace(m, name=m.name + suffix) for m in cfg.models)
    return replace(cfg, models=models)


def _contexts(template: PromptTemplate, queries: tuple[Query, ...],
              candidates: Mapping[int, Mapping[str, tuple[Candidate, ...]]]
              ) -> dict[int, PromptContext]:
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


def _make_wrapper(method: str, cfg: AuditConfig, mcfg: MitigationConfig, out_dir: Path,
                  priors: dict[str, PositionPrior], say: Callable[[str], None],
                  retriever: Retriever | None = None
                  ) -> Callable[..., dict[tuple[str, int], Backend]]:
    def wrap(backends: dict[tuple[str, int], Backend], template: PromptTemplate,
             queries: tuple[Query, ...],
             candidates: Mapping[int, Mapping[str, tuple[Candidate, ...]]]
             ) -> dict[tuple[str, int], Backend]:
        contexts = _contexts(template, queries, candidates)
        out: dict[tuple[str, int], Backend] = {}
        if method == "calibration":
            store = _prior_store(out_dir)
            cal_q: tuple[Query, ...] | None = None
            cal_c: dict[int, Any] = {}
            suffix = mcfg.suffix("calibration")
            for (arm_name, k), inner in backends.items():
                name = arm_name.removesuffix(suffix)
                key = f"{name}|k={k}|{suffix}"
                if key not in store:
                    if cal_q is None:
                        say("generating calibration queries")
                        columns = ColumnMap.myntra() if isinstance(cfg.catalog.columns, str) \
                            else dict(cfg.catalog.columns)
                        catalog = load_catalog(cfg.catalog.path, columns=columns)
                        cal_q = calibration_queries(cfg, mcfg, catalog, queries)
                        ret = retriever or Retriever(cfg.retrieval.model,
                                                     cache_dir=cfg.retrieval.cache_dir)
                        cal_c = {kk: ret.retrieve(catalog, cal_q, k=kk)
                                 for kk in cfg.retrieval.k}
                    backend_kind = next(m.backend for m in cfg.models if m.name == name)
                    reqs = calibration_requests(
                        cfg, mcfg, template, cal_q, cal_c[k], k=k,
                        constrained_format=cfg.prompt.constrained and backend_kind != "local")
                    say(f"estimating the position prior of {name} (k={k}, "
                        f"{len(reqs)} calls)")
                    prior = asyncio.run(estimate_position_prior(
                        inner, reqs, concurrency=cfg.concurrency))
                    store[key] = dict(prior.to_dict(),
                                      calibration_query_ids=[q.query_id for q in cal_q])
                    out_dir.mkdir(parents=True, exist_ok=True)
                    text = json.dumps(store, indent=2)
                    write_text_atomic(out_dir / PRIOR_JSON, text)
                rec = store[key]
                prior = PositionPrior(tuple(rec["weights"]), rec["n_requests"],
                                      rec["n_queries"], rec["calls"], rec["prompt_tokens"],
                                      rec["completion_tokens"])
                priors[f"{name}|{k}"] = prior
                out[(arm_name, k)] = CalibratedBackend(inner, prior,
                                                   decision=mcfg.calibration_decision)  # type: ignore[arg-type]
            return out
        wrappers: dict[int, Backend] = {}
        for bkey, inner in backends.items():
            if id(inner) not in wrappers:
                if method == "ensemble":
                    wrappers[id(inner)] = OrderEnsembleBackend(
                        inner, contexts, m=mcfg.ensemble_m,
                        vote=mcfg.ensemble_vote)  # type: ignore[arg-type]
                else:
                    wrappers[id(inner)] = CanonicalOrderBackend(
                        inner, contexts, by=mcfg.canonical_by)  # type: ignore[arg-type]
            out[bkey] = wrappers[id(inner)]
        return out

    return wrap


@dataclass(frozen=True)
class ArmRun:
    """One arm's run: its method, folder, and the calibration priors it used."""

    method: str
    run_dir: Path
    evaluations_path: Path
    priors: dict[str, PositionPrior]


def run_mitigation(cfg: AuditConfig, mcfg: MitigationConfig, *, out_dir: str | Path,
                   progress: Callable[[], Any] | None = None,
                   on_phase: Callable[[str], None] | None = None,
                   retriever: Retriever | None = None) -> list[ArmRun]:
    """Run (or resume) the unmitigated arm and one arm per method.

    Parameters
    ----------
    cfg, mcfg : AuditConfig, MitigationConfig
    out_dir : path-like
        ``OUT``; arm ``a`` runs in ``OUT/a`` (resumed when its journal exists).
    progress : callable, optional
        Returns a fresh :class:`~recaudit.llm.RunProgress` per arm.
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
                           resume=(run_dir / "journal.sqlite").exists(),
                           progress=progress() if progress else None, on_phase=say,
                           retriever=retriever, wrap_backends=wrap)
        arms.append(ArmRun(method, run_dir, result.evaluations_path, priors))
    return arms


# -- comparing the arms -----------------------------------------------------------------


def relevance_sets(evals: Evaluations) -> npt.NDArray[np.bool_]:
    r"""Each query's relevance set from ALL its evaluations, by sPB's ``'auto'`` rule.

    :math:`R_j` = the smallest top-m set of query j's most often selected items (ties by
    original index) whose cumulative share is :math:`\ge 1 - \hat p (k - m)/k`, with
    :math:`\hat p = \min(1, \widehat{PB}/(1 - 1/k))`
    (:func:`recaudit.positional.strong_positional_bias`, here in-sample).

    Returns
    -------
    ndarray of bool, shape (n_queries, k)
        ``out[j, i]``: original index ``i + 1`` is in query j's set.
    """
    k, nq = evals.k, evals.n_queries
    pb = plugin_positional_bias(evals, n_boot=1, rng=0).value
    p_hat = min(1.0, pb / (1.0 - 1.0 / k))
    threshold = 1.0 - p_hat * (k - np.arange(1, k + 1)) / k
    counts = np.bincount(evals.query * k + evals.item, minlength=nq * k).reshape(nq, k)
    srt = np.argsort(-counts, axis=1, kind="stable")
    sorted_counts = np.take_along_axis(counts, srt, axis=1)
    total = counts.sum(axis=1, keepdims=True)
    reached = np.cumsum(sorted_counts, axis=1) >= threshold * total - 1e-9
    done = np.cumsum(reached, axis=1) > 0
    member = np.concatenate([np.ones_like(done[:, :1]), ~done[:, :-1]], axis=1)
    out = np.zeros_like(member)
    np.put_along_axis(out, srt, member, axis=1)
    return out


@dataclass(frozen=True)
class Agreement:
    r"""Agreement of a mitigated arm with the unmitigated relevance sets.

    Attributes
    ----------
    inside : Estimate
        :math:`\frac1n\sum_j \frac{1}{l_j}\#\{e: I_e \in R^{u}_j\}`: share of the
        mitigated answers inside the UNMITIGATED relevance set (query mean).
    iou : Estimate
        :math:`\frac1n\sum_j |R^m_j \cap R^u_j| / |R^m_j \cup R^u_j|`.
    n_queries : int
        Queries valid in both arms.
    """

    inside: Estimate
    iou: Estimate
    n_queries: int


def agreement(baseline: Evaluations, mitigated: Evaluations, *, n_boot: int = 2000,
              confidence_level: float = 0.95,
              rng: np.random.Generator | int | None = None) -> Agreement:
    """:class:`Agreement` with query-bootstrap percentile CIs (over common queries)."""
    if baseline.k != mitigated.k:
        raise InputError(f"`mitigated` has k={mitigated.k} but `baseline` has k={baseline.k}")
    gen = as_generator(rng)
    rb, rm = relevance_sets(baseline), relevance_sets(mitigated)
    index_b = {q: j for j, q in enumerate(baseline.query_ids.tolist())}
    common = [(index_b[q], j) for j, q in enumerate(mitigated.query_ids.tolist())
              if q in index_b]
    if not common:
        raise InputError("the mitigated and unmitigated runs share no query")
    jb = np.array([c[0] for c in common])
    jm = np.array([c[1] for c in common])
    k = mitigated.k
    counts = np.bincount(mitigated.query * k + mitigated.item,
                         minlength=mitigated.n_queries * k).reshape(-1, k)[jm]
    inside = (counts * rb[jb]).sum(axis=1) / counts.sum(axis=1)
    inter = (rb[jb] & rm[jm]).sum(axis=1)
    union = (rb[jb] | rm[jm]).sum(axis=1)
    iou = inter / union
    per_query = np.column_stack([inside, iou])
    ci_inside, ci_iou = bootstrap_ci(per_query, lambda m: m, n_boot=n_boot,
                                     confidence_level=confidence_level, rng=gen)
    return Agreement(Estimate(float(inside.mean()), ci_inside),
                     Estimate(float(iou.mean()), ci_iou), len(common))


def _tokens(table: pd.DataFrame) -> float | None:
    if table.empty:
        return None
    tot = table["prompt_tokens"].astype("Float64") + table["completion_tokens"].astype("Float64")
    if tot.isna().any():
        return None
    return float(tot.mean())


def _true_sets(cfg: AuditConfig | None, model: str, k: int
               ) -> Callable[[str], tuple[int, ...]] | None:
    """The TRUE relevance sets of a simulated model (``None`` for real models)."""
    if cfg is None:
        return None
    m = next((m for m in cfg.models if m.name == model), None)
    if m is None or not isinstance(m.params, SimulatedParams):
        return None
    p = m.params
    sim = SimulatedBackend(SimulationProfile(p_bias=p.p_bias, position_weights=p.position_weights,
                                             max_relevant=p.max_relevant), k=k, seed=cfg.seed)
    return sim.relevance_set


def _inside_truth(evals: Evaluations, truth: Callable[[str], tuple[int, ...]], n_boot: int,
                  gen: np.random.Generator) -> Estimate:
    k = evals.k
    member = np.zeros((evals.n_queries, k), dtype=bool)
    for j, q in enumerate(evals.query_ids.tolist()):
        member[j, np.asarray(truth(str(q))) - 1] = True
    counts = np.bincount(evals.query * k + evals.item,
                         minlength=evals.n_queries * k).reshape(-1, k)
    share = (counts * member).sum(axis=1) / counts.sum(axis=1)
    (ci,) = bootstrap_ci(share[:, None], lambda m: m, n_boot=n_boot, confidence_level=0.95,
                         rng=gen)
    return Estimate(float(share.mean()), ci)


def compare_arms(arms: list[ArmRun], mcfg: MitigationConfig, *, seed: int = 0,
                 n_resamples: int = 999, cfg: AuditConfig | None = None,
                 tau: float | Literal["auto"] = "auto",
                 spb_repeats: int = N_REPEATS) -> dict[str, Any]:
    """PB, sPB, PS, agreement and cost of every arm, per (model, k, temperature,
    condition) group; the JSON written to ``mitigation.json``. With ``cfg``, simulated
    models also get ``inside_true_set``: the share of answers inside the simulator's
    TRUE relevance sets (query mean, bootstrap CI). ``tau`` and ``spb_repeats`` are
    :func:`recaudit.positional.analyze`'s (sPB's threshold and its repeated
    cross-validation) and are recorded in the JSON's ``analysis`` entry."""
    base = next(a for a in arms if a.method == "none")
    base_table = pd.read_parquet(base.evaluations_path)
    groups = []
    keys = base_table[["model", *GROUP]].drop_duplicates().itertuples(index=False)
    for model, k, temperature, condition in keys:
        def part(table: pd.DataFrame, name: str, k: Any = k, t: Any = temperature,
                 c: Any = condition) -> pd.DataFrame:
            return table[(table["model"] == name) & (table["k"] == k)
                         & (table["temperature"] == t) & (table["condition"] == c)]

        b = part(base_table, model)
        b_evals = evaluations_from_table(b)
        b_tokens = _tokens(b)
        rows = []
        for arm in arms:
            name = model + mcfg.suffix(arm.method)
            table = b if arm.method == "none" else part(pd.read_parquet(arm.evaluations_path),
                                                        name)
            evals = evaluations_from_table(table)
            gen = np.random.default_rng(stable_words("compare", seed, name, k, temperature,
                                                     condition))
            res = analyze(table, n_resamples=n_resamples, n_boot=mcfg.n_boot, rng=gen,
                          tau=tau, spb_repeats=spb_repeats)
            agr = agreement(b_evals, evals, n_boot=mcfg.n_boot, rng=gen)
            calls = 1.0 if arm.method == "none" else (
                float(mcfg.ensemble_m) if arm.method == "ensemble" else 1.0)
            tokens = _tokens(table)
            truth = _true_sets(cfg, model, int(k))
            true_inside = None if truth is None else _inside_truth(evals, truth, mcfg.n_boot,
                                                                   gen).to_dict()
            prior = arm.priors.get(f"{model}|{k}")
            if prior is not None:
                calls += prior.calls / max(1, len(table))
                if tokens is not None:
                    tokens += (prior.prompt_tokens + prior.completion_tokens) / max(1, len(table))
            rows.append({
                "mitigation": arm.method,
                "model_name": name,
                "n_queries": res.n_queries,
                "n_evaluations": res.n_evaluations,
                "n_discarded": res.n_discarded,
                "pb": res.pb.to_dict(),
                "spb": None if res.spb is None else res.spb.strong.to_dict(),
                "spb_paper": None if res.spb_paper is None else res.spb_paper.to_dict(),
                "ps": None if res.ps is None else res.ps.to_dict(),
                "pob_icm_pvalue": None if res.pob_icm is None else res.pob_icm.pvalue,
                "pob_unbp_pvalue": None if res.pob_unbp is None else res.pob_unbp.pvalue,
                "position_distribution": [e.value for e in res.position_distribution],
                "inside_unmitigated_set": agr.inside.to_dict(),
                "iou_relevance_sets": agr.iou.to_dict(),
                "inside_true_set": true_inside,
                "calls_multiplier": calls,
                "tokens_multiplier": (None if tokens is None or not b_tokens
                                      else tokens / b_tokens),
                "prior": None if prior is None else list(prior.weights),
            })
        groups.append({"model": model, "k": int(k), "temperature": float(temperature),
                       "condition": condition, "arms": rows})
    return {"kind": "mitigation", "config": asdict(mcfg),
            "analysis": {"tau": tau, "spb_repeats": spb_repeats, "n_resamples": n_resamples},
            "groups": groups}


def write_combined(arms: list[ArmRun], out_dir: str | Path) -> Path:
    """Write ``OUT/evaluations.parquet`` (every arm's rows; the arms differ by model
    name) and copy the unmitigated arm's resolved config, so ``OUT`` is also a
    positional run folder (``recaudit report OUT``)."""
    out = Path(out_dir)
    table = pd.concat([pd.read_parquet(a.evaluations_path) for a in arms], ignore_index=True)
    target = out / "evaluations.parquet"
    write_atomic(target, lambda p: table.to_parquet(p, index=False))
    base = next(a for a in arms if a.method == "none")
    resolved = base.run_dir / "config.resolved.json"
    if resolved.is_file():
        (out / "config.resolved.json").write_text(resolved.read_text("utf-8"), "utf-8")
    return target


def write_mitigation_json(data: Mapping[str, Any], out_dir: str | Path) -> Path:
    """Write ``OUT/mitigation.json`` atomically."""
    target = Path(out_dir) / MITIGATION_JSON
    text = json.dumps(to_jsonable(data), indent=2, allow_nan=False)
    write_text_atomic(target, text)
    return target

