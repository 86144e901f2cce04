"""A MovieLens testbed for an LLM recommender: the user's history as the request,
candidates from an item-kNN retriever over the training interactions.

Read from a RecBole atomic folder (``<name>.inter``: user_id, item_id, rating,
timestamp; ``<name>.item``: item_id, movie_title, release_year, class; the ML-100K
files in ``../shared/data/ml-100k`` or inside the ``recbole`` wheel). For each sampled
user the liked interactions (rating >= ``min_rating``) are ordered by time; the last
one is held out (the *test* item), the ``history`` before it are written into the
request ("I liked these movies: ..."), and everything but the held-out item is the
training data the retriever and the popularity figures use.

The retriever (:class:`ItemKNNRetriever`) scores every unseen item by the summed
cosine similarity of its user vector to the user's history items (item-based
collaborative filtering, Sarwar et al. 2001; Deshpande & Karypis 2004) and returns
the k best, as the embedding retriever does for shopping queries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .._stats import as_generator
from ..exceptions import InputError
from ._catalog import Catalog
from ._queries import Query
from ._types import Candidate

__all__ = ["ItemKNNRetriever", "MovieLensTestbed", "movielens_testbed"]

MSG_FOLDER = ("MovieLens folder {path}: {what} not found; give the folder of a RecBole "
              "atomic data set (ml-100k.inter and ml-100k.item)")
MSG_USERS = "`n_users` must be an integer >= 1, got {value!r}"
MSG_HISTORY = "`history` must be an integer >= 1, got {value!r}"
MSG_TOO_FEW = ("only {got} users have more than {history} liked movies (rating >= "
               "{min_rating}); lower `n_users` or `history`")


@dataclass(frozen=True, eq=False)
class MovieLensTestbed:
    """Catalog, requests and held-out items of a MovieLens LLM-recommender audit.

    Attributes
    ----------
    catalog : Catalog
        One row per movie: ``item_id``, ``title`` ("Toy Story (1995)"), ``description``
        (its genres), ``category`` (the first genre).
    queries : tuple of Query
        One per sampled user: ``query_id`` = the user id, ``text`` = the history request.
    history : dict of str to tuple of str
        The user's history item ids (oldest first), as written into the request.
    test : pandas.DataFrame
        ``user_id``, ``item_id``: the held-out liked item of each sampled user.
    train : pandas.DataFrame
        ``user_id``, ``item_id``: every interaction but the held-out ones (all users).
    users : pandas.DataFrame or None
        The ``.user`` file (``user_id``, ``gender``, ...) when the folder has one.
    """

    catalog: Catalog
    queries: tuple[Query, ...]
    history: dict[str, tuple[str, ...]]
    test: pd.DataFrame
    train: pd.DataFrame
    users: pd.DataFrame | None


def _read_atomic(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    frame.columns = [c.split(":", 1)[0] for c in frame.columns]
    return frame


def movielens_testbed(folder: str | Path, *, n_users: int = 100, history: int = 10,
                      min_rating: float = 4.0,
                      rng: np.random.Generator | int | None = None) -> MovieLensTestbed:
    """Build the testbed from a RecBole atomic MovieLens folder (module docstring).

    Parameters
    ----------
    folder : str or Path
        Holds ``<name>.inter`` and ``<name>.item`` (and optionally ``<name>.user``).
    n_users : int
        Users sampled (uniformly, among those with more than ``history`` liked movies).
    history : int
        Liked movies written into each request (the most recent before the held-out one).
    min_rating : float
        A rating at least this is a "liked" interaction.
    rng : numpy.random.Generator or int, optional
        Draws the users.
    """
    base = Path(folder)
    inter_files = sorted(base.glob("*.inter"))
    item_files = sorted(base.glob("*.item"))
    if not inter_files or not item_files:
        raise InputError(MSG_FOLDER.format(path=base, what=".inter or .item file"))
    for name, value in (("n_users", n_users), ("history", history)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError((MSG_USERS if name == "n_users" else MSG_HISTORY).format(value=value))
    inter = _read_atomic(inter_files[0])
    items = _read_atomic(item_files[0])
    user_files = sorted(base.glob("*.user"))
    users = _read_atomic(user_files[0]) if user_files else None
    inter["rating"] = inter["rating"].astype(float)
    inter["timestamp"] = inter["timestamp"].astype(float)
    liked = inter[inter["rating"] >= min_rating].sort_values(
        ["user_id", "timestamp", "item_id"], kind="stable")
    counts = liked.groupby("user_id").size()
    eligible = np.array(sorted(counts.index[counts > history], key=int))
    if eligible.size < n_users:
        raise InputError(MSG_TOO_FEW.format(got=eligible.size, history=history,
                                            min_rating=min_rating))
    chosen = sorted(as_generator(rng).choice(eligible, n_users, replace=False).tolist(), key=int)
    titles = dict(zip(items["item_id"], _titles(items), strict=True))
    queries, hist, test_rows = [], {}, []
    by_user = dict(tuple(liked.groupby("user_id")))
    for user in chosen:
        seq = by_user[user]["item_id"].tolist()
        held, before = seq[-1], seq[-1 - history:-1]
        hist[user] = tuple(before)
        test_rows.append((user, held))
        text = ("I liked these movies, most recent last: "
                + "; ".join(titles.get(i, i) for i in before)
                + ". Which movie should I watch next?")
        queries.append(Query(query_id=user, text=text, template_id="movielens-history",
                             source_item_id=held))
    test = pd.DataFrame(test_rows, columns=["user_id", "item_id"])
    held_pairs = set(test_rows)
    keep = [(u, i) not in held_pairs for u, i in zip(inter["user_id"], inter["item_id"],
                                                      strict=True)]
    train = inter.loc[keep, ["user_id", "item_id"]].drop_duplicates().reset_index(drop=True)
    catalog = Catalog.from_frame(pd.DataFrame({
        "id": items["item_id"], "title": _titles(items),
        "description": items.get("class", pd.Series([""] * len(items))),
        "category": items.get("class", pd.Series([""] * len(items))).str.split().str[0],
    }), columns={"id": "id", "title": "title", "description": "description",
                 "category": "category"})
    return MovieLensTestbed(catalog=catalog, queries=tuple(queries), history=hist,
                            test=test, train=train, users=users)


def _titles(items: pd.DataFrame) -> list[str]:
    year = items["release_year"] if "release_year" in items else pd.Series([""] * len(items))
    return [f"{t} ({y})" if y else str(t) for t, y in zip(items["movie_title"], year,
                                                         strict=True)]


class ItemKNNRetriever:
    """Item-based collaborative filtering as the candidate generator.

    ``score(u, i) = sum_{h in H_u} cos(x_i, x_h)`` over the user's history items
    ``H_u``, with ``x_i`` the binary vector of item i's training users; items the user
    has interacted with in training (the query id is the user id) or holds in its
    history are never candidates; ties broken by catalog order. Sarwar, Karypis,
    Konstan & Riedl (2001), "Item-based collaborative filtering recommendation
    algorithms", WWW.

    Parameters
    ----------
    train : pandas.DataFrame
        ``user_id``, ``item_id`` training interactions.
    history : mapping of query id to item ids
        Each query's history (:attr:`MovieLensTestbed.history`).
    """

    def __init__(self, train: pd.DataFrame, history: Mapping[str, Sequence[str]]) -> None:
        self.train = train
        self.history = {str(q): tuple(map(str, h)) for q, h in history.items()}

    def retrieve(self, catalog: Catalog, queries: Sequence[Query], *, k: int,
                 progress: object = None) -> dict[str, tuple[Candidate, ...]]:
        """The k best-scored unseen catalog items per query, best first (the
        :meth:`~recaudit.llm.Retriever.retrieve` protocol; ``progress`` is unused)."""
        ids = catalog.items["item_id"].astype(str).to_numpy()
        col = {item: j for j, item in enumerate(ids)}
        known = self.train[self.train["item_id"].astype(str).isin(col)]
        users = pd.Index(known["user_id"].astype(str).unique())
        x = sp.csr_matrix((np.ones(len(known)), (users.get_indexer(known["user_id"].astype(str)),
                                                 known["item_id"].astype(str).map(col))),
                          shape=(len(users), len(ids)))
        x.data[:] = 1.0
        norms = np.sqrt(np.asarray(x.sum(axis=0)).ravel())
        norms[norms == 0] = 1.0
        titles = catalog.items["title"].to_numpy()
        descriptions = catalog.items["description"].to_numpy()
        seen = known.groupby(known["user_id"].astype(str))["item_id"].agg(
            lambda s: [col[i] for i in s.astype(str)])
        out: dict[str, tuple[Candidate, ...]] = {}
        for query in queries:
            hist = [col[i] for i in self.history.get(query.query_id, ()) if i in col]
            if not hist:
                raise InputError(f"query {query.query_id!r} has no history item in the catalog")
            # sum_h (x_h . x_i) / (|x_h| |x_i|)
            weighted = x[:, hist] @ sp.diags(1.0 / norms[hist])
            score = np.asarray(weighted.sum(axis=1)).ravel() @ x / norms
            score = np.asarray(score, dtype=float).ravel()
            score[hist] = -np.inf
            score[seen.get(query.query_id, [])] = -np.inf
            top = np.lexsort((np.arange(len(ids)), -score))[:k]
            out[query.query_id] = tuple(
                Candidate(original_index=r, item_id=str(ids[j]), title=str(titles[j]),
                          description=str(descriptions[j]), score=float(score[j]))
                for r, j in enumerate(top, start=1))
        return out
