"""Peak memory of the HTTP client under concurrent gzip bombs, with and without the
in-flight budget.

A local server answers every request, after a short pause (so that all of them are in
flight together), with a 50 MB gzip bomb (~50 KB on the wire); the client sends
``--concurrency`` requests at once with the default caps (16 MiB on the wire, 64 MiB
decoded per answer, 128 MiB of answers held at once). Each variant runs in a fresh
process; the peak resident set size (``ru_maxrss``) of that process is printed, with
how many answers were decoded and how many were refused. ``--no-budget`` sets the
in-flight budget out of reach: the behaviour before it existed.

Usage::

    PYTHONPATH=src python benchmarks/bench_gzip_bombs.py [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import resource
import subprocess
import sys

from aiohttp import web

BOMB = 50 * 2**20


async def _serve(payload: bytes) -> web.AppRunner:
    async def handle(request: web.Request) -> web.Response:
        await request.read()
        await asyncio.sleep(1.0)
        return web.Response(body=payload, headers={"Content-Encoding": "gzip"})

    app = web.Application()
    app.router.add_post("/chat/completions", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner


async def _one(concurrency: int, no_budget: bool) -> dict[str, object]:
    from recaudit.llm.backends import _http

    if no_budget:
        _http.IN_FLIGHT_FACTOR = 10**6
    runner = await _serve(gzip.compress(b"\0" * BOMB, compresslevel=9))
    port = runner.addresses[0][1]
    client = _http.HTTPClient(f"http://127.0.0.1:{port}/chat/completions",
                              concurrency=concurrency, timeout_s=120, headers={})
    try:
        out = await asyncio.gather(*(client.post(b"{}") for _ in range(concurrency)),
                                   return_exceptions=True)
    finally:
        await client.aclose()
        await runner.cleanup()
    decoded = sum(not isinstance(r, BaseException) for r in out)
    return {"budget": not no_budget, "concurrency": concurrency, "decoded": decoded,
            "refused": len(out) - decoded,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--child", choices=["budget", "no-budget"])
    args = ap.parse_args()
    if args.child:
        row = asyncio.run(_one(args.concurrency, args.child == "no-budget"))
        print(json.dumps(row))
        return
    for variant in ("no-budget", "budget"):
        done = subprocess.run([sys.executable, __file__, "--child", variant,
                               "--concurrency", str(args.concurrency)],
                              capture_output=True, text=True, check=True)
        print(done.stdout.strip())


if __name__ == "__main__":
    main()
