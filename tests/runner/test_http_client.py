"""The own HTTP/1.1 client (``backends/_http.py``) over real loopback sockets: body
framings (Content-Length, chunked, connection end), ``Connection: close``, HTTP/1.0,
keep-alive reuse and idle expiry, a server closing idle connections, broken and
malformed answers, timeouts, the concurrency bound, https with a self-signed
certificate, and http / https (CONNECT) through a proxy."""

from __future__ import annotations

import asyncio
import base64
import shutil
import socket
import ssl
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from fault_server import ANSWER, ok_body
from runner_helpers import make_task

from recaudit.exceptions import EndpointError
from recaudit.llm.backends._http import ConnectionFailed, HTTPClient
from recaudit.llm.backends._openai import OpenAIBackend

JSON = b'{"ok": true}'


def answer(body: bytes = JSON, *extra: str, status: str = "200 OK",
           version: str = "HTTP/1.1") -> bytes:
    head = [f"{version} {status}", f"Content-Length: {len(body)}", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def chunked(*parts: bytes) -> bytes:
    out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    for p in parts:
        out += b"%x\r\n%s\r\n" % (len(p), p)
    return out + b"0\r\n\r\n"


@dataclass
class Step:
    """What the server does for one request: send ``data``, then maybe close."""

    data: bytes = b""
    close: bool = False
    stall_s: float = 0.0
    fin_after_s: float | None = None  # then send FIN from another thread, read to EOF
    reset: bool = False  # close with RST (linger 0) instead of FIN


@dataclass
class RawServer:
    """Scripted loopback HTTP server in the test's loop: request n gets ``script(n)``."""

    script: Callable[[int], Step]
    ssl_context: ssl.SSLContext | None = None
    requests: list[tuple[tuple[str, int], bytes, bytes]] = field(default_factory=list)
    active: int = 0
    peak: int = 0

    async def __aenter__(self) -> RawServer:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0,
                                                 ssl=self.ssl_context)
        self.port = self.server.sockets[0].getsockname()[1]
        scheme = "https" if self.ssl_context else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}/v1/chat/completions"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        await self.server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")[:2]
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = await reader.readexactly(length)
                n = len(self.requests)
                self.requests.append((peer, head, body))
                step = self.script(n)
                self.active += 1
                self.peak = max(self.peak, self.active)
                await asyncio.sleep(step.stall_s)
                self.active -= 1
                writer.write(step.data)
                await writer.drain()
                if step.fin_after_s is not None:  # FIN while the client's loop may block
                    sock = writer.get_extra_info("socket")
                    threading.Timer(step.fin_after_s, sock.shutdown, (socket.SHUT_WR,)).start()
                    await reader.read()
                    return
                if step.reset:
                    sock = writer.get_extra_info("socket")
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                    struct.pack("ii", 1, 0))
                    writer.transport.abort()
                    return
                if step.close:
                    return
        finally:
            writer.close()

    @property
    def n_connections(self) -> int:
        return len({peer for peer, _, _ in self.requests})


def run(coro):
    return asyncio.run(coro)


async def post_all(client: HTTPClient, n: int, body: bytes = b"{}") -> list:
    try:
        return [await client.post(body) for _ in range(n)]
    finally:
        await client.aclose()


def client(url: str, **kw) -> HTTPClient:
    kw.setdefault("concurrency", 4)
    kw.setdefault("timeout_s", 2.0)
    kw.setdefault("headers", {"Content-Type": "application/json"})
    return HTTPClient(url, **kw)


# -- framing and connection reuse -------------------------------------------------------
def test_content_length_keepalive_reuse_and_request_format():
    async def go():
        async with RawServer(lambda n: Step(answer(JSON, "X-A: 1", "X-a: 2"))) as srv:
            out = await post_all(client(srv.url), 3, b'{"q": 1}')
            return srv, out

    srv, out = run(go())
    assert [(r.status, r.body) for r in out] == [(200, JSON)] * 3
    assert out[0].headers["x-a"] == "1, 2"  # lower-case names, repeats joined
    assert srv.n_connections == 1  # kept alive
    _, head, body = srv.requests[0]
    assert head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert f"Host: 127.0.0.1:{srv.port}\r\n".encode() in head
    assert b"Content-Length: 8\r\n" in head and body == b'{"q": 1}'


def test_chunked_answer_is_joined_and_the_connection_reused():
    async def go():
        async with RawServer(lambda n: Step(chunked(b'{"a": ', b"12", b"}"))) as srv:
            return srv, await post_all(client(srv.url), 2)

    srv, out = run(go())
    assert [r.body for r in out] == [b'{"a": 12}'] * 2
    assert srv.n_connections == 1


@pytest.mark.parametrize("kind", ["connection-close", "http/1.0", "until-eof"])
def test_answers_that_end_the_connection(kind):
    """``Connection: close``, an HTTP/1.0 answer and a body delimited by the server
    closing: the body is whole and the next request opens a new connection."""
    steps = {
        "connection-close": Step(answer(JSON, "Connection: close"), close=True),
        "http/1.0": Step(answer(JSON, version="HTTP/1.0"), close=True),
        "until-eof": Step(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n" + JSON,
                          close=True),
    }

    async def go():
        async with RawServer(lambda n: steps[kind]) as srv:
            return srv, await post_all(client(srv.url), 3)

    srv, out = run(go())
    assert [r.body for r in out] == [JSON] * 3
    assert srv.n_connections == 3


def test_idle_connection_expires_after_keepalive_s():
    async def go():
        async with RawServer(lambda n: Step(answer())) as srv:
            c = client(srv.url, keepalive_s=0.1)
            try:
                await c.post(b"{}")
                await c.post(b"{}")  # reused
                await asyncio.sleep(0.25)
                await c.post(b"{}")  # idle too long: a new connection
            finally:
                await c.aclose()
            return srv

    assert run(go()).n_connections == 2


def test_connection_the_server_closed_while_idle_is_not_reused():
    """The server closes an idle keep-alive connection; its FIN is still unread by
    the event loop (blocked) when the next request starts: the socket is polled
    before reuse, so the request goes on a new connection and succeeds."""

    async def go():
        async with RawServer(lambda n: Step(answer(), fin_after_s=0.05 if n == 0
                                            else None)) as srv:
            c = client(srv.url)
            try:
                first = await c.post(b"{}")
                time.sleep(0.3)  # the FIN arrives while the loop cannot process it
                second = await c.post(b"{}")
            finally:
                await c.aclose()
            return srv, first, second

    srv, first, second = run(go())
    assert first.body == second.body == JSON
    assert len(srv.requests) == 2 and srv.n_connections == 2


# -- failures ---------------------------------------------------------------------------
@pytest.mark.parametrize("data, pattern", [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"x" * 10, "during the answer"),
    (b"", "before the answer"),
    (b"HELLO WORLD\r\n\r\n", "malformed HTTP answer"),
])
def test_broken_answers_raise_connection_failed(data, pattern):
    async def go():
        async with RawServer(lambda n: Step(data, close=True)) as srv:
            c = client(srv.url)
            try:
                with pytest.raises(ConnectionFailed, match=pattern):
                    await c.post(b"{}")
            finally:
                await c.aclose()

    run(go())


def test_close_delimited_body_cut_by_a_reset_is_an_error():
    """Only a clean end (FIN) completes a body delimited by the connection's end."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n"

    async def go():
        async with RawServer(lambda n: Step(head + b'{"cho', reset=True)) as srv:
            c = client(srv.url)
            try:
                with pytest.raises(ConnectionFailed, match="during the answer"):
                    await c.post(b"{}")
            finally:
                await c.aclose()

    run(go())


def test_timeout_covers_the_whole_answer_and_drops_the_connection():
    async def go():
        async with RawServer(lambda n: Step(answer(), stall_s=1.0 if n == 0 else 0)) as srv:
            c = client(srv.url, timeout_s=0.2)
            try:
                t0 = time.perf_counter()
                with pytest.raises(TimeoutError):
                    await c.post(b"{}")
                took = time.perf_counter() - t0
                ok = await c.post(b"{}")
            finally:
                await c.aclose()
            return srv, took, ok

    srv, took, ok = run(go())
    assert 0.15 < took < 0.9
    assert ok.body == JSON and srv.n_connections == 2  # the stalled one was dropped


def test_concurrency_bounds_requests_and_connections():
    async def go():
        async with RawServer(lambda n: Step(answer(), stall_s=0.02)) as srv:
            c = client(srv.url, concurrency=2)
            try:
                out = await asyncio.gather(*(c.post(b"{}") for _ in range(8)))
            finally:
                await c.aclose()
            return srv, out

    srv, out = run(go())
    assert len(out) == 8 and srv.peak == 2 and srv.n_connections == 2


def test_redirect_is_returned_not_followed_and_closed_client_refuses():
    async def go():
        async with RawServer(lambda n: Step(answer(b"", "Location: /elsewhere",
                                                   status="307 Temporary Redirect"))) as srv:
            c = client(srv.url)
            resp = await c.post(b"{}")
            await c.aclose()
            assert c.closed
            with pytest.raises(ConnectionFailed, match="closed"):
                await c.post(b"{}")
            return srv, resp

    srv, resp = run(go())
    assert resp.status == 307 and resp.headers["location"] == "/elsewhere"
    assert len(srv.requests) == 1


# -- TLS and proxies --------------------------------------------------------------------
@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    """A self-signed certificate for 127.0.0.1 (openssl CLI), and its key."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


def server_tls(tls_files) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(*tls_files)
    return ctx


def test_https_verifies_certificates(tls_files):
    cert, _ = tls_files

    async def go():
        async with RawServer(lambda n: Step(answer()), server_tls(tls_files)) as srv:
            with pytest.raises(ssl.SSLCertVerificationError):  # default: verified
                await client(srv.url).post(b"{}")
            trusted = ssl.create_default_context(cafile=str(cert))
            return srv, await post_all(client(srv.url, ssl_context=trusted), 2)

    srv, out = run(go())
    assert [r.body for r in out] == [JSON] * 2
    assert srv.n_connections == 1


def test_backend_over_https_trusts_ssl_cert_file(tls_files, monkeypatch):
    """The backend's default context honours ``SSL_CERT_FILE`` (as curl and requests
    users expect); without it the self-signed server is refused, never trusted."""
    cert, _ = tls_files
    body = __import__("json").dumps(ok_body()).encode()

    async def go(b):
        async with RawServer(lambda n: Step(answer(body)), server_tls(tls_files)) as srv:
            be = b(srv.url.removesuffix("/chat/completions"))
            try:
                return await be.complete(make_task("q", 0, (1, 2, 3)).request)
            finally:
                await be.aclose()

    # a certificate that fails verification is not transient: one attempt, a clear fix
    with pytest.raises(EndpointError, match="failed verification.*not retried.*SSL_CERT_FILE"):
        run(go(lambda url: OpenAIBackend(url, "m", max_retries=3, backoff_base_s=30)))
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    assert run(go(lambda url: OpenAIBackend(url, "m", max_retries=0))).text == ANSWER


async def connect_proxy(seen: list[bytes]) -> asyncio.AbstractServer:
    """A tiny CONNECT-only proxy: records what it receives in clear, then pipes."""

    async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            while data := await r.read(65536):
                seen.append(data)
                w.write(data)
                await w.drain()
        except ConnectionError:
            pass
        finally:
            w.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        seen.append(head)
        method, target, _ = head.split(b"\r\n")[0].split(b" ")
        if method != b"CONNECT":
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            writer.close()
            return
        host, port = target.rsplit(b":", 1)
        up_r, up_w = await asyncio.open_connection(host.decode(), int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer))

    return await asyncio.start_server(handle, "127.0.0.1", 0)


def test_https_through_a_connect_proxy(tls_files):
    cert, _ = tls_files
    seen: list[bytes] = []

    async def go():
        proxy = await connect_proxy(seen)
        port = proxy.sockets[0].getsockname()[1]
        try:
            async with RawServer(lambda n: Step(answer()), server_tls(tls_files)) as srv:
                c = client(srv.url, proxy=f"http://u%40x:p%3As@127.0.0.1:{port}",
                           ssl_context=ssl.create_default_context(cafile=str(cert)),
                           headers={"Authorization": "Bearer sk-secret"})
                return srv, await post_all(c, 2, b'{"secret": "body"}')
        finally:
            proxy.close()

    srv, out = run(go())
    assert [r.body for r in out] == [JSON] * 2 and srv.n_connections == 1
    connect = seen[0].decode()
    assert connect.startswith(f"CONNECT 127.0.0.1:{srv.port} HTTP/1.1\r\n")
    cred = base64.b64encode(b"u@x:p:s").decode()
    assert f"Proxy-Authorization: Basic {cred}\r\n" in connect
    tunnelled = b"".join(seen[1:])
    assert b"sk-secret" not in tunnelled and b"secret" not in tunnelled  # encrypted


def test_http_through_a_proxy_uses_absolute_form():
    async def go():
        async with RawServer(lambda n: Step(answer())) as proxy:  # answers as the proxy
            c = client("http://llm.test:8080/v1/chat/completions",
                       proxy=proxy.url.split("/v1")[0])
            return proxy, await post_all(c, 1)

    proxy, out = run(go())
    assert out[0].body == JSON
    _, head, _ = proxy.requests[0]
    assert head.startswith(b"POST http://llm.test:8080/v1/chat/completions HTTP/1.1\r\n")
    assert b"Host: llm.test:8080\r\n" in head and b"Proxy-Authorization" not in head


def test_backend_reads_the_proxy_from_the_environment_once(monkeypatch):
    async def go(b):
        try:
            return await b.complete(make_task("q", 0, (1, 2, 3)).request)
        finally:
            await b.aclose()

    body = __import__("json").dumps(ok_body()).encode()

    async def scenario():
        async with RawServer(lambda n: Step(answer(body))) as proxy:
            monkeypatch.setenv("http_proxy", proxy.url.split("/v1")[0])
            monkeypatch.delenv("no_proxy", raising=False)
            monkeypatch.delenv("NO_PROXY", raising=False)
            b = OpenAIBackend("http://llm.test:9/v1", "m", max_retries=0)
            monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")  # too late: read once
            resp = await go(b)
            return proxy, resp

    proxy, resp = run(scenario())
    assert resp.text == ANSWER
    assert proxy.requests[0][1].startswith(b"POST http://llm.test:9/v1/chat/completions ")


@pytest.mark.parametrize("proxy", ["socks5://user:s3cret@proxy.test:1080",
                                   "https://user:s3cret@proxy.test:3128"])
def test_backend_rejects_a_proxy_it_cannot_speak_when_built(monkeypatch, proxy):
    """A non-http proxy in the environment is a clear ConfigError at construction (not a
    failure on the first request), naming the variable and the host, not the secret."""
    from recaudit.exceptions import ConfigError

    for var in ("no_proxy", "NO_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("https_proxy", proxy)
    with pytest.raises(ConfigError) as err:
        OpenAIBackend("https://llm.test/v1", "m")
    msg = str(err.value)
    assert "https_proxy" in msg and "proxy.test" in msg and "http://HOST:PORT" in msg
    assert "s3cret" not in msg and "user" not in msg
    monkeypatch.setenv("no_proxy", "llm.test")  # bypassed: no proxy, no error
    assert OpenAIBackend("https://llm.test/v1", "m")._proxy is None


def test_compressed_answers():
    """gzip and deflate (zlib-wrapped and raw) answers are decoded, the header dropped;
    the request asks for identity; a coding we cannot decode fails the backend at once."""
    import gzip
    import json as _json
    import zlib

    raw_deflate = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    bodies = [(gzip.compress(JSON), "gzip"), (zlib.compress(JSON), "deflate"),
              (raw_deflate.compress(JSON) + raw_deflate.flush(), "deflate")]

    async def go():
        async with RawServer(lambda n: Step(answer(bodies[n][0],
                                                   f"Content-Encoding: {bodies[n][1]}"))) as srv:
            c = client(srv.url)
            out = [await c.post(b"{}") for _ in bodies]
            await c.aclose()
            return srv, out

    srv, out = run(go())
    assert [r.body for r in out] == [JSON] * 3
    assert all("content-encoding" not in r.headers for r in out)
    body = _json.dumps(ok_body()).encode()

    async def backend(data: bytes, coding: str):
        async with RawServer(lambda n: Step(answer(data, f"Content-Encoding: {coding}"))) \
                as srv:
            b = OpenAIBackend(srv.url.removesuffix("/chat/completions"), "m",
                              max_retries=3, backoff_base_s=30)
            try:
                return srv, await b.complete(make_task("q", 0, (1, 2, 3)).request)
            finally:
                await b.aclose()

    srv, resp = run(backend(gzip.compress(body), "gzip"))
    assert resp.text == ANSWER
    assert b"accept-encoding: identity" in srv.requests[0][1].lower()
    with pytest.raises(EndpointError, match="Content-Encoding 'br'.*not retried"):
        run(backend(b"\x0b\x02\x80", "br"))
