"""CPU per call of ``OpenAIBackend`` tuning variants (aiohttp session options) through
``run_tasks`` + an in-memory sink against bench_runner's loopback server.

The backend's HTTP client was aiohttp until 2026-11-30 (now its own, ``_http.py``):
this script keeps the tuning measured then reproducible, by putting aiohttp sessions
back under the backend.

Usage::

    PYTHONPATH=src python benchmarks/bench_http_variants.py
"""

import asyncio
import functools
import json
import os
import statistics
import sys

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
import aiohttp
import bench_runner as br

from recaudit.audit._journal import MemorySink
from recaudit.llm.backends._openai import KEEPALIVE_S, OpenAIBackend, _LoopSession

OPTS = {}


async def _close_aiohttp(http):
    try:
        yield
    finally:
        if not http.closed:
            await http.close()


class V(OpenAIBackend):
    @functools.cached_property
    def _target(self):  # parsed once, as the aiohttp backend did
        return __import__("yarl").URL(self.url)

    async def _loop_session(self):
        loop = asyncio.get_running_loop()
        cur = self._session
        if cur is not None and cur.loop is loop and not cur.http.closed:
            return cur
        kw = dict(
            connector=aiohttp.TCPConnector(limit=self.concurrency, keepalive_timeout=KEEPALIVE_S),
            headers=self._headers,
            cookie_jar=aiohttp.DummyCookieJar(),
            proxy=self._proxy,
        )
        kw["timeout"] = aiohttp.ClientTimeout(
            total=None if OPTS.get("notimeout") else self.timeout_s
        )
        if OPTS.get("skip"):
            kw["skip_auto_headers"] = ("User-Agent", "Accept-Encoding", "Accept")
        if OPTS.get("nodecomp"):
            kw["auto_decompress"] = False
        http = aiohttp.ClientSession(**kw)
        cur = self._session = _LoopSession(loop, http, self.concurrency)
        cur.closer = _close_aiohttp(http)  # aiohttp's session closes with close()
        await cur.closer.__anext__()
        return cur

    async def _post(self, session, body):
        if OPTS.get("noctx"):
            resp = await session.http.post(self._target, data=body, allow_redirects=False)
            return await resp.read()
        async with session.http.post(self._target, data=body, allow_redirects=False) as resp:
            return await resp.read()

    async def _attempt(self, body):
        session = self._session
        if session is None or session.loop is not asyncio.get_running_loop() or session.http.closed:
            session = await self._loop_session()
        if OPTS.get("nosem"):
            raw = await self._post(session, body)
        else:
            async with session.slots:
                raw = await self._post(session, body)
        data = json.loads(raw)
        return data


br.OpenAIBackend = V
c = int(os.environ.get("C", "32"))
n = int(os.environ.get("N", "2560"))
srv, url = br.start_server(50.0)
variants = [
    {},
    {"skip": 1},
    {"nodecomp": 1},
    {"notimeout": 1},
    {"nosem": 1},
    {"noctx": 1},
    {"skip": 1, "notimeout": 1, "nosem": 1, "noctx": 1},
]
try:
    asyncio.run(br._run_once(url, 4, 20, MemorySink()))
    res = {i: [] for i in range(len(variants))}
    for _rep in range(int(os.environ.get("REP", "3"))):
        for i, v in enumerate(variants):
            OPTS.clear()
            OPTS.update(v)
            rate, cpu = asyncio.run(br._run_once(url, c, n, MemorySink()))
            res[i].append((rate / (c / 0.05), cpu))
    for i, v in enumerate(variants):
        fr = statistics.median(x for x, _ in res[i])
        cpu = statistics.median(y for _, y in res[i])
        print(
            f"{str(v):70s} fraction {fr:.3f} cpu {cpu:.3f} ms/call  all cpu {[round(y, 3) for _, y in res[i]]}"  # noqa: E501
        )
finally:
    srv.terminate()
