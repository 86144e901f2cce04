r"""Popularity-bias metrics of top-N lists: ARP, APLT, ACLT, PopRSP, PopREO, novelty.

Notation: ``U`` the evaluated users (at least one test item), ``L_u@N`` user ``u``'s
list truncated at ``N``, ``T_u`` its test items, ``R_u`` its training items, and
``pop(i)`` the number of distinct training users of item ``i`` (a repeated
user-item pair counts once, as in Elliot; for a deduplicated implicit training table
this is the number of training rows of ``i``). The **head** ``H`` is the
``ceil(0.2 * n_items)`` most popular catalog items, ties at the boundary broken by
ascending ``item_id`` (so the split does not depend on how items are coded); the
**tail** ``T`` is every other catalog item (never-trained items included).

User means (one value per user, so a user-level bootstrap resamples them directly):

- ARP@N = mean_u (1/|L_u@N|) sum_{i in L_u@N} pop(i)
- APLT@N = mean_u |L_u@N ∩ T| / N
- ACLT@N = mean_u |L_u@N ∩ T|
- novelty@N = mean_u (1/|L_u@N|) sum_{i in L_u@N} -log2(pop(i) / n_train_users)

Ratios of sums over users (std/mean with ddof 0 over the two groups g in {H, T}):

- PopRSP@N from P(rec | g) = sum_u |L_u@N ∩ g| / sum_u |g \ R_u|
- PopREO@N from P(rec | g, y=1) = sum_u |L_u@N ∩ g ∩ T_u| / sum_u |g ∩ T_u|

They are returned as per-user count vectors (:class:`PopularityCounts`), so that a
bootstrap resample with multinomial user weights ``w`` recomputes them as
``parity((w @ numerators) / (w @ denominators))`` -- one matrix product per chunk
(:func:`popularity_parity`).

References: Abdollahpouri, Burke & Mobasher (2019), "Managing popularity bias in
recommender systems with personalized re-ranking", FLAIRS-32 (ARP, APLT, ACLT); Zhu,
Wang & Caverlee (2020), "Measuring and mitigating item under-recommendation bias in
personalized ranking systems", SIGIR (RSP, REO), and Zhu & Caverlee (2021/2022),
"Popularity-opportunity bias in collaborative filtering", WSDM, with Elliot's
``PopRSP``/``PopREO`` (Anelli et al. 2021, SIGIR) for the popularity groups; Zhou et
al. (2010), "Solving the apparent diversity-accuracy dilemma of recommender systems",
PNAS 107(10), and Vargas & Castells (2011), "Rank and relevance in novelty and
diversity metrics for recommender systems", RecSys (novelty as mean self-information).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from ...exceptions import InputError
from .._metrics import _codes, _columns_iv, _n_iv, _run_starts, _union_index, build_top_n

__all__ = [
    "POPULARITY_METRICS",
    "PopularityCounts",
    "PopularityPerUser",
    "head_items",
    "per_user_popularity",
    "popularity_kernel",
    "popularity_metrics",
    "popularity_parity",
]

#: The popularity-bias metrics, in reporting order (JSON keys ``<name>@<N>``).
POPULARITY_METRICS: tuple[str, ...] = ("arp", "aplt", "aclt", "poprsp", "popreo", "novelty")
#: The user-mean metrics among them (the others are ratios of sums over users).
USER_MEAN_METRICS: tuple[str, ...] = ("arp", "aplt", "aclt", "novelty")

HEAD_FRACTION = 0.2
HEAD_FRACTION_MSG = "`fraction` must be in (0, 1), got {value!r}"
POP_VECTOR_MSG = "`popularity` must be a 1-D array of finite counts >= 0"
IDS_MSG = "`item_ids` must have one entry per item code ({k}), got {m}"
N_ITEMS_MSG = "`n_items` must be an integer >= the number of observed items ({k}), got {n!r}"
TRAIN_USERS_MSG = "`train` must hold at least one interaction"


def head_items(
    popularity: npt.ArrayLike,
    item_ids: npt.ArrayLike | None = None,
    *,
    n_items: int | None = None,
    fraction: float = HEAD_FRACTION,
) -> npt.NDArray[np.bool_]:
    """The head: the ``ceil(fraction * n_items)`` most popular items.

    Items are ranked by popularity descending, ties broken by ascending ``item_ids``
    (by code when ``item_ids`` is None). ``n_items`` (default: ``len(popularity)``)
    is the catalog size; catalog items without a code have popularity 0 and belong to
    the tail, so the head holds ``min(ceil(fraction * n_items), len(popularity))``
    coded items.

    Examples
    --------
    >>> head_items([5, 9, 5, 1, 0], ["e", "d", "c", "b", "a"]).tolist()
    [False, True, False, False, False]
    >>> head_items([5, 9, 5, 1, 0], ["e", "d", "c", "b", "a"], fraction=0.4).tolist()
    [False, True, True, False, False]
    """
    pop = np.asarray(popularity, dtype=np.float64)
    if pop.ndim != 1 or not np.isfinite(pop).all() or (pop < 0).any():
        raise InputError(POP_VECTOR_MSG)
    if not (isinstance(fraction, float | int) and 0 < fraction < 1):
        raise InputError(HEAD_FRACTION_MSG.format(value=fraction))
    size = pop.size if n_items is None else n_items
    if not isinstance(size, int | np.integer) or size < pop.size:
        raise InputError(N_ITEMS_MSG.format(k=pop.size, n=n_items))
    ids = np.arange(pop.size) if item_ids is None else np.asarray(item_ids)
    if ids.shape != pop.shape:
        raise InputError(IDS_MSG.format(k=pop.size, m=ids.shape))
    k = min(int(np.ceil(fraction * size)), pop.size)
    order = np.lexsort((ids, -pop))
    out = np.zeros(pop.size, dtype=bool)
    out[order[:k]] = True
    return out


@dataclass(frozen=True)
class PopularityCounts:
    """Per-user counts behind PopRSP and PopREO (group axis: 0 = head, 1 = tail).

    Attributes
    ----------
    recommended : ndarray, shape (n_users, len(n), 2)
        ``|L_u@N ∩ g|``.
    candidates : ndarray, shape (n_users, 2)
        ``|g \\ R_u|``: items of the group the user has not trained on.
    hits : ndarray, shape (n_users, len(n), 2)
        ``|L_u@N ∩ g ∩ T_u|``.
    relevant : ndarray, shape (n_users, 2)
        ``|g ∩ T_u|``.
    """

    recommended: npt.NDArray[np.float64]
    candidates: npt.NDArray[np.float64]
    hits: npt.NDArray[np.float64]
    relevant: npt.NDArray[np.float64]

    def stacked(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """``(rsp, reo)``: each ``(n_users, 2 * len(n) + 2)`` = numerators, then denominators.

        A bootstrap chunk ``W`` (resamples x users) gives every resample's sums with
        ``W @ rsp`` and ``W @ reo``; :func:`popularity_parity` turns sums into values.
        """
        u = self.recommended.shape[0]
        rsp = np.hstack([self.recommended.reshape(u, -1), self.candidates])
        reo = np.hstack([self.hits.reshape(u, -1), self.relevant])
        return rsp, reo


def _rates_of_sums(sums: npt.NDArray[np.float64], n_cuts: int) -> npt.NDArray[np.float64]:
    """``(..., n_cuts, 2)``: numerator / denominator over {head, tail} of the sums of
    :meth:`PopularityCounts.stacked` (nan where a denominator is 0)."""
    num = sums[..., : 2 * n_cuts].reshape(*sums.shape[:-1], n_cuts, 2)
    den = sums[..., 2 * n_cuts :][..., None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _parity_of_sums(sums: npt.NDArray[np.float64], n_cuts: int) -> npt.NDArray[np.float64]:
    """std/mean (ddof 0) over {head, tail} of numerator/denominator sums; nan if undefined."""
    p = _rates_of_sums(sums, n_cuts)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = p.mean(axis=-1)
        return np.where(mean > 0, p.std(axis=-1) / np.where(mean > 0, mean, 1.0), np.nan)


def _signed_parity_of_sums(
    sums: npt.NDArray[np.float64], n_cuts: int
) -> npt.NDArray[np.float64]:
    """``d = (P_H - P_T) / (P_H + P_T)`` of numerator/denominator sums, in ``[-1, 1]``:
    std/mean (ddof 0) of two values is ``|P_H - P_T| / (P_H + P_T)``, so
    :func:`_parity_of_sums` is ``|d|``; nan where it is (a denominator or the sum is 0)."""
    p = _rates_of_sums(sums, n_cuts)
    with np.errstate(divide="ignore", invalid="ignore"):
        total = p[..., 0] + p[..., 1]
        return np.where(total > 0, (p[..., 0] - p[..., 1]) / np.where(total > 0, total, 1.0),
                        np.nan)


def popularity_parity(
    counts: PopularityCounts, weights: npt.ArrayLike | None = None
) -> dict[str, npt.NDArray[np.float64]]:
    r"""PopRSP@N and PopREO@N from per-user counts, optionally per bootstrap resample.

    .. math::

        \mathrm{PopRSP@N} = \frac{\operatorname{std}(P_H, P_T)}{\operatorname{mean}(P_H, P_T)},
        \quad P_g = \frac{\sum_u w_u |L_u@N \cap g|}{\sum_u w_u |g \setminus R_u|}

    and PopREO@N the same with ``P_g = sum_u w_u |L_u@N ∩ g ∩ T_u| / sum_u w_u |g ∩ T_u|``
    (std with ddof 0; Zhu, Wang & Caverlee 2020; Elliot's ``PopRSP``/``PopREO``).
    ``nan`` when a denominator sum or the mean is 0.

    Parameters
    ----------
    counts : PopularityCounts
    weights : array_like, shape (n_users,) or (b, n_users), optional
        User weights (a bootstrap chunk of :func:`recaudit._stats.bootstrap_weights`);
        None = every user once.

    Returns
    -------
    dict
        ``{"poprsp": ..., "popreo": ...}``, arrays of shape ``(len(n),)`` (no or 1-D
        weights) or ``(b, len(n))``.
    """
    rsp, reo = counts.stacked()
    n_cuts = counts.recommended.shape[1]
    if weights is None:
        return {
            "poprsp": _parity_of_sums(rsp.sum(axis=0), n_cuts),
            "popreo": _parity_of_sums(reo.sum(axis=0), n_cuts),
        }
    w = np.asarray(weights, dtype=np.float64)
    return {
        "poprsp": _parity_of_sums(w @ rsp, n_cuts),
        "popreo": _parity_of_sums(w @ reo, n_cuts),
    }


def _user_means(
    values: npt.NDArray[np.float64], listed: npt.NDArray[np.bool_], ns: tuple[int, ...]
) -> npt.NDArray[np.float64]:
    """Mean of ``values`` over each list's first ``N`` slots; nan for an empty list."""
    cum = np.cumsum(np.where(listed, values, 0.0), axis=1)
    length = np.cumsum(listed, axis=1)
    cols = np.asarray(ns) - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(length[:, cols] > 0, cum[:, cols] / length[:, cols], np.nan)


def popularity_kernel(
    items: npt.NDArray[np.int64],
    hits: npt.NDArray[np.bool_],
    *,
    popularity: npt.NDArray[np.float64],
    is_head: npt.NDArray[np.bool_],
    n_items: int,
    n_train_users: int,
    train_head: npt.NDArray[np.int64],
    train_tail: npt.NDArray[np.int64],
    test_head: npt.NDArray[np.int64],
    test_tail: npt.NDArray[np.int64],
    n: int | Sequence[int],
) -> tuple[dict[str, npt.NDArray[np.float64]], PopularityCounts]:
    """Per-user ARP, APLT, ACLT, novelty and the PopRSP/PopREO counts, in code space.

    Parameters
    ----------
    items, hits : ndarray, shape (n_users, L)
        Item codes of each list (-1 past its end) and whether each is a test item
        (``TopNLists.items`` / ``.hits``), ``L >= max(n)``.
    popularity : ndarray, shape (n_codes,)
        ``pop(i)``: distinct training users per item code.
    is_head : ndarray of bool, shape (n_codes,)
        Head membership (:func:`head_items`).
    n_items : int
        Catalog size; uncoded catalog items are tail items.
    n_train_users : int
        Distinct users in the training table (novelty's normaliser).
    train_head, train_tail, test_head, test_tail : ndarray, shape (n_users,)
        Distinct head/tail items in each user's training and test items.
    n : int or sequence of int
        Cut-offs.

    Returns
    -------
    (dict, PopularityCounts)
        ``{"arp", "aplt", "aclt", "novelty"}`` -> ``(n_users, len(n))`` per-user values
        (ARP and novelty ``nan`` for an empty list; APLT and ACLT 0), and the counts.
        Items with ``pop(i) = 0`` get the self-information of one training user,
        ``log2(n_train_users)``.
    """
    ns = _n_iv(n)
    m = items[:, : ns[-1]]
    listed = m >= 0
    code = np.where(listed, m, 0)
    pop = popularity[code]
    head = is_head[code] & listed
    tail = ~is_head[code] & listed
    hit = hits[:, : ns[-1]] & listed
    info = np.log2(n_train_users / np.maximum(pop, 1.0))
    cols = np.asarray(ns) - 1
    n_tail_hits = np.cumsum(tail, axis=1)[:, cols].astype(np.float64)
    per_user = {
        "arp": _user_means(pop, listed, ns),
        "aplt": n_tail_hits / np.asarray(ns, dtype=np.float64),
        "aclt": n_tail_hits,
        "novelty": _user_means(info, listed, ns),
    }
    n_head = int(is_head.sum())
    n_tail = n_items - n_head
    recommended = np.stack([np.cumsum(head, axis=1)[:, cols], n_tail_hits], axis=-1)
    found = np.stack(
        [np.cumsum(head & hit, axis=1)[:, cols], np.cumsum(tail & hit, axis=1)[:, cols]], axis=-1
    )
    counts = PopularityCounts(
        recommended=recommended.astype(np.float64),
        candidates=np.stack([n_head - train_head, n_tail - train_tail], axis=-1).astype(np.float64),
        hits=found.astype(np.float64),
        relevant=np.stack([test_head, test_tail], axis=-1).astype(np.float64),
    )
    return per_user, counts


def _per_user_group_counts(
    user_codes: npt.NDArray[np.int64],
    item_codes: npt.NDArray[np.int64],
    is_head: npt.NDArray[np.bool_],
    n_users: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Distinct head and tail items per user code (rows with a negative user code skipped)."""
    keep = user_codes >= 0
    width = max(is_head.size, 1)
    keys = np.unique(user_codes[keep] * width + item_codes[keep])
    users, its = keys // width, keys % width
    head = np.bincount(users[is_head[its]], minlength=n_users)
    tail = np.bincount(users[~is_head[its]], minlength=n_users)
    return head.astype(np.int64), tail.astype(np.int64)


@dataclass(frozen=True)
class PopularityPerUser:
    """Per-user popularity-bias values and counts of :func:`per_user_popularity`.

    Attributes
    ----------
    values : pandas.DataFrame
        ``user_id`` and one column ``<metric>@<N>`` per metric of
        :data:`USER_MEAN_METRICS` and cut-off (the shape of
        :func:`recaudit.fairness.per_user_metrics`).
    counts : PopularityCounts
        Rows in the order of ``values``.
    n : tuple of int
        Cut-offs.
    n_head_items, n_items : int
        Head size and catalog size.
    """

    values: pd.DataFrame
    counts: PopularityCounts
    n: tuple[int, ...]
    n_head_items: int
    n_items: int


def per_user_popularity(
    recs: pd.DataFrame,
    test: pd.DataFrame,
    train: pd.DataFrame,
    *,
    n: int | Sequence[int] = (5, 10, 15),
    n_items: int | None = None,
) -> PopularityPerUser:
    """Per-user popularity-bias metrics of top-N lists (see the module docstring).

    Parameters
    ----------
    recs : pandas.DataFrame
        ``user_id, item_id, rank`` (ranks 1..L per user).
    test, train : pandas.DataFrame
        ``user_id, item_id``: held-out items and training interactions.
    n : int or sequence of int
        Cut-offs.
    n_items : int, optional
        Catalog size; default the distinct items of recs, test and train.

    Returns
    -------
    PopularityPerUser
        One row per user with at least one test item (as
        :func:`recaudit.fairness.per_user_metrics`).
    """
    ns = _n_iv(n)
    for table, name in ((recs, "recs"), (test, "test"), (train, "train")):
        _columns_iv(
            table,
            name,
            ("user_id", "item_id", "rank") if name == "recs" else ("user_id", "item_id"),
        )
    if len(train) == 0:
        raise InputError(TRAIN_USERS_MSG)
    heads = [t["user_id"].to_numpy() for t in (recs, test)]
    user_index = _union_index([h[_run_starts(h)] for h in heads if h.size])
    item_index = pd.Index(
        np.unique(np.concatenate([t["item_id"].to_numpy() for t in (recs, test, train)]))
    )
    size = len(item_index) if n_items is None else n_items
    lists = build_top_n(recs, test, user_index=user_index, item_index=item_index, n_max=ns[-1])
    t_items = _codes(train["item_id"], item_index)
    t_users = user_index.get_indexer(train["user_id"].to_numpy()).astype(np.int64)
    all_users = pd.factorize(train["user_id"])[0]
    keys = np.unique(all_users.astype(np.int64) * len(item_index) + t_items)
    popularity = np.bincount(keys % len(item_index), minlength=len(item_index)).astype(float)
    is_head = head_items(popularity, item_index.to_numpy(), n_items=size)
    train_head, train_tail = _per_user_group_counts(t_users, t_items, is_head, len(user_index))
    s_users = _codes(test["user_id"], user_index)
    s_items = _codes(test["item_id"], item_index)
    test_head, test_tail = _per_user_group_counts(s_users, s_items, is_head, len(user_index))
    keep = lists.n_relevant > 0
    per_user, counts = popularity_kernel(
        lists.items[keep],
        lists.hits[keep],
        popularity=popularity,
        is_head=is_head,
        n_items=size,
        n_train_users=int(all_users.max()) + 1,
        train_head=train_head[keep],
        train_tail=train_tail[keep],
        test_head=test_head[keep],
        test_tail=test_tail[keep],
        n=ns,
    )
    values = pd.DataFrame({"user_id": lists.user_ids[keep].to_numpy()})
    for name in USER_MEAN_METRICS:
        for j, cut in enumerate(ns):
            values[f"{name}@{cut}"] = per_user[name][:, j]
    return PopularityPerUser(values, counts, ns, int(is_head.sum()), int(size))


def popularity_metrics(
    recs: pd.DataFrame,
    test: pd.DataFrame,
    train: pd.DataFrame,
    *,
    n: int | Sequence[int] = (5, 10, 15),
    n_items: int | None = None,
) -> dict[str, float]:
    """ARP, APLT, ACLT, PopRSP, PopREO and novelty at every cut-off, keyed ``<name>@<N>``.

    User means are taken over the evaluated users with a defined value (ARP and
    novelty skip users without a list); PopRSP and PopREO are ratios of sums over the
    evaluated users (:func:`popularity_parity`).

    Examples
    --------
    >>> import pandas as pd
    >>> train = pd.DataFrame({"user_id": [1, 1, 2, 2, 3], "item_id": [0, 1, 0, 2, 0]})
    >>> recs = pd.DataFrame({"user_id": [1, 2], "item_id": [2, 1], "rank": [1, 1]})
    >>> test = pd.DataFrame({"user_id": [1, 2], "item_id": [2, 3]})
    >>> m = popularity_metrics(recs, test, train, n=1)
    >>> m["arp@1"], m["aplt@1"], m["aclt@1"]
    (1.0, 1.0, 1.0)
    """
    pu = per_user_popularity(recs, test, train, n=n, n_items=n_items)
    out: dict[str, float] = {}
    parity = popularity_parity(pu.counts)
    for name in POPULARITY_METRICS:
        for j, cut in enumerate(pu.n):
            if name in parity:
                out[f"{name}@{cut}"] = float(parity[name][j])
            else:
                col = pu.values[f"{name}@{cut}"].to_numpy()
                out[f"{name}@{cut}"] = float(np.nanmean(col)) if np.isfinite(col).any() else np.nan
    return out
