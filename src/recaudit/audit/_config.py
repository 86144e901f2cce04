"""The audit config: one TOML file parsed into frozen dataclasses.

Every key is documented in ``docs/runner.md``. Unknown keys are errors that name the
key and list the allowed ones; relative paths are resolved against the config file's
folder; every referenced file is checked here, so a bad config fails before anything
is written.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from .._toml import read_toml
from ..exceptions import ConfigError, InputError
from ._designs import design_orders
from .backends._openai import check_base_url, check_key_env, looks_like_key

__all__ = [
    "AuditConfig",
    "CatalogConfig",
    "DesignConfig",
    "LocalParams",
    "ModelConfig",
    "OpenAIParams",
    "PromptConfig",
    "QueriesConfig",
    "RetrievalConfig",
    "SimulatedParams",
    "config_fingerprint",
    "config_hash",
    "config_identity",
    "config_to_dict",
    "legacy_config_hash",
    "load_config",
    "parse_config",
]

BackendKind = Literal["openai", "local", "simulated"]
DESIGN_KINDS = ("sampled", "shared", "exhaustive", "cyclic", "williams")
RANDOM_DESIGNS = ("sampled", "shared")
CONDITIONS = ("permutation", "decoding", "labels", "labels_permutation")
IDENTIFIERS = ("positional", "labels")
COLUMN_KEYS = ("id", "title", "description", "category", "brand", "colour", "gender",
               "price")
#: Keys that change how fast a run goes, not what it measures: left out of the
#: config hash, so a run may be resumed with other values.
OPERATIONAL_KEYS = frozenset({
    "concurrency", "rate_limit_per_s", "timeout_s", "max_retries", "delay_s",
    "max_consecutive_failures", "api_key_env", "n_threads", "cache_dir", "batch_size",
})


@dataclass(frozen=True)
class CatalogConfig:
    """``[catalog]``: ``path`` (CSV/Parquet/JSONL) and ``columns`` ("myntra" or a
    table mapping ``id``/``title``/``description`` (required) and ``category``,
    ``brand``, ``colour``, ``gender``, ``price`` to the file's column names)."""

    path: Path
    columns: str | tuple[tuple[str, str], ...] = "myntra"


@dataclass(frozen=True)
class QueriesConfig:
    """``[queries]``: generate ``n`` templated queries, or read them from ``file``."""

    n: int | None = None
    file: Path | None = None


@dataclass(frozen=True)
class RetrievalConfig:
    """``[retrieval]``: embedding ``model`` folder (default: the packaged MiniLM),
    candidate set sizes ``k``, embedding ``cache_dir``."""

    k: tuple[int, ...] = (5,)
    model: Path | None = None
    cache_dir: Path | None = None


@dataclass(frozen=True)
class PromptConfig:
    """``[prompt]``: template file, identifiers, generation budget, options."""

    template: Path | None = None
    identifiers: Literal["positional", "labels"] = "positional"
    max_tokens: int = 96
    choice_probabilities: bool = False
    constrained: bool = False


@dataclass(frozen=True)
class DesignConfig:
    """``[design]``: permutation design, orders per query, samples per order.

    ``n_perms`` defaults to 20 for the random designs (``sampled``, ``shared``) and to
    one replicate (k!, k or the Williams square) for the fixed ones, where it must be
    a multiple of that size.
    """

    kind: Literal["sampled", "shared", "exhaustive", "cyclic", "williams"] = "sampled"
    n_perms: int | None = 20
    samples_per_order: int = 1


@dataclass(frozen=True)
class OpenAIParams:
    """Keys of a ``[[models]]`` entry with ``backend = "openai"``."""

    base_url: str
    model: str
    api_key_env: str | None = None
    concurrency: int = 8
    rate_limit_per_s: float | None = None
    timeout_s: float = 60.0
    max_retries: int = 6


@dataclass(frozen=True)
class LocalParams:
    """Keys of a ``[[models]]`` entry with ``backend = "local"``: ``model`` is a
    packaged model name (``"smollm2-135m"``, ``"gemma3-270m"``; kept as a string) or a
    model folder / ``.gguf`` path (resolved, must exist); ``None`` is the default
    packaged model."""

    model: str | Path | None = None
    n_threads: int = 1
    batch_size: int = 8


@dataclass(frozen=True)
class SimulatedParams:
    """Keys of a ``[[models]]`` entry with ``backend = "simulated"``."""

    p_bias: float = 0.0
    position_weights: tuple[float, ...] | None = None
    max_relevant: int | None = None
    discard_rate: float = 0.0
    delay_s: float = 0.0


@dataclass(frozen=True)
class ModelConfig:
    """One ``[[models]]`` entry: a ``name``, a ``backend`` kind and its params."""

    name: str
    backend: BackendKind
    params: OpenAIParams | LocalParams | SimulatedParams


@dataclass(frozen=True)
class AuditConfig:
    """The whole audit (see ``docs/runner.md`` for every key)."""

    catalog: CatalogConfig
    queries: QueriesConfig
    models: tuple[ModelConfig, ...]
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    prompt: PromptConfig = field(default_factory=PromptConfig)
    design: DesignConfig = field(default_factory=DesignConfig)
    temperatures: tuple[float, ...] = (0.0,)
    conditions: tuple[str, ...] = ("permutation",)
    concurrency: int = 8
    max_consecutive_failures: int = 5
    seed: int = 0

    def with_overrides(self, **sections: Any) -> AuditConfig:
        """A copy with whole fields replaced (e.g. ``design=DesignConfig(...)``)."""
        return replace(self, **sections)


_TOP = ("catalog", "queries", "retrieval", "prompt", "design", "models", "temperatures",
        "conditions", "concurrency", "max_consecutive_failures", "seed")
_PARAMS = {"openai": OpenAIParams, "local": LocalParams, "simulated": SimulatedParams}


def load_config(path: str | Path) -> AuditConfig:
    """Read and validate an audit config file.

    Parameters
    ----------
    path : path-like
        A TOML file; relative paths inside it are resolved against its folder.

    Returns
    -------
    AuditConfig

    Raises
    ------
    ConfigError
        Unreadable TOML, unknown keys (named, with the allowed ones), bad values, or
        files that do not exist.
    """
    path = Path(path)
    return parse_config(read_toml(path), base_dir=path.resolve().parent)


def parse_config(data: Mapping[str, Any], *, base_dir: Path) -> AuditConfig:
    """Validate a config mapping (as parsed from TOML).

    Parameters
    ----------
    data : mapping
        The parsed TOML document.
    base_dir : path
        Folder that relative paths are resolved against.

    Returns
    -------
    AuditConfig
    """
    _refuse_secrets(data)
    _keys(data, _TOP, "")
    for required in ("catalog", "queries", "models"):
        if required not in data:
            raise ConfigError(f"missing section `[{required}]`; see docs/runner.md")
    cfg = AuditConfig(
        catalog=_catalog(_table(data, "catalog"), base_dir),
        queries=_queries(_table(data, "queries"), base_dir),
        retrieval=_retrieval(_table(data, "retrieval", {}), base_dir),
        prompt=_prompt(_table(data, "prompt", {}), base_dir),
        design=_design(_table(data, "design", {})),
        models=_models(data["models"], base_dir),
        temperatures=_temperatures(data.get("temperatures", [0.0])),
        conditions=_conditions(data.get("conditions", ["permutation"])),
        concurrency=_int(data, "concurrency", "", default=8, minimum=1),
        max_consecutive_failures=_int(data, "max_consecutive_failures", "", default=5,
                                      minimum=1),
        seed=_int(data, "seed", "", default=0, minimum=0),
    )
    for k in cfg.retrieval.k:
        try:
            design_orders(cfg.design.kind, k, cfg.design.n_perms, rng=0)
        except InputError as exc:
            message = str(exc).replace("`n`", "`design.n_perms`")
            raise ConfigError(f"`[design]` with k={k}: {message}") from exc
    for model in cfg.models:
        weights = getattr(model.params, "position_weights", None)
        if weights is not None and any(len(weights) != k for k in cfg.retrieval.k):
            raise ConfigError(
                f"`models.{model.name}.position_weights` has {len(weights)} entries but "
                f"`retrieval.k` = {list(cfg.retrieval.k)}; use one k equal to its length"
            )
    return cfg


def config_to_dict(cfg: AuditConfig) -> dict[str, Any]:
    """The resolved config as JSON-ready data (paths as strings; no secrets: only
    the NAME of an API-key variable is ever part of a config)."""

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v) for v in value]
        if isinstance(value, Path):
            return str(value)
        return value

    return clean(asdict(cfg))


def _strip_operational(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_operational(v) for k, v in value.items()
                if k not in OPERATIONAL_KEYS}
    if isinstance(value, list):
        return [_strip_operational(v) for v in value]
    return value


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(2**20), b""):
            h.update(chunk)
    return h.hexdigest()


#: Model files larger than this are identified by their size and first and last MiB
#: (a full hash of a multi-GB GGUF would cost seconds on every run and resume).
_WHOLE_HASH_BYTES = 64 * 2**20


def _model_fingerprint(path: Path) -> str:
    """What a model file or folder IS, wherever it lies: file names, sizes and the
    content of small files (large ones: size, first and last MiB)."""
    h = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        rel = f.name if f == path else f.relative_to(path).as_posix()
        size = f.stat().st_size
        h.update(f"{rel}\x1f{size}\x1e".encode())
        with f.open("rb") as fh:
            if size <= _WHOLE_HASH_BYTES:
                h.update(fh.read())
            else:
                h.update(fh.read(2**20))
                fh.seek(-(2**20), 2)
                h.update(fh.read())
    return h.hexdigest()


def config_identity(cfg: AuditConfig) -> dict[str, Any]:
    """What the run depends on: the resolved config without :data:`OPERATIONAL_KEYS`,
    with every file replaced by what it holds, not where it is.

    The catalog's path is left out (its content is ``catalog_sha256``, checked beside
    the config hash); the query file and the prompt template count by their SHA-256;
    a model folder or file (``retrieval.model``, a ``local`` model) by its names, sizes
    and content (:func:`_model_fingerprint`). So the same config copied to another
    folder, or written with absolute paths, has the same identity; changing what a
    file holds changes it.
    """
    data = _strip_operational(config_to_dict(cfg))
    data["catalog"].pop("path", None)
    if cfg.queries.file is not None:
        data["queries"]["file"] = {"sha256": _file_sha256(cfg.queries.file)}
    if cfg.prompt.template is not None:
        data["prompt"]["template"] = {"sha256": _file_sha256(cfg.prompt.template)}
    if cfg.retrieval.model is not None:
        data["retrieval"]["model"] = {"fingerprint": _model_fingerprint(cfg.retrieval.model)}
    for entry, model in zip(data["models"], cfg.models, strict=True):
        path = getattr(model.params, "model", None)
        if isinstance(path, Path):
            entry["params"]["model"] = {"fingerprint": _model_fingerprint(path)}
    return data


def config_hash(cfg: AuditConfig) -> str:
    """SHA-256 of :func:`config_identity` (what the run depends on).

    Two configs with the same hash plan and measure the same evaluations, so a
    journal may be resumed with either: operational keys may differ, and so may the
    folders the files lie in.
    """
    return config_fingerprint(cfg)[0]


def config_fingerprint(cfg: AuditConfig) -> tuple[str, str]:
    """``(config_hash, identity)``: the hash and the JSON of :func:`config_identity`
    it is computed from (the journal keeps both, to name the settings that differ)."""
    text = json.dumps(config_identity(cfg), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest(), text


def legacy_config_hash(cfg: AuditConfig) -> str:
    """The config hash journals written before :func:`config_identity` carry (the
    resolved config with its paths as written): accepted on resume, so those runs
    still continue."""
    text = json.dumps(_strip_operational(config_to_dict(cfg)), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


# -- helpers -----------------------------------------------------------------------

MSG_SECRET_IN_FIELD = (
    "`{field}` holds the API key of {origin}; a key belongs in the environment only "
    "(the config names its variable with `api_key_env`), never in a setting, which is "
    "written to the run folder, run.json and reports: remove it from `{field}`"
)
#: Keys shorter than this are not searched for in the other settings (too many
#: innocent matches).
MIN_SECRET_LEN = 8


def _secrets_of(data: Mapping[str, Any]) -> dict[str, str]:
    """The API keys a raw config refers to, each with where it comes from: the value
    of each variable named by a model's ``api_key_env``, and an ``api_key_env`` value
    that is a pasted key rather than a variable name."""
    secrets: dict[str, str] = {}
    models = data.get("models")
    for i, t in enumerate(models if isinstance(models, list) else []):
        env = t.get("api_key_env") if isinstance(t, Mapping) else None
        if not isinstance(env, str) or not env:
            continue
        hidden = looks_like_key(env)
        origin = f"the variable named by `models[{i}].api_key_env`" if hidden \
            else f"`{env}`"
        value = os.environ.get(env) if not hidden or env.isidentifier() else None
        if value and len(value) >= MIN_SECRET_LEN:
            secrets[value] = origin
        if hidden and len(env) >= MIN_SECRET_LEN:
            secrets[env] = f"`models[{i}].api_key_env` (a key, not a variable name)"
    return secrets


def _strings(value: Any, where: str) -> list[tuple[str, str]]:
    """``(setting, text)`` for every string in a raw config (keys of tables included;
    array items as ``name[i]``)."""
    if isinstance(value, str):
        return [(where, value)]
    out: list[tuple[str, str]] = []
    if isinstance(value, Mapping):
        for k, v in value.items():
            name = f"{where}.{k}" if where else str(k)
            out += [(name, str(k))] + _strings(v, name)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _strings(v, f"{where}[{i}]")
    return out


def _refuse_secrets(data: Mapping[str, Any]) -> None:
    """A :class:`ConfigError` when any setting holds an API key the config refers to
    (the message names the setting, never the key). Runs before any other check, so
    no later message can quote a setting that holds a key."""
    secrets = _secrets_of(data)
    if not secrets:
        return
    for where, text in _strings(data, ""):
        if where.endswith("].api_key_env"):
            continue  # the variable's NAME (a pasted key there is refused on its own)
        for secret, origin in secrets.items():
            if secret in text:
                raise ConfigError(MSG_SECRET_IN_FIELD.format(field=where, origin=origin))



def _keys(table: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    if not isinstance(table, Mapping):
        raise ConfigError(f"`{where or 'config'}` must be a table, got {type(table).__name__}")
    for key in table:
        if key not in allowed:
            name = f"{where}.{key}" if where else key
            raise ConfigError(
                f"unknown key `{name}`; allowed keys{' in [' + where + ']' if where else ''}: "
                f"{', '.join(allowed)}"
            )


def _table(data: Mapping[str, Any], key: str, default: Any = None) -> Mapping[str, Any]:
    value = data.get(key, default)
    if not isinstance(value, Mapping):
        raise ConfigError(f"`{key}` must be a table (`[{key}]`), got {type(value).__name__}")
    return value


def _int(t: Mapping[str, Any], key: str, where: str, *, default: int | None = None,
         minimum: int | None = None) -> Any:
    value = t.get(key, default)
    name = f"{where}.{key}" if where else key
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"`{name}` must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(f"`{name}` must be >= {minimum}, got {value}")
    return value


def _float(t: Mapping[str, Any], key: str, where: str, *, default: float | None,
           low: float | None = None, high: float | None = None,
           open_low: bool = False) -> Any:
    value = t.get(key, default)
    name = f"{where}.{key}"
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"`{name}` must be a number, got {value!r}")
    if low is not None and (value <= low if open_low else value < low):
        raise ConfigError(f"`{name}` must be {'>' if open_low else '>='} {low}, got {value}")
    if high is not None and value > high:
        raise ConfigError(f"`{name}` must be <= {high}, got {value}")
    return float(value)


def _str(t: Mapping[str, Any], key: str, where: str, *, default: str | None = None,
         choices: tuple[str, ...] | None = None) -> Any:
    value = t.get(key, default)
    name = f"{where}.{key}"
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"`{name}` must be a non-empty string, got {value!r}")
    if choices is not None and value not in choices:
        raise ConfigError(f"`{name}` must be one of {', '.join(choices)}; got {value!r}")
    return value


def _bool(t: Mapping[str, Any], key: str, where: str, *, default: bool) -> bool:
    value = t.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"`{where}.{key}` must be true or false, got {value!r}")
    return value


def _path(t: Mapping[str, Any], key: str, where: str, base_dir: Path, *,
          must_exist: bool = True) -> Path | None:
    value = _str(t, key, where)
    if value is None:
        return None
    path = Path(value).expanduser()
    path = path if path.is_absolute() else (base_dir / path)
    if must_exist and not path.exists():
        raise ConfigError(f"`{where}.{key}`: {path} does not exist; fix the path "
                          "(relative paths start at the config file's folder)")
    return path


def _catalog(t: Mapping[str, Any], base_dir: Path) -> CatalogConfig:
    _keys(t, ("path", "columns"), "catalog")
    path = _path(t, "path", "catalog", base_dir)
    if path is None:
        raise ConfigError("`catalog.path` is required: the product catalog file")
    columns = t.get("columns", "myntra")
    if isinstance(columns, str):
        if columns != "myntra":
            raise ConfigError(
                f"`catalog.columns` must be \"myntra\" or a table with id, title, "
                f"description; got {columns!r}"
            )
        return CatalogConfig(path=path, columns=columns)
    _keys(columns, COLUMN_KEYS, "catalog.columns")
    for key in COLUMN_KEYS:
        _str(columns, key, "catalog.columns")
    for key in ("id", "title", "description"):
        if key not in columns:
            raise ConfigError(f"`catalog.columns.{key}` is required: the source column "
                              f"holding the product {key}")
    return CatalogConfig(path=path, columns=tuple(sorted(columns.items())))


def _queries(t: Mapping[str, Any], base_dir: Path) -> QueriesConfig:
    _keys(t, ("n", "file"), "queries")
    n = _int(t, "n", "queries", minimum=1)
    file = _path(t, "file", "queries", base_dir)
    if (n is None) == (file is None):
        raise ConfigError("`[queries]` needs exactly one of `n` (generate n queries) or "
                          "`file` (read them)")
    return QueriesConfig(n=n, file=file)


def _retrieval(t: Mapping[str, Any], base_dir: Path) -> RetrievalConfig:
    _keys(t, ("model", "k", "cache_dir"), "retrieval")
    k = t.get("k", [5])
    k = [k] if isinstance(k, int) and not isinstance(k, bool) else k
    if (not isinstance(k, list) or not k
            or any(isinstance(v, bool) or not isinstance(v, int) or v < 2 for v in k)):
        raise ConfigError(f"`retrieval.k` must be an integer >= 2 or a list of them, got {k!r}")
    if len(set(k)) != len(k):
        raise ConfigError(f"`retrieval.k` lists a value twice: {k}")
    return RetrievalConfig(
        k=tuple(k),
        model=_path(t, "model", "retrieval", base_dir),
        cache_dir=_path(t, "cache_dir", "retrieval", base_dir, must_exist=False),
    )


def _prompt(t: Mapping[str, Any], base_dir: Path) -> PromptConfig:
    _keys(t, ("template", "identifiers", "max_tokens", "choice_probabilities",
              "constrained"), "prompt")
    return PromptConfig(
        template=_path(t, "template", "prompt", base_dir),
        identifiers=_str(t, "identifiers", "prompt", default="positional",
                         choices=IDENTIFIERS),
        max_tokens=_int(t, "max_tokens", "prompt", default=96, minimum=1),
        choice_probabilities=_bool(t, "choice_probabilities", "prompt", default=False),
        constrained=_bool(t, "constrained", "prompt", default=False),
    )


def _design(t: Mapping[str, Any]) -> DesignConfig:
    _keys(t, ("kind", "n_perms", "samples_per_order"), "design")
    kind = _str(t, "kind", "design", default="sampled", choices=DESIGN_KINDS)
    return DesignConfig(
        kind=kind,
        n_perms=_int(t, "n_perms", "design", default=20 if kind in RANDOM_DESIGNS else None,
                     minimum=1),
        samples_per_order=_int(t, "samples_per_order", "design", default=1, minimum=1),
    )


def _models(value: Any, base_dir: Path) -> tuple[ModelConfig, ...]:
    if not isinstance(value, list) or not value:
        raise ConfigError("`models` must be a non-empty array of tables (`[[models]]`)")
    out = []
    for i, t in enumerate(value):
        where = f"models[{i}]"
        if not isinstance(t, Mapping):
            raise ConfigError(f"`{where}` must be a table")
        name = _str(t, "name", where)
        backend = _str(t, "backend", where, choices=tuple(_PARAMS))
        if name is None or backend is None:
            raise ConfigError(f"`{where}` needs `name` and `backend` (openai|local|simulated)")
        where = f"models.{name}"
        allowed = ("name", "backend", *(f.name for f in fields(_PARAMS[backend])))
        _keys(t, allowed, where)
        out.append(ModelConfig(name=name, backend=backend,
                               params=_params(backend, t, where, base_dir)))
    names = [m.name for m in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"`models` names must be unique, got {names}")
    return tuple(out)


def _params(backend: str, t: Mapping[str, Any], where: str, base_dir: Path
            ) -> OpenAIParams | LocalParams | SimulatedParams:
    if backend == "openai":
        if "base_url" not in t:
            raise ConfigError(f"`{where}.base_url` is required, e.g. "
                              "http://127.0.0.1:8080/v1")
        # neither check shows the value: it may be a key pasted in the wrong place
        base_url = check_base_url(t["base_url"], f"{where}.base_url")
        return OpenAIParams(
            base_url=base_url,
            model=_str(t, "model", where, default=t["name"]),
            api_key_env=check_key_env(t.get("api_key_env"), f"{where}.api_key_env"),
            concurrency=_int(t, "concurrency", where, default=8, minimum=1),
            rate_limit_per_s=_float(t, "rate_limit_per_s", where, default=None, low=0,
                                    open_low=True),
            timeout_s=_float(t, "timeout_s", where, default=60.0, low=0, open_low=True),
            max_retries=_int(t, "max_retries", where, default=6, minimum=0),
        )
    if backend == "local":
        from .backends._local import PACKAGED_MODELS

        name = _str(t, "model", where)
        model: str | Path | None = name
        if name is not None and name not in PACKAGED_MODELS:
            model = _path(t, "model", where, base_dir, must_exist=False)
            if model is None or not model.exists():
                raise ConfigError(
                    f"`{where}.model`: {name!r} is neither a packaged model "
                    f"({', '.join(PACKAGED_MODELS)}) nor an existing path ({model}); "
                    "relative paths start at the config file's folder")
        return LocalParams(model=model,
                           n_threads=_int(t, "n_threads", where, default=1, minimum=1),
                           batch_size=_int(t, "batch_size", where, default=8, minimum=1))
    weights = t.get("position_weights")
    if weights is not None and (
        not isinstance(weights, list) or len(weights) < 2
        or any(isinstance(w, bool) or not isinstance(w, int | float) or w < 0
               for w in weights)
        or sum(weights) <= 0
    ):
        raise ConfigError(f"`{where}.position_weights` must be a list of >= 2 "
                          f"non-negative numbers with a positive sum, got {weights!r}")
    return SimulatedParams(
        p_bias=_float(t, "p_bias", where, default=0.0, low=0.0, high=1.0),
        position_weights=None if weights is None else tuple(float(w) for w in weights),
        max_relevant=_int(t, "max_relevant", where, minimum=1),
        discard_rate=_float(t, "discard_rate", where, default=0.0, low=0.0, high=1.0),
        delay_s=_float(t, "delay_s", where, default=0.0, low=0.0),
    )


def _temperatures(value: Any) -> tuple[float, ...]:
    if (not isinstance(value, list) or not value
            or any(isinstance(v, bool) or not isinstance(v, int | float)
                   or not math.isfinite(v) or v < 0 for v in value)):
        raise ConfigError(f"`temperatures` must be a non-empty list of numbers >= 0, "
                          f"got {value!r}")
    if len(set(value)) != len(value):
        raise ConfigError(f"`temperatures` lists a value twice: {value}")
    return tuple(float(v) for v in value)


def _conditions(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or any(v not in CONDITIONS for v in value):
        raise ConfigError(f"`conditions` must be a non-empty list drawn from "
                          f"{', '.join(CONDITIONS)}; got {value!r}")
    if len(set(value)) != len(value):
        raise ConfigError(f"`conditions` lists a value twice: {value}")
    return tuple(value)
