"""Benchmark: what the shared bootstrap default (2000 resamples) costs `evaluate`.

One evaluation of simulated lists (``recaudit.fairness.simulation.simulate_interbias``:
``--users`` users, 1,000 items, top-20 lists, a training table so that the
popularity-bias section is computed too), timed with ``n_boot`` 1000 and 2000 (999
permutations each), alternated ``--repeats`` times in this process; the ratio of the
medians is the price of the default (decision 0408).

    PYTHONPATH=src python benchmarks/bench_fairness_n_boot.py --users 1000 --repeats 5
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from recaudit.fairness import EvaluateOptions, evaluate
from recaudit.fairness.simulation import simulate_interbias

N_ITEMS = 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    data = simulate_interbias(args.users, rng=np.random.default_rng(args.seed),
                              n_items=N_ITEMS)
    times: dict[int, list[float]] = {1000: [], 2000: []}
    for _ in range(args.repeats):
        for n_boot in times:
            options = EvaluateOptions(n=(5, 10, 20), n_boot=n_boot, n_resamples=999)
            start = time.perf_counter()
            evaluate(data.recs, data.test, data.users, attribute="gender", protected="F",
                     n_items=N_ITEMS, train=data.train, options=options, rng=args.seed)
            times[n_boot].append(time.perf_counter() - start)
    med = {b: statistics.median(t) for b, t in times.items()}
    print(f"{args.users} users, {args.repeats} repeats: n_boot 1000 {med[1000]:.2f} s, "
          f"2000 {med[2000]:.2f} s (median), ratio {med[2000] / med[1000]:.2f}")


if __name__ == "__main__":
    main()
