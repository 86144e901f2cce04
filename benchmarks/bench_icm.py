"""POB-ICM calibration: vectorised (numba) within-query shuffles vs the naive loop.

    PYTHONPATH=src python benchmarks/bench_icm.py [--naive 300] [--k 5 10]

2,000 queries x 20 evaluations, B = 9,999 within-query shuffles. The naive reference
shuffles the labels within each query (one vectorised ``Generator.permuted`` call),
builds the table and calls ``scipy.stats.chi2_contingency`` per resample; it runs for
``--naive`` resamples and its per-resample time is extrapolated to B. Both run in
this process; the ratio is what the README reports.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from scipy import stats

from recaudit.positional import pob_icm, simulate_evaluations
from recaudit.positional._icm import _permutation_labels

N_QUERIES, N_PERMS, B = 2000, 20, 9999


def naive_per_resample(ev, n: int, rng: np.random.Generator, loop: bool) -> float:  # type: ignore[no-untyped-def]
    """Seconds per resample; ``loop`` shuffles query by query in Python."""
    labels, n_labels = _permutation_labels(ev.orders)
    block = labels.reshape(N_QUERIES, N_PERMS)  # simulated rows are grouped by query
    start = time.perf_counter()
    for _ in range(n):
        if loop:
            shuffled = np.concatenate([rng.permutation(row) for row in block])
        else:
            shuffled = rng.permuted(block, axis=1).ravel()
        table = np.bincount(ev.item * n_labels + shuffled, minlength=ev.k * n_labels)
        table = table.reshape(ev.k, n_labels)
        table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
        stats.chi2_contingency(table, correction=False)
    return (time.perf_counter() - start) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--naive", type=int, default=300, help="naive resamples to time")
    parser.add_argument("--k", type=int, nargs="+", default=[5, 10])
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f} (cpus: {os.cpu_count()})")
    rng = np.random.default_rng(0)
    pob_icm(simulate_evaluations(5, k=3, n_perms=3, rng=0), n_resamples=2, rng=0)  # JIT warm-up
    print(
        "| k | ours, B = 9,999 (s) | naive, vectorised shuffle: ms/resample, extrapolated s,"
        " ratio | naive, per-query loop: ms/resample, extrapolated s, ratio |"
    )
    print("|---|---|---|---|")
    for k in args.k:
        ev = simulate_evaluations(N_QUERIES, k=k, n_perms=N_PERMS, p_bias=0.0, rng=rng)
        start = time.perf_counter()
        pob_icm(ev, n_resamples=B, rng=rng)
        ours = time.perf_counter() - start
        cells = []
        for loop in (False, True):
            naive = naive_per_resample(ev, args.naive, rng, loop)
            cells.append(f"{1000 * naive:.2f} ms, {naive * B:.0f} s, {naive * B / ours:.1f}x")
        print(f"| {k} | {ours:.2f} | " + " | ".join(cells) + " |", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
