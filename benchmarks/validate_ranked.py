"""Validation of the ranked-list statistics (``topn_bias``): the permutation test's
type-I error and power, and the coverage of Kendall's tau's and the displacements'
query-bootstrap intervals, on a Plackett-Luce model with a position term.

Known truth from a generator written here, independent of the estimators: each query
has k candidates with graded utilities ``u_i ~ N(0, --spread^2)`` (varying by query);
each evaluation shows a uniformly random order and the model returns a full ranking
drawn from Plackett-Luce with log-worth ``u_i + gamma * (k - p_i) / (k - 1)``, ``p_i``
the prompt position of item i (``gamma`` = 0: no position effect; > 0: primacy), drawn
with the Gumbel-max construction (sort ``log-worth + Gumbel`` descending; Yellott 1977).

The truth is the estimand's population value: the mean over queries of the expected
per-evaluation Kendall tau between prompt position and rank received, and the expected
rank at prompt positions 1 and k minus (k + 1) / 2, from ``--truth-queries`` queries x
``--perms`` orders (its own Monte-Carlo SE is printed and is far below the intervals'
widths). Per cell: bias, coverage of the 95 % percentile intervals, and the rejection
rate of the rank-bias permutation test at 0.05, each with its Monte-Carlo SE.

Usage::

    PYTHONPATH=src python benchmarks/validate_ranked.py --reps 200 --seed 1
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from recaudit.positional import topn_bias

RESULTS = Path(__file__).resolve().parent / "results" / "ranked.jsonl"


def draw(rng: np.random.Generator, n_queries: int, perms: int, k: int, gamma: float,
         spread: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Orders (n, k: item shown at position p, 0-based), rankings (n, k: positions best
    first, 1-based) and the query of each evaluation."""
    u = rng.normal(scale=spread, size=(n_queries, k))
    query = np.repeat(np.arange(n_queries), perms)
    orders = np.argsort(rng.random((query.size, k)), axis=1)  # uniform random orders
    bonus = gamma * (k - 1 - np.arange(k)) / (k - 1)  # by position 0..k-1
    logw = np.take_along_axis(u[query], orders, axis=1) + bonus  # by position
    keys = logw + rng.gumbel(size=logw.shape)
    ranking = np.argsort(-keys, axis=1) + 1  # positions, best first
    return orders, ranking, query


def table_of(orders: np.ndarray, ranking: np.ndarray, query: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({
        "query_id": [f"q{q:05d}" for q in query],
        "order": [" ".join(map(str, o + 1)) for o in orders],
        "ranking": [" ".join(map(str, r)) for r in ranking],
    })


def position_ranks(ranking: np.ndarray) -> np.ndarray:
    """rank received by the item at each position (1-based)."""
    k = ranking.shape[1]
    out = np.empty_like(ranking)
    np.put_along_axis(out, ranking - 1, np.broadcast_to(np.arange(1, k + 1), out.shape), axis=1)
    return out


def kendall_rows(pos_rank: np.ndarray) -> np.ndarray:
    k = pos_rank.shape[1]
    conc = np.zeros(pos_rank.shape[0])
    for p, q in itertools.combinations(range(k), 2):
        conc += np.sign(pos_rank[:, q] - pos_rank[:, p])
    return conc / (k * (k - 1) / 2)


def truth(rng: np.random.Generator, k: int, gamma: float, spread: float, n: int,
          perms: int) -> dict[str, float]:
    orders, ranking, query = draw(rng, n, perms, k, gamma, spread)
    pr = position_ranks(ranking)
    tau = kendall_rows(pr)
    assert np.allclose(tau[:50], [stats.kendalltau(np.arange(1, k + 1), r).statistic
                                  for r in pr[:50]])  # the check against scipy
    centre = (k + 1) / 2
    return {"tau": float(tau.mean()), "tau_se": float(tau.std() / math.sqrt(tau.size)),
            "disp_first": float(pr[:, 0].mean() - centre),
            "disp_last": float(pr[:, -1].mean() - centre)}


def covers(est, value: float) -> bool:
    return bool(est.ci.low <= value <= est.ci.high)


def run_cell(rng, *, k, gamma, queries, perms, spread, reps, truth_row, n_resamples, n_boot):
    hits = {"tau": 0, "disp_first": 0, "disp_last": 0}
    rejects, taus = 0, []
    for _ in range(reps):
        res = topn_bias(table_of(*draw(rng, queries, perms, k, gamma, spread)),
                        n_resamples=n_resamples, n_boot=n_boot, rng=rng)
        rejects += res.pvalue <= 0.05
        taus.append(res.kendall.value)
        hits["tau"] += covers(res.kendall, truth_row["tau"])
        hits["disp_first"] += covers(res.displacement[0], truth_row["disp_first"])
        hits["disp_last"] += covers(res.displacement[-1], truth_row["disp_last"])

    def rate(x: int) -> tuple[float, float]:
        r = x / reps
        return r, math.sqrt(r * (1 - r) / reps)

    bias = np.asarray(taus) - truth_row["tau"]
    return {"k": k, "gamma": gamma, "queries": queries, "perms": perms, "reps": reps,
            **{f"true_{key}": v for key, v in truth_row.items()},
            "tau_bias": float(bias.mean()), "tau_bias_se": float(bias.std() / math.sqrt(reps)),
            **{f"coverage_{key}": rate(v)[0] for key, v in hits.items()},
            **{f"coverage_{key}_se": rate(v)[1] for key, v in hits.items()},
            "reject": rate(rejects)[0], "reject_se": rate(rejects)[1]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--k", type=int, nargs="+", default=[5, 10])
    ap.add_argument("--gamma", type=float, nargs="+", default=[0.0, 0.3, 1.0])
    ap.add_argument("--queries", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--perms", type=int, default=8)
    ap.add_argument("--spread", type=float, default=1.0)
    ap.add_argument("--truth-queries", type=int, default=50_000)
    ap.add_argument("--n-resamples", type=int, default=199)
    ap.add_argument("--n-boot", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("a", encoding="utf-8") as fh:
        for k, gamma in itertools.product(args.k, args.gamma):
            t = truth(rng, k, gamma, args.spread, args.truth_queries, args.perms)
            for queries in args.queries:
                start = time.perf_counter()
                row = run_cell(rng, k=k, gamma=gamma, queries=queries, perms=args.perms,
                               spread=args.spread, reps=args.reps, truth_row=t,
                               n_resamples=args.n_resamples, n_boot=args.n_boot)
                row.update(seed=args.seed, seconds=round(time.perf_counter() - start, 1))
                fh.write(json.dumps(row) + "\n")
                fh.flush()
                print(f"k={k} gamma={gamma} q={queries}: tau {t['tau']:.3f} "
                      f"cov tau {row['coverage_tau']:.3f} d1 {row['coverage_disp_first']:.3f} "
                      f"dk {row['coverage_disp_last']:.3f} reject {row['reject']:.3f} "
                      f"bias {row['tau_bias']:+.4f}", flush=True)


if __name__ == "__main__":
    main()
