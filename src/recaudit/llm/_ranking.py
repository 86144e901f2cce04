"""Top-N answers: a ranking prompt, a strict ranking parser, ranking collection.

The ranking variant of the prompt asks for ``{"ranking": [<identifier>, ...]}``, every
candidate's identifier once, best first. :func:`parse_ranking` accepts exactly that (or
a bare JSON list) and maps it to PROMPT POSITIONS; anything else is a discard with a
reason code, never guessed. For a model that exposes choice probabilities (the local
backend), :func:`ranking_from_choice_probs` orders the positions by the model's
probability of naming each identifier first -- the model's PROBABILITY RANKING, not a
generated list (documented as such wherever it is used).

:func:`collect_rankings` runs a backend over ranking requests and returns the rankings
table that :func:`recaudit.positional.topn_bias` reads.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from .._limits import DEFAULT_CONCURRENCY
from ..exceptions import InputError
from ._prompt import PromptTemplate
from ._types import Backend, ChatRequest

__all__ = [
    "RANKING_DISCARD_REASONS",
    "ParsedRanking",
    "collect_rankings",
    "parse_ranking",
    "ranking_from_choice_probs",
    "ranking_schema",
    "ranking_template",
]

RANKING_KEY = "ranking"
RANKING_DISCARD_REASONS = ("empty", "no_json", "invalid_json", "extra_text", "missing_key",
                           "not_a_list", "unknown_identifier", "duplicate_identifier",
                           "incomplete")
_DECODER = json.JSONDecoder()

_SYSTEM = ("You are a helpful shop assistant. You rank numbered articles by how well they "
           "fit a customer's request.")
_USER = """Articles:
{candidates}

Customer request: {query}

Rank ALL the articles from the best fit to the worst fit. Answer with a single JSON \
object and nothing else, with the single key "ranking": the list of every article \
number, each exactly once, best first."""


def ranking_template() -> PromptTemplate:
    """The ranking prompt: numbered titles, the query, ``{"ranking": [...]}``."""
    return PromptTemplate(system=_SYSTEM, user=_USER, candidate="{id}. {title}",
                          separator="\n")


@dataclass(frozen=True)
class ParsedRanking:
    """A parsed ranking: prompt positions best first, or a discard reason."""

    positions: tuple[int, ...] | None
    discard_reason: str | None = None


def parse_ranking(text: str, identifiers: Sequence[str]) -> ParsedRanking:
    """Strictly parse a ranking answer to prompt positions (best first).

    Accepted: after stripping whitespace, ONE JSON object with the key ``ranking`` (or
    one bare JSON list) whose elements are identifiers (integers compared as decimal
    text, strings stripped), each of the k identifiers exactly once.

    Discard reasons, in order: ``empty``, ``no_json``, ``invalid_json``,
    ``extra_text``, ``missing_key``, ``not_a_list``, ``unknown_identifier``,
    ``duplicate_identifier``, ``incomplete``.
    """
    idents = tuple(identifiers)
    if len(set(idents)) != len(idents) or not all(isinstance(i, str) and i for i in idents):
        raise InputError(f"`identifiers` must be distinct non-empty strings, got {idents!r}")
    s = text.strip() if isinstance(text, str) else ""
    if not s:
        return ParsedRanking(None, "empty")
    start = min((i for i in (s.find("{"), s.find("[")) if i >= 0), default=-1)
    if start < 0:
        return ParsedRanking(None, "no_json")
    try:
        value, end = _DECODER.raw_decode(s, start)
    except ValueError:
        return ParsedRanking(None, "invalid_json")
    if start != 0 or s[end:].strip():
        return ParsedRanking(None, "extra_text")
    if isinstance(value, dict):
        if RANKING_KEY not in value:
            return ParsedRanking(None, "missing_key")
        value = value[RANKING_KEY]
    if not isinstance(value, list):
        return ParsedRanking(None, "not_a_list")
    return _positions(value, idents)


def _positions(value: list[object], idents: tuple[str, ...]) -> ParsedRanking:
    """The prompt positions a ranking list names, each identifier exactly once."""
    positions: list[int] = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int | str):
            return ParsedRanking(None, "unknown_identifier")
        key = str(v).strip()
        if key not in idents:
            return ParsedRanking(None, "unknown_identifier")
        p = idents.index(key) + 1
        if p in positions:
            return ParsedRanking(None, "duplicate_identifier")
        positions.append(p)
    if len(positions) != len(idents):
        return ParsedRanking(None, "incomplete")
    return ParsedRanking(tuple(positions))


def ranking_schema(identifiers: Sequence[str]) -> dict[str, object]:
    """The JSON schema of a ranking answer, for grammar-constrained decoding.

    ``{"ranking": [...]}`` with exactly k items, each one of ``identifiers`` (digit
    identifiers as integers, as the pick answer's schema writes them), no two equal.
    ``uniqueItems`` is not enforced by every grammar compiler (llama.cpp ignores it), so
    :func:`parse_ranking` stays the judge: a repeated identifier is a counted discard.

    Examples
    --------
    >>> ranking_schema(["1", "2"])["properties"]["ranking"]["minItems"]
    2
    """
    idents = tuple(identifiers)
    if not idents or len(set(idents)) != len(idents) \
            or not all(isinstance(i, str) and i for i in idents):
        raise InputError(f"`identifiers` must be distinct non-empty strings, got {idents!r}")
    values: list[int | str] = [int(i) if i.isdigit() else i for i in idents]
    k = len(idents)
    return {
        "type": "object",
        "properties": {RANKING_KEY: {"type": "array", "items": {"enum": values},
                                     "minItems": k, "maxItems": k, "uniqueItems": True}},
        "required": [RANKING_KEY],
        "additionalProperties": False,
    }


def ranking_from_choice_probs(probs: Sequence[float]) -> tuple[int, ...]:
    """Prompt positions ordered by decreasing choice probability (the model's
    probability ranking; exact ties, rare with real logits, go to the lower position)."""
    p = np.asarray(probs, dtype=float)
    return tuple(int(i) + 1 for i in np.argsort(-p, kind="stable"))


async def collect_rankings(backend: Backend, requests: Sequence[ChatRequest], *,
                           source: Literal["text", "probabilities"] = "text",
                           concurrency: int = DEFAULT_CONCURRENCY) -> pd.DataFrame:
    """Ask ``backend`` for a ranking per request.

    Parameters
    ----------
    backend : Backend
    requests : sequence of ChatRequest
        Ranking requests (e.g. rendered with :func:`ranking_template`); ``query_id`` and
        ``order`` are copied into the table.
    source : {"text", "probabilities"}
        ``"text"`` parses the generated answer with :func:`parse_ranking`;
        ``"probabilities"`` ranks by the response's ``choice_probs``
        (:func:`ranking_from_choice_probs`; requests are sent with
        ``choice_probabilities=True``).
    concurrency : int

    Returns
    -------
    DataFrame
        ``query_id``, ``order``, ``ranking`` (positions best first, "" when
        discarded), ``discard_reason``, ``raw_response``, ``prompt_tokens``.
    """
    if source not in ("text", "probabilities"):
        raise InputError(f"`source` must be 'text' or 'probabilities', got {source!r}")
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(r: ChatRequest) -> dict[str, object]:
        if source == "probabilities" and not r.choice_probabilities:
            from dataclasses import replace

            r = replace(r, choice_probabilities=True)
        async with gate:
            resp = await backend.complete(r)
        if source == "probabilities":
            if resp.choice_probs is None:
                raise InputError(f"backend {backend.name!r} returned no choice "
                                 "probabilities; use source='text'")
            parsed = ParsedRanking(ranking_from_choice_probs(resp.choice_probs))
        else:
            parsed = parse_ranking(resp.text, r.identifiers)
        return {"query_id": r.query_id, "order": " ".join(map(str, r.order)),
                "ranking": "" if parsed.positions is None
                else " ".join(map(str, parsed.positions)),
                "discard_reason": parsed.discard_reason, "raw_response": resp.text,
                "prompt_tokens": resp.prompt_tokens}

    rows = await asyncio.gather(*(one(r) for r in requests))
    return pd.DataFrame(rows)
