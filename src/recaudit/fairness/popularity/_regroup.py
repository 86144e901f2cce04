r"""The user popularity groups re-cut in each bootstrap resample.

The niche / diverse / blockbuster groups (and the quantile groups) are cut at sample
quantiles of a statistic of the users' training items (:mod:`._user_groups`): which
users fall in a group depends on the sample, and a bootstrap that held the membership
at its observed value would leave that part of the variance out (the groups' profile
tail share, the statistic the niche group is cut on, covered at 0.63-0.79 so).

A resample with multinomial weights ``w`` over the evaluated users is the data set in
which user ``u`` appears ``w_u`` times (the training users outside the evaluated ones
once each). Its groups are those :func:`~recaudit.fairness.user_popularity_groups` gives
on it, derived from the resample's recounted popularity ``pop*``
(:mod:`._recount`):

- the head of ``"abdollahpouri"``: the ``ceil(20 %)`` most popular items of the
  ``n_items`` catalog, at most the items with ``pop* > 0`` (the resample's training
  items; ties to the smaller item id), or the most popular ones holding 20 % of the
  interactions (``"cumulative"``);
- each user's statistic: the share of that head among their training items, or the
  mean ``pop*`` of their training items (``"quantile"``);
- the users ranked by it, ties by ascending ``user_id`` (a user's copies sit together),
  the ``W`` slots of the ranking (``W = sum`` of the training users' weights) cut into
  groups: ``[0, k)``, ``[k, W - k)``, ``[W - k, W)`` with ``k = ceil(0.2 W)`` for
  ``"abdollahpouri"``, ``[ceil(g W / q), ceil((g + 1) W / q))`` for quantile ``g``.

A user whose ``w_u`` copies straddle a cut belongs to each group with the number of
copies on its side (an integer: a membership weight). At every weight 1 the groups are
the fixed ones (checked in the tests), so the point estimates do not change.

The cost per block of ``b`` resamples is one sparse-times-dense product of every
training user's items with the head (or ``pop*``) and a sort of ``b x users``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from ._metrics import HEAD_FRACTION
from ._user_groups import USER_SHARE, PopularityGrouping


@dataclass(frozen=True)
class _Regroup:
    """What re-cuts the groups: every training user's items and where they are evaluated.

    ``rows``: every training user (ascending ``user_id``) x item codes, 0/1 distinct
    training items; ``sizes``: their numbers of items; ``evaluated``: each training
    user's position among the evaluated users (-1: not evaluated); ``by_id``: the item
    codes in ascending item id; ``n_evaluated``: the evaluated users; ``n_items``: the
    catalog size of the ``"top_items"`` head.
    """

    grouping: PopularityGrouping
    rows: sp.csr_matrix
    sizes: npt.NDArray[np.float64]
    evaluated: npt.NDArray[np.intp]
    by_id: npt.NDArray[np.intp]
    n_evaluated: int
    n_items: int

    def memberships(
        self, weights: npt.NDArray[np.float64], popularity: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float64]:
        """``(len(labels), b, n_evaluated)``: each evaluated user's copies in each group
        under weights ``(b, n_evaluated)`` and the resamples' ``pop*`` ``(b, n_codes)``."""
        b = weights.shape[0]
        inside = self.evaluated >= 0
        w = np.ones((b, self.evaluated.size))
        w[:, inside] = weights[:, self.evaluated[inside]]
        order = np.argsort(self._statistic(popularity), axis=1, kind="stable")
        ranked = np.take_along_axis(w, order, axis=1)
        end = np.cumsum(ranked, axis=1)
        start = end - ranked
        bounds = self._bounds(np.rint(end[:, -1]))
        low, high = bounds[:, :-1].T[:, :, None], bounds[:, 1:].T[:, :, None]
        copies = np.clip(np.minimum(end, high) - np.maximum(start, low), 0.0, None)
        out = np.empty_like(copies)
        np.put_along_axis(out, np.broadcast_to(order, copies.shape), copies, axis=2)
        member = np.zeros((copies.shape[0], b, self.n_evaluated))
        member[:, :, self.evaluated[inside]] = out[:, :, inside]
        return member

    def _statistic(self, popularity: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """``(b, training users)``: the head share (or mean ``pop*``) of each user's items."""
        vector = (popularity if self.grouping.method == "quantile"
                  else self._head(popularity))
        return np.asarray(self.rows @ vector.T).T / self.sizes

    def _head(self, popularity: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """``1[i in H*]`` ``(b, n_codes)``: the grouping's head of each resample."""
        ranked = np.argsort(-popularity[:, self.by_id], axis=1, kind="stable")
        ordered = np.take_along_axis(popularity[:, self.by_id], ranked, axis=1)
        if self.grouping.item_head == "top_items":
            present = (popularity > 0).sum(axis=1)
            size = np.minimum(np.ceil(HEAD_FRACTION * self.n_items), present)
        else:
            cum = np.cumsum(ordered, axis=1)
            total = cum[:, -1:]
            size = (cum < USER_SHARE * total - 1e-9 * total).sum(axis=1) + 1
        head = np.zeros_like(popularity)
        chosen = np.arange(popularity.shape[1])[None, :] < size[:, None]
        np.put_along_axis(head, self.by_id[ranked], chosen.astype(np.float64), axis=1)
        return head

    def _bounds(self, total: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """``(b, len(labels) + 1)``: the slots where each group starts (and the last ends)."""
        if self.grouping.method == "quantile":
            q = self.grouping.q
            return np.stack([-(-g * total // q) for g in range(q + 1)], axis=1)
        k = np.ceil(USER_SHARE * total)
        # fewer than 3 users: blockbuster wins an overlap (as user_popularity_groups)
        return np.stack([np.zeros_like(total), np.minimum(k, total - k), total - k, total],
                        axis=1)


def _regroup(
    grouping: PopularityGrouping, train_users: npt.NDArray[np.int64],
    train_items: npt.NDArray[np.int64], n_train_users: int, n_codes: int,
    evaluated: npt.NDArray[np.intp], by_id: npt.NDArray[np.intp], n_evaluated: int,
    n_items: int,
) -> _Regroup:
    """The :class:`_Regroup` of the training pairs ``(train_users, train_items)`` (users
    coded in ascending ``user_id``, items by catalog code)."""
    width = max(n_codes, 1)
    keys = np.unique(train_users * width + train_items)
    rows = sp.csr_matrix((np.ones(keys.size), (keys // width, keys % width)),
                         shape=(n_train_users, n_codes))
    sizes = np.diff(rows.indptr).astype(np.float64)
    return _Regroup(grouping, rows, sizes, evaluated, by_id, n_evaluated, n_items)
