"""PB's cross-fit: the selection threshold and fold count against the selection regret.

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/crossfit_threshold_study.py [REPS=200] \
        > benchmarks/results/crossfit_threshold_study.txt

For the heterogeneous, paper's and graded simulation models (recaudit.positional._scenarios),
k = 5, 10, 20, 100 and 500 queries, p_bias 0 / 0.03 / 0.1 (20 orders per query), REPS data
sets per cell: the bias (with its Monte-Carlo s.e.) and RMSE, in pp, of the clipped
cross-fitted PB for five rules: 5 folds at 1.5 s.e. (analyze's rule), 5 folds at 1.0 and
0.5 s.e., 10 folds at 1.0 s.e., 2 folds at 0.5 s.e. The estimate is the mean of the
per-query contributions of `compare_crossfit_rules.contributions` (analyze's cross-fit
without its bootstrap s.e., which does not change the estimate). About 20 CPU-minutes at
REPS = 200.
"""

from __future__ import annotations

import sys

import numpy as np
from compare_crossfit_rules import contributions

from recaudit.positional._scenarios import scenario_truth, simulate_scenario
from recaudit.positional._unbp import query_position_shares

RULES = (("5f c1.5", 5, 1.5, 4), ("5f c1.0", 5, 1.0, 4), ("5f c0.5", 5, 0.5, 4),
         ("10f c1.0", 10, 1.0, 2), ("2f c0.5", 2, 0.5, 10))


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    for model in ("heterogeneous", "paper", "graded"):
        for k in (5, 10, 20):
            for n in (100, 500):
                for p in (0.0, 0.03, 0.1):
                    tv = scenario_truth(model, k=k, p_bias=p, n_draws=100_000).pb
                    gen = np.random.default_rng(1)
                    res: dict[str, list[float]] = {r[0]: [] for r in RULES}
                    for _ in range(reps):
                        y = query_position_shares(
                            simulate_scenario(model, n, k=k, p_bias=p, rng=gen))
                        for name, folds, c, repeats in RULES:
                            est = contributions(y, gen, folds, c, repeats).mean()
                            res[name].append(max(0.0, float(est)))
                    cells = " | ".join(
                        f"{name} {100 * (np.mean(v) - tv):+.2f} "
                        f"({100 * np.std(v) / np.sqrt(reps):.2f}) "
                        f"rmse {100 * np.sqrt(np.mean((np.array(v) - tv) ** 2)):.2f}"
                        for name, v in res.items())
                    print(f"{model} k={k} n={n} p={p} TV={100 * tv:.2f} | {cells}", flush=True)


if __name__ == "__main__":
    main()
