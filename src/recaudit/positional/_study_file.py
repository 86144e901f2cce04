"""``study.json``: the positional study's result, written and read.

:func:`~recaudit.positional.analyze_study` returns a :class:`PositionalStudyResult`:
the tidy table (a DataFrame, columns :data:`STUDY_COLUMNS`), the paired comparisons
(:class:`StudyComparison`), the dispersion regressions (:class:`StudyDispersion`), what
the grid did not allow (:class:`StudySkip`), the settings (:class:`StudySettings`) and
the grouped analysis. Its :meth:`~PositionalStudyResult.to_file` is the
:class:`StudyFile` written to ``study.json`` (the table's rows as :class:`StudyRow`);
``StudyFile.from_dict`` reads the file back (strict: a missing key or a value of the
wrong kind is an :class:`~recaudit.InputError` naming the file and the key) and its
``to_dict`` is the written object key for key, so ``json.dumps(..., indent=1)`` writes
the same bytes. The file holds neither the DataFrame nor the grouped analysis
(``analysis.json``), so reading it back gives a :class:`StudyFile`, not a result.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, Self

import pandas as pd

from .._io import to_jsonable, write_atomic, write_text_atomic
from .._records import as_mapping, integer, items, need, number, text, to_float, to_text
from ..exceptions import InputError

__all__ = [
    "STUDY_COLUMNS",
    "PositionalStudyResult",
    "StudyComparison",
    "StudyDispersion",
    "StudyFile",
    "StudyRow",
    "StudySettings",
    "StudySkip",
]

#: The readers of a field by its annotation (``X | None``: ``null`` kept as None).
_READERS: dict[str, Callable[[Mapping[str, Any], str, str], Any]] = {
    "str": text, "int": integer, "float": number}


class _Keyed:
    """``obj["key"]``: a field by its JSON key, as when the study's rows and settings
    were plain dicts (``study.comparisons[0]["pvalue"]``, ``study.settings["seed"]``);
    a key that is not a field is a :class:`KeyError`."""

    def __getitem__(self, key: str) -> Any:
        if key not in {f.name for f in fields(self)}:  # type: ignore[arg-type]
            raise KeyError(key)
        return getattr(self, key)


class _Row(_Keyed):
    """A flat JSON object read and written by its dataclass fields: ``str``, ``int``,
    ``float`` (``null`` as ``nan``) and ``X | None`` (``null`` as None); a field whose
    default is None may be absent (and is left out when None)."""

    def to_dict(self) -> dict[str, Any]:
        """The object as written (``nan`` as ``null``)."""
        return to_jsonable({f.name: getattr(self, f.name) for f in fields(self)  # type: ignore[arg-type]
                            if f.default is not None or getattr(self, f.name) is not None})

    @classmethod
    def from_dict(cls, obj: Any, *, where: str = "study.json") -> Self:
        """Inverse of :meth:`to_dict` (strict; a missing or wrong key named)."""
        obj = as_mapping(obj, where)
        values: dict[str, Any] = {}
        for f in fields(cls):  # type: ignore[arg-type]
            kind = str(f.type)
            if kind.endswith(" | None"):
                if f.default is None and f.name not in obj:
                    values[f.name] = None
                    continue
                value = need(obj, f.name, where)
                values[f.name] = None if value is None \
                    else _READERS[kind.removesuffix(" | None")](obj, f.name, where)
            else:
                values[f.name] = _READERS[kind](obj, f.name, where)
        return cls(**values)


@dataclass(frozen=True)
class StudyRow(_Row):
    """One row of the tidy table (``study.json``'s ``rows``; columns
    :data:`~recaudit.positional.STUDY_COLUMNS`): a metric of one cell in one analysis
    (``"full"`` or ``"complete_case"``); ``nan`` where not computed."""

    model: str
    k: int
    temperature: float
    condition: str
    analysis: str
    metric: str
    estimate: float
    ci_low: float
    ci_high: float
    p_value: float
    p_holm: float
    decision: str
    n_queries: int | None
    n_evaluations: int | None
    note: str


#: Columns of ``study.parquet`` / ``study.csv``, in order: :class:`StudyRow`'s fields.
STUDY_COLUMNS = tuple(f.name for f in fields(StudyRow))


@dataclass(frozen=True)
class StudyComparison(_Row):
    """A paired counterfactual comparison ``a - b`` of per-instance sPB (Wilcoxon
    signed-rank, Hodges-Lehmann effect with its CI, Holm across models) with the
    relevance-set IoU of the two conditions."""

    analysis: str
    model: str
    k: int
    temperature: float
    comparison: str
    description: str
    condition_a: str
    condition_b: str
    temperature_b: float
    p_hat_a: float | None
    p_hat_b: float | None
    n_evaluations: int
    n_pairs: int
    n_used: int
    statistic: float
    pvalue: float
    method: str
    effect: float
    ci_low: float
    ci_high: float
    median_difference: float
    mean_a: float
    mean_b: float
    pvalue_holm: float
    iou: float
    iou_ci_low: float
    iou_ci_high: float
    iou_n_queries: int


@dataclass(frozen=True)
class StudyDispersion(_Row):
    """A cell's retrieval-score dispersion regression (WLS, HC1; slope in percentage
    points per SD with its CI, Holm across every slope of the analysis)."""

    analysis: str
    model: str
    k: int
    temperature: float
    condition: str
    slope: float
    ci_low: float
    ci_high: float
    intercept: float
    std_error: float
    statistic: float
    pvalue: float
    n_queries: int
    sum_weights: float
    pvalue_holm: float


@dataclass(frozen=True)
class StudySkip(_Row):
    """What the grid did not allow (``what``: a cell, a comparison, the dispersion, or
    everything) and why; the cell's keys as far as they apply (None: absent)."""

    analysis: str
    model: str | None = None
    k: int | None = None
    temperature: float | None = None
    condition: str | None = None
    what: str = ""
    reason: str = ""


@dataclass(frozen=True)
class StudySettings(_Keyed):
    """The study's settings: the analysis options, the seed and the complete-case
    counts (queries kept, queries with a discarded generation, grouped by
    ``complete_case_by``)."""

    alpha: float
    epsilon: float
    n_resamples: int
    n_boot: int
    confidence_level: float
    tau: float | Literal["auto"]
    spb_n_folds: int
    spb_n_repeats: int
    seed: int | None
    n_queries_complete: int
    n_queries_with_discards: int
    complete_case_by: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """``study.json``'s ``settings``."""
        return to_jsonable({f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def from_dict(cls, obj: Any, *, where: str = "study settings") -> StudySettings:
        """Inverse of :meth:`to_dict` (strict; a missing or wrong key named)."""
        obj = as_mapping(obj, where)
        tau, seed = need(obj, "tau", where), need(obj, "seed", where)
        return cls(
            alpha=number(obj, "alpha", where), epsilon=number(obj, "epsilon", where),
            n_resamples=integer(obj, "n_resamples", where),
            n_boot=integer(obj, "n_boot", where),
            confidence_level=number(obj, "confidence_level", where),
            tau="auto" if tau == "auto" else to_float(tau, "tau", where),
            spb_n_folds=integer(obj, "spb_n_folds", where),
            spb_n_repeats=integer(obj, "spb_n_repeats", where),
            seed=None if seed is None else integer(obj, "seed", where),
            n_queries_complete=integer(obj, "n_queries_complete", where),
            n_queries_with_discards=integer(obj, "n_queries_with_discards", where),
            complete_case_by=items(obj, "complete_case_by", where, to_text),
        )


@dataclass(frozen=True)
class StudyFile:
    """``study.json`` of ``recaudit positional study``: the settings, the tidy table's
    rows, the comparisons, the dispersion regressions and what was skipped."""

    settings: StudySettings
    rows: tuple[StudyRow, ...]
    comparisons: tuple[StudyComparison, ...]
    dispersion: tuple[StudyDispersion, ...]
    skipped: tuple[StudySkip, ...]

    def to_dict(self) -> dict[str, Any]:
        """The object ``study.json`` holds."""
        return {"kind": "positional_study", "settings": self.settings.to_dict(),
                **{name: [r.to_dict() for r in getattr(self, name)]
                   for name in ("rows", "comparisons", "dispersion", "skipped")}}

    @classmethod
    def from_dict(cls, obj: Any, *, where: str = "study.json") -> StudyFile:
        """Inverse of :meth:`to_dict`; ``where`` names the file in every error."""
        obj = as_mapping(obj, where)
        if need(obj, "kind", where) != "positional_study":
            raise InputError(f"{where}: `kind` must be \"positional_study\" (a study.json "
                             "written by `recaudit positional study`)")

        def read(key: str, row: type[_Row]) -> tuple[Any, ...]:
            return tuple(row.from_dict(r, where=f"{where}, {key}[{i}]")
                         for i, r in enumerate(items(obj, key, where)))

        return cls(StudySettings.from_dict(need(obj, "settings", where),
                                           where=f"{where}, settings"),
                   read("rows", StudyRow), read("comparisons", StudyComparison),
                   read("dispersion", StudyDispersion), read("skipped", StudySkip))


def _without_na(record: Mapping[Any, Any]) -> dict[str, Any]:
    """A table row with ``pd.NA`` (a missing count) as None."""
    return {str(k): None if v is pd.NA else v for k, v in record.items()}


@dataclass(frozen=True, eq=False)
class PositionalStudyResult:
    """The study's analyses: the tidy table, the comparisons, the dispersion
    regressions, what was skipped, the settings and the grouped analysis.

    Attributes
    ----------
    table : DataFrame
        One row per (model, k, temperature, condition, analysis, metric), columns
        :data:`STUDY_COLUMNS`; ``analysis`` is ``"full"`` or ``"complete_case"``.
    comparisons : tuple of StudyComparison
    dispersion : tuple of StudyDispersion
        The paired comparisons and the dispersion regressions.
    skipped : tuple of StudySkip
        What the grid did not allow, with the reason.
    analysis : list of dict
        The full grouped analysis in the shape of ``analysis.json``.
    settings : StudySettings
        alpha, epsilon, tau, sPB folds and repeats, n_boot, n_resamples, confidence
        level, seed, counts.

    The rows, comparisons, dispersion, skips and settings also read like the JSON
    objects they are written as (``study.settings["seed"]``).
    """

    table: pd.DataFrame = field(repr=False)
    comparisons: tuple[StudyComparison, ...]
    dispersion: tuple[StudyDispersion, ...]
    skipped: tuple[StudySkip, ...]
    analysis: list[dict[str, Any]] = field(repr=False)
    settings: StudySettings

    def to_frame(self) -> pd.DataFrame:
        """A copy of the tidy table."""
        return self.table.copy()

    def to_file(self) -> StudyFile:
        """The :class:`StudyFile` written to ``study.json`` (the table's rows typed,
        ``pd.NA`` as None)."""
        rows = tuple(StudyRow(**_without_na(r)) for r in self.table.to_dict(orient="records"))
        return StudyFile(self.settings, rows, self.comparisons, self.dispersion, self.skipped)

    def to_dict(self) -> dict[str, Any]:
        """The ``study.json`` object (:meth:`to_file`'s ``to_dict``; NaN -> None)."""
        return self.to_file().to_dict()

    def save(self, folder: str | Path, *, write_analysis: bool = True) -> dict[str, Path]:
        """Write ``study.parquet``, ``study.csv``, ``study.json`` (and ``analysis.json``).

        Each file is written whole, then renamed. ``analysis.json`` (the grouped
        analysis, the shape ``recaudit report`` reads) is rewritten with the study's
        seed so the report and the study agree.
        """
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        paths = {
            "parquet": out / "study.parquet",
            "csv": out / "study.csv",
            "json": out / "study.json",
        }
        write_atomic(paths["parquet"], lambda p: self.table.to_parquet(p, index=False))
        write_atomic(paths["csv"], lambda p: self.table.to_csv(p, index=False))
        write_text_atomic(paths["json"], json.dumps(self.to_dict(), indent=1, allow_nan=False))
        if write_analysis:
            paths["analysis"] = out / "analysis.json"
            atext = json.dumps(to_jsonable(self.analysis), indent=2, allow_nan=False)
            write_text_atomic(paths["analysis"], atext)
        return paths
