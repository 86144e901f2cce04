"""Positional bias of top-1 LLM recommenders: POB-ICM, POB-UNBP, PS, PB, sPB
(and of top-N rankings: :func:`topn_bias`).

Read an evaluations table (:func:`evaluations_from_table`), then run everything with
:func:`analyze` (one group) or :func:`analyze_groups` (``by`` columns, Holm across
groups), or call each statistic. :func:`power_study` runs the simulation study.
See docs/positional-statistics.md for every formula, its reference and our choices.
"""

from ._analyze import GroupedAnalysis, PositionalAnalysis, analyze, analyze_groups
from ._distribution import position_distribution, selection_rate_matrix
from ._evaluations import Evaluations, evaluations_from_table, group_table, read_table
from ._icm import PobIcmResult, contingency_table, pob_icm
from ._metrics import (
    StrongBiasResult,
    permutation_sensitivity,
    positional_bias,
    strong_positional_bias,
)
from ._simulation import PowerRow, PowerStudy, power_study, simulate_evaluations
from ._topn import (
    RankingEvaluations,
    TopNResult,
    draw_ranking,
    rankings_from_table,
    simulate_rankings,
    spearman_position_rank,
    topn_bias,
)
from ._unbp import PobUnbpResult, pob_unbp, query_position_shares

__all__ = [
    "Evaluations",
    "GroupedAnalysis",
    "PobIcmResult",
    "PobUnbpResult",
    "PositionalAnalysis",
    "PowerRow",
    "PowerStudy",
    "RankingEvaluations",
    "StrongBiasResult",
    "TopNResult",
    "analyze",
    "analyze_groups",
    "contingency_table",
    "draw_ranking",
    "evaluations_from_table",
    "group_table",
    "permutation_sensitivity",
    "pob_icm",
    "pob_unbp",
    "position_distribution",
    "positional_bias",
    "power_study",
    "query_position_shares",
    "rankings_from_table",
    "read_table",
    "selection_rate_matrix",
    "simulate_evaluations",
    "simulate_rankings",
    "spearman_position_rank",
    "strong_positional_bias",
    "topn_bias",
]
