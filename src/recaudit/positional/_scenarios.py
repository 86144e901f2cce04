"""Simulation models with known truth, for validating every positional estimator.

Each model draws, per query j, an order-independent relevance distribution r_j over
the k candidates, a position-driven share beta_j with the position law w_j it uses,
and a decoding-noise share eps (a uniformly random item). One evaluation shows a
uniformly random order sigma and selects

    with probability beta_j:          the item at a position p ~ w_j,
    with probability eps:             an item uniform over the k candidates,
    otherwise:                        an item i ~ r_j,

so that P(I = i | sigma) = (1 - beta_j - eps) r_j(i) + eps / k + beta_j w_j(sigma(i)).
The truth of every estimand (population over queries) follows in closed form
(:class:`ScenarioTruth`). The models (``MODELS``):

- ``paper``: the spec's section 8: r_j uniform over a random non-empty relevance set,
  beta_j = p_bias, w_j = position 1, eps = 0, one sample per order.
- ``heterogeneous``: per-query strength beta_j = p_bias * 2 U (U uniform on [0, 1],
  mean p_bias) and a favoured position that is the first for half of the queries and
  the last for the other half; crisp relevance sets as in ``paper``.
- ``graded``: r_j = softmax of 2 Z (Z standard normal per candidate): graded choice
  probabilities, no crisp set; beta_j = p_bias at position 1.
- ``decoding``: the ``paper`` model with decoding noise eps = 0.1 and repeated samples
  of the same order (10 distinct orders x 2 samples per query).
- ``primacy``: crisp sets as in ``paper``; with probability p_bias the selection is the
  relevant candidate shown earliest (position only breaks ties inside the relevance
  set: every selection is relevant, so the strong bias is 0 and the effect is soft).
- ``diffuse``: crisp sets as in ``paper``; with probability p_bias the selection is the
  item at a uniformly random position other than the first (an aversion to position 1
  spread over the others, no favoured position).

Position-driven selections land, over the random orders, on the items with the law
pi_j: uniform for ``paper``, ``heterogeneous``, ``graded``, ``decoding`` and ``diffuse``;
uniform over R_j for ``primacy``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import special

from ..exceptions import InputError
from ._evaluations import Evaluations
from ._simulation import evaluations_from_draws, random_relevance_sets

__all__ = ["MODELS", "ScenarioTruth", "simulate_scenario", "scenario_truth"]

MODELS = ("paper", "heterogeneous", "graded", "decoding", "primacy", "diffuse")
MSG_MODEL = "`model` must be one of {choices}, got {value!r}"
_NOISE = 0.1  # decoding-noise share of the 'decoding' model
_GRADED_SCALE = 2.0


@dataclass(frozen=True)
class _Queries:
    """Per-query parameters: relevance (n, k), strength (n,), favoured position (n,),
    and how a position-driven selection is made (``rule``: "favoured", "primacy",
    "diffuse")."""

    relevance: npt.NDArray[np.float64]
    beta: npt.NDArray[np.float64]
    favoured: npt.NDArray[np.int64]
    eps: float
    rule: str = "favoured"


@dataclass(frozen=True)
class ScenarioTruth:
    """Population values of the estimands of one model (fractions).

    Attributes
    ----------
    position : ndarray of shape (k,)
        q_p = E_j P(P = p): the position distribution.
    pb : float
        TV(q, Uniform_k) = 1/2 sum_p |q_p - 1/k|.
    ps : float
        Probability that two evaluations of a query under two independent random
        orders select different items, 1 - E_j sum_i Pbar_j(i)^2 with
        Pbar_j(i) = (1 - beta_j - eps) r_j(i) + (eps + beta_j) / k.
    positional_share : float
        E_j beta_j: share of selections made by position.
    spb : float
        Strong positional bias E_j beta_j TV(pi_j, f_j), f_j the position-free
        choice law ((1 - beta_j - eps) r_j + eps / k) / (1 - beta_j) and pi_j the item
        law of the position-driven selections: the share of selections position moves
        away from where the query's own choice law puts them; for a crisp relevance
        set R_j without noise and uniform pi_j it is beta_j (k - |R_j|) / k, the share
        of selections outside R_j (the spec's definition); 0 for ``primacy``.
    soft : float
        positional_share - spb: position-driven selections that land where
        relevance would have put them.
    ps_modal_limit : float
        1 - E_j max_i Pbar_j(i): the limit of the paper's modal PS as the number of
        orders per query grows (its value at a finite number of orders is larger).
    """

    position: npt.NDArray[np.float64]
    pb: float
    ps: float
    positional_share: float
    spb: float
    soft: float
    ps_modal_limit: float


def scenario_truth(
    model: str, *, k: int, p_bias: float, rng: np.random.Generator | int = 0,
    n_draws: int = 400_000,
) -> ScenarioTruth:
    """The population truth of ``model``, from ``n_draws`` query draws.

    Every estimand is a mean over queries of a closed-form per-query value, so the
    Monte-Carlo error is that of a mean over ``n_draws`` queries (< 1e-4 at the
    default).
    """
    gen = np.random.default_rng(rng)
    qs = _draw_queries(model, n_draws, k, p_bias, gen)
    w, landing = _position_laws(qs, k)
    position = ((1.0 - qs.beta) / k)[:, None] + qs.beta[:, None] * w
    q = position.mean(axis=0)
    pbar = ((1.0 - qs.beta - qs.eps)[:, None] * qs.relevance + (qs.eps / k)
            + qs.beta[:, None] * landing)
    # the position-free choice law: relevance and decoding noise (at beta = 1, where
    # eps = 0, its limit as beta -> 1: the relevance law itself)
    rest = (1.0 - qs.beta)[:, None]
    free = np.divide((1.0 - qs.beta - qs.eps)[:, None] * qs.relevance + qs.eps / k, rest,
                     out=qs.relevance.copy(), where=rest > 0)
    tv_rel = 0.5 * np.abs(free - landing).sum(axis=1)
    spb = float(np.mean(qs.beta * tv_rel))
    share = float(qs.beta.mean())
    return ScenarioTruth(
        position=q,
        pb=float(0.5 * np.abs(q - 1.0 / k).sum()),
        ps=float(1.0 - np.mean((pbar**2).sum(axis=1))),
        positional_share=share,
        spb=spb,
        soft=share - spb,
        ps_modal_limit=float(1.0 - np.mean(pbar.max(axis=1))),
    )


def simulate_scenario(
    model: str,
    n_queries: int,
    *,
    k: int,
    p_bias: float,
    n_orders: int = 20,
    rng: np.random.Generator | int | None = None,
) -> Evaluations:
    """One data set of ``n_queries`` queries from ``model`` (``MODELS``).

    Each query gets ``n_orders`` evaluations (the ``decoding`` model: ``n_orders // 2``
    distinct uniformly random orders, each sampled twice).
    """
    if model not in MODELS:
        raise InputError(MSG_MODEL.format(choices=MODELS, value=model))
    gen = np.random.default_rng(rng)
    qs = _draw_queries(model, n_queries, k, p_bias, gen)
    repeats = 2 if model == "decoding" else 1
    distinct = max(1, n_orders // repeats)
    per_query = distinct * repeats
    n = n_queries * per_query
    query = np.repeat(np.arange(n_queries, dtype=np.int64), per_query)
    base = gen.permuted(np.tile(np.arange(k, dtype=np.int64), (n_queries * distinct, 1)), axis=1)
    orders = np.repeat(base, repeats, axis=0)
    u = gen.random(n)
    beta = qs.beta[query]
    by_position = u < beta
    by_noise = (u >= beta) & (u < beta + qs.eps)
    # relevance draws: inverse-CDF per evaluation
    cdf = np.cumsum(qs.relevance, axis=1)[query]
    item = (gen.random(n)[:, None] * cdf[:, -1:] > cdf).sum(axis=1)
    item = np.minimum(item, k - 1)
    noise_items = gen.integers(0, k, size=n)
    item = np.where(by_noise, noise_items, item)
    item = np.where(by_position, orders[np.arange(n), _driven_positions(qs, query, orders, gen)],
                    item)
    return evaluations_from_draws(k, n_queries, query, orders, item)


def _driven_positions(qs: _Queries, query: npt.NDArray[np.int64],
                      orders: npt.NDArray[np.int64], gen: np.random.Generator
                      ) -> npt.NDArray[np.int64]:
    """The (0-based) position a position-driven selection of each evaluation takes."""
    if qs.rule == "primacy":  # the earliest shown relevant candidate
        shown_relevant = np.take_along_axis(qs.relevance[query] > 0, orders, axis=1)
        return np.argmax(shown_relevant, axis=1).astype(np.int64)
    if qs.rule == "diffuse":  # any position but the first
        k = orders.shape[1]
        return gen.integers(1, k, size=query.size).astype(np.int64)
    return qs.favoured[query]


def _position_laws(qs: _Queries, k: int
                   ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """w_j, the position law of the position-driven selections (n, k), and pi_j, their
    item law over the uniformly random orders (n, k)."""
    n = qs.beta.size
    uniform = np.full((n, k), 1.0 / k)
    if qs.rule == "primacy":  # P(first relevant at p) = C(k - p, s - 1) / C(k, s)
        size = np.count_nonzero(qs.relevance > 0, axis=1)
        p = np.arange(1, k + 1)
        w = special.comb(k - p[None, :], size[:, None] - 1) / special.comb(k, size)[:, None]
        return w, qs.relevance.copy()
    w = np.zeros((n, k))
    if qs.rule == "diffuse":
        w[:, 1:] = 1.0 / (k - 1)
    else:
        w[np.arange(n), qs.favoured] = 1.0
    return w, uniform


def _draw_queries(
    model: str, n: int, k: int, p_bias: float, gen: np.random.Generator
) -> _Queries:
    if model not in MODELS:
        raise InputError(MSG_MODEL.format(choices=MODELS, value=model))
    if model == "graded":
        z = np.exp(_GRADED_SCALE * gen.standard_normal((n, k)))
        relevance = z / z.sum(axis=1, keepdims=True)
    else:
        member = random_relevance_sets(n, k, gen)
        relevance = member / member.sum(axis=1, keepdims=True)
    favoured = np.zeros(n, dtype=np.int64)
    beta = np.full(n, float(p_bias))
    if model == "heterogeneous":
        beta = float(p_bias) * 2.0 * gen.random(n)
        favoured = np.where(gen.random(n) < 0.5, 0, k - 1).astype(np.int64)
    eps = _NOISE if model == "decoding" else 0.0
    rule = model if model in ("primacy", "diffuse") else "favoured"
    return _Queries(relevance, beta, favoured, eps, rule)
