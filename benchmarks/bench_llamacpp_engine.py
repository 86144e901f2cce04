"""recaudit's in-process llama.cpp engine against llama.cpp's own limit, on the demo's
prompts.

Usage::

    PYTHONPATH=src OMP_WAIT_POLICY=PASSIVE python benchmarks/bench_llamacpp_engine.py \
        [--run runs/demo] [--evaluations 80] [--threads 1] [--parallel 4] [--repeats 2]

The prompts are the demo audit's (``recaudit positional demo``: Myntra catalog, k = 5,
constrained answers with choice probabilities); ``--run`` reads the queries and
candidate sets of a finished demo run folder (no retrieval), else they are retrieved
(cached embeddings). Three measurements, each on a fresh engine, alternated
``--repeats`` times (median reported):

- ``inprocess``: recaudit's :class:`LlamaCppBackend` answering the evaluations with
  ``--parallel`` in flight; every engine request body it sends is recorded.
- ``raw_server``: llama.cpp's HTTP server (``python -m recaudit.llm.llamacpp_server``,
  same threads and slots) driven by a minimal asyncio client (aiohttp) replaying exactly
  the recorded bodies, each evaluation's bodies in order, ``--parallel`` evaluations in
  flight. This is the engine's own limit on the same work.
- ``openai_backend`` vs ``raw_openai``: recaudit's :class:`OpenAIBackend` (what ``run``
  uses against any OpenAI-compatible server: a JSON-schema ``response_format`` with
  ``logprobs``) against the same server, and the raw client sending the same payloads.

Prints one JSON line per measurement and the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from recaudit.audit._demo import demo_config
from recaudit.audit._plan import answer_schema, build_tasks, prepare_inputs
from recaudit.llm import ChatRequest
from recaudit.llm.backends import (
    PACKAGED_MODELS,
    LlamaCppBackend,
    OpenAIBackend,
    packaged_model_path,
)

DEFAULT_CATALOG = "/work/shared/data/myntra/myntra_products_catalog.csv"


def _requests(args: argparse.Namespace) -> list[ChatRequest]:
    cfg = demo_config(Path(args.catalog))
    inputs = prepare_inputs(cfg, run_dir=Path(args.run or "."), resume=bool(args.run),
                            retriever=None, say=lambda s: None)
    tasks = build_tasks(cfg, queries=inputs.queries, candidates=inputs.candidates,
                        template=inputs.template)
    return [t.request for t in tasks[: args.evaluations]]


class _Recorder:
    """Wraps the engine's server object and records each evaluation's bodies."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.bodies: dict[int, list[dict[str, Any]]] = {}
        self.current: dict[int, int] = {}

    def handle_chat_completions(self, body: dict[str, Any]) -> Any:
        import threading

        self.bodies.setdefault(self.current[threading.get_ident()], []).append(body)
        return self.server.handle_chat_completions(body)


async def _gather_limited(n: int, jobs: list[Any]) -> list[Any]:
    sem = asyncio.Semaphore(n)

    async def one(job: Any) -> Any:
        async with sem:
            return await job()

    return await asyncio.gather(*(one(j) for j in jobs))


def inprocess(gguf: Path, reqs: list[ChatRequest], args: argparse.Namespace
              ) -> tuple[dict[str, Any], list[list[dict[str, Any]]]]:
    import threading

    engine = LlamaCppBackend(gguf, n_threads=args.threads, n_parallel=args.parallel,
                             constrained=True)
    rec = _Recorder(engine._server)
    engine._server = rec

    def answer(i: int, r: ChatRequest) -> Any:
        rec.current[threading.get_ident()] = i
        return engine.complete_sync(r)

    async def run() -> list[Any]:
        loop = asyncio.get_running_loop()
        return await _gather_limited(args.parallel, [
            (lambda i=i, r=r: loop.run_in_executor(engine._pool, answer, i, r))
            for i, r in enumerate(reqs)])

    t0 = time.perf_counter()
    out = asyncio.run(run())
    wall = time.perf_counter() - t0
    asyncio.run(engine.aclose())
    tokens = sum(o.prompt_tokens or 0 for o in out)
    groups = [rec.bodies.get(i, []) for i in range(len(reqs))]  # [] = a memo hit
    return ({"what": "inprocess", "evaluations": len(reqs), "wall_s": wall,
             "evals_per_s": len(reqs) / wall, "prompt_tokens_per_s": tokens / wall,
             "engine_requests": sum(len(g) for g in groups)}, groups)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Server:
    def __init__(self, gguf: Path, args: argparse.Namespace) -> None:
        self.port = _free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "recaudit.llm.llamacpp_server", "--model", str(gguf),
             "--port", str(self.port), "--n-threads", str(args.threads),
             "--n-parallel", str(args.parallel), "--n-ctx", "4096"],  # per slot, as in process
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if "listening" not in line:
            raise RuntimeError(f"server did not start: {line!r}")
        self.url = f"http://127.0.0.1:{self.port}/v1/chat/completions"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


async def _raw(url: str, groups: list[list[dict[str, Any]]], n: int) -> int:
    import aiohttp

    tokens = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=n)) as session:

        async def one(group: list[dict[str, Any]]) -> None:
            nonlocal tokens
            for i, body in enumerate(group):
                async with session.post(url, json=body) as resp:
                    data = await resp.json()
                    if i == 0:
                        tokens += int(data.get("usage", {}).get("prompt_tokens", 0))

        await _gather_limited(n, [(lambda g=g: one(g)) for g in groups])
    return tokens


def raw_server(gguf: Path, groups: list[list[dict[str, Any]]], args: argparse.Namespace,
               what: str) -> dict[str, Any]:
    server = _Server(gguf, args)
    try:
        t0 = time.perf_counter()
        tokens = asyncio.run(_raw(server.url, groups, args.parallel))
        wall = time.perf_counter() - t0
    finally:
        server.stop()
    return {"what": what, "evaluations": len(groups), "wall_s": wall,
            "evals_per_s": len(groups) / wall, "prompt_tokens_per_s": tokens / wall}


def openai_backend(gguf: Path, reqs: list[ChatRequest], args: argparse.Namespace
                   ) -> tuple[dict[str, Any], list[list[dict[str, Any]]]]:
    from dataclasses import replace

    reqs = [replace(r, response_format=answer_schema(r.identifiers)) for r in reqs]
    server = _Server(gguf, args)
    try:
        backend = OpenAIBackend(server.url.removesuffix("/chat/completions"), "m",
                                concurrency=args.parallel)

        async def run() -> list[Any]:
            out = await _gather_limited(args.parallel, [
                (lambda r=r: backend.complete(r)) for r in reqs])
            await backend.aclose()
            return out

        t0 = time.perf_counter()
        out = asyncio.run(run())
        wall = time.perf_counter() - t0
    finally:
        server.stop()
    tokens = sum(o.prompt_tokens or 0 for o in out)
    return ({"what": "openai_backend", "evaluations": len(reqs), "wall_s": wall,
             "evals_per_s": len(reqs) / wall, "prompt_tokens_per_s": tokens / wall},
            [[backend.payload(r)] for r in reqs])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", default=None)
    ap.add_argument("--catalog", default=DEFAULT_CATALOG)
    ap.add_argument("--evaluations", type=int, default=80)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    gguf = packaged_model_path("smollm2-135m") / PACKAGED_MODELS["smollm2-135m"].gguf_file
    reqs = _requests(args)
    results: dict[str, list[float]] = {}
    for _ in range(args.repeats):
        a, groups = inprocess(gguf, reqs, args)
        b = raw_server(gguf, groups, args, "raw_server")
        c, payloads = openai_backend(gguf, reqs, args)
        d = raw_server(gguf, payloads, args, "raw_openai")
        for row in (a, b, c, d):
            row.update(threads=args.threads, parallel=args.parallel,
                       load=os.getloadavg()[0])
            print(json.dumps(row), flush=True)
            results.setdefault(row["what"], []).append(row["evals_per_s"])
    med = {k: statistics.median(v) for k, v in results.items()}
    print(json.dumps({"ratio_inprocess_vs_raw_server": med["inprocess"] / med["raw_server"],
                      "ratio_openai_backend_vs_raw": med["openai_backend"] / med["raw_openai"],
                      "median_evals_per_s": med}))


if __name__ == "__main__":
    main()
