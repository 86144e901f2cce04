"""Peak memory of an ``OpenAIBackend`` answered only by gzip bombs at concurrency 16.

A hostile (or broken) endpoint answers every call with a gzip bomb: ``BOMB_BYTES``
(50 MB) of zeros in a ~50 KB body (``tests/runner/fault_server.py``). The backend runs
``--calls`` calls at ``--concurrency`` with its default caps (16 MiB on the wire, 64
MiB decompressed) and 2 retries; a thread samples the process's RSS every 2 ms; the
result is the peak RSS above the RSS just before the calls (the bomb is built first).
One JSON line is appended to ``benchmarks/results/gzip_bomb_retries.jsonl``.

Usage::

    PYTHONPATH=src nice -n 10 python benchmarks/bench_gzip_bomb_retries.py --label after
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "runner"), str(ROOT / "tests")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", required=True)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--calls", type=int, default=32)
    args = ap.parse_args()
    from fault_server import BOMB_BYTES, FaultServer, gzip_bomb
    from runner_helpers import make_task

    from recaudit.llm.backends._openai import OpenAIBackend

    gzip_bomb()
    proc = psutil.Process()
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(0.002)

    async def go(url: str) -> list[object]:
        b = OpenAIBackend(url, "m", concurrency=args.concurrency, max_retries=2,
                          backoff_base_s=0.05, backoff_max_s=0.1)
        try:
            return await asyncio.gather(
                *(b.complete(make_task("q", i, (1, 2, 3)).request) for i in range(args.calls)),
                return_exceptions=True)
        finally:
            await b.aclose()

    with FaultServer() as fs:
        fs.serve(lambda n, seen: "gzip-bomb")
        base = proc.memory_info().rss
        t = threading.Thread(target=sample, daemon=True)
        t.start()
        t0 = time.perf_counter()
        out = asyncio.run(go(fs.base_url))
        seconds = time.perf_counter() - t0
        done.set()
        t.join()
        n_requests = fs.n_requests
    row = {"label": args.label, "concurrency": args.concurrency, "calls": args.calls,
           "bomb_bytes": BOMB_BYTES, "requests": n_requests,
           "peak_rss_above_base_mb": round((peak[0] - base) / 2**20, 1),
           "errors": sorted({type(x).__name__ for x in out}),
           "first_error": str(out[0])[:160], "seconds": round(seconds, 2)}
    print(json.dumps(row))
    with (ROOT / "benchmarks" / "results" / "gzip_bomb_retries.jsonl").open("a") as f:
        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
