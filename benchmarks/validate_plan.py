"""Validation of ``recaudit positional plan``: its power and PB half-width against simulation.

For k in (5, 10), p_bias in (0, 0.03, 0.1), 20 orders per query and a few numbers of
queries (20, 60, 200, and each design's planned size for 80 % power), the plan's
figures (:func:`recaudit.positional.plan_audit` with ``queries=n``) are compared with
simulations that share no code path with the planner's own:

- fixed (sampled) POB-UNBP power: :func:`recaudit.positional.power_study` (the spec's
  section-8 simulation study, POB-UNBP only);
- exact POB-UNBP power: the simulator's exact per-query mean probabilities
  (``exact_query_shares``; its covariance, and that of vectors built from
  :func:`simulate_evaluations` as below, match the section-8 formula in
  tests/positional/test_planning.py) through POB-UNBP's decision (``power_study``'s
  vectorised POB-UNBP);
- exact PB half-width: exact choice-probability vectors computed in this script from
  :func:`simulate_evaluations`' orders and relevance sets, then PB's interval on the
  per-query means (as ``analyze --exact``);
- sequential power: the e-process of :func:`sequential_uniformity_test` (its kernel
  ``log_e_values``, the default method, looked at after every evaluation; the test itself is
  checked in tests/sequential) on :func:`simulate_evaluations` data (the planner draws
  its paths from the numba generator of ``power_study``);
- fixed PB half-width: :func:`positional_bias` on :func:`simulate_evaluations` data.

Every figure carries its Monte-Carlo standard error. Tolerances: |power difference|
<= 0.05, |half-width ratio - 1| <= 0.10.

    PYTHONPATH=src nice -n 10 python benchmarks/validate_plan.py run --seed 1 \\
        --out benchmarks/results/validate_plan.jsonl
    PYTHONPATH=src python benchmarks/validate_plan.py table benchmarks/results/validate_plan.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from recaudit._stats import binomial_interval
from recaudit.positional import (
    Effect,
    plan_audit,
    positional_bias,
    power_study,
    simulate_evaluations,
)
from recaudit.positional._crossfit import crossfit_shares, pb_from_shares
from recaudit.positional._sequential import DEFAULT_SEQUENTIAL_METHOD, log_e_values
from recaudit.positional._simulation import exact_query_shares
from recaudit.positional._unbp import _reject_many

ORDERS = 20
ALPHA = 0.05
KS = (5, 10)
P_BIAS = (0.0, 0.03, 0.1)
QUERIES = (20, 60, 200)
DESIGNS = ("fixed", "sequential", "exact")


def exact_shares(n_q: int, k: int, p_bias: float, gen: np.random.Generator) -> np.ndarray:
    """Per-query mean exact probabilities (n_q, k) of one section-8 data set, computed
    from simulate_evaluations' orders and true relevance sets (its sampled choices are
    not used)."""
    ev, rel = simulate_evaluations(n_q, k=k, n_perms=ORDERS, p_bias=p_bias, rng=gen,
                                   return_truth=True)
    shown = rel[ev.query[:, None], ev.orders]  # (n, k): relevant item at position p?
    probs = (1 - p_bias) * shown / shown.sum(axis=1, keepdims=True)
    probs[:, 0] += p_bias
    sums = np.zeros((n_q, k))
    np.add.at(sums, ev.query, probs)
    return sums / ORDERS


def simulated_power(design: str, k: int, p_bias: float, n_q: int, reps: int,
                    gen: np.random.Generator) -> tuple[float, float]:
    """Rejection rate and its Monte-Carlo SE."""
    if design == "fixed":
        study = power_study(k=[k], queries=[n_q], perms=ORDERS, p_bias=[p_bias], reps=reps,
                            alpha=ALPHA, tests=("pob_unbp",), rng=gen)
        hits = round(study.rows[0].rejection_rate * reps)
    elif design == "exact":
        hits = 0
        chunk = max(1, 2_000_000 // (n_q * ORDERS * k))
        for start in range(0, reps, chunk):
            shares = exact_query_shares(min(chunk, reps - start), n_q, k=k, n_perms=ORDERS,
                                        p_bias=p_bias, gen=gen)
            hits += int(_reject_many(shares, ALPHA).sum())
    else:
        positions = np.stack([
            simulate_evaluations(n_q, k=k, n_perms=ORDERS, p_bias=p_bias, rng=gen).position
            for _ in range(reps)])
        log_e = log_e_values(positions, k, method=DEFAULT_SEQUENTIAL_METHOD)
        hits = int((log_e.max(axis=1) >= math.log(1 / ALPHA)).sum())
    p = hits / reps
    return p, math.sqrt(max(p * (1 - p), 1.0 / reps) / reps)


def simulated_half_width(design: str, k: int, p_bias: float, n_q: int, reps: int,
                         gen: np.random.Generator) -> tuple[float, float]:
    widths = []
    for _ in range(reps):
        if design == "fixed":
            ev = simulate_evaluations(n_q, k=k, n_perms=ORDERS, p_bias=p_bias, rng=gen)
            ci = positional_bias(ev, rng=gen).ci
        else:
            shares = exact_shares(n_q, k, p_bias, gen)
            ci = pb_from_shares(shares, crossfit_shares(shares, gen), 0.95).ci
        widths.append((ci.high - ci.low) / 2)
    w = np.asarray(widths)
    return float(w.mean()), float(w.std(ddof=1) / math.sqrt(reps))


def cell(k: int, p_bias: float, n_q: int, design: str, planned: dict[str, Any],
         args: argparse.Namespace, gen: np.random.Generator, tag: str) -> list[dict[str, Any]]:
    rows = []
    base = {"k": k, "p_bias": p_bias, "queries": n_q, "orders": ORDERS, "design": design,
            "size": tag, "alpha": ALPHA}
    reps = args.reps_sequential if design == "sequential" else args.reps
    t0 = time.perf_counter()
    p, se = simulated_power(design, k, p_bias, n_q, reps, gen)
    rows.append({**base, "quantity": "power", "planned": planned["power"],
                 "planned_se": planned["power_se"], "simulated": p, "simulated_se": se,
                 "reps": reps, "method": planned["power_method"],
                 "ok": abs(planned["power"] - p) <= 0.05,
                 "seconds": time.perf_counter() - t0})
    if planned["pb_half_width"] is not None:
        t0 = time.perf_counter()
        w, wse = simulated_half_width(design, k, p_bias, n_q, args.reps_half_width, gen)
        ratio = planned["pb_half_width"] / w
        rows.append({**base, "quantity": "pb_half_width", "planned": planned["pb_half_width"],
                     "planned_se": planned["pb_half_width_se"], "simulated": w,
                     "simulated_se": wse, "reps": args.reps_half_width,
                     "method": "simulation", "ratio": ratio, "ok": abs(ratio - 1) <= 0.10,
                     "seconds": time.perf_counter() - t0})
    return rows


def run(args: argparse.Namespace) -> None:
    gen = np.random.default_rng(args.seed)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("", encoding="utf-8")
    for k in KS:
        for p_bias in P_BIAS:
            effect = Effect.from_p_bias(p_bias, k=k)
            sized = plan_audit(effect, orders=ORDERS, alpha=ALPHA, reps=args.plan_reps,
                               half_width_reps=args.plan_half_width_reps, rng=gen)
            sizes = [(n, "grid") for n in QUERIES]
            for design in DESIGNS:
                d = next(x for x in sized.designs if x.design == design)
                points = sizes + ([(d.queries, "planned")] if d.queries else [])
                for n_q, tag in points:
                    plan = plan_audit(effect, orders=ORDERS, alpha=ALPHA, queries=n_q,
                                      designs=[design], reps=args.plan_reps,
                                      half_width_reps=args.plan_half_width_reps, rng=gen)
                    rows = cell(k, p_bias, n_q, design, plan.designs[0].to_dict(), args,
                                gen, tag)
                    with out.open("a", encoding="utf-8") as f:
                        for row in rows:
                            f.write(json.dumps(row) + "\n")
                    for row in rows:
                        print(f"k={k} p_bias={p_bias} n={n_q} ({tag}) {design} "
                              f"{row['quantity']}: planned {row['planned']:.4f} simulated "
                              f"{row['simulated']:.4f} ± {row['simulated_se']:.4f} "
                              f"{'ok' if row['ok'] else 'OFF'} ({row['seconds']:.1f} s)",
                              flush=True)


def table(args: argparse.Namespace) -> None:
    rows = [json.loads(line) for line in Path(args.file).read_text().splitlines() if line]
    print("| k | p_bias | design | queries | quantity | planned | simulated ± MC SE | "
          "within tolerance |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        n = f"{r['queries']}" + (" (planned)" if r["size"] == "planned" else "")
        pse = f" ± {r['planned_se']:.3f}" if r.get("planned_se") else ""
        print(f"| {r['k']} | {r['p_bias']:g} | {r['design']} | {n} | {r['quantity']} | "
              f"{r['planned']:.4f}{pse} | {r['simulated']:.4f} ± {r['simulated_se']:.4f} | "
              f"{'yes' if r['ok'] else '**no**'} |")
    for q in ("power", "pb_half_width"):
        sub = [r for r in rows if r["quantity"] == q]
        if sub:
            worst = (max(abs(r["planned"] - r["simulated"]) for r in sub) if q == "power"
                     else max(abs(r["ratio"] - 1) for r in sub))
            ok = sum(r["ok"] for r in sub)
            print(f"\n{q}: {ok}/{len(sub)} within tolerance; worst "
                  f"{'|difference|' if q == 'power' else '|ratio - 1|'} = {worst:.3f}")
    ci = binomial_interval(sum(r["ok"] for r in rows), len(rows))
    print(f"all: {sum(r['ok'] for r in rows)}/{len(rows)} (Wilson 95% [{ci.low:.2f}, "
          f"{ci.high:.2f}])")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--reps", type=int, default=1000, help="simulated data sets per power")
    r.add_argument("--reps-sequential", type=int, default=400)
    r.add_argument("--reps-half-width", type=int, default=100)
    r.add_argument("--plan-reps", type=int, default=400, help="the plan's sequential paths")
    r.add_argument("--plan-half-width-reps", type=int, default=100)
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--out", default="benchmarks/results/validate_plan.jsonl")
    r.set_defaults(func=run)
    t = sub.add_parser("table")
    t.add_argument("file")
    t.set_defaults(func=table)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
