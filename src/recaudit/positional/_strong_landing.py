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
from scipy import special

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

    A selection's reference is the query's selections at the unfavoured positions under
    its *other* orders (:math:`r_e` of them, :math:`c_e` of its item). Its novelty
    :math:`\nu_e` is the probability that its item is absent from a random
    :math:`M_j`-subset of its reference, :math:`M_j` the smallest reference of query j,

    .. math:: \nu_e = \binom{r_e - c_e}{M_j} \Big/ \binom{r_e}{M_j},

    so every selection of a query is compared with the same number of draws. With
    :math:`\bar\nu_{U,j}` the mean novelty of query j's selections at the unfavoured
    positions and :math:`F_j` its selections at the favoured ones,

    .. math:: O_j = \sum_{e \in F_j} (\nu_e - \bar\nu_{U,j}), \qquad
              U_j = \sum_{e \in F_j} (\nu^{unif}_e - \bar\nu_{U,j}),

    :math:`\nu^{unif}_e` the novelty of a uniformly landing item (the mean of the
    formula over the k candidates). When the position-driven selections come from the
    query's own choice law, a selection's item is independent of where it stood, every
    selection and its reference are draws from that law, and :math:`E\,O_j = 0`
    exactly, whatever the relevance sets. The reference holds no favoured-position
    selections, so a strong position effect does not make its own landings look old.
    Queries without a reference contribute 0.
    """
    k, n_q, n = evals.k, evals.n_queries, evals.item.size
    key = np.column_stack((evals.query, evals.orders))
    _, group = np.unique(key, axis=0, return_inverse=True)
    group = group.ravel()
    n_groups = int(group.max(initial=-1)) + 1
    free = ~at_favoured
    by_query = np.bincount(evals.query[free] * k + evals.item[free],
                           minlength=n_q * k).reshape(n_q, k)
    by_group = np.bincount(group[free] * k + evals.item[free],
                           minlength=n_groups * k).reshape(n_groups, k)
    others = (by_query[evals.query] - by_group[group]).astype(float)  # (n, k)
    size = others.sum(axis=1)
    draws = np.full(n_q, np.inf)
    np.minimum.at(draws, evals.query, size)
    m = draws[evals.query]
    ok = np.isfinite(m) & (m >= 1)
    m = np.where(ok, m, 0.0)
    new = _absent(size, others[np.arange(n), evals.item], m)
    uniform_new = _absent(size[:, None], others, m[:, None]).mean(axis=1)
    n_free = np.bincount(evals.query[free & ok], minlength=n_q).astype(float)
    free_new = np.divide(np.bincount(evals.query[free & ok], weights=new[free & ok],
                                     minlength=n_q),
                         n_free, out=np.zeros(n_q), where=n_free > 0)
    usable = (n_free > 0)[evals.query] & at_favoured & ok
    base = free_new[evals.query]
    observed = np.bincount(evals.query[usable], weights=(new - base)[usable],
                           minlength=n_q).astype(float)
    uniform = np.bincount(evals.query[usable], weights=(uniform_new - base)[usable],
                          minlength=n_q).astype(float)
    favoured = np.bincount(evals.query[at_favoured], minlength=n_q).astype(float)
    return Novelty(observed, uniform, favoured)


def _absent(size: npt.ArrayLike, copies: npt.ArrayLike, m: npt.ArrayLike
            ) -> npt.NDArray[np.float64]:
    """C(size - copies, m) / C(size, m): an item with ``copies`` among ``size`` draws is
    absent from a random m-subset of them (0 when fewer than m others exist)."""
    r, c, mm = (np.asarray(x, dtype=float) for x in (size, copies, m))
    rest = r - c
    with np.errstate(invalid="ignore"):
        log = (special.gammaln(rest + 1) - special.gammaln(np.maximum(rest - mm, 0) + 1)
               - special.gammaln(r + 1) + special.gammaln(np.maximum(r - mm, 0) + 1))
    return np.where(rest >= mm, np.exp(log), 0.0)


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

