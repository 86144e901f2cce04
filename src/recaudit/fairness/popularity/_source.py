"""The training side of the popularity-bias metrics, coded once (internal).

:func:`_popularity_source` turns the ``train`` table into what every statistic of
:mod:`._result` reads: item popularity (distinct training users), the head,
each evaluated user's head/tail counts in train and test and profile, the popularity
groups' codes, and what the bootstrap's recount (:mod:`._recount`) and re-cut
(:mod:`._regroup`) hold fixed -- or the reason why the metrics are not
computed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import scipy.sparse as sp

from .._metrics import _codes, _columns_iv
from ._metrics import _per_user_group_counts, head_items
from ._recount import _incidence, _TrainingSide
from ._regroup import _Regroup, _regroup
from ._user_groups import DEFAULT_GROUPING, PopularityGrouping, user_popularity_groups

NO_TRAIN_REASON = "not computed: no `train` table (pass `train` / `--train` with user_id, item_id)"
NO_TRAIN_USER_REASON = (
    "not computed: `train` has no `user_id` column (popularity counts distinct training "
    "users, and PopRSP needs each user's training items)"
)
EMPTY_TRAIN_REASON = "not computed: `train` holds no interaction"


@dataclass(frozen=True)
class _PopularitySource:
    """The training side of the metrics, for the evaluated users (internal)."""

    popularity: npt.NDArray[np.float64]
    is_head: npt.NDArray[np.bool_]
    n_items: int
    n_train_users: int
    train_head: npt.NDArray[np.int64]
    train_tail: npt.NDArray[np.int64]
    test_head: npt.NDArray[np.int64]
    test_tail: npt.NDArray[np.int64]
    profile: npt.NDArray[np.float64]
    popularity_group: npt.NDArray[np.intp] | None
    grouping: PopularityGrouping
    train_items: sp.csr_matrix
    test_items: sp.csr_matrix
    recount: _TrainingSide
    regroup: _Regroup | None


def _sortable(ids: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Item ids as given, or as strings when they do not compare (mixed types)."""
    try:
        np.lexsort((ids,))
    except TypeError:
        return ids.astype(str)
    return ids


def _popularity_source(
    train: pd.DataFrame | None,
    test: pd.DataFrame,
    item_index: pd.Index,
    n_items: int,
    user_ids: pd.Index,
    grouping: PopularityGrouping = DEFAULT_GROUPING,
) -> tuple[_PopularitySource | None, str | None]:
    """The coded training side, or ``(None, reason)`` when the metrics are not computed.

    ``train``'s items are already checked against the catalog; ``user_ids`` are the
    evaluated users (rows of the lists), training users outside them count only in
    the popularity and ``n_train_users``; ``grouping`` makes the popularity groups.
    """
    if train is None:
        return None, NO_TRAIN_REASON
    if "user_id" not in train.columns:
        return None, NO_TRAIN_USER_REASON
    if len(train) == 0:
        return None, EMPTY_TRAIN_REASON
    _columns_iv(train, "train", ("user_id", "item_id"))
    n_codes = max(len(item_index), 1)
    items = _codes(train["item_id"], item_index)
    everyone = pd.factorize(train["user_id"])[0].astype(np.int64)
    pairs = np.unique(everyone * n_codes + items)
    popularity = np.bincount(pairs % n_codes, minlength=len(item_index)).astype(np.float64)
    item_ids = _sortable(item_index.to_numpy())
    is_head = head_items(popularity, item_ids, n_items=n_items)
    users = _codes(train["user_id"], user_ids)
    train_head, train_tail = _per_user_group_counts(users, items, is_head, len(user_ids))
    t_users, t_items = _codes(test["user_id"], user_ids), _codes(test["item_id"], item_index)
    test_head, test_tail = _per_user_group_counts(t_users, t_items, is_head, len(user_ids))
    train_items = _incidence(users, items, len(user_ids), len(item_index))
    n_train_users = int(everyone.max()) + 1
    by_id = np.lexsort((item_ids,))
    popularity_group = _popularity_group_codes(train, user_ids, grouping, n_items)
    source = _PopularitySource(
        popularity=popularity,
        is_head=is_head,
        n_items=n_items,
        n_train_users=n_train_users,
        train_head=train_head,
        train_tail=train_tail,
        test_head=test_head,
        test_tail=test_tail,
        profile=_profile(users, items, popularity, (train_head, train_tail),
                         (test_head, test_tail)),
        popularity_group=popularity_group,
        grouping=grouping,
        train_items=train_items,
        test_items=_incidence(t_users, t_items, len(user_ids), len(item_index)),
        recount=_recount_side(train_items, popularity, n_train_users, is_head, n_items,
                              by_id),
        regroup=None if popularity_group is None else _regroup_of(
            train, items, user_ids, grouping, by_id, n_items),
    )
    return source, None


def _regroup_of(
    train: pd.DataFrame, items: npt.NDArray[np.int64], user_ids: pd.Index,
    grouping: PopularityGrouping, by_id: npt.NDArray[np.intp], n_items: int,
) -> _Regroup:
    """What re-cuts the popularity groups per resample: every training user (in
    ascending ``user_id``, the groups' tie rule) and their place among ``user_ids``."""
    codes, ids = pd.factorize(train["user_id"], sort=True)
    evaluated = _codes(pd.Series(ids.to_numpy()), user_ids).astype(np.intp)
    return _regroup(grouping, codes.astype(np.int64), items, len(ids), len(by_id),
                    evaluated, by_id, len(user_ids), n_items)


def _recount_side(
    train_items: sp.csr_matrix, popularity: npt.NDArray[np.float64], n_train_users: int,
    is_head: npt.NDArray[np.bool_], n_items: int, by_id: npt.NDArray[np.intp],
) -> _TrainingSide:
    """What a resample's recount holds fixed: the training users outside the evaluated
    ones (their counts and number), the head's size and its tie rule (``by_id``: the
    item codes in ascending item id)."""
    outside = n_train_users - int((np.diff(train_items.indptr) > 0).sum())
    return _TrainingSide(
        fixed_popularity=popularity - np.asarray(train_items.sum(axis=0)).ravel(),
        fixed_users=float(outside),
        by_id=by_id,
        n_head=int(is_head.sum()),
        n_items=n_items,
    )


def _profile(
    users: npt.NDArray[np.int64],
    items: npt.NDArray[np.int64],
    popularity: npt.NDArray[np.float64],
    train: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
    test: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
) -> npt.NDArray[np.float64]:
    """``(users, len(PROFILE_FIGURES))``; ``nan`` where a user has no training (test) item."""
    keep = users >= 0
    width = max(popularity.size, 1)
    keys = np.unique(users[keep] * width + items[keep])
    n_train, n_test = train[0] + train[1], test[0] + test[1]
    total = np.bincount(keys // width, weights=popularity[keys % width], minlength=n_train.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        columns = [total / n_train, train[1] / n_train, test[1] / n_test]
    return np.column_stack([np.where(d > 0, c, np.nan) for c, d in
                            zip(columns, (n_train, n_train, n_test), strict=True)])


def _popularity_group_codes(
    train: pd.DataFrame, user_ids: pd.Index, grouping: PopularityGrouping, n_items: int
) -> npt.NDArray[np.intp] | None:
    """Each evaluated user's index in ``grouping.labels`` (-1: not in ``train``);
    ``None`` when ``train`` has fewer than ``grouping.min_users`` users (no groups).
    The head is that of the ``n_items`` catalog, the popularity metrics' own."""
    if train["user_id"].nunique() < grouping.min_users:
        return None
    labels = user_popularity_groups(train, **grouping.arguments, n_items=n_items)
    pos = _codes(pd.Series(labels.index.to_numpy()), user_ids)
    codes = np.full(len(user_ids), -1, dtype=np.intp)
    code_of = {name: j for j, name in enumerate(grouping.labels)}
    codes[pos[pos >= 0]] = [code_of[v] for v in labels.to_numpy()[pos >= 0]]
    return codes
