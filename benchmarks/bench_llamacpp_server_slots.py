"""llama.cpp's server with one slot against as many slots as the audit sends requests.

Usage::

    PYTHONPATH=src OMP_WAIT_POLICY=PASSIVE python benchmarks/bench_llamacpp_server_slots.py \
        [--requests 24] [--concurrency 8] [--threads 2] [--slots 1 8] [--repeats 1]

For each ``--slots`` value, ``python -m recaudit.llm.llamacpp_server --model
smollm2-135m --n-threads THREADS --n-parallel SLOTS`` is started on a free loopback
port and recaudit's :class:`~recaudit.llm.backends.OpenAIBackend` sends ``--requests``
requests with ``--concurrency`` in flight -- what ``examples/openai-audit.toml`` does
(``concurrency = 8``, the paper's prompt with k = 5 candidates, free-text answers of
at most 96 tokens, temperature 0). Each request shows the same five candidates in
another order. Prints one JSON line per server (wall time, requests/s, the mean and
largest latency of a request) and appends them to
``benchmarks/results/llamacpp_server_slots.jsonl``.
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
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

from recaudit.llm._prompt import PromptTemplate, positional_identifiers, render_request
from recaudit.llm._types import Candidate
from recaudit.llm.backends import OpenAIBackend

RESULTS = Path(__file__).parent / "results" / "llamacpp_server_slots.jsonl"
CANDIDATES = (
    Candidate(1, "A1", "Men Blue Slim Fit Jeans", "Blue stretchable denim jeans, slim fit, "
              "mid-rise, five pockets.", 0.9),
    Candidate(2, "A2", "Women Red Printed Kurta", "A red cotton kurta with floral prints "
              "and three-quarter sleeves.", 0.8),
    Candidate(3, "A3", "Unisex White Sneakers", "White canvas sneakers with a cushioned "
              "sole and round toe.", 0.7),
    Candidate(4, "A4", "Men Black Leather Belt", "A black genuine-leather belt with a "
              "silver-toned buckle.", 0.6),
    Candidate(5, "A5", "Women Navy Blue Jeggings", "Navy blue mid-rise jeggings with an "
              "elasticated waistband.", 0.5),
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(slots: int, threads: int) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "recaudit.llm.llamacpp_server", "--model", "smollm2-135m",
         "--port", str(port), "--n-threads", str(threads), "--n-parallel", str(slots)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server with {slots} slots exited")
        try:
            with urllib.request.urlopen(f"{base}/models", timeout=2) as resp:
                if resp.status == 200:
                    return proc, base
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("the server did not start within 300 s")


async def _send(base: str, n: int, concurrency: int) -> tuple[float, list[float]]:
    gen = np.random.default_rng(0)
    ids = positional_identifiers(len(CANDIDATES))
    requests = [
        render_request(PromptTemplate.default(), "jeans for men", CANDIDATES,
                       tuple(int(i) + 1 for i in gen.permutation(len(CANDIDATES))),
                       identifiers=ids, temperature=0.0, seed=j, max_tokens=96,
                       query_id=f"q{j}")
        for j in range(n)
    ]
    backend = OpenAIBackend(base, "smollm2", concurrency=concurrency, timeout_s=600)
    latencies: list[float] = []

    async def one(request: Any) -> None:
        started = time.perf_counter()
        await backend.complete(request)
        latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    try:
        await asyncio.gather(*(one(r) for r in requests))
    finally:
        await backend.aclose()
    return time.perf_counter() - started, latencies


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--requests", type=int, default=24)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--slots", type=int, nargs="+", default=[1, 8])
    p.add_argument("--repeats", type=int, default=1)
    args = p.parse_args()
    for repeat in range(args.repeats):
        for slots in args.slots:
            proc, base = _start(slots, args.threads)
            try:
                wall, latencies = asyncio.run(_send(base, args.requests, args.concurrency))
            finally:
                proc.terminate()
                proc.wait(30)
            row = {"slots": slots, "threads": args.threads, "concurrency": args.concurrency,
                   "requests": args.requests, "repeat": repeat, "wall_s": round(wall, 2),
                   "requests_per_s": round(args.requests / wall, 3),
                   "mean_latency_s": round(statistics.fmean(latencies), 2),
                   "max_latency_s": round(max(latencies), 2),
                   "load_average": round(os.getloadavg()[0], 2),
                   "date": time.strftime("%Y-%m-%d")}
            print(json.dumps(row), flush=True)
            with RESULTS.open("a") as f:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
