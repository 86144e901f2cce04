r"""The popularity-bias metrics inside :func:`~recaudit.fairness.evaluate`.

ARP, APLT, ACLT, PopRSP, PopREO and novelty (:mod:`._popularity`, where the formulas
are) of the evaluated users' lists, overall and per group, with the same user-level
stratified bootstrap as the top-N metrics:

- :func:`_popularity_source`: the training side, coded once by the input validation
  (popularity = distinct training users per item, the head, each evaluated user's
  head/tail counts in train and test), or the reason why the metrics are not computed
  (no ``train``, a ``train`` without ``user_id``, an empty ``train``);
- :class:`_PopularityValues`: the per-user user-mean columns and the PopRSP/PopREO
  count vectors; :meth:`_PopularityValues.statistics` turns user weights (one row =
  every user once, or a chunk of bootstrap weight rows) into every ``<metric>@<N>``
  at once (user means nan-aware: ARP and novelty are ``nan`` for a user without a
  list and left out of the mean);
- :class:`PopularityBias`: the result, with ``to_dict``/``from_dict``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._stats import Estimate
from ..exceptions import InputError
from . import _from_json as js
from ._metrics import TopNLists, _codes, _columns_iv
from ._popularity import (
    POPULARITY_METRICS,
    USER_MEAN_METRICS,
    PopularityCounts,
    _parity_of_sums,
    _per_user_group_counts,
    head_items,
    popularity_kernel,
)

__all__ = ["PopularityBias"]

NO_TRAIN_REASON = "not computed: no `train` table (pass `train` / `--train` with user_id, item_id)"
NO_TRAIN_USER_REASON = (
    "not computed: `train` has no `user_id` column (popularity counts distinct training "
    "users, and PopRSP needs each user's training items)"
)
EMPTY_TRAIN_REASON = "not computed: `train` holds no interaction"
HEAD_RULE = (
    "ceil(20 %) most popular catalog items by distinct training users "
    "(ties to the smaller item_id); tail = every other catalog item"
)
SECTION_WHERE = "popularity_bias"


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
) -> tuple[_PopularitySource | None, str | None]:
    """The coded training side, or ``(None, reason)`` when the metrics are not computed.

    ``train``'s items are already checked against the catalog; ``user_ids`` are the
    evaluated users (rows of the lists), training users outside them count only in
    the popularity and ``n_train_users``.
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
    is_head = head_items(popularity, _sortable(item_index.to_numpy()), n_items=n_items)
    users = _codes(train["user_id"], user_ids)
    train_head, train_tail = _per_user_group_counts(users, items, is_head, len(user_ids))
    t_users, t_items = _codes(test["user_id"], user_ids), _codes(test["item_id"], item_index)
    test_head, test_tail = _per_user_group_counts(t_users, t_items, is_head, len(user_ids))
    source = _PopularitySource(
        popularity=popularity,
        is_head=is_head,
        n_items=n_items,
        n_train_users=int(everyone.max()) + 1,
        train_head=train_head,
        train_tail=train_tail,
        test_head=test_head,
        test_tail=test_tail,
    )
    return source, None


@dataclass(frozen=True)
class _PopularityValues:
    """Per-user columns of one set of users (internal).

    ``means``: ``(users, len(USER_MEAN_METRICS) * n_cuts)``, metric-major; ``rsp`` and
    ``reo``: the stacked count vectors of :meth:`PopularityCounts.stacked`.
    """

    means: npt.NDArray[np.float64]
    rsp: npt.NDArray[np.float64]
    reo: npt.NDArray[np.float64]
    ns: tuple[int, ...]

    @classmethod
    def of(
        cls, source: _PopularitySource, lists: TopNLists, ns: tuple[int, ...]
    ) -> _PopularityValues:
        """The values of every evaluated user (:func:`popularity_kernel`)."""
        per_user, counts = popularity_kernel(
            lists.items, lists.hits, popularity=source.popularity, is_head=source.is_head,
            n_items=source.n_items, n_train_users=source.n_train_users,
            train_head=source.train_head, train_tail=source.train_tail,
            test_head=source.test_head, test_tail=source.test_tail, n=ns,
        )
        return cls._from(per_user, counts, ns)

    @classmethod
    def _from(
        cls, per_user: dict[str, npt.NDArray[np.float64]], counts: PopularityCounts,
        ns: tuple[int, ...],
    ) -> _PopularityValues:
        rsp, reo = counts.stacked()
        return cls(np.hstack([per_user[m] for m in USER_MEAN_METRICS]), rsp, reo, ns)

    @property
    def keys(self) -> list[str]:
        """``<metric>@<N>`` of :meth:`statistics`' columns (metric-major)."""
        return [f"{m}@{c}" for m in POPULARITY_METRICS for c in self.ns]

    def subset(self, idx: npt.NDArray[np.intp]) -> _PopularityValues:
        """The rows of the users ``idx``."""
        return _PopularityValues(self.means[idx], self.rsp[idx], self.reo[idx], self.ns)

    def statistics(self, weights: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Every metric under user weights ``(b, users)``: ``(b, len(keys))``.

        User means are weighted means over the users with a defined value (``nan``
        when none); PopRSP/PopREO are std/mean of the weighted ratios of sums.
        """
        n_cuts = len(self.ns)
        finite = np.isfinite(self.means)
        with np.errstate(divide="ignore", invalid="ignore"):
            means = (weights @ np.where(finite, self.means, 0.0)) / (weights @ finite)
        by_name = {
            m: means[:, j * n_cuts : (j + 1) * n_cuts] for j, m in enumerate(USER_MEAN_METRICS)
        }
        by_name["poprsp"] = _parity_of_sums(weights @ self.rsp, n_cuts)
        by_name["popreo"] = _parity_of_sums(weights @ self.reo, n_cuts)
        return np.hstack([by_name[m] for m in POPULARITY_METRICS])

    def point(self) -> npt.NDArray[np.float64]:
        """:meth:`statistics` with every user once: ``(len(keys),)``."""
        return self.statistics(np.ones((1, self.means.shape[0])))[0]


@dataclass(frozen=True)
class _PopularityReplicates:
    """The per-group values behind the bootstrap replicates (internal)."""

    everyone: _PopularityValues
    groups: list[_PopularityValues]
    members: list[npt.NDArray[np.intp]]

    @classmethod
    def of(
        cls, values: _PopularityValues, members: list[npt.NDArray[np.intp]]
    ) -> _PopularityReplicates:
        return cls(values, [values.subset(idx) for idx in members], members)

    def chunk(self, wf: npt.NDArray[np.float64]) -> dict[str, npt.NDArray[np.float64]]:
        """``{"pop_overall": (b, K), "pop_groups": (b, G, K)}`` of one chunk of weights."""
        groups = [
            v.statistics(wf[:, idx]) for v, idx in zip(self.groups, self.members, strict=True)
        ]
        return {
            "pop_overall": self.everyone.statistics(wf),
            "pop_groups": np.stack(groups, axis=1),
        }


@dataclass(frozen=True)
class PopularityBias:
    r"""Popularity-bias metrics of an evaluation, overall and per group, with CIs.

    ``<metric>@<N>`` for every metric of ``arp, aplt, aclt, poprsp, popreo, novelty``
    and cut-off (definitions in ``docs/fairness-metrics.md`` and
    :mod:`recaudit.fairness._popularity`): the head is the ``ceil(20 %)`` most popular
    catalog items by distinct training users. User means (ARP, APLT, ACLT, novelty)
    and the ratios of sums (PopRSP, PopREO) are taken over the group's evaluated users;
    CIs come from the evaluation's stratified user bootstrap.

    Attributes
    ----------
    overall : Mapping[str, Estimate]
        Over every evaluated user.
    groups : Mapping[str, Mapping[str, Estimate]]
        Group name -> its values (protected group first).
    n_head_items : int
        Size of the head.
    n_train_users : int
        Distinct users of ``train`` (novelty's normaliser).
    """

    overall: Mapping[str, Estimate]
    groups: Mapping[str, Mapping[str, Estimate]]
    n_head_items: int
    n_train_users: int

    def to_dict(self) -> dict[str, Any]:
        """``{"head", "n_head_items", "n_train_users", "overall": {...}, "groups": {...}}``."""
        return {
            "head": HEAD_RULE,
            "n_head_items": self.n_head_items,
            "n_train_users": self.n_train_users,
            "overall": {key: est.to_dict() for key, est in self.overall.items()},
            "groups": {
                name: {key: est.to_dict() for key, est in table.items()}
                for name, table in self.groups.items()
            },
        }

    @classmethod
    def from_dict(
        cls, obj: Any, *, level: float, missing: str, where: str = SECTION_WHERE
    ) -> PopularityBias:
        """Read :meth:`to_dict`'s JSON back (``level``/``missing``: as for the groups)."""
        if not isinstance(obj, Mapping):
            raise InputError(f"{where} must be a JSON object or null")
        groups = js.need(obj, where, "groups")
        if not isinstance(groups, Mapping):
            raise InputError(f"{where}.groups must be a JSON object")
        return cls(
            overall=_section(js.need(obj, where, "overall"), f"{where}.overall", level, missing),
            groups={
                str(name): _section(table, f"{where}.groups.{name}", level, missing)
                for name, table in groups.items()
            },
            n_head_items=int(js.need(obj, where, "n_head_items")),
            n_train_users=int(js.need(obj, where, "n_train_users")),
        )


def _section(obj: Any, where: str, level: float, missing: str) -> dict[str, Estimate]:
    """The ``<metric>@<N>`` popularity-bias estimates of a JSON object, in reporting order."""
    if not isinstance(obj, Mapping):
        raise InputError(js.SECTION_MSG.format(where=where))
    found = {}
    for key, value in obj.items():
        parsed = js.metric_key(key)
        if parsed is not None and parsed[0] in POPULARITY_METRICS:
            found[parsed] = value
    ordered = sorted(found, key=lambda mn: (POPULARITY_METRICS.index(mn[0]), mn[1]))
    return {
        f"{m}@{n}": js.estimate(found[(m, n)], f"{where}.{m}@{n}", level, missing)
        for m, n in ordered
    }
