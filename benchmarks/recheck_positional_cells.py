"""Larger reruns of single validation cells that looked low in the grid run.

    PYTHONPATH=src python benchmarks/recheck_positional_cells.py

PS coverage (pairwise over orders, percentile CI with 500 resamples) in two cells with
300 data sets each, and POB-UNBP's P(L <= TV) in six cells with 1,000 data sets each
(docs/positional-statistics.md, "Validation against known truth": a grid cell holds
only 40-100 data sets, so its coverage has a Monte-Carlo s.e. of 0.02-0.035).
"""

from __future__ import annotations

import numpy as np

from recaudit.positional import permutation_sensitivity, pob_unbp
from recaudit.positional._scenarios import scenario_truth, simulate_scenario


def ps_coverage() -> None:
    for model, k, n, p in [("paper", 15, 500, 0.03), ("paper", 20, 500, 0.0)]:
        truth = scenario_truth(model, k=k, p_bias=p, rng=7, n_draws=2_000_000).ps
        gen = np.random.default_rng(3)
        cov, vals = [], []
        for _ in range(300):
            ev = simulate_scenario(model, n, k=k, p_bias=p, rng=gen)
            e = permutation_sensitivity(ev, kind="pairwise", n_boot=500, rng=gen)
            cov.append(e.ci.low <= truth <= e.ci.high)
            vals.append(e.value)
        print(f"PS {model} k={k} n={n} p_bias={p}: truth {truth:.5f}, mean {np.mean(vals):.5f}, "
              f"coverage {np.mean(cov):.3f} of 300")


def l_below_tv() -> None:
    for model, k, n, p in [("paper", 20, 100, 0.1), ("paper", 15, 100, 0.1),
                           ("paper", 10, 100, 0.1), ("heterogeneous", 20, 100, 0.1),
                           ("paper", 20, 100, 0.03), ("graded", 20, 500, 0.0)]:
        tv = scenario_truth(model, k=k, p_bias=p, rng=0, n_draws=100_000).pb
        gen = np.random.default_rng(5)
        ok = sum(pob_unbp(simulate_scenario(model, n, k=k, p_bias=p, rng=gen)).L <= tv
                 for _ in range(1000))
        print(f"L {model} k={k} n={n} p_bias={p}: P(L <= TV) {ok / 1000:.3f} of 1000")


if __name__ == "__main__":
    ps_coverage()
    l_below_tv()
