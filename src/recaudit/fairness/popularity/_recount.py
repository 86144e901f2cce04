r"""The popularity section's bootstrap replicates, with popularity recounted per resample.

An item's popularity is a count over the same users the bootstrap resamples, so a
replicate that held it at its observed value would see only part of the variance of a
figure built on it (the profile popularity, a mean over users of counts of the same
users, about half). Each resample with multinomial user weights ``w`` recounts it:
``pop*_i = sum_u w_u 1[i in R_u]`` over the evaluated users plus the fixed count of the
training users outside them (they are not resampled), and everything the point estimate
derives from popularity is derived again from ``pop*``: ARP and the profile popularity,
the head (the ``ceil(20 %)`` most popular items by ``pop*``, ties to the smaller item id,
as :func:`~recaudit.fairness.popularity._metrics.head_items`) and novelty's self-information
``log2(N* / max(pop*_i, 1))`` with ``N*`` the resample's training users. A replicate so
made is the statistic of the resampled data set; it repeats the O(1/n) bias of a head
chosen on the sample, which the basic interval of the head-based figures takes off
(:data:`~recaudit.fairness.popularity._result.CI_RULE`, docs/decisions/0195).

Every figure is a weighted sum over users of item rows: with ``S`` a users x items
matrix (e.g. ``1/|L_u@N|`` at each listed item), ``sum_u w_u sum_i S_ui v_i =
sum_u w_u (S v)_u`` for any item vector ``v`` of the resample (``pop*``, self-information,
``1[i in H*]``). The profile popularity of a user's ``w_u`` copies counts, among the
holders of each of its items, the user itself once, not ``w_u`` times:
``sum_u w_u ((S pop*)_u - (w_u - 1))`` over the users with a training item. A user's
clones hold every one of its items, co-holders no user of the sample has; counted, they
raised every replicate by about ``E[w (w - 1)] / E[w] = 1`` (0.6-0.8 measured at
300-1,000 users) where the sample has no such term, and both the percentile and the basic
interval then carried that shift (decision 200). The rows of every kind are stacked
vertically, so a block of ``b`` resamples costs one sparse-times-dense product
``S (v_1 .. v_b)`` per item vector (``O(nnz b)``, no dense item axis: the catalog's size
does not enter) and a contraction with the weights. :meth:`_Recount.statistics` with
every weight 1 is the point estimate (PopRSP and PopREO as the signed ``d`` whose
absolute value they are).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from ._metrics import _signed_parity_of_sums

#: Item rows per cut-off: ``1/|L_u@N|`` per listed slot, 1 per listed slot, 1 per hit.
_PER_CUT = 3
#: Item rows after the cut-offs: training items, training items / |R_u|, test items,
#: test items / |T_u|.
_TRAIN, _TRAIN_SHARE, _TEST, _TEST_SHARE = range(4)
#: Largest number of dense entries of one block's ``S (v_1 .. v_b)`` (resamples are split
#: into blocks to fit).
_BLOCK_ENTRIES = 4_000_000


@dataclass(frozen=True)
class _TrainingSide:
    """What every subset shares: the fixed part of the counts and the head rule.

    ``fixed_popularity``/``fixed_users``: the training users outside the evaluated ones
    (their item counts, their number); ``by_id``: the item codes in ascending item id
    (the head's tie rule); ``n_head``: the head's size.
    """

    fixed_popularity: npt.NDArray[np.float64]
    fixed_users: float
    by_id: npt.NDArray[np.intp]
    n_head: int
    n_items: int

    def head(self, popularity: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """``1[i in H]`` of each row of ``popularity`` ``(b, n_codes)``: its ``n_head``
        largest entries, ties to the smaller item id (the rule of
        :func:`~recaudit.fairness.popularity._metrics.head_items`)."""
        ranked = np.argsort(-popularity[:, self.by_id], axis=1, kind="stable")
        out = np.zeros_like(popularity)
        np.put_along_axis(out, self.by_id[ranked[:, : self.n_head]], 1.0, axis=1)
        return out


@dataclass(frozen=True)
class _Resample:
    """The item vectors of a block of resamples, ``(b, n_codes)`` each, their per-user
    products ``per_user[v, k, u, b] = sum_i S^k_ui v_bi`` (``v`` = popularity,
    self-information, head; ``k`` the kind of row; ``u`` every evaluated user) and the
    resamples' weights ``(b, users)``."""

    popularity: npt.NDArray[np.float64]
    information: npt.NDArray[np.float64]
    head: npt.NDArray[np.float64]
    per_user: npt.NDArray[np.float64]
    weights: npt.NDArray[np.float64]


def _incidence(
    users: npt.NDArray[np.int64], items: npt.NDArray[np.int64], n_users: int, n_codes: int
) -> sp.csr_matrix:
    """Distinct ``(user, item)`` pairs as a 0/1 users x items matrix (negative codes skipped)."""
    keep = (users >= 0) & (items >= 0)
    width = max(n_codes, 1)
    keys = np.unique(users[keep] * width + items[keep])
    return sp.csr_matrix((np.ones(keys.size), (keys // width, keys % width)),
                         shape=(n_users, n_codes))


def _row_scaled(m: sp.csr_matrix) -> tuple[sp.csr_matrix, npt.NDArray[np.float64]]:
    """``m`` with each row divided by its sum (empty rows stay empty), and the 0/1 row flags."""
    sums = np.asarray(m.sum(axis=1)).ravel()
    scale = np.divide(1.0, sums, out=np.zeros_like(sums), where=sums > 0)
    return sp.csr_matrix(sp.diags(scale) @ m), (sums > 0).astype(np.float64)


def _list_rows(
    items: npt.NDArray[np.int64], hits: npt.NDArray[np.bool_], ns: tuple[int, ...],
    n_codes: int,
) -> tuple[list[sp.csr_matrix], npt.NDArray[np.float64]]:
    """Per cut-off the three list rows (:data:`_PER_CUT`), and ``(users, len(ns))`` flags
    of a non-empty list (ARP's and novelty's defined users)."""
    n_users = items.shape[0]
    rows: list[sp.csr_matrix] = []
    flags = []
    for cut in ns:
        m = items[:, :cut]
        listed = m >= 0
        u = np.broadcast_to(np.arange(n_users)[:, None], m.shape)[listed]
        slots = sp.csr_matrix((np.ones(u.size), (u, m[listed])), shape=(n_users, n_codes))
        hit = listed & hits[:, :cut]
        uh = np.broadcast_to(np.arange(n_users)[:, None], m.shape)[hit]
        hit_rows = sp.csr_matrix((np.ones(uh.size), (uh, m[hit])), shape=(n_users, n_codes))
        length = listed.sum(axis=1).astype(np.float64)
        scale = np.divide(1.0, length, out=np.zeros_like(length), where=length > 0)
        rows += [sp.csr_matrix(sp.diags(scale) @ slots), slots, hit_rows]
        flags.append(length > 0)
    return rows, np.column_stack(flags).astype(np.float64)


@dataclass(frozen=True)
class _Recount:
    """Per-user item rows of one set of users and the shared training side (internal).

    ``rows``: ``(n_blocks * users) x n_codes``, row ``k * users + u`` holding user ``u``'s
    row of kind ``k``: the :data:`_PER_CUT` list rows of every cut-off then the four
    training/test rows; ``defined``: users x ``(len(ns) + 2)`` 0/1 flags (non-empty list
    at each cut-off, a training item, a test item); ``train_rows``: users x ``n_codes``,
    the evaluated users' distinct training items; ``row_sums``: ``(n_kinds, users)``, the
    sum of each row.
    """

    rows: sp.csr_matrix
    defined: npt.NDArray[np.float64]
    train_rows: sp.csr_matrix
    row_sums: npt.NDArray[np.float64]
    ns: tuple[int, ...]
    side: _TrainingSide

    @classmethod
    def of(
        cls, items: npt.NDArray[np.int64], hits: npt.NDArray[np.bool_], ns: tuple[int, ...],
        train: sp.csr_matrix, test: sp.csr_matrix, side: _TrainingSide,
    ) -> _Recount:
        """The rows of the evaluated users: lists (codes, hits) and their train/test items."""
        lists, listed = _list_rows(items, hits, ns, train.shape[1])
        train_share, has_train = _row_scaled(train)
        test_share, has_test = _row_scaled(test)
        rows = sp.vstack([*lists, train, train_share, test, test_share], format="csr")
        defined = np.column_stack([listed, has_train, has_test])
        sums = np.asarray(rows.sum(axis=1)).reshape(-1, train.shape[0])
        return cls(rows, defined, train, sums, ns, side)

    @property
    def n_codes(self) -> int:
        """Item codes (columns of the rows)."""
        return int(self.train_rows.shape[1])

    @property
    def n_users(self) -> int:
        """Users whose rows these are."""
        return int(self.train_rows.shape[0])

    @property
    def n_kinds(self) -> int:
        """Kinds of row per user (the vertical blocks of ``rows``)."""
        return _PER_CUT * len(self.ns) + 4

    def block_size(self) -> int:
        """Resamples per block so that one block's dense products stay small."""
        return max(1, _BLOCK_ENTRIES // max(3 * self.rows.shape[0], 1))

    def resample(self, weights: npt.NDArray[np.float64]) -> _Resample:
        """``pop*``, self-information and head of each resample (every user's weights
        ``(b, users)``, this object holding every evaluated user), and their products with
        every user's rows."""
        side = self.side
        pop = np.asarray(self.train_rows.T @ weights.T).T + side.fixed_popularity
        n_train = weights @ self.defined[:, len(self.ns)] + side.fixed_users
        information = np.log2(n_train[:, None] / np.maximum(pop, 1.0))
        head = side.head(pop)
        per_user = np.stack([self._per_user(v) for v in (pop, information, head)])
        return _Resample(pop, information, head, per_user, weights)

    def _per_user(self, vectors: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """``(n_kinds, users, b)``: ``sum_i S^k_ui v_bi`` for item vectors ``(b, n_codes)``."""
        return np.asarray(self.rows @ vectors.T).reshape(self.n_kinds, self.n_users, -1)

    def statistics(
        self, weights: npt.NDArray[np.float64], items: _Resample,
        users: npt.NDArray[np.intp] | None = None,
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Every metric (``(b, len(POPULARITY_METRICS) * len(ns))``, metric-major;
        PopRSP and PopREO as the signed ``d`` of :func:`_signed_parity_of_sums`) and
        the profile figures (``(b, 3)``) of the users ``users`` (default: all) under
        ``weights`` ``(b, len(users))`` and the resamples ``items`` (:meth:`resample`)."""
        idx: slice | npt.NDArray[np.intp] = slice(None) if users is None else users
        n_cuts = len(self.ns)
        by_pop, by_info, by_head = (
            np.einsum("kub,bu->bk", items.per_user[v][:, idx], weights) for v in range(3))
        by_tail = weights @ self.row_sums[:, idx].T - by_head
        defined = weights @ self.defined[idx]
        total = weights.sum(axis=1)[:, None]
        cut = _PER_CUT * np.arange(n_cuts)
        base = _PER_CUT * n_cuts
        tail_rec = by_tail[:, cut + 1]
        n_head = float(self.side.n_head)
        rsp = np.column_stack([
            np.stack([by_head[:, cut + 1], tail_rec], axis=-1).reshape(-1, 2 * n_cuts),
            n_head * total - by_head[:, [base + _TRAIN]],
            (self.side.n_items - n_head) * total - by_tail[:, [base + _TRAIN]],
        ])
        reo = np.column_stack([
            np.stack([by_head[:, cut + 2], by_tail[:, cut + 2]], axis=-1).reshape(-1, 2 * n_cuts),
            by_head[:, [base + _TEST]], by_tail[:, [base + _TEST]],
        ])
        # a user's own copies beyond the first are not other users holding its items
        clones = (weights * (items.weights[:, idx] - 1.0)) @ self.defined[idx, n_cuts]
        with np.errstate(divide="ignore", invalid="ignore"):
            metrics = np.hstack([
                by_pop[:, cut] / defined[:, :n_cuts],
                tail_rec / np.asarray(self.ns, dtype=np.float64) / total,
                tail_rec / total,
                _signed_parity_of_sums(rsp, n_cuts),
                _signed_parity_of_sums(reo, n_cuts),
                by_info[:, cut] / defined[:, :n_cuts],
            ])
            profile = np.column_stack([
                (by_pop[:, base + _TRAIN_SHARE] - clones) / defined[:, n_cuts],
                by_tail[:, base + _TRAIN_SHARE] / defined[:, n_cuts],
                by_tail[:, base + _TEST_SHARE] / defined[:, n_cuts + 1],
            ])
        return metrics, profile
