"""The backend factory: what a ``[[models]]`` entry describes, and the backends built
from it.

The audit config (:mod:`recaudit.audit`) parses each ``[[models]]`` table into a
:class:`EndpointConfig` whose ``params`` are one of :class:`OpenAIParams`,
:class:`LocalParams`, :class:`SimulatedParams`; :func:`build_backends` turns them into
one :class:`~recaudit.llm.Backend` per (model name, k). The factory lives with the
backends (the system under test), so the audit's executors -- local, sequential, Ray --
all build backends the same way without importing each other.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from ..._limits import DEFAULT_CONCURRENCY
from ..._seeds import stable_words
from .._types import Backend
from ._batching import BatchingBackend
from ._openai import OpenAIBackend
from ._simulated import SimulatedBackend, SimulationProfile

__all__ = [
    "BackendKind",
    "LOCAL_ENGINES",
    "LocalEngine",
    "LocalParams",
    "EndpointConfig",
    "OpenAIParams",
    "SimulatedParams",
    "build_backends",
]

BackendKind = Literal["openai", "local", "simulated"]
#: How a ``local`` model runs: llama.cpp in process (GGUF files), transformers, or
#: ``"auto"`` (llama.cpp for a GGUF file, transformers for a model folder).
LocalEngine = Literal["auto", "llamacpp", "transformers"]
LOCAL_ENGINES: tuple[str, ...] = ("auto", "llamacpp", "transformers")


@dataclass(frozen=True)
class OpenAIParams:
    """Keys of a ``[[models]]`` entry with ``backend = "openai"``.

    ``concurrency`` is this endpoint's in-flight limit (its semaphore and its
    connection pool); the audit config defaults it to the run's ``concurrency`` and
    refuses a larger value (docs/runner.md, "Concurrency").
    """

    base_url: str
    model: str
    api_key_env: str | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    rate_limit_per_s: float | None = None
    timeout_s: float = 60.0
    max_retries: int = 6
    #: Price per million (prompt, completion) tokens, for the run's spend record.
    price_per_mtok: tuple[float, float] | None = None


@dataclass(frozen=True)
class LocalParams:
    """Keys of a ``[[models]]`` entry with ``backend = "local"``: ``model`` is a
    packaged model name (``"smollm2-135m"``, ``"gemma3-270m"``; kept as a string) or a
    model folder / ``.gguf`` path (resolved, must exist); ``None`` is the default
    packaged model."""

    model: str | Path | None = None
    n_threads: int = 1
    batch_size: int = 8
    engine: LocalEngine = "auto"

    def resolved_engine(self) -> Literal["llamacpp", "transformers"]:
        """The engine that runs this model: ``engine``, or for ``"auto"`` llama.cpp when
        the model is a GGUF file (packaged models are) and transformers otherwise."""
        if self.engine != "auto":
            return self.engine
        from ._local import resolve_local_model

        return "llamacpp" if resolve_local_model(self.model)[1] else "transformers"


@dataclass(frozen=True)
class SimulatedParams:
    """Keys of a ``[[models]]`` entry with ``backend = "simulated"``."""

    p_bias: float = 0.0
    position_weights: tuple[float, ...] | None = None
    max_relevant: int | None = None
    discard_rate: float = 0.0
    delay_s: float = 0.0

    def profile(self) -> SimulationProfile:
        """The simulator's :class:`SimulationProfile`."""
        return SimulationProfile(p_bias=self.p_bias, position_weights=self.position_weights,
                                 max_relevant=self.max_relevant,
                                 discard_rate=self.discard_rate, delay_s=self.delay_s)


@dataclass(frozen=True)
class EndpointConfig:
    """One ``[[models]]`` entry: a ``name``, a ``backend`` kind and its params."""

    name: str
    backend: BackendKind
    params: OpenAIParams | LocalParams | SimulatedParams


def _shared_backend(m: EndpointConfig, *, seed: int, constrained: bool) -> Backend | None:
    """The one instance serving every k of an ``openai`` or ``local`` model."""
    p = m.params
    if isinstance(p, OpenAIParams):
        return OpenAIBackend(
            p.base_url, p.model, api_key_env=p.api_key_env, concurrency=p.concurrency,
            rate_limit_per_s=p.rate_limit_per_s, timeout_s=p.timeout_s,
            max_retries=p.max_retries, name=m.name,
            rng=np.random.default_rng(stable_words("jitter", seed, m.name)),
        )
    if isinstance(p, LocalParams):
        # `[prompt] constrained` selects the backend's constrained mode (its
        # equivalent of a JSON-schema `response_format`)
        if p.resolved_engine() == "llamacpp":
            from ._llamacpp import LlamaCppBackend

            # `batch_size` is the sequences llama.cpp decodes together (its slots)
            return LlamaCppBackend(p.model, n_threads=p.n_threads, n_parallel=p.batch_size,
                                   constrained=constrained)
        from ._local import LocalBackend

        local = LocalBackend(p.model, n_threads=p.n_threads, constrained=constrained)
        return local if p.batch_size == 1 else BatchingBackend(local, max_batch=p.batch_size)
    return None


def build_backends(models: Iterable[EndpointConfig], *, k: Sequence[int], seed: int,
                   constrained: bool = False, answer: str = "pick"
                   ) -> dict[tuple[str, int], Backend]:
    """One backend per (model name, k) (instances are shared across k when they can).

    Parameters
    ----------
    models : iterable of EndpointConfig
        The ``[[models]]`` entries.
    k : sequence of int
        The candidate-set sizes (a simulated model has one instance per k).
    seed : int
        The run's seed (retry jitter of HTTP backends, the simulator's draws).
    constrained : bool
        ``[prompt] constrained``: local models decode under their answer grammar.
    answer : {"pick", "ranking"}
        ``[prompt] answer``: what a simulated model answers (the other backends answer
        what the prompt asks for).
    """
    out: dict[tuple[str, int], Backend] = {}
    for m in models:
        shared = _shared_backend(m, seed=seed, constrained=constrained)
        for kk in k:
            if shared is not None:
                out[(m.name, kk)] = shared
            elif isinstance(m.params, SimulatedParams):
                out[(m.name, kk)] = SimulatedBackend(m.params.profile(), k=kk, seed=seed,
                                                     name=m.name, answer=answer)
    return out
