"""A minimal HTTP/1.1 client for one POST target: asyncio.Protocol + httptools (internal).

What :class:`~recaudit.llm.backends.OpenAIBackend` needs and nothing more: POST a
ready body to ONE URL over a bounded pool of keep-alive connections and return the
status, the headers and the whole body. The response is parsed by httptools (llhttp,
the C parser of Node.js): Content-Length and chunked bodies, bodies delimited by the
server closing the connection, ``Connection: close`` and HTTP/1.0 answers (the
connection is then not reused). Why hand-written rather than a library:
``docs/decisions/``, "The HTTP client is our own (asyncio.Protocol + httptools)".

Behaviour:

- at most ``concurrency`` requests in flight and connections open (a semaphore; a
  connection is opened only when no idle one is left);
- each ``post`` has a total timeout (connect, proxy tunnel, TLS handshake, send,
  whole answer): :class:`TimeoutError`; the connection is then dropped;
- an idle connection is not reused after ``keepalive_s`` seconds (below the 5 s idle
  timeout of uvicorn), nor once the server closed it: before reuse its socket is
  polled (readable while idle = the server's FIN, or bytes nobody asked for) and
  dropped if so. A request is never re-sent by this module: a POST on a connection
  the server closes while the request is under way may have been received, so it
  fails as :class:`ConnectionFailed` and the caller's retry policy (counted, with
  backoff) decides;
- ``https`` with :func:`ssl.create_default_context` (certificates and host name
  verified; ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` honoured) unless a context is given;
- a proxy (``http://[user:pass@]host:port``): absolute-form requests for an ``http``
  target, a ``CONNECT`` tunnel then TLS for an ``https`` target; credentials in the
  proxy URL go in ``Proxy-Authorization`` (Basic) and never in errors;
- redirects are never followed (a 3xx is returned like any other answer);
- a gzip or deflate answer is decompressed (requests carry ``Accept-Encoding:
  identity``; a server may compress anyway); other codings are left for the caller;
- an answer larger than ``max_body_bytes`` on the wire, or than
  ``DECODED_FACTOR * max_body_bytes`` once decompressed (a "gzip bomb": 50 MB of zeros
  fit in 50 KB), fails as :class:`ResponseTooLarge` as soon as the cap is passed:
  neither the body nor its decompression is ever held beyond the cap;
- connection failures raise :class:`ConnectionFailed` (an ``OSError``) whose message
  never contains the request (headers or body).
"""

from __future__ import annotations

import asyncio
import base64
import select
import ssl
import time
import zlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit

import httptools

__all__ = ["DECODED_FACTOR", "IN_FLIGHT_FACTOR", "MAX_BODY_BYTES", "ConnectionFailed",
           "HTTPClient", "Response", "ResponseTooLarge", "split_proxy"]

#: Largest answer body read from the wire (a chat completion, logprobs included, is
#: kilobytes; 16 MiB leaves room for any real one).
MAX_BODY_BYTES = 16 * 2**20
#: A compressed answer may decode to at most this many times ``max_body_bytes``.
DECODED_FACTOR = 4
#: All answers of one client held at once (on the wire and decoded, from their first
#: byte until their request returns) may total at most this many times
#: ``max_body_bytes``: concurrent gzip bombs cost this much, not ``concurrency`` times
#: one bomb (issue 34: 2.59 GB at concurrency 16 before).
IN_FLIGHT_FACTOR = 2 * DECODED_FACTOR


class _Budget:
    """Bytes of answers a client holds at once, against a limit (one per client; the
    client's connections share its event loop, so no lock is needed)."""

    __slots__ = ("limit", "held", "peak")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        self.peak = 0

    def take(self, n: int) -> bool:
        """Hold ``n`` more bytes if they fit (False, and nothing held, if not)."""
        if self.held + n > self.limit:
            return False
        self.held += n
        self.peak = max(self.peak, self.held)
        return True

    def give(self, n: int) -> None:
        self.held -= n


@dataclass(frozen=True, slots=True)
class Response:
    """One HTTP answer: status code, headers (lower-case names; repeated headers
    joined with ``", "``) and the whole (de-chunked) body."""

    status: int
    headers: dict[str, str]
    body: bytes


class ConnectionFailed(OSError):
    """The connection broke, or the server's answer could not be read."""


class ResponseTooLarge(ConnectionFailed):
    """The answer passed the client's size cap (on the wire or decompressed)."""

    def __init__(self, what: str, limit: int) -> None:
        super().__init__(f"{what} larger than {limit:,} bytes")
        self.what = what
        self.limit = limit


def _inflate(body: bytes, wbits: int, limit: int) -> bytes:
    """Decompress ``body`` into at most ``limit`` bytes (:class:`ResponseTooLarge`
    beyond; ``zlib.error`` for a malformed or truncated stream)."""
    d = zlib.decompressobj(wbits)
    out = d.decompress(body, limit + 1)  # stops once the output passes the cap
    if len(out) <= limit:
        out += d.flush()
    if len(out) > limit:
        del out, d  # not kept alive by the exception's traceback (its frame's locals)
        raise ResponseTooLarge("the decompressed answer is", limit)
    if not d.eof:
        raise zlib.error("incomplete or truncated stream")
    return out


def _decode(body: bytes, headers: dict[str, str], limit: int) -> bytes:
    """Undo a gzip or deflate ``Content-Encoding`` (requests say ``Accept-Encoding:
    identity``, but a server may compress anyway) into at most ``limit`` bytes and drop
    the header; any other coding is left in place for the caller to refuse."""
    coding = headers.get("content-encoding", "").strip().lower()
    if coding in ("gzip", "x-gzip"):
        body = _inflate(body, 16 + zlib.MAX_WBITS, limit)
    elif coding == "deflate":  # zlib-wrapped per RFC 9110; some servers send it raw
        try:
            body = _inflate(body, zlib.MAX_WBITS, limit)
        except zlib.error:
            body = _inflate(body, -zlib.MAX_WBITS, limit)
    else:
        return body
    del headers["content-encoding"]
    return body


class _Conn(asyncio.Protocol):
    """One keep-alive connection: writes a request, parses one answer at a time."""

    __slots__ = ("transport", "parser", "waiter", "status", "headers", "chunks",
                 "got_bytes", "headers_done", "closed", "idle_since", "lost", "bodyless",
                 "keep_alive", "size", "max_body", "max_decoded", "budget", "held")

    def __init__(self, loop: asyncio.AbstractEventLoop, *, max_body: int = MAX_BODY_BYTES,
                 max_decoded: int = DECODED_FACTOR * MAX_BODY_BYTES,
                 budget: _Budget | None = None) -> None:
        self.size = 0  # body bytes of the current answer
        self.max_body = max_body
        self.max_decoded = max_decoded
        self.budget = budget or _Budget(IN_FLIGHT_FACTOR * max_body)
        self.held = 0  # bytes of the current answer counted in the budget
        self.transport: asyncio.Transport | None = None
        self.parser: Any = None
        self.waiter: asyncio.Future[Response] | None = None
        self.status = 0
        self.headers: dict[str, str] = {}
        self.chunks: list[bytes] = []
        self.got_bytes = False
        self.headers_done = False
        self.closed = False
        self.idle_since = 0.0
        self.bodyless = False  # the answer ends with its headers (CONNECT)
        self.keep_alive = False  # the answer allows reusing the connection
        self.lost: asyncio.Future[None] = loop.create_future()

    # -- asyncio.Protocol ---------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.got_bytes = True
        if self.waiter is None:  # bytes nobody asked for: the connection is unusable
            self.abort()
            return
        try:
            self.parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            self._fail(ConnectionFailed(f"malformed HTTP answer ({type(exc).__name__})"))
            self.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.lost.done():
            self.lost.set_result(None)
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        if exc is None and self.headers_done and "content-length" not in self.headers \
                and "chunked" not in self.headers.get("transfer-encoding", "").lower():
            self.on_message_complete()  # a body delimited by the connection's (clean) end
            return
        reason = type(exc).__name__ if exc is not None else "closed by the server"
        what = "before the answer" if not self.got_bytes else "during the answer"
        self._fail(ConnectionFailed(f"connection lost {what} ({reason})"))

    # -- httptools callbacks ------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        old = self.headers.get(key)
        self.headers[key] = text if old is None else f"{old}, {text}"

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self.headers_done = True
        if self.bodyless:
            self.on_message_complete()
            return
        length = self.headers.get("content-length", "").strip()
        if length.isdigit() and int(length) > self.max_body:  # refused before it arrives
            self._too_large(ResponseTooLarge("the answer is", self.max_body))

    def on_body(self, body: bytes) -> None:
        self.size += len(body)
        if self.size > self.max_body:
            self._too_large(ResponseTooLarge("the answer is", self.max_body))
            return
        if not self.budget.take(len(body)):
            self._too_large(ResponseTooLarge("the answers in flight are", self.budget.limit))
            return
        self.held += len(body)
        self.chunks.append(body)

    def release(self) -> None:
        """Give back what the current answer held (its request has returned)."""
        self.budget.give(self.held)
        self.held = 0

    def _too_large(self, exc: ResponseTooLarge) -> None:
        """Fail the request and drop the connection (the rest is never read)."""
        self.chunks = []
        self._fail(exc)
        self.abort()

    def on_message_complete(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            # read now: llhttp resets its flags once the message is complete
            self.keep_alive = self.parser.should_keep_alive()
            body = self.chunks[0] if len(self.chunks) == 1 else b"".join(self.chunks)
            self.chunks = []
            try:
                # the compressed bytes held are given back; the decoded ones taken
                free = self.budget.limit - self.budget.held + self.held
                coded = "content-encoding" in self.headers
                body = _decode(body, self.headers, min(self.max_decoded, free))
                if coded:
                    self.budget.give(self.held)
                    self.held = 0
                    if not self.budget.take(len(body)):  # pragma: no cover - within free
                        raise ResponseTooLarge("the answers in flight are", self.budget.limit)
                    self.held = len(body)
            except zlib.error:
                waiter.set_exception(ConnectionFailed("malformed compressed answer"))
                return
            except ResponseTooLarge as exc:
                if exc.limit < self.max_decoded:  # cut by the other answers held
                    exc = ResponseTooLarge("the answers in flight are", self.budget.limit)
                # without its traceback: the frames below held the decompressed bytes
                waiter.set_exception(exc.with_traceback(None))
                return
            waiter.set_result(Response(self.status, self.headers, body))

    # -- use ----------------------------------------------------------------------------
    def send(self, data: bytes, waiter: asyncio.Future[Response]) -> None:
        self.waiter = waiter
        self.parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.headers = {}
        self.chunks = []
        self.size = 0
        self.got_bytes = False
        self.headers_done = False
        self.keep_alive = False
        if self.transport is None:  # pragma: no cover - send() follows connection_made
            raise ConnectionFailed("the connection is not open")
        self.transport.write(data)

    def reusable(self) -> bool:
        """Answer complete and the server keeps the connection open."""
        return self.keep_alive and not self.closed

    def alive(self) -> bool:
        """An idle connection's socket has nothing to read (no FIN, RST or stray bytes
        arrived that the event loop has not processed yet)."""
        sock = self.transport.get_extra_info("socket") if self.transport else None
        if sock is None:
            return False
        poller = select.poll()  # not select.select: no FD_SETSIZE limit
        try:
            poller.register(sock.fileno(), select.POLLIN)
            return not poller.poll(0)
        except (OSError, ValueError):
            return False

    def _fail(self, exc: Exception) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()


class HTTPClient:
    """POST to one URL over a bounded keep-alive pool (see the module doc).

    Parameters
    ----------
    url : str
        ``http://`` or ``https://`` target of every request.
    concurrency : int
        Most requests in flight and connections open.
    timeout_s : float
        Total time for one ``post`` (connect included).
    headers : dict
        Sent with every request (``Host`` and ``Content-Length`` are added).
    proxy : str or None
        ``http://[user:pass@]host:port`` proxy, or ``None`` for direct connections.
    ssl_context : ssl.SSLContext or None
        For ``https`` (default: :func:`ssl.create_default_context`).
    keepalive_s : float
        Idle seconds after which a connection is not reused.
    max_body_bytes : int
        Largest answer body read (:data:`MAX_BODY_BYTES`); a compressed one may decode
        to :data:`DECODED_FACTOR` times this, and all answers held at once may total
        :data:`IN_FLIGHT_FACTOR` times this. Beyond: :class:`ResponseTooLarge`.
    """

    def __init__(self, url: str, *, concurrency: int, timeout_s: float,
                 headers: dict[str, str], proxy: str | None = None,
                 ssl_context: ssl.SSLContext | None = None, keepalive_s: float = 4.0,
                 max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self.max_body_bytes = max_body_bytes
        #: the answers held at once (:data:`IN_FLIGHT_FACTOR`); ``budget.peak`` the most
        self.budget = _Budget(IN_FLIGHT_FACTOR * max_body_bytes)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"`url` must be an http:// or https:// URL, got {url!r}")
        self.timeout_s = timeout_s
        self.keepalive_s = keepalive_s
        self._tls = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._tls else 80)
        self._ssl = (ssl_context or ssl.create_default_context()) if self._tls else None
        authority = f"[{self._host}]" if ":" in self._host else self._host
        if parts.port is not None:
            authority = f"{authority}:{parts.port}"
        target = parts.path or "/"
        if parts.query:
            target = f"{target}?{parts.query}"
        extra: dict[str, str] = {}
        self._proxy: tuple[str, int] | None = None
        self._connect_head = b""
        if proxy is not None:
            p = split_proxy(proxy)
            self._proxy = (p.hostname or "", p.port or 80)
            auth = {}
            if p.username is not None:
                cred = f"{unquote(p.username)}:{unquote(p.password or '')}".encode()
                auth["Proxy-Authorization"] = f"Basic {base64.b64encode(cred).decode()}"
            if self._tls:  # tunnel: the proxy sees only CONNECT host:port
                head = f"CONNECT {authority_port(self._host, self._port)} HTTP/1.1\r\n" \
                       f"Host: {authority_port(self._host, self._port)}\r\n"
                head += "".join(f"{k}: {v}\r\n" for k, v in auth.items())
                self._connect_head = (head + "\r\n").encode("latin-1")
            else:  # absolute-form request through the proxy
                target = f"http://{authority}{target}"
                extra = auth
        lines = [f"POST {target} HTTP/1.1", f"Host: {authority}"]
        lines += [f"{k}: {v}" for k, v in {**headers, **extra}.items()]
        self._head = ("\r\n".join(lines) + "\r\nContent-Length: ").encode("latin-1")
        self._slots: asyncio.Semaphore | None = None
        self._concurrency = concurrency
        self._idle: list[_Conn] = []
        self._open: set[_Conn] = set()
        self.closed = False

    async def post(self, body: bytes) -> Response:
        """Send ``body``; the answer, whatever its status (redirects not followed).

        Raises
        ------
        TimeoutError
            No complete answer within ``timeout_s``.
        ConnectionFailed, OSError
            The connection could not be opened, broke, or the answer was malformed.
        """
        if self.closed:
            raise ConnectionFailed("the HTTP client is closed")
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._concurrency)
        data = b"%s%d\r\n\r\n%s" % (self._head, len(body), body)
        async with self._slots, asyncio.timeout(self.timeout_s):
            conn = self._idle_conn() or await self._connect()
            return await self._exchange(conn, data)

    def _idle_conn(self) -> _Conn | None:
        idle = self._idle
        limit = time.monotonic() - self.keepalive_s
        while idle:
            conn = idle.pop()
            if not conn.closed and conn.idle_since > limit and conn.alive():
                return conn
            self._drop(conn)
        return None

    async def _exchange(self, conn: _Conn, data: bytes) -> Response:
        waiter: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        ok = False
        try:
            conn.send(data, waiter)
            resp = await waiter
            ok = True
            return resp
        finally:
            conn.waiter = None
            conn.release()
            if ok and conn.reusable() and not self.closed:
                conn.idle_since = time.monotonic()
                self._idle.append(conn)
            else:
                self._drop(conn)

    async def _connect(self) -> _Conn:
        loop = asyncio.get_running_loop()
        conn = _Conn(loop, max_body=self.max_body_bytes,
                     max_decoded=DECODED_FACTOR * self.max_body_bytes, budget=self.budget)
        host, port = self._proxy or (self._host, self._port)
        tunnel = self._tls and self._proxy is not None
        try:
            transport, _ = await loop.create_connection(
                lambda: conn, host, port,
                ssl=None if tunnel else self._ssl,
                server_hostname=self._host if self._ssl is not None and not tunnel else None)
            self._open.add(conn)
            if tunnel:
                await self._tunnel(conn, transport)
        except BaseException:
            self._drop(conn)
            raise
        return conn

    async def _tunnel(self, conn: _Conn, transport: asyncio.BaseTransport) -> None:
        """CONNECT through the proxy, then TLS with the target over that tunnel."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[Response] = loop.create_future()
        conn.bodyless = True  # the answer to CONNECT ends with its headers
        conn.send(self._connect_head, waiter)
        try:
            resp = await waiter
        finally:
            conn.bodyless = False
            conn.waiter = None
            conn.release()
        if resp.status != 200:
            raise ConnectionFailed(f"the proxy refused the tunnel (HTTP {resp.status})")
        if self._ssl is None:  # pragma: no cover - a tunnel is only made for https
            raise ConnectionFailed("a CONNECT tunnel needs an https target")
        tls = await loop.start_tls(transport, conn, self._ssl,  # type: ignore[arg-type]
                                   server_hostname=self._host)
        if tls is None:  # pragma: no cover - only for a transport closed meanwhile
            raise ConnectionFailed("the connection closed during the TLS handshake")
        conn.transport = tls  # type: ignore[assignment]
        conn.parser = None

    def _drop(self, conn: _Conn) -> None:
        conn.abort()
        self._open.discard(conn)

    async def aclose(self) -> None:
        """Close every connection (an in-flight ``post`` fails); later posts fail."""
        self.closed = True
        conns = list(self._open)
        self._idle.clear()
        for conn in conns:
            self._drop(conn)
        if conns:  # let the transports finish closing inside this loop
            await asyncio.wait([c.lost for c in conns], timeout=1.0)


def split_proxy(proxy: str) -> SplitResult:
    """``http://[user:pass@]host:port`` (scheme optional) split; :class:`ValueError`,
    naming the scheme and the host but never the credentials, for any other proxy (the
    client speaks plain-http proxies only)."""
    p = urlsplit(proxy if "//" in proxy else f"http://{proxy}")
    if p.scheme != "http" or not p.hostname:
        raise ValueError(f"a {p.scheme}:// proxy ({p.hostname or '?'}); only http:// "
                         "proxies are supported")
    return p


def authority_port(host: str, port: int) -> str:
    """``host:port`` with an IPv6 literal in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
