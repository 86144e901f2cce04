"""Counterfactual and robustness statistics of the positional study (spec section 7).

Pure statistics on the evaluations table (no LLM): per-instance sPB and relevance sets,
the paired Wilcoxon signed-rank test of per-instance sPB differences with a
Hodges-Lehmann effect, relevance-set overlap (IoU) between two conditions, the
retrieval-score dispersion regression (WLS, HC1) and the complete-case filter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._stats import DEFAULT_N_BOOT, ConfidenceInterval, Estimate, as_generator
from ..exceptions import InputError
from ._analyze import _subset
from ._bootstrap import check_bootstrap_args
from ._evaluations import Evaluations
from ._metrics import (
    SPB_REPEATS,
    _mean_estimate,
    _per_query_spb,
    _strong_positional_bias_iv,
    estimate_p_hat,
    relevance_sets,
)

__all__ = [
    "CompleteCase",
    "DispersionResult",
    "InstanceSpb",
    "IoUResult",
    "WilcoxonResult",
    "complete_case",
    "dispersion_regression",
    "estimate_p_hat",
    "hodges_lehmann",
    "instance_spb",
    "paired_instances",
    "paired_wilcoxon",
    "relevance_iou",
    "score_dispersion",
    "set_iou",
]

MSG_P_HAT = "`p_hat` must be a number in [0, 1] or None, got {value!r}"
MSG_PAIRED_SHAPE = "`a` and `b` must be 1-d arrays of the same length, got shapes {a} and {b}"
MSG_NOT_FINITE = "`{name}` holds non-finite values; drop those instances first"
MSG_NO_TWO = "no query has >= 2 valid evaluations: per-instance sPB needs >= 2 per query"
MSG_REG_LENGTH = (
    "`outside`, `dispersion` and `weights` must be 1-d arrays of one length, got {shapes}"
)
MSG_REG_FEW = "the dispersion regression needs >= 3 queries with weight > 0, got {n}"
MSG_REG_CONSTANT = (
    "the retrieval-score dispersion is the same for every query: the slope is not identified"
)
MSG_WEIGHTS = "`weights` must be >= 0, with at least one > 0"
MSG_BY = "`by` columns must be in the table; missing {cols}"


# ------------------------------------------------------------------ per instance
@dataclass(frozen=True, eq=False)
class InstanceSpb:
    """Per-instance (per-query) sPB and the relevance sets behind it.

    Attributes
    ----------
    query_ids : ndarray
        Queries with >= 2 valid evaluations (the others have no cross-validated sPB).
    spb : ndarray of float
        :math:`sPB_j`, the cross-validated share of query j's valid evaluations outside
        its relevance set (see :func:`~recaudit.positional.strong_positional_bias`).
    n_valid : ndarray of int
        :math:`l_j`, valid evaluations of query j.
    relevance : ndarray of bool, shape (n_queries, k)
        :math:`R_j(\\tau)` on all of query j's evaluations (by original index), the
        set compared across conditions by :func:`relevance_iou`.
    threshold : ndarray of float, shape (k,)
        Cumulative-share threshold of a top-m set, m = 1..k.
    tau : float or None
        The fixed threshold, ``None`` with the ``'auto'`` rule.
    p_hat : float or None
        The ``'auto'`` rule's position-driven share (given or estimated).
    n_queries_excluded : int
        Queries with < 2 valid evaluations (left out).
    n_folds, n_repeats : int
        Folds of the cross-validation and fold assignments averaged.
    """

    query_ids: npt.NDArray[Any]
    spb: npt.NDArray[np.float64]
    n_valid: npt.NDArray[np.int64]
    relevance: npt.NDArray[np.bool_] = field(repr=False)
    threshold: npt.NDArray[np.float64] = field(repr=False)
    tau: float | None
    p_hat: float | None
    n_queries_excluded: int
    n_folds: int = 5
    n_repeats: int = 1

    @property
    def n_queries(self) -> int:
        """Queries with a per-instance sPB."""
        return int(self.query_ids.size)

    def mean(
        self,
        *,
        n_boot: int = DEFAULT_N_BOOT,
        confidence_level: float = 0.95,
        rng: np.random.Generator | int | None = None,
    ) -> Estimate:
        """:math:`\\frac1n \\sum_j sPB_j` with a percentile bootstrap CI over queries."""
        n_boot, confidence_level = check_bootstrap_args(n_boot, confidence_level)
        return _mean_estimate(self.spb, n_boot, confidence_level, as_generator(rng))


def instance_spb(
    evals: Evaluations,
    *,
    tau: float | Literal["auto"] = "auto",
    p_hat: float | None = None,
    n_folds: int = 5,
    n_repeats: int = SPB_REPEATS,
    rng: np.random.Generator | int | None = None,
) -> InstanceSpb:
    r"""Per-instance sPB (cross-validated) and the relevance set of each query.

    :math:`sPB_j` = share of query j's held-out selections outside the relevance set
    :math:`R_j(\tau)` built from the other folds (``min(n_folds, l_j)`` random folds),
    averaged over ``n_repeats`` independent fold assignments (repeated CV, Kim 2009),
    exactly as in :func:`~recaudit.positional.strong_positional_bias`, whose value is
    the mean of these. ``p_hat`` fixes the ``'auto'`` rule's position-driven share:
    pass the one estimated on a *permuted* condition to compare two conditions under
    the same threshold (in an identity-order condition -- ``decoding``, ``labels`` --
    positions are original indices, so PB, hence the estimated p_hat, measures
    relevance concentration, not position). The returned ``relevance`` is
    :math:`R_j(\tau)` on all of query j's evaluations.

    Queries with fewer than 2 valid evaluations have no cross-validated sPB and are
    left out (counted in ``n_queries_excluded``).

    References
    ----------
    Peláez-González, Herrera, Herrera-Poyatos, arXiv 2610.37962 (sPB, appendices).
    Kim, J.-H. (2009). Estimating classification error rate: Repeated
    cross-validation, repeated hold-out and bootstrap. Comput. Statist. Data Anal.
    53(11), 3735-3745.
    """
    gen = as_generator(rng)
    two = evals.evaluations_per_query() >= 2
    sub = _subset(evals, two)
    if sub is None:
        raise InputError(MSG_NO_TWO)
    tau_value, n_folds, n_repeats = _strong_positional_bias_iv(sub, tau, n_folds, n_repeats)
    if p_hat is not None and (isinstance(p_hat, bool) or not 0.0 <= float(p_hat) <= 1.0):
        raise InputError(MSG_P_HAT.format(value=p_hat))
    per_query, threshold, used_p = _per_query_spb(
        sub, tau_value, None if p_hat is None else float(p_hat), n_folds, gen, n_repeats
    )
    return InstanceSpb(
        query_ids=sub.query_ids,
        spb=per_query,
        n_valid=sub.evaluations_per_query(),
        relevance=relevance_sets(sub, threshold),
        threshold=threshold,
        tau=tau_value,
        p_hat=used_p,
        n_queries_excluded=int((~two).sum()),
        n_folds=n_folds,
        n_repeats=n_repeats,
    )


def paired_instances(
    a: InstanceSpb, b: InstanceSpb
) -> tuple[npt.NDArray[Any], npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Queries present in both (in ``a``'s order) and their row indices in ``a`` and ``b``."""
    pos_b = {q: i for i, q in enumerate(b.query_ids.tolist())}
    rows_a = [i for i, q in enumerate(a.query_ids.tolist()) if q in pos_b]
    ids = a.query_ids[rows_a]
    rows_b = [pos_b[q] for q in ids.tolist()]
    return ids, np.asarray(rows_a, dtype=np.intp), np.asarray(rows_b, dtype=np.intp)


# --------------------------------------------------------------------- Wilcoxon
@dataclass(frozen=True)
class WilcoxonResult:
    """Paired Wilcoxon signed-rank test of ``a - b`` (zero differences excluded).

    Attributes
    ----------
    n_pairs : int
        Paired instances.
    n_used : int
        Instances with a non-zero difference (the test's n).
    statistic : float
        scipy's statistic: the smaller of the positive- and negative-rank sums (two-sided).
    pvalue : float
        Two-sided p-value (``nan`` when every difference is zero).
    method : str
        scipy's method (``'exact'`` or ``'approx'``).
    effect : Estimate
        Hodges-Lehmann estimate of the location shift of ``a - b`` (median of the
        Walsh averages of the non-zero differences) with its signed-rank CI.
    median_difference : float
        Median of all differences (zeros included).
    mean_a, mean_b : float
        Means of ``a`` and ``b`` over the paired instances.
    """

    n_pairs: int
    n_used: int
    statistic: float
    pvalue: float
    method: str
    effect: Estimate
    median_difference: float
    mean_a: float
    mean_b: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (the effect flattened to ``effect``, ``ci_low``, ``ci_high``)."""
        return {
            "n_pairs": self.n_pairs,
            "n_used": self.n_used,
            "statistic": self.statistic,
            "pvalue": self.pvalue,
            "method": self.method,
            "effect": self.effect.value,
            "ci_low": self.effect.ci.low,
            "ci_high": self.effect.ci.high,
            "median_difference": self.median_difference,
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
        }


def paired_wilcoxon(
    a: npt.ArrayLike, b: npt.ArrayLike, *, confidence_level: float = 0.95
) -> WilcoxonResult:
    r"""Paired Wilcoxon signed-rank test on :math:`d_j = a_j - b_j`, zeros excluded.

    Unchanged instances (:math:`d_j = 0`) are dropped before ranking (Wilcoxon's
    original treatment, ``zero_method="wilcox"`` in scipy); the signed-rank statistic
    :math:`T^+ = \sum_{d_j > 0} \mathrm{rank}(|d_j|)` is referred to its null
    distribution by :func:`scipy.stats.wilcoxon` (exact for small n without ties,
    normal approximation with tie correction otherwise). The effect is the
    Hodges-Lehmann shift (:func:`hodges_lehmann`).

    References
    ----------
    Wilcoxon, F. (1945). Individual comparisons by ranking methods. Biometrics
    Bulletin 1(6), 80-83.
    Peláez-González, Herrera, Herrera-Poyatos, arXiv 2610.37962 (appendices).
    """
    from scipy import stats

    x, y = _paired_wilcoxon_iv(a, b)
    d = x - y
    nz = d[d != 0]
    effect = hodges_lehmann(nz, confidence_level=confidence_level)
    if nz.size == 0:
        statistic, pvalue, method = np.nan, np.nan, "none (every difference is zero)"
    else:
        res = stats.wilcoxon(nz, zero_method="wilcox", alternative="two-sided")
        statistic, pvalue = float(res.statistic), float(res.pvalue)
        has_ties = np.unique(np.abs(nz)).size < nz.size
        method = "exact" if nz.size <= 50 and not has_ties else "approx"
    return WilcoxonResult(
        n_pairs=int(d.size),
        n_used=int(nz.size),
        statistic=statistic,
        pvalue=pvalue,
        method=method,
        effect=effect,
        median_difference=float(np.median(d)) if d.size else np.nan,
        mean_a=float(x.mean()) if x.size else np.nan,
        mean_b=float(y.mean()) if y.size else np.nan,
    )


def hodges_lehmann(d: npt.ArrayLike, *, confidence_level: float = 0.95) -> Estimate:
    r"""Hodges-Lehmann one-sample shift with the signed-rank (Tukey/Bauer) CI.

    Estimate: the median of the :math:`M = n(n+1)/2` Walsh averages
    :math:`(d_i + d_j)/2, i \le j`. CI: :math:`[W_{(c)}, W_{(M + 1 - c)}]` of the
    sorted Walsh averages, where c is the largest integer with
    :math:`P(T^+ \le c - 1) \le (1 - \text{level})/2` under the signed-rank null
    (exact distribution for n <= 50, normal approximation above). ``nan`` bounds when
    n is too small for the level.

    References
    ----------
    Hodges, J. L. & Lehmann, E. L. (1963). Estimates of location based on rank tests.
    Ann. Math. Statist. 34, 598-611.
    Bauer, D. F. (1972). Constructing confidence sets using rank statistics. JASA 67,
    687-690.
    """
    x = np.asarray(d, dtype=float).ravel()
    method = "signed-rank (Hodges-Lehmann)"
    if x.size == 0:
        return Estimate(np.nan, ConfidenceInterval(np.nan, np.nan, confidence_level, method))
    i, j = np.triu_indices(x.size)
    walsh = np.sort((x[i] + x[j]) / 2.0)
    m = walsh.size
    c = _signed_rank_critical(x.size, confidence_level)
    if c < 1:
        ci = ConfidenceInterval(np.nan, np.nan, confidence_level, method)
    else:
        ci = ConfidenceInterval(float(walsh[c - 1]), float(walsh[m - c]), confidence_level, method)
    return Estimate(float(np.median(walsh)), ci)


def signed_rank_cdf(n: int) -> npt.NDArray[np.float64]:
    """Exact null CDF of the signed-rank statistic T+ for n untied non-zero differences.

    ``cdf[t] = P(T+ <= t)``, t = 0..n(n+1)/2, from the count of subsets of {1..n}
    with each sum (dynamic programming).
    """
    top = n * (n + 1) // 2
    counts = np.zeros(top + 1)
    counts[0] = 1.0
    for r in range(1, n + 1):
        counts[r:] = counts[r:] + counts[:-r].copy()
    return np.cumsum(counts) / 2.0**n


def _signed_rank_critical(n: int, confidence_level: float) -> int:
    from scipy import stats

    half = (1.0 - confidence_level) / 2.0
    m = n * (n + 1) // 2
    if n <= 50:
        cdf = signed_rank_cdf(n)
        ok = np.flatnonzero(cdf <= half + 1e-12)  # P(T+ <= c - 1) <= half, c - 1 in ok
        return int(ok[-1] + 1) if ok.size else 0
    sd = np.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
    return max(0, int(np.floor(m / 2.0 + 0.5 - stats.norm.ppf(1.0 - half) * sd)))


def _paired_wilcoxon_iv(
    a: npt.ArrayLike, b: npt.ArrayLike
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.ndim != 1 or x.shape != y.shape:
        raise InputError(MSG_PAIRED_SHAPE.format(a=x.shape, b=y.shape))
    for name, v in (("a", x), ("b", y)):
        if not np.isfinite(v).all():
            raise InputError(MSG_NOT_FINITE.format(name=name))
    return x, y


# --------------------------------------------------------------------------- IoU
@dataclass(frozen=True, eq=False)
class IoUResult:
    """Relevance-set overlap between two conditions.

    ``mean`` is :math:`\\frac1n \\sum_j IoU_j` with a percentile bootstrap CI over the
    ``n_queries`` queries present in both; ``per_query`` holds the :math:`IoU_j`.
    """

    mean: Estimate
    n_queries: int
    query_ids: npt.NDArray[Any] = field(repr=False)
    per_query: npt.NDArray[np.float64] = field(repr=False)


def set_iou(a: npt.ArrayLike, b: npt.ArrayLike) -> npt.NDArray[np.float64]:
    r"""Row-wise Jaccard index :math:`|A \cap B| / |A \cup B|` of boolean membership rows.

    Two empty sets give 1 (identical). Reference: Jaccard, P. (1912). The distribution
    of the flora in the alpine zone. New Phytologist 11(2), 37-50.
    """
    x = np.atleast_2d(np.asarray(a, dtype=bool))
    y = np.atleast_2d(np.asarray(b, dtype=bool))
    if x.shape != y.shape:
        raise InputError(f"set memberships must have one shape, got {x.shape} and {y.shape}")
    inter = (x & y).sum(axis=1)
    union = (x | y).sum(axis=1)
    return np.where(union == 0, 1.0, inter / np.maximum(union, 1))


def relevance_iou(
    a: InstanceSpb,
    b: InstanceSpb,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    confidence_level: float = 0.95,
    rng: np.random.Generator | int | None = None,
) -> IoUResult:
    """Mean IoU of the per-query relevance sets of two conditions (paired by query).

    :math:`IoU_j = |R^a_j \\cap R^b_j| / |R^a_j \\cup R^b_j|` over the queries in both,
    averaged, with a percentile bootstrap CI over queries (Efron & Tibshirani 1993).
    """
    n_boot, confidence_level = check_bootstrap_args(n_boot, confidence_level)
    if a.relevance.shape[1] != b.relevance.shape[1]:
        raise InputError("the two conditions have different k; compare cells of one k")
    ids, ra, rb = paired_instances(a, b)
    per_query = set_iou(a.relevance[ra], b.relevance[rb]) if ids.size else np.zeros(0)
    if per_query.size == 0:
        nan_ci = ConfidenceInterval(np.nan, np.nan, confidence_level, "percentile bootstrap")
        mean = Estimate(np.nan, nan_ci)
    else:
        mean = _mean_estimate(per_query, n_boot, confidence_level, as_generator(rng))
    return IoUResult(mean=mean, n_queries=int(ids.size), query_ids=ids, per_query=per_query)


# -------------------------------------------------------------------- dispersion
@dataclass(frozen=True)
class DispersionResult:
    """WLS of %-outside-relevance-set on standardized retrieval-score dispersion.

    Attributes
    ----------
    slope : Estimate
        Change in percentage points of evaluations outside the relevance set per
        standard deviation of dispersion, with its Wald CI (HC1 standard error).
    intercept : float
        Fitted % outside at mean dispersion.
    std_error : float
        HC1 standard error of the slope.
    statistic : float
        Wald z = slope / std_error.
    pvalue : float
        Two-sided Wald p-value (normal reference, as statsmodels with ``cov_type``).
    n_queries : int
        Queries in the regression.
    sum_weights : float
        Total weight (valid evaluations).
    """

    slope: Estimate
    intercept: float
    std_error: float
    statistic: float
    pvalue: float
    n_queries: int
    sum_weights: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {
            "slope": self.slope.value,
            "ci_low": self.slope.ci.low,
            "ci_high": self.slope.ci.high,
            "intercept": self.intercept,
            "std_error": self.std_error,
            "statistic": self.statistic,
            "pvalue": self.pvalue,
            "n_queries": self.n_queries,
            "sum_weights": self.sum_weights,
        }


def score_dispersion(candidates: pd.DataFrame) -> pd.Series:
    """Per query: standard deviation (ddof = 0) of its candidates' retrieval scores.

    ``candidates`` has ``query_id`` and ``score`` columns (one k, as in a run folder's
    ``candidates.parquet`` filtered to one k).
    """
    for col in ("query_id", "score"):
        if col not in candidates.columns:
            raise InputError(f"the candidates table has no column `{col}`")
    return candidates.groupby("query_id", sort=False)["score"].std(ddof=0)


def dispersion_regression(
    outside: npt.ArrayLike,
    dispersion: npt.ArrayLike,
    weights: npt.ArrayLike,
    *,
    confidence_level: float = 0.95,
) -> DispersionResult:
    r"""Weighted least squares with HC1 standard errors and a two-sided Wald test.

    Model: :math:`y_j = \beta_0 + \beta_1 z_j + e_j` with :math:`y_j` = % of query j's
    valid evaluations outside its relevance set, :math:`z_j = (s_j - \bar s)/sd(s)`
    the standardized dispersion of its candidates' retrieval scores (sd with ddof = 1
    across queries), weights :math:`w_j = l_j` (valid evaluations). Fitted with
    ``statsmodels.WLS(...).fit(cov_type="HC1")``: the sandwich
    :math:`\frac{n}{n-p}(X^\top W X)^{-1} X^\top W \,\mathrm{diag}(\hat e^2)\, W X
    (X^\top W X)^{-1}`; the Wald test of :math:`\beta_1 = 0` uses the normal
    reference.

    References
    ----------
    White, H. (1980). A heteroskedasticity-consistent covariance matrix estimator and
    a direct test for heteroskedasticity. Econometrica 48(4), 817-838.
    MacKinnon, J. G. & White, H. (1985). Some heteroskedasticity-consistent covariance
    matrix estimators with improved finite sample properties. J. Econometrics 29,
    305-325 (HC1).
    """
    import statsmodels.api as sm

    y, s, w = _dispersion_regression_iv(outside, dispersion, weights)
    z = (s - s.mean()) / s.std(ddof=1)
    fit = sm.WLS(y, sm.add_constant(z, has_constant="add"), weights=w).fit(cov_type="HC1")
    low, high = fit.conf_int(alpha=1.0 - confidence_level)[1]
    slope = Estimate(
        float(fit.params[1]),
        ConfidenceInterval(float(low), float(high), confidence_level, "Wald (HC1)"),
    )
    return DispersionResult(
        slope=slope,
        intercept=float(fit.params[0]),
        std_error=float(fit.bse[1]),
        statistic=float(fit.tvalues[1]),
        pvalue=float(fit.pvalues[1]),
        n_queries=int(y.size),
        sum_weights=float(w.sum()),
    )


def _dispersion_regression_iv(
    outside: npt.ArrayLike, dispersion: npt.ArrayLike, weights: npt.ArrayLike
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    y = np.asarray(outside, dtype=float)
    s = np.asarray(dispersion, dtype=float)
    w = np.asarray(weights, dtype=float)
    if y.ndim != 1 or y.shape != s.shape or y.shape != w.shape:
        raise InputError(MSG_REG_LENGTH.format(shapes=[y.shape, s.shape, w.shape]))
    for name, v in (("outside", y), ("dispersion", s), ("weights", w)):
        if not np.isfinite(v).all():
            raise InputError(MSG_NOT_FINITE.format(name=name))
    if (w < 0).any() or not (w > 0).any():
        raise InputError(MSG_WEIGHTS)
    keep = w > 0
    y, s, w = y[keep], s[keep], w[keep]
    if y.size < 3:
        raise InputError(MSG_REG_FEW.format(n=int(y.size)))
    if np.ptp(s) <= 1e-12 * max(1.0, float(np.abs(s).max())):
        raise InputError(MSG_REG_CONSTANT)
    return y, s, w


# ------------------------------------------------------------------ complete case
@dataclass(frozen=True, eq=False)
class CompleteCase:
    """The evaluations of the queries without any discarded generation.

    A query is complete within each ``by`` group (default: model and k, i.e. across
    every temperature and condition of that model and k, so paired comparisons keep
    the same queries on both sides).
    """

    table: pd.DataFrame = field(repr=False)
    by: tuple[str, ...]
    n_queries_kept: int
    n_queries_dropped: int


def discarded_mask(table: pd.DataFrame) -> npt.NDArray[np.bool_]:
    """True for rows whose ``selected_position`` is empty (a discarded generation)."""
    raw = table["selected_position"].astype("string").str.strip()
    return (raw.isna() | (raw == "")).to_numpy()


def complete_case(table: pd.DataFrame, *, by: Sequence[str] = ("model", "k")) -> CompleteCase:
    """Keep the queries with no discarded generation in their ``by`` group.

    Complete-case sensitivity (spec section 7): the tests are rerun on these queries
    and shown beside the full analysis; a large difference means discards depend on
    what was shown and may bias the full analysis.
    """
    cols = [c for c in by if c in table.columns]
    missing = [c for c in by if c not in table.columns and c not in ("model", "k")]
    if missing:
        raise InputError(MSG_BY.format(cols=", ".join(missing)))
    keys = [*cols, "query_id"]
    bad = table.assign(_bad=discarded_mask(table)).groupby(keys, dropna=False)["_bad"].any()
    kept = bad[~bad].index
    n_all = int(bad.size)
    index = pd.MultiIndex.from_frame(table[keys]) if len(keys) > 1 else pd.Index(table[keys[0]])
    rows = index.isin(kept)
    return CompleteCase(
        table=table.loc[rows].reset_index(drop=True),
        by=tuple(cols),
        n_queries_kept=int(kept.size),
        n_queries_dropped=n_all - int(kept.size),
    )
