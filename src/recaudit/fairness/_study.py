"""The inter-bias study runner: one typed TOML config, one resumable run folder.

``recaudit fairness run CONFIG.toml`` calls :func:`run_study`, which for every
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
        recs/MODEL.{parquet,csv} user_id, item_id, rank, score, model
        summary.csv              one row per model: time, IB, group NDCG, coverage

A model whose ``done.json`` exists (with the same model settings) is not trained
again, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._io import write_atomic, write_text_atomic
from .._read import read_json
from ..exceptions import ConfigError, InputError
from ._config import (
    DatasetConfig,
    ModelConfig,
    StudyConfig,
    default_config_path,
    load_config,
    parse_config,
)
from ._dataset import (
    ITEM_ID,
    USER_ID,
    long_tail_stats,
    protected_groups,
    sample_interactions,
    split_per_user,
    to_implicit,
)
from ._evaluate import evaluate
from ._loaders import load_dataset
from .models._baselines import most_popular, random_items

__all__ = [
    "DatasetConfig",
    "ModelConfig",
    "StudyConfig",
    "StudyResult",
    "default_config_path",
    "load_config",
    "parse_config",
    "run_study",
]

MSG_OTHER_RUN = (
    "output folder {path} holds a run of a different config (study.json differs); "
    "choose another `output` or delete the folder"
)


@dataclass(frozen=True)
class StudyResult:
    """What :func:`run_study` did: the results JSON and where the tables are."""

    output: Path
    results: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The results JSON (also saved as ``OUTPUT/results.json``)."""
        return self.results


def _fingerprint(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _write_table(frame: pd.DataFrame, stem: Path) -> None:
    """``stem.parquet`` and ``stem.csv``, each written to a temporary name first."""
    write_atomic(stem.with_suffix(".parquet"), lambda p: frame.to_parquet(p, index=False))
    write_atomic(stem.with_suffix(".csv"), lambda p: frame.to_csv(p, index=False))


#: Progress callback: (event, fields) with events "dataset", "model", "grid", "done".
Progress = Callable[[str, dict[str, Any]], None]


def _run_iv(config: StudyConfig) -> Path:
    if not isinstance(config, StudyConfig):
        raise ConfigError(f"`config` must be a StudyConfig, got {type(config).__name__}")
    output = Path(config.output)
    output.mkdir(parents=True, exist_ok=True)
    resolved = config.to_dict()
    stamp = output / "study.json"
    if stamp.exists():
        previous = read_json(stamp, what="the study's resolved config")
        if not isinstance(previous, dict):
            raise InputError(f"{stamp} is not a study.json written by `recaudit fairness "
                             "run`; choose another output folder")
        # models may be added or changed between runs; data settings may not
        same = {k: v for k, v in previous.items() if k != "models"} == {
            k: v for k, v in resolved.items() if k != "models"
        }
        if not same:
            raise ConfigError(MSG_OTHER_RUN.format(path=output))
    text = json.dumps(resolved, indent=2)
    write_text_atomic(stamp, text)
    return output


def run_study(config: StudyConfig, *, progress: Progress | None = None,
              executor: str = "local", ray_address: str | None = None) -> StudyResult:
    """Run (or resume) the study described by ``config``.

    Parameters
    ----------
    config : StudyConfig
        From :func:`load_config` or :func:`parse_config`.
    progress : callable, optional
        Receives progress events (the CLI draws rich progress bars from them).
    executor : {"local", "ray"}
        ``"ray"`` trains every (dataset, model, grid point) as a one-CPU Ray task
        (:mod:`recaudit.fairness._ray`); the run folder is the same.
    ray_address : str, optional
        Ray cluster address for ``executor="ray"`` (default: a new local cluster).

    Returns
    -------
    StudyResult
    """
    from .._ray_session import check_executor, ray_session

    check_executor(executor, ray_address)
    output = _run_iv(config)
    report = progress or (lambda event, fields: None)
    results: dict[str, Any] = {"config": config.to_dict(), "datasets": {}}
    with contextlib.ExitStack() as stack:
        trainer = None
        if executor == "ray":
            from ._ray import RayGridTrainer

            trainer = RayGridTrainer(stack.enter_context(ray_session(ray_address)))
        for dconf in config.datasets:
            report("dataset", {"name": dconf.name})
            results["datasets"][dconf.name] = _run_dataset(
                config, dconf, output / dconf.name, report, trainer)
    text = json.dumps(results, indent=2, default=str)
    write_text_atomic(output / "results.json", text)
    return StudyResult(output=output, results=results)


def _run_dataset(
    config: StudyConfig, dconf: DatasetConfig, folder: Path, report: Progress,
    trainer: Any = None,
) -> dict[str, Any]:
    from .models._recbole import recommend, write_atomic_split
    from .models._recbole import train_model as train_local

    folder.mkdir(parents=True, exist_ok=True)
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
    test_users = list(split.test[USER_ID].unique())
    known = split.known
    items = data.interactions[ITEM_ID].unique()
    out: dict[str, Any] = {
        "dataset": {"name": dconf.name, "path": str(dconf.path), "format": dconf.format},
        "long_tail_raw": raw_stats.to_dict(),
        "long_tail": stats.to_dict(),
        "groups": groups.to_dict(),
        "split": split.to_dict(),
        "models": {},
    }
    recs_dir = folder / "recs"
    recs_dir.mkdir(exist_ok=True)
    data_path = folder / "recbole"
    write_atomic_split(split, data_path)
    train_model = train_local if trainer is None else trainer
    if trainer is not None:  # Ray: start every unfinished model's grid points now
        for mconf in config.models:
            stamp = _fingerprint(_model_settings(config, mconf))
            if _finished(folder / "models" / mconf.name / "done.json", stamp,
                         recs_dir / f"{mconf.name}.parquet") is None:
                trainer.submit(mconf.name, data_path, **_train_kwargs(config, mconf,
                                                                        folder))
    for mconf in config.models:
        mdir = folder / "models" / mconf.name
        done = mdir / "done.json"
        stamp = _fingerprint(_model_settings(config, mconf))
        if done.exists():
            info = _finished(done, stamp, recs_dir / f"{mconf.name}.parquet") or {}
            if info:
                report("model", {"name": mconf.name, "skipped": True, "n_grid": 0})
                out["models"][mconf.name] = {**info, "resumed": True}
                continue
            done.unlink()
        n_grid = math.prod(len(v) for v in mconf.grid.values()) if mconf.grid else 1
        report("model", {"name": mconf.name, "skipped": False, "n_grid": n_grid})
        trained = train_model(
            mconf.name,
            data_path,
            **_train_kwargs(config, mconf, folder),
            on_grid_point=_grid_reporter(report, mconf.name),
        )
        t0 = time.perf_counter()
        recs = recommend(trained, test_users, n=config.list_length, exclude=known, items=items)
        recommend_seconds = time.perf_counter() - t0
        _write_table(recs, recs_dir / mconf.name)
        info = {
            **trained.to_dict(),
            "recommend_seconds": recommend_seconds,
            "fingerprint": stamp,
            "recs": str(recs_dir / f"{mconf.name}.parquet"),
        }
        text = json.dumps(info, indent=2, default=str)
        write_text_atomic(done, text)
        report("done", {"name": mconf.name, "seconds": trained.train_seconds})
        out["models"][mconf.name] = {**info, "resumed": False}
    for name in config.baselines:
        report("model", {"name": name, "skipped": False, "n_grid": 1})
        t0 = time.perf_counter()
        if name == "MostPop":
            recs = most_popular(test_users, split.train, n=config.list_length, exclude=known)
        else:
            recs = random_items(
                test_users,
                items,
                n=config.list_length,
                exclude=known,
                rng=np.random.default_rng(random_seed),
            )
        _write_table(recs, recs_dir / name)
        seconds = time.perf_counter() - t0
        report("done", {"name": name, "seconds": seconds})
        out["models"][name] = {
            "name": name,
            "baseline": True,
            "train_seconds": seconds,
            "recs": str(recs_dir / f"{name}.parquet"),
        }
    catalogue = pd.DataFrame({ITEM_ID: items})
    rows = []
    eval_seed = np.random.SeedSequence([dconf.seed, 1])
    for name, info in out["models"].items():
        report("evaluate", {"name": name})
        evaluation = evaluate(
            pd.read_parquet(info["recs"]),
            split.test,
            groups.users[[USER_ID, dconf.attribute]],
            attribute=dconf.attribute,
            protected=dconf.protected,
            n=config.n,
            items=catalogue,
            train=split.train,
            n_boot=config.n_boot,
            n_resamples=config.n_resamples,
            min_group_size=dconf.min_group_size,
            rng=np.random.default_rng(eval_seed),
        ).to_dict()
        info["evaluation"] = evaluation
        rows.append(_summary_row(name, info, evaluation, dconf.protected, config.n))
    pd.DataFrame(rows).to_csv(folder / "summary.csv", index=False)
    return out


def _model_settings(config: StudyConfig, mconf: ModelConfig) -> dict[str, Any]:
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


def _train_kwargs(config: StudyConfig, mconf: ModelConfig, folder: Path) -> dict[str, Any]:
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
    name: str, info: dict[str, Any], ev: dict[str, Any], protected: str, ns: tuple[int, ...]
) -> dict[str, Any]:
    """One line of ``summary.csv``: the paper's Table 1 figures plus time."""
    unprotected = [g for g in ev["groups"] if g != protected]
    row: dict[str, Any] = {"model": name, "train_seconds": info.get("train_seconds")}
    for n in ns:
        key = f"ndcg@{n}"
        row[f"IB-NDCG@{n}"] = ev["ib"][key]["value"]
        row[f"IB-NDCG@{n}_low"] = ev["ib"][key]["ci_low"]
        row[f"IB-NDCG@{n}_high"] = ev["ib"][key]["ci_high"]
    for n in ns:
        key = f"ndcg@{n}"
        row[f"NDCG@{n}"] = ev["overall"][key]["value"]
        for group in [protected, *unprotected]:
            est = ev["groups"][group][key]
            row[f"NDCG@{n}_{group}"] = est["value"]
            row[f"NDCG@{n}_{group}_low"] = est["ci_low"]
            row[f"NDCG@{n}_{group}_high"] = est["ci_high"]
        row[f"RD-NDCG@{n}"] = ev["rd"][key]["value"]
        row[f"RD-NDCG@{n}_p"] = ev["rd"][key]["pvalue"]
        row[f"IC@{n}"] = ev[f"item_coverage@{n}"]["value"]
        row[f"AvgPop@{n}"] = ev.get(f"avg_popularity@{n}")
    return row
