"""Run ``OpenAIBackend`` + ``run_tasks`` against bench_runner's loopback server and print
calls/s, fraction of the limit and client CPU per call; run under py-spy for the profile.

Usage (environment: C concurrency, N calls, LAT latency ms, REP repeats)::

    C=32 N=5000 PYTHONPATH=src py-spy record -r 200 -f raw -o prof.txt -- \
        python benchmarks/profile_runner.py
"""

import asyncio
import os
import sys

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
import bench_runner as br

from recaudit.audit._journal import MemorySink

c = int(os.environ.get("C", "32"))
n = int(os.environ.get("N", "5000"))
srv, url = br.start_server(float(os.environ.get("LAT", "50")))
try:
    asyncio.run(br._run_once(url, 4, 20, MemorySink()))
    for _ in range(int(os.environ.get("REP", "1"))):
        rate, cpu = asyncio.run(br._run_once(url, c, n, MemorySink()))
        print(
            f"c={c} n={n} rate {rate:.1f} fraction {rate / (c / 0.05):.3f} cpu {cpu:.3f} ms/call",
            flush=True,
        )
finally:
    srv.terminate()
