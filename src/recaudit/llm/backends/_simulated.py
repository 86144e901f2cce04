"""A simulated recommender: the generative model of the spec's section 8.

Each query has a non-empty relevance set R over its k candidates (original indices),
drawn deterministically from ``(seed, query_id, k)``. Each evaluation, with
probability ``p_bias``, selects the item at a prompt position drawn from the
profile's position weights (default: always the FIRST position, the spec's model);
otherwise it selects an item uniformly from R. With probability ``discard_rate`` it
answers with text that does not parse. ``p_bias = 0`` is the null of no positional
bias.

Every draw comes from a generator derived from ``(seed, query_id, k, order,
request.seed, temperature)``, so the same key always gets the same answer: a resumed
run produces the same table as an uninterrupted one.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..._plackett_luce import draw_ranking
from ..._seeds import stable_words
from ...exceptions import InputError
from .._types import ChatRequest, ChatResponse

__all__ = ["SimulatedBackend", "SimulationProfile"]

#: The text of a simulated discarded generation (does not parse to an identifier).
DISCARD_TEXT = "Here are some great options for you! All of them match your request."


@dataclass(frozen=True)
class SimulationProfile:
    """Parameters of the simulated recommender.

    Attributes
    ----------
    p_bias : float
        Probability that an evaluation selects by position instead of relevance.
    position_weights : tuple of float or None
        Relative weight of each prompt position 1..k when selecting by position;
        ``None`` means all weight on position 1 (the spec's model).
    max_relevant : int or None
        Largest relevance set; the size of R is uniform on 1..max_relevant
        (``None``: up to k).
    discard_rate : float
        Probability of a malformed answer (a discarded generation).
    delay_s : float
        Artificial latency per call (for crash tests and progress displays).
    """

    p_bias: float = 0.0
    position_weights: tuple[float, ...] | None = None
    max_relevant: int | None = None
    discard_rate: float = 0.0
    delay_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("p_bias", "discard_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise InputError(f"`{name}` must be in [0, 1], got {value!r}")
        if self.delay_s < 0:
            raise InputError(f"`delay_s` must be >= 0, got {self.delay_s!r}")
        if self.max_relevant is not None and self.max_relevant < 1:
            raise InputError(f"`max_relevant` must be >= 1, got {self.max_relevant!r}")
        if self.position_weights is not None:
            w = np.asarray(self.position_weights, dtype=float)
            if w.ndim != 1 or w.size < 2 or np.any(w < 0) or w.sum() <= 0:
                raise InputError(
                    "`position_weights` must list >= 2 non-negative weights with a "
                    f"positive sum, got {self.position_weights!r}"
                )

    @classmethod
    def null(cls, *, max_relevant: int | None = None, discard_rate: float = 0.0,
             delay_s: float = 0.0) -> SimulationProfile:
        """No positional bias (``p_bias = 0``)."""
        return cls(p_bias=0.0, max_relevant=max_relevant, discard_rate=discard_rate,
                   delay_s=delay_s)

    @classmethod
    def primacy(cls, p_bias: float, *, max_relevant: int | None = None,
                discard_rate: float = 0.0, delay_s: float = 0.0) -> SimulationProfile:
        """The spec's model: position 1 with probability ``p_bias``."""
        return cls(p_bias=p_bias, max_relevant=max_relevant, discard_rate=discard_rate,
                   delay_s=delay_s)

    @classmethod
    def from_weights(cls, weights: Sequence[float], *, p_bias: float = 1.0,
                     max_relevant: int | None = None, discard_rate: float = 0.0,
                     delay_s: float = 0.0) -> SimulationProfile:
        """A fixed position-preference profile (e.g. ``[4, 2, 1, 1, 1]``): with
        probability ``p_bias`` the position is drawn from these weights."""
        return cls(p_bias=p_bias, position_weights=tuple(float(w) for w in weights),
                   max_relevant=max_relevant, discard_rate=discard_rate, delay_s=delay_s)


class SimulatedBackend:
    """A :class:`~recaudit.llm.Backend` that answers from the section-8 model.

    Parameters
    ----------
    profile : SimulationProfile
        Bias, relevance-set size, discard rate, delay.
    k : int
        Number of candidates per request.
    seed : int
        Root seed; with the request's key fields it fixes every draw.
    name : str
        Label of the backend.
    answer : {"pick", "ranking"}
        ``"ranking"`` answers every request with a full ranking (:meth:`rank`), for
        top-N audits.

    Examples
    --------
    >>> b = SimulatedBackend(SimulationProfile.primacy(0.3), k=5, seed=1)
    >>> b.relevance_set("q1")  # doctest: +SKIP
    (2, 4)
    """

    def __init__(self, profile: SimulationProfile, *, k: int, seed: int,
                 name: str = "simulated", answer: str = "pick") -> None:
        self.profile, self.k, self.seed = _simulated_iv(profile, k, seed)
        if answer not in ("pick", "ranking"):
            raise InputError(f"`answer` must be 'pick' or 'ranking', got {answer!r}")
        self.name = name
        self.answer = answer
        w = profile.position_weights
        weights = np.zeros(self.k) if w is None else np.asarray(w, dtype=float)
        if w is None:
            weights[0] = 1.0
        self._weights = weights / weights.sum()

    def relevance_set(self, query_id: str) -> tuple[int, ...]:
        """The query's relevance set R (sorted original indices, the ground truth)."""
        rng = np.random.default_rng(
            np.random.SeedSequence([self.seed, self.k, *stable_words("R", query_id)])
        )
        size = int(rng.integers(1, (self.profile.max_relevant or self.k) + 1))
        members = rng.choice(self.k, size=min(size, self.k), replace=False) + 1
        return tuple(sorted(int(i) for i in members))

    def choose(self, request: ChatRequest) -> int | None:
        """The prompt position the model selects, or ``None`` for a discard."""
        if len(request.order) != self.k or len(request.identifiers) != self.k:
            raise InputError(
                f"simulated backend has k={self.k} but the request shows "
                f"{len(request.order)} candidates; build one backend per k"
            )
        rng = np.random.default_rng(
            np.random.SeedSequence([
                self.seed,
                self.k,
                *stable_words("E", request.query_id, request.order, request.seed,
                              round(request.temperature, 6)),
            ])
        )
        u_discard, u_bias = rng.random(2)
        if u_discard < self.profile.discard_rate:
            return None
        if u_bias < self.profile.p_bias:
            return int(rng.choice(self.k, p=self._weights)) + 1
        relevant = self.relevance_set(request.query_id)
        original = int(relevant[int(rng.integers(len(relevant)))])
        return request.order.index(original) + 1

    def choice_distribution(self, request: ChatRequest) -> tuple[float, ...]:
        r"""The exact probability of each prompt position given an answer:
        :math:`p_{bias} w_p + (1 - p_{bias}) 1[\sigma(p) \in R] / |R|`."""
        relevant = set(self.relevance_set(request.query_id))
        share = (1.0 - self.profile.p_bias) / len(relevant)
        return tuple(float(self.profile.p_bias * w + (share if o in relevant else 0.0))
                     for w, o in zip(self._weights, request.order, strict=True))

    def rank(self, request: ChatRequest) -> tuple[int, ...] | None:
        """A full ranking (prompt positions, best first), or ``None`` for a discard.

        The primacy Plackett-Luce model of :func:`recaudit.positional.draw_ranking`
        (``recaudit._plackett_luce``): relevant items have worth 3, the others 1; at
        each stage, with probability ``p_bias`` the remaining item at the position
        drawn from the position weights (default: the earliest) comes next.
        """
        rng = np.random.default_rng(
            np.random.SeedSequence([
                self.seed, self.k,
                *stable_words("RANK", request.query_id, request.order, request.seed,
                              round(request.temperature, 6)),
            ])
        )
        if rng.random() < self.profile.discard_rate:
            return None
        relevant = set(self.relevance_set(request.query_id))
        worth = [3.0 if i in relevant else 1.0 for i in range(1, self.k + 1)]
        return draw_ranking(worth, request.order, p_bias=self.profile.p_bias, rng=rng,
                            position_weights=self.profile.position_weights)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer ``request`` with the JSON object the parser accepts (and, when
        asked, the exact :meth:`choice_distribution` as ``choice_probs``); with
        ``answer="ranking"``, ``{"ranking": [<identifier>, ...]}`` from :meth:`rank`."""
        t0 = time.perf_counter()
        if self.profile.delay_s > 0:
            await asyncio.sleep(self.profile.delay_s)
        if self.answer == "ranking":
            ranking = self.rank(request)
            text = DISCARD_TEXT if ranking is None else json.dumps(
                {"ranking": [int(i) if i.isdigit() else i
                             for i in (request.identifiers[p - 1] for p in ranking)]})
            return ChatResponse(text=text, latency_s=time.perf_counter() - t0)
        position = self.choose(request)
        if position is None:
            text = DISCARD_TEXT
        else:
            ident = request.identifiers[position - 1]
            value: int | str = int(ident) if ident.isdigit() else ident
            text = json.dumps({"article_number": value, "recommendation": "simulated"})
        probs = self.choice_distribution(request) if request.choice_probabilities else None
        return ChatResponse(text=text, latency_s=time.perf_counter() - t0,
                            prompt_tokens=None, completion_tokens=None, choice_probs=probs,
                            outside_mass=self.profile.discard_rate if probs else None)

    async def aclose(self) -> None:
        """Nothing to release."""


def _simulated_iv(profile: SimulationProfile, k: int, seed: int
                  ) -> tuple[SimulationProfile, int, int]:
    if not isinstance(profile, SimulationProfile):
        raise InputError(f"`profile` must be a SimulationProfile, got {type(profile).__name__}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise InputError(f"`k` must be an integer >= 2, got {k!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"`seed` must be a non-negative integer, got {seed!r}")
    if profile.position_weights is not None and len(profile.position_weights) != k:
        raise InputError(
            f"`position_weights` has {len(profile.position_weights)} entries but k={k}; "
            "give one weight per prompt position"
        )
    return profile, k, seed
