"""Candidate selection rules of PB's cross-fit, compared on the spec's model.

    PYTHONPATH=src python benchmarks/compare_crossfit_rules.py [REPS=200]

For k = 5, 10, 20, 100 and 500 queries, p_bias 0 / 0.03 / 0.1 (20 orders per query):
the bias of the clipped estimate and the coverage of [est - t se, max(est + t se, U)]
(U: max over candidate sets of theta_A + t se_A) / of est +- t se alone, with se the
sd of the per-query contributions, for four rules: 2-fold (10 repeats) and 5-fold (4
repeats) with a 1.0-se threshold, leave-one-out (1.0 se), and 5-fold with 1.5 se
(the rule `analyze` uses, there with a bootstrap se; docs/decisions/, "PB is
cross-fitted": the per-query sd understates the se of the leave-one-out rule).
"""

from __future__ import annotations

import sys

import numpy as np
from scipy import stats

from recaudit.positional._crossfit import _set_stats
from recaudit.positional._scenarios import scenario_truth, simulate_scenario
from recaudit.positional._unbp import query_position_shares

RULES = (("2-fold", 2, 1.0, 10), ("5-fold", 5, 1.0, 4), ("leave-one-out", "loo", 1.0, 1),
         ("5-fold, 1.5 se", 5, 1.5, 4))


def contributions(y: np.ndarray, gen: np.random.Generator, folds: int | str, c: float,
                  repeats: int) -> np.ndarray:
    n, k = y.shape
    if folds == "loo":
        mean = (y.sum(axis=0)[None, :] - y) / (n - 1) - 1 / k
        sd = y.std(axis=0, ddof=1) / np.sqrt(n - 1)
        return ((y - 1 / k) * (mean > c * sd[None, :])).sum(axis=1)
    out = np.zeros(n)
    for _ in range(repeats):
        fold = gen.permutation(n) % int(folds)
        for h in range(int(folds)):
            train, test = y[fold != h], fold == h
            mean = train.mean(axis=0) - 1 / k
            se = train.std(axis=0, ddof=1) / np.sqrt(train.shape[0])
            out[test] += ((y[test] - 1 / k) * (mean > c * se)).sum(axis=1)
    return out / repeats


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    for k in (5, 10, 20):
        for n in (100, 500):
            for p in (0.0, 0.03, 0.1):
                tv = scenario_truth("paper", k=k, p_bias=p, n_draws=100_000).pb
                gen = np.random.default_rng(1)
                res = {name: ([], 0, 0) for name, *_ in RULES}
                t = float(stats.t.isf(0.025, n - 1))
                for _ in range(reps):
                    y = query_position_shares(simulate_scenario("paper", n, k=k, p_bias=p,
                                                                rng=gen))
                    _, theta, se_a = _set_stats(y, exhaustive=True)
                    upper = float(max(0.0, np.max(theta + t * se_a)))
                    for name, folds, c, repeats in RULES:
                        cj = contributions(y, gen, folds, c, repeats)
                        est, se = cj.mean(), cj.std(ddof=1) / np.sqrt(n)
                        lo, hi = max(0.0, est - t * se), max(est + t * se, upper)
                        v, cov, cov_sym = res[name]
                        v.append(max(0.0, est))
                        res[name] = (v, cov + (lo <= tv <= hi),
                                     cov_sym + (lo <= tv <= est + t * se))
                cells = " | ".join(f"{name}: bias {100 * (np.mean(v) - tv):+.2f} pp, "
                                   f"cov {cov / reps:.2f}/{cs / reps:.2f}"
                                   for name, (v, cov, cs) in res.items())
                print(f"k={k} n={n} p={p} TV={tv:.3f} | {cells}", flush=True)


if __name__ == "__main__":
    main()
