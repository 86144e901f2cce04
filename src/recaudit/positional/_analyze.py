"""One analysis group -> :class:`PositionalAnalysis`; many groups -> Holm across them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._stats import Estimate, as_generator, holm
from ..exceptions import InputError
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
    positional_bias,
    strong_positional_bias,
)
from ._unbp import PobUnbpResult, pob_unbp

__all__ = ["GroupedAnalysis", "PositionalAnalysis", "analyze", "analyze_groups"]

MSG_IN_GROUP = "group {group}: {error}"
MSG_BY_EMPTY = "`by` must name at least one column (e.g. {choices})"

Source: TypeAlias = Evaluations | pd.DataFrame | str | Path


@dataclass(frozen=True, eq=False)
class PositionalAnalysis:
    """Every positional statistic of one analysis group.

    ``to_dict()`` gives the JSON object of ``recaudit positional analyze --json``.
    """

    k: int
    n_queries: int
    n_evaluations: int
    n_discarded: int
    n_queries_all_discarded: int
    alpha: float
    epsilon: float
    pob_icm: PobIcmResult
    pob_unbp: PobUnbpResult
    ps: Estimate
    ps_pairwise: Estimate
    pb: Estimate
    spb: StrongBiasResult
    position_distribution: tuple[Estimate, ...]
    selection_rate_matrix: npt.NDArray[np.float64] = field(repr=False)
    group: dict[str, Any] = field(default_factory=dict)

    @property
    def rejects(self) -> bool:
        """True when POB-ICM (p <= alpha) or POB-UNBP (L > eps) rejects."""
        return bool(self.pob_icm.pvalue <= self.alpha or self.pob_unbp.reject)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of the CLI (rates and shares are fractions in [0, 1])."""
        return {
            **self.group,
            "k": self.k,
            "n_queries": self.n_queries,
            "n_evaluations": self.n_evaluations,
            "n_discarded": self.n_discarded,
            "n_queries_all_discarded": self.n_queries_all_discarded,
            "alpha": self.alpha,
            "pob_icm": {
                "statistic": self.pob_icm.statistic,
                "pvalue": self.pob_icm.pvalue,
                "pvalue_asymptotic": self.pob_icm.pvalue_asymptotic,
                "df": self.pob_icm.df,
                "n_columns": self.pob_icm.n_columns,
                "n_resamples": self.pob_icm.n_resamples,
                "reject": self.pob_icm.pvalue <= self.alpha,
            },
            "pob_unbp": {
                "L": self.pob_unbp.L,
                "L_under": self.pob_unbp.L_under,
                "L_over": self.pob_unbp.L_over,
                "epsilon": self.epsilon,
                "pvalue": self.pob_unbp.pvalue,
                "reject": self.pob_unbp.reject,
                "variance": self.pob_unbp.variance,
            },
            "ps": self.ps.to_dict(),
            "ps_pairwise": self.ps_pairwise.to_dict(),
            "pb": self.pb.to_dict(),
            "spb": self.spb.to_dict(),
            "position_distribution": [e.value for e in self.position_distribution],
            "position_distribution_ci": [[e.ci.low, e.ci.high] for e in self.position_distribution],
            "selection_rate_matrix": self.selection_rate_matrix.tolist(),
        }


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
        )

    def to_list(self) -> list[dict[str, Any]]:
        """One JSON object per group, with ``pvalue_holm`` and ``reject_holm`` added."""
        out = []
        for i, g in enumerate(self.groups):
            d = g.to_dict()
            d["pob_icm"]["pvalue_holm"] = float(self.pob_icm_pvalue_holm[i])
            d["pob_icm"]["reject_holm"] = bool(self.pob_icm_pvalue_holm[i] <= g.alpha)
            d["pob_unbp"]["pvalue_holm"] = float(self.pob_unbp_pvalue_holm[i])
            d["pob_unbp"]["reject_holm"] = bool(self.pob_unbp_pvalue_holm[i] < g.alpha)
            out.append(d)
        return out


def analyze(
    data: Source,
    *,
    alpha: float = 0.05,
    epsilon: float = 0.0,
    n_resamples: int = 9999,
    n_boot: int = 2000,
    confidence_level: float = 0.95,
    rng: np.random.Generator | int | None = None,
) -> PositionalAnalysis:
    """Analyse one group: POB-ICM, POB-UNBP, PS, PB, sPB, distribution, S matrix.

    Parameters
    ----------
    data : Evaluations, pandas.DataFrame or path
        One analysis group (an evaluations table with one k); use
        :func:`analyze_groups` for ``--by``.
    alpha : float
        Level of both tests.
    epsilon : float
        Tolerated TV drift of POB-UNBP.
    n_resamples, n_boot : int
        Within-query shuffles of POB-ICM; bootstrap resamples of the CIs.
    confidence_level : float
        Of the bootstrap CIs.
    rng : numpy.random.Generator or int, optional
        One stream, split into independent child streams per statistic.
    """
    evals = data if isinstance(data, Evaluations) else evaluations_from_table(data)
    return _analyze_group(
        evals, {}, alpha, epsilon, n_resamples, n_boot, confidence_level, as_generator(rng)
    )


def analyze_groups(
    data: pd.DataFrame | str | Path,
    *,
    by: Sequence[str],
    alpha: float = 0.05,
    epsilon: float = 0.0,
    n_resamples: int = 9999,
    n_boot: int = 2000,
    confidence_level: float = 0.95,
    rng: np.random.Generator | int | None = None,
    progress: Callable[[int], None] | None = None,
) -> GroupedAnalysis:
    """Analyse each group of ``by`` columns separately; Holm across groups.

    Holm's step-down adjustment (Holm 1979) is applied to the POB-ICM p-values of all
    groups, and separately to the POB-UNBP p-values. ``progress`` is called with 1
    after each group.
    """
    if not by:
        raise InputError(MSG_BY_EMPTY.format(choices=", ".join(GROUP_COLUMNS)))
    gen = as_generator(rng)
    results = []
    for keys, part in group_table(read_table(data), list(by)):
        try:
            evals = evaluations_from_table(part)
        except InputError as exc:
            name = ", ".join(f"{k}={v}" for k, v in keys.items())
            raise InputError(MSG_IN_GROUP.format(group=name, error=exc)) from exc
        results.append(
            _analyze_group(
                evals, _plain(keys), alpha, epsilon, n_resamples, n_boot, confidence_level, gen
            )
        )
        if progress is not None:
            progress(1)
    return GroupedAnalysis(
        by=tuple(by),
        groups=tuple(results),
        pob_icm_pvalue_holm=holm([r.pob_icm.pvalue for r in results]),
        pob_unbp_pvalue_holm=holm([r.pob_unbp.pvalue for r in results]),
    )


def _analyze_group(
    evals: Evaluations,
    keys: dict[str, Any],
    alpha: float,
    epsilon: float,
    n_resamples: int,
    n_boot: int,
    confidence_level: float,
    gen: np.random.Generator,
) -> PositionalAnalysis:
    unbp = pob_unbp(evals, alpha=alpha, epsilon=epsilon)
    g_icm, g_ps, g_ps2, g_pb, g_spb, g_dist = gen.spawn(6)
    return PositionalAnalysis(
        k=evals.k,
        n_queries=evals.n_queries,
        n_evaluations=evals.n_evaluations,
        n_discarded=evals.n_discarded,
        n_queries_all_discarded=evals.n_queries_all_discarded,
        alpha=unbp.alpha,
        epsilon=unbp.epsilon,
        pob_icm=pob_icm(evals, n_resamples=n_resamples, rng=g_icm),
        pob_unbp=unbp,
        ps=permutation_sensitivity(
            evals, rng=g_ps, n_boot=n_boot, confidence_level=confidence_level
        ),
        ps_pairwise=permutation_sensitivity(
            evals, kind="pairwise", rng=g_ps2, n_boot=n_boot, confidence_level=confidence_level
        ),
        pb=positional_bias(evals, rng=g_pb, n_boot=n_boot, confidence_level=confidence_level),
        spb=strong_positional_bias(
            evals, rng=g_spb, n_boot=n_boot, confidence_level=confidence_level
        ),
        position_distribution=position_distribution(
            evals, rng=g_dist, n_boot=n_boot, confidence_level=confidence_level
        ),
        selection_rate_matrix=selection_rate_matrix(evals),
        group=keys,
    )


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
