"""Statistical building blocks shared by both studies.

Confidence intervals are first-class results (:class:`ConfidenceInterval`,
:class:`Estimate`); resampling is done with multinomial *weights* over independent
units (queries, users), so that any statistic that is a function of per-unit sums can
be recomputed for thousands of resamples with one matrix product instead of a Python
loop. Holm's adjustment is computed here in numpy (see :func:`holm` for why, checked
against statsmodels in the tests); Wilson intervals delegate to statsmodels.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ._records import as_mapping, number, text
from .exceptions import InputError

__all__ = [
    "DEFAULT_N_BOOT",
    "DEFAULT_N_PERMUTATIONS",
    "BCA_METHOD",
    "METHOD_FROM_JSON",
    "RULE_METHOD",
    "ConfidenceInterval",
    "Estimate",
    "CI_RULES",
    "UNBOUNDED",
    "as_generator",
    "basic_interval",
    "bca_interval",
    "binomial_interval",
    "bootstrap_interval",
    "bootstrap_weights",
    "expanded_level",
    "folded_basic_interval",
    "holm",
    "jackknife_bias_corrected",
    "monte_carlo_pvalue",
    "percentile_interval",
    "studentized_interval",
]


#: The bootstrap resamples of every interval unless the user says otherwise: one default
#: for every statistic, option and command of both studies (decision 0408).
DEFAULT_N_BOOT = 2000
#: The permutations of a group-gap test (the inter-bias study's ``n_resamples``): p
#: resolution 1/1000, below 0.05 / 15 for Holm over five metrics at three cut-offs.
DEFAULT_N_PERMUTATIONS = 999

@dataclass(frozen=True)
class ConfidenceInterval:
    """A two-sided confidence interval.

    Attributes
    ----------
    low, high : float
        The bounds; ``nan`` when the interval is undefined (e.g. every resample of the
        statistic was undefined).
    confidence_level : float
        Nominal coverage, e.g. 0.95.
    method : str
        How it was computed ("percentile bootstrap", "wilson", ...).
    """

    low: float
    high: float
    confidence_level: float
    method: str

    def to_dict(self) -> dict[str, float | str]:
        """``{"low", "high", "confidence_level", "method"}``."""
        return {"low": self.low, "high": self.high,
                "confidence_level": self.confidence_level, "method": self.method}

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> ConfidenceInterval:
        """Read :meth:`to_dict`'s JSON back (``null`` bounds as ``nan``)."""
        what = "ConfidenceInterval"
        obj = as_mapping(obj, what)
        return cls(number(obj, "low", what), number(obj, "high", what),
                   number(obj, "confidence_level", what), text(obj, "method", what))


#: The method of an interval read back from ``{"value", "ci_low", "ci_high"}`` JSON,
#: which does not record it.
METHOD_FROM_JSON = "read from JSON (method not recorded)"

#: The interval rules of :func:`bootstrap_interval`, by the name results record.
CI_RULES = ("percentile", "basic", "basic-atanh-folded")
#: The range of a statistic without bounds (the ``support`` of :func:`basic_interval`).
UNBOUNDED: tuple[float, float] = (-np.inf, np.inf)
#: The :attr:`ConfidenceInterval.method` of each rule (a folded interval that fell back
#: to the percentile one says so in its own method, which a rule alone does not).
RULE_METHOD = {"percentile": "percentile bootstrap", "basic": "basic bootstrap",
               "basic-atanh-folded": "basic bootstrap on atanh, folded"}


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its confidence interval."""

    value: float
    ci: ConfidenceInterval

    def to_dict(self) -> dict[str, float]:
        """``{"value", "ci_low", "ci_high"}`` -- the JSON shape used everywhere."""
        return {"value": self.value, "ci_low": self.ci.low, "ci_high": self.ci.high}

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any], *, confidence_level: float = 0.95,
                  method: str = METHOD_FROM_JSON) -> Estimate:
        """Read ``{"value", "ci_low", "ci_high"}`` back (``null`` as ``nan``).

        The JSON does not hold the interval's level and method: they are
        ``confidence_level`` and ``method``.
        """
        what = "Estimate"
        obj = as_mapping(obj, what)
        ci = ConfidenceInterval(number(obj, "ci_low", what), number(obj, "ci_high", what),
                                confidence_level, method)
        return cls(number(obj, "value", what), ci)


MSG_SEED = "the seed (`--seed`, `seed`) must be an integer >= 0, got {value!r}"


def as_generator(rng: np.random.Generator | int | None) -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` (never touches global state).

    ``None`` gives a fresh, OS-seeded generator; an ``int`` seeds a new one; a
    ``Generator`` is returned unchanged so that callers can share a stream.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, int | np.integer) and not isinstance(rng, bool) and rng < 0:
        raise InputError(MSG_SEED.format(value=rng))
    if rng is None or isinstance(rng, int | np.integer):
        return np.random.default_rng(rng)
    raise InputError(
        f"`rng` must be a numpy.random.Generator, an int seed or None, got {type(rng).__name__}"
    )


def bootstrap_weights(
    n: int,
    n_boot: int,
    rng: np.random.Generator,
    *,
    strata: npt.ArrayLike | None = None,
    chunk_size: int | None = None,
) -> Iterator[npt.NDArray[np.int64]]:
    """Yield nonparametric-bootstrap resampling weights in chunks.

    Each row ``w`` of a yielded ``(b, n)`` array counts how often each of the ``n``
    independent units appears in one resample (``w ~ Multinomial(n, 1/n)``), so a
    statistic built from per-unit sums ``x`` is recomputed as ``w @ x``. With
    ``strata``, units are resampled within each stratum (stratum sizes preserved),
    as in a stratified bootstrap [1]_.

    Parameters
    ----------
    n : int
        Number of independent units.
    n_boot : int
        Total number of resamples over all chunks.
    rng : numpy.random.Generator
        Source of randomness.
    strata : array_like of shape (n,), optional
        Stratum label of each unit.
    chunk_size : int, optional
        Rows per chunk; by default chosen to keep a chunk near 32 MB.

    References
    ----------
    .. [1] Davison, A. C. & Hinkley, D. V. (1997). Bootstrap Methods and their
       Application, section 3.7. Cambridge University Press.
    """
    if chunk_size is None:
        chunk_size = max(1, min(n_boot, 4_000_000 // max(n, 1)))
    groups: list[npt.NDArray[np.intp]]
    if strata is None:
        groups = [np.arange(n)]
    else:
        labels = np.asarray(strata)
        if labels.shape != (n,):
            raise InputError(f"`strata` must have shape ({n},), got {labels.shape}")
        _, inverse = np.unique(labels, return_inverse=True)
        groups = [np.flatnonzero(inverse == g) for g in range(inverse.max() + 1)]
    done = 0
    while done < n_boot:
        b = min(chunk_size, n_boot - done)
        w = np.zeros((b, n), dtype=np.int64)
        for idx in groups:
            m = idx.size
            w[:, idx] = rng.multinomial(m, np.full(m, 1.0 / m), size=b)
        yield w
        done += b


def percentile_interval(
    replicates: npt.ArrayLike, *, confidence_level: float = 0.95
) -> ConfidenceInterval:
    """Percentile bootstrap interval from bootstrap replicates of a statistic.

    ``[q_{(1-c)/2}, q_{(1+c)/2}]`` of the finite replicates (Efron & Tibshirani 1993,
    ch. 13). Undefined replicates (``nan``) are dropped; if none are left the bounds
    are ``nan``.
    """
    method = RULE_METHOD["percentile"]
    r = np.asarray(replicates, dtype=float)
    r = r[np.isfinite(r)]
    a = (1.0 - confidence_level) / 2.0
    if r.size == 0:
        return ConfidenceInterval(np.nan, np.nan, confidence_level, method)
    lo, hi = np.quantile(r, [a, 1.0 - a])
    return ConfidenceInterval(float(lo), float(hi), confidence_level, method)


def expanded_level(confidence_level: float, n: int) -> float:
    r"""The level at which a percentile interval from ``n`` independent units is taken
    so that it keeps ``confidence_level`` at small ``n`` (the expanded percentile
    interval):

    .. math:: 1 - 2\,\Phi\!\left(-\sqrt{n/(n-1)}\; t_{n-1,\,1-\alpha/2}\right),
              \quad \alpha = 1 - \text{confidence\_level}.

    The percentile interval is too narrow by about the factor
    :math:`t_{n-1}/z \cdot \sqrt{(n-1)/n}`, most in the far tails a Bonferroni level
    reaches (measured on ``positional compare``'s adjusted intervals:
    docs/validation-positional.md, "Comparing systems").

    References
    ----------
    Hesterberg, T. C. (2015). What teachers should know about the bootstrap: resampling
    in the undergraduate statistics curriculum. The American Statistician 69(4),
    371-386 (the expanded percentile interval).
    """
    from scipy import special, stats

    if n < 2:
        return confidence_level
    alpha = 1.0 - confidence_level
    t = float(stats.t.ppf(1.0 - alpha / 2.0, n - 1))
    return float(1.0 - 2.0 * special.ndtr(-np.sqrt(n / (n - 1.0)) * t))


def basic_interval(
    replicates: npt.ArrayLike, estimate: float, *, confidence_level: float = 0.95,
    support: tuple[float, float] = UNBOUNDED,
) -> ConfidenceInterval:
    r"""Basic (reverse-percentile) bootstrap interval of a statistic.

    With :math:`\hat\theta` the estimate, :math:`q^*_a` the a-quantile of the finite
    replicates :math:`\theta^*` (linear interpolation, as :func:`percentile_interval`)
    and :math:`c` the level,

    .. math:: \bigl[2\hat\theta - q^*_{(1+c)/2},\; 2\hat\theta - q^*_{(1-c)/2}\bigr]

    (Davison & Hinkley 1997, section 5.2), each bound clipped to ``support``, the range
    of the statistic (the reflection can cross it: an APLT of 0.01 with replicates up to
    0.03 gets a low bound of -0.01; clipping cannot remove a truth inside the range, so
    coverage is unchanged). It takes the bootstrap distribution
    of :math:`\theta^* - \hat\theta` for that of :math:`\hat\theta - \theta`, so a
    bias the replicates repeat (:math:`E^*\theta^* - \hat\theta \approx E\hat\theta -
    \theta`, e.g. a selection made on the same sample) is taken off the estimate, where
    the percentile interval would add it a second time. Equals
    ``scipy.stats.bootstrap(..., method="basic")`` on the same replicates. Undefined
    replicates (``nan``) are dropped; a ``nan`` estimate or no finite replicate gives
    ``nan`` bounds.

    References
    ----------
    Davison, A. C. & Hinkley, D. V. (1997). Bootstrap Methods and their Application,
    section 5.2. Cambridge University Press.
    """
    method = RULE_METHOD["basic"]
    r = np.asarray(replicates, dtype=float)
    r = r[np.isfinite(r)]
    if r.size == 0 or not np.isfinite(estimate):
        return ConfidenceInterval(np.nan, np.nan, confidence_level, method)
    a = (1.0 - confidence_level) / 2.0
    q_low, q_high = np.quantile(r, [a, 1.0 - a])
    low, high = np.clip([2.0 * estimate - q_high, 2.0 * estimate - q_low], *support)
    return ConfidenceInterval(float(low), float(high), confidence_level, method)


#: ``|d*|`` is clipped to this before atanh in :func:`folded_basic_interval`
#: (``atanh(1 - 1e-12) = 14.2``: a replicate at ``|d*| = 1`` stays the most extreme).
_ATANH_CLIP = 1.0 - 1e-12


def folded_basic_interval(
    replicates: npt.ArrayLike, estimate: float, *, confidence_level: float = 0.95
) -> ConfidenceInterval:
    r"""Interval for :math:`|d|` from a signed statistic :math:`d \in [-1, 1]`.

    The basic interval (:func:`basic_interval`) of :math:`z = \operatorname{atanh} d`
    from the replicates :math:`z^* = \operatorname{atanh} d^*`, mapped back by
    :math:`\tanh` to :math:`[l, h]` and folded at 0:

    .. math:: [0, \max(|l|, |h|)] \text{ if } l \le 0 \le h, \quad
              [\min(|l|, |h|), \max(|l|, |h|)] \text{ otherwise.}

    ``estimate`` and ``replicates`` are the signed :math:`\hat d` and :math:`d^*`; the
    interval is the one of :math:`|d|`, and covers it whenever the signed one covers
    :math:`d`. A statistic folded at 0 (such as :math:`|d|`) is biased upward near 0,
    where a percentile interval of :math:`|d^*|` lies above the truth; the signed
    :math:`d` has no fold, and on the atanh scale (Fisher's transformation) the
    reflected bounds map back inside :math:`(-1, 1)` (the basic method on a
    transformed scale: Davison & Hinkley 1997, section 5.2).
    Replicates at :math:`|d^*| = 1` (atanh infinite) are clipped to
    :math:`\pm(1 - 10^{-12})`: they keep their place in the ordering, and a quantile at
    or next to one of them sends the reflected bound on the other side to about :math:`\mp 1`
    (within :math:`10^{-5}` for :math:`|\hat d| < 0.999`), the limit of the rule (a
    folded :math:`[0, 1]`: so few cases in one group that the data bound nothing). At
    :math:`|\hat d| = 1` the reflection itself is degenerate (both bounds at
    :math:`\pm 1`) and the interval is the percentile one of :math:`|d^*|`
    (:func:`percentile_interval`; its method says so). Undefined replicates (``nan``)
    are dropped; a ``nan`` estimate or no finite replicate gives ``nan`` bounds.

    References
    ----------
    Davison, A. C. & Hinkley, D. V. (1997). Bootstrap Methods and their Application,
    section 5.2. Cambridge University Press.
    """
    method = RULE_METHOD["basic-atanh-folded"]
    d = np.asarray(replicates, dtype=float)
    d = d[np.isfinite(d)]
    if d.size == 0 or not np.isfinite(estimate):
        return ConfidenceInterval(np.nan, np.nan, confidence_level, method)
    if abs(estimate) >= 1.0:
        ci = percentile_interval(np.abs(d), confidence_level=confidence_level)
        return ConfidenceInterval(ci.low, ci.high, confidence_level,
                                  "percentile bootstrap of |d| (estimate at |d| = 1)")
    z = basic_interval(np.arctanh(np.clip(d, -_ATANH_CLIP, _ATANH_CLIP)),
                       float(np.arctanh(estimate)), confidence_level=confidence_level)
    signed = np.tanh([z.low, z.high])
    size = np.abs(signed)
    low = 0.0 if signed[0] <= 0.0 <= signed[1] else float(size.min())
    return ConfidenceInterval(low, float(size.max()), confidence_level, method)


#: The :attr:`ConfidenceInterval.method` of :func:`bca_interval`.
BCA_METHOD = "BCa bootstrap"


def _bca_acceleration(jackknife: Sequence[npt.ArrayLike]) -> float:
    r"""The acceleration :math:`\hat a` of :func:`bca_interval` from leave-one-out values
    per stratum (strata with fewer than 2 finite values add nothing; 0 when every
    :math:`U_{gi}` is 0)."""
    num, den = 0.0, 0.0
    for values in jackknife:
        t = np.asarray(values, dtype=float)
        t = t[np.isfinite(t)]
        n = t.size
        if n < 2:
            continue
        u = (n - 1) * (t.mean() - t)
        num += float((u**3).sum()) / n**3
        den += float((u**2).sum()) / n**2
    return num / (6.0 * den**1.5) if den > 0 else 0.0


def bca_interval(
    replicates: npt.ArrayLike, estimate: float, jackknife: Sequence[npt.ArrayLike], *,
    confidence_level: float = 0.95,
) -> ConfidenceInterval:
    r"""Bias-corrected and accelerated (BCa) bootstrap interval (Efron 1987).

    With :math:`\hat\theta` the estimate, :math:`\theta^*_b` the B finite replicates,
    :math:`\Phi` the standard normal cdf and :math:`z_a = \Phi^{-1}(a)`: the bias
    correction is :math:`z_0 = \Phi^{-1}(p_0)`, :math:`p_0 = (\#\{\theta^* <
    \hat\theta\} + \#\{\theta^* \le \hat\theta\}) / (2B)` (ties counted half, as
    ``scipy.stats.bootstrap``), clipped to :math:`[1/(2B), 1 - 1/(2B)]` so that it is
    finite when every replicate lies on one side; the acceleration, from the
    leave-one-out values :math:`\hat\theta_{(gi)}` of each stratum :math:`g` of
    :math:`n_g` units (one stratum for an ordinary bootstrap, one per group for a
    stratified one; the multi-sample form of ``scipy.stats.bootstrap``), with
    :math:`U_{gi} = (n_g - 1)(\bar\theta_{(g\cdot)} - \hat\theta_{(gi)})`, is

    .. math:: \hat a = \frac{1}{6}\,
              \frac{\sum_g n_g^{-3} \sum_i U_{gi}^3}
                   {\bigl(\sum_g n_g^{-2} \sum_i U_{gi}^2\bigr)^{3/2}},

    and the bounds are the replicates' quantiles (linear interpolation) at

    .. math:: \alpha_{1,2} = \Phi\Bigl(z_0 + \frac{z_0 + z_a}{1 - \hat a (z_0 + z_a)}\Bigr),
              \quad a = \tfrac{1 - c}{2},\ \tfrac{1 + c}{2}.

    Its one-sided coverage errors are O(1/n) where the percentile interval's are
    O(1/sqrt n) (second-order accuracy: Efron 1987; DiCiccio & Efron 1996, section 2);
    :math:`z_0` corrects the median bias of a skewed estimator such as a ratio of means
    and :math:`\hat a` its changing spread. It is transformation-respecting: the BCa
    interval of a monotone function of :math:`\theta` is that function of the interval
    (exactly for :math:`z_0`; for :math:`\hat a` up to the jackknife's estimate).
    Where :math:`1 - \hat a (z_0 + z_a) \le 0` (:math:`|\hat a| > 0.3` or so, far beyond
    a mean's) the level is taken as 0 or 1 on its side. Undefined replicates (``nan``)
    are dropped; a ``nan`` estimate or no finite replicate gives ``nan`` bounds.

    Parameters
    ----------
    replicates : array_like
        Bootstrap replicates of the statistic.
    estimate : float
        The statistic on the data.
    jackknife : sequence of array_like
        Per stratum, the statistic with each unit of that stratum left out in turn.
    confidence_level : float
        Nominal two-sided coverage.

    References
    ----------
    Efron, B. (1987). Better bootstrap confidence intervals. Journal of the American
    Statistical Association 82(397), 171-185.
    DiCiccio, T. J. & Efron, B. (1996). Bootstrap confidence intervals. Statistical
    Science 11(3), 189-228.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.exponential(size=40)
    >>> reps = np.array([rng.choice(x, 40).mean() for _ in range(2000)])
    >>> loo = (x.sum() - x) / 39
    >>> ci = bca_interval(reps, x.mean(), [loo])
    >>> bool(ci.low < x.mean() < ci.high)
    True
    """
    r = np.asarray(replicates, dtype=float)
    r = r[np.isfinite(r)]
    if r.size == 0 or not np.isfinite(estimate):
        return ConfidenceInterval(np.nan, np.nan, confidence_level, BCA_METHOD)
    from scipy import special

    b = r.size
    p0 = (np.count_nonzero(r < estimate) + np.count_nonzero(r <= estimate)) / (2.0 * b)
    z0 = float(special.ndtri(np.clip(p0, 0.5 / b, 1.0 - 0.5 / b)))
    acc = _bca_acceleration(jackknife)
    levels = []
    for a in ((1.0 - confidence_level) / 2.0, (1.0 + confidence_level) / 2.0):
        zz = z0 + float(special.ndtri(a))
        denominator = 1.0 - acc * zz
        if denominator <= 0:
            levels.append(1.0 if zz > 0 else 0.0)
        else:
            levels.append(float(special.ndtr(z0 + zz / denominator)))
    lo, hi = np.quantile(r, levels)
    return ConfidenceInterval(float(lo), float(hi), confidence_level, BCA_METHOD)


def jackknife_bias_corrected(
    estimate: float, jackknife: Sequence[npt.ArrayLike], *,
    support: tuple[float, float] = UNBOUNDED,
) -> float:
    r"""The estimate minus its jackknife estimate of bias (Quenouille 1956).

    With :math:`\hat\theta_{(gi)}` the statistic with unit :math:`i` of stratum
    :math:`g` (of :math:`n_g` units) left out and :math:`\bar\theta_{(g\cdot)}` their
    mean,

    .. math:: \hat b = \sum_g (n_g - 1)\,(\bar\theta_{(g\cdot)} - \hat\theta),
              \qquad \tilde\theta = \hat\theta - \hat b,

    clipped to ``support``. It removes the O(1/n) term of the bias of a smooth
    statistic of means, e.g. the upward bias a small group's mean gives a ratio in whose
    denominator it stands (Efron & Tibshirani 1993, ch. 10; for several independent
    samples the per-sample terms add, as in their section 10.4). On the plug-in
    variance it gives the unbiased one exactly. Strata with fewer than 2 finite values
    add nothing; a ``nan`` estimate stays ``nan``.

    References
    ----------
    Quenouille, M. H. (1956). Notes on bias in estimation. Biometrika 43, 353-360.
    Efron, B. & Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 10.

    Examples
    --------
    >>> x = np.array([1.0, 2.0, 4.0, 7.0])
    >>> loo = [np.delete(x, i).var() for i in range(4)]
    >>> bool(np.isclose(jackknife_bias_corrected(x.var(), [loo]), x.var(ddof=1)))
    True
    """
    if not np.isfinite(estimate):
        return float("nan")
    bias = 0.0
    for values in jackknife:
        t = np.asarray(values, dtype=float)
        t = t[np.isfinite(t)]
        if t.size >= 2:
            bias += (t.size - 1) * (float(t.mean()) - estimate)
    return float(np.clip(estimate - bias, *support))


def bootstrap_interval(
    rule: str, replicates: npt.ArrayLike, estimate: float, *, confidence_level: float = 0.95,
    support: tuple[float, float] = UNBOUNDED,
) -> ConfidenceInterval:
    """The interval of ``rule`` (one of :data:`CI_RULES`): :func:`percentile_interval`
    (``estimate`` and ``support`` unused: its bounds are replicates),
    :func:`basic_interval` clipped to ``support``, or :func:`folded_basic_interval`
    (``support`` unused: it stays in ``[0, 1]``)."""
    if rule == "percentile":
        return percentile_interval(replicates, confidence_level=confidence_level)
    if rule == "basic":
        return basic_interval(replicates, estimate, confidence_level=confidence_level,
                              support=support)
    if rule == "basic-atanh-folded":
        return folded_basic_interval(replicates, estimate, confidence_level=confidence_level)
    raise InputError(f"`rule` must be one of {CI_RULES}, got {rule!r}")


def studentized_interval(
    values: npt.ArrayLike,
    *,
    n_boot: int,
    rng: np.random.Generator,
    confidence_level: float = 0.95,
    bounds: tuple[float, float] = (-np.inf, np.inf),
) -> ConfidenceInterval:
    r"""Bootstrap-t (studentized) interval for the mean of i.i.d. values.

    Over ``n_boot`` resamples of the n finite values (multinomial weights,
    :func:`bootstrap_weights`), :math:`T^* = (\bar x^* - \bar x) / (s^* / \sqrt n)`
    with :math:`s^{*2}` the resample's variance (divisor n - 1); with
    :math:`t^*_a` the a-quantile of the :math:`T^*` and :math:`c` the level,

    .. math:: \bigl[\bar x - t^*_{(1+c)/2}\, s/\sqrt n,\;
              \bar x - t^*_{(1-c)/2}\, s/\sqrt n\bigr],

    clipped to ``bounds`` (the range of the estimand: a clipped interval covers
    whenever the unclipped one does). Unlike the percentile and Student-t intervals it
    is second-order accurate: its one-sided coverage errors are O(1/n), not
    O(1/sqrt n), so a skewed distribution of the values does not tilt it to one side
    (Hall 1988; Efron & Tibshirani 1993, ch. 12.5; DiCiccio & Efron 1996, section 2).
    A resample whose values are all equal has no :math:`T^*` and is left out; values
    that are all equal give ``[x̄, x̄]``; fewer than 2 finite values ``nan`` bounds.

    References
    ----------
    Efron, B. & Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 12.
    Hall, P. (1988). Theoretical comparison of bootstrap confidence intervals. Annals of
    Statistics 16(3), 927-953.
    DiCiccio, T. J. & Efron, B. (1996). Bootstrap confidence intervals. Statistical
    Science 11(3), 189-228.
    """
    method = "bootstrap-t"
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    n = x.size
    if n < 2:
        return ConfidenceInterval(np.nan, np.nan, confidence_level, method)
    mean, sd = float(x.mean()), float(x.std(ddof=1))
    if sd == 0.0:
        return ConfidenceInterval(mean, mean, confidence_level, method)
    d = x - mean  # centred, so the resample variance has no cancellation
    chunks = []
    for w in bootstrap_weights(n, n_boot, rng):
        m, m2 = w @ d / n, w @ (d * d) / n
        var = (m2 - m * m) * n / (n - 1)
        ok = var > 1e-12 * sd * sd
        chunks.append(m[ok] / np.sqrt(var[ok] / n))
    t_star = np.concatenate(chunks)
    if t_star.size == 0:
        return ConfidenceInterval(np.nan, np.nan, confidence_level, method)
    a = (1.0 - confidence_level) / 2.0
    q_low, q_high = np.quantile(t_star, [a, 1.0 - a])
    se = sd / np.sqrt(n)
    return ConfidenceInterval(float(max(bounds[0], mean - q_high * se)),
                              float(min(bounds[1], mean - q_low * se)), confidence_level, method)


def monte_carlo_pvalue(
    observed: float, null: npt.ArrayLike, *, alternative: str = "greater"
) -> float:
    """Monte-Carlo p-value with the +1 correction.

    ``p = (1 + #{T_b >= T_obs}) / (B + 1)`` for ``alternative="greater"`` (Phipson &
    Smyth 2010, "Permutation p-values should never be zero"). A small relative
    tolerance treats ties produced by floating point as ties.
    """
    t = np.asarray(null, dtype=float)
    tol = 1e-9 * max(1.0, abs(observed))
    if alternative == "greater":
        hits = np.count_nonzero(t >= observed - tol)
    elif alternative == "less":
        hits = np.count_nonzero(t <= observed + tol)
    else:
        raise InputError(f"`alternative` must be 'greater' or 'less', got {alternative!r}")
    return float((1 + hits) / (t.size + 1))


def holm(pvalues: Sequence[float] | npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Holm step-down adjusted p-values (Holm 1979).

    .. math:: \\tilde p_{(i)} = \\max_{j \\le i} \\min\\{1, (m - j + 1)\\, p_{(j)}\\}

    over the m finite p-values sorted ascending. ``nan`` entries (untestable
    hypotheses) stay ``nan`` and do not count towards the family size.

    Computed here in numpy rather than with statsmodels' ``multipletests`` (the tests
    check the two agree): ``multipletests`` runs ``gc.collect()`` on every call, 1-2 s in
    a process that has loaded torch, and a study adjusts dozens of families.

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure.
    Scandinavian Journal of Statistics 6(2), 65-70.
    """
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    if ok.size:
        order = ok[np.argsort(p[ok], kind="stable")]
        m = order.size
        stepped = np.minimum(1.0, (m - np.arange(m)) * p[order])
        out[order] = np.maximum.accumulate(stepped)
    return out


def binomial_interval(
    successes: int, n: int, *, confidence_level: float = 0.95
) -> ConfidenceInterval:
    """Wilson score interval for a binomial proportion (Wilson 1927), via statsmodels."""
    from statsmodels.stats.proportion import proportion_confint

    if n <= 0:
        return ConfidenceInterval(np.nan, np.nan, confidence_level, "wilson")
    lo, hi = proportion_confint(successes, n, alpha=1.0 - confidence_level, method="wilson")
    return ConfidenceInterval(float(lo), float(hi), confidence_level, "wilson")
