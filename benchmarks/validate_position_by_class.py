"""Validation of the position lift by item class (``position_lift_by_class``).

Known truth from a generator written here, independent of the estimator: each query
has k candidates, each a "head" item with probability ``--head-share`` (else "tail");
preferences are a softmax of N(0, 1) utilities plus ``--head-pull`` for head items;
each evaluation shows a uniformly random order and, with probability p_g (g = the
class of the item at prompt position 1), the model takes that item, otherwise it draws
by its preferences (the spec's mixture model, section 8, with a class-specific p).

The truth is the estimand's population value, computed from the exact per-query
expectations of its four sums over ``--truth-queries`` queries. Per cell: the bias of
each lift and of the difference (tail - head), the coverage of their 95 % percentile
intervals, and the rejection rate of "no difference" at 0.05, each with its
Monte-Carlo standard error.

Usage::

    PYTHONPATH=src python benchmarks/validate_position_by_class.py --reps 200 --seed 1
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

from recaudit.positional import evaluations_from_table, position_lift_by_class

RESULTS = Path(__file__).resolve().parent / "results" / "position_by_class.jsonl"


def draw_queries(rng, n, k, head_share, head_pull):
    head = rng.random((n, k)) < head_share
    u = rng.normal(size=(n, k)) + head_pull * head
    pi = np.exp(u - u.max(axis=1, keepdims=True))
    return head, pi / pi.sum(axis=1, keepdims=True)


def truth(rng, n, k, head_share, head_pull, p):
    """Population lifts (head, tail) from the exact expected sums of n queries."""
    head, pi = draw_queries(rng, n, k, head_share, head_pull)
    pf = np.where(head, p["head"], p["tail"])  # p of each item when it stands first
    out = {}
    for g, mask in (("head", head), ("tail", ~head)):
        # first item f uniform over k: A = sum_{f in g} (p_f + (1 - p_f) pi_f) / k
        a = (mask * (pf + (1 - pf) * pi)).sum() / k
        b = mask.sum() / k
        # C = sum_f sum_{j in g, j != f} (1 - p_f) pi_j / k
        c = ((1 - pf).sum(axis=1) * (mask * pi).sum(axis=1)
             - ((1 - pf) * mask * pi).sum(axis=1)).sum() / k
        d = (mask.sum(axis=1) * (k - 1)).sum() / k
        out[g] = a / b - c / d
    return out


def simulate(rng, n_queries, k, perms, head_share, head_pull, p):
    head, pi = draw_queries(rng, n_queries, k, head_share, head_pull)
    rows, classes = [], []
    for q in range(n_queries):
        classes.append(np.where(head[q], "head", "tail"))
        for _ in range(perms):
            order = rng.permutation(k)  # order[pos] = 0-based original index
            first = order[0]
            pq = p["head"] if head[q, first] else p["tail"]
            item = first if rng.random() < pq else rng.choice(k, p=pi[q])
            pos = int(np.flatnonzero(order == item)[0]) + 1
            rows.append((f"q{q}", " ".join(str(j + 1) for j in order), pos))
    table = pd.DataFrame(rows, columns=["query_id", "order", "selected_position"])
    return table, np.array(classes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--perms", type=int, default=8)
    ap.add_argument("--queries", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--head-share", type=float, default=0.3)
    ap.add_argument("--head-pull", type=float, default=1.0)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--truth-queries", type=int, default=400_000)
    args = ap.parse_args()
    cells = [{"head": 0.0, "tail": 0.0}, {"head": 0.1, "tail": 0.1},
             {"head": 0.05, "tail": 0.15}, {"head": 0.0, "tail": 0.1}]
    root = np.random.default_rng(args.seed)
    with RESULTS.open("a", encoding="utf-8") as fh:
        for p, n_q in itertools.product(cells, args.queries):
            t0 = time.perf_counter()
            true = truth(root, args.truth_queries, args.k, args.head_share, args.head_pull, p)
            true_diff = true["tail"] - true["head"]
            hits = {"head": 0, "tail": 0, "diff": 0}
            err = {"head": [], "tail": [], "diff": []}
            reject = 0
            for _ in range(args.reps):
                table, classes = simulate(root, n_q, args.k, args.perms, args.head_share,
                                          args.head_pull, p)
                ev = evaluations_from_table(table)
                order = [int(q[1:]) for q in ev.query_ids]
                res = position_lift_by_class(ev, classes[order], contrast=("head", "tail"),
                                             n_boot=args.n_boot, rng=root)
                for g in ("head", "tail"):
                    e = res.lift[g]
                    hits[g] += e.ci.low <= true[g] <= e.ci.high
                    err[g].append(e.value - true[g])
                d = res.difference
                hits["diff"] += d.ci.low <= true_diff <= d.ci.high
                err["diff"].append(d.value - true_diff)
                reject += res.pvalue <= 0.05
            r = args.reps
            row = {"p_head": p["head"], "p_tail": p["tail"], "queries": n_q, "k": args.k,
                   "perms": args.perms, "reps": r, "true_head": true["head"],
                   "true_tail": true["tail"], "true_diff": true_diff}
            for g in ("head", "tail", "diff"):
                cov = hits[g] / r
                row[f"coverage_{g}"] = cov
                row[f"coverage_{g}_se"] = math.sqrt(cov * (1 - cov) / r)
                row[f"bias_{g}"] = float(np.mean(err[g]))
                row[f"bias_{g}_se"] = float(np.std(err[g], ddof=1) / math.sqrt(r))
            row["reject"] = reject / r
            row["reject_se"] = math.sqrt(row["reject"] * (1 - row["reject"]) / r)
            row["seconds"] = round(time.perf_counter() - t0, 1)
            fh.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
