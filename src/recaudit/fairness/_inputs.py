"""Input validation of :func:`~recaudit.fairness.evaluate`: tables, groups, catalog.

:func:`_evaluate_iv` checks the data once and returns :class:`_Inputs`: the top-N
lists of the evaluated users (those with a test item), their group labels, the
catalog size and the training popularity. The options are validated by
:class:`~recaudit.fairness.EvaluateOptions` itself.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._io import plain
from .._limits import check_fairness_sizes
from .._stats import as_generator
from ..exceptions import InputError
from ._metrics import TopNLists, _columns_iv, _union_index, build_top_n
from ._options import EvaluateOptions, _int_iv
from .popularity._metrics import head_items
from .popularity._source import _popularity_source, _PopularitySource, _sortable
from .popularity._user_groups import GROUP_COLUMN, PopularityGrouping, add_popularity_groups

GROUP_SEPARATOR = " & "

ATTRIBUTE_MSG = (
    "`attribute` must be a column name or a non-empty list of column names, got {value!r}"
)
USERS_DUPLICATE_MSG = "`users` has duplicated user_id {user!r} at row {row}"
ATTRIBUTE_NAN_MSG = "`users` column `{column}` is missing for user_id {user!r} (row {row})"
PROTECTED_ARITY_MSG = "`protected` must give one value per attribute {attributes}, got {value!r}"
PROTECTED_ABSENT_MSG = "protected group {group!r} has no evaluated user (groups present: {present})"
NO_UNPROTECTED_MSG = "every evaluated user is in the protected group {group!r}: nothing to compare"
SMALL_GROUP_MSG = (
    "group {group!r} has {size} evaluated users, fewer than `min_group_size` = {minimum}"
)
CATALOG_BOTH_MSG = "give the catalog as `items` or as `n_items`, not both"
ITEMS_DUPLICATE_MSG = "`items` has duplicated item_id {item!r} at row {row}"
TRAIN_ITEM_MSG = "`train` has item_id {item!r} (row {row}) that is not in the item catalog `items`"
N_ITEMS_SMALL_MSG = (
    "`n_items` = {n_items} is smaller than the {seen} distinct items in recs/test/train"
)
NO_EVALUATED_MSG = "no user has a test item: nothing to evaluate"
OPTIONS_MSG = "`options` must be an EvaluateOptions, got {value!r}"
POPULARITY_GROUP_MSG = (
    "`attribute` '" + GROUP_COLUMN + "' is computed from the training interactions: pass "
    "`train` (user_id, item_id), or add the column with add_popularity_groups(users, train)"
)


@dataclass(frozen=True)
class _Inputs:
    """The validated data of one evaluation (evaluated users only)."""

    lists: TopNLists
    groups: npt.NDArray[np.str_]
    attributes: tuple[str, ...]
    protected: str
    n_items: int
    catalog_source: str
    item_index: pd.Index
    popularity: npt.NDArray[np.float64] | None
    head: npt.NDArray[np.bool_] | None
    popularity_source: _PopularitySource | None
    popularity_reason: str | None
    n_users_excluded: int
    options: EvaluateOptions
    rng: np.random.Generator

    @property
    def ns(self) -> tuple[int, ...]:
        """The cut-offs, ascending."""
        return self.options.n


def _first_true(mask: npt.NDArray[np.bool_]) -> int:
    return int(np.argmax(mask))


def _group_labels(users: pd.DataFrame, attributes: tuple[str, ...]) -> pd.Series:
    for column in attributes:
        isna = users[column].isna().to_numpy()
        if isna.any():
            pos = _first_true(isna)
            raise InputError(
                ATTRIBUTE_NAN_MSG.format(
                    column=column, user=plain(users["user_id"].iloc[pos]), row=pos + 1
                )
            )
    labels = users[attributes[0]].astype(str)
    for column in attributes[1:]:
        labels = labels + GROUP_SEPARATOR + users[column].astype(str)
    return labels


def _attributes_iv(attribute: str | Sequence[str], users: pd.DataFrame) -> tuple[str, ...]:
    attributes = (attribute,) if isinstance(attribute, str) else tuple(attribute)
    if not attributes or not all(isinstance(a, str) for a in attributes):
        raise InputError(ATTRIBUTE_MSG.format(value=attribute))
    _columns_iv(users, "users", ("user_id",))
    missing = [a for a in attributes if a not in users.columns]
    if missing:
        raise InputError(
            f"`users` must have the attribute columns {list(attributes)}; missing {missing}"
        )
    dup = users["user_id"].duplicated().to_numpy()
    if dup.any():
        pos = _first_true(dup)
        raise InputError(
            USERS_DUPLICATE_MSG.format(user=plain(users["user_id"].iloc[pos]), row=pos + 1)
        )
    return attributes


def _protected_iv(protected: Hashable | Sequence[Hashable], attributes: tuple[str, ...]) -> str:
    values: tuple[Any, ...]
    if isinstance(protected, list | tuple):
        values = tuple(protected)
    elif isinstance(protected, str) and len(attributes) > 1:
        values = tuple(protected.split(GROUP_SEPARATOR))
    else:
        values = (protected,)
    if len(values) != len(attributes):
        raise InputError(
            PROTECTED_ARITY_MSG.format(attributes=list(attributes), value=plain(protected))
        )
    return GROUP_SEPARATOR.join(str(v) for v in values)


def _catalog_iv(
    recs: pd.DataFrame,
    test: pd.DataFrame,
    train: pd.DataFrame | None,
    items: pd.DataFrame | None,
    n_items: int | None,
) -> tuple[pd.Index, int, str]:
    if items is not None and n_items is not None:
        raise InputError(CATALOG_BOTH_MSG)
    if items is not None:
        _columns_iv(items, "items", ("item_id",))
        dup = items["item_id"].duplicated().to_numpy()
        if dup.any():
            pos = _first_true(dup)
            raise InputError(
                ITEMS_DUPLICATE_MSG.format(item=plain(items["item_id"].iloc[pos]), row=pos + 1)
            )
        index = pd.Index(items["item_id"].to_numpy())
        return index, len(index), "items"
    tables = [recs, test] if train is None else [recs, test, train]
    index = _union_index([t["item_id"].to_numpy() for t in tables])
    if n_items is None:
        return index, len(index), "observed"
    size = _int_iv(n_items, "n_items", 1)
    if size < len(index):
        raise InputError(N_ITEMS_SMALL_MSG.format(n_items=size, seen=len(index)))
    return index, size, "n_items"


def _popularity_iv(
    train: pd.DataFrame | None, item_index: pd.Index, size: int
) -> npt.NDArray[np.float64] | None:
    """Interactions per catalog item in ``train`` (``None`` without it)."""
    if train is None:
        return None
    codes = item_index.get_indexer(train["item_id"].to_numpy())
    if (codes < 0).any():
        pos = _first_true(codes < 0)
        raise InputError(TRAIN_ITEM_MSG.format(item=plain(train["item_id"].iloc[pos]), row=pos + 1))
    return np.bincount(codes, minlength=size).astype(np.float64)


def _head(
    popularity: npt.NDArray[np.float64] | None, source: _PopularitySource | None,
    item_index: pd.Index,
) -> npt.NDArray[np.bool_] | None:
    """The one head of every popularity figure of the lists, over the ``len(popularity)``
    catalog: the popularity-bias metrics' (:func:`~recaudit.fairness.head_items` of the
    distinct training users per item) when they are computed, else the same rule on the
    training interactions per item (``train`` without ``user_id``)."""
    if popularity is None:
        return None
    coded = len(item_index)
    head = np.zeros(popularity.size, dtype=bool)
    head[:coded] = (source.is_head if source is not None else head_items(
        popularity[:coded], _sortable(item_index.to_numpy()), n_items=popularity.size))
    return head


def _popularity_group_iv(
    users: pd.DataFrame, attribute: str | Sequence[str], train: pd.DataFrame | None,
    grouping: PopularityGrouping, n_items: int,
) -> pd.DataFrame:
    """``users`` with the ``popularity_group`` column when it is asked for and absent,
    its head that of the ``n_items`` catalog (the popularity metrics' own).

    A users table that has its own ``popularity_group`` column keeps it.
    """
    names = [attribute] if isinstance(attribute, str) else attribute
    wanted = isinstance(names, Sequence) and GROUP_COLUMN in list(names)
    if not wanted or not isinstance(users, pd.DataFrame) or GROUP_COLUMN in users.columns:
        return users
    if train is None:
        raise InputError(POPULARITY_GROUP_MSG)
    return add_popularity_groups(users, train, **grouping.arguments, n_items=n_items)


def _groups_iv(
    labels: pd.Series, evaluated: npt.NDArray[np.bool_], protected: str, min_group_size: int
) -> npt.NDArray[np.str_]:
    """The evaluated users' group labels, after checking every group's size."""
    if not evaluated.any():
        raise InputError(NO_EVALUATED_MSG)
    groups = labels.to_numpy()[evaluated].astype(str)
    names, sizes = np.unique(groups, return_counts=True)
    if protected not in names:
        raise InputError(
            PROTECTED_ABSENT_MSG.format(group=plain(protected), present=names.tolist())
        )
    if names.size < 2:
        raise InputError(NO_UNPROTECTED_MSG.format(group=plain(protected)))
    for name, count in zip(names, sizes, strict=True):
        if count < min_group_size:
            raise InputError(
                SMALL_GROUP_MSG.format(group=plain(name), size=count, minimum=min_group_size)
            )
    return groups


def _evaluate_iv(
    recs: pd.DataFrame,
    test: pd.DataFrame,
    users: pd.DataFrame,
    *,
    attribute: str | Sequence[str],
    protected: Hashable | Sequence[Hashable],
    n_items: int | None,
    items: pd.DataFrame | None,
    train: pd.DataFrame | None,
    options: EvaluateOptions,
    rng: np.random.Generator | int | None,
) -> _Inputs:
    """Check the data of :func:`~recaudit.fairness.evaluate`; see it for the rules."""
    if not isinstance(options, EvaluateOptions):
        raise InputError(OPTIONS_MSG.format(value=options))
    generator = as_generator(rng)
    _columns_iv(recs, "recs", ("user_id", "item_id", "rank"))
    _columns_iv(test, "test", ("user_id", "item_id"))
    if train is not None:
        _columns_iv(train, "train", ("item_id",))
    item_index, size, source = _catalog_iv(recs, test, train, items, n_items)
    users = _popularity_group_iv(users, attribute, train, options.popularity_groups, size)
    attributes = _attributes_iv(attribute, users)
    labels = _group_labels(users, attributes)
    protected_name = _protected_iv(protected, attributes)
    check_fairness_sizes(n_max=options.n[-1], n_users=len(users))
    lists = build_top_n(
        recs,
        test,
        user_index=pd.Index(users["user_id"].to_numpy()),
        item_index=item_index,
        n_max=options.n[-1],
    )
    popularity = _popularity_iv(train, item_index, size)
    evaluated = lists.n_relevant > 0
    groups = _groups_iv(labels, evaluated, protected_name, options.min_group_size)
    pop_source, reason = _popularity_source(
        train, test, item_index, size, lists.user_ids[evaluated], options.popularity_groups
    )
    return _Inputs(
        lists=lists.subset(evaluated),
        groups=groups,
        attributes=attributes,
        protected=protected_name,
        n_items=size,
        catalog_source=source,
        item_index=item_index,
        popularity=popularity,
        head=_head(popularity, pop_source, item_index),
        popularity_source=pop_source,
        popularity_reason=reason,
        n_users_excluded=int((~evaluated).sum()),
        options=options,
        rng=generator,
    )
