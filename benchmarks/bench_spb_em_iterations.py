"""Bootstrap sd of the relevance-set model's E|R| against the EM iterations per refit.

    PYTHONPATH=src python benchmarks/bench_spb_em_iterations.py [--k 20] [--queries 500]

One simulated data set (the spec's model, p_bias 0.1, 20 orders); the full-data G is
fitted to convergence, then 50 bootstrap resamples are refitted from it with a fixed
number of EM iterations. Prints, per iteration count, the sd and mean of E|R| over the
resamples and the time (docs/decisions/, "sPB comes from an empirical-Bayes
relevance-set model").
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from recaudit.positional import _strong
from recaudit.positional._crossfit import crossfit_shares
from recaudit.positional._scenarios import simulate_scenario
from recaudit.positional._unbp import query_position_shares


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--queries", type=int, default=500)
    args = parser.parse_args()
    k = args.k
    gen = np.random.default_rng(0)
    ev = simulate_scenario("paper", args.queries, k=k, p_bias=0.1, rng=gen)
    fit = crossfit_shares(query_position_shares(ev), gen)
    clean = np.ones(k, dtype=bool)
    clean[fit.favoured] = False
    keep = clean[ev.position]
    counts = np.bincount(ev.query[keep] * k + ev.item[keep],
                         minlength=ev.n_queries * k).reshape(-1, k)
    lik = _strong._likelihoods(counts, k)
    best, g, _ = _strong._profile(lik, np.ones(ev.n_queries), None,
                                  range(_strong.FLOORS.size), 500)
    sizes = np.arange(1, k + 1)
    print("| EM iterations | sd of E|R| | mean of E|R| | seconds (50 refits) |")
    print("|---|---|---|---|")
    for iterations in (10, 20, 40, 100, 300):
        start = time.perf_counter()
        values = [float(_strong._em(lik[best], fit.weights[b], g.copy(), iterations, 0.0)[0]
                        @ sizes) for b in range(50)]
        print(f"| {iterations} | {np.std(values):.4f} | {np.mean(values):.3f} | "
              f"{time.perf_counter() - start:.3f} |")


if __name__ == "__main__":
    main()
