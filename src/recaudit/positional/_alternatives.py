r"""Known-truth position effects beyond "one favoured position", as exact choice
vectors (for the sequential tests' power studies and the planner).

Each query has an order-independent relevance law r over its k candidates; each
evaluation shows a fresh uniformly random order sigma, and its exact position law is

.. math:: \pi(p) = s\,w(p) + (1 - s)\,r(\sigma^{-1}(p)),

with s the position-driven share (``strength``) and w the position law of that share.
The models (``ALTERNATIVES``):

- ``first``: w = the first position (the spec's section 8; crisp relevance sets
  uniform over the non-empty subsets, r uniform on the set).
- ``middle``: w = the middle position (1-based ``k // 2 + 1``); crisp sets.
- ``diffuse``: w uniform over the positions OTHER than the first (a diffuse aversion
  to one position: issue 33's model); crisp sets.
- ``graded``: graded preferences: r = softmax(2 Z) per query (Z standard normal per
  candidate) and w decreasing linearly in the position, w(p) proportional to k + 1 - p
  (a primacy gradient instead of one favoured slot).

The expected position law is :math:`q = s\,w + (1 - s)\,u` for every model (a uniform
order spreads r evenly), so PB = s TV(w, u). ``strength = 0`` is the null.
This generator is independent of the estimators it is used to check (it never calls
them) and of ``_scenarios`` (which draws sampled answers).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..exceptions import InputError
from ._simulation import random_relevance_sets

__all__ = ["ALTERNATIVES", "alternative_pb", "position_law", "sample_positions",
           "simulate_choice_vectors"]

ALTERNATIVES = ("first", "middle", "diffuse", "graded")
MSG_MODEL = "`model` must be one of {choices}, got {value!r}"
MSG_STRENGTH = "`strength` must be in [0, 1], got {value!r}"
_GRADED_SCALE = 2.0


def position_law(model: str, k: int) -> npt.NDArray[np.float64]:
    """w: the position law of the position-driven share (0-based positions)."""
    if model not in ALTERNATIVES:
        raise InputError(MSG_MODEL.format(choices=ALTERNATIVES, value=model))
    w = np.zeros(k)
    if model == "first":
        w[0] = 1.0
    elif model == "middle":
        w[k // 2] = 1.0
    elif model == "diffuse":
        w[1:] = 1.0 / (k - 1)
    else:
        w = (k - np.arange(k)).astype(float)
        w /= w.sum()
    return w


def alternative_pb(model: str, k: int, strength: float) -> float:
    """PB = TV(q, u) = strength * TV(w, u)."""
    return float(strength * 0.5 * np.abs(position_law(model, k) - 1.0 / k).sum())


def simulate_choice_vectors(
    model: str, reps: int, n_queries: int, *, k: int, orders: int, strength: float,
    gen: np.random.Generator,
) -> npt.NDArray[np.float64]:
    """Exact choice vectors of ``reps`` data sets, query blocks in order.

    Returns
    -------
    ndarray of shape (reps, n_queries * orders, k)
        Row ``j * orders + e`` is evaluation e of query j (prompt-position order).
    """
    if not 0.0 <= strength <= 1.0:
        raise InputError(MSG_STRENGTH.format(value=strength))
    w = position_law(model, k)
    if model == "graded":
        z = np.exp(_GRADED_SCALE * gen.standard_normal((reps, n_queries, 1, k)))
        rel = z / z.sum(axis=-1, keepdims=True)
    else:
        member = random_relevance_sets(reps * n_queries, k, gen).reshape(reps, n_queries, 1, k)
        rel = member / member.sum(axis=-1, keepdims=True)
    order = np.argsort(gen.random((reps, n_queries, orders, k)), axis=-1)
    shown = np.take_along_axis(np.broadcast_to(rel, order.shape), order, axis=-1)
    probs = (1.0 - strength) * shown + strength * w
    return np.asarray(probs.reshape(reps, n_queries * orders, k))


def sample_positions(vectors: npt.NDArray[np.float64], gen: np.random.Generator
                     ) -> npt.NDArray[np.int64]:
    """One sampled answer per vector (inverse CDF): 0-based positions, shape (..., n)."""
    cum = np.cumsum(vectors, axis=-1)
    u = gen.random(vectors.shape[:-1] + (1,))
    pos = (u * cum[..., -1:] > cum).sum(axis=-1)
    return np.minimum(pos, vectors.shape[-1] - 1).astype(np.int64)
