"""Helpers of the runner tests (imported as ``runner_helpers``): fake evaluation tasks,
a strict stand-in parser and a loopback chat server. The catalog and config writers
shared with other folders live in ``tests/helpers.py``."""

from __future__ import annotations

import json
import zlib

from recaudit.audit._journal import EvalKey
from recaudit.audit._runner import EvalTask
from recaudit.llm._types import Candidate, ChatMessage, ChatRequest


def json_parse(text: str, identifiers: tuple[str, ...]) -> tuple[int | None, str | None]:
    """A strict stand-in parser: ``{"article_number": <identifier>}`` -> position."""
    try:
        value = json.loads(text)["article_number"]
    except (ValueError, KeyError, TypeError):
        return None, "not a JSON answer"
    ident = str(value)
    if ident not in identifiers:
        return None, "unknown identifier"
    return identifiers.index(ident) + 1, None


def make_task(query_id: str, perm_index: int, order: tuple[int, ...], *, model: str = "m",
              temperature: float = 0.0, sample_index: int = 0,
              condition: str = "permutation") -> EvalTask:
    k = len(order)
    cands = tuple(Candidate(i, f"item-{query_id}-{i}", f"title {i}", "desc", 1.0 - i / 10)
                  for i in range(1, k + 1))
    key = EvalKey(model, k, temperature, condition, query_id, perm_index, sample_index)
    req = ChatRequest(
        messages=(ChatMessage("user", f"query {query_id} order {order}"),),
        temperature=temperature,
        seed=zlib.crc32(f"{query_id}|{perm_index}|{sample_index}".encode()),
        max_tokens=16,
        identifiers=tuple(str(p) for p in range(1, k + 1)),
        order=order,
        query_id=query_id,
    )
    return EvalTask(key=key, request=req, candidates=cands)


def make_tasks(n_queries: int, n_perms: int, k: int = 4, *, model: str = "m",
               seed: int = 0) -> list[EvalTask]:
    import numpy as np

    rng = np.random.default_rng(seed)
    return [make_task(f"q{q}", p, tuple(int(x) + 1 for x in rng.permutation(k)), model=model)
            for q in range(n_queries) for p in range(n_perms)]


class LoopbackServer:
    """A tiny real HTTP/1.1 chat-completions server on 127.0.0.1 (asyncio streams).

    ``behaviour(n)`` returns what to do with the n-th request (0-based): ``"ok"``,
    ``"500"``, ``"429"`` (Retry-After: 0), ``"close"`` (drop the connection without
    answering) or ``"garbage"`` (a 200 whose body is not JSON). Use inside a running
    event loop: ``async with LoopbackServer(...) as srv: srv.base_url``.
    """

    def __init__(self, behaviour=lambda n: "ok", *, latency_s: float = 0.0):
        self.behaviour = behaviour
        self.latency_s = latency_s
        self.requests = 0
        self.bodies: list[dict] = []
        self._server = None

    async def __aenter__(self):
        import asyncio

        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(self, *exc):
        self._server.close()
        await self._server.wait_closed()

    async def _handle(self, reader, writer):
        import asyncio

        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                length = 0
                while True:
                    h = await reader.readline()
                    if h in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = h.decode().partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                body = await reader.readexactly(length) if length else b""
                n = self.requests
                self.requests += 1
                self.bodies.append(json.loads(body) if body else {})
                if self.latency_s:
                    await asyncio.sleep(self.latency_s)
                kind = self.behaviour(n)
                if kind == "close":
                    writer.close()
                    return
                status, payload, extra = 200, b"", ""
                if kind == "ok":
                    payload = json.dumps({"choices": [{"message": {
                        "role": "assistant", "content": '{"article_number": 1}'}}],
                        "usage": {"prompt_tokens": 3, "completion_tokens": 2}}).encode()
                elif kind == "garbage":
                    payload = b"<html>proxy error</html>"
                elif kind == "429":
                    status, extra = 429, "Retry-After: 0\r\n"
                else:
                    status = int(kind)
                writer.write(
                    f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(payload)}\r\n{extra}\r\n".encode() + payload)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            if not writer.is_closing():
                writer.close()
