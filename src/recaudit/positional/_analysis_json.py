"""An analysis's JSON read back: the fields of :class:`PositionalAnalysis` and
:class:`ExactAnalysis` from the objects of ``recaudit positional analyze --json``.

Their ``from_dict`` classmethods call :func:`analysis_fields` / :func:`exact_fields`
here (kept apart so that ``_analyze`` and ``_exact`` stay about computing). A
statistic that was not computed reads back as ``None`` -- the JSON says so by its
``reason`` (or by the fields only a computed result fills); what the JSON does not
hold (null distributions, one-sided bounds, the interval's level and method) reads
back empty or as the defaults documented on each type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._records import (
    as_mapping,
    float_array,
    integer,
    need,
    number,
    optional_number,
    positions,
)
from .._stats import METHOD_FROM_JSON, ConfidenceInterval, Estimate
from ..exceptions import InputError
from ._crossfit import PositionalBiasResult
from ._discards import DiscardCheck
from ._icm import PobIcmResult
from ._metrics import MSG_TAU, StrongBiasResult
from ._strong import StrongSoftResult, split_note, spread_upper
from ._unbp import PobUnbpResult

__all__ = ["Coverage", "analysis_fields", "exact_fields", "group_keys", "holm_column"]

#: Every statistic object of the JSON that carries its own coverage.
STATISTICS = ("pob_icm", "pob_unbp", "ps", "ps_modal", "pb", "spb", "spb_paper")
_FROM_JSON = METHOD_FROM_JSON
MSG_SHAPE = "{what}: `{key}` must hold {expected} (k={k}), got shape {shape}"


@dataclass(frozen=True)
class Coverage:
    """Which queries one statistic used.

    Attributes
    ----------
    n_queries : int
        Queries the statistic was computed on (0 when it was not computed).
    reason : str or None
        Why the statistic is missing (``None`` when it was computed).
    """

    n_queries: int
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"n_queries", "reason"}``, as every statistic object of the JSON has."""
        return {"n_queries": self.n_queries, "reason": self.reason}

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Coverage:
        """Read ``{"n_queries", "reason"}`` back (of a statistic object, or alone)."""
        what = "Coverage"
        obj = as_mapping(obj, what)
        reason = need(obj, "reason", what)
        return cls(integer(obj, "n_queries", what), None if reason is None else str(reason))


def group_keys(obj: Mapping[str, Any], first: str) -> dict[str, Any]:
    """The group's keys (``--by`` columns): the keys written before ``first``.

    ``to_dict`` writes ``{**group, "k": ..., first: ...}`` (analysis) or
    ``{**group, first: ..., "k": ...}`` (exact), so ``k`` just before ``first`` is
    the analysis's own and a ``k`` earlier on is a group key.
    """
    keys = list(obj)
    end = keys.index(first) if first in keys else 0
    prefix = keys[:end]
    if prefix and prefix[-1] == "k":
        prefix.pop()
    return {key: obj[key] for key in prefix}


def holm_column(rows: Sequence[Mapping[str, Any]], test: str) -> np.ndarray:
    """The ``pvalue_holm`` of ``test`` in each row (``null`` or absent: ``nan``)."""
    return float_array([(row.get(test) or {}).get("pvalue_holm") for row in rows],
                       f"{test}.pvalue_holm", "GroupedAnalysis")


def _estimate(obj: Any, level: float) -> Estimate:
    return Estimate.from_dict(obj, confidence_level=level, method=_FROM_JSON)


def _distribution(obj: Mapping[str, Any], what: str, level: float) -> tuple[Estimate, ...]:
    k = integer(obj, "k", what)
    values = _array(obj, "position_distribution", what, (k,), "k numbers")
    cis = _array(obj, "position_distribution_ci", what, (k, 2), "k [low, high] pairs")
    return tuple(
        Estimate(float(v), ConfidenceInterval(float(lo), float(hi), level, _FROM_JSON))
        for v, (lo, hi) in zip(values, cis, strict=True)
    )


def _array(obj: Mapping[str, Any], key: str, what: str, shape: tuple[int, ...],
           expected: str) -> np.ndarray:
    """``obj[key]`` as a float array of ``shape`` (``expected`` says it in words)."""
    values = float_array(need(obj, key, what), key, what)
    if values.shape != shape:
        raise InputError(MSG_SHAPE.format(what=what, key=key, expected=expected,
                                          k=shape[0], shape=values.shape))
    return values


def _split(obj: Mapping[str, Any], what: str, level: float) -> StrongSoftResult | None:
    spb = as_mapping(need(obj, "spb", what), f"{what}.spb")
    if need(spb, "method", f"{what}.spb") is None:
        return None
    return StrongSoftResult(
        strong=_estimate(spb, level),
        soft=_estimate(need(obj, "spb_soft", what), level),
        positional_share=_estimate(need(obj, "positional_share", what), level),
        mean_set_size=number(spb, "mean_set_size", f"{what}.spb"),
        floor=number(spb, "floor", f"{what}.spb"),
        favoured=positions(spb, "favoured_positions", f"{what}.spb"),
        note=split_note(spb, f"{what}.spb"),
        upper_if_spread=spread_upper(spb, f"{what}.spb"),
    )


def _tau(obj: Mapping[str, Any], what: str) -> float | str:
    """``tau`` read back: ``'auto'`` or a number in (0, 1], as the options accept."""
    value = need(obj, "tau", what)
    if value == "auto":
        return "auto"
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise InputError(f"{what}: " + MSG_TAU.format(value=value))
    return float(value)


def _matrix(obj: Mapping[str, Any], what: str) -> np.ndarray:
    k = integer(obj, "k", what)
    return _array(obj, "selection_rate_matrix", what, (k, k), "a k x k matrix")


def analysis_fields(obj: Mapping[str, Any], confidence_level: float) -> dict[str, Any]:
    """The constructor arguments of ``PositionalAnalysis`` from its ``to_dict()``."""
    what = "PositionalAnalysis"
    obj = as_mapping(obj, what)
    stats = {name: as_mapping(need(obj, name, what), f"{what}.{name}") for name in STATISTICS}
    coverage = {name: Coverage.from_dict(stats[name]) for name in STATISTICS}
    alpha = number(obj, "alpha", what)
    level = confidence_level

    def unless_missing(name: str, read: Any) -> Any:
        return None if coverage[name].reason is not None else read(stats[name])

    icm = stats["pob_icm"]
    unbp = stats["pob_unbp"]
    paper = stats["spb_paper"]
    return {
        "k": integer(obj, "k", what),
        **{key: integer(obj, key, what) for key in (
            "n_queries", "n_evaluations", "n_discarded", "n_queries_all_discarded",
            "n_queries_excluded_ps")},
        "alpha": alpha,
        "epsilon": number(unbp, "epsilon", f"{what}.pob_unbp"),
        "pob_icm": None if icm.get("df") is None else PobIcmResult.from_dict(icm),
        "pob_unbp": None if unbp.get("reject") is None
        else PobUnbpResult.from_dict(unbp, alpha=alpha),
        "ps": unless_missing("ps", lambda d: _estimate(d, level)),
        "ps_modal": unless_missing("ps_modal", lambda d: _estimate(d, level)),
        "pb": PositionalBiasResult.from_dict(stats["pb"], confidence_level=level),
        "spb": _split(obj, what, level),
        "spb_paper": None if paper.get("n_folds") is None
        else StrongBiasResult.from_dict(paper, confidence_level=level),
        "position_distribution": _distribution(obj, what, level),
        "selection_rate_matrix": _matrix(obj, what),
        "coverage": coverage,
        "group": group_keys(obj, "n_queries"),
        "tau": _tau(obj, what),
        "spb_threshold_from": paper.get("threshold_from"),
        "discard_check": None if obj.get("discard_check") is None
        else DiscardCheck.from_dict(obj["discard_check"], where=f"{what}.discard_check"),
    }


def exact_fields(obj: Mapping[str, Any], confidence_level: float) -> dict[str, Any]:
    """The constructor arguments of ``ExactAnalysis`` from its ``to_dict()``."""
    what = "ExactAnalysis"
    obj = as_mapping(obj, what)
    level = confidence_level
    alpha = number(obj, "alpha", what)
    unbp = as_mapping(need(obj, "pob_unbp", what), f"{what}.pob_unbp")
    paper = as_mapping(need(obj, "spb_paper", what), f"{what}.spb_paper")

    def maybe(name: str) -> Estimate | None:
        d = as_mapping(need(obj, name, what), f"{what}.{name}")
        return None if d.get("value") is None else _estimate(d, level)

    return {
        "k": integer(obj, "k", what),
        "n_queries": integer(obj, "n_queries", what),
        "n_evaluations": integer(obj, "n_evaluations", what),
        "n_missing": integer(obj, "n_missing", what),
        "alpha": alpha,
        "epsilon": number(unbp, "epsilon", f"{what}.pob_unbp"),
        "pob_unbp": None if unbp.get("reject") is None
        else PobUnbpResult.from_dict(unbp, alpha=alpha),
        "ps": maybe("ps"),
        "ps_modal": maybe("ps_modal"),
        "pb": PositionalBiasResult.from_dict(need(obj, "pb", what), confidence_level=level),
        "spb_paper": maybe("spb_paper"),
        "outside_mass": optional_number(obj, "outside_mass", what),
        "position_distribution": _distribution(obj, what, level),
        "selection_rate_matrix": _matrix(obj, what),
        "group": group_keys(obj, "choice"),
        "spb_repeats": integer(paper, "n_repeats", f"{what}.spb_paper"),
        "unbp_reason": None if unbp.get("reason") is None else str(unbp["reason"]),
    }
