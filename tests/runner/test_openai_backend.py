"""OpenAIBackend through httpx.MockTransport: every injected fault ends in a retried
success or an EndpointError, never a crash; payload, Retry-After, logprobs mapping."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest
from runner_helpers import make_task

from recaudit.exceptions import ConfigError, EndpointError, InputError
from recaudit.llm._types import ChatRequest
from recaudit.llm.backends._openai import (
    OpenAIBackend,
    choice_probabilities_from_logprobs,
    parse_retry_after,
)

URL = "http://llm.test/v1"


def ok_body(text='{"article_number": 2}', **extra):
    body = {"choices": [{"message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 5}}
    body.update(extra)
    return body


def fault_response(kind: str, request: httpx.Request) -> httpx.Response:
    if kind == "ok":
        return httpx.Response(200, json=ok_body())
    if kind == "429":
        return httpx.Response(429, headers={"Retry-After": "0"}, json={"error": "slow down"})
    if kind == "429-date":
        when = datetime.now(UTC) - timedelta(seconds=5)
        return httpx.Response(429, headers={"Retry-After": format_datetime(when, usegmt=True)})
    if kind == "500":
        return httpx.Response(500, text="boom")
    if kind == "503":
        return httpx.Response(503, text="unavailable")
    if kind == "timeout":
        raise httpx.ReadTimeout("read timed out", request=request)
    if kind == "reset":
        raise httpx.ConnectError("connection reset by peer", request=request)
    if kind == "remote-closed":
        raise httpx.RemoteProtocolError("server disconnected", request=request)
    if kind == "malformed":
        return httpx.Response(200, text='{"choices": [ {"mess')
    if kind == "empty":
        return httpx.Response(200, json={"choices": []})
    if kind == "no-content":
        return httpx.Response(200, json={"choices": [{"message": {}}]})
    if kind == "not-object":
        return httpx.Response(200, json=[1, 2])
    if kind == "401":
        return httpx.Response(401, json={"error": "bad key"})
    raise AssertionError(kind)


class Script:
    """A MockTransport handler that serves a scripted sequence of faults."""

    def __init__(self, kinds):
        self.kinds = list(kinds)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        kind = self.kinds.pop(0) if self.kinds else "ok"
        return fault_response(kind, request)


def backend(script, **kw):
    kw.setdefault("backoff_base_s", 0.001)
    kw.setdefault("backoff_max_s", 0.002)
    return OpenAIBackend(URL, "test-model", transport=httpx.MockTransport(script), **kw)


def call(b, request=None):
    async def go():
        try:
            return await b.complete(request or make_task("q", 0, (1, 2, 3)).request)
        finally:
            await b.aclose()

    return asyncio.run(go())


FAULTS = ["429", "429-date", "500", "503", "timeout", "reset", "remote-closed",
          "malformed", "empty", "no-content", "not-object"]


@pytest.mark.parametrize("fault", FAULTS)
def test_each_fault_is_retried_to_success(fault):
    script = Script([fault, fault])
    resp = call(backend(script, max_retries=3))
    assert resp.text == '{"article_number": 2}'
    assert resp.retries == 2
    assert len(script.requests) == 3
    assert (resp.prompt_tokens, resp.completion_tokens) == (11, 5)


@pytest.mark.parametrize("fault", FAULTS)
def test_each_persistent_fault_is_an_endpoint_error(fault):
    script = Script([fault] * 10)
    with pytest.raises(EndpointError, match=r"endpoint http://llm.test/v1/chat/completions "
                                            r"failed after 3 attempts") as info:
        call(backend(script, max_retries=2))
    assert len(script.requests) == 3
    assert info.value.retries == 2


def test_client_error_is_not_retried():
    script = Script(["401"])
    with pytest.raises(EndpointError, match="HTTP 401.*not retried"):
        call(backend(script, max_retries=5))
    assert len(script.requests) == 1


def test_retry_after_is_honoured():
    script = Script([])
    script.kinds = ["slow"]

    def handler(request):
        script.requests.append(request)
        if len(script.requests) == 1:
            return httpx.Response(429, headers={"Retry-After": "0.3"})
        return httpx.Response(200, json=ok_body())

    t0 = time.perf_counter()
    resp = call(OpenAIBackend(URL, "m", transport=httpx.MockTransport(handler),
                              backoff_base_s=0.0, backoff_max_s=0.0))
    assert time.perf_counter() - t0 >= 0.3
    assert resp.retries == 1


def test_parse_retry_after():
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    now = datetime(2026, 1, 1, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(later, now=now.timestamp()) == pytest.approx(30.0)


def test_payload_fields():
    script = Script([])
    req = make_task("q", 0, (3, 1, 2), temperature=0.7).request
    req = ChatRequest(**{**req.__dict__, "choice_probabilities": True,
                         "response_format": {"type": "json_object"}})
    call(backend(script), req)
    body = json.loads(script.requests[0].content)
    assert body["model"] == "test-model"
    assert body["temperature"] == 0.7 and body["seed"] == req.seed
    assert body["max_tokens"] == 16
    assert body["logprobs"] is True and body["top_logprobs"] == 20
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"][0]["role"] == "user"
    plain = Script([])
    call(backend(plain))
    assert "logprobs" not in json.loads(plain.requests[0].content)
    assert "response_format" not in json.loads(plain.requests[0].content)


def test_choice_probabilities_from_logprobs():
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

    def handler(request):
        return httpx.Response(200, json={"choices": [{
            "message": {"content": '{"article_number": 2}'},
            "logprobs": {"content": content}}]})

    req = make_task("q", 0, (1, 2, 3)).request
    req = ChatRequest(**{**req.__dict__, "choice_probabilities": True})
    resp = call(OpenAIBackend(URL, "m", transport=httpx.MockTransport(handler)), req)
    assert resp.choice_probs == pytest.approx((0.125, 0.875, 0.0))
    assert resp.outside_mass == pytest.approx(0.2)


def test_concurrency_bound_and_rate_limit():
    active = peak = 0

    async def handler(request):
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.02)
        active -= 1
        return httpx.Response(200, json=ok_body())

    async def go(b, n):
        try:
            t0 = time.perf_counter()
            await asyncio.gather(*(b.complete(make_task("q", i, (1, 2)).request)
                                   for i in range(n)))
            return time.perf_counter() - t0
        finally:
            await b.aclose()

    asyncio.run(go(OpenAIBackend(URL, "m", concurrency=3,
                                 transport=httpx.MockTransport(handler)), 12))
    assert peak == 3
    elapsed = asyncio.run(go(OpenAIBackend(URL, "m", concurrency=16, rate_limit_per_s=50,
                                           transport=httpx.MockTransport(handler)), 11))
    assert elapsed >= 10 / 50 * 0.95


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
