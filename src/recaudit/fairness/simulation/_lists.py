r"""Known-truth data for the inter-bias statistics: long-tailed data, a planted group gap.

The generator draws a whole evaluation -- training and test interactions, a binary
protected attribute, and a recommender's top-``L`` lists -- from a model whose
per-group top-N metrics are known in closed form.

**Items.** Item ``i = 1..n_items`` has popularity ``p_i ∝ i^{-s}`` (Zipf), with ``s``
solved (:func:`zipf_exponent`) so that the ``ceil(20 %)`` most popular items hold the
share ``top_share`` of the expected interactions (each user's items being distinct):
Last.fm-like ``> 0.8``, MovieLens-like ``≈ 0.65``.

**Users.** ``gender`` is ``"F"`` (protected) with probability ``protected_share``,
independent of everything else. Each user draws ``n_train + n_test`` distinct items
with probabilities ``∝ p`` (successive sampling, Gumbel top-k); a uniformly random
``n_test`` of them are the test items ``T_u``, the rest the training items.

**Recommender.** Each test item enters the user's list independently with the group's
hit probability ``π_g``: ``π_UG = π0 (1 + rd)``, ``π_PG = π0 (1 - rd)``. The list's
other ``L - K`` slots are filled with items outside ``train_u ∪ T_u``, drawn without
replacement with probabilities ``∝ p^β`` (``β = fill_exponent``; β > 1 a
popularity-biased recommender); the ``L`` items are then put in a uniformly random
order. So the ``K ~ Bin(n_test, π_g)`` hits occupy a uniformly random ``K``-subset of
the ranks, and with ``t = n_test``, ``D_N = Σ_{r≤N} 1/log2(r+1)``:

.. math::

    E[P@N] = t\pi/L,\quad E[R@N] = \pi N/L,\quad
    E[NDCG@N] = \frac{t\pi}{L}\,\frac{D_N}{D_{\min(t,N)}},\\
    E[Hit@N] = \sum_k b_k\Big(1 - \tbinom{L-N}{k}/\tbinom{L}{k}\Big),\quad
    E[MRR@N] = \sum_{k\ge1} b_k \sum_{r=1}^{N} \frac{1}{r}\,
               \tbinom{L-r}{k-1}/\tbinom{L}{k}

with ``b_k`` the Bin(t, π) probabilities (:func:`planted_truth`). Precision, Recall and
NDCG are linear in π, so their population RD is exactly ``rd`` (``rd = 0``: no gap at
all, every metric's RD is 0); Hit and MRR get their RD from the exact group means.
RD's estimand is the RD of the two *population* group means; NRD = (RD + 1)/2; IB's
truth is ``sqrt(NRD (1 - IC))`` at the data set's own item coverage ``IC`` (IC is a
property of the finite set of lists, not a population parameter, and ``evaluate``
holds it at its observed value).

**Several recommenders.** :func:`simulate_lists` draws another recommender's lists,
by the same model with its own ``π0``, ``rd`` and ``β``, for the users, training and
test items of a data set: recommenders evaluated on the same users and test items (the
paired design of :func:`~recaudit.fairness.compare_models`), independent given the
data, and exchangeable per user when their settings are equal, so that the truth of
every difference is the difference of the planted truths.

**Popularity figures.** :func:`popularity_figures` computes, with pandas and the public
definitions only (never :mod:`recaudit.fairness.popularity._result`), what ``evaluate``'s
``popularity_bias`` section reports for the same data: the popularity-bias metrics, the
users' profile figures (mean popularity of their training items, tail share of their
training and test items) and both per niche / diverse / blockbuster user group. The
generator gives a closed form for the tail shares only approximately: every user draws
``n_train + n_test`` distinct items and the split is uniform, so in the population both
tail shares equal the tail's share of the expected interactions, ``1 - top_share`` up
to Rosén's approximation, when the head is the true one (items ``0..ceil(0.2 n) - 1``);
a data set re-selects the head from its own training counts. The validation harness
therefore takes each figure's truth from a large draw of the same cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import optimize, special, stats

from ...exceptions import InputError
from .. import (
    METRICS,
    PopularityPerUser,
    parse_popularity_groups,
    per_user_popularity,
    popularity_parity,
    user_popularity_groups,
)
from .._metrics import _n_iv

__all__ = [
    "SyntheticData",
    "planted_truth",
    "popularity_figures",
    "simulate_interbias",
    "simulate_lists",
    "zipf_exponent",
]

TOP_SHARE_MSG = "`top_share` must be in ({lo:.3f}, 1) for {n} items (the uniform share), got {v!r}"
RD_MSG = "`rd` must be in [0, 1) and `base_hit` * (1 + rd) <= 1, got rd={rd!r}, base_hit={b!r}"
SIZES_MSG = (
    "`n_train` + `n_test` + `list_length` must be <= `n_items` and `n_test` <= `list_length`"
    " (got {n_train} + {n_test} + {length} vs {n_items})"
)
CUTOFF_MSG = "cut-offs must be <= `list_length` ({length}), got {n!r}"
SHAPE_MSG = "every user of `data.users` needs the same number (>= 1) of {what} items"
RNG_MSG = "`rng` must be a numpy.random.Generator (pass one in: no hidden seeding)"


def _inclusion(p: npt.NDArray[np.float64], m: int) -> npt.NDArray[np.float64]:
    """Inclusion probabilities of ``m`` successive draws without replacement ∝ ``p``:
    ``1 - exp(-τ p_i)`` with ``Σ_i (1 - exp(-τ p_i)) = m`` (the Poisson approximation
    of Rosén 1997, "On sampling with probability proportional to size")."""
    tau = optimize.brentq(lambda t: float(np.sum(-np.expm1(-t * p))) - m, 0.0, 1e18)
    return -np.expm1(-tau * p)


def _top_share(s: float, n_items: int, fraction: float, per_user: int | None) -> float:
    w = np.arange(1, n_items + 1, dtype=np.float64) ** -s
    w /= w.sum()
    if per_user is not None:
        w = _inclusion(w, per_user)
    return float(w[: int(np.ceil(fraction * n_items))].sum() / w.sum())


def zipf_exponent(
    n_items: int, top_share: float, *, per_user: int | None = None, fraction: float = 0.2
) -> float:
    """The Zipf exponent ``s`` at which the top ``ceil(fraction * n_items)`` items hold
    ``top_share`` of the interactions (root of a monotone function, Brent's method).

    With ``per_user = m`` every user draws ``m`` distinct items, which flattens the
    head (a user cannot take the top item twice); the share is then that of the
    expected interactions, item ``i`` being drawn with the inclusion probability of
    :func:`_inclusion`. Without it, the share of the mass of ``p_i ∝ i^{-s}``.

    Examples
    --------
    >>> zipf_exponent(1000, 0.8) < zipf_exponent(1000, 0.8, per_user=25)
    True
    """
    lo = _top_share(0.0, n_items, fraction, per_user)
    if not (lo < top_share < 1):
        raise InputError(TOP_SHARE_MSG.format(lo=lo, n=n_items, v=top_share))
    return float(
        optimize.brentq(lambda s: _top_share(s, n_items, fraction, per_user) - top_share, 0.0, 5.0)
    )


def planted_truth(
    *,
    n_test: int,
    list_length: int,
    base_hit: float,
    rd: float,
    n: int | Sequence[int] = (5, 10, 15),
) -> dict[str, dict[str, float]]:
    """Exact population group means and RD/NRD of every metric (module docstring).

    Returns
    -------
    dict
        ``{"<metric>@<N>": {"protected", "unprotected", "rd", "nrd"}}`` for every
        metric of :data:`recaudit.fairness.METRICS`.
    """
    ns = _n_iv(n)
    if ns[-1] > list_length:
        raise InputError(CUTOFF_MSG.format(length=list_length, n=n))
    t, length = n_test, list_length
    disc = 1.0 / np.log2(np.arange(2, length + 2))
    k = np.arange(t + 1)

    def means(pi: float) -> dict[str, float]:
        b = stats.binom.pmf(k, t, pi)
        out = {}
        for c in ns:
            miss = special.comb(length - c, k) / special.comb(length, k)
            r = np.arange(1, c + 1)[:, None]
            first = special.comb(length - r, k[None, 1:] - 1) / special.comb(length, k[None, 1:])
            out[f"precision@{c}"] = t * pi / length
            out[f"recall@{c}"] = pi * c / length
            out[f"ndcg@{c}"] = t * pi / length * disc[:c].sum() / disc[: min(t, c)].sum()
            out[f"hit@{c}"] = float(b @ (1.0 - miss))
            out[f"mrr@{c}"] = float(b[1:] @ (first / r).sum(axis=0))
        return out

    pg, ug = means(base_hit * (1 - rd)), means(base_hit * (1 + rd))
    truth = {}
    for key in (f"{m}@{c}" for m in METRICS for c in ns):
        total = ug[key] + pg[key]
        value = (ug[key] - pg[key]) / total if total > 0 else float("nan")
        truth[key] = {
            "protected": pg[key],
            "unprotected": ug[key],
            "rd": value,
            "nrd": (value + 1) / 2,
        }
    return truth


@dataclass(frozen=True)
class SyntheticData:
    """One simulated evaluation (see the module docstring).

    Attributes
    ----------
    train, test : pandas.DataFrame
        ``user_id, item_id``.
    recs : pandas.DataFrame
        ``user_id, item_id, rank`` (ranks 1..list_length).
    users : pandas.DataFrame
        ``user_id, gender`` (``"F"`` protected, ``"M"``).
    item_probability : ndarray
        ``p_i`` of items ``0..n_items-1``.
    exponent : float
        The Zipf exponent ``s``.
    """

    train: pd.DataFrame
    test: pd.DataFrame
    recs: pd.DataFrame
    users: pd.DataFrame
    item_probability: npt.NDArray[np.float64]
    exponent: float


def _top_k_gumbel(
    logits: npt.NDArray[np.float64], k: int, rng: np.random.Generator
) -> npt.NDArray[np.intp]:
    """``k`` distinct columns per row, drawn successively ∝ exp(logits) (Gumbel top-k)."""
    keys = logits + rng.gumbel(size=logits.shape)
    top = np.argpartition(-keys, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(keys, top, axis=1), axis=1)
    return np.take_along_axis(top, order, axis=1)


def simulate_interbias(
    n_users: int,
    *,
    rng: np.random.Generator,
    n_items: int = 400,
    top_share: float = 0.8,
    n_train: int = 20,
    n_test: int = 5,
    list_length: int = 20,
    base_hit: float = 0.3,
    rd: float = 0.0,
    protected_share: float = 0.5,
    fill_exponent: float = 1.0,
) -> SyntheticData:
    """Draw one evaluation with a planted group gap ``rd`` (module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> d = simulate_interbias(50, rng=np.random.default_rng(0))
    >>> len(d.recs), len(d.test), len(d.train)
    (1000, 250, 1000)
    """
    if not isinstance(rng, np.random.Generator):
        raise InputError(RNG_MSG)
    if not (0 <= rd < 1 and 0 < base_hit and base_hit * (1 + rd) <= 1):
        raise InputError(RD_MSG.format(rd=rd, b=base_hit))
    if n_train + n_test + list_length > n_items or not 1 <= n_test <= list_length:
        raise InputError(
            SIZES_MSG.format(n_train=n_train, n_test=n_test, length=list_length, n_items=n_items)
        )
    s = zipf_exponent(n_items, top_share, per_user=n_train + n_test)
    p = np.arange(1, n_items + 1, dtype=np.float64) ** -s
    p /= p.sum()
    protected = rng.random(n_users) < protected_share
    profile = _top_k_gumbel(np.tile(np.log(p), (n_users, 1)), n_train + n_test, rng)
    profile = rng.permuted(profile, axis=1)
    train_items, test_items = profile[:, :n_train], profile[:, n_train:]
    lists = _draw_lists(profile, test_items, protected, p, list_length=list_length,
                        base_hit=base_hit, rd=rd, fill_exponent=fill_exponent, rng=rng)
    uid = np.arange(n_users)
    return SyntheticData(
        train=pd.DataFrame({"user_id": np.repeat(uid, n_train), "item_id": train_items.ravel()}),
        test=pd.DataFrame({"user_id": np.repeat(uid, n_test), "item_id": test_items.ravel()}),
        recs=_recs_frame(uid, lists),
        users=pd.DataFrame({"user_id": uid, "gender": np.where(protected, "F", "M")}),
        item_probability=p,
        exponent=s,
    )


def _recs_frame(uid: npt.NDArray[np.intp], lists: npt.NDArray[np.intp]) -> pd.DataFrame:
    """``user_id, item_id, rank`` of the lists (one row of ``lists`` per user of ``uid``)."""
    length = lists.shape[1]
    return pd.DataFrame(
        {
            "user_id": np.repeat(uid, length),
            "item_id": lists.ravel(),
            "rank": np.tile(np.arange(1, length + 1), len(uid)),
        }
    )


def _draw_lists(
    profile: npt.NDArray[np.intp],
    test_items: npt.NDArray[np.intp],
    protected: npt.NDArray[np.bool_],
    p: npt.NDArray[np.float64],
    *,
    list_length: int,
    base_hit: float,
    rd: float,
    fill_exponent: float,
    rng: np.random.Generator,
) -> npt.NDArray[np.intp]:
    """One recommender's lists (users x ``list_length`` item codes, in list order): each
    test item enters with its group's hit probability, the other slots are filled with
    items outside the profile (train ∪ test) drawn ∝ ``p ** fill_exponent``, then the
    list is shuffled (module docstring). Draws, in this order: the hits, the fill, the
    shuffle."""
    n_users, n_test = test_items.shape
    pi = np.where(protected, base_hit * (1 - rd), base_hit * (1 + rd))
    hit = rng.random((n_users, n_test)) < pi[:, None]
    logits = np.tile(fill_exponent * np.log(p), (n_users, 1))
    np.put_along_axis(logits, profile, -np.inf, axis=1)
    fill = _top_k_gumbel(logits, list_length, rng)
    # the K hits first, then the first L - K fill items; then a uniform shuffle
    n_hit = hit.sum(axis=1)
    order = np.argsort(~hit, axis=1, kind="stable")
    hits_first = np.take_along_axis(test_items, order, axis=1)
    slots = np.arange(list_length)[None, :]
    lists = np.where(
        slots < n_hit[:, None],
        np.pad(hits_first, ((0, 0), (0, list_length - n_test)))[:, :list_length],
        np.take_along_axis(fill, np.maximum(slots - n_hit[:, None], 0), axis=1),
    )
    out: npt.NDArray[np.intp] = rng.permuted(lists, axis=1)
    return out


def _per_user(table: pd.DataFrame, uid: npt.NDArray[Any], what: str) -> npt.NDArray[np.intp]:
    """The items of ``table`` as a users x k array, rows in the order of ``uid``, each
    user's items in table order; every user must have the same number ``k >= 1``."""
    pos = pd.Index(uid).get_indexer(table["user_id"])
    counts = np.bincount(pos[pos >= 0], minlength=len(uid))
    if (pos < 0).any() or len(uid) == 0 or counts.min() < 1 or np.unique(counts).size != 1:
        raise InputError(SHAPE_MSG.format(what=what))
    order = np.argsort(pos, kind="stable")
    return table["item_id"].to_numpy()[order].astype(np.intp).reshape(len(uid), counts[0])


def simulate_lists(
    data: SyntheticData,
    *,
    rng: np.random.Generator,
    base_hit: float = 0.3,
    rd: float = 0.0,
    fill_exponent: float = 1.0,
    list_length: int | None = None,
) -> pd.DataFrame:
    """Draw a new recommender's top-``L`` lists for the users, training and test items of
    ``data``, by the model of :func:`simulate_interbias` (module docstring).

    Several recommenders drawn on one data set are evaluated on the same users and test
    items -- the paired design of :func:`~recaudit.fairness.compare_models` -- and,
    given the data, are independent of each other; two drawn with the same
    ``base_hit``, ``rd`` and ``fill_exponent`` are exchangeable per user.

    Parameters
    ----------
    data : SyntheticData
        From :func:`simulate_interbias` (its ``recs`` are not used, except for the
        default ``list_length``).
    rng : numpy.random.Generator
        Source of the draws (no hidden seeding).
    base_hit, rd : float
        Each test item enters the list of a protected user with probability
        ``base_hit * (1 - rd)``, of an unprotected one with ``base_hit * (1 + rd)``;
        ``0 <= rd < 1`` and ``base_hit * (1 + rd) <= 1``.
    fill_exponent : float
        The other slots hold items outside the user's training and test items, drawn
        without replacement ∝ ``p_i ** fill_exponent``.
    list_length : int, optional
        ``L``; by default the length of ``data.recs``'s lists.

    Returns
    -------
    pandas.DataFrame
        ``user_id, item_id, rank`` (ranks ``1..L``, every user of ``data.users``),
        like ``data.recs``.

    Raises
    ------
    InputError
        ``rng`` not a Generator, ``rd`` or ``base_hit`` out of range, a list longer
        than the items left outside a profile or shorter than the test, or ``data``
        whose users do not all have the same numbers of training and test items.

    Examples
    --------
    >>> import numpy as np
    >>> d = simulate_interbias(50, rng=np.random.default_rng(0))
    >>> b = simulate_lists(d, rng=np.random.default_rng(1), base_hit=0.2, rd=0.1)
    >>> b.shape, b.equals(d.recs)
    ((1000, 3), False)
    """
    if not isinstance(rng, np.random.Generator):
        raise InputError(RNG_MSG)
    if not (0 <= rd < 1 and 0 < base_hit and base_hit * (1 + rd) <= 1):
        raise InputError(RD_MSG.format(rd=rd, b=base_hit))
    uid = data.users["user_id"].to_numpy()
    test_items = _per_user(data.test, uid, "test")
    profile = np.hstack([_per_user(data.train, uid, "train"), test_items])
    n_items = data.item_probability.size
    length = int(data.recs["rank"].max()) if list_length is None else list_length
    if profile.shape[1] + length > n_items or not test_items.shape[1] <= length:
        raise InputError(SIZES_MSG.format(n_train=profile.shape[1] - test_items.shape[1],
                                          n_test=test_items.shape[1], length=length,
                                          n_items=n_items))
    protected = (data.users["gender"] == "F").to_numpy()
    lists = _draw_lists(profile, test_items, protected, data.item_probability,
                        list_length=length, base_hit=base_hit, rd=rd,
                        fill_exponent=fill_exponent, rng=rng)
    return _recs_frame(uid, lists)


#: The users' own side, as ``evaluate``'s ``popularity_bias.profile`` names it.
PROFILE_NAMES = ("profile_popularity", "profile_tail_share", "test_tail_share")


def _profile_table(data: SyntheticData, n_items: int) -> pd.DataFrame:
    """Per evaluated user: mean popularity of the distinct training items (popularity =
    distinct training users of the item), tail share of the distinct training and test
    items (head: the ``ceil(20 %)`` most popular catalog items, ties to the smaller id)."""
    train = data.train[["user_id", "item_id"]].drop_duplicates()
    test = data.test[["user_id", "item_id"]].drop_duplicates()
    pop = train.groupby("item_id")["user_id"].nunique().reindex(range(n_items), fill_value=0)
    ranked = pop.reset_index(name="pop").sort_values(["pop", "item_id"], ascending=[False, True])
    head = set(ranked["item_id"].iloc[: int(np.ceil(0.2 * n_items))])
    train = train.assign(pop=pop.loc[train["item_id"]].to_numpy(),
                         tail=~train["item_id"].isin(head))
    test = test.assign(tail=~test["item_id"].isin(head))
    by_user = train.groupby("user_id")
    out = pd.DataFrame({"profile_popularity": by_user["pop"].mean(),
                        "profile_tail_share": by_user["tail"].mean()})
    out["test_tail_share"] = test.groupby("user_id")["tail"].mean()
    return out.loc[test["user_id"].unique()]


def popularity_figures(
    data: SyntheticData, *, n: int, n_items: int, popularity_groups: str = "abdollahpouri"
) -> dict[str, float]:
    """The figures of ``evaluate``'s ``popularity_bias`` section at cut-off ``n``, by pandas.

    ``popularity_groups`` names the grouping (:func:`~recaudit.fairness.
    parse_popularity_groups`) of the per-group figures.

    Returns
    -------
    dict
        ``<metric>@<n>`` (ARP, APLT, ACLT, PopRSP, PopREO, novelty over every evaluated
        user), the :data:`PROFILE_NAMES` over every evaluated user and per gender
        (``"F:profile_popularity"``, ...), and every metric and profile figure per
        popularity group of :func:`~recaudit.fairness.user_popularity_groups`
        (``"niche:arp@10"``, ``"blockbuster:profile_tail_share"``, ``"q1:aplt@10"``, ...).
    """
    grouping = parse_popularity_groups(popularity_groups)
    pu = per_user_popularity(data.recs, data.test, data.train, n=n, n_items=n_items)
    values = pu.values.set_index("user_id")
    profile = _profile_table(data, n_items).loc[values.index]
    labels = user_popularity_groups(data.train, **grouping.arguments,
                                    n_items=n_items).reindex(values.index).to_numpy()
    gender = data.users.set_index("user_id")["gender"].reindex(values.index).to_numpy()
    out = _figures(values, profile, pu, np.ones(len(values), dtype=bool), n, "")
    for g in ("F", "M"):
        out |= {f"{g}:{f}": float(profile.loc[gender == g, f].mean()) for f in PROFILE_NAMES}
    for label in grouping.labels:
        out |= _figures(values, profile, pu, labels == label, n, f"{label}:")
    return out


def _figures(
    values: pd.DataFrame, profile: pd.DataFrame, pu: PopularityPerUser, mask: npt.NDArray[np.bool_],
    n: int, prefix: str,
) -> dict[str, float]:
    """The metrics and profile figures of the users ``mask`` (user means; PopRSP and
    PopREO as ratios of sums over those users)."""
    out = {f"{prefix}{c}": float(values.loc[mask, c].mean()) for c in values.columns}
    parity = popularity_parity(pu.counts, weights=mask.astype(np.float64))
    out |= {f"{prefix}{m}@{n}": float(parity[m][0]) for m in ("poprsp", "popreo")}
    out |= {f"{prefix}{f}": float(profile.loc[mask, f].mean()) for f in PROFILE_NAMES}
    return out
