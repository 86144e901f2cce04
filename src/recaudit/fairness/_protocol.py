"""Evaluation protocols: full ranking, and sampled ranking as RecBole names it.

A protocol says which items each user's list is ranked from:

- ``"full"`` -- every catalog item the user has not met in training or validation
  (the default of :func:`~recaudit.fairness.evaluate` and of the study);
- ``"uniN"`` / ``"popN"`` (``"uni100"``, ``"pop100"``, any positive N) -- RecBole's
  sampled ranking (``eval_args: {mode: uni100}``): each test positive of a user is
  ranked together with N negatives drawn for it, uniformly (``uni``) or proportionally
  to item popularity (``pop``), from items the user never interacted with.

:func:`parse_protocol` reads a name into a :class:`Protocol`;
:func:`sample_candidates` draws the candidate table ``user_id, item_id`` (the test
positives plus the distinct negatives) with RecBole 1.2.1's semantics
(``recbole/sampler/sampler.py``, ``Sampler``): negatives are drawn with replacement
and rejected while they are among the user's interactions (train, valid and test);
popularity is the number of interactions of an item in the same table. Where
recaudit differs from RecBole is written in docs/decisions/0154 ("Sampled ranking
follows RecBole's sampler").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._io import plain
from .._stats import as_generator
from ..exceptions import InputError
from ._dataset import ITEM_ID, USER_ID

__all__ = [
    "FULL",
    "SAMPLED_WARNINGS",
    "Protocol",
    "parse_protocol",
    "resolve_protocol",
    "sample_candidates",
]

Kind = Literal["full", "uniform", "popularity"]
_PREFIX: dict[str, Kind] = {"uni": "uniform", "pop": "popularity"}
_NAME = re.compile(r"^(uni|pop)([1-9][0-9]*)$")

PROTOCOL_MSG = (
    "`protocol` must be 'full', 'uniN' or 'popN' with N a positive integer "
    "(e.g. 'uni100', 'pop100'), got {value!r}"
)
NOT_SAMPLED_MSG = "`protocol` 'full' has no candidates to sample: every unknown item is one"
COLUMNS_MSG = "`{name}` must have the columns user_id and item_id; missing {missing}"
ITEM_MSG = "`{name}` has item_id {item!r} (row {row}) that is not in the item catalog `items`"
NO_NEGATIVE_MSG = (
    "user_id {user!r} has interacted with every item that {protocol!r} can sample: "
    "no negative can be drawn; drop the user or evaluate with protocol 'full'"
)
#: The warning of every evaluation under a sampled protocol (``warnings`` of its JSON).
SAMPLED_WARNINGS = (
    "sampled ranking ({name}): metrics computed on a user's test items ranked among "
    "sampled negatives can reorder models (Krichene & Rendle, KDD 2020) and may change "
    "group gaps (RD, NRD, IB); compare with full ranking (protocol 'full')",
    "sampled ranking ({name}): item coverage, exposure and popularity figures describe "
    "lists drawn from the sampled candidates, not the model's full-catalog lists",
)


@dataclass(frozen=True)
class Protocol:
    """One evaluation protocol.

    Attributes
    ----------
    name : str
        ``"full"``, ``"uni<N>"`` or ``"pop<N>"``.
    kind : {"full", "uniform", "popularity"}
        Full ranking, or how negatives are drawn.
    negatives : int
        Negatives drawn per test positive (0 for ``"full"``).

    Examples
    --------
    >>> parse_protocol("pop100")
    Protocol(name='pop100', kind='popularity', negatives=100)
    """

    name: str
    kind: Kind
    negatives: int

    @property
    def sampled(self) -> bool:
        """Whether lists are ranked within sampled candidates."""
        return self.kind != "full"

    def warnings(self) -> tuple[str, ...]:
        """The warnings an evaluation under this protocol carries (none for full)."""
        return tuple(w.format(name=self.name) for w in SAMPLED_WARNINGS) if self.sampled else ()


FULL = Protocol("full", "full", 0)


def parse_protocol(value: Any) -> Protocol:
    """A :class:`Protocol` from its name (a :class:`Protocol` passes unchanged).

    Parameters
    ----------
    value : str or Protocol
        ``"full"``, ``"uniN"`` or ``"popN"`` (N a positive integer, no leading zero).

    Returns
    -------
    Protocol

    Raises
    ------
    InputError
        Naming the allowed forms.
    """
    if isinstance(value, Protocol):
        return value
    if value == "full":
        return FULL
    match = _NAME.match(value) if isinstance(value, str) else None
    if match is None:
        raise InputError(PROTOCOL_MSG.format(value=plain(value)))
    return Protocol(value, _PREFIX[match.group(1)], int(match.group(2)))


def _pairs_iv(frame: Any, name: str) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"`{name}` must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in (USER_ID, ITEM_ID) if c not in frame.columns]
    if missing:
        raise InputError(COLUMNS_MSG.format(name=name, missing=missing))
    return frame[[USER_ID, ITEM_ID]]


def _item_codes(frame: pd.DataFrame, index: pd.Index, name: str) -> npt.NDArray[np.int64]:
    codes = index.get_indexer(frame[ITEM_ID].to_numpy())
    if (codes < 0).any():
        pos = int(np.argmax(codes < 0))
        raise InputError(ITEM_MSG.format(name=name, item=plain(frame[ITEM_ID].iloc[pos]),
                                         row=pos + 1))
    return codes.astype(np.int64)


def _draw_negatives(
    protocol: Protocol,
    positives: npt.NDArray[np.int64],
    used: npt.NDArray[np.int64],
    weights: npt.NDArray[np.float64],
    gen: np.random.Generator,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Every draw: ``protocol.negatives`` per positive, rejected while used (RecBole).

    ``positives`` holds one user code per test positive, ``used`` the sorted keys
    ``user * n_items + item`` of the users' interactions, ``weights`` the sampling
    weight of each item. Returns the user and item code of every draw (duplicates
    kept, as RecBole draws them).
    """
    n_items = weights.size
    prob = weights / weights.sum()
    owner = np.repeat(positives, protocol.negatives)
    drawn = np.empty(owner.size, dtype=np.int64)
    pending = np.arange(owner.size)
    while pending.size:
        drawn[pending] = gen.choice(n_items, size=pending.size, p=prob)
        keys = owner[pending] * n_items + drawn[pending]
        at = np.minimum(np.searchsorted(used, keys), max(used.size - 1, 0))
        pending = pending[used[at] == keys] if used.size else pending[:0]
    return owner, drawn


def sample_candidates(
    protocol: Protocol | str,
    test: pd.DataFrame,
    interactions: pd.DataFrame,
    items: Any,
    rng: np.random.Generator | int | None = None,
) -> pd.DataFrame:
    """Each test user's candidates under a sampled protocol (RecBole's sampler).

    For every test positive ``protocol.negatives`` items are drawn -- uniformly over
    ``items`` (``uni``) or with probability proportional to the item's number of rows
    in ``interactions`` (``pop``) -- and a draw among the user's own interactions is
    drawn again (rejection, as ``recbole.sampler.Sampler.sample_by_key_ids``). A
    user's candidate set is their test items plus the distinct negatives; RecBole
    scores a duplicated negative once too (its score matrix has one cell per item).

    Parameters
    ----------
    protocol : Protocol or str
        A sampled protocol (``"uni100"``, ``"pop100"``, ...).
    test : pandas.DataFrame
        ``user_id, item_id`` test positives (duplicates count once).
    interactions : pandas.DataFrame
        ``user_id, item_id`` of every interaction of the split (train, valid and
        test): no user's negative is among their own rows; popularity counts rows.
    items : array-like or pandas.DataFrame
        The catalog (``item_id`` column of a table, or the ids themselves).
    rng : numpy.random.Generator or int, optional
        Source of randomness; the same seed gives the same candidates.

    Returns
    -------
    pandas.DataFrame
        ``user_id, item_id``: per test user (in order of appearance) the test items,
        then the distinct negatives in order of drawing.

    Raises
    ------
    InputError
        On a full protocol, missing columns, items outside the catalog, or a user
        for whom no negative can be drawn.
    """
    protocol = parse_protocol(protocol)
    if not protocol.sampled:
        raise InputError(NOT_SAMPLED_MSG)
    gen = as_generator(rng)
    test = _pairs_iv(test, "test").drop_duplicates()
    known = _pairs_iv(interactions, "interactions")
    ids = items[ITEM_ID] if isinstance(items, pd.DataFrame) else items
    catalog = pd.Index(list(ids)).unique()
    users = pd.Index(pd.unique(test[USER_ID].to_numpy()))
    test_items = _item_codes(test, catalog, "test")
    known_items = _item_codes(known, catalog, "interactions")
    test_users = users.get_indexer(test[USER_ID].to_numpy()).astype(np.int64)
    known_users = users.get_indexer(known[USER_ID].to_numpy()).astype(np.int64)
    mine = known_users >= 0
    n_items = len(catalog)
    used = np.unique(np.concatenate([test_users * n_items + test_items,
                                     known_users[mine] * n_items + known_items[mine]]))
    if protocol.kind == "uniform":
        weights = np.ones(n_items)
    else:
        weights = np.bincount(known_items, minlength=n_items).astype(np.float64)
    _eligible_iv(protocol, users, used, weights)
    owner, drawn = _draw_negatives(protocol, test_users, used, weights, gen)
    frame = pd.DataFrame({
        "u": np.concatenate([test_users, owner]),
        "i": np.concatenate([test_items, drawn]),
    }).drop_duplicates()
    frame = frame.iloc[np.argsort(frame["u"].to_numpy(), kind="stable")]
    return pd.DataFrame({
        USER_ID: users.take(frame["u"].to_numpy()),
        ITEM_ID: catalog.take(frame["i"].to_numpy()),
    })


def _eligible_iv(
    protocol: Protocol, users: pd.Index, used: npt.NDArray[np.int64],
    weights: npt.NDArray[np.float64],
) -> None:
    """Every user must have some sampling weight outside their own interactions."""
    positive = weights > 0
    used_positive = used[positive[used % weights.size]] // weights.size
    short = np.bincount(used_positive, minlength=len(users)) >= positive.sum()
    if short.any():
        user = users[int(np.argmax(short))]
        raise InputError(NO_NEGATIVE_MSG.format(user=plain(user), protocol=protocol.name))


CANDIDATES_NEED_PROTOCOL_MSG = (
    "`candidates` need `protocol` naming how they were drawn ('uniN' or 'popN', e.g. "
    "'uni100')"
)
PROTOCOL_NEEDS_CANDIDATES_MSG = (
    "`protocol` {name!r} ranks within sampled candidates: pass `candidates` (user_id, "
    "item_id), e.g. from sample_candidates"
)
FULL_WITH_CANDIDATES_MSG = (
    "`protocol` 'full' ranks the whole catalog: drop `candidates`, or name the sampled "
    "protocol they were drawn with ('uniN' or 'popN')"
)
REC_OUTSIDE_MSG = (
    "`recs` row {row}: user_id {user!r} is recommended item_id {item!r}, which is not "
    "among the user's candidates; rank within the candidates (recommend_candidates, or "
    "the baselines with `candidates=`)"
)
TEST_OUTSIDE_MSG = (
    "`test` row {row}: item_id {item!r} of user_id {user!r} is not among the user's "
    "candidates; every test item must be one (sample them with sample_candidates)"
)


def resolve_protocol(protocol: Any, candidates: Any) -> Protocol:
    """The evaluation's protocol, checked against the candidates' presence.

    Parameters
    ----------
    protocol : str, Protocol or None
        The protocol named (``None``: full ranking).
    candidates : object or None
        The candidates (a table, or a path to one), or ``None``: they must be given
        exactly when the protocol is sampled.

    Returns
    -------
    Protocol

    Raises
    ------
    InputError
        A sampled protocol without candidates, or candidates without one.
    """
    if protocol is None:
        if candidates is not None:
            raise InputError(CANDIDATES_NEED_PROTOCOL_MSG)
        return FULL
    parsed = parse_protocol(protocol)
    if parsed.sampled and candidates is None:
        raise InputError(PROTOCOL_NEEDS_CANDIDATES_MSG.format(name=parsed.name))
    if not parsed.sampled and candidates is not None:
        raise InputError(FULL_WITH_CANDIDATES_MSG)
    return parsed


def _outside(frame: pd.DataFrame, allowed: pd.MultiIndex) -> int | None:
    """Position of the first ``(user_id, item_id)`` of ``frame`` not in ``allowed``."""
    inside = pd.MultiIndex.from_frame(frame[[USER_ID, ITEM_ID]]).isin(allowed)
    return None if inside.all() else int(np.argmin(inside))


def _candidates_iv(
    protocol: Any, candidates: Any, recs: pd.DataFrame, test: pd.DataFrame
) -> Protocol:
    """Check an evaluation's protocol and candidates once; return the protocol.

    Every recommended item and every test item must be among its user's candidates.
    """
    parsed = resolve_protocol(protocol, candidates)
    if candidates is None:
        return parsed
    allowed = pd.MultiIndex.from_frame(_pairs_iv(candidates, "candidates"))
    for frame, message in ((recs, REC_OUTSIDE_MSG), (test, TEST_OUTSIDE_MSG)):
        pos = _outside(frame, allowed)
        if pos is not None:
            raise InputError(message.format(
                row=pos + 1, user=plain(frame[USER_ID].iloc[pos]),
                item=plain(frame[ITEM_ID].iloc[pos])))
    return parsed
