"""One analysis group -> :class:`PositionalAnalysis`; many groups -> Holm across them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypeAlias, TypeVar

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._limits import check_analysis_sizes
from .._stats import ConfidenceInterval, Estimate, as_generator, holm
from ..exceptions import InputError
from ._analysis_json import STATISTICS, Coverage, analysis_fields, holm_column
from ._crossfit import PositionalBiasResult, crossfit_shares, positional_bias_crossfit
from ._discards import DiscardCheck, discard_check
from ._distribution import position_distribution, selection_rate_matrix
from ._evaluations import (
    GROUP_COLUMNS,
    Evaluations,
    evaluations_from_table,
    group_table,
    read_table,
)
from ._icm import PobIcmResult, pob_icm
from ._metrics import (
    StrongBiasResult,
    permutation_sensitivity,
    strong_positional_bias,
)
from ._options import AnalysisOptions
from ._strong import StrongSoftResult, strong_soft_split
from ._unbp import MSG_TWO_QUERIES, PobUnbpResult, pob_unbp, query_position_shares

__all__ = ["Coverage", "GroupedAnalysis", "PositionalAnalysis", "analyze", "analyze_groups"]

MSG_IN_GROUP = "group {group}: {error}"
MSG_BY_EMPTY = "`by` must name at least one column (e.g. {choices})"
REASON_FEW_EVALUATIONS = "no query has >= 2 valid evaluations ({what} needs >= 2 per query)"
REASON_IDENTITY_TESTS = (
    "not applicable to condition '{condition}' (each query shown in one fixed order, so "
    "a position is a retrieval rank)"
)
MSG_CONDITION_MIXED = (
    "the group{group} pools condition '{condition}' evaluations (each query shown in one "
    "fixed order: positions there are retrieval ranks) with {others}; analyse each "
    "condition apart (--by ...,condition)"
)
#: Conditions in the identity order (a position is a retrieval rank) and the permuted
#: conditions whose sPB threshold they borrow, in order of preference.
IDENTITY_ORDER = ("decoding", "labels")
PERMUTED_ORDER = ("permutation", "labels_permutation")
REASON_NO_P_HAT = (
    "identity-order condition without a permuted cell (permutation or "
    "labels_permutation) with sPB at the same {where}: the 'auto' relevance threshold is "
    "undefined (pass a fixed tau, e.g. --tau 0.8)"
)
REASON_ONE_ORDER = (
    "every query was evaluated in one order (PS measures how often reordering changes "
    "the selection)"
)
REASON_IDENTITY_SPB = (
    "not applicable to an identity-order condition ({condition}): a position is a "
    "retrieval rank there, so position and relevance cannot be separated (spb_paper "
    "gives the paper's estimator, the noise floor)"
)
#: Fewest queries for a query-bootstrap CI: with fewer, an interval is not reported
#: (null, with REASON_FEW_QUERIES) rather than a degenerate one.
MIN_QUERIES_CI = 5
REASON_FEW_QUERIES = "{n} quer{ies} with a valid evaluation; a confidence interval needs >= {m}"
#: Statistics computed only on queries with >= 2 valid evaluations.
NEEDS_TWO = ("ps", "ps_modal", "spb_paper")

Source: TypeAlias = Evaluations | pd.DataFrame | str | Path


@dataclass(frozen=True, eq=False)
class PositionalAnalysis:
    """Every positional statistic of one analysis group.

    A statistic that no query of the group can support (PS and sPB need >= 2 valid
    evaluations per query, POB-UNBP >= 2 queries; POB-ICM and POB-UNBP do not apply
    to ``condition == "decoding"``) is ``None``; ``coverage[name]`` gives the number
    of queries each statistic used and the reason for a missing one.
    ``to_dict()`` gives the JSON object of ``recaudit positional analyze --json``.
    """

    k: int
    n_queries: int
    n_evaluations: int
    n_discarded: int
    n_queries_all_discarded: int
    n_queries_excluded_ps: int
    alpha: float
    epsilon: float
    pob_icm: PobIcmResult | None
    pob_unbp: PobUnbpResult | None
    ps: Estimate | None
    ps_modal: Estimate | None
    pb: PositionalBiasResult
    spb: StrongSoftResult | None
    spb_paper: StrongBiasResult | None
    position_distribution: tuple[Estimate, ...]
    selection_rate_matrix: npt.NDArray[np.float64] = field(repr=False)
    coverage: Mapping[str, Coverage] = field(default_factory=dict)
    group: dict[str, Any] = field(default_factory=dict)
    tau: float | Literal["auto"] = "auto"
    spb_threshold_from: dict[str, Any] | None = None
    discard_check: DiscardCheck | None = None

    @property
    def pob_icm_pvalue(self) -> float:
        """The POB-ICM p-value (``nan`` when the test was not run)."""
        return np.nan if self.pob_icm is None else self.pob_icm.pvalue

    @property
    def pob_unbp_pvalue(self) -> float:
        """The POB-UNBP p-value (``nan`` when the test was not run)."""
        return np.nan if self.pob_unbp is None else self.pob_unbp.pvalue

    @property
    def rejects(self) -> bool:
        """True when POB-ICM (p <= alpha) or POB-UNBP (L > eps) rejects."""
        return bool(
            self.pob_icm_pvalue <= self.alpha
            or (self.pob_unbp is not None and self.pob_unbp.reject)
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of the CLI (rates and shares are fractions in [0, 1]).

        Every statistic object carries ``n_queries`` (queries it used) and ``reason``
        (``null``, or why its values are ``null``).
        """
        icm, unbp = self.pob_icm, self.pob_unbp
        stats: dict[str, dict[str, Any]] = {
            "pob_icm": {
                "statistic": None if icm is None else icm.statistic,
                "pvalue": None if icm is None else icm.pvalue,
                "pvalue_asymptotic": None if icm is None else icm.pvalue_asymptotic,
                "df": None if icm is None else icm.df,
                "n_rows": None if icm is None else icm.n_rows,
                "n_columns": None if icm is None else icm.n_columns,
                "n_resamples": None if icm is None else icm.n_resamples,
                "n_in_repeated_columns": None if icm is None else icm.n_in_repeated_columns,
                "caveat": None if icm is None else icm.caveat,
                "reject": None if icm is None else icm.pvalue <= self.alpha,
            },
            "pob_unbp": {
                "L": None if unbp is None else unbp.L,
                "L_under": None if unbp is None else unbp.L_under,
                "L_over": None if unbp is None else unbp.L_over,
                "epsilon": self.epsilon,
                "pvalue": None if unbp is None else unbp.pvalue,
                "reject": None if unbp is None else unbp.reject,
                "variance": None if unbp is None else unbp.variance,
            },
            "ps": _estimate_dict(self.ps),
            "ps_modal": _estimate_dict(self.ps_modal),
            "pb": self.pb.to_dict(),
            **_split_dicts(self.spb),
            "spb_paper": {
                **(
                    self.spb_paper.to_dict()
                    if self.spb_paper is not None
                    else {**_estimate_dict(None), "tau": None, "p_hat": None,
                          "n_folds": None, "n_repeats": None}
                ),
                "threshold_from": self.spb_threshold_from,
            },
        }
        for name, obj in stats.items():
            cov = self.coverage.get(_COVERAGE_OF.get(name, name), Coverage(self.n_queries))
            obj["n_queries"] = cov.n_queries
            obj["reason"] = cov.reason
            if cov.reason is None and self.n_queries < MIN_QUERIES_CI and "ci_low" in obj:
                obj["ci_low"] = obj["ci_high"] = None
                obj["ci_reason"] = REASON_FEW_QUERIES.format(
                    n=self.n_queries, ies="y" if self.n_queries == 1 else "ies",
                    m=MIN_QUERIES_CI)
        return {
            **self.group,
            "k": self.k,
            "n_queries": self.n_queries,
            "n_evaluations": self.n_evaluations,
            "n_discarded": self.n_discarded,
            "n_queries_all_discarded": self.n_queries_all_discarded,
            "n_queries_excluded_ps": self.n_queries_excluded_ps,
            "alpha": self.alpha,
            "tau": self.tau,
            **stats,
            "position_distribution": [e.value for e in self.position_distribution],
            "position_distribution_ci": [[e.ci.low, e.ci.high] for e in self.position_distribution],
            "selection_rate_matrix": self.selection_rate_matrix.tolist(),
            "discard_check": None if self.discard_check is None
            else self.discard_check.to_dict(),
        }

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any], *, confidence_level: float = 0.95
                  ) -> PositionalAnalysis:
        """Read :meth:`to_dict`'s JSON (one object of ``analyze --json``) back.

        ``from_dict(a.to_dict()).to_dict() == a.to_dict()``. A statistic whose object
        has a ``reason`` reads back as ``None``; the JSON does not hold the
        intervals' level (``confidence_level``) and method, POB-ICM's null
        distribution or POB-UNBP's one-sided bounds (empty). Holm's ``pvalue_holm``
        keys (of :meth:`GroupedAnalysis.to_list`) are ignored here.
        """
        return cls(**analysis_fields(obj, confidence_level))


@dataclass(frozen=True, eq=False)
class GroupedAnalysis:
    """Per-group analyses with Holm-adjusted p-values across the groups."""

    by: tuple[str, ...]
    groups: tuple[PositionalAnalysis, ...]
    pob_icm_pvalue_holm: npt.NDArray[np.float64] = field(repr=False)
    pob_unbp_pvalue_holm: npt.NDArray[np.float64] = field(repr=False)

    @property
    def rejects(self) -> bool:
        """True when any Holm-adjusted p-value is <= alpha (POB-ICM) or < alpha (UNBP)."""
        return any(
            self.pob_icm_pvalue_holm[i] <= g.alpha or self.pob_unbp_pvalue_holm[i] < g.alpha
            for i, g in enumerate(self.groups)
        )  # nan (test not run) compares False

    def to_list(self) -> list[dict[str, Any]]:
        """One JSON object per group, with ``pvalue_holm`` and ``reject_holm`` added."""
        out = []
        for i, g in enumerate(self.groups):
            d = g.to_dict()
            icm, unbp = self.pob_icm_pvalue_holm[i], self.pob_unbp_pvalue_holm[i]
            ok_icm, ok_unbp = g.pob_icm is not None, g.pob_unbp is not None
            d["pob_icm"]["pvalue_holm"] = float(icm) if ok_icm else None
            d["pob_icm"]["reject_holm"] = bool(icm <= g.alpha) if ok_icm else None
            d["pob_unbp"]["pvalue_holm"] = float(unbp) if ok_unbp else None
            d["pob_unbp"]["reject_holm"] = bool(unbp < g.alpha) if ok_unbp else None
            out.append(d)
        return out

    @classmethod
    def from_list(cls, rows: Sequence[Mapping[str, Any]], *, by: Sequence[str] | None = None,
                  confidence_level: float = 0.95) -> GroupedAnalysis:
        """Read :meth:`to_list`'s JSON back (Holm p-values from ``pvalue_holm``).

        ``by`` (not in the JSON) defaults to the group keys of the first row.
        """
        groups = tuple(PositionalAnalysis.from_dict(row, confidence_level=confidence_level)
                       for row in rows)
        if by is None:
            by = tuple(groups[0].group) if groups else ()
        return cls(by=tuple(by), groups=groups,
                   pob_icm_pvalue_holm=holm_column(rows, "pob_icm"),
                   pob_unbp_pvalue_holm=holm_column(rows, "pob_unbp"))


def analyze(
    data: Source,
    options: AnalysisOptions | None = None,
    *,
    rng: np.random.Generator | int | None = None,
) -> PositionalAnalysis:
    """Analyse one group: POB-ICM, POB-UNBP, PS, PB, sPB, distribution, S matrix.

    Each statistic uses the queries it can: PS (modal and pairwise) and sPB only the
    queries with >= 2 valid evaluations (``n_queries_excluded_ps`` counts the others),
    every other statistic all queries with a valid evaluation. A statistic no query
    supports is ``None`` with a reason in ``coverage`` -- never an exception.

    Parameters
    ----------
    data : Evaluations, pandas.DataFrame or path
        One analysis group (an evaluations table with one k); use
        :func:`analyze_groups` for ``--by``.
    options : AnalysisOptions, optional
        Levels, resample counts and sPB's threshold (default: ``AnalysisOptions()``).
    rng : numpy.random.Generator or int, optional
        One stream, split into independent child streams per statistic.
    """
    settings = AnalysisOptions() if options is None else options
    if isinstance(data, Evaluations):
        return _analyze_group(data, {}, settings, as_generator(rng).spawn(6))
    table = read_table(data)
    return _analyze_group(evaluations_from_table(table), {}, settings,
                          as_generator(rng).spawn(6), condition=table_condition(table))


def table_condition(table: pd.DataFrame, group: str = "") -> str | None:
    """The one ``condition`` of a table's rows (None: no such column, or several
    permuted conditions). Rows of an identity-order condition (``IDENTITY_ORDER``: one
    fixed order per query) pooled with any other condition are an :class:`InputError`:
    POB-ICM, POB-UNBP and PB would read their retrieval ranks as positions."""
    if "condition" not in table.columns:
        return None
    values = sorted({str(v) for v in table["condition"].dropna().unique()})
    if len(values) == 1:
        return values[0]
    identity = [v for v in values if v in IDENTITY_ORDER]
    if identity:
        others = ", ".join(repr(v) for v in values if v != identity[0])
        raise InputError(MSG_CONDITION_MIXED.format(
            group=f" {group}" if group else "", condition=identity[0], others=others))
    return None


def analyze_groups(
    data: pd.DataFrame | str | Path,
    options: AnalysisOptions | None = None,
    *,
    by: Sequence[str],
    rng: np.random.Generator | int | None = None,
    progress: Callable[[int], None] | None = None,
) -> GroupedAnalysis:
    """Analyse each group of ``by`` columns separately; Holm across groups.

    Holm's step-down adjustment (Holm 1979) is applied to the POB-ICM p-values of all
    groups, and separately to the POB-UNBP p-values. ``progress`` is called with 1
    after each group. In a group whose ``condition`` is ``"decoding"`` (identity order
    on every evaluation, the noise floor of sPB) POB-ICM and POB-UNBP are not
    applicable: they are ``None`` with a reason and left out of the Holm family.

    When ``by`` includes ``condition``, an identity-order group (``decoding``,
    ``labels``: a position is a retrieval rank, so its own PB measures relevance
    concentration, not position) gets its ``'auto'``-rule sPB with the :math:`\\hat p`
    of the permuted group (``permutation``, else ``labels_permutation``) with the same
    other keys, as ``recaudit positional study`` does; without one its sPB is ``None``
    with the reason (``spb_paper.threshold_from`` names the group used).
    """
    if not by:
        raise InputError(MSG_BY_EMPTY.format(choices=", ".join(GROUP_COLUMNS)))
    settings = AnalysisOptions() if options is None else options
    gen = as_generator(rng)
    parts: list[tuple[dict[str, Any], Evaluations]] = []
    conditions: list[str | None] = []
    for keys, part in group_table(read_table(data), list(by)):
        name = ", ".join(f"{k}={v}" for k, v in keys.items())
        conditions.append(table_condition(part, name))
        try:
            evals = evaluations_from_table(part)
        except InputError as exc:
            raise InputError(MSG_IN_GROUP.format(group=name, error=exc)) from exc
        parts.append((_plain(keys), evals))
    # one set of child streams per group, in table order, whatever order they run in
    streams = [gen.spawn(6) for _ in parts]
    borrow = "condition" in by and settings.tau == "auto"
    identity = [borrow and keys.get("condition") in IDENTITY_ORDER for keys, _ in parts]
    results: list[PositionalAnalysis | None] = [None] * len(parts)
    # permuted groups first: identity-order groups borrow their p-hat
    for i in sorted(range(len(parts)), key=lambda i: identity[i]):
        keys, evals = parts[i]
        ref: tuple[dict[str, Any], float] | None | str = None
        if identity[i]:
            ref = _reference_p_hat(keys, parts, results)
        results[i] = _analyze_group(evals, keys, settings, streams[i], ref,
                                    condition=conditions[i])
        if progress is not None:
            progress(1)
    done = [r for r in results if r is not None]
    return GroupedAnalysis(
        by=tuple(by),
        groups=tuple(done),
        pob_icm_pvalue_holm=holm([r.pob_icm_pvalue for r in done]),
        pob_unbp_pvalue_holm=holm([r.pob_unbp_pvalue for r in done]),
    )


def _reference_p_hat(
    keys: dict[str, Any],
    parts: Sequence[tuple[dict[str, Any], Evaluations]],
    results: Sequence[PositionalAnalysis | None],
) -> tuple[dict[str, Any], float] | str:
    """The permuted group's keys and p-hat for an identity-order group, or the reason."""
    others = {c: v for c, v in keys.items() if c != "condition"}
    for cond in PERMUTED_ORDER:
        for (k2, _), res in zip(parts, results, strict=True):
            if k2 == {**others, "condition": cond} and res is not None \
                    and res.spb_paper is not None and res.spb_paper.p_hat is not None:
                return k2, res.spb_paper.p_hat
    where = ", ".join(others) or "grouping"
    return REASON_NO_P_HAT.format(where=where)


def _analyze_group(
    evals: Evaluations,
    keys: dict[str, Any],
    settings: AnalysisOptions,
    streams: Sequence[np.random.Generator],
    reference: tuple[dict[str, Any], float] | str | None = None,
    condition: str | None = None,
) -> PositionalAnalysis:
    """One group; ``reference`` is the borrowed (keys, p-hat), a reason, or None (own);
    ``condition`` the group's rows' (:func:`table_condition`; a ``condition`` key
    among ``keys`` always equals it)."""
    check_analysis_sizes(n_resamples=settings.n_resamples, n_boot=settings.n_boot,
                         spb_repeats=settings.spb_repeats, n_evaluations=evals.item.size,
                         n_queries=evals.n_queries, k=evals.k)
    alpha, epsilon = settings.alpha, settings.epsilon
    n_boot, level = settings.n_boot, settings.confidence_level
    g_icm, g_ps, g_ps2, g_pb, g_spb, g_dist = streams
    two = evals.evaluations_per_query() >= 2
    sub = _subset(evals, two)
    n_two = int(two.sum())
    coverage = {name: Coverage(evals.n_queries) for name in STATISTICS}
    ps: Estimate | None = None
    ps_modal: Estimate | None = None
    spb_paper: StrongBiasResult | None = None
    threshold_from: dict[str, Any] | None = None
    if sub is None:
        for name, what in zip(NEEDS_TWO, ("pairwise PS", "PS", "sPB"), strict=True):
            coverage[name] = Coverage(0, REASON_FEW_EVALUATIONS.format(what=what))
    else:
        coverage.update({name: Coverage(n_two) for name in NEEDS_TWO})
        ps_modal = permutation_sensitivity(sub, rng=g_ps, n_boot=n_boot, confidence_level=level)
        ps, coverage["ps"] = _pairwise_ps(sub, g_ps2, n_boot, level)
        if isinstance(reference, str):
            coverage["spb_paper"] = Coverage(0, reference)
        else:
            p_hat = None
            if reference is not None:
                threshold_from, p_hat = reference
            spb_paper = strong_positional_bias(
                sub, tau=settings.tau, p_hat=p_hat, rng=g_spb, n_boot=n_boot,
                confidence_level=level, n_repeats=settings.spb_repeats,
            )
    dist = position_distribution(evals, rng=g_dist, n_boot=n_boot, confidence_level=level)
    fit = crossfit_shares(query_position_shares(evals), g_pb)
    pb = positional_bias_crossfit(evals, confidence_level=level, gen=g_pb, fit=fit)
    spb: StrongSoftResult | None = None
    icm: PobIcmResult | None = None
    unbp: PobUnbpResult | None = None
    if condition in IDENTITY_ORDER:  # a position is a retrieval rank: no split, no test
        coverage["spb"] = Coverage(0, REASON_IDENTITY_SPB.format(condition=condition))
        reason = REASON_IDENTITY_TESTS.format(condition=condition)
        coverage["pob_icm"] = coverage["pob_unbp"] = Coverage(0, reason)
    else:
        spb = strong_soft_split(evals, fit, confidence_level=level)
        icm = pob_icm(evals, n_resamples=settings.n_resamples, rng=g_icm)
        if evals.n_queries >= 2:
            unbp = pob_unbp(evals, alpha=alpha, epsilon=epsilon)
        else:
            coverage["pob_unbp"] = Coverage(0, MSG_TWO_QUERIES.format(n=evals.n_queries))
    if evals.n_queries < MIN_QUERIES_CI:
        ps, ps_modal, pb, spb, spb_paper, dist = _without_intervals(
            evals.n_queries, ps, ps_modal, pb, spb, spb_paper, dist)
    return PositionalAnalysis(
        k=evals.k,
        n_queries=evals.n_queries,
        n_evaluations=evals.n_evaluations,
        n_discarded=evals.n_discarded,
        n_queries_all_discarded=evals.n_queries_all_discarded,
        n_queries_excluded_ps=evals.n_queries - n_two,
        alpha=alpha,
        epsilon=epsilon,
        pob_icm=icm,
        pob_unbp=unbp,
        ps=ps,
        ps_modal=ps_modal,
        pb=pb,
        spb=spb,
        spb_paper=spb_paper,
        position_distribution=dist,
        selection_rate_matrix=selection_rate_matrix(evals),
        coverage=coverage,
        group=keys,
        tau=settings.tau,
        spb_threshold_from=threshold_from,
        discard_check=discard_check(evals),
    )


def _subset(evals: Evaluations, keep: npt.NDArray[np.bool_]) -> Evaluations | None:
    """The evaluations of the queries ``keep`` (query codes renumbered); None if none."""
    if not keep.any():
        return None
    if keep.all():
        return evals
    code = np.cumsum(keep) - 1
    rows = keep[evals.query]
    return replace(
        evals,
        query_ids=evals.query_ids[keep],
        query=code[evals.query[rows]].astype(np.int64),
        orders=evals.orders[rows],
        position=evals.position[rows],
        item=evals.item[rows],
        rows=evals.rows[rows],
    )


_E = TypeVar("_E", Estimate, PositionalBiasResult, StrongBiasResult)


def _no_ci(est: _E, reason: str) -> _E:
    return replace(est, ci=ConfidenceInterval(np.nan, np.nan, est.ci.confidence_level,
                                              f"not computed: {reason}"))


def _without_intervals(
    n_queries: int,
    ps: Estimate | None,
    ps_modal: Estimate | None,
    pb: PositionalBiasResult,
    spb: StrongSoftResult | None,
    spb_paper: StrongBiasResult | None,
    dist: tuple[Estimate, ...],
) -> tuple[Estimate | None, Estimate | None, PositionalBiasResult, StrongSoftResult | None,
           StrongBiasResult | None, tuple[Estimate, ...]]:
    """Every estimate with its interval replaced by an undefined one (too few queries:
    a bootstrap over 1-4 queries is degenerate, not a 95 % interval)."""
    reason = REASON_FEW_QUERIES.format(n=n_queries, ies="y" if n_queries == 1 else "ies",
                                       m=MIN_QUERIES_CI)
    if spb is not None:
        spb = replace(spb, strong=_no_ci(spb.strong, reason), soft=_no_ci(spb.soft, reason),
                      positional_share=_no_ci(spb.positional_share, reason))
    return (None if ps is None else _no_ci(ps, reason),
            None if ps_modal is None else _no_ci(ps_modal, reason),
            _no_ci(pb, reason), spb,
            None if spb_paper is None else _no_ci(spb_paper, reason),
            tuple(_no_ci(d, reason) for d in dist))


#: JSON objects whose coverage is that of another statistic.
_COVERAGE_OF = {"spb_soft": "spb", "positional_share": "spb"}


def _split_dicts(split: StrongSoftResult | None) -> dict[str, dict[str, Any]]:
    """``spb`` (strong, with the fit), ``spb_soft`` and ``positional_share`` objects."""
    if split is None:
        empty = {"method": None, "mean_set_size": None, "floor": None,
                 "favoured_positions": None, "note": None, "upper_if_spread": None}
        return {"spb": {**_estimate_dict(None), **empty}, "spb_soft": _estimate_dict(None),
                "positional_share": _estimate_dict(None)}
    fit = {"method": "empirical Bayes relevance-set model", "mean_set_size":
           split.mean_set_size, "floor": split.floor,
           "favoured_positions": list(split.favoured), "note": split.note,
           "upper_if_spread": split.upper_if_spread}
    return {"spb": {**split.strong.to_dict(), **fit},
            "spb_soft": split.soft.to_dict(),
            "positional_share": split.positional_share.to_dict()}


def _pairwise_ps(
    evals: Evaluations, gen: np.random.Generator, n_boot: int, level: float
) -> tuple[Estimate | None, Coverage]:
    """Pairwise PS over pairs of different orders, or None when no query has two."""
    try:
        est = permutation_sensitivity(evals, kind="pairwise", rng=gen, n_boot=n_boot,
                                      confidence_level=level)
    except InputError:
        return None, Coverage(0, REASON_ONE_ORDER)
    return est, Coverage(evals.n_queries)


def _estimate_dict(est: Estimate | None) -> dict[str, float | None]:
    if est is None:
        return {"value": None, "ci_low": None, "ci_high": None}
    return {**est.to_dict()}


def _plain(keys: dict[str, Any]) -> dict[str, Any]:
    """Group keys as JSON-friendly Python scalars (NaN keys become None)."""
    out: dict[str, Any] = {}
    for name, value in keys.items():
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, float) and np.isnan(value):
            value = None
        out[name] = value
    return out
