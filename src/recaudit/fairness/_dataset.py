"""Interaction data of the inter-bias study: implicit feedback, sampling, splits, groups.

The study (spec section 1) works on user-item interactions plus a users table with a
protected attribute. The steps here are the ones before any model sees the data:

1. :func:`to_implicit` -- ratings/plays to implicit feedback (one row per user-item);
2. :func:`sample_interactions` -- a seeded uniform sample of ``n`` interactions
   (the paper samples 100,000);
3. :func:`split_per_user` -- a seeded random 80/10/10 split *per user*;
4. :func:`protected_groups` -- the protected attribute and value named by the user,
   with a minimum group size;
5. :func:`long_tail_stats` -- how long-tailed the item popularity is.

All randomness comes from a :class:`numpy.random.Generator` passed in; nothing
touches global random state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._stats import as_generator
from ..exceptions import InputError

__all__ = [
    "FEEDBACK_COLUMNS",
    "ITEM_ID",
    "USER_ID",
    "InteractionData",
    "LongTailStats",
    "ProtectedGroups",
    "Split",
    "long_tail_stats",
    "protected_groups",
    "sample_interactions",
    "split_per_user",
    "to_implicit",
]

USER_ID = "user_id"
ITEM_ID = "item_id"
#: Optional explicit-feedback columns, in order of preference.
FEEDBACK_COLUMNS = ("rating", "plays")
TIMESTAMP = "timestamp"
PROTECTED, UNPROTECTED = "protected", "unprotected"

MSG_MISSING_COLUMN = "`{table}` has no column `{column}` (columns: {columns})"
MSG_NAN_IDS = "`{table}` has {count} missing values in `{column}`; drop or fill them first"
MSG_DUPLICATE_USERS = "`users` lists {count} user ids more than once (e.g. {example!r})"
MSG_NO_FEEDBACK = (
    "`threshold` was given but the interactions have no feedback column "
    "(one of {columns}); omit `threshold` for data that is already implicit"
)
MSG_ATTRIBUTE_ABSENT = (
    "`attribute` {attribute!r} is not a column of the users table (columns: {columns})"
)
MSG_PROTECTED_ABSENT = (
    "protected value {protected!r} does not occur in `{attribute}` among users with "
    "interactions (values: {values})"
)
MSG_NAN_ATTRIBUTE = (
    "{count} users with interactions have no `{attribute}` value; set "
    "`drop_missing=True` to drop them (and their interactions) or fill them first"
)
MSG_GROUP_TOO_SMALL = (
    "group {group!r} ({attribute} {rule}) has {size} users, below "
    "`min_group_size`={min_size}; use a larger sample or a lower `min_group_size`"
)
MSG_SINGLE_GROUP = "every user has `{attribute}` == {protected!r}: there is no unprotected group"


@dataclass(frozen=True)
class InteractionData:
    """User-item interactions plus a users table with attributes.

    Attributes
    ----------
    interactions : pandas.DataFrame
        Columns ``user_id``, ``item_id`` and optionally ``rating`` or ``plays`` and
        ``timestamp``; one row per interaction.
    users : pandas.DataFrame
        Column ``user_id`` (unique) plus attribute columns (``gender``, ``age``, ...).
    name : str
        Short name used in file names and reports.
    """

    interactions: pd.DataFrame
    users: pd.DataFrame
    name: str = "dataset"

    def __post_init__(self) -> None:
        _interaction_data_iv(self.interactions, self.users)

    @property
    def feedback(self) -> str | None:
        """The explicit-feedback column (``rating`` or ``plays``), or ``None``."""
        return next((c for c in FEEDBACK_COLUMNS if c in self.interactions.columns), None)

    @property
    def n_users(self) -> int:
        """Number of distinct users with at least one interaction."""
        return int(self.interactions[USER_ID].nunique())

    @property
    def n_items(self) -> int:
        """Number of distinct items with at least one interaction."""
        return int(self.interactions[ITEM_ID].nunique())

    def replace_interactions(self, interactions: pd.DataFrame) -> InteractionData:
        """A copy with new interactions and the users table restricted to their users."""
        interactions = interactions.reset_index(drop=True)
        keep = self.users[USER_ID].isin(interactions[USER_ID].unique())
        return InteractionData(
            interactions, self.users.loc[keep].reset_index(drop=True), name=self.name
        )


def _interaction_data_iv(interactions: pd.DataFrame, users: pd.DataFrame) -> None:
    for table, frame, required in (
        ("interactions", interactions, (USER_ID, ITEM_ID)),
        ("users", users, (USER_ID,)),
    ):
        if not isinstance(frame, pd.DataFrame):
            raise InputError(f"`{table}` must be a pandas DataFrame, got {type(frame).__name__}")
        for column in required:
            if column not in frame.columns:
                raise InputError(
                    MSG_MISSING_COLUMN.format(
                        table=table, column=column, columns=", ".join(map(str, frame.columns))
                    )
                )
            n_nan = int(frame[column].isna().sum())
            if n_nan:
                raise InputError(MSG_NAN_IDS.format(table=table, count=n_nan, column=column))
    duplicated = users[USER_ID].duplicated()
    if duplicated.any():
        raise InputError(
            MSG_DUPLICATE_USERS.format(
                count=int(duplicated.sum()), example=users.loc[duplicated, USER_ID].iloc[0]
            )
        )


def to_implicit(data: InteractionData, *, threshold: float | None = None) -> InteractionData:
    """Turn ratings or play counts into implicit feedback.

    An interaction is a positive when its feedback (``rating`` or ``plays``) is
    ``>= threshold``; the others are dropped. With ``threshold=None`` every observed
    interaction is a positive (RecBole's default for general recommenders, and what
    the paper's setup implies). Repeated user-item pairs are merged into one row
    (the first one kept, in the original order).

    Parameters
    ----------
    data : InteractionData
        The interactions.
    threshold : float, optional
        Minimum rating or play count of a positive.

    Returns
    -------
    InteractionData
        One row per positive user-item pair; users without positives are dropped.

    Examples
    --------
    >>> import pandas as pd
    >>> d = InteractionData(pd.DataFrame({"user_id": [1, 1], "item_id": [1, 2],
    ...     "rating": [5, 2]}), pd.DataFrame({"user_id": [1]}))
    >>> len(to_implicit(d, threshold=4).interactions)
    1
    """
    feedback = _to_implicit_iv(data, threshold)
    inter = data.interactions
    if threshold is not None and feedback is not None:
        inter = inter.loc[inter[feedback] >= threshold]
    inter = inter.drop_duplicates([USER_ID, ITEM_ID], keep="first")
    return data.replace_interactions(inter)


def _to_implicit_iv(data: InteractionData, threshold: float | None) -> str | None:
    if threshold is None:
        return data.feedback
    if not isinstance(threshold, int | float) or not math.isfinite(threshold):
        raise InputError(f"`threshold` must be a finite number or None, got {threshold!r}")
    if data.feedback is None:
        raise InputError(MSG_NO_FEEDBACK.format(columns=", ".join(FEEDBACK_COLUMNS)))
    return data.feedback


def sample_interactions(
    data: InteractionData, n: int | None, *, rng: np.random.Generator | int | None = None
) -> InteractionData:
    """Draw a seeded uniform sample of ``n`` interactions without replacement.

    The paper samples 100,000 interactions of each dataset. When ``n`` is ``None``
    or at least the number of interactions, every interaction is kept (MovieLens
    100K is then used whole). Rows keep their original order.

    Parameters
    ----------
    data : InteractionData
        The interactions (usually after :func:`to_implicit`).
    n : int or None
        Sample size.
    rng : numpy.random.Generator, int or None
        Source of randomness.

    Returns
    -------
    InteractionData
        The sample; the users table keeps only sampled users.
    """
    n, gen = _sample_interactions_iv(n, rng)
    total = len(data.interactions)
    if n is None or n >= total:
        return data.replace_interactions(data.interactions.copy())
    rows = np.sort(gen.choice(total, size=n, replace=False))
    return data.replace_interactions(data.interactions.iloc[rows])


def _sample_interactions_iv(
    n: int | None, rng: np.random.Generator | int | None
) -> tuple[int | None, np.random.Generator]:
    if n is not None and (isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1):
        raise InputError(f"`n` must be a positive integer or None, got {n!r}")
    return (None if n is None else int(n)), as_generator(rng)


@dataclass(frozen=True)
class Split:
    """A per-user train/validation/test split of implicit interactions.

    Attributes
    ----------
    train, valid, test : pandas.DataFrame
        Disjoint parts of the interactions (same columns as the input).
    fractions : tuple of float
        The requested (train, valid, test) fractions.
    """

    train: pd.DataFrame
    valid: pd.DataFrame
    test: pd.DataFrame
    fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)

    @property
    def known(self) -> pd.DataFrame:
        """Train and validation interactions: what a model may know at test time."""
        return pd.concat([self.train, self.valid], ignore_index=True)

    def to_dict(self) -> dict[str, Any]:
        """Sizes of the three parts, for the results JSON."""
        return {
            "fractions": list(self.fractions),
            "n_train": len(self.train),
            "n_valid": len(self.valid),
            "n_test": len(self.test),
            "n_test_users": int(self.test[USER_ID].nunique()),
        }


def split_counts(n: npt.ArrayLike, fractions: tuple[float, float, float]) -> npt.NDArray[np.int64]:
    """Per-user (train, valid, test) sizes by RecBole's ratio-split rule.

    For ``n`` interactions, validation and test get ``floor(f * n)`` each and train
    the rest; then, while train keeps more than one interaction, a part whose share
    ``f * n`` lies strictly between 0 and 1 gets one interaction from train (test
    first, then validation). This is RecBole's ``_calcu_split_ids`` (used by the
    paper's RS 0.8/0.1/0.1 setting), vectorised.
    """
    n = np.asarray(n, dtype=np.int64)
    counts = np.empty((n.size, 3), dtype=np.int64)
    counts[:, 1] = np.floor(fractions[1] * n).astype(np.int64)
    counts[:, 2] = np.floor(fractions[2] * n).astype(np.int64)
    counts[:, 0] = n - counts[:, 1] - counts[:, 2]
    for part in (2, 1):
        share = fractions[part] * n
        bump = (counts[:, 0] > 1) & (share > 0) & (share < 1)
        counts[bump, part] += 1
        counts[bump, 0] -= 1
    return counts


def split_per_user(
    data: InteractionData,
    *,
    fractions: tuple[float, float, float] = (0.8, 0.1, 0.1),
    rng: np.random.Generator | int | None = None,
) -> Split:
    """Split each user's interactions at random into train/validation/test.

    Each user's interactions are shuffled with ``rng`` and cut by
    :func:`split_counts` (RecBole's rule), so every user with at least two
    interactions has one in train and at least one held out, and no user-item pair
    is in two parts.

    Parameters
    ----------
    data : InteractionData
        Implicit interactions (one row per user-item pair).
    fractions : tuple of 3 floats, default (0.8, 0.1, 0.1)
        Train, validation and test fractions; must sum to 1.
    rng : numpy.random.Generator, int or None
        Source of randomness.

    Returns
    -------
    Split
    """
    fractions, gen = _split_per_user_iv(data, fractions, rng)
    inter = data.interactions.reset_index(drop=True)
    order = gen.permutation(len(inter))
    shuffled = inter.iloc[order]
    codes, _ = pd.factorize(shuffled[USER_ID])
    # stable sort by user keeps the random order within each user
    by_user = np.argsort(codes, kind="stable")
    shuffled = shuffled.iloc[by_user]
    codes = codes[by_user]
    sizes = np.bincount(codes)
    position = np.arange(len(codes)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    counts = split_counts(sizes, fractions)
    n_train = counts[codes, 0]
    n_valid = counts[codes, 1]
    part = np.where(position < n_train, 0, np.where(position < n_train + n_valid, 1, 2))
    train, valid, test = (
        shuffled.loc[part == k].sort_index().reset_index(drop=True) for k in range(3)
    )
    return Split(train, valid, test, fractions=fractions)


def _split_per_user_iv(
    data: InteractionData,
    fractions: tuple[float, float, float],
    rng: np.random.Generator | int | None,
) -> tuple[tuple[float, float, float], np.random.Generator]:
    values = tuple(float(f) for f in fractions)
    if len(values) != 3 or any(f < 0 for f in values) or not math.isclose(sum(values), 1.0):
        raise InputError(
            f"`fractions` must be three non-negative numbers summing to 1, got {fractions!r}"
        )
    if data.interactions.duplicated([USER_ID, ITEM_ID]).any():
        raise InputError(
            "the interactions repeat user-item pairs; call `to_implicit` before splitting"
        )
    return (values[0], values[1], values[2]), as_generator(rng)


@dataclass(frozen=True)
class ProtectedGroups:
    """The protected attribute, its protected value and each user's group.

    Attributes
    ----------
    attribute : str
        Users-table column, e.g. ``"gender"``.
    protected : str
        The value that defines the protected (minority) group, e.g. ``"F"``; every
        other value is the unprotected group.
    users : pandas.DataFrame
        ``user_id``, the attribute and ``group`` (``"protected"``/``"unprotected"``)
        for every user with interactions.
    """

    attribute: str
    protected: str
    users: pd.DataFrame
    sizes: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Attribute, protected value and group sizes, for the results JSON."""
        return {"attribute": self.attribute, "protected": self.protected, "sizes": self.sizes}


def protected_groups(
    data: InteractionData,
    *,
    attribute: str,
    protected: Any,
    min_group_size: int = 20,
    drop_missing: bool = False,
) -> tuple[ProtectedGroups, InteractionData]:
    """Assign every user with interactions to the protected or unprotected group.

    The protected value is compared with the attribute values as text, so
    ``protected="F"`` matches a ``gender`` column of ``"F"`` and ``protected="1"``
    an integer column holding ``1``.

    Parameters
    ----------
    data : InteractionData
        Interactions and users.
    attribute : str
        Users-table column holding the protected attribute.
    protected : object
        The value defining the protected group.
    min_group_size : int, default 20
        Smallest allowed number of users per group.
    drop_missing : bool, default False
        Drop users without an attribute value (and their interactions) instead of
        raising.

    Returns
    -------
    groups : ProtectedGroups
    data : InteractionData
        ``data`` itself, or without the users lacking the attribute when
        ``drop_missing`` is set.

    Raises
    ------
    InputError
        When the attribute is not a column, the protected value does not occur,
        users lack the attribute (without ``drop_missing``), or a group is smaller
        than ``min_group_size`` (the message names the group and its size).
    """
    _protected_groups_iv(data, attribute, min_group_size)
    active = data.users[data.users[USER_ID].isin(data.interactions[USER_ID].unique())]
    missing_ids = set(data.interactions[USER_ID].unique()) - set(active[USER_ID])
    missing = active[attribute].isna() | active[attribute].astype(str).str.strip().eq("")
    n_missing = int(missing.sum()) + len(missing_ids)
    if n_missing:
        if not drop_missing:
            raise InputError(MSG_NAN_ATTRIBUTE.format(count=n_missing, attribute=attribute))
        active = active.loc[~missing]
        data = data.replace_interactions(
            data.interactions.loc[data.interactions[USER_ID].isin(active[USER_ID])]
        )
    text = active[attribute].astype(str)
    is_protected = text.eq(str(protected))
    if not is_protected.any():
        values = ", ".join(repr(v) for v in sorted(text.unique())[:20])
        raise InputError(
            MSG_PROTECTED_ABSENT.format(
                protected=str(protected), attribute=attribute, values=values
            )
        )
    if is_protected.all():
        raise InputError(MSG_SINGLE_GROUP.format(attribute=attribute, protected=str(protected)))
    users = active[[USER_ID, attribute]].reset_index(drop=True)
    users["group"] = np.where(is_protected.to_numpy(), PROTECTED, UNPROTECTED)
    sizes = {PROTECTED: int(is_protected.sum()), UNPROTECTED: int((~is_protected).sum())}
    for group, rule in ((PROTECTED, "=="), (UNPROTECTED, "!=")):
        if sizes[group] < min_group_size:
            raise InputError(
                MSG_GROUP_TOO_SMALL.format(
                    group=group,
                    attribute=attribute,
                    rule=f"{rule} {str(protected)!r}",
                    size=sizes[group],
                    min_size=min_group_size,
                )
            )
    return ProtectedGroups(attribute, str(protected), users, sizes), data


def _protected_groups_iv(data: InteractionData, attribute: str, min_group_size: int) -> None:
    if attribute not in data.users.columns:
        raise InputError(
            MSG_ATTRIBUTE_ABSENT.format(
                attribute=attribute, columns=", ".join(map(str, data.users.columns))
            )
        )
    if (
        isinstance(min_group_size, bool)
        or not isinstance(min_group_size, int)
        or min_group_size < 1
    ):
        raise InputError(f"`min_group_size` must be a positive integer, got {min_group_size!r}")


@dataclass(frozen=True)
class LongTailStats:
    """How concentrated the interactions are on few items.

    Attributes
    ----------
    n_interactions, n_users, n_items : int
        Sizes (items = items with at least one interaction).
    top_fraction : float
        The head of the catalogue considered, 0.2 for "the top-20% items".
    top_share : float
        Share of all interactions that fall on the ``ceil(top_fraction * n_items)``
        most popular items.
    gini : float
        Gini index of the interactions-per-item distribution (0 = uniform).
    interactions_per_item : pandas.Series
        Interactions per item, most popular first (the long-tail plot).
    """

    n_interactions: int
    n_users: int
    n_items: int
    top_fraction: float
    top_share: float
    gini: float
    interactions_per_item: pd.Series

    def to_dict(self) -> dict[str, Any]:
        """Every number except the per-item series, for the results JSON."""
        counts = self.interactions_per_item.to_numpy()
        return {
            "n_interactions": self.n_interactions,
            "n_users": self.n_users,
            "n_items": self.n_items,
            "density": self.n_interactions / (self.n_users * self.n_items),
            "top_fraction": self.top_fraction,
            "top_share": self.top_share,
            "gini": self.gini,
            "interactions_per_item": {
                "max": int(counts.max()),
                "median": float(np.median(counts)),
                "min": int(counts.min()),
            },
        }


def gini(values: npt.ArrayLike) -> float:
    """Gini index of non-negative values.

    ``G = sum_i (2i - n - 1) x_(i) / (n sum x)`` with ``x_(1) <= ... <= x_(n)``;
    0 for a uniform distribution, ``(n-1)/n`` when one item has everything.
    """
    x = np.sort(np.asarray(values, dtype=float))
    n = x.size
    total = x.sum()
    if n == 0 or total == 0:
        return float("nan")
    i = np.arange(1, n + 1)
    return float(np.sum((2 * i - n - 1) * x) / (n * total))


def long_tail_stats(interactions: pd.DataFrame, *, top_fraction: float = 0.2) -> LongTailStats:
    """Long-tail statistics of item popularity.

    Parameters
    ----------
    interactions : pandas.DataFrame
        With columns ``user_id`` and ``item_id`` (e.g. ``InteractionData.interactions``).
    top_fraction : float, default 0.2
        The head of the catalogue: the share of interactions on the
        ``ceil(top_fraction * n_items)`` most popular items is reported.

    Returns
    -------
    LongTailStats
    """
    _long_tail_stats_iv(interactions, top_fraction)
    counts = interactions[ITEM_ID].value_counts(sort=True)
    counts.index.name = ITEM_ID
    counts.name = "interactions"
    n_items = len(counts)
    n_top = math.ceil(top_fraction * n_items)
    values = counts.to_numpy()
    return LongTailStats(
        n_interactions=len(interactions),
        n_users=int(interactions[USER_ID].nunique()),
        n_items=n_items,
        top_fraction=top_fraction,
        top_share=float(values[:n_top].sum() / values.sum()),
        gini=gini(values),
        interactions_per_item=counts,
    )


def _long_tail_stats_iv(interactions: pd.DataFrame, top_fraction: float) -> None:
    for column in (USER_ID, ITEM_ID):
        if column not in interactions.columns:
            raise InputError(
                MSG_MISSING_COLUMN.format(
                    table="interactions",
                    column=column,
                    columns=", ".join(map(str, interactions.columns)),
                )
            )
    if len(interactions) == 0:
        raise InputError("`interactions` is empty")
    if not 0 < top_fraction <= 1:
        raise InputError(f"`top_fraction` must be in (0, 1], got {top_fraction!r}")
