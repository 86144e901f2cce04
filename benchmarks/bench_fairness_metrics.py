"""Benchmark: vectorised per-user top-N metrics vs a naive per-user Python loop.

Synthetic top-20 lists over a 50,000-item catalog, 5 test items per user (two of them
planted in the list so that there are hits). Both implementations run in this process
on the same ``--baseline-users`` users (results checked equal, ratio reported); the
vectorised path is then timed alone on ``--users`` users, from DataFrames to the
per-user table (validation, id hashing, hit matrix, all metrics at every N), and
``evaluate`` is timed with and without the bootstrap/permutation.

    PYTHONPATH=src python benchmarks/bench_fairness_metrics.py --users 1000000
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np
import pandas as pd

from recaudit.fairness import EvaluateOptions, evaluate, per_user_metrics

N_ITEMS = 50_000
LENGTH = 20
CUTOFFS = (5, 10, 20)


def make_data(n_users: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(recs, test, users)`` for ``n_users`` users with distinct items per list."""
    rng = np.random.default_rng(seed)
    base = np.sort(rng.integers(0, N_ITEMS - LENGTH, size=(n_users, LENGTH)), axis=1)
    items = base + np.arange(LENGTH)  # strictly increasing, so distinct within a row
    items = np.take_along_axis(items, rng.random((n_users, LENGTH)).argsort(axis=1), axis=1)
    users = np.arange(n_users)
    recs = pd.DataFrame(
        {
            "user_id": np.repeat(users, LENGTH),
            "item_id": items.ravel(),
            "rank": np.tile(np.arange(1, LENGTH + 1), n_users),
        }
    )
    planted = np.take_along_axis(items, rng.integers(0, LENGTH, size=(n_users, 2)), axis=1)
    others = rng.integers(0, N_ITEMS, size=(n_users, 3))
    test = pd.DataFrame(
        {"user_id": np.repeat(users, 5), "item_id": np.hstack([planted, others]).ravel()}
    )
    table = pd.DataFrame({"user_id": users, "gender": np.where(users % 3 == 0, "F", "M")})
    return recs, test, table


def naive(recs: pd.DataFrame, test: pd.DataFrame) -> pd.DataFrame:
    """The per-user Python loop every evaluation script starts with."""
    truth = test.groupby("user_id")["item_id"].apply(set).to_dict()
    lists = recs.sort_values(["user_id", "rank"]).groupby("user_id")["item_id"].apply(list)
    rows = []
    for u, relevant in truth.items():
        ranked = lists.get(u, [])
        row: dict[str, float] = {"user_id": u}
        for n in CUTOFFS:
            top = ranked[:n]
            hits = [i in relevant for i in top]
            k = sum(hits)
            first = next((r for r, h in enumerate(hits, start=1) if h), None)
            dcg = sum(1 / math.log2(r + 1) for r, h in enumerate(hits, start=1) if h)
            idcg = sum(1 / math.log2(r + 1) for r in range(1, min(len(relevant), n) + 1))
            row |= {
                f"ndcg@{n}": dcg / idcg,
                f"precision@{n}": k / n,
                f"recall@{n}": k / len(relevant),
                f"hit@{n}": float(k > 0),
                f"mrr@{n}": 0.0 if first is None else 1 / first,
            }
        rows.append(row)
    return pd.DataFrame(rows)


def timed(label: str, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    """Run once; print wall time and this process's CPU time (less load-sensitive)."""
    start, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    print(f"{label:<58} {seconds:8.2f} s wall {cpu_seconds:8.2f} s CPU")
    return out, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--baseline-users", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print("load average (1, 5, 15 min): {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))

    recs, test, _ = make_data(args.baseline_users, args.seed)
    ours, t_ours = timed(
        f"vectorised per_user_metrics, {args.baseline_users:,} users",
        per_user_metrics,
        recs,
        test,
        n=CUTOFFS,
    )
    ref, t_naive = timed(f"naive per-user loop, {args.baseline_users:,} users", naive, recs, test)
    merged = ours.merge(ref, on="user_id", suffixes=("", "_ref"))
    worst = max(
        float(np.abs(merged[c] - merged[f"{c}_ref"]).max()) for c in ref.columns if c != "user_id"
    )
    print(f"max |difference| = {worst:.1e}; speed-up = {t_naive / t_ours:.0f}x")

    recs, test, users = make_data(args.users, args.seed)
    timed(
        f"vectorised per_user_metrics, {args.users:,} users x top-{LENGTH}",
        per_user_metrics,
        recs,
        test,
        n=CUTOFFS,
    )
    timed(
        f"evaluate (no bootstrap), {args.users:,} users",
        evaluate,
        recs,
        test,
        users,
        attribute="gender",
        protected="F",
        n_items=N_ITEMS,
        options=EvaluateOptions(n=CUTOFFS, n_boot=0, n_resamples=0),
    )
    timed(
        f"evaluate (n_boot=200, n_resamples=199), {args.users:,} users",
        evaluate,
        recs,
        test,
        users,
        attribute="gender",
        protected="F",
        n_items=N_ITEMS,
        options=EvaluateOptions(n=CUTOFFS, n_boot=200, n_resamples=199),
        rng=0,
    )
    print("load average (1, 5, 15 min): {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
