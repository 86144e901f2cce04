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
``run --split-only --tag TAG`` likewise recomputes only the strong/soft split (``spb``,
``spb_soft``, ``positional_share``, ``split_unidentified``) of the cells in the file,
on the full cell's data sets and its own resample stream (after an sPB change).
``summary`` prints the worst case per estimator and model. ``run`` appends one JSON
line per grid cell (a cell already in the file, at any REPS,
is skipped, so an interrupted run resumes and runs with different REPS per number of
queries share one file; ``--replace`` drops the grid's cells from the file first, to
rerun them after an estimator changed); ``table`` prints the markdown tables of
docs/positional-statistics.md ("Validation against known truth"); ``table --compact``
one row per cell (the discards' tables of docs/validation-positional.md).

``run --discard D --discard-mode position query`` discards a mean share D of the
evaluations not at random (DISCARD_MODES); the truth stays the model's on all its
answers. ``check`` prints how often a test of the discards against the order
(``_discard_z``, a prototype; recaudit does not run it) rejects in each mode.
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
    strong_soft_bias,
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


#: How the discarded evaluations are chosen (``--discard-mode``), each with mean share
#: ``--discard`` (d): ``mcar`` at random (probability d each); ``position``, not at
#: random: d (1/2 + (p - 1) / (k - 1)) at the picked position p, linear from d / 2 at
#: position 1 to 3 d / 2 at position k (mean d when the picks are uniform over the
#: positions); ``query``: a per-query probability drawn from Beta(d c, (1 - d) c),
#: c = QUERY_CONCENTRATION (heterogeneous, independent of the position: a control).
DISCARD_MODES = ("mcar", "position", "query")
QUERY_CONCENTRATION = 4.0


def _discard_law(k: int, discard: float) -> Any:
    """``position`` mode: the discard probability at each (0-based) position."""
    return discard * (0.5 + np.arange(k) / (k - 1))


def _simulate(model: str, n: int, k: int, p_bias: float, discard: float, mode: str,
              gen: np.random.Generator) -> tuple[Any, Any]:
    """All the model's answers and which of them are discarded (None without)."""
    ev = simulate_scenario(model, n, k=k, p_bias=p_bias, n_orders=N_ORDERS, rng=gen)
    if discard <= 0:
        return ev, None
    if mode == "mcar":
        return ev, gen.random(len(ev.query)) < discard
    if mode == "position":
        prob = _discard_law(k, discard)[ev.position]
    else:
        c = QUERY_CONCENTRATION
        prob = gen.beta(discard * c, (1 - discard) * c, size=n)[ev.query]
    return ev, gen.random(len(ev.query)) < prob


def _dataset(model: str, n: int, k: int, p_bias: float, discard: float, mode: str,
             gen: np.random.Generator) -> tuple[Any, float]:
    """One simulated data set and its discarded share; with ``discard`` > 0 the
    discarded evaluations (unparseable generations at T > 0) are chosen as
    ``mode`` says (DISCARD_MODES). The truth stays the model's on all its answers,
    what the user asks about; in ``position`` mode the valid answers under-represent
    the late positions, and the bias measured is that of the statistics against it."""
    ev, lost = _simulate(model, n, k, p_bias, discard, mode, gen)
    if lost is None:
        return ev, 0.0
    frame = ev.to_frame()
    frame["selected_position"] = frame["selected_position"].astype("Int64").mask(lost)
    return evaluations_from_table(frame), float(lost.mean())


Cell = tuple[str, int, int, float, int, int, float, str]


def _truth_and_stream(args: Cell) -> tuple[Any, np.random.Generator]:
    """A cell's truth and its generator (the data sets, then each analysis's streams)."""
    model, k, n, p_bias, _, seed, _, _ = args
    truth = scenario_truth(model, k=k, p_bias=p_bias, rng=seed)
    return truth, np.random.default_rng([seed, k, n, int(round(p_bias * 1000)),
                                         MODELS.index(model)])


def _cell(args: Cell) -> dict[str, Any]:
    model, k, n, p_bias, reps, seed, discard, mode = args
    truth, gen = _truth_and_stream(args)
    values: dict[str, list[float]] = {name: [] for name in ESTIMATORS}
    covered: dict[str, list[bool]] = {name: [] for name in ESTIMATORS}
    contains0: dict[str, list[bool]] = {name: [] for name in ESTIMATORS}
    l_below, position_cov, unidentified, shares = [], [], [], []
    for _ in range(reps):
        ev, share = _dataset(model, n, k, p_bias, discard, mode, gen)
        shares.append(share)
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
                           **({"discard": discard} if discard else {}),
                           **_mode_fields(mode, discard, k, truth.position, shares)}
    for name, (_, attr) in ESTIMATORS.items():
        out["estimators"][name] = _estimator_row(values[name], covered[name],
                                                 contains0[name], float(getattr(truth, attr)))
    c = float(np.mean(l_below))
    out["L_below_tv"] = {"rate": c, "se": float(np.sqrt(c * (1 - c) / len(l_below)))}
    out["position_coverage"] = float(np.mean(position_cov))
    out["split_unidentified"] = float(np.mean(unidentified))
    return out


def _mode_fields(mode: str, discard: float, k: int, position: Any,
                 shares: list[float]) -> dict[str, Any]:
    """A not-at-random cell's mode, its mean discarded share and, in ``position`` mode,
    the PB of the valid answers' position law q_p (1 - d_p) / sum (the distorted
    distribution the statistics read; the truth compared against stays the model's)."""
    if mode == "mcar" or not discard:
        return {}
    out = {"discard_mode": mode, "discarded_share": float(np.mean(shares))}
    if mode == "position":
        valid = position * (1 - _discard_law(k, discard))
        out["pb_valid_answers"] = float(0.5 * np.abs(valid / valid.sum() - 1 / k).sum())
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


def _ps_cell(args: Cell) -> dict[str, Any]:
    """The pairwise PS alone, exactly as ``analyze`` computes it in ``_cell``.

    ``analyze`` only spawns child streams from the generator it is given (the third
    is the pairwise PS's), so the generator's own stream is consumed by
    ``simulate_scenario`` alone: the data sets and the PS resamples here are those of
    the full cell, and REPS beyond the full cell's continue the same stream.
    """
    model, k, n, p_bias, reps, seed, discard, mode = args
    full, gen = _truth_and_stream(args)
    truth = full.ps
    values, covered, contains0 = [], [], []
    for _ in range(reps):
        ev, _ = _dataset(model, n, k, p_bias, discard, mode, gen)
        g_ps2 = gen.spawn(6)[2]  # analyze's stream for the pairwise PS
        est = permutation_sensitivity(ev, kind="pairwise", n_boot=N_BOOT, rng=g_ps2)
        values.append(est.value)
        covered.append(est.ci.low <= truth <= est.ci.high)
        contains0.append(est.ci.low <= 0.0)
    return {"model": model, "k": k, "queries": n, "p_bias": p_bias, "seed": seed,
            "ps": _estimator_row(values, covered, contains0, float(truth)),
            **({"discard": discard} if discard else {}),
            **({"discard_mode": mode} if discard and mode != "mcar" else {})}


#: the estimators of the strong/soft split, recomputed by ``run --split-only``
SPLIT_ESTIMATORS = ("spb", "spb_soft", "positional_share")


def _split_cell(args: Cell) -> dict[str, Any]:
    """The strong/soft split alone, exactly as ``analyze`` computes it in ``_cell``.

    ``analyze``'s fourth child stream (``g_pb``) cross-fits the shares that the split
    reads, and ``strong_soft_bias`` does that fit with the same default size, so the
    data sets and resamples are the full cell's (as in ``_ps_cell``).
    """
    model, k, n, p_bias, reps, seed, discard, mode = args
    truth, gen = _truth_and_stream(args)
    values: dict[str, list[float]] = {name: [] for name in SPLIT_ESTIMATORS}
    covered: dict[str, list[bool]] = {name: [] for name in SPLIT_ESTIMATORS}
    contains0: dict[str, list[bool]] = {name: [] for name in SPLIT_ESTIMATORS}
    widths: dict[str, list[float]] = {name: [] for name in SPLIT_ESTIMATORS}
    unidentified = []
    for _ in range(reps):
        ev, _ = _dataset(model, n, k, p_bias, discard, mode, gen)
        d = strong_soft_bias(ev, rng=gen.spawn(6)[3]).to_dict()
        unidentified.append(d["note"] is not None)
        for name, key in zip(SPLIT_ESTIMATORS, ("strong", "soft", "positional_share"),
                             strict=True):
            obj, t = d[key], float(getattr(truth, ESTIMATORS[name][1]))
            if obj["ci_low"] is not None:
                covered[name].append(obj["ci_low"] <= t <= obj["ci_high"])
                contains0[name].append(obj["ci_low"] <= 0.0)
                widths[name].append(obj["ci_high"] - obj["ci_low"])
            if obj["value"] is not None and np.isfinite(obj["value"]):
                values[name].append(obj["value"])
    return {"model": model, "k": k, "queries": n, "p_bias": p_bias, "seed": seed, "reps": reps,
            "estimators": {name: _estimator_row(values[name], covered[name],
                                                contains0[name],
                                                float(getattr(truth, ESTIMATORS[name][1])))
                           | ({"mean_width": float(np.mean(widths[name]))}
                              if widths[name] else {})
                           for name in SPLIT_ESTIMATORS},
            "split_unidentified": float(np.mean(unidentified)),
            **({"discard": discard} if discard else {}),
            **({"discard_mode": mode} if discard and mode != "mcar" else {})}


def run_split(args: argparse.Namespace) -> None:
    """``run --split-only``: replace the split rows of every grid cell already in --out."""
    out = Path(args.out)
    rows = {_key(r): r for r in map(json.loads, out.read_text().splitlines())}
    todo = [c for c in _grid(args) if _cell_key(c) in rows
            and (args.tag is None or rows[_cell_key(c)].get("split_run") != args.tag)]
    # each cell's own REPS, at most --reps (its first data sets)
    todo = [(*c[:4], min(args.reps, rows[_cell_key(c)]["reps"]), *c[5:]) for c in todo]
    todo.sort(key=lambda c: -c[1] * c[2] * c[4])
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for res in pool.map(_split_cell, todo):
            line = rows[_key(res)]
            line["estimators"].update(res["estimators"])
            line["split_unidentified"] = res["split_unidentified"]
            line["split_run"], line["split_reps"] = args.tag, res["reps"]
            _store(out, line)
            print(f"{res['model']} k={res['k']} n={res['queries']} p={res['p_bias']}: spb "
                  f"bias {res['estimators']['spb'].get('bias', float('nan')):+.4f} coverage "
                  f"{res['estimators']['spb'].get('coverage', float('nan')):.3f}",
                  file=sys.stderr, flush=True)


def _key(r: dict[str, Any]) -> tuple[str, int, int, float, int, float, str]:
    return (r["model"], r["k"], r["queries"], r["p_bias"], r["seed"], r.get("discard", 0.0),
            r.get("discard_mode", "mcar"))


def _cell_key(c: Cell) -> tuple[str, int, int, float, int, float, str]:
    return (c[0], c[1], c[2], c[3], c[5], c[6], c[7] if c[6] else "mcar")


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


def _grid(args: argparse.Namespace) -> list[Cell]:
    return [(m, k, n, p, args.reps, args.seed, d, mode) for m in args.models for k in args.k
            for n in args.queries for p in args.p_bias for d in args.discard
            for mode in (args.discard_mode if d else ["mcar"])]


def run_ps(args: argparse.Namespace) -> None:
    """``run --ps-only``: replace the PS row of every grid cell already in --out."""
    out = Path(args.out)
    rows = {_key(r): r for r in map(json.loads, out.read_text().splitlines())}
    cells = _grid(args)
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
    if args.split_only:
        run_split(args)
        return
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    cells = _grid(args)
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


def _discard_z(ev: Any, lost: Any) -> float:
    """A check of discards against the order, from what an audit knows: each
    evaluation's order, query and whether it was discarded, and the valid picks.

    s_e = sum_i f_q(i) pos_e(i) - (k - 1) / 2 is where order e puts the items query q's
    valid answers pick (f_q: their share of the query's valid picks, leaving out the
    evaluations of e's own order; pos_e: 0-based position in order e); over uniformly
    random orders its mean is 0 whatever f_q. Discards independent of the order (at
    random, or at a per-query rate) leave U_q = sum_e (D_e - mean_q D) s_e at mean 0,
    and queries are independent: z = sum_q U_q / sqrt(sum_q U_q^2), about N(0, 1).
    Discards that rise with the picked position make z positive where the pick is
    predictable from the item (small relevance sets)."""
    k, q = ev.orders.shape[1], ev.query
    nq, valid = int(q.max()) + 1, ~lost
    group = np.unique(np.column_stack([q, ev.orders]), axis=0, return_inverse=True)[1]
    group = np.ravel(group)
    counts = np.zeros((nq, k))
    np.add.at(counts, (q[valid], ev.item[valid]), 1.0)
    own = np.zeros((int(group.max()) + 1, k))
    np.add.at(own, (group[valid], ev.item[valid]), 1.0)
    rest = counts[q] - own[group]
    total = rest.sum(axis=1, keepdims=True)
    f = np.divide(rest, total, out=np.full_like(rest, 1.0 / k), where=total > 0)
    s = (f * np.argsort(ev.orders, axis=1)).sum(axis=1) - (k - 1) / 2
    d = lost.astype(float)
    d -= (np.bincount(q, d, nq) / np.bincount(q, minlength=nq))[q]
    u = np.bincount(q, d * s, nq)
    return float(u.sum() / np.sqrt((u**2).sum())) if np.any(u) else 0.0


def _check_cell(args: Cell) -> dict[str, Any]:
    """The rejection rate of ``_discard_z`` (two-sided, 5 %) on the cell's data sets
    (the first REPS of the full cell's: ``analyze`` consumes none of the stream)."""
    model, k, n, p_bias, reps, seed, discard, mode = args
    gen = np.random.default_rng([seed, k, n, int(round(p_bias * 1000)), MODELS.index(model)])
    z, shares = [], []
    for _ in range(reps):
        ev, lost = _simulate(model, n, k, p_bias, discard, mode, gen)
        z.append(_discard_z(ev, lost))
        shares.append(float(lost.mean()))
    rate = float(np.mean(np.abs(z) > 1.959964))
    return {"model": model, "k": k, "queries": n, "p_bias": p_bias, "reps": reps,
            "seed": seed, "discard": discard, "discard_mode": mode,
            "discarded_share": float(np.mean(shares)), "reject": rate,
            "reject_se": float(np.sqrt(rate * (1 - rate) / reps)),
            "z_mean": float(np.mean(z)), "z_sd": float(np.std(z, ddof=1))}


def check(args: argparse.Namespace) -> None:
    """``check``: the rejection rates of ``_discard_z`` per cell and discard mode,
    written to --out (replaced) and printed as a markdown table."""
    cells = [c for c in _grid(args) if c[6] > 0]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(_check_cell, cells))
    Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in rows))
    print("| model | k | n | p_bias | mode | discarded | rejected at 5 % (s.e.) | mean z (sd) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['k']} | {r['queries']} | {r['p_bias']:g} | "
              f"{r['discard_mode']} | {r['discarded_share']:.3f} | {r['reject']:.3f} "
              f"({r['reject_se']:.3f}) | {r['z_mean']:+.2f} ({r['z_sd']:.2f}) |")


def _pct(x: float | None, digits: int = 2) -> str:
    return "–" if x is None else f"{100 * x:+.{digits}f}"


def _stale(r: dict[str, Any], current: str | None) -> bool:
    """Whether the cell was computed before the code version tagged ``current``."""
    return current is not None and r.get("run") != current


def _model(r: dict[str, Any], current: str | None) -> str:
    mode = f", {r['discard_mode']}" if r.get("discard_mode") else ""
    lost = f" ({r['discard']:.0%} discarded{mode})" if r.get("discard") else ""
    return r["model"] + lost + (" †" if _stale(r, current) else "")


def _read(paths: list[str]) -> list[dict[str, Any]]:
    rows = [json.loads(line) for p in paths for line in Path(p).read_text().splitlines()]
    rows.sort(key=lambda r: (MODELS.index(r["model"]), r["k"], r["queries"], r["p_bias"],
                             r.get("discard", 0.0),
                             DISCARD_MODES.index(r.get("discard_mode", "mcar"))))
    return rows


def _bias_cov(e: dict[str, Any]) -> str:
    bias = f"{_pct(e['bias'])} ({100 * (e['bias_se'] or 0):.2f})" if "bias" in e else "–"
    return bias + (f" / {e['coverage']:.3f}" if "coverage" in e else "")


def _compact(rows: list[dict[str, Any]]) -> None:
    """``table --compact``: one row per cell (the discards' tables of
    docs/validation-positional.md): bias in pp (Monte-Carlo s.e.) / coverage."""
    print("| model | discards | k | p_bias | PB truth / valid answers' | PB bias / coverage "
          "| 0 in PB CI | PS bias / coverage | sPB bias / coverage | share bias / coverage "
          "| P(L <= TV) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        e = r["estimators"]
        lost = (f"{r.get('discard_mode', 'mcar')} {r.get('discarded_share', r['discard']):.3f}"
                if r.get("discard") else "none")
        valid = r.get("pb_valid_answers")
        pb_truth = f"{100 * e['pb']['truth']:.2f}" + (
            f" / {100 * valid:.2f}" if valid is not None else "")
        zero = f"{e['pb']['contains_0']:.3f}" if r["p_bias"] == 0 else "–"
        print(f"| {r['model']} | {lost} | {r['k']} | {r['p_bias']:g} | {pb_truth} | "
              f"{_bias_cov(e['pb'])} | {zero} | {_bias_cov(e['ps'])} | "
              f"{_bias_cov(e['spb'])} | {_bias_cov(e['positional_share'])} | "
              f"{r['L_below_tv']['rate']:.3f} |")


def table(args: argparse.Namespace) -> None:
    rows = _read(args.results)
    if args.compact:
        _compact(rows)
        return
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
        elif title in ("sPB", "soft / position-driven share"):
            _split_note(rows)
        head = ["model", "k", "n", "p_bias"]
        for name in names:
            head += [f"{name} truth", f"{name} bias pp", f"{name} coverage"]
        if title == "sPB":
            head.append("spb mean CI width pp")
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        split = title in ("sPB", "soft / position-driven share")
        recomputed = split and any(r.get("split_run") for r in rows)
        for r in rows:
            mark = " ‡" if recomputed and not r.get("split_run") else ""
            cells = [_model(r, args.current) + mark, str(r["k"]), str(r["queries"]),
                     f"{r['p_bias']:g}"]
            for name in names:
                e = r["estimators"][name]
                bias = "–" if "bias" not in e else (
                    f"{_pct(e['bias'])} ({100 * (e['bias_se'] or 0):.2f})")
                cov = "–" if "coverage" not in e else (
                    f"{e['coverage']:.3f} ({e['coverage_se']:.3f})")
                cells += [f"{100 * e['truth']:.2f}", bias, cov]
            if title == "sPB":
                width = r["estimators"]["spb"].get("mean_width")
                cells.append("–" if width is None else f"{100 * width:.2f}")
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


def _split_note(rows: list[dict[str, Any]]) -> None:
    """Which run computed the split's columns, when ``run --split-only`` replaced them."""
    tags = sorted({r["split_run"] for r in rows if r.get("split_run")})
    if tags:
        sizes = sorted({r["split_reps"] for r in rows if r.get("split_run")})
        print(f"`spb`, `spb_soft`, `positional_share` columns: recomputed by `run "
              f"--split-only` (tag {', '.join(tags)}; {' / '.join(map(str, sizes))} data sets "
              "per cell, the cell's own first); the other columns are the cell's run; ‡: "
              "not recomputed (computed before that tag).\n")


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
    rows = _read(args.results)
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
                   help="mean shares of evaluations discarded (answers that do not "
                        "parse, as at temperatures above 0)")
    r.add_argument("--discard-mode", nargs="+", default=["mcar"], choices=DISCARD_MODES,
                   help="how the discards are chosen: at random (mcar), more often at "
                        "later picked positions (position), at a per-query rate (query)")
    r.add_argument("--seed", type=int, default=20261201)
    r.add_argument("--jobs", type=int, default=1)
    r.add_argument("--out", default="benchmarks/results/validate_positional.jsonl")
    r.add_argument("--replace", action="store_true",
                   help="rerun the grid's cells already in --out (each line is replaced "
                        "when its cell is done), except those already carrying --tag")
    r.add_argument("--tag", default=None,
                   help="stored as the lines' 'run' field (names the code version); "
                        "with --ps-only as 'ps_run', with --split-only as 'split_run'")
    r.add_argument("--ps-only", action="store_true",
                   help="recompute only the pairwise PS row of the cells already in --out "
                        "(same data sets; --reps may exceed the cell's), skipping those "
                        "whose 'ps_run' is --tag")
    r.add_argument("--split-only", action="store_true",
                   help="recompute only the strong/soft split (sPB, soft bias, share) of "
                        "the cells already in --out, on the cell's first min(REPS, "
                        "--reps) data sets, skipping those whose 'split_run' is --tag")
    c = sub.add_parser("check", help="the discard-order check's rejection rates")
    for flag, kind, default in (("--models", str, ["paper", "decoding", "primacy"]),
                                ("--k", int, [5, 10]), ("--queries", int, [100]),
                                ("--p-bias", float, [0.0, 0.1]), ("--discard", float, [0.2]),
                                ("--discard-mode", str, list(DISCARD_MODES))):
        c.add_argument(flag, nargs="+", type=kind, default=default)
    c.add_argument("--reps", type=int, default=1000)
    c.add_argument("--seed", type=int, default=20261205)
    c.add_argument("--jobs", type=int, default=1)
    c.add_argument("--out", default="benchmarks/results/validate_positional_discards_check.jsonl")
    for name in ("table", "summary"):
        t = sub.add_parser(name)
        t.add_argument("results", nargs="+")
        t.add_argument("--compact", action="store_true",
                       help="table: one row per cell (bias / coverage of PB, PS, sPB, "
                            "the share; the discard mode)")
        t.add_argument("--current", default=None,
                       help="mark the cells whose 'run' tag is not this one")
    args = parser.parse_args()
    {"run": run, "table": table, "summary": summary, "check": check}[args.command](args)


if __name__ == "__main__":
    main()
