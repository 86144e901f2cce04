"""Choice probabilities from a REAL llama.cpp server (top_logprobs at the answer slot)."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest
from test_llamacpp_e2e import llama_server, request  # noqa: F401 -- the module fixture

from recaudit.llm._parse import parse_answer
from recaudit.llm.backends._openai import OpenAIBackend

pytestmark = [
    pytest.mark.llamacpp,
    pytest.mark.skipif(importlib.util.find_spec("xllamacpp") is None,
                       reason="xllamacpp is not installed: "
                              "pip install 'recaudit[llamacpp]' to run this test"),
]


def test_real_server_reports_identifier_probabilities(llama_server):  # noqa: F811
    async def go():
        backend = OpenAIBackend(llama_server, "smollm2", concurrency=1, timeout_s=120)
        try:
            return [await backend.complete(request(o, constrained=True, probs=True))
                    for o in ((1, 2, 3), (3, 1, 2))]
        finally:
            await backend.aclose()

    for resp in asyncio.run(go()):
        assert resp.choice_probs is not None, resp.text
        assert sum(resp.choice_probs) == pytest.approx(1.0)
        assert 0.0 <= resp.outside_mass <= 1.0
        parsed = parse_answer(resp.text, ("1", "2", "3"))
        # greedy decoding picks the most probable identifier at the slot
        best = max(range(3), key=lambda p: resp.choice_probs[p]) + 1
        assert parsed.position == best
