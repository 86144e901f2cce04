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
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import os
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from ...exceptions import ConfigError, EndpointError, InputError, MissingExtraError
from .._types import ChatRequest, ChatResponse

__all__ = ["OpenAIBackend", "choice_probabilities_from_logprobs"]

#: The JSON key whose value is the answer slot (the default template's).
ANSWER_KEY = "article_number"
RETRY_STATUS = frozenset({408, 409, 429})
#: Connections per httpx pool (see ``OpenAIBackend.__init__``).
POOL_SIZE = 2
MSG_NO_KEY = (
    "environment variable `{env}` (named by `api_key_env`) is not set; export the API "
    "key in it (the config names the variable, never the key)"
)


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
        Maximum requests in flight.
    rate_limit_per_s : float or None
        Maximum request starts per second (``None``: unlimited).
    timeout_s : float
        Per-attempt timeout.
    max_retries : int
        Retries after the first attempt before giving up.
    transport : httpx.AsyncBaseTransport or None
        Transport override (fault injection with ``httpx.MockTransport``).
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

    Examples
    --------
    >>> b = OpenAIBackend("http://127.0.0.1:8080/v1", "smollm2")  # doctest: +SKIP
    >>> resp = await b.complete(request)  # doctest: +SKIP
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = None,
        concurrency: int = 8,
        rate_limit_per_s: float | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 6,
        transport: Any = None,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        retry_after_max_s: float = 120.0,
        top_logprobs: int = 20,
        rng: np.random.Generator | int | None = None,
        name: str | None = None,
    ) -> None:
        try:
            import httpx
        except ImportError as exc:  # pragma: no cover - httpx ships with the llm extra
            raise MissingExtraError("httpx", "llm") from exc
        args = _openai_iv(base_url, model, api_key_env, concurrency, rate_limit_per_s,
                          timeout_s, max_retries, backoff_base_s, backoff_max_s)
        self.base_url = args["base_url"]
        self.url = f"{self.base_url}/chat/completions"
        self.model = model
        self.name = name or model
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.retry_after_max_s = retry_after_max_s
        self.top_logprobs = top_logprobs
        self._secret: str | None = args["key"]
        self._rng = np.random.default_rng(rng)
        self._bucket = None if rate_limit_per_s is None else _TokenBucket(rate_limit_per_s)
        headers = {"Content-Type": "application/json"}
        if self._secret is not None:
            headers["Authorization"] = f"Bearer {self._secret}"
        # One long-lived client set per backend (never per call), HTTP/1.1 keep-alive,
        # ``concurrency`` connections in all. httpcore scans every pooled connection on
        # each request and response (O(pool size) CPU per call), so the connections are
        # sharded over pools of POOL_SIZE (2 measured cheapest: benchmarks/README.md).
        n_pools = math.ceil(concurrency / POOL_SIZE)
        ssl_context = httpx.create_ssl_context()  # ~50 ms each: build one, share it
        self._clients = [
            httpx.AsyncClient(
                verify=ssl_context,
                timeout=httpx.Timeout(timeout_s),
                headers=headers,
                transport=transport,
                http1=True,
                http2=False,  # one request per connection at a time: no h2 multiplexing
                # keep-alive with httpx's 5 s idle expiry (below common server timeouts)
                limits=httpx.Limits(max_connections=POOL_SIZE,
                                    max_keepalive_connections=POOL_SIZE),
            )
            for _ in range(n_pools)
        ]
        # one slot per allowed in-flight request, each bound to a pool
        self._slots: asyncio.Queue[Any] = asyncio.Queue()
        for i in range(concurrency):
            self._slots.put_nowait(self._clients[i % n_pools])

    def __repr__(self) -> str:
        return f"OpenAIBackend(base_url={self.base_url!r}, model={self.model!r})"

    def describe(self) -> dict[str, Any]:
        """What answered, for the run manifest (``run.json``): never the key.

        ``base_url`` loses any user:password, query string and fragment.
        """
        parts = urlsplit(self.base_url)
        host = parts.hostname or ""
        if ":" in host:  # IPv6 literal
            host = f"[{host}]"
        if parts.port is not None:
            host = f"{host}:{parts.port}"
        public = urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))
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
            After ``max_retries`` retries, or at once on a non-retryable 4xx. The
            message names the URL and the last error; ``exc.retries`` holds the count.
        """
        # encoded once (httpx's ``json=`` would re-encode on every retry), compact UTF-8
        body = json.dumps(self.payload(request), ensure_ascii=False, separators=(",", ":"),
                          allow_nan=False).encode()
        t0 = time.perf_counter()
        last = ""
        for attempt in range(self.max_retries + 1):
            try:
                data = await self._attempt(body)
                return self._response(data, request, time.perf_counter() - t0, attempt)
            except _RetryableError as exc:
                last = str(exc)
                if attempt == self.max_retries:
                    break
                await asyncio.sleep(self._backoff(attempt, exc.retry_after))
        err = EndpointError(self._redact(
            f"endpoint {self.url} failed after {self.max_retries + 1} attempts "
            f"(last error: {last})"
        ))
        err.retries = self.max_retries  # type: ignore[attr-defined]
        raise err

    async def _attempt(self, body: bytes) -> dict[str, Any]:
        import httpx

        if self._bucket is not None:
            await self._bucket.acquire()
        client = await self._slots.get()
        try:
            resp = await client.post(self.url, content=body)
        except httpx.TimeoutException as exc:
            raise _RetryableError(f"timeout ({type(exc).__name__})") from None
        except httpx.TransportError as exc:
            raise _RetryableError(f"connection error ({type(exc).__name__})") from None
        finally:
            self._slots.put_nowait(client)
        status = resp.status_code
        if status in RETRY_STATUS or status >= 500:
            raise _RetryableError(f"HTTP {status}",
                                  parse_retry_after(resp.headers.get("retry-after")))
        if status >= 400:
            snippet = self._redact(resp.text[:300])
            raise EndpointError(
                f"endpoint {self.url} rejected the request with HTTP {status} (not "
                f"retried: check the model name, API key variable and request options): "
                f"{snippet}"
            )
        try:
            data = resp.json()
        except ValueError:
            raise _RetryableError("malformed JSON body") from None
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

    async def aclose(self) -> None:
        """Close the HTTP clients."""
        for client in self._clients:
            await client.aclose()


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _openai_iv(base_url: str, model: str, api_key_env: str | None, concurrency: int,
               rate_limit_per_s: float | None, timeout_s: float, max_retries: int,
               backoff_base_s: float, backoff_max_s: float) -> dict[str, Any]:
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise InputError(f"`base_url` must start with http:// or https://, got {base_url!r}")
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
            raise ConfigError(MSG_NO_KEY.format(env=api_key_env))
    return {"base_url": base_url.rstrip("/"), "key": key}
