"""Process-independent seeds: the words every per-key random stream is derived from.

The runner, the simulator, the mitigation driver and the sequential driver each derive a
:class:`numpy.random.SeedSequence` from a key (the run's seed, a query id, an order,
...); the words must be the same in every process and on every machine, which Python's
salted ``hash`` is not.
"""

from __future__ import annotations

import hashlib

__all__ = ["stable_words"]


def stable_words(*parts: object) -> list[int]:
    """32-bit words of a BLAKE2b digest of ``parts`` (a process-independent hash).

    Used to derive per-key :class:`numpy.random.SeedSequence` entropy; Python's
    ``hash`` is salted per process and cannot be used.
    """
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=16).digest()
    return [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
