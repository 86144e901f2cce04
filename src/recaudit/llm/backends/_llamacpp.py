"""A GGUF model answering in-process through llama.cpp (the ``llamacpp`` extra).

The engine is llama.cpp's own server core, loaded into this process by the prebuilt
``xllamacpp`` wheel and called directly (``Server.handle_chat_completions``, no HTTP on
the request path): the GGUF is used as it is (no dequantisation), ``n_parallel`` slots
are decoded together (continuous batching over the run's concurrency: one worker
thread per slot), and the KV cache of a prompt is kept in its slot and in llama.cpp's
host-memory prompt cache, so the short follow-up requests below re-evaluate only
their new tokens. (xllamacpp also opens an HTTP listener on a loopback port when the
server starts; recaudit never sends it anything.)

CHOICE PROBABILITIES use the same definition as the transformers engine
(:class:`~recaudit.llm.backends.LocalBackend`): the assistant turn is started with the
FORCED ANSWER PREFIX ``{"article_number": `` (plus ``"`` when an identifier is not a
decimal number) and, for each identifier ``s``,

    P(s) = P(tokens of s | prompt + prefix) * P(boundary | prompt + prefix + s),

where the boundary is any next token that does not start with a letter or digit.
llama.cpp reports the ``top_logprobs`` of the next token (the full softmax, before
sampling), so the identifiers are reached by walking the tree of their spellings: one
request per node (the prefix, each proper prefix of an identifier that the model can
emit, each identifier), each one token long and each re-using the cached prompt. The
boundary mass is ``1 - `` the top-list mass on tokens that start with a letter or
digit, so mass beyond the top list counts as boundary: with ``top_logprobs = 20`` the
difference from the transformers engine's full-vocabulary sum is measured in
``docs/testbed.md``. ``choice_probs`` are the P(s) renormalised; ``outside_mass = 1 -
sum P(s)``.

CONSTRAINED mode answers ``{"article_number": <identifier>}`` with the identifier
chosen from those probabilities -- the argmax at temperature 0, else a draw from
``choice_probs ** (1 / temperature)`` renormalised with a ``numpy`` generator seeded by
the request's seed -- exactly the transformers engine's rule (its draws use torch's
generator, so sampled answers agree in distribution, not draw by draw). Free-text
answers are decoded by llama.cpp's sampler with plain temperature sampling (``top_k =
0``, ``top_p = 1``, ``min_p = 0``) and the request's seed; a ``response_format`` is
passed through (grammar-constrained JSON, as on llama.cpp's HTTP server).

The probabilities of a prompt are memoised (an LRU of :data:`PROBS_MEMO_SIZE` prompts):
a study evaluates the same prompt many times (the ``decoding`` condition, every
temperature of a cell), and each constrained answer is then only a seeded draw.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ..._limits import MAX_CONTEXT_TOKENS
from ...exceptions import EndpointError, InputError, MissingExtraError
from .._types import ChatRequest, ChatResponse
from ._local import ANSWER_PREFIX, PROBS_MEMO_SIZE, resolve_local_model
from ._packaged import PACKAGED_MODELS, gguf_quantization

__all__ = ["LlamaCppBackend"]

MSG_POSITIVE = "`{name}` must be an integer >= 1, got {value!r}"
MSG_TOP = "`top_logprobs` must be an integer in 1..100, got {value!r}"
MSG_CLOSED = "this LlamaCppBackend was closed; create a new one"
MSG_ENGINE = "llama.cpp could not answer: {detail}"
#: Default context per slot, in tokens (a k = 20 prompt with descriptions fits).
N_CTX_PER_SLOT = 4096
#: llama.cpp's host-memory prompt cache, MiB (its default, 8 GiB, is most of a laptop).
CACHE_RAM_MIB = 512





class LlamaCppBackend:
    """A GGUF model answering :class:`ChatRequest` objects through in-process llama.cpp.

    Parameters
    ----------
    model : str, Path or None
        A packaged model name (``"smollm2-135m"``, ``"gemma3-270m"``), a ``.gguf`` file,
        or a folder holding ``gguf_file``. Default: the packaged SmolLM2-135M-Instruct.
    gguf_file : str, optional
        GGUF file name inside a folder ``model``.
    n_threads : int
        CPU threads of llama.cpp's decode and prompt passes.
    n_parallel : int
        Slots decoded together (continuous batching); also the worker threads that
        call the engine, so the run's concurrency should be at least this.
    n_ctx_per_slot : int
        Context length of each slot, in tokens.
    constrained : bool
        Answer every request in constrained mode (module docstring); recorded in
        :attr:`name` (``"+constrained"``).
    top_logprobs : int
        Length of the next-token top list each request reads (>= the number of
        identifiers a node of their spelling tree can branch into; 20 by default).

    Attributes
    ----------
    name : str
        ``"llamacpp:<gguf file>"`` plus ``"+constrained"`` in constrained mode.
    load_s : float
        Seconds the constructor spent loading the model.
    """

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        gguf_file: str | None = None,
        n_threads: int = 1,
        n_parallel: int = 4,
        n_ctx_per_slot: int = N_CTX_PER_SLOT,
        constrained: bool = False,
        top_logprobs: int = 20,
    ) -> None:
        path = _llamacpp_iv(model, gguf_file, n_threads, n_parallel, n_ctx_per_slot,
                            top_logprobs)
        # llama.cpp's CPU threads are OpenMP threads: spinning idle threads steal the
        # cores of a small shared machine (data README: 3-25x slower), so wait
        # passively unless the user chose otherwise (read when the runtime loads)
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import xllamacpp
        except ImportError as exc:
            raise MissingExtraError("xllamacpp", "llamacpp") from exc
        self.model_path = path
        self.n_threads = n_threads
        self.n_parallel = n_parallel
        self.constrained = bool(constrained)
        self.top_logprobs = top_logprobs
        self.name = f"llamacpp:{path.name}" + ("+constrained" if constrained else "")
        self.engine_version = str(getattr(xllamacpp, "__version__", "unknown"))
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_parallel = n_parallel
        params.n_ctx = n_ctx_per_slot * n_parallel
        params.cpuparams.n_threads = n_threads
        params.cpuparams_batch.n_threads = n_threads
        params.hostnames = ["127.0.0.1"]
        params.port = 0
        params.verbosity = -1
        # llama.cpp's host-memory prompt cache defaults to 8 GiB; prompts here are short
        # and each slot keeps its own KV cache, so 512 MiB bounds the process
        params.cache_ram_mib = CACHE_RAM_MIB
        packaged = PACKAGED_MODELS.get(model) if isinstance(model, str) else None
        if packaged is not None and packaged.chat_template is not None:
            # the GGUF has no template: the family's, as the transformers engine uses
            params.chat_template = packaged.chat_template
            params.use_jinja = True
        started = time.perf_counter()
        self._server: Any = xllamacpp.Server(params)
        # one token before anything else: the server's loop is then running (destroying
        # a server whose loop never served a request can hang in its destructor's join)
        self._call({"messages": [{"role": "user", "content": "ready?"}], "max_tokens": 1,
                    "temperature": 0.0})
        self.load_s = time.perf_counter() - started
        self._pool = ThreadPoolExecutor(max_workers=n_parallel,
                                        thread_name_prefix="recaudit-llamacpp")
        self._memo: OrderedDict[str, tuple[tuple[float, ...], float, int]] = OrderedDict()
        self._memo_lock = threading.Lock()
        self._closed = False

    # -- public API ---------------------------------------------------------------

    def describe(self) -> dict[str, object]:
        """What answered, for the run manifest (``run.json``): the engine, its version,
        the model file and quantisation, the answer mode and the parallelism."""
        return {
            "backend": "local", "name": self.name, "engine": "llama.cpp",
            "engine_version": f"xllamacpp {self.engine_version}",
            "model_file": self.model_path.name,
            "quantization": gguf_quantization(self.model_path.name),
            "answer_mode": _answer_mode(self.constrained),
            "n_threads": self.n_threads, "n_parallel": self.n_parallel,
            "top_logprobs": self.top_logprobs,
        }

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer one request (in one of the engine's worker threads)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self.complete_sync, request)

    async def aclose(self) -> None:
        """Stop the engine (the instance cannot be used afterwards)."""
        self._closed = True
        self._pool.shutdown(wait=True)
        self._server = None

    def complete_sync(self, request: ChatRequest) -> ChatResponse:
        """Answer one request in the calling thread (blocking)."""
        if self._closed:
            raise InputError(MSG_CLOSED)
        if not isinstance(request, ChatRequest):
            raise InputError("`request` must be a ChatRequest")
        started = time.perf_counter()
        extra: dict[str, object] = {}
        probs: tuple[float, ...] | None = None
        outside: float | None = None
        if self.constrained or request.choice_probabilities:
            probs, outside, prompt_tokens, hit = self._memoised_probabilities(request)
            extra["memo_hit"] = hit
        if self.constrained:
            assert probs is not None
            text = _constrained_answer(request, probs)
            completion_tokens: int | None = 1
            extra["finish_reason"] = "constrained"
        else:
            data = self._call(self._free_text_body(request))
            first = data["choices"][0]
            text = str(first["message"]["content"])
            usage = data.get("usage") or {}
            prompt_tokens = int(usage.get("prompt_tokens", 0))
            completion_tokens = int(usage.get("completion_tokens", 0))
            extra["finish_reason"] = first.get("finish_reason")
        return ChatResponse(
            text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
            latency_s=time.perf_counter() - started,
            choice_probs=probs if request.choice_probabilities else None,
            outside_mass=outside if request.choice_probabilities else None,
            extra=extra,
        )

    # -- internals ----------------------------------------------------------------

    def _call(self, body: dict[str, Any]) -> dict[str, Any]:
        server = self._server
        if server is None:
            raise InputError(MSG_CLOSED)
        data = server.handle_chat_completions(body)
        if isinstance(data, str):
            data = json.loads(data)
        if not isinstance(data, dict) or not data.get("choices"):
            detail = data.get("error", data) if isinstance(data, dict) else data
            raise EndpointError(MSG_ENGINE.format(detail=str(detail)[:300]))
        return data

    def _free_text_body(self, request: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "messages": _messages(request), "temperature": request.temperature,
            "max_tokens": request.max_tokens, "top_k": 0, "top_p": 1.0, "min_p": 0.0,
        }
        if request.seed is not None:
            body["seed"] = int(request.seed) % 2**32
        if request.response_format is not None:
            body["response_format"] = request.response_format
        return body

    def _memoised_probabilities(
        self, request: ChatRequest
    ) -> tuple[tuple[float, ...], float, int, bool]:
        key = hashlib.sha256(json.dumps(
            [_messages(request), request.identifiers], ensure_ascii=False
        ).encode()).hexdigest()
        with self._memo_lock:
            found = self._memo.get(key)
            if found is not None:
                self._memo.move_to_end(key)
                return (*found, True)
        probs, outside, prompt_tokens = self._answer_slot(request)
        with self._memo_lock:
            self._memo[key] = (probs, outside, prompt_tokens)
            if len(self._memo) > PROBS_MEMO_SIZE:
                self._memo.popitem(last=False)
        return probs, outside, prompt_tokens, False

    def _next_tokens(self, request: ChatRequest, prefilled: str) -> tuple[
            list[tuple[str, float]], int]:
        """The next-token top list after the assistant turn ``prefilled``, and the
        prompt's token count."""
        body = {
            "messages": [*_messages(request), {"role": "assistant", "content": prefilled}],
            "max_tokens": 1, "temperature": 0.0, "logprobs": True,
            "top_logprobs": self.top_logprobs,
        }
        data = self._call(body)
        content = (data["choices"][0].get("logprobs") or {}).get("content") or []
        tops = content[0].get("top_logprobs", []) if content else []
        usage = data.get("usage") or {}
        return ([(str(t.get("token", "")), float(np.exp(t["logprob"]))) for t in tops
                 if isinstance(t.get("logprob"), int | float)],
                int(usage.get("prompt_tokens", 0)))

    def _answer_slot(self, request: ChatRequest) -> tuple[tuple[float, ...], float, int]:
        """Forced-prefix identifier probabilities (module docstring): renormalised
        probabilities, outside mass, and the prompt's token count."""
        ids = request.identifiers
        prefix = ANSWER_PREFIX if all(s.isdigit() for s in ids) else ANSWER_PREFIX + '"'
        tops: dict[str, list[tuple[str, float]]] = {}
        prompt_tokens = 0

        def top(after: str) -> list[tuple[str, float]]:
            nonlocal prompt_tokens
            if after not in tops:
                tops[after], n = self._next_tokens(request, prefix + after)
                prompt_tokens = prompt_tokens or n
            return tops[after]

        reached = dict.fromkeys(ids, 0.0)
        frontier = [("", 1.0)]
        while frontier:
            text, p = frontier.pop()
            for token, q in top(text):
                grown = text + token
                if not token:
                    continue
                if grown in reached:
                    reached[grown] += p * q
                if any(len(s) > len(grown) and s.startswith(grown) for s in ids):
                    frontier.append((grown, p * q))
        mass = np.array([
            reached[s] * _boundary_mass(top(s)) if reached[s] > 0 else 0.0 for s in ids
        ])
        total = float(mass.sum())
        probs = (tuple(float(x) for x in mass / total) if total > 0
                 else tuple(1 / len(ids) for _ in ids))
        return probs, min(max(1.0 - total, 0.0), 1.0), prompt_tokens


def _boundary_mass(top: list[tuple[str, float]]) -> float:
    """P(the identifier ends here): 1 - the top-list mass on tokens that continue it
    (start with a letter or digit)."""
    return max(0.0, 1.0 - sum(q for t, q in top if t and t[0].isalnum()))


def _messages(request: ChatRequest) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in request.messages]


def _constrained_answer(request: ChatRequest, probs: tuple[float, ...]) -> str:
    """``{"article_number": <identifier>}``: the argmax at temperature 0, else a draw
    from ``probs ** (1 / temperature)`` renormalised, seeded by the request."""
    p = np.asarray(probs, dtype=np.float64)
    if request.temperature == 0:
        index = int(np.argmax(p))
    else:
        w = p ** (1.0 / request.temperature)
        w = w / w.sum() if w.sum() > 0 else np.full(len(p), 1 / len(p))
        index = int(np.random.default_rng(request.seed).choice(len(p), p=w))
    ident = request.identifiers[index]
    return json.dumps({"article_number": int(ident) if ident.isdigit() else ident})


def _answer_mode(constrained: bool) -> str:
    if constrained:
        return ("constrained: forced prefix {\"article_number\": , identifier chosen from "
                "the choice probabilities (argmax at T = 0, seeded draw otherwise)")
    return "free text: llama.cpp sampler, plain temperature sampling"


def _llamacpp_iv(model: str | Path | None, gguf_file: str | None, n_threads: int,
                 n_parallel: int, n_ctx_per_slot: int, top_logprobs: int) -> Path:
    for name, value in (("n_threads", n_threads), ("n_parallel", n_parallel),
                        ("n_ctx_per_slot", n_ctx_per_slot)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(MSG_POSITIVE.format(name=name, value=value))
    most, why = MAX_CONTEXT_TOKENS
    if n_ctx_per_slot * n_parallel > most:
        raise InputError(f"`n_ctx_per_slot` x `n_parallel` (a local model's `batch_size`) must "
                         f"be <= {most:,} ({why}), got "
                         f"{n_ctx_per_slot} x {n_parallel}")
    if (isinstance(top_logprobs, bool) or not isinstance(top_logprobs, int)
            or not 1 <= top_logprobs <= 100):
        raise InputError(MSG_TOP.format(value=top_logprobs))
    folder, file = resolve_local_model(model, gguf_file)
    if file is None:
        raise InputError(
            f"the llama.cpp engine needs a GGUF model; {str(folder)!r} holds none: pass a "
            ".gguf file, or use engine = \"transformers\" for a transformers folder")
    return folder / file

