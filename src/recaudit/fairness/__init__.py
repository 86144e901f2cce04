"""recaudit.fairness -- the inter-bias study.

Data and models (this part): loaders for RecBole atomic files, MovieLens 100K/1M,
Last.fm 1K/360K and generic tables; implicit feedback, seeded sampling and per-user
splits; protected groups; long-tail statistics; the study runner. The nine
CF/GNN models are in :mod:`recaudit.fairness.models` (RecBole is imported only
when a model is trained).
"""

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
from ._loaders import (
    FORMATS,
    load_dataset,
    load_lastfm_1k,
    load_lastfm_360k,
    load_movielens,
    load_recbole_atomic,
    load_table,
)
from ._study import (
    DatasetConfig,
    ModelConfig,
    StudyConfig,
    StudyResult,
    default_config_path,
    load_config,
    parse_config,
    run_study,
)

__all__ = [
    # data
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
    # study runner
    "DatasetConfig",
    "ModelConfig",
    "StudyConfig",
    "StudyResult",
    "default_config_path",
    "load_config",
    "parse_config",
    "run_study",
]
