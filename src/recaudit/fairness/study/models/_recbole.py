"""Train the study's CF/GNN models through RecBole 1.2.1 on OUR split.

The split made by :func:`recaudit.fairness.split_per_user` is written as RecBole
atomic files ``NAME.train.inter``, ``NAME.valid.inter`` and ``NAME.test.inter`` and
RecBole is pointed at them with ``benchmark_filename``, so it trains, validates and
builds its vocabularies on exactly these three parts (its own splitting is off).
Grid search picks the hyperparameters with the best validation metric (NDCG@10 by
default); the best grid point's best-epoch checkpoint is the final model (the train
set is the same for every grid point, so retraining would repeat the same run).
Top-N lists are computed here, not by RecBole's evaluator: every item a user has in
train or validation is masked, and ids are mapped back to the ORIGINAL ids.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ....exceptions import ConfigError, InputError
from ... import ITEM_ID, USER_ID, Split
from ._recbole_compat import import_recbole, load_checkpoint, recbole_session
from ._resume import PointProgress

__all__ = [
    "MODELS",
    "GridPoint",
    "TrainedModel",
    "expand_grid",
    "recbole_class",
    "recommend",
    "train_model",
    "write_atomic_split",
]

#: The nine models of the study: study name -> RecBole class name.
MODELS: dict[str, str] = {
    "ItemKNN": "ItemKNN",
    "MF": "BPR",
    "DMF": "DMF",
    "NeuMF": "NeuMF",
    "NNCF": "NNCF",
    "NGCF": "NGCF",
    "SGL": "SGL",
    "LightGCN": "LightGCN",
    "DGCF": "DGCF",
}
DATASET_NAME = "study"
#: Largest number of (user, item) pairs scored in one ``predict`` call.
PAIRS_PER_CALL = 65_536
PARTS = ("train", "valid", "test")
#: The chosen grid point's RecBole checkpoint, kept in the model's folder.
BEST_CHECKPOINT = "best.pth"
MSG_UNKNOWN_MODEL = "unknown model {name!r}; choose one of {names} (MF is RecBole's BPR)"
MSG_UNKNOWN_PARAM = (
    "hyperparameter {key!r} is not a RecBole 1.2.1 setting of {model}; "
    "check the spelling against recbole/properties/model/{cls}.yaml"
)

#: Settings fixed by recaudit; a grid may not override them.
_FIXED = {
    "USER_ID_FIELD": USER_ID,
    "ITEM_ID_FIELD": ITEM_ID,
    "load_col": {"inter": [USER_ID, ITEM_ID]},
    "benchmark_filename": list(PARTS),
    "eval_args": {"group_by": "user", "order": "RO", "mode": "full"},
    "device": "cpu",
    "use_gpu": False,
    "show_progress": False,
    "save_dataset": False,
    "save_dataloaders": False,
    "log_wandb": False,
    "reproducibility": True,
}


def recbole_class(name: str) -> str:
    """RecBole class of a study model name (``"MF"`` -> ``"BPR"``); RecBole names pass."""
    if name in MODELS:
        return MODELS[name]
    if name in MODELS.values():
        return name
    raise ConfigError(MSG_UNKNOWN_MODEL.format(name=name, names=", ".join(MODELS)))


def expand_grid(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """All combinations of a hyperparameter grid, in a stable order.

    >>> expand_grid({"learning_rate": [0.01, 0.001], "embedding_size": [64]})
    [{'learning_rate': 0.01, 'embedding_size': 64}, {'learning_rate': 0.001, 'embedding_size': 64}]
    """
    keys = list(grid)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*grid.values())]


def write_atomic_split(split: Split, folder: Path) -> Path:
    """Write a split as RecBole benchmark files ``study.{train,valid,test}.inter``.

    Only ``user_id`` and ``item_id`` are written (as ``token`` fields): the models
    are trained on implicit feedback.

    Parameters
    ----------
    split : Split
        The per-user split.
    folder : pathlib.Path
        RecBole ``data_path``; the files go to ``folder/study/``.

    Returns
    -------
    pathlib.Path
        ``folder`` (what RecBole's ``data_path`` must be).
    """
    target = Path(folder) / DATASET_NAME
    target.mkdir(parents=True, exist_ok=True)
    for part, frame in zip(PARTS, (split.train, split.valid, split.test), strict=True):
        tokens = frame[[USER_ID, ITEM_ID]].astype(str)
        bad = tokens.apply(lambda s: s.str.contains(r"[\t\n\r]", regex=True)).to_numpy().any()
        if bad:
            raise InputError(f"ids in the {part} split contain tabs or newlines")
        tmp = target / f"{DATASET_NAME}.{part}.inter.tmp"
        with tmp.open("w", encoding="utf-8", newline="") as fh:
            fh.write(f"{USER_ID}:token\t{ITEM_ID}:token\n")
            tokens.to_csv(fh, sep="\t", header=False, index=False)
        tmp.replace(target / f"{DATASET_NAME}.{part}.inter")
    return Path(folder)


@dataclass(frozen=True)
class GridPoint:
    """One trained grid point: its hyperparameters, validation result and convergence.

    Attributes
    ----------
    params : dict
        The grid point's hyperparameters.
    valid_score, valid_result
        Validation metric of the best epoch, and every validation figure of it.
    seconds : float
        Wall-clock seconds of this point (data preparation, training, validation),
        the sessions before a resume included.
    epochs_run : int
        Epochs trained before RecBole stopped (the budget, or early stopping).
    epoch_budget : int
        The most epochs RecBole would train: ``epochs``, or 1 for a model with no
        iterative training (ItemKNN, whose one "epoch" computes the similarities).
    best_epoch : int
        The epoch (1-based) whose checkpoint is kept: the best validation score.
    stopped_early : bool
        Whether early stopping ended training before the epoch budget; ``False``
        means the budget ran out first and the model may not have converged.
    resumed_at : tuple of int
        The 1-based epochs at which training resumed after an interruption (empty:
        trained in one go); resumed training is identical to uninterrupted training
        (:mod:`._resume`).
    """

    params: dict[str, Any]
    valid_score: float
    valid_result: dict[str, float]
    seconds: float
    epochs_run: int = 0
    epoch_budget: int = 0
    best_epoch: int = 0
    stopped_early: bool = False
    resumed_at: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "params": self.params,
            "valid_score": self.valid_score,
            "valid_result": self.valid_result,
            "seconds": self.seconds,
            "epochs_run": self.epochs_run,
            "epoch_budget": self.epoch_budget,
            "best_epoch": self.best_epoch,
            "stopped_early": self.stopped_early,
            "resumed_at": list(self.resumed_at),
        }


@dataclass(frozen=True)
class TrainedModel:
    """A model trained by :func:`train_model`, ready for :func:`recommend`.

    Attributes
    ----------
    name : str
        Study name (``"MF"``, ``"LightGCN"``, ...).
    recbole_name : str
        RecBole class (``"BPR"``, ...).
    params : dict
        The chosen hyperparameters.
    valid_metric : str
        The selection metric, e.g. ``"NDCG@10"``.
    grid : tuple of GridPoint
        Every grid point tried, in order.
    train_seconds : float
        Wall-clock seconds of the whole grid search (data preparation, training
        and validation of every grid point).
    model, dataset : object
        The RecBole model (best epoch of the best grid point) and its dataset.
    checkpoint : pathlib.Path or None
        RecBole's checkpoint of that model (``best.pth`` in the grid point's folder),
        kept so a finished model can be scored again without retraining.
    """

    name: str
    recbole_name: str
    params: dict[str, Any]
    valid_metric: str
    grid: tuple[GridPoint, ...]
    train_seconds: float
    model: Any = field(repr=False)
    dataset: Any = field(repr=False)
    checkpoint: Path | None = None

    @property
    def valid_score(self) -> float:
        """Validation metric of the chosen grid point."""
        return max(p.valid_score for p in self.grid)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (without the model)."""
        return {
            "name": self.name,
            "recbole_name": self.recbole_name,
            "params": self.params,
            "valid_metric": self.valid_metric,
            "valid_score": self.valid_score,
            "train_seconds": self.train_seconds,
            "grid": [p.to_dict() for p in self.grid],
            "checkpoint": None if self.checkpoint is None else str(self.checkpoint),
        }


def train_model(
    name: str,
    data_path: Path,
    *,
    workdir: Path,
    grid: Mapping[str, Sequence[Any]] | None = None,
    epochs: int = 20,
    valid_metric: str = "NDCG@10",
    seed: int = 2020,
    settings: Mapping[str, Any] | None = None,
    num_threads: int = 1,
    on_grid_point: Callable[[int, int, dict[str, Any]], None] | None = None,
) -> TrainedModel:
    """Grid-search and train one model on a split written by :func:`write_atomic_split`.

    Each grid point is trained for at most ``epochs`` epochs with RecBole's
    early stopping on ``valid_metric`` (``stopping_step``, default 10), its
    best-epoch checkpoint kept; the grid point with the highest validation score
    wins (ties: the first).

    RecBole seeds ``random``, ``numpy`` and ``torch`` globally (``init_seed``); this
    happens inside :func:`~._recbole_compat.recbole_session`, which restores the
    caller's global random states afterwards.

    Parameters
    ----------
    name : str
        Study model name (see :data:`MODELS`) or RecBole class name.
    data_path : pathlib.Path
        The folder returned by :func:`write_atomic_split`.
    workdir : pathlib.Path
        This model's folder in the run folder (logs, checkpoints).
    grid : mapping of str to sequence, optional
        RecBole hyperparameter -> values; unknown names are a :class:`ConfigError`.
    epochs : int, default 20
        Maximum training epochs per grid point.
    valid_metric : str, default "NDCG@10"
        Selection metric (RecBole name, ``Metric@k``).
    seed : int, default 2020
        RecBole seed (model initialisation, negative sampling).
    settings : mapping, optional
        Extra RecBole settings shared by all grid points (``train_batch_size``,
        ``learning_rate``, ``stopping_step``, ...).
    num_threads : int, default 1
        torch threads.
    on_grid_point : callable, optional
        Called as ``on_grid_point(index, total, params)`` before each grid point.

    Returns
    -------
    TrainedModel
    """
    cls, points, metric_k = _train_model_iv(name, grid, epochs, valid_metric)
    _, recbole = import_recbole()
    from recbole.config import Config

    workdir = Path(workdir).resolve()
    base = {
        **dict(settings or {}),
        **_FIXED,
        "data_path": str(Path(data_path).resolve()),
        "checkpoint_dir": str(workdir / "checkpoints"),
        "epochs": epochs,
        "seed": seed,
        "valid_metric": valid_metric,
        "topk": [metric_k],
        "metrics": ["NDCG", "Recall", "Hit", "ItemCoverage", "AveragePopularity"],
    }
    results: list[GridPoint] = []
    best: tuple[float, Any, Any, dict[str, Any]] | None = None
    kept = workdir / BEST_CHECKPOINT
    started = time.perf_counter()
    with recbole_session(workdir, num_threads=num_threads) as logger:
        known = Config(model=cls, dataset=DATASET_NAME, config_dict=base).final_config_dict
        for params in points:
            for key in params:
                if key not in known or key in _FIXED:
                    raise ConfigError(MSG_UNKNOWN_PARAM.format(key=key, model=name, cls=cls))
        for index, params in enumerate(points):
            if on_grid_point is not None:
                on_grid_point(index, len(points), params)
            config = Config(model=cls, dataset=DATASET_NAME, config_dict={**base, **params})
            logger.info("recaudit grid point %d/%d of %s: %s", index + 1, len(points), name, params)
            point, model, dataset, saved = _fit_point(config, cls, index, params)
            results.append(point)
            if best is None or point.valid_score > best[0]:  # ties: the first wins
                best = (point.valid_score, model, dataset, dict(params))
                saved.replace(kept)
            else:
                saved.unlink()
    if best is None:  # every grid point failed to produce a validation score
        raise ConfigError(f"no grid point of {name} produced a validation score")
    return TrainedModel(
        name=name,
        recbole_name=cls,
        params=best[3],
        valid_metric=valid_metric,
        grid=tuple(results),
        train_seconds=time.perf_counter() - started,
        model=best[1],
        dataset=best[2],
        checkpoint=kept,
    )


def _fit_point(config: Any, cls: str, index: int, params: Mapping[str, Any]
               ) -> tuple[GridPoint, Any, Any, Path]:
    """Train one grid point (resuming it if a resume file fits); its best epoch loaded.

    Returns the :class:`GridPoint`, the model at its best epoch, the RecBole dataset
    and the path of the best-epoch checkpoint.
    """
    from recbole.data import create_dataset, data_preparation
    from recbole.utils import get_model, get_trainer, init_seed

    t0 = time.perf_counter()
    init_seed(config["seed"], config["reproducibility"])
    dataset = create_dataset(config)
    train_data, valid_data, _ = data_preparation(config, dataset)
    model = get_model(cls)(config, train_data._dataset).to("cpu")
    trainer = get_trainer(config["MODEL_TYPE"], cls)(config, model)
    progress = PointProgress(Path(config["checkpoint_dir"]), index,
                             {"model": cls, **config.final_config_dict})
    resumed = progress.restore(trainer, train_data)
    try:
        if resumed is not None and resumed.finished:
            score, result = resumed.best_valid_score, resumed.best_valid_result
        else:
            score, result = trainer.fit(
                train_data, valid_data, verbose=False, saved=True, show_progress=False,
                callback_fn=progress.saver(
                    trainer, train_data,
                    seconds_before=0.0 if resumed is None else resumed.seconds,
                    resumed_at=() if resumed is None else resumed.resumed_at),
            )
    finally:  # its writer thread uses a path relative to recbole_session's cwd
        trainer.tensorboard.close()
    saved = Path(trainer.saved_model_file)
    checkpoint = load_checkpoint(saved)
    model.load_state_dict(checkpoint["state_dict"])
    model.load_other_parameter(checkpoint.get("other_parameter"))
    losses = trainer.train_loss_dict
    epochs_run = max(losses) + 1 if losses else 0 if resumed is None else resumed.epoch + 1
    point = GridPoint(
        params=dict(params),
        valid_score=float(score),
        valid_result={str(k): float(v) for k, v in dict(result or {}).items()},
        seconds=(0.0 if resumed is None else resumed.seconds) + time.perf_counter() - t0,
        epochs_run=epochs_run,
        best_epoch=int(checkpoint.get("epoch", epochs_run - 1)) + 1,
        epoch_budget=int(trainer.epochs),
        stopped_early=epochs_run < trainer.epochs,
        resumed_at=() if resumed is None else resumed.resumed_at,
    )
    progress.clear()
    return point, model, dataset, saved


def _train_model_iv(
    name: str, grid: Mapping[str, Sequence[Any]] | None, epochs: int, valid_metric: str
) -> tuple[str, list[dict[str, Any]], int]:
    cls = recbole_class(name)
    grid = dict(grid or {})
    for key, values in grid.items():
        if isinstance(values, str) or not isinstance(values, Sequence) or len(values) == 0:
            raise ConfigError(
                f"grid values of {key!r} for {name} must be a non-empty list, got {values!r}"
            )
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ConfigError(f"`epochs` must be a positive integer, got {epochs!r}")
    metric, _, k = valid_metric.partition("@")
    if not metric or not k.isdigit() or int(k) < 1:
        raise ConfigError(f"`valid_metric` must look like 'NDCG@10', got {valid_metric!r}")
    return cls, expand_grid(grid), int(k)


def recommend(
    trained: TrainedModel,
    users: Iterable[Any],
    *,
    n: int = 20,
    exclude: pd.DataFrame,
    items: Iterable[Any],
    batch_size: int = 256,
) -> pd.DataFrame:
    """Top-``n`` lists of a trained model, in original ids, known items masked.

    Parameters
    ----------
    trained : TrainedModel
        From :func:`train_model`.
    users : iterable
        Original user ids to recommend for (normally every test user).
    n : int, default 20
        List length.
    exclude : pandas.DataFrame
        ``user_id``, ``item_id`` pairs never to recommend (train + validation).
    items : iterable
        Every original item id of the split (train, validation and test): RecBole
        knows items as text tokens, and this maps them back to their original values
        and type.
    batch_size : int, default 256
        Users scored at once.

    Returns
    -------
    pandas.DataFrame
        ``user_id``, ``item_id``, ``rank`` (1 = top), ``score``, ``model``; ids have
        the original values and types.
    """
    users, n = _recommend_iv(trained, users, n, exclude)
    torch, _ = import_recbole()
    from recbole.data.interaction import Interaction

    dataset, model = trained.dataset, trained.model
    uid_field, iid_field = dataset.uid_field, dataset.iid_field
    original_users = _token_map(users)
    original_items = _token_map(items)
    item_tokens = dataset.field2id_token[iid_field]
    n_items = dataset.item_num
    n = min(n, n_items - 1)
    uid_internal = dataset.token2id(uid_field, [str(u) for u in users])
    known = exclude.loc[exclude[USER_ID].astype(str).isin(set(map(str, users)))]
    k_uid = dataset.token2id(uid_field, known[USER_ID].astype(str).to_numpy())
    k_iid = dataset.token2id(iid_field, known[ITEM_ID].astype(str).to_numpy())
    row_of = {int(u): i for i, u in enumerate(np.atleast_1d(uid_internal))}
    mask_rows = np.array([row_of[int(u)] for u in np.atleast_1d(k_uid)], dtype=np.int64)
    mask_cols = np.atleast_1d(k_iid).astype(np.int64)
    frames = []
    model.eval()
    with torch.no_grad():
        for start in range(0, len(users), batch_size):
            ids = torch.as_tensor(np.atleast_1d(uid_internal)[start : start + batch_size])
            scores = _score_all(model, ids, uid_field, iid_field, n_items, Interaction, torch)
            scores[:, 0] = -math.inf  # RecBole's padding item
            in_batch = (mask_rows >= start) & (mask_rows < start + len(ids))
            scores[mask_rows[in_batch] - start, mask_cols[in_batch]] = -math.inf
            top = torch.topk(scores, n, dim=1)
            frames.append(
                pd.DataFrame(
                    {
                        "row": np.repeat(np.arange(start, start + len(ids)), n),
                        "iid": top.indices.numpy().ravel(),
                        "rank": np.tile(np.arange(1, n + 1), len(ids)),
                        "score": top.values.numpy().ravel().astype(float),
                    }
                )
            )
    recs = pd.concat(frames, ignore_index=True)
    recs = recs.loc[np.isfinite(recs["score"])]
    user_values = [original_users[str(u)] for u in users]
    item_values = {str(t): original_items.get(str(t), t) for t in item_tokens}  # [PAD] stays
    out = pd.DataFrame(
        {
            USER_ID: [user_values[r] for r in recs["row"]],
            ITEM_ID: [item_values[str(item_tokens[i])] for i in recs["iid"]],
            "rank": recs["rank"].to_numpy(),
            "score": recs["score"].to_numpy(),
            "model": trained.name,
        }
    )
    return out


def _score_all(
    model: Any, ids: Any, uid_field: str, iid_field: str, n_items: int, interaction: Any, torch: Any
) -> Any:
    """Scores of every item for users ``ids``: ``full_sort_predict`` or ``predict``.

    NeuMF and NNCF have no ``full_sort_predict`` in RecBole 1.2.1; for them every
    (user, item) pair is scored with ``predict``, at most :data:`PAIRS_PER_CALL`
    pairs at a time (NNCF's per-pair convolutions otherwise need gigabytes).
    """
    try:
        scores = model.full_sort_predict(interaction({uid_field: ids}))
    except NotImplementedError:
        step = max(1, PAIRS_PER_CALL // n_items)
        parts = []
        for start in range(0, len(ids), step):
            chunk = ids[start : start + step]
            pairs = interaction(
                {
                    uid_field: chunk.repeat_interleave(n_items),
                    iid_field: torch.arange(n_items).repeat(len(chunk)),
                }
            )
            parts.append(model.predict(pairs))
        scores = torch.cat(parts)
    return scores.view(len(ids), n_items).clone().float()


def _token_map(values: Iterable[Any]) -> dict[str, Any]:
    mapping: dict[str, Any] = {}
    for value in values:
        key = str(value)
        if key in mapping and mapping[key] != value:
            raise InputError(f"ids {mapping[key]!r} and {value!r} have the same text {key!r}")
        mapping[key] = value
    return mapping


def _recommend_iv(
    trained: TrainedModel, users: Iterable[Any], n: int, exclude: pd.DataFrame
) -> tuple[list[Any], int]:
    if not isinstance(trained, TrainedModel):
        raise InputError(f"`trained` must be a TrainedModel, got {type(trained).__name__}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"`n` must be a positive integer, got {n!r}")
    for column in (USER_ID, ITEM_ID):
        if column not in exclude.columns:
            raise InputError(f"`exclude` has no column `{column}`")
    users = list(dict.fromkeys(users))
    known = set(trained.dataset.field2token_id[trained.dataset.uid_field])
    unknown = [u for u in users if str(u) not in known]
    if unknown:
        raise InputError(
            f"{len(unknown)} users are not in the training data of {trained.name} "
            f"(e.g. {unknown[0]!r})"
        )
    return users, n
