"""Benchmark: vectorised per-user top-N metrics vs a naive per-user Python loop.

Synthetic top-20 lists over a 50,000-item catalog, 5 test items per user (two of them
planted in the list so that there are hits). Both implementations run in this process
on the same ``--baseline-users`` users (results checked equal, ratio reported); the
vectorised path is then timed alone on ``--users`` users, from DataFrames to the
per-user table (validation, id hashing, hit matrix, all metrics at every N), and
``evaluate`` is timed with and without the bootstrap/permutation. Last, the cost of the
popularity-bias section: ``evaluate`` with ``n_boot=200, n_resamples=199`` on
``--train-users`` users with and without ``train=`` (20 training items per user from a
Zipf popularity), alternated ``--repeats`` times in this process; the ratio of the
medians is the section's cost.

    PYTHONPATH=src python benchmarks/bench_fairness_metrics.py --users 1000000
    PYTHONPATH=src python benchmarks/bench_fairness_metrics.py --only-train --train-users 100000
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


def make_train(n_users: int, seed: int, per_user: int = 20) -> pd.DataFrame:
    """``per_user`` distinct training items per user from a Zipf(1) popularity."""
    rng = np.random.default_rng([seed, 1])
    weights = 1.0 / np.arange(1, N_ITEMS + 1)
    items = rng.choice(N_ITEMS, size=(n_users, 3 * per_user), p=weights / weights.sum())
    rows = [np.unique(row)[:per_user] for row in items]
    return pd.DataFrame({"user_id": np.repeat(np.arange(n_users), [r.size for r in rows]),
                         "item_id": np.concatenate(rows)})


def train_cost(n_users: int, repeats: int, seed: int) -> None:
    """``evaluate`` with and without ``train=`` (the popularity section), alternated."""
    recs, test, users = make_data(n_users, seed)
    train = make_train(n_users, seed)
    opts = EvaluateOptions(n=CUTOFFS, n_boot=200, n_resamples=199)
    times: dict[bool, list[float]] = {False: [], True: []}
    for r in range(repeats):
        for with_train in (False, True):
            label = f"evaluate n_boot=200 {'with' if with_train else 'without'} train=, " \
                    f"{n_users:,} users (run {r + 1})"
            _, seconds = timed(label, evaluate, recs, test, users, attribute="gender",
                               protected="F", n_items=N_ITEMS, options=opts, rng=r,
                               train=train if with_train else None)
            times[with_train].append(seconds)
    a, b = float(np.median(times[False])), float(np.median(times[True]))
    print(f"median without train= {a:.2f} s, with {b:.2f} s: the popularity section "
          f"costs {b / a:.2f}x")


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
    parser.add_argument("--train-users", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only-train", action="store_true",
                        help="time only evaluate with and without train=")
    args = parser.parse_args()
    print("load average (1, 5, 15 min): {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    if args.only_train:
        train_cost(args.train_users, args.repeats, args.seed)
        return

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
    train_cost(args.train_users, args.repeats, args.seed)
    print("load average (1, 5, 15 min): {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
