"""The inter-bias study runner: config, data loaders, models, the run and its results.

``recaudit fairness run CONFIG.toml`` calls :func:`run_study`: for every dataset of the
typed config (:func:`load_config`, :class:`StudyConfig`; the packaged ML-100K config at
:func:`default_config_path`) it loads the data (:func:`load_dataset` and the format
loaders), splits it, trains and tunes the RecBole models of :mod:`.models` (locally or
on Ray), ranks their top-N lists and evaluates them with
:func:`recaudit.fairness.evaluate`, into one resumable run folder whose
``results.json`` reads back as :class:`StudyResult`.

The statistics (:mod:`recaudit.fairness`, its ``popularity`` and ``simulation``
packages) never import this package; only the command line and the report do.
"""

from ._config import (
    DatasetConfig,
    ModelConfig,
    StudyConfig,
    default_config_path,
    load_config,
    parse_config,
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
from ._results import DatasetResult, ModelResult, StudyResult
from ._run import Progress, run_study

__all__ = [
    "FORMATS",
    "DatasetConfig",
    "DatasetResult",
    "ModelConfig",
    "ModelResult",
    "Progress",
    "StudyConfig",
    "StudyResult",
    "default_config_path",
    "load_config",
    "load_dataset",
    "load_lastfm_1k",
    "load_lastfm_360k",
    "load_movielens",
    "load_recbole_atomic",
    "load_table",
    "parse_config",
    "run_study",
]
