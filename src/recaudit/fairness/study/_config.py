"""The inter-bias study's config: one typed TOML file (``recaudit fairness run``).

Read with the shared typed readers (:mod:`recaudit._config_schema`): unknown keys and
bad values are :class:`~recaudit.exceptions.ConfigError` naming the key, the table it
sits in (```epochs` in [study] of study.toml``) and the allowed keys or the expected
type.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, is_dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from ..._config_schema import MSG_VALUE, Where, check_keys, get_int, get_typed, int_list
from ..._limits import MAX_EPOCHS, check_fairness_study, max_threads
from ..._stats import DEFAULT_N_BOOT, DEFAULT_N_PERMUTATIONS
from ..._toml import read_toml
from ...exceptions import ConfigError, InputError
from .. import EvaluateOptions, PopularityGrouping, parse_popularity_groups, parse_protocol
from ._loaders import FORMATS
from .models._baselines import BASELINES
from .models._recbole import recbole_class

__all__ = [
    "DatasetConfig",
    "GridModel",
    "FairnessStudyConfig",
    "default_config_path",
    "load_fairness_config",
    "parse_fairness_config",
]


@dataclass(frozen=True)
class DatasetConfig:
    """One dataset of the study (TOML table ``[[datasets]]``)."""

    name: str
    path: Path
    format: str
    attribute: str
    protected: str
    users: Path | None = None
    columns: dict[str, str] = field(default_factory=dict)
    sample: int | None = 100_000
    threshold: float | None = None
    drop_missing: bool = False
    min_group_size: int = 20
    seed: int = 2020


@dataclass(frozen=True)
class GridModel:
    """One model of the study (TOML table ``[models.NAME]``)."""

    name: str
    grid: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    epochs: int | None = None
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FairnessStudyConfig:
    """The whole study: datasets, models, baselines, list lengths, output folder.

    ``evaluate`` is how every model is measured (``[study]``'s ``n``, ``n_boot``,
    ``n_resamples`` and ``popularity_groups``); each dataset's evaluation uses it with
    the dataset's own ``min_group_size`` (:meth:`evaluate_options`).
    """

    output: Path
    datasets: tuple[DatasetConfig, ...]
    models: tuple[GridModel, ...]
    baselines: tuple[str, ...] = BASELINES
    list_length: int = 20
    epochs: int = 20
    valid_metric: str = "NDCG@10"
    seed: int = 2020
    num_threads: int = 1
    protocols: tuple[str, ...] = ("full",)
    evaluate: EvaluateOptions = field(default_factory=EvaluateOptions)

    def evaluate_options(self, dataset: DatasetConfig) -> EvaluateOptions:
        """The :class:`~recaudit.fairness.EvaluateOptions` of every model of ``dataset``."""
        return replace(self.evaluate, min_group_size=dataset.min_group_size)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (paths as text): ``study.json``'s resolved config.

        The evaluation options are written flat, as the ``[study]`` keys they come from
        (``n``, ``n_boot``, ``n_resamples``, ``popularity_groups``), so a folder written
        before the config held one :class:`~recaudit.fairness.EvaluateOptions` resumes.
        """
        opts = self.evaluate
        out = {"output": self.output, "datasets": self.datasets, "models": self.models,
               "baselines": self.baselines, "n": opts.n, "list_length": self.list_length,
               "epochs": self.epochs, "valid_metric": self.valid_metric, "seed": self.seed,
               "num_threads": self.num_threads, "n_boot": opts.n_boot,
               "n_resamples": opts.n_resamples, "protocols": self.protocols,
               "popularity_groups": opts.popularity_groups.name}
        return json.loads(json.dumps(out, default=_jsonable))


def _jsonable(value: Any) -> Any:
    """Dataclasses as their fields, anything else (paths) as text."""
    return asdict(value) if is_dataclass(value) and not isinstance(value, type) else str(value)


MSG_PROTOCOL = (
    "{name} must list 'full', 'uniN' or 'popN' (N a positive integer, e.g. 'uni100', "
    "'pop100'), got {value!r}"
)

_STUDY_KEYS = ("output", "baselines", "n", "list_length", "epochs", "valid_metric", "seed",
               "num_threads", "n_boot", "n_resamples", "protocols", "popularity_groups")
_DATASET_KEYS = ("name", "path", "format", "attribute", "protected", "users", "columns",
                 "sample", "threshold", "drop_missing", "min_group_size", "seed")
_MODEL_KEYS = ("grid", "epochs", "settings")
_TOP_KEYS = ("study", "datasets", "models")

#: Resolves a config path (relative ones against the config's folder).
Resolve = Callable[[str], Path]


def _where(label: str) -> Where:
    return Where(label=label, sort_allowed=True)


def _study(study: Any, where: Where, under: Resolve) -> dict[str, Any]:
    """The ``[study]`` table's settings, as :class:`FairnessStudyConfig` keyword arguments."""
    check_keys(study, _STUDY_KEYS, where)
    out: dict[str, Any] = {"output": under(get_typed(study, "output", where, str, "a path"))}
    baselines = tuple(get_typed(study, "baselines", where, list, "a list of names",
                                list(BASELINES)))
    for name in baselines:
        if name not in BASELINES:
            raise ConfigError(f"unknown baseline {name!r} in {where.label}; choose from "
                              f"{', '.join(BASELINES)}")
    out["baselines"] = baselines
    n = int_list(study, "n", where, (5, 10, 15))
    out["list_length"] = get_typed(study, "list_length", where, int, "a positive integer",
                                   20, positive=True)
    if out["list_length"] < max(n):
        raise ConfigError(f"`list_length` in {where.label} ({out['list_length']}) must be "
                          f">= the largest `n` ({max(n)})")
    out["epochs"] = get_int(study, "epochs", where, default=20, minimum=1,
                            kind="a positive integer", maximum=MAX_EPOCHS)
    out["valid_metric"] = get_typed(study, "valid_metric", where, str, "a string", "NDCG@10")
    out["seed"] = get_typed(study, "seed", where, int, "an integer", 2020)
    out["num_threads"] = get_int(study, "num_threads", where, default=1, minimum=1,
                                 kind="a positive integer", maximum=max_threads())
    resamples: dict[str, int] = {}
    for key, default in (("n_boot", DEFAULT_N_BOOT), ("n_resamples", DEFAULT_N_PERMUTATIONS)):
        resamples[key] = value = get_typed(study, key, where, int, "a non-negative integer",
                                           default)
        if value < 0:
            raise ConfigError(MSG_VALUE.format(name=where.name(key),
                                               kind="a non-negative integer", value=value))
    try:
        check_fairness_study(n=n, list_length=out["list_length"], **resamples)
    except InputError as err:
        raise ConfigError(f"{where.label}: {err}") from None
    out["protocols"] = _protocols(study, where)
    grouping = _popularity_groups(study, where)
    try:
        out["evaluate"] = EvaluateOptions(n=n, n_boot=resamples["n_boot"],
                                          n_resamples=resamples["n_resamples"],
                                          popularity_groups=grouping)
    except InputError as err:
        raise ConfigError(f"{where.label}: {err}") from None
    return out


def _popularity_groups(study: Any, where: Where) -> PopularityGrouping:
    """``popularity_groups``: ``abdollahpouri`` (default), ``abdollahpouri:cumulative``
    or ``quantile:Q`` (:func:`~recaudit.fairness.parse_popularity_groups`)."""
    value = get_typed(study, "popularity_groups", where, str, "a string", "abdollahpouri")
    try:
        return parse_popularity_groups(value, name=where.name("popularity_groups"))
    except InputError as err:
        raise ConfigError(str(err)) from None


def _protocols(study: Any, where: Where) -> tuple[str, ...]:
    """``protocols``: distinct names ``full``, ``uniN`` or ``popN`` (default ``["full"]``)."""
    names = get_typed(study, "protocols", where, list, "a non-empty list of protocol names",
                      ["full"])
    if not names:
        raise ConfigError(MSG_VALUE.format(name=where.name("protocols"),
                                           kind="a non-empty list of protocol names",
                                           value=names))
    for name in names:
        try:
            parse_protocol(name)
        except InputError:
            raise ConfigError(MSG_PROTOCOL.format(name=where.name("protocols"),
                                                  value=name)) from None
    if len(set(names)) != len(names):
        raise ConfigError(f"{where.name('protocols')} must be distinct, got {names}")
    return tuple(names)


def _dataset(table: Any, where: Where, under: Resolve, seed: int) -> DatasetConfig:
    """One ``[[datasets]]`` table."""
    check_keys(table, _DATASET_KEYS, where)
    fmt = get_typed(table, "format", where, str, "a string")
    if fmt not in FORMATS:
        raise ConfigError(f"`format` in {where.label} must be one of {', '.join(FORMATS)}, "
                          f"got {fmt!r}")
    sample = get_typed(table, "sample", where, int, "a positive integer", 100_000,
                       positive=True)
    threshold = get_typed(table, "threshold", where, (int, float), "a number", None)
    users = get_typed(table, "users", where, str, "a path", None)
    columns = get_typed(table, "columns", where, dict, "a table of strings", {})
    path = under(get_typed(table, "path", where, str, "a path"))
    return DatasetConfig(
        name=get_typed(table, "name", where, str, "a string", path.name),
        path=path,
        format=fmt,
        attribute=get_typed(table, "attribute", where, str, "a string"),
        protected=str(get_typed(table, "protected", where, (str, int), "a string")),
        users=None if users is None else under(users),
        columns={str(k): str(v) for k, v in columns.items()},
        sample=sample,
        threshold=None if threshold is None else float(threshold),
        drop_missing=get_typed(table, "drop_missing", where, bool, "true or false", False),
        min_group_size=get_typed(table, "min_group_size", where, int, "a positive integer",
                                 20, positive=True),
        seed=get_typed(table, "seed", where, int, "an integer", seed),
    )


def _datasets(raw: Mapping[str, Any], source: str, under: Resolve,
              seed: int) -> tuple[DatasetConfig, ...]:
    datasets_raw = raw.get("datasets")
    if not isinstance(datasets_raw, list) or not datasets_raw:
        raise ConfigError(f"{source} needs at least one [[datasets]] table")
    datasets = tuple(_dataset(t, _where(f"[[datasets]] #{i + 1} of {source}"), under, seed)
                     for i, t in enumerate(datasets_raw))
    names = [d.name for d in datasets]
    if len(set(names)) != len(names):
        raise ConfigError(f"dataset names in {source} must be unique, got {names}")
    return datasets


def _model(name: str, table: Any, where: Where) -> GridModel:
    """One ``[models.NAME]`` table."""
    recbole_class(name)
    if not isinstance(table, dict):
        raise ConfigError(f"{where.label} must be a table")
    check_keys(table, _MODEL_KEYS, where)
    grid = get_typed(table, "grid", where, dict, "a table of lists", {})
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(MSG_VALUE.format(name=where.name(f"grid.{key}"),
                                               kind="a non-empty list", value=values))
    return GridModel(
        name=name,
        grid={k: tuple(v) for k, v in grid.items()},
        epochs=get_int(table, "epochs", where, default=None, minimum=1,
                       kind="a positive integer", maximum=MAX_EPOCHS),
        settings=dict(get_typed(table, "settings", where, dict, "a table", {})),
    )


def parse_fairness_config(raw: Mapping[str, Any], *, source: str = "config",
                 base_dir: Path | None = None) -> FairnessStudyConfig:
    """Build a :class:`FairnessStudyConfig` from parsed TOML; unknown keys are errors.

    Parameters
    ----------
    raw : mapping
        The parsed TOML document.
    source : str
        Where it came from, for messages.
    base_dir : path, optional
        Folder that relative paths (``output``, dataset ``path`` and ``users``) are
        resolved against (:func:`load_fairness_config` passes the config file's folder);
        ``None`` leaves them relative (to the working directory).

    Returns
    -------
    FairnessStudyConfig

    Raises
    ------
    ConfigError
        Naming the key, where it is, and the allowed keys or the expected type.
    """
    check_keys(raw, _TOP_KEYS, _where(source))

    def under(p: str) -> Path:
        return Path(p) if base_dir is None else base_dir / p  # absolute p wins in `/`

    settings = _study(raw.get("study", {}), _where(f"[study] of {source}"), under)
    datasets = _datasets(raw, source, under, settings["seed"])
    models_raw = raw.get("models", {})
    if not isinstance(models_raw, dict):
        raise ConfigError(f"`models` in {source} must be tables [models.NAME]")
    models = tuple(_model(name, table, _where(f"[models.{name}] of {source}"))
                   for name, table in models_raw.items())
    if not models and not settings["baselines"]:
        raise ConfigError(f"{source} names no [models.NAME] and no baselines: nothing to run")
    return FairnessStudyConfig(datasets=datasets, models=models, **settings)


def default_config_path() -> Path:
    """The packaged example config: ML-100K, the nine models, both baselines."""
    return Path(str(resources.files("recaudit.fairness.study") / "configs" / "ml-100k.toml"))


def load_fairness_config(path: str | Path) -> FairnessStudyConfig:
    """Read and validate a study TOML file.

    Relative paths in it are resolved against the config file's folder, as in
    ``recaudit positional run``; the packaged default config
    (:func:`default_config_path`), which has no folder of its own, resolves them
    against the current working directory.
    """
    path = Path(path)
    packaged = path.resolve() == default_config_path().resolve()
    base_dir = Path.cwd() if packaged else path.resolve().parent
    return parse_fairness_config(read_toml(path), source=str(path), base_dir=base_dir)


