"""What :func:`~recaudit.fairness.study.run_fairness_study` returns, and its ``results.json``.

:class:`FairnessStudyResult` holds one :class:`DatasetResult` per dataset, each with one
:class:`ModelResult` per model and baseline (its training record and its
:class:`~recaudit.fairness.FairnessEvaluation`). ``to_dict()`` is the study folder's
``results.json``; ``from_dict()`` reads it back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._records import find_key, norm_key
from ...exceptions import InputError
from .. import FairnessEvaluation

__all__ = ["DatasetResult", "ModelResult", "FairnessStudyResult"]

RERUN = "rerun `recaudit fairness run`"
DATASETS_MSG = "results.json: `datasets` is empty or not a JSON object; " + RERUN
MODEL_MSG = "results.json: model {model!r} of dataset {dataset!r} must be a JSON object"
#: The data-preparation summaries of a dataset entry, in the order they are written.
DATASET_SECTIONS = ("dataset", "long_tail_raw", "long_tail", "groups", "split")


@dataclass(frozen=True)
class ModelResult:
    """One model (or baseline) of one dataset.

    Attributes
    ----------
    name : str
        The model's name (``"LightGCN"``, ``"MostPop"``, ...).
    record : Mapping[str, Any]
        How it was made, as written in ``results.json``: for a trained model the
        best grid point, validation score, timings, fingerprint, top-N file and
        whether it was ``resumed``; for a baseline ``baseline``, ``train_seconds``
        and ``recs``.
    evaluation : FairnessEvaluation or None
        Its evaluation under the config's first protocol (``None`` if the run stopped
        before evaluating it).
    evaluations : Mapping[str, FairnessEvaluation]
        Protocol name -> its evaluation, for every protocol of the config in config
        order (the first is ``evaluation``); filled from ``evaluation`` when not given.
    """

    name: str
    record: Mapping[str, Any]
    evaluation: FairnessEvaluation | None
    evaluations: Mapping[str, FairnessEvaluation] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.evaluations and self.evaluation is not None:
            object.__setattr__(self, "evaluations",
                               {self.evaluation.protocol: self.evaluation})

    def to_dict(self) -> dict[str, Any]:
        """The model's entry of ``results.json``: the record, then ``evaluation`` and,
        with more than one protocol, ``evaluations`` (protocol name -> evaluation)."""
        out = dict(self.record)
        if self.evaluation is not None:
            out["evaluation"] = self.evaluation.to_dict()
        if len(self.evaluations) > 1:
            out["evaluations"] = {p: ev.to_dict() for p, ev in self.evaluations.items()}
        return out

    @classmethod
    def from_dict(cls, name: str, obj: Mapping[str, Any], *, where: str) -> ModelResult:
        """Read :meth:`to_dict`'s JSON back (``where`` names it in messages)."""
        where = f"{where}, model {name!r}"
        evaluation = find_key(obj, "evaluation")
        by_protocol = find_key(obj, "evaluations") or {}
        if not isinstance(by_protocol, Mapping):
            raise InputError(f"{where}: `evaluations` must map protocol names to evaluations")
        return cls(
            name=str(name),
            record={k: v for k, v in obj.items()
                    if norm_key(k) not in (norm_key("evaluation"), norm_key("evaluations"))},
            evaluation=None if evaluation is None else FairnessEvaluation.from_dict(
                evaluation, where=where
            ),
            evaluations={
                str(p): FairnessEvaluation.from_dict(ev, where=f"{where}, protocol {p!r}")
                for p, ev in by_protocol.items()
            },
        )


@dataclass(frozen=True)
class DatasetResult:
    """One dataset of a study: how its data were prepared and every model's result.

    Attributes
    ----------
    name : str
        The dataset's name in the config.
    dataset : Mapping[str, Any]
        ``name``, ``path`` and ``format``.
    long_tail_raw, long_tail : Mapping[str, Any]
        :class:`~recaudit.fairness.LongTailStats` before and after implicit feedback,
        sampling and group filtering.
    groups : Mapping[str, Any]
        :class:`~recaudit.fairness.ProtectedGroups` summary.
    split : Mapping[str, Any]
        :class:`~recaudit.fairness.Split` summary.
    models : Mapping[str, ModelResult]
        Models first, then baselines, in the order they ran.
    """

    name: str
    dataset: Mapping[str, Any]
    long_tail_raw: Mapping[str, Any]
    long_tail: Mapping[str, Any]
    groups: Mapping[str, Any]
    split: Mapping[str, Any]
    models: Mapping[str, ModelResult]

    def to_dict(self) -> dict[str, Any]:
        """The dataset's entry of ``results.json``."""
        out: dict[str, Any] = {name: getattr(self, name) for name in DATASET_SECTIONS}
        out["models"] = {name: m.to_dict() for name, m in self.models.items()}
        return out

    @classmethod
    def from_dict(cls, name: str, obj: Mapping[str, Any]) -> DatasetResult:
        """Read :meth:`to_dict`'s JSON back; absent summaries become ``{}``."""
        where = f"results.json: dataset {name!r}"
        if not isinstance(obj, Mapping):
            raise InputError(f"{where} must be a JSON object")
        models = find_key(obj, "models") or {}
        if not isinstance(models, Mapping):
            raise InputError(f"{where}: `models` must be a JSON object")
        for model, entry in models.items():
            if not isinstance(entry, Mapping):
                raise InputError(MODEL_MSG.format(model=model, dataset=name))
        sections = {key: find_key(obj, key) or {} for key in DATASET_SECTIONS}
        return cls(
            name=str(name),
            models={
                str(m): ModelResult.from_dict(str(m), entry, where=where)
                for m, entry in models.items()
            },
            **sections,
        )


@dataclass(frozen=True)
class FairnessStudyResult:
    """What :func:`~recaudit.fairness.study.run_fairness_study` did.

    Attributes
    ----------
    output : pathlib.Path or None
        The run folder (``None`` when read from a JSON without saying where).
    config : Mapping[str, Any]
        The resolved config (:meth:`~recaudit.fairness.study.FairnessStudyConfig.to_dict`).
    datasets : Mapping[str, DatasetResult]
        One entry per dataset, in config order.
    """

    output: Path | None
    config: Mapping[str, Any]
    datasets: Mapping[str, DatasetResult]

    def protocol_shifts(self, *, n: int = 10) -> list[dict[str, Any]]:
        """How each model's NDCG@n, RD-NDCG@n and IB-NDCG@n move between protocols.

        One row per dataset, model and protocol (config order): ``dataset``,
        ``model``, ``protocol``, ``n``, ``ndcg``, ``rd_ndcg``, ``ib_ndcg``,
        ``ndcg_rank`` (the model's rank by NDCG among the dataset's models under
        that protocol, 1 = best: sampled metrics can reorder models) and the
        ``delta_*`` of the three figures from the first protocol. ``n`` falls back
        to the largest cut-off when an evaluation has no ``n``; empty when no model
        has more than one protocol.
        """
        rows: list[dict[str, Any]] = []
        for dataset in self.datasets.values():
            models = [m for m in dataset.models.values() if len(m.evaluations) > 1]
            rows += _shift_rows(dataset.name, models, n)
        return rows

    def to_dict(self) -> dict[str, Any]:
        """The results JSON (also saved as ``OUTPUT/results.json``)."""
        return {
            "config": self.config,
            "datasets": {name: d.to_dict() for name, d in self.datasets.items()},
        }

    @classmethod
    def from_dict(
        cls, obj: Mapping[str, Any], *, output: Path | None = None
    ) -> FairnessStudyResult:
        """Read a ``results.json`` back (``output``: the folder it came from, if known).

        Accepts what the HTML report reads: ``datasets`` (a non-empty object) whose
        entries hold ``models`` (each model's ``evaluation`` as accepted by
        :meth:`FairnessEvaluation.from_dict`, or absent); ``config`` and the
        data-preparation summaries may be absent.

        Raises
        ------
        InputError
            Naming the dataset, the model and the key.
        """
        datasets = obj.get("datasets") if isinstance(obj, Mapping) else None
        if not isinstance(datasets, Mapping) or not datasets:
            raise InputError(DATASETS_MSG)
        return cls(
            output=output,
            config=obj.get("config") or {},
            datasets={str(n): DatasetResult.from_dict(str(n), d) for n, d in datasets.items()},
        )


def _shift_rows(dataset: str, models: list[ModelResult], n: int) -> list[dict[str, Any]]:
    """:meth:`FairnessStudyResult.protocol_shifts` of one dataset."""
    rows: list[dict[str, Any]] = []
    for model in models:
        first: dict[str, float] | None = None
        for protocol, ev in model.evaluations.items():
            c = n if n in ev.n else max(ev.n)
            key = f"ndcg@{c}"
            values = {"ndcg": ev.overall[key].value, "rd_ndcg": ev.inter_bias[key].rd.value,
                      "ib_ndcg": ev.inter_bias[key].ib.value}
            first = values if first is None else first
            rows.append({"dataset": dataset, "model": model.name, "protocol": protocol,
                         "n": c, **values}
                        | {f"delta_{k}": v - first[k] for k, v in values.items()})
    for protocol in dict.fromkeys(str(r["protocol"]) for r in rows):
        same = sorted((r for r in rows if r["protocol"] == protocol),
                      key=lambda r: -float(r["ndcg"]))
        for rank, row in enumerate(same, start=1):
            row["ndcg_rank"] = rank
    return rows
