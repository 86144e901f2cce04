"""Resume an interrupted grid point from its last validation, as if never interrupted.

RecBole's ``Trainer`` keeps one checkpoint, the best epoch's, and starts every run
at epoch 0: a crash (or the end of a session) one hour into a DGCF grid point loses
the hour. Here every validation also writes ``checkpoints/resume-NNN.pth`` (NNN the
grid point's index) holding what RecBole's own checkpoint holds -- the epoch, the
early-stopping counter, the best score, model and optimizer state -- plus what it
does not: the best validation result, the path of the best checkpoint, the seconds
spent so far, and the random states that drive the next epochs (``random``,
``numpy.random``, ``torch`` and the training loader's ``torch.Generator``, which
shuffle batches, draw negatives and drop units). A rerun with the same settings
loads it with :meth:`Trainer.resume_checkpoint` and restores those states, so it
trains exactly the epochs an uninterrupted run would have trained after that
validation (a test checks the final weights are identical). At most the epochs
since the last validation (``eval_step``) are trained again.

The file is written atomically and stamped with a fingerprint of the grid point's
whole RecBole configuration; a file of other settings, or one that does not load, is
ignored and removed. It is removed once the grid point finishes.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...._io import write_atomic
from ._recbole_compat import import_recbole, load_checkpoint

__all__ = ["PointProgress", "Resumed"]


@dataclass(frozen=True)
class Resumed:
    """The state a grid point resumes from.

    Attributes
    ----------
    epoch : int
        The last validated epoch (0-based); training resumes at ``epoch + 1``.
    finished : bool
        Early stopping had fired, or the budget was spent: nothing is left to train.
    best_valid_score, best_valid_result
        The best validation so far (RecBole's ``fit`` return value).
    seconds : float
        Wall-clock seconds the grid point had spent before the interruption.
    resumed_at : tuple of int
        The 1-based epochs at which this grid point resumed, this one included.
    """

    epoch: int
    finished: bool
    best_valid_score: float
    best_valid_result: dict[str, float] | None
    seconds: float
    resumed_at: tuple[int, ...]


def _fingerprint(settings: Mapping[str, Any]) -> str:
    text = json.dumps(dict(settings), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class PointProgress:
    """The resume file of one grid point.

    Parameters
    ----------
    checkpoint_dir : pathlib.Path
        RecBole's ``checkpoint_dir`` of the grid point.
    index : int
        The grid point's index in its grid.
    settings : mapping
        The grid point's whole RecBole configuration (model class included): a
        resume file made under other settings is not used.
    """

    def __init__(self, checkpoint_dir: Path, index: int, settings: Mapping[str, Any]) -> None:
        self.path = Path(checkpoint_dir) / f"resume-{index:03d}.pth"
        self.fingerprint = _fingerprint(settings)

    def restore(self, trainer: Any, train_data: Any) -> Resumed | None:
        """Load the resume file into ``trainer`` (and the random states), if it fits.

        Returns ``None`` (and removes a stale or unreadable file) when there is
        nothing to resume, else the state resumed from.
        """
        state = self._load()
        if state is None:
            return None
        extra = state["recaudit"]
        best_file = Path(extra["best_file"])
        if not best_file.is_file():
            self.clear()
            return None
        trainer.resume_checkpoint(self.path)
        trainer.saved_model_file = str(best_file)  # resume_checkpoint points it at us
        trainer.best_valid_result = extra["best_valid_result"]
        _set_random_states(extra["random_states"], train_data)
        return Resumed(
            epoch=int(state["epoch"]),
            finished=bool(extra["finished"]),
            best_valid_score=float(state["best_valid_score"]),
            best_valid_result=extra["best_valid_result"],
            seconds=float(extra["seconds"]),
            resumed_at=(*extra["resumed_at"], int(state["epoch"]) + 2),
        )

    def saver(self, trainer: Any, train_data: Any, *, seconds_before: float = 0.0,
              resumed_at: tuple[int, ...] = ()) -> Callable[[int, float], None]:
        """RecBole's ``fit(callback_fn=...)``: write the resume file after each validation."""
        started = time.perf_counter()
        torch, _ = import_recbole()

        def save(epoch_idx: int, valid_score: float) -> None:
            state = {
                "config": trainer.config,
                "epoch": epoch_idx,
                "cur_step": trainer.cur_step,
                "best_valid_score": trainer.best_valid_score,
                "state_dict": trainer.model.state_dict(),
                "other_parameter": trainer.model.other_parameter(),
                "optimizer": trainer.optimizer.state_dict(),
                "recaudit": {
                    "fingerprint": self.fingerprint,
                    "finished": (trainer.cur_step > trainer.stopping_step
                                 or epoch_idx + 1 >= trainer.epochs),
                    "best_file": str(trainer.saved_model_file),
                    "best_valid_result": _plain_result(trainer.best_valid_result),
                    "seconds": seconds_before + time.perf_counter() - started,
                    "resumed_at": list(resumed_at),
                    "random_states": _random_states(train_data),
                },
            }
            write_atomic(self.path, lambda tmp: torch.save(state, tmp, pickle_protocol=4))

        return save

    def clear(self) -> None:
        """Remove the resume file (the grid point finished, or the file is stale)."""
        self.path.unlink(missing_ok=True)

    def _load(self) -> dict[str, Any] | None:
        if not self.path.is_file():
            return None
        try:
            state = load_checkpoint(self.path)
        except Exception:  # noqa: BLE001 -- a torn or foreign file: start afresh
            self.clear()
            return None
        extra = state.get("recaudit") if isinstance(state, dict) else None
        if not isinstance(extra, dict):
            self.clear()
            return None
        if extra.get("fingerprint") != self.fingerprint:  # other settings: its best file too
            best = Path(str(extra.get("best_file", "")))
            if best.parent == self.path.parent:
                best.unlink(missing_ok=True)
            self.clear()
            return None
        return state


def _plain_result(result: Mapping[str, Any] | None) -> dict[str, float] | None:
    return None if result is None else {str(k): float(v) for k, v in dict(result).items()}


def _random_states(train_data: Any) -> dict[str, Any]:
    torch, _ = import_recbole()
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),  # noqa: NPY002 -- RecBole draws from the global state
        "torch": torch.get_rng_state(),
        "loader": train_data.generator.get_state(),
    }


def _set_random_states(states: Mapping[str, Any], train_data: Any) -> None:
    torch, _ = import_recbole()
    random.setstate(states["python"])
    np.random.set_state(states["numpy"])  # noqa: NPY002 -- RecBole draws from the global state
    torch.set_rng_state(states["torch"])
    train_data.generator.set_state(states["loader"])
