"""Calibration of POB-UNBP and recovery of sPB on simulated data (spec section 8).

    PYTHONPATH=src python benchmarks/calibration.py --reps 1000 --seed 20261129

Prints two markdown tables: the POB-UNBP type-I error at alpha = 0.05 (pooled vs
per-position variance, 20 evaluations per query), and sPB against the known
strong-bias rate (20 evaluations per query, 'auto' rule vs fixed tau).
"""

from __future__ import annotations

import argparse

import numpy as np

from recaudit._stats import binomial_interval
from recaudit.positional import pob_unbp, simulate_evaluations, strong_positional_bias


def type_one_error(reps: int, rng: np.random.Generator) -> None:
    print(
        "| k | queries | pooled (default) | per-position | pooled, side=under | pooled, side=over |"
    )
    print("|---|---|---|---|---|---|")
    for k in (5, 10, 15, 20):
        for n in (30, 100, 300):
            hits = np.zeros(4, dtype=int)
            for _ in range(reps):
                ev = simulate_evaluations(n, k=k, n_perms=20, p_bias=0.0, rng=rng)
                hits += [
                    pob_unbp(ev).reject,
                    pob_unbp(ev, variance="per_position").reject,
                    pob_unbp(ev, side="under").reject,
                    pob_unbp(ev, side="over").reject,
                ]
            cells = []
            for h in hits:
                ci = binomial_interval(int(h), reps)
                cells.append(f"{h / reps:.4f} [{ci.low:.4f}, {ci.high:.4f}]")
            print(f"| {k} | {n} | " + " | ".join(cells) + " |", flush=True)


def spb_recovery(rng: np.random.Generator) -> None:
    print("| k | p_bias | true sPB | sPB auto [95% CI] | sPB tau=0.9 | sPB tau=0.8 |")
    print("|---|---|---|---|---|---|")
    for k in (5, 10, 15, 20):
        for p in (0.0, 0.1, 0.3, 0.5):
            ev, rel = simulate_evaluations(
                1000, k=k, n_perms=20, p_bias=p, rng=rng, return_truth=True
            )
            truth = float(np.mean(p * (k - rel.sum(axis=1)) / k))
            auto = strong_positional_bias(ev, n_boot=1000, rng=rng)
            fixed = [strong_positional_bias(ev, tau=t, n_boot=1, rng=rng).value for t in (0.9, 0.8)]
            print(
                f"| {k} | {p} | {truth:.3f} | {auto.value:.3f} [{auto.ci.low:.3f}, "
                f"{auto.ci.high:.3f}] | {fixed[0]:.3f} | {fixed[1]:.3f} |",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261129)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    type_one_error(args.reps, rng)
    print()
    spb_recovery(rng)


if __name__ == "__main__":
    main()
