"""The CI rule of RD, NRD and IB: BCa over the stratified user bootstrap.

RD = (U - P) / (U + P) is a ratio of group means; with a small protected group its
sampling distribution is skewed and its plug-in estimate biased upward (P sits in the
denominator), and the percentile interval covered 0.75-0.97 at 30-100 protected users
beside 900 others (``benchmarks/small_group_intervals.py``; decision 0211, "RD, NRD and IB
intervals are BCa", in ``docs/decisions/``). The BCa interval
(:func:`recaudit._stats.bca_interval`) corrects the interval's median bias (``z0``, from
the same replicates) and its changing spread (the acceleration, from a jackknife over
users within each group, as the bootstrap is stratified by group).

:func:`interbias_jackknife` gives the leave-one-out RD, NRD and IB of every user; the
bootstrap replicates come from :func:`~recaudit.fairness._resampling._bootstrap`, and
``evaluate`` applies :data:`INTER_BIAS_CI_RULE` to the three figures alike (each with its
own replicates and jackknife values; with IC held fixed, NRD's and IB's intervals are
RD's mapped through ``(RD + 1) / 2`` and ``sqrt(NRD (1 - IC))`` up to the jackknife's
estimate of the acceleration).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from .._stats import BCA_METHOD, RULE_METHOD
from ..exceptions import InputError
from ._interbias import inter_bias, normalized_relative_difference, relative_difference

__all__ = [
    "INTER_BIAS_CI_RULE",
    "INTER_BIAS_CI_RULES",
    "OLDER_INTER_BIAS_CI_RULE",
    "interbias_jackknife",
    "interbias_method",
]

#: The interval rule of RD, NRD and IB (``settings.inter_bias_ci_rule`` of the JSON).
INTER_BIAS_CI_RULE = "bca"
#: The rule of a JSON written before ``inter_bias_ci_rule`` (what it used).
OLDER_INTER_BIAS_CI_RULE = "percentile"
#: Every rule a JSON may record, with the :attr:`ConfidenceInterval.method` it gives.
INTER_BIAS_CI_RULES: Mapping[str, str] = MappingProxyType(
    {"percentile": RULE_METHOD["percentile"], "bca": BCA_METHOD}
)
RULE_MSG = "{where}: `inter_bias_ci_rule` must be one of {rules}, got {rule!r}"


def interbias_method(rule: object, where: str) -> str:
    """The interval method of a recorded rule (:data:`INTER_BIAS_CI_RULES`), else an
    :class:`~recaudit.exceptions.InputError` naming ``where``."""
    if not isinstance(rule, str) or rule not in INTER_BIAS_CI_RULES:
        raise InputError(RULE_MSG.format(where=where, rules=", ".join(INTER_BIAS_CI_RULES),
                                         rule=rule))
    return INTER_BIAS_CI_RULES[rule]


def interbias_jackknife(
    x: npt.NDArray[np.float64],
    members: list[npt.NDArray[np.intp]],
    is_protected: npt.NDArray[np.bool_],
    coverage: npt.NDArray[np.float64],
) -> dict[str, list[npt.NDArray[np.float64]]]:
    r"""Leave-one-out RD, NRD and IB of every user, one array per bootstrap stratum.

    The bootstrap is stratified by group, so the jackknife runs within each group
    (``members[g]``, the strata of :func:`~recaudit.fairness._resampling._bootstrap`).
    Leaving out user ``i`` of the protected group moves its mean only,
    :math:`P_{(i)} = (S_P - x_i) / (n_P - 1)`; a user of any other group moves the pooled
    :math:`U_{(i)} = (S_U - x_i) / (n_U - 1)`. Then :math:`RD_{(i)} = (U_{(i)} -
    P_{(i)}) / (U_{(i)} + P_{(i)})`, :math:`NRD_{(i)} = (RD_{(i)} + 1) / 2` and
    :math:`IB_{(i)} = \sqrt{NRD_{(i)} (1 - IC_{(i)})}`. A group of one user is not
    resampled by the stratified bootstrap and gets no jackknife values (an empty array).

    Parameters
    ----------
    x : ndarray, shape (n_users, K)
        Per-user metric values (keys in columns).
    members : list of ndarray
        The users of each group.
    is_protected : ndarray of bool, shape (n_users,)
        Protected-group membership.
    coverage : ndarray, shape (n_users, K)
        IC at each key's cut-off with user ``i`` left out (its observed value in every
        row when IC is held fixed).

    Returns
    -------
    dict
        ``{"rd", "nrd", "ib"}`` -> one ``(n_g, K)`` array per group (``(0, K)`` for a
        group of one).
    """
    n_p = int(is_protected.sum())
    n_u = x.shape[0] - n_p
    s_p, s_u = x[is_protected].sum(axis=0), x[~is_protected].sum(axis=0)
    p, u = s_p / max(n_p, 1), s_u / max(n_u, 1)
    out: dict[str, list[npt.NDArray[np.float64]]] = {"rd": [], "nrd": [], "ib": []}
    for idx in members:
        if idx.size < 2:
            empty = np.empty((0, x.shape[1]))
            for name in out:
                out[name].append(empty)
            continue
        left = x[idx]
        if is_protected[idx[0]]:
            pg = np.maximum((s_p - left) / (n_p - 1), 0.0)
            ug = np.broadcast_to(u, left.shape)
        else:
            pg = np.broadcast_to(p, left.shape)
            ug = np.maximum((s_u - left) / (n_u - 1), 0.0)
        rd = relative_difference(ug, pg)
        nrd = normalized_relative_difference(rd)
        out["rd"].append(rd)
        out["nrd"].append(nrd)
        out["ib"].append(inter_bias(nrd, coverage[idx]))
    return out
