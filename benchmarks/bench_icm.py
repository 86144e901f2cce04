"""POB-ICM calibration: the numba kernel vs the naive loop, in one process.

    PYTHONPATH=src python benchmarks/bench_icm.py [--naive 150] [--k 5 10] [--repeat 3]

2,000 queries x 20 evaluations (spec section 8 null model), B = 9,999 within-query
shuffles. The naive reference shuffles the labels within each query -- either one
vectorised ``Generator.permuted`` call or a Python loop of ``rng.permutation`` per
query -- builds the table and calls ``scipy.stats.chi2_contingency`` per resample; it
runs for ``--naive`` resamples and its per-resample time is extrapolated to B. Wall
and CPU (``time.process_time``) times are both reported, with the load average: the
machine is shared. ``pob_icm`` runs ``--repeat`` times with one thread and as many
with ``n_jobs=2``; the best run of each is reported, ratios use the one-thread run.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from scipy import stats

from recaudit.positional import Evaluations, pob_icm, simulate_evaluations
from recaudit.positional._icm import _permutation_labels

N_QUERIES, N_PERMS, B = 2000, 20, 9999


def naive_per_resample(
    ev: Evaluations, n: int, rng: np.random.Generator, loop: bool
) -> tuple[float, float]:
    """(wall, CPU) seconds per resample; ``loop`` shuffles query by query in Python."""
    labels, n_labels = _permutation_labels(ev.orders)
    block = labels.reshape(N_QUERIES, N_PERMS)  # simulated rows are grouped by query
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        if loop:
            shuffled = np.concatenate([rng.permutation(row) for row in block])
        else:
            shuffled = rng.permuted(block, axis=1).ravel()
        table = np.bincount(ev.item * n_labels + shuffled, minlength=ev.k * n_labels)
        table = table.reshape(ev.k, n_labels)
        table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
        stats.chi2_contingency(table, correction=False)
    return (time.perf_counter() - wall) / n, (time.process_time() - cpu) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--naive", type=int, default=150, help="naive resamples to time")
    parser.add_argument("--k", type=int, nargs="+", default=[5, 10])
    parser.add_argument("--repeat", type=int, default=3, help="runs of pob_icm per k")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f} (cpus: {os.cpu_count()})")
    rng = np.random.default_rng(0)
    pob_icm(simulate_evaluations(5, k=3, n_perms=3, rng=0), n_resamples=2, rng=0)  # JIT warm-up
    print(
        "| k | ours, B = 9,999: wall s (CPU s); wall with n_jobs=2 | naive, vectorised"
        " shuffle: ms/resample wall (CPU), extrapolated wall s, ratio wall (CPU) |"
        " naive, per-query loop: same |"
    )
    print("|---|---|---|---|")
    for k in args.k:
        ev = simulate_evaluations(N_QUERIES, k=k, n_perms=N_PERMS, p_bias=0.0, rng=rng)
        runs = []
        for _ in range(args.repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            pob_icm(ev, n_resamples=B, rng=rng)
            runs.append((time.perf_counter() - wall, time.process_time() - cpu))
        ours_wall, ours_cpu = min(r[0] for r in runs), min(r[1] for r in runs)
        two = []
        for _ in range(args.repeat):
            wall = time.perf_counter()
            pob_icm(ev, n_resamples=B, rng=rng, n_jobs=2)
            two.append(time.perf_counter() - wall)
        cells = []
        for loop in (False, True):
            wall, cpu = naive_per_resample(ev, args.naive, rng, loop)
            cells.append(
                f"{1000 * wall:.2f} ms ({1000 * cpu:.2f}), {wall * B:.0f} s,"
                f" {wall * B / ours_wall:.0f}x ({cpu * B / ours_cpu:.0f}x)"
            )
        ours = f"{ours_wall:.2f} ({ours_cpu:.2f}); {min(two):.2f}"
        print(f"| {k} | {ours} | " + " | ".join(cells) + " |", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
