"""The popularity section's bootstrap replicate recounts popularity from the resample.

A resample with user weights ``w`` is the data set in which each evaluated user appears
``w_u`` times (as ``w_u`` distinct users): its ARP and profile popularity, computed from
scratch by `popularity_metrics` and pandas, must equal the replicate `_Recount.statistics`
gives -- which fails if popularity were held at its observed value. The head-based
figures and novelty keep the observed head and counts: their replicate is the old one.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recaudit.fairness import POPULARITY_METRICS, EvaluateOptions, popularity_metrics
from recaudit.fairness._inputs import _evaluate_iv
from recaudit.fairness._popularity_bias import PROFILE_FIGURES, _PopularityValues
from recaudit.fairness._synthetic import simulate_interbias

CUTS = (5, 10)
N_ITEMS = 300


def _values(seed: int) -> tuple[_PopularityValues, pd.DataFrame, pd.DataFrame, pd.DataFrame,
                                pd.Index]:
    d = simulate_interbias(150, rng=np.random.default_rng(seed), n_items=N_ITEMS, top_share=0.85)
    dropped = d.users["user_id"].iloc[:15]  # training users outside the evaluated ones
    test = d.test[~d.test["user_id"].isin(dropped)]
    inp = _evaluate_iv(d.recs, test, d.users, attribute="gender", protected="F",
                       n_items=N_ITEMS, items=None, train=d.train,
                       options=EvaluateOptions(n=CUTS), rng=0)
    assert inp.popularity_source is not None
    values = _PopularityValues.of(inp.popularity_source, inp.lists, CUTS)
    return values, d.recs, test, d.train, pd.Index(inp.lists.user_ids)


def _resampled(table: pd.DataFrame, copies: pd.Series) -> pd.DataFrame:
    """Each row of an evaluated user ``copies[u]`` times, as users ``(u, j)``; others once."""
    w = table["user_id"].map(copies).fillna(1).astype(int)
    out = table.loc[table.index.repeat(w)].copy()
    out["user_id"] = [f"{u}#{j}" for u, j in
                      zip(out["user_id"], out.groupby(level=0).cumcount(), strict=True)]
    return out.reset_index(drop=True)


def _profile(train: pd.DataFrame, test: pd.DataFrame, evaluated: set[str]) -> list[float]:
    pairs = train.drop_duplicates(["user_id", "item_id"])
    pop = pairs.groupby("item_id")["user_id"].nunique()
    order = sorted(pop.index, key=lambda i: (-pop[i], i))
    head = set(order[: int(np.ceil(0.2 * N_ITEMS))])
    mine = pairs[pairs["user_id"].isin(evaluated)]
    t = test.drop_duplicates(["user_id", "item_id"])
    return [
        mine["item_id"].map(pop).groupby(mine["user_id"]).mean().mean(),
        (~mine["item_id"].isin(head)).groupby(mine["user_id"]).mean().mean(),
        (~t["item_id"].isin(head)).groupby(t["user_id"]).mean().mean(),
    ]


@pytest.mark.parametrize("seed", [0, 1])
def test_replicate_equals_the_statistic_of_the_resampled_data_set(seed: int) -> None:
    values, recs, test, train, evaluated = _values(seed)
    n = len(evaluated)
    w = np.random.default_rng(seed).multinomial(n, np.full(n, 1 / n))[None, :].astype(float)
    copies = pd.Series(w[0].astype(int), index=evaluated)
    r_train, r_test = _resampled(train, copies), _resampled(test, copies)
    r_recs = _resampled(recs[recs["user_id"].isin(evaluated)], copies)
    expected = popularity_metrics(r_recs, r_test, r_train, n=CUTS, n_items=N_ITEMS)
    metrics, profile = values.recount.statistics(w, values.recount.resample(w))
    keys = [f"{m}@{c}" for m in POPULARITY_METRICS for c in CUTS]
    arp = [k.startswith("arp@") for k in keys]
    np.testing.assert_allclose(metrics[0][arp], [expected[k] for k in keys if k[:4] == "arp@"],
                               rtol=1e-10)
    held = values.statistics(w)[0]
    np.testing.assert_allclose(metrics[0][~np.array(arp)], held[~np.array(arp)], rtol=1e-10)
    want = _profile(r_train, r_test, set(r_test["user_id"]))
    np.testing.assert_allclose(profile[0][0], want[0], rtol=1e-10, err_msg=str(PROFILE_FIGURES))
    # the observed popularity would give another replicate
    assert abs(values.profile_statistics(w)[0][0] - want[0]) > 1e-6
    assert abs(held[0] - expected[keys[0]]) > 1e-6
    np.testing.assert_allclose(profile[0][1:], values.profile_statistics(w)[0][1:], rtol=1e-10)


def test_all_weights_one_is_the_point_estimate() -> None:
    values = _values(2)[0]
    w = np.ones((1, values.means.shape[0]))
    metrics, profile = values.recount.statistics(w, values.recount.resample(w))
    np.testing.assert_allclose(metrics[0], values.point(), rtol=1e-12)
    np.testing.assert_allclose(profile[0], values.profile_point(), rtol=1e-12)
