"""Validate `fairness.compare_models` (issue 35, item 3): family-wise error under the
global null, false discovery rate under a mixed null, CI coverage of the true
differences.

Every replicate draws one data set with ``simulate_interbias`` (its lists are model A's)
and the other models' lists for the same users, training and test items with
``simulate_lists`` (``recaudit.fairness.simulation``): the paired design of
``compare_models``, models independent given the data, exchangeable per user when
their settings ``(base_hit, rd)`` are equal. 400 items, Zipf tail with a top-20 %
share of 0.8, 20 training and 5 test items per user, lists of 20, cut-offs 5, 10, 15
(every metric of ``METRICS``: 15 keys, so 15 x 6 = 90 rows per pair), ``n_items=400``.

Scenarios (models ``name: (base_hit, rd)``):

- ``null``: A, B, C all (0.30, 0.10), Holm. Every row of the 3 pairs (270, 45 per
  family) has true difference 0. Family-wise error (any Holm-adjusted p <= 0.05), each
  row's type-I error (raw p <= 0.05), coverage of 0 by each row's own CI and
  simultaneous coverage (all Holm-adjusted CIs of the family cover).
- ``realistic``: A (0.30, 0.00) vs B (0.25, 0.20), Holm. Coverage of the true
  differences by the own CIs, power; the unprotected-group rows have true difference 0
  (both models hit 0.30 there): their rejections are false.
- ``mixed``: A = B = (0.30, 0.10), C = D = (0.25, 0.20), Benjamini-Hochberg over the
  6 pairs (540 rows, 90 per family; the 180 rows of A-B and C-D, 30 per family, are
  true nulls): false discovery
  proportion averaged (FDR), power, false coverage rate of the selected rows'
  BH-adjusted (Benjamini-Yekutieli) intervals.

Truth (``planted_truth``, exact): a group row's truth is the difference of the two
models' population group means; the overall mean's is ``s mean_PG + (1 - s) mean_UG``
with ``s`` = ``--protected-share`` (the population share; the stratified bootstrap
holds the realised share fixed, a difference of ~1 % of the variance here); RD and NRD
from the population group means. IB has no population truth: ``compare_models`` holds
each model's item coverage IC at its observed value, so its truth is taken
conditionally, ``sqrt(NRD_a (1 - IC_a)) - sqrt(NRD_b (1 - IC_b))`` with the population
NRD and each data set's IC@N; IB rows of two identically-set models count as true
nulls (the models do not differ) although that conditional truth is not exactly 0.

Tests and families are ``compare_models``'s own (recorded per line: ``row_tests``,
``n_resamples_used``, and the SHA-256 of ``src/recaudit/fairness/_compare.py`` at the
start and end of the run): the mean rows by ``permutation``, ``t`` or ``wilcoxon``;
the gap rows by the library's choice. The families are taken to be the library's
(one per kind of row -- mean, protected group, unprotected group, RD, NRD, IB -- over
every pair, metric and cut-off); every rate is given per family and over the union of
the families (``all``, and ``all_but_ib``).

Rates: per-replicate events (family-wise error, simultaneous coverage) with MCSE
sqrt(p (1 - p) / reps); rates pooled over the rows of a kind, or per-replicate
proportions (FDP, power, FCR), with the MCSE of the mean of the per-replicate values
(sd / sqrt(reps): the rows of one replicate are dependent); "range" is the spread of
the single rows' rates (each over reps, MCSE sqrt(p (1 - p) / reps)).

The recorded runs (docs/validation-fairness.md, "Comparing models"; 11, 7 and 4
minutes on 2 shared cores)::

    PYTHONPATH=src OMP_WAIT_POLICY=PASSIVE nice -n 10 python \\
        benchmarks/validate_fairness_compare.py run --users 300 --protected-share 0.3 \\
        --reps 300 --seed 35 --scenarios null realistic
    PYTHONPATH=src OMP_WAIT_POLICY=PASSIVE nice -n 10 python \\
        benchmarks/validate_fairness_compare.py run --users 300 --protected-share 0.3 \\
        --reps 300 --seed 35 --scenarios mixed
    PYTHONPATH=src OMP_WAIT_POLICY=PASSIVE nice -n 10 python \\
        benchmarks/validate_fairness_compare.py run --users 200 --protected-share 0.15 \\
        --reps 300 --seed 36 --min-group-size 5 --scenarios null realistic
    PYTHONPATH=src python benchmarks/validate_fairness_compare.py table \\
        benchmarks/results/validate_fairness_compare.jsonl

IB's interval (decision 0417; ``ib``, ``ib-table``): the estimand is theta_n =
E[IB_A(n) - IB_B(n)] (fixed models, i.i.d. users, the audit's n). Truth per scenario,
pair and key: the mean of D = IB_A - IB_B over ``--truth-draws`` data sets drawn as
above, only IB computed (seeds ``np.random.default_rng([seed, 417])``, a child per
scenario), with the MC sd of D. Coverage runs: ``compare_models`` on ``--reps`` data
sets of ``run``'s seeds (the list-swap p-values repeat ``run``'s): bias of D, coverage
of theta_n by each IB row's interval and the Holm-adjusted ones (pooled; the family at
once), mean se_J / sd of D, the IB test's FWER and single-row rejections::

    PYTHONPATH=src OMP_WAIT_POLICY=PASSIVE nice -n 10 python \\
        benchmarks/validate_fairness_compare.py ib --users 300 --protected-share 0.3 \\
        --reps 300 --truth-draws 2000 --seed 35
    PYTHONPATH=src OMP_WAIT_POLICY=PASSIVE nice -n 10 python \\
        benchmarks/validate_fairness_compare.py ib --users 200 --protected-share 0.15 \\
        --reps 300 --truth-draws 2000 --seed 36 --min-group-size 5
    PYTHONPATH=src python benchmarks/validate_fairness_compare.py ib-table

``run`` appends one JSON line per (users, protected share, scenario, test).
Randomness: ``np.random.default_rng(seed)`` spawns one child per scenario (the same
child whichever scenarios are run), each replicate a child of that, each
``compare_models`` call a child of the replicate's. One process.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import itertools
import json
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

from recaudit.fairness import EvaluateOptions, _compare, compare_models
from recaudit.fairness._compare_interbias import (
    PairCoverage,
    _incidence,
    ib_jackknife,
    ib_values,
)
from recaudit.fairness.simulation import planted_truth, simulate_interbias, simulate_lists

N_ITEMS, N_TEST, LENGTH, CUTS = 400, 5, 20, (5, 10, 15)
ALPHA = 0.05
DEFAULT_OUT = Path("benchmarks/results/validate_fairness_compare.jsonl")
KINDS = ("mean", "PG", "UG", "rd", "nrd", "ib")
SCENARIOS: dict[str, dict[str, Any]] = {
    "null": {"models": {"A": (0.30, 0.10), "B": (0.30, 0.10), "C": (0.30, 0.10)},
             "adjust": "holm", "tests": ("permutation", "t", "wilcoxon")},
    "realistic": {"models": {"A": (0.30, 0.0), "B": (0.25, 0.20)}, "adjust": "holm",
                  "tests": ("permutation", "t", "wilcoxon")},
    "mixed": {"models": {"A": (0.30, 0.10), "B": (0.30, 0.10), "C": (0.25, 0.20),
                         "D": (0.25, 0.20)}, "adjust": "bh", "tests": ("permutation", "t")},
}


def _kind(metric: str, group: str) -> tuple[str, str]:
    """(row kind, metric@N) of a row."""
    if group:
        return ("PG" if group == "F" else "UG"), metric
    prefix, _, key = metric.partition("_")
    return (prefix, key) if key else ("mean", metric)


def _coverage(recs: pd.DataFrame) -> dict[int, float]:
    """IC@N of a model's lists over the 400-item catalog."""
    return {c: recs.loc[recs["rank"] <= c, "item_id"].nunique() / N_ITEMS for c in CUTS}


@functools.cache
def _planted(setting: tuple[float, float]) -> dict[str, dict[str, float]]:
    return planted_truth(n_test=N_TEST, list_length=LENGTH, base_hit=setting[0],
                         rd=setting[1], n=CUTS)


def _truth(metric: str, group: str, a: tuple[float, float], b: tuple[float, float],
           ic_a: dict[int, float], ic_b: dict[int, float], share: float) -> float:
    """The true difference a - b of one row (IB: conditional on each model's IC)."""
    kind, key = _kind(metric, group)
    ta, tb = _planted(a)[key], _planted(b)[key]
    if kind == "mean":
        return (share * (ta["protected"] - tb["protected"])
                + (1 - share) * (ta["unprotected"] - tb["unprotected"]))
    if kind in ("PG", "UG"):
        label = "protected" if kind == "PG" else "unprotected"
        return float(ta[label] - tb[label])
    if kind in ("rd", "nrd"):
        return float(ta[kind] - tb[kind])
    cut = int(key.split("@")[1])
    return float(np.sqrt(ta["nrd"] * (1 - ic_a[cut])) - np.sqrt(tb["nrd"] * (1 - ic_b[cut])))


def _draw(spec: dict[str, Any], users: int, share: float, gen: np.random.Generator
          ) -> tuple[Any, dict[str, pd.DataFrame]]:
    """One data set (its lists are the first model's) and every model's lists."""
    (first, (hit0, rd0)), *others = spec["models"].items()
    data = simulate_interbias(users, rng=gen, n_items=N_ITEMS, n_test=N_TEST,
                              list_length=LENGTH, base_hit=hit0, rd=rd0,
                              protected_share=share)
    return data, {first: data.recs} | {
        name: simulate_lists(data, rng=gen, base_hit=h, rd=r) for name, (h, r) in others}


def _one(spec: dict[str, Any], users: int, share: float, options: EvaluateOptions,
         gen: np.random.Generator, tests: tuple[str, ...]
         ) -> dict[str, dict[str, npt.NDArray[Any]]]:
    """One replicate: the data, the models, every test's rows as arrays."""
    models: dict[str, tuple[float, float]] = spec["models"]
    data, recs = _draw(spec, users, share, gen)
    ic = {name: _coverage(r) for name, r in recs.items()}
    out = {}
    for test in tests:
        res = compare_models(recs, data.test, data.users, attribute="gender", protected="F",
                             n_items=N_ITEMS, options=options, stat_test=test,
                             adjust=spec["adjust"], rng=gen.spawn(1)[0])
        rows = res.rows
        truth = np.array([_truth(r.metric, r.group, models[r.a], models[r.b], ic[r.a],
                                 ic[r.b], share) for r in rows])
        same = np.array([models[r.a] == models[r.b] for r in rows])
        kinds = [_kind(r.metric, r.group)[0] for r in rows]
        null = same | ((np.array(kinds) != "ib") & (np.abs(truth) < 1e-12))

        lo, hi, lo_a, hi_a, p, p_adj = (
            np.array([getattr(r, name) for r in rows], dtype=np.float64)
            for name in ("ci_low", "ci_high", "ci_low_adjusted", "ci_high_adjusted",
                         "pvalue", "pvalue_adjusted"))
        out[test] = {
            "label": np.array([f"{r.a}-{r.b}:{r.metric}:{r.group}" for r in rows]),
            "kind": np.array(kinds), "null": null, "truth": truth,
            "finite": np.isfinite([r.difference for r in rows]),
            "cover": (lo <= truth) & (truth <= hi), "cover_adj": (lo_a <= truth) & (truth <= hi_a),
            "rej": p <= ALPHA, "rej_adj": p_adj <= ALPHA,
            "n_protected": np.array([int((data.users["gender"] == "F").sum())]),
            "n_resamples": np.array([res.n_resamples]),
            "test": np.array([r.test for r in rows]),
        }
    return out


def _rate(x: npt.NDArray[np.bool_]) -> dict[str, float]:
    """Per-replicate event rate and its MCSE sqrt(p (1 - p) / reps)."""
    p = float(np.mean(x))
    return {"rate": p, "mcse": float(np.sqrt(p * (1 - p) / x.size))}


def _mean(x: npt.NDArray[np.float64]) -> dict[str, float]:
    """Mean of per-replicate values and sd / sqrt(reps)."""
    return {"rate": float(np.mean(x)), "mcse": float(np.std(x, ddof=1) / np.sqrt(x.size))}


def _family_rates(a: dict[str, npt.NDArray[Any]], keep: npt.NDArray[np.bool_],
                  null: npt.NDArray[np.bool_]) -> dict[str, dict[str, float]]:
    """Holm's and BH's rates over the rows ``keep`` (a family, or a union of them)."""
    rej, cover = a["rej_adj"][:, keep], a["cover_adj"][:, keep]
    nul = null[keep]
    n_rej = np.maximum(rej.sum(axis=1), 1)
    out = {"all_adjusted_cover": _rate(cover.all(axis=1)),
           "fcr": _mean((rej & ~cover).sum(axis=1) / n_rej)}
    if nul.any():
        out["fwer"] = _rate(rej[:, nul].any(axis=1))
        out["fdr"] = _mean((rej & nul).sum(axis=1) / n_rej)
    if (~nul).any():
        out["power"] = _mean(rej[:, ~nul].mean(axis=1))
    return out


def _summary(reps: list[dict[str, npt.NDArray[Any]]]) -> dict[str, Any]:
    """The rates of one scenario and test over the replicates."""
    a = {k: np.stack([r[k] for r in reps]) for k in reps[0] if k not in ("label", "kind",
                                                                          "test")}
    kind, null, label = reps[0]["kind"], reps[0]["null"], reps[0]["label"]
    assert all((r["label"] == label).all() for r in reps), "row order changed"
    out: dict[str, Any] = {"rows_per_rep": int(label.size),
                           "non_finite_rows": int((~a["finite"]).sum()),
                           "row_tests": {k: sorted(set(reps[0]["test"][kind == k]))
                                         for k in KINDS},
                           "n_resamples_used": sorted({int(x) for x in a["n_resamples"][:, 0]})}
    out["families"] = {k: _family_rates(a, kind == k, null) for k in KINDS}
    out["families"]["all"] = _family_rates(a, np.ones_like(null), null)
    out["families"]["all_but_ib"] = _family_rates(a, kind != "ib", null)
    kinds = []
    for k in KINDS:
        for is_null in (True, False):
            m = (kind == k) & (null == is_null)
            if not m.any():
                continue
            per_row = a["cover"][:, m].mean(axis=0)
            kinds.append({
                "kind": k, "null": is_null, "rows": int(m.sum()),
                "cover": _mean(a["cover"][:, m].mean(axis=1)),
                "cover_min": float(per_row.min()), "cover_max": float(per_row.max()),
                "cover_adj": _mean(a["cover_adj"][:, m].mean(axis=1)),
                "reject": _mean(a["rej"][:, m].mean(axis=1)),
                "reject_adj": _mean(a["rej_adj"][:, m].mean(axis=1)),
                "reject_max_row": float(a["rej"][:, m].mean(axis=0).max()),
                "mean_abs_truth": float(np.abs(a["truth"][:, m]).mean()),
            })
    out["kinds"] = kinds
    npro = a["n_protected"][:, 0]
    out["n_protected"] = {"min": int(npro.min()), "median": float(np.median(npro)),
                          "max": int(npro.max())}
    return out


def _source_hash() -> str:
    """SHA-256 (first 16 hex digits) of the compared implementation (``_compare.py`` and
    ``_compare_interbias.py``)."""
    files = (Path(_compare.__file__), Path(_compare.__file__).with_name("_compare_interbias.py"))
    return hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:16]


def run(args: argparse.Namespace) -> None:
    root = np.random.default_rng(args.seed)
    children = dict(zip(SCENARIOS, root.spawn(len(SCENARIOS)), strict=True))
    options = EvaluateOptions(n=CUTS, n_boot=args.n_boot, n_resamples=args.n_resamples,
                              min_group_size=args.min_group_size)
    source = _source_hash()
    for name in args.scenarios:
        spec = SCENARIOS[name]
        start = time.perf_counter()
        tests = tuple(t for t in spec["tests"] if args.tests is None or t in args.tests)
        reps: dict[str, list[dict[str, npt.NDArray[Any]]]] = {v: [] for v in tests}
        for i, gen in enumerate(children[name].spawn(args.reps)):
            for test, arrays in _one(spec, args.users, args.protected_share, options,
                                     gen, tests).items():
                reps[test].append(arrays)
            if (i + 1) % 25 == 0:
                print(f"{name}: {i + 1}/{args.reps} reps, "
                      f"{time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
        wall = time.perf_counter() - start
        with args.out.open("a") as fh:
            for test in tests:
                line = {
                    "scenario": name, "users": args.users,
                    "protected_share": args.protected_share, "test": test,
                    "n_resamples": args.n_resamples, "n_boot": args.n_boot,
                    "adjust": spec["adjust"], "models": spec["models"], "reps": args.reps,
                    "seed": args.seed, "min_group_size": args.min_group_size,
                    "wall_seconds_scenario": round(wall, 1),
                    "compare_sha256": [source, _source_hash()],
                    **_summary(reps[test]),
                }
                fh.write(json.dumps(line) + "\n")
        print(f"{name}: done in {wall:.0f} s", file=sys.stderr, flush=True)


def _f(x: dict[str, float], digits: int = 3) -> str:
    return f"{x['rate']:.{digits}f} ({x['mcse']:.{digits}f})"


def _lines(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """The records, the last one of each (users, share, scenario, test, resamples)."""
    keep: dict[tuple[Any, ...], dict[str, Any]] = {}
    for path in paths:
        for text in path.read_text().splitlines():
            if text.strip():
                r = json.loads(text)
                keep[(r["users"], r["protected_share"], r["scenario"], r["test"],
                      r["n_resamples"])] = r
    return list(keep.values())


def _setting(r: dict[str, Any]) -> str:
    n = r["n_protected"]
    return f"{r['users']} ({r['protected_share']}; {n['min']}-{n['max']} F)"


def _cell(fam: dict[str, Any], what: str) -> str:
    return _f(fam[what]) if what in fam else "--"


FAMILY_COLUMNS = (*KINDS, "all", "all_but_ib")


def table(args: argparse.Namespace) -> None:
    lines = _lines(args.paths)
    head = " | ".join(FAMILY_COLUMNS)
    sep = "---|" * len(FAMILY_COLUMNS)
    for adjust, what, title in (
            ("holm", "fwer", "Holm: family-wise error (any true-null row of the family "
                             "with adjusted p <= 0.05)"),
            ("holm", "all_adjusted_cover", "Holm: simultaneous coverage (every adjusted "
                                           "CI of the family covers its truth)"),
            ("bh", "fdr", "BH: false discovery rate (mean false discovery proportion)"),
            ("bh", "power", "BH: power (mean share of the rows with a non-zero truth "
                            "rejected)"),
            ("bh", "fcr", "BH: false coverage rate of the selected rows' adjusted CIs"),
            ("holm", "power", "Holm: power")):
        chosen = [r for r in lines if r["adjust"] == adjust
                  and any(what in r["families"][k] for k in FAMILY_COLUMNS)]
        if not chosen:
            continue
        print(f"{title}; per family (kind of row) and over the union of the families; "
              "MCSE in parentheses\n")
        print(f"| users (share; protected users) | scenario | test (resamples) | reps | {head} |")
        print(f"|---|---|---|---|{sep}")
        for r in chosen:
            cells = [_cell(r["families"][k], what) for k in FAMILY_COLUMNS]
            print(f"| {_setting(r)} | {r['scenario']} | {r['test']} "
                  f"({'/'.join(map(str, r['n_resamples_used']))}) | {r['reps']} | "
                  + " | ".join(cells) + " |")
        print()
    print("Type-I error of single rows: raw p <= 0.05 over the true-null rows of each kind "
          "(pooled, MCSE; after the slash the largest single row's rate)\n")
    print("| users (share) | scenario | test | " + " | ".join(KINDS) + " |")
    print("|---|---|---|" + "---|" * len(KINDS))
    for r in lines:
        by = {k["kind"]: k for k in r["kinds"] if k["null"]}
        cells = [f"{_f(by[k]['reject'])} / {by[k]['reject_max_row']:.3f}" if k in by else "--"
                 for k in KINDS]
        print(f"| {r['users']} ({r['protected_share']}) | {r['scenario']} | {r['test']} | "
              + " | ".join(cells) + " |")
    print("\nCoverage of the true difference by kind of row (the intervals do not depend on "
          "the test: the first test of each scenario): the rows' own 95 % CIs pooled "
          "(MCSE), the range over the single rows (each over the reps), the "
          "family-adjusted CIs; power = adjusted p <= 0.05 of the rows whose truth is not "
          "0 (this test)\n")
    print("| users (share) | scenario | kind | true diff. | rows/rep | own CI coverage "
          "| range over rows | adjusted CI coverage | power (adjusted) |")
    print("|---|---|---|---|---|---|---|---|---|")
    first: set[tuple[Any, ...]] = set()
    for r in lines:
        key = (r["users"], r["protected_share"], r["scenario"])
        if key in first:
            continue
        first.add(key)
        for k in r["kinds"]:
            power = "--" if k["null"] else _f(k["reject_adj"])
            print(f"| {r['users']} ({r['protected_share']}) | {r['scenario']} | {k['kind']} "
                  f"| {'0' if k['null'] else '!= 0'} | {k['rows']} | {_f(k['cover'])} "
                  f"| {k['cover_min']:.3f}-{k['cover_max']:.3f} | {_f(k['cover_adj'])} "
                  f"| {power} |")


# --- IB's interval (decision 0417) -------------------------------------------------------
IB_OUT = Path("benchmarks/results/validate_fairness_compare_ib_interval.jsonl")
IB_SCENARIOS = ("null", "realistic")


def _ib_truth_draw(spec: dict[str, Any], users: int, share: float, options: EvaluateOptions,
                   gen: np.random.Generator) -> tuple[npt.NDArray[np.float64], ...]:
    """D = IB_a - IB_b, its jackknife se and the second-order corrected se (the
    alternative) of every pair and key (pairs x K each), by ``compare_models``'s own
    functions without its resampling."""
    data, recs = _draw(spec, users, share, gen)
    models, design, _ = _compare._models(
        recs, data.test, data.users, attribute="gender", protected="F",
        n_items=N_ITEMS, items=None, train=None, options=options)
    prot = design.protected[design.codes]
    diffs, ses, alts = [], [], []
    for name_a, name_b in itertools.combinations(models, 2):
        a, b = models[name_a], models[name_b]
        cov = PairCoverage(a.items, b.items, design.coverage)
        ic_a, ic_b = cov.observed()
        nrd = [_compare._figures(_compare._group_sums(m.x, design.members), design)["nrd"]
               for m in (a, b)]
        diffs.append(ib_values(nrd[0], ic_a, design.coverage)
                     - ib_values(nrd[1], ic_b, design.coverage))
        ses.append(ib_jackknife(a.x, b.x, prot, cov, design.coverage))
        alts.append(_ib_jackknife_second_order(a, b, prot, design))
    return np.array(diffs), np.array(ses), np.array(alts)


def _pairs_only(m: Any) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The user pairs (u < v) that alone hold an item, as codes u * n + v, and how many
    items each pair alone holds."""
    held = (m > 0).astype(np.float64).tocsc()
    starts = held.indptr[np.flatnonzero(np.diff(held.indptr) == 2)]
    u, v, n = held.indices[starts], held.indices[starts + 1], held.shape[0]
    return np.unique(np.minimum(u, v) * n + np.maximum(u, v), return_counts=True)


def _ib_jackknife_second_order(a: Any, b: Any, prot: npt.NDArray[np.bool_],
                               design: Any) -> npt.NDArray[np.float64]:
    """The alternative measured against the plain jackknife (not the library's): the
    jackknife variance minus the Efron-Stein second-order term, sum over pairs of the
    interaction I_uv = D - D_(-u) - D_(-v) + D_(-uv) squared, over the pairs that
    alone hold an item in either model's lists at some cut-off (elsewhere I_uv comes
    from NRD's smooth curvature only and is neglected); se = sqrt(max(v, 0))."""
    n, cov, cuts = a.x.shape[0], design.coverage, design.coverage.cuts
    jack = ib_jackknife(a.x, b.x, prot, PairCoverage(a.items, b.items, cov), cov)
    mats = [_incidence(a.items, b.items, c) for c in cuts]
    shared: dict[int, npt.NDArray[np.float64]] = {}  # pair -> (2 models, cuts) counts
    for j, (ma, mb) in enumerate(mats):
        for side, m in enumerate((ma, mb)):
            codes, counts = _pairs_only(m)
            for code, cnt in zip(codes.tolist(), counts.tolist(), strict=True):
                shared.setdefault(code, np.zeros((2, len(cuts))))[side, j] = cnt
    if not shared:
        return jack
    u, v = np.array(list(shared)) // n, np.array(list(shared)) % n
    extra, out = np.stack(list(shared.values())), []  # extra: pairs x 2 x cuts
    for side, m in enumerate((a, b)):
        held = [(mm[side] > 0).astype(np.float64) for mm in mats]
        counts = [np.asarray(h.sum(axis=0)).ravel() for h in held]
        only = np.stack([np.asarray(h @ (c == 1).astype(np.float64)).ravel()
                         for h, c in zip(held, counts, strict=True)], axis=1)  # n x cuts
        covered = np.array([np.count_nonzero(c) for c in counts], dtype=np.float64)
        s_p, s_u, n_p = m.x[prot].sum(axis=0), m.x[~prot].sum(axis=0), prot.sum()
        n_u = prot.size - n_p
        pu, pv = prot[u][:, None], prot[v][:, None]
        x_p = np.where(pu, m.x[u], 0) + np.where(pv, m.x[v], 0)
        x_u = m.x[u] + m.x[v] - x_p
        drop_p = pu.astype(float) + pv
        parts = [_nrd_from(s_p, s_u, n_p, n_u), _nrd_loo(m.x, prot, u, s_p, s_u, n_p, n_u),
                 _nrd_loo(m.x, prot, v, s_p, s_u, n_p, n_u),
                 _nrd_from(s_p - x_p, s_u - x_u, n_p - drop_p, n_u - 2 + drop_p)]
        drops = [0.0, only[u], only[v], only[u] + only[v] + extra[:, side, :]]
        full, one_u, one_v, both = (ib_values(nrd, (covered - drop) / cov.n_items, cov)
                                    for nrd, drop in zip(parts, drops, strict=True))
        out.append(full - one_u - one_v + both)
    inter = out[0] - out[1]
    var = jack ** 2 - np.nansum(inter ** 2, axis=0)
    return np.sqrt(np.maximum(var, 0.0))


def _nrd_from(s_p: Any, s_u: Any, n_p: Any, n_u: Any) -> npt.NDArray[np.float64]:
    """NRD from group sums and sizes (broadcast)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        pg, ug = np.maximum(s_p / n_p, 0.0), np.maximum(s_u / n_u, 0.0)
        return ((ug - pg) / (ug + pg) + 1.0) / 2.0


def _nrd_loo(x: Any, prot: Any, idx: Any, s_p: Any, s_u: Any, n_p: Any, n_u: Any
             ) -> npt.NDArray[np.float64]:
    """NRD without each user of ``idx``."""
    pr = prot[idx][:, None]
    return _nrd_from(s_p - np.where(pr, x[idx], 0), s_u - np.where(pr, 0, x[idx]),
                     n_p - pr, n_u - ~pr)


def _ib_run_one(spec: dict[str, Any], users: int, share: float, options: EvaluateOptions,
                gen: np.random.Generator) -> dict[str, npt.NDArray[Any]]:
    """One coverage replicate: ``compare_models`` as ``run --tests permutation``, its IB
    rows as arrays (pairs x K, pair-major)."""
    data, recs = _draw(spec, users, share, gen)
    res = compare_models(recs, data.test, data.users, attribute="gender",
                         protected="F", n_items=N_ITEMS, options=options,
                         stat_test="permutation", adjust=spec["adjust"], rng=gen.spawn(1)[0])
    rows = [r for r in res.rows if r.metric.startswith("ib_")]
    return {"label": np.array([f"{r.a}-{r.b}:{r.metric}" for r in rows]), **{
        name: np.array([getattr(r, name) for r in rows], dtype=np.float64)
        for name in ("difference", "ci_low", "ci_high", "ci_low_adjusted",
                     "ci_high_adjusted", "pvalue", "pvalue_adjusted")}}


def _ib_truth(name: str, args: argparse.Namespace, options: EvaluateOptions
              ) -> dict[str, npt.NDArray[np.float64]]:
    """theta_n (mean D), the MC sd of D, the mean se_J and the jackknife-t coverage over
    the truth draws (pairs x K flattened, pair-major as the rows)."""
    root = np.random.default_rng([args.seed, 417])
    gen = dict(zip(SCENARIOS, root.spawn(len(SCENARIOS)), strict=True))[name]
    d, se, alt = (np.array(x).reshape(args.truth_draws, -1) for x in zip(
        *(_ib_truth_draw(SCENARIOS[name], args.users, args.protected_share, options, g)
          for g in gen.spawn(args.truth_draws)), strict=True))
    theta, t = d.mean(axis=0), stats.t.ppf(0.975, args.users - 1)
    return {"theta": theta, "sd": d.std(axis=0, ddof=1), "se_mean": se.mean(axis=0),
            "cover": np.mean(np.abs(d - theta) <= t * se, axis=0),
            "alt_se_mean": alt.mean(axis=0),
            "alt_cover": np.mean(np.abs(d - theta) <= t * alt, axis=0),
            "finite": np.isfinite(d).all(axis=0)}


def _spread(x: npt.NDArray[np.float64]) -> list[float]:
    return [float(x.min()), float(x.mean()), float(x.max())]


def _by_cut(labels: npt.NDArray[Any], cover: npt.NDArray[np.bool_],
            ratio: npt.NDArray[np.float64], truth: dict[str, npt.NDArray[np.float64]]
            ) -> dict[str, dict[str, Any]]:
    """Per cut-off: the coverage runs' pooled coverage and se_J / sd over the rows; over
    the truth draws the jackknife-t's and the second-order alternative's coverage and
    mean se / sd ([min, mean, max] over the rows)."""
    out = {}
    for cut in CUTS:
        m = np.char.endswith(labels.astype(str), f"@{cut}")
        out[str(cut)] = {
            "cover": _mean(cover[:, m].mean(axis=1)), "se_ratio": _spread(ratio[m]),
            "draws_cover_jackknife": _spread(truth["cover"][m]),
            "draws_se_ratio_jackknife": _spread(truth["se_mean"][m] / truth["sd"][m]),
            "draws_cover_second_order": _spread(truth["alt_cover"][m]),
            "draws_se_ratio_second_order": _spread(truth["alt_se_mean"][m] / truth["sd"][m])}
    return out


def _ib_summary(reps: list[dict[str, npt.NDArray[Any]]],
                truth: dict[str, npt.NDArray[np.float64]], n_users: int, draws: int,
                null: bool) -> dict[str, Any]:
    """Bias, coverage, sd ratio and the test's rates of the IB rows over the replicates
    (se_J read back from the rows' own 95 % intervals, D +- t_{n-1} se_J)."""
    a = {k: np.stack([r[k] for r in reps]) for k in reps[0] if k != "label"}
    labels = reps[0]["label"]
    theta, sd = truth["theta"], truth["sd"]
    cover = (a["ci_low"] <= theta) & (theta <= a["ci_high"])
    cover_adj = (a["ci_low_adjusted"] <= theta) & (theta <= a["ci_high_adjusted"])
    se_j = (a["ci_high"] - a["ci_low"]) / 2 / stats.t.ppf(0.975, n_users - 1)
    bias = a["difference"].mean(axis=0) - theta
    bias_se = np.sqrt(a["difference"].var(axis=0, ddof=1) / len(reps) + sd ** 2 / draws)
    ratio = np.nanmean(se_j, axis=0) / sd
    out: dict[str, Any] = {
        "rows": int(theta.size), "non_finite_intervals": int((~np.isfinite(a["ci_low"])).sum()),
        "theta_abs_mean": float(np.abs(theta).mean()), "theta_abs_max": float(np.abs(
            theta).max()), "theta_mcse_max": float((sd / np.sqrt(draws)).max()),
        "sd_d": dict(zip(("min", "mean", "max"), _spread(sd), strict=True)),
        "bias": {"mean": float(bias.mean()), "abs_max": float(np.abs(bias).max()),
                 "max_z": float(np.abs(bias / bias_se).max()),
                 "mean_over_sd": float(np.mean(bias / sd))},
        "cover": _mean(cover.mean(axis=1)), "cover_min": float(cover.mean(axis=0).min()),
        "cover_max": float(cover.mean(axis=0).max()), "cover_adj": _mean(cover_adj.mean(1)),
        "family_adj_cover": _rate(cover_adj.all(axis=1)),
        "se_ratio": dict(zip(("min", "mean", "max"), _spread(ratio), strict=True)),
        "by_cut": _by_cut(labels, cover, ratio, truth),
    }
    if null:
        out["fwer"] = _rate((a["pvalue_adjusted"] <= ALPHA).any(axis=1))
        out["reject"] = _mean((a["pvalue"] <= ALPHA).mean(axis=1))
        out["reject_max_row"] = float((a["pvalue"] <= ALPHA).mean(axis=0).max())
    else:
        out["power_adj"] = _mean((a["pvalue_adjusted"] <= ALPHA).mean(axis=1))
    return out


def ib(args: argparse.Namespace) -> None:
    """Truth by Monte Carlo, then the coverage runs; one JSON line per scenario."""
    children = dict(zip(SCENARIOS, np.random.default_rng(args.seed).spawn(len(SCENARIOS)),
                        strict=True))
    options = EvaluateOptions(n=CUTS, n_boot=args.n_boot, n_resamples=args.n_resamples,
                              min_group_size=args.min_group_size)
    source = _source_hash()
    for name in args.scenarios:
        start = time.perf_counter()
        truth = _ib_truth(name, args, options)
        truth_wall = time.perf_counter() - start
        reps = []
        for i, gen in enumerate(children[name].spawn(args.reps)):
            reps.append(_ib_run_one(SCENARIOS[name], args.users, args.protected_share,
                                    options, gen))
            if (i + 1) % 25 == 0:
                print(f"{name}: {i + 1}/{args.reps} reps, "
                      f"{time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
        labels, models = reps[0]["label"], SCENARIOS[name]["models"]
        assert all((r["label"] == labels).all() for r in reps), "row order changed"
        line = {"scenario": name, "users": args.users, "protected_share": args.protected_share,
                "min_group_size": args.min_group_size, "seed": args.seed, "reps": args.reps,
                "truth_draws": args.truth_draws, "n_boot": args.n_boot,
                "n_resamples": args.n_resamples, "models": models,
                "wall_seconds": [round(truth_wall, 1), round(time.perf_counter() - start, 1)],
                "compare_sha256": [source, _source_hash()], "theta": dict(zip(
                    map(str, labels), map(float, truth["theta"]), strict=True)),
                **_ib_summary(reps, truth, args.users, args.truth_draws,
                              null=len(set(models.values())) == 1)}
        with args.out.open("a") as fh:
            fh.write(json.dumps(line) + "\n")


def ib_table(args: argparse.Namespace) -> None:
    """The IB interval's table (the last line of each setting and scenario)."""
    keep: dict[tuple[Any, ...], dict[str, Any]] = {}
    for path in args.paths:
        for text in path.read_text().splitlines():
            if text.strip():
                r = json.loads(text)
                keep[(r["users"], r["protected_share"], r["scenario"])] = r
    print("| users (share) | scenario | rows | mean abs theta_n (MC s.e. max) | sd of D | "
          "bias of D: mean (max abs; max abs z) | own CI coverage (range over rows) | "
          "Holm CI coverage, pooled | Holm CIs, whole family | se_J / sd | "
          "IB test: FWER / row type-I / power |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in keep.values():
        test = (f"{_f(r['fwer'])} / {_f(r['reject'])}" if "fwer" in r
                else f"power {_f(r['power_adj'])}")
        b, sd, q = r["bias"], r["sd_d"], r["se_ratio"]
        print(f"| {r['users']} ({r['protected_share']}) | {r['scenario']} | {r['rows']} | "
              f"{r['theta_abs_mean']:.4f} ({r['theta_mcse_max']:.4f}) | "
              f"{sd['min']:.4f}-{sd['max']:.4f} | {b['mean']:+.5f} ({b['abs_max']:.4f}; "
              f"{b['max_z']:.1f}) | {_f(r['cover'])} ({r['cover_min']:.3f}-"
              f"{r['cover_max']:.3f}) | {_f(r['cover_adj'])} | {_f(r['family_adj_cover'])} "
              f"| {q['mean']:.3f} ({q['min']:.3f}-{q['max']:.3f}) | {test} |")
    print("\nBy cut-off: coverage runs (own CI coverage, MCSE; se_J / sd) and over the truth "
          "draws the jackknife-t and the second-order alternative (coverage, se / sd; "
          "min-max over the rows)\n")
    print("| users (share) | scenario | N | own CI coverage | se_J / sd | draws: jackknife "
          "coverage | se_J / sd | draws: second-order coverage | se / sd |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in keep.values():
        for cut, c in r["by_cut"].items():
            cells = [f"{min(c[k]):.3f}-{max(c[k]):.3f}" if isinstance(c[k], list)
                     else f"{c[k]:.3f} (mean)" for k in (
                "draws_cover_jackknife", "draws_se_ratio_jackknife",
                "draws_cover_second_order", "draws_se_ratio_second_order")]
            print(f"| {r['users']} ({r['protected_share']}) | {r['scenario']} | {cut} | "
                  f"{_f(c['cover'])} | {c['se_ratio'][1]:.3f} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run")
    q = sub.add_parser("ib", help="IB's jackknife interval: truth by Monte Carlo, coverage")
    for one in (p, q):
        one.add_argument("--reps", type=int, default=300)
        one.add_argument("--users", type=int, default=300)
        one.add_argument("--protected-share", type=float, default=0.3)
        one.add_argument("--seed", type=int, default=35)
        one.add_argument("--n-boot", type=int, default=1000)
        one.add_argument("--n-resamples", type=int, default=999)
        one.add_argument("--min-group-size", type=int, default=20, help=(
            "compare_models' minimum group size (lower it for small groups)"))
    p.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    p.add_argument("--tests", nargs="+", choices=("permutation", "t", "wilcoxon"),
                   help="only these of the scenario's tests of the means (the gap and IB "
                        "rows are always permutation tests)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    t = sub.add_parser("table")
    t.add_argument("paths", type=Path, nargs="*", default=[DEFAULT_OUT])
    q.add_argument("--truth-draws", type=int, default=2000)
    q.add_argument("--scenarios", nargs="+", choices=IB_SCENARIOS, default=list(IB_SCENARIOS))
    q.add_argument("--out", type=Path, default=IB_OUT)
    r = sub.add_parser("ib-table")
    r.add_argument("paths", type=Path, nargs="*", default=[IB_OUT])
    args = parser.parse_args()
    {"run": run, "table": table, "ib": ib, "ib-table": ib_table}[args.command](args)


if __name__ == "__main__":
    main()
