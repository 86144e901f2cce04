"""Run the inter-bias study's grid search on a Ray cluster.

``recaudit fairness run CONFIG.toml --executor ray`` trains every (dataset, model, grid
point) as one ``ray.remote(num_cpus=1)`` task. :func:`~._study.run_fairness_study` still prepares
each dataset (load, sample, split) and evaluates in the driver; for a dataset it first
submits the grid points of every model that is not finished, then collects them model
by model, so all the cluster's CPUs train at once.

A task trains ONE grid point with :func:`~.models._recbole.train_model` (a one-point
grid in its own folder ``models/MODEL/grid/NNN``), exactly as the local grid search
trains it: RecBole re-seeds before every grid point, so a point's result does not
depend on which points ran before it, nor where. The driver writes each finished point
to ``models/MODEL/grid/NNN/point.pkl`` (model, dataset, validation result, settings
fingerprint), keeps the best (ties: the first, as locally) and recommends with it.
On resume, finished models are skipped by the study's ``done.json`` as with the
local executor, and finished grid points of an unfinished model are loaded from their
``point.pkl`` instead of being trained again.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..._io import write_bytes_atomic
from .models._recbole import TrainedModel, expand_grid, recbole_class, train_model

__all__ = ["RayGridTrainer"]

POINT_FILE = "point.pkl"


def _train_point(name: str, data_path: Path, workdir: Path, params: dict[str, Any],
                 kwargs: dict[str, Any]) -> TrainedModel:
    """One grid point, run on a Ray worker (one CPU)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return train_model(name, data_path, workdir=workdir,
                       grid={k: [v] for k, v in params.items()}, **kwargs)


def _fingerprint(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class RayGridTrainer:
    """A drop-in for :func:`~.models._recbole.train_model` that trains on Ray.

    :meth:`submit` starts every grid point of a model as a Ray task;
    :meth:`__call__` (same signature as ``train_model``) submits what is not yet
    submitted, waits for the points and returns the best as a :class:`TrainedModel`.
    Use inside :func:`recaudit._ray_session.ray_session`.
    """

    def __init__(self, ray: Any) -> None:
        self._ray = ray
        self._remote = ray.remote(num_cpus=1, max_retries=2)(_train_point)
        self._pending: dict[Path, list[tuple[Path, str, Any]]] = {}

    def submit(self, name: str, data_path: Path, *, workdir: Path,
               grid: Mapping[str, Sequence[Any]] | None = None, **kwargs: Any) -> None:
        """Start the grid points of one model that have no finished ``point.pkl``."""
        workdir = Path(workdir)
        if workdir in self._pending:
            return
        recbole_class(name)  # unknown model names fail here, before anything runs
        kwargs.pop("on_grid_point", None)
        points = expand_grid(dict(grid or {}))
        jobs = []
        for index, params in enumerate(points):
            folder = workdir / "grid" / f"{index:03d}"
            stamp = _fingerprint({"name": name, "params": params, **kwargs,
                                  "data": str(data_path)})
            if self._finished(folder, stamp) is not None:
                jobs.append((folder, stamp, None))
                continue
            ref = self._remote.remote(name, Path(data_path), folder, params, kwargs)
            jobs.append((folder, stamp, ref))
        self._pending[workdir] = jobs

    def __call__(self, name: str, data_path: Path, *, workdir: Path,
                 grid: Mapping[str, Sequence[Any]] | None = None,
                 on_grid_point: Callable[[int, int, dict[str, Any]], None] | None = None,
                 **kwargs: Any) -> TrainedModel:
        """Train (or load) every grid point of ``name``; return the best."""
        self.submit(name, data_path, workdir=workdir, grid=grid, **kwargs)
        jobs = self._pending.pop(Path(workdir))
        points: list[TrainedModel] = []
        for index, (folder, stamp, ref) in enumerate(jobs):
            if on_grid_point is not None:
                on_grid_point(index, len(jobs), {})
            if ref is None:
                finished = self._finished(folder, stamp)
                if finished is None:  # submit() found it finished; it was removed since
                    raise FileNotFoundError(f"{folder / POINT_FILE} disappeared during the run")
                trained = finished
            else:
                trained = self._ray.get(ref)
                write_bytes_atomic(folder / POINT_FILE,
                                   pickle.dumps({"fingerprint": stamp, "trained": trained}))
            points.append(trained)
        best = points[0]
        for p in points[1:]:  # ties: the first wins, as in the local grid search
            if p.grid[0].valid_score > best.grid[0].valid_score:
                best = p
        return TrainedModel(
            name=best.name, recbole_name=best.recbole_name, params=best.params,
            valid_metric=best.valid_metric, grid=tuple(p.grid[0] for p in points),
            train_seconds=sum(p.train_seconds for p in points),
            model=best.model, dataset=best.dataset, checkpoint=best.checkpoint,
        )

    @staticmethod
    def _finished(folder: Path, stamp: str) -> TrainedModel | None:
        path = folder / POINT_FILE
        if not path.is_file():
            return None
        try:
            with path.open("rb") as fh:
                saved = pickle.load(fh)  # noqa: S301 -- our own run folder
        except (OSError, pickle.UnpicklingError, EOFError):
            return None
        if saved.get("fingerprint") != stamp:
            return None
        trained: TrainedModel = saved["trained"]
        return trained
