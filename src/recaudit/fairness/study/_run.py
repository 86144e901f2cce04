"""The inter-bias study runner: one typed TOML config, one resumable run folder.

``recaudit fairness run CONFIG.toml`` calls :func:`run_fairness_study`, which for every
dataset of the config does

    load -> implicit feedback -> sample N -> protected groups -> per-user split
         -> for each model: grid search on validation -> best model -> top-N lists
         -> baselines -> evaluation (per-group metrics, RD/NRD/IB with CIs)
         -> tables + results JSON

and writes everything into the run folder::

    OUTPUT/
      study.json                 the resolved config (a later run must match it)
      results.json               every number of the run
      DATASET/
        users.{parquet,csv}      user_id, attribute, group
        train/valid/test.{parquet,csv}
        long_tail.csv            interactions per item
        recbole/study/*.inter    the split as RecBole benchmark files
        models/MODEL/            RecBole logs and checkpoints of one model
        models/MODEL/done.json   completion marker, written atomically last
        candidates/PROTOCOL.parquet   user_id, item_id: each test user's candidates
                                 under a sampled protocol ([study] protocols)
        recs/MODEL.{parquet,csv} user_id, item_id, rank, score, model (full ranking)
        recs/PROTOCOL/MODEL.{parquet,csv}   the lists ranked within the candidates
        summary.csv              one row per model and protocol: time, IB, group
                                 NDCG, coverage
        compare.json             every pair of models compared, paired by user, on
                                 the first protocol's lists (compare_models)
        compare-PROTOCOL.json    the same under each further protocol

A model whose ``done.json`` exists (with the same model settings) is not trained
again, so an interrupted run resumes where it stopped; a finished model that lacks
the lists of a protocol added since is scored again from its kept checkpoint
(``done.json["checkpoint"]``), never retrained.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from ..._io import to_jsonable, write_atomic, write_text_atomic
from ..._read import read_json
from ...exceptions import ConfigError, InputError
from .. import (
    ITEM_ID,
    USER_ID,
    FairnessEvaluation,
    ProtectedGroups,
    Protocol,
    Split,
    compare_models,
    evaluate,
    long_tail_stats,
    parse_protocol,
    protected_groups,
    sample_candidates,
    sample_interactions,
    split_per_user,
    to_implicit,
)
from ._config import (
    DatasetConfig,
    FairnessStudyConfig,
    GridModel,
)
from ._loaders import load_dataset
from ._results import DatasetResult, FairnessStudyResult, ModelResult
from .models._baselines import (
    most_popular,
    most_popular_candidates,
    random_candidates,
    random_items,
)
from .models._candidates import load_model, recommend_candidates
from .models._recbole import recommend, train_model, write_atomic_split

__all__ = ["run_fairness_study"]

MSG_OTHER_RUN = (
    "output folder {path} holds a run of a different config (study.json differs); "
    "choose another `output` or delete the folder"
)


#: Settings of study.json that may differ between runs of one folder.
_MAY_CHANGE = ("models", "protocols", "popularity_groups")


def _identity(resolved: Mapping[str, Any]) -> dict[str, Any]:
    """What of a ``study.json`` must match to resume its folder: everything but the
    models, protocols and popularity groups (which may be added or changed between
    runs); ``n`` compared as a set (folders written before the config held one
    :class:`~recaudit.fairness.EvaluateOptions` kept the TOML's order)."""
    out = {k: v for k, v in resolved.items() if k not in _MAY_CHANGE}
    n = out.get("n")
    if isinstance(n, list) and all(isinstance(v, int) for v in n):
        out["n"] = sorted(n)
    return out


def _fingerprint(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _write_table(
    frame: pd.DataFrame, stem: Path, suffixes: tuple[str, ...] = (".parquet", ".csv")
) -> None:
    """``stem.parquet`` and ``stem.csv`` (or only the ``suffixes`` given), each written
    to a temporary name first."""
    writers: dict[str, Callable[[Path], None]] = {
        ".parquet": lambda p: frame.to_parquet(p, index=False),
        ".csv": lambda p: frame.to_csv(p, index=False),
    }
    for suffix in suffixes:
        write_atomic(stem.with_suffix(suffix), writers[suffix])


#: Progress callback: (event, fields) with events "dataset", "model", "grid", "done",
#: "rescore" (a finished model scored under a new protocol) and "evaluate".
Progress = Callable[[str, dict[str, Any]], None]


def _run_iv(config: FairnessStudyConfig) -> Path:
    if not isinstance(config, FairnessStudyConfig):
        raise ConfigError(f"`config` must be a FairnessStudyConfig, got {type(config).__name__}")
    output = Path(config.output)
    output.mkdir(parents=True, exist_ok=True)
    resolved = config.to_dict()
    stamp = output / "study.json"
    if stamp.exists():
        previous = read_json(stamp, what="the study's resolved config")
        if not isinstance(previous, dict):
            raise InputError(f"{stamp} is not a study.json written by `recaudit fairness "
                             "run`; choose another output folder")
        if _identity(previous) != _identity(resolved):
            raise ConfigError(MSG_OTHER_RUN.format(path=output))
    text = json.dumps(resolved, indent=2)
    write_text_atomic(stamp, text)
    return output


def run_fairness_study(config: FairnessStudyConfig, *, progress: Progress | None = None,
              executor: str = "local", ray_address: str | None = None) -> FairnessStudyResult:
    """Run (or resume) the study described by ``config``.

    Parameters
    ----------
    config : FairnessStudyConfig
        From :func:`load_fairness_config` or :func:`parse_fairness_config`.
    progress : callable, optional
        Receives progress events (the CLI draws rich progress bars from them).
    executor : {"local", "ray"}
        ``"ray"`` trains every (dataset, model, grid point) as a one-CPU Ray task
        (:mod:`recaudit.fairness.study._ray`); the run folder is the same.
    ray_address : str, optional
        Ray cluster address for ``executor="ray"`` (default: a new local cluster).

    Returns
    -------
    FairnessStudyResult
    """
    from ..._ray_session import check_executor, ray_session

    check_executor(executor, ray_address)
    output = _run_iv(config)
    report = progress or (lambda event, fields: None)
    datasets = {}
    with contextlib.ExitStack() as stack:
        trainer = None
        if executor == "ray":
            from ._ray import RayGridTrainer

            trainer = RayGridTrainer(stack.enter_context(ray_session(ray_address)))
        for dconf in config.datasets:
            report("dataset", {"name": dconf.name})
            datasets[dconf.name] = _run_dataset(
                config, dconf, output / dconf.name, report, trainer)
    result = FairnessStudyResult(output=output, config=config.to_dict(), datasets=datasets)
    text = json.dumps(result.to_dict(), indent=2, default=str)
    write_text_atomic(output / "results.json", text)
    return result


@dataclass(frozen=True)
class _Prepared:
    """One dataset after loading, implicit feedback, sampling, groups and the split."""

    groups: ProtectedGroups
    split: Split
    items: npt.NDArray[Any]
    summary: dict[str, Any]
    random_seed: np.random.SeedSequence
    protocols: tuple[Protocol, ...] = ()
    candidates: Mapping[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def test_users(self) -> list[Any]:
        return list(self.split.test[USER_ID].unique())

    @property
    def sampled(self) -> tuple[Protocol, ...]:
        """The sampled protocols, in config order."""
        return tuple(p for p in self.protocols if p.sampled)


def _run_dataset(
    config: FairnessStudyConfig, dconf: DatasetConfig, folder: Path, report: Progress,
    trainer: Any = None,
) -> DatasetResult:
    """Prepare one dataset, train its models, run the baselines, evaluate them all."""
    folder.mkdir(parents=True, exist_ok=True)
    prepared = _with_candidates(_prepare(dconf, folder), config, dconf, folder)
    (folder / "recs").mkdir(exist_ok=True)
    records = _train_models(config, prepared, folder, report, trainer)
    records |= _run_baselines(config, prepared, folder / "recs", report)
    models = _evaluate_models(config, dconf, prepared, records, report)
    _compare_models(config, dconf, prepared, records, folder)
    rows = [
        _summary_row(name, m.record, ev, dconf.protected, config.evaluate.n)
        for name, m in models.items()
        for ev in m.evaluations.values()
    ]
    pd.DataFrame(rows).to_csv(folder / "summary.csv", index=False)
    return DatasetResult(name=dconf.name, models=models, **prepared.summary)


def _prepare(dconf: DatasetConfig, folder: Path) -> _Prepared:
    """Load, binarise, sample, group and split one dataset; write its tables."""
    sample_seed, split_seed, random_seed = np.random.SeedSequence(dconf.seed).spawn(3)
    data = load_dataset(
        dconf.path,
        format=dconf.format,
        users=dconf.users,
        columns=dconf.columns or None,
        name=dconf.name,
    )
    raw_stats = long_tail_stats(data.interactions)
    data = to_implicit(data, threshold=dconf.threshold)
    data = sample_interactions(data, dconf.sample, rng=np.random.default_rng(sample_seed))
    groups, data = protected_groups(
        data,
        attribute=dconf.attribute,
        protected=dconf.protected,
        min_group_size=dconf.min_group_size,
        drop_missing=dconf.drop_missing,
    )
    stats = long_tail_stats(data.interactions)
    split = split_per_user(data, rng=np.random.default_rng(split_seed))
    for part, frame in (("train", split.train), ("valid", split.valid), ("test", split.test)):
        _write_table(frame, folder / part)
    _write_table(groups.users, folder / "users")
    stats.interactions_per_item.reset_index().to_csv(folder / "long_tail.csv", index=False)
    summary = {
        "dataset": {"name": dconf.name, "path": str(dconf.path), "format": dconf.format},
        "long_tail_raw": raw_stats.to_dict(),
        "long_tail": stats.to_dict(),
        "groups": groups.to_dict(),
        "split": split.to_dict(),
    }
    return _Prepared(
        groups=groups,
        split=split,
        items=data.interactions[ITEM_ID].unique(),
        summary=summary,
        random_seed=random_seed,
    )


def _candidates_rng(dconf: DatasetConfig, protocol: Protocol) -> np.random.Generator:
    """The generator of one protocol's candidates: ``default_rng((seed, 2, kind, N))``
    from the dataset's seed, so every model (and every run) gets the same ones."""
    kind = 1 if protocol.kind == "uniform" else 2
    return np.random.default_rng((dconf.seed, 2, kind, protocol.negatives))


def _with_candidates(
    prepared: _Prepared, config: FairnessStudyConfig, dconf: DatasetConfig, folder: Path
) -> _Prepared:
    """``prepared`` with the config's protocols and every sampled one's candidates.

    Drawn once per dataset and protocol into ``candidates/PROTOCOL.parquet``; a run
    that finds the file reads it back (the lists already made were ranked within it).
    """
    protocols = tuple(parse_protocol(p) for p in config.protocols)
    split = prepared.split
    interactions = pd.concat([split.train, split.valid, split.test], ignore_index=True)
    candidates = {}
    for protocol in protocols:
        if not protocol.sampled:
            continue
        path = folder / "candidates" / f"{protocol.name}.parquet"
        if path.exists():
            candidates[protocol.name] = pd.read_parquet(path)
            continue
        table = sample_candidates(protocol, split.test, interactions, prepared.items,
                                  rng=_candidates_rng(dconf, protocol))
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_table(table, path.with_suffix(""), suffixes=(".parquet",))
        candidates[protocol.name] = table
    return replace(prepared, protocols=protocols, candidates=candidates)


def _sampled_recs_path(recs_dir: Path, protocol: Protocol, name: str) -> Path:
    """Where the lists of ``name`` ranked within ``protocol``'s candidates go."""
    return recs_dir / protocol.name / f"{name}.parquet"


def _sampled_paths(prepared: _Prepared, recs_dir: Path, name: str) -> dict[str, str]:
    """Protocol name -> the file of ``name``'s lists, for every sampled protocol."""
    return {p.name: str(_sampled_recs_path(recs_dir, p, name)) for p in prepared.sampled}


def _write_sampled(
    prepared: _Prepared, recs_dir: Path, name: str,
    rank: Callable[[pd.DataFrame], pd.DataFrame], protocols: tuple[Protocol, ...],
) -> None:
    """Rank ``name`` within each of ``protocols``' candidates (``rank``) and write it."""
    for protocol in protocols:
        path = _sampled_recs_path(recs_dir, protocol, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_table(rank(prepared.candidates[protocol.name]), path.with_suffix(""))


def _rescored(
    config: FairnessStudyConfig, mconf: GridModel, prepared: _Prepared, folder: Path,
    info: dict[str, Any], report: Progress,
) -> dict[str, Any] | None:
    """A finished model's record with the lists of every protocol, scoring the missing
    ones from its kept checkpoint; ``None`` when it has none (then it is trained again).
    """
    recs_dir = folder / "recs"
    missing = tuple(p for p in prepared.sampled
                    if not _sampled_recs_path(recs_dir, p, mconf.name).exists())
    record = {**info, "resumed": True, "recs_sampled": _sampled_paths(prepared, recs_dir,
                                                                       mconf.name)}
    if not missing:
        return record
    checkpoint = info.get("checkpoint")
    if not checkpoint or not Path(checkpoint).is_file():
        return None
    report("rescore", {"name": mconf.name, "protocols": [p.name for p in missing]})
    loaded = load_model(Path(checkpoint), name=mconf.name,
                        workdir=folder / "models" / mconf.name, num_threads=config.num_threads)

    def rank(candidates: pd.DataFrame) -> pd.DataFrame:
        return recommend_candidates(loaded, candidates, n=config.list_length)

    _write_sampled(prepared, recs_dir, mconf.name, rank, missing)
    return record | {"rescored": [p.name for p in missing]}


def _train_models(
    config: FairnessStudyConfig, prepared: _Prepared, folder: Path, report: Progress, trainer: Any
) -> dict[str, dict[str, Any]]:
    """Train (or resume) every model; each one's ``results.json`` record."""
    data_path = folder / "recbole"
    write_atomic_split(prepared.split, data_path)
    if trainer is not None:  # Ray: start every unfinished model's grid points now
        for mconf in config.models:
            if _resumable(config, mconf, folder) is None:
                trainer.submit(mconf.name, data_path, **_train_kwargs(config, mconf, folder))
    records = {}
    for mconf in config.models:
        done = folder / "models" / mconf.name / "done.json"
        if done.exists():
            info = _resumable(config, mconf, folder) or {}
            record = _rescored(config, mconf, prepared, folder, info, report) if info else None
            if record is not None:
                report("model", {"name": mconf.name, "skipped": True, "n_grid": 0})
                records[mconf.name] = record
                continue
            done.unlink()
        train = train_model if trainer is None else trainer
        records[mconf.name] = _train_one(config, mconf, prepared, folder, report, train)
    return records


def _resumable(
    config: FairnessStudyConfig, mconf: GridModel, folder: Path
) -> dict[str, Any] | None:
    """The ``done.json`` of a model finished with these settings, else ``None``."""
    stamp = _fingerprint(_model_settings(config, mconf))
    return _finished(folder / "models" / mconf.name / "done.json", stamp,
                     folder / "recs" / f"{mconf.name}.parquet")


def _train_one(
    config: FairnessStudyConfig, mconf: GridModel, prepared: _Prepared, folder: Path,
    report: Progress, train: Any,
) -> dict[str, Any]:
    """Grid-search, train and recommend one model; write its lists and ``done.json``."""
    n_grid = math.prod(len(v) for v in mconf.grid.values()) if mconf.grid else 1
    report("model", {"name": mconf.name, "skipped": False, "n_grid": n_grid})
    trained = train(
        mconf.name,
        folder / "recbole",
        **_train_kwargs(config, mconf, folder),
        on_grid_point=_grid_reporter(report, mconf.name),
    )
    t0 = time.perf_counter()
    recs = recommend(trained, prepared.test_users, n=config.list_length,
                     exclude=prepared.split.known, items=prepared.items)
    recommend_seconds = time.perf_counter() - t0
    recs_path = folder / "recs" / f"{mconf.name}.parquet"
    _write_table(recs, recs_path.with_suffix(""))

    def rank(candidates: pd.DataFrame) -> pd.DataFrame:
        return recommend_candidates(trained, candidates, n=config.list_length)

    _write_sampled(prepared, folder / "recs", mconf.name, rank, prepared.sampled)
    info = {
        **trained.to_dict(),
        "recommend_seconds": recommend_seconds,
        "fingerprint": _fingerprint(_model_settings(config, mconf)),
        "recs": str(recs_path),
        "recs_sampled": _sampled_paths(prepared, folder / "recs", mconf.name),
    }
    text = json.dumps(info, indent=2, default=str)
    write_text_atomic(folder / "models" / mconf.name / "done.json", text)
    report("done", {"name": mconf.name, "seconds": trained.train_seconds})
    return {**info, "resumed": False}


def _run_baselines(
    config: FairnessStudyConfig, prepared: _Prepared, recs_dir: Path, report: Progress
) -> dict[str, dict[str, Any]]:
    """The baselines' top-N lists; each one's ``results.json`` record."""
    known, test_users = prepared.split.known, prepared.test_users
    records = {}
    for name in config.baselines:
        report("model", {"name": name, "skipped": False, "n_grid": 1})
        t0 = time.perf_counter()
        if name == "MostPop":
            recs = most_popular(test_users, prepared.split.train, n=config.list_length,
                                exclude=known)
        else:
            recs = random_items(
                test_users,
                prepared.items,
                n=config.list_length,
                exclude=known,
                rng=np.random.default_rng(prepared.random_seed),
            )
        _write_table(recs, recs_dir / name)
        _write_sampled(prepared, recs_dir, name,
                       _baseline_ranker(name, prepared, config.list_length), prepared.sampled)
        seconds = time.perf_counter() - t0
        report("done", {"name": name, "seconds": seconds})
        records[name] = {
            "name": name,
            "baseline": True,
            "train_seconds": seconds,
            "recs": str(recs_dir / f"{name}.parquet"),
            "recs_sampled": _sampled_paths(prepared, recs_dir, name),
        }
    return records


def _baseline_ranker(
    name: str, prepared: _Prepared, n: int
) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """How baseline ``name`` ranks a user's candidates (MostPop: training popularity;
    Random: a random order seeded as its full-ranking lists)."""
    if name == "MostPop":
        return lambda candidates: most_popular_candidates(candidates, prepared.split.train, n=n)
    return lambda candidates: random_candidates(
        candidates, n=n, rng=np.random.default_rng(prepared.random_seed))


def _evaluation_rng(dconf: DatasetConfig) -> np.random.Generator:
    """A new generator seeded from the dataset's seed, ``default_rng((seed, 1))``: the
    same for every model, so the models' figures share their resamples' randomness."""
    return np.random.default_rng((dconf.seed, 1))


def _evaluate_models(
    config: FairnessStudyConfig, dconf: DatasetConfig, prepared: _Prepared,
    records: dict[str, dict[str, Any]], report: Progress,
) -> dict[str, ModelResult]:
    """Evaluate every model's lists on the test split (:func:`evaluate`)."""
    options = config.evaluate_options(dconf)
    catalogue = pd.DataFrame({ITEM_ID: prepared.items})
    users = prepared.groups.users[[USER_ID, dconf.attribute]]
    out = {}
    for name, record in records.items():
        report("evaluate", {"name": name})
        evaluations = {}
        for protocol in prepared.protocols:
            recs = (record["recs"] if not protocol.sampled
                    else record["recs_sampled"][protocol.name])
            evaluations[protocol.name] = evaluate(
                pd.read_parquet(recs),
                prepared.split.test,
                users,
                attribute=dconf.attribute,
                protected=dconf.protected,
                items=catalogue,
                train=prepared.split.train,
                options=options,
                rng=_evaluation_rng(dconf),
                candidates=prepared.candidates.get(protocol.name),
                protocol=protocol,
            )
        out[name] = ModelResult(name=name, record=record,
                                evaluation=next(iter(evaluations.values())),
                                evaluations=evaluations)
    return out


def _compare_models(
    config: FairnessStudyConfig, dconf: DatasetConfig, prepared: _Prepared,
    records: dict[str, dict[str, Any]], folder: Path,
) -> None:
    """``compare.json``: every pair of the dataset's models and baselines compared on
    their lists of the study's first protocol (:func:`compare_models`, Holm over every
    row), and ``compare-PROTOCOL.json`` under each further protocol (a sampled one:
    the lists ranked within its candidates); rewritten on every run (cheap next to
    training; its seed is the dataset's). Not written with fewer than two models or
    without resamples (``n_boot`` or ``n_resamples`` 0: no intervals, no tests)."""
    if (len(records) < 2 or config.evaluate.n_boot == 0
            or config.evaluate.n_resamples == 0):
        return
    for i, protocol in enumerate(prepared.protocols):
        recs = {name: pd.read_parquet(record["recs"] if not protocol.sampled
                                      else record["recs_sampled"][protocol.name])
                for name, record in records.items()}
        result = compare_models(
            recs, prepared.split.test, prepared.groups.users[[USER_ID, dconf.attribute]],
            attribute=dconf.attribute, protected=dconf.protected,
            items=pd.DataFrame({ITEM_ID: prepared.items}),
            options=config.evaluate_options(dconf), rng=np.random.default_rng((dconf.seed, 2)),
            candidates=prepared.candidates.get(protocol.name), protocol=protocol)
        name = "compare.json" if i == 0 else f"compare-{protocol.name}.json"
        write_text_atomic(folder / name, json.dumps(to_jsonable(result.to_dict()), indent=2))


def _model_settings(config: FairnessStudyConfig, mconf: GridModel) -> dict[str, Any]:
    """What a finished model's ``done.json`` fingerprint covers."""
    return {
        "grid": {k: list(v) for k, v in mconf.grid.items()},
        "epochs": mconf.epochs or config.epochs,
        "settings": mconf.settings,
        "valid_metric": config.valid_metric,
        "list_length": config.list_length,
    }


def _finished(done: Path, stamp: str, recs: Path) -> dict[str, Any] | None:
    """The ``done.json`` of a finished model with these settings, else ``None``."""
    if not done.exists():
        return None
    info = read_json(done, what="a finished model's record")
    if not isinstance(info, dict):
        return None  # not ours: the model is trained again
    return info if info.get("fingerprint") == stamp and recs.exists() else None


def _train_kwargs(config: FairnessStudyConfig, mconf: GridModel, folder: Path) -> dict[str, Any]:
    """Keyword arguments of ``train_model`` for one model of one dataset."""
    return {
        "workdir": folder / "models" / mconf.name,
        "grid": mconf.grid,
        "epochs": mconf.epochs or config.epochs,
        "valid_metric": config.valid_metric,
        "seed": config.seed,
        "settings": mconf.settings,
        "num_threads": config.num_threads,
    }


def _grid_reporter(report: Progress, name: str) -> Callable[[int, int, dict[str, Any]], None]:
    def on_grid_point(index: int, total: int, params: dict[str, Any]) -> None:
        report("grid", {"name": name, "index": index, "total": total, "params": params})

    return on_grid_point


def _summary_row(
    name: str, info: Mapping[str, Any], ev: FairnessEvaluation, protected: str,
    ns: tuple[int, ...],
) -> dict[str, Any]:
    """One line of ``summary.csv``: the paper's Table 1 figures of one protocol, time."""
    unprotected = [g for g in ev.groups if g != protected]
    row: dict[str, Any] = {"model": name, "protocol": ev.protocol,
                           "train_seconds": info.get("train_seconds")}
    for n in ns:
        ib = ev.inter_bias[f"ndcg@{n}"].ib
        row[f"IB-NDCG@{n}"] = ib.value
        row[f"IB-NDCG@{n}_low"] = ib.ci.low
        row[f"IB-NDCG@{n}_high"] = ib.ci.high
    for n in ns:
        key = f"ndcg@{n}"
        row[f"NDCG@{n}"] = ev.overall[key].value
        for group in [protected, *unprotected]:
            est = ev.groups[group].metrics[key]
            row[f"NDCG@{n}_{group}"] = est.value
            row[f"NDCG@{n}_{group}_low"] = est.ci.low
            row[f"NDCG@{n}_{group}_high"] = est.ci.high
        row[f"RD-NDCG@{n}"] = ev.inter_bias[key].rd.value
        row[f"RD-NDCG@{n}_p"] = ev.inter_bias[key].pvalue
        row[f"IC@{n}"] = ev.item_coverage[n].value
        row[f"AvgPop@{n}"] = None if ev.avg_popularity is None else ev.avg_popularity.get(n)
    return row
