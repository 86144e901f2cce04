"""Query-level bootstrap of statistics that are functions of per-query means."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from .._stats import ConfidenceInterval, bootstrap_weights, percentile_interval
from ..exceptions import InputError

__all__ = ["bootstrap_ci", "check_bootstrap_args"]

MSG_N_BOOT = "`n_boot` must be an integer >= 1, got {value!r}"
MSG_LEVEL = "`confidence_level` must be in (0, 1), got {value!r}"


def check_bootstrap_args(n_boot: int, confidence_level: float) -> tuple[int, float]:
    """Validate the shared bootstrap arguments."""
    if isinstance(n_boot, bool) or not isinstance(n_boot, int | np.integer) or n_boot < 1:
        raise InputError(MSG_N_BOOT.format(value=n_boot))
    if not 0.0 < float(confidence_level) < 1.0:
        raise InputError(MSG_LEVEL.format(value=confidence_level))
    return int(n_boot), float(confidence_level)


def bootstrap_ci(
    per_query: npt.NDArray[np.float64],
    statistic: Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]],
    *,
    n_boot: int,
    confidence_level: float,
    rng: np.random.Generator,
) -> list[ConfidenceInterval]:
    """Percentile intervals of ``statistic(mean over queries of per_query)``.

    ``per_query`` has shape (n_queries, m); a resample's column means are
    ``w @ per_query / n`` with multinomial weights ``w`` (queries resampled with
    replacement). ``statistic`` maps (b, m) means to (b, r) statistics; one interval
    per output column is returned.
    """
    n = per_query.shape[0]
    reps = [statistic(w @ per_query / n) for w in bootstrap_weights(n, n_boot, rng)]
    values = np.vstack(reps)
    return [
        percentile_interval(values[:, j], confidence_level=confidence_level)
        for j in range(values.shape[1])
    ]
