"""Permutation designs: which candidate orders a query is evaluated under.

Every design returns an ``int64`` array of shape ``(n, k)``; row ``r`` is one order,
``orders[r, p-1]`` is the ORIGINAL index (1-based) shown at prompt position ``p``.
In the spec's notation a row is ``sigma^{-1}`` written out over positions.

Per-query designs are drawn or built again for every query (the runner calls
:func:`design_orders` once per query with a shared generator); the ``shared`` design
draws ONE set of orders that every query reuses, so the columns of POB-ICM's
contingency matrix repeat across queries even for large k.
"""

from __future__ import annotations

import itertools
import math
from enum import StrEnum

import numpy as np
import numpy.typing as npt

from .._stats import as_generator
from ..exceptions import InputError

__all__ = [
    "Design",
    "cyclic_orders",
    "design_orders",
    "exhaustive_orders",
    "expected_repeated",
    "identity_orders",
    "pob_icm_design_notes",
    "sampled_orders",
    "shared_orders",
    "williams_orders",
]

MSG_ICM_BLIND = (
    "k = {k} with sampled orders: of the {n:,} evaluations of a cell only ~{rep:.2g} are "
    "expected to share their order with another, so POB-ICM will almost surely have no "
    "power there (p = 1 by construction when no order repeats); POB-UNBP is "
    "unaffected. For POB-ICM use [design] kind = \"shared\" "
    "(docs/positional-statistics.md, \"When POB-ICM cannot see bias\")"
)

#: Largest k for an exhaustive design (8! = 40,320 orders).
MAX_EXHAUSTIVE_K = 8

MSG_K = "`k` must be an integer >= 1, got {k!r}"
MSG_N = "`n` must be an integer >= 1, got {n!r}"
MSG_EXHAUSTIVE = (
    "an exhaustive design needs k! orders: k={k} gives {count:,}; use k <= "
    f"{MAX_EXHAUSTIVE_K} or a sampled design"
)
MSG_SHARED = "`n` must be <= k! = {count} to draw {n} distinct shared orders for k={k}"
MSG_KIND = "`kind` must be one of {kinds}, got {kind!r}"
MSG_REPLICATES = (
    "`n` must be a multiple of the {kind} design's size {size} for k={k} (or None for one "
    "replicate), got {n}"
)
MSG_N_REQUIRED = "the {kind} design needs `n`, the number of orders"

Orders = npt.NDArray[np.int64]


class Design(StrEnum):
    """Names of the permutation designs (recorded with every evaluation)."""

    SAMPLED = "sampled"
    """Uniform random orders, drawn with replacement, per query (the paper's)."""
    SHARED = "shared"
    """``n`` distinct uniform orders drawn once and reused by every query."""
    EXHAUSTIVE = "exhaustive"
    """All k! orders, per query (k <= 8)."""
    CYCLIC = "cyclic"
    """The k cyclic shifts of the identity (a Latin square)."""
    WILLIAMS = "williams"
    """Williams' carry-over balanced Latin square (k rows for even k, 2k for odd)."""
    IDENTITY = "identity"
    """The retrieval order, repeated (decoding-only condition)."""

    @property
    def shared_across_queries(self) -> bool:
        """Whether one set of orders serves every query (deterministic or ``shared``)."""
        return self is not Design.SAMPLED


def _check_int(value: object, minimum: int, message: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise InputError(message.format(**{name: value}))
    return int(value)


def sampled_orders(k: int, n: int, *, rng: np.random.Generator | int | None) -> Orders:
    """``n`` orders drawn uniformly from S_k, independently (with replacement).

    Examples
    --------
    >>> sampled_orders(3, 2, rng=0).shape
    (2, 3)
    """
    k, n, gen = _sampled_orders_iv(k, n, rng)
    return (np.argsort(gen.random((n, k)), axis=1) + 1).astype(np.int64)


def _sampled_orders_iv(
    k: int, n: int, rng: np.random.Generator | int | None
) -> tuple[int, int, np.random.Generator]:
    return _check_int(k, 1, MSG_K, "k"), _check_int(n, 1, MSG_N, "n"), as_generator(rng)


def shared_orders(k: int, n: int, *, rng: np.random.Generator | int | None) -> Orders:
    """``n`` DISTINCT uniform orders, drawn once to be shared by every query.

    The draw is uniform over the n-subsets of S_k (in random row order). Using the
    same orders for all queries makes POB-ICM's permutation columns repeat across
    queries, which the per-query sampled design rarely achieves for k >= 8.
    """
    k, n, gen = _shared_orders_iv(k, n, rng)
    rows: dict[tuple[int, ...], None] = {}
    while len(rows) < n:
        for row in np.argsort(gen.random((n - len(rows), k)), axis=1) + 1:
            rows.setdefault(tuple(row.tolist()), None)
    return np.array(list(rows), dtype=np.int64).reshape(n, k)


def _shared_orders_iv(
    k: int, n: int, rng: np.random.Generator | int | None
) -> tuple[int, int, np.random.Generator]:
    k, n, gen = _sampled_orders_iv(k, n, rng)
    if k <= 20 and n > math.factorial(k):
        raise InputError(MSG_SHARED.format(count=math.factorial(k), n=n, k=k))
    return k, n, gen


def exhaustive_orders(k: int) -> Orders:
    """All k! orders in lexicographic order (refused for k > 8).

    Examples
    --------
    >>> exhaustive_orders(3)[:2].tolist()
    [[1, 2, 3], [1, 3, 2]]
    """
    k = _exhaustive_orders_iv(k)
    return np.array(list(itertools.permutations(range(1, k + 1))), dtype=np.int64).reshape(-1, k)


def _exhaustive_orders_iv(k: int) -> int:
    k = _check_int(k, 1, MSG_K, "k")
    if k > MAX_EXHAUSTIVE_K:
        raise InputError(MSG_EXHAUSTIVE.format(k=k, count=math.factorial(min(k, 20))))
    return k


def cyclic_orders(k: int) -> Orders:
    """The k cyclic shifts of ``1..k``: row r shows original index ``(p + r) mod k``.

    A Latin square: every original index appears exactly once at every position.
    """
    k = _cyclic_orders_iv(k)
    p = np.arange(k)
    return ((p[None, :] + p[:, None]) % k + 1).astype(np.int64)


def _cyclic_orders_iv(k: int) -> int:
    return _check_int(k, 1, MSG_K, "k")


def williams_orders(k: int) -> Orders:
    """Williams' (1949) balanced Latin square.

    First row ``1, 2, k, 3, k-1, ...``, then its cyclic shifts. For even k the k rows
    are balanced for first-order carry-over (every item immediately precedes every
    other item exactly once); for odd k the k shifts are followed by their
    mirror images (2k rows), which restores the balance.
    """
    k = _williams_orders_iv(k)
    first = [0]
    lo, hi = 1, k - 1
    for j in range(1, k):
        if j % 2:
            first.append(lo)
            lo += 1
        else:
            first.append(hi)
            hi -= 1
    base = np.array(first)
    rows = (base[None, :] + np.arange(k)[:, None]) % k + 1
    if k % 2:
        rows = np.vstack([rows, rows[:, ::-1]])
    return rows.astype(np.int64)


def _williams_orders_iv(k: int) -> int:
    return _check_int(k, 1, MSG_K, "k")


def identity_orders(k: int, n: int) -> Orders:
    """``n`` copies of the retrieval order ``1..k`` (decoding noise only)."""
    k, n = _identity_orders_iv(k, n)
    return np.tile(np.arange(1, k + 1, dtype=np.int64), (n, 1))


def _identity_orders_iv(k: int, n: int) -> tuple[int, int]:
    return _check_int(k, 1, MSG_K, "k"), _check_int(n, 1, MSG_N, "n")


def design_orders(
    kind: Design | str,
    k: int,
    n: int | None = None,
    *,
    rng: np.random.Generator | int | None = None,
) -> Orders:
    """Orders of a design, by name.

    Parameters
    ----------
    kind : Design or str
        ``"sampled"``, ``"shared"``, ``"identity"`` (``n`` required) or
        ``"exhaustive"``, ``"cyclic"``, ``"williams"`` (fixed size; ``n`` = None for
        one replicate or a multiple of the size for that many replicates).
    k : int
        Number of candidates.
    n : int, optional
        Number of orders.
    rng : numpy.random.Generator, int or None
        For the random designs.

    Returns
    -------
    numpy.ndarray of int64, shape (n, k)
        Original indices (1-based) at positions 1..k.
    """
    design, k, n = _design_orders_iv(kind, k, n)
    if n is not None:
        if design is Design.SAMPLED:
            return sampled_orders(k, n, rng=rng)
        if design is Design.SHARED:
            return shared_orders(k, n, rng=rng)
        if design is Design.IDENTITY:
            return identity_orders(k, n)
    fixed = {
        Design.EXHAUSTIVE: exhaustive_orders,
        Design.CYCLIC: cyclic_orders,
        Design.WILLIAMS: williams_orders,
    }[design](k)
    if n is None:
        return fixed
    if n % len(fixed):
        raise InputError(MSG_REPLICATES.format(kind=design.value, size=len(fixed), k=k, n=n))
    return np.tile(fixed, (n // len(fixed), 1))


def _design_orders_iv(kind: Design | str, k: int, n: int | None) -> tuple[Design, int, int | None]:
    try:
        design = Design(kind)
    except ValueError as exc:
        kinds = ", ".join(repr(d.value) for d in Design)
        raise InputError(MSG_KIND.format(kinds=kinds, kind=kind)) from exc
    k = _check_int(k, 1, MSG_K, "k")
    if n is None:
        if design in (Design.SAMPLED, Design.SHARED, Design.IDENTITY):
            raise InputError(MSG_N_REQUIRED.format(kind=design.value))
        return design, k, None
    return design, k, _check_int(n, 1, MSG_N, "n")


def expected_repeated(k: int, n: int) -> float:
    r"""Expected number of ``n`` orders, drawn uniformly with replacement from the
    ``k!`` orders, whose order is drawn at least twice.

    .. math:: E = n \left(1 - (1 - 1/k!)^{n-1}\right)

    (each draw is repeated unless the other ``n - 1`` all miss its order). These are
    the evaluations in POB-ICM's repeated columns; with ``E < 1`` the test has no power.
    """
    m = math.factorial(k)
    if m == 1:
        return float(n) if n > 1 else 0.0
    return n * -math.expm1((n - 1) * math.log1p(-1.0 / m))


def pob_icm_design_notes(k_values: tuple[int, ...] | list[int], *, kind: str,
                         n_queries: int | None, n_perms: int | None,
                         samples_per_order: int) -> list[str]:
    """Warnings, before a run, for the k values at which a ``sampled`` design leaves
    POB-ICM without repeated columns (:func:`expected_repeated` < 1 per cell of
    ``n_queries x n_perms`` evaluations). Other designs repeat their orders by
    construction, and ``samples_per_order >= 2`` repeats every order; the number of
    queries of a query file is unknown here (no note)."""
    if kind != "sampled" or samples_per_order >= 2 or not n_queries or not n_perms:
        return []
    n = n_queries * n_perms
    return [MSG_ICM_BLIND.format(k=k, n=n, rep=rep) for k in k_values
            if (rep := expected_repeated(k, n)) < 1]
