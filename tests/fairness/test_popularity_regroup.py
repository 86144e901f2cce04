"""The popularity groups re-cut per resample are the groups of the resampled data set.

A resample with user weights ``w`` is the data set in which each evaluated user appears
``w_u`` times; with ids ``1000 u + j`` for the copies, the ascending-id tie rule keeps
each user's copies together at the user's place. `user_popularity_groups` on that data
set (computed from scratch by the public function) must put in each group as many of
user ``u``'s copies as `_Regroup.memberships` says -- which fails if the membership were
held at its observed value, or if the head, the statistic or the cut were not recounted.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recaudit.fairness import EvaluateOptions, popularity_metrics, user_popularity_groups
from recaudit.fairness._inputs import _evaluate_iv
from recaudit.fairness.popularity._result import _PopularityReplicates, _PopularityValues
from recaudit.fairness.popularity._user_groups import parse_popularity_groups
from recaudit.fairness.simulation._lists import simulate_interbias

CUTS = (5, 10)
N_ITEMS = 300
GROUPINGS = ["abdollahpouri", "abdollahpouri:cumulative", "quantile:4"]


def _inputs(seed: int, grouping: str):  # noqa: ANN202
    d = simulate_interbias(160, rng=np.random.default_rng(seed), n_items=N_ITEMS,
                           top_share=0.85)
    dropped = d.users["user_id"].iloc[:20]  # training users outside the evaluated ones
    test = d.test[~d.test["user_id"].isin(dropped)]
    options = EvaluateOptions(n=CUTS, popularity_groups=grouping)
    inp = _evaluate_iv(d.recs, test, d.users, attribute="gender", protected="F",
                       n_items=N_ITEMS, items=None, train=d.train, options=options, rng=0)
    source = inp.popularity_source
    assert source is not None and source.regroup is not None
    return d, test, inp, source


def _copies(table: pd.DataFrame, copies: pd.Series) -> pd.DataFrame:
    """Each row of an evaluated user ``copies[u]`` times as users ``1000 u + j``; others
    once, as ``1000 u``."""
    w = table["user_id"].map(copies).fillna(1).astype(int)
    out = table.loc[table.index.repeat(w)].copy()
    out["user_id"] = out["user_id"] * 1000 + out.groupby(level=0).cumcount()
    return out.reset_index(drop=True)


@pytest.mark.parametrize("grouping", GROUPINGS)
def test_every_weight_one_gives_the_fixed_groups(grouping: str) -> None:
    _, _, inp, source = _inputs(0, grouping)
    n = len(inp.lists.user_ids)
    member = source.regroup.memberships(np.ones((1, n)), source.recount.fixed_popularity[None]
                                        + np.asarray(source.train_items.sum(axis=0)))
    codes = source.popularity_group
    assert codes is not None
    want = np.stack([(codes == g).astype(float) for g in range(member.shape[0])])
    np.testing.assert_array_equal(member[:, 0, :], want)


@pytest.mark.parametrize("grouping", GROUPINGS)
@pytest.mark.parametrize("seed", [1, 2])
def test_groups_of_a_resample_are_those_of_the_resampled_data_set(
    grouping: str, seed: int
) -> None:
    d, test, inp, source = _inputs(seed, grouping)
    evaluated = pd.Index(inp.lists.user_ids)
    n = len(evaluated)
    rng = np.random.default_rng(seed)
    w = rng.multinomial(n, np.full(n, 1 / n), size=3).astype(float)
    values = _PopularityValues.of(source, inp.lists, CUTS)
    items = values.recount.resample(w)
    member = source.regroup.memberships(w, items.popularity)
    labels = parse_popularity_groups(grouping).labels
    for b in range(w.shape[0]):
        copies = pd.Series(w[b].astype(int), index=evaluated)
        groups = user_popularity_groups(_copies(d.train, copies), n_items=N_ITEMS,
                                        **parse_popularity_groups(grouping).arguments)
        owner = groups.index.to_numpy() // 1000
        for g, label in enumerate(labels):
            counts = pd.Series(owner[groups.to_numpy() == label]).value_counts()
            want = counts.reindex(evaluated, fill_value=0).to_numpy(dtype=float)
            np.testing.assert_array_equal(member[g, b], want, err_msg=f"{label}, resample {b}")
    # and a group's replicate is the statistic of that group's copies
    copies = pd.Series(w[0].astype(int), index=evaluated)
    r_train = _copies(d.train, copies)
    groups = user_popularity_groups(r_train, n_items=N_ITEMS,
                                    **parse_popularity_groups(grouping).arguments)
    ids = set(groups.index[groups == labels[0]])
    r_recs, r_test = (_copies(t[t["user_id"].isin(evaluated)], copies) for t in (d.recs, test))
    expected = popularity_metrics(r_recs[r_recs["user_id"].isin(ids)],
                                  r_test[r_test["user_id"].isin(ids)], r_train, n=CUTS,
                                  n_items=N_ITEMS)
    metrics, _ = values.recount.statistics(member[0, :1], items)
    got = dict(zip([f"{m}@{c}" for m in ("arp", "aplt") for c in CUTS],
                   metrics[0, : 2 * len(CUTS)], strict=True))
    for key, value in got.items():
        assert value == pytest.approx(expected[key], rel=1e-10), key


def test_replicates_re_cut_the_groups_training_profile_only() -> None:
    _, _, inp, source = _inputs(3, "abdollahpouri")
    values = _PopularityValues.of(source, inp.lists, CUTS)
    reps = _PopularityReplicates.of(values, [np.arange(len(inp.lists.user_ids))], source)
    n = len(inp.lists.user_ids)
    w = np.random.default_rng(3).multinomial(n, np.full(n, 1 / n), size=4).astype(float)
    chunk = reps.chunk(w)["pop_user_groups"]
    items = values.recount.resample(w)
    member = source.regroup.memberships(w, items.popularity)
    n_metrics = len(values.keys)
    for g in range(member.shape[0]):
        idx = reps.pop_members[g]
        fixed_metrics, fixed_profile = values.recount.statistics(w[:, idx], items, idx)
        _, recut_profile = values.recount.statistics(member[g], items)
        # the lists' metrics of the observed users, the profile of the re-cut group
        np.testing.assert_allclose(chunk[:, g, :n_metrics], fixed_metrics, rtol=1e-12,
                                   equal_nan=True)
        # the training profile of the re-cut group, the test tail share of the observed
        np.testing.assert_allclose(chunk[:, g, n_metrics:n_metrics + 2], recut_profile[:, :2],
                                   rtol=1e-12, equal_nan=True)
        np.testing.assert_allclose(chunk[:, g, n_metrics + 2], fixed_profile[:, 2], rtol=1e-12)
        assert not np.allclose(recut_profile, fixed_profile)  # the membership moved
