r"""Top-N positional bias: does the RANK an item receives depend on its prompt position?

When the model returns a full ranking of its k candidates instead of one pick, each
evaluation e gives :math:`R_e(p)`, the rank (1 = best) received by the item shown at
prompt position p. Without positional bias the ranking of the ITEMS does not depend on
the order they were shown in.

- Statistics: RB below, pooled over evaluations (the default, omnibus), or
  :math:`T = \frac1n \sum_e \rho_e`, the mean over evaluations of the
  Spearman correlation between prompt position and rank received. With full rankings
  there are no ties and :math:`\rho_e = 1 - \frac{6 \sum_p (p - R_e(p))^2}{k(k^2-1)}`
  (Spearman 1904). :math:`T > 0`: earlier positions get better ranks (primacy).
- Calibration: the within-query permutation test of POB-ICM (spec section 4) carried
  over: under H0 the item rankings of a query are exchangeable with respect to the
  orders they were produced under, so the orders are shuffled WITHIN each query across
  its evaluations, the statistic is recomputed B times, and
  :math:`p = (1 + \#\{T_b \ge T\})/(B + 1)` (Phipson & Smyth 2010).
- Effect sizes (query-bootstrap CIs): the mean rank received at each position
  :math:`\bar R(p)` (order-free expectation (k+1)/2) and its DISPLACEMENT
  :math:`\bar R(p) - (k+1)/2` (negative: the item shown at p is ranked better than
  its order-free expectation); KENDALL'S TAU between prompt position and rank
  received, per evaluation
  :math:`\tau_e = \frac{C_e - D_e}{k(k-1)/2}` over the position pairs p < q
  (concordant when the earlier position gets the better rank; full rankings have no
  ties, so this is tau-a = tau-b, Kendall 1938), averaged over evaluations
  (:math:`\bar\tau > 0`: primacy); the RANK BIAS
  :math:`RB = \frac{\sum_p |\bar R(p) - (k+1)/2|}{\sum_p |p - (k+1)/2|}`, 0 without a
  position effect and 1 when the mean ranks are as far from (k+1)/2 as a fixed
  position-to-rank map puts them (e.g. the ranking IS the prompt order, or positions
  1 and k always take the two best ranks); and the top-1 PB, the
  total-variation distance of the top-ranked position's distribution from uniform
  (the PB of the ranking's first pick).

:func:`simulate_rankings` draws rankings from a Plackett-Luce model with a primacy
boost, the ranking analogue of the spec's section-8 generator.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._limits import check_topn_sizes
from .._plackett_luce import draw_ranking
from .._records import as_mapping, integer, need, number, text
from .._stats import DEFAULT_N_BOOT, Estimate, as_generator, monte_carlo_pvalue
from ..exceptions import InputError
from ._bootstrap import bootstrap_ci, check_bootstrap_args
from ._evaluations import _order_entry

__all__ = [
    "RankingEvaluations",
    "TopNResult",
    "draw_ranking",
    "kendall_position_rank",
    "rankings_from_table",
    "simulate_rankings",
    "spearman_position_rank",
    "top1_table",
    "topn_bias",
]

MSG_COLUMNS = "rankings table lacks column(s) {missing}; it needs query_id, order, ranking"
MSG_ROW = ("row {row}: `ranking` {ranking!r} must list every prompt position 1..{k} once "
           "(best first); `order` is {order!r}")
MSG_EMPTY = "no complete ranking left: every row was discarded"
MSG_NOT_INTS = (
    "row {row}, column `{column}`: {value!r} is not a list of whole numbers (prompt "
    "positions / original indices 1..k)"
)
MSG_K = "rankings must all have the same k >= 2; found {ks}"
MSG_RESAMPLES = "`n_resamples` must be an integer >= 1, got {value!r}"
MSG_STATISTIC = "`statistic` must be 'rank_bias' or 'spearman', got {value!r}"
MSG_ALTERNATIVE = "`alternative` must be 'greater' or 'two-sided', got {value!r}"


@dataclass(frozen=True, eq=False)
class RankingEvaluations:
    """Complete rankings as arrays (0-based codes).

    Attributes
    ----------
    k : int
    query_ids : ndarray
        Query ids in order of first appearance.
    query : ndarray of int64, shape (n,)
        Query code of each evaluation.
    orders : ndarray of int64, shape (n, k)
        ``orders[e, p]`` = original index (0-based) shown at position ``p``.
    item_rank : ndarray of int64, shape (n, k)
        ``item_rank[e, i]`` = rank (1 = best) the model gave original item ``i``.
    n_discarded : int
        Rows without a complete ranking.
    """

    k: int
    query_ids: npt.NDArray[Any]
    query: npt.NDArray[np.int64]
    orders: npt.NDArray[np.int64]
    item_rank: npt.NDArray[np.int64]
    n_discarded: int = 0

    @property
    def position_rank(self) -> npt.NDArray[np.int64]:
        """``position_rank[e, p]`` = rank received by the item at prompt position p."""
        return np.take_along_axis(self.item_rank, self.orders, axis=1)

    @property
    def n_queries(self) -> int:
        """Queries with at least one complete ranking."""
        return int(self.query_ids.size)


def _ints(value: Any) -> list[int]:
    """Whole numbers from text (``"3 1 2"``) or a sequence; a fraction or a non-number
    raises ``ValueError`` (never truncated)."""
    if isinstance(value, str):
        return [_order_entry(x) for x in value.replace(",", " ").split()]
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return []
    try:
        return [_order_entry(x) for x in value]
    except TypeError as exc:  # not iterable, or not a number
        raise ValueError(value) from exc


def rankings_from_table(table: pd.DataFrame) -> RankingEvaluations:
    """Validate a rankings table.

    Columns: ``query_id``; ``order`` (original indices 1..k at prompt positions, as
    "3 1 2" or a list); ``ranking`` (PROMPT POSITIONS 1..k from best to worst, as text
    or a list; empty/null for a discarded answer).
    """
    missing = [c for c in ("query_id", "order", "ranking") if c not in table.columns]
    if missing:
        raise InputError(MSG_COLUMNS.format(missing=", ".join(missing)))
    orders, rankings, queries, discarded = [], [], [], 0
    for row, (qid, order, ranking) in enumerate(
            zip(table["query_id"], table["order"], table["ranking"], strict=True), start=1):
        try:
            o = _ints(order)
        except (ValueError, OverflowError):
            raise InputError(MSG_NOT_INTS.format(row=row, column="order", value=order)) from None
        try:
            r = _ints(ranking)
        except (ValueError, OverflowError):
            raise InputError(MSG_NOT_INTS.format(row=row, column="ranking",
                                                 value=ranking)) from None
        if not r:
            discarded += 1
            continue
        k = len(o)
        if sorted(o) != list(range(1, k + 1)) or sorted(r) != list(range(1, k + 1)):
            raise InputError(MSG_ROW.format(row=row, ranking=ranking, k=k, order=order))
        orders.append(o)
        rankings.append(r)
        queries.append(str(qid))
    if not orders:
        raise InputError(MSG_EMPTY)
    ks = sorted({len(o) for o in orders})
    if len(ks) != 1 or ks[0] < 2:
        raise InputError(MSG_K.format(ks=ks))
    k = ks[0]
    ords = np.asarray(orders, dtype=np.int64) - 1
    ranked_positions = np.asarray(rankings, dtype=np.int64) - 1  # [e, r] = position
    pos_rank = np.empty_like(ranked_positions)
    np.put_along_axis(pos_rank, ranked_positions,
                      np.broadcast_to(np.arange(1, k + 1), pos_rank.shape), axis=1)
    item_rank = np.empty_like(pos_rank)
    np.put_along_axis(item_rank, ords, pos_rank, axis=1)
    ids, codes = np.unique(np.asarray(queries), return_inverse=True)
    first = np.argsort([np.flatnonzero(codes == c)[0] for c in range(ids.size)])
    remap = np.empty_like(first)
    remap[first] = np.arange(first.size)
    return RankingEvaluations(k, ids[first], remap[codes].astype(np.int64), ords, item_rank,
                              discarded)


def top1_table(table: pd.DataFrame) -> pd.DataFrame:
    """The list's first item as a top-1 answer: an evaluations table (``query_id``,
    ``order``, ``selected_position``; a discarded ranking as an empty position) that
    :func:`~recaudit.positional.analyze` reads, for the paper's PS, PB and sPB of a
    ranked-list model (comparable with a top-1 audit of the same model).

    Parameters
    ----------
    table : DataFrame
        A rankings table (:func:`rankings_from_table`'s columns).
    """
    rankings_from_table(table)  # every row validated first
    top: list[int | None] = [next(iter(_ints(r)), None) for r in table["ranking"]]
    return pd.DataFrame({"query_id": table["query_id"].astype(str).to_numpy(),
                         "order": [" ".join(map(str, _ints(o))) for o in table["order"]],
                         "selected_position": pd.array(top, dtype="Int64")})


def spearman_position_rank(position_rank: npt.ArrayLike) -> npt.NDArray[np.float64]:
    r"""Per-row Spearman correlation between position 1..k and the rank received:
    :math:`1 - 6\sum_p (p - R(p))^2 / (k(k^2 - 1))` (rows are permutations)."""
    r = np.asarray(position_rank, dtype=float)
    k = r.shape[-1]
    d = r - np.arange(1, k + 1)
    return 1.0 - 6.0 * (d * d).sum(axis=-1) / (k * (k * k - 1))


def kendall_position_rank(position_rank: npt.ArrayLike) -> npt.NDArray[np.float64]:
    r"""Per-row Kendall tau between position 1..k and the rank received:
    :math:`(C - D) / (k(k-1)/2)` over position pairs p < q, concordant when
    ``R(p) < R(q)`` (rows are permutations: no ties)."""
    r = np.asarray(position_rank, dtype=float)
    k = r.shape[-1]
    upper = np.triu_indices(k, 1)
    diff = r[..., :, None] - r[..., None, :]  # [.., p, q] = R(p) - R(q)
    return -np.sign(diff[..., upper[0], upper[1]]).sum(axis=-1) / (k * (k - 1) / 2.0)


@dataclass(frozen=True)
class TopNResult:
    """Top-N positional bias of one group of rankings.

    Attributes
    ----------
    statistic : float
        The test statistic: RB pooled over evaluations (``statistic_name =
        "rank_bias"``) or T, the mean Spearman correlation of position and rank.
    pvalue : float
        Within-query permutation p-value (+1 corrected).
    n_resamples : int
    alternative : str
    spearman : Estimate
        T with its query-bootstrap CI.
    mean_rank : tuple of Estimate
        :math:`\\bar R(p)` per position p = 1..k.
    displacement : tuple of Estimate
        :math:`\\bar R(p) - (k+1)/2` per position (negative: ranked better than an
        order-free model ranks it).
    kendall : Estimate
        :math:`\\bar\\tau`, the mean per-evaluation Kendall tau of position and rank.
    rank_bias : Estimate
        RB in [0, 1].
    top1_pb : Estimate
        TV distance of the top-ranked position's distribution from uniform.
    n_queries, n_evaluations, n_discarded : int
    k : int
    method : str
    """

    statistic: float
    pvalue: float
    n_resamples: int
    alternative: str
    spearman: Estimate
    mean_rank: tuple[Estimate, ...]
    displacement: tuple[Estimate, ...]
    kendall: Estimate
    rank_bias: Estimate
    top1_pb: Estimate
    n_queries: int
    n_evaluations: int
    n_discarded: int
    k: int
    statistic_name: str = "rank_bias"
    method: str = "within-query permutation of orders"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "statistic": self.statistic, "statistic_name": self.statistic_name,
            "pvalue": self.pvalue,
            "n_resamples": self.n_resamples, "alternative": self.alternative,
            "spearman": self.spearman.to_dict(),
            "mean_rank": [e.to_dict() for e in self.mean_rank],
            "displacement": [e.to_dict() for e in self.displacement],
            "kendall_tau": self.kendall.to_dict(),
            "rank_bias": self.rank_bias.to_dict(), "top1_pb": self.top1_pb.to_dict(),
            "n_queries": self.n_queries, "n_evaluations": self.n_evaluations,
            "n_discarded": self.n_discarded, "k": self.k, "method": self.method,
        }

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any], *, confidence_level: float = 0.95
                  ) -> TopNResult:
        """Read :meth:`to_dict` back (``recaudit positional topn --json``, a run's
        ``topn.json``); every number strict, a missing or wrong key named."""
        what = "TopNResult"
        obj = as_mapping(obj, what)

        def estimate(value: Any) -> Estimate:
            return Estimate.from_dict(value, confidence_level=confidence_level)

        def estimates(key: str) -> tuple[Estimate, ...]:
            values = need(obj, key, what)
            if not isinstance(values, list):
                raise InputError(f"{what}: `{key}` must be a list of estimates")
            return tuple(estimate(v) for v in values)

        return cls(
            statistic=number(obj, "statistic", what), pvalue=number(obj, "pvalue", what),
            n_resamples=integer(obj, "n_resamples", what),
            alternative=text(obj, "alternative", what),
            spearman=estimate(need(obj, "spearman", what)),
            mean_rank=estimates("mean_rank"), displacement=estimates("displacement"),
            kendall=estimate(need(obj, "kendall_tau", what)),
            rank_bias=estimate(need(obj, "rank_bias", what)),
            top1_pb=estimate(need(obj, "top1_pb", what)),
            n_queries=integer(obj, "n_queries", what),
            n_evaluations=integer(obj, "n_evaluations", what),
            n_discarded=integer(obj, "n_discarded", what), k=integer(obj, "k", what),
            statistic_name=text(obj, "statistic_name", what), method=text(obj, "method", what),
        )


def _mean_spearman(item_rank: npt.NDArray[np.int64], orders: npt.NDArray[np.int64]) -> float:
    return float(spearman_position_rank(np.take_along_axis(item_rank, orders, axis=1)).mean())


def _rank_deviation(item_rank: npt.NDArray[np.int64], orders: npt.NDArray[np.int64]) -> float:
    k = orders.shape[1]
    mean_rank = np.take_along_axis(item_rank, orders, axis=1).mean(axis=0)
    return float(np.abs(mean_rank - (k + 1) / 2.0).sum() / np.abs(
        np.arange(1, k + 1) - (k + 1) / 2.0).sum())


def topn_bias(
    data: RankingEvaluations | pd.DataFrame,
    *,
    statistic: Literal["rank_bias", "spearman"] = "rank_bias",
    n_resamples: int = 9999,
    alternative: Literal["greater", "two-sided"] = "greater",
    n_boot: int = DEFAULT_N_BOOT,
    confidence_level: float = 0.95,
    rng: np.random.Generator | int | None = None,
) -> TopNResult:
    r"""Test whether the rank an item receives depends on its prompt position.

    Parameters
    ----------
    data : RankingEvaluations or DataFrame
        Rankings (see :func:`rankings_from_table`).
    statistic : {"rank_bias", "spearman"}
        The test statistic. ``"rank_bias"`` (default): RB computed over all
        evaluations pooled, an omnibus statistic that detects any position effect on
        the mean ranks (e.g. the U shape of primacy plus recency, which SmolLM2-135M
        shows, docs/mitigation.md); ``"spearman"``: T, directional (primacy when
        ``alternative="greater"``), blind to U shapes.
    n_resamples : int
        B within-query shuffles of the orders.
    alternative : {"greater", "two-sided"}
        ``"greater"`` tests for primacy (T > 0); ``"two-sided"`` uses :math:`|T|`.
        Only for ``statistic="spearman"`` (RB is tested with large values).
    n_boot, confidence_level : int, float
        Query-bootstrap percentile CIs of the effect sizes.
    rng : Generator, int or None

    Returns
    -------
    TopNResult

    Notes
    -----
    Formulas in the module docstring. The permutation test is exact in the sense of
    Phipson & Smyth (2010) whenever the rankings of a query are exchangeable over its
    orders (no positional bias); a query with one evaluation contributes a constant.

    Examples
    --------
    >>> table = simulate_rankings(n_queries=30, n_perms=10, k=5, p_bias=0.3, rng=1)
    >>> res = topn_bias(table, n_resamples=199, n_boot=200, rng=2)
    >>> bool(res.pvalue < 0.05), round(res.rank_bias.value, 2) > 0.2
    (True, True)
    """
    ev, n_resamples, alt, n_boot, confidence_level, gen = _topn_bias_iv(
        data, n_resamples, alternative, n_boot, confidence_level, rng)
    if statistic not in ("rank_bias", "spearman"):
        raise InputError(MSG_STATISTIC.format(value=statistic))
    check_topn_sizes(n_resamples=n_resamples, n_boot=n_boot, n_evaluations=ev.query.size,
                     n_queries=int(ev.query_ids.size), k=ev.k)
    stat_fn = _mean_spearman if statistic == "spearman" else _rank_deviation
    if statistic == "rank_bias":
        alt = "greater"
    k, n = ev.k, ev.query.size
    observed = stat_fn(ev.item_rank, ev.orders)
    # within-query shuffles: sort by (query, random key) and map back onto the query's
    # slots, so each query's orders are permuted among its own evaluations
    by_query = np.argsort(ev.query, kind="stable")
    null = np.empty(n_resamples)
    for b in range(n_resamples):
        shuffled = np.lexsort((gen.random(n), ev.query))
        idx = np.empty(n, dtype=np.int64)
        idx[by_query] = shuffled
        null[b] = stat_fn(ev.item_rank, ev.orders[idx])
    if alt == "greater":
        pvalue = monte_carlo_pvalue(observed, null, alternative="greater")
    else:
        pvalue = monte_carlo_pvalue(abs(observed), np.abs(null), alternative="greater")
    pos_rank = ev.position_rank
    rho = spearman_position_rank(pos_rank)
    top1 = (pos_rank == 1).astype(float)
    nq = ev.n_queries
    size = np.bincount(ev.query, minlength=nq).astype(float)

    def per_query(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        out = np.zeros((nq, values.shape[1]))
        np.add.at(out, ev.query, values)
        return out / size[:, None]

    tau = kendall_position_rank(pos_rank)
    # one matrix of per-query means: [rho | mean rank by position | top-1 share | tau]
    pq = per_query(np.column_stack([rho, pos_rank.astype(float), top1, tau]))
    centre = (k + 1) / 2.0
    max_dev = np.abs(np.arange(1, k + 1) - centre).sum()

    def stats(m: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        mean_rank = m[:, 1:k + 1]
        rb = np.abs(mean_rank - centre).sum(axis=1) / max_dev
        pb = 0.5 * np.abs(m[:, k + 1:2 * k + 1] - 1.0 / k).sum(axis=1)
        return np.column_stack([m[:, 0], mean_rank, rb, pb, m[:, -1], mean_rank - centre])

    point = stats(pq.mean(axis=0)[None, :])[0]
    cis = bootstrap_ci(pq, stats, n_boot=n_boot, confidence_level=confidence_level, rng=gen)
    est = [Estimate(float(v), ci) for v, ci in zip(point, cis, strict=True)]
    return TopNResult(
        statistic=observed, pvalue=pvalue, n_resamples=n_resamples, alternative=alt,
        statistic_name=statistic,
        spearman=est[0], mean_rank=tuple(est[1:k + 1]), rank_bias=est[k + 1],
        top1_pb=est[k + 2], kendall=est[k + 3], displacement=tuple(est[k + 4:]),
        n_queries=nq, n_evaluations=n, n_discarded=ev.n_discarded, k=k,
    )


def _topn_bias_iv(data: Any, n_resamples: Any, alternative: Any, n_boot: Any,
                  confidence_level: Any, rng: Any
                  ) -> tuple[RankingEvaluations, int, str, int, float, np.random.Generator]:
    ev = data if isinstance(data, RankingEvaluations) else rankings_from_table(data)
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int | np.integer) \
            or n_resamples < 1:
        raise InputError(MSG_RESAMPLES.format(value=n_resamples))
    if alternative not in ("greater", "two-sided"):
        raise InputError(MSG_ALTERNATIVE.format(value=alternative))
    n_boot, confidence_level = check_bootstrap_args(n_boot, confidence_level)
    return ev, int(n_resamples), str(alternative), n_boot, confidence_level, as_generator(rng)


def simulate_rankings(*, n_queries: int, n_perms: int, k: int, p_bias: float,
                      rng: np.random.Generator | int | None = None,
                      relevant_worth: float = 3.0) -> pd.DataFrame:
    """A rankings table from :func:`draw_ranking`: each query has a random non-empty
    relevance set (worth ``relevant_worth``; others worth 1) and ``n_perms`` uniform
    random orders.

    Returns
    -------
    DataFrame
        ``query_id``, ``order`` ("3 1 2 ..."), ``ranking`` (positions, best first).
    """
    gen = as_generator(rng)
    rows = []
    for q in range(n_queries):
        size = int(gen.integers(1, k + 1))
        relevant = gen.choice(k, size=size, replace=False)
        worth = np.ones(k)
        worth[relevant] = relevant_worth
        for _ in range(n_perms):
            order = tuple(int(x) + 1 for x in gen.permutation(k))
            ranking = draw_ranking(worth, order, p_bias=p_bias, rng=gen)
            rows.append({"query_id": f"q{q:04d}", "order": " ".join(map(str, order)),
                         "ranking": " ".join(map(str, ranking))})
    return pd.DataFrame(rows)
