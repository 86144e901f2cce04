"""CPU cost of per-instance sPB vs ``n_repeats`` on every cell of a study run folder.

Usage::

    PYTHONPATH=src python benchmarks/bench_spb_repeats_cost.py RUN_DIR
"""

import sys
import timeit

import pandas as pd

from recaudit.positional import evaluations_from_table
from recaudit.positional._counterfactual import instance_spb

t = pd.read_parquet(f"{sys.argv[1]}/evaluations.parquet")
parts = [
    evaluations_from_table(p) for _, p in t.groupby(["model", "k", "temperature", "condition"])
]


def run(R):
    for e in parts:
        instance_spb(e, p_hat=0.3, n_repeats=R, rng=0)


base = min(timeit.repeat(lambda: run(1), number=5, repeat=5)) / 5
for R in [1, 5, 10, 20, 50]:
    tm = min(timeit.repeat(lambda r=R: run(r), number=5, repeat=5)) / 5
    print(f"R={R}: {1000 * tm:.1f} ms for 16 cells (480 evaluations each), {tm / base:.1f}x R=1")
