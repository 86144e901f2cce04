"""Read a positional source back into the library's types for the report.

``analysis.json`` / ``recaudit positional analyze --json`` becomes a
:class:`~recaudit.positional.GroupedAnalysis` (through
:meth:`~recaudit.positional.GroupedAnalysis.from_list`), after :func:`canonical`
has turned older or hand-written spellings (``sPB``, ``POB-ICM``, a position
distribution as a list of intervals or with ``_ci_low``/``_ci_high`` lists, statistics
without their coverage) into the current shape -- fields older files lack are filled
with ``null`` or 0 and none of them is shown. The run folder's result files are read
by their types' ``from_dict`` (strict: a missing key or a value of the wrong kind names
the file and the key): ``study.json`` a :class:`~recaudit.positional.StudyFile`,
``sequential.json`` a :class:`~recaudit.audit.SequentialAudit`, ``mitigation.json`` a
:class:`~recaudit.audit.MitigationComparison`, ``run.json``'s ``spend`` a
:class:`~recaudit.audit.RunSpend`, ``topn.json`` and ``compare.json`` theirs; the
evaluations table, the simulation and the resolved config into the small view types
below.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from .._read import read_json, read_text, read_toml
from .._records import find_key, need_key, to_float, to_int
from .._stats import Estimate
from ..audit import MitigationComparison, RunSpend, SequentialAudit
from ..exceptions import InputError
from ..positional import (
    GroupedAnalysis,
    PositionalAnalysis,
    PowerRow,
    RunComparisons,
    StudyFile,
    TopNGroups,
)
from ._files import first_file, read_json_file, read_table_file
from ._load_manifest import engines, spend
from ._page import NAN_ESTIMATE, HasCI

__all__ = [
    "EVALUATIONS_CMD",
    "POSITIONAL_CMD",
    "Configuration",
    "DiscardExample",
    "PositionalRun",
    "canonical",
    "configurations",
    "load_positional",
]

POSITIONAL_CMD = "`recaudit positional analyze RUN_DIR --json > RUN_DIR/analysis.json`"
EVALUATIONS_CMD = "`recaudit positional run CONFIG`"
SEQUENTIAL_JSON = "sequential.json"
STUDY_JSON = "study.json"
TOPN_JSON, TOPN_WHAT = "topn.json", "the ranked-list statistics (topn.json)"
COMPARE_JSON = "compare.json"
#: The method named on an sPB split read from an older file (which does not name one).
_OLDER_FILE = "as recorded (older analysis file)"
MSG_NOT_LIST = "{where}: `{key}` must be a JSON list, got {kind}"
MSG_PAIRS = "{where}: `{key}` must be a list of [low, high] pairs"
MSG_BAD_RESULT = "{source}, positional result #{index}: {error}; rewrite it with {command}"


@dataclass(frozen=True)
class Configuration:
    """One configuration (a group of the grouped analysis) as the report shows it.

    A view: ``analysis`` is the library's result, the Holm-adjusted p-values are the
    grouped analysis's; every property derives from them (``nan`` for a statistic
    that was not computed).
    """

    analysis: PositionalAnalysis
    icm_pvalue_holm: float
    unbp_pvalue_holm: float

    @property
    def model(self) -> str:
        """The model (``"(all)"`` without a ``model`` group key)."""
        name = self.analysis.group.get("model")
        return "(all)" if name is None else str(name)

    @property
    def k(self) -> int:
        """Candidates per prompt."""
        return self.analysis.k

    @property
    def temperature(self) -> float:
        """The temperature (0 without a ``temperature`` group key)."""
        t = self.analysis.group.get("temperature")
        return 0.0 if t is None else float(t)

    @property
    def condition(self) -> str:
        """The condition (``""`` without a ``condition`` group key)."""
        return str(self.analysis.group.get("condition") or "")

    @property
    def label(self) -> str:
        """A short human label, e.g. ``"gpt-x, k=10, T=0.2, both"``."""
        parts = [self.model, f"k={self.k}", f"T={self.temperature:g}"]
        if self.condition:
            parts.append(self.condition)
        return ", ".join(parts)

    @property
    def n_queries(self) -> int:
        """Queries with a valid evaluation."""
        return self.analysis.n_queries

    @property
    def n_evaluations(self) -> int:
        """Valid evaluations."""
        return self.analysis.n_evaluations

    @property
    def n_discarded(self) -> int:
        """Discarded evaluations."""
        return self.analysis.n_discarded

    @property
    def icm_statistic(self) -> float:
        """POB-ICM's chi-square (nan: not run)."""
        icm = self.analysis.pob_icm
        return math.nan if icm is None else icm.statistic

    @property
    def icm_pvalue(self) -> float:
        """POB-ICM's p-value (nan: not run)."""
        return self.analysis.pob_icm_pvalue

    @property
    def icm_pvalue_asymptotic(self) -> float:
        """POB-ICM's asymptotic p-value (nan: not run)."""
        icm = self.analysis.pob_icm
        return math.nan if icm is None else icm.pvalue_asymptotic

    @property
    def unbp_lower_bound(self) -> float:
        """POB-UNBP's L (nan: not run)."""
        unbp = self.analysis.pob_unbp
        return math.nan if unbp is None else unbp.L

    @property
    def unbp_pvalue(self) -> float:
        """POB-UNBP's p-value (nan: not run)."""
        return self.analysis.pob_unbp_pvalue

    @property
    def unbp_reject(self) -> bool:
        """POB-UNBP rejects (False when not run)."""
        unbp = self.analysis.pob_unbp
        return bool(unbp is not None and unbp.reject)

    @property
    def ps(self) -> HasCI:
        """Pairwise PS."""
        return self.analysis.ps or NAN_ESTIMATE

    @property
    def pb(self) -> HasCI:
        """Cross-fitted PB."""
        return self.analysis.pb

    @property
    def spb(self) -> HasCI:
        """sPB, the strong part of the split."""
        split = self.analysis.spb
        return NAN_ESTIMATE if split is None else split.strong

    @property
    def pb_plugin(self) -> float:
        """The plug-in TV of the observed position shares from uniform (biased upward
        by sampling noise; nan in files written before it)."""
        return self.analysis.pb.plugin

    @property
    def spb_note(self) -> str | None:
        """Why the soft/strong split is not identified (then sPB and soft are only
        bounded: their intervals are the identification bounds), or None."""
        split = self.analysis.spb
        return None if split is None else split.note

    @property
    def spb_upper_if_spread(self) -> float:
        """sPB's upper end if the floor were a position effect spread over positions
        (nan when not computed, not identified, or in files written before it)."""
        split = self.analysis.spb
        return math.nan if split is None else split.upper_if_spread

    @property
    def spb_soft(self) -> HasCI:
        """The soft part of the split."""
        split = self.analysis.spb
        return NAN_ESTIMATE if split is None else split.soft

    @property
    def positional_share(self) -> HasCI:
        """The position-driven share (strong + soft)."""
        split = self.analysis.spb
        return NAN_ESTIMATE if split is None else split.positional_share

    @property
    def spb_paper(self) -> HasCI:
        """The paper's cross-validated sPB."""
        return self.analysis.spb_paper or NAN_ESTIMATE

    @property
    def position_distribution(self) -> tuple[Estimate, ...]:
        """Share of valid answers at each prompt position."""
        return self.analysis.position_distribution

    @property
    def selection_rate_matrix(self) -> list[list[float]]:
        """The k x k selection rates (index x position), ``nan`` where never shown."""
        return [[float(x) for x in row] for row in self.analysis.selection_rate_matrix]


@dataclass(frozen=True)
class DiscardExample:
    """One discarded generation, shown verbatim (escaped) in the report."""

    model: str
    reason: str
    raw_response: str


@dataclass(frozen=True)
class PositionalRun:
    """Everything the positional report shows: the library's grouped analysis and the
    run folder's companions."""

    source: str
    alpha: float
    analysis: GroupedAnalysis
    discards: Mapping[str, Mapping[str, int]]
    generations: Mapping[str, int]
    discard_examples: tuple[DiscardExample, ...]
    simulation: tuple[PowerRow, ...]
    config_name: str
    config_text: str
    seed: str
    versions: Mapping[str, str]
    missing: tuple[str, ...]
    #: ``study.json`` of ``recaudit positional study`` (None when absent).
    study: StudyFile | None = None
    #: ``sequential.json`` of ``recaudit positional run --sequential`` (None when absent).
    sequential: SequentialAudit | None = None
    #: ``mitigation.json`` of ``recaudit positional mitigate`` (None when absent; its
    #: ``--out`` is the run folder, ``source``).
    mitigation: MitigationComparison | None = None
    #: What answered, from ``run.json``'s last session: one entry per model and k with
    #: the engine, its version, the quantisation and the answer mode when known.
    engines: tuple[Mapping[str, str], ...] = ()
    #: ``run.json``'s ``spend`` (calls, tokens, time, money per cell; None when absent).
    spend: RunSpend | None = None
    #: ``topn.json`` of a ``[prompt] answer = "ranking"`` run (None when absent).
    rankings: TopNGroups | None = None
    #: ``compare.json`` of a run with several models (None when absent).
    comparisons: RunComparisons | None = None

    @cached_property
    def groups(self) -> tuple[Configuration, ...]:
        """The configurations, in the analysis's order."""
        return configurations(self.analysis)


def configurations(grouped: GroupedAnalysis) -> tuple[Configuration, ...]:
    """Each group of ``grouped`` with its Holm-adjusted p-values."""
    return tuple(
        Configuration(g, float(grouped.pob_icm_pvalue_holm[i]),
                      float(grouped.pob_unbp_pvalue_holm[i]))
        for i, g in enumerate(grouped.groups)
    )


# ------------------------------------------------------------------ the analysis
def _estimate(obj: Any, where: str) -> dict[str, Any]:
    """``{value, ci_low, ci_high}`` from any accepted spelling (a bare number: no CI)."""
    if not isinstance(obj, Mapping):
        return {"value": to_float(obj, "value", where), "ci_low": None, "ci_high": None}
    value = need_key(obj, where, POSITIONAL_CMD, "value", "estimate")
    ci = find_key(obj, "ci")
    if isinstance(ci, Sequence) and len(ci) == 2:
        low, high = ci
    else:
        low = find_key(obj, "ci_low", "low", "lower")
        high = find_key(obj, "ci_high", "high", "upper")
    return {"value": value, "ci_low": low, "ci_high": high}


def _covered(obj: Any, fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` with the statistic's coverage (``n_queries``, ``reason``) if it has one."""
    src = obj if isinstance(obj, Mapping) else {}
    return {**fields, "n_queries": src.get("n_queries", 0), "reason": src.get("reason")}


def _distribution(obj: Mapping[str, Any], where: str, k: int) -> dict[str, list[Any]]:
    key = "position_distribution"
    raw = need_key(obj, where, POSITIONAL_CMD, key, "position_shares")
    if isinstance(raw, Mapping):  # {"value": [...], "ci_low": [...], "ci_high": [...]}
        values = _list(need_key(raw, f"{where}.{key}", POSITIONAL_CMD, "value"), key, where)
        lows = _list(find_key(raw, "ci_low", "low"), key, where) or [None] * len(values)
        highs = _list(find_key(raw, "ci_high", "high"), key, where) or [None] * len(values)
    elif _list(raw, key, where) and isinstance(raw[0], Mapping):  # [{"value", ...}, ...]
        ests = [_estimate(p, where) for p in raw]
        values = [e["value"] for e in ests]
        lows, highs = [e["ci_low"] for e in ests], [e["ci_high"] for e in ests]
    else:
        values = _list(raw, key, where)
        lows, highs = _distribution_cis(obj, where, len(values))
    if not len(values) == len(lows) == len(highs) == k:
        raise InputError(
            f"{where}: `{key}` and its CIs must have k={k} entries, "
            f"got {len(values)}/{len(lows)}/{len(highs)}"
        )
    return {key: [to_float(v, key, where) for v in values],
            "position_distribution_ci": [[to_float(lo, f"{key}_ci", where),
                                          to_float(hi, f"{key}_ci", where)]
                                         for lo, hi in zip(lows, highs, strict=True)]}


def _distribution_cis(obj: Mapping[str, Any], where: str, k: int) -> tuple[list, list]:
    """The distribution's lower and upper bounds: ``[[low, high], ...]``, else two lists
    (``null`` bounds when there are none)."""
    key = "position_distribution_ci"
    pairs = _list(find_key(obj, key), key, where)
    if pairs:
        if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
            raise InputError(MSG_PAIRS.format(where=where, key=key))
        return [p[0] for p in pairs], [p[1] for p in pairs]
    lows = _list(find_key(obj, f"{key}_low", "position_distribution_low"), f"{key}_low", where)
    highs = _list(find_key(obj, f"{key}_high", "position_distribution_high"), f"{key}_high",
                  where)
    return lows or [None] * k, highs or [None] * k


def _list(value: Any, key: str, where: str) -> list[Any]:
    """``value`` if it is a JSON list (``null``: empty), else an :class:`InputError`."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(MSG_NOT_LIST.format(where=where, key=key, kind=type(value).__name__))
    return value


def _icm(icm: Mapping[str, Any], where: str) -> dict[str, Any]:
    w, cmd = f"{where}.pob_icm", POSITIONAL_CMD
    pvalue = need_key(icm, w, cmd, "pvalue")
    # the current shape says "not run" with a null `df`; an older one by a null p-value
    ran = icm["df"] is not None if "df" in icm else pvalue is not None
    details = {key: (icm.get(key) or 0) if ran else None for key in (
        "df", "n_rows", "n_columns", "n_resamples", "n_in_repeated_columns")}
    return _covered(icm, {"statistic": need_key(icm, w, cmd, "statistic"), "pvalue": pvalue,
                          "pvalue_asymptotic": find_key(icm, "pvalue_asymptotic"), **details,
                          "pvalue_holm": find_key(icm, "pvalue_holm")})


def _unbp(unbp: Mapping[str, Any], where: str) -> dict[str, Any]:
    w, cmd = f"{where}.pob_unbp", POSITIONAL_CMD
    return _covered(unbp, {
        "L": need_key(unbp, w, cmd, "L", "lower_bound"), "L_under": unbp.get("L_under"),
        "L_over": unbp.get("L_over"), "epsilon": unbp.get("epsilon", 0.0),
        "pvalue": need_key(unbp, w, cmd, "pvalue"),
        "reject": need_key(unbp, w, cmd, "reject"),  # null: the test was not run
        "pvalue_holm": find_key(unbp, "pvalue_holm"),
    })


def _optional(obj: Mapping[str, Any], name: str, where: str) -> dict[str, Any]:
    """An estimate older analysis files do not have (null when absent)."""
    found = find_key(obj, name)
    est = {"value": None, "ci_low": None, "ci_high": None} if found is None \
        else _estimate(found, f"{where}.{name}")
    return _covered(found, est)


def _spb(obj: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The ``spb`` / ``spb_soft`` / ``positional_share`` / ``spb_paper`` objects."""
    raw = need_key(obj, where, POSITIONAL_CMD, "spb", "strong_positional_bias")
    spb = raw if isinstance(raw, Mapping) else {}
    # the current shape says "not computed" with a null `method`; an older one has none
    method = spb["method"] if "method" in spb else _OLDER_FILE
    paper = find_key(obj, "spb_paper")
    paper = paper if isinstance(paper, Mapping) else {}
    ran = bool(paper) and paper.get("n_folds", 0) is not None
    return {
        "spb": _covered(raw, {**_estimate(raw, f"{where}.spb"), "method": method,
                              "mean_set_size": spb.get("mean_set_size"),
                              "floor": spb.get("floor"),
                              "favoured_positions": spb.get("favoured_positions"),
                              "note": spb.get("note"),
                              "upper_if_spread": spb.get("upper_if_spread")}),
        "spb_soft": _optional(obj, "spb_soft", where),
        "positional_share": _optional(obj, "positional_share", where),
        "spb_paper": {
            **_optional(obj, "spb_paper", where),
            "tau": paper.get("tau"), "p_hat": paper.get("p_hat"),
            "n_folds": (paper.get("n_folds") or 0) if ran else None,
            "n_repeats": (paper.get("n_repeats") or 1) if ran else None,
            "threshold_from": paper.get("threshold_from"),
        },
    }


def canonical(obj: Any, index: int, alpha: float | None = None, *,
              source: str = "analysis") -> dict[str, Any]:
    """One group's JSON in the current ``analyze --json`` shape (what
    :meth:`PositionalAnalysis.from_dict` reads), from any spelling the report accepts.

    Essentials missing raise :class:`InputError` naming the file (``source``), the
    group, the key and the command that writes it.
    """
    if not isinstance(obj, Mapping):
        raise InputError(f"{source}, positional result #{index} must be a JSON object")
    name = find_key(obj, "model")
    where = (f"{source}, positional result #{index}"
             + (f" (model {name!r})" if name is not None else ""))
    cmd = POSITIONAL_CMD
    k = to_int(need_key(obj, where, cmd, "k"), "k", where)
    icm = need_key(obj, where, cmd, "pob_icm", "icm")
    unbp = need_key(obj, where, cmd, "pob_unbp", "unbp")
    if not isinstance(icm, Mapping) or not isinstance(unbp, Mapping):
        raise InputError(f"{where}: `pob_icm` and `pob_unbp` must be JSON objects")
    matrix = _list(need_key(obj, where, cmd, "selection_rate_matrix", "selection_rates"),
                   "selection_rate_matrix", where)
    if len(matrix) != k or any(not isinstance(row, list) or len(row) != k for row in matrix):
        raise InputError(f"{where}: `selection_rate_matrix` must be {k} x {k}")
    pb = need_key(obj, where, cmd, "pb", "positional_bias")
    ps = need_key(obj, where, cmd, "ps", "permutation_sensitivity")
    group = {key: value for key in ("model", "temperature", "condition")
             if (value := find_key(obj, key)) is not None}
    if "temperature" in group:  # a number: the report prints it as one
        group["temperature"] = to_float(group["temperature"], "temperature", where)
    counts = {key: to_int(need_key(obj, where, cmd, key), key, where)
              for key in ("n_queries", "n_evaluations", "n_discarded")}
    own_alpha = find_key(obj, "alpha")
    ps_modal = find_key(obj, "ps_modal")
    return {
        **group, "k": k, **counts,
        "n_queries_all_discarded": obj.get("n_queries_all_discarded", 0),
        "n_queries_excluded_ps": obj.get("n_queries_excluded_ps", 0),
        "alpha": own_alpha if own_alpha is not None else (0.05 if alpha is None else alpha),
        "tau": obj.get("tau", "auto"),
        "pob_icm": _icm(icm, where),
        "pob_unbp": _unbp(unbp, where),
        "ps": _covered(ps, _estimate(ps, f"{where}.ps")),
        "ps_modal": _covered(ps_modal, {"value": None, "ci_low": None, "ci_high": None}
                             if ps_modal is None else _estimate(ps_modal, f"{where}.ps_modal")),
        "pb": _covered(pb, {**_estimate(pb, f"{where}.pb"),
                            "plugin": find_key(pb, "plugin") if isinstance(pb, Mapping) else None,
                            "favoured_positions": (find_key(pb, "favoured_positions")
                                                   if isinstance(pb, Mapping) else None)}),
        **_spb(obj, where),
        **_distribution(obj, where, k),
        "selection_rate_matrix": [[to_float(x, "selection_rate_matrix", where) for x in row]
                                  for row in matrix],
        "discard_check": obj.get("discard_check"),  # read strictly by from_dict
    }


def read_analysis(analysis: Any, source: str) -> tuple[Mapping[str, Any], GroupedAnalysis]:
    """The source's metadata (``{"alpha", "groups"}`` wrapper, or empty) and analysis."""
    meta: Mapping[str, Any] = {}
    if isinstance(analysis, Mapping) and isinstance(find_key(analysis, "groups", "results"), list):
        meta, analysis = analysis, find_key(analysis, "groups", "results")
    items = analysis if isinstance(analysis, list) else [analysis]
    if not items:
        raise InputError(
            f"{source}: the positional analysis holds no result; rerun {POSITIONAL_CMD}"
        )
    alpha = find_key(meta, "alpha")
    alpha = None if alpha is None else to_float(alpha, "alpha", source)
    rows = [canonical(obj, i, alpha, source=source) for i, obj in enumerate(items)]
    for i, row in enumerate(rows):  # the library's readers name the field, not the file
        try:
            PositionalAnalysis.from_dict(row)
        except InputError as exc:
            raise InputError(MSG_BAD_RESULT.format(source=source, index=i, error=exc,
                                                   command=POSITIONAL_CMD)) from None
    return meta, GroupedAnalysis.from_list(rows)


# ------------------------------------------------------------ companion files
def _simulation(rows: Any, where: str) -> tuple[PowerRow, ...]:
    """``simulation.json``: the rows of `recaudit positional simulate --json` (a list,
    or an object holding it under ``rows``), each read by :meth:`PowerRow.from_dict`."""
    if isinstance(rows, Mapping):
        rows = need_key(rows, where, "`recaudit positional simulate --json`", "rows")
    if not isinstance(rows, list):
        raise InputError(f"{where}: expected a list of rows of "
                         "`recaudit positional simulate --json`")
    return tuple(PowerRow.from_dict(row) for row in rows)


def _evaluations(path: Path) -> tuple[dict, dict, tuple[DiscardExample, ...]]:
    df = read_table_file(path)
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


def _sequential(path: Path) -> SequentialAudit:
    """``sequential.json``, read strictly (a missing or wrong key named with the file)."""
    return SequentialAudit.from_dict(read_json_file(path), where=str(path))


def _mitigation(folder: Path) -> MitigationComparison | None:
    """``mitigation.json`` of ``recaudit positional mitigate`` (with the folder as ``out``),
    read strictly (a missing or wrong key named with the file)."""
    path = folder / "mitigation.json"
    if not path.is_file():
        return None
    doc = read_json(path, what="the mitigation comparison")
    return MitigationComparison.from_dict(doc, where=str(path))


@dataclass
class _Companions:
    discards: dict[str, dict[str, int]]
    generations: dict[str, int]
    examples: tuple[DiscardExample, ...] = ()
    simulation: tuple[PowerRow, ...] = ()
    config: tuple[str, str, str] = ("", "", "")


def _companions(folder: Path, missing: list[str]) -> _Companions:
    """What the run folder adds; each absent file is noted in ``missing``."""
    found = _Companions({}, {})
    evaluations = first_file(folder, "evaluations.parquet", "evaluations.csv")
    if evaluations is None:
        missing.append(f"evaluations.parquet (from {EVALUATIONS_CMD}): discards per reason")
    else:
        found.discards, found.generations, found.examples = _evaluations(evaluations)
    sim = first_file(folder, "simulation.json")
    if sim is None:
        missing.append("simulation.json (from `recaudit positional simulate`): power curves")
    else:
        found.simulation = _simulation(read_json_file(sim), str(sim))
    found.config = _config(folder)
    if not found.config[0]:
        missing.append("config.resolved.* (written by the run): the exact config")
    return found


def _discards_from_counts(groups: Sequence[Configuration], found: _Companions) -> None:
    """Without the evaluations table: generations and discards from the analysis."""
    for g in groups:
        found.generations[g.model] = found.generations.get(g.model, 0) + g.n_evaluations \
            + g.n_discarded
        found.discards.setdefault(g.model, {})
        if g.n_discarded:
            found.discards[g.model]["discarded"] = (
                found.discards[g.model].get("discarded", 0) + g.n_discarded
            )


def load_positional(analysis: Any, *, source: str, folder: Path | None = None) -> PositionalRun:
    """A positional source (parsed JSON, and its folder when there is one) for the report."""
    meta, grouped = read_analysis(analysis, source)
    missing: list[str] = []
    if folder is not None:
        found = _companions(folder, missing)
    else:
        found = _Companions({}, {})
        missing.append(
            "the run folder: pass RUN_DIR instead of its JSON to add discards by reason, "
            "power curves and the exact config"
        )
    groups = configurations(grouped)
    if not found.generations:
        _discards_from_counts(groups, found)
    alpha = find_key(meta, "alpha")
    return PositionalRun(
        source=source,
        alpha=grouped.groups[0].alpha if alpha is None else to_float(alpha, "alpha", source),
        analysis=grouped,
        discards=found.discards,
        generations=found.generations,
        discard_examples=found.examples,
        simulation=found.simulation,
        config_name=found.config[0],
        config_text=found.config[1],
        seed=found.config[2] or str(find_key(meta, "seed") or ""),
        versions={str(k): str(v) for k, v in (find_key(meta, "versions", "environment")
                                               or {}).items()},
        missing=tuple(missing),
        study=StudyFile.from_dict(read_json_file(folder / STUDY_JSON),
                                  where=str(folder / STUDY_JSON))
        if folder is not None and (folder / STUDY_JSON).is_file() else None,
        sequential=_sequential(folder / SEQUENTIAL_JSON)
        if folder is not None and (folder / SEQUENTIAL_JSON).is_file() else None,
        mitigation=_mitigation(folder) if folder is not None else None,
        engines=engines(folder / "run.json") if folder is not None else (),
        spend=spend(folder / "run.json") if folder is not None else None,
        rankings=None if folder is None or not (folder / TOPN_JSON).is_file()
        else TopNGroups.from_list(read_json(folder / TOPN_JSON, what=TOPN_WHAT)),
        comparisons=None if folder is None or not (folder / COMPARE_JSON).is_file()
        else RunComparisons.from_list(read_json(folder / COMPARE_JSON, what=COMPARE_JSON)),
    )
