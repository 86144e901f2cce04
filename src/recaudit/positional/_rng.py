"""A small random number generator for the numba kernels, seeded from a Generator.

xoshiro256** (Blackman & Vigna 2021) keeps its 256-bit state in four local
``uint64`` variables, so a kernel draws without touching memory; bounded integers
use Lemire's multiply-shift with rejection on the high 32 bits of each word, which
is exact. The state is drawn from the caller's :class:`numpy.random.Generator`, so
results are reproducible from the seed and no global state is used.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

__all__ = ["bounded", "rng_state", "uniform", "word"]

_MASK32 = np.uint64(0xFFFFFFFF)
_TWO32 = np.uint64(1 << 32)


def rng_state(gen: np.random.Generator) -> npt.NDArray[np.uint64]:
    """Four words of xoshiro256** state drawn from ``gen`` (never all zero)."""
    state = gen.integers(0, 2**64, size=4, dtype=np.uint64, endpoint=False)
    while not state.any():
        state = gen.integers(0, 2**64, size=4, dtype=np.uint64, endpoint=False)
    return state


@numba.njit(cache=True, inline="always")
def _rotl(x: np.uint64, r: int) -> np.uint64:  # pragma: no cover - compiled
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@numba.njit(cache=True, inline="always")
def word(
    s0: np.uint64, s1: np.uint64, s2: np.uint64, s3: np.uint64
) -> tuple[np.uint64, np.uint64, np.uint64, np.uint64, np.uint64]:  # pragma: no cover
    """One xoshiro256** step: the new state and a uniform 64-bit word."""
    out = _rotl(s1 * np.uint64(5), 7) * np.uint64(9)
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    return s0, s1, s2, s3, out


@numba.njit(cache=True, inline="always")
def bounded(
    s0: np.uint64, s1: np.uint64, s2: np.uint64, s3: np.uint64, bound: np.uint64
) -> tuple[np.uint64, np.uint64, np.uint64, np.uint64, np.int64]:  # pragma: no cover
    """A uniform integer in ``[0, bound)``, ``1 <= bound <= 2**32`` (Lemire 2019)."""
    while True:
        s0, s1, s2, s3, w = word(s0, s1, s2, s3)
        prod = (w >> np.uint64(32)) * bound
        low = prod & _MASK32
        if low >= bound or low >= (_TWO32 - bound) % bound:
            return s0, s1, s2, s3, np.int64(prod >> np.uint64(32))


@numba.njit(cache=True, inline="always")
def uniform(
    s0: np.uint64, s1: np.uint64, s2: np.uint64, s3: np.uint64
) -> tuple[np.uint64, np.uint64, np.uint64, np.uint64, np.float64]:  # pragma: no cover
    """A uniform double in ``[0, 1)`` from the top 53 bits of a word."""
    s0, s1, s2, s3, w = word(s0, s1, s2, s3)
    return s0, s1, s2, s3, np.float64(w >> np.uint64(11)) * (1.0 / 9007199254740992.0)
