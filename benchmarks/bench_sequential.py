"""Speed of the sequential e-process kernel vs a plain-Python loop (same process).

    PYTHONPATH=src python benchmarks/bench_sequential.py
"""

from __future__ import annotations

import time

import numpy as np

from recaudit.positional._sequential import log_e_values


def python_loop(pos: np.ndarray, k: int, shrink: float = 50.0, cap: float = 0.6) -> float:
    counts, log_e = [0] * k, 0.0
    for t, p in enumerate(pos.tolist()):
        if t:
            best = max(range(k), key=lambda q: (counts[q], -q))
            b = min(max((counts[best] - t / k) / (t * (1 - 1 / k) + shrink), 0.0), cap)
            log_e += np.log1p(b * (k - 1)) if p == best else np.log1p(-b)
        counts[p] += 1
    return log_e


def main() -> None:
    rng = np.random.default_rng(0)
    k, reps, n = 10, 200, 4000
    pos = rng.integers(0, k, (reps, n))
    log_e_values(pos[:1, :10], k, method="favoured")  # compile
    t0 = time.perf_counter()
    fast = log_e_values(pos, k, method="favoured")[:, -1]
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    slow = [python_loop(pos[r], k) for r in range(20)]
    t_slow = (time.perf_counter() - t0) * reps / 20
    assert np.allclose(fast[:20], slow)
    print(f"{reps} paths x {n} evaluations, k = {k}: numba {t_fast:.3f} s, "
          f"Python loop {t_slow:.1f} s (extrapolated from 20 paths), ratio {t_slow / t_fast:.0f}x")


if __name__ == "__main__":
    main()
