"""User popularity groups: niche / diverse / blockbuster-focused users, or quantiles.

The popularity-bias literature's own disadvantaged groups are users by the popularity
of what they consume. Both groupings read only the training interactions
(``user_id, item_id``; a repeated pair counts once) and return one label per user, a
column that :func:`recaudit.fairness.evaluate` takes as an ``attribute`` -- alone or
intersected with gender (``attribute=["gender", "popularity_group"]``).

- ``method="abdollahpouri"`` (Abdollahpouri, Mansoury, Burke & Mobasher 2019, "The
  unfairness of popularity bias in recommendation", RMSE workshop at RecSys,
  arXiv:1907.13286; used again in Abdollahpouri et al. 2021, "User-centered
  evaluation of popularity bias in recommender systems", UMAP): the popular items
  ``H`` are the head (by default the ``ceil(20 %)`` most popular of ``n_items``
  catalog items, the head of :mod:`recaudit.fairness.popularity._metrics`; ``n_items``
  defaults to the distinct training items, and :func:`~recaudit.fairness.evaluate`
  passes its catalog, so the groups and the popularity metrics share one head;
  ``item_head="cumulative"``: the most popular items that together hold 20 % of the
  interactions, the ``H`` group of the UMAP'21 paper's head/mid/tail split). Each
  user's *head ratio* is the share of ``H`` among their distinct training items; the
  ``ceil(20 %)`` users with the highest ratio are ``blockbuster``, the ``ceil(20 %)``
  with the lowest ``niche``, the rest ``diverse``.
- ``method="quantile"``: users ranked by the mean popularity of their training items
  (popularity = distinct training users of the item), cut into ``q`` groups of equal
  size (sizes differ by at most one): ``q1`` (least mainstream) .. ``q<q>``.

Ties in the ranking statistic are broken by ascending ``user_id`` (deterministic;
tied users on a boundary may land in different groups).

:class:`PopularityGrouping` names one of these groupings by one string
(:func:`parse_popularity_groups`): ``"abdollahpouri"`` (the default),
``"abdollahpouri:cumulative"`` or ``"quantile:Q"`` -- the ``popularity_groups`` of
:class:`~recaudit.fairness.EvaluateOptions`, of the study config's ``[study]`` and of
``recaudit fairness evaluate --popularity-groups``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from ..._io import plain
from ...exceptions import InputError
from .._metrics import _columns_iv
from ._metrics import head_items

__all__ = [
    "DEFAULT_GROUPING",
    "GROUP_COLUMN",
    "PopularityGrouping",
    "add_popularity_groups",
    "parse_popularity_groups",
    "user_popularity_groups",
]

#: Default name of the attribute column.
GROUP_COLUMN = "popularity_group"
#: Labels of ``method="abdollahpouri"``, least to most mainstream.
ABDOLLAHPOURI_LABELS = ("niche", "diverse", "blockbuster")
USER_SHARE = 0.2

METHOD_MSG = "`method` must be 'abdollahpouri' or 'quantile', got {value!r}"
ITEM_HEAD_MSG = "`item_head` must be 'top_items' or 'cumulative', got {value!r}"
Q_MSG = "`q` must be an integer >= 2 and <= the number of users ({n}), got {value!r}"
N_ITEMS_MSG = (
    "`n_items` (the catalog size) must be an integer >= the {k} distinct training items, "
    "got {value!r}"
)
FEW_USERS_MSG = "popularity groups need at least 3 users with training interactions, got {n}"
NO_TRAIN_MSG = (
    "`users` has user_id {user!r} (row {row}) without training interactions: "
    "popularity groups are defined from `train` only; drop such users first"
)
COLUMN_EXISTS_MSG = "`users` already has a column `{column}`; pass another `column`"
GROUPING_MSG = (
    "{name} must be 'abdollahpouri', 'abdollahpouri:cumulative' or 'quantile:Q' with Q an "
    "integer >= 2 (e.g. 'quantile:4'), got {value!r}"
)
_QUANTILE = re.compile(r"^quantile:([1-9][0-9]*)$")


def _cumulative_head(
    pop: npt.NDArray[np.float64], ids: npt.NDArray[np.generic]
) -> npt.NDArray[np.bool_]:
    """The most popular items holding ``USER_SHARE`` of all interactions (at least one)."""
    order = np.lexsort((ids, -pop))
    cum = np.cumsum(pop[order])
    k = int(np.searchsorted(cum, USER_SHARE * cum[-1] - 1e-9 * cum[-1]) + 1)
    out = np.zeros(pop.size, dtype=bool)
    out[order[:k]] = True
    return out


def _ranks(stat: npt.NDArray[np.float64], ids: npt.NDArray[np.generic]) -> npt.NDArray[np.intp]:
    """Rank of each user (0 = smallest statistic), ties by ascending id."""
    order = np.lexsort((ids, stat))
    ranks = np.empty(stat.size, dtype=np.intp)
    ranks[order] = np.arange(stat.size)
    return ranks


def user_popularity_groups(
    train: pd.DataFrame,
    *,
    method: Literal["abdollahpouri", "quantile"] = "abdollahpouri",
    q: int = 3,
    item_head: Literal["top_items", "cumulative"] = "top_items",
    n_items: int | None = None,
) -> pd.Series:
    """One popularity-group label per training user (see the module docstring).

    Parameters
    ----------
    train : pandas.DataFrame
        ``user_id, item_id`` training interactions.
    method : {"abdollahpouri", "quantile"}
    q : int
        Number of quantile groups (``method="quantile"``).
    item_head : {"top_items", "cumulative"}
        The popular items of ``method="abdollahpouri"``.
    n_items : int, optional
        Catalog size of the ``"top_items"`` head, ``ceil(20 %)`` of it (catalog items
        outside ``train`` are tail); default: the distinct training items. Give the
        catalog that the popularity metrics use (``evaluate`` does), or a user's group
        is cut by a smaller head than the one their tail share is measured by.

    Returns
    -------
    pandas.Series
        Index ``user_id`` (sorted), values the labels, name :data:`GROUP_COLUMN`.

    Examples
    --------
    >>> import pandas as pd
    >>> train = pd.DataFrame({"user_id": [1, 1, 2, 2, 3, 3, 4, 5],
    ...                       "item_id": [0, 1, 0, 2, 3, 4, 0, 4]})
    >>> user_popularity_groups(train).tolist()
    ['diverse', 'diverse', 'niche', 'blockbuster', 'diverse']
    """
    if method not in ("abdollahpouri", "quantile"):
        raise InputError(METHOD_MSG.format(value=method))
    if item_head not in ("top_items", "cumulative"):
        raise InputError(ITEM_HEAD_MSG.format(value=item_head))
    _columns_iv(train, "train", ("user_id", "item_id"))
    pairs = train[["user_id", "item_id"]].drop_duplicates()
    ucode, users = pd.factorize(pairs["user_id"], sort=True)
    icode, items = pd.factorize(pairs["item_id"], sort=True)
    n_users = len(users)
    if n_users < 3:
        raise InputError(FEW_USERS_MSG.format(n=n_users))
    pop = np.bincount(icode, minlength=len(items)).astype(np.float64)
    catalog = _n_items_iv(n_items, len(items))
    uids = users.to_numpy()
    if method == "quantile":
        if not isinstance(q, int | np.integer) or isinstance(q, bool) or not 2 <= q <= n_users:
            raise InputError(Q_MSG.format(n=n_users, value=q))
        mean_pop = np.bincount(ucode, weights=pop[icode], minlength=n_users) / np.bincount(ucode)
        group = _ranks(mean_pop, uids) * int(q) // n_users
        labels = np.array([f"q{g + 1}" for g in group], dtype=object)
    else:
        head = (
            head_items(pop, items.to_numpy(), n_items=catalog)
            if item_head == "top_items"
            else _cumulative_head(pop, items.to_numpy())
        )
        ratio = np.bincount(ucode, weights=head[icode], minlength=n_users) / np.bincount(ucode)
        k = int(np.ceil(USER_SHARE * n_users))
        rank = _ranks(ratio, uids)
        labels = np.full(n_users, ABDOLLAHPOURI_LABELS[1], dtype=object)
        labels[rank < k] = ABDOLLAHPOURI_LABELS[0]
        labels[rank >= n_users - k] = ABDOLLAHPOURI_LABELS[2]
    return pd.Series(labels, index=pd.Index(uids, name="user_id"), name=GROUP_COLUMN)


def _n_items_iv(n_items: int | None, k: int) -> int:
    """The catalog size: ``n_items``, checked to hold the ``k`` training items, or ``k``."""
    if n_items is None:
        return k
    if isinstance(n_items, bool) or not isinstance(n_items, int | np.integer) or n_items < k:
        raise InputError(N_ITEMS_MSG.format(k=k, value=n_items))
    return int(n_items)


def add_popularity_groups(
    users: pd.DataFrame,
    train: pd.DataFrame,
    *,
    column: str = GROUP_COLUMN,
    method: Literal["abdollahpouri", "quantile"] = "abdollahpouri",
    q: int = 3,
    item_head: Literal["top_items", "cumulative"] = "top_items",
    n_items: int | None = None,
) -> pd.DataFrame:
    """A copy of ``users`` with a popularity-group attribute column.

    Every user of ``users`` must have training interactions (an ``InputError``
    names the first that has none). Groups are computed over all users of ``train``;
    ``n_items`` is the catalog size of the head (:func:`user_popularity_groups`).

    Examples
    --------
    >>> import pandas as pd
    >>> train = pd.DataFrame({"user_id": [1, 1, 2, 2, 3, 3, 4, 5],
    ...                       "item_id": [0, 1, 0, 2, 3, 4, 0, 4]})
    >>> users = pd.DataFrame({"user_id": [4, 3], "gender": ["F", "M"]})
    >>> add_popularity_groups(users, train)["popularity_group"].tolist()
    ['blockbuster', 'niche']
    """
    _columns_iv(users, "users", ("user_id",))
    if column in users.columns:
        raise InputError(COLUMN_EXISTS_MSG.format(column=column))
    groups = user_popularity_groups(train, method=method, q=q, item_head=item_head,
                                    n_items=n_items)
    pos = groups.index.get_indexer(users["user_id"].to_numpy())
    if (pos < 0).any():
        row = int(np.argmax(pos < 0))
        raise InputError(NO_TRAIN_MSG.format(user=plain(users["user_id"].iloc[row]), row=row + 1))
    out = users.copy()
    out[column] = groups.to_numpy()[pos]
    return out


Method = Literal["abdollahpouri", "quantile"]
ItemHead = Literal["top_items", "cumulative"]


@dataclass(frozen=True)
class PopularityGrouping:
    """One way of grouping users by the popularity of their training items.

    Built by :func:`parse_popularity_groups` from its name; the arguments of
    :func:`user_popularity_groups` it stands for are ``method``, ``q`` and
    ``item_head``.

    Attributes
    ----------
    name : str
        ``"abdollahpouri"``, ``"abdollahpouri:cumulative"`` or ``"quantile:Q"``.
    method : {"abdollahpouri", "quantile"}
    q : int
        Number of quantile groups (3 for ``"abdollahpouri"``: its three groups).
    item_head : {"top_items", "cumulative"}
        The popular items of ``"abdollahpouri"`` (``"top_items"`` for quantiles, unused).

    Examples
    --------
    >>> parse_popularity_groups("quantile:4").labels
    ('q1', 'q2', 'q3', 'q4')
    """

    name: str
    method: Method
    q: int
    item_head: ItemHead

    @property
    def labels(self) -> tuple[str, ...]:
        """The group labels, least to most mainstream."""
        if self.method == "quantile":
            return tuple(f"q{g + 1}" for g in range(self.q))
        return ABDOLLAHPOURI_LABELS

    @property
    def min_users(self) -> int:
        """The fewest training users that can be grouped (3, or ``q`` quantiles)."""
        return max(3, self.q)

    @property
    def rule(self) -> str:
        """How the groups are made, in one sentence (the JSON's ``user_popularity_rule``)."""
        if self.method == "quantile":
            return (f"users of `train` ranked by the mean popularity of their distinct "
                    f"training items, cut into {self.q} groups of equal size "
                    f"(user_popularity_groups, method 'quantile', q={self.q}): q1 (least "
                    f"mainstream) .. q{self.q}")
        head, option = (("", "") if self.item_head == "top_items" else
                        (" (the most popular items holding 20 % of the interactions)",
                         ", item_head 'cumulative'"))
        return (f"users of `train` by the share of head items{head} among their distinct "
                f"training items (user_popularity_groups, method 'abdollahpouri'{option}): "
                "the ceil(20 %) lowest niche, the ceil(20 %) highest blockbuster, the rest "
                "diverse")

    @property
    def arguments(self) -> dict[str, Any]:
        """``method``, ``q`` and ``item_head`` for :func:`user_popularity_groups`."""
        return {"method": self.method, "q": self.q, "item_head": self.item_head}


#: The default grouping: niche / diverse / blockbuster with the top-items head.
DEFAULT_GROUPING = PopularityGrouping("abdollahpouri", "abdollahpouri", 3, "top_items")
_NAMED = {
    "abdollahpouri": DEFAULT_GROUPING,
    "abdollahpouri:cumulative": PopularityGrouping(
        "abdollahpouri:cumulative", "abdollahpouri", 3, "cumulative"),
}


def parse_popularity_groups(
    value: str | PopularityGrouping, *, name: str = "`popularity_groups`"
) -> PopularityGrouping:
    """A :class:`PopularityGrouping` from its name (a grouping passes unchanged).

    Parameters
    ----------
    value : str or PopularityGrouping
        ``"abdollahpouri"``, ``"abdollahpouri:cumulative"`` or ``"quantile:Q"``
        (``Q >= 2``, no leading zero).
    name : str
        How the error message names the value (a CLI option, a config key).

    Raises
    ------
    InputError
        Naming ``name`` and the allowed forms.

    Examples
    --------
    >>> parse_popularity_groups("abdollahpouri:cumulative").item_head
    'cumulative'
    """
    if isinstance(value, PopularityGrouping):
        return value
    if isinstance(value, str) and value in _NAMED:
        return _NAMED[value]
    match = _QUANTILE.match(value) if isinstance(value, str) else None
    if match is None or int(match.group(1)) < 2:
        raise InputError(GROUPING_MSG.format(name=name, value=plain(value)))
    return PopularityGrouping(value, "quantile", int(match.group(1)), "top_items")
