"""The mitigation wrappers, each around a fake or the simulated backend."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from recaudit.exceptions import InputError
from recaudit.llm import (
    CalibratedBackend,
    Candidate,
    CanonicalOrderBackend,
    ChatResponse,
    OrderEnsembleBackend,
    PromptContext,
    PromptTemplate,
    SimulatedBackend,
    SimulationProfile,
    estimate_position_prior,
    parse_answer,
    positional_identifiers,
    render_request,
)
from recaudit.llm._mitigation import MSG_NO_PROBS, calibrate

K = 5


def cands(qid: str, k: int = K) -> tuple[Candidate, ...]:
    return tuple(Candidate(i, f"{qid}-item{(7 * i) % 10}", f"title {qid} {i}", "d", 1 - i / 10)
                 for i in range(1, k + 1))


def context(qids=("q1", "q2", "q3")) -> dict[int, PromptContext]:
    tpl = PromptTemplate.default()
    return {K: PromptContext(tpl, {q: f"text of {q}" for q in qids},
                             {q: cands(q) for q in qids})}


def request(qid="q1", order=(1, 2, 3, 4, 5), seed=1, probs=False):
    return render_request(PromptTemplate.default(), f"text of {qid}", cands(qid), order,
                          identifiers=positional_identifiers(K), temperature=0.0, seed=seed,
                          query_id=qid, choice_probabilities=probs)


def run(coro):
    return asyncio.run(coro)


def item_of(resp, req):
    pos = parse_answer(resp.text, req.identifiers).position
    return None if pos is None else req.order[pos - 1]


class Scripted:
    """Answers each sub-request with a scripted ITEM (by call count) and/or probs."""

    name = "scripted"

    def __init__(self, items=None, probs=None, tokens=(10, 2)):
        self.items, self.probs, self.tokens = items, probs, tokens
        self.calls = []

    async def complete(self, req):
        n = len(self.calls)
        self.calls.append(req)
        text = "nonsense"
        if self.items is not None and self.items[n] is not None:
            text = json.dumps({"article_number": req.order.index(self.items[n]) + 1})
        probs = None
        if self.probs is not None:
            by_item = self.probs[n] if isinstance(self.probs[0], list | tuple) else self.probs
            probs = tuple(by_item[o - 1] for o in req.order) if len(self.probs) != K or \
                isinstance(self.probs[0], list | tuple) else tuple(self.probs)
        return ChatResponse(text=text, prompt_tokens=self.tokens[0],
                            completion_tokens=self.tokens[1], choice_probs=probs)

    async def aclose(self):
        pass


def test_context_rerenders_same_identifiers_and_settings():
    req = request(order=(3, 1, 2, 5, 4), seed=9)
    sub = context()[K].render(req, (1, 2, 3, 4, 5), seed=4)
    assert sub.order == (1, 2, 3, 4, 5) and sub.identifiers == req.identifiers
    assert sub.seed == 4 and sub.temperature == req.temperature
    assert "title q1 1" in sub.messages[1].content
    with pytest.raises(InputError, match="no such query"):
        context(("q2",))[K].render(req, (1, 2, 3, 4, 5))


def test_ensemble_majority_vote_maps_to_audited_order():
    inner = Scripted(items=[4, 2, 4])
    ens = OrderEnsembleBackend(inner, context(), m=3)
    req = request(order=(4, 5, 1, 2, 3))
    resp = run(ens.complete(req))
    assert item_of(resp, req) == 4
    assert json.loads(resp.text) == {"article_number": 1}  # item 4 is shown first
    assert len(inner.calls) == 3 and resp.extra["calls"] == 3
    assert resp.prompt_tokens == 30 and resp.completion_tokens == 6
    assert [c.order for c in inner.calls] == ens.sub_orders(req)


def test_ensemble_ignores_discards_and_discards_when_all_do():
    req = request()
    resp = run(OrderEnsembleBackend(Scripted(items=[None, 3, None]), context(), m=3)
               .complete(req))
    assert item_of(resp, req) == 3
    resp = run(OrderEnsembleBackend(Scripted(items=[None, None]), context(), m=2).complete(req))
    assert parse_answer(resp.text, req.identifiers).position is None


def test_ensemble_borda_against_hand_count():
    # item-level probabilities per sub-call; ranks per call:
    # call 1: 1 > 2 > 3 > 4 > 5 ; call 2: 2 > 1 > ... ; call 3: 2 > 3 > 1 > ...
    p1 = [0.5, 0.2, 0.15, 0.1, 0.05]
    p2 = [0.3, 0.4, 0.15, 0.1, 0.05]
    p3 = [0.2, 0.4, 0.3, 0.06, 0.04]
    # Borda points k - rank: item1 4+3+2=9, item2 3+4+4=11, item3 2+2+3=7 -> item 2
    ens = OrderEnsembleBackend(Scripted(items=[1, 1, 1], probs=[p1, p2, p3]), context(), m=3,
                               vote="borda")
    req = request(order=(5, 4, 3, 2, 1))
    assert item_of(run(ens.complete(req)), req) == 2
    with pytest.raises(InputError, match="Borda voting needs choice probabilities"):
        run(OrderEnsembleBackend(Scripted(items=[1, 1, 1]), context(), m=3, vote="borda")
            .complete(req))


def test_ensemble_answer_item_does_not_depend_on_the_audited_order():
    sim = SimulatedBackend(SimulationProfile.primacy(1.0), k=K, seed=3)
    ens = OrderEnsembleBackend(sim, context(), m=3)
    rng = np.random.default_rng(0)
    items = {item_of(run(ens.complete(r)), r)
             for r in (request(order=tuple(int(x) + 1 for x in rng.permutation(K)), seed=5)
                       for _ in range(8))}
    assert len(items) == 1  # same seed, any audited order -> same item


def test_wrapper_validation():
    with pytest.raises(InputError, match="`m` must be"):
        OrderEnsembleBackend(Scripted(), context(), m=0)
    with pytest.raises(InputError, match="`vote` must be"):
        OrderEnsembleBackend(Scripted(), context(), vote="plurality")
    with pytest.raises(InputError, match="`by` must be"):
        CanonicalOrderBackend(Scripted(), context(), by="price")
    with pytest.raises(InputError, match="`prior` must be"):
        CalibratedBackend(Scripted(), [0.5, 0.0, 0.5])
    with pytest.raises(InputError, match="`decision` must be"):
        CalibratedBackend(Scripted(), [0.5, 0.5], decision="max")


def test_calibration_divides_the_prior_out():
    # position-level probs (order irrelevant for a list of K numbers given directly)
    probs = (0.5, 0.2, 0.1, 0.1, 0.1)
    prior = (0.5, 0.125, 0.125, 0.125, 0.125)
    q = calibrate(probs, prior)
    np.testing.assert_allclose(q, np.array([1.0, 1.6, 0.8, 0.8, 0.8]) / 5.0)

    class Fixed(Scripted):
        async def complete(self, req):
            self.calls.append(req)
            return ChatResponse(text="x", choice_probs=probs, prompt_tokens=7)

    inner = Fixed()
    cal = CalibratedBackend(inner, prior)
    req = request(order=(2, 3, 4, 5, 1))
    resp = run(cal.complete(req))
    assert json.loads(resp.text) == {"article_number": 2}  # position 2 wins after division
    assert inner.calls[0].choice_probabilities  # asked for probabilities
    np.testing.assert_allclose(resp.choice_probs, q)
    with pytest.raises(InputError, match="the position prior has 3 positions"):
        run(CalibratedBackend(inner, (1, 1, 1)).complete(req))


def test_calibration_needs_choice_probabilities():
    msg = MSG_NO_PROBS.format(name="scripted")[:40]
    with pytest.raises(InputError, match=msg):
        run(CalibratedBackend(Scripted(items=[1]), [0.2] * 5).complete(request()))
    with pytest.raises(InputError, match="needs choice probabilities"):
        run(estimate_position_prior(Scripted(items=[1]), [request()]))


def test_prior_estimate_matches_the_simulated_truth():
    p_bias = 0.4
    sim = SimulatedBackend(SimulationProfile.primacy(p_bias), k=K, seed=2)
    rng = np.random.default_rng(1)
    reqs = [request(qid=f"c{q}", order=tuple(int(x) + 1 for x in rng.permutation(K)), seed=q)
            for q in range(60) for _ in range(10)]
    prior = run(estimate_position_prior(sim, reqs))
    # E over uniform orders of p_bias * 1[p = 1] + (1 - p_bias) 1[sigma(p) in R] / |R|
    expected = np.full(K, (1 - p_bias) / K)
    expected[0] += p_bias
    np.testing.assert_allclose(prior.weights, expected, atol=0.03)
    exact = np.mean([sim.choice_distribution(r) for r in reqs], axis=0)
    np.testing.assert_allclose(prior.weights, exact / exact.sum())
    assert prior.calls == 600 and prior.n_queries == 60


def test_canonical_shows_one_order_whatever_the_audit():
    inner = Scripted(items=[3] * 4)
    can = CanonicalOrderBackend(inner, context(), by="retrieval")
    for order in [(1, 2, 3, 4, 5), (5, 4, 3, 2, 1), (2, 3, 1, 5, 4)]:
        req = request(order=order)
        assert item_of(run(can.complete(req)), req) == 3
    assert all(c.order == (1, 2, 3, 4, 5) for c in inner.calls)
    by_id = CanonicalOrderBackend(Scripted(items=[1]), context(), by="item_id")
    order = by_id.canonical_order(request())
    ids = [cands("q1")[i - 1].item_id for i in order]
    assert ids == sorted(ids)
