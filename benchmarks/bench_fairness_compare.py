"""Benchmark: what a study's `compare.json` costs -- every pair of `--models` recommenders
compared by `compare_models` on `--users` users (simulated lists, N = 5, 10, 15, Holm,
1,000 bootstrap resamples; the permutations raised to what the families need).

    PYTHONPATH=src python benchmarks/bench_fairness_compare.py --models 11 --users 943
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from recaudit.fairness import EvaluateOptions, compare_models
from recaudit.fairness.simulation import simulate_interbias


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=11)
    parser.add_argument("--users", type=int, default=943)
    parser.add_argument("--items", type=int, default=1600)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    data = simulate_interbias(args.users, rng=np.random.default_rng(args.seed),
                              n_items=args.items)
    recs = {}
    for i in range(args.models):  # the same lists reordered: models that differ a little
        rng = np.random.default_rng(args.seed + 1 + i)
        recs[f"m{i}"] = data.recs.assign(rank=data.recs.groupby("user_id")["rank"].transform(
            lambda r, rng=rng: rng.permutation(r.to_numpy())))
    start = time.perf_counter()
    result = compare_models(recs, data.test, data.users, attribute="gender", protected="F",
                            n_items=args.items, rng=args.seed,
                            options=EvaluateOptions(n=(5, 10, 15), n_boot=1000,
                                                    n_resamples=999))
    print(f"{args.models} models, {args.users} users: {time.perf_counter() - start:.1f} s, "
          f"{len(result.rows)} rows, {result.n_resamples} permutations per pair")


if __name__ == "__main__":
    main()
