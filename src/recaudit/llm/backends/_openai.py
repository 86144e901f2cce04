"""Any OpenAI-compatible chat-completions endpoint (vLLM, llama.cpp, Ollama, hosted).

Reliability policy (documented in ``docs/runner.md``):

- at most ``concurrency`` requests in flight (a semaphore) and at most
  ``rate_limit_per_s`` request starts per second (a token bucket with burst 1, every
  attempt takes a token);
- retried: HTTP 408, 409, 429 and 5xx, timeouts, connection errors, bodies that are
  not JSON or have no usable ``choices``; up to ``max_retries`` retries with
  exponential backoff and full jitter, ``uniform(0, min(backoff_max_s,
  backoff_base_s * 2**attempt))``, or the server's ``Retry-After`` (seconds or an
  HTTP date, capped at ``retry_after_max_s``) when it sends one;
- not retried: other 4xx (bad request, bad key, unknown model): the request itself is
  wrong and repeating it cannot help;
- giving up raises :class:`~recaudit.exceptions.EndpointError` naming the URL and the
  last error, never the API key; the runner records it as a ``failed`` row.

The API key is read from the environment variable NAMED by ``api_key_env`` and only
ever placed in the ``Authorization`` header; any text that leaves this module (error
messages, response text) is passed through a redaction that replaces the key.
Redirects are not followed (the key is never sent to another URL): a 3xx fails at once.

HTTP goes through recaudit's own small HTTP/1.1 client (``_http.py``:
``asyncio.Protocol`` + the httptools C parser): one client per backend and event loop,
created on first use inside the running loop (a backend may be built outside any loop
and used by several ``asyncio.run`` calls in turn), keep-alive connections, at most
``concurrency`` of them. The client closes with ``aclose()`` or, at the latest, when
its loop shuts down (``asyncio.run`` finalises the backend's closer generator). Why
not a library: ``docs/decisions/``, "The HTTP client is our own (asyncio.Protocol +
httptools)".
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import os
import re
import ssl
import time
import urllib.request
from collections.abc import AsyncGenerator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import SplitResult, urlsplit, urlunsplit

import numpy as np

from ..._limits import DEFAULT_CONCURRENCY
from ...exceptions import ConfigError, EndpointError, InputError, MissingExtraError
from .._types import ChatRequest, ChatResponse

__all__ = ["OpenAIBackend", "choice_probabilities_from_logprobs"]

#: The JSON key whose value is the answer slot (the default template's).
ANSWER_KEY = "article_number"
RETRY_STATUS = frozenset({408, 409, 429})
#: Idle seconds after which a keep-alive connection is not reused: below the 5 s idle
#: timeout of uvicorn (llama-cpp-python's server), so we never reuse one it is closing.
KEEPALIVE_S = 4.0
USER_AGENT = "recaudit/0.1 (positional-bias audit)"
MSG_CERT = (
    "endpoint {url}: its TLS certificate failed verification ({why}); not retried. "
    "If the endpoint uses a private CA, point SSL_CERT_FILE at that CA's PEM bundle"
)
MSG_CODING = (
    "endpoint {url} answered with Content-Encoding {coding!r}, which recaudit does not "
    "decode (it asks for identity; gzip and deflate are decoded); not retried: configure "
    "the server or proxy in front of it not to compress API responses"
)
MSG_TOO_LARGE = (
    "endpoint {url}: {what}; not retried (a chat completion is kilobytes: the server or "
    "a proxy in front of it sent something else). Recorded as a failed evaluation; "
    "`--resume` retries it once the endpoint is fixed"
)
MSG_PROXY = (
    "the environment's `{var}` names {what}: set `{var}` to http://HOST:PORT, or add "
    "{base} to `no_proxy` to connect directly"
)
MSG_NO_KEY = (
    "environment variable `{env}` (named by `api_key_env`) is not set; export the API "
    "key in it (the config names the variable, never the key)"
)
MSG_NO_KEY_HIDDEN = (
    "the environment variable named by `api_key_env` is not set (the name is not shown: "
    "it looks like a key rather than a variable name); export the API key in a variable "
    "such as OPENAI_API_KEY and name that variable in `api_key_env`"
)
MSG_KEY_ENV_NAME = (
    "`{field}` must be the NAME of the environment variable that holds the API key "
    "(letters, digits and _, e.g. OPENAI_API_KEY), never the key itself; the value given "
    "is not a variable name and is not shown: export the key (`export "
    "OPENAI_API_KEY=...`) and set {field} = \"OPENAI_API_KEY\""
)
MSG_URL_SCHEME = (
    "`{field}` must start with http:// or https:// and name a host, e.g. "
    "http://127.0.0.1:8080/v1 (the value given is not shown: it may be a key, which "
    "belongs in an environment variable named by `api_key_env`)"
)
MSG_URL_CREDENTIALS = (
    "`{field}` holds credentials (a user:password@ part); recaudit takes no keys from "
    "URLs (they would end up in run folders, reports and logs): set `{field}` to "
    "{public} and put the key in an environment variable named by `api_key_env` (e.g. "
    "api_key_env = \"OPENAI_API_KEY\")"
)
MSG_URL_QUERY = (
    "`{field}` has a query string or fragment (`?...`, `#...`): requests go to "
    "{public}/chat/completions, which it would break, and a key in it (`?api_key=...`) "
    "would end up in run folders, reports and logs; set `{field}` to {public} and put "
    "any key in an environment variable named by `api_key_env`"
)
#: A portable environment variable name (what a shell can export).
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def public_url(parts: SplitResult) -> str:
    """``scheme://host[:port]/path`` of a split URL: no user:password, query or
    fragment."""
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:  # a port that is not a number
        port = None
    if port is not None:
        host = f"{host}:{port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def check_base_url(base_url: object, field: str = "base_url") -> str:
    """``base_url`` without a trailing slash, or a :class:`ConfigError` naming
    ``field`` and the fix when it is not an http(s) URL or carries credentials, a
    query string or a fragment. No message shows a value that may hold a key."""
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise ConfigError(MSG_URL_SCHEME.format(field=field))
    try:
        parts = urlsplit(base_url)
        parts.port  # noqa: B018 -- raises on a port that is not a number
    except ValueError:
        raise ConfigError(MSG_URL_SCHEME.format(field=field)) from None
    if not parts.hostname:
        raise ConfigError(MSG_URL_SCHEME.format(field=field))
    if "@" in parts.netloc:
        raise ConfigError(MSG_URL_CREDENTIALS.format(field=field, public=public_url(parts)))
    if parts.query or parts.fragment or "?" in base_url or "#" in base_url:
        raise ConfigError(MSG_URL_QUERY.format(field=field, public=public_url(parts)))
    return base_url.rstrip("/")


def looks_like_key(value: str) -> bool:
    """A value of ``api_key_env`` that is more likely a pasted key than a variable
    name (such a value is never printed): not a portable name, long (>= 24
    characters), or with digits but not in the UPPER_CASE style of variable names."""
    if not _ENV_NAME.fullmatch(value) or len(value) >= 24:
        return True
    return any(c.isdigit() for c in value) and not value.isupper()


def check_key_env(value: object, field: str = "api_key_env") -> str | None:
    """``api_key_env`` validated: ``None``, or a portable variable name (a
    :class:`ConfigError` that does not show the value otherwise)."""
    if value is None:
        return None
    if not isinstance(value, str) or not _ENV_NAME.fullmatch(value):
        raise ConfigError(MSG_KEY_ENV_NAME.format(field=field))
    return value


class _RetryableError(Exception):
    """One failed attempt that may be retried (internal)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class _TokenBucket:
    """Start at most ``rate`` attempts per second (burst 1), fair in arrival order."""

    def __init__(self, rate: float) -> None:
        self._interval = 1.0 / rate
        self._next = 0.0

    async def acquire(self) -> None:
        now = time.monotonic()
        start = max(self._next, now)
        self._next = start + self._interval
        if start > now:
            await asyncio.sleep(start - now)


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP date)."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        current = datetime.now(UTC).timestamp() if now is None else now
        seconds = when.timestamp() - current
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def choice_probabilities_from_logprobs(
    content: list[dict[str, Any]] | None, identifiers: tuple[str, ...]
) -> tuple[tuple[float, ...], float] | None:
    """Identifier probabilities at the answer slot from OpenAI ``logprobs.content``.

    The answer slot is the first generated token AFTER the text ``article_number``
    (the template's answer key; anywhere in the output when the key never appears)
    whose text, stripped of spaces and quotes, is one of ``identifiers`` -- so an
    identifier-like token before the key (e.g. a "1" in a preamble) is not taken.
    Its ``top_logprobs`` are mapped to identifiers the same way (several spellings
    of one identifier, e.g. ``"3"`` and
    ``" 3"``, are summed), renormalised over the identifiers.

    Returns
    -------
    (probs, outside_mass) or None
        ``probs[p-1]`` for position p; ``outside_mass`` = top-logprob mass on other
        tokens plus the mass beyond the returned top list. An identifier absent
        from the top list gets probability 0: its true mass is part of
        ``outside_mass`` (unknown), so request enough ``top_logprobs`` (>= k).
        ``None`` when no token
        matches an identifier (e.g. multi-token identifiers) or no top list is given.
    """
    if not content:
        return None
    index = {ident: p for p, ident in enumerate(identifiers)}
    texts = [str(tok.get("token", "")) for tok in content]
    joined = "".join(texts)
    key_end = joined.find(ANSWER_KEY)
    start = 0
    if key_end >= 0:
        key_end += len(ANSWER_KEY)
        seen = 0
        while start < len(texts) and seen + len(texts[start]) <= key_end:
            seen += len(texts[start])
            start += 1
    for tok in content[start:]:
        text = str(tok.get("token", "")).strip().strip("\"'")
        if text not in index:
            continue
        tops = tok.get("top_logprobs") or []
        mass = np.zeros(len(identifiers))
        for top in tops:
            t = str(top.get("token", "")).strip().strip("\"'")
            lp = top.get("logprob")
            if t in index and isinstance(lp, int | float) and math.isfinite(lp):
                mass[index[t]] += math.exp(lp)
        total = float(mass.sum())
        if total <= 0:
            return None
        return tuple(float(x) for x in mass / total), max(0.0, 1.0 - total)
    return None


class _LoopSession:
    """The HTTP session of one event loop and its in-flight bound (internal)."""

    __slots__ = ("loop", "http", "slots", "closer")

    def __init__(self, loop: asyncio.AbstractEventLoop, http: Any, concurrency: int) -> None:
        self.loop = loop
        self.http = http
        self.slots = asyncio.Semaphore(concurrency)
        self.closer: AsyncGenerator[None, None] = _close_at_loop_shutdown(http)


async def _close_at_loop_shutdown(http: Any) -> AsyncGenerator[None, None]:
    """Parked at its ``yield`` while the session lives; finalising it closes the session.

    Once iterated, an async generator is registered with its event loop, and
    ``asyncio.run`` (like ``asyncio.Runner``) finalises every such generator before it
    closes the loop: the session's connections are then closed inside the loop that
    owns them, even when the caller never awaited :meth:`OpenAIBackend.aclose`.
    """
    try:
        yield
    finally:
        if not http.closed:
            await http.aclose()


class OpenAIBackend:
    """A :class:`~recaudit.llm.Backend` for an OpenAI-compatible HTTP endpoint.

    Parameters
    ----------
    base_url : str
        Endpoint root including the API version, e.g. ``http://127.0.0.1:8080/v1``;
        requests go to ``{base_url}/chat/completions``.
    model : str
        The ``model`` field sent with each request.
    api_key_env : str or None
        NAME of the environment variable holding the API key (``None``: no key).
    concurrency : int
        Maximum requests in flight (and keep-alive connections).
    rate_limit_per_s : float or None
        Maximum request starts per second (``None``: unlimited).
    timeout_s : float
        Per-attempt timeout (connect, send and read the whole answer).
    max_retries : int
        Retries after the first attempt before giving up.
    backoff_base_s, backoff_max_s : float
        Exponential backoff: attempt a waits ``uniform(0, min(max, base * 2**a))``.
    retry_after_max_s : float
        Longest ``Retry-After`` honoured.
    top_logprobs : int
        Alternatives requested per token when ``request.choice_probabilities``.
    rng : numpy.random.Generator or int or None
        Source of the backoff jitter.
    name : str or None
        Label (default: ``model``).
    max_response_bytes : int
        Largest answer read (16 MiB); a gzip/deflate answer may decompress to 4 times
        this. A larger one fails the call at once (not retried), naming the cap.

    Notes
    -----
    A proxy named by ``HTTP_PROXY`` / ``HTTPS_PROXY`` (honouring ``NO_PROXY``) is
    read once, when the backend is built, not per request.

    Examples
    --------
    >>> b = OpenAIBackend("http://127.0.0.1:8080/v1", "smollm2")  # doctest: +SKIP
    >>> resp = await b.complete(request)  # doctest: +SKIP
    >>> await b.aclose()  # doctest: +SKIP
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        rate_limit_per_s: float | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 6,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        retry_after_max_s: float = 120.0,
        top_logprobs: int = 20,
        rng: np.random.Generator | int | None = None,
        name: str | None = None,
        max_response_bytes: int | None = None,
    ) -> None:
        try:
            import httptools  # noqa: F401  (the response parser of ``_http``)
        except ImportError as exc:  # pragma: no cover - httptools ships with the llm extra
            raise MissingExtraError("httptools", "llm") from exc
        args = _openai_iv(base_url, model, api_key_env, concurrency, rate_limit_per_s,
                          timeout_s, max_retries, backoff_base_s, backoff_max_s)
        self.base_url = args["base_url"]
        self.url = f"{self.base_url}/chat/completions"
        self.model = model
        self.name = name or model
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.retry_after_max_s = retry_after_max_s
        self.top_logprobs = top_logprobs
        if max_response_bytes is not None and (
                isinstance(max_response_bytes, bool) or not isinstance(max_response_bytes, int)
                or max_response_bytes < 1):
            raise InputError(f"`max_response_bytes` must be an integer >= 1 or None, got "
                             f"{max_response_bytes!r}")
        self.max_response_bytes = max_response_bytes
        self._secret: str | None = args["key"]
        self._rng = np.random.default_rng(rng)
        self._bucket = None if rate_limit_per_s is None else _TokenBucket(rate_limit_per_s)
        self._proxy: str | None = args["proxy"]
        self._headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT,
                         "Accept-Encoding": "identity"}
        if self._secret is not None:
            self._headers["Authorization"] = f"Bearer {self._secret}"
        self._session: _LoopSession | None = None

    def __repr__(self) -> str:
        return f"OpenAIBackend(base_url={self.base_url!r}, model={self.model!r})"

    def describe(self) -> dict[str, Any]:
        """What answered, for the run manifest (``run.json``): never the key.

        ``base_url`` is shown as ``scheme://host:port/path`` (it cannot carry
        credentials, a query or a fragment: :func:`check_base_url`).
        """
        public = public_url(urlsplit(self.base_url))
        return {"backend": "openai", "name": self.name, "model_id": self.model,
                "base_url": self._redact(public)}

    def _redact(self, text: str) -> str:
        if self._secret:
            text = text.replace(self._secret, "***")
        return text

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body sent for ``request``."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        if request.choice_probabilities:
            body["logprobs"] = True
            body["top_logprobs"] = self.top_logprobs
        if request.response_format is not None:
            body["response_format"] = request.response_format
        return body

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.retry_after_max_s)
        cap = min(self.backoff_max_s, self.backoff_base_s * 2.0**attempt)
        return float(self._rng.uniform(0.0, cap))

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Send ``request``, retrying transient failures.

        Raises
        ------
        EndpointError
            After ``max_retries`` retries, or at once on a non-retryable 4xx or a
            redirect. The message names the URL and the last error; ``exc.retries``
            holds the count.
        """
        # encoded once per call (not per retry), compact UTF-8
        body = json.dumps(self.payload(request), ensure_ascii=False, separators=(",", ":"),
                          allow_nan=False).encode()
        t0 = time.perf_counter()
        last = ""
        for attempt in range(self.max_retries + 1):
            try:
                data = await self._attempt(body)
                return self._response(data, request, time.perf_counter() - t0, attempt)
            except _RetryableError as exc:
                last, retry_after = str(exc), exc.retry_after
            # backoff outside the ``except``: the failed attempt's traceback (its frames
            # hold the answer, up to 64 MiB for a gzip bomb) is freed while waiting
            if attempt == self.max_retries:
                break
            await asyncio.sleep(self._backoff(attempt, retry_after))
        err = EndpointError(self._redact(
            f"endpoint {self.url} failed after {self.max_retries + 1} attempts "
            f"(last error: {last})"
        ))
        err.retries = self.max_retries  # type: ignore[attr-defined]
        raise err

    async def _loop_session(self) -> _LoopSession:
        """This loop's session, opened on first use in the loop (see the module doc)."""
        loop = asyncio.get_running_loop()
        current = self._session
        if current is not None and current.loop is loop and not current.http.closed:
            return current
        # a session of another (finished) loop is left to that loop's shutdown
        http = self._open_http()
        current = self._session = _LoopSession(loop, http, self.concurrency)
        await current.closer.__anext__()  # registers it for finalisation by the loop
        return current

    def _open_http(self) -> Any:
        """A new HTTP client for the running loop: ``post(body) -> _http.Response``,
        ``aclose()``, ``closed`` (the seam ``benchmarks/bench_runner.py --client``
        uses to put other clients through the same runner)."""
        from ._http import MAX_BODY_BYTES, HTTPClient

        return HTTPClient(self.url, concurrency=self.concurrency, timeout_s=self.timeout_s,
                          headers=self._headers, proxy=self._proxy, keepalive_s=KEEPALIVE_S,
                          max_body_bytes=self.max_response_bytes or MAX_BODY_BYTES)

    async def _attempt(self, body: bytes) -> dict[str, Any]:
        """One POST: the decoded completion, or an error (``_RetryableError`` for what
        a retry may cure, :class:`EndpointError` for what it cannot)."""
        if self._bucket is not None:
            await self._bucket.acquire()
        session = self._session
        if session is None or session.loop is not asyncio.get_running_loop() \
                or session.http.closed:
            session = await self._loop_session()
        async with session.slots:
            resp = await self._post(session, body)
        self._check_status(resp)
        return _completion(resp.body)

    async def _post(self, session: _LoopSession, body: bytes) -> Any:
        """Send ``body``; transport failures as retryable or final errors."""
        try:
            return await session.http.post(body)
        except TimeoutError:  # before OSError: TimeoutError is one
            raise _RetryableError("timeout") from None
        except ssl.SSLCertVerificationError as exc:  # not transient: fail at once
            raise EndpointError(MSG_CERT.format(url=self.url,
                                                why=exc.verify_message)) from None
        except OSError as exc:  # _http.ConnectionFailed, refused, reset, TLS
            from ._http import ResponseTooLarge  # (httptools: imported on first use)

            if isinstance(exc, ResponseTooLarge):  # the same on a retry: fail at once
                raise EndpointError(MSG_TOO_LARGE.format(url=self.url, what=exc)) from None
            raise _RetryableError(f"connection error ({type(exc).__name__})") from None

    def _check_status(self, resp: Any) -> None:
        """Retryable for 429/5xx, final for another 4xx, a redirect or an encoding."""
        status = resp.status
        coding = resp.headers.get("content-encoding", "identity").strip().lower()
        if coding != "identity":  # _http decodes gzip and deflate
            raise EndpointError(MSG_CODING.format(url=self.url, coding=coding))
        if status in RETRY_STATUS or status >= 500:
            raise _RetryableError(f"HTTP {status}",
                                  parse_retry_after(resp.headers.get("retry-after")))
        if status >= 400:
            snippet = self._redact(resp.body.decode("utf-8", "replace"))[:300]
            raise EndpointError(
                f"endpoint {self.url} rejected the request with HTTP {status} (not "
                f"retried: check the model name, API key variable and request options): "
                f"{snippet}"
            )
        if status >= 300:
            where = self._redact(resp.headers.get("location", "?"))
            raise EndpointError(
                f"endpoint {self.url} answered HTTP {status} (redirect to {where}); "
                f"redirects are not followed: set `base_url` to the final address"
            )

    def _response(self, data: dict[str, Any], request: ChatRequest, latency: float,
                  retries: int) -> ChatResponse:
        first = data["choices"][0]
        raw_usage = data.get("usage")
        usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
        probs = None
        outside = None
        if request.choice_probabilities:
            logprobs = first.get("logprobs")
            content = logprobs.get("content") if isinstance(logprobs, dict) else None
            mapped = choice_probabilities_from_logprobs(content, request.identifiers)
            if mapped is not None:
                probs, outside = mapped
        return ChatResponse(
            text=self._redact(first["message"]["content"]),
            prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
            completion_tokens=_int_or_none(usage.get("completion_tokens")),
            latency_s=latency,
            choice_probs=probs,
            outside_mass=outside,
            retries=retries,
            extra={"finish_reason": first.get("finish_reason")},
        )

    def response_from_body(self, data: object, request: ChatRequest) -> ChatResponse:
        """The :class:`ChatResponse` of a chat-completion body obtained elsewhere (a
        provider's batch output file): the same checks and the same parsing as a live
        answer (text, usage, choice probabilities from ``logprobs``), latency 0.

        Raises
        ------
        EndpointError
            When ``data`` is not a chat completion with ``choices[0].message.content``.
        """
        try:
            checked = _checked_completion(data)
        except _RetryableError as exc:
            raise EndpointError(str(exc)) from None
        return self._response(checked, request, 0.0, 0)

    async def aclose(self) -> None:
        """Close this loop's HTTP session (a later call opens a new one)."""
        session, self._session = self._session, None
        if session is None:
            return
        if session.loop is asyncio.get_running_loop():
            await session.closer.aclose()  # runs its ``finally``: closes the session
        # else: the session belongs to another loop, which closes it at its shutdown


def _completion(raw: bytes) -> dict[str, Any]:
    """The decoded body of a 2xx answer; a malformed one is retryable."""
    try:
        data = json.loads(raw)
    except ValueError:
        raise _RetryableError("malformed JSON body") from None
    return _checked_completion(data)


def _checked_completion(data: object) -> dict[str, Any]:
    """``data`` when it is a chat completion with ``choices[0].message.content``."""
    if not isinstance(data, dict):
        raise _RetryableError("malformed JSON body (not an object)")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise _RetryableError("empty `choices` in the response")
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict) or not isinstance(message.get("content"), str):
        raise _RetryableError("no `choices[0].message.content` in the response")
    return data


def _env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``None``: direct).

    Raises :class:`ConfigError` when it is not an ``http://`` proxy (the only kind the
    client speaks: a ``https://`` or ``socks5://`` proxy would otherwise fail on the
    first request); the message names the variable and the proxy's host, never its
    credentials.
    """
    parts = urlsplit(url)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if proxy is None or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    from ._http import split_proxy

    try:
        split_proxy(proxy)
    except ValueError as exc:
        raise ConfigError(MSG_PROXY.format(var=f"{parts.scheme}_proxy", what=exc,
                                           base=parts.hostname)) from None
    return proxy


def _int_or_none(value: object) -> int | None:
    """A token count as reported, or ``None`` when it is not a plausible one (not an
    int, negative, or beyond 64 bits: no store could hold it)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63:
        return value
    return None


def _openai_iv(base_url: str, model: str, api_key_env: str | None, concurrency: int,
               rate_limit_per_s: float | None, timeout_s: float, max_retries: int,
               backoff_base_s: float, backoff_max_s: float) -> dict[str, Any]:
    base_url = check_base_url(base_url)
    api_key_env = check_key_env(api_key_env)
    if not isinstance(model, str) or not model:
        raise InputError("`model` must be a non-empty string (the endpoint's model name)")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise InputError(f"`concurrency` must be an integer >= 1, got {concurrency!r}")
    if rate_limit_per_s is not None and not rate_limit_per_s > 0:
        raise InputError(f"`rate_limit_per_s` must be > 0 or None, got {rate_limit_per_s!r}")
    if not timeout_s > 0:
        raise InputError(f"`timeout_s` must be > 0, got {timeout_s!r}")
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise InputError(f"`max_retries` must be an integer >= 0, got {max_retries!r}")
    if backoff_base_s < 0 or backoff_max_s < 0:
        raise InputError("`backoff_base_s` and `backoff_max_s` must be >= 0")
    key = None
    if api_key_env is not None:
        key = os.environ.get(api_key_env)
        if not key:
            raise ConfigError(MSG_NO_KEY_HIDDEN if looks_like_key(api_key_env)
                              else MSG_NO_KEY.format(env=api_key_env))
    return {"base_url": base_url, "key": key, "proxy": _env_proxy(base_url)}
