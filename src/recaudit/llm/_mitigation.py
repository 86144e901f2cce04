"""Mitigations of positional bias, each a wrapper around any :class:`Backend`.

A wrapped backend is a NEW system under test: "model + mitigation". It answers the
audited request (candidates in the audited order) with a prompt position of that
order, so the ordinary runner, journal and statistics audit it unchanged.

- :class:`OrderEnsembleBackend`: ask the model under ``m`` orders derived from the
  request's seed (independent of the audited order), vote over the ITEMS answered
  (majority, or Borda over the choice-probability rankings), and answer the winner's
  position in the audited order.
- :class:`CalibratedBackend`: divide the model's choice probabilities by a position
  prior estimated on a calibration subset of queries (:func:`estimate_position_prior`,
  queries disjoint from the audited ones) and answer the argmax (or a seeded draw) of
  the calibrated distribution (Zhao et al. 2021, "Calibrate before use"; Zheng et al.
  2024, "Large language models are not robust multiple choice selectors", PriDe).
- :class:`CanonicalOrderBackend`: always show the candidates in one canonical order
  (retrieval rank or item id), whatever order was audited.

Re-rendering a request under another order needs the template, the query text and
the candidates: :class:`PromptContext` holds them for one candidate-set size and is
the seam between the testbed and the wrappers (``run_audit(wrap_backends=...)``
passes them in).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from .._limits import DEFAULT_CONCURRENCY
from .._seeds import stable_words
from ..exceptions import InputError
from ._parse import parse_answer
from ._prompt import PromptTemplate, render_request
from ._types import Backend, Candidate, ChatRequest, ChatResponse

__all__ = [
    "CalibratedBackend",
    "CanonicalOrderBackend",
    "OrderEnsembleBackend",
    "PositionPrior",
    "PromptContext",
    "estimate_position_prior",
]

MSG_NO_PROBS = (
    "prior calibration needs choice probabilities, but backend {name!r} returned none; "
    "set `[prompt] choice_probabilities = true` (or `constrained = true` for the local "
    "backend), or use a backend that reports identifier probabilities"
)
MSG_M = "`m` must be an integer >= 1, got {m!r}"
MSG_VOTE = "`vote` must be 'majority' or 'borda', got {vote!r}"
MSG_DECISION = "`decision` must be 'argmax' or 'sample', got {decision!r}"
MSG_BY = "`by` must be 'retrieval' or 'item_id', got {by!r}"
MSG_QUERY = (
    "request for query {query_id!r} cannot be re-rendered: the PromptContext has no "
    "such query (build it from the same queries and candidates as the tasks)"
)
MSG_PRIOR = "`prior` must be {k} positive numbers, got {prior!r}"
MSG_PRIOR_K = "the position prior has {n} positions but the request shows {k} candidates"
MSG_NO_REQUESTS = "`requests` must be a non-empty sequence of ChatRequest"


@dataclass(frozen=True)
class PromptContext:
    """What re-rendering a request of one candidate-set size needs.

    Attributes
    ----------
    template : PromptTemplate
    query_texts : mapping of str to str
        Query id -> query text.
    candidates : mapping of str to tuple of Candidate
        Query id -> its candidates in ORIGINAL order (one k).
    """

    template: PromptTemplate
    query_texts: Mapping[str, str]
    candidates: Mapping[str, tuple[Candidate, ...]]

    def render(self, request: ChatRequest, order: Sequence[int], *,
               seed: int | None = None) -> ChatRequest:
        """``request`` shown in ``order`` (same identifiers per position, same decoding
        settings; ``seed`` replaces the decoding seed when given)."""
        qid = request.query_id
        if qid not in self.candidates or qid not in self.query_texts:
            raise InputError(MSG_QUERY.format(query_id=qid))
        return render_request(
            self.template, self.query_texts[qid], self.candidates[qid], order,
            identifiers=request.identifiers, temperature=request.temperature,
            seed=request.seed if seed is None else seed, max_tokens=request.max_tokens,
            choice_probabilities=request.choice_probabilities,
            response_format=request.response_format, query_id=qid,
        )


def answer_text(request: ChatRequest, original_index: int | None) -> str:
    """The JSON answer naming ``original_index``'s identifier in ``request``'s order
    (an unparsable text when ``None``: the mitigated system discarded)."""
    if original_index is None:
        return "no answer: every call of the mitigation was discarded"
    ident = request.identifiers[request.order.index(original_index)]
    value: int | str = int(ident) if ident.isdigit() else ident
    return json.dumps({"article_number": value})


def _sum(values: Sequence[int | None]) -> int | None:
    return None if any(v is None for v in values) else int(sum(v or 0 for v in values))


def _rng(*parts: object) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(stable_words(*parts)))


def _item_of(response: ChatResponse, request: ChatRequest) -> int | None:
    position = parse_answer(response.text, request.identifiers).position
    return None if position is None else request.order[position - 1]


class OrderEnsembleBackend:
    r"""Order-ensemble voting: ``m`` orders, one vote per order, over items.

    For a request with decoding seed ``s``, the orders :math:`\sigma_1..\sigma_m` are
    uniform random permutations drawn from a generator seeded by
    ``(query_id, s, k)`` -- independent of the audited order, so the mitigated
    answer's ITEM does not depend on it. Each sub-request keeps the identifiers per
    position and the decoding settings (sub-seed derived from ``s`` and ``j``).

    - ``vote="majority"``: the item answered most often; ties broken uniformly at
      random (seeded by the request). Discarded sub-answers do not vote; when all are
      discarded the mitigated answer is discarded.
    - ``vote="borda"``: each sub-answer's choice probabilities rank the k items; an
      item gets :math:`k - r` points at rank r (1 = best), summed over the orders
      (Borda 1781; de Borda count). Needs choice probabilities.

    The answer is the winner's identifier at its position in the AUDITED order. Cost:
    ``m`` calls per evaluation; tokens are summed over the calls.

    Parameters
    ----------
    inner : Backend
    contexts : mapping of int to PromptContext
        One context per candidate-set size k.
    m : int
        Orders per request.
    vote : {"majority", "borda"}
    """

    def __init__(self, inner: Backend, contexts: Mapping[int, PromptContext], *, m: int = 3,
                 vote: Literal["majority", "borda"] = "majority") -> None:
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise InputError(MSG_M.format(m=m))
        if vote not in ("majority", "borda"):
            raise InputError(MSG_VOTE.format(vote=vote))
        self.inner, self.contexts, self.m, self.vote = inner, dict(contexts), m, vote
        self.name = f"{inner.name}+ensemble(m={m},{vote})"
        self.calls_per_request = float(m)

    def sub_orders(self, request: ChatRequest) -> list[tuple[int, ...]]:
        """The ``m`` orders used for ``request`` (a function of query id, seed, k)."""
        k = len(request.order)
        gen = _rng("ensemble", request.query_id, request.seed, k)
        return [tuple(int(x) + 1 for x in gen.permutation(k)) for _ in range(self.m)]

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Ask under every sub-order concurrently, vote, answer in the audited order."""
        k = len(request.order)
        context = self.contexts[k]
        base = request.seed if request.seed is not None else 0
        subs = [context.render(request, order,
                               seed=stable_words("sub", base, j)[0] & 0x7FFFFFFF)
                for j, order in enumerate(self.sub_orders(request))]
        if self.vote == "borda":
            subs = [_with_probs(r) for r in subs]
        responses = await asyncio.gather(*(self.inner.complete(r) for r in subs))
        points = np.zeros(k + 1)
        voters = 0
        for sub, resp in zip(subs, responses, strict=True):
            if self.vote == "majority":
                item = _item_of(resp, sub)
                if item is not None:
                    points[item] += 1.0
                    voters += 1
            else:
                if resp.choice_probs is None:
                    raise InputError(MSG_NO_PROBS.format(name=self.inner.name)
                                     .replace("prior calibration", "Borda voting"))
                probs = np.asarray(resp.choice_probs, dtype=float)
                rank = np.empty(k)
                rank[np.argsort(-probs, kind="stable")] = np.arange(1, k + 1)
                points[list(sub.order)] += k - rank
                voters += 1
        winner = None
        if voters:
            best = np.flatnonzero(points == points.max())
            best = best[best >= 1]
            tie = _rng("ensemble-tie", request.query_id, request.seed)
            winner = int(best[int(tie.integers(best.size))])
        return ChatResponse(
            text=answer_text(request, winner),
            prompt_tokens=_sum([r.prompt_tokens for r in responses]),
            completion_tokens=_sum([r.completion_tokens for r in responses]),
            latency_s=float(sum(r.latency_s for r in responses)),
            retries=int(sum(r.retries for r in responses)),
            extra={"calls": len(responses), "votes": points[1:].tolist()},
        )

    async def aclose(self) -> None:
        """Close the wrapped backend."""
        await self.inner.aclose()


def _with_probs(request: ChatRequest) -> ChatRequest:
    from dataclasses import replace

    return replace(request, choice_probabilities=True)


@dataclass(frozen=True)
class PositionPrior:
    r"""The model's position prior, estimated on calibration queries.

    :math:`\hat\pi_p = \frac1N \sum_{n} P_n(p)`: the mean choice probability of prompt
    position p over N calibration requests (calibration queries under random
    orders, so content averages out and what remains is the position preference).

    Attributes
    ----------
    weights : tuple of float
        :math:`\hat\pi_1..\hat\pi_k` (sum 1).
    n_requests : int
        N.
    n_queries : int
        Distinct calibration queries.
    calls, prompt_tokens, completion_tokens : int
        What estimating it cost (tokens 0 when the backend reports none).
    """

    weights: tuple[float, ...]
    n_requests: int
    n_queries: int
    calls: int
    prompt_tokens: int
    completion_tokens: int

    def to_dict(self) -> dict[str, object]:
        """JSON-ready."""
        return {"weights": list(self.weights), "n_requests": self.n_requests,
                "n_queries": self.n_queries, "calls": self.calls,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens}


async def estimate_position_prior(backend: Backend, requests: Sequence[ChatRequest], *,
                                  concurrency: int = DEFAULT_CONCURRENCY) -> PositionPrior:
    r"""Estimate the position prior :math:`\hat\pi` from choice probabilities.

    Parameters
    ----------
    backend : Backend
        The UNMITIGATED model; must report ``choice_probs``.
    requests : sequence of ChatRequest
        Calibration requests: queries disjoint from the audited ones, each under one
        or more uniformly random orders.
    concurrency : int
        Requests in flight.

    Returns
    -------
    PositionPrior

    Raises
    ------
    InputError
        No requests, mixed k, or a response without choice probabilities.

    References
    ----------
    Zheng, Zhou, Meng, Zhou, Huang (2024). Large language models are not robust
    multiple choice selectors. ICLR (PriDe: prior estimated on a small subset, divided
    out).
    """
    reqs = list(requests)
    if not reqs or not all(isinstance(r, ChatRequest) for r in reqs):
        raise InputError(MSG_NO_REQUESTS)
    k = len(reqs[0].order)
    if any(len(r.order) != k for r in reqs):
        raise InputError("calibration `requests` must all show the same number of candidates")
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(r: ChatRequest) -> ChatResponse:
        async with gate:
            return await backend.complete(_with_probs(r))

    responses = await asyncio.gather(*(one(r) for r in reqs))
    probs = []
    for resp in responses:
        if resp.choice_probs is None:
            raise InputError(MSG_NO_PROBS.format(name=backend.name))
        probs.append(resp.choice_probs)
    mean = np.asarray(probs, dtype=float).mean(axis=0)
    mean = mean / mean.sum()
    return PositionPrior(
        weights=tuple(float(x) for x in mean), n_requests=len(reqs),
        n_queries=len({r.query_id for r in reqs}), calls=len(reqs),
        prompt_tokens=int(sum(r.prompt_tokens or 0 for r in responses)),
        completion_tokens=int(sum(r.completion_tokens or 0 for r in responses)),
    )


def calibrate(probs: npt.ArrayLike, prior: npt.ArrayLike) -> npt.NDArray[np.float64]:
    r"""Calibrated choice distribution :math:`q_p \propto P(p) / \hat\pi_p`."""
    q = np.asarray(probs, dtype=float) / np.asarray(prior, dtype=float)
    total = q.sum()
    return q / total if total > 0 else np.full(q.size, 1.0 / q.size)


class CalibratedBackend:
    r"""Prior calibration: divide the position prior out of the choice probabilities.

    For the audited request the inner model's choice probabilities :math:`P(p)` are
    turned into :math:`q_p = \frac{P(p)/\hat\pi_p}{\sum_{p'} P(p')/\hat\pi_{p'}}`
    (:func:`calibrate`), and the answer is :math:`\arg\max_p q_p` (``decision =
    "argmax"``; exact ties broken uniformly at random, seeded by the request -- a
    lower-position rule would itself be a position bias) or a draw from :math:`q` with a generator
    seeded by the request (``"sample"``). The inner model's own text is ignored.
    Cost: one call per evaluation plus the prior's calls (amortised over the audit).

    Parameters
    ----------
    inner : Backend
        Must report choice probabilities.
    prior : PositionPrior or sequence of float
        :math:`\hat\pi` from :func:`estimate_position_prior` (queries disjoint from
        the audited ones).
    decision : {"argmax", "sample"}

    References
    ----------
    Zhao, Wallace, Feng, Klein, Singh (2021). Calibrate before use. ICML.
    Zheng et al. (2024), ICLR (PriDe).
    """

    def __init__(self, inner: Backend, prior: PositionPrior | Sequence[float], *,
                 decision: Literal["argmax", "sample"] = "argmax") -> None:
        weights = prior.weights if isinstance(prior, PositionPrior) else tuple(prior)
        w = np.asarray(weights, dtype=float)
        if w.ndim != 1 or w.size < 2 or not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise InputError(MSG_PRIOR.format(k=">= 2", prior=weights))
        if decision not in ("argmax", "sample"):
            raise InputError(MSG_DECISION.format(decision=decision))
        self.inner, self.prior, self.decision = inner, w / w.sum(), decision
        self.name = f"{inner.name}+calibrated({decision})"
        self.calls_per_request = 1.0

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Ask once with choice probabilities, answer from the calibrated ones."""
        if len(request.order) != self.prior.size:
            raise InputError(MSG_PRIOR_K.format(n=self.prior.size, k=len(request.order)))
        resp = await self.inner.complete(_with_probs(request))
        if resp.choice_probs is None:
            raise InputError(MSG_NO_PROBS.format(name=self.inner.name))
        q = calibrate(resp.choice_probs, self.prior)
        gen = _rng("calibrated", request.query_id, request.seed)
        if self.decision == "argmax":
            best = np.flatnonzero(q >= q.max() * (1 - 1e-12))
            index = int(best[int(gen.integers(best.size))])
        else:
            index = int(gen.choice(q.size, p=q))
        return ChatResponse(
            text=answer_text(request, request.order[index]),
            prompt_tokens=resp.prompt_tokens, completion_tokens=resp.completion_tokens,
            latency_s=resp.latency_s, retries=resp.retries,
            choice_probs=tuple(float(x) for x in q), outside_mass=resp.outside_mass,
            extra={"calls": 1, "raw_choice_probs": list(resp.choice_probs)},
        )

    async def aclose(self) -> None:
        """Close the wrapped backend."""
        await self.inner.aclose()


class CanonicalOrderBackend:
    """Canonical order: the model always sees the candidates in one fixed order.

    ``by="retrieval"`` shows them by retrieval rank (original index 1..k);
    ``by="item_id"`` sorts them by catalog item id (a content-free order that the
    retrieval system cannot influence). The answer is mapped back to the audited
    order, so the mitigated answer does not depend on the audited order at all. It
    does not remove the model's position preference: it fixes which item receives it.
    Cost: one call per evaluation.

    Parameters
    ----------
    inner : Backend
    contexts : mapping of int to PromptContext
    by : {"retrieval", "item_id"}
    """

    def __init__(self, inner: Backend, contexts: Mapping[int, PromptContext], *,
                 by: Literal["retrieval", "item_id"] = "retrieval") -> None:
        if by not in ("retrieval", "item_id"):
            raise InputError(MSG_BY.format(by=by))
        self.inner, self.contexts, self.by = inner, dict(contexts), by
        self.name = f"{inner.name}+canonical({by})"
        self.calls_per_request = 1.0

    def canonical_order(self, request: ChatRequest) -> tuple[int, ...]:
        """The order shown for ``request``'s query."""
        k = len(request.order)
        if self.by == "retrieval":
            return tuple(range(1, k + 1))
        cands = self.contexts[k].candidates[request.query_id]
        return tuple(c.original_index for c in sorted(cands, key=lambda c: c.item_id))

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Ask under the canonical order, answer in the audited order."""
        sub = self.contexts[len(request.order)].render(request, self.canonical_order(request))
        resp = await self.inner.complete(sub)
        item = _item_of(resp, sub)
        return ChatResponse(
            text=answer_text(request, item), prompt_tokens=resp.prompt_tokens,
            completion_tokens=resp.completion_tokens, latency_s=resp.latency_s,
            retries=resp.retries, extra={"calls": 1, "raw_text": resp.text},
        )

    async def aclose(self) -> None:
        """Close the wrapped backend."""
        await self.inner.aclose()
