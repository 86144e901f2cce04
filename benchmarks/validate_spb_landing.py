"""sPB where position-driven selections land: bias and coverage by simulation.

    PYTHONPATH=src python benchmarks/validate_spb_landing.py --reps 100 --seed 1 \
        --out benchmarks/results/spb_landing.jsonl
    PYTHONPATH=src python benchmarks/validate_spb_landing.py --table \
        benchmarks/results/spb_landing.jsonl

Models of ``recaudit.positional._scenarios`` (their truth in closed form): ``primacy``
(position only breaks ties among relevant candidates: true sPB 0), ``diffuse`` (an
aversion to position 1 spread over the others), and the paper's, heterogeneous,
graded and decoding models as controls; 200 queries x 16 orders, p_bias 0.1, k = 5
and 10. Each cell: mean sPB minus the truth with its Monte-Carlo s.e., two-sided
coverage of the 95 % CI with its s.e., how often the CI contains 0, and how often
[ci_low, upper_if_spread] (the floor counted as position-driven) holds the truth
(docs/positional-statistics.md, "Where position-driven selections land").
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from recaudit.positional import strong_soft_bias
from recaudit.positional._scenarios import MODELS, scenario_truth, simulate_scenario

CELL_MODELS = ("primacy", "diffuse", "paper", "heterogeneous", "graded", "decoding")


def run_cell(args: tuple[str, int, int, float, int, int]) -> dict[str, Any]:
    model, k, n, p_bias, reps, seed = args
    truth = scenario_truth(model, k=k, p_bias=p_bias, rng=seed, n_draws=400_000).spb
    gen = np.random.default_rng([seed, k, n, MODELS.index(model)])
    vals, cover, zero, spread = [], [], [], []
    for _ in range(reps):
        ev = simulate_scenario(model, n, k=k, p_bias=p_bias, n_orders=16, rng=gen)
        res = strong_soft_bias(ev, rng=gen)
        est = res.strong
        vals.append(est.value)
        cover.append(est.ci.low <= truth <= est.ci.high)
        zero.append(est.ci.low <= 0.0)
        spread.append(est.ci.low <= truth <= res.upper_if_spread)
    v = np.asarray(vals, dtype=float)
    cov = float(np.mean(cover))
    return {"model": model, "k": k, "queries": n, "p_bias": p_bias, "reps": reps,
            "seed": seed, "truth": truth, "bias": float(np.nanmean(v) - truth),
            "bias_se": float(np.nanstd(v, ddof=1) / np.sqrt(reps)), "coverage": cov,
            "coverage_se": float(np.sqrt(cov * (1 - cov) / reps)),
            "ci_contains_zero": float(np.mean(zero)),
            "coverage_to_upper_if_spread": float(np.mean(spread))}


def table(path: str) -> None:
    rows = [json.loads(line) for line in open(path, encoding="utf-8")]
    rows.sort(key=lambda r: (CELL_MODELS.index(r["model"]), r["k"]))
    print("| model | k | truth sPB | bias (s.e.) | coverage (s.e.) | CI contains 0 | "
          "[ci_low, upper_if_spread] covers | data sets |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['k']} | {r['truth']:.4f} | {r['bias']:+.4f} "
              f"({r['bias_se']:.4f}) | {r['coverage']:.3f} ({r['coverage_se']:.3f}) | "
              f"{r['ci_contains_zero']:.3f} | {r['coverage_to_upper_if_spread']:.3f} | "
              f"{r['reps']} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--k", type=int, nargs="+", default=[5, 10])
    ap.add_argument("--models", nargs="+", default=list(CELL_MODELS), choices=CELL_MODELS)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="benchmarks/results/spb_landing.jsonl")
    ap.add_argument("--table", metavar="JSONL", help="print the table of a results file")
    args = ap.parse_args(argv)
    if args.table:
        table(args.table)
        return 0
    cells = [(m, k, args.queries, 0.1, args.reps, args.seed) for m in args.models
             for k in args.k]
    with ProcessPoolExecutor(args.workers) as pool, open(args.out, "a", encoding="utf-8") as f:
        for res in pool.map(run_cell, cells):
            f.write(json.dumps(res) + "\n")
            f.flush()
            print(json.dumps(res), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
