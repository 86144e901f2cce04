"""The inter-bias study runner: config, data loaders, models, the run and its results.

``recaudit fairness run CONFIG.toml`` calls :func:`run_fairness_study`: for every
dataset of the typed config (:func:`load_fairness_config`, :class:`FairnessStudyConfig`;
the packaged ML-100K config at :func:`default_config_path`) it loads the data
(:func:`load_dataset` and the format loaders), splits it, trains and tunes the RecBole
models of :mod:`.models` (locally or on Ray), ranks their top-N lists and evaluates
them with :func:`recaudit.fairness.evaluate`, into one resumable run folder whose
``results.json`` reads back as :class:`FairnessStudyResult`.

The statistics (:mod:`recaudit.fairness`, its ``popularity`` and ``simulation``
packages) never import this package; only the command line and the report do.
"""

from ._config import (
    DatasetConfig,
    FairnessStudyConfig,
    GridModel,
    default_config_path,
    load_fairness_config,
    parse_fairness_config,
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
from ._results import DatasetResult, FairnessStudyResult, ModelResult
from ._run import Progress, run_fairness_study

__all__ = [
    "FORMATS",
    "DatasetConfig",
    "DatasetResult",
    "GridModel",
    "ModelResult",
    "Progress",
    "FairnessStudyConfig",
    "FairnessStudyResult",
    "default_config_path",
    "load_fairness_config",
    "load_dataset",
    "load_lastfm_1k",
    "load_lastfm_360k",
    "load_movielens",
    "load_recbole_atomic",
    "load_table",
    "parse_fairness_config",
    "run_fairness_study",
]
