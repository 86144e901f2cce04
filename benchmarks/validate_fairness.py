"""Validation harness: RD, NRD, IB, the gap permutation test and the popularity-bias
metrics of `fairness evaluate` against known truth.

Every data set comes from ``recaudit.fairness._synthetic.simulate_interbias`` (a Zipf
item popularity solved for the top-20 % interaction share, gender independent of
everything but the recommender's per-group hit probability ``π0 (1 ± rd)``), for each
tail shape, planted gap ``rd`` and number of users. Truth:

- RD, NRD of every metric: the exact population values of ``planted_truth`` (RD of
  Precision/Recall/NDCG = ``rd``); IB: ``sqrt(NRD (1 - IC))`` at the data set's own IC;
- the popularity-bias metrics: their value on one 100,000-user draw of the same cell
  (ARP rescaled to the data set's number of users, ``(n - 1) / (N - 1)``).

Per cell: bias = mean(estimate) - truth with its Monte-Carlo s.e. sd / sqrt(REPS),
RMSE, coverage of the 95 % percentile-bootstrap CI with sqrt(c (1 - c) / REPS), and
the permutation test's rejection rate at alpha = 0.05 (its type-I error at rd = 0).

    PYTHONPATH=src python benchmarks/validate_fairness.py run --reps 200 \\
        --out benchmarks/results/validate_fairness.jsonl
    PYTHONPATH=src python benchmarks/validate_fairness.py table \\
        benchmarks/results/validate_fairness.jsonl
    PYTHONPATH=src python benchmarks/validate_fairness.py summary \\
        benchmarks/results/validate_fairness.jsonl

``run`` appends one JSON line per cell (tail, rd, users, seed) and skips cells already
in the file, so an interrupted run resumes. One process: no parallelism by design.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recaudit._stats import bootstrap_weights, percentile_interval
from recaudit.fairness import EvaluateOptions, evaluate
from recaudit.fairness._popularity import (
    USER_MEAN_METRICS,
    per_user_popularity,
    popularity_metrics,
    popularity_parity,
)
from recaudit.fairness._synthetic import planted_truth, simulate_interbias

CUT = 10
#: The inter-bias keys judged here (all 15 keys are computed by `evaluate`).
KEYS = (f"ndcg@{CUT}", f"precision@{CUT}", f"hit@{CUT}", f"mrr@{CUT}")
POP_KEYS = tuple(f"{m}@{CUT}" for m in ("arp", "aplt", "aclt", "poprsp", "popreo", "novelty"))
SIM = {"n_items": 400, "n_train": 20, "n_test": 5, "list_length": 20, "base_hit": 0.15}
N_BOOT = 200
N_PERM = 199
N_POPULATION = 100_000
ALPHA = 0.05


def evaluate_adapter(data: Any, *, rng: np.random.Generator) -> Any:
    """The one call of ``recaudit.fairness.evaluate`` (adapt here when its signature moves
    to an options object)."""
    return evaluate(
        data.recs,
        data.test,
        data.users,
        attribute="gender",
        protected="F",
        n_items=SIM["n_items"],
        options=EvaluateOptions(n=(5, CUT, 15), n_boot=N_BOOT, n_resamples=N_PERM,
                                min_group_size=20),
        rng=rng,
    )


def _popularity_with_ci(
    data: Any, rng: np.random.Generator
) -> dict[str, tuple[float, float, float]]:
    """Popularity metrics at CUT with user-bootstrap percentile CIs (the integration recipe)."""
    pu = per_user_popularity(data.recs, data.test, data.train, n=CUT, n_items=SIM["n_items"])
    x = pu.values[[f"{m}@{CUT}" for m in USER_MEAN_METRICS]].to_numpy()
    n = x.shape[0]
    reps: dict[str, list[np.ndarray]] = {k: [] for k in POP_KEYS}
    for w in bootstrap_weights(n, N_BOOT, rng):
        wf = w.astype(float)
        means = (wf @ np.nan_to_num(x)) / (wf @ np.isfinite(x))
        for j, m in enumerate(USER_MEAN_METRICS):
            reps[f"{m}@{CUT}"].append(means[:, j])
        par = popularity_parity(pu.counts, wf)
        reps[f"poprsp@{CUT}"].append(par["poprsp"][:, 0])
        reps[f"popreo@{CUT}"].append(par["popreo"][:, 0])
    point = popularity_metrics(data.recs, data.test, data.train, n=CUT, n_items=SIM["n_items"])
    out = {}
    for k in POP_KEYS:
        ci = percentile_interval(np.concatenate(reps[k]))
        out[k] = (point[k], ci.low, ci.high)
    return out


def _population_truth(tail: float, rd: float, seed: int) -> dict[str, float]:
    gen = np.random.default_rng([seed, 7, int(round(tail * 1000)), int(round(rd * 1000))])
    d = simulate_interbias(N_POPULATION, rng=gen, top_share=tail, rd=rd, **SIM)
    return popularity_metrics(d.recs, d.test, d.train, n=CUT, n_items=SIM["n_items"])


def _summarise(values: list[float], covered: list[bool], truth: float) -> dict[str, Any]:
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    row: dict[str, Any] = {"truth": truth, "n": int(v.size)}
    if v.size > 1:
        row |= {"bias": float(v.mean() - truth), "bias_se": float(v.std(ddof=1) / np.sqrt(v.size)),
                "rmse": float(np.sqrt(np.mean((v - truth) ** 2)))}
    if covered:
        c = float(np.mean(covered))
        row |= {"coverage": c, "coverage_se": float(np.sqrt(c * (1 - c) / len(covered)))}
    return row


def _cell(tail: float, rd: float, users: int, reps: int, seed: int) -> dict[str, Any]:
    truth = planted_truth(n_test=SIM["n_test"], list_length=SIM["list_length"],
                          base_hit=SIM["base_hit"], rd=rd, n=[5, CUT, 15])
    pop_truth = _population_truth(tail, rd, seed)
    pop_truth[f"arp@{CUT}"] *= (users - 1) / (N_POPULATION - 1)
    gen = np.random.default_rng([seed, users, int(round(tail * 1000)), int(round(rd * 1000))])
    vals: dict[str, list[float]] = {}
    cov: dict[str, list[bool]] = {}
    rejected: dict[str, list[bool]] = {k: [] for k in KEYS}

    def add(name: str, value: float, lo: float, hi: float, t: float) -> None:
        vals.setdefault(name, []).append(value)
        if np.isfinite(lo) and np.isfinite(hi):
            cov.setdefault(name, []).append(bool(lo <= t <= hi))

    ib_truths: dict[str, list[float]] = {k: [] for k in KEYS}
    for _ in range(reps):
        data = simulate_interbias(users, rng=gen, top_share=tail, rd=rd, **SIM)
        res = evaluate_adapter(data, rng=gen)
        ic = res.item_coverage[CUT].value
        for k in KEYS:
            gap = res.inter_bias[k]
            t_ib = float(np.sqrt(truth[k]["nrd"] * (1 - ic)))
            ib_truths[k].append(t_ib)
            for stat, t in (("rd", truth[k]["rd"]), ("nrd", truth[k]["nrd"]), ("ib", t_ib)):
                est = getattr(gap, stat)
                add(f"{stat}:{k}", est.value, est.ci.low, est.ci.high, t)
            rejected[k].append(gap.pvalue <= ALPHA)
        for k, (v, lo, hi) in _popularity_with_ci(data, gen).items():
            add(k, v, lo, hi, pop_truth[k])
    out: dict[str, Any] = {"tail": tail, "rd": rd, "users": users, "reps": reps, "seed": seed,
                           "estimators": {}, "rejection": {}}
    for name, v in vals.items():
        stat, _, key = name.partition(":")
        if key:
            t = float(np.mean(ib_truths[key])) if stat == "ib" else truth[key][stat]
            # IB's truth varies with each data set's IC: bias is judged per data set
            if stat == "ib":
                diffs = np.asarray(v) - np.asarray(ib_truths[key])
                row = _summarise(list(diffs + t), cov.get(name, []), t)
            else:
                row = _summarise(v, cov.get(name, []), t)
        else:
            row = _summarise(v, cov.get(name, []), pop_truth[name])
        out["estimators"][name] = row
    for k, r in rejected.items():
        rate = float(np.mean(r))
        out["rejection"][k] = {"rate": rate, "se": float(np.sqrt(rate * (1 - rate) / len(r)))}
    return out


def run(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if out.exists():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            done.add((r["tail"], r["rd"], r["users"], r["seed"]))
    cells = [(t, g, u) for t in args.tail for g in args.rd for u in args.users
             if (t, g, u, args.seed) not in done]
    with out.open("a") as fh:
        for tail, rd, users in cells:
            start = time.perf_counter()
            res = _cell(tail, rd, users, args.reps, args.seed)
            res["seconds"] = round(time.perf_counter() - start, 1)
            fh.write(json.dumps(res) + "\n")
            fh.flush()
            print(f"tail={tail} rd={rd} users={users}: {res['seconds']} s", file=sys.stderr,
                  flush=True)


def _rows(path: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in Path(path).read_text().splitlines()]
    return sorted(rows, key=lambda r: (r["tail"], r["rd"], r["users"]))


def _fmt(e: dict[str, Any]) -> tuple[str, str, str]:
    bias = f"{e['bias']:+.4f} ({e['bias_se']:.4f})" if "bias" in e else "–"
    rmse = f"{e['rmse']:.4f}" if "rmse" in e else "–"
    cov = f"{e['coverage']:.3f} ({e['coverage_se']:.3f})" if "coverage" in e else "–"
    return bias, rmse, cov


def table(args: argparse.Namespace) -> None:
    rows = _rows(args.results)
    names = [n for n in rows[0]["estimators"]]
    print("| estimator | top-20 % share | rd | users | truth | bias (s.e.) | RMSE "
          "| 95 % CI coverage (s.e.) |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        for r in rows:
            e = r["estimators"][name]
            bias, rmse, cov = _fmt(e)
            print(f"| {name} | {r['tail']:g} | {r['rd']:g} | {r['users']} | {e['truth']:.4f} "
                  f"| {bias} | {rmse} | {cov} |")
    print("\n| metric | top-20 % share | rd | users | reps | rejection rate at 0.05 (s.e.) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        for k, v in r["rejection"].items():
            print(f"| {k} | {r['tail']:g} | {r['rd']:g} | {r['users']} | {r['reps']} "
                  f"| {v['rate']:.3f} ({v['se']:.3f}) |")


def summary(args: argparse.Namespace) -> None:
    rows = _rows(args.results)
    print("| estimator | cells | max abs bias / its s.e. (cell) | coverage range "
          "| cells below 0.95 by > 2 s.e. |")
    print("|---|---|---|---|---|")
    for name in rows[0]["estimators"]:
        est = [(r, r["estimators"][name]) for r in rows if "bias" in r["estimators"][name]]
        if not est:
            continue
        r, w = max(est, key=lambda p: abs(p[1]["bias"]))
        cov = [e["coverage"] for _, e in est if "coverage" in e]
        short = sum(e["coverage"] < 0.95 - 2 * max(e["coverage_se"], np.sqrt(0.0475 / r["reps"]))
                    for r, e in est if "coverage" in e)
        where = f"tail {r['tail']:g}, rd {r['rd']:g}, n {r['users']}"
        cov_txt = f"{min(cov):.3f}-{max(cov):.3f}" if cov else "no CI"
        print(f"| {name} | {len(est)} | {abs(w['bias']):.4f} / {w['bias_se']:.4f} ({where}) "
              f"| {cov_txt} | {short} |")
    null = [(k, v) for r in rows if r["rd"] == 0 for k, v in r["rejection"].items()]
    if null:
        n = sum(r["reps"] for r in rows if r["rd"] == 0) // max(1, len({r["users"] for r in rows}))
        rates = pd.DataFrame([{"metric": k, "rate": v["rate"]} for k, v in null])
        print(f"\nType-I error at rd = 0 (alpha 0.05), mean over null cells per metric "
              f"(~{n} data sets per tail):")
        print(rates.groupby("metric")["rate"].mean().round(4).to_string())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--tail", nargs="+", type=float, default=[0.65, 0.85])
    r.add_argument("--rd", nargs="+", type=float, default=[0.0, 0.1, 0.3])
    r.add_argument("--users", nargs="+", type=int, default=[300, 1000])
    r.add_argument("--reps", type=int, default=200)
    r.add_argument("--seed", type=int, default=20261218)
    r.add_argument("--out", default="benchmarks/results/validate_fairness.jsonl")
    for name in ("table", "summary"):
        sub.add_parser(name).add_argument("results")
    args = parser.parse_args()
    {"run": run, "table": table, "summary": summary}[args.command](args)


if __name__ == "__main__":
    main()
