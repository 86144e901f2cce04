"""The local backend on the real packaged SmolLM2-135M-Instruct (GGUF).

The model loads once per module; the dequantised weights are cached under
``$RECAUDIT_CACHE_DIR/models`` (default ``~/.cache/recaudit/models``), so only the
first session pays the GGUF conversion. Prompts are short (k = 3, clipped
descriptions) and generation budgets small to keep the module fast.
"""

from __future__ import annotations

import asyncio

import pytest

from helpers import product_sets
from recaudit.exceptions import InputError
from recaudit.llm import (
    Backend,
    ChatRequest,
    PromptTemplate,
    parse_answer,
    positional_identifiers,
    random_labels,
    render_request,
)

pytest.importorskip("transformers")
pytest.importorskip("gguf")


@pytest.fixture(scope="module")
def backend(smollm2_path):
    from recaudit.llm.backends import LocalBackend

    b = LocalBackend(n_threads=1)
    yield b
    asyncio.run(b.aclose())


@pytest.fixture(scope="module")
def candidate_sets(myntra):
    """Five real 3-candidate sets: products of one type, in catalog order."""
    return product_sets(myntra, ("Jeans", "Kurta", "Sneakers", "Watch", "Backpack"), k=3,
                        description_chars=80)


def _request(
    cands,
    query,
    *,
    temperature=0.0,
    seed=None,
    max_tokens=20,
    order=(1, 2, 3),
    ids=None,
    probs=False,
):
    return render_request(
        PromptTemplate.default(),
        query,
        cands,
        order,
        identifiers=ids or positional_identifiers(3),
        temperature=temperature,
        seed=seed,
        max_tokens=max_tokens,
        choice_probabilities=probs,
    )


def test_is_a_backend(backend):
    assert isinstance(backend, Backend) and backend.name.startswith("local:SmolLM2")


def test_greedy_is_deterministic(backend, candidate_sets):
    query, cands = candidate_sets[0]
    req = _request(cands, query)
    a, b = (asyncio.run(backend.complete(req)) for _ in range(2))
    assert a.text == b.text and a.text
    assert a.prompt_tokens > 100 and 1 <= a.completion_tokens <= 20
    assert a.extra["finish_reason"] in {"stop", "length"}


def test_seeded_sampling_is_reproducible(backend, candidate_sets):
    query, cands = candidate_sets[1]
    texts = [
        backend.complete_sync(_request(cands, query, temperature=1.0, seed=s, max_tokens=12)).text
        for s in (1, 1, 2)
    ]
    assert texts[0] == texts[1]
    assert texts[0] != texts[2]  # could coincide in principle; it does not for these seeds


def test_concurrent_awaits_are_serialised(backend, candidate_sets):
    query, cands = candidate_sets[0]
    req = _request(cands, query, max_tokens=6)

    async def both():
        return await asyncio.gather(backend.complete(req), backend.complete(req))

    a, b = asyncio.run(both())
    assert a.text == b.text


def test_choice_probabilities(backend, candidate_sets):
    query, cands = candidate_sets[2]
    with_probs = {}
    for ids in (positional_identifiers(3), random_labels(3, rng=0)):
        r = backend.complete_sync(_request(cands, query, max_tokens=8, ids=ids, probs=True))
        assert r.choice_probs is not None and len(r.choice_probs) == 3
        assert sum(r.choice_probs) == pytest.approx(1.0, abs=1e-9)
        assert all(0 <= p <= 1 for p in r.choice_probs)
        assert 0 <= r.outside_mass <= 1
        with_probs[ids] = r
    plain = backend.complete_sync(_request(cands, query, max_tokens=8))
    assert plain.choice_probs is None and plain.outside_mass is None
    # the prompt pass shared with the probability computation decodes the same text
    assert with_probs[positional_identifiers(3)].text == plain.text


def test_choice_probabilities_depend_on_the_order(backend, candidate_sets):
    """Reversing the candidates changes the distribution over positions (SmolLM2 is
    position-driven; an order-blind implementation would return the same vector)."""
    query, cands = candidate_sets[3]
    fwd = backend.complete_sync(_request(cands, query, max_tokens=1, probs=True))
    rev = backend.complete_sync(_request(cands, query, max_tokens=1, order=(3, 2, 1), probs=True))
    assert fwd.choice_probs != rev.choice_probs


def test_real_outputs_parse_or_are_recorded_discards(backend, candidate_sets):
    reqs = [_request(c, q, max_tokens=40) for q, c in candidate_sets]
    responses = backend.complete_batch(reqs)
    assert len(responses) == len(reqs)
    for req, resp in zip(reqs, responses, strict=True):
        parsed = parse_answer(resp.text, req.identifiers)
        assert (parsed.position is None) != (parsed.discard_reason is None)
        assert resp.extra["batch_size"] == len(reqs)
    # batched greedy decoding reproduces unbatched decoding
    single = backend.complete_sync(reqs[0])
    assert single.text == responses[0].text


def test_weights_cache_reloads_the_same_model_and_stop_after_json(backend, candidate_sets):
    from recaudit.llm.backends import LocalBackend

    again = LocalBackend(n_threads=1, stop_after_json=True)
    assert again.loaded_from is not None and again.name.endswith("+stop_after_json")
    query, cands = candidate_sets[4]
    req = _request(cands, query, max_tokens=40)
    full, stopped = backend.complete_sync(req), again.complete_sync(req)
    assert full.text.startswith(stopped.text)  # same weights, same greedy path
    if stopped.extra["finish_reason"] == "stop_json":
        assert stopped.text.rstrip().endswith("}") and len(stopped.text) < len(full.text)
    else:
        assert stopped.text == full.text
    asyncio.run(again.aclose())


@pytest.fixture(scope="module")
def constrained(backend):
    from recaudit.llm.backends import LocalBackend

    b = LocalBackend(n_threads=1, constrained=True)
    yield b
    asyncio.run(b.aclose())


def test_constrained_greedy_is_the_argmax_and_parses(constrained, candidate_sets):
    assert constrained.name.endswith("+constrained")
    query, cands = candidate_sets[2]
    for ids, runs in ((positional_identifiers(3), 2), (random_labels(3, rng=1), 1)):
        req = _request(cands, query, ids=ids)
        a, *again = (constrained.complete_sync(req) for _ in range(runs))
        assert all(r.text == a.text and r.choice_probs == a.choice_probs for r in again)
        best = max(range(3), key=lambda i: a.choice_probs[i])
        assert parse_answer(a.text, ids).position == best + 1
        assert sum(a.choice_probs) == pytest.approx(1.0) and 0 <= a.outside_mass <= 1
        assert a.extra["finish_reason"] == "constrained" and a.completion_tokens >= 5


def test_constrained_sampling_is_seeded(constrained, candidate_sets):
    query, cands = candidate_sets[1]
    req = _request(cands, query, temperature=1.0, seed=3)
    assert constrained.complete_sync(req).text == constrained.complete_sync(req).text
    # the draw itself: reproducible per seed, varying across seeds
    flat = (1 / 3, 1 / 3, 1 / 3)
    texts = [
        constrained._constrained_answer(_request(cands, query, temperature=1.0, seed=s), flat)
        for s in (*range(20), 0)
    ]
    assert texts[0] == texts[-1] and len(set(texts)) == 3
    assert {parse_answer(t, req.identifiers).position for t in texts} == {1, 2, 3}


def test_constrained_probabilities_are_memoised_exactly(constrained, candidate_sets):
    query, cands = candidate_sets[0]
    first = constrained.complete_sync(_request(cands, query, order=(3, 1, 2), seed=1))
    # the same prompt at another temperature and seed: a memo hit, same distribution
    again = constrained.complete_sync(
        _request(cands, query, order=(3, 1, 2), temperature=0.6, seed=2))
    other = constrained.complete_sync(_request(cands, query, order=(2, 3, 1), seed=1))
    assert not first.extra["memo_hit"] and again.extra["memo_hit"]
    assert not other.extra["memo_hit"]
    assert again.choice_probs == first.choice_probs
    assert other.choice_probs != first.choice_probs
    constrained._memo.clear()  # recomputed from scratch: bit-identical
    fresh = constrained.complete_sync(_request(cands, query, order=(3, 1, 2), seed=1))
    assert not fresh.extra["memo_hit"]
    assert fresh.choice_probs == first.choice_probs and fresh.text == first.text


def test_rejects_unsupported_requests(backend, candidate_sets):
    query, cands = candidate_sets[0]
    req = _request(cands, query)
    with pytest.raises(InputError, match="does not support `response_format`"):
        backend.complete_sync(
            ChatRequest(**{**req.__dict__, "response_format": {"type": "json_object"}})
        )
    with pytest.raises(InputError, match="non-empty sequence of ChatRequest"):
        backend.complete_batch([])
