"""Why did the oracle's RD CI look narrow in the masking study? A measurement.

``docs/fairness-masking.md`` ("Checks of the machinery") saw, for the ideal recommender,
an across-replicate sd of RD@10 of 0.025 against a mean bootstrap s.e. of 0.0195-0.0215
(40 replicates) and a coverage of 26/30. Two explanations are told apart here:

- **the interval**: the stratified user bootstrap's percentile interval of the ratio
  RD = (U - P) / (U + P) is too narrow at these group sizes (~240 protected, ~560 other
  users);
- **the estimand**: each replicate redraws something the user bootstrap cannot see, so
  the replicates' RDs spread more than user sampling explains.

Design ``fixed`` is the masking study's: one population per (tail, gap)
(``interaction_model`` with the study's seed rule, so the same item clusters and Zipf
exponent), each replicate 800 fresh users, ``split_per_user``, the oracle's top-20 lists
(``oracle_lists``), ``evaluate`` with 500 bootstrap resamples. Everything a replicate
redraws is per user (gender, cluster, interactions, split), so users are i.i.d. and the
estimand is the population RD of that model. Truth: 0 exactly without a gap, else
``oracle_truth`` on 200,000 users (s.e. ~0.001-0.002). Per cell: mean RD - truth, sd of
RD across replicates (with its s.e. sd / sqrt(2 (R - 1))), the mean bootstrap s.e.
((high - low) / 3.92) and the mean delta-method s.e. of the per-user NDCGs, their ratio,
and the CI's coverage with sqrt(c (1 - c) / R).

Design ``worlds`` redraws the population too (a new item-cluster assignment per
replicate: what a replicate of the study would be if it re-ran ``interaction_model``):
per world the planted RD of ``oracle_truth`` on 20,000 users, so the between-world sd of
the estimand is measured (var of the per-world truths minus their mean squared MC s.e.).

    PYTHONPATH=src OMP_NUM_THREADS=1 nice -n 10 python benchmarks/oracle_interval_check.py \\
        run --reps 500 --worlds 60 --out benchmarks/results/validate_fairness_oracle.jsonl
    PYTHONPATH=src python benchmarks/oracle_interval_check.py table \\
        benchmarks/results/validate_fairness_oracle.jsonl

One process; ``run`` appends one JSON line per (design, tail, gap) and skips those done.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

# the masking study's populations (same constants, same seed rule)
from masking_study import CUT, GAPS, GENERATOR, LIST_LENGTH, N_USERS, _seed

from recaudit.fairness import EvaluateOptions, evaluate, split_per_user
from recaudit.fairness.simulation import (
    draw_interactions,
    interaction_model,
    oracle_lists,
    oracle_truth,
)

N_TRUTH = 200_000
N_TRUTH_WORLD = 20_000
OPTIONS = EvaluateOptions(n=(CUT,), n_boot=500, n_resamples=0, min_group_size=20)
Z = 1.959963984540054


def _model(tail: float, gap: str, gen: np.random.Generator) -> Any:
    eps, noise = GAPS[gap]
    return interaction_model(rng=gen, top_share=tail, protected_noise=eps, noise=noise,
                             **GENERATOR)


def _one(model: Any, gen: np.random.Generator) -> tuple[float, float, float, float]:
    """RD@10 of the oracle on 800 fresh users: value, CI low, CI high, delta-method s.e."""
    sample = draw_interactions(model, N_USERS, rng=gen)
    split = split_per_user(sample.data, rng=gen)
    recs = oracle_lists(sample, split.known, n=LIST_LENGTH, users=split.test["user_id"].unique())
    res = evaluate(recs, split.test, sample.data.users, attribute="gender", protected="F",
                   n_items=model.n_items, options=OPTIONS, rng=gen)
    rd = res.inter_bias[f"ndcg@{CUT}"].rd
    per = res.per_user
    x_p = per.loc[per["group"] == "F", f"ndcg@{CUT}"].to_numpy()
    x_u = per.loc[per["group"] != "F", f"ndcg@{CUT}"].to_numpy()
    p, u = x_p.mean(), x_u.mean()
    se_p, se_u = x_p.std(ddof=1) / np.sqrt(x_p.size), x_u.std(ddof=1) / np.sqrt(x_u.size)
    delta = 2.0 / (u + p) ** 2 * float(np.hypot(p * se_u, u * se_p))
    return rd.value, rd.ci.low, rd.ci.high, delta


def _fixed(tail: float, gap: str, reps: int, seed: int) -> dict[str, Any]:
    gen = np.random.default_rng(_seed(seed, tail, gap))
    model = _model(tail, gap, gen)
    if GAPS[gap][0] == 0:
        truth, truth_se = 0.0, 0.0
    else:
        t = oracle_truth(model, rng=np.random.default_rng(_seed(seed, tail, gap, 0, 1)),
                         n_users=N_TRUTH, n=CUT)
        truth, truth_se = t.rd, t.rd_se
    rows = [_one(model, np.random.default_rng(_seed(seed, tail, gap, rep + 1, 2)))
            for rep in range(reps)]
    return {"truth": truth, "truth_se": truth_se, "replicates": _pack(rows)}


def _worlds(tail: float, gap: str, worlds: int, seed: int) -> dict[str, Any]:
    truths, truth_ses, rows = [], [], []
    for w in range(worlds):
        gen = np.random.default_rng(_seed(seed, tail, gap, w + 1, 3))
        model = _model(tail, gap, gen)
        t = oracle_truth(model, rng=gen, n_users=N_TRUTH_WORLD, n=CUT)
        truths.append(t.rd)
        truth_ses.append(t.rd_se)
        rows.append(_one(model, gen))
    return {"world_truth": [round(v, 6) for v in truths],
            "world_truth_se": [round(v, 6) for v in truth_ses], "replicates": _pack(rows)}


def _pack(rows: list[tuple[float, float, float, float]]) -> dict[str, list[float]]:
    cols = zip(*rows, strict=True)
    return {k: [round(float(v), 6) for v in c]
            for k, c in zip(("rd", "low", "high", "delta_se"), cols, strict=True)}


def run(args: argparse.Namespace) -> None:
    out = Path(args.out)
    done = set()
    if out.exists():
        done = {(r["design"], r["tail"], r["gap"], r["seed"])
                for r in map(json.loads, out.read_text().splitlines())}
    jobs = [("fixed", t, g) for t in args.tail for g in args.gap]
    jobs += [("worlds", t, g) for t in args.tail for g in args.world_gap if args.worlds]
    with out.open("a") as fh:
        for design, tail, gap in jobs:
            if (design, tail, gap, args.seed) in done:
                continue
            start = time.perf_counter()
            body = (_fixed(tail, gap, args.reps, args.seed) if design == "fixed"
                    else _worlds(tail, gap, args.worlds, args.seed))
            line = {"design": design, "tail": tail, "gap": gap, "seed": args.seed, **body,
                    "seconds": round(time.perf_counter() - start, 1)}
            fh.write(json.dumps(line) + "\n")
            fh.flush()
            print(f"{design} tail={tail} gap={gap}: {line['seconds']} s", file=sys.stderr,
                  flush=True)


def _cell_stats(r: dict[str, Any]) -> dict[str, float]:
    rep = {k: np.asarray(v) for k, v in r["replicates"].items()}
    n = rep["rd"].size
    if r["design"] == "fixed":
        truth = np.full(n, r["truth"])
    else:
        truth = np.asarray(r["world_truth"])
    sd = float(rep["rd"].std(ddof=1))
    boot_se = (rep["high"] - rep["low"]) / (2 * Z)
    cov = float(np.mean((rep["low"] <= truth) & (truth <= rep["high"])))
    out = {"n": n, "bias": float(np.mean(rep["rd"] - truth)), "bias_se": sd / np.sqrt(n),
           "sd": sd, "sd_se": sd / np.sqrt(2 * (n - 1)), "boot_se": float(boot_se.mean()),
           "delta_se": float(rep["delta_se"].mean()), "coverage": cov,
           "coverage_se": float(np.sqrt(cov * (1 - cov) / n))}
    if r["design"] == "worlds":
        wt, wse = np.asarray(r["world_truth"]), np.asarray(r["world_truth_se"])
        out["between_sd"] = float(np.sqrt(max(wt.var(ddof=1) - np.mean(wse**2), 0.0)))
        out["sd_around_world"] = float((rep["rd"] - wt).std(ddof=1))
        planted = float(wt.mean())
        out["coverage_of_mean"] = float(np.mean((rep["low"] <= planted) & (planted <= rep["high"])))
    return out


def table(args: argparse.Namespace) -> None:
    rows = [json.loads(line) for line in Path(args.results).read_text().splitlines()]
    print("| design | top-20 % share | gap | replicates | truth | bias (s.e.) "
          "| sd of RD (s.e.) | mean bootstrap s.e. | mean delta s.e. | sd / bootstrap s.e. "
          "| 95 % CI coverage (s.e.) |")
    print("|---" * 11 + "|")
    for r in sorted(rows, key=lambda r: (r["design"], r["tail"], list(GAPS).index(r["gap"]))):
        s = _cell_stats(r)
        truth = (f"{r['truth']:.4f} ({r['truth_se']:.4f})" if r["design"] == "fixed"
                 else f"per world, mean {np.mean(r['world_truth']):.4f}")
        print(f"| {r['design']} | {r['tail']:g} | {r['gap']} | {s['n']} | {truth} "
              f"| {s['bias']:+.4f} ({s['bias_se']:.4f}) | {s['sd']:.4f} ({s['sd_se']:.4f}) "
              f"| {s['boot_se']:.4f} | {s['delta_se']:.4f} | {s['sd'] / s['boot_se']:.3f} "
              f"| {s['coverage']:.3f} ({s['coverage_se']:.3f}) |")
    fixed = [_cell_stats(r) for r in rows if r["design"] == "fixed"]
    if fixed:
        n = sum(s["n"] for s in fixed)
        c = sum(s["coverage"] * s["n"] for s in fixed) / n
        ratio = np.array([s["sd"] / s["boot_se"] for s in fixed])
        ratio_se = np.array([s["sd_se"] / s["boot_se"] for s in fixed])
        print(f"\nPooled over the {len(fixed)} fixed cells ({n} data sets): coverage {c:.3f} "
              f"({np.sqrt(c * (1 - c) / n):.3f}); sd / bootstrap s.e. {ratio.mean():.3f} "
              f"({np.sqrt(np.sum(ratio_se**2)) / ratio.size:.3f})")
    worlds = [r for r in rows if r["design"] == "worlds"]
    if worlds:
        print("\n| top-20 % share | gap | worlds | between-world sd of the planted RD "
              "| sd of RD around its world's truth | coverage of the worlds' mean RD |")
        print("|---|---|---|---|---|---|")
        for r in worlds:
            s = _cell_stats(r)
            print(f"| {r['tail']:g} | {r['gap']} | {s['n']} | {s['between_sd']:.4f} "
                  f"| {s['sd_around_world']:.4f} | {s['coverage_of_mean']:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--tail", nargs="+", type=float, default=[0.65, 0.85])
    r.add_argument("--gap", nargs="+", choices=list(GAPS), default=list(GAPS))
    r.add_argument("--world-gap", nargs="*", choices=list(GAPS), default=["uniform"])
    r.add_argument("--reps", type=int, default=500)
    r.add_argument("--worlds", type=int, default=60)
    r.add_argument("--seed", type=int, default=20261218)
    r.add_argument("--out", default="benchmarks/results/validate_fairness_oracle.jsonl")
    sub.add_parser("table").add_argument("results")
    args = parser.parse_args()
    {"run": run, "table": table}[args.command](args)


if __name__ == "__main__":
    main()
