"""How much of the niche group's `profile_tail_share` under-coverage is the head's selection.

The niche figure is the mean tail share of the ``ceil(20 %)`` users with the most tail
items among their training items, the tail being every item outside the head (the 80
most popular of 400). This probe bootstraps it by hand (numpy, the same basic interval
``2 θ̂ - q*`` as ``evaluate``) in one cell of ``validate_fairness.py`` (Last.fm-like tail
0.85, rd 0.1, 300 users, the harness's simulator settings) two ways:

- ``fixed true head``: the head is the 100,000-user draw's top 80 in the sample and in
  every resample (no head selection);
- ``re-chosen head``: the head is the sample's top 80, and each resample's (what
  ``evaluate`` does).

Truth: the figure on the 100,000-user draw. Prints coverage (s.e. about 0.02 at 200 data
sets) and bias of each design.

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/niche_head_probe.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import validate_fairness as vf  # noqa: E402

from recaudit.fairness.simulation import simulate_interbias  # noqa: E402

N_ITEMS = vf.SIM["n_items"]
HEAD = int(np.ceil(0.2 * N_ITEMS))
SETTINGS = {k: v for k, v in vf.SIM.items() if k != "base_hit"}
CELL = {"top_share": 0.85, "rd": 0.1, "base_hit": vf.SIM["base_hit"]}
DATA_SETS, RESAMPLES, USERS, SEED = 200, 200, 300, 5


def incidence(train: pd.DataFrame, n_users: int) -> npt.NDArray[np.float64]:
    """Users x items, 1 where the user holds the item in training."""
    x = np.zeros((n_users, N_ITEMS))
    x[train["user_id"].to_numpy() - train["user_id"].min(), train["item_id"].to_numpy()] = 1
    return x


def top_head(popularity: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """1 on the ``HEAD`` most popular items (ties to the smaller item id)."""
    head = np.zeros(N_ITEMS)
    head[np.lexsort((np.arange(N_ITEMS), -popularity))[:HEAD]] = 1
    return head


def niche_tail_share(x: npt.NDArray[np.float64], w: npt.NDArray[np.float64],
                     head: npt.NDArray[np.float64]) -> float:
    """Mean tail share of the ``ceil(20 %)`` of the ``w``-weighted users with the most."""
    share = 1 - (x @ head) / x.sum(axis=1)
    order = np.argsort(-share, kind="stable")
    end = np.cumsum(w[order])
    k = np.ceil(0.2 * w.sum())
    take = np.clip(k - (end - w[order]), 0, w[order])
    return float((take * share[order]).sum() / k)


def main() -> None:
    rng = np.random.default_rng(SEED)
    big = simulate_interbias(100_000, rng=rng, **CELL, **SETTINGS)
    x_big = incidence(big.train, 100_000)
    true_head = top_head(x_big.sum(axis=0))
    truth = niche_tail_share(x_big, np.ones(100_000), true_head)
    hits = {"fixed true head": 0, "re-chosen head": 0}
    estimates: dict[str, list[float]] = {name: [] for name in hits}
    for _ in range(DATA_SETS):
        d = simulate_interbias(USERS, rng=rng, **CELL, **SETTINGS)
        x = incidence(d.train, USERS)
        weights = rng.multinomial(USERS, np.full(USERS, 1 / USERS), size=RESAMPLES)
        for name in hits:
            fixed = name.startswith("fixed")
            est = niche_tail_share(x, np.ones(USERS), true_head if fixed else top_head(x.sum(0)))
            reps = np.array([niche_tail_share(x, w, true_head if fixed else top_head(w @ x))
                             for w in weights.astype(float)])
            low, high = 2 * est - np.quantile(reps, 0.975), 2 * est - np.quantile(reps, 0.025)
            hits[name] += int(low <= truth <= high)
            estimates[name].append(est)
    print(f"truth {truth:.4f}")
    for name, count in hits.items():
        cov = count / DATA_SETS
        print(f"{name}: coverage {cov:.3f} (s.e. {np.sqrt(cov * (1 - cov) / DATA_SETS):.3f}),"
              f" bias {np.mean(estimates[name]) - truth:+.4f}")


if __name__ == "__main__":
    main()
