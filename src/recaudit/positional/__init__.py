"""Positional bias of top-1 LLM recommenders: POB-ICM, POB-UNBP, PS, PB, sPB and soft bias
(and of top-N rankings: :func:`topn_bias`).

Read an evaluations table (:func:`evaluations_from_table`), then run everything with
:func:`analyze` (one group) or :func:`analyze_groups` (``by`` columns, Holm across
groups), or call each statistic. :func:`power_study` runs the simulation study.
:func:`analyze_exact` computes the statistics from choice-probability vectors (logprob
mode), :func:`analyze_exact_groups` per group with Holm;
:func:`sequential_uniformity_test` is the anytime-valid test of sequential audits
(docs/exact-and-sequential.md); :func:`plan_audit` sizes and prices an audit before
its first call (docs/planning.md).
See docs/positional-statistics.md for every formula, its reference and our choices.
"""

from ._analyze import (
    IDENTITY_ORDER,
    GroupedAnalysis,
    PositionalAnalysis,
    analyze,
    analyze_groups,
)
from ._analyze_exact import GroupedExactAnalysis, analyze_exact_groups, read_exact_table
from ._bootstrap import bootstrap_ci
from ._compare import Comparison, compare_systems
from ._compare_cells import CellComparison, RunComparisons, compare_cells
from ._crossfit import PositionalBiasResult, positional_bias, positional_bias_from_shares
from ._discards import DiscardCheck, discard_check
from ._distribution import position_distribution, selection_rate_matrix
from ._evaluations import Evaluations, evaluations_from_table, group_table, read_table
from ._exact import (
    ExactAnalysis,
    ExactEvaluations,
    analyze_exact,
    choice_probs_vector,
    exact_evaluations_from_table,
)
from ._icm import PobIcmResult, contingency_table, pob_icm
from ._metrics import (
    SPB_REPEATS,
    StrongBiasResult,
    permutation_sensitivity,
    plugin_positional_bias,
    relevance_sets,
    strong_positional_bias,
)
from ._options import AnalysisOptions
from ._planning import CallCost, Effect
from ._planning_designs import AuditPlan, DesignPlan, effect_from_evaluations, plan_audit
from ._position_by_class import ClassPositionLift, position_lift_by_class
from ._sequential import (
    DEFAULT_SEQUENTIAL_METHOD,
    SEQUENTIAL_METHODS,
    SequentialResult,
    position_confidence_sequences,
    sequential_uniformity_test,
)
from ._sequential_exact import EXACT_SEQUENTIAL_METHODS, sequential_exact_test
from ._simulation import PowerRow, PowerStudy, power_study, simulate_evaluations
from ._strong import StrongSoftResult, strong_soft_bias
from ._topn import (
    RankingEvaluations,
    TopNResult,
    draw_ranking,
    kendall_position_rank,
    rankings_from_table,
    simulate_rankings,
    spearman_position_rank,
    top1_table,
    topn_bias,
)
from ._topn_groups import RankingGroup, TopNGroups, has_rankings, topn_groups
from ._unbp import PobUnbpResult, pob_unbp, query_position_shares

# isort: split
# -- the study's counterfactual analyses (positional-study) --------------------------
from ._counterfactual import (
    CompleteCase,
    DispersionResult,
    InstanceSpb,
    IoUResult,
    WilcoxonResult,
    complete_case,
    dispersion_regression,
    hodges_lehmann,
    instance_spb,
    paired_wilcoxon,
    relevance_iou,
    score_dispersion,
    set_iou,
)
from ._study import analyze_study, analyze_study_folder, run_seed
from ._study_file import (
    STUDY_COLUMNS,
    PositionalStudyResult,
    StudyComparison,
    StudyDispersion,
    StudyFile,
    StudyRow,
    StudySettings,
    StudySkip,
)

__all__ = [
    "DEFAULT_SEQUENTIAL_METHOD",
    "IDENTITY_ORDER",
    "EXACT_SEQUENTIAL_METHODS",
    "SEQUENTIAL_METHODS",
    "SPB_REPEATS",
    "AnalysisOptions",
    "AuditPlan",
    "CallCost",
    "ClassPositionLift",
    "DesignPlan",
    "DiscardCheck",
    "Effect",
    "Evaluations",
    "ExactAnalysis",
    "ExactEvaluations",
    "GroupedAnalysis",
    "GroupedExactAnalysis",
    "PobIcmResult",
    "PobUnbpResult",
    "PositionalAnalysis",
    "PositionalBiasResult",
    "PowerRow",
    "PowerStudy",
    "SequentialResult",
    "RankingEvaluations",
    "StrongBiasResult",
    "StrongSoftResult",
    "CellComparison",
    "Comparison",
    "RankingGroup",
    "RunComparisons",
    "TopNGroups",
    "TopNResult",
    "analyze",
    "analyze_exact",
    "analyze_exact_groups",
    "analyze_groups",
    "bootstrap_ci",
    "choice_probs_vector",
    "compare_cells",
    "compare_systems",
    "contingency_table",
    "discard_check",
    "draw_ranking",
    "effect_from_evaluations",
    "evaluations_from_table",
    "exact_evaluations_from_table",
    "group_table",
    "kendall_position_rank",
    "permutation_sensitivity",
    "plan_audit",
    "position_lift_by_class",
    "pob_icm",
    "plugin_positional_bias",
    "pob_unbp",
    "position_confidence_sequences",
    "position_distribution",
    "positional_bias",
    "positional_bias_from_shares",
    "power_study",
    "query_position_shares",
    "rankings_from_table",
    "read_exact_table",
    "relevance_sets",
    "read_table",
    "selection_rate_matrix",
    "sequential_exact_test",
    "sequential_uniformity_test",
    "simulate_evaluations",
    "simulate_rankings",
    "spearman_position_rank",
    "has_rankings",
    "top1_table",
    "topn_groups",
    "strong_positional_bias",
    "strong_soft_bias",
    # positional-study
    "STUDY_COLUMNS",
    "CompleteCase",
    "DispersionResult",
    "InstanceSpb",
    "IoUResult",
    "PositionalStudyResult",
    "StudyComparison",
    "StudyDispersion",
    "StudyFile",
    "StudyRow",
    "StudySettings",
    "StudySkip",
    "WilcoxonResult",
    "analyze_study",
    "analyze_study_folder",
    "complete_case",
    "dispersion_regression",
    "hodges_lehmann",
    "instance_spb",
    "paired_wilcoxon",
    "relevance_iou",
    "run_seed",
    "score_dispersion",
    "set_iou",
    "topn_bias",
]
