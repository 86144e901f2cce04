"""Type-I error and power of the top-N test on the primacy Plackett-Luce simulator.

Run from the repo root: `PYTHONPATH=src python docs/scripts/topn_power.py` (docs/mitigation.md).
"""
import numpy as np
from recaudit._stats import binomial_interval
from recaudit.positional import simulate_rankings, topn_bias
rng = np.random.default_rng(2026)
for p_bias in (0.0, 0.05, 0.1, 0.2):
    for stat in ("rank_bias", "spearman"):
        hits = sum(topn_bias(simulate_rankings(n_queries=20, n_perms=5, k=5, p_bias=p_bias, rng=rng),
                             statistic=stat, n_resamples=199, n_boot=1, rng=rng).pvalue <= 0.05
                   for _ in range(200))
        ci = binomial_interval(hits, 200)
        print(f"p_bias={p_bias} {stat}: {hits/200:.3f} [{ci.low:.3f}, {ci.high:.3f}]")
