"""The simulated backend: the section-8 model, deterministic per key."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from runner_helpers import json_parse, make_task

from recaudit.exceptions import InputError
from recaudit.llm.backends._simulated import SimulatedBackend, SimulationProfile


def answers(backend, tasks):
    async def go():
        return [await backend.complete(t.request) for t in tasks]

    return asyncio.run(go())


def test_deterministic_per_key_and_json_answer():
    b = SimulatedBackend(SimulationProfile.primacy(0.3), k=4, seed=7)
    tasks = [make_task("q1", p, (2, 4, 1, 3), sample_index=p) for p in range(20)]
    first = [r.text for r in answers(b, tasks)]
    again = [r.text for r in answers(SimulatedBackend(SimulationProfile.primacy(0.3), k=4,
                                                      seed=7), tasks)]
    assert first == again
    assert all(isinstance(json.loads(t)["article_number"], int) for t in first)
    other = [r.text for r in answers(SimulatedBackend(SimulationProfile.primacy(0.3), k=4,
                                                      seed=8), tasks)]
    assert other != first


def test_null_selects_only_from_relevance_set():
    b = SimulatedBackend(SimulationProfile.null(), k=5, seed=1)
    rng = np.random.default_rng(0)
    for q in range(10):
        qid = f"q{q}"
        relevant = b.relevance_set(qid)
        assert 1 <= len(relevant) <= 5
        for p in range(10):
            order = tuple(int(x) + 1 for x in rng.permutation(5))
            pos = b.choose(make_task(qid, p, order).request)
            assert order[pos - 1] in relevant


def test_primacy_rate_matches_p_bias():
    # queries whose R excludes the item shown first: P(pos 1) = p_bias exactly
    b = SimulatedBackend(SimulationProfile.primacy(0.4, max_relevant=1), k=5, seed=3)
    rng = np.random.default_rng(1)
    hits = n = 0
    for q in range(300):
        qid = f"q{q}"
        (rel,) = b.relevance_set(qid)
        rest = [i for i in range(1, 6) if i != rel]
        first = int(rng.choice(rest))
        others = [i for i in range(1, 6) if i != first]
        order = (first, *(int(x) for x in rng.permutation(others)))
        pos = b.choose(make_task(qid, 0, order).request)
        hits += pos == 1
        n += 1
    assert abs(hits / n - 0.4) < 0.09


def test_position_weights_profile_and_discards():
    b = SimulatedBackend(SimulationProfile.from_weights([0, 0, 1], discard_rate=0.5), k=3,
                         seed=2)
    tasks = [make_task("q", p, (1, 2, 3), sample_index=p) for p in range(200)]
    parsed = [json_parse(r.text, ("1", "2", "3"))[0] for r in answers(b, tasks)]
    discards = sum(p is None for p in parsed)
    assert 60 < discards < 140
    assert {p for p in parsed if p is not None} == {3}


def test_labels_identifiers_are_answered():
    b = SimulatedBackend(SimulationProfile.null(), k=3, seed=2)
    t = make_task("q", 0, (3, 1, 2))
    req = t.request.__class__(**{**t.request.__dict__, "identifiers": ("QX", "B7", "ZZ")})
    text = asyncio.run(b.complete(req)).text
    assert json.loads(text)["article_number"] in ("QX", "B7", "ZZ")


def test_validation():
    with pytest.raises(InputError, match="`p_bias` must be in"):
        SimulationProfile(p_bias=1.5)
    with pytest.raises(InputError, match="`k` must be"):
        SimulatedBackend(SimulationProfile(), k=1, seed=0)
    with pytest.raises(InputError, match="`position_weights` has 2 entries but k=3"):
        SimulatedBackend(SimulationProfile.from_weights([1, 1]), k=3, seed=0)
    b = SimulatedBackend(SimulationProfile(), k=3, seed=0)
    with pytest.raises(InputError, match="one backend per k"):
        b.choose(make_task("q", 0, (1, 2, 3, 4)).request)
