"""Validation harness: RD, NRD, IB, the gap permutation test and the popularity-bias
metrics of `fairness evaluate` against known truth.

Every data set comes from ``recaudit.fairness.simulation.simulate_interbias`` (a Zipf
item popularity solved for the top-20 % interaction share, gender independent of
everything but the recommender's per-group hit probability ``π0 (1 ± rd)``), for each
tail shape, planted gap ``rd`` and number of users. Truth:

- RD, NRD of every metric: the exact population values of ``planted_truth`` (RD of
  Precision/Recall/NDCG = ``rd``); IB: ``sqrt(NRD (1 - IC))`` at the data set's own IC;
- the figures of ``evaluate``'s ``popularity_bias`` section (the popularity-bias
  metrics, the users' profile figures overall and per gender, and both per niche /
  diverse / blockbuster user group): their value on one 100,000-user draw of the same
  cell, computed by pandas (``simulation.popularity_figures``; the overall metrics by
  ``popularity.popularity_metrics``), ARP rescaled to the data set's number of users by
  ``(n - 1) / (N - 1)`` and profile popularity by ``1 + (x - 1) (n - 1) / (N - 1)``; the
  per-gender profile truth is everyone's (gender is independent of the training data).

Every estimate and CI is ``evaluate``'s own (``train=`` given, so its stratified user
bootstrap of 200 resamples gives the popularity section's CIs too). Per cell: bias =
mean(estimate - truth) with its Monte-Carlo s.e. sd / sqrt(REPS), RMSE, coverage of
``evaluate``'s 95 % CI (RD, NRD, IB: BCa since decision 211, percentile before; in
the popularity section the rule of its ``ci_rule``) with sqrt(c (1 - c) / REPS),
pooled over the cells in ``summary``, the median CI width and the share of CIs that
hold all of [0, 1] (a folded PopRSP/PopREO interval at its limit, which covers
vacuously), and the permutation test's rejection rate at alpha = 0.05 (its type-I
error at rd = 0).

    PYTHONPATH=src OMP_NUM_THREADS=1 nice -n 10 python benchmarks/validate_fairness.py run \\
        --tail 0.65 0.85 --rd 0 0.1 0.2 --users 300 1000 --reps 200 \\
        --out benchmarks/results/validate_fairness_regroup.jsonl
    PYTHONPATH=src python benchmarks/validate_fairness.py table \\
        benchmarks/results/validate_fairness_regroup.jsonl
    PYTHONPATH=src python benchmarks/validate_fairness.py summary \\
        benchmarks/results/validate_fairness_regroup.jsonl

``--popularity-groups quantile:4`` (any grouping of ``parse_popularity_groups``) judges
the per-group figures of that grouping instead of niche / diverse / blockbuster.

``--protected 30 60 100`` draws, per cell, that many protected users beside ``--users``
others (``simulate_interbias`` once with every user protected and once with none, the
same item world; the line records ``protected``): the small-group cells of issue 33
(``docs/validation-fairness.md``, "Small protected groups")::

    PYTHONPATH=src OMP_NUM_THREADS=1 nice -n 10 python benchmarks/validate_fairness.py run \\
        --tail 0.85 --rd 0 0.2 --users 900 --protected 30 60 100 --reps 200 \\
        --out benchmarks/results/validate_fairness_small_groups.jsonl

``compare A.jsonl B.jsonl ...`` sets the popularity figures' pooled coverage of several
runs side by side (e.g. the interval rules of ``docs/validation-fairness.md``);
``--inter-bias`` those of RD, NRD and IB.
``run`` appends one JSON line per cell (tail, rd, users, seed) and skips cells already
in the file, so an interrupted run resumes. One process: no parallelism by design.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recaudit.fairness import EvaluateOptions, evaluate
from recaudit.fairness.popularity import popularity_metrics
from recaudit.fairness.popularity._user_groups import ABDOLLAHPOURI_LABELS, parse_popularity_groups
from recaudit.fairness.simulation import (
    PROFILE_NAMES,
    SyntheticData,
    planted_truth,
    popularity_figures,
    simulate_interbias,
)

CUT = 10
#: The inter-bias keys judged here (all 15 keys are computed by `evaluate`).
KEYS = (f"ndcg@{CUT}", f"precision@{CUT}", f"hit@{CUT}", f"mrr@{CUT}")
#: The keys judged in the small-group cells (``--protected``): every metric and cut-off.
ALL_KEYS = tuple(f"{m}@{c}" for m in ("ndcg", "precision", "recall", "hit", "mrr")
                 for c in (5, CUT, 15))
POP_KEYS = tuple(f"{m}@{CUT}" for m in ("arp", "aplt", "aclt", "poprsp", "popreo", "novelty"))
SIM = {"n_items": 400, "n_train": 20, "n_test": 5, "list_length": 20, "base_hit": 0.15}
N_BOOT = 200
N_PERM = 199
N_POPULATION = 100_000
ALPHA = 0.05


def evaluate_adapter(data: SyntheticData, *, rng: np.random.Generator,
                     popularity_groups: str = "abdollahpouri", popularity: bool = True) -> Any:
    """The one call of ``recaudit.fairness.evaluate`` (adapt here when its signature moves);
    ``popularity=False``: without ``train``, so no popularity section."""
    return evaluate(
        data.recs,
        data.test,
        data.users,
        attribute="gender",
        protected="F",
        n_items=SIM["n_items"],
        train=data.train if popularity else None,
        options=EvaluateOptions(n=(5, CUT, 15), n_boot=N_BOOT, n_resamples=N_PERM,
                                min_group_size=20, popularity_groups=popularity_groups),
        rng=rng,
    )


def popularity_estimates(res: Any, labels: tuple[str, ...] = ABDOLLAHPOURI_LABELS
                         ) -> dict[str, Any]:
    """Every judged figure of ``res.popularity_bias`` as ``name -> Estimate``, named as
    :func:`~recaudit.fairness.simulation.popularity_figures` names its truth."""
    pb = res.popularity_bias
    out = {k: pb.overall[k] for k in POP_KEYS}
    out |= {f: pb.profile_overall[f] for f in PROFILE_NAMES}
    for g in ("F", "M"):
        out |= {f"{g}:{f}": pb.profile_groups[g][f] for f in PROFILE_NAMES}
    for label in labels:
        group = pb.user_popularity_groups[label]
        out |= {f"{label}:{k}": group.metrics[k] for k in POP_KEYS}
        out |= {f"{label}:{f}": group.profile[f] for f in PROFILE_NAMES}
    return out


@functools.lru_cache(maxsize=4)
def _population(tail: float, rd: float, seed: int, size: int,
                grouping: str = "abdollahpouri") -> dict[str, float]:
    """Every popularity figure on one ``size``-user draw of the cell (unscaled)."""
    gen = np.random.default_rng([seed, 7, int(round(tail * 1000)), int(round(rd * 1000))])
    d = simulate_interbias(size, rng=gen, top_share=tail, rd=rd, **SIM)
    out = popularity_figures(d, n=CUT, n_items=SIM["n_items"], popularity_groups=grouping)
    # the overall metrics as before, from the module the estimates do not use
    out |= popularity_metrics(d.recs, d.test, d.train, n=CUT, n_items=SIM["n_items"])
    return out


def population_truth(
    tail: float, rd: float, seed: int, users: int, size: int = N_POPULATION,
    grouping: str = "abdollahpouri",
) -> dict[str, float]:
    """The figures of a ``size``-user draw at ``users`` users: popularity counts distinct
    training users, so ARP scales by ``(n - 1) / (N - 1)`` (a recommended item is not the
    user's own) and profile popularity as ``1 + (x - 1) (n - 1) / (N - 1)`` (the user
    counts itself)."""
    scale = (users - 1) / (size - 1)
    truth = dict(_population(tail, rd, seed, size, grouping))
    for name in truth:
        if name.endswith(f"arp@{CUT}"):
            truth[name] *= scale
        elif name.endswith("profile_popularity"):
            truth[name] = 1 + (truth[name] - 1) * scale
    # gender is independent of the training data: each group's profile truth is everyone's
    for g in ("F", "M"):
        truth |= {f"{g}:{f}": truth[f] for f in PROFILE_NAMES}
    return truth


def _summarise(est: list[tuple[float, float, float, float]]) -> dict[str, Any]:
    """Bias, RMSE and coverage of ``(value, low, high, truth)`` rows (truth per data set)."""
    a = np.asarray(est, dtype=float)
    a = a[np.isfinite(a[:, 0]) & np.isfinite(a[:, 3])]
    d = a[:, 0] - a[:, 3]
    row: dict[str, Any] = {"truth": float(a[:, 3].mean()) if a.size else float("nan"),
                           "n": int(d.size)}
    if d.size > 1:
        row |= {"bias": float(d.mean()), "bias_se": float(d.std(ddof=1) / np.sqrt(d.size)),
                "rmse": float(np.sqrt(np.mean(d**2)))}
    with_ci = a[np.isfinite(a[:, 1]) & np.isfinite(a[:, 2])]
    if with_ci.size:
        c = float(np.mean((with_ci[:, 1] <= with_ci[:, 3]) & (with_ci[:, 3] <= with_ci[:, 2])))
        row |= {"coverage": c, "coverage_se": float(np.sqrt(c * (1 - c) / len(with_ci))),
                "median_width": float(np.median(with_ci[:, 2] - with_ci[:, 1])),
                # a folded interval at its limit [0, 1] bounds nothing (PopREO of a group
                # with very few tail or head hits): its coverage is vacuous
                "share_0_1": float(np.mean((with_ci[:, 1] <= 0) & (with_ci[:, 2] >= 1 - 1e-4)))}
    return row


def _one_data_set(res: Any, truth: dict[str, Any], pop_truth: dict[str, float] | None,
                  rows: dict[str, list[tuple[float, float, float, float]]],
                  labels: tuple[str, ...] = ABDOLLAHPOURI_LABELS,
                  keys: tuple[str, ...] = KEYS) -> None:
    """Append one evaluation's ``(value, low, high, truth)`` of every judged figure."""
    def add(name: str, est: Any, t: float) -> None:
        rows.setdefault(name, []).append((est.value, est.ci.low, est.ci.high, t))

    for k in keys:
        ic = res.item_coverage[int(k.split("@")[1])].value
        gap = res.inter_bias[k]
        add(f"rd:{k}", gap.rd, truth[k]["rd"])
        add(f"nrd:{k}", gap.nrd, truth[k]["nrd"])
        add(f"ib:{k}", gap.ib, float(np.sqrt(truth[k]["nrd"] * (1 - ic))))
    if pop_truth is None:
        return
    for name, est in popularity_estimates(res, labels).items():
        add(name, est, pop_truth[name])


def draw(users: int, protected: int | None, rng: np.random.Generator, **kwargs: Any
         ) -> SyntheticData:
    """One data set: ``users`` users with half protected on average, or (``protected``
    given) exactly ``protected`` protected users beside ``users`` others (two draws of the
    same item world, user ids of the second shifted)."""
    if protected is None:
        return simulate_interbias(users, rng=rng, **kwargs)
    a = simulate_interbias(protected, rng=rng, protected_share=1.0, **kwargs)
    b = simulate_interbias(users, rng=rng, protected_share=0.0, **kwargs)
    shift = {"user_id": lambda t: t["user_id"] + protected}
    return SyntheticData(
        train=pd.concat([a.train, b.train.assign(**shift)], ignore_index=True),
        test=pd.concat([a.test, b.test.assign(**shift)], ignore_index=True),
        recs=pd.concat([a.recs, b.recs.assign(**shift)], ignore_index=True),
        users=pd.concat([a.users, b.users.assign(**shift)], ignore_index=True),
        item_probability=a.item_probability,
        exponent=a.exponent,
    )


def _cell(
    tail: float, rd: float, users: int, reps: int, seed: int, population: int,
    grouping: str = "abdollahpouri", protected: int | None = None,
) -> dict[str, Any]:
    truth = planted_truth(n_test=SIM["n_test"], list_length=SIM["list_length"],
                          base_hit=SIM["base_hit"], rd=rd, n=[5, CUT, 15])
    # the popularity figures' truth is a 50/50 population's: judged in the 50/50 cells only
    pop_truth = (population_truth(tail, rd, seed, users, population, grouping)
                 if protected is None else None)
    labels = parse_popularity_groups(grouping).labels
    entropy = [seed, users, int(round(tail * 1000)), int(round(rd * 1000))]
    gen = np.random.default_rng(entropy if protected is None else [*entropy, protected])
    rows: dict[str, list[tuple[float, float, float, float]]] = {}
    rejected: dict[str, list[bool]] = {k: [] for k in KEYS}
    for _ in range(reps):
        data = draw(users, protected, gen, top_share=tail, rd=rd, **SIM)
        res = evaluate_adapter(data, rng=gen, popularity_groups=grouping,
                               popularity=pop_truth is not None)
        _one_data_set(res, truth, pop_truth, rows, labels,
                      KEYS if protected is None else ALL_KEYS)
        for k in KEYS:
            rejected[k].append(res.inter_bias[k].pvalue <= ALPHA)
    rejection = {}
    for k, r in rejected.items():
        rate = float(np.mean(r))
        rejection[k] = {"rate": rate, "se": float(np.sqrt(rate * (1 - rate) / len(r)))}
    return {"tail": tail, "rd": rd, "users": users, "protected": protected, "reps": reps,
            "seed": seed, "population": population, "popularity_groups": grouping,
            "estimators": {name: _summarise(v) for name, v in rows.items()},
            "rejection": rejection}


def run(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if out.exists():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            done.add((r["tail"], r["rd"], r["users"], r.get("protected"), r["seed"],
                      r.get("popularity_groups", "abdollahpouri")))
    cells = [(t, g, u, p) for t in args.tail for g in args.rd for u in args.users
             for p in (args.protected or [None])
             if (t, g, u, p, args.seed, args.popularity_groups) not in done]
    with out.open("a") as fh:
        for tail, rd, users, protected in cells:
            start = time.perf_counter()
            res = _cell(tail, rd, users, args.reps, args.seed, args.population,
                        args.popularity_groups, protected)
            res["seconds"] = round(time.perf_counter() - start, 1)
            fh.write(json.dumps(res) + "\n")
            fh.flush()
            print(f"tail={tail} rd={rd} users={users} protected={protected}: "
                  f"{res['seconds']} s", file=sys.stderr, flush=True)


def _rows(path: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in Path(path).read_text().splitlines()]
    return sorted(rows, key=lambda r: (r["tail"], r["rd"], r["users"], r.get("protected") or 0))


def _users(r: dict[str, Any]) -> str:
    """The cell's users: ``n`` (half protected on average) or ``protected + others``."""
    return f"{r['protected']} + {r['users']}" if r.get("protected") else str(r["users"])


def _fmt(e: dict[str, Any]) -> tuple[str, str, str, str]:
    bias = f"{e['bias']:+.4f} ({e['bias_se']:.4f})" if "bias" in e else "–"
    rmse = f"{e['rmse']:.4f}" if "rmse" in e else "–"
    cov = f"{e['coverage']:.3f} ({e['coverage_se']:.3f})" if "coverage" in e else "–"
    width = f"{e['median_width']:.4g}" if "median_width" in e else "–"
    return bias, rmse, cov, width


def table(args: argparse.Namespace) -> None:
    rows = _rows(args.results)
    names = [n for n in rows[0]["estimators"]]
    print("| estimator | top-20 % share | rd | users | truth | bias (s.e.) | RMSE "
          "| 95 % CI coverage (s.e.) | median CI width |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        for r in rows:
            if name not in r["estimators"]:
                continue
            e = r["estimators"][name]
            bias, rmse, cov, width = _fmt(e)
            print(f"| {name} | {r['tail']:g} | {r['rd']:g} | {_users(r)} | {e['truth']:.4f} "
                  f"| {bias} | {rmse} | {cov} | {width} |")
    print("\n| metric | top-20 % share | rd | users | reps | rejection rate at 0.05 (s.e.) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        for k, v in r["rejection"].items():
            print(f"| {k} | {r['tail']:g} | {r['rd']:g} | {_users(r)} | {r['reps']} "
                  f"| {v['rate']:.3f} ({v['se']:.3f}) |")


def _pooled(est: list[tuple[dict[str, Any], dict[str, Any]]]) -> str:
    """Coverage over every data set of the cells with a CI, with its binomial s.e."""
    hits = sum(e["coverage"] * e["n"] for _, e in est if "coverage" in e)
    n = sum(e["n"] for _, e in est if "coverage" in e)
    if n == 0:
        return "no CI"
    c = hits / n
    return f"{c:.3f} ({np.sqrt(c * (1 - c) / n):.3f})"


def summary(args: argparse.Namespace) -> None:
    rows = _rows(args.results)
    print("| estimator | cells | max abs bias / its s.e. (cell) | coverage range "
          "| pooled coverage (s.e.) | cells below 0.95 by > 2 s.e. | CIs [0, 1], max cell |")
    print("|---|---|---|---|---|---|---|")
    for name in rows[0]["estimators"]:
        est = [(r, r["estimators"][name]) for r in rows
               if "bias" in r["estimators"].get(name, {})]
        if not est:
            continue
        r, w = max(est, key=lambda p: abs(p[1]["bias"]))
        cov = [e["coverage"] for _, e in est if "coverage" in e]
        short = sum(e["coverage"] < 0.95 - 2 * max(e["coverage_se"], np.sqrt(0.0475 / r["reps"]))
                    for r, e in est if "coverage" in e)
        where = f"tail {r['tail']:g}, rd {r['rd']:g}, n {_users(r)}"
        cov_txt = f"{min(cov):.3f}-{max(cov):.3f}" if cov else "no CI"
        vacuous = [e["share_0_1"] for _, e in est if "share_0_1" in e]
        vac_txt = f"{max(vacuous):.2f}" if vacuous else "–"
        print(f"| {name} | {len(est)} | {abs(w['bias']):.4f} / {w['bias_se']:.4f} ({where}) "
              f"| {cov_txt} | {_pooled(est)} | {short} | {vac_txt} |")
    null = [(k, v) for r in rows if r["rd"] == 0 for k, v in r["rejection"].items()]
    if null:
        n = sum(r["reps"] for r in rows if r["rd"] == 0) // max(1, len({r["users"] for r in rows}))
        rates = pd.DataFrame([{"metric": k, "rate": v["rate"]} for k, v in null])
        print(f"\nType-I error at rd = 0 (alpha 0.05), mean over null cells per metric "
              f"(~{n} data sets per tail):")
        print(rates.groupby("metric")["rate"].mean().round(4).to_string())


def compare(args: argparse.Namespace) -> None:
    """Pooled coverage and per-cell range of every popularity figure in several runs (with
    ``--inter-bias``: of RD, NRD and IB instead)."""
    runs = {Path(f).stem: _rows(f) for f in args.results}
    names = [n for n in next(iter(runs.values()))[0]["estimators"]
             if n.startswith(("rd:", "nrd:", "ib:")) == args.inter_bias]
    print("| estimator | " + " | ".join(runs) + " |")
    print("|---|" + "---|" * len(runs))
    for name in names:
        cells = []
        for rows in runs.values():
            est = [(r, r["estimators"][name]) for r in rows if name in r["estimators"]]
            cov = [e["coverage"] for _, e in est if "coverage" in e]
            cells.append(f"{_pooled(est)}, {min(cov):.2f}-{max(cov):.2f}" if cov else "–")
        print(f"| {name} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--tail", nargs="+", type=float, default=[0.65, 0.85])
    r.add_argument("--rd", nargs="+", type=float, default=[0.0, 0.1, 0.2])
    r.add_argument("--users", nargs="+", type=int, default=[300, 1000])
    r.add_argument("--protected", nargs="+", type=int, default=None,
                   help="exactly this many protected users beside --users others")
    r.add_argument("--reps", type=int, default=200)
    r.add_argument("--seed", type=int, default=20261218)
    r.add_argument("--population", type=int, default=N_POPULATION,
                   help="users of the large draw behind the popularity figures' truth")
    r.add_argument("--popularity-groups", default="abdollahpouri",
                   help="the grouping of the per-group figures (e.g. quantile:4)")
    r.add_argument("--out", default="benchmarks/results/validate_fairness_regroup.jsonl")
    for name in ("table", "summary"):
        sub.add_parser(name).add_argument("results")
    c = sub.add_parser("compare")
    c.add_argument("results", nargs="+")
    c.add_argument("--inter-bias", action="store_true", help="RD, NRD and IB instead")
    args = parser.parse_args()
    {"run": run, "table": table, "summary": summary, "compare": compare}[args.command](args)


if __name__ == "__main__":
    main()
