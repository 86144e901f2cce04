r"""Do the discarded generations depend on the order shown? A check, and a bound.

Every positional statistic reads the valid (parsed) answers. Discards at random, or at
a rate that varies by query, leave those statistics true; discards that become more
likely as the answer's prompt position grows (long prompts, the answer near the end)
make the valid answers' position law less uniform than the model's, and PB, the
position distribution, the positional share and POB-UNBP's bound then describe the
parseable answers, not the model (docs/validation-positional.md, "Discards that depend
on the answer": PB +1.6 to +3.1 pp at a fifth discarded, POB-UNBP rejecting a model
without positional bias in 20-68 % of data sets; sPB and PS held).

The pick of a discarded answer is unknown, but its order is not. For each evaluation
:math:`e` of query :math:`q`, with :math:`f_q` the share of each candidate among the
query's valid picks under its *other* orders (uniform when there are none) and
:math:`\pi_e(i)` the 0-based prompt position of candidate :math:`i` in order
:math:`e`,

.. math:: s_e = \sum_i f_q(i)\, \pi_e(i) - \frac{k - 1}{2}

is how late order :math:`e` shows what the query's answers pick; over uniformly random
orders its mean is 0 whatever :math:`f_q`. With :math:`D_e` = 1 for a discard,
:math:`U_q = \sum_{e \in q} (D_e - \bar D_q)\, s_e` has mean 0 when discards do not
depend on the order (at random or at a per-query rate), queries are independent, and

.. math:: z = \sum_q U_q \Big/ \sqrt{\sum_q U_q^2}

is about standard normal (a self-normalised sum; two-sided p). :math:`z > 0`: discards
come with orders that show the picked items late. Measured (1,000 simulated data sets
per cell, a fifth discarded): type-I error 0.033-0.072 under discards at random and at
per-query rates; power 0.87-0.99 at k = 5 and 100 queries when the discard rate rises
from 10 % at position 1 to 30 % at position k, 0.32-0.59 at k = 10
(``benchmarks/validate_positional.py check``). It cannot see a dependence when the
picks do not follow the items (many equally relevant candidates, or picks by position
alone), so a non-significant check is no proof.

Whatever the mechanism, the position law of all answers is within the discarded share
of the valid answers' law in total variation: query by query
:math:`q^{all}_j = (1 - d_j)\, q^{valid}_j + d_j\, q^{disc}_j`, so PB (a total-variation
distance of the query-averaged law from uniform) of all answers lies within
:math:`\bar d = \frac{1}{n}\sum_j d_j` of PB of the valid ones (``pb_shift_bound``;
queries whose every generation was discarded are outside both).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

from .._records import as_mapping, integer, number, optional_number
from ._evaluations import Evaluations

__all__ = ["DiscardCheck", "discard_check"]


@dataclass(frozen=True)
class DiscardCheck:
    """Whether the discarded generations depend on the order shown (:func:`discard_check`).

    Attributes
    ----------
    n_discarded : int
        Discarded generations of queries with a valid one (those the check reads).
    discarded_share : float
        Their share of those queries' generations.
    pb_shift_bound : float
        The mean over queries of each query's discarded share: PB of all answers lies
        within this of PB of the valid answers, whatever made the discards.
    z, pvalue : float or None
        The self-normalised statistic and its two-sided p (None when no query has both
        a discard and a valid answer under another order).
    """

    n_discarded: int
    discarded_share: float
    pb_shift_bound: float
    z: float | None
    pvalue: float | None

    def depends_on_order(self, alpha: float) -> bool:
        """Whether the check rejects "discards independent of the order" at ``alpha``."""
        return self.pvalue is not None and self.pvalue <= alpha

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``discard_check`` of ``analyze --json``)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any], *, where: str = "discard_check"
                  ) -> DiscardCheck:
        """Inverse of :meth:`to_dict` (strict)."""
        obj = as_mapping(obj, where)
        return cls(n_discarded=integer(obj, "n_discarded", where),
                   discarded_share=number(obj, "discarded_share", where),
                   pb_shift_bound=number(obj, "pb_shift_bound", where),
                   z=optional_number(obj, "z", where),
                   pvalue=optional_number(obj, "pvalue", where))


def discard_check(evals: Evaluations) -> DiscardCheck | None:
    """The check of the module docstring on one analysis group (None without discards
    of queries that have a valid answer)."""
    m = evals.discarded_query.size
    if m == 0:
        return None
    k, nq = evals.k, evals.n_queries
    query = np.concatenate([evals.query, evals.discarded_query])
    orders = np.concatenate([evals.orders, evals.discarded_orders])
    lost = np.concatenate([np.zeros(evals.n_evaluations), np.ones(m)])
    valid = lost == 0
    item = evals.item
    group = np.unique(np.column_stack([query, orders]), axis=0, return_inverse=True)[1]
    group = np.ravel(group)
    picks = np.zeros((nq, k))
    np.add.at(picks, (evals.query, item), 1.0)
    own = np.zeros((int(group.max()) + 1, k))
    np.add.at(own, (group[valid], item), 1.0)
    rest = picks[query] - own[group]
    total = rest.sum(axis=1, keepdims=True)
    share = np.divide(rest, total, out=np.full_like(rest, 1.0 / k), where=total > 0)
    late = (share * np.argsort(orders, axis=1)).sum(axis=1) - (k - 1) / 2
    per_query = np.bincount(query, minlength=nq)
    d = lost - (np.bincount(query, lost, nq) / per_query)[query]
    u = np.bincount(query, d * late, nq)
    bound = float(np.mean(np.bincount(query, lost, nq) / per_query))
    scale = math.sqrt(float((u**2).sum()))
    z = float(u.sum() / scale) if scale > 1e-12 else None
    return DiscardCheck(
        n_discarded=m, discarded_share=m / query.size, pb_shift_bound=bound, z=z,
        pvalue=None if z is None else float(2 * stats.norm.sf(abs(z))))
