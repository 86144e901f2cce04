"""Worked example: inter-bias of two baselines on MovieLens-100K, by gender.

1. Random 80/20 split of each user's interactions (seeded).
2. Two model-free recommenders, each giving every user 15 items they have not rated
   in training: *MostPop* (the most popular items) and *Random*.
3. ``recaudit.fairness.evaluate`` with gender, female users protected, N = 5, 10, 15,
   1000 bootstrap resamples and 999 permutations.

The split and the lists are written to ``--out`` so that the same numbers can be
reproduced with the command line (``recaudit fairness evaluate ...``).

    PYTHONPATH=src python docs/examples/ml100k_popularity_baseline.py \
        --data /work/shared/data/ml-100k --out /tmp/ml100k-example
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from recaudit.fairness import EvaluateOptions, FairnessEvaluation, evaluate

LENGTH = 15


def read_atomic(path: Path) -> pd.DataFrame:
    """A RecBole atomic file (tab-separated, ``name:type`` headers), ids as strings."""
    table = pd.read_csv(path, sep="\t", dtype=str)
    table.columns = [c.split(":")[0] for c in table.columns]
    return table


def split(inter: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per user, a random 80 % of the interactions (rounded up) to train, the rest to test."""
    shuffled = inter[["user_id", "item_id"]].sample(frac=1.0, random_state=seed)
    position = shuffled.groupby("user_id").cumcount()
    size = shuffled.groupby("user_id")["item_id"].transform("size")
    is_train = position < np.ceil(0.8 * size)
    return shuffled[is_train].reset_index(drop=True), shuffled[~is_train].reset_index(drop=True)


def top_unseen(train: pd.DataFrame, ranking: dict[str, np.ndarray]) -> pd.DataFrame:
    """The first ``LENGTH`` items of each user's ranking that the user has not rated."""
    seen = train.groupby("user_id")["item_id"].apply(set)
    rows = []
    for user, items in seen.items():
        picks = [i for i in ranking[user] if i not in items][:LENGTH]
        rows.append(pd.DataFrame({"user_id": user, "item_id": picks, "rank": range(1, LENGTH + 1)}))
    return pd.concat(rows, ignore_index=True)


def summary(name: str, r: FairnessEvaluation) -> None:
    print(
        f"\n== {name}: {r.n_users} users ({r.groups['F'].n_users} F, "
        f"{r.groups['M'].n_users} M), {r.n_items} items"
    )
    print(f"{'N':>3} {'IC':>7} {'Gini':>6} {'ARP':>7} {'tail':>6}")
    for c in r.n:
        arp = r.avg_popularity[c] if r.avg_popularity else float("nan")
        tail = r.long_tail_share[c] if r.long_tail_share else float("nan")
        print(
            f"{c:>3} {r.item_coverage[c].value:7.4f} {r.exposure_gini[c]:6.3f} "
            f"{arp:7.1f} {tail:6.3f}"
        )
    print(
        f"{'metric':<13}{'F':>8}{'M':>8}  {'RD [95% CI]':<26}{'p':>7}{'p_Holm':>8}"
        f"  {'NRD':>6}  {'IB [95% CI]':<24}"
    )
    for key, ib in r.inter_bias.items():
        print(
            f"{key:<13}{ib.protected_mean:8.4f}{ib.unprotected_mean:8.4f}  "
            f"{ib.rd.value:+.3f} [{ib.rd.ci.low:+.3f}, {ib.rd.ci.high:+.3f}]   "
            f"{ib.pvalue:7.3f}{ib.pvalue_holm:8.3f}  {ib.nrd.value:6.3f}  "
            f"{ib.ib.value:.3f} [{ib.ib.ci.low:.3f}, {ib.ib.ci.high:.3f}]"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data/ml-100k"))
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    inter = read_atomic(args.data / "ml-100k.inter")
    users = read_atomic(args.data / "ml-100k.user")[["user_id", "gender", "age"]]
    items = read_atomic(args.data / "ml-100k.item")[["item_id"]]
    train, test = split(inter, args.seed)

    by_popularity = train["item_id"].value_counts().index.to_numpy()
    rng = np.random.default_rng(args.seed)
    catalog = items["item_id"].to_numpy()
    recommenders = {
        "MostPop": top_unseen(train, dict.fromkeys(train["user_id"].unique(), by_popularity)),
        "Random": top_unseen(
            train, {u: rng.permutation(catalog) for u in train["user_id"].unique()}
        ),
    }
    for name, recs in recommenders.items():
        r = evaluate(
            recs,
            test,
            users,
            attribute="gender",
            protected="F",
            items=items,
            train=train,
            options=EvaluateOptions(n=(5, 10, 15), n_boot=1000, n_resamples=999),
            rng=args.seed,
        )
        summary(name, r)
        if name == "MostPop":
            rc = evaluate(
                recs,
                test,
                users,
                attribute="gender",
                protected="F",
                items=items,
                options=EvaluateOptions(
                    n=(10,), n_boot=1000, n_resamples=0, resample_coverage=True
                ),
                rng=args.seed,
            )
            ic, ib = rc.item_coverage[10], rc.inter_bias["ndcg@10"].ib
            print(
                f"resample_coverage=True: IC@10 {ic.value:.4f} [{ic.ci.low:.4f}, "
                f"{ic.ci.high:.4f}], IB-NDCG@10 {ib.value:.3f} [{ib.ci.low:.3f}, {ib.ci.high:.3f}]"
            )
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            recs.to_csv(args.out / f"recs_{name.lower()}.csv", index=False)
    if args.out is not None:
        for table, frame in (("train", train), ("test", test), ("users", users), ("items", items)):
            frame.to_csv(args.out / f"{table}.csv", index=False)
        print(f"\nwrote the split and the lists to {args.out}")


if __name__ == "__main__":
    main()
