r"""Anytime-valid (sequential) test that the selected prompt position is uniform.

H0: the selected positions P_1, P_2, ... are i.i.d. Uniform{1..k}. With a FRESH
uniformly random order per evaluation (drawn independently of everything before it)
and no positional bias (the law of the model's output given the query does not depend
on the order), H0 holds whatever the queries and however they repeat
(docs/exact-and-sequential.md gives the proof).

The e-process is a test martingale under H0 (a nonnegative process with
expectation 1 that is a product of factors each with conditional expectation 1), so
Ville's inequality gives :math:`P_{H_0}(\exists t: E_t \ge 1/\alpha) \le \alpha`: the
test may be looked at after every evaluation and stopped whenever, and the type-I
error stays <= alpha.

- ``"favoured"``: a predictable plug-in bet on the paper's alternative, one
  favoured position p with bias b, :math:`q_{p,b} = b\,e_p + (1 - b)\,u`. Before
  evaluation t, :math:`\hat p_t` is the most selected position so far and
  :math:`\hat b_t = \min(b_{max}, (n_{\hat p} - (t-1)/k)^+ / ((t-1)(1 - 1/k) + c))`
  (a shrunk maximum-likelihood estimate, pseudo-count c = 50, b_max = 0.6); the
  factor is :math:`k\,q_{\hat p_t, \hat b_t}(P_t)`, whose conditional expectation
  under H0 is exactly 1. Consistent against EVERY departure from uniformity (some
  position then has q_p > 1/k, the plug-in finds it and bets with positive growth).
- ``"dirichlet"``: the Dirichlet(1/2, ..., 1/2)-multinomial mixture (Krichevsky-
  Trofimov), :math:`E_t = k^t \frac{\Gamma(k/2)}{\Gamma(k/2 + t)}
  \prod_p \frac{\Gamma(1/2 + n_p)}{\Gamma(1/2)}`, a generic alternative (slower
  against one favoured position: it pays for k - 1 free parameters).
- ``"mixture"``: :math:`0.9\,E^{favoured} + 0.1\,E^{dirichlet}` (a convex
  combination of test martingales is one).
- ``"disfavoured"``, ``"plugin"``, ``"omnibus"`` (default): bets on the least selected
  position, on the running mean's (James-Stein shrunk) deviation in every direction,
  and their mixture with ``"favoured"`` (weights 0.5, 0.25, 0.25): the e-processes
  of ``_sequential_exact`` on the one-hot vectors of the answers (power against
  avoided positions, diffuse and graded effects; docs/exact-and-sequential.md).

References
----------
Ville, J. (1939). Etude critique de la notion de collectif.
Ramdas, Grunwald, Vovk & Shafer (2023). Game-theoretic statistics and safe
anytime-valid inference. Statistical Science 38(4).
Howard, Ramdas, McAuliffe & Sekhon (2021). Time-uniform, nonparametric, nonasymptotic
confidence sequences. Annals of Statistics 49(2).
Robbins, H. (1970). Statistical methods related to the law of the iterated logarithm.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numba
import numpy as np
import numpy.typing as npt
from scipy import optimize, special
from scipy.special import logsumexp

from ..exceptions import InputError

__all__ = [
    "DEFAULT_SEQUENTIAL_METHOD",
    "DIRECTIONS",
    "EXACT_SEQUENTIAL_METHODS",
    "SEQUENTIAL_METHODS",
    "OMNIBUS_WEIGHTS",
    "SequentialResult",
    "log_e_from_counts",
    "log_e_values",
    "log_e_vectors",
    "position_confidence_sequences",
    "sequential_uniformity_test",
]

Method = Literal["favoured", "dirichlet", "mixture", "disfavoured", "plugin", "omnibus"]
SEQUENTIAL_METHODS = ("favoured", "dirichlet", "mixture", "disfavoured", "plugin", "omnibus")
ExactMethod = Literal["favoured", "disfavoured", "plugin", "omnibus"]
#: The single-direction e-processes, in the order of :data:`OMNIBUS_WEIGHTS`.
DIRECTIONS = ("favoured", "disfavoured", "plugin")
EXACT_SEQUENTIAL_METHODS = (*DIRECTIONS, "omnibus")
#: Weights of (favoured, disfavoured, plugin) in ``"omnibus"``.
OMNIBUS_WEIGHTS = (0.5, 0.25, 0.25)

#: The default e-process (decision "Sequential default: the omnibus mixture").
DEFAULT_SEQUENTIAL_METHOD: Method = "omnibus"
#: The methods computed on one-hot vectors by ``_sequential_exact`` (every direction).
VECTOR_METHODS = ("disfavoured", "plugin", "omnibus")

#: Pseudo-count c shrinking the plug-in bias estimate of the "favoured" e-process.
FAVOURED_SHRINK = 50.0
#: Largest bias b the "favoured" e-process bets.
FAVOURED_MAX_BIAS = 0.6
#: Dirichlet concentration of the "dirichlet" e-process (Krichevsky-Trofimov).
DIRICHLET_A = 0.5
#: Weight of the "favoured" e-process in "mixture".
MIXTURE_WEIGHT = 0.9

#: Smallest factor any vector bet may produce (1 - the favoured cap).
MIN_FACTOR = 1.0 - FAVOURED_MAX_BIAS

MSG_K = "`k` must be an integer >= 2, got {value!r}"
MSG_ALPHA = "`alpha` must be in (0, 1), got {value!r}"
MSG_METHOD = "`method` must be one of {choices}, got {value!r}"
MSG_POSITIONS = "`positions` must be integers in 0..k-1 (0-based prompt positions); got {value!r}"
MSG_CHECKPOINTS = (
    "`checkpoints` must be increasing evaluation counts in 1..{n} (looks after that many "
    "evaluations), got {value!r}"
)


def log_e_values(
    positions: npt.NDArray[np.int64], k: int, *, method: Method = "mixture"
) -> npt.NDArray[np.float64]:
    """log E_t after each evaluation, vectorised over leading axes.

    Parameters
    ----------
    positions : ndarray of int, shape (..., N)
        0-based selected positions in observation order.
    k : int
        Number of positions.
    method : {'favoured', 'dirichlet', 'mixture', 'disfavoured', 'plugin', 'omnibus'}
        The e-process (see the module docstring).

    Returns
    -------
    ndarray of shape (..., N)
        ``out[..., t-1]`` is log E_t, the log e-value after t evaluations.
    """
    if method not in SEQUENTIAL_METHODS:
        raise InputError(MSG_METHOD.format(choices=SEQUENTIAL_METHODS, value=method))
    pos = np.asarray(positions, dtype=np.int64)
    flat = pos.reshape(-1, pos.shape[-1]) if pos.ndim else pos.reshape(1, 1)
    if method in VECTOR_METHODS:
        out = log_e_vectors(np.eye(k)[flat], method=method)  # type: ignore[arg-type]
    elif method == "favoured":
        out = _favoured_paths(flat, k, FAVOURED_SHRINK, FAVOURED_MAX_BIAS)
    else:
        dm = _dirichlet_paths(flat, k)
        if method == "dirichlet":
            out = dm
        else:
            fav = _favoured_paths(flat, k, FAVOURED_SHRINK, FAVOURED_MAX_BIAS)
            out = np.logaddexp(np.log(MIXTURE_WEIGHT) + fav, np.log1p(-MIXTURE_WEIGHT) + dm)
    return out.reshape(pos.shape)


@numba.njit(cache=True, nogil=True)
def _favoured_paths(
    pos: npt.NDArray[np.int64], k: int, shrink: float, max_bias: float
) -> npt.NDArray[np.float64]:  # pragma: no cover - compiled
    """log E_t of the plug-in "favoured" e-process for each row of ``pos``."""
    n_rows, n = pos.shape
    out = np.empty((n_rows, n))
    counts = np.zeros(k)
    for r in range(n_rows):
        counts[:] = 0.0
        log_e = 0.0
        for t in range(n):
            if t > 0:
                best = 0
                for p in range(1, k):
                    if counts[p] > counts[best]:
                        best = p
                b = (counts[best] - t / k) / (t * (1.0 - 1.0 / k) + shrink)
                b = min(max(b, 0.0), max_bias)
                if pos[r, t] == best:
                    log_e += np.log1p(b * (k - 1))
                else:
                    log_e += np.log1p(-b)
            counts[pos[r, t]] += 1.0
            out[r, t] = log_e
    return out


def log_e_vectors(
    vectors: npt.ArrayLike, *, method: ExactMethod = "omnibus"
) -> npt.NDArray[np.float64]:
    """log E_t after each evaluation, vectorised over leading axes: the e-processes
    on choice vectors (formulas and validity: ``_sequential_exact``'s docstring).

    Parameters
    ----------
    vectors : array_like of float, shape (..., N, k)
        Choice vectors (rows on the simplex) in observation order; one-hot rows for
        sampled answers. Not validated here (see :func:`sequential_exact_test`).
    method : {'favoured', 'disfavoured', 'plugin', 'omnibus'}
        The e-process (module docstring).

    Returns
    -------
    ndarray of shape (..., N)
        ``out[..., t-1]`` = log E_t.
    """
    if method not in EXACT_SEQUENTIAL_METHODS:
        raise InputError(MSG_METHOD.format(choices=EXACT_SEQUENTIAL_METHODS, value=method))
    x = np.asarray(vectors, dtype=np.float64)
    k = x.shape[-1]
    flat = np.ascontiguousarray(x.reshape(-1, x.shape[-2], k))
    paths = _direction_paths(flat, FAVOURED_SHRINK, FAVOURED_MAX_BIAS)
    if method == "omnibus":
        w = np.log(np.asarray(OMNIBUS_WEIGHTS))[:, None, None]
        out = logsumexp(paths + w, axis=0)
    else:
        out = paths[DIRECTIONS.index(method)]
    return np.asarray(out.reshape(x.shape[:-1]), dtype=np.float64)


@numba.njit(cache=True, nogil=True)
def _direction_paths(
    x: npt.NDArray[np.float64], shrink: float, cap: float
) -> npt.NDArray[np.float64]:  # pragma: no cover - compiled
    """log E_t of the favoured, disfavoured and plugin e-processes: (3, rows, n)."""
    n_rows, n, k = x.shape
    out = np.empty((3, n_rows, n))
    s = np.zeros(k)
    for r in range(n_rows):
        s[:] = 0.0
        v = 0.0  # pooled null second-moment mass of the evaluations so far
        lf = 0.0
        ld = 0.0
        lp = 0.0
        for t in range(n):
            xt = x[r, t]
            # the prior: `shrink` evaluations of the mean second moment so far (shrink * k
            # for one-hot vectors, whose k |x|^2 - 1 is k - 1)
            prior = shrink * k * (v / t) / (k - 1.0) if t > 0 else 0.0
            w = v + prior
            if t > 0 and w > 1e-300:
                hi = 0
                lo = 0
                for p in range(1, k):
                    if s[p] > s[hi]:
                        hi = p
                    if s[p] < s[lo]:
                        lo = p
                # favoured: factor 1 + b (k x_hi - 1), b in [0, cap]
                b = min(max(k * (s[hi] - t / k) / w, 0.0), cap)
                lf += np.log1p(b * (k * xt[hi] - 1.0))
                # disfavoured: factor 1 + b (1 - k x_lo), b in [0, cap / (k - 1)]
                b = min(max(k * (t / k - s[lo]) / w, 0.0), cap / (k - 1.0))
                ld += np.log1p(b * (1.0 - k * xt[lo]))
                # plugin: d = s/t - u, factor 1 + b k <d, x_t>, James-Stein shrunk
                norm = 0.0
                dmin = 0.0
                dot = 0.0
                for p in range(k):
                    d = s[p] / t - 1.0 / k
                    norm += d * d
                    dmin = min(dmin, d)
                    dot += d * xt[p]
                if norm > 1e-15 and dmin < 0.0:
                    keep = max(0.0, 1.0 - v / (k * t * t * norm))
                    b = min((k - 1.0) * t / w * keep, cap / (k * -dmin))
                    lp += np.log1p(b * k * dot)
            sq = 0.0
            for p in range(k):
                s[p] += xt[p]
                sq += xt[p] * xt[p]
            v += k * sq - 1.0
            out[0, r, t] = lf
            out[1, r, t] = ld
            out[2, r, t] = lp
    return out


def _dirichlet_paths(pos: npt.NDArray[np.int64], k: int) -> npt.NDArray[np.float64]:
    """log E_t of the Dirichlet(a)-multinomial mixture: the predictive product
    prod_t k (n_{P_t}(t-1) + a) / (t - 1 + k a)."""
    n_rows, n = pos.shape
    onehot = np.zeros((n_rows, n, k))
    np.put_along_axis(onehot, pos[..., None], 1.0, axis=2)
    before = (np.cumsum(onehot, axis=1) - onehot)  # counts before each evaluation
    seen = np.take_along_axis(before, pos[..., None], axis=2)[..., 0]
    t = np.arange(n)
    step = np.log(k) + np.log(seen + DIRICHLET_A) - np.log(t + k * DIRICHLET_A)
    return np.cumsum(step, axis=1)


def log_e_from_counts(counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """log E of the ``"dirichlet"`` e-process from position counts (..., k) alone
    (it depends on the sequence only through the counts)."""
    n = np.asarray(counts, dtype=float)
    k = n.shape[-1]
    a = DIRICHLET_A
    t = n.sum(axis=-1)
    out = t * np.log(k) + special.gammaln(k * a) - special.gammaln(k * a + t)
    out = out + (special.gammaln(a + n) - special.gammaln(a)).sum(axis=-1)
    return np.asarray(out, dtype=float)


@dataclass(frozen=True, eq=False)
class SequentialResult:
    """Result of :func:`sequential_uniformity_test`.

    Attributes
    ----------
    reject : bool
        ``E_t >= 1/alpha`` at some checkpoint (H0 rejected; the test stopped there).
    stopped_at : int
        Evaluations used: the first checkpoint where it rejected, else all of them.
    e_value : float
        E at ``stopped_at`` (the evidence; ``1/e_value`` is an anytime-valid p-value
        bound only at a stopping time, see ``pvalue``).
    pvalue : float
        Anytime-valid p-value ``min(1, 1 / max_{s <= stopped_at} E_s)``.
    alpha : float
        Level.
    method : str
        The e-process.
    checkpoints : ndarray of int
        Evaluation counts at which E was looked at (up to ``stopped_at``).
    log_e_path : ndarray of float
        log E at each checkpoint.
    counts : ndarray, shape (k,)
        Position counts after ``stopped_at`` evaluations (exact mode,
        :func:`~recaudit.positional._sequential_exact.sequential_exact_test`: the
        expected counts, sums of the choice vectors).
    cs_low, cs_high : ndarray of float, shape (k,)
        Anytime-valid simultaneous confidence sequences for each position's selection
        probability at ``stopped_at`` (intersection over up to 64 checkpoints).
    """

    reject: bool
    stopped_at: int
    e_value: float
    pvalue: float
    alpha: float
    method: str
    checkpoints: npt.NDArray[np.int64] = field(repr=False)
    log_e_path: npt.NDArray[np.float64] = field(repr=False)
    counts: npt.NDArray[np.int64] = field(repr=False)
    cs_low: npt.NDArray[np.float64] = field(repr=False)
    cs_high: npt.NDArray[np.float64] = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready evidence (used in ``sequential.json``)."""
        return {
            "reject": self.reject,
            "stopped_at": self.stopped_at,
            "e_value": self.e_value,
            "threshold": 1.0 / self.alpha,
            "pvalue": self.pvalue,
            "alpha": self.alpha,
            "method": self.method,
            "checkpoints": self.checkpoints.tolist(),
            "log_e_path": self.log_e_path.tolist(),
            "counts": self.counts.tolist(),
            "cs_low": self.cs_low.tolist(),
            "cs_high": self.cs_high.tolist(),
        }


def sequential_uniformity_test(
    positions: npt.ArrayLike,
    *,
    k: int,
    alpha: float = 0.05,
    method: Method = DEFAULT_SEQUENTIAL_METHOD,
    checkpoints: Sequence[int] | npt.ArrayLike | None = None,
) -> SequentialResult:
    r"""Anytime-valid test of "the selected position is uniform on 1..k".

    The e-process (module docstring) is evaluated after the evaluation counts in
    ``checkpoints`` (default: after every evaluation) and the test stops at the
    first checkpoint where :math:`E_t \ge 1/\alpha`. By Ville's inequality the
    probability under H0 that this ever happens is <= alpha, for any choice of
    checkpoints and any data-dependent decision to stop or continue.

    Parameters
    ----------
    positions : array_like of int
        Selected prompt positions, 0-based, in the order they were observed
        (discarded generations left out).
    k : int
        Number of positions.
    alpha : float
        Level.
    method : {'favoured', 'dirichlet', 'mixture', 'disfavoured', 'plugin', 'omnibus'}
        The e-process (module docstring).
    checkpoints : sequence of int, optional
        Increasing evaluation counts at which to look (e.g. round ends).

    Returns
    -------
    SequentialResult

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> pos = np.where(rng.random(2000) < 0.2, 0, rng.integers(0, 5, 2000))
    >>> res = sequential_uniformity_test(pos, k=5, alpha=0.05)
    >>> bool(res.reject), res.stopped_at < 2000
    (True, True)
    """
    pos, k, alpha, checks = _sequential_iv(positions, k, alpha, method, checkpoints)
    onehot = np.zeros((pos.size, k), dtype=np.int64)
    onehot[np.arange(pos.size), pos] = 1
    cum = np.cumsum(onehot, axis=0)
    path = log_e_values(pos, k, method=method) if pos.size else np.zeros(0)
    if checks.size == 0:
        counts_at = np.zeros((1, k), dtype=np.int64)
        checks = np.zeros(1, dtype=np.int64)
        log_e = np.zeros(1)
    else:
        counts_at = cum[checks - 1]
        log_e = path[checks - 1]
    hit = np.flatnonzero(log_e >= np.log(1.0 / alpha))
    last = int(hit[0]) if hit.size else checks.size - 1
    # C_t is valid at every t at once: intersect over <= 64 looks (cost), incl. the last
    looks = np.unique(np.linspace(0, last, min(last + 1, 64)).round().astype(np.int64))
    low, high = position_confidence_sequences(counts_at[looks], alpha=alpha)
    return SequentialResult(
        reject=bool(hit.size),
        stopped_at=int(checks[last]),
        e_value=float(np.exp(log_e[last])),
        pvalue=float(min(1.0, np.exp(-log_e[: last + 1].max()))),
        alpha=alpha,
        method=method,
        checkpoints=checks[: last + 1],
        log_e_path=log_e[: last + 1],
        counts=counts_at[last],
        cs_low=low,
        cs_high=high,
    )


def position_confidence_sequences(
    counts_path: npt.ArrayLike, *, alpha: float = 0.05
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    r"""Simultaneous anytime-valid confidence sequences for each position's q_p.

    For position p after t evaluations with n_p selections, the Beta(1/2, 1/2)
    mixture martingale (Robbins 1970; Howard et al. 2021, section 3)

    .. math:: M_t(\theta) = \frac{B(1/2 + n_p, 1/2 + t - n_p)}{B(1/2, 1/2)\,
              \theta^{n_p} (1 - \theta)^{t - n_p}}

    is a test martingale when the indicators 1{P_s = p} are i.i.d. Bernoulli(theta),
    so :math:`C_t = \{\theta : M_t(\theta) < k/\alpha\}` covers q_p at every t at once
    with probability >= 1 - alpha/k, and the k sequences hold together with
    probability >= 1 - alpha (union bound). C_t is an interval (log M_t is convex in
    theta); the running intersection over the rows of ``counts_path`` is returned.

    Parameters
    ----------
    counts_path : array_like of shape (m, k)
        Position counts at m looks (cumulative).
    alpha : float
        Joint miscoverage.

    Returns
    -------
    (low, high) : ndarrays of shape (k,)
    """
    path = np.atleast_2d(np.asarray(counts_path, dtype=float))
    k = path.shape[1]
    low, high = np.zeros(k), np.ones(k)
    level = np.log(k / alpha)
    for row in path:
        t = row.sum()
        if t == 0:
            continue
        for p, s in enumerate(row):
            lo, hi = _beta_cs(s, t, level)
            low[p], high[p] = max(low[p], lo), min(high[p], hi)
    return low, high


def _beta_cs(s: float, t: float, level: float) -> tuple[float, float]:
    """{theta : log M_t(theta) < level} for the Beta(1/2, 1/2) mixture."""
    log_mix = special.betaln(0.5 + s, 0.5 + t - s) - special.betaln(0.5, 0.5)

    def f(theta: float) -> float:
        return float(log_mix - special.xlogy(s, theta) - special.xlog1py(t - s, -theta)
                     - level)

    centre = s / t
    eps = 1e-12
    lo = 0.0 if f(eps) < 0 or centre <= eps else optimize.brentq(f, eps, centre)
    hi = 1.0 if f(1 - eps) < 0 or centre >= 1 - eps else optimize.brentq(f, centre, 1 - eps)
    return float(lo), float(hi)


def _sequential_iv(
    positions: npt.ArrayLike, k: int, alpha: float, method: str,
    checkpoints: Sequence[int] | npt.ArrayLike | None,
) -> tuple[npt.NDArray[np.int64], int, float, npt.NDArray[np.int64]]:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 2:
        raise InputError(MSG_K.format(value=k))
    if not 0.0 < float(alpha) < 1.0:
        raise InputError(MSG_ALPHA.format(value=alpha))
    if method not in SEQUENTIAL_METHODS:
        raise InputError(MSG_METHOD.format(choices=SEQUENTIAL_METHODS, value=method))
    raw = np.asarray(positions)
    if raw.ndim != 1 or (raw.size and not np.issubdtype(raw.dtype, np.integer)):
        raise InputError(MSG_POSITIONS.format(value=positions))
    pos = raw.astype(np.int64)
    if pos.size and (pos.min() < 0 or pos.max() >= k):
        raise InputError(MSG_POSITIONS.format(value=positions))
    if checkpoints is None:
        checks = np.arange(1, pos.size + 1, dtype=np.int64)
    else:
        checks = np.asarray(checkpoints, dtype=np.int64).ravel()
        if checks.size and (checks.min() < 1 or checks.max() > pos.size
                            or np.any(np.diff(checks) <= 0)):
            raise InputError(MSG_CHECKPOINTS.format(n=pos.size, value=checkpoints))
    return pos, int(k), float(alpha), checks
