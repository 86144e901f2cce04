"""Strict parsing of a model answer to a prompt position.

An answer that does not map to exactly one identifier is a DISCARDED generation
(spec section 1): it is returned with a reason code, never guessed. Accepted answers,
exactly:

1. after stripping surrounding whitespace, the text is ONE JSON object, optionally
   wrapped in a Markdown code fence (```` ``` ```` or ```` ```json ````, the fence on its
   own lines or not);
2. the object has no duplicate keys and has the key ``article_number``;
3. its value is an integer (not a bool, not a float) or a string; a string is
   stripped of surrounding whitespace; an integer is compared as its decimal text;
4. that text equals one of the identifiers (case-sensitive), and the answer maps to
   that identifier's 1-based prompt position.

Other keys (``article_title``, ``recommendation``...) are ignored. Reason codes of
discards, checked in this order: ``empty``, ``no_json`` (no ``{``), ``invalid_json``
(the first ``{`` does not start a decodable object, e.g. truncated output),
``multiple_json`` (another object after the first one), ``extra_text`` (one
object plus other text), ``duplicate_key``, ``missing_key``,
``invalid_identifier`` (value of another JSON type), ``unknown_identifier``
(not one of the identifiers).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..exceptions import InputError

__all__ = ["DISCARD_REASONS", "ParsedAnswer", "parse_answer"]

#: Every discard reason code :func:`parse_answer` can return.
DISCARD_REASONS = (
    "empty",
    "no_json",
    "invalid_json",
    "multiple_json",
    "extra_text",
    "duplicate_key",
    "missing_key",
    "invalid_identifier",
    "unknown_identifier",
)
ANSWER_KEY = "article_number"
MSG_IDENTIFIERS = "`identifiers` must be distinct non-empty strings, got {identifiers!r}"

_FENCE = re.compile(r"\A```(?:json|JSON)?[ \t]*\n?(.*?)\n?[ \t]*```\Z", re.DOTALL)
_DECODER = json.JSONDecoder()


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise _DuplicateKey
    return dict(pairs)


_STRICT_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicates)


@dataclass(frozen=True)
class ParsedAnswer:
    """The parse of one answer.

    Attributes
    ----------
    position : int or None
        1-based prompt position of the chosen identifier; ``None`` for a discard.
    discard_reason : str or None
        One of :data:`DISCARD_REASONS` for a discard, else ``None``.
    """

    position: int | None
    discard_reason: str | None

    @property
    def valid(self) -> bool:
        """Whether the answer mapped to a position."""
        return self.position is not None


def parse_answer(text: str, identifiers: Sequence[str]) -> ParsedAnswer:
    """Map an answer to a prompt position, strictly (rules in the module docstring).

    Parameters
    ----------
    text : str
        The raw model output.
    identifiers : sequence of str
        Identifiers in prompt-position order (``ChatRequest.identifiers``).

    Returns
    -------
    ParsedAnswer
        Never raises for any ``text``.

    Examples
    --------
    >>> parse_answer('{"article_number": 3, "article_title": "x"}', ["1", "2", "3"])
    ParsedAnswer(position=3, discard_reason=None)
    >>> parse_answer("I recommend article 3.", ["1", "2", "3"])
    ParsedAnswer(position=None, discard_reason='no_json')
    """
    ids = _parse_answer_iv(identifiers)
    obj, reason = _answer_object(text)
    if obj is None:
        return _discard(reason or "invalid_json")
    if ANSWER_KEY not in obj:
        return _discard("missing_key")
    value = obj[ANSWER_KEY]
    if isinstance(value, bool) or not isinstance(value, int | str):
        return _discard("invalid_identifier")
    try:
        answer = str(value) if isinstance(value, int) else value.strip()
    except ValueError:  # int too large to print (sys.int_info.str_digits_check_threshold)
        return _discard("invalid_identifier")
    if answer not in ids:
        return _discard("unknown_identifier")
    return ParsedAnswer(position=ids.index(answer) + 1, discard_reason=None)


def _answer_object(text: object) -> tuple[dict[str, object] | None, str | None]:
    """The one JSON object of an answer (a code fence around it allowed), or the
    discard reason: ``empty``, ``no_json``, ``invalid_json``, ``multiple_json``,
    ``extra_text``, ``duplicate_key``."""
    body = text.strip() if isinstance(text, str) else ""
    if not body:
        return None, "empty"
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if "{" not in body:
        return None, "no_json"
    start = body.index("{")
    try:
        end = _DECODER.raw_decode(body, start)[1]
    except (ValueError, RecursionError):
        return None, "invalid_json"
    if _contains_object(body, end):
        return None, "multiple_json"
    if body[:start].strip() or body[end:].strip():
        return None, "extra_text"
    try:
        return _STRICT_DECODER.decode(body[start:end]), None
    except _DuplicateKey:
        return None, "duplicate_key"
    except (ValueError, RecursionError):
        return None, "invalid_json"


def _parse_answer_iv(identifiers: Sequence[str]) -> tuple[str, ...]:
    ids = tuple(identifiers)
    if not ids or len(set(ids)) != len(ids) or not all(isinstance(s, str) and s for s in ids):
        raise InputError(MSG_IDENTIFIERS.format(identifiers=ids))
    return ids


def _discard(reason: str) -> ParsedAnswer:
    return ParsedAnswer(position=None, discard_reason=reason)


def _contains_object(body: str, pos: int) -> bool:
    """Whether a JSON object can be decoded at some ``{`` at or after ``pos``."""
    pos = body.find("{", pos)
    while pos != -1:
        try:
            _DECODER.raw_decode(body, pos)
        except (ValueError, RecursionError):
            pos = body.find("{", pos + 1)
            continue
        return True
    return False
