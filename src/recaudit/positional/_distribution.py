"""The position-selection distribution and the k x k selection-rate matrix."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .._stats import DEFAULT_N_BOOT, Estimate, as_generator
from ._bootstrap import bootstrap_ci, check_bootstrap_args
from ._evaluations import Evaluations
from ._unbp import query_position_shares

__all__ = ["position_distribution", "selection_rate_matrix"]


def position_distribution(
    evals: Evaluations,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    confidence_level: float = 0.95,
    rng: np.random.Generator | int | None = None,
) -> tuple[Estimate, ...]:
    r"""Share of selections at each prompt position, with query-level bootstrap CIs.

    :math:`\hat q_p = \frac1n \sum_j Y_j(p)`, the mean over queries of the share of
    query j's valid evaluations that selected position p (each query weighs equally,
    as in POB-UNBP). Percentile bootstrap CIs resample queries.
    """
    n_boot, confidence_level = check_bootstrap_args(n_boot, confidence_level)
    shares = query_position_shares(evals)
    cis = bootstrap_ci(
        shares,
        lambda m: m,
        n_boot=n_boot,
        confidence_level=confidence_level,
        rng=as_generator(rng),
    )
    return tuple(Estimate(float(v), ci) for v, ci in zip(shares.mean(axis=0), cis, strict=True))


def selection_rate_matrix(evals: Evaluations) -> npt.NDArray[np.float64]:
    r"""S[i, p] = #(i chosen while shown at p) / #(i shown at p), over evaluations.

    Rows are original indices (retrieval rank), columns prompt positions; row
    differences reflect relevance, column differences position. ``nan`` where item i
    was never shown at p.

    References
    ----------
    Peláez-González, Herrera, Herrera-Poyatos, arXiv 2610.37962 (visual companion
    of POB-ICM).
    """
    k = evals.k
    chosen = np.bincount(evals.item * k + evals.position, minlength=k * k).reshape(k, k)
    positions = np.broadcast_to(np.arange(k), evals.orders.shape)
    shown = np.bincount((evals.orders * k + positions).ravel(), minlength=k * k).reshape(k, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(shown > 0, chosen / shown, np.nan)
