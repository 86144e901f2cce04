"""Data passed between the testbed, the backends and the runner.

These types are the seam of :mod:`recaudit.llm`: the testbed (catalog, retrieval,
prompt) produces :class:`ChatRequest` objects, a :class:`Backend` turns each into a
:class:`ChatResponse`, and the parser maps the response text to a prompt position.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

__all__ = [
    "Backend",
    "Candidate",
    "ChatMessage",
    "ChatRequest",
    "ChatResponse",
]


@dataclass(frozen=True)
class Candidate:
    """One retrieved product, in ORIGINAL (retrieval) order.

    Attributes
    ----------
    original_index : int
        1-based rank by retrieval similarity (1 = most similar).
    item_id : str
        Catalog id.
    title, description : str
        Shown in the prompt.
    score : float
        Retrieval (cosine) similarity to the query.
    """

    original_index: int
    item_id: str
    title: str
    description: str
    score: float


@dataclass(frozen=True)
class ChatMessage:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class ChatRequest:
    """One generation request.

    Attributes
    ----------
    messages : tuple of ChatMessage
        The chat, already rendered from the prompt template.
    temperature : float
        0 means greedy decoding.
    seed : int or None
        Decoding seed for sampled decoding (backends that support it).
    max_tokens : int
        Generation budget.
    identifiers : tuple of str
        The k identifiers shown in the prompt, in PROMPT POSITION order (position p
        shows ``identifiers[p-1]``). Backends that can expose next-token
        probabilities use them; the parser maps answers back through them.
    choice_probabilities : bool
        Ask the backend for the probability of each identifier at the answer slot.
    response_format : dict or None
        OpenAI ``response_format`` (e.g. a JSON schema for constrained decoding);
        changes the system under test, so it is recorded with the run.
    order : tuple of int
        Original indices shown at prompt positions 1..k. Only the simulated backend
        reads it (real backends see the rendered prompt alone).
    query_id : str
        The query's id; only the simulated backend reads it.
    """

    messages: tuple[ChatMessage, ...]
    temperature: float
    seed: int | None
    max_tokens: int
    identifiers: tuple[str, ...]
    choice_probabilities: bool = False
    response_format: dict[str, object] | None = None
    order: tuple[int, ...] = ()
    query_id: str = ""


@dataclass(frozen=True)
class ChatResponse:
    """What a backend returned for one :class:`ChatRequest`.

    Attributes
    ----------
    text : str
        The raw generated text (kept verbatim in the journal).
    prompt_tokens, completion_tokens : int or None
        Token counts when the backend reports them.
    latency_s : float
        Wall time of the call including retries.
    choice_probs : tuple of float or None
        Renormalised probability of each identifier (prompt-position order) at the
        answer slot, when requested and available.
    outside_mass : float or None
        Probability mass at the answer slot on tokens that are not identifiers.
    retries : int
        How many retries the call needed.
    """

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    choice_probs: tuple[float, ...] | None = None
    outside_mass: float | None = None
    retries: int = 0
    extra: dict[str, object] = field(default_factory=dict)


@runtime_checkable
class Backend(Protocol):
    """A system that answers chat requests.

    Implementations: ``openai`` (any OpenAI-compatible HTTP endpoint), ``local``
    (an in-process transformers model), ``simulated`` (the spec's generative model).
    ``complete`` must be safe to call concurrently from one event loop; CPU-bound
    backends run their work in a thread.
    """

    name: str

    async def complete(self, request: ChatRequest) -> ChatResponse: ...

    async def aclose(self) -> None: ...
