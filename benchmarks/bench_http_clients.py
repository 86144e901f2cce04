"""Candidate HTTP clients for ``OpenAIBackend``: fraction of the server's limit and
client CPU per call, against bench_runner's loopback server.

Each candidate sends the same chat-completions POST (bench_runner's request body) from
``concurrency`` worker coroutines over at most ``concurrency`` keep-alive connections
(bounded pool), reads status, ``Retry-After`` and the whole body, decodes the JSON and
parses the answer -- the work ``OpenAIBackend`` does per call, without the runner.
Clients run alternately (round-robin, ``--repeats`` rounds), medians reported.
``fraction`` = calls/s / (concurrency / latency); ``cpu ms/call`` = the client
process's CPU time (``time.process_time``, all its threads: Rust/libcurl workers
included) per call.

The candidates other than aiohttp and the own client are not recaudit dependencies:
``pip install curl-cffi pyreqwest httpr aiosonic`` first (versions measured are in
benchmarks/README.md), or choose with ``--clients``.

Usage::

    PYTHONPATH=src python benchmarks/bench_http_clients.py [--concurrency 32]
        [--latency-ms 50] [--calls-per-slot 40] [--repeats 3] [--clients aiohttp ...]

Loaded as a pytest plugin it runs the backend's tests with pyreqwest under
``OpenAIBackend`` (bench_runner's adapter), to check a candidate's reliability::

    PYTHONPATH=src:benchmarks python -m pytest -p bench_http_clients \
        tests/runner/test_openai_backend.py tests/runner/test_runner.py \
        tests/runner/test_secrets.py tests/runner/test_crash_resume.py
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_runner as br

from recaudit.llm._parse import parse_answer
from recaudit.llm.backends._openai import OpenAIBackend

IDENTS = ("1", "2", "3", "4", "5")
#: (status, retry-after header or None, body bytes)
Post = Callable[[], Awaitable[tuple[int, str | None, bytes]]]


def _body(url: str) -> bytes:
    payload = OpenAIBackend(url, "bench").payload(br._tasks(1)[0].request)
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


HEADERS = {"Content-Type": "application/json"}


# -- candidates: each an async context manager factory giving a ``post`` --------------
class _Aiohttp:
    name, dist = "aiohttp", "aiohttp"

    def __init__(self, url: str, body: bytes, concurrency: int) -> None:
        self.url, self.body, self.c = url, body, concurrency

    async def __aenter__(self) -> Post:
        import aiohttp
        import yarl

        self.s = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self.c, keepalive_timeout=4.0),
            headers=HEADERS, timeout=aiohttp.ClientTimeout(total=60),
            cookie_jar=aiohttp.DummyCookieJar())
        target = yarl.URL(self.url)

        async def post() -> tuple[int, str | None, bytes]:
            async with self.s.post(target, data=self.body, allow_redirects=False) as r:
                raw = await r.read()
            return r.status, r.headers.get("Retry-After"), raw

        return post

    async def __aexit__(self, *exc: object) -> None:
        await self.s.close()


class _CurlCffi(_Aiohttp):
    name, dist = "curl-cffi", "curl_cffi"

    async def __aenter__(self) -> Post:
        from curl_cffi.requests import AsyncSession

        self.s = AsyncSession(max_clients=self.c, timeout=60, allow_redirects=False,
                              headers=HEADERS)

        async def post() -> tuple[int, str | None, bytes]:
            r = await self.s.post(self.url, data=self.body)
            return r.status_code, r.headers.get("Retry-After"), r.content

        return post

    async def __aexit__(self, *exc: object) -> None:
        await self.s.close()


class _Pyreqwest(_Aiohttp):
    name, dist = "pyreqwest", "pyreqwest"

    async def __aenter__(self) -> Post:
        from pyreqwest.client import ClientBuilder

        self.s = (ClientBuilder().max_connections(self.c).timeout(timedelta(seconds=60))
                  .pool_idle_timeout(timedelta(seconds=4)).follow_redirects(False)
                  .default_headers(HEADERS).build())

        async def post() -> tuple[int, str | None, bytes]:
            r = await self.s.post(self.url).body_bytes(self.body).build().send()
            raw = await r.bytes()
            return r.status, r.get_header("Retry-After"), bytes(raw)

        return post

    async def __aexit__(self, *exc: object) -> None:
        await self.s.close()


class _Httpr(_Aiohttp):
    name, dist = "httpr", "httpr"

    async def __aenter__(self) -> Post:
        import httpr

        self.s = httpr.AsyncClient(max_concurrency=self.c, timeout=60,
                                   follow_redirects=False, headers=HEADERS)

        async def post() -> tuple[int, str | None, bytes]:
            r = await self.s.post(self.url, content=self.body)
            return r.status_code, r.headers.get("Retry-After"), r.content

        return post

    async def __aexit__(self, *exc: object) -> None:
        await self.s.aclose()


class _Aiosonic(_Aiohttp):
    name, dist = "aiosonic", "aiosonic"

    async def __aenter__(self) -> Post:
        import aiosonic

        self.s = aiosonic.HTTPClient(connector=aiosonic.TCPConnector(
            pool_configs={":default": aiosonic.pools.PoolConfig(size=self.c,
                                                               max_conn_idle_ms=4000)}))
        timeouts = aiosonic.Timeouts(request_timeout=60)

        async def post() -> tuple[int, str | None, bytes]:
            r = await self.s.post(self.url, data=self.body, headers=HEADERS,
                                  timeouts=timeouts, follow=False)
            raw = await r.content()
            return r.status_code, r.headers.get("Retry-After"), raw

        return post

    async def __aexit__(self, *exc: object) -> None:
        await self.s.connector.cleanup()


class _Own(_Aiohttp):
    """recaudit's own client (``recaudit.llm.backends._http``: asyncio.Protocol +
    httptools), when present."""

    name, dist = "own (httptools)", "httptools"

    async def __aenter__(self) -> Post:
        from recaudit.llm.backends._http import HTTPClient

        self.s = HTTPClient(self.url, concurrency=self.c, timeout_s=60.0,
                            headers=HEADERS)

        async def post() -> tuple[int, str | None, bytes]:
            r = await self.s.post(self.body)
            return r.status, r.headers.get("retry-after"), r.body

        return post

    async def __aexit__(self, *exc: object) -> None:
        await self.s.aclose()


class _Streams(_Aiohttp):
    """bench_runner's bare-streams reference (one connection per slot, no library)."""

    name, dist = "bare streams", ""

    async def __aenter__(self) -> Post:
        host, port = self.url.split("//")[1].split("/")[0].split(":")
        head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(self.body)}"
                f"\r\n\r\n")
        request = head.encode() + self.body
        self.conns = [await asyncio.open_connection(host, int(port))
                      for _ in range(self.c)]
        free = list(self.conns)

        async def post() -> tuple[int, str | None, bytes]:
            reader, writer = free.pop()
            writer.write(request)
            headers = await reader.readuntil(b"\r\n\r\n")
            length = int(headers.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            raw = await reader.readexactly(length)
            free.append((reader, writer))
            return int(headers[9:12]), None, raw

        return post

    async def __aexit__(self, *exc: object) -> None:
        for _, w in self.conns:
            w.close()


CLIENTS = {c.name: c for c in (_Aiohttp, _Streams, _Own, _CurlCffi, _Pyreqwest, _Httpr,
                               _Aiosonic)}


async def _run(cls: type[_Aiohttp], url: str, body: bytes, concurrency: int,
               n: int) -> tuple[float, float]:
    async with cls(url, body, concurrency) as post:
        await asyncio.gather(*(post() for _ in range(concurrency)))  # open the pool
        left = [n]

        async def worker() -> None:
            while left[0] > 0:
                left[0] -= 1
                status, _, raw = await post()
                if status != 200:
                    raise RuntimeError(f"HTTP {status}")
                text = json.loads(raw)["choices"][0]["message"]["content"]
                parse_answer(text, IDENTS)

        t0, cpu0 = time.perf_counter(), time.process_time()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return n / elapsed, cpu / n * 1e3


def pytest_configure(config: object) -> None:
    """As a pytest plugin (``-p bench_http_clients``): pyreqwest under the backend."""
    OpenAIBackend._open_http = (  # type: ignore[method-assign]
        lambda self: br._PyreqwestHTTP(self))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--latency-model", default="fixed", choices=["fixed", "uniform", "exp"])
    ap.add_argument("--calls-per-slot", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--clients", nargs="+", default=list(CLIENTS), choices=list(CLIENTS))
    args = ap.parse_args()
    missing = [CLIENTS[n].dist for n in args.clients
               if CLIENTS[n].dist and importlib.util.find_spec(CLIENTS[n].dist) is None]
    if missing:  # the candidates are not recaudit dependencies
        sys.exit(f"not installed: {', '.join(missing)}; pip install them first (versions "
                 "measured: benchmarks/README.md) or pick others with --clients")
    server, url = br.start_server(args.latency_ms, args.latency_model)
    body = _body(url)
    c, n = args.concurrency, args.concurrency * args.calls_per_slot
    limit = c / (args.latency_ms / 1000)
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in args.clients}
    try:
        for name in args.clients:  # warm-up (imports, first connections)
            asyncio.run(_run(CLIENTS[name], url, body, min(c, 4), 8))
        for _ in range(args.repeats):
            for name in args.clients:
                results[name].append(asyncio.run(_run(CLIENTS[name], url, body, c, n)))
    finally:
        server.terminate()
        server.wait()
    print(f"concurrency {c}, latency {args.latency_model} {args.latency_ms:.0f} ms, "
          f"{n} calls per run, limit {limit:.0f}/s, medians of {args.repeats}")
    print(f"{'client':<16} {'version':>8} {'calls/s':>8} {'fraction':>8} "
          f"{'cpu ms/call':>11}  runs (fraction)")
    for name, runs in results.items():
        dist = CLIENTS[name].dist
        ver = version(dist) if dist else "-"
        rate = statistics.median(r for r, _ in runs)
        cpu = statistics.median(x for _, x in runs)
        each = " ".join(f"{r / limit:.2f}" for r, _ in runs)
        print(f"{name:<16} {ver:>8} {rate:>8.1f} {rate / limit:>8.2f} {cpu:>11.2f}  {each}")


if __name__ == "__main__":
    main()
