"""Read what the two studies produce and normalise it for the report.

The loaders are tolerant of small naming variations (``sPB`` / ``spb``,
``pob-icm`` / ``pob_icm``, ``NDCG@10`` / ``ndcg_10``, ``hit_rate`` / ``hit``) and
strict about essentials: a missing key raises :class:`~recaudit.InputError` naming the
key, where it was expected and the command that produces it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from .._read import read_json, read_table, read_text, read_toml
from ..exceptions import InputError

__all__ = [
    "DiscardExample",
    "FairnessModel",
    "FairnessRun",
    "HeadItem",
    "Interval",
    "Kind",
    "LongTail",
    "PositionalGroup",
    "PositionalRun",
    "RiskDifference",
    "SimulationRow",
    "load",
]

Kind = Literal["positional", "fairness"]

POSITIONAL_CMD = "`recaudit positional analyze RUN_DIR --json > RUN_DIR/analysis.json`"
EVALUATIONS_CMD = "`recaudit positional run CONFIG`"
FAIRNESS_CMD = "`recaudit fairness evaluate ... --json`"
UNRECOGNISED = (
    "cannot tell what {what} is: expected a positional run folder (evaluations.parquet "
    "and analysis.json), the JSON of " + POSITIONAL_CMD + ", a fairness run folder "
    "(results.json) or the JSON of " + FAIRNESS_CMD
)
METRIC_ORDER = ("ndcg", "precision", "recall", "hit", "mrr")
_METRIC_ALIASES = {"hit_rate": "hit", "hitrate": "hit", "hr": "hit", "prec": "precision"}
_METRIC_KEY = re.compile(r"^([a-z][a-z_]*?)[@_\-]?(\d+)$")
_POPULARITY = ("avg_popularity", "average_popularity", "avg_pop", "popularity", "arp")
_COVERAGE = ("item_coverage", "coverage", "ic")
_NOT_METRICS = frozenset(_POPULARITY + _COVERAGE)


def _norm(key: str) -> str:
    return re.sub(r"[\s\-]+", "_", str(key).strip().lower())


def _find(obj: Mapping[str, Any], *aliases: str) -> Any:
    """Return ``obj[key]`` for the first key whose normalised form is an alias."""
    wanted = {_norm(a) for a in aliases}
    for key, value in obj.items():
        if _norm(key) in wanted:
            return value
    return None


def _need(obj: Mapping[str, Any], where: str, command: str, *aliases: str) -> Any:
    value = _find(obj, *aliases)
    if value is None and not any(_norm(k) in {_norm(a) for a in aliases} for k in obj):
        raise InputError(f"{where}: missing key `{aliases[0]}`; it is written by {command}")
    return value


def _float(value: Any) -> float:
    """JSON number or ``null`` -> float (``null`` -> nan)."""
    if value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise InputError(f"expected a number, got {value!r}") from exc


@dataclass(frozen=True)
class Interval:
    """A point estimate with its confidence interval (``nan`` when undefined)."""

    value: float
    ci_low: float
    ci_high: float

    @classmethod
    def parse(cls, obj: Any, *, where: str, command: str) -> Interval:
        """Read ``{value, ci_low, ci_high}`` (or a bare number, CI then undefined)."""
        if not isinstance(obj, Mapping):
            return cls(_float(obj), math.nan, math.nan)
        value = _need(obj, where, command, "value", "estimate")
        ci = _find(obj, "ci")
        if isinstance(ci, Sequence) and len(ci) == 2:
            return cls(_float(value), _float(ci[0]), _float(ci[1]))
        low = _find(obj, "ci_low", "low", "lower")
        high = _find(obj, "ci_high", "high", "upper")
        return cls(_float(value), _float(low), _float(high))

    def to_dict(self) -> dict[str, float]:
        """``{"value", "ci_low", "ci_high"}``, the JSON shape used everywhere."""
        return {"value": self.value, "ci_low": self.ci_low, "ci_high": self.ci_high}


# --------------------------------------------------------------------- positional
@dataclass(frozen=True)
class PositionalGroup:
    """One group (model, k, temperature, condition) of ``positional analyze``."""

    model: str
    k: int
    temperature: float
    condition: str
    n_queries: int
    n_evaluations: int
    n_discarded: int
    icm_statistic: float
    icm_pvalue: float
    icm_pvalue_asymptotic: float
    icm_pvalue_holm: float
    unbp_lower_bound: float
    unbp_pvalue: float
    unbp_reject: bool
    unbp_pvalue_holm: float
    ps: Interval
    pb: Interval
    spb: Interval
    position_distribution: tuple[Interval, ...]
    selection_rate_matrix: tuple[tuple[float, ...], ...]
    spb_soft: Interval = Interval(math.nan, math.nan, math.nan)
    positional_share: Interval = Interval(math.nan, math.nan, math.nan)
    spb_paper: Interval = Interval(math.nan, math.nan, math.nan)

    @property
    def label(self) -> str:
        """A short human label, e.g. ``"gpt-x, k=10, T=0.2, both"``."""
        parts = [self.model, f"k={self.k}", f"T={self.temperature:g}"]
        if self.condition:
            parts.append(self.condition)
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the sidecar's ``groups`` items)."""
        return {
            "model": self.model,
            "k": self.k,
            "temperature": self.temperature,
            "condition": self.condition,
            "n_queries": self.n_queries,
            "n_evaluations": self.n_evaluations,
            "n_discarded": self.n_discarded,
            "pob_icm": {
                "statistic": self.icm_statistic,
                "pvalue": self.icm_pvalue,
                "pvalue_asymptotic": self.icm_pvalue_asymptotic,
                "pvalue_holm": self.icm_pvalue_holm,
            },
            "pob_unbp": {
                "L": self.unbp_lower_bound,
                "pvalue": self.unbp_pvalue,
                "reject": self.unbp_reject,
                "pvalue_holm": self.unbp_pvalue_holm,
            },
            "ps": self.ps.to_dict(),
            "pb": self.pb.to_dict(),
            "spb": self.spb.to_dict(),
            "spb_soft": self.spb_soft.to_dict(),
            "positional_share": self.positional_share.to_dict(),
            "spb_paper": self.spb_paper.to_dict(),
            "position_distribution": [p.to_dict() for p in self.position_distribution],
            "selection_rate_matrix": [list(row) for row in self.selection_rate_matrix],
        }


@dataclass(frozen=True)
class SimulationRow:
    """One cell of the simulation study (a power or type-I error estimate)."""

    test: str
    k: int
    queries: int
    perms: int
    p_bias: float
    reps: int
    rejection_rate: Interval


@dataclass(frozen=True)
class DiscardExample:
    """One discarded generation, shown verbatim (escaped) in the report."""

    model: str
    reason: str
    raw_response: str


@dataclass(frozen=True)
class PositionalRun:
    """Everything the positional report shows."""

    source: str
    alpha: float
    groups: tuple[PositionalGroup, ...]
    discards: Mapping[str, Mapping[str, int]]
    generations: Mapping[str, int]
    discard_examples: tuple[DiscardExample, ...]
    simulation: tuple[SimulationRow, ...]
    config_name: str
    config_text: str
    seed: str
    versions: Mapping[str, str]
    missing: tuple[str, ...]
    #: ``study.json`` of ``recaudit positional study`` (None when absent).
    study: Mapping[str, Any] | None = None
    #: ``sequential.json`` of ``recaudit positional run --sequential`` (None when absent).
    sequential: Mapping[str, Any] | None = None


def _position_distribution(obj: Mapping[str, Any], where: str, k: int) -> tuple[Interval, ...]:
    raw = _need(obj, where, POSITIONAL_CMD, "position_distribution", "position_shares")
    if isinstance(raw, Mapping):  # {"value": [...], "ci_low": [...], "ci_high": [...]}
        values = _need(raw, f"{where}.position_distribution", POSITIONAL_CMD, "value")
        lows = _find(raw, "ci_low", "low") or [None] * len(values)
        highs = _find(raw, "ci_high", "high") or [None] * len(values)
    elif raw and isinstance(raw[0], Mapping):  # [{"value", "ci_low", "ci_high"}, ...]
        return tuple(Interval.parse(p, where=where, command=POSITIONAL_CMD) for p in raw)
    else:
        values = raw
        lows = _find(obj, "position_distribution_ci_low", "position_distribution_low")
        highs = _find(obj, "position_distribution_ci_high", "position_distribution_high")
        lows = lows or [None] * len(values)
        highs = highs or [None] * len(values)
    if not len(values) == len(lows) == len(highs) == k:
        raise InputError(
            f"{where}: `position_distribution` and its CIs must have k={k} entries, "
            f"got {len(values)}/{len(lows)}/{len(highs)}"
        )
    return tuple(
        Interval(_float(v), _float(lo), _float(hi))
        for v, lo, hi in zip(values, lows, highs, strict=True)
    )


def _positional_group(obj: Any, index: int) -> PositionalGroup:
    if not isinstance(obj, Mapping):
        raise InputError(f"positional result #{index} must be a JSON object")
    name = _find(obj, "model")
    where = f"positional result #{index}" + (f" (model {name!r})" if name is not None else "")
    cmd = POSITIONAL_CMD
    k = int(_need(obj, where, cmd, "k"))
    icm = _need(obj, where, cmd, "pob_icm", "icm")
    unbp = _need(obj, where, cmd, "pob_unbp", "unbp")
    if not isinstance(icm, Mapping) or not isinstance(unbp, Mapping):
        raise InputError(f"{where}: `pob_icm` and `pob_unbp` must be JSON objects")
    matrix = _need(obj, where, cmd, "selection_rate_matrix", "selection_rates")
    if len(matrix) != k or any(len(row) != k for row in matrix):
        raise InputError(f"{where}: `selection_rate_matrix` must be {k} x {k}")

    def estimate(*aliases: str) -> Interval:
        return Interval.parse(
            _need(obj, where, cmd, *aliases), where=f"{where}.{aliases[0]}", command=cmd
        )

    def optional(name: str) -> Interval:
        """An estimate older analysis files do not have (nan when absent)."""
        found = _find(obj, name)
        if found is None:
            return Interval(math.nan, math.nan, math.nan)
        return Interval.parse(found, where=f"{where}.{name}", command=cmd)

    temperature = _find(obj, "temperature")
    return PositionalGroup(
        model=str(name) if name is not None else "(all)",
        k=k,
        temperature=0.0 if temperature is None else float(temperature),
        condition=str(_find(obj, "condition") or ""),
        n_queries=int(_need(obj, where, cmd, "n_queries")),
        n_evaluations=int(_need(obj, where, cmd, "n_evaluations")),
        n_discarded=int(_need(obj, where, cmd, "n_discarded")),
        icm_statistic=_float(_need(icm, f"{where}.pob_icm", cmd, "statistic")),
        icm_pvalue=_float(_need(icm, f"{where}.pob_icm", cmd, "pvalue")),
        icm_pvalue_asymptotic=_float(_find(icm, "pvalue_asymptotic")),
        icm_pvalue_holm=_float(_find(icm, "pvalue_holm")),
        unbp_lower_bound=_float(_need(unbp, f"{where}.pob_unbp", cmd, "L", "lower_bound")),
        unbp_pvalue=_float(_need(unbp, f"{where}.pob_unbp", cmd, "pvalue")),
        unbp_reject=bool(_need(unbp, f"{where}.pob_unbp", cmd, "reject")),
        unbp_pvalue_holm=_float(_find(unbp, "pvalue_holm")),
        ps=estimate("ps", "permutation_sensitivity"),
        pb=estimate("pb", "positional_bias"),
        spb=estimate("spb", "strong_positional_bias"),
        position_distribution=_position_distribution(obj, where, k),
        selection_rate_matrix=tuple(tuple(_float(x) for x in row) for row in matrix),
        spb_soft=optional("spb_soft"),
        positional_share=optional("positional_share"),
        spb_paper=optional("spb_paper"),
    )


def _simulation(rows: Any, where: str) -> tuple[SimulationRow, ...]:
    cmd = "`recaudit positional simulate --json`"
    if isinstance(rows, Mapping):
        rows = _need(rows, where, cmd, "rows", "results")
    out = []
    for i, row in enumerate(rows):
        w = f"{where} row #{i}"
        out.append(
            SimulationRow(
                test=str(_need(row, w, cmd, "test")),
                k=int(_need(row, w, cmd, "k")),
                queries=int(_need(row, w, cmd, "queries", "n_queries")),
                perms=int(_find(row, "perms", "n_perms") or 0),
                p_bias=_float(_need(row, w, cmd, "p_bias")),
                reps=int(_find(row, "reps", "n_reps") or 0),
                rejection_rate=Interval(
                    _float(_need(row, w, cmd, "rejection_rate", "power")),
                    _float(_find(row, "ci_low")),
                    _float(_find(row, "ci_high")),
                ),
            )
        )
    return tuple(out)


def _read_table(path: Path) -> pd.DataFrame:
    return read_table(path, what="table", parquet=path.suffix != ".csv", allow_empty=True)


def _first(folder: Path, *names: str) -> Path | None:
    for name in names:
        if (folder / name).is_file():
            return folder / name
    return None


def _evaluations(path: Path) -> tuple[dict, dict, tuple[DiscardExample, ...]]:
    df = _read_table(path)
    if "discard_reason" not in df.columns:
        raise InputError(
            f"{path}: missing column `discard_reason`; it is written by {EVALUATIONS_CMD}"
        )
    model = df["model"].astype(str) if "model" in df.columns else pd.Series("(all)", index=df.index)
    reason = df["discard_reason"].where(df["discard_reason"].astype(str).str.len() > 0)
    discarded = reason.notna()
    generations = {str(m): int(n) for m, n in model.value_counts(sort=False).sort_index().items()}
    discards: dict[str, dict[str, int]] = {m: {} for m in generations}
    counts = pd.DataFrame({"model": model[discarded], "reason": reason[discarded].astype(str)})
    for (m, r), n in counts.value_counts().sort_index().items():
        discards[str(m)][str(r)] = int(n)
    examples: list[DiscardExample] = []
    if "raw_response" in df.columns:
        sub = pd.DataFrame(
            {"model": model, "reason": reason, "raw": df["raw_response"].astype(str)}
        )[discarded]
        for m, rows in sub.groupby("model", sort=True):
            examples.extend(
                DiscardExample(str(m), str(r.reason), str(r.raw)[:200])
                for r in rows.head(3).itertuples()
            )
    return discards, generations, tuple(examples)


def _config(folder: Path) -> tuple[str, str, str]:
    """Return the resolved config's name, its text and the seed found in it."""
    paths = sorted(folder.glob("config.resolved.*"))
    if not paths:
        return "", "", ""
    path = paths[0]
    text = read_text(path, what="the run's resolved config")
    match = re.search(r"""^\s*["']?seed["']?\s*[:=]\s*["']?([^\s,"']+)""", text, re.M)
    seed = match.group(1) if match else ""
    if path.suffix in {".toml", ".json"}:
        parsed = read_toml(path, what="the run's resolved config") if path.suffix == ".toml" \
            else read_json(path, what="the run's resolved config")
        found = _deep_find(parsed, "seed")
        seed = str(found) if found is not None else seed
    return path.name, text, seed


def _deep_find(obj: Any, key: str) -> Any:
    if isinstance(obj, Mapping):
        if key in obj:
            return obj[key]
        for value in obj.values():
            found = _deep_find(value, key)
            if found is not None:
                return found
    return None


def _positional(analysis: Any, *, source: str, folder: Path | None = None) -> PositionalRun:
    meta: Mapping[str, Any] = {}
    if isinstance(analysis, Mapping) and isinstance(_find(analysis, "groups", "results"), list):
        meta, analysis = analysis, _find(analysis, "groups", "results")
    items = analysis if isinstance(analysis, list) else [analysis]
    if not items:
        raise InputError(
            f"{source}: the positional analysis holds no result; rerun {POSITIONAL_CMD}"
        )
    groups = tuple(_positional_group(obj, i) for i, obj in enumerate(items))
    alpha = _find(meta, "alpha")
    if alpha is None:
        alpha = _find(items[0], "alpha") if isinstance(items[0], Mapping) else None
    missing: list[str] = []
    discards: dict[str, dict[str, int]] = {}
    generations: dict[str, int] = {}
    examples: tuple[DiscardExample, ...] = ()
    simulation: tuple[SimulationRow, ...] = ()
    config_name = config_text = seed = ""
    if folder is not None:
        evaluations = _first(folder, "evaluations.parquet", "evaluations.csv")
        if evaluations is None:
            missing.append(f"evaluations.parquet (from {EVALUATIONS_CMD}): discards per reason")
        else:
            discards, generations, examples = _evaluations(evaluations)
        sim = _first(folder, "simulation.json")
        if sim is None:
            missing.append("simulation.json (from `recaudit positional simulate`): power curves")
        else:
            simulation = _simulation(_read_json(sim), str(sim))
        config_name, config_text, seed = _config(folder)
        if not config_name:
            missing.append("config.resolved.* (written by the run): the exact config")
    else:
        missing.append(
            "the run folder: pass RUN_DIR instead of its JSON to add discards by reason, "
            "power curves and the exact config"
        )
    if not generations:
        for g in groups:
            generations[g.model] = generations.get(g.model, 0) + g.n_evaluations + g.n_discarded
            discards.setdefault(g.model, {})
            if g.n_discarded:
                discards[g.model]["discarded"] = (
                    discards[g.model].get("discarded", 0) + g.n_discarded
                )
    versions = _find(meta, "versions", "environment") or {}
    study = _read_json(study_json) if folder is not None \
        and (study_json := folder / "study.json").is_file() else None
    sequential = _sequential(folder / SEQUENTIAL_JSON) if folder is not None \
        and (folder / SEQUENTIAL_JSON).is_file() else None
    return PositionalRun(
        source=source,
        alpha=0.05 if alpha is None else float(alpha),
        groups=groups,
        discards=discards,
        generations=generations,
        discard_examples=examples,
        simulation=simulation,
        config_name=config_name,
        config_text=config_text,
        seed=seed or str(_find(meta, "seed") or ""),
        versions={str(k): str(v) for k, v in versions.items()},
        missing=tuple(missing),
        study=study,
        sequential=sequential,
    )


SEQUENTIAL_JSON = "sequential.json"
SEQUENTIAL_CMD = "`recaudit positional run CONFIG --sequential`"
#: Keys every cell of ``sequential.json`` must have for the report.
_SEQUENTIAL_CELL_KEYS = ("model", "k", "temperature", "condition", "decision", "budget")


def _sequential(path: Path) -> Mapping[str, Any]:
    """``sequential.json``, checked for the keys the report prints (named when missing)."""
    doc = _read_json(path)
    where = str(path)
    if not isinstance(doc, Mapping):
        raise InputError(f"{where}: expected a JSON object; it is written by {SEQUENTIAL_CMD}")
    cells = _need(doc, where, SEQUENTIAL_CMD, "cells")
    _need(doc, where, SEQUENTIAL_CMD, "alpha_per_cell")
    if not isinstance(cells, list):
        raise InputError(f"{where}: `cells` must be a list; it is written by {SEQUENTIAL_CMD}")
    for i, cell in enumerate(cells):
        if not isinstance(cell, Mapping):
            raise InputError(f"{where}: cells[{i}] must be an object")
        for key in _SEQUENTIAL_CELL_KEYS:
            if key not in cell:
                raise InputError(f"{where}: cells[{i}] has no key `{key}`; it is written "
                                 f"by {SEQUENTIAL_CMD}")
    return doc


# ----------------------------------------------------------------------- fairness
@dataclass(frozen=True)
class RiskDifference:
    """RD of one metric between the groups, with its permutation-test p-value."""

    estimate: Interval
    pvalue: float
    pvalue_holm: float


@dataclass(frozen=True)
class FairnessModel:
    """One model's ``fairness evaluate`` output. Metric keys are ``(metric, N)``."""

    name: str
    n_users: Mapping[str, int]
    group_metrics: Mapping[str, Mapping[tuple[str, int], Interval]]
    overall: Mapping[tuple[str, int], Interval]
    coverage: Mapping[int, float]
    popularity: Mapping[int, Interval]
    rd: Mapping[tuple[str, int], RiskDifference]
    nrd: Mapping[tuple[str, int], Interval]
    ib: Mapping[tuple[str, int], Interval]

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the sidecar's ``models`` items); metric keys become ``"ndcg@10"``."""

        def keyed(d: Mapping[tuple[str, int], Interval]) -> dict[str, Any]:
            return {f"{m}@{n}": v.to_dict() for (m, n), v in d.items()}

        return {
            "name": self.name,
            "n_users": dict(self.n_users),
            "groups": {g: keyed(d) for g, d in self.group_metrics.items()},
            "overall": keyed(self.overall),
            "item_coverage": {str(n): v for n, v in self.coverage.items()},
            "avg_popularity": {str(n): v.to_dict() for n, v in self.popularity.items()},
            "rd": {
                f"{m}@{n}": {
                    **r.estimate.to_dict(),
                    "pvalue": r.pvalue,
                    "pvalue_holm": r.pvalue_holm,
                }
                for (m, n), r in self.rd.items()
            },
            "nrd": keyed(self.nrd),
            "ib": keyed(self.ib),
        }


@dataclass(frozen=True)
class HeadItem:
    """One of the most interacted-with items of the dataset."""

    item: str
    title: str
    interactions: int


@dataclass(frozen=True)
class LongTail:
    """Interactions per item, sorted in decreasing order."""

    counts: tuple[int, ...]
    head: tuple[HeadItem, ...]


@dataclass(frozen=True)
class FairnessRun:
    """Everything the fairness report shows."""

    source: str
    alpha: float
    protected: str
    models: tuple[FairnessModel, ...]
    long_tail: LongTail | None
    missing: tuple[str, ...]


def _metric_key(key: str) -> tuple[str, int] | None:
    match = _METRIC_KEY.match(_norm(key))
    if match is None:
        return None
    name = _METRIC_ALIASES.get(match.group(1), match.group(1))
    return name, int(match.group(2))


def _metric_section(obj: Any, where: str) -> dict[tuple[str, int], Interval]:
    if not isinstance(obj, Mapping):
        raise InputError(f"{where} must be a JSON object of `<metric>@<N>` entries")
    out = {}
    for key, value in obj.items():
        parsed = _metric_key(key)
        if parsed is not None and parsed[0] not in _NOT_METRICS:
            out[parsed] = Interval.parse(value, where=f"{where}.{key}", command=FAIRNESS_CMD)
    if not out:
        raise InputError(f"{where}: no `<metric>@<N>` entry; it is written by {FAIRNESS_CMD}")
    return dict(sorted(out.items(), key=_metric_sort))


def _metric_sort(item: tuple[tuple[str, int], Any]) -> tuple[int, str, int]:
    (name, n), _ = item
    rank = METRIC_ORDER.index(name) if name in METRIC_ORDER else len(METRIC_ORDER)
    return rank, name, n


def _by_n(obj: Mapping[str, Any], *names: str) -> dict[int, Any]:
    """Entries ``<name>@<N>`` of ``obj`` (any alias in ``names``), keyed by N."""
    out = {}
    for key, value in obj.items():
        parsed = _metric_key(key)
        if parsed is not None and parsed[0] in {_norm(n) for n in names}:
            out[parsed[1]] = value
    return dict(sorted(out.items()))


def _fairness_model(name: str, obj: Any) -> FairnessModel:
    where = f"fairness result of model {name!r}"
    cmd = FAIRNESS_CMD
    if not isinstance(obj, Mapping):
        raise InputError(f"{where} must be a JSON object")
    groups = _need(obj, where, cmd, "groups")
    if not isinstance(groups, Mapping) or len(groups) < 2:
        raise InputError(f"{where}: `groups` must map at least two group values to metrics")
    overall = _need(obj, where, cmd, "overall")
    coverage = _by_n(obj, *_COVERAGE) or _by_n(overall, *_COVERAGE)
    if not coverage:
        raise InputError(f"{where}: missing key `item_coverage@<N>`; it is written by {cmd}")
    popularity = _by_n(obj, *_POPULARITY) or _by_n(overall, *_POPULARITY)
    rd = {
        key: RiskDifference(
            Interval.parse(v, where=f"{where}.rd", command=cmd),
            _float(_need(v, f"{where}.rd.{key[0]}@{key[1]}", cmd, "pvalue")),
            _float(_find(v, "pvalue_holm")),
        )
        for key, v in _raw_metric_items(_need(obj, where, cmd, "rd"), f"{where}.rd")
    }
    return FairnessModel(
        name=name,
        n_users={
            str(g): int(_need(d, f"{where}.groups.{g}", cmd, "n_users")) for g, d in groups.items()
        },
        group_metrics={
            str(g): _metric_section(d, f"{where}.groups.{g}") for g, d in groups.items()
        },
        overall=_metric_section(overall, f"{where}.overall"),
        coverage={
            n: _float(v["value"] if isinstance(v, Mapping) else v) for n, v in coverage.items()
        },
        popularity={
            n: Interval.parse(v, where=f"{where}.avg_popularity", command=cmd)
            for n, v in popularity.items()
        },
        rd=rd,
        nrd=_metric_section(_need(obj, where, cmd, "nrd"), f"{where}.nrd"),
        ib=_metric_section(_need(obj, where, cmd, "ib"), f"{where}.ib"),
    )


def _raw_metric_items(obj: Any, where: str) -> list[tuple[tuple[str, int], Any]]:
    if not isinstance(obj, Mapping):
        raise InputError(f"{where} must be a JSON object of `<metric>@<N>` entries")
    items = [(_metric_key(k), v) for k, v in obj.items()]
    return sorted(((k, v) for k, v in items if k is not None), key=_metric_sort)


def _long_tail(path: Path) -> LongTail:
    df = _read_table(path)
    cols = {_norm(c): c for c in df.columns}
    item_col = next((cols[c] for c in ("item_id", "item", "itemid") if c in cols), None)
    if item_col is None:
        raise InputError(f"{path}: missing column `item_id`")
    count_col = next(
        (cols[c] for c in ("n_interactions", "interactions", "count", "n") if c in cols), None
    )
    title_col = next((cols[c] for c in ("title", "item_title", "name") if c in cols), None)
    if count_col is None:  # an interactions table: one row per interaction
        counts = df.groupby(item_col, sort=False).size().rename("n").reset_index()
        titles = df.groupby(item_col, sort=False)[title_col].first() if title_col else None
        if titles is not None:
            counts["title"] = counts[item_col].map(titles)
    else:
        counts = df.rename(columns={count_col: "n"})
        if title_col:
            counts["title"] = df[title_col]
    counts = counts.sort_values(["n", item_col], ascending=[False, True], kind="mergesort")
    head = tuple(
        HeadItem(str(row[item_col]), str(row["title"]) if title_col else "", int(row["n"]))
        for _, row in counts.head(10).iterrows()
    )
    return LongTail(counts=tuple(int(n) for n in counts["n"]), head=head)


def _study_results(results: Mapping[str, Any], folder: Path | None) -> tuple[Any, Path | None]:
    """Unwrap the ``results.json`` of ``recaudit fairness run``.

    It holds ``{"config", "datasets": {name: {"models": {model: {"evaluation": ...}}}}}``;
    the report shows the first dataset (its folder holds the long-tail table).
    """
    datasets = results["datasets"]
    if not isinstance(datasets, Mapping) or not datasets:
        raise InputError("results.json: `datasets` is empty; rerun `recaudit fairness run`")
    name, dataset = next(iter(datasets.items()))
    models = _find(dataset, "models") or {}
    evaluations = {
        str(m): _find(entry, "evaluation")
        for m, entry in models.items()
        if isinstance(entry, Mapping) and _find(entry, "evaluation") is not None
    }
    if not evaluations:
        raise InputError(
            f"results.json: dataset {name!r} has no evaluated model; rerun `recaudit fairness run`"
        )
    return evaluations, (folder / str(name) if folder is not None else None)


def _fairness(results: Any, *, source: str, folder: Path | None = None) -> FairnessRun:
    if isinstance(results, Mapping) and isinstance(results.get("datasets"), Mapping):
        results, folder = _study_results(results, folder)
    if isinstance(results, Mapping) and _find(results, "groups") is not None:
        name = _find(results, "model") or (Path(source).stem if folder is None else "model")
        results = {str(name): results}
    if isinstance(results, list):
        results = {str(_find(r, "model", "name") or f"model {i}"): r for i, r in enumerate(results)}
    if not isinstance(results, Mapping) or not results:
        raise InputError(f"{source}: expected a mapping of model name -> output of {FAIRNESS_CMD}")
    models = tuple(_fairness_model(str(n), r) for n, r in results.items())
    first = next(iter(results.values()))
    missing: list[str] = []
    long_tail = None
    if folder is not None:
        path = _first(
            folder, "long_tail.parquet", "long_tail.csv", "interactions.parquet", "interactions.csv"
        )
        if path is None:
            missing.append("long_tail.parquet (interactions per item): the long-tail plot")
        else:
            long_tail = _long_tail(path)
    else:
        missing.append("the run folder's long_tail.parquet: the long-tail plot")
    alpha = _find(first, "alpha")
    return FairnessRun(
        source=source,
        alpha=0.05 if alpha is None else float(alpha),
        protected=str(_find(first, "protected_group", "protected", "minority") or ""),
        models=models,
        long_tail=long_tail,
        missing=tuple(missing),
    )


# ------------------------------------------------------------------------- entry
def _read_json(path: Path) -> Any:
    return read_json(path, what="results file")


def _detect(obj: Any) -> Kind | None:
    items: Iterable[Any] = obj if isinstance(obj, list) else [obj]
    for item in items:
        if not isinstance(item, Mapping):
            return None
        if _find(item, "pob_unbp", "pob_icm", "unbp", "icm") is not None:
            return "positional"
        if isinstance(_find(item, "groups", "results"), list):
            return _detect(_find(item, "groups", "results"))
        if _find(item, "groups") is not None and _find(item, "ib", "nrd") is not None:
            return "fairness"
        if isinstance(item.get("datasets"), Mapping):
            return "fairness"
        if all(isinstance(v, Mapping) and _find(v, "groups") is not None for v in item.values()):
            return "fairness" if item else None
        return None
    return None


def load(
    source: Path | str | Mapping[str, Any] | list, *, kind: Kind | None = None
) -> PositionalRun | FairnessRun:
    """Recognise and load a report source.

    Parameters
    ----------
    source : Path or dict or list
        A positional run folder, a fairness run folder, a JSON file, or the parsed
        JSON itself.
    kind : {"positional", "fairness"}, optional
        Skip recognition and read ``source`` as this kind.

    Returns
    -------
    PositionalRun or FairnessRun

    Raises
    ------
    InputError
        Unrecognised source, missing file or key (the message names both the key
        and the command that writes it).
    """
    if kind not in (None, "positional", "fairness"):
        raise InputError(f"`kind` must be 'positional', 'fairness' or None, got {kind!r}")
    folder: Path | None = None
    if isinstance(source, str | Path):
        path = Path(source)
        if path.is_dir():
            folder = path
            analysis = _first(path, "analysis.json")
            results = _first(path, "results.json")
            if kind == "fairness" or (kind is None and results is not None and analysis is None):
                if results is None:
                    raise InputError(f"{path}: no results.json; it is written by {FAIRNESS_CMD}")
                obj, kind = _read_json(results), "fairness"
            elif analysis is not None:
                obj, kind = _read_json(analysis), "positional"
            elif kind == "positional" or _first(path, "evaluations.parquet", "evaluations.csv"):
                raise InputError(f"{path}: no analysis.json; write it with {POSITIONAL_CMD}")
            else:
                raise InputError(UNRECOGNISED.format(what=f"folder {path}"))
        elif path.is_file():
            obj = _read_json(path)
        else:
            raise InputError(f"{path}: no such file or folder")
        name = str(path)
    else:
        obj, name = source, "<in-memory result>"
    kind = kind or _detect(obj)
    if kind == "positional":
        return _positional(obj, source=name, folder=folder)
    if kind == "fairness":
        return _fairness(obj, source=name, folder=folder)
    raise InputError(UNRECOGNISED.format(what=name))
