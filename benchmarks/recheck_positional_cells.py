"""Larger reruns of single validation cells that looked low in the grid run.

    PYTHONPATH=src python benchmarks/recheck_positional_cells.py [ps] [L] [spb] [pb] [split]

PS coverage (pairwise over orders, ``permutation_sensitivity``'s interval with 500
resamples: bootstrap-t since the change measured by ``ps_interval_study.py``) in two
cells with 300 data sets each; POB-UNBP's P(L <= TV) in six cells with 1,000 data sets each;
sPB's coverage (the estimator and interval of ``analyze``'s ``spb``) in the graded
k = 15 and heterogeneous k = 5 cells at 500 queries and p_bias 0.1, 200 data sets each;
PB's (cross-fitted, ``analyze``'s ``pb``) in the heterogeneous k = 5 and decoding
k = 10 cells at 500 queries and p_bias 0.1, 200 data sets each; soft bias's and the
position-driven share's (``analyze``'s ``spb_soft`` and ``positional_share``) in the
heterogeneous k = 5 cell at 500 queries and p_bias 0.1, 200 data sets each
(docs/positional-statistics.md, "Validation against known truth": a grid cell holds
only 40-100 data sets, so its coverage has a Monte-Carlo s.e. of 0.02-0.035).
All five by default.
"""

from __future__ import annotations

import sys

import numpy as np

from recaudit.positional import (
    permutation_sensitivity,
    pob_unbp,
    positional_bias,
    strong_soft_bias,
)
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


def _interval_coverage(what: str, cells: list[tuple[str, int, int, float]],
                       reps: int) -> None:
    """Bias and two-sided coverage of ``analyze``'s ``spb``, ``spb_soft``,
    ``positional_share`` or ``pb`` (``what``: sPB, soft, share, PB) in ``cells``."""
    for model, k, n, p in cells:
        t = scenario_truth(model, k=k, p_bias=p, rng=7, n_draws=2_000_000)
        truth = {"sPB": t.spb, "soft": t.soft, "share": t.positional_share, "PB": t.pb}[what]
        gen = np.random.default_rng(11)
        vals, low, high = [], [], []
        for _ in range(reps):
            ev = simulate_scenario(model, n, k=k, p_bias=p, rng=gen)
            if what == "PB":
                est = positional_bias(ev, rng=gen)
            else:
                split = strong_soft_bias(ev, rng=gen)
                est = {"sPB": split.strong, "soft": split.soft,
                       "share": split.positional_share}[what]
            vals.append(est.value)
            low.append(est.ci.low)
            high.append(est.ci.high)
        lo, hi = np.asarray(low), np.asarray(high)
        cov = float(np.mean((lo <= truth) & (truth <= hi)))
        v = np.asarray(vals)
        print(f"{what} {model} k={k} n={n} p_bias={p}: truth {truth:.5f}, bias "
              f"{v.mean() - truth:+.5f} (s.e. {v.std(ddof=1) / np.sqrt(reps):.5f}), coverage "
              f"{cov:.3f} (s.e. {np.sqrt(cov * (1 - cov) / reps):.3f}) of {reps}; lower end "
              f"above the truth {np.mean(lo > truth):.3f}, upper end below "
              f"{np.mean(hi < truth):.3f}")


def spb_coverage() -> None:
    _interval_coverage("sPB", [("graded", 15, 500, 0.1), ("heterogeneous", 5, 500, 0.1)], 200)


def split_coverage() -> None:
    """Soft bias and the share where the grid's 40 data sets gave 0.875 / 0.900."""
    for what in ("soft", "share"):
        _interval_coverage(what, [("heterogeneous", 5, 500, 0.1)], 200)


def pb_coverage() -> None:
    _interval_coverage("PB", [("heterogeneous", 5, 500, 0.1), ("decoding", 10, 500, 0.1)], 200)


if __name__ == "__main__":
    checks = {"ps": ps_coverage, "L": l_below_tv, "spb": spb_coverage, "pb": pb_coverage,
              "split": split_coverage}
    for name in sys.argv[1:] or list(checks):
        checks[name]()
