"""Choice probabilities from the backends to the journal: simulated (exact), OpenAI
(top_logprobs at the answer slot), outside_mass journaled, old journals readable."""

from __future__ import annotations

import asyncio
import json
import math
import sqlite3

import numpy as np
import pytest
from aiohttp import web
from fault_server import FaultServer
from runner_helpers import json_parse, make_task

from recaudit.audit._journal import EvalKey, EvalRecord, Journal
from recaudit.audit._runner import run_tasks
from recaudit.llm._types import ChatRequest
from recaudit.llm.backends._openai import OpenAIBackend, choice_probabilities_from_logprobs
from recaudit.llm.backends._simulated import SimulatedBackend, SimulationProfile


def _req(order, seed, probs=True):
    req = make_task("q7", 0, order).request
    return ChatRequest(**{**req.__dict__, "seed": seed, "choice_probabilities": probs})


def test_simulated_backend_reports_the_law_it_samples_from():
    b = SimulatedBackend(SimulationProfile.primacy(0.3, discard_rate=0.1), k=4, seed=3)
    order = (2, 4, 1, 3)
    resp = asyncio.run(b.complete(_req(order, 0)))
    probs = np.array(resp.choice_probs)
    assert probs.sum() == pytest.approx(1.0) and resp.outside_mass == pytest.approx(0.1)
    relevant = set(b.relevance_set("q7"))
    expected = 0.7 * np.array([o in relevant for o in order]) / len(relevant)
    expected[0] += 0.3
    np.testing.assert_allclose(probs, expected)
    # the sampled choices follow it (chi-square goodness of fit over 4,000 seeds)
    from scipy import stats

    picks = [b.choose(_req(order, s)) for s in range(4000)]
    valid = np.array([p for p in picks if p is not None]) - 1
    counts = np.bincount(valid, minlength=4)
    mask = expected > 0
    assert counts[~mask].sum() == 0
    assert stats.chisquare(counts[mask], expected[mask] * valid.size).pvalue > 0.001
    assert abs(1 - valid.size / 4000 - 0.1) < 0.02
    assert asyncio.run(b.complete(_req(order, 0, probs=False))).choice_probs is None


def test_outside_mass_is_journaled(tmp_path):
    b = SimulatedBackend(SimulationProfile.primacy(0.3, discard_rate=0.2), k=3, seed=1)
    tasks = [make_task("q1", i, o) for i, o in enumerate([(1, 2, 3), (3, 2, 1)])]
    tasks = [type(t)(key=t.key, request=ChatRequest(**{**t.request.__dict__,
                                                        "choice_probabilities": True}),
                     candidates=t.candidates) for t in tasks]
    with Journal(tmp_path / "j.sqlite", meta={}, resume=False) as journal:
        asyncio.run(run_tasks(tasks, backends={("m", 3): b}, sink=journal, parse=json_parse))
        df = journal.to_frame()
    assert df["outside_mass"].tolist() == pytest.approx([0.2, 0.2])
    assert all(sum(json.loads(v)) == pytest.approx(1.0) for v in df["choice_probs"])


def test_a_journal_without_outside_mass_stays_readable(tmp_path):
    path = tmp_path / "old.sqlite"
    with Journal(path, meta={"config_hash": "x"}, resume=False) as journal:
        journal.write(EvalRecord(EvalKey("m", 3, 0.0, "permutation", "q", 0, 0), "ok",
                                 (1, 2, 3), ("1", "2", "3"), selected_position=2,
                                 selected_original_index=2))
    # rebuild the table as an older version wrote it: without the column
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE evaluations DROP COLUMN outside_mass")
    conn.commit()
    conn.close()
    with Journal(path, meta={"config_hash": "x"}, resume=True) as journal:
        df = journal.to_frame()
        journal.write(EvalRecord(EvalKey("m", 3, 0.0, "permutation", "q", 1, 0), "ok",
                                 (2, 1, 3), ("1", "2", "3"), selected_position=1,
                                 selected_original_index=2, outside_mass=0.5))
        df2 = journal.to_frame()
    assert len(df) == 1 and df["outside_mass"].isna().all()
    assert df2["outside_mass"].tolist()[1] == 0.5


def test_openai_answer_slot_is_after_the_answer_key():
    lp = math.log
    content = [
        {"token": "Option", "logprob": -0.1, "top_logprobs": []},
        {"token": " 1", "logprob": lp(0.9), "top_logprobs": [
            {"token": " 1", "logprob": lp(0.9)}, {"token": " 3", "logprob": lp(0.1)}]},
        {"token": ' {"article', "logprob": -0.1, "top_logprobs": []},
        {"token": '_number": ', "logprob": -0.1, "top_logprobs": []},
        {"token": "3", "logprob": lp(0.5), "top_logprobs": [
            {"token": "3", "logprob": lp(0.5)}, {"token": "2", "logprob": lp(0.3)},
            {"token": "1", "logprob": lp(0.1)}, {"token": "}", "logprob": lp(0.05)}]},
    ]
    probs, outside = choice_probabilities_from_logprobs(content, ("1", "2", "3"))
    assert probs == pytest.approx((0.1 / 0.9, 0.3 / 0.9, 0.5 / 0.9))
    assert outside == pytest.approx(0.1)

    with FaultServer() as server:  # a real loopback server (tests/runner/fault_server.py)
        server.serve(lambda n, seen: web.json_response({"choices": [{
            "message": {"content": 'Option 1 {"article_number": 3}'},
            "logprobs": {"content": content}}]}))
        resp = asyncio.run(OpenAIBackend(server.base_url, "m", max_retries=0
                                         ).complete(_req((1, 2, 3), 0)))
        body = server.requests[0].json
    assert body["logprobs"] is True and body["top_logprobs"] >= 3
    assert resp.choice_probs == pytest.approx(probs)
