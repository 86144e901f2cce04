r"""Exact choice distributions (logprob mode): the statistics on probability vectors.

When the backend reports, for each evaluation e, the probability :math:`\pi_e(p)` of
every identifier at the answer slot (renormalised over the k identifiers, prompt-
position order; the ``choice_probs`` column of the evaluations table), every
statistic can use the vector instead of the one sampled choice. The sampled indicator
:math:`1\{P_e = p\}` is one draw from :math:`\pi_e` (exactly so when the choice is
sampled from the same distribution, e.g. the local backend at temperature 1 and the
simulated backend), so :math:`E[1\{P_e = p\} \mid \pi_e] = \pi_e(p)`: replacing the
indicator by its conditional expectation keeps every mean and removes the decoding
noise (Rao-Blackwell). docs/exact-and-sequential.md says which guarantees hold.

- POB-UNBP on the per-query mean probabilities
  :math:`\bar\pi_j(p) = \frac1{l_j}\sum_{e \in j} \pi_e(p)`: i.i.d. over queries with
  mean q_p, so the same t-based bound (Student t over queries, pooled variance)
  applies -- with a smaller variance.
- PS (``ps``) on pairs of evaluations under different orders:
  :math:`1 - \sum_{e \ne e', \sigma_e \ne \sigma_{e'}} \pi_e \cdot \pi_{e'} / \#\text{pairs}`
  (the exact probability that the two draws disagree; as in sampled mode, pairs of one
  order are left out, and the interval is bootstrap-t over queries); ``ps_modal``: the
  paper's :math:`1 - \max_i c_{ji}/l_j` on expected counts
  :math:`c_{ji} = \sum_{e \in j} \pi_e(\sigma_e(i))` (a plug-in).
- PB: the cross-fitted TV of sampled mode (:func:`~recaudit.positional.positional_bias`)
  on the per-query mean probabilities, with the plug-in beside it.
- sPB: the relevance-set model needs sampled choices, so ``spb``/``spb_soft``/
  ``positional_share`` are null with a reason; ``spb_paper`` is the cross-validated
  rule of :func:`strong_positional_bias` on expected counts.
- Selection-rate matrix :math:`S[i, p] = \sum_e \pi_e(p) 1\{\sigma_e^{-1}(p) = i\} /
  \#(i \text{ shown at } p)`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._limits import check_analysis_sizes
from .._stats import Estimate, as_generator
from ..exceptions import InputError
from ._analysis_json import exact_fields
from ._analyze import IDENTITY_ORDER, REASON_IDENTITY_TESTS, table_condition
from ._bootstrap import bootstrap_ci
from ._crossfit import PositionalBiasResult, crossfit_shares, pb_from_shares
from ._evaluations import _parse_orders, _with_row_numbers, read_table
from ._metrics import SPB_REPEATS, _top_sets, studentized_estimate
from ._options import AnalysisOptions
from ._unbp import PobUnbpResult, _pob_unbp_shares

REASON_EXACT_SPB = (
    "the relevance-set model needs sampled choices; on choice probabilities read "
    "spb_paper (the paper's cross-validated estimator on expected counts)"
)

__all__ = [
    "ExactAnalysis",
    "ExactEvaluations",
    "analyze_exact",
    "choice_probs_vector",
    "exact_evaluations_from_table",
]

MSG_NO_COLUMN = (
    "the evaluations table has no column `choice_probs`; run the audit with "
    "`[prompt] choice_probabilities = true` on a backend that reports them"
)
MSG_EXACT_TAU = (
    "`--tau` does not apply to `--exact`: exact-mode sPB uses the 'auto' rule on "
    "expected counts; drop `--tau` or `--exact`"
)
MSG_NO_PROBS = "no row has a `choice_probs` vector ({n} rows, all empty)"
MSG_BAD_VECTOR = (
    "row {row}, column `choice_probs`: {value!r} is not a list of {k} non-negative "
    "probabilities summing to 1"
)
MSG_QUERY_ID = "row {row}, column `query_id`: missing query id"
_SUM_TOL = 1e-3


@dataclass(frozen=True, eq=False)
class ExactEvaluations:
    """One analysis group with a choice-probability vector per evaluation.

    Attributes
    ----------
    k : int
        Positions.
    query_ids : ndarray
        Query ids with at least one probability vector.
    query : ndarray of int64, shape (n,)
        Query code of each evaluation.
    orders : ndarray of int64, shape (n, k)
        0-based original index shown at each prompt position.
    probs : ndarray of float, shape (n, k)
        :math:`\\pi_e(p)`, prompt-position order, rows sum to 1.
    outside_mass : ndarray of float, shape (n,)
        Mass outside the identifiers (``nan`` when not recorded).
    rows : ndarray of int64
        1-based rows of the source table.
    n_missing : int
        Rows without a probability vector (left out; counted, never guessed).
    """

    k: int
    query_ids: npt.NDArray[Any]
    query: npt.NDArray[np.int64]
    orders: npt.NDArray[np.int64]
    probs: npt.NDArray[np.float64]
    outside_mass: npt.NDArray[np.float64]
    rows: npt.NDArray[np.int64]
    n_missing: int = 0

    @property
    def n_queries(self) -> int:
        """Queries with a probability vector."""
        return int(self.query_ids.size)

    @property
    def n_evaluations(self) -> int:
        """Evaluations with a probability vector."""
        return int(self.query.size)

    def evaluations_per_query(self) -> npt.NDArray[np.int64]:
        """l_j."""
        return np.bincount(self.query, minlength=self.n_queries)

    def query_shares(self) -> npt.NDArray[np.float64]:
        r""":math:`\bar\pi_j(p)`, shape (n_queries, k)."""
        sums = np.zeros((self.n_queries, self.k))
        np.add.at(sums, self.query, self.probs)
        return sums / self.evaluations_per_query()[:, None]

    def item_probs(self) -> npt.NDArray[np.float64]:
        """Probability of each ORIGINAL index per evaluation, shape (n, k)."""
        out = np.empty_like(self.probs)
        np.put_along_axis(out, self.orders, self.probs, axis=1)
        return out


def exact_evaluations_from_table(table: pd.DataFrame | str | Path) -> ExactEvaluations:
    """Validate one analysis group's ``query_id``, ``order`` and ``choice_probs``.

    ``choice_probs`` holds a JSON list (or a sequence) of k probabilities in prompt-
    position order; empty cells (no vector reported) are counted in ``n_missing``. A
    discarded generation keeps its vector: the model's distribution at the answer
    slot exists even when its free text did not parse. ``outside_mass`` is read when
    present.

    Raises
    ------
    InputError
        Missing column, malformed order or vector (naming row and column).
    """
    table = _with_row_numbers(read_table(table))
    if "choice_probs" not in table.columns:
        raise InputError(MSG_NO_COLUMN)
    raw = table["choice_probs"].tolist()
    has = np.array([_present(v) for v in raw])
    if not has.any():
        raise InputError(MSG_NO_PROBS.format(n=len(raw)))
    part = table.loc[has]
    rows = part["_row"].to_numpy(dtype=np.int64)
    orders = _parse_orders(part["order"].tolist(), rows,
                           k_column=part["k"] if "k" in part.columns else None)
    k = orders.shape[1]
    probs = np.empty((rows.size, k))
    for i, (value, row) in enumerate(zip(part["choice_probs"].tolist(), rows, strict=True)):
        probs[i] = choice_probs_vector(value, row=row, k=k)
    qid = part["query_id"]
    missing = np.flatnonzero(qid.isna().to_numpy())
    if missing.size:
        raise InputError(MSG_QUERY_ID.format(row=rows[missing[0]]))
    codes, ids = pd.factorize(qid, sort=False)
    outside = (pd.to_numeric(part["outside_mass"], errors="coerce").to_numpy(dtype=float)
               if "outside_mass" in part.columns else np.full(rows.size, np.nan))
    return ExactEvaluations(
        k=k, query_ids=np.asarray(ids), query=codes.astype(np.int64), orders=orders,
        probs=probs, outside_mass=outside, rows=rows, n_missing=int((~has).sum()),
    )


def _present(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, float) and np.isnan(value):
        return False
    if value is pd.NA:
        return False
    return not (isinstance(value, str) and not value.strip())


def choice_probs_vector(value: Any, *, row: int, k: int | None = None
                        ) -> npt.NDArray[np.float64]:
    """One ``choice_probs`` cell as a probability vector, renormalised to sum 1.

    The one check of a choice-probability vector (``analyze --exact`` and ``topn
    --from-choice-probs`` both use it): a JSON list (or a sequence) of ``k`` finite,
    non-negative numbers whose sum is within ``1e-3`` of 1 (``k=None``: any length
    >= 2). NaN, a negative entry or a vector that is not normalised is an
    :class:`InputError` (:data:`MSG_BAD_VECTOR`, naming the data row).
    """
    shown = "k" if k is None else k
    try:
        vec = np.asarray(json.loads(value) if isinstance(value, str) else value, dtype=float)
    except (TypeError, ValueError, RecursionError):
        raise InputError(MSG_BAD_VECTOR.format(row=row, value=value, k=shown)) from None
    size = k if k is not None else max(vec.size, 2)
    if (vec.shape != (size,) or not np.all(np.isfinite(vec)) or np.any(vec < 0)
            or abs(vec.sum() - 1.0) > _SUM_TOL):
        raise InputError(MSG_BAD_VECTOR.format(row=row, value=value, k=shown))
    return vec / vec.sum()


@dataclass(frozen=True, eq=False)
class ExactAnalysis:
    """The positional statistics of one group computed from choice probabilities.

    Same meaning as :class:`~recaudit.positional.PositionalAnalysis` (POB-ICM is not
    defined on probabilities and is absent); ``outside_mass`` is the mean mass
    outside the identifiers (``None`` when not recorded) and ``n_missing`` the rows
    without a vector; ``unbp_reason`` says why POB-UNBP did not run where a reason
    applies (an identity-order condition: ``decoding`` or ``labels``).
    """

    k: int
    n_queries: int
    n_evaluations: int
    n_missing: int
    alpha: float
    epsilon: float
    pob_unbp: PobUnbpResult | None
    ps: Estimate | None
    ps_modal: Estimate | None
    pb: PositionalBiasResult
    spb_paper: Estimate | None
    outside_mass: float | None
    position_distribution: tuple[Estimate, ...]
    selection_rate_matrix: npt.NDArray[np.float64] = field(repr=False)
    group: Mapping[str, Any] = field(default_factory=dict)
    spb_repeats: int = SPB_REPEATS
    unbp_reason: str | None = None

    @property
    def rejects(self) -> bool:
        """True when POB-UNBP rejects (L > epsilon); exact mode has no POB-ICM."""
        return bool(self.pob_unbp is not None and self.pob_unbp.reject)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (fractions in [0, 1]); ``choice`` is ``"probabilities"``."""
        unbp = self.pob_unbp

        def est(e: Estimate | None) -> dict[str, float | None]:
            if e is None:
                return {"value": None, "ci_low": None, "ci_high": None}
            return {**e.to_dict()}

        return {
            **self.group,
            "choice": "probabilities",
            "k": self.k,
            "n_queries": self.n_queries,
            "n_evaluations": self.n_evaluations,
            "n_missing": self.n_missing,
            "alpha": self.alpha,
            "outside_mass": self.outside_mass,
            "pob_unbp": {
                "L": None if unbp is None else unbp.L,
                "L_under": None if unbp is None else unbp.L_under,
                "L_over": None if unbp is None else unbp.L_over,
                "epsilon": self.epsilon,
                "pvalue": None if unbp is None else unbp.pvalue,
                "reject": None if unbp is None else unbp.reject,
                "reason": self.unbp_reason,
            },
            "ps": est(self.ps),
            "ps_modal": est(self.ps_modal),
            "pb": self.pb.to_dict(),
            "spb": {**est(None), "reason": REASON_EXACT_SPB},
            "spb_soft": {**est(None), "reason": REASON_EXACT_SPB},
            "positional_share": {**est(None), "reason": REASON_EXACT_SPB},
            "spb_paper": {**est(self.spb_paper), "n_folds": 5, "n_repeats": self.spb_repeats},
            "position_distribution": [e.value for e in self.position_distribution],
            "position_distribution_ci": [[e.ci.low, e.ci.high]
                                         for e in self.position_distribution],
            "selection_rate_matrix": self.selection_rate_matrix.tolist(),
        }

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any], *, confidence_level: float = 0.95
                  ) -> ExactAnalysis:
        """Read :meth:`to_dict`'s JSON (one object of ``analyze --exact --json``) back;
        ``from_dict(a.to_dict()).to_dict() == a.to_dict()`` (see
        :meth:`PositionalAnalysis.from_dict` for what the JSON does not hold)."""
        return cls(**exact_fields(obj, confidence_level))


def analyze_exact(
    data: ExactEvaluations | pd.DataFrame | str | Path,
    options: AnalysisOptions | None = None,
    *,
    rng: np.random.Generator | int | None = None,
) -> ExactAnalysis:
    r"""POB-UNBP, PS, PB, sPB, position distribution and S matrix from probabilities.

    The exact-mode counterpart of :func:`~recaudit.positional.analyze` (module
    docstring for the formulas). POB-UNBP uses the per-query mean probabilities with
    the pooled-variance Student-t bound of :func:`~recaudit.positional.pob_unbp`
    (valid: the means are i.i.d. over queries with mean q_p, and under H0(0) a
    uniform random order keeps their k coordinates exchangeable; not run on the
    rows of an identity-order condition, ``decoding`` or ``labels``: one fixed order per
    query). PS and sPB use the
    queries with >= 2 evaluations. Every CI is a percentile bootstrap over queries,
    except the pairwise PS's: bootstrap-t over queries, as in sampled mode
    (:func:`~recaudit.positional.permutation_sensitivity`).

    Parameters
    ----------
    data : ExactEvaluations, DataFrame or path
        One analysis group with a ``choice_probs`` column.
    options : AnalysisOptions, optional
        ``alpha`` and ``epsilon`` (POB-UNBP), ``n_boot`` and ``confidence_level`` (the
        CIs), ``spb_repeats`` (sPB's fold assignments). ``tau`` must be ``'auto'``
        (exact-mode sPB uses the 'auto' rule on expected counts); ``n_resamples`` is
        unused (no POB-ICM in exact mode).
    rng : numpy.random.Generator or int, optional
        Bootstrap and fold randomness.

    References
    ----------
    Peláez-González, Herrera, Herrera-Poyatos, arXiv 2610.37962 (the statistics).
    Blackwell, D. (1947). Conditional expectation and unbiased sequential estimation.
    """
    ev, opts, identity = _analyze_exact_iv(data, options)
    check_analysis_sizes(n_resamples=0, n_boot=opts.n_boot, spb_repeats=opts.spb_repeats,
                         n_evaluations=ev.n_evaluations, n_queries=ev.n_queries, k=ev.k,
                         spb_block=False)  # exact sPB loops over its repeats
    alpha, epsilon, n_boot = opts.alpha, opts.epsilon, opts.n_boot
    confidence_level, spb_repeats = opts.confidence_level, opts.spb_repeats
    gen = as_generator(rng)
    g_pb, g_dist, g_ps, g_ps2, g_spb = gen.spawn(5)
    k = ev.k
    shares = ev.query_shares()
    unbp = (_pob_unbp_shares(shares, alpha, epsilon, "pooled", "both", 2)
            if ev.n_queries >= 2 and identity is None else None)

    pb = pb_from_shares(shares, crossfit_shares(shares, g_pb), confidence_level)
    dist_ci = bootstrap_ci(shares, lambda m: m, n_boot=n_boot,
                           confidence_level=confidence_level, rng=g_dist)
    dist = tuple(Estimate(float(v), c) for v, c in zip(shares.mean(axis=0), dist_ci,
                                                       strict=True))
    size = ev.evaluations_per_query()
    two = size >= 2
    item = ev.item_probs()
    counts = np.zeros((ev.n_queries, k))
    np.add.at(counts, ev.query, item)
    squares = np.zeros((ev.n_queries, k))
    np.add.at(squares, ev.query, item**2)
    ps = ps_modal = spb = None
    if two.any():
        c, ln = counts[two], size[two].astype(float)
        modal = 1.0 - c.max(axis=1) / ln
        ps_modal = _mean(modal, n_boot, confidence_level, g_ps)
        pair = _pairwise_across_orders_exact(ev, item, counts, squares)[two]
        if np.isfinite(pair).any():
            ps = studentized_estimate(pair[np.isfinite(pair)], n_boot, confidence_level, g_ps2)
        p_hat = min(1.0, pb.plugin / (1.0 - 1.0 / k))
        threshold = 1.0 - p_hat * (k - np.arange(1, k + 1)) / k
        outside = _cv_outside(ev, item, threshold, 5, g_spb, spb_repeats)[two]
        spb = _mean(outside, n_boot, confidence_level, g_spb)
    om = ev.outside_mass[np.isfinite(ev.outside_mass)]
    return ExactAnalysis(
        k=k, n_queries=ev.n_queries, n_evaluations=ev.n_evaluations, n_missing=ev.n_missing,
        alpha=alpha, epsilon=epsilon, pob_unbp=unbp, ps=ps, ps_modal=ps_modal,
        pb=pb, spb_paper=spb,
        outside_mass=float(om.mean()) if om.size else None,
        position_distribution=dist, selection_rate_matrix=exact_selection_rate_matrix(ev),
        spb_repeats=spb_repeats,
        unbp_reason=None if identity is None else REASON_IDENTITY_TESTS.format(
            condition=identity),
    )


def _pairwise_across_orders_exact(
    ev: ExactEvaluations, item: npt.NDArray[np.float64], counts: npt.NDArray[np.float64],
    squares: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    r"""Per query: expected share of pairs of evaluations under different orders that
    disagree, :math:`1 - \sum_{e \ne e', \sigma_e \ne \sigma_{e'}} \pi_e \cdot \pi_{e'}`
    / #pairs (``nan`` for a query seen in one order only)."""
    k, nq = ev.k, ev.n_queries
    _, order_id = np.unique(ev.orders, axis=0, return_inverse=True)
    group = ev.query * (int(np.max(order_id)) + 1) + np.asarray(order_id).reshape(-1)
    codes, inverse = np.unique(group, return_inverse=True)
    per_order = np.zeros((codes.size, k))
    np.add.at(per_order, inverse, item)
    sq_order = np.zeros((codes.size, k))
    np.add.at(sq_order, inverse, item**2)
    owner = codes // (int(np.max(order_id)) + 1)
    same = np.zeros(nq)
    np.add.at(same, owner, (per_order**2 - sq_order).sum(axis=1))
    l_order = np.bincount(inverse, minlength=codes.size).astype(float)
    same_pairs = np.bincount(owner, weights=l_order * (l_order - 1.0), minlength=nq)
    size = ev.evaluations_per_query().astype(float)
    pairs = size * (size - 1.0) - same_pairs
    agree = (counts**2 - squares).sum(axis=1) - same
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pairs > 0, 1.0 - agree / np.where(pairs > 0, pairs, 1.0), np.nan)


def exact_selection_rate_matrix(ev: ExactEvaluations) -> npt.NDArray[np.float64]:
    r"""S[i, p] = sum_e pi_e(p) 1{sigma_e^{-1}(p) = i} / #(i shown at p) (nan if never)."""
    k = ev.k
    cells = (ev.orders * k + np.arange(k)).ravel()
    chosen = np.bincount(cells, weights=ev.probs.ravel(), minlength=k * k).reshape(k, k)
    shown = np.bincount(cells, minlength=k * k).reshape(k, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(shown > 0, chosen / shown, np.nan)


def _cv_outside(
    ev: ExactEvaluations, item: npt.NDArray[np.float64], threshold: npt.NDArray[np.float64],
    n_folds: int, gen: np.random.Generator, n_repeats: int = SPB_REPEATS,
) -> npt.NDArray[np.float64]:
    """Per query: expected held-out selections outside the training folds' R / l_j
    (the rule of ``_metrics._cross_validated_outside`` on expected counts), averaged
    over ``n_repeats`` random fold assignments (repeated cross-validation, as in
    sampled mode; ``n_repeats=1`` is single-split CV)."""
    k, nq = ev.k, ev.n_queries
    size = ev.evaluations_per_query()
    folds = np.maximum(np.minimum(n_folds, size), 1)
    starts = np.concatenate([[0], np.cumsum(size)[:-1]])
    total = np.zeros(nq)
    for _ in range(n_repeats):
        order = np.lexsort((gen.random(ev.query.size), ev.query))
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size) - np.repeat(starts, size)
        fold = rank % folds[ev.query]
        held = np.zeros((nq, n_folds, k))
        np.add.at(held, (ev.query, fold), item)
        relevant = _top_sets(held.sum(axis=1, keepdims=True) - held, threshold)
        total += (held * ~relevant).sum(axis=(1, 2))
    return np.asarray(total / n_repeats / size, dtype=float)


def _mean(values: npt.NDArray[np.float64], n_boot: int, level: float,
          gen: np.random.Generator) -> Estimate:
    (ci,) = bootstrap_ci(values[:, None], lambda m: m, n_boot=n_boot,
                         confidence_level=level, rng=gen)
    return Estimate(float(values.mean()), ci)


def _analyze_exact_iv(
    data: ExactEvaluations | pd.DataFrame | str | Path, options: AnalysisOptions | None,
) -> tuple[ExactEvaluations, AnalysisOptions, str | None]:
    """The evaluations, the options and the rows' identity-order condition, if any
    (``IDENTITY_ORDER``: one fixed order per query, so no POB-UNBP)."""
    opts = AnalysisOptions() if options is None else options
    if opts.tau != "auto":
        raise InputError(MSG_EXACT_TAU)
    if isinstance(data, ExactEvaluations):
        return data, opts, None
    table = read_table(data)
    condition = table_condition(table)
    identity = condition if condition in IDENTITY_ORDER else None
    return exact_evaluations_from_table(table), opts, identity
