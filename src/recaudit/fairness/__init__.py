"""The inter-bias study: model-agnostic top-N metrics, group fairness and inter-bias.

Per-user Precision/Recall/Hit/MRR/NDCG (:func:`ranking_metrics`,
:func:`per_user_metrics`), coverage, popularity and exposure figures
(:func:`item_coverage`, :func:`average_popularity`, :func:`exposure_gini`,
:func:`popularity_profile`), RD/NRD/IB (:func:`relative_difference`,
:func:`normalized_relative_difference`, :func:`inter_bias`) and the whole evaluation
with user-level uncertainty (:func:`evaluate`).
"""

from __future__ import annotations

from ._evaluate import FairnessEvaluation, GroupMetrics, InterBias, evaluate
from ._exposure import (
    PopularityProfile,
    average_popularity,
    exposure_gini,
    gini_index,
    item_coverage,
    popularity_profile,
)
from ._interbias import (
    UNDEFINED_RD_REASON,
    inter_bias,
    normalized_relative_difference,
    relative_difference,
)
from ._metrics import METRICS, per_user_metrics, ranking_metrics

__all__ = [
    "METRICS",
    "UNDEFINED_RD_REASON",
    "FairnessEvaluation",
    "GroupMetrics",
    "InterBias",
    "PopularityProfile",
    "average_popularity",
    "evaluate",
    "exposure_gini",
    "gini_index",
    "inter_bias",
    "item_coverage",
    "normalized_relative_difference",
    "per_user_metrics",
    "popularity_profile",
    "ranking_metrics",
    "relative_difference",
]
