from __future__ import annotations

import math

import numpy as np
import pytest

from recaudit.audit import (
    Design,
    cyclic_orders,
    design_orders,
    exhaustive_orders,
    identity_orders,
    sampled_orders,
    shared_orders,
    williams_orders,
)
from recaudit.exceptions import InputError


def _are_permutations(orders, k):
    return orders.dtype == np.int64 and (np.sort(orders, axis=1) == np.arange(1, k + 1)).all()


@pytest.mark.parametrize("k", [1, 2, 5, 10, 20])
def test_sampled_are_uniform_permutations(k):
    orders = sampled_orders(k, 4000, rng=0)
    assert orders.shape == (4000, k) and _are_permutations(orders, k)
    if k > 1:  # each item at position 1 with probability 1/k
        counts = np.bincount(orders[:, 0], minlength=k + 1)[1:]
        expected = 4000 / k
        assert ((counts - expected) ** 2 / expected).sum() < 3 * k + 30
    np.testing.assert_array_equal(orders, sampled_orders(k, 4000, rng=0))


def test_exhaustive():
    for k in range(1, 7):
        orders = exhaustive_orders(k)
        assert orders.shape == (math.factorial(k), k) and _are_permutations(orders, k)
        assert len({tuple(r) for r in orders}) == math.factorial(k)
    with pytest.raises(InputError, match=r"k=9 gives 362,880; use k <= 8"):
        exhaustive_orders(9)


@pytest.mark.parametrize("k", [2, 3, 5, 8, 10])
def test_cyclic_is_a_latin_square(k):
    orders = cyclic_orders(k)
    assert orders.shape == (k, k) and _are_permutations(orders, k)
    for p in range(k):  # every item exactly once at every position
        assert sorted(orders[:, p]) == list(range(1, k + 1))


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6, 7, 10])
def test_williams_is_carryover_balanced(k):
    orders = williams_orders(k)
    assert orders.shape == ((k if k % 2 == 0 else 2 * k), k) and _are_permutations(orders, k)
    reps = len(orders) // k
    for p in range(k):
        assert (np.bincount(orders[:, p], minlength=k + 1)[1:] == reps).all()
    pairs = np.zeros((k + 1, k + 1), int)
    for row in orders:
        for a, b in zip(row[:-1], row[1:], strict=True):
            pairs[a, b] += 1
    off = pairs[1:, 1:][~np.eye(k, dtype=bool)]
    assert (off == off[0]).all()


def test_shared_orders_are_distinct():
    orders = shared_orders(4, 24, rng=1)
    assert len({tuple(r) for r in orders}) == 24 and _are_permutations(orders, 4)
    with pytest.raises(InputError, match=r"`n` must be <= k! = 6"):
        shared_orders(3, 7, rng=1)


def test_dispatcher():
    assert design_orders("exhaustive", 3).shape == (6, 3)
    assert design_orders(Design.CYCLIC, 5, 20).shape == (20, 5)
    np.testing.assert_array_equal(design_orders("identity", 3, 2), identity_orders(3, 2))
    np.testing.assert_array_equal(
        design_orders("sampled", 5, 7, rng=3), sampled_orders(5, 7, rng=3)
    )
    assert not Design.SAMPLED.shared_across_queries and Design.SHARED.shared_across_queries
    with pytest.raises(InputError, match="must be a multiple of the cyclic design's size 5"):
        design_orders("cyclic", 5, 12)
    with pytest.raises(InputError, match="`kind` must be one of"):
        design_orders("latin", 5, 5)
    with pytest.raises(InputError, match="the sampled design needs `n`"):
        design_orders("sampled", 5)
    with pytest.raises(InputError, match=r"`k` must be an integer >= 1, got 0"):
        sampled_orders(0, 3, rng=0)
