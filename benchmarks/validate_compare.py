"""Validate `positional compare`: family-wise error (Holm) under the global null, CI
coverage of the true PB difference, paired design; with ``--mixed``, the false discovery
rate of Benjamini-Hochberg under a mixed null (two pairs of identical systems, four pairs
that differ), over the whole family of rows BH adjusts (every pair x measure).

Each system picks the first prompt position with probability p and otherwise a uniform
position, on shared (query, order) keys, so PB = p (1 - 1/k) exactly.

    nice -n 10 env PYTHONPATH=src python benchmarks/validate_compare.py --reps 200
    nice -n 10 env PYTHONPATH=src python benchmarks/validate_compare.py --mixed --reps 400

With ``--adjusted``, the family's adjusted intervals (``ci_low_adjusted`` /
``ci_high_adjusted``) of four systems (six pairs, PB differences 0 to 0.16): with Holm,
how often ALL six cover their true difference (simultaneous coverage, Bonferroni level),
beside the row-wise intervals; with BH, the false coverage rate of Benjamini & Yekutieli's
intervals over the pairs BH selects (validate_compare_adjusted.jsonl).

    nice -n 10 env PYTHONPATH=src python benchmarks/validate_compare.py --adjusted --reps 400
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from recaudit.positional import evaluations_from_table, simulate_evaluations
from recaudit.positional._compare import compare_systems

K, N = 5, 100


def _systems(ps: list[float], gen: np.random.Generator) -> dict[str, object]:
    base = simulate_evaluations(N, k=K, p_bias=0.0, rng=gen).to_frame()
    out = {}
    for i, p in enumerate(ps):
        f = base.copy()
        first = gen.random(len(f)) < p
        f["selected_position"] = np.where(first, 1, gen.integers(1, K + 1, len(f)))
        out[f"s{i}"] = evaluations_from_table(f)
    return out


def run(scenario: str, ps: list[float], reps: int, seed: int) -> dict[str, object]:
    gen = np.random.default_rng(seed)
    fwer = cover = total = 0
    for _ in range(reps):
        rows = [r for r in compare_systems(_systems(ps, gen), n_boot=500, rng=gen)
                if r.measure == "pb_plugin"]
        truth = {f"s{i}": p * (1 - 1 / K) for i, p in enumerate(ps)}
        fwer += any(r.pvalue_adjusted <= 0.05 and truth[r.a] == truth[r.b] for r in rows)
        for r in rows:
            d = truth[r.a] - truth[r.b]
            cover += r.ci_low <= d <= r.ci_high
            total += 1
    fw, cv = fwer / reps, cover / total
    return {"scenario": scenario, "ps": ps, "reps": reps, "n_queries": N, "k": K,
            "fwer_holm": fw, "fwer_mcse": (fw * (1 - fw) / reps) ** 0.5,
            "coverage": cv, "coverage_mcse": (cv * (1 - cv) / total) ** 0.5}


def run_mixed(ps: list[float], reps: int, seed: int) -> dict[str, object]:
    """BH's FDR and power when some systems are identical and others differ; the truth
    of both measures is p (1 - 1/k) in this generator."""
    gen = np.random.default_rng(seed)
    truth = {f"s{i}": p * (1 - 1 / K) for i, p in enumerate(ps)}
    fdp, power = [], []
    for _ in range(reps):
        rows = compare_systems(_systems(ps, gen), adjust="bh", n_boot=500, rng=gen)
        rejected = [r for r in rows if r.pvalue_adjusted <= 0.05]
        false = sum(truth[r.a] == truth[r.b] for r in rejected)
        fdp.append(false / max(len(rejected), 1))
        differ = [r for r in rows if truth[r.a] != truth[r.b]]
        power.append(sum(r.pvalue_adjusted <= 0.05 for r in differ) / len(differ))
    f, pw = np.asarray(fdp), np.asarray(power)
    return {"scenario": "mixed-null-bh", "ps": ps, "reps": reps, "n_queries": N, "k": K,
            "fdr_bh": float(f.mean()), "fdr_mcse": float(f.std() / reps ** 0.5),
            "power_bh": float(pw.mean()), "power_mcse": float(pw.std() / reps ** 0.5)}


def run_adjusted(ps: list[float], reps: int, seed: int,
                 n_boot: int = 500) -> list[dict[str, object]]:
    """Simultaneous coverage (Holm: Bonferroni intervals) and false coverage rate (BH:
    Benjamini-Yekutieli intervals over the selected pairs) of the PB differences."""
    truth = {f"s{i}": p * (1 - 1 / K) for i, p in enumerate(ps)}
    out = []
    for adjust in ("holm", "bh"):
        gen = np.random.default_rng(seed)
        joint = joint_raw = 0
        fcp = []
        for _ in range(reps):
            rows = [r for r in compare_systems(_systems(ps, gen), adjust=adjust,
                                               n_boot=n_boot, rng=gen)
                    if r.measure == "pb_plugin"]
            miss = [not r.ci_low_adjusted <= truth[r.a] - truth[r.b] <= r.ci_high_adjusted
                    for r in rows]
            joint += not any(miss)
            joint_raw += all(r.ci_low <= truth[r.a] - truth[r.b] <= r.ci_high for r in rows)
            selected = [m for m, r in zip(miss, rows, strict=True)
                        if r.pvalue_adjusted <= 0.05]
            fcp.append(sum(selected) / max(len(selected), 1))
        j, jr, f = joint / reps, joint_raw / reps, np.asarray(fcp)
        out.append({"scenario": f"adjusted-{adjust}", "interval": "expanded percentile",
                    "ps": ps, "reps": reps, "n_boot": n_boot,
                    "n_queries": N, "k": K, "pairs": len(rows),
                    "simultaneous_coverage_adjusted": j,
                    "simultaneous_coverage_adjusted_mcse": (j * (1 - j) / reps) ** 0.5,
                    "simultaneous_coverage_rowwise": jr,
                    "simultaneous_coverage_rowwise_mcse": (jr * (1 - jr) / reps) ** 0.5,
                    "false_coverage_rate_selected": float(f.mean()),
                    "false_coverage_rate_mcse": float(f.std() / reps ** 0.5)})
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=20261205)
    parser.add_argument("--mixed", action="store_true",
                        help="BH's FDR under a mixed null (validate_compare_bh.jsonl)")
    parser.add_argument("--n-boot", type=int, default=500,
                        help="bootstrap resamples per comparison (--adjusted)")
    parser.add_argument("--adjusted", action="store_true",
                        help="the adjusted intervals (validate_compare_adjusted.jsonl)")
    args = parser.parse_args()
    if args.adjusted:
        path = Path(__file__).parent / "results" / "validate_compare_adjusted.jsonl"
        rows = run_adjusted([0.2, 0.2, 0.3, 0.4], args.reps, args.seed, args.n_boot)
        for row in rows:
            print(json.dumps(row))
        with path.open("a", encoding="utf-8") as fh:
            fh.write("".join(json.dumps(r) + "\n" for r in rows))
        return
    if args.mixed:
        row = run_mixed([0.2, 0.2, 0.25, 0.25], args.reps, args.seed)
        print(json.dumps(row))
        path = Path(__file__).parent / "results" / "validate_compare_bh.jsonl"
        path.write_text(json.dumps(row) + "\n", encoding="utf-8")
        return
    out = Path(__file__).parent / "results" / "validate_compare.jsonl"
    with out.open("w") as fh:
        for name, ps in [("global-null", [0.2, 0.2, 0.2]), ("realistic", [0.2, 0.35])]:
            row = run(name, ps, args.reps, args.seed)
            print(json.dumps(row))
            fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
