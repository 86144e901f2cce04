"""The options of one fairness evaluation, validated once (:class:`EvaluateOptions`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._limits import check_fairness_options
from .._stats import DEFAULT_N_BOOT, DEFAULT_N_PERMUTATIONS
from ..exceptions import InputError
from ._metrics import _n_iv
from .popularity._user_groups import DEFAULT_GROUPING, PopularityGrouping, parse_popularity_groups

__all__ = ["EvaluateOptions"]

POSITIVE_INT_MSG = "`{name}` must be an integer >= {minimum}, got {value!r}"
CONFIDENCE_MSG = "`confidence_level` must be in (0, 1), got {value!r}"


def _int_iv(value: Any, name: str, minimum: int) -> int:
    if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < minimum:
        raise InputError(POSITIVE_INT_MSG.format(name=name, minimum=minimum, value=value))
    return int(value)


@dataclass(frozen=True)
class EvaluateOptions:
    """How :func:`~recaudit.fairness.evaluate` measures: cut-offs, resamples, levels.

    Validated once, on construction; the fields hold the cleaned values (``n``
    sorted, integers as ``int``). The same names mean the same as in the
    positional analysis and on the command line (``--n``, ``--n-boot``,
    ``--n-resamples``, ...). Randomness is not an option: it is
    :func:`~recaudit.fairness.evaluate`'s ``rng`` argument, as in
    :func:`recaudit.positional.analyze`.

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
    popularity_groups : PopularityGrouping
        How users are grouped by the popularity of their training items (the
        ``popularity_group`` attribute and ``popularity_bias.user_popularity_groups``):
        a name ``"abdollahpouri"`` (default), ``"abdollahpouri:cumulative"`` or
        ``"quantile:Q"`` is accepted and stored parsed
        (:func:`~recaudit.fairness.parse_popularity_groups`).

    Raises
    ------
    InputError
        Naming the field and what it must be.

    Examples
    --------
    >>> EvaluateOptions(n=[10, 5], n_boot=0).n
    (5, 10)
    """

    n: tuple[int, ...] = (5, 10, 15)
    n_boot: int = DEFAULT_N_BOOT
    n_resamples: int = DEFAULT_N_PERMUTATIONS
    min_group_size: int = 20
    confidence_level: float = 0.95
    resample_coverage: bool = False
    popularity_groups: PopularityGrouping = DEFAULT_GROUPING

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
            "popularity_groups": parse_popularity_groups(self.popularity_groups),
        }
        for name, value in cleaned.items():
            object.__setattr__(self, name, value)
        check_fairness_options(n=self.n, n_boot=self.n_boot, n_resamples=self.n_resamples)
