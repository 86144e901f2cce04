"""Validation of ``recaudit positional plan``: its power and PB half-width against simulation.

For k in (5, 10), p_bias in (0, 0.03, 0.1), 20 orders per query and a few numbers of
queries (4 and 8 for the fixed designs, 20, 60, 200, and each design's planned size for
80 % power), the plan's figures (:func:`recaudit.positional.plan_audit` with
``queries=n``) are compared with simulations that share no code path with the
planner's own:

- fixed (sampled) POB-UNBP power: :func:`pob_unbp` on :func:`simulate_evaluations`
  data, one data set at a time (the planner simulates up to 30 queries with the numba
  generator of ``power_study`` and the vectorised ``_reject_many``, and approximates
  above);
- exact POB-UNBP power: exact choice-probability vectors computed in this script from
  :func:`simulate_evaluations`' orders and relevance sets (its sampled choices are not
  used), POB-UNBP on their per-query means (``_pob_unbp_shares``, what ``analyze
  --exact`` runs; the planner draws ``exact_query_shares``);
- exact PB half-width: those vectors' per-query means through PB's interval (as
  ``analyze --exact``);
- sequential power: the e-process of :func:`sequential_uniformity_test` (its kernel
  ``log_e_values``, the default method, looked at after every evaluation; the test itself is
  checked in tests/sequential) on :func:`simulate_evaluations` data (the planner draws
  its paths from the numba generator of ``power_study``);
- exact+sequential power: the same vectors, evaluation by evaluation in query blocks,
  read by the e-process of :func:`sequential_exact_test` (its kernel ``log_e_vectors``,
  the default method, looked at after every evaluation; the first paths of each point
  are checked against the public test); the planner's paths are
  ``_alternatives.simulate_choice_vectors``. A plan's power at n queries is the chance
  of a crossing within n query blocks (its cost pays the crossing to its round's end;
  the power does not depend on the rounds);
- fixed PB half-width: :func:`positional_bias` on :func:`simulate_evaluations` data.

A pilot-like effect (``--two-mode``, on by default) checks the plan from a pilot: a
model whose queries answer position 1 or position k (query j answers 1 with
probability :math:`a_j \\sim` Beta(0.4, 0.2), else k: SmolLM2's pattern), a pilot of
80 queries x 10 orders read by :func:`effect_from_evaluations`, the fixed sampled
design planned from it and compared with fresh data sets of the model (2 to 20
queries and the planned size). ``--pilot RUN`` adds the same comparison on a real
run's pool (e.g. runs/ctv/smollm2-135m/fixed from benchmarks/calls_to_verdict_real.py;
not in the repository): the plan from the whole pool against POB-UNBP on random
subsets of its queries (without replacement), for its answers (fixed) and, when it has
them, its vectors (exact).

Every figure carries its Monte-Carlo standard error. Tolerances: |power difference|
<= 0.05 (a planned power below the simulated one by more counts as conservative, not
off), |half-width ratio - 1| <= 0.10.

    PYTHONPATH=src nice -n 10 python benchmarks/validate_plan.py run --seed 1 \\
        --pilot runs/ctv/smollm2-135m/fixed --out benchmarks/results/validate_plan.jsonl
    PYTHONPATH=src python benchmarks/validate_plan.py table benchmarks/results/validate_plan.jsonl
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recaudit._stats import binomial_interval
from recaudit.positional import (
    Effect,
    effect_from_evaluations,
    evaluations_from_table,
    plan_audit,
    pob_unbp,
    positional_bias,
    sequential_exact_test,
    simulate_evaluations,
)
from recaudit.positional._crossfit import crossfit_shares, pb_from_shares
from recaudit.positional._exact import exact_evaluations_from_table
from recaudit.positional._sequential import (
    DEFAULT_SEQUENTIAL_METHOD,
    log_e_values,
    log_e_vectors,
)
from recaudit.positional._unbp import _pob_unbp_shares, query_position_shares

ORDERS = 20
ALPHA = 0.05
KS = (5, 10)
P_BIAS = (0.0, 0.03, 0.1)
QUERIES = (20, 60, 200)
SMALL = (4, 8)  # the fixed designs' small sizes (decision 0415)
DESIGNS = ("fixed", "sequential", "exact", "exact+sequential")
PILOT_QUERIES, PILOT_ORDERS = 80, 10
PILOT_SIZES = (2, 3, 4, 5, 6, 8, 10, 12, 20)
TWO_MODE = (0.4, 0.2)  # Beta(a, b) of a query's chance to answer position 1, else k


def exact_vectors(n_q: int, k: int, p_bias: float, gen: np.random.Generator
                  ) -> np.ndarray:
    """Exact choice-probability vectors (n_q * ORDERS, k), query blocks in order, of one
    section-8 data set, computed from simulate_evaluations' orders and true relevance
    sets (its sampled choices are not used)."""
    ev, rel = simulate_evaluations(n_q, k=k, n_perms=ORDERS, p_bias=p_bias, rng=gen,
                                   return_truth=True)
    shown = rel[ev.query[:, None], ev.orders]  # (n, k): relevant item at position p?
    probs = (1 - p_bias) * shown / shown.sum(axis=1, keepdims=True)
    probs[:, 0] += p_bias
    return probs


def exact_shares(n_q: int, k: int, p_bias: float, gen: np.random.Generator) -> np.ndarray:
    """Per-query mean exact probabilities (n_q, k) of one section-8 data set."""
    return exact_vectors(n_q, k, p_bias, gen).reshape(n_q, ORDERS, k).mean(axis=1)


def _reject_exact_sequential(k: int, p_bias: float, n_q: int, reps: int,
                             gen: np.random.Generator) -> int:
    hits, threshold = 0, math.log(1 / ALPHA)
    chunk = max(1, 2_000_000 // (n_q * ORDERS * k))
    for start in range(0, reps, chunk):
        vectors = np.stack([exact_vectors(n_q, k, p_bias, gen)
                            for _ in range(min(chunk, reps - start))])
        crossed = log_e_vectors(vectors, method=DEFAULT_SEQUENTIAL_METHOD).max(axis=1) \
            >= threshold
        if start == 0:  # the kernel is the public test's
            for v, hit in zip(vectors[:3], crossed[:3], strict=True):
                assert sequential_exact_test(v, alpha=ALPHA).reject == hit
        hits += int(crossed.sum())
    return hits


def simulated_power(design: str, k: int, p_bias: float, n_q: int, reps: int,
                    gen: np.random.Generator) -> tuple[float, float]:
    """Rejection rate and its Monte-Carlo SE."""
    if design == "fixed":
        hits = sum(pob_unbp(simulate_evaluations(n_q, k=k, n_perms=ORDERS, p_bias=p_bias,
                                                 rng=gen), alpha=ALPHA).reject
                   for _ in range(reps))
    elif design == "exact":
        hits = sum(_pob_unbp_shares(exact_shares(n_q, k, p_bias, gen), ALPHA, 0.0,
                                    "pooled", "both", 2).reject for _ in range(reps))
    elif design == "exact+sequential":
        hits = _reject_exact_sequential(k, p_bias, n_q, reps, gen)
    else:
        positions = np.stack([
            simulate_evaluations(n_q, k=k, n_perms=ORDERS, p_bias=p_bias, rng=gen).position
            for _ in range(reps)])
        log_e = log_e_values(positions, k, method=DEFAULT_SEQUENTIAL_METHOD)
        hits = int((log_e.max(axis=1) >= math.log(1 / ALPHA)).sum())
    return _rate(int(hits), reps)


def _rate(hits: int, reps: int) -> tuple[float, float]:
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


def power_row(base: dict[str, Any], planned: dict[str, Any], p: float, se: float,
              reps: int, seconds: float) -> dict[str, Any]:
    """A power comparison; ``side``: within 0.05, or the plan conservative/optimistic."""
    diff = planned["power"] - p
    side = "within" if abs(diff) <= 0.05 else "conservative" if diff < 0 else "optimistic"
    return {**base, "quantity": "power", "planned": planned["power"],
            "planned_se": planned["power_se"], "simulated": p, "simulated_se": se,
            "reps": reps, "method": planned["power_method"], "ok": side == "within",
            "side": side, "seconds": seconds}


def cell(k: int, p_bias: float, n_q: int, design: str, planned: dict[str, Any],
         args: argparse.Namespace, gen: np.random.Generator, tag: str) -> list[dict[str, Any]]:
    base = {"model": "section-8", "k": k, "p_bias": p_bias, "queries": n_q,
            "orders": ORDERS, "design": design, "size": tag, "alpha": ALPHA}
    reps = args.reps_sequential if design.endswith("sequential") else args.reps
    t0 = time.perf_counter()
    p, se = simulated_power(design, k, p_bias, n_q, reps, gen)
    rows = [power_row(base, planned, p, se, reps, time.perf_counter() - t0)]
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


def _emit(out: Path, rows: list[dict[str, Any]]) -> None:
    with out.open("a", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    for row in rows:
        print(f"{row['model']} k={row['k']} p_bias={row['p_bias']:.3g} n={row['queries']} "
              f"({row['size']}) {row['design']} {row['quantity']}: planned "
              f"{row['planned']:.4f} simulated {row['simulated']:.4f} ± "
              f"{row['simulated_se']:.4f} {row.get('side', 'ok' if row['ok'] else 'OFF')} "
              f"({row['seconds']:.1f} s)", flush=True)


def section8(args: argparse.Namespace, gen: np.random.Generator, out: Path) -> None:
    for k in KS:
        for p_bias in P_BIAS:
            effect = Effect.from_p_bias(p_bias, k=k)
            sized = plan_audit(effect, orders=ORDERS, alpha=ALPHA, reps=args.plan_reps,
                               half_width_reps=args.plan_half_width_reps, rng=gen)
            for design in DESIGNS:
                d = next(x for x in sized.designs if x.design == design)
                grid = (SMALL if design in ("fixed", "exact") else ()) + QUERIES
                points = [(n, "grid") for n in grid] + (
                    [(d.queries, "planned")] if d.queries else [])
                for n_q, tag in points:
                    plan = plan_audit(effect, orders=ORDERS, alpha=ALPHA, queries=n_q,
                                      designs=[design], reps=args.plan_reps,
                                      half_width_reps=args.plan_half_width_reps, rng=gen)
                    _emit(out, cell(k, p_bias, n_q, design, plan.designs[0].to_dict(), args,
                                    gen, tag))


def two_mode_evaluations(n_q: int, k: int, gen: np.random.Generator) -> Any:
    """Evaluations of the two-mode model: query j answers position 1 with probability
    a_j ~ Beta(TWO_MODE), else position k, in each of its PILOT_ORDERS orders (the
    orders are simulate_evaluations', the answers ignore them)."""
    ev = simulate_evaluations(n_q, k=k, n_perms=PILOT_ORDERS, p_bias=0.0, rng=gen)
    a = gen.beta(*TWO_MODE, size=n_q)
    position = np.where(gen.random(ev.query.size) < a[ev.query], 0, k - 1).astype(np.int64)
    return dataclasses.replace(ev, position=position,
                               item=ev.orders[np.arange(position.size), position])


def _pilot_rows(model: str, effect: Effect, exact_effect: Effect | None, designs: list[str],
                replay: dict[str, Any], args: argparse.Namespace, gen: np.random.Generator,
                out: Path) -> None:
    """The fixed designs planned from a pilot's effects against ``replay[design](n, reps)``
    (a rejection count)."""
    sized = plan_audit(effect, exact_effect=exact_effect, orders=PILOT_ORDERS, alpha=ALPHA,
                       designs=designs, reps=args.plan_reps, half_width_reps=10, rng=gen)
    for d in sized.designs:
        eff = sized.effect_of(d)
        points = [(n, "grid") for n in PILOT_SIZES] + (
            [(d.queries, "planned")] if d.queries else [])
        for n_q, tag in points:
            plan = plan_audit(effect, exact_effect=exact_effect, orders=PILOT_ORDERS,
                              alpha=ALPHA, queries=n_q, designs=[d.design],
                              reps=args.plan_reps, half_width_reps=10, rng=gen)
            t0 = time.perf_counter()
            p, se = _rate(replay[d.design](n_q, args.reps), args.reps)
            base = {"model": model, "k": eff.k, "p_bias": eff.p_bias, "pb": eff.pb,
                    "queries": n_q, "orders": PILOT_ORDERS, "design": d.design,
                    "size": tag, "alpha": ALPHA}
            _emit(out, [power_row(base, plan.designs[0].to_dict(), p, se, args.reps,
                                  time.perf_counter() - t0)])


def two_mode(args: argparse.Namespace, gen: np.random.Generator, out: Path) -> None:
    k = 5
    pilot = two_mode_evaluations(PILOT_QUERIES, k, gen).to_frame()
    effect = effect_from_evaluations(pilot, rng=gen)

    def fixed(n: int, reps: int) -> int:
        return sum(pob_unbp(two_mode_evaluations(n, k, gen), alpha=ALPHA).reject
                   for _ in range(reps))

    _pilot_rows("two-mode pilot", effect, None, ["fixed"], {"fixed": fixed}, args, gen, out)


def pool(args: argparse.Namespace, gen: np.random.Generator, out: Path) -> None:
    run = Path(args.pilot)
    table = pd.read_parquet(run / "evaluations.parquet")
    answers = effect_from_evaluations(table, rng=gen)
    shares = {"fixed": query_position_shares(evaluations_from_table(table))}
    vectors = None
    if "choice_probs" in table.columns and table["choice_probs"].notna().any():
        vectors = effect_from_evaluations(table, exact=True, rng=gen)
        shares["exact"] = exact_evaluations_from_table(table).query_shares()

    def replayer(y: np.ndarray) -> Any:
        def count(n: int, reps: int) -> int:
            return sum(_pob_unbp_shares(y[gen.permutation(len(y))[:n]], ALPHA, 0.0,
                                        "pooled", "both", 2).reject for _ in range(reps))
        return count

    _pilot_rows(f"pool {run.parent.name}", answers, vectors, list(shares),
                {d: replayer(y) for d, y in shares.items()}, args, gen, out)


def run(args: argparse.Namespace) -> None:
    gen = np.random.default_rng(args.seed)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("", encoding="utf-8")
    section8(args, gen, out)
    if args.two_mode:
        two_mode(args, gen, out)
    if args.pilot:
        pool(args, gen, out)


def table(args: argparse.Namespace) -> None:
    rows = [json.loads(line) for line in Path(args.file).read_text().splitlines() if line]
    print("| model | k | p_bias | design | queries | quantity | planned | simulated ± MC SE "
          "| within tolerance |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        n = f"{r['queries']}" + (" (planned)" if r["size"] == "planned" else "")
        pse = f" ± {r['planned_se']:.3f}" if r.get("planned_se") else ""
        ok = "yes" if r["ok"] else "conservative" if r.get("side") == "conservative" \
            else "**no**"
        print(f"| {r.get('model', 'section-8')} | {r['k']} | {r['p_bias']:.3g} | "
              f"{r['design']} | {n} | {r['quantity']} | {r['planned']:.4f}{pse} | "
              f"{r['simulated']:.4f} ± {r['simulated_se']:.4f} | {ok} |")
    for q in ("power", "pb_half_width"):
        sub = [r for r in rows if r["quantity"] == q]
        if not sub:
            continue
        if q == "power":
            for model in dict.fromkeys(r.get("model", "section-8") for r in sub):
                part = [r for r in sub if r.get("model", "section-8") == model]
                sides = {s: sum(r.get("side") == s for r in part)
                         for s in ("within", "conservative", "optimistic")}
                worst = max(part, key=lambda r: r["planned"] - r["simulated"])
                print(f"\npower, {model}: {sides['within']}/{len(part)} within tolerance, "
                      f"{sides['conservative']} conservative, {sides['optimistic']} "
                      f"optimistic; largest planned - simulated = "
                      f"{worst['planned'] - worst['simulated']:+.3f} ({worst['design']}, "
                      f"k = {worst['k']}, p_bias {worst['p_bias']:.3g}, "
                      f"{worst['queries']} queries)")
        else:
            worst_r = max(abs(r["ratio"] - 1) for r in sub)
            print(f"\n{q}: {sum(r['ok'] for r in sub)}/{len(sub)} within tolerance; "
                  f"worst |ratio - 1| = {worst_r:.3f}")
    ci = binomial_interval(sum(r["ok"] for r in rows), len(rows))
    print(f"all: {sum(r['ok'] for r in rows)}/{len(rows)} within tolerance (Wilson 95% "
          f"[{ci.low:.2f}, {ci.high:.2f}]); "
          f"{sum(r.get('side') == 'conservative' for r in rows)} conservative")


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
    r.add_argument("--two-mode", action=argparse.BooleanOptionalAction, default=True,
                   help="the pilot-like two-mode model (default on)")
    r.add_argument("--pilot", help="a real run folder whose pool is replayed")
    r.add_argument("--out", default="benchmarks/results/validate_plan.jsonl")
    r.set_defaults(func=run)
    t = sub.add_parser("table")
    t.add_argument("file")
    t.set_defaults(func=table)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
