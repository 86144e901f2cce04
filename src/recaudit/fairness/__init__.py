"""The inter-bias statistics: per-group top-N metrics, coverage, popularity, RD/NRD/IB.

Data: implicit feedback, seeded sampling and per-user splits (:func:`split_per_user`),
protected groups, long-tail statistics (:func:`long_tail_stats`) over one
:class:`InteractionData`.

Metrics: per-user Precision/Recall/Hit/MRR/NDCG (:func:`ranking_metrics`,
:func:`per_user_metrics`), coverage, popularity and exposure figures
(:func:`item_coverage`, :func:`average_popularity`, :func:`exposure_gini`,
:func:`popularity_profile`), RD/NRD/IB (:func:`relative_difference`,
:func:`normalized_relative_difference`, :func:`inter_bias`) and the whole evaluation
with user-level uncertainty (:func:`evaluate`, its options :class:`EvaluateOptions`,
its result :class:`FairnessEvaluation` with ``to_dict``/``from_dict``).

Popularity bias (:mod:`recaudit.fairness.popularity`, its names re-exported here): ARP,
APLT, ACLT, PopRSP, PopREO and novelty (:func:`popularity_metrics`,
:func:`per_user_popularity`, the head :func:`head_items`; inside :func:`evaluate` as
:class:`PopularityBias` when ``train`` has ``user_id``) and user popularity groups
(:func:`user_popularity_groups`, :func:`add_popularity_groups`;
``evaluate(..., attribute="popularity_group", train=train)`` adds the column itself,
made as ``EvaluateOptions.popularity_groups`` says: :class:`PopularityGrouping`,
:func:`parse_popularity_groups`).

Evaluation protocols: full ranking (the default) or RecBole's sampled ranking
(``"uni100"``, ``"pop100"``: :func:`parse_protocol`, :class:`Protocol`), whose
candidates :func:`sample_candidates` draws; ``evaluate(..., candidates=...,
protocol="uni100")``.

Two more packages sit beside these statistics: :mod:`recaudit.fairness.simulation`
(known-truth generators that validate them) and :mod:`recaudit.fairness.study` (the
study runner: config, loaders, RecBole models, ``results.json``), which nothing here
imports.
"""

from __future__ import annotations

from ._compare import STAT_TESTS, compare_models
from ._compare_results import FairnessComparison, MetricComparison
from ._dataset import (
    ITEM_ID,
    USER_ID,
    InteractionData,
    LongTailStats,
    ProtectedGroups,
    Split,
    long_tail_stats,
    protected_groups,
    sample_interactions,
    split_per_user,
    to_implicit,
)
from ._evaluate import evaluate
from ._exposure import (
    PopularityProfile,
    average_popularity,
    exposure_gini,
    gini_index,
    item_coverage,
    popularity_profile,
)
from ._from_json import FAIRNESS_CMD, METRIC_ORDER
from ._interbias import (
    UNDEFINED_RD_REASON,
    inter_bias,
    normalized_relative_difference,
    relative_difference,
)
from ._metrics import METRICS, per_user_metrics, ranking_metrics
from ._options import EvaluateOptions
from ._protocol import FULL, Protocol, parse_protocol, resolve_protocol, sample_candidates
from ._results import FairnessEvaluation, GroupMetrics, InterBias
from .popularity import (
    POPULARITY_METRICS,
    PopularityBias,
    PopularityCounts,
    PopularityGrouping,
    PopularityPerUser,
    add_popularity_groups,
    head_items,
    parse_popularity_groups,
    per_user_popularity,
    popularity_metrics,
    popularity_parity,
    user_popularity_groups,
)

__all__ = [
    # data (_dataset)
    "ITEM_ID",
    "USER_ID",
    "InteractionData",
    "LongTailStats",
    "ProtectedGroups",
    "Split",
    "long_tail_stats",
    "protected_groups",
    "sample_interactions",
    "split_per_user",
    "to_implicit",
    # metrics (_metrics, _exposure, _interbias, _evaluate, _options, _results)
    "FAIRNESS_CMD",
    "METRICS",
    "METRIC_ORDER",
    "UNDEFINED_RD_REASON",
    "EvaluateOptions",
    "FairnessEvaluation",
    "GroupMetrics",
    "InterBias",
    "PopularityProfile",
    "average_popularity",
    "evaluate",
    # comparing models (_compare, _compare_results)
    "STAT_TESTS",
    "FairnessComparison",
    "MetricComparison",
    "compare_models",
    # evaluation protocols (_protocol)
    "FULL",
    "Protocol",
    "parse_protocol",
    "resolve_protocol",
    "sample_candidates",
    "exposure_gini",
    "gini_index",
    "inter_bias",
    "item_coverage",
    "normalized_relative_difference",
    "per_user_metrics",
    "popularity_profile",
    "ranking_metrics",
    "relative_difference",
    # popularity bias and popularity groups (popularity)
    "POPULARITY_METRICS",
    "PopularityBias",
    "PopularityCounts",
    "PopularityGrouping",
    "PopularityPerUser",
    "add_popularity_groups",
    "head_items",
    "per_user_popularity",
    "popularity_metrics",
    "parse_popularity_groups",
    "popularity_parity",
    "user_popularity_groups",
]
