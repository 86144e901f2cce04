"""sPB, soft bias and the position-driven share compared between two systems.

The relevance-set split (:func:`~recaudit.positional.strong_soft_bias`) of each system
is refitted on the same query-bootstrap resamples when the systems share their
(query_id, order) keys (paired), each on its own otherwise; the replicate differences
give the interval and the centred test, as for the measures of position shares
(:mod:`recaudit.positional._compare`).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from .._stats import bootstrap_weights
from ._crossfit import N_BOOT_SE, crossfit_shares
from ._evaluations import Evaluations
from ._strong import split_replicates
from ._unbp import query_position_shares

__all__ = ["SPLIT_MEASURES", "split_differences"]

#: The split's measures, in the order of :func:`split_differences`' columns.
SPLIT_MEASURES = ("spb", "soft", "positional_share")


def _weights(n: int, n_boot: int, gen: np.random.Generator) -> npt.NDArray[np.float64]:
    return np.vstack(list(bootstrap_weights(n, n_boot, gen))).astype(float)


def _replicates(evals: Evaluations, weights: npt.NDArray[np.float64],
                gen: np.random.Generator) -> npt.NDArray[np.float64] | None:
    """(1 + n_boot, 3): sPB, soft, share on all queries and each resample, or None."""
    fit = crossfit_shares(query_position_shares(evals), gen, boot_weights=weights)
    reps = split_replicates(evals, fit)
    if reps is None:
        return None
    strong, share = reps
    return np.column_stack((strong, share - strong, share))


def split_differences(
    a: Evaluations, b: Evaluations, *, paired: bool, gen: np.random.Generator,
    n_boot: int = N_BOOT_SE,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Values of a and b (3,) and the replicates of a - b (n_boot, 3), columns
    :data:`SPLIT_MEASURES`; all ``nan`` for a system whose split is not identified.

    The EM refits make each replicate cost a relevance-set fit, so the split uses
    ``n_boot`` = 200 resamples (the split's own default) whatever the comparison's
    ``n_boot``: p-values are then multiples of 1/201.
    """
    wa = _weights(a.n_queries, n_boot, gen)
    if paired:  # the same resampled queries and cross-fitting folds for both systems
        index_b = {q: j for j, q in enumerate(b.query_ids.tolist())}
        order = np.array([index_b[q] for q in a.query_ids.tolist()])
        wb = np.empty_like(wa)
        wb[:, order] = wa
        seed = int(gen.integers(2**63))
        gen_a, gen_b = np.random.default_rng(seed), np.random.default_rng(seed)
    else:
        wb = _weights(b.n_queries, n_boot, gen)
        gen_a = gen_b = gen
    ra, rb = _replicates(a, wa, gen_a), _replicates(b, wb, gen_b)
    if ra is None or rb is None:
        nan = np.full(len(SPLIT_MEASURES), math.nan)
        va = nan if ra is None else ra[0]
        vb = nan if rb is None else rb[0]
        return va, vb, np.full((n_boot, len(SPLIT_MEASURES)), math.nan)
    return ra[0], rb[0], ra[1:] - rb[1:]
