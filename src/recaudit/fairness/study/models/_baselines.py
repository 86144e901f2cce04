"""Non-learned baselines with the same output table as the trained models.

- :func:`most_popular` -- every user gets the items with the most training
  interactions that they do not already know (the popularity-bias extreme: lowest
  coverage);
- :func:`random_items` -- every user gets a seeded uniform random list of unknown
  items (the coverage extreme: no popularity bias).

Under a sampled protocol (:func:`~recaudit.fairness.sample_candidates`) the same two
rank each user's candidates instead: :func:`most_popular_candidates` by training
popularity, :func:`random_candidates` in a seeded random order.

Both need no optional dependency.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from ...._stats import as_generator
from ....exceptions import InputError
from ... import ITEM_ID, USER_ID

__all__ = [
    "BASELINES",
    "most_popular",
    "most_popular_candidates",
    "random_candidates",
    "random_items",
]

#: Baseline names used in the study config.
BASELINES = ("MostPop", "Random")


def _baseline_iv(
    users: Iterable[Any], train: pd.DataFrame, exclude: pd.DataFrame | None, n: int
) -> tuple[list[Any], pd.DataFrame]:
    for name, frame in (("train", train), ("exclude", exclude)):
        if frame is None:
            continue
        for column in (USER_ID, ITEM_ID):
            if column not in frame.columns:
                raise InputError(f"`{name}` has no column `{column}`")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"`n` must be a positive integer, got {n!r}")
    return list(dict.fromkeys(users)), (train if exclude is None else exclude)


def _lists(
    users: list[Any],
    known: pd.DataFrame,
    ranking: np.ndarray,
    scores: np.ndarray,
    n: int,
    name: str,
) -> pd.DataFrame:
    """Per user, the first ``n`` items of ``ranking`` they do not know."""
    known_by_user = known.groupby(USER_ID)[ITEM_ID].agg(set).to_dict()
    rows: list[tuple[Any, Any, int, float]] = []
    for user in users:
        seen = known_by_user.get(user, set())
        rank = 0
        for item, score in zip(ranking, scores, strict=True):
            if item in seen:
                continue
            rank += 1
            rows.append((user, item, rank, float(score)))
            if rank == n:
                break
    out = pd.DataFrame(rows, columns=[USER_ID, ITEM_ID, "rank", "score"])
    out["model"] = name
    return out


def most_popular(
    users: Iterable[Any],
    train: pd.DataFrame,
    *,
    n: int = 20,
    exclude: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Most-popular baseline: the most interacted-with training items.

    Parameters
    ----------
    users : iterable
        User ids to recommend for.
    train : pandas.DataFrame
        ``user_id``, ``item_id`` training interactions (popularity counts).
    n : int, default 20
        List length.
    exclude : pandas.DataFrame, optional
        Pairs never to recommend (default: ``train``); pass train + validation to
        mask what the trained models mask.

    Returns
    -------
    pandas.DataFrame
        ``user_id``, ``item_id``, ``rank``, ``score`` (= training count), ``model``
        (``"MostPop"``). Ties in popularity are broken by item id order.
    """
    users, known = _baseline_iv(users, train, exclude, n)
    counts = train.groupby(ITEM_ID).size()
    counts = counts.sort_index(kind="stable").sort_values(ascending=False, kind="stable")
    return _lists(users, known, counts.index.to_numpy(), counts.to_numpy(), n, "MostPop")


def random_items(
    users: Iterable[Any],
    items: Iterable[Any],
    *,
    n: int = 20,
    exclude: pd.DataFrame,
    rng: np.random.Generator | int | None = None,
) -> pd.DataFrame:
    """Random baseline: a seeded uniform random list of unknown items per user.

    Parameters
    ----------
    users : iterable
        User ids to recommend for.
    items : iterable
        The catalogue to draw from.
    n : int, default 20
        List length.
    exclude : pandas.DataFrame
        ``user_id``, ``item_id`` pairs never to recommend.
    rng : numpy.random.Generator, int or None
        Source of randomness.

    Returns
    -------
    pandas.DataFrame
        ``user_id``, ``item_id``, ``rank``, ``score`` (= ``1/rank``), ``model``
        (``"Random"``).
    """
    users, known = _baseline_iv(users, exclude, exclude, n)
    gen = as_generator(rng)
    catalogue = pd.Index(list(items)).unique()
    known_by_user = known.groupby(USER_ID)[ITEM_ID].agg(set).to_dict()
    user_col: list[Any] = []
    item_col: list[Any] = []
    rank_col: list[int] = []
    for user in users:
        seen = known_by_user.get(user, set())
        # the first n + |seen| items of a random order always hold n unseen ones
        order = catalogue.take(gen.permutation(len(catalogue))[: n + len(seen)])
        picked = [item for item in order if item not in seen][:n]
        user_col += [user] * len(picked)
        item_col += picked
        rank_col += range(1, len(picked) + 1)
    ranks = np.asarray(rank_col, dtype=np.int64)
    return pd.DataFrame(
        {
            USER_ID: user_col,
            ITEM_ID: pd.Index(item_col, dtype=catalogue.dtype),
            "rank": ranks,
            "score": 1.0 / ranks,
            "model": "Random",
        }
    )


def _candidates_iv(candidates: pd.DataFrame, n: int) -> pd.DataFrame:
    _baseline_iv([], candidates, None, n)
    return candidates[[USER_ID, ITEM_ID]].drop_duplicates()


def _top_of_candidates(
    candidates: pd.DataFrame, score: np.ndarray, tie: np.ndarray, n: int, name: str
) -> pd.DataFrame:
    """Per user (in order of appearance), the ``n`` candidates of highest ``score``.

    Ties in ``score`` go to the lower ``tie``.
    """
    user_order = pd.Index(pd.unique(candidates[USER_ID].to_numpy()))
    order = np.lexsort((tie, -score, user_order.get_indexer(candidates[USER_ID].to_numpy())))
    ranked = candidates.iloc[order].assign(score=score[order].astype(float))
    ranked["rank"] = ranked.groupby(USER_ID, sort=False).cumcount() + 1
    out = ranked.loc[ranked["rank"] <= n, [USER_ID, ITEM_ID, "rank", "score"]]
    out = out.reset_index(drop=True)
    out["model"] = name
    return out


def most_popular_candidates(
    candidates: pd.DataFrame, train: pd.DataFrame, *, n: int = 20
) -> pd.DataFrame:
    """Most-popular baseline within each user's candidates (sampled ranking).

    Parameters
    ----------
    candidates : pandas.DataFrame
        ``user_id, item_id`` (:func:`~recaudit.fairness.sample_candidates`).
    train : pandas.DataFrame
        ``user_id, item_id`` training interactions (popularity counts).
    n : int, default 20
        List length (a user with fewer candidates gets them all).

    Returns
    -------
    pandas.DataFrame
        ``user_id``, ``item_id``, ``rank``, ``score`` (= training count), ``model``
        (``"MostPop"``); ties in popularity broken by item id order, as in
        :func:`most_popular`.
    """
    candidates = _candidates_iv(candidates, n)
    _baseline_iv([], train, None, n)
    counts = train.groupby(ITEM_ID).size()
    score = counts.reindex(candidates[ITEM_ID].to_numpy()).fillna(0).to_numpy()
    tie = pd.Index(counts.index.union(pd.Index(candidates[ITEM_ID].unique())))
    return _top_of_candidates(candidates, score, tie.get_indexer(candidates[ITEM_ID]),
                              n, "MostPop")


def random_candidates(
    candidates: pd.DataFrame, *, n: int = 20, rng: np.random.Generator | int | None = None
) -> pd.DataFrame:
    """Random baseline within each user's candidates: a seeded uniform random order.

    Parameters
    ----------
    candidates : pandas.DataFrame
        ``user_id, item_id`` (:func:`~recaudit.fairness.sample_candidates`).
    n : int, default 20
        List length.
    rng : numpy.random.Generator, int or None
        Source of randomness.

    Returns
    -------
    pandas.DataFrame
        ``user_id``, ``item_id``, ``rank``, ``score`` (= ``1/rank``), ``model``
        (``"Random"``).
    """
    candidates = _candidates_iv(candidates, n)
    gen = as_generator(rng)
    key = gen.permutation(len(candidates)).astype(float)
    out = _top_of_candidates(candidates, -key, np.zeros(len(candidates)), n, "Random")
    out["score"] = 1.0 / out["rank"]
    return out
