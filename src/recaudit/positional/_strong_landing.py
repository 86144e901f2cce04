"""Where the position-driven selections land: in or out of the query's relevance set.

sPB counts the selections that position moves out of the relevance set. The paper's
generative model lets a position-driven selection take whatever stands at the favoured
position, which -- the order being uniformly random -- lands uniformly on the k
candidates. A model that uses position only to break ties among relevant candidates
("of the good ones, the first shown") lands inside the set every time: its strong bias
is 0. Which of the two the data show is read from how often the items selected at the
favoured positions are new -- selected under no other order of the query -- against
the selections at the other positions (docs/decisions/0320).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ._evaluations import Evaluations

__all__ = ["Novelty", "landing_strong", "novelty"]


@dataclass(frozen=True)
class Novelty:
    """Per query (n,): the favoured-position selections' excess novelty over the
    other positions' (``observed``), what it would be if every one of them landed
    uniformly (``uniform``), and their number (``favoured``)."""

    observed: npt.NDArray[np.float64]
    uniform: npt.NDArray[np.float64]
    favoured: npt.NDArray[np.float64]


def novelty(evals: Evaluations, at_favoured: npt.NDArray[np.bool_]) -> Novelty:
    r"""The novelty contrast of each query.

    A selection is *new* when its item is selected under none of the query's other
    orders (:math:`\nu_e = 1`). With :math:`\bar\nu_{U,j}` the mean novelty of query
    j's selections at the unfavoured positions and :math:`F_j` its selections at the
    favoured ones,

    .. math:: O_j = \sum_{e \in F_j} (\nu_e - \bar\nu_{U,j}), \qquad
              U_j = \sum_{e \in F_j} \left(\frac{k - d_{-e}}{k} - \bar\nu_{U,j}\right),

    :math:`d_{-e}` the distinct items selected under the other orders (a uniformly
    landing item is new with probability :math:`(k - d_{-e})/k`). When the
    position-driven selections come from the query's own choice law, a selection's item
    is independent of whether it stood at a favoured position, the selections are
    exchangeable and :math:`E\,O_j = 0` exactly, whatever the relevance sets; queries
    without selections at the unfavoured positions contribute 0.
    """
    k, n_q = evals.k, evals.n_queries
    key = np.column_stack((evals.query, evals.orders))
    _, group = np.unique(key, axis=0, return_inverse=True)
    group = group.ravel()
    n_groups = int(group.max(initial=-1)) + 1
    by_query = np.bincount(evals.query * k + evals.item, minlength=n_q * k).reshape(n_q, k)
    by_group = np.bincount(group * k + evals.item, minlength=n_groups * k).reshape(n_groups, k)
    others = by_query[evals.query] - by_group[group]  # (n, k): under the other orders
    new = (others[np.arange(evals.item.size), evals.item] == 0).astype(float)
    uniform_new = (k - np.count_nonzero(others, axis=1)) / k
    free = ~at_favoured
    n_free = np.bincount(evals.query[free], minlength=n_q).astype(float)
    free_new = np.divide(np.bincount(evals.query[free], weights=new[free], minlength=n_q),
                         n_free, out=np.zeros(n_q), where=n_free > 0)
    usable = (n_free > 0)[evals.query] & at_favoured
    base = free_new[evals.query]
    observed = np.bincount(evals.query[usable], weights=(new - base)[usable],
                           minlength=n_q).astype(float)
    uniform = np.bincount(evals.query[usable], weights=(uniform_new - base)[usable],
                          minlength=n_q).astype(float)
    favoured = np.bincount(evals.query[at_favoured], minlength=n_q).astype(float)
    return Novelty(observed, uniform, favoured)


def landing_strong(
    nov: Novelty,
    outside: npt.NDArray[np.float64],
    per_query: npt.NDArray[np.float64],
    weights: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    r"""sPB on each row of query ``weights`` (b, n):

    .. math:: sPB = \frac{\sum_j w_j O_j / n_j}{\sum_j w_j U_j / n_j}
              \cdot \frac{\sum_j w_j m_j t_j / n_j}{\sum_j w_j},

    the share of the favoured-position selections that land as a uniform landing would
    (:func:`novelty`'s contrast, clipped to [0, 1]) times what such selections put
    outside the sets: :math:`m_j` favoured-position selections of query j,
    :math:`t_j = (1 - \epsilon)(1 - E[|R_j| \mid \text{data}]/k)` from the relevance
    model (``outside``, (b, n): one row per resample), :math:`n_j` its selections
    (``per_query``). Under the paper's model its expectation is
    :math:`\beta (1 - \epsilon)(1 - E|R|/k)`; it is 0 when the position-driven
    selections come from the query's own law.
    """
    scale = 1.0 / np.maximum(per_query, 1.0)
    observed = weights @ (nov.observed * scale)
    uniform = weights @ (nov.uniform * scale)
    share = np.clip(np.divide(observed, uniform, out=np.zeros_like(observed),
                              where=uniform > 1e-12), 0.0, 1.0)
    truth = (weights * outside) @ (nov.favoured * scale)
    return np.asarray(share * truth / weights.sum(axis=1))

