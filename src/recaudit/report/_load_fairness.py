"""Read a fairness source for the report into the library's own result types.

``recaudit fairness evaluate --json`` (one model or ``{model: result}``) is read with
:meth:`FairnessEvaluation.from_dict <recaudit.fairness.FairnessEvaluation.from_dict>`;
the nested ``results.json`` of ``recaudit fairness run`` (alone or in its run folder)
with :meth:`FairnessStudyResult.from_dict
<recaudit.fairness.study.FairnessStudyResult.from_dict>`. Both
are as lenient as the report always was (metric aliases, ``NDCG@10`` /
``ndcg_10``, bare numbers, ``null``).

Some things the page shows are read from the raw JSON here: the significance level
``alpha`` (0.05 when absent; ``evaluate`` never writes one), a confidence interval on
the average popularity (a result holds its value only), and the evaluation protocol
of each model (``protocol``, ``"full"`` when absent; ``warnings``; in a study, the
model's ``evaluations`` under every protocol of the config), read tolerantly so that
JSON written before them renders as before. The long-tail figure is read from the run folder's
``long_tail.parquet``, a table the library has no type for (:class:`LongTail`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._stats import Estimate
from ..exceptions import InputError
from ..fairness import FairnessEvaluation
from ..fairness import _from_json as js
from ..fairness.study import FairnessStudyResult, ModelResult
from ._lookup import first_file, norm, read_table_file

__all__ = ["FAIRNESS_CMD", "FULL", "METRIC_ORDER", "UNNAMED", "FairnessRun", "HeadItem",
           "LongTail", "load_fairness"]

FAIRNESS_CMD = js.FAIRNESS_CMD
METRIC_ORDER = js.METRIC_ORDER
RERUN = "rerun `recaudit fairness run`"
NO_EVALUATION_MSG = "results.json: dataset {name!r} has no evaluated model; " + RERUN
NOT_RESULTS_MSG = "{source}: expected a mapping of model name -> output of " + FAIRNESS_CMD
#: The method named for an average-popularity interval read from a JSON.
POPULARITY_CI = "as given in the JSON"
#: The protocol of an evaluation that names none (JSON written before protocols).
FULL = "full"
EVALUATIONS_MSG = "{where}: `evaluations` must map protocol names to evaluations"
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
    alpha : float
        Significance level of the verdict (the JSON's ``alpha``, else 0.05).
    models : tuple of ModelResult
        The models shown, each with its evaluation (a study: its first dataset's
        evaluated models; ``record`` is ``{}`` for ``evaluate`` output).
    popularity : Mapping[str, Mapping[int, Estimate]]
        Model -> N -> average popularity of the recommended items, with the CI when
        the JSON gives one (``nan`` bounds otherwise); empty without popularity.
    long_tail : LongTail or None
        The dataset's interactions per item, when the run folder has them.
    missing : tuple of str
        Companion files that were absent and what they would have drawn.
    protocols : Mapping[str, str]
        Model -> protocol of its evaluation (``"full"``, ``"uni100"``, ...).
    warnings : Mapping[str, tuple of str]
        Model -> the warnings of its evaluation(s), every protocol's, without repeats.
    by_protocol : Mapping[str, Mapping[str, FairnessEvaluation]]
        Model -> protocol -> evaluation, for the models of a study with several
        protocols (``results.json`` ``evaluations``); empty otherwise.
    """

    source: str
    alpha: float
    models: tuple[ModelResult, ...]
    popularity: Mapping[str, Mapping[int, Estimate]]
    long_tail: LongTail | None
    missing: tuple[str, ...]
    protocols: Mapping[str, str] = field(default_factory=dict)
    warnings: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    by_protocol: Mapping[str, Mapping[str, FairnessEvaluation]] = field(default_factory=dict)

    @property
    def evaluations(self) -> dict[str, FairnessEvaluation]:
        """Model name -> its :class:`~recaudit.fairness.FairnessEvaluation`."""
        return {m.name: m.evaluation for m in self.models if m.evaluation is not None}

    @property
    def protected(self) -> str:
        """The protected group (of the first model; ``""`` when the JSON names none)."""
        return next(iter(self.evaluations.values())).protected


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


def _popularity(raw: Mapping[str, Any], evaluation: FairnessEvaluation) -> dict[int, Estimate]:
    """Average popularity at each N, with the CI the raw JSON may give (same lookup as
    :meth:`FairnessEvaluation.from_dict`: top level, else inside ``overall``)."""
    if not evaluation.avg_popularity:
        return {}
    found = js.by_n(raw, *js.POPULARITY_ALIASES)
    overall = js.find(raw, "overall")
    if not found and isinstance(overall, Mapping):
        found = js.by_n(overall, *js.POPULARITY_ALIASES)
    level = evaluation.confidence_level
    return {
        n: js.estimate(found[n], f"avg_popularity@{n}", level, POPULARITY_CI)
        for n in evaluation.avg_popularity
    }


def _from_study(results: Mapping[str, Any], folder: Path | None) -> tuple[
    list[tuple[ModelResult, Mapping[str, Any]]], Path | None
]:
    """The evaluated models of the first dataset of a ``results.json`` (its folder
    holds the long-tail table), each with its raw evaluation JSON (and the model's
    ``evaluations`` under every protocol, when it has them)."""
    study = FairnessStudyResult.from_dict(results, output=folder)
    name, dataset = next(iter(study.datasets.items()))
    raw_models = js.find(next(iter(results["datasets"].values())), "models") or {}
    models: list[tuple[ModelResult, Mapping[str, Any]]] = [
        (m, {**js.find(raw_models[m.name], "evaluation"),
             "evaluations": js.find(raw_models[m.name], "evaluations")})
        for m in dataset.models.values()
        if m.evaluation is not None
    ]
    if not models:
        raise InputError(NO_EVALUATION_MSG.format(name=name))
    return models, (folder / name if folder is not None else None)


def _from_evaluations(
    results: Any, *, source: str, folder: Path | None
) -> list[tuple[ModelResult, Mapping[str, Any]]]:
    """``evaluate --json`` output: one model, ``{model: result}`` or a list of them."""
    if isinstance(results, Mapping) and js.find(results, "groups") is not None:
        results = {str(js.find(results, "model") or UNNAMED): results}
    if isinstance(results, list):
        results = {
            str((js.find(r, "model", "name") if isinstance(r, Mapping) else None)
                or f"model {i}"): r
            for i, r in enumerate(results)
        }
    if not isinstance(results, Mapping) or not results:
        raise InputError(NOT_RESULTS_MSG.format(source=source))
    models = []
    for name, raw in results.items():
        evaluation = FairnessEvaluation.from_dict(raw, where=f"fairness result of model {name!r}")
        models.append((ModelResult(str(name), {}, evaluation), raw))
    return models


def load_fairness(results: Any, *, source: str, folder: Path | None = None) -> FairnessRun:
    """A fairness source (parsed JSON, and its folder when there is one) for the report."""
    if isinstance(results, Mapping) and isinstance(results.get("datasets"), Mapping):
        models, folder = _from_study(results, folder)
    else:
        models = _from_evaluations(results, source=source, folder=folder)
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
    if any(m.name == UNNAMED for m, _ in models):
        missing.append(UNNAMED_MISSING)
    alpha = js.find(models[0][1], "alpha")
    popularity = {
        m.name: _popularity(raw, m.evaluation) for m, raw in models if m.evaluation is not None
    }
    return FairnessRun(
        source=source,
        alpha=0.05 if alpha is None else float(alpha),
        models=tuple(m for m, _ in models),
        popularity={name: p for name, p in popularity.items() if p},
        long_tail=long_tail,
        missing=tuple(missing),
        protocols={m.name: _protocol(raw) for m, raw in models},
        warnings={m.name: _warnings(raw) for m, raw in models},
        by_protocol={
            m.name: evaluations for m, raw in models
            if len(evaluations := _evaluations(raw, m.name)) > 1
        },
    )


def _protocol(raw: Mapping[str, Any]) -> str:
    """The evaluation's protocol (``"full"`` when the JSON names none)."""
    found = js.find(raw, "protocol")
    others = js.find(raw, "evaluations")
    if found is None and isinstance(others, Mapping) and others:
        found = next(iter(others))  # the study's first protocol is its `evaluation`
    return FULL if found is None else str(found)


def _warnings(raw: Mapping[str, Any]) -> tuple[str, ...]:
    """The evaluation's ``warnings`` and those of its other protocols, without repeats."""
    found: list[str] = []
    others = js.find(raw, "evaluations")
    for source in [raw, *(others.values() if isinstance(others, Mapping) else ())]:
        listed = js.find(source, "warnings") if isinstance(source, Mapping) else None
        if isinstance(listed, str):
            listed = [listed]
        found += [str(w) for w in listed or () if str(w) not in found]
    return tuple(found)


def _evaluations(raw: Mapping[str, Any], name: str) -> dict[str, FairnessEvaluation]:
    """A study model's evaluation under every protocol (``{}`` when it has no
    ``evaluations``), in the order of the JSON."""
    found = js.find(raw, "evaluations")
    if found is None:
        return {}
    where = f"results.json model {name!r}"
    if not isinstance(found, Mapping):
        raise InputError(EVALUATIONS_MSG.format(where=where))
    return {
        str(protocol): FairnessEvaluation.from_dict(
            ev, where=f"{where}, evaluations.{protocol}"
        )
        for protocol, ev in found.items()
    }
