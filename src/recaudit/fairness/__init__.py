"""The inter-bias study: data, models, top-N metrics, group fairness and inter-bias.

Data and the study runner: loaders (RecBole atomic files, MovieLens 100K/1M,
Last.fm 1K/360K, generic tables), implicit feedback, seeded sampling and per-user
splits (:func:`split_per_user`), protected groups, long-tail statistics
(:func:`long_tail_stats`) and the resumable runner (:func:`run_study`). The nine
CF/GNN models and the baselines are in :mod:`recaudit.fairness.models` (RecBole is
imported only when a model is trained).

Metrics: per-user Precision/Recall/Hit/MRR/NDCG (:func:`ranking_metrics`,
:func:`per_user_metrics`), coverage, popularity and exposure figures
(:func:`item_coverage`, :func:`average_popularity`, :func:`exposure_gini`,
:func:`popularity_profile`), RD/NRD/IB (:func:`relative_difference`,
:func:`normalized_relative_difference`, :func:`inter_bias`) and the whole evaluation
with user-level uncertainty (:func:`evaluate`, its options :class:`EvaluateOptions`,
its result :class:`FairnessEvaluation` with ``to_dict``/``from_dict``).

Popularity bias: ARP, APLT, ACLT, PopRSP, PopREO and novelty
(:func:`popularity_metrics`, :func:`per_user_popularity`, the head
:func:`head_items`; inside :func:`evaluate` as :class:`PopularityBias` when ``train``
has ``user_id``) and user popularity groups (:func:`user_popularity_groups`,
:func:`add_popularity_groups`; ``evaluate(..., attribute="popularity_group",
train=train)`` adds the column itself, made as ``EvaluateOptions.popularity_groups``
says: :class:`PopularityGrouping`, :func:`parse_popularity_groups`).

Evaluation protocols: full ranking (the default) or RecBole's sampled ranking
(``"uni100"``, ``"pop100"``: :func:`parse_protocol`, :class:`Protocol`), whose
candidates :func:`sample_candidates` draws; ``evaluate(..., candidates=...,
protocol="uni100")`` and the study's ``[study] protocols``.
"""

from __future__ import annotations

from ._config import (
    DatasetConfig,
    ModelConfig,
    StudyConfig,
    default_config_path,
    load_config,
    parse_config,
)
from ._dataset import (
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
from ._interbias import (
    UNDEFINED_RD_REASON,
    inter_bias,
    normalized_relative_difference,
    relative_difference,
)
from ._loaders import (
    FORMATS,
    load_dataset,
    load_lastfm_1k,
    load_lastfm_360k,
    load_movielens,
    load_recbole_atomic,
    load_table,
)
from ._metrics import METRICS, per_user_metrics, ranking_metrics
from ._options import EvaluateOptions
from ._popularity import (
    POPULARITY_METRICS,
    PopularityCounts,
    PopularityPerUser,
    head_items,
    per_user_popularity,
    popularity_metrics,
    popularity_parity,
)
from ._protocol import FULL, Protocol, parse_protocol, sample_candidates
from ._results import FairnessEvaluation, GroupMetrics, InterBias, PopularityBias
from ._study import run_study
from ._study_results import DatasetResult, ModelResult, StudyResult
from ._user_groups import (
    PopularityGrouping,
    add_popularity_groups,
    parse_popularity_groups,
    user_popularity_groups,
)

__all__ = [
    # data (_dataset, _loaders)
    "FORMATS",
    "InteractionData",
    "LongTailStats",
    "ProtectedGroups",
    "Split",
    "load_dataset",
    "load_lastfm_1k",
    "load_lastfm_360k",
    "load_movielens",
    "load_recbole_atomic",
    "load_table",
    "long_tail_stats",
    "protected_groups",
    "sample_interactions",
    "split_per_user",
    "to_implicit",
    # study runner (_study, _study_results)
    "DatasetConfig",
    "DatasetResult",
    "ModelConfig",
    "ModelResult",
    "StudyConfig",
    "StudyResult",
    "default_config_path",
    "load_config",
    "parse_config",
    "run_study",
    # metrics (_metrics, _exposure, _interbias, _evaluate, _options, _results)
    "METRICS",
    "UNDEFINED_RD_REASON",
    "EvaluateOptions",
    "FairnessEvaluation",
    "GroupMetrics",
    "InterBias",
    "PopularityProfile",
    "average_popularity",
    "evaluate",
    # evaluation protocols (_protocol)
    "FULL",
    "Protocol",
    "parse_protocol",
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
    # popularity bias and popularity groups (_popularity, _user_groups)
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
