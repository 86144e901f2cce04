"""Reading fairness JSON back: ``<metric>@<N>`` keys, their aliases, estimates.

The primitives behind :meth:`FairnessEvaluation.from_dict
<recaudit.fairness.FairnessEvaluation.from_dict>`. They accept what the HTML report
has always read: key names compared case- and separator-insensitively
(``"NDCG@10"``, ``"hit_rate_10"``), metric aliases (``hr``, ``hit_rate``,
``prec``), an estimate as ``{value, ci_low, ci_high}``, ``{estimate, ci: [low,
high]}``, ``{value, low, high}`` or a bare number, and ``null`` for ``nan``. Key names
are looked up tolerantly (:func:`recaudit._records.find_key`); values follow the one
number rule of :mod:`recaudit._records` (a JSON number, never ``true`` or ``"0.5"``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .._records import find_key, need_key, norm_key, to_float, to_int
from .._stats import Estimate
from ..exceptions import InputError

FAIRNESS_CMD = "`recaudit fairness evaluate ... --json`"
METRIC_ORDER = ("ndcg", "precision", "recall", "hit", "mrr")
METRIC_ALIASES = {"hit_rate": "hit", "hitrate": "hit", "hr": "hit", "prec": "precision"}
POPULARITY_ALIASES = ("avg_popularity", "average_popularity", "avg_pop", "popularity", "arp")
COVERAGE_ALIASES = ("item_coverage", "coverage", "ic")
NOT_METRICS = frozenset(POPULARITY_ALIASES + COVERAGE_ALIASES)
_METRIC_KEY = re.compile(r"^([a-z][a-z_]*?)[@_\-]?(\d+)$")

SECTION_MSG = "{where} must be a JSON object of `<metric>@<N>` entries"
NO_METRIC_MSG = "{where}: no `<metric>@<N>` entry; it is written by {command}"


def whole(obj: Mapping[str, Any], key: str, where: str) -> int:
    """A required whole number (``n_users``, ...): absent is an error naming the command
    that writes it, anything but a whole JSON number one naming the key."""
    return to_int(need_key(obj, where, FAIRNESS_CMD, key), key, where)


def metric_key(key: str) -> tuple[str, int] | None:
    """``("ndcg", 10)`` from ``"ndcg@10"``, ``"NDCG_10"``, ``"hr10"``...; else ``None``."""
    match = _METRIC_KEY.match(norm_key(key))
    if match is None:
        return None
    name = METRIC_ALIASES.get(match.group(1), match.group(1))
    return name, int(match.group(2))


def metric_sort(key: tuple[str, int]) -> tuple[int, str, int]:
    """Sort key of ``(metric, N)``: the usual metric order, then N."""
    name, n = key
    rank = METRIC_ORDER.index(name) if name in METRIC_ORDER else len(METRIC_ORDER)
    return rank, name, n


def metric_items(obj: Any, where: str) -> list[tuple[tuple[str, int], Any]]:
    """The ``<metric>@<N>`` entries of a JSON object, sorted by :func:`metric_sort`."""
    if not isinstance(obj, Mapping):
        raise InputError(SECTION_MSG.format(where=where))
    items = [(metric_key(k), v) for k, v in obj.items()]
    kept = [(k, v) for k, v in items if k is not None and k[0] not in NOT_METRICS]
    return sorted(kept, key=lambda kv: metric_sort(kv[0]))


def by_n(obj: Mapping[str, Any], *names: str) -> dict[int, Any]:
    """Entries ``<name>@<N>`` of ``obj`` (any alias in ``names``), keyed by N."""
    wanted = {norm_key(n) for n in names}
    out = {}
    for key, value in obj.items():
        parsed = metric_key(key)
        if parsed is not None and parsed[0] in wanted:
            out[parsed[1]] = value
    return dict(sorted(out.items()))


def bounds(obj: Any, where: str) -> tuple[float, float, float]:
    """``(value, low, high)`` of an estimate (a bare number has no bounds); every one a
    JSON number or ``null`` (:func:`recaudit._records.to_float`)."""
    if not isinstance(obj, Mapping):
        return to_float(obj, "value", where), math.nan, math.nan
    value = to_float(need_key(obj, where, FAIRNESS_CMD, "value", "estimate"), "value", where)
    ci = find_key(obj, "ci")
    if isinstance(ci, Sequence) and not isinstance(ci, str) and len(ci) == 2:
        return value, to_float(ci[0], "ci", where), to_float(ci[1], "ci", where)
    low = find_key(obj, "ci_low", "low", "lower")
    high = find_key(obj, "ci_high", "high", "upper")
    return value, to_float(low, "ci_low", where), to_float(high, "ci_high", where)


def estimate(
    obj: Any, where: str, level: float, missing_method: str, *,
    method: str = "percentile bootstrap",
) -> Estimate:
    """An :class:`~recaudit._stats.Estimate` read by :meth:`Estimate.from_dict
    <recaudit._stats.Estimate.from_dict>`, the lenient forms first put in its
    ``{value, ci_low, ci_high}`` shape by :func:`bounds`; the interval's level is
    ``level`` and its method ``method``, ``missing_method`` when both bounds are absent."""
    value, low, high = bounds(obj, where)
    if math.isnan(low) and math.isnan(high):
        method = missing_method
    return Estimate.from_dict(
        {"value": value, "ci_low": low, "ci_high": high}, confidence_level=level, method=method
    )
