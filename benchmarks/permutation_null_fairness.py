"""Type-I error of the gap permutation test (`_permutation_pvalues`) on 300-user null data.

Gender independent of everything (rd = 0, Last.fm-like tail); REPS data sets, B
permutations each; prints the rejection rate at alpha 0.05 per metric and cut-off.

    PYTHONPATH=src python benchmarks/permutation_null_fairness.py 8000 199
"""

import sys
import time
import types

import numpy as np

from recaudit.fairness._evaluate import _permutation_pvalues
from recaudit.fairness._metrics import METRICS, ranking_metrics
from recaudit.fairness.simulation import simulate_interbias

reps, B = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(20261218)
t0 = time.time()
rej = []
for _ in range(reps):
    d = simulate_interbias(300, rng=rng, top_share=0.8, base_hit=0.15)
    L = d.recs.item_id.to_numpy().reshape(300, 20)
    T = d.test.item_id.to_numpy().reshape(300, 5)
    hits = (L[:, :, None] == T[:, None, :]).any(axis=2)
    v = ranking_metrics(hits, np.full(300, 5), n=[5, 10, 15])
    x = np.hstack([v[m] for m in METRICS])
    prot = (d.users.gender == "F").to_numpy()
    p = _permutation_pvalues(x, prot, types.SimpleNamespace(n_resamples=B, rng=rng))
    rej.append(p <= 0.05)
rej = np.array(rej)
keys = [f"{m}@{c}" for m in METRICS for c in (5, 10, 15)]
rate = rej.mean(0)
se = np.sqrt(0.05 * 0.95 / reps)
for k, r in zip(keys, rate, strict=True):
    print(f"{k}: {r:.4f} (se {se:.4f})")
print("pooled over keys", rate.mean(), "time", time.time() - t0)
