"""Comparing the arms of ``recaudit positional mitigate``: PB, sPB, PS, agreement with
the unmitigated relevance sets, and cost, per (model, k, temperature, condition).

:func:`mitigation_comparison` builds the :class:`MitigationComparison` (a
:class:`MitigationGroup` per cell, a :class:`MitigationArm` per arm) whose ``to_dict``
is written to ``OUT/mitigation.json`` (:func:`write_mitigation_json`) and returned by
:func:`compare_arms`; ``from_dict`` reads the file back (strict: a missing key or a
value of the wrong kind is an :class:`~recaudit.InputError` naming the file and the
key). :func:`write_combined` makes ``OUT`` a positional run folder of every arm's rows.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from .._io import to_jsonable, write_atomic, write_text_atomic
from .._records import (
    as_mapping,
    integer,
    items,
    need,
    number,
    optional_number,
    text,
    to_float,
    to_text,
)
from .._seeds import stable_words
from .._stats import DEFAULT_N_BOOT, Estimate, as_generator
from ..exceptions import InputError
from ..llm import PositionPrior
from ..llm.backends import SimulatedBackend, SimulatedParams, SimulationProfile
from ..positional import (
    SPB_REPEATS,
    AnalysisOptions,
    Evaluations,
    PositionalBiasResult,
    StrongBiasResult,
    analyze,
    bootstrap_ci,
    evaluations_from_table,
    relevance_sets,
)
from ._config import AuditConfig
from ._mitigation_config import MitigationConfig

__all__ = [
    "MITIGATION_JSON",
    "Agreement",
    "ArmRun",
    "MitigationArm",
    "MitigationComparison",
    "MitigationGroup",
    "agreement",
    "compare_arms",
    "mitigation_comparison",
    "write_combined",
    "write_mitigation_json",
]

GROUP = ("k", "temperature", "condition")
MITIGATION_JSON = "mitigation.json"


@dataclass(frozen=True)
class ArmRun:
    """One arm's run: its method, folder, and the calibration priors it used."""

    method: str
    run_dir: Path
    evaluations_path: Path
    priors: dict[str, PositionPrior]


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


def agreement(baseline: Evaluations, mitigated: Evaluations, *, n_boot: int = DEFAULT_N_BOOT,
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
                 spb_repeats: int = SPB_REPEATS) -> dict[str, Any]:
    """The JSON of :func:`mitigation_comparison` (its ``to_dict``: the object
    ``mitigation.json`` holds and ``positional mitigate --json`` prints); same
    arguments."""
    return mitigation_comparison(arms, mcfg, seed=seed, n_resamples=n_resamples, cfg=cfg,
                                 tau=tau, spb_repeats=spb_repeats).to_dict()


def mitigation_comparison(arms: list[ArmRun], mcfg: MitigationConfig, *, seed: int = 0,
                          n_resamples: int = 999, cfg: AuditConfig | None = None,
                          tau: float | Literal["auto"] = "auto",
                          spb_repeats: int = SPB_REPEATS) -> MitigationComparison:
    """PB, sPB, PS, agreement and cost of every arm, per (model, k, temperature,
    condition) group: the :class:`MitigationComparison` written to ``mitigation.json``.
    With ``cfg``, simulated models also get ``inside_true_set``: the share of answers
    inside the simulator's TRUE relevance sets (query mean, bootstrap CI). ``tau`` and
    ``spb_repeats`` are :func:`recaudit.positional.analyze`'s (sPB's threshold and its
    repeated cross-validation) and are recorded in the JSON's ``analysis`` entry."""
    options = AnalysisOptions(n_resamples=n_resamples, n_boot=mcfg.n_boot, tau=tau,
                              spb_repeats=spb_repeats)
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
        rows = []
        for arm in arms:
            name = model + mcfg.suffix(arm.method)
            table = b if arm.method == "none" else part(pd.read_parquet(arm.evaluations_path),
                                                        name)
            gen = np.random.default_rng(stable_words("compare", seed, name, k, temperature,
                                                     condition))
            rows.append(_arm(arm, name, table, b, options, mcfg, gen,
                             _true_sets(cfg, model, int(k)), arm.priors.get(f"{model}|{k}")))
        groups.append(MitigationGroup(model=model, k=int(k), temperature=float(temperature),
                                      condition=condition, arms=tuple(rows)))
    return MitigationComparison(config=mcfg, tau=tau, spb_repeats=spb_repeats,
                                n_resamples=n_resamples, groups=tuple(groups))


def _arm(arm: ArmRun, name: str, table: pd.DataFrame, base: pd.DataFrame,
         options: AnalysisOptions, mcfg: MitigationConfig, gen: np.random.Generator,
         truth: Callable[[str], tuple[int, ...]] | None,
         prior: PositionPrior | None) -> MitigationArm:
    """One arm of a group: its analysis, its agreement with the unmitigated ``base``
    rows and its cost relative to them (the calibration prior's calls and tokens spread
    over the arm's evaluations)."""
    evals = evaluations_from_table(table)
    res = analyze(table, options, rng=gen)
    agr = agreement(evaluations_from_table(base), evals, n_boot=mcfg.n_boot, rng=gen)
    calls = float(mcfg.ensemble_m) if arm.method == "ensemble" else 1.0
    tokens, b_tokens = _tokens(table), _tokens(base)
    true_inside = None if truth is None else _inside_truth(evals, truth, mcfg.n_boot, gen)
    if prior is not None:
        calls += prior.calls / max(1, len(table))
        if tokens is not None:
            tokens += (prior.prompt_tokens + prior.completion_tokens) / max(1, len(table))
    return MitigationArm(
        mitigation=arm.method, model_name=name, n_queries=res.n_queries,
        n_evaluations=res.n_evaluations, n_discarded=res.n_discarded, pb=res.pb,
        spb=None if res.spb is None else res.spb.strong, spb_paper=res.spb_paper,
        ps=res.ps, pob_icm_pvalue=None if res.pob_icm is None else res.pob_icm.pvalue,
        pob_unbp_pvalue=None if res.pob_unbp is None else res.pob_unbp.pvalue,
        position_distribution=tuple(e.value for e in res.position_distribution),
        inside_unmitigated_set=agr.inside, iou_relevance_sets=agr.iou,
        inside_true_set=true_inside, calls_multiplier=calls,
        tokens_multiplier=None if tokens is None or not b_tokens else tokens / b_tokens,
        prior=None if prior is None else tuple(prior.weights))


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


def write_mitigation_json(data: MitigationComparison | Mapping[str, Any],
                          out_dir: str | Path) -> Path:
    """Write ``OUT/mitigation.json`` atomically: the comparison's ``to_dict`` (or its
    JSON, as :func:`compare_arms` returns it)."""
    target = Path(out_dir) / MITIGATION_JSON
    doc = data.to_dict() if isinstance(data, MitigationComparison) else to_jsonable(data)
    text = json.dumps(doc, indent=2, allow_nan=False)
    write_text_atomic(target, text)
    return target



# ------------------------------------------------------------ mitigation.json read back
def _nested(obj: Mapping[str, Any], key: str, where: str,
            read: Callable[[Mapping[str, Any]], Any]) -> Any:
    """``obj[key]`` read by a library type's ``from_dict`` (``null``: None); its error
    prefixed with the file and the key."""
    value = need(obj, key, where)
    if value is None:
        return None
    try:
        return read(value)
    except InputError as exc:
        raise InputError(f"{where}, `{key}`: {exc}") from None


def _required(value: Any, key: str, where: str) -> Any:
    if value is None:
        raise InputError(f"{where}: `{key}` must be a JSON object, got null")
    return value


@dataclass(frozen=True)
class MitigationArm:
    """One arm of a group of ``mitigation.json``.

    Attributes
    ----------
    mitigation, model_name : str
        The method (``"none"``: unmitigated) and the arm's model name.
    n_queries, n_evaluations, n_discarded : int
        What the arm's analysis used.
    pb : PositionalBiasResult
    spb, ps : Estimate or None
        sPB (the strong part) and PS (None: not computed).
    spb_paper : StrongBiasResult or None
    pob_icm_pvalue, pob_unbp_pvalue : float or None
        None: the test did not run.
    position_distribution : tuple of float
        Share of answers at each prompt position.
    inside_unmitigated_set, iou_relevance_sets : Estimate
        Agreement with the unmitigated relevance sets (:class:`Agreement`).
    inside_true_set : Estimate or None
        Share inside the simulator's TRUE relevance sets (simulated models only).
    calls_multiplier : float
    tokens_multiplier : float or None
        Cost per audited evaluation relative to ``none`` (None: tokens unknown).
    prior : tuple of float or None
        The calibration prior's weights (calibration arms only).
    """

    mitigation: str
    model_name: str
    n_queries: int
    n_evaluations: int
    n_discarded: int
    pb: PositionalBiasResult
    spb: Estimate | None
    spb_paper: StrongBiasResult | None
    ps: Estimate | None
    pob_icm_pvalue: float | None
    pob_unbp_pvalue: float | None
    position_distribution: tuple[float, ...]
    inside_unmitigated_set: Estimate
    iou_relevance_sets: Estimate
    inside_true_set: Estimate | None
    calls_multiplier: float
    tokens_multiplier: float | None
    prior: tuple[float, ...] | None

    def to_dict(self) -> dict[str, Any]:
        """The arm's object in ``mitigation.json`` (``nan`` as ``null``)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = value.to_dict() if hasattr(value, "to_dict") else value
        return to_jsonable(out)

    @classmethod
    def from_dict(cls, obj: Any, *, where: str = "mitigation arm") -> MitigationArm:
        """Inverse of :meth:`to_dict` (strict; a missing or wrong key named)."""
        obj = as_mapping(obj, where)
        return cls(
            mitigation=text(obj, "mitigation", where),
            model_name=text(obj, "model_name", where),
            n_queries=integer(obj, "n_queries", where),
            n_evaluations=integer(obj, "n_evaluations", where),
            n_discarded=integer(obj, "n_discarded", where),
            pb=_required(_nested(obj, "pb", where, PositionalBiasResult.from_dict), "pb",
                         where),
            spb=_nested(obj, "spb", where, Estimate.from_dict),
            spb_paper=_nested(obj, "spb_paper", where, StrongBiasResult.from_dict),
            ps=_nested(obj, "ps", where, Estimate.from_dict),
            pob_icm_pvalue=optional_number(obj, "pob_icm_pvalue", where),
            pob_unbp_pvalue=optional_number(obj, "pob_unbp_pvalue", where),
            position_distribution=items(obj, "position_distribution", where, to_float),
            inside_unmitigated_set=_required(_nested(
                obj, "inside_unmitigated_set", where, Estimate.from_dict),
                "inside_unmitigated_set", where),
            iou_relevance_sets=_required(_nested(
                obj, "iou_relevance_sets", where, Estimate.from_dict),
                "iou_relevance_sets", where),
            inside_true_set=_nested(obj, "inside_true_set", where, Estimate.from_dict),
            calls_multiplier=number(obj, "calls_multiplier", where),
            tokens_multiplier=optional_number(obj, "tokens_multiplier", where),
            prior=None if need(obj, "prior", where) is None
            else items(obj, "prior", where, to_float),
        )


@dataclass(frozen=True)
class MitigationGroup:
    """One (model, k, temperature, condition) group: every arm, ``none`` first."""

    model: str
    k: int
    temperature: float
    condition: str
    arms: tuple[MitigationArm, ...]

    def to_dict(self) -> dict[str, Any]:
        """The group's object in ``mitigation.json``."""
        return {"model": self.model, "k": self.k, "temperature": self.temperature,
                "condition": self.condition, "arms": [a.to_dict() for a in self.arms]}

    @classmethod
    def from_dict(cls, obj: Any, *, where: str = "mitigation group") -> MitigationGroup:
        """Inverse of :meth:`to_dict` (strict; a missing or wrong key named)."""
        obj = as_mapping(obj, where)
        return cls(text(obj, "model", where), integer(obj, "k", where),
                   number(obj, "temperature", where), text(obj, "condition", where),
                   tuple(MitigationArm.from_dict(a, where=f"{where}, arms[{i}]")
                         for i, a in enumerate(items(obj, "arms", where))))


def _config(obj: Any, where: str) -> MitigationConfig:
    """The ``[mitigation]`` table as :func:`compare_arms` records it (``asdict``)."""
    obj = as_mapping(obj, where)
    values: dict[str, Any] = {}
    for f in fields(MitigationConfig):
        if f.name == "methods":
            values[f.name] = items(obj, "methods", where, to_text)
        elif isinstance(f.default, int):
            values[f.name] = integer(obj, f.name, where)
        else:
            values[f.name] = text(obj, f.name, where)
    return MitigationConfig(**values)


@dataclass(frozen=True)
class MitigationComparison:
    """``mitigation.json``: the mitigation config, sPB's threshold rule (``tau``), its
    repeated cross-validation and the tests' resamples, and every group's arms."""

    config: MitigationConfig
    tau: float | Literal["auto"]
    spb_repeats: int
    n_resamples: int
    groups: tuple[MitigationGroup, ...]

    def to_dict(self) -> dict[str, Any]:
        """The object ``mitigation.json`` holds (and :func:`compare_arms` returns)."""
        return to_jsonable({
            "kind": "mitigation", "config": asdict(self.config),
            "analysis": {"tau": self.tau, "spb_repeats": self.spb_repeats,
                         "n_resamples": self.n_resamples},
            "groups": [g.to_dict() for g in self.groups]})

    @classmethod
    def from_dict(cls, obj: Any, *, where: str = MITIGATION_JSON) -> MitigationComparison:
        """Inverse of :meth:`to_dict`; ``where`` names the file in every error."""
        obj = as_mapping(obj, where)
        if need(obj, "kind", where) != "mitigation":
            raise InputError(f"{where}: `kind` must be \"mitigation\" (a mitigation.json "
                             "written by `recaudit positional mitigate`)")
        analysis = as_mapping(need(obj, "analysis", where), f"{where}, analysis")
        tau = need(analysis, "tau", f"{where}, analysis")
        return cls(
            config=_config(need(obj, "config", where), f"{where}, config"),
            tau="auto" if tau == "auto" else to_float(tau, "tau", f"{where}, analysis"),
            spb_repeats=integer(analysis, "spb_repeats", f"{where}, analysis"),
            n_resamples=integer(analysis, "n_resamples", f"{where}, analysis"),
            groups=tuple(MitigationGroup.from_dict(g, where=f"{where}, groups[{i}]")
                         for i, g in enumerate(items(obj, "groups", where))),
        )
