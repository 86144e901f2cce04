"""Validate `positional compare` on sPB, soft bias and the position-driven share.

Two systems answer the same queries under the same orders (the paired design); each
query has a relevance set (uniform over the non-empty subsets) shared by both. A system
picks, with probability p, by position -- ``paper``: the item at position 1, whatever it
is; ``primacy``: the relevant candidate shown earliest -- and otherwise a relevant
item uniformly. The generator is written here, independent of the package's simulators.
Population truths: sPB = p (1 - E|R|/k) for ``paper`` and 0 for ``primacy``;
share = p for both. Per scenario: coverage of the true difference by the 95 % CI and
the rejection rate at alpha 0.05 (type-I error where the truth is 0), with Monte-Carlo
s.e.

    nice -n 10 env PYTHONPATH=src python benchmarks/validate_compare_split.py --reps 200
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from recaudit.positional._compare import compare_systems
from recaudit.positional._simulation import evaluations_from_draws

K, N, ORDERS = 5, 200, 16
#: (name, (rule, p) of system a, (rule, p) of system b)
SCENARIOS = {
    "same": (("paper", 0.1), ("paper", 0.1)),
    "strong vs soft": (("paper", 0.1), ("primacy", 0.1)),
    "stronger": (("paper", 0.2), ("paper", 0.1)),
}


def _mean_size() -> float:
    # |R| ~ Binomial(k, 1/2) conditioned on >= 1
    return (K / 2) / (1 - 2.0**-K)


def truth(rule: str, p: float) -> dict[str, float]:
    spb = p * (1 - _mean_size() / K) if rule == "paper" else 0.0
    return {"spb": spb, "soft": p - spb, "positional_share": p}


def _system(rule: str, p: float, member: np.ndarray, orders: np.ndarray, query: np.ndarray,
            gen: np.random.Generator) -> object:
    n = query.size
    rel = member[query]  # (n, k) relevance by item
    # a relevant item uniformly: random scores, max over the relevant ones
    scores = np.where(rel, gen.random((n, K)), -1.0)
    item = scores.argmax(axis=1)
    by_position = gen.random(n) < p
    if rule == "paper":
        driven = orders[:, 0]
    else:  # the earliest shown relevant candidate
        shown = np.take_along_axis(rel, orders, axis=1)
        driven = orders[np.arange(n), shown.argmax(axis=1)]
    item = np.where(by_position, driven, item)
    return evaluations_from_draws(K, N, query, orders, item)


def run(name: str, reps: int, seed: int) -> dict[str, object]:
    (ra, pa), (rb, pb) = SCENARIOS[name]
    ta, tb = truth(ra, pa), truth(rb, pb)
    gen = np.random.default_rng(seed)
    cover = {m: 0 for m in ta}
    reject = {m: 0 for m in ta}
    for _ in range(reps):
        member = gen.random((N, K)) < 0.5
        while not member.any(axis=1).all():
            empty = ~member.any(axis=1)
            member[empty] = gen.random((int(empty.sum()), K)) < 0.5
        query = np.repeat(np.arange(N), ORDERS)
        orders = gen.permuted(np.tile(np.arange(K), (N * ORDERS, 1)), axis=1)
        systems = {"a": _system(ra, pa, member, orders, query, gen),
                   "b": _system(rb, pb, member, orders, query, gen)}
        for r in compare_systems(systems, n_boot=200, rng=gen, adjust="none"):
            if r.measure in cover:
                d = ta[r.measure] - tb[r.measure]
                cover[r.measure] += r.ci_low <= d <= r.ci_high
                reject[r.measure] += r.pvalue <= 0.05
    out: dict[str, object] = {"scenario": name, "a": [ra, pa], "b": [rb, pb], "reps": reps,
                              "queries": N, "orders": ORDERS, "k": K, "seed": seed}
    for m in ta:
        c, rj = cover[m] / reps, reject[m] / reps
        out[m] = {"truth": ta[m] - tb[m], "coverage": c,
                  "coverage_mcse": (c * (1 - c) / reps) ** 0.5, "reject": rj,
                  "reject_mcse": (rj * (1 - rj) / reps) ** 0.5}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=SCENARIOS)
    ap.add_argument("--out", type=Path,
                    default=Path("benchmarks/results/validate_compare_split.jsonl"))
    args = ap.parse_args()
    with args.out.open("a", encoding="utf-8") as f:
        for name in args.scenarios:
            res = run(name, args.reps, args.seed)
            f.write(json.dumps(res) + "\n")
            print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
