"""The popularity section's bootstrap replicate is the statistic of the resampled data set.

A resample with user weights ``w`` is the data set in which each evaluated user appears
``w_u`` times (as ``w_u`` distinct users): every popularity metric and profile figure of
it, computed from scratch by `popularity_metrics` and pandas (popularity, head and
novelty's counts all from the resampled training table), must equal the replicate
`_Recount.statistics` gives -- which fails if popularity, the head or novelty's
self-information were held at their observed values. PopRSP and PopREO are replicated as
the signed ``d`` whose absolute value they are.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from recaudit.fairness import POPULARITY_METRICS, EvaluateOptions, popularity_metrics
from recaudit.fairness._inputs import _evaluate_iv
from recaudit.fairness.popularity._metrics import (
    _parity_of_sums,
    _signed_parity_of_sums,
    head_items,
)
from recaudit.fairness.popularity._result import PROFILE_FIGURES, _PopularityValues
from recaudit.fairness.popularity._source import _recount_side
from recaudit.fairness.simulation._lists import simulate_interbias

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


def _profile(train: pd.DataFrame, test: pd.DataFrame, evaluated: set[str],
             copies: pd.Series) -> list[float]:
    """The profile figures of the resampled data set; a copy's items count its user's
    other copies out of their popularity (clones are not other users)."""
    pairs = train.drop_duplicates(["user_id", "item_id"])
    pop = pairs.groupby("item_id")["user_id"].nunique()
    order = sorted(pop.index, key=lambda i: (-pop[i], i))
    head = set(order[: int(np.ceil(0.2 * N_ITEMS))])
    mine = pairs[pairs["user_id"].isin(evaluated)]
    clones = mine["user_id"].str.split("#").str[0].astype(int).map(copies) - 1
    t = test.drop_duplicates(["user_id", "item_id"])
    return [
        (mine["item_id"].map(pop) - clones).groupby(mine["user_id"]).mean().mean(),
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
    parity = np.array([k.startswith(("poprsp", "popreo")) for k in keys])
    got = np.where(parity, np.abs(metrics[0]), metrics[0])
    np.testing.assert_allclose(got, [expected[k] for k in keys], rtol=1e-10)
    want = _profile(r_train, r_test, set(r_test["user_id"]), copies)
    np.testing.assert_allclose(profile[0], want, rtol=1e-10, err_msg=str(PROFILE_FIGURES))
    # the observed popularity and head would give other replicates
    held = values.statistics(w)[0]
    for k in ("arp", "aplt", "novelty"):
        j = keys.index(f"{k}@{CUTS[0]}")
        assert abs(held[j] - expected[keys[j]]) > 1e-6, k
    assert np.abs(values.profile_statistics(w)[0][:2] - want[:2]).min() > 1e-6


def test_all_weights_one_is_the_point_estimate() -> None:
    values = _values(2)[0]
    w = np.ones((1, values.means.shape[0]))
    metrics, profile = values.recount.statistics(w, values.recount.resample(w))
    np.testing.assert_allclose(np.abs(metrics[0]), values.point(), rtol=1e-12)
    np.testing.assert_allclose(profile[0], values.profile_point(), rtol=1e-12)
    head = values.recount.resample(w).head[0]
    np.testing.assert_array_equal(head.astype(bool), values.recount.side.head(
        values.recount.side.fixed_popularity[None, :] + np.asarray(
            values.recount.train_rows.sum(axis=0)))[0].astype(bool))


def test_resample_head_has_the_point_estimate_tie_rule() -> None:
    """Many ties, string ids out of code order: each row's head is `head_items`' head."""
    rng = np.random.default_rng(3)
    ids = np.array([f"i{j:03d}" for j in rng.permutation(60)], dtype=object)
    pop = rng.integers(0, 4, size=(25, 60)).astype(float)
    side = _recount_side(sp.csr_matrix((1, 60)), pop[0], 10,
                         head_items(pop[0], ids, n_items=70), 70, np.lexsort((ids,)))
    want = np.array([head_items(row, ids, n_items=70) for row in pop])
    np.testing.assert_array_equal(side.head(pop).astype(bool), want)
    assert side.n_head == 14  # ceil(0.2 * 70)


def test_signed_parity_is_the_parity_with_its_sign() -> None:
    rng = np.random.default_rng(4)
    sums = rng.integers(0, 5, size=(200, 6)).astype(float)  # 2 cuts: 4 numerators, 2 dens
    signed, folded = _signed_parity_of_sums(sums, 2), _parity_of_sums(sums, 2)
    np.testing.assert_allclose(np.abs(signed), folded, rtol=1e-12)
    np.testing.assert_array_equal(np.isnan(signed), np.isnan(folded))
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = sums[:, [0, 2]] / sums[:, [4]] - sums[:, [1, 3]] / sums[:, [5]]
    ok = np.isfinite(signed)
    assert (np.sign(signed[ok]) == np.sign(gap[ok])).all()
    assert np.isnan(_signed_parity_of_sums(np.array([0.0, 0.0, 3.0, 4.0]), 1)).all()
    assert _signed_parity_of_sums(np.array([0.0, 2.0, 3.0, 4.0]), 1)[0] == -1.0
