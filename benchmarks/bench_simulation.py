"""Wall and CPU time of the simulation grid, cell by cell.

    PYTHONPATH=src python benchmarks/bench_simulation.py [--reps 1000]

The grid: k = 5, 10, 15, 20; 50, 100, 200 and 500 queries; 20 permutations per
query; p_bias = 0, 0.05, 0.1; both tests (POB-ICM with B = 199 shuffles). Each
(k, queries) cell runs ``power_study`` for its three p_bias values with ``--reps``
replications; with fewer than 1,000 the times are also extrapolated linearly to 1,000
(the cost of a replication does not depend on the replication count).
"""

from __future__ import annotations

import argparse
import os
import time

from recaudit.positional import power_study

K = (5, 10, 15, 20)
QUERIES = (50, 100, 200, 500)
P_BIAS = (0.0, 0.05, 0.1)
REPS = 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=REPS)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f} (cpus: {os.cpu_count()})")
    power_study(k=[3], queries=[5], perms=3, p_bias=[0.5], reps=2, n_resamples=19, rng=0)  # JIT
    scale = REPS / args.reps
    total_wall = total_cpu = 0.0
    print(f"| k | queries | wall s ({args.reps} reps, 3 p_bias) | CPU s | wall s for 1,000 reps |")
    print("|---|---|---|---|---|")
    for k in K:
        for n in QUERIES:
            wall, cpu = time.perf_counter(), time.process_time()
            power_study(k=[k], queries=[n], p_bias=P_BIAS, reps=args.reps, n_resamples=199, rng=0)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            total_wall, total_cpu = total_wall + wall, total_cpu + cpu
            print(f"| {k} | {n} | {wall:.1f} | {cpu:.1f} | {wall * scale:.0f} |", flush=True)
    print(
        f"\nGrid, {args.reps} replications: wall {total_wall:.0f} s, CPU {total_cpu:.0f} s"
        f" (1,000 replications: wall {total_wall * scale:.0f} s)"
    )
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
