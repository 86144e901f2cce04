"""RD's interval at small protected groups: candidate rules compared against known truth.

Issue 33 item 3 saw RD biased upward and its percentile CI covering 0.855-0.906 at 60
protected users beside 900 others. This study measures the shortfall and compares,
on the **same** bootstrap replicates of every data set, the candidate intervals:

- ``percentile``: the percentile interval of the RD replicates (the library before
  decision "RD, NRD and IB intervals are BCa; their estimates also jackknife-corrected");
- ``basic``: the basic (reverse-percentile) interval of RD;
- ``basic_log``: the basic interval of ``z = atanh(RD) = log(U / P) / 2`` (the log of the
  ratio of the group means), mapped back by tanh;
- ``wald_log``: ``z ± z_{(1+c)/2} se(z)`` with the delta-method
  ``se(z)^2 = (s_P^2 / (n_P P^2) + s_U^2 / (n_U U^2)) / 4``, mapped back (a Katz-type
  interval for a ratio of means);
- ``boot_t_log``: bootstrap-t on ``z`` with the same delta-method s.e. recomputed on each
  resample (Efron & Tibshirani 1993, ch. 12);
- ``bca``: BCa on RD (Efron 1987): the bias correction ``z0`` from the share of
  replicates below the estimate (ties counted half, as ``scipy.stats.bootstrap``), the
  acceleration from a jackknife over users within each group (the multi-sample formula
  of ``scipy.stats.bootstrap``), computed here independently of the library.

And three point estimates: ``plain`` RD, the bootstrap bias-corrected ``2 RD - mean(RD*)``
and the jackknife bias-corrected ``RD - sum_g (n_g - 1) (mean_i RD_(gi) - RD)``.

Data: ``n_p`` protected and ``n_u`` other users, each with 5 test items hit independently
with probability ``base_hit (1 - rd)`` (protected) or ``base_hit (1 + rd)`` (others), the
``K`` hits at a uniformly random ``K``-subset of the 20 ranks: the recommender of
``recaudit.fairness.simulation.simulate_interbias`` drawn directly (only hit positions
enter the metrics), so the truth is ``planted_truth``'s exact population RD. Per-user
metrics by ``ranking_metrics``; the stratified user bootstrap by ``bootstrap_weights``
(the library's resampling); every interval rule here is computed in this file.

    PYTHONPATH=src OMP_NUM_THREADS=1 nice -n 10 python benchmarks/small_group_intervals.py \\
        run --reps 200 --out benchmarks/results/small_group_intervals.jsonl
    PYTHONPATH=src python benchmarks/small_group_intervals.py summary \\
        benchmarks/results/small_group_intervals.jsonl
    PYTHONPATH=src python benchmarks/small_group_intervals.py cells \\
        benchmarks/results/small_group_intervals.jsonl --rules percentile wald_log bca
    PYTHONPATH=src python benchmarks/small_group_intervals.py table \\
        benchmarks/results/small_group_intervals.jsonl
    PYTHONPATH=src OMP_NUM_THREADS=1 nice -n 10 python benchmarks/small_group_intervals.py \\
        bias --reps 10000 --out benchmarks/results/small_group_bias.jsonl
    PYTHONPATH=src python benchmarks/small_group_intervals.py bias-table \\
        benchmarks/results/small_group_bias.jsonl --keys hit@10 ndcg@10 mrr@10

Per cell, key and rule: coverage of the 95 % CI with sqrt(c (1 - c) / R), the share of
data sets with the truth below / above the interval, the median width; per point
estimate: bias with sd / sqrt(R) and RMSE. ``run`` appends one JSON line per cell and
skips cells already in the file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special

from recaudit._stats import bootstrap_weights
from recaudit.fairness import METRICS, ranking_metrics
from recaudit.fairness.simulation import planted_truth

N_TEST = 5
LENGTH = 20
CUTS = (5, 10, 20)
KEYS = [f"{m}@{c}" for m in METRICS for c in CUTS]
LEVEL = 0.95
RULES = ("percentile", "basic", "basic_log", "wald_log", "boot_t_log", "bca")
POINTS = ("plain", "boot_bc", "jack_bc")
#: (n_p, n_u, base_hit, rd): small groups beside 900 users, and the harness's sizes
CELLS = [(n_p, 900, b, rd) for b in (0.15, 0.05) for rd in (0.0, 0.2) for n_p in (30, 60, 100)]
CELLS += [(n, n, 0.15, rd) for rd in (0.0, 0.2) for n in (150, 500)]


def draw(n_p: int, n_u: int, base_hit: float, rd: float,
         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per-user metrics ``x`` (users x keys) and the protected mask."""
    prot = np.r_[np.ones(n_p, bool), np.zeros(n_u, bool)]
    pi = np.where(prot, base_hit * (1 - rd), base_hit * (1 + rd))
    n_hit = (rng.random((prot.size, N_TEST)) < pi[:, None]).sum(axis=1)
    ranks = np.argsort(rng.random((prot.size, LENGTH)), axis=1)  # a uniform permutation
    hits = ranks < n_hit[:, None]  # the K hits at a uniformly random K-subset of ranks
    m = ranking_metrics(hits, np.full(prot.size, N_TEST), n=CUTS)
    return np.hstack([m[k] for k in METRICS]), prot


def _rd(u: np.ndarray, p: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return (u - p) / (u + p)


def _z(u: np.ndarray, p: np.ndarray) -> np.ndarray:
    """atanh(RD) = log(U / P) / 2, clipped like the library's folded rule."""
    return np.arctanh(np.clip(_rd(u, p), -1 + 1e-12, 1 - 1e-12))


def _se_z(u: np.ndarray, p: np.ndarray, vu: np.ndarray, vp: np.ndarray,
          n_u: int, n_p: int) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return 0.5 * np.sqrt(vp / (n_p * p * p) + vu / (n_u * u * u))


def _quantile(r: np.ndarray, q: np.ndarray | float) -> np.ndarray:
    """Column-wise quantile of the finite entries (q per column or scalar)."""
    q = np.broadcast_to(np.asarray(q, float), (r.shape[1],))
    out = np.full(r.shape[1], np.nan)
    for j in range(r.shape[1]):
        c = r[:, j]
        c = c[np.isfinite(c)]
        if c.size and np.isfinite(q[j]):
            out[j] = np.quantile(c, q[j])
    return out


def _bca(theta: np.ndarray, reps: np.ndarray, jack: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    """BCa bounds column-wise; ``jack[g]`` the (n_g x K) leave-one-out values of group g."""
    b = np.isfinite(reps).sum(axis=0)
    below = ((reps < theta).sum(axis=0) + (reps <= theta).sum(axis=0)) / (2.0 * b)
    z0 = special.ndtri(below)
    nums, dens = 0.0, 0.0
    for j in jack:
        n = j.shape[0]
        u = (n - 1) * (j.mean(axis=0) - j)
        nums = nums + (u**3).sum(axis=0) / n**3
        dens = dens + (u**2).sum(axis=0) / n**2
    with np.errstate(invalid="ignore", divide="ignore"):
        a = nums / (6.0 * dens**1.5)
    out = []
    for alpha in ((1 - LEVEL) / 2, (1 + LEVEL) / 2):
        za = special.ndtri(alpha)
        q = special.ndtr(z0 + (z0 + za) / (1 - a * (z0 + za)))
        out.append(_quantile(reps, q))
    return out[0], out[1]


def one_data_set(x: np.ndarray, prot: np.ndarray, n_boot: int,
                 rng: np.random.Generator) -> dict[str, Any]:
    """Every rule's bounds and every point estimate for one data set (arrays over keys)."""
    xp, xu = x[prot], x[~prot]
    n_p, n_u = xp.shape[0], xu.shape[0]
    p, u = xp.mean(axis=0), xu.mean(axis=0)
    vp, vu = xp.var(axis=0, ddof=1), xu.var(axis=0, ddof=1)
    rd, z = _rd(u, p), _z(u, p)
    se = _se_z(u, p, vu, vp, n_u, n_p)
    ps, us, vps, vus = [], [], [], []
    for w in bootstrap_weights(x.shape[0], n_boot, rng, strata=prot):
        wp, wu = w[:, prot].astype(float), w[:, ~prot].astype(float)
        m1p, m1u = wp @ xp / n_p, wu @ xu / n_u
        ps.append(m1p)
        us.append(m1u)
        vps.append((wp @ (xp * xp) / n_p - m1p**2) * n_p / (n_p - 1))
        vus.append((wu @ (xu * xu) / n_u - m1u**2) * n_u / (n_u - 1))
    ps_, us_ = np.concatenate(ps), np.concatenate(us)
    vps_, vus_ = np.concatenate(vps), np.concatenate(vus)
    rd_star, z_star = _rd(us_, ps_), _z(us_, ps_)
    a = (1 - LEVEL) / 2
    crit = special.ndtri(1 - a)
    bounds: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    lo, hi = _quantile(rd_star, a), _quantile(rd_star, 1 - a)
    bounds["percentile"] = (lo, hi)
    bounds["basic"] = (np.clip(2 * rd - hi, -1, 1), np.clip(2 * rd - lo, -1, 1))
    zlo, zhi = _quantile(z_star, a), _quantile(z_star, 1 - a)
    bounds["basic_log"] = (np.tanh(2 * z - zhi), np.tanh(2 * z - zlo))
    bounds["wald_log"] = (np.tanh(z - crit * se), np.tanh(z + crit * se))
    with np.errstate(invalid="ignore"):
        t_star = (z_star - z) / _se_z(us_, ps_, vus_, vps_, n_u, n_p)
    t_star[~np.isfinite(t_star)] = np.nan
    tlo, thi = _quantile(t_star, a), _quantile(t_star, 1 - a)
    bounds["boot_t_log"] = (np.tanh(z - thi * se), np.tanh(z - tlo * se))
    # jackknife: a protected user left out moves P only, another user U only
    jp = _rd(u[None, :], (xp.sum(axis=0) - xp) / (n_p - 1))
    ju = _rd((xu.sum(axis=0) - xu) / (n_u - 1), p[None, :])
    bounds["bca"] = _bca(rd, rd_star, [jp, ju])
    jack_bias = (n_p - 1) * (jp.mean(axis=0) - rd) + (n_u - 1) * (ju.mean(axis=0) - rd)
    points = {"plain": rd, "boot_bc": 2 * rd - np.nanmean(rd_star, axis=0),
              "jack_bc": rd - jack_bias}
    return {"bounds": bounds, "points": points,
            "undefined_share": np.isnan(rd_star).mean(axis=0)}


def _cell(n_p: int, n_u: int, base_hit: float, rd: float, reps: int, n_boot: int,
          seed: int) -> dict[str, Any]:
    truth_all = planted_truth(n_test=N_TEST, list_length=LENGTH, base_hit=base_hit, rd=rd,
                              n=CUTS)
    truth = np.array([truth_all[k]["rd"] for k in KEYS])
    gen = np.random.default_rng([seed, n_p, n_u, int(base_hit * 1000), int(rd * 1000)])
    low = {r: [] for r in RULES}
    high = {r: [] for r in RULES}
    points = {e: [] for e in POINTS}
    undefined = []
    for _ in range(reps):
        x, prot = draw(n_p, n_u, base_hit, rd, gen)
        out = one_data_set(x, prot, n_boot, gen)
        for r in RULES:
            low[r].append(out["bounds"][r][0])
            high[r].append(out["bounds"][r][1])
        for e in POINTS:
            points[e].append(out["points"][e])
        undefined.append(out["undefined_share"])
    res: dict[str, Any] = {"n_p": n_p, "n_u": n_u, "base_hit": base_hit, "rd": rd,
                           "reps": reps, "n_boot": n_boot, "seed": seed,
                           "truth": dict(zip(KEYS, truth.tolist(), strict=True)),
                           "undefined_replicates": float(np.mean(undefined)),
                           "rules": {}, "points": {}}
    for r in RULES:
        lo, hi = np.array(low[r]), np.array(high[r])
        ok = np.isfinite(lo) & np.isfinite(hi)
        n_ok = ok.sum(axis=0)
        under = ((hi < truth) & ok).sum(axis=0) / np.maximum(n_ok, 1)  # interval below truth
        over = ((lo > truth) & ok).sum(axis=0) / np.maximum(n_ok, 1)
        cov = 1 - under - over
        width = np.array([np.median((hi - lo)[ok[:, j], j]) if n_ok[j] else np.nan
                          for j in range(len(KEYS))])
        res["rules"][r] = {k: {"coverage": float(cov[j]),
                               "se": float(np.sqrt(cov[j] * (1 - cov[j]) / max(n_ok[j], 1))),
                               "below": float(under[j]), "above": float(over[j]),
                               "width": float(width[j]), "n": int(n_ok[j])}
                           for j, k in enumerate(KEYS)}
    for e in POINTS:
        v = np.array(points[e])
        res["points"][e] = {}
        for j, k in enumerate(KEYS):
            d = v[:, j][np.isfinite(v[:, j])] - truth[j]
            res["points"][e][k] = {"bias": float(d.mean()),
                                   "bias_se": float(d.std(ddof=1) / np.sqrt(d.size)),
                                   "rmse": float(np.sqrt(np.mean(d * d))), "n": int(d.size)}
    return res


def bias(args: argparse.Namespace) -> None:
    """Bias of the plain and jackknife bias-corrected RD on many data sets (no bootstrap:
    the s.e. of a bias is sd / sqrt(R), about 0.002 at R = 10,000)."""
    out = Path(args.out)
    with out.open("a") as fh:
        for n_p, n_u, base_hit, rd in [c for c in CELLS if c[1] == 900]:
            truth_all = planted_truth(n_test=N_TEST, list_length=LENGTH, base_hit=base_hit,
                                      rd=rd, n=CUTS)
            truth = np.array([truth_all[k]["rd"] for k in KEYS])
            gen = np.random.default_rng([args.seed, 1, n_p, int(base_hit * 1000),
                                         int(rd * 1000)])
            est: dict[str, list[np.ndarray]] = {"plain": [], "jack_bc": []}
            for _ in range(args.reps):
                x, prot = draw(n_p, n_u, base_hit, rd, gen)
                xp, xu = x[prot], x[~prot]
                p, u = xp.mean(axis=0), xu.mean(axis=0)
                theta = _rd(u, p)
                jp = _rd(u[None, :], (xp.sum(axis=0) - xp) / (n_p - 1))
                ju = _rd((xu.sum(axis=0) - xu) / (n_u - 1), p[None, :])
                est["plain"].append(theta)
                est["jack_bc"].append(theta - (n_p - 1) * (jp.mean(axis=0) - theta)
                                      - (n_u - 1) * (ju.mean(axis=0) - theta))
            res: dict[str, Any] = {"n_p": n_p, "n_u": n_u, "base_hit": base_hit, "rd": rd,
                                   "reps": args.reps, "seed": args.seed, "points": {}}
            for e, v in est.items():
                a = np.array(v)
                res["points"][e] = {}
                for j, k in enumerate(KEYS):
                    d = a[:, j][np.isfinite(a[:, j])] - truth[j]
                    res["points"][e][k] = {
                        "bias": float(d.mean()), "bias_se": float(d.std(ddof=1) / np.sqrt(d.size)),
                        "rmse": float(np.sqrt(np.mean(d * d))), "n": int(d.size)}
            fh.write(json.dumps(res) + "\n")
            fh.flush()
            print(f"bias n_p={n_p} base_hit={base_hit} rd={rd}", file=sys.stderr, flush=True)


def bias_table(args: argparse.Namespace) -> None:
    rows = [json.loads(line) for line in Path(args.results).read_text().splitlines()]
    keys = args.keys or KEYS
    print("| n_P / n_U | base hit | rd | data sets | key | bias plain (s.e.) | RMSE plain "
          "| bias jackknife-corrected (s.e.) | RMSE corrected |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        for k in keys:
            a, b = r["points"]["plain"][k], r["points"]["jack_bc"][k]
            print(f"| {r['n_p']} / {r['n_u']} | {r['base_hit']:g} | {r['rd']:g} | {r['reps']} "
                  f"| {k} | {a['bias']:+.4f} ({a['bias_se']:.4f}) | {a['rmse']:.4f} "
                  f"| {b['bias']:+.4f} ({b['bias_se']:.4f}) | {b['rmse']:.4f} |")


def run(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if out.exists():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            done.add((r["n_p"], r["n_u"], r["base_hit"], r["rd"], r["seed"]))
    cells = [c for c in CELLS if (*c, args.seed) not in done
             and (not args.only_small or c[1] == 900)]
    with out.open("a") as fh:
        for n_p, n_u, base_hit, rd in cells:
            start = time.perf_counter()
            res = _cell(n_p, n_u, base_hit, rd, args.reps, args.n_boot, args.seed)
            res["seconds"] = round(time.perf_counter() - start, 1)
            fh.write(json.dumps(res) + "\n")
            fh.flush()
            print(f"n_p={n_p} n_u={n_u} base_hit={base_hit} rd={rd}: {res['seconds']} s",
                  file=sys.stderr, flush=True)


def table(args: argparse.Namespace) -> None:
    rows = [json.loads(line) for line in Path(args.results).read_text().splitlines()]
    keys = args.keys or KEYS
    print("| n_P / n_U | base hit | rd | key | " + " | ".join(RULES) + " |")
    print("|---|---|---|---|" + "---|" * len(RULES))
    for r in rows:
        for k in keys:
            cells = [f"{r['rules'][m][k]['coverage']:.3f}" for m in RULES]
            print(f"| {r['n_p']} / {r['n_u']} | {r['base_hit']:g} | {r['rd']:g} | {k} | "
                  + " | ".join(cells) + " |")
    print("\n| n_P / n_U | base hit | rd | key | truth | " + " | ".join(
        f"bias {e} (s.e.)" for e in POINTS) + " | RMSE plain | RMSE jack_bc |")
    print("|---|---|---|---|---|" + "---|" * (len(POINTS) + 2))
    for r in rows:
        for k in keys:
            pts = [f"{r['points'][e][k]['bias']:+.4f} ({r['points'][e][k]['bias_se']:.4f})"
                   for e in POINTS]
            print(f"| {r['n_p']} / {r['n_u']} | {r['base_hit']:g} | {r['rd']:g} | {k} | "
                  f"{r['truth'][k]:.4f} | " + " | ".join(pts)
                  + f" | {r['points']['plain'][k]['rmse']:.4f}"
                  f" | {r['points']['jack_bc'][k]['rmse']:.4f} |")


def summary(args: argparse.Namespace) -> None:
    """Per rule: coverage range and pooled coverage over every cell and key, small and
    large groups apart; the share of lower and upper misses; per point estimate: the
    largest |bias| and |bias| / s.e."""
    rows = [json.loads(line) for line in Path(args.results).read_text().splitlines()]
    print("| rule | groups | cells x keys | coverage range | pooled coverage (s.e.) "
          "| truth above / below the CI | keys outside 0.92-0.97 | median width (pooled) |")
    print("|---|---|---|---|---|---|---|---|")
    for m in RULES:
        for label, sel in (("30-100 beside 900", lambda r: r["n_u"] == 900),
                           ("150-500 each", lambda r: r["n_u"] != 900)):
            es = [r["rules"][m][k] for r in rows if sel(r) for k in KEYS]
            if not es:
                continue
            cov = np.array([e["coverage"] for e in es])
            n = sum(e["n"] for e in es)
            pooled = sum(e["coverage"] * e["n"] for e in es) / n
            below = sum(e["below"] * e["n"] for e in es) / n
            above = sum(e["above"] * e["n"] for e in es) / n
            outside = int(((cov < 0.92) | (cov > 0.97)).sum())
            width = np.median([e["width"] for e in es])
            print(f"| {m} | {label} | {len(es)} | {cov.min():.3f}-{cov.max():.3f} "
                  f"| {pooled:.3f} ({np.sqrt(pooled * (1 - pooled) / n):.3f}) "
                  f"| {below:.3f} / {above:.3f} | {outside} | {width:.4f} |")
    print("\n| point estimate | groups | max abs bias (s.e.; cell, key) "
          "| keys with abs bias > 0.01 | mean RMSE |")
    print("|---|---|---|---|---|")
    for e in POINTS:
        for label, sel in (("30-100 beside 900", lambda r: r["n_u"] == 900),
                           ("150-500 each", lambda r: r["n_u"] != 900)):
            items = [(r, k, r["points"][e][k]) for r in rows if sel(r) for k in KEYS]
            if not items:
                continue
            r, k, w = max(items, key=lambda t: abs(t[2]["bias"]))
            big = sum(abs(t[2]["bias"]) > 0.01 for t in items)
            rmse = np.mean([t[2]["rmse"] for t in items])
            print(f"| {e} | {label} | {w['bias']:+.4f} ({w['bias_se']:.4f}; {r['n_p']}/"
                  f"{r['n_u']}, hit {r['base_hit']:g}, rd {r['rd']:g}, {k}) | {big} / "
                  f"{len(items)} | {rmse:.4f} |")


def cells(args: argparse.Namespace) -> None:
    """Per cell and rule: the coverage range over the 15 keys and the mean coverage."""
    rows = [json.loads(line) for line in Path(args.results).read_text().splitlines()]
    rules = args.rules or RULES
    print("| n_P / n_U | base hit | rd | " + " | ".join(rules) + " |")
    print("|---|---|---|" + "---|" * len(rules))
    for r in rows:
        out = []
        for m in rules:
            cov = np.array([r["rules"][m][k]["coverage"] for k in KEYS])
            out.append(f"{cov.min():.3f}-{cov.max():.3f} ({cov.mean():.3f})")
        print(f"| {r['n_p']} / {r['n_u']} | {r['base_hit']:g} | {r['rd']:g} | "
              + " | ".join(out) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--reps", type=int, default=200)
    r.add_argument("--n-boot", type=int, default=1000)
    r.add_argument("--seed", type=int, default=20261204)
    r.add_argument("--only-small", action="store_true")
    r.add_argument("--out", default="benchmarks/results/small_group_intervals.jsonl")
    t = sub.add_parser("table")
    t.add_argument("results")
    t.add_argument("--keys", nargs="*")
    sub.add_parser("summary").add_argument("results")
    c = sub.add_parser("cells")
    c.add_argument("results")
    c.add_argument("--rules", nargs="*")
    b = sub.add_parser("bias")
    b.add_argument("--reps", type=int, default=10_000)
    b.add_argument("--seed", type=int, default=20261204)
    b.add_argument("--out", default="benchmarks/results/small_group_bias.jsonl")
    bt = sub.add_parser("bias-table")
    bt.add_argument("results")
    bt.add_argument("--keys", nargs="*")
    args = parser.parse_args()
    {"run": run, "table": table, "summary": summary, "cells": cells, "bias": bias,
     "bias-table": bias_table}[args.command](args)


if __name__ == "__main__":
    main()
