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
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from .._config_schema import (
    Where,
    check_keys,
    get_bool,
    get_float,
    get_int,
    get_path,
    get_str,
    get_table,
    int_list,
)
from .._limits import (
    DEFAULT_CONCURRENCY,
    MAX_CONCURRENCY,
    MAX_RETRIES,
    MAX_TIMEOUT_S,
    MAX_TOKENS,
    check_audit_plan,
    check_delay,
    check_rate,
    max_threads,
)
from .._read import file_sha256
from .._toml import read_toml
from ..exceptions import ConfigError, InputError
from ..llm import Backend
from ..llm.backends import (
    LOCAL_ENGINES,
    EndpointConfig,
    LocalParams,
    OpenAIParams,
    SimulatedParams,
    build_backends,
    check_base_url,
    check_key_env,
)
from ._config_secrets import refuse_secrets
from ._designs import design_orders

__all__ = [
    "AuditConfig",
    "CatalogConfig",
    "DesignConfig",
    "LocalParams",
    "EndpointConfig",
    "OpenAIParams",
    "PromptConfig",
    "QueriesConfig",
    "RetrievalConfig",
    "SimulatedParams",
    "config_backends",
    "config_fingerprint",
    "effective_concurrency",
    "config_hash",
    "config_identity",
    "config_to_dict",
    "legacy_config_hash",
    "load_audit_config",
    "parse_audit_config",
]

DESIGN_KINDS = ("sampled", "shared", "exhaustive", "cyclic", "williams")
RANDOM_DESIGNS = ("sampled", "shared")
CONDITIONS = ("permutation", "decoding", "labels", "labels_permutation")
IDENTIFIERS = ("positional", "labels")
ANSWERS = ("pick", "ranking")
MSG_RANKING_PROBS = (
    "`prompt.choice_probabilities` = true with `prompt.answer` = \"ranking\": choice "
    "probabilities belong to a one-identifier answer, a ranking is read from the "
    "generated list; set `choice_probabilities = false` (or `answer = \"pick\"`)"
)
MSG_RANKING_LOCAL = (
    "`prompt.constrained` = true with `prompt.answer` = \"ranking\" and the local model "
    "{name!r} on the transformers engine: its constrained mode writes a one-identifier "
    "answer; set `constrained = false`, or run the model as a GGUF file (the llama.cpp "
    "engine decodes under the ranking schema)"
)
COLUMN_KEYS = ("id", "title", "description", "category", "brand", "colour", "gender",
               "price")
#: Keys that change how fast a run goes, not what it measures: left out of the
#: config hash, so a run may be resumed with other values.
OPERATIONAL_KEYS = frozenset({
    "concurrency", "rate_limit_per_s", "timeout_s", "max_retries", "delay_s",
    "max_consecutive_failures", "api_key_env", "n_threads", "cache_dir", "batch_size",
    "price_per_mtok",
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
    """``[prompt]``: template file, identifiers, generation budget, options, and the
    answer asked for: one ``pick`` (the paper's top-1) or a ``ranking`` of all k
    candidates (best first; the default template is then
    :func:`recaudit.llm.ranking_template`)."""

    template: Path | None = None
    identifiers: Literal["positional", "labels"] = "positional"
    max_tokens: int = 96
    choice_probabilities: bool = False
    constrained: bool = False
    answer: Literal["pick", "ranking"] = "pick"


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
class AuditConfig:
    """The whole audit (see ``docs/runner.md`` for every key).

    ``concurrency`` is the most evaluations in flight across all models; each model's
    own limit (``openai``: ``concurrency``, ``local``: ``batch_size``) is capped by it
    (:func:`effective_concurrency`, docs/runner.md "Concurrency").
    """

    catalog: CatalogConfig
    queries: QueriesConfig
    models: tuple[EndpointConfig, ...]
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    prompt: PromptConfig = field(default_factory=PromptConfig)
    design: DesignConfig = field(default_factory=DesignConfig)
    temperatures: tuple[float, ...] = (0.0,)
    conditions: tuple[str, ...] = ("permutation",)
    concurrency: int = DEFAULT_CONCURRENCY
    max_consecutive_failures: int = 5
    seed: int = 0

    def with_overrides(self, **sections: Any) -> AuditConfig:
        """A copy with whole fields replaced (e.g. ``design=DesignConfig(...)``)."""
        return replace(self, **sections)


def effective_concurrency(cfg: AuditConfig) -> dict[str, Any]:
    """The in-flight limits a run uses (reported in its summary).

    ``total`` is the run's ``concurrency``: evaluations in flight across all models at
    once (the runner's workers). Each model's limit is its own setting (``openai``:
    ``concurrency``; ``local``: ``batch_size``, the requests one forward pass takes;
    ``simulated``: none) capped by ``total``: ``min(model setting, total)``.
    """
    per_model = {}
    for m in cfg.models:
        own = getattr(m.params, "concurrency", None) or getattr(m.params, "batch_size", None)
        per_model[m.name] = cfg.concurrency if own is None else min(own, cfg.concurrency)
    return {"total": cfg.concurrency, "per_model": per_model}


def config_backends(cfg: AuditConfig, models: tuple[EndpointConfig, ...] | None = None
                    ) -> dict[tuple[str, int], Backend]:
    """The backends of ``cfg`` (or of some of its ``models``): one per (model, k), from
    :func:`recaudit.llm.build_backends`."""
    # a constrained ranking is decoded under its schema (the request's response_format);
    # the local engines' own constrained mode writes a pick
    return build_backends(cfg.models if models is None else models, k=cfg.retrieval.k,
                          seed=cfg.seed, answer=cfg.prompt.answer,
                          constrained=cfg.prompt.constrained and cfg.prompt.answer == "pick")


MSG_CONCURRENCY = (
    "{name} = {value} can never be reached: the run's `concurrency` = {total} is the "
    "most evaluations in flight in total; raise `concurrency` to at least {value} or "
    "lower {name}"
)
_TOP = ("catalog", "queries", "retrieval", "prompt", "design", "models", "temperatures",
        "conditions", "concurrency", "max_consecutive_failures", "seed")
_PARAMS = {"openai": OpenAIParams, "local": LocalParams, "simulated": SimulatedParams}


def load_audit_config(path: str | Path) -> AuditConfig:
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
    return parse_audit_config(read_toml(path), base_dir=path.resolve().parent)


def parse_audit_config(data: Mapping[str, Any], *, base_dir: Path) -> AuditConfig:
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
    refuse_secrets(data)
    top = Where("")
    check_keys(data, _TOP, top)
    for required in ("catalog", "queries", "models"):
        if required not in data:
            raise ConfigError(f"missing section `[{required}]`; see docs/runner.md")
    concurrency = get_int(data, "concurrency", top, default=DEFAULT_CONCURRENCY, minimum=1,
                          maximum=MAX_CONCURRENCY)
    cfg = AuditConfig(
        catalog=_catalog(get_table(data, "catalog"), base_dir),
        queries=_queries(get_table(data, "queries"), base_dir),
        retrieval=_retrieval(get_table(data, "retrieval", {}), base_dir),
        prompt=_prompt(get_table(data, "prompt", {}), base_dir),
        design=_design(get_table(data, "design", {})),
        models=_models(data["models"], base_dir, concurrency),
        temperatures=_temperatures(data.get("temperatures", [0.0])),
        conditions=_conditions(data.get("conditions", ["permutation"])),
        concurrency=concurrency,
        max_consecutive_failures=get_int(data, "max_consecutive_failures", top, default=5,
                                         minimum=1),
        seed=get_int(data, "seed", top, default=0, minimum=0),
    )
    _check_design(cfg)
    _check_answer(cfg)
    return cfg


def _check_answer(cfg: AuditConfig) -> None:
    """A ranking answer has no choice probabilities, and is constrained only by a
    schema (``openai`` models, the llama.cpp engine), never by the transformers
    engine's pick-only constrained mode."""
    if cfg.prompt.answer != "ranking":
        return
    if cfg.prompt.choice_probabilities:
        raise ConfigError(MSG_RANKING_PROBS)
    if cfg.prompt.constrained:
        for model in cfg.models:
            if isinstance(model.params, LocalParams) \
                    and model.params.resolved_engine() != "llamacpp":
                raise ConfigError(MSG_RANKING_LOCAL.format(name=model.name))


def _check_size(cfg: AuditConfig) -> None:
    """The plan must fit in memory, and a simulated delay or a rate limit must let it
    end within a month (:mod:`recaudit._limits`), before anything is built."""
    n_queries = cfg.queries.n if cfg.queries.n is not None else 1  # a file: its rows
    cells = len(cfg.models) * len(cfg.temperatures) * len(cfg.conditions)
    total = check_audit_plan(n_queries=n_queries, ks=cfg.retrieval.k, kind=cfg.design.kind,
                             n_perms=cfg.design.n_perms,
                             samples_per_order=cfg.design.samples_per_order, cells=cells,
                             error=ConfigError)
    for model in cfg.models:
        delay = getattr(model.params, "delay_s", 0.0)
        if delay:
            check_delay(f"`models.{model.name}.delay_s`", delay, n_evaluations=total,
                        concurrency=cfg.concurrency, error=ConfigError)
        rate = getattr(model.params, "rate_limit_per_s", None)
        if rate:
            check_rate(f"`models.{model.name}.rate_limit_per_s`", rate, n_evaluations=total,
                       error=ConfigError)


def _check_design(cfg: AuditConfig) -> None:
    """The design must fit every k, and simulated position weights their k."""
    _check_size(cfg)
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

    data = clean(asdict(cfg))
    if cfg.prompt.answer == "pick":  # the default, left out: configs written before the
        del data["prompt"]["answer"]  # key existed keep their hash (and their journals)
    return data


def _strip_operational(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_operational(v) for k, v in value.items()
                if k not in OPERATIONAL_KEYS}
    if isinstance(value, list):
        return [_strip_operational(v) for v in value]
    return value




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
        data["queries"]["file"] = {"sha256": file_sha256(cfg.queries.file,
                                                         what="query file")}
    if cfg.prompt.template is not None:
        data["prompt"]["template"] = {"sha256": file_sha256(cfg.prompt.template,
                                                            what="prompt template")}
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

def _catalog(t: Mapping[str, Any], base_dir: Path) -> CatalogConfig:
    where = Where("catalog")
    check_keys(t, ("path", "columns"), where)
    path = get_path(t, "path", where, base_dir)
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
    inner = where.child("columns")
    check_keys(columns, COLUMN_KEYS, inner)
    for key in COLUMN_KEYS:
        get_str(columns, key, inner)
    for key in ("id", "title", "description"):
        if key not in columns:
            raise ConfigError(f"`catalog.columns.{key}` is required: the source column "
                              f"holding the product {key}")
    return CatalogConfig(path=path, columns=tuple(sorted(columns.items())))


def _queries(t: Mapping[str, Any], base_dir: Path) -> QueriesConfig:
    where = Where("queries")
    check_keys(t, ("n", "file"), where)
    n = get_int(t, "n", where, minimum=1)
    file = get_path(t, "file", where, base_dir)
    if (n is None) == (file is None):
        raise ConfigError("`[queries]` needs exactly one of `n` (generate n queries) or "
                          "`file` (read them)")
    return QueriesConfig(n=n, file=file)


def _retrieval(t: Mapping[str, Any], base_dir: Path) -> RetrievalConfig:
    where = Where("retrieval")
    check_keys(t, ("model", "k", "cache_dir"), where)
    k = t.get("k", [5])
    k = [k] if isinstance(k, int) and not isinstance(k, bool) else k
    ks = int_list({"k": k}, "k", where, (5,), minimum=2,
                  kind="an integer >= 2 or a list of them")
    if len(set(ks)) != len(ks):
        raise ConfigError(f"`retrieval.k` lists a value twice: {k}")
    return RetrievalConfig(
        k=ks,
        model=get_path(t, "model", where, base_dir),
        cache_dir=get_path(t, "cache_dir", where, base_dir, must_exist=False),
    )


def _prompt(t: Mapping[str, Any], base_dir: Path) -> PromptConfig:
    where = Where("prompt")
    check_keys(t, ("template", "identifiers", "max_tokens", "choice_probabilities",
                   "constrained", "answer"), where)
    return PromptConfig(
        template=get_path(t, "template", where, base_dir),
        identifiers=get_str(t, "identifiers", where, default="positional",
                            choices=IDENTIFIERS),
        max_tokens=get_int(t, "max_tokens", where, default=96, minimum=1,
                           maximum=MAX_TOKENS),
        choice_probabilities=get_bool(t, "choice_probabilities", where, default=False),
        constrained=get_bool(t, "constrained", where, default=False),
        answer=get_str(t, "answer", where, default="pick", choices=ANSWERS),
    )


def _design(t: Mapping[str, Any]) -> DesignConfig:
    where = Where("design")
    check_keys(t, ("kind", "n_perms", "samples_per_order"), where)
    kind = get_str(t, "kind", where, default="sampled", choices=DESIGN_KINDS)
    return DesignConfig(
        kind=kind,
        n_perms=get_int(t, "n_perms", where, default=20 if kind in RANDOM_DESIGNS else None,
                        minimum=1),
        samples_per_order=get_int(t, "samples_per_order", where, default=1, minimum=1),
    )


def _models(value: Any, base_dir: Path, run_concurrency: int) -> tuple[EndpointConfig, ...]:
    if not isinstance(value, list) or not value:
        raise ConfigError("`models` must be a non-empty array of tables (`[[models]]`)")
    out = []
    for i, t in enumerate(value):
        first = Where(f"models[{i}]")
        if not isinstance(t, Mapping):
            raise ConfigError(f"`{first.path}` must be a table")
        name = get_str(t, "name", first)
        backend = get_str(t, "backend", first, choices=tuple(_PARAMS))
        if name is None or backend is None:
            raise ConfigError(f"`{first.path}` needs `name` and `backend` "
                              "(openai|local|simulated)")
        where = Where(f"models.{name}")
        check_keys(t, ("name", "backend", *(f.name for f in fields(_PARAMS[backend]))), where)
        out.append(EndpointConfig(name=name, backend=backend,
                               params=_params(backend, t, where, base_dir, run_concurrency)))
    names = [m.name for m in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"`models` names must be unique, got {names}")
    return tuple(out)


def _params(backend: str, t: Mapping[str, Any], where: Where, base_dir: Path,
            run_concurrency: int) -> OpenAIParams | LocalParams | SimulatedParams:
    if backend == "openai":
        return _openai_params(t, where, run_concurrency)
    if backend == "local":
        return _local_params(t, where, base_dir, run_concurrency)
    return _simulated_params(t, where)


def _within_run(t: Mapping[str, Any], key: str, where: Where, run_concurrency: int,
                default: int) -> int:
    """A per-model in-flight limit: ``default`` when absent (the run's ``concurrency``
    caps it, see :func:`effective_concurrency`); a value GIVEN above the run's total,
    which could never be reached, is an error."""
    value = int(get_int(t, key, where, default=default, minimum=1))
    if key in t and value > run_concurrency:
        raise ConfigError(MSG_CONCURRENCY.format(name=where.name(key), value=value,
                                                 total=run_concurrency))
    return value


def _openai_params(t: Mapping[str, Any], where: Where, run_concurrency: int) -> OpenAIParams:
    if "base_url" not in t:
        raise ConfigError(f"{where.name('base_url')} is required, e.g. "
                          "http://127.0.0.1:8080/v1")
    # neither check shows the value: it may be a key pasted in the wrong place
    base_url = check_base_url(t["base_url"], f"{where.path}.base_url")
    return OpenAIParams(
        base_url=base_url,
        model=get_str(t, "model", where, default=t["name"]),
        api_key_env=check_key_env(t.get("api_key_env"), f"{where.path}.api_key_env"),
        concurrency=_within_run(t, "concurrency", where, run_concurrency, 8),
        rate_limit_per_s=get_float(t, "rate_limit_per_s", where, default=None, low=0,
                                   open_low=True),
        timeout_s=get_float(t, "timeout_s", where, default=60.0, low=0, open_low=True,
                            high=MAX_TIMEOUT_S),
        max_retries=get_int(t, "max_retries", where, default=6, minimum=0,
                            maximum=MAX_RETRIES),
        price_per_mtok=_price(t, where),
    )


def _price(t: Mapping[str, Any], where: Where) -> tuple[float, float] | None:
    """``price_per_mtok``: one price for prompt and completion tokens, or ``[in, out]``
    (per million tokens, >= 0)."""
    value = t.get("price_per_mtok")
    if value is None:
        return None
    pair = value if isinstance(value, list) else [value, value]
    if len(pair) != 2:
        raise ConfigError(f"{where.name('price_per_mtok')} must be a number or "
                          f"[prompt, completion] per million tokens, got {value!r}")
    got = [get_float({"price_per_mtok": v}, "price_per_mtok", where, default=None, low=0)
           for v in pair]
    return float(got[0]), float(got[1])


def _local_params(t: Mapping[str, Any], where: Where, base_dir: Path,
                  run_concurrency: int) -> LocalParams:
    from ..llm.backends import PACKAGED_MODELS

    name = get_str(t, "model", where)
    model: str | Path | None = name
    if name is not None and name not in PACKAGED_MODELS:
        model = get_path(t, "model", where, base_dir, must_exist=False)
        if model is None or not model.exists():
            raise ConfigError(
                f"{where.name('model')}: {name!r} is neither a packaged model "
                f"({', '.join(PACKAGED_MODELS)}) nor an existing path ({model}); "
                "relative paths start at the config file's folder")
    engine = get_str(t, "engine", where, default="auto")
    if engine not in LOCAL_ENGINES:
        raise ConfigError(f"{where.name('engine')} must be one of "
                          f"{', '.join(map(repr, LOCAL_ENGINES))}, got {engine!r}")
    return LocalParams(model=model,
                       n_threads=get_int(t, "n_threads", where, default=1, minimum=1,
                                         maximum=max_threads()),
                       batch_size=_within_run(t, "batch_size", where, run_concurrency, 8),
                       engine=engine)  # type: ignore[arg-type]


def _simulated_params(t: Mapping[str, Any], where: Where) -> SimulatedParams:
    weights = t.get("position_weights")
    if weights is not None and (
        not isinstance(weights, list) or len(weights) < 2
        or any(isinstance(w, bool) or not isinstance(w, int | float) or w < 0
               for w in weights)
        or sum(weights) <= 0
    ):
        raise ConfigError(f"{where.name('position_weights')} must be a list of >= 2 "
                          f"non-negative numbers with a positive sum, got {weights!r}")
    return SimulatedParams(
        p_bias=get_float(t, "p_bias", where, default=0.0, low=0.0, high=1.0),
        position_weights=None if weights is None else tuple(float(w) for w in weights),
        max_relevant=get_int(t, "max_relevant", where, minimum=1),
        discard_rate=get_float(t, "discard_rate", where, default=0.0, low=0.0, high=1.0),
        delay_s=get_float(t, "delay_s", where, default=0.0, low=0.0),
    )


def _distinct(value: list[Any], key: str) -> list[Any]:
    if len(set(value)) != len(value):
        raise ConfigError(f"`{key}` lists a value twice: {value}")
    return value


def _temperatures(value: Any) -> tuple[float, ...]:
    if (not isinstance(value, list) or not value
            or any(isinstance(v, bool) or not isinstance(v, int | float)
                   or not math.isfinite(v) or v < 0 for v in value)):
        raise ConfigError(f"`temperatures` must be a non-empty list of numbers >= 0, "
                          f"got {value!r}")
    return tuple(float(v) for v in _distinct(value, "temperatures"))


def _conditions(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or any(v not in CONDITIONS for v in value):
        raise ConfigError(f"`conditions` must be a non-empty list drawn from "
                          f"{', '.join(CONDITIONS)}; got {value!r}")
    return tuple(_distinct(value, "conditions"))
