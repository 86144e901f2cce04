"""Wall time of the full simulation grid, measured on a fraction and extrapolated.

    PYTHONPATH=src python benchmarks/bench_simulation.py [--reps 3]

The grid: k = 5, 10, 15, 20; 50, 100, 200 and 500 queries; 20 permutations per
query; p_bias = 0, 0.05, 0.1; both tests (POB-ICM with B = 199 shuffles); 1,000
replications per point. Running it all takes hours on a shared 2-core machine, so this
script runs ``--reps`` replications of every grid point, reports the measured time
per replication of each (k, queries) cell and extrapolates linearly to 1,000 (the cost
of a replication does not depend on the replication count).
"""

from __future__ import annotations

import argparse
import os
import time

from recaudit.positional import pob_icm, power_study, simulate_evaluations

K = (5, 10, 15, 20)
QUERIES = (50, 100, 200, 500)
P_BIAS = (0.0, 0.05, 0.1)
REPS = 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f} (cpus: {os.cpu_count()})")
    pob_icm(simulate_evaluations(5, k=3, n_perms=3, rng=0), n_resamples=2, rng=0)  # JIT warm-up
    total = 0.0
    print("| k | queries | s per replication (3 p_bias, both tests) | extrapolated to 1,000 (s) |")
    print("|---|---|---|---|")
    for k in K:
        for n in QUERIES:
            start = time.perf_counter()
            power_study(k=[k], queries=[n], p_bias=P_BIAS, reps=args.reps, n_resamples=199, rng=0)
            per_rep = (time.perf_counter() - start) / args.reps
            total += per_rep * REPS
            print(f"| {k} | {n} | {per_rep:.3f} | {per_rep * REPS:.0f} |", flush=True)
    print(f"\nFull grid, 1,000 replications, extrapolated: {total:.0f} s = {total / 3600:.2f} h")


if __name__ == "__main__":
    main()
