"""One audit of an LLM recommender for both biases, on MovieLens 100K.

The packaged SmolLM2-135M (llama.cpp engine, constrained answers at T=0) recommends
one movie from k candidates that an item-kNN retriever drew from the user's liked
history; every user's candidates are shown in several random orders. From the same
run:

1. its positional bias (the positional study: PB, sPB, POB-UNBP, ...);
2. the popularity and group bias of what it recommends (the inter-bias study's
   metrics): each user's recommendation is the movie it picked most often over the
   orders (its order-free answer), evaluated against the held-out liked movie with
   per-gender metrics, RD / NRD / IB, ARP, APLT, PopRSP / PopREO; the retriever's own
   top-1 beside it, so the LLM's effect is seen apart from the candidate generator's;
3. the interaction: is the position effect stronger for long-tail movies than for
   popular ones (the position-1 lift per class and its difference, with CIs).

Usage (from the project root, next to ../shared/data; a few minutes on 2 cores)::

    OMP_WAIT_POLICY=PASSIVE python examples/movielens_joint_audit.py \
        [--data ../shared/data/ml-100k] [--users 40] [--orders 4] [--k 5] [--out runs/ml] \
        [--model smollm2-135m | gemma3-270m | PATH.gguf]

docs/joint-audit.md shows its output and how to read it.
"""

from __future__ import annotations

import argparse
import importlib.resources
import json
from pathlib import Path

import pandas as pd

from recaudit.audit import parse_config, run_audit
from recaudit.exceptions import InputError
from recaudit.fairness import EvaluateOptions, evaluate, head_items
from recaudit.llm import ItemKNNRetriever, movielens_testbed
from recaudit.positional import (
    analyze,
    evaluations_from_table,
    position_lift_by_class,
)

PROMPT = importlib.resources.files("recaudit.llm").joinpath("configs", "movielens_prompt.toml")


def build_config(out: Path, users: int, orders: int, k: int, seed: int, testbed,
                 model: str) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    items = testbed.catalog.items
    items[["item_id", "title", "description", "category"]].to_csv(out / "catalog.csv",
                                                                   index=False)
    with (out / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for q in testbed.queries:
            fh.write(json.dumps({"query_id": q.query_id, "text": q.text}) + "\n")
    return {
        "seed": seed, "concurrency": 8, "temperatures": [0.0], "conditions": ["permutation"],
        "catalog": {"path": str(out / "catalog.csv"),
                    "columns": {"id": "item_id", "title": "title",
                                "description": "description", "category": "category"}},
        "queries": {"file": str(out / "queries.jsonl")},
        "retrieval": {"k": [k]},
        "prompt": {"template": str(PROMPT), "identifiers": "positional",
                   "max_tokens": 40, "constrained": True},
        "design": {"kind": "sampled", "n_perms": orders, "samples_per_order": 1},
        "models": [{"name": model, "backend": "local", "model": model, "n_threads": 2,
                    "batch_size": 4}],
    }


def modal_picks(table: pd.DataFrame) -> pd.DataFrame:
    """Each user's most frequent pick over the orders (ties: the better-retrieved one)."""
    ok = table.dropna(subset=["selected_item_id"])
    counts = ok.groupby(["query_id", "selected_item_id", "selected_original_index"]).size()
    best = counts.reset_index(name="n").sort_values(
        ["query_id", "n", "selected_original_index"], ascending=[True, False, True])
    first = best.drop_duplicates("query_id")
    return pd.DataFrame({"user_id": first["query_id"].astype(str),
                         "item_id": first["selected_item_id"].astype(str), "rank": 1})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="../shared/data/ml-100k")
    ap.add_argument("--users", type=int, default=40)
    ap.add_argument("--orders", type=int, default=4)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--out", default="runs/movielens-joint")
    ap.add_argument("--model", default="smollm2-135m",
                    help="a packaged model (smollm2-135m, gemma3-270m) or a GGUF path")
    args = ap.parse_args()
    out = Path(args.out)
    testbed = movielens_testbed(args.data, n_users=args.users, history=10, rng=args.seed)
    retriever = ItemKNNRetriever(testbed.train, testbed.history)
    cfg = parse_config(build_config(out / "inputs", args.users, args.orders, args.k,
                                    args.seed, testbed, args.model), base_dir=out)
    resume = (out / "run" / "journal.sqlite").exists()
    res = run_audit(cfg, out_dir=out / "run", retriever=retriever, resume=resume)
    table = pd.read_parquet(res.evaluations_path)
    candidates = pd.read_parquet(res.run_dir / "candidates.parquet")
    report = {"positional": analyze(table, rng=args.seed).to_dict()}
    report.update(group_and_popularity(table, candidates, testbed, args.seed))
    report["position_lift_by_class"] = lift_by_popularity(table, candidates, testbed,
                                                          args.seed)
    (out / "joint.json").write_text(json.dumps(report, indent=1, default=str),
                                    encoding="utf-8")
    print_summary(report)
    print(f"\neverything: {out / 'joint.json'}")


def group_and_popularity(table: pd.DataFrame, candidates: pd.DataFrame, testbed,
                         seed: int) -> dict:
    """The inter-bias study's metrics at N = 1 for the LLM's modal pick and for the
    retriever's top-1 (decision 0229)."""
    users = testbed.users[["user_id", "gender"]]
    options = EvaluateOptions(n=(1,), n_boot=1000, n_resamples=1000)
    top1 = candidates[candidates["original_index"] == 1]
    systems = {"llm": modal_picks(table),
               "retriever": pd.DataFrame({"user_id": top1["query_id"].astype(str),
                                          "item_id": top1["item_id"].astype(str),
                                          "rank": 1})}
    return {name: evaluate(recs, testbed.test, users, attribute="gender", protected="F",
                           n_items=len(testbed.catalog), train=testbed.train,
                           options=options, rng=seed).to_dict()
            for name, recs in systems.items()}


def lift_by_popularity(table: pd.DataFrame, candidates: pd.DataFrame, testbed,
                       seed: int) -> dict:
    """Position-1 lift of popular (head) and long-tail candidates, and the difference."""
    pop = testbed.train.groupby("item_id")["user_id"].nunique()
    ids = testbed.catalog.items["item_id"].astype(str)
    head = dict(zip(ids, head_items(pop.reindex(ids, fill_value=0).to_numpy(),
                                    ids.to_numpy()), strict=True))
    ev = evaluations_from_table(table)
    cls = candidates.assign(cls=candidates["item_id"].astype(str).map(
        lambda i: "head" if head[i] else "tail"))
    grid = cls.pivot(index="query_id", columns="original_index", values="cls")
    item_class = grid.loc[[str(q) for q in ev.query_ids]].to_numpy()
    try:
        return position_lift_by_class(ev, item_class, contrast=("head", "tail"),
                                      n_boot=2000, rng=seed).to_dict()
    except InputError as exc:  # e.g. no long-tail movie among the candidates
        return {"reason": str(exc)}


def _ci(e: dict) -> str:
    value = e["value"]
    if value is None or value != value:  # nan: bounded, not identified
        return f"not identified, within [{e['ci_low']:.3f}, {e['ci_high']:.3f}]"
    return f"{value:.3f} [{e['ci_low']:.3f}, {e['ci_high']:.3f}]"


def print_summary(report: dict) -> None:
    pos = report["positional"]
    shares = ", ".join(f"{x:.2f}" for x in pos.get("position_distribution") or [])
    print(f"\n== positional bias: shares by prompt position [{shares}]")
    for key in ("pb", "spb"):
        if isinstance(pos.get(key), dict) and "value" in pos[key]:
            print(f"  {key.upper()}: {_ci(pos[key])}")
    if isinstance(pos.get("pob_unbp"), dict):
        print(f"  POB-UNBP: L = {pos['pob_unbp'].get('L', float('nan')):.3f}, "
              f"p = {max(pos['pob_unbp'].get('pvalue', float('nan')), 1e-300):.3g}")
    print("\n== group and popularity bias at N = 1 (F = protected)")
    for name in ("llm", "retriever"):
        ev = report[name]
        hit = {g: ev["groups"][g]["hit@1"]["value"] for g in ev["groups"]}
        rd = ev["rd"]["hit@1"]
        pb = ev["popularity_bias"]["overall"]
        print(f"  {name:9}: hit@1 " + ", ".join(f"{g} {v:.3f}" for g, v in hit.items())
              + f"; RD(hit@1) {_ci(rd)} p {rd['pvalue']:.3g}; ARP@1 {_ci(pb['arp@1'])}; "
              f"APLT@1 {_ci(pb['aplt@1'])}")
    lift = report["position_lift_by_class"]
    if "reason" in lift:
        print(f"\n== position-1 lift by popularity: not estimable ({lift['reason']})")
        return
    print("\n== position-1 lift by popularity class (shown at position 1 vs elsewhere)")
    for g in lift["classes"]:
        print(f"  {g}: {_ci(lift['lift'][g])} ({lift['showings_at'][g]} showings at 1)")
    print(f"  tail - head: {_ci(lift['difference'])}, p = {lift['pvalue']:.3g}")

if __name__ == "__main__":
    main()
