"""Masking with known truth: does a strong long tail hide a planted group gap in the
group metrics, RD, NRD and IB of TRAINED models? (the paper's RQ1; issue 18 item 4)

Data come from ``recaudit.fairness.simulation`` (its interaction model) (a latent taste-cluster
preference model with Zipf item popularity solved for the top-20 % interaction share,
and a planted gap: a share of the protected group's interactions is noise). For each
tail regime (MovieLens-like 0.65, Last.fm-like 0.85) and gap setting:

- the planted truth: the ideal recommender's population per-group NDCG@10 and RD
  (``oracle_truth``: 200,000 users, Monte-Carlo s.e.), once per (tail, gap);
- per replicate: 800 users drawn from the same model, split 80/10/10 per user
  (``split_per_user``), written as RecBole atomic files (``write_atomic_split``);
  ItemKNN, MF (BPR) and LightGCN trained by ``train_model`` (early stopping on
  validation NDCG@10), their lists from ``recommend``; MostPop and the ideal
  recommender (Oracle) on the same split; all evaluated by ``recaudit.fairness.evaluate``
  with ``train=`` (so APLT comes too).

    PYTHONPATH=src OMP_NUM_THREADS=1 nice -n 10 python benchmarks/masking_study.py run \\
        --reps 5 --out benchmarks/results/masking_study.jsonl
    PYTHONPATH=src python benchmarks/masking_study.py table \\
        benchmarks/results/masking_study.jsonl

``run`` appends one JSON line per (tail, gap, replicate) and skips those already in the
file, so an interrupted run resumes. One process; torch on one thread. ``truth
--users U`` recomputes the planted truth of every (tail, gap) in the file on U users
(the replicates do not depend on it) and rewrites the file's ``truth`` entries.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recaudit.fairness import EvaluateOptions, evaluate, split_per_user
from recaudit.fairness.simulation import (
    draw_interactions,
    interaction_model,
    oracle_lists,
    oracle_truth,
)
from recaudit.fairness.study.models import most_popular, recommend, train_model, write_atomic_split

CUT = 10
LIST_LENGTH = 20
#: Gap settings: name -> (protected_noise, noise).
GAPS: dict[str, tuple[float, str]] = {
    "none": (0.0, "uniform"),
    "uniform": (0.25, "uniform"),
    "popularity": (0.25, "popularity"),
}
GENERATOR = {"n_items": 800, "n_clusters": 10, "taste": 2.5, "protected_share": 0.3,
             "interactions_per_user": 30}
N_USERS = 800
N_TRUTH_USERS = 200_000
#: Trained models: name -> (grid, settings); at most EPOCHS epochs, early stopping.
MODELS: dict[str, tuple[dict[str, list[Any]], dict[str, Any]]] = {
    "ItemKNN": ({"k": [50]}, {}),
    "MF": ({"learning_rate": [0.005, 0.02]}, {"stopping_step": 5}),
    "LightGCN": ({"learning_rate": [0.01]}, {"stopping_step": 5}),
}
EPOCHS = 60
OPTIONS = EvaluateOptions(n=(CUT,), n_boot=500, n_resamples=199, min_group_size=20)
ORDER = ("Oracle", "MostPop", "ItemKNN", "MF", "LightGCN")


def _seed(seed: int, tail: float, gap: str, *rest: int) -> list[int]:
    """Seed-sequence entropy of one (tail, gap[, replicate]): independent streams."""
    return [seed, int(round(tail * 1000)), list(GAPS).index(gap), *rest]


def _model(tail: float, gap: str, seed: int) -> tuple[Any, np.random.Generator]:
    """The population of one (tail, gap) and the generator that then draws its truth."""
    eps, noise = GAPS[gap]
    gen = np.random.default_rng(_seed(seed, tail, gap))
    model = interaction_model(rng=gen, top_share=tail, protected_noise=eps, noise=noise,
                              **GENERATOR)
    return model, gen


def _summary(res: Any, seconds: float, extra: dict[str, Any]) -> dict[str, Any]:
    key = f"ndcg@{CUT}"
    gap = res.inter_bias[key]
    groups = {name: g.metrics[key].value for name, g in res.groups.items()}
    pop = res.popularity_bias
    return {
        "ndcg": res.overall[key].value,
        "ndcg_groups": groups,
        "rd": gap.rd.to_dict(),
        "nrd": gap.nrd.to_dict(),
        "ib": gap.ib.to_dict(),
        "pvalue": gap.pvalue,
        "ic": res.item_coverage[CUT].value,
        "aplt": pop.overall[f"aplt@{CUT}"].to_dict() if pop is not None else None,
        "arp": pop.overall[f"arp@{CUT}"].value if pop is not None else None,
        "seconds": round(seconds, 2),
        **extra,
    }


def _lists(sample: Any, split: Any, folder: Path) -> dict[str, tuple[pd.DataFrame, float, dict]]:
    """Every recommender's top-LIST_LENGTH lists on one split, with its seconds."""
    users = split.test["user_id"].unique()
    items = sample.data.interactions["item_id"].unique()
    t0 = time.perf_counter()
    out = {"Oracle": (oracle_lists(sample, split.known, n=LIST_LENGTH, users=users),
                      time.perf_counter() - t0, {})}
    t0 = time.perf_counter()
    out["MostPop"] = (most_popular(users, split.train, n=LIST_LENGTH, exclude=split.known),
                      time.perf_counter() - t0, {})
    path = write_atomic_split(split, folder / "data")
    for name, (grid, settings) in MODELS.items():
        t0 = time.perf_counter()
        trained = train_model(name, path, workdir=folder / name, grid=grid, epochs=EPOCHS,
                              settings=settings)
        recs = recommend(trained, users, n=LIST_LENGTH, exclude=split.known, items=items)
        out[name] = (recs, time.perf_counter() - t0,
                     {"params": trained.params, "valid_ndcg": trained.valid_score})
    return out


def _replicate(model: Any, tail: float, gap: str, rep: int, seed: int) -> dict[str, Any]:
    gen = np.random.default_rng(_seed(seed, tail, gap, rep + 1))
    sample = draw_interactions(model, N_USERS, rng=gen)
    split = split_per_user(sample.data, rng=gen)
    counts = sample.data.interactions["item_id"].value_counts().to_numpy()
    top = float(np.sort(counts)[::-1][: int(np.ceil(0.2 * model.n_items))].sum() / counts.sum())
    rows = {}
    with tempfile.TemporaryDirectory(prefix="masking-") as tmp:
        for name, (recs, seconds, extra) in _lists(sample, split, Path(tmp)).items():
            res = evaluate(recs, split.test, sample.data.users, attribute="gender",
                           protected="F", n_items=model.n_items, train=split.train,
                           options=OPTIONS, rng=gen)
            rows[name] = _summary(res, seconds, extra)
    return {"top_share_realised": top, "models": rows}


def run(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if out.exists():
        done = {(r["tail"], r["gap"], r["rep"], r["seed"])
                for r in map(json.loads, out.read_text().splitlines())}
    with out.open("a") as fh:
        for tail in args.tail:
            for gap in args.gap:
                todo = [k for k in range(args.reps) if (tail, gap, k, args.seed) not in done]
                if not todo:
                    continue
                model, gen = _model(tail, gap, args.seed)
                truth = oracle_truth(model, rng=gen, n_users=N_TRUTH_USERS, n=CUT)
                for rep in todo:
                    start = time.perf_counter()
                    res = _replicate(model, tail, gap, rep, args.seed)
                    line = {"tail": tail, "gap": gap, "rep": rep, "seed": args.seed,
                            "protected_noise": GAPS[gap][0], "noise": GAPS[gap][1],
                            "exponent": model.exponent, "truth": truth.to_dict(), **res,
                            "seconds": round(time.perf_counter() - start, 1)}
                    fh.write(json.dumps(line) + "\n")
                    fh.flush()
                    print(f"tail={tail} gap={gap} rep={rep}: {line['seconds']} s",
                          file=sys.stderr, flush=True)


def truth(args: argparse.Namespace) -> None:
    """Recompute the planted truth of every (tail, gap, seed) in the file on --users."""
    path = Path(args.results)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    cells = sorted({(r["tail"], r["gap"], r["seed"]) for r in lines})
    fresh = {}
    for tail, gap, seed in cells:
        model, gen = _model(tail, gap, seed)
        start = time.perf_counter()
        fresh[tail, gap, seed] = oracle_truth(model, rng=gen, n_users=args.users, n=CUT).to_dict()
        t = fresh[tail, gap, seed]
        print(f"tail={tail} gap={gap}: RD {t['rd']:.4f} ({t['rd_se']:.4f}) on {t['n_users']} "
              f"users, {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    path.write_text("".join(json.dumps({**r, "truth": fresh[r["tail"], r["gap"], r["seed"]]})
                            + "\n" for r in lines))


def _truth_table(path: str) -> None:
    """The planted truth of each (tail, gap): the ideal recommender's group NDCG and RD."""
    seen: dict[tuple[float, str], dict[str, Any]] = {}
    for r in map(json.loads, Path(path).read_text().splitlines()):
        seen.setdefault((r["tail"], r["gap"]), r)
    print("| top-20 % share | gap | Zipf s | NDCG@10 F | NDCG@10 M | planted RD (s.e.) "
          "| users |")
    print("|---" * 7 + "|")
    for (tail, gap), r in sorted(seen.items(), key=lambda p: (p[0][0], list(GAPS).index(p[0][1]))):
        t = r["truth"]
        rd = "0" if r["protected_noise"] == 0 else f"{t['rd']:.3f} ({t['rd_se']:.3f})"
        print(f"| {tail:g} | {gap} | {r['exponent']:.3f} | {t['protected']:.3f} "
              f"| {t['unprotected']:.3f} | {rd} | {t['n_users']:,} |")
    print()


def _rows(path: str) -> pd.DataFrame:
    """One row per (tail, gap, replicate, model)."""
    records = []
    for r in map(json.loads, Path(path).read_text().splitlines()):
        # no noise: both groups have one distribution, the planted RD is 0 exactly
        exact = r["protected_noise"] == 0
        planted = 0.0 if exact else r["truth"]["rd"]
        for name, m in r["models"].items():
            records.append({
                "tail": r["tail"], "gap": r["gap"], "rep": r["rep"], "model": name,
                "planted": planted, "planted_se": 0.0 if exact else r["truth"]["rd_se"],
                "ndcg": m["ndcg"], "ndcg_f": m["ndcg_groups"]["F"],
                "ndcg_m": m["ndcg_groups"]["M"], "rd": m["rd"]["value"], "nrd": m["nrd"]["value"],
                "ib": m["ib"]["value"], "aplt": m["aplt"]["value"], "ic": m["ic"],
                "covers": m["rd"]["ci_low"] <= planted <= m["rd"]["ci_high"],
                "ci_width": m["rd"]["ci_high"] - m["rd"]["ci_low"],
                "rejects": m["pvalue"] <= 0.05, "seconds": m["seconds"],
                "top_share": r["top_share_realised"],
            })
    df = pd.DataFrame(records)
    oracle = df.loc[df["model"] == "Oracle"].set_index(["tail", "gap", "rep"])["rd"]
    keys = pd.MultiIndex.from_frame(df[["tail", "gap", "rep"]])
    df["oracle_rd"] = oracle.reindex(keys).to_numpy()
    return df


def _mean_se(x: pd.Series) -> str:
    se = x.std(ddof=1) / np.sqrt(x.size) if x.size > 1 else float("nan")
    return f"{x.mean():.3f} ({se:.3f})"


def table(args: argparse.Namespace) -> None:
    _truth_table(args.results)
    df = _rows(args.results)
    gaps = [g for g in GAPS if g in set(df["gap"])]
    print("| top-20 % share | gap | planted RD (s.e.) | model | NDCG@10 | NDCG@10 F / M "
          "| RD (MC s.e.) | RD CI width | NRD | IB | APLT | IC | RD CI covers planted "
          "| gap test rejects | s |")
    print("|---" * 15 + "|")
    for (tail, gap), cell in sorted(df.groupby(["tail", "gap"]),
                                    key=lambda p: (p[0][0], gaps.index(p[0][1]))):
        planted = f"{cell['planted'].iloc[0]:.3f} ({cell['planted_se'].iloc[0]:.3f})"
        for name in [m for m in ORDER if m in set(cell["model"])]:
            g = cell.loc[cell["model"] == name]
            print(f"| {tail:g} | {gap} | {planted} | {name} | {_mean_se(g['ndcg'])} "
                  f"| {g['ndcg_f'].mean():.3f} / {g['ndcg_m'].mean():.3f} "
                  f"| {_mean_se(g['rd'])} | {g['ci_width'].mean():.3f} "
                  f"| {g['nrd'].mean():.3f} | {g['ib'].mean():.3f} "
                  f"| {g['aplt'].mean():.3f} | {g['ic'].mean():.3f} "
                  f"| {int(g['covers'].sum())}/{len(g)} | {int(g['rejects'].sum())}/{len(g)} "
                  f"| {g['seconds'].mean():.0f} |")
    _rq1(df)


def _shrinkage(g: pd.DataFrame) -> tuple[float, float, float, float]:
    """Planted RD minus measured RD (MC s.e. with the truth's own s.e.), and the paired
    Oracle RD minus measured RD on the same replicates (MC s.e.)."""
    shrink, paired = g["planted"] - g["rd"], g["oracle_rd"] - g["rd"]
    n = np.sqrt(len(g))
    return (shrink.mean(), float(np.hypot(shrink.std(ddof=1) / n, g["planted_se"].iloc[0])),
            paired.mean(), paired.std(ddof=1) / n)


def _rq1(df: pd.DataFrame) -> None:
    """Shrinkage of the gap per tail, and Last.fm-like minus MovieLens-like, per gap and model."""
    tails = sorted(set(df["tail"]))
    if len(tails) != 2:
        return
    print(f"\nRQ1: shrinkage = planted RD - measured RD (positive: the gap is hidden), MC s.e.; "
          f"paired = Oracle RD - measured RD on the same data sets; difference = at "
          f"{tails[1]:g} minus at {tails[0]:g}\n")
    print(f"| gap | model | shrinkage at {tails[0]:g} | shrinkage at {tails[1]:g} | difference "
          f"| paired at {tails[0]:g} | paired at {tails[1]:g} | paired difference |")
    print("|---|---|---|---|---|---|---|---|")
    for gap in [g for g in GAPS if g in set(df["gap"])]:
        for name in [m for m in ORDER if m in set(df["model"]) and m != "Oracle"]:
            cells = [df.loc[(df["gap"] == gap) & (df["model"] == name) & (df["tail"] == t)]
                     for t in tails]
            if min(len(c) for c in cells) < 2:
                continue
            (a, a_se, pa, pa_se), (b, b_se, pb, pb_se) = (_shrinkage(c) for c in cells)
            print(f"| {gap} | {name} | {a:+.3f} ({a_se:.3f}) | {b:+.3f} ({b_se:.3f}) "
                  f"| {b - a:+.3f} ({np.hypot(a_se, b_se):.3f}) | {pa:+.3f} ({pa_se:.3f}) "
                  f"| {pb:+.3f} ({pb_se:.3f}) | {pb - pa:+.3f} ({np.hypot(pa_se, pb_se):.3f}) |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--tail", nargs="+", type=float, default=[0.65, 0.85])
    r.add_argument("--gap", nargs="+", choices=list(GAPS), default=list(GAPS))
    r.add_argument("--reps", type=int, default=5)
    r.add_argument("--seed", type=int, default=20261218)
    r.add_argument("--out", default="benchmarks/results/masking_study.jsonl")
    sub.add_parser("table").add_argument("results")
    t = sub.add_parser("truth")
    t.add_argument("results")
    t.add_argument("--users", type=int, default=N_TRUTH_USERS)
    args = parser.parse_args()
    {"run": run, "table": table, "truth": truth}[args.command](args)


if __name__ == "__main__":
    main()
