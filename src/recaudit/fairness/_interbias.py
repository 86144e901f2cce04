"""Relative difference (RD), its normalisation (NRD) and inter-bias (IB).

From Chizari, Tajfar & Moreno-García (2025), "Measuring Inter-Bias Effects and
Fairness-Accuracy Trade-Offs in GNN-Based Recommender Systems", Future Internet
17(10):461. The functions are vectorised: they take arrays of group means (e.g. one
value per metric, or one per bootstrap resample) and return arrays of the same shape.
Undefined values (both group means 0) are ``nan``, never the result of a division by
zero.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..exceptions import InputError

__all__ = [
    "UNDEFINED_RD_REASON",
    "inter_bias",
    "normalized_relative_difference",
    "relative_difference",
]

#: Why an RD (and hence NRD, IB) is undefined.
UNDEFINED_RD_REASON = "both group means are 0, so RD = 0/0 is undefined"

GROUP_MEANS_MSG = "`{name}` must hold finite values >= 0 (group means of a metric)"
SHAPE_MSG = "`unprotected` and `protected` must have the same shape, got {a} and {b}"
RD_MSG = "`rd` must hold values in [-1, 1] or nan"
NRD_MSG = "`nrd` must hold values in [0, 1] or nan"
COVERAGE_MSG = "`item_coverage` must hold values in [0, 1]"


def _relative_difference_iv(
    unprotected: npt.ArrayLike, protected: npt.ArrayLike
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    ug = np.asarray(unprotected, dtype=np.float64)
    pg = np.asarray(protected, dtype=np.float64)
    for name, x in (("unprotected", ug), ("protected", pg)):
        if not (np.isfinite(x).all() and (x >= 0).all()):
            raise InputError(GROUP_MEANS_MSG.format(name=name))
    if ug.shape != pg.shape:
        raise InputError(SHAPE_MSG.format(a=ug.shape, b=pg.shape))
    return ug, pg


def relative_difference(
    unprotected: npt.ArrayLike, protected: npt.ArrayLike
) -> npt.NDArray[np.float64]:
    r"""Signed relative difference of a metric between two groups.

    .. math:: RD_M = \frac{M_{UG} - M_{PG}}{M_{UG} + M_{PG}} \in [-1, 1]

    ``UG`` is the unprotected (majority) group, ``PG`` the protected one: RD > 0 when
    the metric favours the unprotected group, RD < 0 when it favours the protected
    group (Chizari et al. 2025, eq. for RD). Where both means are 0 the result is
    ``nan`` (see :data:`UNDEFINED_RD_REASON`).

    Parameters
    ----------
    unprotected, protected : array_like
        Group means ``M_UG`` and ``M_PG`` (finite, >= 0), same shape.

    Examples
    --------
    >>> relative_difference([3.0, 0.0], [1.0, 0.0]).tolist()
    [0.5, nan]
    """
    ug, pg = _relative_difference_iv(unprotected, protected)
    total = ug + pg
    defined = total > 0
    return np.divide(ug - pg, total, out=np.full(total.shape, np.nan), where=defined)


def normalized_relative_difference(rd: npt.ArrayLike) -> npt.NDArray[np.float64]:
    r"""Map RD from [-1, 1] to [0, 1]: :math:`NRD_M = (RD_M + 1)/2`.

    0.5 means parity; ``nan`` (undefined RD) stays ``nan``.
    """
    r = np.asarray(rd, dtype=np.float64)
    ok = np.isnan(r) | ((r >= -1) & (r <= 1))
    if not ok.all():
        raise InputError(RD_MSG)
    return (r + 1.0) / 2.0


def inter_bias(nrd: npt.ArrayLike, item_coverage: npt.ArrayLike) -> npt.NDArray[np.float64]:
    r"""Inter-bias: group unfairness and popularity bias combined.

    .. math:: IB_M = \sqrt{NRD_M \, (1 - IC)} \in [0, 1]

    Higher means more overall bias: a larger quality gap against the protected group
    and/or a lower item coverage (Chizari et al. 2025). ``nan`` NRD gives ``nan``.

    Parameters
    ----------
    nrd : array_like
        NRD values in [0, 1] (or ``nan``).
    item_coverage : array_like
        IC at the same cut-off, in [0, 1]; broadcast against ``nrd``.
    """
    v = np.asarray(nrd, dtype=np.float64)
    ic = np.asarray(item_coverage, dtype=np.float64)
    if not (np.isnan(v) | ((v >= 0) & (v <= 1))).all():
        raise InputError(NRD_MSG)
    if not (np.isfinite(ic).all() and (ic >= 0).all() and (ic <= 1).all()):
        raise InputError(COVERAGE_MSG)
    return np.sqrt(v * (1.0 - ic))
