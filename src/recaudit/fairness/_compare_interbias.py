r"""The inter-bias (IB) rows of a paired comparison: a permutation test of whole lists
and a delete-one-user jackknife interval.

:math:`IB = \sqrt{NRD\,(1 - IC)}` mixes a per-user figure (NRD, from group means) with a
property of the whole set of lists (item coverage IC: the share of the catalog in at
least one list). Two recommenders drawn from one model have different ICs by chance,
so a test that holds IC at its observed value, or resamples users to vary it, rejects
identical models far too often (docs/validation-fairness.md, "Comparing models"). This
test permutes what the null hypothesis makes exchangeable: under "models A and B are
exchangeable per user" each user's *two lists* (not only their metric values) are
swapped with probability 1/2, and both models' IC and NRD are recomputed from the
swapped lists, so :math:`|IB_A - IB_B|` is compared with its exact permutation
distribution (+1-corrected Monte-Carlo p).

The interval (decision 0417) is for :math:`\theta_n = E[IB_A(n) - IB_B(n)]`, the two
trained models fixed and the users (each with the pair of lists the models give them)
drawn i.i.d.: the IB difference expected on an audit of ``n`` users like these (IC
grows with ``n``, so the estimand is at the audit's ``n``). :math:`D = IB_A - IB_B` on
the observed users estimates it; :func:`ib_jackknife` gives the delete-one-user
jackknife standard error of ``D`` with both models' NRD and IC recomputed without each
user (:meth:`PairCoverage.left_out`). The user bootstrap cannot stand in: a resample
with replacement holds about 63 % distinct users, and coverage, a union over users'
lists, shrinks with them.

Coverage under a swap: with the users x items incidence matrices :math:`M_A, M_B` of
the top-N lists and the swap indicators :math:`S` (permutations x users), the items
covered by A's swapped lists are the non-zero columns of
:math:`(1 - S) M_A + S M_B`, and B's of :math:`(M_A + M_B)` column sums minus it -- one
sparse product per chunk of permutations and cut-off.

References
----------
Good, P. (2005). *Permutation, Parametric, and Bootstrap Tests of Hypotheses*, 3rd ed.,
ch. 3. Efron, B. & Stein, C. (1981). The jackknife estimate of variance. *Ann. Statist.*
9(3):586-596. Chizari, Tajfar & Moreno-García (2025), *Future Internet* 17(10):461 (IB).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import sparse

from .._stats import monte_carlo_pvalue

__all__ = ["IB", "CoverageDesign", "PairCoverage", "ib_jackknife", "ib_pvalues",
           "ib_values"]

#: The row kind (``ib_ndcg@10``) and family of the IB rows.
IB = "ib"


@dataclass(frozen=True)
class CoverageDesign:
    """What the IB rows need beyond the metric design: the cut-offs and the catalog.

    Attributes
    ----------
    cuts : tuple of int
        The cut-offs N (smallest first).
    cut_of_key : ndarray of int
        For each metric key (metric-major, as the comparison's keys), its cut-off's
        index in ``cuts``.
    n_items : int
        Catalog size :math:`|I|` (every model's, so their coverages compare).
    """

    cuts: tuple[int, ...]
    cut_of_key: npt.NDArray[np.intp]
    n_items: int


def _incidence(items_a: npt.NDArray[np.int64], items_b: npt.NDArray[np.int64], cut: int
               ) -> tuple[sparse.csr_matrix, sparse.csr_matrix]:
    """The two models' users x items incidence of their top-``cut`` lists, over the items
    either model shows (``-1`` pads skipped)."""
    top_a, top_b = items_a[:, :cut], items_b[:, :cut]
    shown = np.unique(np.concatenate([top_a[top_a >= 0], top_b[top_b >= 0]]))
    n_users = items_a.shape[0]

    def matrix(top: npt.NDArray[np.int64]) -> sparse.csr_matrix:
        rows, cols = np.nonzero(top >= 0)
        col = np.searchsorted(shown, top[rows, cols])
        data = np.ones(rows.size, dtype=np.float32)
        return sparse.csr_matrix((data, (rows, col)), shape=(n_users, shown.size))

    return matrix(top_a), matrix(top_b)


def _observed(ma: sparse.csr_matrix, mb: sparse.csr_matrix, n_items: int
              ) -> tuple[float, float]:
    """IC of A's and of B's lists."""
    return (np.count_nonzero(np.asarray(ma.sum(axis=0)).ravel()) / n_items,
            np.count_nonzero(np.asarray(mb.sum(axis=0)).ravel()) / n_items)


def _swapped(ma: sparse.csr_matrix, mb: sparse.csr_matrix, total: npt.NDArray[np.float64],
             swap: npt.NDArray[np.float32], n_items: int
             ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """IC of A's and of B's lists under each row of ``swap`` (permutations x users; 1 =
    the user's two lists swapped), ``total`` the two lists' column sums (the same under
    every swap): each of shape ``(m,)``."""
    kept = (1.0 - swap).astype(np.float32)
    cover_a = np.asarray((ma.T @ kept.T + mb.T @ swap.T).T)  # m x shown items
    covered_a = np.count_nonzero(cover_a > 0.5, axis=1)
    covered_b = np.count_nonzero((total[None, :] - cover_a) > 0.5, axis=1)
    return covered_a / n_items, covered_b / n_items


def ib_values(nrd: npt.NDArray[np.float64], coverage: npt.NDArray[np.float64],
              design: CoverageDesign) -> npt.NDArray[np.float64]:
    r""":math:`\sqrt{NRD\,(1 - IC)}` per key from NRD (... x K) and IC per cut-off
    (... x cuts)."""
    return np.sqrt(nrd * (1.0 - coverage[..., design.cut_of_key]))


def ib_pvalues(diff: npt.NDArray[np.float64], null_diff: npt.NDArray[np.float64]
               ) -> npt.NDArray[np.float64]:
    """Two-sided +1-corrected p of each key's observed IB difference against its
    permutation differences (permutations x K); an undefined permuted IB counts as at
    least as extreme (conservative), an undefined observed one has p ``nan``."""
    null = np.where(np.isfinite(null_diff), np.abs(null_diff), np.inf)
    return np.array([monte_carlo_pvalue(abs(d), null[:, k]) if np.isfinite(d) else np.nan
                     for k, d in enumerate(diff)])


class PairCoverage:
    """One pair's incidence matrices per cut-off; the observed and swapped coverages."""

    def __init__(self, items_a: npt.NDArray[np.int64], items_b: npt.NDArray[np.int64],
                 design: CoverageDesign) -> None:
        self._design = design
        self._matrices = [_incidence(items_a, items_b, c) for c in design.cuts]
        self._totals = [np.asarray(ma.sum(axis=0) + mb.sum(axis=0)).ravel()
                        for ma, mb in self._matrices]  # swaps keep them: once per pair

    def observed(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """IC of A and of B at every cut-off (each of shape ``(cuts,)``)."""
        pairs = [_observed(ma, mb, self._design.n_items) for ma, mb in self._matrices]
        return (np.array([a for a, _ in pairs], dtype=np.float64),
                np.array([b for _, b in pairs], dtype=np.float64))

    def swapped(self, swap: npt.NDArray[np.float64]
                ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """IC of A and of B under each row of ``swap`` (each of shape ``(m, cuts)``)."""
        s = swap.astype(np.float32)
        pairs = [_swapped(ma, mb, total, s, self._design.n_items)
                 for (ma, mb), total in zip(self._matrices, self._totals, strict=True)]
        return (np.stack([a for a, _ in pairs], axis=1),
                np.stack([b for _, b in pairs], axis=1))

    def left_out(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        r"""IC of A and of B without each user (each of shape ``(users, cuts)``).

        Leaving user ``u`` out uncovers exactly the items no other user's list holds:
        with :math:`c_i` the number of users whose list holds item ``i``,
        :math:`IC_{(-u)} = (|\{i: c_i > 0\}| - |\{i \in L_u: c_i = 1\}|) / |I|` -- one
        sparse product per model and cut-off, O(total list length).
        """
        out_a: list[npt.NDArray[np.float64]] = []
        out_b: list[npt.NDArray[np.float64]] = []
        for ma, mb in self._matrices:
            for m, out in ((ma, out_a), (mb, out_b)):
                held = (m > 0).astype(np.float64)  # a repeated item counts once
                count = np.asarray(held.sum(axis=0)).ravel()
                only = np.asarray(held @ (count == 1).astype(np.float64)).ravel()
                out.append((np.count_nonzero(count) - only) / self._design.n_items)
        return np.stack(out_a, axis=1), np.stack(out_b, axis=1)


def _left_out_nrd(x: npt.NDArray[np.float64], is_protected: npt.NDArray[np.bool_]
                  ) -> npt.NDArray[np.float64]:
    r"""NRD without each user (users x K) from the group sums: a protected user moves
    :math:`P_{(-u)} = (S_P - x_u) / (n_P - 1)`, any other user
    :math:`U_{(-u)} = (S_U - x_u) / (n_U - 1)`; ``nan`` where a group empties or both
    means are 0."""
    n_p = int(is_protected.sum())
    n_u = x.shape[0] - n_p
    s_p, s_u = x[is_protected].sum(axis=0), x[~is_protected].sum(axis=0)
    prot = is_protected[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        pg = np.where(prot, (s_p - x) / (n_p - 1.0) if n_p > 1 else np.nan, s_p / n_p)
        ug = np.where(prot, s_u / n_u, (s_u - x) / (n_u - 1.0) if n_u > 1 else np.nan)
        pg, ug = np.maximum(pg, 0.0), np.maximum(ug, 0.0)  # rounding below 0
        total = ug + pg
        rd = np.divide(ug - pg, total, out=np.full(total.shape, np.nan), where=total > 0)
    return (rd + 1.0) / 2.0


def ib_jackknife(x_a: npt.NDArray[np.float64], x_b: npt.NDArray[np.float64],
                 is_protected: npt.NDArray[np.bool_], coverage: PairCoverage,
                 design: CoverageDesign) -> npt.NDArray[np.float64]:
    r"""Delete-one-user jackknife standard error of each key's IB difference.

    With :math:`D = IB_A - IB_B` on the ``n`` users and :math:`D_{(-u)}` the same
    difference without user ``u`` (both models' NRD from the group sums without ``u``,
    their IC without the items only ``u``'s list covers: :meth:`PairCoverage.left_out`),

    .. math:: \widehat{se}_J^2 = \frac{n - 1}{n} \sum_u \bigl(D_{(-u)} -
              \bar D_{(\cdot)}\bigr)^2, \qquad \bar D_{(\cdot)} = \frac1n \sum_u D_{(-u)},

    and the interval is :math:`D \pm t_{n-1,\,(1+c)/2}\, \widehat{se}_J`. ``D`` is a
    symmetric function of i.i.d. users (each with the two lists the models give them),
    so by the Efron-Stein inequality :math:`E[\widehat{se}_J^2]` is at least the
    variance of ``D`` on ``n - 1`` users (Efron & Stein 1981): conservative in
    expectation, up to the factor ``n / (n - 1)``. O(total list length) per pair.

    Parameters
    ----------
    x_a, x_b : ndarray, shape (n_users, K)
        Each model's per-user metric values (keys metric-major, as ``design``).
    is_protected : ndarray of bool, shape (n_users,)
        Protected-group membership (every other user pools into the unprotected group).
    coverage : PairCoverage
        The pair's lists.
    design : CoverageDesign
        The cut-off of each key.

    Returns
    -------
    ndarray, shape (K,)
        :math:`\widehat{se}_J` per key; ``nan`` with fewer than 2 users or where a
        leave-one-out IB is undefined.

    References
    ----------
    Efron, B. & Stein, C. (1981). The jackknife estimate of variance. *Ann. Statist.*
    9(3):586-596.
    """
    n = x_a.shape[0]
    if n < 2:
        return np.full(x_a.shape[1], np.nan)
    ic_a, ic_b = coverage.left_out()
    d = (ib_values(_left_out_nrd(x_a, is_protected), ic_a, design)
         - ib_values(_left_out_nrd(x_b, is_protected), ic_b, design))
    dev = d - d.mean(axis=0)
    return np.sqrt((n - 1) / n * np.sum(dev * dev, axis=0))
