"""Which 95 % interval for the pairwise PS covers its truth? (issue 14, PS coverage)

PS is a mean over queries of independent per-query U-statistics PS_j, so its
interval is an interval for a mean. Per data set, the candidates are built from the
same per-query values:

- ``pct500`` / ``pct2000``: percentile bootstrap over queries (queries resampled with
  replacement, the law of ``recaudit._stats.bootstrap_weights``), 500 resamples (the
  harness's grid) and 2,000 (``analyze``'s default); the 500 are the first of the 2,000;
- ``bca``: BCa on the same 2,000 replicates (bias correction z0 from the share of
  replicates below the estimate, acceleration from the jackknife of the mean,
  Efron & Tibshirani 1993, ch. 14);
- ``t``: the Student-t interval mean +/- t_{n-1} s / sqrt(n), clipped to [0, 1];
- ``boot_t``: bootstrap-t on the same 2,000 resamples (quantiles of
  (mean* - mean) / (s* / sqrt(n)), ch. 12).

Each is judged against the harness's truth (``scenario_truth(model, k=k,
p_bias=p, rng=20261201).ps``): coverage with its Monte-Carlo s.e., the share of
intervals entirely above the truth ("low": the truth is below the interval) and
entirely below it ("high"), and the mean width.

    PYTHONPATH=src nice -n 10 python benchmarks/ps_interval_study.py run --reps 400
    PYTHONPATH=src python benchmarks/ps_interval_study.py table

``run`` appends one JSON line per cell to ``benchmarks/results/ps_interval_study.jsonl``
(a cell already there is skipped); ``table`` prints the pooled and per-cell figures.
``run --shipped`` measures only what ``permutation_sensitivity(kind="pairwise")``
returns (the shipped interval) under the name ``shipped``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import special, stats

from recaudit.positional import permutation_sensitivity
from recaudit.positional._metrics import _pairwise_across_orders, item_counts
from recaudit.positional._scenarios import MODELS, scenario_truth, simulate_scenario

SEED = 20261201  # the harness's (benchmarks/validate_positional.py)
N_BOOT = 2000
METHODS = ("pct500", "pct2000", "bca", "t", "boot_t")
OUT = Path("benchmarks/results/ps_interval_study.jsonl")


def per_query_ps(ev: Any) -> npt.NDArray[np.float64]:
    """The pairwise PS_j of every query with two different orders."""
    v = _pairwise_across_orders(ev, item_counts(ev).astype(float))
    return v[np.isfinite(v)]


def intervals(x: npt.NDArray[np.float64], gen: np.random.Generator,
              level: float = 0.95) -> dict[str, tuple[float, float]]:
    """Every candidate interval of mean(x)."""
    n = x.size
    a = (1 - level) / 2
    # resampled indices: the same law as bootstrap_weights' multinomial weights, faster
    idx = gen.integers(0, n, size=(N_BOOT, n))
    m = x[idx].mean(axis=1)
    m2 = (x * x)[idx].mean(axis=1)
    mean, sd = float(x.mean()), float(x.std(ddof=1))
    out = {"pct500": tuple(np.quantile(m[:500], [a, 1 - a])),
           "pct2000": tuple(np.quantile(m, [a, 1 - a]))}
    # BCa (Efron & Tibshirani 1993, eq. 14.14-14.15); for a mean the jackknife
    # influence values are x_i - mean
    z0 = special.ndtri(np.clip(np.mean(m < mean), 1 / N_BOOT, 1 - 1 / N_BOOT))
    d = x - mean
    acc = float((d**3).sum() / (6 * max((d**2).sum(), 1e-300) ** 1.5))
    z = special.ndtri(np.array([a, 1 - a]))
    alpha = special.ndtr(z0 + (z0 + z) / (1 - acc * (z0 + z)))
    out["bca"] = tuple(np.quantile(m, alpha))
    half = stats.t.ppf(1 - a, n - 1) * sd / np.sqrt(n)
    out["t"] = (max(0.0, mean - half), min(1.0, mean + half))
    # bootstrap-t: s* from the resample's second moment (ddof 1)
    s_star = np.sqrt(np.maximum(m2 - m * m, 0.0) * n / (n - 1))
    ok = s_star > 0
    tstar = (m[ok] - mean) / (s_star[ok] / np.sqrt(n))
    qlo, qhi = np.quantile(tstar, [a, 1 - a]) if ok.any() else (0.0, 0.0)
    se = sd / np.sqrt(n)
    out["boot_t"] = (max(0.0, mean - qhi * se), min(1.0, mean - qlo * se))
    return {k: (float(v[0]), float(v[1])) for k, v in out.items()}


def _cell(model: str, k: int, n: int, p: float, reps: int, shipped: bool) -> dict[str, Any]:
    truth = scenario_truth(model, k=k, p_bias=p, rng=SEED).ps
    gen = np.random.default_rng([SEED, k, n, int(round(p * 1000)), MODELS.index(model), 14])
    methods = ("shipped",) if shipped else METHODS
    lo = {m: np.empty(reps) for m in methods}
    hi = {m: np.empty(reps) for m in methods}
    vals = np.empty(reps)
    skew = np.empty(reps)
    for r in range(reps):
        ev = simulate_scenario(model, n, k=k, p_bias=p, rng=gen)
        if shipped:
            est = permutation_sensitivity(ev, kind="pairwise", rng=gen)
            ivs = {"shipped": (est.ci.low, est.ci.high)}
            vals[r], skew[r] = est.value, np.nan
        else:
            x = per_query_ps(ev)
            ivs = intervals(x, gen)
            vals[r], skew[r] = x.mean(), stats.skew(x)
        for m in methods:
            lo[m][r], hi[m][r] = ivs[m]
    res: dict[str, Any] = {
        "model": model, "k": k, "queries": n, "p_bias": p, "reps": reps, "truth": truth,
        "bias": float(vals.mean() - truth), "bias_se": float(vals.std(ddof=1) / np.sqrt(reps)),
        "skew_per_query": float(np.nanmean(skew)) if not shipped else None, "methods": {}}
    for m in methods:
        res["methods"][m] = {"coverage": float(np.mean((lo[m] <= truth) & (truth <= hi[m]))),
                             "low": float(np.mean(lo[m] > truth)),
                             "high": float(np.mean(hi[m] < truth)),
                             "width": float(np.mean(hi[m] - lo[m]))}
    return res


def run(args: argparse.Namespace) -> None:
    out = Path(args.out)
    done = set()
    if out.exists():
        done = {(r["model"], r["k"], r["queries"], r["p_bias"], "shipped" in r["methods"])
                for r in map(json.loads, out.read_text().splitlines())}
    for model in args.models:
        for k in args.k:
            for n in args.queries:
                for p in args.p_bias:
                    if (model, k, n, p, args.shipped) in done:
                        continue
                    t0 = time.perf_counter()
                    res = _cell(model, k, n, p, args.reps, args.shipped)
                    res["seconds"] = round(time.perf_counter() - t0, 1)
                    with out.open("a") as fh:
                        fh.write(json.dumps(res) + "\n")
                    cov = " ".join(f"{m} {v['coverage']:.3f}" for m, v in res["methods"].items())
                    print(f"{model} k={k} n={n} p={p}: {cov} ({res['seconds']} s)",
                          file=sys.stderr, flush=True)


def _pooled(rows: list[dict[str, Any]], method: str) -> str:
    cells = [r for r in rows if method in r["methods"]]
    total = sum(r["reps"] for r in cells)
    e = {f: sum(r["methods"][method][f] * r["reps"] for r in cells) / total
         for f in ("coverage", "low", "high")}
    cov = [r["methods"][method]["coverage"] for r in cells]
    width = np.mean([r["methods"][method]["width"] for r in cells])
    return (f"{e['coverage']:.3f} ({np.sqrt(e['coverage'] * (1 - e['coverage']) / total):.3f})"
            f" | {e['low']:.3f} | {e['high']:.3f} | {min(cov):.3f}-{max(cov):.3f} | "
            f"{sum(c < 0.92 for c in cov)} / {sum(c > 0.97 for c in cov)} | {100 * width:.2f}")


def table(args: argparse.Namespace) -> None:
    rows = [json.loads(line) for line in Path(args.results).read_text().splitlines()]
    methods = [m for m in (*METHODS, "shipped") if any(m in r["methods"] for r in rows)]
    print("| interval | queries | data sets | coverage (s.e.) | truth below | truth above "
          "| cell range | cells < 0.92 / > 0.97 | mean width, pp |")
    print("|---|---|---|---|---|---|---|---|---|")
    for m in methods:
        for n in sorted({r["queries"] for r in rows}):
            sub = [r for r in rows if r["queries"] == n and m in r["methods"]]
            if sub:
                print(f"| {m} | {n} | {sum(r['reps'] for r in sub)} | {_pooled(sub, m)} |")
    if args.cells:
        print("\n| model | k | n | p_bias | reps | bias pp (s.e.) | skew of PS_j | "
              + " | ".join(methods) + " |")
        print("|" + "---|" * (7 + len(methods)))
        for r in sorted(rows, key=lambda r: (MODELS.index(r["model"]), r["k"], r["queries"],
                                             r["p_bias"])):
            cov = [f"{r['methods'][m]['coverage']:.3f}" if m in r["methods"] else "–"
                   for m in methods]
            sk = "–" if r.get("skew_per_query") is None else f"{r['skew_per_query']:+.2f}"
            print(f"| {r['model']} | {r['k']} | {r['queries']} | {r['p_bias']:g} | {r['reps']} | "
                  f"{100 * r['bias']:+.2f} ({100 * r['bias_se']:.2f}) | {sk} | "
                  + " | ".join(cov) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    r.add_argument("--k", nargs="+", type=int, default=[5, 20])
    r.add_argument("--queries", nargs="+", type=int, default=[100, 500])
    r.add_argument("--p-bias", nargs="+", type=float, default=[0.0, 0.03, 0.1])
    r.add_argument("--reps", type=int, default=400)
    r.add_argument("--shipped", action="store_true",
                   help="measure permutation_sensitivity's own interval only")
    r.add_argument("--out", default=str(OUT))
    t = sub.add_parser("table")
    t.add_argument("results", nargs="?", default=str(OUT))
    t.add_argument("--cells", action="store_true", help="also print every cell")
    args = parser.parse_args()
    {"run": run, "table": table}[args.command](args)


if __name__ == "__main__":
    main()
