"""The prompt: one fixed template, candidates in a given order, identifiers.

The template has a ``system`` text and a ``user`` text with two placeholders,
``{candidates}`` and ``{query}``. Each candidate is rendered with the ``candidate``
pattern (placeholders ``{id}``, ``{title}``, ``{description}``) and the rendered
candidates are joined with ``separator``. Literal braces are written doubled
(``{{`` / ``}}``), as in :meth:`str.format`.
"""

from __future__ import annotations

import string
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._read import one_line, read_text
from .._stats import as_generator
from ..exceptions import ConfigError, InputError
from ._types import Candidate, ChatMessage, ChatRequest

__all__ = ["PromptTemplate", "positional_identifiers", "random_labels", "render_request"]

_USER_FIELDS = frozenset({"candidates", "query"})
_CANDIDATE_FIELDS = frozenset({"id", "title", "description"})
_TEMPLATE_KEYS = frozenset({"system", "user", "candidate", "separator"})
_LABEL_ALPHABET = tuple("ABCDEFGHJKLMNPQRSTUVWXYZ")  # no I, O: they read as digits
_LABEL_DIGITS = tuple("23456789")

MSG_PLACEHOLDER = (
    "prompt template `{part}` uses unknown placeholder(s) {found}; allowed: {allowed} "
    "(write literal braces as {{{{ and }}}})"
)
MSG_REQUIRED = "prompt template `{part}` must contain the placeholder(s) {missing}"
MSG_SYNTAX = "prompt template `{part}` is not a valid format string: {error}"
MSG_FILE = "cannot read prompt template {path}: {error}"
MSG_KEYS = (
    "prompt template {path} has unknown key(s) {keys}; allowed: system, user, candidate, separator"
)
MSG_MISSING_KEYS = "prompt template {path} must define `system` and `user` strings"
MSG_TYPE = "prompt template {path}: `{key}` must be a string"
MSG_K = "`k` must be an integer >= 1, got {k!r}"
MSG_LABELS_K = "`k` must be between 1 and {max} for random labels, got {k!r}"
MSG_ORDER = "`order` must be a permutation of 1..{k} (original indices), got {order}"
MSG_CANDIDATES = (
    "`candidates` must be in original order: candidates[{i}].original_index is {got}, "
    "expected {want}"
)
MSG_IDENTIFIERS = "`identifiers` must be {k} distinct non-empty strings, got {identifiers!r}"
MSG_TEMPERATURE = "`temperature` must be a finite number >= 0, got {t!r}"
MSG_MAX_TOKENS = "`max_tokens` must be an integer >= 1, got {m!r}"

_DEFAULT_SYSTEM = (
    "You are a helpful shop assistant. A customer asks for a product and you recommend "
    "exactly one article from the list of candidate articles you are given."
)
_DEFAULT_USER = """\
Candidate articles:

{candidates}

Customer request: {query}

Recommend the one article that best fits the customer's request. Answer with a single \
JSON object and nothing else, with the keys "article_number" (the number of the chosen \
article), "article_title" (its title) and "recommendation" (one sentence explaining \
why it fits)."""
_DEFAULT_CANDIDATE = "Title {id}: {title}\nDescription {id}: {description}"


@dataclass(frozen=True)
class PromptTemplate:
    """A prompt template (see the module docstring for the placeholders).

    Attributes
    ----------
    system : str
        The system message (no placeholders).
    user : str
        The user message; must contain ``{candidates}`` and ``{query}``.
    candidate : str
        How one candidate is shown; placeholders ``{id}``, ``{title}``,
        ``{description}`` (``{id}`` required).
    separator : str
        Between rendered candidates.
    """

    system: str
    user: str
    candidate: str = _DEFAULT_CANDIDATE
    separator: str = "\n\n"

    def __post_init__(self) -> None:
        _check_format("system", self.system, frozenset(), frozenset())
        _check_format("user", self.user, _USER_FIELDS, _USER_FIELDS)
        _check_format("candidate", self.candidate, _CANDIDATE_FIELDS, frozenset({"id"}))

    @classmethod
    def default(cls) -> PromptTemplate:
        """The paper's template: a shop assistant, candidates as ``Title i`` /
        ``Description i`` pairs, the query, and a JSON answer with the keys
        ``article_number``, ``article_title`` and ``recommendation``."""
        return cls(system=_DEFAULT_SYSTEM, user=_DEFAULT_USER)

    @classmethod
    def from_file(cls, path: str | Path) -> PromptTemplate:
        """Read a template from a TOML file.

        The file holds the string keys ``system`` and ``user`` (required) and
        ``candidate`` and ``separator`` (optional); other keys are errors. Example::

            system = "You are a shop assistant."
            user = '''Articles:
            {candidates}
            Request: {query}
            Answer with {{"article_number": <number>}}.'''
            candidate = "[{id}] {title}: {description}"

        Raises
        ------
        ConfigError
            Unreadable TOML, unknown or missing keys, unknown or missing placeholders.
        """
        p = Path(path)
        try:
            text = read_text(p, what="prompt template")
        except InputError as exc:  # missing, unreadable, not UTF-8 (the line named)
            raise ConfigError(str(exc)) from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(MSG_FILE.format(path=p, error=one_line(exc))) from None
        except RecursionError:
            raise ConfigError(MSG_FILE.format(
                path=p, error="nested too deep (lists or tables inside each other)")) from None
        unknown = sorted(set(data) - _TEMPLATE_KEYS)
        if unknown:
            raise ConfigError(MSG_KEYS.format(path=p, keys=", ".join(map(repr, unknown))))
        if "system" not in data or "user" not in data:
            raise ConfigError(MSG_MISSING_KEYS.format(path=p))
        for key, value in data.items():
            if not isinstance(value, str):
                raise ConfigError(MSG_TYPE.format(path=p, key=key))
        try:
            return cls(**data)
        except InputError as exc:
            raise ConfigError(f"{p}: {exc}") from exc

    def render_candidates(self, candidates: Sequence[Candidate], identifiers: Sequence[str]) -> str:
        """The candidate block: ``candidates`` in the given (prompt) order."""
        return self.separator.join(
            self.candidate.format(id=ident, title=c.title, description=c.description)
            for c, ident in zip(candidates, identifiers, strict=True)
        )


def _check_format(part: str, text: str, allowed: frozenset[str], required: frozenset[str]) -> None:
    try:
        found = {f for _, f, _, _ in string.Formatter().parse(text) if f is not None}
    except ValueError as exc:
        raise InputError(MSG_SYNTAX.format(part=part, error=exc)) from exc
    unknown = sorted(found - allowed)
    if unknown:
        raise InputError(
            MSG_PLACEHOLDER.format(
                part=part,
                found=", ".join("{" + u + "}" for u in unknown),
                allowed=", ".join("{" + a + "}" for a in sorted(allowed)) or "none",
            )
        )
    missing = sorted(required - found)
    if missing:
        raise InputError(
            MSG_REQUIRED.format(part=part, missing=", ".join("{" + m + "}" for m in missing))
        )


def positional_identifiers(k: int) -> tuple[str, ...]:
    """The default identifiers: the prompt position numbers ``"1"``..``"k"``."""
    k = _positional_identifiers_iv(k)
    return tuple(str(p) for p in range(1, k + 1))


def _positional_identifiers_iv(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise InputError(MSG_K.format(k=k))
    return int(k)


def random_labels(k: int, *, rng: np.random.Generator | int | None) -> tuple[str, ...]:
    """``k`` distinct random 3-character labels, e.g. ``("K7Q", "B2M", ...)``.

    The identifier counterfactual of the spec's section 7: labels are drawn
    independently of the query and the order (call once per evaluation), so a model
    that prefers an identifier rather than a position is told apart. A label is
    letter-digit-letter from 24 letters (no I, O) and 8 digits (no 0, 1): 4,608
    labels, none of which reads as a number.
    """
    k, gen = _random_labels_iv(k, rng)
    n_l, n_d = len(_LABEL_ALPHABET), len(_LABEL_DIGITS)
    codes = gen.choice(n_l * n_d * n_l, size=k, replace=False)
    out = []
    for c in codes.tolist():
        a, rest = divmod(c, n_d * n_l)
        d, b = divmod(rest, n_l)
        out.append(_LABEL_ALPHABET[a] + _LABEL_DIGITS[d] + _LABEL_ALPHABET[b])
    return tuple(out)


def _random_labels_iv(
    k: int, rng: np.random.Generator | int | None
) -> tuple[int, np.random.Generator]:
    limit = len(_LABEL_ALPHABET) ** 2 * len(_LABEL_DIGITS)
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k <= limit:
        raise InputError(MSG_LABELS_K.format(k=k, max=limit))
    return int(k), as_generator(rng)


def render_request(
    template: PromptTemplate,
    query_text: str,
    candidates: Sequence[Candidate],
    order: Sequence[int] | np.ndarray,
    *,
    identifiers: Sequence[str],
    temperature: float,
    seed: int | None = None,
    max_tokens: int = 96,
    choice_probabilities: bool = False,
    response_format: dict[str, object] | None = None,
    query_id: str = "",
) -> ChatRequest:
    """Render one generation request: the candidates shown in ``order``.

    Parameters
    ----------
    template : PromptTemplate
    query_text : str
    candidates : sequence of Candidate
        The k candidates in ORIGINAL order (``candidates[i-1].original_index == i``).
    order : sequence of int
        Original indices shown at prompt positions 1..k (a permutation of 1..k):
        position p shows ``candidates[order[p-1] - 1]``.
    identifiers : sequence of str
        Identifier shown at each prompt position (position order), e.g.
        :func:`positional_identifiers` or :func:`random_labels`.
    temperature, seed, max_tokens, choice_probabilities, response_format, query_id
        Copied into the :class:`ChatRequest`.

    Returns
    -------
    ChatRequest
        With ``identifiers`` in position order and ``order`` = ``order``.
    """
    order_t, ids, temperature, max_tokens = _render_request_iv(
        candidates, order, identifiers, temperature, max_tokens
    )
    shown = [candidates[i - 1] for i in order_t]
    user = template.user.format(candidates=template.render_candidates(shown, ids), query=query_text)
    return ChatRequest(
        messages=(ChatMessage("system", template.system), ChatMessage("user", user)),
        temperature=temperature,
        seed=seed,
        max_tokens=max_tokens,
        identifiers=ids,
        choice_probabilities=choice_probabilities,
        response_format=response_format,
        order=order_t,
        query_id=query_id,
    )


def _render_request_iv(
    candidates: Sequence[Candidate],
    order: Sequence[int] | np.ndarray,
    identifiers: Sequence[str],
    temperature: float,
    max_tokens: int,
) -> tuple[tuple[int, ...], tuple[str, ...], float, int]:
    k = len(candidates)
    for i, c in enumerate(candidates):
        if c.original_index != i + 1:
            raise InputError(MSG_CANDIDATES.format(i=i, got=c.original_index, want=i + 1))
    order_t = tuple(int(i) for i in np.asarray(order).ravel())
    if sorted(order_t) != list(range(1, k + 1)):
        raise InputError(MSG_ORDER.format(k=k, order=list(order_t)))
    ids = tuple(identifiers)
    if (
        len(ids) != k
        or len(set(ids)) != k
        or not all(isinstance(s, str) and s.strip() for s in ids)
    ):
        raise InputError(MSG_IDENTIFIERS.format(k=k, identifiers=ids))
    t = float(temperature)
    if not np.isfinite(t) or t < 0:
        raise InputError(MSG_TEMPERATURE.format(t=temperature))
    if (
        isinstance(max_tokens, bool)
        or not isinstance(max_tokens, int | np.integer)
        or max_tokens < 1
    ):
        raise InputError(MSG_MAX_TOKENS.format(m=max_tokens))
    return order_t, ids, t, int(max_tokens)
