"""Paired comparisons of positional bias between systems (issue 35, item 1).

For systems evaluated on the same (query_id, order) keys, the difference ``a - b`` of a
positional measure is bootstrapped by resampling queries jointly for both systems (the
paired design); systems with different keys are bootstrapped independently
(``paired=False``). Every pair of systems is compared; the p-values of one measure are
adjusted across pairs (Holm or Benjamini-Hochberg).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from itertools import combinations
from typing import Any

import numpy as np
import numpy.typing as npt

from .._multiplicity import adjust_pvalues, adjusted_level, check_adjust
from .._records import as_mapping, integer, need, number, text, to_bool
from .._stats import (
    DEFAULT_N_BOOT,
    as_generator,
    bootstrap_weights,
    expanded_level,
    percentile_interval,
)
from ..exceptions import InputError
from ._bootstrap import check_bootstrap_args
from ._compare_split import SPLIT_MEASURES, split_differences
from ._evaluations import Evaluations
from ._unbp import query_position_shares

__all__ = ["MEASURES", "Comparison", "Pair", "compare_family", "compare_systems"]

MSG_TWO = "comparing needs >= 2 systems, got {n}; pass two runs or tables, or --by COLUMN"
MSG_K = "systems {a!r} and {b!r} have different k ({ka} vs {kb}); compare equal list lengths"

#: Fields added after the first JSON rows were written (optional on read).
_ADDED = ("ci_low_adjusted", "ci_high_adjusted", "adjusted_level")

Measure = Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]]


def _pb(means: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Plug-in PB, TV of the mean position distribution from uniform, per row."""
    k = means.shape[1]
    return 0.5 * np.abs(means - 1.0 / k).sum(axis=1)


def _first(means: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Lift of the first prompt position: q_1 - 1/k, per row."""
    return means[:, 0] - 1.0 / means.shape[1]


#: The measures compared: each maps (b, k) mean position shares to (b,) values.
MEASURES: dict[str, Measure] = {"pb_plugin": _pb, "first": _first}


@dataclass(frozen=True)
class Comparison:
    """One pair of systems and one measure: ``difference = measure(a) - measure(b)``.

    ``pvalue`` tests "no difference" (two-sided, paired or independent bootstrap with
    the +1 correction); ``pvalue_adjusted`` is adjusted across the pairs of the same
    measure by ``adjust``; ``ci_low`` / ``ci_high`` is the row's own interval at
    ``confidence_level``, ``ci_low_adjusted`` / ``ci_high_adjusted`` the interval at
    the family's ``adjusted_level`` (:func:`adjusted_level`).
    """

    a: str
    b: str
    measure: str
    value_a: float
    value_b: float
    difference: float
    ci_low: float
    ci_high: float
    confidence_level: float
    pvalue: float
    pvalue_adjusted: float
    adjust: str
    paired: bool
    n_queries: int
    ci_low_adjusted: float = math.nan
    ci_high_adjusted: float = math.nan
    adjusted_level: float = math.nan

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready row."""
        return asdict(self)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Comparison:
        """Inverse of :meth:`to_dict`: numbers strict (``null`` as ``nan``), a missing or
        wrong key named; rows written before the adjusted interval existed read it as
        ``nan``."""
        what = "Comparison"
        obj = as_mapping(obj, what)
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name in _ADDED and f.name not in obj:
                continue
            value: Any
            if f.name in ("a", "b", "measure", "adjust"):
                value = text(obj, f.name, what)
            elif f.name == "paired":
                value = to_bool(need(obj, f.name, what), f.name, what)
            elif f.name == "n_queries":
                value = integer(obj, f.name, what)
            else:
                value = number(obj, f.name, what)
            values[f.name] = value
        return cls(**values)


def _keys(evals: Evaluations) -> Counter[tuple[Any, tuple[int, ...]]]:
    """The multiset of (query_id, order) keys of the valid evaluations."""
    ids = evals.query_ids[evals.query]
    return Counter((q, tuple(o)) for q, o in zip(ids.tolist(), evals.orders.tolist(),
                                                 strict=True))


def _aligned_shares(evals: Evaluations, ids: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
    """Per-query position shares in the order of ``ids``."""
    shares = query_position_shares(evals)
    index = {q: j for j, q in enumerate(evals.query_ids.tolist())}
    return shares[[index[q] for q in ids.tolist()]]


def _boot_diff(xa: npt.NDArray[np.float64], xb: npt.NDArray[np.float64], paired: bool,
               n_boot: int, gen: np.random.Generator) -> npt.NDArray[np.float64]:
    """(n_boot, n_measures) bootstrap replicates of measure(a) - measure(b)."""
    out = []
    if paired:
        for w in bootstrap_weights(xa.shape[0], n_boot, gen):
            ma, mb = w @ xa / xa.shape[0], w @ xb / xb.shape[0]
            out.append(np.column_stack([f(ma) - f(mb) for f in MEASURES.values()]))
    else:
        wa_all = np.vstack(list(bootstrap_weights(xa.shape[0], n_boot, gen)))
        wb_all = np.vstack(list(bootstrap_weights(xb.shape[0], n_boot, gen)))
        ma, mb = wa_all @ xa / xa.shape[0], wb_all @ xb / xb.shape[0]
        out.append(np.column_stack([f(ma) - f(mb) for f in MEASURES.values()]))
    return np.vstack(out)


def _compare_pair(name_a: str, a: Evaluations, name_b: str, b: Evaluations, *, n_boot: int,
                  confidence_level: float, gen: np.random.Generator) -> list[dict[str, Any]]:
    if a.k != b.k:
        raise InputError(MSG_K.format(a=name_a, b=name_b, ka=a.k, kb=b.k))
    paired = _keys(a) == _keys(b)
    if paired:
        ids = a.query_ids
        xa, xb = _aligned_shares(a, ids), _aligned_shares(b, ids)
    else:
        xa, xb = query_position_shares(a), query_position_shares(b)
    ma, mb = xa.mean(axis=0, keepdims=True), xb.mean(axis=0, keepdims=True)
    values_a = np.array([float(f(ma)[0]) for f in MEASURES.values()])
    values_b = np.array([float(f(mb)[0]) for f in MEASURES.values()])
    reps = _boot_diff(xa, xb, paired, n_boot, gen)
    split_a, split_b, split_reps = split_differences(a, b, paired=paired, gen=gen)
    n_queries = int(xa.shape[0]) if paired else int(min(a.n_queries, b.n_queries))
    rows = []
    for measure, va, vb, col in (
        *zip(MEASURES, values_a, values_b, reps.T, strict=True),
        *zip(SPLIT_MEASURES, split_a, split_b, split_reps.T, strict=True),
    ):
        rows.append({"a": name_a, "b": name_b, "measure": measure, "value_a": float(va),
                     "value_b": float(vb), **_difference(float(va - vb), col,
                                                         confidence_level),
                     "confidence_level": confidence_level, "paired": paired,
                     "n_queries": n_queries, "_reps": col})
    return rows


def _difference(d: float, reps: npt.NDArray[np.float64],
                confidence_level: float) -> dict[str, float]:
    """The difference, its percentile interval and the centred bootstrap test of "no
    difference" (two-sided, +1 correction); ``nan`` throughout when undefined."""
    if not math.isfinite(d) or not np.all(np.isfinite(reps)):
        return {"difference": math.nan, "ci_low": math.nan, "ci_high": math.nan,
                "pvalue": math.nan}
    ci = percentile_interval(reps, confidence_level=confidence_level)
    extreme = int(np.sum(np.abs(reps - d) >= abs(d) - 1e-12))
    return {"difference": d, "ci_low": ci.low, "ci_high": ci.high,
            "pvalue": (1 + extreme) / (reps.size + 1)}


def compare_systems(
    systems: Mapping[str, Evaluations],
    *,
    adjust: str = "holm",
    n_boot: int = DEFAULT_N_BOOT,
    confidence_level: float = 0.95,
    rng: np.random.Generator | int | None = None,
) -> list[Comparison]:
    r"""Compare the positional bias of every pair of systems.

    For each pair (a, b) and measure :math:`m` (``pb_plugin``: plug-in
    :math:`PB = \frac12\sum_p |\bar q_p - 1/k|`; ``first``: :math:`\bar q_1 - 1/k`, with
    :math:`\bar q` the mean over queries of the per-query position shares; ``spb``,
    ``soft``, ``positional_share``: the relevance-set split of
    :func:`~recaudit.positional.strong_soft_bias`, refitted on 200 resamples, ``nan``
    rows when a system's split is not identified), the
    difference :math:`\Delta = m(a) - m(b)`, a percentile bootstrap CI and the p-value

    .. math:: p = \frac{1 + \#\{b : |\Delta^*_b - \Delta| \ge |\Delta|\}}{B + 1}.

    Paired (same (query_id, order) keys): queries are resampled jointly for both
    systems, so the query-to-query variation cancels. Otherwise each system is
    resampled on its own (``paired=False``). p-values are adjusted across the pairs of
    each measure with ``adjust`` (``holm``, ``bh`` or ``none``), and each row also
    carries the interval at the family's adjusted level (:func:`adjusted_level`:
    Bonferroni-simultaneous with ``holm``, false-coverage-rate with ``bh``), an
    expanded percentile interval (:func:`recaudit._stats.expanded_level`: the plain
    percentile interval covered 0.92 jointly at Holm's level), as ``ci_low_adjusted``
    / ``ci_high_adjusted``: the intervals a forest plot of the family shows.

    References
    ----------
    Efron, B. & Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 16
    (bootstrap hypothesis tests).
    Davison, A. C. & Hinkley, D. V. (1997). Bootstrap Methods and their Application, 4.4.
    """
    n_boot, confidence_level = check_bootstrap_args(n_boot, confidence_level)
    check_adjust(adjust)
    if len(systems) < 2:
        raise InputError(MSG_TWO.format(n=len(systems)))
    pairs = [(str(a), systems[a], str(b), systems[b]) for a, b in combinations(systems, 2)]
    return [Comparison(**r) for r in compare_family(
        pairs, adjust=adjust, n_boot=n_boot, confidence_level=confidence_level,
        gen=as_generator(rng))]


#: One pair of a family: (name a, evaluations a, name b, evaluations b).
Pair = tuple[str, Evaluations, str, Evaluations]


def compare_family(pairs: Sequence[Pair], *, adjust: str, n_boot: int,
                   confidence_level: float, gen: np.random.Generator
                   ) -> list[dict[str, Any]]:
    """The rows (:class:`Comparison` fields) of a family of pairs, in order, the
    p-values and intervals of each measure adjusted across the whole family."""
    rows: list[dict[str, Any]] = []
    for name_a, a, name_b, b in pairs:
        rows += _compare_pair(name_a, a, name_b, b, n_boot=n_boot,
                              confidence_level=confidence_level, gen=gen)
    for measure in (*MEASURES, *SPLIT_MEASURES):
        idx = [i for i, r in enumerate(rows) if r["measure"] == measure]
        adjusted = adjust_pvalues([rows[i]["pvalue"] for i in idx], adjust)
        level = adjusted_level(adjusted, adjust, confidence_level)
        for i, p in zip(idx, adjusted, strict=True):
            reps = rows[i].pop("_reps")
            ci = percentile_interval(reps, confidence_level=expanded_level(
                level, rows[i]["n_queries"])) \
                if math.isfinite(rows[i]["difference"]) else None
            rows[i].update(pvalue_adjusted=float(p), adjust=adjust, adjusted_level=level,
                           ci_low_adjusted=math.nan if ci is None else ci.low,
                           ci_high_adjusted=math.nan if ci is None else ci.high)
    return rows
