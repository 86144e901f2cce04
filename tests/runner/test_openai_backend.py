"""OpenAIBackend against a real loopback fault server (``fault_server.py``): every
injected fault ends in a retried success or an EndpointError, never a crash; payload,
Retry-After, logprobs mapping, concurrency and rate limits, one session per loop."""

from __future__ import annotations

import asyncio
import gc
import re
import time
import warnings
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from aiohttp import web
from fault_server import ANSWER, ok_body
from runner_helpers import make_task

from recaudit.exceptions import ConfigError, EndpointError, InputError
from recaudit.llm._types import ChatRequest
from recaudit.llm.backends._openai import (
    OpenAIBackend,
    choice_probabilities_from_logprobs,
    parse_retry_after,
)

URL = "http://llm.test/v1"  # only for tests that never send a request


def backend(server, **kw):
    kw.setdefault("backoff_base_s", 0.001)
    kw.setdefault("backoff_max_s", 0.002)
    kw.setdefault("timeout_s", 0.25)  # the "timeout" fault stalls 2 s
    return OpenAIBackend(server.base_url, "test-model", **kw)


def call(b, request=None):
    async def go():
        try:
            return await b.complete(request or make_task("q", 0, (1, 2, 3)).request)
        finally:
            await b.aclose()

    return asyncio.run(go())


FAULTS = ["429", "429-date", "500", "503", "timeout", "reset", "remote-closed",
          "truncated", "malformed", "garbage", "empty", "no-content", "not-object"]


@pytest.mark.parametrize("fault", FAULTS)
def test_each_fault_is_retried_to_success(fault, fault_server):
    fault_server.script([fault, fault])
    resp = call(backend(fault_server, max_retries=3))
    assert resp.text == ANSWER
    assert resp.retries == 2
    assert fault_server.n_requests == 3
    assert (resp.prompt_tokens, resp.completion_tokens) == (11, 5)


@pytest.mark.parametrize("fault", FAULTS)
def test_each_persistent_fault_is_an_endpoint_error(fault, fault_server):
    fault_server.script([], then=fault)
    url = re.escape(f"{fault_server.base_url}/chat/completions")
    with pytest.raises(EndpointError, match=rf"endpoint {url} failed after 3 attempts") as info:
        call(backend(fault_server, max_retries=2))
    assert fault_server.n_requests == 3
    assert info.value.retries == 2


def test_fault_messages_name_the_fault(fault_server):
    expected = {"timeout": r"last error: timeout\)", "reset": r"connection error \(",
                "truncated": r"connection error \(", "503": r"last error: HTTP 503\)",
                "garbage": "malformed JSON body", "empty": "empty `choices`"}
    for fault, pattern in expected.items():
        fault_server.script([], then=fault)
        with pytest.raises(EndpointError, match=pattern):
            call(backend(fault_server, max_retries=0))


@pytest.mark.parametrize("status", ["400", "401"])
def test_client_error_is_not_retried(status, fault_server):
    fault_server.script([status])
    with pytest.raises(EndpointError, match=f"HTTP {status}.*not retried"):
        call(backend(fault_server, max_retries=5))
    assert fault_server.n_requests == 1


def test_redirect_is_not_followed(fault_server):
    fault_server.script(["redirect"])
    with pytest.raises(EndpointError, match=r"HTTP 307 \(redirect to /v2/chat/completions\)"
                                            r".*not followed.*`base_url`"):
        call(backend(fault_server, max_retries=5))
    assert fault_server.n_requests == 1  # not retried, and nothing sent to /v2


def test_retry_after_is_honoured(fault_server):
    def handler(n, seen):
        if n == 0:
            return web.Response(status=429, headers={"Retry-After": "0.3"})
        return web.json_response(ok_body())

    fault_server.serve(handler)
    t0 = time.perf_counter()
    resp = call(OpenAIBackend(fault_server.base_url, "m", backoff_base_s=0.0,
                              backoff_max_s=0.0))
    assert time.perf_counter() - t0 >= 0.3
    assert resp.retries == 1


def test_retry_after_is_capped(fault_server):
    def handler(n, seen):
        if n == 0:
            return web.Response(status=503, headers={"Retry-After": "3600"})
        return web.json_response(ok_body())

    fault_server.serve(handler)
    t0 = time.perf_counter()
    resp = call(backend(fault_server, retry_after_max_s=0.05))
    assert time.perf_counter() - t0 < 5
    assert resp.retries == 1

def test_parse_retry_after():
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    now = datetime(2026, 1, 1, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(later, now=now.timestamp()) == pytest.approx(30.0)


def test_payload_fields(fault_server):
    req = make_task("q", 0, (3, 1, 2), temperature=0.7).request
    req = ChatRequest(**{**req.__dict__, "choice_probabilities": True,
                         "response_format": {"type": "json_object"}})
    call(backend(fault_server), req)
    seen = fault_server.requests[0]
    body = seen.json
    assert body["model"] == "test-model"
    assert body["temperature"] == 0.7 and body["seed"] == req.seed
    assert body["max_tokens"] == 16
    assert body["logprobs"] is True and body["top_logprobs"] == 20
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"][0]["role"] == "user"
    assert seen.headers["Content-Type"] == "application/json"
    assert "Authorization" not in seen.headers and "Cookie" not in seen.headers
    fault_server.reset()
    call(backend(fault_server))
    assert "logprobs" not in fault_server.requests[0].json
    assert "response_format" not in fault_server.requests[0].json


def test_choice_probabilities_from_logprobs(fault_server):
    import math

    content = [
        {"token": '{"', "logprob": -0.1, "top_logprobs": []},
        {"token": " 2", "logprob": math.log(0.6), "top_logprobs": [
            {"token": " 2", "logprob": math.log(0.6)},
            {"token": "2", "logprob": math.log(0.1)},
            {"token": " 1", "logprob": math.log(0.1)},
            {"token": " x", "logprob": math.log(0.2)},
        ]},
    ]
    probs, outside = choice_probabilities_from_logprobs(content, ("1", "2", "3"))
    assert probs == pytest.approx((0.125, 0.875, 0.0))
    assert outside == pytest.approx(0.2)
    assert choice_probabilities_from_logprobs([{"token": "A"}], ("1", "2")) is None

    fault_server.serve(lambda n, seen: web.json_response({"choices": [{
        "message": {"content": '{"article_number": 2}'},
        "logprobs": {"content": content}}]}))
    req = make_task("q", 0, (1, 2, 3)).request
    req = ChatRequest(**{**req.__dict__, "choice_probabilities": True})
    resp = call(backend(fault_server), req)
    assert resp.choice_probs == pytest.approx((0.125, 0.875, 0.0))
    assert resp.outside_mass == pytest.approx(0.2)


def test_concurrency_bound_and_rate_limit(fault_server):
    active = peak = 0

    async def handler(n, seen):  # runs in the server's loop
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.02)
        active -= 1
        return web.json_response(ok_body())

    async def go(b, n):
        try:
            t0 = time.perf_counter()
            await asyncio.gather(*(b.complete(make_task("q", i, (1, 2)).request)
                                   for i in range(n)))
            return time.perf_counter() - t0
        finally:
            await b.aclose()

    fault_server.serve(handler)
    asyncio.run(go(backend(fault_server, concurrency=3), 12))
    assert peak == 3
    assert fault_server.n_connections <= 3  # keep-alive: connections are reused
    elapsed = asyncio.run(go(backend(fault_server, concurrency=16, rate_limit_per_s=50), 11))
    assert elapsed >= 10 / 50 * 0.95


def test_one_session_per_loop_reused_across_asyncio_runs(fault_server):
    """Built outside any loop, used by several ``asyncio.run`` calls: each loop gets its
    own session, closed when that loop shuts down even without ``aclose``."""
    b = backend(fault_server, concurrency=2)
    req = make_task("q", 0, (1, 2, 3)).request
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        first = asyncio.run(b.complete(req))
        session = b._session
        assert session is not None and session.http.closed  # closed by the loop's end
        second = asyncio.run(b.complete(req))
        assert b._session is not session and b._session.http.closed

        async def many():  # one session for many calls in one loop
            out = [await b.complete(req) for _ in range(5)]
            assert b._session.http is out_session[0]
            return out

        out_session = []

        async def go():
            await b.complete(req)
            out_session.append(b._session.http)
            await many()
            await b.aclose()
            assert out_session[0].closed
            return await b.complete(req)  # after aclose: a new session

        third = asyncio.run(go())
        gc.collect()
    assert first.text == second.text == third.text == ANSWER
    assert fault_server.n_requests == 9


def test_api_key_only_in_the_authorization_header(fault_server, monkeypatch):
    secret = "sk-test-7d1e0c"
    monkeypatch.setenv("RECAUDIT_TEST_KEY", secret)
    fault_server.serve(lambda n, seen: web.Response(
        status=400 if n else 500, text=f"bad {seen.headers.get('Authorization')}"))
    b = backend(fault_server, api_key_env="RECAUDIT_TEST_KEY", max_retries=2)
    with pytest.raises(EndpointError, match=r"HTTP 400.*bad Bearer \*\*\*") as info:
        call(b)
    assert secret not in str(info.value) and secret not in repr(b) \
        and secret not in str(b.describe())
    seen = fault_server.requests
    assert [s.headers["Authorization"] for s in seen] == [f"Bearer {secret}"] * 2
    assert all(secret not in s.body.decode() for s in seen)
    assert all(secret not in v for s in seen for k, v in s.headers.items()
               if k != "Authorization")


def test_validation_and_missing_key(monkeypatch):
    monkeypatch.delenv("RECAUDIT_TEST_KEY", raising=False)
    with pytest.raises(ConfigError, match="`RECAUDIT_TEST_KEY`.*not set"):
        OpenAIBackend(URL, "m", api_key_env="RECAUDIT_TEST_KEY")
    with pytest.raises(InputError, match="`base_url` must start with"):
        OpenAIBackend("llm.test", "m")
    with pytest.raises(InputError, match="`concurrency` must be"):
        OpenAIBackend(URL, "m", concurrency=0)
    with pytest.raises(InputError, match="`max_retries` must be"):
        OpenAIBackend(URL, "m", max_retries=-1)
