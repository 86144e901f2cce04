r"""Known-truth interaction data to TRAIN models on: a long tail and a planted group gap.

:mod:`._lists` simulates a recommender's lists (to validate the estimators); this
module simulates the interactions themselves, from a latent preference model, so that
real models can be trained on them and their measured group gap set beside the gap of
the ideal recommender (the paper's RQ1: does a strong long tail mask the gap?).

**Items.** ``n_items`` items with Zipf popularity ``p_i ∝ (i + 1)^{-s}`` and a taste
cluster each (a seeded balanced assignment to ``n_clusters`` clusters, independent of
popularity).

**Preferences (popularity and taste interact).** A user of cluster ``c`` prefers item
``i`` with probability ``q_c(i) ∝ p_i · exp(taste · [cluster(i) = c])``: taste
reweights popularity, so under a strong tail everyone's preferred items are head items.

**The planted gap.** ``gender`` is ``"F"`` (protected) with probability
``protected_share``. A protected user's interactions are ``m - k`` taste draws and
``k = round(protected_noise · m)`` noise draws (so a share ``protected_noise`` of
them is not taste-driven) from the ``noise`` distribution ``ν``: ``"uniform"`` over the
catalog (unpredictable for every recommender, tail-heavy) or ``"popularity"``
(``ν = p``: non-personal but head-heavy, so a popularity-biased recommender hits it
anyway -- the masking mechanism the paper suggests, planted). ``protected_noise = 0``
is the no-gap setting: both groups have the same distribution, so every group
metric's population RD is exactly 0.

**Interactions.** Each user draws ``m = interactions_per_user`` distinct items: an
unprotected user ``m`` successive draws ``∝ q_c`` (Gumbel top-k); a protected user
``m - k`` of them, then ``k`` successive draws ``∝ ν`` among the items not yet drawn.
The Zipf exponent ``s`` is solved (:func:`interaction_model`) so that the
``ceil(20 %)`` items with the most expected interactions hold ``top_share`` of them;
expected counts are the inclusion probabilities of the draws (Rosén's approximation,
as in :func:`~._lists.zipf_exponent`), mixed over clusters and groups
(:meth:`InteractionModel.inclusion`).

**The truth.** The ideal recommender knows the model: it ranks a user's unknown items
(not in train or validation) by their expected inclusion in that user type's draws
(:meth:`InteractionModel.inclusion`; for an unprotected user, and for uniform noise,
the same order as ``q_c``). :func:`oracle_truth` gives its population per-group NDCG@N
and RD by Monte Carlo, with standard errors, under the same per-user split rule as the
study; the no-gap setting's truth is 0 exactly, the Monte Carlo only confirms it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import optimize

from ...exceptions import InputError
from .. import ITEM_ID, USER_ID, InteractionData, split_per_user
from ._lists import RNG_MSG, _inclusion, _top_k_gumbel

__all__ = [
    "InteractionModel",
    "OracleTruth",
    "SyntheticInteractions",
    "draw_interactions",
    "interaction_model",
    "ndcg_per_user",
    "oracle_lists",
    "oracle_truth",
]

Noise = Literal["uniform", "popularity"]
NOISE_KINDS = ("uniform", "popularity")
SHARE_MSG = (
    "`top_share` {v!r} is not reachable for this model: the top-20 % share runs from "
    "{lo:.3f} (s = 0) to at most {hi:.3f} (s <= {s_max:g}); choose a value in between"
)
NOISE_MSG = "`noise` must be one of {kinds}, got {v!r}"
FRACTION_MSG = "`{name}` must be in [0, 1), got {v!r}"
SIZE_MSG = "`{name}` must be an integer >= {minimum}, got {v!r}"
PER_USER_MSG = "`interactions_per_user` ({m}) must be < `n_items` ({n}) / 2"
#: Zipf exponents scanned for the first crossing of the target share.
S_GRID = np.linspace(0.0, 6.0, 25)
FRACTION = 0.2


@dataclass(frozen=True)
class InteractionModel:
    """The latent preference model (module docstring); draw users with
    :func:`draw_interactions`.

    Attributes
    ----------
    popularity : ndarray
        ``p_i`` of items ``0..n_items-1`` (Zipf, sums to 1; item 0 the most popular).
    item_cluster : ndarray of int
        Taste cluster of each item.
    exponent : float
        The Zipf exponent ``s``.
    top_share : float
        The target share of the ``ceil(20 %)`` most popular items.
    taste : float
        Log-boost of a user's own cluster.
    protected_noise : float
        ``ε_PG`` (``ε_UG = 0``).
    noise : {"uniform", "popularity"}
        Distribution of the protected group's non-taste interactions.
    protected_share : float
        Probability that a user is protected (``"F"``).
    interactions_per_user : int
        Distinct items each user draws.
    """

    popularity: npt.NDArray[np.float64]
    item_cluster: npt.NDArray[np.int64]
    exponent: float
    top_share: float
    taste: float
    protected_noise: float
    noise: Noise
    protected_share: float
    interactions_per_user: int

    @property
    def n_items(self) -> int:
        """Catalog size."""
        return int(self.popularity.size)

    @property
    def n_clusters(self) -> int:
        """Number of taste clusters."""
        return int(self.item_cluster.max()) + 1

    def taste_probabilities(self) -> npt.NDArray[np.float64]:
        """``q_c`` of every cluster: shape ``(n_clusters, n_items)``, rows summing to 1."""
        return _taste(self.popularity, self.item_cluster, self.taste)

    def inclusion(self) -> npt.NDArray[np.float64]:
        """Expected inclusion probability of every item in a user's draws, per user type:
        shape ``(2, n_clusters, n_items)``, index 0 unprotected, 1 protected (the
        ideal recommender's scores; see the module docstring)."""
        return _type_inclusion(self.popularity, self.item_cluster, self.taste,
                               self.protected_noise, self.noise, self.interactions_per_user)

    def expected_top_share(self) -> float:
        """Expected share of the ``ceil(20 %)`` items with most expected interactions."""
        return _expected_share(self.inclusion(), self.protected_share)


def _zipf(s: float, n_items: int) -> npt.NDArray[np.float64]:
    p = np.arange(1, n_items + 1, dtype=np.float64) ** -s
    return p / p.sum()


def _noise_count(noise_share: float, m: int) -> int:
    """Noise draws of a protected user: ``round(ε m)`` (at most ``m - 1``)."""
    return min(int(round(noise_share * m)), m - 1)


def _taste(p: npt.NDArray[np.float64], cluster: npt.NDArray[np.int64],
           taste: float) -> npt.NDArray[np.float64]:
    """``q_c`` of every cluster, shape ``(n_clusters, n_items)``, rows summing to 1."""
    k = int(cluster.max()) + 1
    q = p[None, :] * np.exp(taste * (cluster[None, :] == np.arange(k)[:, None]))
    return q / q.sum(axis=1, keepdims=True)


def _type_inclusion(
    p: npt.NDArray[np.float64], cluster: npt.NDArray[np.int64], taste: float,
    noise_share: float, noise: str, m: int,
) -> npt.NDArray[np.float64]:
    """Expected inclusion of every item in a user's ``m`` draws, per type
    ``(group, cluster)``: shape ``(2, n_clusters, n_items)``, rows summing to ``m``.

    Unprotected: ``π_q(i; m)``; protected: ``π_q(i; m - k) + e(i)`` with the ``k``
    noise draws' expected counts ``e(i) ∝ (1 - π_q(i; m - k)) w(i)``, ``w`` constant
    (uniform noise) or ``π_p(i; k)`` (popularity noise), scaled to sum to ``k``
    (Rosén's inclusion probabilities, :func:`~._lists._inclusion`)."""
    q = _taste(p, cluster, taste)
    k = _noise_count(noise_share, m)
    ug = np.stack([_inclusion(row, m) for row in q])
    if k == 0:
        return np.stack([ug, ug])
    base = np.stack([_inclusion(row, m - k) for row in q])
    w = np.ones_like(p) if noise == "uniform" else _inclusion(p, k)
    extra = (1 - base) * w[None, :]
    extra *= k / extra.sum(axis=1, keepdims=True)
    return np.stack([ug, np.minimum(base + extra, 1.0)])


def _expected_share(incl: npt.NDArray[np.float64], protected_share: float) -> float:
    weights = np.array([1 - protected_share, protected_share]) / incl.shape[1]
    counts = np.tensordot(weights, incl.sum(axis=1), axes=1)
    top = np.sort(counts)[::-1][: int(np.ceil(FRACTION * incl.shape[2]))]
    return float(top.sum() / counts.sum())


def _solve_exponent(gap: Callable[[float], float], top_share: float) -> float:
    """The smallest ``s`` with ``gap(s) = 0`` on :data:`S_GRID`, refined by Brent's method.

    The share is not monotone in ``s`` with uniform noise: at a very steep Zipf the
    protected users' draws beyond the few head items go to the uniform part (the tail),
    so the share falls again; the first crossing is the one on the rising branch.
    """
    values = np.array([gap(s) for s in S_GRID])
    above = np.flatnonzero(values >= 0)
    if values[0] >= 0 or above.size == 0:
        raise InputError(SHARE_MSG.format(v=top_share, lo=values[0] + top_share,
                                          hi=values.max() + top_share, s_max=S_GRID[-1]))
    i = int(above[0])
    return float(optimize.brentq(gap, S_GRID[i - 1], S_GRID[i], xtol=1e-6))


def _fraction_iv(value: float, name: str) -> float:
    if not (isinstance(value, float | int) and 0 <= value < 1):
        raise InputError(FRACTION_MSG.format(name=name, v=value))
    return float(value)


def _int_iv(value: int, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise InputError(SIZE_MSG.format(name=name, minimum=minimum, v=value))
    return int(value)


def interaction_model(
    *,
    rng: np.random.Generator,
    n_items: int = 800,
    top_share: float = 0.65,
    n_clusters: int = 10,
    taste: float = 2.5,
    protected_noise: float = 0.0,
    noise: Noise = "uniform",
    protected_share: float = 0.3,
    interactions_per_user: int = 30,
) -> InteractionModel:
    """Draw the item clusters and solve the Zipf exponent for ``top_share``.

    Parameters
    ----------
    rng : numpy.random.Generator
        Draws the item-to-cluster assignment (no hidden seeding).
    n_items, n_clusters, interactions_per_user : int
        Catalog size, taste clusters, distinct items per user.
    top_share : float
        Target share of the ``ceil(20 %)`` most popular items (MovieLens-like 0.65,
        Last.fm-like 0.85).
    taste : float
        Log-boost of a user's own cluster (0: preferences are popularity alone).
    protected_noise : float
        Share of a protected user's interactions drawn from ``noise`` (0: no gap).
    noise : {"uniform", "popularity"}
        See the module docstring.
    protected_share : float
        Probability that a user is protected.

    Returns
    -------
    InteractionModel

    Examples
    --------
    >>> import numpy as np
    >>> m = interaction_model(rng=np.random.default_rng(0), top_share=0.85)
    >>> round(m.expected_top_share(), 3)
    0.85
    """
    if not isinstance(rng, np.random.Generator):
        raise InputError(RNG_MSG)
    if noise not in NOISE_KINDS:
        raise InputError(NOISE_MSG.format(kinds=NOISE_KINDS, v=noise))
    n_items = _int_iv(n_items, "n_items", 10)
    n_clusters = _int_iv(n_clusters, "n_clusters", 1)
    m = _int_iv(interactions_per_user, "interactions_per_user", 2)
    if 2 * m >= n_items:
        raise InputError(PER_USER_MSG.format(m=m, n=n_items))
    eps = _fraction_iv(protected_noise, "protected_noise")
    share = _fraction_iv(protected_share, "protected_share")
    cluster = (rng.permutation(n_items) % n_clusters).astype(np.int64)

    def gap(s: float) -> float:
        incl = _type_inclusion(_zipf(s, n_items), cluster, float(taste), eps, noise, m)
        return _expected_share(incl, share) - top_share

    s = _solve_exponent(gap, top_share)
    return InteractionModel(
        popularity=_zipf(s, n_items),
        item_cluster=cluster,
        exponent=s,
        top_share=float(top_share),
        taste=float(taste),
        protected_noise=eps,
        noise=noise,
        protected_share=share,
        interactions_per_user=m,
    )


@dataclass(frozen=True)
class SyntheticInteractions:
    """Users drawn from an :class:`InteractionModel`.

    Attributes
    ----------
    data : InteractionData
        ``interactions``: ``user_id, item_id`` (ints); ``users``: ``user_id, gender``
        (``"F"`` protected, ``"M"``), ``cluster``.
    model : InteractionModel
        The model they were drawn from.
    """

    data: InteractionData
    model: InteractionModel


def draw_interactions(
    model: InteractionModel, n_users: int, *, rng: np.random.Generator
) -> SyntheticInteractions:
    """Draw ``n_users`` users and their interactions (successive sampling ``∝ r_u``).

    Examples
    --------
    >>> import numpy as np
    >>> gen = np.random.default_rng(0)
    >>> d = draw_interactions(interaction_model(rng=gen), 50, rng=gen)
    >>> len(d.data.interactions), sorted(d.data.users.columns)
    (1500, ['cluster', 'gender', 'user_id'])
    """
    if not isinstance(rng, np.random.Generator):
        raise InputError(RNG_MSG)
    n_users = _int_iv(n_users, "n_users", 1)
    protected = rng.random(n_users) < model.protected_share
    cluster = rng.integers(model.n_clusters, size=n_users)
    items = _draw_items(model, protected, cluster, rng)
    uid = np.arange(n_users)
    interactions = pd.DataFrame(
        {USER_ID: np.repeat(uid, items.shape[1]), ITEM_ID: items.ravel()}
    )
    users = pd.DataFrame(
        {USER_ID: uid, "gender": np.where(protected, "F", "M"), "cluster": cluster}
    )
    return SyntheticInteractions(InteractionData(interactions, users, name="synthetic"), model)


def _draw_items(
    model: InteractionModel, protected: npt.NDArray[np.bool_], cluster: npt.NDArray[np.int64],
    rng: np.random.Generator,
) -> npt.NDArray[np.int64]:
    """Every user's ``m`` distinct items: ``m`` (unprotected) or ``m - k`` (protected)
    successive draws ``∝ q_c``, then the protected users' ``k`` noise draws ``∝ ν``
    among the items not yet drawn; 2000 users at a time (bounded memory)."""
    m, n_users = model.interactions_per_user, protected.size
    k = _noise_count(model.protected_noise, m)
    logq = np.log(model.taste_probabilities())
    lognu = np.zeros(model.n_items) if model.noise == "uniform" else np.log(model.popularity)
    items = np.empty((n_users, m), dtype=np.int64)
    for start in range(0, n_users, 2000):
        stop = min(start + 2000, n_users)
        prot = protected[start:stop]
        taste = _top_k_gumbel(logq[cluster[start:stop]], m, rng)
        if k > 0 and prot.any():
            keep = taste[prot, : m - k]
            logits = np.tile(lognu, (keep.shape[0], 1))
            np.put_along_axis(logits, keep, -np.inf, axis=1)
            taste[prot] = np.hstack([keep, _top_k_gumbel(logits, k, rng)])
        items[start:stop] = taste
    return items


def oracle_lists(
    sample: SyntheticInteractions, known: pd.DataFrame, *, n: int = 20,
    users: Sequence[int] | None = None,
) -> pd.DataFrame:
    """The ideal recommender's top-``n`` lists: unknown items ranked by ``r_u``.

    Parameters
    ----------
    sample : SyntheticInteractions
        The users (their group and cluster fix ``r_u``).
    known : pandas.DataFrame
        ``user_id, item_id`` pairs never recommended (train + validation).
    n : int, default 20
        List length.
    users : sequence of int, optional
        Whom to recommend for (default: every user).

    Returns
    -------
    pandas.DataFrame
        ``user_id, item_id, rank, score, model`` (``"Oracle"``), like
        :func:`~recaudit.fairness.study.models.recommend`.
    """
    n = _int_iv(n, "n", 1)
    table = sample.data.users.set_index(USER_ID)
    uid = table.index.to_numpy() if users is None else np.asarray(users)
    kind = (table.loc[uid, "gender"].to_numpy() == "F").astype(int)
    clusters = table.loc[uid, "cluster"].to_numpy()
    r = sample.model.inclusion()
    row_of = pd.Series(np.arange(uid.size), index=uid)
    known = known.loc[known[USER_ID].isin(row_of.index)]
    k_rows, k_items = row_of[known[USER_ID]].to_numpy(), known[ITEM_ID].to_numpy()
    out_items = np.empty((uid.size, n), dtype=np.int64)
    out_scores = np.empty((uid.size, n))
    for start in range(0, uid.size, 2000):
        stop = min(start + 2000, uid.size)
        scores = r[kind[start:stop], clusters[start:stop]].copy()
        inside = (k_rows >= start) & (k_rows < stop)
        scores[k_rows[inside] - start, k_items[inside]] = -np.inf
        top = np.argsort(-scores, axis=1, kind="stable")[:, :n]
        out_items[start:stop] = top
        out_scores[start:stop] = np.take_along_axis(scores, top, axis=1)
    return pd.DataFrame(
        {
            USER_ID: np.repeat(uid, n),
            ITEM_ID: out_items.ravel(),
            "rank": np.tile(np.arange(1, n + 1), uid.size),
            "score": out_scores.ravel(),
            "model": "Oracle",
        }
    )


def ndcg_per_user(
    recs: pd.DataFrame, test: pd.DataFrame, *, n: int
) -> pd.Series:
    """NDCG@``n`` of every test user (binary gains, ``log2(rank + 1)`` discount, IDCG over
    ``min(|T_u|, n)``); a test user without a list scores 0. Independent of
    :mod:`._metrics` on purpose (the truth is computed without the code it checks)."""
    top = recs.loc[recs["rank"] <= n, [USER_ID, ITEM_ID, "rank"]]
    hits = top.merge(test[[USER_ID, ITEM_ID]].drop_duplicates(), on=[USER_ID, ITEM_ID])
    dcg = (1.0 / np.log2(hits["rank"] + 1.0)).groupby(hits[USER_ID]).sum()
    sizes = test.groupby(USER_ID)[ITEM_ID].nunique()
    ideal_disc = np.cumsum(1.0 / np.log2(np.arange(2, n + 2)))
    idcg = pd.Series(ideal_disc[np.minimum(sizes.to_numpy(), n) - 1], index=sizes.index)
    return (dcg.reindex(sizes.index, fill_value=0.0) / idcg).rename("ndcg")


@dataclass(frozen=True)
class OracleTruth:
    """Population NDCG@N of the ideal recommender per group, and its RD (Monte Carlo).

    Attributes
    ----------
    n : int
        Cut-off.
    protected, unprotected : float
        Group means of NDCG@N.
    protected_se, unprotected_se : float
        Their Monte-Carlo standard errors (sd / sqrt(users)).
    rd, rd_se : float
        ``(U - P) / (U + P)`` and its delta-method standard error.
    n_users : int
        Simulated users.
    """

    n: int
    protected: float
    unprotected: float
    protected_se: float
    unprotected_se: float
    rd: float
    rd_se: float
    n_users: int

    @property
    def nrd(self) -> float:
        """``(RD + 1) / 2``."""
        return (self.rd + 1) / 2

    def to_dict(self) -> dict[str, float | int]:
        """JSON form."""
        return {
            "n": self.n, "protected": self.protected, "unprotected": self.unprotected,
            "protected_se": self.protected_se, "unprotected_se": self.unprotected_se,
            "rd": self.rd, "rd_se": self.rd_se, "nrd": self.nrd, "n_users": self.n_users,
        }


def oracle_truth(
    model: InteractionModel,
    *,
    rng: np.random.Generator,
    n_users: int = 20_000,
    n: int = 10,
    fractions: tuple[float, float, float] = (0.8, 0.1, 0.1),
) -> OracleTruth:
    """Population per-group NDCG@``n`` and RD of the ideal recommender, by Monte Carlo.

    ``n_users`` users are drawn from ``model``, split per user with ``fractions``
    (:func:`~recaudit.fairness.split_per_user`, the rule the study uses), and the
    oracle's lists (:func:`oracle_lists`, train + validation masked) scored against
    the test items.

    Examples
    --------
    >>> import numpy as np
    >>> gen = np.random.default_rng(1)
    >>> t = oracle_truth(interaction_model(rng=gen, n_items=300), rng=gen, n_users=4000)
    >>> abs(t.rd) < 4 * t.rd_se
    True
    """
    sample = draw_interactions(model, n_users, rng=rng)
    split = split_per_user(sample.data, fractions=fractions, rng=rng)
    recs = oracle_lists(sample, split.known, n=n, users=split.test[USER_ID].unique())
    scores = ndcg_per_user(recs, split.test, n=n)
    gender = sample.data.users.set_index(USER_ID).loc[scores.index, "gender"]
    pg, ug = scores[gender.to_numpy() == "F"], scores[gender.to_numpy() != "F"]
    p, u = float(pg.mean()), float(ug.mean())
    p_se, u_se = float(pg.std(ddof=1) / np.sqrt(pg.size)), float(ug.std(ddof=1) / np.sqrt(ug.size))
    rd = (u - p) / (u + p)
    rd_se = 2.0 / (u + p) ** 2 * float(np.hypot(p * u_se, u * p_se))
    return OracleTruth(n, p, u, p_se, u_se, rd, rd_se, int(scores.size))
