"""Answers too large to be a chat completion fail that call, clearly, without the memory.

A hostile endpoint's gzip answer used to be decoded without a cap (a 300 MB bomb raised
memory by about 1 GB). Now the body read from the wire is capped at ``max_body_bytes``
and a gzip/deflate answer's decompression at ``DECODED_FACTOR`` times that, both
checked while reading: the call fails as ``ResponseTooLarge`` -> ``EndpointError``
(not retried: the same request gets the same answer), the runner counts it as a failed
evaluation, the other evaluations go on. Tested with a real 50 MB gzip bomb (~50 KB on
the wire) from the scripted fault server and a 1 MiB cap.
"""

from __future__ import annotations

import asyncio
import gzip
import tracemalloc
import zlib

import pytest
from aiohttp import web
from fault_server import BOMB_BYTES, gzip_bomb
from runner_helpers import make_task

from helpers import write_config
from recaudit.audit._config import load_audit_config
from recaudit.audit._run import run_audit
from recaudit.exceptions import EndpointError
from recaudit.llm.backends import _http
from recaudit.llm.backends._http import DECODED_FACTOR, HTTPClient, ResponseTooLarge
from recaudit.llm.backends._openai import MSG_TOO_LARGE, OpenAIBackend

CAP = 2**20  # 1 MiB on the wire, 4 MiB decompressed


def post(url: str, *, cap: int = CAP, n: int = 1) -> list[object]:
    async def go():
        c = HTTPClient(url, concurrency=2, timeout_s=20, headers={}, max_body_bytes=cap)
        out = []
        try:
            for _ in range(n):
                try:
                    out.append(await c.post(b"{}"))
                except Exception as exc:  # noqa: BLE001 -- the test looks at it
                    out.append(exc)
        finally:
            await c.aclose()
        return out

    return asyncio.run(go())


def test_a_gzip_bomb_fails_within_the_cap(fault_server) -> None:
    assert len(gzip_bomb()) < BOMB_BYTES / 500 and BOMB_BYTES == 50 * 2**20
    fault_server.script(["gzip-bomb", "ok"])
    tracemalloc.start()
    try:
        bomb, after = post(f"{fault_server.base_url}/chat/completions", n=2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(bomb, ResponseTooLarge)
    assert str(bomb) == f"the decompressed answer is larger than {DECODED_FACTOR * CAP:,} bytes"
    # the client never held the 50 MB: the decompression stopped at the cap
    assert peak < DECODED_FACTOR * CAP + 8 * 2**20, peak
    assert after.status == 200  # the next call on the client works


def test_bodies_beyond_the_cap_fail_as_they_arrive(fault_server) -> None:
    big = b"x" * (CAP + 1)
    chunked = web.Response(body=big)
    chunked.enable_chunked_encoding()  # no Content-Length: caught while streaming
    answers = [web.Response(body=big), chunked,
               web.Response(body=gzip.compress(b"z" * CAP),
                            headers={"Content-Encoding": "gzip"})]
    fault_server.serve(lambda n, seen: answers[n])
    length, streamed, small_gzip = post(f"{fault_server.base_url}/chat/completions", n=3)
    assert isinstance(length, ResponseTooLarge)
    assert str(length) == f"the answer is larger than {CAP:,} bytes"
    assert isinstance(streamed, ResponseTooLarge)
    assert small_gzip.body == b"z" * CAP  # within 4 x the cap: decoded


def test_deflate_streams_are_capped_and_truncation_still_detected() -> None:
    data = b"0" * (5 * CAP)
    wrapped, raw = zlib.compress(data), zlib.compressobj(wbits=-zlib.MAX_WBITS)
    raw_body = raw.compress(data) + raw.flush()
    for body in (wrapped, raw_body):
        with pytest.raises(ResponseTooLarge):
            _http._decode(body, {"content-encoding": "deflate"}, 4 * CAP)
        assert _http._decode(body, {"content-encoding": "deflate"}, 5 * CAP) == data
    with pytest.raises(zlib.error, match="truncated"):
        _http._decode(gzip.compress(data)[:-20], {"content-encoding": "gzip"}, 10 * CAP)


def test_the_backend_fails_the_call_at_once_and_the_run_counts_it(
        fault_server, tmp_path, retriever, emb_cache, monkeypatch) -> None:
    async def one():
        b = OpenAIBackend(fault_server.base_url, "m", max_retries=3, max_response_bytes=CAP)
        try:
            return await b.complete(make_task("q", 0, (1, 2, 3)).request)
        finally:
            await b.aclose()

    fault_server.script(["gzip-bomb"])
    with pytest.raises(EndpointError) as info:
        asyncio.run(one())
    assert str(info.value) == MSG_TOO_LARGE.format(
        url=f"{fault_server.base_url}/chat/completions",
        what=f"the decompressed answer is larger than {DECODED_FACTOR * CAP:,} bytes")
    assert fault_server.n_requests == 1  # not retried
    # through a whole run: the bombs are failed evaluations, the rest is journaled
    monkeypatch.setattr(_http, "MAX_BODY_BYTES", CAP)
    fault_server.reset()
    fault_server.serve(lambda n, seen: "gzip-bomb" if n % 4 == 1 else "ok")
    model = (f'[[models]]\nname = "remote"\nbackend = "openai"\nbase_url = '
             f'"{fault_server.base_url}"\nmax_retries = 2\n')
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=3, n_perms=4,
                                   models=model, concurrency=1))
    with pytest.raises(EndpointError, match=r"^3 evaluations failed .*--resume"):
        run_audit(cfg, out_dir=tmp_path / "run", retriever=retriever)
    import sqlite3

    with sqlite3.connect(tmp_path / "run" / "journal.sqlite") as conn:
        rows = conn.execute("SELECT status, COUNT(*), MAX(error_message) FROM evaluations "
                            "GROUP BY status ORDER BY status").fetchall()
    assert [(s, n) for s, n, _ in rows] == [("failed", 3), ("ok", 9)]
    assert "decompressed answer is larger than" in rows[0][2]


def test_answers_in_flight_share_one_budget(fault_server) -> None:
    """Sixteen answers that each pass the per-answer caps (3.5 MiB decoded from ~4 KB)
    arrive together: the client holds at most its in-flight budget (8 x the wire cap,
    plus one answer's compressed bytes while it is decoded), fails the ones beyond it
    as ResponseTooLarge, and gives every byte back afterwards."""
    payload = gzip.compress(b"z" * (7 * CAP // 2))

    async def late(n, seen):
        await asyncio.sleep(0.5)  # every request is in before any answer leaves
        return web.Response(body=payload, headers={"Content-Encoding": "gzip"})

    fault_server.serve(late)

    async def go():
        c = HTTPClient(f"{fault_server.base_url}/chat/completions", concurrency=16,
                       timeout_s=30, headers={}, max_body_bytes=CAP)
        try:
            out = await asyncio.gather(*(c.post(b"{}") for _ in range(16)),
                                       return_exceptions=True)
        finally:
            await c.aclose()
        return c.budget, out

    budget, out = asyncio.run(go())
    assert budget.limit == _http.IN_FLIGHT_FACTOR * CAP
    assert budget.peak <= budget.limit
    assert budget.held == 0  # nothing leaked
    ok = [r for r in out if not isinstance(r, Exception)]
    failed = [r for r in out if isinstance(r, Exception)]
    assert all(r.body == b"z" * (7 * CAP // 2) for r in ok)
    assert all(isinstance(r, ResponseTooLarge) and "answers in flight" in str(r)
               for r in failed)
    assert len(ok) >= 2  # the budget holds two such answers at a time


def test_a_size_refusal_does_not_keep_the_decompressed_bytes() -> None:
    """The traceback of ``ResponseTooLarge`` used to hold ``_inflate``'s buffer (record
    0360): 16 bombs' exceptions kept 67 MB alive at a 1 MiB cap."""
    with pytest.raises(ResponseTooLarge) as info:
        _http._inflate(gzip.compress(b"0" * (5 * CAP)), 16 + zlib.MAX_WBITS, CAP)
    tb = info.value.__traceback__
    while tb is not None:
        assert not any(isinstance(v, bytes) and len(v) > CAP
                       for v in tb.tb_frame.f_locals.values())
        tb = tb.tb_next
