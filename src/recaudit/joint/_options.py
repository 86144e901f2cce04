"""The settings of a joint audit, validated once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .._limits import max_threads
from .._stats import DEFAULT_N_BOOT
from ..exceptions import InputError

__all__ = ["JointOptions"]

#: Bounds of the integer settings: (smallest, largest, why the largest).
_BOUNDS: dict[str, tuple[int, int, str]] = {
    "users": (2, 100_000, "more users than MovieLens-scale data holds"),
    "orders": (2, 1_000, "each order is one model call per user"),
    "k": (2, 20, "the candidates of one prompt"),
    "history": (1, 100, "liked movies written into one prompt"),
    "n_boot": (100, 100_000, "bootstrap resamples per statistic"),
    "min_group_size": (1, 100_000, "users a group needs for its metrics"),
}


@dataclass(frozen=True)
class JointOptions:
    """What a joint audit of an LLM recommender on MovieLens runs.

    Attributes
    ----------
    data : Path
        A RecBole atomic MovieLens folder (``*.inter``, ``*.item``, ``*.user`` with the
        protected attribute), e.g. ML-100K.
    users : int
        Users sampled; each is one request (query).
    orders : int
        Random candidate orders per user (the positional study's permutations).
    k : int
        Candidates per prompt, drawn by item-kNN from the user's liked history.
    history : int
        Liked movies written into each request.
    model : str
        A packaged model name (``smollm2-135m``, ``gemma3-270m``) or a GGUF path, run on
        the in-process llama.cpp engine at temperature 0 with constrained answers.
    attribute, protected : str
        The users' attribute and its protected value for the group metrics.
    n_boot : int
        Bootstrap resamples of every interval.
    min_group_size : int
        Users a group needs (fewer: refused, as :class:`recaudit.fairness.EvaluateOptions`).
    seed : int
        Seeds the user sample, the orders and every resampling.
    n_threads : int
        CPU threads of the engine.
    """

    data: Path
    users: int = 100
    orders: int = 4
    k: int = 5
    history: int = 10
    model: str = "smollm2-135m"
    attribute: str = "gender"
    protected: str = "F"
    n_boot: int = DEFAULT_N_BOOT
    min_group_size: int = 20
    seed: int = 2026
    n_threads: int = 2

    def __post_init__(self) -> None:
        for name, (low, high, why) in _BOUNDS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise InputError(f"`{name}` must be an integer in {low}..{high} ({why}), "
                                 f"got {value!r}")
        top, why = max_threads()
        if isinstance(self.n_threads, bool) or not isinstance(self.n_threads, int) \
                or not 1 <= self.n_threads <= top:
            raise InputError(f"`n_threads` must be an integer in 1..{top} ({why}), "
                             f"got {self.n_threads!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise InputError(f"`seed` must be an integer >= 0, got {self.seed!r}")
        if not self.model.strip():
            raise InputError("`model` must name a packaged model (smollm2-135m, gemma3-270m) "
                             "or a GGUF file")
        if not Path(self.data).is_dir():
            raise InputError(f"`data` must be a MovieLens folder in RecBole's atomic format "
                             f"(*.inter, *.item, *.user); {self.data} is not a folder")
