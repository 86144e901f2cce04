"""Read a fairness source for the report into the library's own result types.

``recaudit fairness evaluate --json`` (one model or ``{model: result}``) is read with
:meth:`FairnessEvaluation.from_dict <recaudit.fairness.FairnessEvaluation.from_dict>`;
the nested ``results.json`` of ``recaudit fairness run`` (alone or in its run folder)
with :meth:`FairnessStudyResult.from_dict
<recaudit.fairness.study.FairnessStudyResult.from_dict>`. Both
are as lenient as the report always was (metric aliases, ``NDCG@10`` /
``ndcg_10``, bare numbers, ``null``).

The page renders those types only: the protocol, warnings and every protocol's
evaluation of a model are its :class:`~recaudit.fairness.study.ModelResult`'s; the
average popularity is the evaluation's value (``evaluate`` gives it no interval); the
significance level is :data:`ALPHA` (``evaluate`` records none). The long-tail figure is
read from the run folder's ``long_tail.parquet``, a table the library has no type for
(:class:`LongTail`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._records import find_key, norm_key
from .._stats import ConfidenceInterval, Estimate
from ..exceptions import InputError
from ..fairness import FAIRNESS_CMD, METRIC_ORDER, FairnessComparison, FairnessEvaluation
from ..fairness.study import FairnessStudyResult, ModelResult
from ._files import first_file, read_json_file, read_table_file

__all__ = ["ALPHA", "FAIRNESS_CMD", "FULL", "METRIC_ORDER", "UNNAMED", "FairnessRun",
           "HeadItem", "LongTail", "load_fairness"]

#: The significance level of the fairness verdict (``evaluate`` records none).
ALPHA = 0.05
RERUN = "rerun `recaudit fairness run`"
NO_EVALUATION_MSG = "results.json: dataset {name!r} has no evaluated model; " + RERUN
NOT_RESULTS_MSG = "{source}: expected a mapping of model name -> output of " + FAIRNESS_CMD
#: The method of the average popularity's (absent) interval.
POPULARITY_CI = "none: `evaluate` reports the average popularity without an interval"
#: The protocol of an evaluation that names none (JSON written before protocols).
FULL = "full"
#: The name of a model whose JSON names none (``fairness evaluate`` without ``--model``):
#: never the file's name, which names the file, not the recommender.
UNNAMED = "unnamed model"
#: What the page lists under "Not in this report" for an unnamed model.
UNNAMED_MISSING = ("the model's name (the JSON has no `model`): "
                   "`recaudit fairness evaluate --model NAME --json` records it")


@dataclass(frozen=True)
class HeadItem:
    """One of the most interacted-with items of the dataset."""

    item: str
    title: str
    interactions: int


@dataclass(frozen=True)
class LongTail:
    """Interactions per item, sorted in decreasing order (from ``long_tail.parquet``)."""

    counts: tuple[int, ...]
    head: tuple[HeadItem, ...]


@dataclass(frozen=True)
class FairnessRun:
    """Everything the fairness page shows.

    Attributes
    ----------
    source : str
        Where it was read from.
    models : tuple of ModelResult
        The models shown, each with its evaluation (a study: its first dataset's
        evaluated models; ``record`` is ``{}`` for ``evaluate`` output).
    long_tail : LongTail or None
        The dataset's interactions per item, when the run folder has them.
    missing : tuple of str
        Companion files that were absent and what they would have drawn.
    alpha : float
        Significance level of the verdict (:data:`ALPHA`).
    comparison : FairnessComparison or None
        The study's ``compare.json`` (every pair of models, paired by user), when the
        dataset folder has one.
    """

    source: str
    models: tuple[ModelResult, ...]
    long_tail: LongTail | None
    missing: tuple[str, ...]
    alpha: float = ALPHA
    comparison: FairnessComparison | None = None

    @property
    def evaluations(self) -> dict[str, FairnessEvaluation]:
        """Model name -> its :class:`~recaudit.fairness.FairnessEvaluation`."""
        return {m.name: m.evaluation for m in self.models if m.evaluation is not None}

    @property
    def protected(self) -> str:
        """The protected group (of the first model; ``""`` when the JSON names none)."""
        return next(iter(self.evaluations.values())).protected

    @property
    def popularity(self) -> dict[str, dict[int, Estimate]]:
        """Model -> N -> average popularity of the recommended items (no interval);
        models without it left out."""
        return {
            name: {n: Estimate(v, ConfidenceInterval(math.nan, math.nan,
                                                     ev.confidence_level, POPULARITY_CI))
                   for n, v in ev.avg_popularity.items()}
            for name, ev in self.evaluations.items() if ev.avg_popularity
        }

    @property
    def protocols(self) -> dict[str, str]:
        """Model -> protocol of its evaluation (``"full"``, ``"uni100"``, ...)."""
        return {name: ev.protocol for name, ev in self.evaluations.items()}

    @property
    def warnings(self) -> dict[str, tuple[str, ...]]:
        """Model -> the warnings of its evaluation(s), every protocol's, without repeats."""
        return {
            m.name: tuple(dict.fromkeys(
                w for ev in (m.evaluation, *m.evaluations.values()) if ev is not None
                for w in ev.warnings))
            for m in self.models
        }

    @property
    def by_protocol(self) -> dict[str, dict[str, FairnessEvaluation]]:
        """Model -> protocol -> evaluation, for the models of a study with several
        protocols (``results.json`` ``evaluations``)."""
        return {m.name: dict(m.evaluations) for m in self.models if len(m.evaluations) > 1}


def _long_tail(path: Path) -> LongTail:
    df = read_table_file(path)
    cols = {norm_key(c): c for c in df.columns}
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


def _from_study(results: Mapping[str, Any], folder: Path | None) -> tuple[
    list[ModelResult], Path | None
]:
    """The evaluated models of the first dataset of a ``results.json`` (its folder
    holds the long-tail table)."""
    study = FairnessStudyResult.from_dict(results, output=folder)
    name, dataset = next(iter(study.datasets.items()))
    models = [m for m in dataset.models.values() if m.evaluation is not None]
    if not models:
        raise InputError(NO_EVALUATION_MSG.format(name=name))
    return models, (folder / name if folder is not None else None)


def _from_evaluations(results: Any, *, source: str) -> list[ModelResult]:
    """``evaluate --json`` output: one model, ``{model: result}`` or a list of them."""
    if isinstance(results, Mapping) and find_key(results, "groups") is not None:
        results = {str(find_key(results, "model") or UNNAMED): results}
    if isinstance(results, list):
        results = {
            str((find_key(r, "model", "name") if isinstance(r, Mapping) else None)
                or f"model {i}"): r
            for i, r in enumerate(results)
        }
    if not isinstance(results, Mapping) or not results:
        raise InputError(NOT_RESULTS_MSG.format(source=source))
    return [
        ModelResult(str(name), {}, FairnessEvaluation.from_dict(
            raw, where=f"fairness result of model {name!r}"))
        for name, raw in results.items()
    ]


def load_fairness(results: Any, *, source: str, folder: Path | None = None) -> FairnessRun:
    """A fairness source (parsed JSON, and its folder when there is one) for the report."""
    if isinstance(results, Mapping) and isinstance(results.get("datasets"), Mapping):
        models, folder = _from_study(results, folder)
    else:
        models = _from_evaluations(results, source=source)
    missing: list[str] = []
    long_tail = None
    comparison = None
    if folder is not None and (folder / "compare.json").is_file():
        comparison = FairnessComparison.from_dict(
            read_json_file(folder / "compare.json"), where=str(folder / "compare.json"))
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
    if any(m.name == UNNAMED for m in models):
        missing.append(UNNAMED_MISSING)
    return FairnessRun(source=source, models=tuple(models), long_tail=long_tail,
                       missing=tuple(missing), comparison=comparison)
