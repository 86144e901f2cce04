"""Runner throughput and journal overhead against a real loopback server.

A chat-completions server with an injected latency (mean 50 ms by default) runs in a
separate process (so it does not share the client's core); the runner sends N calls
through :class:`~recaudit.llm.OpenAIBackend` at concurrency 1, 8 and 32. Latency
models (``--latency-model``): ``fixed`` (every call exactly the mean: the slots stay
in lock-step), ``uniform`` (uniform on mean +- 20%) and ``exp`` (exponential with that
mean), seeded. The server's limit is ``concurrency / mean latency`` calls per second;
the benchmark reports the
achieved fraction of that limit (goal: >= 0.9 at 32), once with the SQLite journal as
the sink (background writer thread, as ``positional run`` uses it) and once with an
in-memory sink (journal overhead goal: < 5%), and the client's CPU time per call
(``time.process_time``; the server's CPU is not included). ``1 / cpu-per-call`` is the
most calls/s one whole core can drive: when that is below the limit, the client, not the
server, is the bottleneck. A reference client (raw asyncio streams, one keep-alive
connection per slot, no HTTP library) shows what the loopback server and the event
loop allow. It also times journal writes alone.

Usage::

    PYTHONPATH=src python benchmarks/bench_runner.py [--latency-ms 50] [--calls-per-slot 40]
        [--repeats 3] [--concurrency 1 8 32] [--latency-model fixed uniform]
        [--client own aiohttp pyreqwest]

``--client`` puts other HTTP clients under the same backend, runner and journal
(``OpenAIBackend._open_http`` replaced; the retry policy and parser unchanged): ``own``
(the backend's own, the default), ``aiohttp`` (the backend's client before
2026-11-30) and ``pyreqwest``. Several clients alternate per repeat.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from recaudit.audit._journal import EvalKey, EvalRecord, Journal, MemorySink, ResultSink
from recaudit.audit._runner import EvalTask, run_tasks
from recaudit.llm._parse import parse_answer
from recaudit.llm._types import Candidate, ChatMessage, ChatRequest
from recaudit.llm.backends._http import Response
from recaudit.llm.backends._openai import KEEPALIVE_S, OpenAIBackend

ANSWER = json.dumps({"choices": [{"message": {"role": "assistant",
                                              "content": '{"article_number": 2}'}}],
                     "usage": {"prompt_tokens": 200, "completion_tokens": 9}}).encode()


def _latency_sampler(model: str, mean: float, seed: int = 0):
    """``() -> seconds`` for one call under the latency ``model``."""
    rng = random.Random(seed)
    if model == "fixed":
        return lambda: mean
    if model == "uniform":
        return lambda: rng.uniform(0.8 * mean, 1.2 * mean)
    if model == "exp":
        return lambda: rng.expovariate(1.0 / mean)
    raise SystemExit(f"unknown --latency-model {model!r}: fixed, uniform or exp")


async def _serve(port: int, latency: float, model: str = "fixed") -> None:
    delay = _latency_sampler(model, latency)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                if not await reader.readline():
                    return
                length = 0
                while (line := await reader.readline()) not in (b"\r\n", b""):
                    name, _, value = line.decode().partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                await reader.readexactly(length)
                await asyncio.sleep(delay())
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: " + str(len(ANSWER)).encode() + b"\r\n\r\n"
                             + ANSWER)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=512)
    async with server:
        await server.serve_forever()


def _tasks(n: int, k: int = 5) -> list[EvalTask]:
    cands = tuple(Candidate(i, f"item{i}", f"title {i}", "a description " * 10, 0.5)
                  for i in range(1, k + 1))
    prompt = "You are a shop assistant. " + "Candidate text. " * 120
    out = []
    for i in range(n):
        key = EvalKey("bench", k, 0.0, "permutation", f"q{i // 20:05d}", i % 20, 0)
        req = ChatRequest(messages=(ChatMessage("user", prompt),), temperature=0.0,
                          seed=i, max_tokens=24,
                          identifiers=tuple(str(p) for p in range(1, k + 1)),
                          order=(2, 1, 3, 4, 5), query_id=key.query_id)
        out.append(EvalTask(key=key, request=req, candidates=cands))
    return out


def _parse(text: str, identifiers: tuple[str, ...]) -> tuple[int | None, str | None]:
    parsed = parse_answer(text, identifiers)
    return parsed.position, parsed.discard_reason


class _AiohttpHTTP:
    """aiohttp behind ``OpenAIBackend._open_http`` (as the backend used it until
    2026-11-30: one session, bounded connector, 4 s keep-alive, no cookies)."""

    def __init__(self, b: OpenAIBackend) -> None:
        import aiohttp
        import yarl

        self.s = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=b.concurrency, keepalive_timeout=KEEPALIVE_S),
            headers=b._headers, timeout=aiohttp.ClientTimeout(total=b.timeout_s),
            cookie_jar=aiohttp.DummyCookieJar(), proxy=b._proxy)
        self.target = yarl.URL(b.url)

    @property
    def closed(self) -> bool:
        return self.s.closed

    async def post(self, body: bytes) -> Response:
        import aiohttp

        try:
            async with self.s.post(self.target, data=body, allow_redirects=False) as r:
                raw = await r.read()
        except aiohttp.ClientError as exc:
            raise OSError(type(exc).__name__) from None
        return Response(r.status, r.headers, raw)  # type: ignore[arg-type]  # CIMultiDict

    async def aclose(self) -> None:
        await self.s.close()


class _PyreqwestHTTP:
    """pyreqwest (Rust reqwest/hyper on a tokio thread) behind ``_open_http``."""

    def __init__(self, b: OpenAIBackend) -> None:
        from datetime import timedelta

        from pyreqwest.client import ClientBuilder

        self.s = (ClientBuilder().max_connections(b.concurrency)
                  .timeout(timedelta(seconds=b.timeout_s))
                  .pool_idle_timeout(timedelta(seconds=KEEPALIVE_S))
                  .follow_redirects(False).default_headers(b._headers).build())
        self.url = b.url
        self.closed = False

    async def post(self, body: bytes) -> Response:
        from pyreqwest.exceptions import DecodeError, RequestTimeoutError, TransportError

        try:
            r = await self.s.post(self.url).body_bytes(body).build().send()
            raw = bytes(await r.bytes())
        except RequestTimeoutError:
            raise TimeoutError from None
        except (TransportError, DecodeError) as exc:  # DecodeError: a truncated body
            raise OSError(type(exc).__name__) from None
        return Response(r.status, {"retry-after": r.get_header("retry-after") or "",
                                   "location": r.get_header("location") or ""}, raw)

    async def aclose(self) -> None:
        self.closed = True
        await self.s.close()


CLIENTS = {"own": None, "aiohttp": _AiohttpHTTP, "pyreqwest": _PyreqwestHTTP}


def _backend(url: str, concurrency: int, client: str = "own") -> OpenAIBackend:
    backend = OpenAIBackend(url, "bench", concurrency=concurrency, max_retries=0)
    factory = CLIENTS[client]
    if factory is not None:
        backend._open_http = lambda: factory(backend)  # type: ignore[method-assign]
    return backend


async def _run_once(url: str, concurrency: int, n: int, sink: ResultSink,
                    client: str = "own") -> tuple[float, float]:
    """(calls/s, client CPU ms per call) of one ``run_tasks`` (setup excluded)."""
    backend = _backend(url, concurrency, client)
    tasks = _tasks(n)
    try:
        cpu0 = time.process_time()
        summary = await run_tasks(tasks, backends={("bench", 5): backend}, sink=sink,
                                  parse=_parse, concurrency=concurrency)
        cpu = time.process_time() - cpu0
    finally:
        await backend.aclose()
    if summary.ok != n:
        raise RuntimeError(f"only {summary.ok} of {n} calls succeeded")
    return summary.calls_per_s, cpu / n * 1e3


async def _raw_reference(url: str, concurrency: int, n: int) -> tuple[float, float]:
    """The same calls through bare asyncio streams: no HTTP library (the floor)."""
    host, port = url.split("//")[1].split("/")[0].split(":")
    body = json.dumps(OpenAIBackend(url, "bench").payload(_tasks(1)[0].request)).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
    request = head.encode() + body
    conns = [await asyncio.open_connection(host, int(port)) for _ in range(concurrency)]
    left = [n]

    async def slot(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while left[0] > 0:
            left[0] -= 1
            writer.write(request)
            headers = await reader.readuntil(b"\r\n\r\n")
            length = int(headers.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            text = json.loads(await reader.readexactly(length))["choices"][0]["message"]
            parse_answer(text["content"], ("1", "2", "3", "4", "5"))

    t0, cpu0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(slot(r, w) for r, w in conns))
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    for _, w in conns:
        w.close()
    return n / elapsed, cpu / n * 1e3


def _paced_writes(sink: ResultSink, records: list[EvalRecord], pace_s: float) -> float:
    inside = 0.0
    for r in records:
        t0 = time.perf_counter()
        sink.write(r)
        inside += time.perf_counter() - t0
        time.sleep(pace_s)
    return inside


def _journal_write_cost(n: int = 2000, pace_s: float = 0.001) -> tuple[float, float, float]:
    """Time spent inside ``sink.write`` per record (us), one record every ``pace_s``
    (a runner at ~1,000 calls/s): journal committing in ``write``, journal with the
    writer thread (``write`` only queues), in-memory sink."""
    records = [EvalRecord(key=t.key, status="ok", order=t.request.order,
                          identifiers=t.request.identifiers, selected_position=2,
                          selected_original_index=1, selected_item_id="item1",
                          raw_response='{"article_number": 2}', latency_s=0.05,
                          prompt_tokens=200, completion_tokens=9) for t in _tasks(n)]
    out = []
    for background in (False, True):
        with tempfile.TemporaryDirectory() as tmp:
            with Journal(Path(tmp) / "journal.sqlite", meta={}, resume=False,
                         background=background) as journal:
                out.append(_paced_writes(journal, records, pace_s) / n * 1e6)
    out.append(_paced_writes(MemorySink(), records, pace_s) / n * 1e6)
    return out[0], out[1], out[2]


def start_server(latency_ms: float, model: str = "fixed") -> tuple[subprocess.Popen[bytes], str]:
    """Start this file's loopback server in a subprocess; wait until it accepts; its URL."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port),
                               "--latency-ms", str(latency_ms), "--latency-model", model])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    return server, f"http://127.0.0.1:{port}/v1"


def _table(url: str, args: argparse.Namespace, model: str) -> None:
    latency = args.latency_ms / 1000
    levels = args.concurrency
    for client in args.client:
        asyncio.run(_run_once(url, 4, 20, MemorySink(), client))  # warm-up
    print(f"server latency {model}, mean {args.latency_ms:.0f} ms; {args.repeats} repeats, "
          f"median")
    print(f"{'client':>9} {'concurrency':>11} {'calls':>6} {'limit/s':>8} {'journal/s':>10} "
          f"{'fraction':>8} {'memory/s':>9} {'overhead':>8} {'cpu ms/call':>11} "
          f"{'1/cpu':>6}")
    for c in levels:
        n = args.calls_per_slot * c
        rates_j: dict[str, list[float]] = {k: [] for k in args.client}
        rates_m: dict[str, list[float]] = {k: [] for k in args.client}
        cpus: dict[str, list[float]] = {k: [] for k in args.client}
        for _ in range(args.repeats):
            for client in args.client:  # alternating
                with tempfile.TemporaryDirectory() as tmp:
                    with Journal(Path(tmp) / "journal.sqlite", meta={}, resume=False,
                                 background=True) as j:
                        rates_j[client].append(asyncio.run(_run_once(url, c, n, j,
                                                                     client))[0])
                rate, cpu = asyncio.run(_run_once(url, c, n, MemorySink(), client))
                rates_m[client].append(rate)
                cpus[client].append(cpu)
        limit = c / latency
        for client in args.client:
            rj, rm, cpu = (statistics.median(x[client]) for x in (rates_j, rates_m, cpus))
            each = " ".join(f"{r / limit:.2f}" for r in rates_j[client])
            print(f"{client:>9} {c:>11} {n:>6} {limit:>8.0f} {rj:>10.1f} {rj / limit:>8.2f} "
                  f"{rm:>9.1f} {1 - rj / rm:>8.1%} {cpu:>11.2f} {1e3 / cpu:>6.0f}  "
                  f"(journal runs: {each})")
    for c in levels:
        n = args.calls_per_slot * c
        runs = [asyncio.run(_raw_reference(url, c, n)) for _ in range(args.repeats)]
        rate = statistics.median(r for r, _ in runs)
        cpu = statistics.median(x for _, x in runs)
        print(f"reference client (no HTTP library), concurrency {c}: {rate:.1f} calls/s, "
              f"fraction {rate / (c / latency):.2f}, {cpu:.2f} ms CPU/call")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency-ms", type=float, default=50.0, help="mean server latency")
    ap.add_argument("--calls-per-slot", type=int, default=40,
                    help="calls per unit of concurrency (ideal wall time = this x latency)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--latency-model", nargs="+", default=["fixed", "uniform"],
                    choices=["fixed", "uniform", "exp"])
    ap.add_argument("--uvloop", action="store_true",
                    help="run the client on uvloop (pip install uvloop; not a dependency)")
    ap.add_argument("--client", nargs="+", default=["own"], choices=list(CLIENTS),
                    help="HTTP client(s) under the backend; several alternate per repeat")
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.uvloop and args.serve is None:
        import uvloop

        uvloop.install()
    if args.serve is not None:
        asyncio.run(_serve(args.serve, args.latency_ms / 1000, args.latency_model[0]))
        return
    for model in args.latency_model:
        server, url = start_server(args.latency_ms, model)
        try:
            _table(url, args, model)
        finally:
            server.terminate()
            server.wait()
    inline, queued, memory = _journal_write_cost()
    print(f"time inside sink.write at ~1,000 records/s: journal committing inline "
          f"(64 per commit) {inline:.0f} us/record, journal with the writer thread "
          f"{queued:.1f} us/record, in-memory sink {memory:.1f} us/record")


if __name__ == "__main__":
    main()
