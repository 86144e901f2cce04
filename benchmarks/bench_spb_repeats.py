"""Fold-lottery spread of sPB and of per-instance sPB differences vs ``n_repeats``.

For each R in 1, 5, 10, 20, 50: SEEDS random fold assignments of every cell of a study
run folder; prints the SD of each cell's sPB, the median bootstrap CI half-width, and
the SD / range of each counterfactual comparison's Hodges-Lehmann shift and its p range
(docs/decisions/, "sPB averages over repeated fold assignments").

Usage::

    PYTHONPATH=src python benchmarks/bench_spb_repeats.py RUN_DIR [SEEDS=40]
"""

import sys

import numpy as np
import pandas as pd

from recaudit.positional import evaluations_from_table
from recaudit.positional._counterfactual import (
    estimate_p_hat,
    instance_spb,
    paired_instances,
    paired_wilcoxon,
)
from recaudit.positional._metrics import strong_positional_bias

run = sys.argv[1]
n_seeds = int(sys.argv[2]) if len(sys.argv) > 2 else 40
t = pd.read_parquet(f"{run}/evaluations.parquet")
ev = {}
for (_m, _k, T, c), part in t.groupby(["model", "k", "temperature", "condition"]):
    ev[(T, c)] = evaluations_from_table(part)
temps = sorted({T for T, _ in ev})
phat = {T: estimate_p_hat(ev[(T, "permutation")]) for T in temps}
comps = []
for T in temps:
    comps.append((f"labels_vs_permutation T={T}", (T, "labels"), (T, "permutation")))
    comps.append(
        (f"labels_perm_vs_permutation T={T}", (T, "labels_permutation"), (T, "permutation"))
    )
    if T > 0:
        comps.append((f"both_vs_decoding T={T}", (T, "permutation"), (T, "decoding")))
        comps.append((f"both_vs_perm_only T={T}", (T, "permutation"), (0.0, "permutation")))
out = {}
for R in [1, 5, 10, 20, 50]:
    cell_vals = {c: [] for c in ev}
    eff = {n: [] for n, _, _ in comps}
    pv = {n: [] for n, _, _ in comps}
    for s in range(n_seeds):
        inst = {
            c: instance_spb(e, p_hat=phat[c[0]], n_repeats=R, rng=1000 * s + i)
            for i, (c, e) in enumerate(ev.items())
        }
        for c in ev:
            cell_vals[c].append(inst[c].spb.mean())
        for n, a, b in comps:
            ids, ra, rb = paired_instances(inst[a], inst[b])
            w = paired_wilcoxon(inst[a].spb[ra], inst[b].spb[rb])
            eff[n].append(w.effect.value)
            pv[n].append(w.pvalue)
    # bootstrap half-width of cell sPB (one seed)
    hw = []
    for c, e in ev.items():
        r = strong_positional_bias(
            e, p_hat=phat[c[0]] if c[1] != "permutation" else None, n_repeats=R, rng=7
        )
        hw.append((r.ci.high - r.ci.low) / 2)
    sd_cell = np.array([np.std(v, ddof=1) for v in cell_vals.values()])
    sd_eff = {n: np.std(v, ddof=1) for n, v in eff.items()}
    rng_eff = {n: np.ptp(v) for n, v in eff.items()}
    p_range = {n: (min(v), max(v)) for n, v in pv.items()}
    out[R] = dict(
        sd_cell_max=sd_cell.max(),
        sd_cell_median=np.median(sd_cell),
        boot_hw_median=np.median(hw),
        sd_eff_max=max(sd_eff.values()),
        sd_eff_median=np.median(list(sd_eff.values())),
        range_eff_max=max(rng_eff.values()),
    )
    print(
        f"R={R}: cell sPB SD median {np.median(sd_cell):.4f} max {sd_cell.max():.4f}; boot CI half-width median {np.median(hw):.4f}; "  # noqa: E501
        f"diff HL SD median {np.median(list(sd_eff.values())):.4f} max {max(sd_eff.values()):.4f}; range max {max(rng_eff.values()):.4f}",  # noqa: E501
        flush=True,
    )
    for n in eff:
        print(
            f"   {n:40s} HL mean {np.mean(eff[n]):+.4f} SD {sd_eff[n]:.4f} range {rng_eff[n]:.4f} p in [{p_range[n][0]:.3f}, {p_range[n][1]:.3f}]"  # noqa: E501
        )
