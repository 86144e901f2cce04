"""Validation harness: every positional estimator of `analyze` against known truth.

For each simulation model of ``recaudit.positional._scenarios`` (paper, heterogeneous,
graded, decoding), k, number of queries and p_bias, REPS data sets of 20 evaluations
per query are analysed exactly as ``recaudit positional analyze`` does (its defaults,
except n_boot = 500 for the percentile intervals, 1 POB-ICM shuffle -- no figure here
uses POB-ICM -- and 5 fold assignments of the paper's sPB), and
each estimate is compared with the model's population truth:

- bias = mean(estimate) - truth, with its Monte-Carlo standard error sd / sqrt(REPS);
- RMSE;
- coverage = share of 95 % CIs that contain the truth, with sqrt(c (1 - c) / REPS);
- for POB-UNBP's L: P(L <= TV) (a one-sided 95 % bound).

    PYTHONPATH=src python benchmarks/validate_positional.py run --reps 200 --jobs 2 \\
        --out benchmarks/results/validate_positional.jsonl
    PYTHONPATH=src python benchmarks/validate_positional.py table \\
        benchmarks/results/validate_positional.jsonl > table.md

``run --ps-only --tag TAG --reps R`` recomputes only the pairwise PS row of the cells
already in the file (seconds per cell: no other estimator is fitted), on the same data
sets as the full cell and, if R exceeds the cell's REPS, more of the same stream.
``summary`` prints the worst case per estimator and model. ``run`` appends one JSON
line per grid cell (a cell already in the file, at any REPS,
is skipped, so an interrupted run resumes and runs with different REPS per number of
queries share one file; ``--replace`` drops the grid's cells from the file first, to
rerun them after an estimator changed); ``table`` prints the markdown tables of
docs/positional-statistics.md ("Validation against known truth").
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from recaudit.positional import (
    AnalysisOptions,
    analyze,
    evaluations_from_table,
    permutation_sensitivity,
)
from recaudit.positional._scenarios import MODELS, scenario_truth, simulate_scenario

#: estimator name -> (path in analyze().to_dict(), truth attribute)
ESTIMATORS = {
    "pb": ("pb", "pb"),
    "pb_plugin": ("pb_plugin", "pb"),
    "ps": ("ps", "ps"),
    "ps_modal": ("ps_modal", "ps_modal_limit"),
    "spb": ("spb", "spb"),
    "spb_soft": ("spb_soft", "soft"),
    "positional_share": ("positional_share", "positional_share"),
    "spb_paper": ("spb_paper", "spb"),
}
N_ORDERS = 20
N_BOOT = 500
#: Fold assignments of the paper's cross-validated sPB (analyze's default is 20):
#: the repeats only remove the fold lottery, not the bias compared here.
SPB_REPEATS = 5


def _dataset(model: str, n: int, k: int, p_bias: float, discard: float,
             gen: np.random.Generator) -> Any:
    """One simulated data set; with ``discard`` > 0 that share of the evaluations,
    drawn at random, is a discarded answer (an unparseable generation at T > 0: missing
    completely at random, so the truth is the model's)."""
    ev = simulate_scenario(model, n, k=k, p_bias=p_bias, n_orders=N_ORDERS, rng=gen)
    if discard <= 0:
        return ev
    frame = ev.to_frame()
    lost = gen.random(len(frame)) < discard
    frame["selected_position"] = frame["selected_position"].astype("Int64").mask(lost)
    return evaluations_from_table(frame)


def _cell(args: tuple[str, int, int, float, int, int, float]) -> dict[str, Any]:
    model, k, n, p_bias, reps, seed, discard = args
    truth = scenario_truth(model, k=k, p_bias=p_bias, rng=seed)
    gen = np.random.default_rng([seed, k, n, int(round(p_bias * 1000)), MODELS.index(model)])
    values: dict[str, list[float]] = {name: [] for name in ESTIMATORS}
    covered: dict[str, list[bool]] = {name: [] for name in ESTIMATORS}
    contains0: dict[str, list[bool]] = {name: [] for name in ESTIMATORS}
    l_below, position_cov, unidentified = [], [], []
    for _ in range(reps):
        ev = _dataset(model, n, k, p_bias, discard, gen)
        d = analyze(ev, AnalysisOptions(n_resamples=1, n_boot=N_BOOT, spb_repeats=SPB_REPEATS),
                    rng=gen).to_dict()
        d["pb_plugin"] = {"value": d["pb"]["plugin"], "ci_low": None, "ci_high": None}
        unidentified.append(d["spb"].get("note") is not None)
        for name, (key, attr) in ESTIMATORS.items():
            obj = d[key]
            t = float(getattr(truth, attr))
            # an unidentified split has no value but its bounds as the interval
            if obj["ci_low"] is not None:
                covered[name].append(obj["ci_low"] <= t <= obj["ci_high"])
                contains0[name].append(obj["ci_low"] <= 0.0)
            if obj["value"] is not None and np.isfinite(obj["value"]):
                values[name].append(obj["value"])
        if d["pob_unbp"]["L"] is not None:
            l_below.append(d["pob_unbp"]["L"] <= truth.pb)
        lo = np.array([c[0] for c in d["position_distribution_ci"]])
        hi = np.array([c[1] for c in d["position_distribution_ci"]])
        position_cov.append(float(np.mean((lo <= truth.position) & (truth.position <= hi))))
    out: dict[str, Any] = {"model": model, "k": k, "queries": n, "p_bias": p_bias,
                           "reps": reps, "seed": seed, "estimators": {},
                           **({"discard": discard} if discard else {})}
    for name, (_, attr) in ESTIMATORS.items():
        out["estimators"][name] = _estimator_row(values[name], covered[name],
                                                 contains0[name], float(getattr(truth, attr)))
    c = float(np.mean(l_below))
    out["L_below_tv"] = {"rate": c, "se": float(np.sqrt(c * (1 - c) / len(l_below)))}
    out["position_coverage"] = float(np.mean(position_cov))
    out["split_unidentified"] = float(np.mean(unidentified))
    return out


def _estimator_row(values: list[float], covered: list[bool], contains0: list[bool],
                   t: float) -> dict[str, Any]:
    """Truth, bias, RMSE and coverage of one estimator in one cell."""
    v = np.asarray(values, dtype=float)
    row: dict[str, Any] = {"truth": t, "n": int(v.size)}
    if v.size:
        row |= {"bias": float(v.mean() - t),
                "bias_se": float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else None,
                "rmse": float(np.sqrt(np.mean((v - t) ** 2)))}
    if covered:
        c = float(np.mean(covered))
        row |= {"coverage": c, "coverage_se": float(np.sqrt(c * (1 - c) / len(covered))),
                "contains_0": float(np.mean(contains0))}
    return row


def _ps_cell(args: tuple[str, int, int, float, int, int, float]) -> dict[str, Any]:
    """The pairwise PS alone, exactly as ``analyze`` computes it in ``_cell``.

    ``analyze`` only spawns child streams from the generator it is given (the third
    is the pairwise PS's), so the generator's own stream is consumed by
    ``simulate_scenario`` alone: the data sets and the PS resamples here are those of
    the full cell, and REPS beyond the full cell's continue the same stream.
    """
    model, k, n, p_bias, reps, seed, discard = args
    truth = scenario_truth(model, k=k, p_bias=p_bias, rng=seed).ps
    gen = np.random.default_rng([seed, k, n, int(round(p_bias * 1000)), MODELS.index(model)])
    values, covered, contains0 = [], [], []
    for _ in range(reps):
        ev = _dataset(model, n, k, p_bias, discard, gen)
        g_ps2 = gen.spawn(6)[2]  # analyze's stream for the pairwise PS
        est = permutation_sensitivity(ev, kind="pairwise", n_boot=N_BOOT, rng=g_ps2)
        values.append(est.value)
        covered.append(est.ci.low <= truth <= est.ci.high)
        contains0.append(est.ci.low <= 0.0)
    return {"model": model, "k": k, "queries": n, "p_bias": p_bias, "seed": seed,
            "ps": _estimator_row(values, covered, contains0, float(truth)),
            **({"discard": discard} if discard else {})}


def _key(r: dict[str, Any]) -> tuple[str, int, int, float, int, float]:
    return (r["model"], r["k"], r["queries"], r["p_bias"], r["seed"], r.get("discard", 0.0))


def _cell_key(c: tuple[str, int, int, float, int, int, float]
              ) -> tuple[str, int, int, float, int, float]:
    return (c[0], c[1], c[2], c[3], c[5], c[6])


def _store(out: Path, res: dict[str, Any]) -> None:
    """Append ``res``, or replace the line of the same cell in place."""
    lines = out.read_text().splitlines() if out.exists() else []
    kept = [line for line in lines if _key(json.loads(line)) != _key(res)]
    if len(kept) == len(lines):
        with out.open("a") as fh:
            fh.write(json.dumps(res) + "\n")
        return
    tmp = out.with_suffix(".tmp")
    tmp.write_text("".join(line + "\n" for line in [*kept, json.dumps(res)]))
    tmp.replace(out)


def run_ps(args: argparse.Namespace) -> None:
    """``run --ps-only``: replace the PS row of every grid cell already in --out."""
    out = Path(args.out)
    rows = {_key(r): r for r in map(json.loads, out.read_text().splitlines())}
    cells = [(m, k, n, p, args.reps, args.seed, d) for m in args.models for k in args.k
             for n in args.queries for p in args.p_bias for d in args.discard]
    todo = [c for c in cells if _cell_key(c) in rows
            and (args.tag is None or rows[_cell_key(c)].get("ps_run") != args.tag)]
    for c in todo:
        res = _ps_cell(c)
        line = rows[_cell_key(c)]
        line["estimators"]["ps"] = res["ps"]
        line["ps_run"] = args.tag
        _store(out, line)
        print(f"{c[0]} k={c[1]} n={c[2]} p={c[3]}: ps coverage {res['ps']['coverage']:.3f} "
              f"of {res['ps']['n']}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> None:
    if args.ps_only:
        run_ps(args)
        return
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    cells = [(m, k, n, p, args.reps, args.seed, d) for m in args.models for k in args.k
             for n in args.queries for p in args.p_bias for d in args.discard]
    lines = out.read_text().splitlines() if out.exists() else []
    # a cell is skipped when it is in the file -- with --replace, only when its line
    # carries this run's --tag (so an interrupted rerun resumes)
    done = {_key(r) for r in map(json.loads, lines)
            if not args.replace or (args.tag is not None and r.get("run") == args.tag)}
    todo = [c for c in cells if _cell_key(c) not in done]
    # a PS row continued by `run --ps-only` (more data sets, the same first ones) is kept
    # when a full rerun replaces its cell: PS has no part in what a rerun changes
    ps_rows = {_key(r): (r["estimators"]["ps"], r["ps_run"])
               for r in map(json.loads, lines) if r.get("ps_run")}
    # the largest cells first, so that two workers finish together
    todo.sort(key=lambda c: -c[1] * c[2])
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for res in pool.map(_cell, todo):
            if args.tag is not None:
                res["run"] = args.tag
            if _key(res) in ps_rows:
                res["estimators"]["ps"], res["ps_run"] = ps_rows[_key(res)]
            _store(out, res)
            print(f"{res['model']} k={res['k']} n={res['queries']} p={res['p_bias']}: "
                  f"spb bias {res['estimators']['spb'].get('bias', float('nan')):+.4f}",
                  file=sys.stderr, flush=True)


def _pct(x: float | None, digits: int = 2) -> str:
    return "–" if x is None else f"{100 * x:+.{digits}f}"


def _stale(r: dict[str, Any], current: str | None) -> bool:
    """Whether the cell was computed before the code version tagged ``current``."""
    return current is not None and r.get("run") != current


def _model(r: dict[str, Any], current: str | None) -> str:
    lost = f" ({r['discard']:.0%} discarded)" if r.get("discard") else ""
    return r["model"] + lost + (" †" if _stale(r, current) else "")


def table(args: argparse.Namespace) -> None:
    rows = [json.loads(line) for line in Path(args.results).read_text().splitlines()]
    rows.sort(key=lambda r: (MODELS.index(r["model"]), r["k"], r["queries"], r["p_bias"]))
    print("Bias in percentage points (Monte-Carlo s.e. in brackets); coverage of the 95 % CI "
          "(s.e. in brackets); the last table: share of CIs containing 0 when the truth is 0."
          "\n")
    if any(_stale(r, args.current) for r in rows):
        print(f"† computed before the code version `{args.current}` (run tag).\n")
    groups = (("PB", ("pb", "pb_plugin")), ("PS", ("ps", "ps_modal")),
              ("sPB", ("spb", "spb_paper")), ("soft / position-driven share",
                                             ("spb_soft", "positional_share")))
    for title, names in groups:
        print(f"#### {title}\n")
        if title == "PS":
            _ps_note(rows)
        head = ["model", "k", "n", "p_bias"]
        for name in names:
            head += [f"{name} truth", f"{name} bias pp", f"{name} coverage"]
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            cells = [_model(r, args.current), str(r["k"]), str(r["queries"]),
                     f"{r['p_bias']:g}"]
            for name in names:
                e = r["estimators"][name]
                bias = "–" if "bias" not in e else (
                    f"{_pct(e['bias'])} ({100 * (e['bias_se'] or 0):.2f})")
                cov = "–" if "coverage" not in e else (
                    f"{e['coverage']:.3f} ({e['coverage_se']:.3f})")
                cells += [f"{100 * e['truth']:.2f}", bias, cov]
            print("| " + " | ".join(cells) + " |")
        print()
    print("#### POB-UNBP lower bound and position distribution\n")
    print("| model | k | n | p_bias | P(L <= TV) | mean coverage of the q_p CIs |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        lb = r["L_below_tv"]
        print(f"| {_model(r, args.current)} | {r['k']} | {r['queries']} | {r['p_bias']:g} | "
              f"{lb['rate']:.3f} ({lb['se']:.3f}) | {r['position_coverage']:.3f} |")
    _zero_table(rows, args.current)
    _identification_table(rows, args.current)


def _identification_table(rows: list[dict[str, Any]], current: str | None) -> None:
    """Cells where the soft/strong split was sometimes not identified: how often, and
    how often the interval (the identification bounds when unidentified) covers."""
    rows = [r for r in rows if r.get("split_unidentified")]
    if not rows:
        return
    print("\n#### The split where it is not identified\n")
    print("| model | k | n | p_bias | split not identified | sPB truth | sPB coverage "
          "(bounds or CI) | soft truth | soft coverage | share coverage |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        e = r["estimators"]
        cov = [f"{e[n]['coverage']:.3f} ({e[n]['coverage_se']:.3f})"
               for n in ("spb", "spb_soft", "positional_share")]
        print(f"| {_model(r, current)} | {r['k']} | {r['queries']} | {r['p_bias']:g} | "
              f"{r['split_unidentified']:.3f} | {100 * e['spb']['truth']:.2f} | {cov[0]} | "
              f"{100 * e['spb_soft']['truth']:.2f} | {cov[1]} | {cov[2]} |")


def _ps_note(rows: list[dict[str, Any]]) -> None:
    """Which run computed the ``ps`` columns, when ``run --ps-only`` replaced them."""
    tags = sorted({r["ps_run"] for r in rows if r.get("ps_run")})
    if tags:
        sizes = sorted({r["estimators"]["ps"]["n"] for r in rows})
        print(f"`ps` columns: recomputed by `run --ps-only` (tag {', '.join(tags)}; "
              f"{' / '.join(map(str, sizes))} data sets per cell, the cell's own first).\n")


def _zero_table(rows: list[dict[str, Any]], current: str | None) -> None:
    """Share of the intervals that contain 0 when the truth is 0 (p_bias 0)."""
    names = ("pb", "spb", "spb_soft", "positional_share")
    print("\n#### Share of the 95 % CIs containing 0 at p_bias 0 (truth 0)\n")
    print("| model | k | n | " + " | ".join(names) + " |")
    print("|" + "---|" * (3 + len(names)))
    for r in rows:
        if r["p_bias"] != 0:
            continue
        shares = [r["estimators"][name].get("contains_0") for name in names]
        print(f"| {_model(r, current)} | {r['k']} | {r['queries']} | "
              + " | ".join("–" if c is None else f"{c:.3f}" for c in shares) + " |")


#: the estimators the goals of issue 14 item 5 concern
GOAL_ESTIMATORS = ("pb", "ps", "spb")


def _where(r: dict[str, Any]) -> str:
    return f"k={r['k']}, n={r['queries']}, p={r['p_bias']:g}"


def _summary_row(name: str, model: str, cells: list[dict[str, Any]]) -> str:
    est = [r["estimators"][name] for r in cells]
    worst = max(range(len(cells)), key=lambda i: abs(est[i]["bias"]))
    over = sum(abs(e["bias"]) > 0.01 for e in est)
    with_ci = [(e, r) for e, r in zip(est, cells, strict=True) if "coverage" in e]
    if not with_ci:
        return (f"| {name} | {model} | {len(cells)} | {100 * abs(est[worst]['bias']):.2f} "
                f"({_where(cells[worst])}) | {over} | no CI | – | – | – |")
    cov = [e["coverage"] for e, _ in with_ci]
    short = sum(e["coverage"] < 0.95 - 2 * max(e["coverage_se"], np.sqrt(
        0.95 * 0.05 / e["n"])) for e, r in with_ci)
    low, high = sum(c < 0.92 for c in cov), sum(c > 0.97 for c in cov)
    zero = [e["contains_0"] for e, r in with_ci
            if r["p_bias"] == 0 and abs(e["truth"]) < 1e-9]
    return (f"| {name} | {model} | {len(cells)} | {100 * abs(est[worst]['bias']):.2f} "
            f"({_where(cells[worst])}) | {over} | {min(cov):.3f}-{max(cov):.3f} | "
            f"{low} / {high} | {short} | {f'{min(zero):.3f}' if zero else '–'} |")


def _misses(rows: list[dict[str, Any]]) -> list[str]:
    """The cells where PB, PS or sPB miss a goal other than over-coverage."""
    out = []
    for name in GOAL_ESTIMATORS:
        for r in rows:
            e = r["estimators"][name]
            why = []
            if "bias" in e and abs(e["bias"]) > 0.01:
                why.append(f"bias {_pct(e['bias'])} pp ({100 * (e['bias_se'] or 0):.2f})")
            if "coverage" in e and e["coverage"] < 0.92:
                why.append(f"coverage {e['coverage']:.3f} ({e['coverage_se']:.3f})")
            if ("coverage" in e and r["p_bias"] == 0 and abs(e["truth"]) < 1e-9
                    and e["contains_0"] < 0.95):
                why.append(f"0 in CI {e['contains_0']:.3f}")
            if why:
                out.append(f"- {name}, {r['model']} {_where(r)} ({e['n']} data sets): "
                           + "; ".join(why))
    return out


def _pooled(rows: list[dict[str, Any]]) -> list[str]:
    """Coverage pooled over the cells whose truth is not 0, per estimator and n."""
    out = []
    for name in GOAL_ESTIMATORS:
        parts = []
        for n in sorted({r["queries"] for r in rows}):
            cells = [r for r in rows if r["queries"] == n and "coverage" in
                     r["estimators"][name] and abs(r["estimators"][name]["truth"]) > 1e-9]
            total = sum(r["estimators"][name]["n"] for r in cells)
            if total:
                c = sum(r["estimators"][name]["coverage"] * r["estimators"][name]["n"]
                        for r in cells) / total
                parts.append(f"{c:.3f} (s.e. {np.sqrt(c * (1 - c) / total):.3f}, "
                             f"{total} data sets) at {n} queries")
        if parts:
            out.append(f"- {name}: " + "; ".join(parts))
    return out


def summary(args: argparse.Namespace) -> None:
    """Per estimator and model: the worst bias, the coverage range, and how many cells
    fall outside 0.92-0.97 or short of 0.95 by more than two Monte-Carlo standard
    errors; then every cell where PB, PS or sPB miss a goal (over-coverage aside)."""
    rows = [json.loads(line) for line in Path(args.results).read_text().splitlines()]
    rows.sort(key=lambda r: (MODELS.index(r["model"]), r["k"], r["queries"], r["p_bias"]))
    print("| estimator | model | cells | max abs bias, pp (cell) | cells with abs bias > 1 pp "
          "| coverage range | cells < 0.92 / > 0.97 | cells below 0.95 by > 2 s.e. "
          "| min share of CIs with 0 at p_bias 0 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in ESTIMATORS:
        for model in MODELS:
            cells = [r for r in rows if r["model"] == model and "bias" in r["estimators"][name]]
            if cells:
                print(_summary_row(name, model, cells))
    lb = [r["L_below_tv"]["rate"] for r in rows]
    print(f"\nPOB-UNBP: P(L <= TV) {min(lb):.3f}-{max(lb):.3f} over {len(rows)} cells; "
          f"position-distribution CIs: mean coverage "
          f"{min(r['position_coverage'] for r in rows):.3f}-"
          f"{max(r['position_coverage'] for r in rows):.3f}.")
    print("\nCoverage pooled over the cells whose truth is not 0:\n")
    print("\n".join(_pooled(rows)))
    misses = _misses(rows)
    print(f"\nCells where {', '.join(GOAL_ESTIMATORS)} miss a goal (|bias| > 1 pp, coverage "
          f"< 0.92, 0 in < 95 % of null CIs): {len(misses)}\n")
    print("\n".join(misses))
    stale = [r for r in rows if _stale(r, args.current)]
    if stale:
        names = ", ".join(f"{r['model']} {_where(r)}" for r in stale)
        print(f"\n{len(stale)} of {len(rows)} cells computed before `{args.current}`: {names}.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    r.add_argument("--k", nargs="+", type=int, default=[5, 10, 15, 20])
    r.add_argument("--queries", nargs="+", type=int, default=[100, 500])
    r.add_argument("--p-bias", nargs="+", type=float, default=[0.0, 0.03, 0.1])
    r.add_argument("--reps", type=int, default=200)
    r.add_argument("--discard", nargs="+", type=float, default=[0.0],
                   help="shares of evaluations discarded at random (answers that do not "
                        "parse, as at temperatures above 0)")
    r.add_argument("--seed", type=int, default=20261201)
    r.add_argument("--jobs", type=int, default=1)
    r.add_argument("--out", default="benchmarks/results/validate_positional.jsonl")
    r.add_argument("--replace", action="store_true",
                   help="rerun the grid's cells already in --out (each line is replaced "
                        "when its cell is done), except those already carrying --tag")
    r.add_argument("--tag", default=None,
                   help="stored as the lines' 'run' field (names the code version); "
                        "with --ps-only as 'ps_run'")
    r.add_argument("--ps-only", action="store_true",
                   help="recompute only the pairwise PS row of the cells already in --out "
                        "(same data sets; --reps may exceed the cell's), skipping those "
                        "whose 'ps_run' is --tag")
    for name in ("table", "summary"):
        t = sub.add_parser(name)
        t.add_argument("results")
        t.add_argument("--current", default=None,
                       help="mark the cells whose 'run' tag is not this one")
    args = parser.parse_args()
    {"run": run, "table": table, "summary": summary}[args.command](args)


if __name__ == "__main__":
    main()
