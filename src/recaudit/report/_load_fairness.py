"""Read a fairness source for the report: ``recaudit fairness evaluate --json`` (one
model or ``{model: result}``), a fairness run folder (``results.json`` [+
``long_tail.parquet``]) or the nested ``results.json`` of ``recaudit fairness run``.

Kept apart from the positional loader: once the fairness result types read their own
JSON back (``FairnessEvaluation.from_dict``), :func:`load_fairness` is the one place
to switch. Metric names are normalised (``NDCG@10`` / ``ndcg_10``, ``hit_rate`` /
``hit``); intervals are the library's :class:`~recaudit._stats.Estimate`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._stats import Estimate
from ..exceptions import InputError
from ._lookup import find, first_file, need, norm, read_table_file, to_float

__all__ = [
    "FAIRNESS_CMD",
    "METRIC_ORDER",
    "FairnessModel",
    "FairnessRun",
    "HeadItem",
    "LongTail",
    "RiskDifference",
    "load_fairness",
]

FAIRNESS_CMD = "`recaudit fairness evaluate ... --json`"
METRIC_ORDER = ("ndcg", "precision", "recall", "hit", "mrr")
_METRIC_ALIASES = {"hit_rate": "hit", "hitrate": "hit", "hr": "hit", "prec": "precision"}
_METRIC_KEY = re.compile(r"^([a-z][a-z_]*?)[@_\-]?(\d+)$")
_POPULARITY = ("avg_popularity", "average_popularity", "avg_pop", "popularity", "arp")
_COVERAGE = ("item_coverage", "coverage", "ic")
_NOT_METRICS = frozenset(_POPULARITY + _COVERAGE)


def _interval(obj: Any, where: str) -> Estimate:
    """``{value, ci_low, ci_high}`` (or ``ci: [low, high]``, or a bare number: no CI)."""
    if not isinstance(obj, Mapping):
        return Estimate.from_dict({"value": to_float(obj), "ci_low": None, "ci_high": None})
    value = need(obj, where, FAIRNESS_CMD, "value", "estimate")
    ci = find(obj, "ci")
    if isinstance(ci, Sequence) and len(ci) == 2:
        low, high = ci
    else:
        low, high = find(obj, "ci_low", "low", "lower"), find(obj, "ci_high", "high", "upper")
    return Estimate.from_dict({"value": to_float(value), "ci_low": to_float(low),
                               "ci_high": to_float(high)})


@dataclass(frozen=True)
class RiskDifference:
    """RD of one metric between the groups, with its permutation-test p-value."""

    estimate: Estimate
    pvalue: float
    pvalue_holm: float


@dataclass(frozen=True)
class FairnessModel:
    """One model's ``fairness evaluate`` output. Metric keys are ``(metric, N)``."""

    name: str
    n_users: Mapping[str, int]
    group_metrics: Mapping[str, Mapping[tuple[str, int], Estimate]]
    overall: Mapping[tuple[str, int], Estimate]
    coverage: Mapping[int, float]
    popularity: Mapping[int, Estimate]
    rd: Mapping[tuple[str, int], RiskDifference]
    nrd: Mapping[tuple[str, int], Estimate]
    ib: Mapping[tuple[str, int], Estimate]

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the sidecar's ``models`` items); metric keys become ``"ndcg@10"``."""

        def keyed(d: Mapping[tuple[str, int], Estimate]) -> dict[str, Any]:
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
    match = _METRIC_KEY.match(norm(key))
    if match is None:
        return None
    name = _METRIC_ALIASES.get(match.group(1), match.group(1))
    return name, int(match.group(2))


def _metric_section(obj: Any, where: str) -> dict[tuple[str, int], Estimate]:
    if not isinstance(obj, Mapping):
        raise InputError(f"{where} must be a JSON object of `<metric>@<N>` entries")
    out = {}
    for key, value in obj.items():
        parsed = _metric_key(key)
        if parsed is not None and parsed[0] not in _NOT_METRICS:
            out[parsed] = _interval(value, f"{where}.{key}")
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
        if parsed is not None and parsed[0] in {norm(n) for n in names}:
            out[parsed[1]] = value
    return dict(sorted(out.items()))


def _fairness_model(name: str, obj: Any) -> FairnessModel:
    where = f"fairness result of model {name!r}"
    cmd = FAIRNESS_CMD
    if not isinstance(obj, Mapping):
        raise InputError(f"{where} must be a JSON object")
    groups = need(obj, where, cmd, "groups")
    if not isinstance(groups, Mapping) or len(groups) < 2:
        raise InputError(f"{where}: `groups` must map at least two group values to metrics")
    overall = need(obj, where, cmd, "overall")
    coverage = _by_n(obj, *_COVERAGE) or _by_n(overall, *_COVERAGE)
    if not coverage:
        raise InputError(f"{where}: missing key `item_coverage@<N>`; it is written by {cmd}")
    popularity = _by_n(obj, *_POPULARITY) or _by_n(overall, *_POPULARITY)
    rd = {
        key: RiskDifference(
            _interval(v, f"{where}.rd"),
            to_float(need(v, f"{where}.rd.{key[0]}@{key[1]}", cmd, "pvalue")),
            to_float(find(v, "pvalue_holm")),
        )
        for key, v in _raw_metric_items(need(obj, where, cmd, "rd"), f"{where}.rd")
    }
    return FairnessModel(
        name=name,
        n_users={
            str(g): int(need(d, f"{where}.groups.{g}", cmd, "n_users")) for g, d in groups.items()
        },
        group_metrics={
            str(g): _metric_section(d, f"{where}.groups.{g}") for g, d in groups.items()
        },
        overall=_metric_section(overall, f"{where}.overall"),
        coverage={
            n: to_float(v["value"] if isinstance(v, Mapping) else v) for n, v in coverage.items()
        },
        popularity={
            n: _interval(v, f"{where}.avg_popularity")
            for n, v in popularity.items()
        },
        rd=rd,
        nrd=_metric_section(need(obj, where, cmd, "nrd"), f"{where}.nrd"),
        ib=_metric_section(need(obj, where, cmd, "ib"), f"{where}.ib"),
    )


def _raw_metric_items(obj: Any, where: str) -> list[tuple[tuple[str, int], Any]]:
    if not isinstance(obj, Mapping):
        raise InputError(f"{where} must be a JSON object of `<metric>@<N>` entries")
    items = [(_metric_key(k), v) for k, v in obj.items()]
    return sorted(((k, v) for k, v in items if k is not None), key=_metric_sort)


def _long_tail(path: Path) -> LongTail:
    df = read_table_file(path)
    cols = {norm(c): c for c in df.columns}
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
    models = find(dataset, "models") or {}
    evaluations = {
        str(m): find(entry, "evaluation")
        for m, entry in models.items()
        if isinstance(entry, Mapping) and find(entry, "evaluation") is not None
    }
    if not evaluations:
        raise InputError(
            f"results.json: dataset {name!r} has no evaluated model; rerun `recaudit fairness run`"
        )
    return evaluations, (folder / str(name) if folder is not None else None)


def load_fairness(results: Any, *, source: str, folder: Path | None = None) -> FairnessRun:
    """A fairness source (parsed JSON, and its folder when there is one) for the report."""
    if isinstance(results, Mapping) and isinstance(results.get("datasets"), Mapping):
        results, folder = _study_results(results, folder)
    if isinstance(results, Mapping) and find(results, "groups") is not None:
        name = find(results, "model") or (Path(source).stem if folder is None else "model")
        results = {str(name): results}
    if isinstance(results, list):
        results = {str(find(r, "model", "name") or f"model {i}"): r for i, r in enumerate(results)}
    if not isinstance(results, Mapping) or not results:
        raise InputError(f"{source}: expected a mapping of model name -> output of {FAIRNESS_CMD}")
    models = tuple(_fairness_model(str(n), r) for n, r in results.items())
    first = next(iter(results.values()))
    missing: list[str] = []
    long_tail = None
    if folder is not None:
        path = first_file(
            folder, "long_tail.parquet", "long_tail.csv", "interactions.parquet", "interactions.csv"
        )
        if path is None:
            missing.append("long_tail.parquet (interactions per item): the long-tail plot")
        else:
            long_tail = _long_tail(path)
    else:
        missing.append("the run folder's long_tail.parquet: the long-tail plot")
    alpha = find(first, "alpha")
    return FairnessRun(
        source=source,
        alpha=0.05 if alpha is None else float(alpha),
        protected=str(find(first, "protected_group", "protected", "minority") or ""),
        models=models,
        long_tail=long_tail,
        missing=tuple(missing),
    )
