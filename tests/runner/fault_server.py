"""A real loopback chat-completions server that serves scripted faults (tests only).

Faults travel over real sockets to :class:`~recaudit.llm.backends.OpenAIBackend`:
the server is an ``aiohttp.web`` low-level server on 127.0.0.1 running in its own
thread and event loop, so it also serves code that runs its own ``asyncio.run``
(``run_audit``, the CLI). Each request is recorded (headers, body) and answered by
``behaviour(n, seen)`` (``n`` = 0-based request index), which returns a fault name
from :data:`FAULTS` or a ready ``aiohttp.web.Response`` (or a coroutine giving one of
those: ``behaviour`` may be an ``async def``)::

    with FaultServer() as srv:
        srv.script(["429", "reset"])          # then "ok" for ever
        backend = OpenAIBackend(srv.base_url, "m", timeout_s=0.5)

The ``fault_server`` fixture (``conftest.py``) shares one server per test session and
resets its script and log before each test.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import socket
import struct
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

from aiohttp import web

ANSWER = '{"article_number": 2}'

#: Every fault the server knows, with what the client sees.
FAULTS = {
    "ok": "200 with a valid answer (ANSWER, usage 11 + 5 tokens)",
    "429": "429, Retry-After: 0",
    "429-date": "429, Retry-After as an HTTP date 5 s in the past",
    "500": "500 with a text body",
    "503": "503 with a text body",
    "timeout": "no answer for `stall_s` seconds (the client times out first)",
    "reset": "the connection is reset (RST) before any answer",
    "remote-closed": "the connection is closed (FIN) before any answer",
    "truncated": "headers announce 1,000 bytes, 20 arrive, then the connection closes",
    "malformed": "200 whose body is cut-off JSON",
    "garbage": "200 whose body is an HTML proxy error page",
    "empty": '200 with "choices": []',
    "no-content": "200 whose first choice has no message content",
    "not-object": "200 whose JSON body is a list",
    "400": "400, bad request",
    "401": "401, bad key",
    "redirect": "307 to another path",
    "surrogate": "200 whose answer holds a lone surrogate (a JSON \\ud800 escape)",
    "nul": "200 whose answer holds NUL characters",
    "megabytes": "200 whose answer is ANSWER plus 2 MB of text",
    "huge-usage": "200 with token counts beyond 64 bits",
    "gzip-bomb": "200, Content-Encoding gzip: BOMB_BYTES of zeros in a ~50 KB body",
}

#: Decoded size of the "gzip-bomb" answer (its body on the wire is ~50 KB).
BOMB_BYTES = 50 * 2**20
SURROGATE_ANSWER = '{"article_number": 2, "note": "\ud800 and \udfff"}'
NUL_ANSWER = '{"article_number": 2, "note": "a\x00b\x00"}'
MEGABYTES_ANSWER = ANSWER + " " + "x" * (2 * 2**20)
_bomb: bytes | None = None


def gzip_bomb() -> bytes:
    """:data:`BOMB_BYTES` zeros, gzip-compressed (made once)."""
    global _bomb
    if _bomb is None:
        import gzip

        _bomb = gzip.compress(b"\0" * BOMB_BYTES, compresslevel=9)
    return _bomb


def ok_body(text: str = ANSWER, **extra: Any) -> dict[str, Any]:
    """A chat-completions answer with ``text`` as the message content."""
    body: dict[str, Any] = {
        "choices": [{"message": {"role": "assistant", "content": text},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 5}}
    body.update(extra)
    return body


@dataclass(frozen=True)
class Seen:
    """One request as the server received it."""

    headers: dict[str, str]
    body: bytes
    peer: tuple[str, int]  # the client's address: one per connection

    @property
    def json(self) -> Any:
        return json.loads(self.body)


Behaviour = Callable[[int, Seen], Any]


class FaultServer:
    """Scripted HTTP/1.1 server on 127.0.0.1 in a background thread (see module doc).

    Parameters
    ----------
    stall_s : float
        How long a ``"timeout"`` request goes unanswered.
    """

    def __init__(self, *, stall_s: float = 2.0) -> None:
        self.stall_s = stall_s
        self.requests: list[Seen] = []
        self._behaviour: Behaviour = lambda n, seen: "ok"
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="fault-server")
        self._server: asyncio.AbstractServer | None = None
        self.base_url = ""

    # -- lifecycle ------------------------------------------------------------------
    def __enter__(self) -> FaultServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _start(self) -> None:
        self._web = web.Server(self._handle, access_log=None)
        self._server = await self._loop.create_server(self._web, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"

    async def _stop(self) -> None:
        assert self._server is not None
        self._server.close()
        # stalled handlers ("timeout") and idle keep-alive connections end now
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)
        await self._web.shutdown(0.1)
        await self._server.wait_closed()

    # -- scripting ------------------------------------------------------------------
    def reset(self) -> None:
        """Forget the log; answer ``"ok"`` to everything."""
        with self._lock:
            self.requests = []
            self._behaviour = lambda n, seen: "ok"

    def serve(self, behaviour: Behaviour) -> FaultServer:
        """Answer request ``n`` with ``behaviour(n, seen)``."""
        with self._lock:
            self._behaviour = behaviour
        return self

    def script(self, kinds: Iterable[str], then: str = "ok") -> FaultServer:
        """Answer with ``kinds`` in order, then ``then`` for ever."""
        queue = list(kinds)
        for kind in (*queue, then):
            if kind not in FAULTS:
                raise ValueError(f"unknown fault {kind!r}; known: {sorted(FAULTS)}")
        return self.serve(lambda n, seen: queue.pop(0) if queue else then)

    @property
    def n_requests(self) -> int:
        """Requests received since the last reset."""
        return len(self.requests)

    @property
    def n_connections(self) -> int:
        """Distinct client connections those requests came on."""
        return len({seen.peer for seen in self.requests})

    # -- serving --------------------------------------------------------------------
    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        assert request.transport is not None
        peer = request.transport.get_extra_info("peername")
        seen = Seen(dict(request.headers), await request.read(), (peer[0], peer[1]))
        with self._lock:
            n = len(self.requests)
            self.requests.append(seen)
            behaviour = self._behaviour
        kind = behaviour(n, seen)
        if inspect.isawaitable(kind):
            kind = await kind
        if isinstance(kind, web.StreamResponse):
            return kind
        return await self._fault(kind, request)

    async def _fault(self, kind: str, request: web.BaseRequest) -> web.StreamResponse:
        if kind == "ok":
            return web.json_response(ok_body())
        if kind == "429":
            return web.json_response({"error": "slow down"}, status=429,
                                     headers={"Retry-After": "0"})
        if kind == "429-date":
            when = datetime.now(UTC) - timedelta(seconds=5)
            return web.Response(status=429,
                                headers={"Retry-After": format_datetime(when, usegmt=True)})
        if kind in ("500", "503"):
            return web.Response(status=int(kind), text="boom")
        if kind == "timeout":
            await asyncio.sleep(self.stall_s)
            return web.json_response(ok_body())
        if kind in ("reset", "remote-closed"):
            transport = request.transport
            assert transport is not None
            if kind == "reset":  # linger 0: close() sends RST instead of FIN
                sock = transport.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.close()
            raise asyncio.CancelledError  # nothing more to write on this connection
        if kind == "truncated":
            resp = web.StreamResponse(headers={"Content-Type": "application/json"})
            resp.content_length = 1000
            await resp.prepare(request)
            await resp.write(b'{"choices": [{"messa')
            assert request.transport is not None
            request.transport.close()
            raise asyncio.CancelledError
        if kind == "malformed":
            return web.Response(text='{"choices": [ {"mess', content_type="application/json")
        if kind == "garbage":
            return web.Response(text="<html>proxy error</html>", content_type="text/html")
        if kind == "empty":
            return web.json_response({"choices": []})
        if kind == "no-content":
            return web.json_response({"choices": [{"message": {}}]})
        if kind == "not-object":
            return web.json_response([1, 2])
        if kind == "400":
            return web.json_response({"error": "bad request"}, status=400)
        if kind == "401":
            return web.json_response({"error": "bad key"}, status=401)
        if kind == "redirect":
            return web.Response(status=307, headers={"Location": "/v2/chat/completions"})
        if kind == "surrogate":  # json.dumps writes the lone surrogates as \\uXXXX
            return web.json_response(ok_body(SURROGATE_ANSWER))
        if kind == "nul":
            return web.json_response(ok_body(NUL_ANSWER))
        if kind == "megabytes":
            return web.json_response(ok_body(MEGABYTES_ANSWER))
        if kind == "huge-usage":
            return web.json_response(ok_body(usage={"prompt_tokens": 2**70,
                                                    "completion_tokens": -3}))
        if kind == "gzip-bomb":
            return web.Response(body=gzip_bomb(), headers={
                "Content-Type": "application/json", "Content-Encoding": "gzip"})
        raise AssertionError(f"unknown fault {kind!r}")
