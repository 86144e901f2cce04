"""Simulation tables of docs/exact-and-sequential.md (spec section 8 model).

    PYTHONPATH=src python benchmarks/calibration_exact_sequential.py [--reps 500] [--seed 1]

Part A: POB-UNBP power vs number of queries with sampled choices and with the exact
choice probabilities (same simulated data sets), and the queries needed for 80%.
Part B: type-I error of the sequential test under optional stopping (null, looks
after every evaluation, long budget), and the expected evaluations it needs at the
budget that gives it 80% power vs the evaluations fixed-sample POB-UNBP needs for 80%.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from recaudit._stats import binomial_interval
from recaudit.positional._sequential import log_e_values
from recaudit.positional._simulation import _shares, _simulate_batch
from recaudit.positional._unbp import _reject_many

PERMS = 20


def simulate_probs(reps: int, n_q: int, k: int, p_bias: float, gen: np.random.Generator
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(sampled shares, exact shares), each (reps, n_q, k): the section-8 model with
    its exact per-evaluation position probabilities."""
    rel = gen.random((reps, n_q, 1, k)) < 0.5
    empty = ~rel.any(axis=-1)
    while empty.any():
        rel[empty] = gen.random((int(empty.sum()), k)) < 0.5
        empty = ~rel.any(axis=-1)
    orders = np.argsort(gen.random((reps, n_q, PERMS, k)), axis=-1)
    shown_rel = np.take_along_axis(np.broadcast_to(rel, orders.shape), orders, axis=-1)
    probs = (1 - p_bias) * shown_rel / shown_rel.sum(axis=-1, keepdims=True)
    probs[..., 0] += p_bias
    cum = np.cumsum(probs, axis=-1)
    choice = (gen.random((reps, n_q, PERMS, 1)) > cum).sum(axis=-1)
    choice = np.minimum(choice, k - 1)
    sampled = (choice[..., None] == np.arange(k)).mean(axis=2)
    return sampled, probs.mean(axis=2)


def power_exact(reps: int, gen: np.random.Generator) -> None:
    print("## A. POB-UNBP with sampled choices vs exact probabilities "
          f"({PERMS} orders per query, {reps} replications, alpha = 0.05)\n")
    print("| k | p_bias | queries | sampled power | exact power |")
    print("|---|---|---|---|---|")
    need: dict[tuple[int, float], list[int | None]] = {}
    for k in (5, 10):
        for pb in (0.0, 0.05, 0.1, 0.2):
            grid = (30, 100) if pb == 0 else (3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50,
                                              60, 80, 100)
            first: list[int | None] = [None, None]
            for n_q in grid:
                hits = np.zeros(2)
                done = 0
                while done < reps:
                    r = min(100, reps - done)
                    s, e = simulate_probs(r, n_q, k, pb, gen)
                    hits += [_reject_many(s, 0.05).sum(), _reject_many(e, 0.05).sum()]
                    done += r
                rate = hits / reps
                for i in range(2):
                    if first[i] is None and pb > 0 and rate[i] >= 0.8:
                        first[i] = n_q
                print(f"| {k} | {pb} | {n_q} | {rate[0]:.3f} | {rate[1]:.3f} |", flush=True)
                if pb > 0 and first[0] is not None and first[1] is not None:
                    break
            need[(k, pb)] = first
    print("\nQueries for 80% power (first grid point reaching it):\n")
    print("| k | p_bias | sampled | exact | saving |")
    print("|---|---|---|---|---|")
    for (k, pb), (s, e) in need.items():
        if pb > 0:
            saving = "" if s is None or e is None else f"{1 - e / s:.0%}"
            print(f"| {k} | {pb} | {s} | {e} | {saving} |")


def type_one(reps: int, gen: np.random.Generator) -> None:
    print(f"\n## B1. Sequential type-I error under optional stopping "
          f"(null, looks after every evaluation, {reps} replications)\n")
    print("| k | budget (evaluations) | method | rejection rate [Wilson 95%] |")
    print("|---|---|---|---|")
    for k in (5, 10):
        n_q = 200
        _, pos, _ = _simulate_batch(reps, n_q, k, PERMS, 0.0, gen)
        for method in ("favoured", "dirichlet", "mixture"):
            hits = 0
            for chunk in np.array_split(pos, max(1, reps // 250)):
                le = log_e_values(chunk, k, method=method)  # type: ignore[arg-type]
                hits += int((le >= np.log(20)).any(axis=1).sum())
            ci = binomial_interval(hits, reps)
            print(f"| {k} | {n_q * PERMS} | {method} | {hits / reps:.4f} "
                  f"[{ci.low:.4f}, {ci.high:.4f}] |", flush=True)


def efficiency(reps: int, gen: np.random.Generator) -> None:
    print(f"\n## B2. Evaluations to detect: sequential vs fixed-sample POB-UNBP at 80% power "
          f"({reps} replications, crossing at any evaluation, paid to the end of its query "
          f"block of {PERMS})\n")
    print("| k | p_bias | fixed POB-UNBP: evaluations for 80% | sequential: budget for 80% | "
          "sequential: expected evaluations | saving |")
    print("|---|---|---|---|---|---|")
    for k in (5, 10):
        for pb in (0.05, 0.1, 0.2):
            n80 = None
            for n_q in list(range(2, 40)) + list(range(40, 400, 5)):
                _, pos, _ = _simulate_batch(reps, n_q, k, PERMS, pb, gen)
                if _reject_many(_shares(pos, n_q, k), 0.05).mean() >= 0.8:
                    n80 = n_q
                    break
            assert n80 is not None
            max_q = 3 * n80
            _, pos, _ = _simulate_batch(reps, max_q, k, PERMS, pb, gen)
            hit = log_e_values(pos, k, method="favoured") >= np.log(20)
            # first crossing, paid up to the end of its query block (the runner's round)
            first = hit.argmax(axis=1) + 1
            tau = np.where(hit.any(axis=1), np.ceil(first / PERMS) * PERMS, np.inf)
            budget = float(np.quantile(tau, 0.8))
            cost = float(np.minimum(tau, budget).mean())
            fixed = n80 * PERMS
            print(f"| {k} | {pb} | {fixed} ({n80} queries) | {budget:.0f} | {cost:.0f} | "
                  f"{1 - cost / fixed:.0%} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--null-reps", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--part", choices=("all", "exact", "sequential"), default="all")
    args = ap.parse_args()
    gen = np.random.default_rng(args.seed)
    t0 = time.time()
    if args.part in ("all", "exact"):
        power_exact(args.reps, gen)
    if args.part in ("all", "sequential"):
        type_one(args.null_reps, gen)
        efficiency(args.reps, gen)
    print(f"\n(wall time {time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
