r"""Planning a positional audit before its first call: queries, power, PB's CI, cost.

A *design* is how a (model, k, temperature, condition) cell is audited: k candidates,
``orders`` random orders per query, sampled answers or exact choice probabilities
(one call per (query, order) yields the whole vector), a fixed number of queries or
sequential stopping; ``temperatures`` cells are audited alike (calls multiply, and
each cell is tested at ``alpha / temperatures``, Bonferroni: the family-wise level the
sequential runner uses, conservative for the Holm adjustment of ``analyze --by``).
An *effect* is what to detect: the spec's section-8 ``p_bias`` (one favoured
position, :math:`TV = PB = p_{bias}(1 - 1/k)`), a PB (total-variation) size planned
in that shape, or a pilot run's estimate with its CI, variance components and shape.

- Fixed-sample POB-UNBP (sampled or exact): its decision simulated up to 30 queries, a
  normal approximation above (:func:`fixed_power`), validated against simulation in
  docs/validation-positional.md.
- Sequential (the ``favoured`` e-process of :func:`sequential_uniformity_test`): a
  seeded simulation of stopping times (:func:`sequential_stopping_times`), reported
  with its Monte-Carlo standard error.
- PB's CI half-width: a seeded simulation of the cross-fitted estimator itself
  (:func:`pb_half_width`): its upper end is a maximum over favoured sets, for which
  the normal approximation was off by up to 50 % at small effects
  (docs/decisions/, "Planning: PB's half-width is simulated").

Variance model (one-way random effects over queries; Searle, Casella & McCulloch
1992, *Variance Components*, ch. 3): the query's share of position p,
:math:`Y_j(p)`, averages ``m`` evaluations around the query's own share
:math:`\mu_j(p)`, with :math:`E\mu_j = q_p` and :math:`\operatorname{Var}\mu_j(p) =
\tau^2` (pooled over positions; 0 in the section-8 model, where every evaluation's
position is a fresh draw from q). Then

.. math:: \operatorname{Var} Y_j(p) = \tau^2 + \frac{w_p}{m},

with :math:`w_p = q_p(1 - q_p) - \tau^2` for a sampled answer (an indicator) and
:math:`w_p = \operatorname{Var}(\pi_e(p) \mid j)` for a choice-probability vector; in
the section-8 model :math:`w = (1 - p_{bias})^2 (E[1/|R|] - 1/k) / k`, with |R| the size
of a relevance set uniform over the non-empty subsets.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import special, stats

from .._records import as_mapping, need, number, optional_number, to_float
from ..exceptions import InputError
from ._alternatives import simulate_choice_vectors
from ._crossfit import crossfit_shares, pb_from_shares
from ._sequential import DEFAULT_SEQUENTIAL_METHOD, log_e_values
from ._sequential_exact import log_e_vectors
from ._simulation import _shares, _simulate_batch, exact_query_shares
from ._unbp import _reject_many

__all__ = [
    "DESIGNS",
    "CallCost",
    "Effect",
    "fixed_power",
    "fixed_power_curve",
    "fixed_power_normal",
    "fixed_queries",
    "pb_half_width",
    "queries_for_half_width",
    "sequential_stopping_times",
    "simulate_shares",
]

Answers = Literal["sampled", "exact"]
#: The designs planned: name -> (answers, stopping).
DESIGNS: dict[str, tuple[Answers, str]] = {
    "fixed": ("sampled", "fixed"),
    "sequential": ("sampled", "sequential"),
    "exact": ("exact", "fixed"),
    "exact+sequential": ("exact", "sequential"),
}
#: Largest number of queries the search for a target power considers.
MAX_QUERIES = 1_000_000
#: Largest number of evaluations per simulated sequential path (memory and time).
MAX_SEQUENTIAL_EVALUATIONS = 400_000
#: Fixed Gaussian draws integrating the normal approximation of the power, and their seed.
GAUSS_DRAWS = 100_000
GAUSS_SEED = 20_240_601
#: Queries up to which a fixed design's power is simulated (POB-UNBP's decision on the
#: planning model), not approximated; the simulated data sets and their seed.
SIMULATED_QUERIES = 30
SIMULATED_REPS = 2000
SIMULATED_SEED = 20_260_415
#: Elements per simulated chunk (bounds memory: ~8 bytes each, a few arrays).
_CHUNK = 2_000_000
#: The sequential budget searched for a target power: this many times the fixed
#: design's evaluations (the doc's table: at most 1.35 times at 80 % power).
SEQUENTIAL_HORIZON = 3.0

MSG_K = "`k` must be an integer >= 2, got {value!r}"
MSG_PB = "`pb` must be in [0, 1 - 1/k] = [0, {top:g}] for k = {k}, got {value!r}"
MSG_P_BIAS = "`p_bias` must be in [0, 1], got {value!r}"
MSG_INT = "`{name}` must be an integer >= {low}, got {value!r}"
MSG_ALPHA = "`alpha` must be in (0, 1), got {value!r}"
MSG_POWER = "`power` must be in (alpha, 1) = ({alpha:g}, 1), got {value!r}"
MSG_DESIGN = "`designs` must be a subset of {choices}, got {value!r}"
MSG_VARIANCE = "`{name}` must be a finite number >= 0, got {value!r}"
MSG_PROFILE = ("`profile` must be k = {k} finite numbers summing to 0 with positive "
               "parts summing to 1, got {value!r}")
MSG_PB_PROFILE = ("`pb` must be at most {top:g} with this profile (no position's "
                  "share below 0), got {value!r}")
MSG_MEASURED_ON = "`measured_on` must be 'answers', 'vectors' or None, got {value!r}"
#: What a pilot's effect can be measured on (None: a given effect).
MEASURED_ON = (None, "answers", "vectors")


# -- the effect --------------------------------------------------------------------


def _expected_inverse_set_size(k: int) -> float:
    """E[1/|R|] for |R| ~ Binomial(k, 1/2) given |R| >= 1 (a relevance set uniform
    over the non-empty subsets of k candidates)."""
    r = np.arange(1, k + 1)
    return float((special.comb(k, r) / r).sum() / (2.0**k - 1.0))


@dataclass(frozen=True)
class Effect:
    """The effect an audit is planned to detect, with its variance components.

    Attributes
    ----------
    k : int
        Positions.
    pb : float
        PB = TV(q, Uniform_k), planned in the section-8 shape (position 1 has
        :math:`q_1 = 1/k + PB`, every other :math:`1/k - PB/(k - 1)`) or a ``profile``.
    between : float
        :math:`\\tau^2`, the between-query variance of a query's own position share
        (0 in the section-8 model).
    within_exact : float or None
        Per-evaluation within-query variance of a choice-probability vector's entry
        (pooled); ``None``: the section-8 value at this PB.
    discard_rate : float
        Share of calls whose answer does not parse (they cost a call, give no
        sampled position).
    source : str
        ``"p_bias"``, ``"pb"`` or ``"pilot"``.
    ci_low, ci_high : float or None
        A pilot's CI of PB.
    pilot_queries, pilot_evaluations : int or None
        The pilot's size.
    measured_on : str or None
        What a pilot's PB was measured on: ``"answers"`` (the parsed answers' positions,
        what the sampled designs test) or ``"vectors"`` (the choice-probability vectors,
        what the exact designs test); ``None`` for a given effect.
    profile : tuple of float or None
        A pilot's direction of bias, :math:`d = (\\hat q - 1/k) / TV(\\hat q)` of its mean
        shares (sum 0, positive parts 1): :math:`q = 1/k + PB\\, d` (SmolLM2's answers:
        positions 1 and 5; decision 0415). ``None``: the section-8 shape.
    """

    k: int
    pb: float
    between: float = 0.0
    within_exact: float | None = None
    discard_rate: float = 0.0
    source: str = "pb"
    ci_low: float | None = None
    ci_high: float | None = None
    pilot_queries: int | None = None
    pilot_evaluations: int | None = None
    measured_on: str | None = None
    profile: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int | np.integer) or self.k < 2:
            raise InputError(MSG_K.format(value=self.k))
        top = 1.0 - 1.0 / self.k
        if not (isinstance(self.pb, int | float) and 0.0 <= self.pb <= top + 1e-12):
            raise InputError(MSG_PB.format(top=top, k=self.k, value=self.pb))
        for name in ("between", "within_exact", "discard_rate"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise InputError(MSG_VARIANCE.format(name=name, value=value))
        if self.discard_rate >= 1.0:
            raise InputError("`discard_rate` must be < 1 (every call discarded leaves "
                             f"nothing to test), got {self.discard_rate!r}")
        if self.measured_on not in MEASURED_ON:
            raise InputError(MSG_MEASURED_ON.format(value=self.measured_on))
        if self.profile is not None:
            self._check_profile()

    def _check_profile(self) -> None:
        d = np.asarray(self.profile, dtype=float)
        if d.shape != (self.k,) or not np.isfinite(d).all() or abs(d.sum()) > 1e-6 \
                or abs(np.clip(d, 0.0, None).sum() - 1.0) > 1e-6:
            raise InputError(MSG_PROFILE.format(k=self.k, value=self.profile))
        top = 1.0 / self.k / max(float(-d.min()), 1e-300)
        if self.pb > top + 1e-9:
            raise InputError(MSG_PB_PROFILE.format(top=top, value=self.pb))

    @classmethod
    def from_p_bias(cls, p_bias: float, *, k: int) -> Effect:
        """The section-8 model's effect: PB = p_bias (1 - 1/k)."""
        if not (isinstance(p_bias, int | float) and 0.0 <= p_bias <= 1.0):
            raise InputError(MSG_P_BIAS.format(value=p_bias))
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 2:
            raise InputError(MSG_K.format(value=k))
        return cls(k=int(k), pb=float(p_bias) * (1.0 - 1.0 / k), source="p_bias")

    @property
    def p_bias(self) -> float:
        """The section-8 p_bias with this PB: PB k / (k - 1)."""
        return self.pb * self.k / (self.k - 1.0)

    def means(self) -> npt.NDArray[np.float64]:
        r"""q: position 1 favoured by PB, the rest equal; with a pilot's ``profile``,
        :math:`1/k + PB\, d`."""
        if self.profile is not None:
            return np.clip(1.0 / self.k + self.pb * np.asarray(self.profile), 0.0, None)
        q = np.full(self.k, 1.0 / self.k - self.pb / (self.k - 1.0))
        q[0] = 1.0 / self.k + self.pb
        return q

    def section8(self, answers: Answers) -> bool:
        """Whether ``answers``' shares follow the spec's section-8 model (no between-query
        variance, position 1 favoured; exact: no pilot within variance either), which
        the simulations draw from the section-8 simulator."""
        plain = self.between == 0.0 and self.profile is None
        return plain and (answers == "sampled" or self.within_exact is None)

    def _within_exact(self) -> float:
        if self.within_exact is not None:
            return self.within_exact
        b = min(1.0, self.p_bias)
        return (1.0 - b) ** 2 * (_expected_inverse_set_size(self.k) - 1.0 / self.k) / self.k

    def share_covariance(self, answers: Answers, orders: int) -> npt.NDArray[np.float64]:
        r"""Cov of one query's shares Y_j (k, k) with ``orders`` calls per query.

        With :math:`D = \operatorname{diag} q - q q^T` and the between-query part
        :math:`B = \tau^2 D / \bar d`, :math:`\bar d = \frac1k \sum_p q_p(1 - q_p)`
        (a query's own law Dirichlet around q, :func:`simulate_shares`' model: its
        pooled variance is :math:`\tau^2`, and a position carries it in proportion to
        :math:`q_p(1 - q_p)`, the favoured one most): sampled :math:`B + (D - B)/m` (a
        multinomial draw around the query's own law, m = valid answers per query);
        exact :math:`(\tau^2 + w/m) D / \bar d`, and in the section-8 model
        (:math:`\tau^2 = 0`, no pilot w) :math:`(w/m)\, C_0` with :math:`C_0 =
        \frac{k}{k-1}(I - J/k)` (exchangeable: every evaluation's vector is a fresh
        order). With no bias :math:`D/\bar d = C_0`. Until decision 0415 the between
        part was :math:`\tau^2 C_0` at any bias, which understated the favoured
        position's variance (SmolLM2's pilot: 0.07 against 0.16 measured).
        """
        k = self.k
        q = self.means()
        d = np.diag(q) - np.outer(q, q)
        shape = d / max(float((q * (1.0 - q)).mean()), 1e-300)  # pooled diagonal 1
        if answers == "sampled":
            m = orders * (1.0 - self.discard_rate)
            return np.asarray(self.between * shape + (d - self.between * shape) / m)
        if self.section8("exact"):
            c0 = (np.eye(k) - 1.0 / k) * k / (k - 1.0)
            return np.asarray(self._within_exact() / orders * c0)
        return np.asarray((self.between + self._within_exact() / orders) * shape)

    def share_variances(self, answers: Answers, orders: int) -> npt.NDArray[np.float64]:
        """Var Y_j(p) per position: the diagonal of :meth:`share_covariance`."""
        return np.asarray(np.diag(self.share_covariance(answers, orders)))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with the section-8 ``p_bias`` beside PB."""
        return {**asdict(self), "profile": self.profile and list(self.profile),
                "p_bias": self.p_bias}

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Effect:
        """Read :meth:`to_dict` back."""
        what = "Effect"
        obj = as_mapping(obj, what)
        ints = {n: None if obj.get(n) is None else int(number(obj, n, what))
                for n in ("pilot_queries", "pilot_evaluations")}
        measured = obj.get("measured_on")  # absent in plans written before it
        profile = obj.get("profile")  # absent before decision 0415
        if not isinstance(profile, list | tuple | None):
            raise InputError(f"{what}: `profile` must be a list of k numbers or null")
        return cls(k=int(number(obj, "k", what)), pb=number(obj, "pb", what),
                   between=number(obj, "between", what),
                   within_exact=optional_number(obj, "within_exact", what),
                   discard_rate=number(obj, "discard_rate", what),
                   source=str(need(obj, "source", what)),
                   ci_low=optional_number(obj, "ci_low", what),
                   ci_high=optional_number(obj, "ci_high", what),
                   measured_on=None if measured is None else str(measured),
                   profile=None if profile is None else tuple(
                       to_float(x, "profile", what) for x in profile), **ints)


# -- fixed-sample POB-UNBP: simulated at small sizes, else a normal approximation --


@functools.lru_cache(maxsize=32)
def _gauss_draws(k: int) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Fixed standard-normal draws (GAUSS_DRAWS, k) and (GAUSS_DRAWS,), the same for every
    call (common random numbers: the power is a smooth deterministic function of n)."""
    gen = np.random.default_rng(np.random.SeedSequence([GAUSS_SEED, k]))
    return gen.standard_normal((GAUSS_DRAWS, k)), gen.standard_normal(GAUSS_DRAWS)


def fixed_power(effect: Effect, *, orders: int, queries: int, alpha: float,
                answers: Answers = "sampled") -> float:
    r"""Power of fixed-sample POB-UNBP (pooled variance, both sides).

    Up to :data:`SIMULATED_QUERIES` queries, POB-UNBP's decision simulated on the
    planning model (:func:`fixed_power_curve`), above a normal approximation
    (:func:`fixed_power_normal`), which overstated the power of few queries that differ
    (SmolLM2's pilot, k = 5, 10 orders: 0.94 at 6 queries, 0.72 simulated on the same
    model; decision 0415).
    """
    n = int(queries)
    if n < 2:
        return float("nan")
    if n <= SIMULATED_QUERIES:
        return fixed_power_curve(effect, orders=orders, alpha=alpha, answers=answers)[n - 2]
    return fixed_power_normal(effect, orders=orders, queries=n, alpha=alpha, answers=answers)


def fixed_power_se(power: float, queries: int) -> float | None:
    """Monte-Carlo SE of :func:`fixed_power` at ``queries`` (None: not simulated)."""
    small = queries <= SIMULATED_QUERIES and math.isfinite(power)
    return math.sqrt(power * (1.0 - power) / SIMULATED_REPS) if small else None


def fixed_power_method(queries: int) -> str:
    """How :func:`fixed_power` obtains the power at ``queries`` (the plan's column)."""
    return (f"simulation ({SIMULATED_REPS} data sets)" if queries <= SIMULATED_QUERIES
            else "normal approximation")


@functools.lru_cache(maxsize=64)
def fixed_power_curve(effect: Effect, *, orders: int, alpha: float,
                      answers: Answers = "sampled") -> tuple[float, ...]:
    r"""POB-UNBP's simulated rejection rate at 2, ..., :data:`SIMULATED_QUERIES` queries.

    :data:`SIMULATED_REPS` data sets of :data:`SIMULATED_QUERIES` queries from
    :func:`simulate_shares` (the section-8 simulator, or the pilot's Dirichlet model of
    between-query variance), seeded by :data:`SIMULATED_SEED` (the same draws for every
    call: a deterministic curve); the power at n is the share of data sets whose first
    n queries POB-UNBP rejects (``_unbp._reject_many``, the test's own rule: Student t
    quantile at :math:`\alpha/(2k)`, pooled variance). Sampled answers: the valid
    answers per query, :math:`m(1 - \text{discard})` rounded. Monte-Carlo SE
    :math:`\le 0.5/\sqrt{R}` = 0.011.
    """
    k = effect.k
    gen = np.random.default_rng(np.random.SeedSequence([SIMULATED_SEED, k, orders]))
    m = orders if answers == "exact" else max(1, round(orders * (1 - effect.discard_rate)))
    top = SIMULATED_QUERIES
    hits = np.zeros(top - 1)
    chunk = max(1, _CHUNK // (top * m * k))
    for start in range(0, SIMULATED_REPS, chunk):
        shares = simulate_shares(effect, answers=answers, orders=m, queries=top,
                                 reps=min(chunk, SIMULATED_REPS - start), gen=gen)
        for n in range(2, top + 1):
            hits[n - 2] += float(_reject_many(shares[:, :n], alpha).sum())
    return tuple(float(h) for h in hits / SIMULATED_REPS)


def fixed_power_normal(effect: Effect, *, orders: int, queries: int, alpha: float,
                       answers: Answers = "sampled") -> float:
    r"""Power of fixed-sample POB-UNBP (pooled variance, both sides), normal approximation.

    POB-UNBP rejects when some position's mean share leaves its one-sided bound,
    :math:`|\bar Y(p) - 1/k| > c\,s/\sqrt n` for some p, with
    :math:`c = t_{n-1}^{-1}(1 - \alpha/(2k))` and :math:`s^2` the pooled variance
    (:func:`~recaudit.positional.pob_unbp`). The approximation: the vector
    :math:`\bar Y \sim N(q, \Sigma/n)`, with :math:`\Sigma` the covariance of one
    query's shares (:meth:`Effect.share_covariance`), and
    :math:`s^2 \sim \sigma^2 \chi^2_\nu/\nu` independent of it,
    :math:`\sigma^2 = \operatorname{tr}\Sigma / k`, Satterthwaite's
    :math:`\nu = (n - 1)(\operatorname{tr}\Sigma)^2 / \operatorname{tr}\Sigma^2`
    (:math:`(k - 1)(n - 1)` for an exchangeable :math:`\Sigma`) and Wilson-Hilferty for
    the chi-square; the probability that some coordinate leaves its bound is integrated
    over ``GAUSS_DRAWS`` fixed draws (error < 0.0015). The coordinates are dependent
    (they sum to 1): independent events overstated the power by up to 0.03 at 80 %.
    Shares far from normal (few queries answering nearly always one position) escape
    it: :func:`fixed_power` simulates up to :data:`SIMULATED_QUERIES` queries.

    References
    ----------
    Lachin, J. M. (1981). Introduction to sample size determination and power
    analysis for clinical trials. Controlled Clinical Trials 2(2), 93-113.
    Satterthwaite, F. E. (1946). An approximate distribution of estimates of variance
    components. Biometrics Bulletin 2(6), 110-114.
    Wilson, E. B. & Hilferty, M. M. (1931). The distribution of chi-square. PNAS 17.
    """
    n = int(queries)
    if n < 2:
        return float("nan")
    k = effect.k
    cov = effect.share_covariance(answers, orders)
    trace = float(np.trace(cov))
    sigma = math.sqrt(max(trace / k, 1e-300))
    vals, vecs = np.linalg.eigh(cov)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))
    eps, u = _gauss_draws(k)
    dev = (effect.means() - 1.0 / k) * math.sqrt(n) + eps @ root.T  # sqrt(n)(Ybar - 1/k)
    squares = float(np.sum(cov * cov))  # tr(cov @ cov), cov symmetric
    nu = (n - 1.0) * (trace**2 / squares if squares > 0 else k - 1.0)
    ratio = np.clip(1.0 - 2.0 / (9.0 * nu) + u * math.sqrt(2.0 / (9.0 * nu)), 0.0, None)
    c = float(stats.t.isf(alpha / (2 * k), df=n - 1))
    bound = c * sigma * ratio**1.5  # c s, s / sigma = sqrt(chi2_nu / nu)
    return float(np.mean(np.any(np.abs(dev) > bound[:, None], axis=1)))


def fixed_queries(effect: Effect, *, orders: int, power: float, alpha: float,
                  answers: Answers = "sampled") -> int | None:
    """Smallest number of queries (>= 2) from which :func:`fixed_power` stays at
    ``power`` or above; ``None`` when none up to :data:`MAX_QUERIES` does (no effect).

    Up to :data:`SIMULATED_QUERIES`, the smallest n whose simulated power and that of
    every larger simulated size reach ``power``: POB-UNBP's power is not monotone at
    a few queries (when they all answer the same position the pooled variance is 0 and
    the test rejects: the SmolLM2-like model rejects 54 % at 2 queries, 48 % at 3).
    Above, bisection on the normal approximation (increasing in n).
    """
    if effect.pb == 0.0:
        return None
    curve = fixed_power_curve(effect, orders=orders, alpha=alpha, answers=answers)
    if curve[-1] >= power:  # one above the largest simulated size short of it
        return 1 + max((n for n in range(2, SIMULATED_QUERIES) if curve[n - 2] < power),
                       default=1)

    def ok(n: int) -> bool:
        return fixed_power_normal(effect, orders=orders, queries=n, alpha=alpha,
                                  answers=answers) >= power

    lo, hi = SIMULATED_QUERIES, SIMULATED_QUERIES + 1  # not ok(lo) (simulated); search hi
    while not ok(hi):
        if hi >= MAX_QUERIES:
            return None
        lo, hi = hi, min(2 * hi, MAX_QUERIES)
    while hi - lo > 1:  # ok(hi), not ok(lo)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


# -- simulations -------------------------------------------------------------------


def _dirichlet_queries(effect: Effect, variance: float, size: tuple[int, int],
                       gen: np.random.Generator) -> npt.NDArray[np.float64]:
    """Per-query position laws: Dirichlet with mean q and per-position variance
    ``variance`` pooled (moment matching: concentration mean_p q(1-q) / var - 1)."""
    q = effect.means()
    if variance <= 0.0:  # every query has the mean law
        return np.broadcast_to(q, (*size, q.size)).copy()
    conc = max(float((q * (1 - q)).mean()) / variance - 1.0, 1e-3)
    return np.asarray(gen.dirichlet(q * conc, size=size))


def simulate_shares(effect: Effect, *, answers: Answers, orders: int, queries: int,
                    reps: int, gen: np.random.Generator) -> npt.NDArray[np.float64]:
    """Per-query shares (reps, queries, k) under the planning model.

    In the section-8 model (:meth:`Effect.section8`), the spec's simulator at the
    effect's p_bias (sampled: ``_simulate_batch``; exact: :func:`exact_query_shares`);
    else (a pilot's effect) a query's own law is Dirichlet with mean q
    (:meth:`Effect.means`, the pilot's profile) and variance :math:`\\tau^2` (the mean
    law when :math:`\\tau^2 = 0`), and its shares are a multinomial of ``orders``
    (sampled) or a Dirichlet with variance :math:`\\tau^2 + w/m` (exact).
    """
    k, p_bias = effect.k, min(1.0, effect.p_bias)
    if effect.section8("sampled") and answers == "sampled":
        _, position, _ = _simulate_batch(reps, queries, k, orders, p_bias, gen)
        return _shares(position, queries, k)
    if effect.section8("exact") and answers == "exact":
        return exact_query_shares(reps, queries, k=k, n_perms=orders, p_bias=p_bias, gen=gen)
    if answers == "exact":
        var = float(effect.share_variances("exact", orders).mean())
        return _dirichlet_queries(effect, max(var, 1e-12), (reps, queries), gen)
    laws = _dirichlet_queries(effect, effect.between, (reps, queries), gen)
    counts = np.stack([gen.multinomial(orders, laws[r]) for r in range(reps)])
    return np.asarray(counts / orders)


def sequential_stopping_times(effect: Effect, *, orders: int, max_queries: int,
                              alpha: float, reps: int, gen: np.random.Generator,
                              method: str = DEFAULT_SEQUENTIAL_METHOD, answers: Answers = "sampled",
                              ) -> npt.NDArray[np.float64]:
    """Valid evaluations at which the sequential test first rejects, per simulated path
    (``inf`` when it does not within ``max_queries * orders``).

    Each path is an audit's cell read query block by query block (``orders`` sampled
    positions per query, :func:`simulate_shares`' model; with ``answers="exact"`` the
    per-evaluation choice vectors, :func:`_sequential_vectors`); the e-process of
    :func:`~recaudit.positional.sequential_uniformity_test` (``method``; exact:
    ``_sequential_exact.sequential_exact_test``) is evaluated after every evaluation
    and the stopping time is the first t with :math:`E_t \\ge 1/\\alpha` (Ville's
    inequality bounds the type-I error by alpha).

    References
    ----------
    Ramdas, Grunwald, Vovk & Shafer (2023). Game-theoretic statistics and safe
    anytime-valid inference. Statistical Science 38(4).
    """
    k, length = effect.k, max_queries * orders
    threshold = math.log(1.0 / alpha)
    out = np.full(reps, np.inf)
    chunk = max(1, _CHUNK // max(length * (k if answers == "exact" else 1), 1))
    for start in range(0, reps, chunk):
        n = min(chunk, reps - start)
        if answers == "exact":
            vectors = _sequential_vectors(effect, orders, max_queries, n, gen)
            log_e = log_e_vectors(vectors, method=method)  # type: ignore[arg-type]
        else:
            positions = _sequential_positions(effect, orders, max_queries, n, gen)
            log_e = log_e_values(positions, k, method=method)  # type: ignore[arg-type]
        crossed = log_e >= threshold
        hit = crossed.any(axis=1)
        first = np.argmax(crossed, axis=1) + 1.0
        out[start:start + n] = np.where(hit, first, np.inf)
    return out


def _sequential_vectors(effect: Effect, orders: int, queries: int, reps: int,
                        gen: np.random.Generator) -> npt.NDArray[np.float64]:
    """(reps, queries * orders, k) exact choice vectors, query blocks in order.

    In the section-8 model (:meth:`Effect.section8`) its exact law
    (``_alternatives.simulate_choice_vectors``, model ``first``); else a query's law is
    Dirichlet with variance :math:`\\tau^2` around q (:meth:`Effect.means`) and each
    evaluation's vector Dirichlet around it with the pooled within variance w (moment
    matching, as :func:`_dirichlet_queries`).
    """
    k = effect.k
    if effect.section8("exact"):
        return simulate_choice_vectors("first", reps, queries, k=k, orders=orders,
                                       strength=min(1.0, effect.p_bias), gen=gen)
    laws = _dirichlet_queries(effect, max(effect.between, 1e-12), (reps, queries), gen)
    within = max(effect._within_exact(), 1e-12)
    conc = max(float((laws * (1 - laws)).mean()) / within - 1.0, 1e-3)
    alpha = np.repeat(laws, orders, axis=1) * conc + 1e-9
    return _dirichlet_rows(alpha, gen)


def _dirichlet_rows(alpha: npt.NDArray[np.float64], gen: np.random.Generator
                    ) -> npt.NDArray[np.float64]:
    """One Dirichlet(alpha[..., :]) draw per row (gamma normalisation, vectorised)."""
    g = gen.standard_gamma(alpha)
    return np.asarray(g / g.sum(axis=-1, keepdims=True))


def _sequential_positions(effect: Effect, orders: int, queries: int, reps: int,
                          gen: np.random.Generator) -> npt.NDArray[np.int64]:
    """(reps, queries * orders) 0-based positions, query blocks in order."""
    if effect.section8("sampled"):
        _, position, _ = _simulate_batch(reps, queries, effect.k, orders,
                                         min(1.0, effect.p_bias), gen)
        return position
    laws = _dirichlet_queries(effect, effect.between, (reps, queries), gen)
    cum = np.cumsum(laws, axis=-1)
    u = gen.random((reps, queries, orders, 1))
    pos = (u > cum[:, :, None, :]).sum(axis=-1)
    return np.minimum(pos, effect.k - 1).reshape(reps, queries * orders).astype(np.int64)


def pb_half_width(effect: Effect, *, answers: Answers, orders: int, queries: int,
                  reps: int, gen: np.random.Generator, confidence_level: float = 0.95,
                  n_boot: int = 200) -> tuple[float, float]:
    """Mean half-width of PB's CI (:func:`~recaudit.positional.positional_bias`, the
    cross-fitted estimator, its interval (high - low) / 2) over ``reps`` simulated data
    sets, and its Monte-Carlo standard error (sd / sqrt(reps))."""
    widths = np.empty(reps)
    chunk = max(1, _CHUNK // max(queries * orders * effect.k, 1))
    done = 0
    while done < reps:
        n = min(chunk, reps - done)
        shares = simulate_shares(effect, answers=answers, orders=orders, queries=queries,
                                 reps=n, gen=gen)
        for r in range(n):
            res = pb_from_shares(shares[r], crossfit_shares(shares[r], gen, n_boot=n_boot),
                                 confidence_level)
            widths[done + r] = (res.ci.high - res.ci.low) / 2.0
        done += n
    return float(widths.mean()), float(widths.std(ddof=1) / math.sqrt(reps)) if reps > 1 \
        else float("nan")


def queries_for_half_width(effect: Effect, *, answers: Answers, orders: int, target: float,
                           reps: int, gen: np.random.Generator,
                           confidence_level: float = 0.95
                           ) -> tuple[int, float, float] | None:
    r"""The queries per cell at which PB's CI half-width (:func:`pb_half_width`, mean
    over ``reps`` simulated data sets) is at most ``target``: ``(queries, half-width,
    its Monte-Carlo SE)``, or None when it needs more than the simulated horizon
    (:data:`MAX_SEQUENTIAL_EVALUATIONS` x 20 answers).

    The half-width falls about as :math:`n^{-b}` (:math:`b = 1/2` for a clear bias,
    less near none, where the interval's upper end is a maximum over favoured sets): a
    second size from :math:`b = 1/2` and the half-width at 40 queries, a third from the
    slope the two simulated points give (clipped to [0.25, 1]), then 10 % steps up until
    the simulated half-width is at most ``target`` or a size already known to reach it
    (so the size is at most ~10 % above the smallest, checked in
    ``benchmarks/validate_plan.py``).
    """
    cap = max(2, 20 * MAX_SEQUENTIAL_EVALUATIONS // max(orders * effect.k, 1))

    def width(n: int) -> tuple[int, float, float]:
        hw, se = pb_half_width(effect, answers=answers, orders=orders, queries=n,
                               reps=reps, gen=gen, confidence_level=confidence_level)
        return n, hw, se

    first = width(min(40, cap))
    second = width(min(cap, max(2, math.ceil(first[0] * (first[1] / target) ** 2))))
    points = sorted({first, second})
    known = min((p for p in points if p[1] <= target), default=None)
    (n0, hw0, _), (n1, hw1, _) = points[0], points[-1]
    slope = 0.5 if n0 == n1 or hw1 <= 0 or hw0 <= hw1 else \
        min(1.0, max(0.25, math.log(hw0 / hw1) / math.log(n1 / n0)))
    n = min(cap, max(2, math.ceil(n1 * (hw1 / target) ** (1 / slope))))
    while known is None or n < known[0]:
        point = width(n)
        if point[1] <= target:
            return point
        if n >= cap:
            return None
        n = min(cap, max(n + 1, math.ceil(n * 1.1)))
    return known


# -- costs -------------------------------------------------------------------------

MSG_DISCOUNT = ("batch_discount (the share of the price a provider batch costs, e.g. 0.5 "
                "for half price) must be in (0, 1], got {value!r}")


@dataclass(frozen=True)
class CallCost:
    """What one call costs: tokens (means per call), the backend's rate, the price.

    ``None`` is unknown. Prices are per million tokens (``price_out`` defaults to
    ``price_in`` when one price is given). ``batch_discount`` is the share of the price
    paid when the calls go as a provider batch (OpenAI's Batch API and its clones: 0.5,
    answers within 24 h); the money is then
    :math:`\\text{discount} \\cdot (t_{in} p_{in} + t_{out} p_{out}) / 10^6`. The default
    1.0 is the live price.
    """

    prompt_tokens: float | None = None
    completion_tokens: float | None = None
    calls_per_s: float | None = None
    tokens_per_s: float | None = None
    price_in: float | None = None
    price_out: float | None = None
    source: str = "given"
    batch_discount: float = 1.0

    def __post_init__(self) -> None:
        for name in ("prompt_tokens", "completion_tokens", "calls_per_s", "tokens_per_s",
                     "price_in", "price_out"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise InputError(MSG_VARIANCE.format(name=name, value=value))
        if not (math.isfinite(self.batch_discount) and 0 < self.batch_discount <= 1):
            raise InputError(MSG_DISCOUNT.format(value=self.batch_discount))
        if self.price_out is None and self.price_in is not None:
            object.__setattr__(self, "price_out", self.price_in)

    def spend(self, calls: float) -> dict[str, float | None]:
        """Tokens, wall seconds and money of ``calls`` calls (``None`` when unknown)."""
        pt = None if self.prompt_tokens is None else calls * self.prompt_tokens
        ct = None if self.completion_tokens is None else calls * self.completion_tokens
        if self.calls_per_s:
            wall: float | None = calls / self.calls_per_s
        elif self.tokens_per_s and pt is not None and ct is not None:
            wall = (pt + ct) / self.tokens_per_s
        else:
            wall = None
        money = None
        if self.price_in is not None and pt is not None and ct is not None:
            money = self.batch_discount * (
                pt * self.price_in + ct * (self.price_out or 0.0)) / 1e6
        return {"prompt_tokens": pt, "completion_tokens": ct, "wall_s": wall, "money": money}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> CallCost:
        """Read :meth:`to_dict` back."""
        what = "CallCost"
        obj = as_mapping(obj, what)
        return cls(**{n: optional_number(obj, n, what) for n in (
            "prompt_tokens", "completion_tokens", "calls_per_s", "tokens_per_s",
            "price_in", "price_out")}, source=str(obj.get("source", "given")),
                   batch_discount=to_float(obj.get("batch_discount", 1.0),
                                           "batch_discount", what))

