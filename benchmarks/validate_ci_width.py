"""Coverage of PB's CI when a sequential run stops on the CI's width (`--ci-width`).

A cell of `positional run --sequential --ci-width W` adds whole query blocks (5 random
orders per query, as the driver does) in rounds of 10 evaluations and stops at the first
look where the 95 % CI of PB (`positional_bias_from_shares`, the driver's function) is at
most W wide, or at the budget. Stopping on the width, not on the estimate, is the
fixed-width sequential estimation of Chow & Robbins (1965): the interval at the stop keeps
its level asymptotically; this measures it at the sizes users meet, on the paper's model
(position 1 with probability p_bias, relevance sets uniform over the non-empty subsets).

    nice -n 10 env PYTHONPATH=src python benchmarks/validate_ci_width.py --reps 300
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from recaudit.positional import positional_bias_from_shares
from recaudit.positional._scenarios import scenario_truth, simulate_scenario

K, ORDERS, ROUND, BUDGET = 5, 5, 10, 4000


def one_cell(p_bias: float, width: float, gen: np.random.Generator) -> tuple[bool, int, bool]:
    """(covered, evaluations used, width reached) of one simulated cell."""
    truth = scenario_truth("paper", k=K, p_bias=p_bias, rng=0).pb
    n_max = BUDGET // ORDERS
    ev = simulate_scenario("paper", n_max, k=K, p_bias=p_bias, n_orders=ORDERS, rng=gen)
    shares = np.zeros((n_max, K))
    np.add.at(shares, (ev.query, ev.position), 1.0 / ORDERS)
    per_round = ROUND // ORDERS
    est = None
    for n in range(per_round, n_max + 1, per_round):
        if n < 2:
            continue
        est = positional_bias_from_shares(shares[:n], rng=gen)
        if est.ci.high - est.ci.low <= width:
            return est.ci.low <= truth <= est.ci.high, n * ORDERS, True
    assert est is not None
    return est.ci.low <= truth <= est.ci.high, n_max * ORDERS, False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--p-bias", nargs="+", type=float, default=[0.0, 0.03, 0.1, 0.3])
    ap.add_argument("--width", nargs="+", type=float, default=[0.1, 0.05])
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/ci_width.jsonl"))
    args = ap.parse_args()
    with args.out.open("a", encoding="utf-8") as f:
        for width in args.width:
            for p in args.p_bias:
                gen = np.random.default_rng([args.seed, int(p * 1000), int(width * 1000)])
                res = [one_cell(p, width, gen) for _ in range(args.reps)]
                cov = float(np.mean([r[0] for r in res]))
                row = {"p_bias": p, "width": width, "reps": args.reps, "seed": args.seed,
                       "truth_pb": scenario_truth("paper", k=K, p_bias=p, rng=0).pb,
                       "coverage": cov, "coverage_mcse": (cov * (1 - cov) / args.reps) ** 0.5,
                       "mean_evaluations": float(np.mean([r[1] for r in res])),
                       "width_reached": float(np.mean([r[2] for r in res]))}
                f.write(json.dumps(row) + "\n")
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
