"""The options of one fairness evaluation, validated once (:class:`EvaluateOptions`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..exceptions import InputError
from ._metrics import _n_iv

__all__ = ["EvaluateOptions"]

POSITIVE_INT_MSG = "`{name}` must be an integer >= {minimum}, got {value!r}"
CONFIDENCE_MSG = "`confidence_level` must be in (0, 1), got {value!r}"
SEED_MSG = (
    "`seed` must be None, an integer >= 0 or a sequence of them (numpy's SeedSequence "
    "entropy), got {value!r}"
)


def _int_iv(value: Any, name: str, minimum: int) -> int:
    if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < minimum:
        raise InputError(POSITIVE_INT_MSG.format(name=name, minimum=minimum, value=value))
    return int(value)


def _seed_iv(seed: Any) -> int | tuple[int, ...] | None:
    if seed is None:
        return None
    values = (seed,) if isinstance(seed, int | np.integer) else seed
    if (
        isinstance(seed, bool | str)
        or not isinstance(values, Sequence)
        or not values
        or any(not isinstance(v, int | np.integer) or isinstance(v, bool) or v < 0
               for v in values)
    ):
        raise InputError(SEED_MSG.format(value=seed))
    return int(seed) if isinstance(seed, int | np.integer) else tuple(int(v) for v in values)


@dataclass(frozen=True)
class EvaluateOptions:
    """How :func:`~recaudit.fairness.evaluate` measures: cut-offs, resamples, seed.

    Validated once, on construction; the fields hold the cleaned values (``n``
    sorted, integers as ``int``). The same names mean the same as in the
    positional analysis and on the command line (``--n``, ``--n-boot``,
    ``--n-resamples``, ``--seed``, ...).

    Attributes
    ----------
    n : tuple of int
        Cut-offs (distinct, >= 1); an int or any sequence is accepted and stored as a
        sorted tuple.
    n_boot : int
        Bootstrap resamples of each CI (0 = no CIs).
    n_resamples : int
        Permutations of the protected labels for the gap test (0 = no p-values).
    min_group_size : int
        Every group needs at least this many evaluated users.
    confidence_level : float
        Of every CI, in (0, 1).
    resample_coverage : bool
        Recompute item coverage on each bootstrap resample (see
        :func:`~recaudit.fairness.evaluate`).
    seed : int, sequence of int or None
        Entropy of the evaluation's random generator
        (``numpy.random.default_rng(seed)``): the same options give the same
        figures; ``None`` draws fresh OS entropy on every evaluation.

    Raises
    ------
    InputError
        Naming the field and what it must be.

    Examples
    --------
    >>> EvaluateOptions(n=[10, 5], n_boot=0, seed=1).n
    (5, 10)
    """

    n: tuple[int, ...] = (5, 10, 15)
    n_boot: int = 1000
    n_resamples: int = 999
    min_group_size: int = 20
    confidence_level: float = 0.95
    resample_coverage: bool = False
    seed: int | tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        level = self.confidence_level
        if not (isinstance(level, float | int) and 0 < level < 1):
            raise InputError(CONFIDENCE_MSG.format(value=level))
        cleaned = {
            "n": _n_iv(self.n),
            "n_boot": _int_iv(self.n_boot, "n_boot", 0),
            "n_resamples": _int_iv(self.n_resamples, "n_resamples", 0),
            "min_group_size": _int_iv(self.min_group_size, "min_group_size", 1),
            "confidence_level": float(level),
            "resample_coverage": bool(self.resample_coverage),
            "seed": _seed_iv(self.seed),
        }
        for name, value in cleaned.items():
            object.__setattr__(self, name, value)

    def rng(self) -> np.random.Generator:
        """A new generator from ``seed`` (each evaluation draws from its own)."""
        return np.random.default_rng(self.seed)
