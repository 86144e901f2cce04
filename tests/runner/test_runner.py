"""The asyncio runner: one record per task, faults never lose a key, endpoint-down
aborts cleanly and resume completes exactly the missing keys."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from aiohttp import web
from runner_helpers import LoopbackServer, json_parse, make_tasks

from recaudit.audit._journal import Journal, MemorySink
from recaudit.audit._runner import run_tasks
from recaudit.exceptions import EndpointError, InputError
from recaudit.llm.backends._openai import OpenAIBackend
from recaudit.llm.backends._simulated import SimulatedBackend, SimulationProfile


def run(tasks, backend, sink, **kw):
    async def go():
        try:
            return await run_tasks(tasks, backends={("m", 4): backend}, sink=sink,
                                   parse=json_parse, **kw)
        finally:
            await backend.aclose()

    return asyncio.run(go())


def test_simulated_run_writes_every_key(tmp_path):
    tasks = make_tasks(10, 6)
    backend = SimulatedBackend(SimulationProfile.primacy(0.5, discard_rate=0.1), k=4, seed=1)
    with Journal(tmp_path / "j.sqlite", meta={}, resume=False) as j:
        summary = run(tasks, backend, j, concurrency=5)
        assert j.completed_keys() == {t.key for t in tasks}
        df = j.to_frame()
    assert summary.ok + summary.discarded == 60 and summary.failed == 0
    assert summary.discarded == df["discard_reason"].notna().sum() > 0
    ok = df[df["selected_position"].notna()]
    orders = ok["order"].str.split().map(lambda o: list(map(int, o)))
    picked = [o[p - 1] for o, p in zip(orders, ok["selected_position"], strict=True)]
    assert picked == ok["selected_original_index"].tolist()
    assert all(i.startswith("item-") for i in ok["selected_item_id"])


def test_random_faults_end_in_success_or_recorded_failure(fault_server):
    rng = np.random.default_rng(5)
    kinds = ["ok", "429", "500", "timeout", "reset", "malformed", "empty"]
    fault_server.serve(lambda n, seen: str(rng.choice(kinds,
                                                      p=[.4, .1, .1, .1, .1, .1, .1])))
    tasks = make_tasks(20, 5)
    backend = OpenAIBackend(fault_server.base_url, "m", max_retries=2, timeout_s=0.1,
                            backoff_base_s=0.001, backoff_max_s=0.001)
    sink = MemorySink()
    summary = run(tasks, backend, sink, concurrency=8, max_consecutive_failures=100)
    assert set(sink.records) == {t.key for t in tasks}  # no gap
    statuses = [r.status for r in sink.records.values()]
    assert statuses.count("failed") == summary.failed > 0
    assert statuses.count("ok") == summary.ok > 0
    assert summary.retries > 0
    failed = [r for r in sink.records.values() if r.status == "failed"]
    assert all(r.error_class == "EndpointError" and r.selected_position is None
               and r.discard_reason is None for r in failed)


def test_endpoint_down_aborts_and_resume_completes(tmp_path, fault_server):
    tasks = make_tasks(10, 4)
    path = tmp_path / "j.sqlite"
    fault_server.script([], then="reset")  # every connection is reset: endpoint down
    url = fault_server.base_url
    with Journal(path, meta={"config_hash": "x"}, resume=False) as j:
        b = OpenAIBackend(url, "m", max_retries=1, backoff_base_s=0.001,
                          backoff_max_s=0.001)
        with pytest.raises(EndpointError, match=r"model 'm': 3 evaluations in a row failed "
                                                rf".*{url}/chat/completions.*"
                                                r"connection error.*--resume") as info:
            run(tasks, b, j, concurrency=2, max_consecutive_failures=3)
        assert "40 evaluations still missing" in str(info.value)
        assert 3 <= j.counts()["failed"] <= 4
    fault_server.reset()
    fault_server.serve(lambda n, seen: web.json_response(
        {"choices": [{"message": {"content": '{"article_number": 3}'}}]}))
    with Journal(path, meta={"config_hash": "x"}, resume=True) as j:
        done = j.completed_keys()
        todo = [t for t in tasks if t.key not in done]
        b = OpenAIBackend(url, "m")
        run(todo, b, j, concurrency=4)
        assert j.counts() == {"ok": 40, "discarded": 0, "failed": 0}
    assert fault_server.n_requests == 40


def test_real_socket_faults_are_retried():
    """Retry path through a real loopback socket: 500, 429, dropped connection, HTML."""
    script = {0: "500", 1: "close", 2: "429", 3: "garbage"}

    async def go():
        async with LoopbackServer(lambda n: script.get(n, "ok")) as srv:
            b = OpenAIBackend(srv.base_url, "m", concurrency=1, max_retries=6,
                              backoff_base_s=0.001, backoff_max_s=0.001)
            sink = MemorySink()
            try:
                summary = await run_tasks(make_tasks(3, 2), backends={("m", 4): b},
                                          sink=sink, parse=json_parse, concurrency=1)
            finally:
                await b.aclose()
            return summary, sink, srv.requests

    summary, sink, n_requests = asyncio.run(go())
    assert summary.ok == 6 and summary.failed == 0
    assert summary.retries == 4 and n_requests == 10
    assert all(r.selected_position == 1 for r in sink.records.values())


def test_real_socket_endpoint_down_names_the_url():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    b = OpenAIBackend(f"http://127.0.0.1:{port}/v1", "m", max_retries=1,
                      backoff_base_s=0.001, backoff_max_s=0.001)
    with pytest.raises(EndpointError, match=f"http://127.0.0.1:{port}/v1/chat/completions"):
        run(make_tasks(2, 2), b, MemorySink(), max_consecutive_failures=2)


def test_backend_bug_is_a_failed_row_not_a_crash():
    class Broken:
        name = "broken"

        async def complete(self, request):
            raise RuntimeError("oops")

        async def aclose(self):
            pass

    sink = MemorySink()
    summary = run(make_tasks(2, 2), Broken(), sink, max_consecutive_failures=10)
    assert summary.failed == 4
    assert {r.error_class for r in sink.records.values()} == {"RuntimeError"}


def test_validation():
    backend = SimulatedBackend(SimulationProfile(), k=4, seed=0)
    with pytest.raises(InputError, match="`concurrency` must be"):
        run(make_tasks(1, 1), backend, MemorySink(), concurrency=0)
    with pytest.raises(InputError, match="no backend for"):
        asyncio.run(run_tasks(make_tasks(1, 1, model="other"), backends={("m", 4): backend},
                              sink=MemorySink(), parse=json_parse))


class FakeBatchModel:
    """Answers position 1 for every request; records batch sizes."""

    name = "fake"

    def __init__(self, fail=False):
        self.sizes = []
        self.fail = fail

    def complete_batch(self, requests):
        import time

        from recaudit.llm._types import ChatResponse

        self.sizes.append(len(requests))
        time.sleep(0.01)
        if self.fail:
            raise RuntimeError("model crashed")
        return [ChatResponse(text=json.dumps({"article_number": int(r.identifiers[0])}))
                for r in requests]

    async def aclose(self):
        pass


def test_batching_backend_coalesces_concurrent_calls():
    from recaudit.llm import BatchingBackend

    model = FakeBatchModel()
    sink = MemorySink()
    summary = run(make_tasks(6, 5), BatchingBackend(model, max_batch=4), sink, concurrency=8)
    assert summary.ok == 30 and sum(model.sizes) == 30
    assert max(model.sizes) == 4 and len(model.sizes) <= 12
    assert all(r.selected_position == 1 for r in sink.records.values())
    broken = FakeBatchModel(fail=True)
    summary = run(make_tasks(2, 2), BatchingBackend(broken, max_batch=4), MemorySink(),
                  concurrency=4, max_consecutive_failures=10)
    assert summary.failed == 4


class _Recorder:
    def __init__(self):
        self.total = None
        self.updates = []

    def start(self, total):
        self.total = total

    def update(self, *, done, discarded, failed, retries):
        self.updates.append((done, discarded, failed, retries))


def test_progress_updates_are_throttled_and_the_last_one_is_complete():
    tasks = make_tasks(10, 6)
    profile = SimulationProfile.primacy(0.5, discard_rate=0.2)
    slow = _Recorder()
    summary = run(tasks, SimulatedBackend(profile, k=4, seed=1), MemorySink(),
                  concurrency=4, progress=slow, progress_interval_s=3600)
    assert slow.total == 60
    # nothing in between: one update, at the end, with the final counts
    assert slow.updates == [(60, summary.discarded, 0, 0)]
    every = _Recorder()
    run(tasks, SimulatedBackend(profile, k=4, seed=1), MemorySink(), concurrency=4,
        progress=every, progress_interval_s=0)
    assert len(every.updates) == 61  # one per record, plus the closing one
    assert [u[0] for u in every.updates[:-1]] == list(range(1, 61))
