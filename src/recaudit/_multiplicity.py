"""Multiplicity: a family of p-values adjusted, and the level of its intervals.

Shared by every comparison of both studies (positional ``compare``, the fairness
``compare``): Holm's step-down for the family-wise error rate, Benjamini-Hochberg for
the false discovery rate, and the level at which each interval of the family keeps the
same guarantee (Bonferroni under Holm, Benjamini-Yekutieli's false-coverage rate under
BH).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ._stats import holm
from .exceptions import InputError

__all__ = ["ADJUSTMENTS", "MSG_ADJUST", "adjust_pvalues", "adjusted_level", "check_adjust"]

ADJUSTMENTS = ("holm", "bh", "none")
MSG_ADJUST = "`adjust` must be one of holm, bh, none, got {value!r}"


def check_adjust(adjust: object) -> str:
    """``adjust`` if it names an adjustment, else an :class:`InputError` naming them."""
    if adjust not in ADJUSTMENTS:
        raise InputError(MSG_ADJUST.format(value=adjust))
    return str(adjust)


def adjust_pvalues(pvalues: Sequence[float] | npt.ArrayLike,
                   method: str) -> npt.NDArray[np.float64]:
    r"""Adjust a family of p-values: Holm (FWER), Benjamini-Hochberg (FDR) or none.

    BH: :math:`\tilde p_{(i)} = \min_{j \ge i} \min\{1, m\, p_{(j)} / j\}`.

    References
    ----------
    Holm, S. (1979). Scandinavian Journal of Statistics 6(2), 65-70.
    Benjamini, Y. & Hochberg, Y. (1995). JRSS B 57(1), 289-300.
    """
    p = np.asarray(pvalues, dtype=float)
    if method == "holm":
        return holm(p)
    if method == "none":
        return p.copy()
    if method != "bh":
        raise InputError(MSG_ADJUST.format(value=method))
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    if ok.size:
        order = ok[np.argsort(p[ok], kind="stable")]
        m = order.size
        stepped = np.minimum(1.0, m * p[order] / np.arange(1, m + 1))
        out[order] = np.minimum.accumulate(stepped[::-1])[::-1]
    return out


def adjusted_level(adjusted: npt.ArrayLike, adjust: str, confidence_level: float) -> float:
    r"""The level of each interval of a family of m comparisons, so that the family's
    intervals keep ``confidence_level`` jointly (``holm``) or on average over the
    selected ones (``bh``).

    - ``holm``: Bonferroni's simultaneous level :math:`1 - \alpha/m` (the intervals
      that match Holm's family-wise guarantee; Holm's step-down has no interval of
      its own);
    - ``bh``: Benjamini & Yekutieli's false-coverage-rate level
      :math:`1 - R\alpha/m`, with R the comparisons BH rejects at
      :math:`\alpha` (at least 1);
    - ``none``: ``confidence_level``.

    with :math:`\alpha = 1 -` ``confidence_level`` and m the finite p-values.

    References
    ----------
    Benjamini, Y. & Yekutieli, D. (2005). False discovery rate-adjusted multiple
    confidence intervals for selected parameters. JASA 100(469), 71-81.
    """
    p = np.asarray(adjusted, dtype=float)
    m = int(np.isfinite(p).sum())
    alpha = 1.0 - confidence_level
    if adjust == "none" or m <= 1:
        return confidence_level
    if adjust == "holm":
        return 1.0 - alpha / m
    selected = max(1, int(np.sum(p[np.isfinite(p)] <= alpha)))
    return 1.0 - selected * alpha / m
