"""Comparing the arms of ``recaudit positional mitigate``: PB, sPB, PS, agreement with
the unmitigated relevance sets, and cost, per (model, k, temperature, condition).

:func:`compare_arms` is the JSON written to ``OUT/mitigation.json``;
:func:`write_combined` makes ``OUT`` a positional run folder of every arm's rows.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from .._io import to_jsonable, write_atomic, write_text_atomic
from .._seeds import stable_words
from .._stats import DEFAULT_N_BOOT, Estimate, as_generator
from ..exceptions import InputError
from ..llm import PositionPrior
from ..llm.backends import SimulatedBackend, SimulatedParams, SimulationProfile
from ..positional import (
    SPB_REPEATS,
    AnalysisOptions,
    Evaluations,
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
    "agreement",
    "compare_arms",
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
    """PB, sPB, PS, agreement and cost of every arm, per (model, k, temperature,
    condition) group; the JSON written to ``mitigation.json``. With ``cfg``, simulated
    models also get ``inside_true_set``: the share of answers inside the simulator's
    TRUE relevance sets (query mean, bootstrap CI). ``tau`` and ``spb_repeats`` are
    :func:`recaudit.positional.analyze`'s (sPB's threshold and its repeated
    cross-validation) and are recorded in the JSON's ``analysis`` entry."""
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
            res = analyze(table, options, rng=gen)
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

