"""Popularity-bias metrics inside `evaluate`: against `popularity_metrics`, CIs, groups, reasons.

The independent path is `popularity_metrics` on the same recs/train/test tables (all users
for the overall values, the group's users for a group's), itself checked against Elliot
in test_popularity.py.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from recaudit import InputError
from recaudit.fairness import (
    POPULARITY_METRICS,
    EvaluateOptions,
    FairnessEvaluation,
    add_popularity_groups,
    evaluate,
    popularity_metrics,
)
from recaudit.fairness._inputs import POPULARITY_GROUP_MSG
from recaudit.fairness._results import NO_BOOT
from recaudit.fairness.popularity._result import CI_RULE, OLDER_CI_RULE
from recaudit.fairness.popularity._source import NO_TRAIN_REASON, NO_TRAIN_USER_REASON
from recaudit.fairness.simulation._lists import simulate_interbias

N_ITEMS = 400
CUTS = (5, 10, 20)


def _data(seed: int = 0, n_users: int = 240, **kw: float) -> tuple[pd.DataFrame, ...]:
    d = simulate_interbias(n_users, rng=np.random.default_rng(seed), n_items=N_ITEMS, **kw)
    return d.recs, d.test, d.train, d.users


def _evaluate(recs, test, train, users, *, n_boot=200, **kw) -> FairnessEvaluation:
    options = EvaluateOptions(n=CUTS, n_boot=n_boot, n_resamples=0, min_group_size=5)
    return evaluate(recs, test, users, attribute=kw.pop("attribute", "gender"),
                    protected=kw.pop("protected", "F"), n_items=N_ITEMS, train=train,
                    options=options, rng=3, **kw)


def _assert_equal_to_reference(values, reference) -> None:
    assert list(values) == [f"{m}@{c}" for m in POPULARITY_METRICS for c in CUTS]
    for key, est in values.items():
        assert est.value == pytest.approx(reference[key], rel=1e-12, abs=1e-12, nan_ok=True), key


def test_against_popularity_metrics_overall_and_per_group() -> None:
    recs, test, train, users = _data()
    # a few users without a list: ARP and novelty are nan for them, APLT and ACLT 0
    dropped = users.user_id[:7]
    recs = recs[~recs.user_id.isin(dropped)]
    result = _evaluate(recs, test, train, users)
    bias = result.popularity_bias
    assert bias is not None and result.popularity_bias_reason is None
    _assert_equal_to_reference(
        bias.overall, popularity_metrics(recs, test, train, n=CUTS, n_items=N_ITEMS)
    )
    assert list(bias.groups) == list(result.groups)
    for name in ("F", "M"):
        ids = users.user_id[users.gender == name]
        reference = popularity_metrics(
            recs[recs.user_id.isin(ids)], test[test.user_id.isin(ids)], train,
            n=CUTS, n_items=N_ITEMS,
        )
        _assert_equal_to_reference(bias.groups[name], reference)
    assert bias.n_head_items == math.ceil(0.2 * N_ITEMS)
    assert bias.n_train_users == train.user_id.nunique()


def test_cis_contain_the_estimate() -> None:
    """User means and PopRSP (here ~0.8, far from 0) are inside their percentile CIs.

    PopREO's true value is 0 in this simulation (hits do not depend on popularity):
    std/mean of two rates is folded at 0, so its percentile CI lies above 0 and need not
    contain an estimate near 0 (docs/fairness-metrics.md); only its bounds are checked.
    """
    recs, test, train, users = _data(seed=1)
    bias = _evaluate(recs, test, train, users).popularity_bias
    assert bias is not None
    for section in (bias.overall, *bias.groups.values()):
        for key, est in section.items():
            assert 0 <= est.ci.low < est.ci.high, key  # the bootstrap did move
            if not key.startswith("popreo"):
                assert est.ci.low <= est.value <= est.ci.high, key


def test_no_boot_gives_nan_bounds_and_the_same_values() -> None:
    recs, test, train, users = _data(seed=1)
    with_ci = _evaluate(recs, test, train, users).popularity_bias
    without = _evaluate(recs, test, train, users, n_boot=0).popularity_bias
    assert with_ci is not None and without is not None
    for key, est in without.overall.items():
        assert est.value == with_ci.overall[key].value
        assert math.isnan(est.ci.low) and math.isnan(est.ci.high)


def test_planted_popularity_gap_between_groups() -> None:
    """F's lists are filled uniformly (fill exponent 0), M's by popularity squared."""
    parts = []
    for offset, (gender, beta) in enumerate((("F", 0.0), ("M", 2.0))):
        recs, test, train, _ = _data(seed=10 + offset, n_users=150, fill_exponent=beta)
        shift = offset * 10_000
        parts.append([t.assign(user_id=t.user_id + shift) for t in (recs, test, train)])
        parts[-1].append(pd.DataFrame({"user_id": train.user_id.unique() + shift,
                                       "gender": gender}))
    recs, test, train, users = (pd.concat(p, ignore_index=True) for p in zip(*parts, strict=True))
    bias = _evaluate(recs, test, train, users).popularity_bias
    assert bias is not None
    f, m = bias.groups["F"], bias.groups["M"]
    for c in CUTS:
        # more popular, fewer long-tail, less novel items for M: the CIs are disjoint
        assert f[f"arp@{c}"].ci.high < m[f"arp@{c}"].ci.low
        assert f[f"aplt@{c}"].ci.low > m[f"aplt@{c}"].ci.high
        assert f[f"novelty@{c}"].ci.low > m[f"novelty@{c}"].ci.high
        assert f[f"poprsp@{c}"].ci.high < m[f"poprsp@{c}"].ci.low
        low, high = sorted((f[f"arp@{c}"].value, m[f"arp@{c}"].value))
        assert low < bias.overall[f"arp@{c}"].value < high


def test_absent_without_train_or_without_user_id() -> None:
    recs, test, train, users = _data(seed=2, n_users=120)
    none = _evaluate(recs, test, None, users, n_boot=20)
    assert none.popularity_bias is None and none.popularity_bias_reason == NO_TRAIN_REASON
    items_only = _evaluate(recs, test, train[["item_id"]], users, n_boot=20)
    assert items_only.popularity_bias is None
    assert items_only.popularity_bias_reason == NO_TRAIN_USER_REASON
    assert items_only.avg_popularity is not None  # the item-popularity figures stay
    d = items_only.to_dict()
    assert d["popularity_bias"] is None and d["popularity_bias_reason"] == NO_TRAIN_USER_REASON


def test_other_figures_unchanged_by_the_popularity_metrics() -> None:
    """Same seed: every other figure is the same with or without the new metrics (no draws)."""
    recs, test, train, users = _data(seed=4, n_users=120)
    options = EvaluateOptions(n=CUTS, n_boot=50, n_resamples=49, min_group_size=5)
    kw = dict(attribute="gender", protected="F", n_items=N_ITEMS, options=options, rng=5)
    full = evaluate(recs, test, users, train=train, **kw).to_dict()
    plain = evaluate(recs, test, users, train=train[["item_id"]], **kw).to_dict()
    for d in (full, plain):
        del d["popularity_bias"], d["popularity_bias_reason"]
    assert full == plain or repr(full) == repr(plain)


def test_to_dataframe_rows() -> None:
    recs, test, train, users = _data(seed=2, n_users=120)
    frame = _evaluate(recs, test, train, users, n_boot=20).to_dataframe()
    rows = frame[frame.quantity == "popularity_bias"]
    assert len(rows) == 3 * len(POPULARITY_METRICS) * len(CUTS)  # overall, F, M
    assert set(rows.group.dropna()) == {"F", "M"}


# ------------------------------------------------------------ popularity_group attribute
def test_popularity_group_attribute_from_train() -> None:
    recs, test, train, users = _data(seed=5)
    auto = _evaluate(recs, test, train, users, n_boot=20, attribute="popularity_group",
                     protected="niche")
    by_hand = _evaluate(recs, test, train, add_popularity_groups(users, train, n_items=N_ITEMS),
                        n_boot=20, attribute="popularity_group", protected="niche")
    assert set(auto.groups) == {"niche", "diverse", "blockbuster"}
    assert repr(auto.to_dict()) == repr(by_hand.to_dict())


def test_popularity_group_in_an_intersection() -> None:
    recs, test, train, users = _data(seed=5)
    result = _evaluate(recs, test, train, users, n_boot=0,
                       attribute=["gender", "popularity_group"], protected=("F", "niche"))
    assert result.protected == "F & niche" and len(result.groups) == 6
    assert result.popularity_bias is not None and "F & niche" in result.popularity_bias.groups


def test_popularity_group_without_train_is_an_error() -> None:
    recs, test, _, users = _data(seed=5, n_users=60)
    with pytest.raises(InputError, match="pass `train`"):
        _evaluate(recs, test, None, users, attribute="popularity_group", protected="niche")
    assert "`train`" in POPULARITY_GROUP_MSG


def test_users_own_popularity_group_column_is_kept() -> None:
    recs, test, train, users = _data(seed=5, n_users=60)
    own = users.assign(popularity_group=np.where(users.user_id % 2 == 0, "even", "odd"))
    for t in (train, None):
        result = _evaluate(recs, test, t, own, n_boot=0, attribute="popularity_group",
                           protected="even")
        assert set(result.groups) == {"even", "odd"}


# ------------------------------------- the users' own side and the popularity groups
def _labels_by_pandas(train: pd.DataFrame, n_items: int = N_ITEMS) -> pd.Series:
    """niche / diverse / blockbuster from the head ratio, computed directly (the rule of
    Abdollahpouri et al.: ceil(20 %) head items of the ``n_items`` catalog, the head of
    the popularity metrics, ceil(20 %) users at each end)."""
    pairs = train[["user_id", "item_id"]].drop_duplicates()
    pop = pairs.groupby("item_id").size().rename("pop").reset_index()
    pop = pop.sort_values(["pop", "item_id"], ascending=[False, True])
    head = set(pop.item_id[: math.ceil(0.2 * n_items)])
    ratio = pairs.assign(h=pairs.item_id.isin(head)).groupby("user_id").h.mean().reset_index()
    ratio = ratio.sort_values(["h", "user_id"]).reset_index(drop=True)
    k = math.ceil(0.2 * len(ratio))
    label = np.where(ratio.index < k, "niche",
                     np.where(ratio.index >= len(ratio) - k, "blockbuster", "diverse"))
    return pd.Series(label, index=ratio.user_id)


def _profile_by_pandas(train, test, ids, is_head) -> dict[str, float]:  # noqa: ANN001
    """Mean over the users ``ids`` of their profile popularity and tail shares."""
    pairs = train[["user_id", "item_id"]].drop_duplicates()
    pop = pairs.groupby("item_id").size()
    mine = pairs[pairs.user_id.isin(ids)]
    t = test[["user_id", "item_id"]].drop_duplicates()
    t = t[t.user_id.isin(ids)]
    return {
        "profile_popularity": mine.item_id.map(pop).groupby(mine.user_id).mean().mean(),
        "profile_tail_share": (~mine.item_id.map(is_head)).groupby(mine.user_id).mean().mean(),
        "test_tail_share": (~t.item_id.map(is_head)).groupby(t.user_id).mean().mean(),
    }


def _mixed_tastes(seed: int = 6) -> tuple[pd.DataFrame, ...]:
    """Users whose lists and profiles differ in popularity (fill exponents 0, 1, 2)."""
    parts = []
    for offset, beta in enumerate((0.0, 1.0, 2.0)):
        recs, test, train, users = _data(seed=seed + offset, n_users=80, fill_exponent=beta)
        shift = offset * 10_000
        parts.append([t.assign(user_id=t.user_id + shift) for t in (recs, test, train, users)])
    return tuple(pd.concat(p, ignore_index=True) for p in zip(*parts, strict=True))


def test_against_pandas_user_popularity_groups_and_profiles() -> None:
    recs, test, train, users = _mixed_tastes()
    bias = _evaluate(recs, test, train, users).popularity_bias
    assert bias is not None
    pop = train.drop_duplicates().groupby("item_id").size().reindex(range(N_ITEMS), fill_value=0)
    order = pop.reset_index().sort_values([0, "item_id"], ascending=[False, True]).item_id
    is_head = pd.Series(False, index=range(N_ITEMS))
    is_head[order.to_numpy()[: math.ceil(0.2 * N_ITEMS)]] = True
    labels = _labels_by_pandas(train)
    assert list(bias.user_popularity_groups) == ["niche", "diverse", "blockbuster"]
    for name, group in bias.user_popularity_groups.items():
        ids = labels.index[labels == name]
        assert group.n_users == len(ids)
        for key, value in _profile_by_pandas(train, test, ids, is_head).items():
            assert group.profile[key].value == pytest.approx(value, rel=1e-12), (name, key)
        reference = popularity_metrics(recs[recs.user_id.isin(ids)], test[test.user_id.isin(ids)],
                                       train, n=CUTS, n_items=N_ITEMS)
        _assert_equal_to_reference(group.metrics, reference)
        for c in CUTS:  # ARP@N directly: mean over users of the mean popularity of L_u@N
            top = recs[recs.user_id.isin(ids) & (recs["rank"] <= c)]
            arp = top.item_id.map(pop).groupby(top.user_id).mean().mean()
            assert group.metrics[f"arp@{c}"].value == pytest.approx(arp, rel=1e-12)
    for name, ids in [("overall", users.user_id), *(
        (g, users.user_id[users.gender == g]) for g in ("F", "M")
    )]:
        got = bias.profile_overall if name == "overall" else bias.profile_groups[name]
        for key, value in _profile_by_pandas(train, test, ids, is_head).items():
            assert got[key].value == pytest.approx(value, rel=1e-12), (name, key)
            assert got[key].ci.low <= got[key].value <= got[key].ci.high, (name, key)
    niche, blockbuster = (bias.user_popularity_groups[g] for g in ("niche", "blockbuster"))
    assert (niche.profile["profile_popularity"].ci.high
            < blockbuster.profile["profile_popularity"].ci.low)


def test_popularity_groups_as_attribute_match_the_subsection() -> None:
    """With attribute popularity_group the attribute groups are the subsection's groups."""
    recs, test, train, users = _mixed_tastes()
    bias = _evaluate(recs, test, train, users, n_boot=0, attribute="popularity_group",
                     protected="niche").popularity_bias
    assert bias is not None
    for name, group in bias.user_popularity_groups.items():
        assert {k: e.value for k, e in group.metrics.items()} == pytest.approx(
            {k: e.value for k, e in bias.groups[name].items()}, nan_ok=True)
        assert {k: e.value for k, e in group.profile.items()} == pytest.approx(
            {k: e.value for k, e in bias.profile_groups[name].items()})


def test_profile_and_popularity_groups_round_trip_and_older_json() -> None:
    recs, test, train, users = _data(seed=2, n_users=120)
    result = _evaluate(recs, test, train, users, n_boot=20)
    back = FairnessEvaluation.from_dict(result.to_dict())
    x, y = result.popularity_bias, back.popularity_bias
    assert x is not None and y is not None
    assert repr(y.to_dict()) == repr(x.to_dict())
    old = result.to_dict()
    for key in ("profile", "user_popularity_rule", "user_popularity_groups"):
        del old["popularity_bias"][key]
    older = FairnessEvaluation.from_dict(old).popularity_bias
    assert older is not None and older.user_popularity_groups == {} and older.profile_groups == {}
    broken = result.to_dict()
    broken["popularity_bias"]["user_popularity_groups"]["niche"] = 3
    with pytest.raises(InputError, match="user_popularity_groups.niche"):
        FairnessEvaluation.from_dict(broken)


# ------------------------------------------------- per-user rows and the tidy table
PER_USER_POPULARITY = [f"{m}@{c}" for m in ("arp", "aplt", "aclt", "novelty") for c in CUTS]


def test_per_user_popularity_columns_average_to_the_reported_figures() -> None:
    recs, test, train, users = _mixed_tastes()
    result = _evaluate(recs, test, train, users, n_boot=0)
    bias, pu = result.popularity_bias, result.per_user
    assert bias is not None and pu is not None
    profile = ["profile_popularity", "profile_tail_share", "test_tail_share"]
    assert list(pu.columns[-len(PER_USER_POPULARITY) - 4:]) == [
        *PER_USER_POPULARITY, *profile, "popularity_group"]
    for key in PER_USER_POPULARITY:
        assert pu[key].mean() == pytest.approx(bias.overall[key].value, rel=1e-12), key
        for g in ("F", "M"):
            assert pu.loc[pu.group == g, key].mean() == pytest.approx(
                bias.groups[g][key].value, rel=1e-12), (g, key)
    for key in profile:
        assert pu[key].mean() == pytest.approx(bias.profile_overall[key].value, rel=1e-12)
        for g in ("F", "M"):
            assert pu.loc[pu.group == g, key].mean() == pytest.approx(
                bias.profile_groups[g][key].value, rel=1e-12), (g, key)
    labels = _labels_by_pandas(train)
    assert pu.popularity_group.tolist() == labels.reindex(pu.user_id).tolist()
    for name, group in bias.user_popularity_groups.items():
        mine = pu[pu.popularity_group == name]
        assert len(mine) == group.n_users
        assert mine["arp@10"].mean() == pytest.approx(group.metrics["arp@10"].value, rel=1e-12)
        assert mine["profile_popularity"].mean() == pytest.approx(
            group.profile["profile_popularity"].value, rel=1e-12)
    for key in ("ndcg@10", "recall@5"):  # the accuracy columns beside them are unchanged
        assert pu[key].mean() == pytest.approx(result.overall[key].value)


def test_per_user_has_no_popularity_columns_without_user_ids() -> None:
    recs, test, train, users = _data(seed=2, n_users=60)
    for t in (None, train[["item_id"]]):
        pu = _evaluate(recs, test, t, users, n_boot=0).per_user
        assert pu is not None
        assert not {*PER_USER_POPULARITY, "popularity_group"} & set(pu.columns)


def test_per_user_group_is_none_for_a_user_without_training_items() -> None:
    recs, test, train, users = _data(seed=2, n_users=120)
    cold = users.user_id.iloc[0]
    result = _evaluate(recs, test, train[train.user_id != cold], users, n_boot=0)
    pu = result.per_user.set_index("user_id")
    assert pd.isna(pu.loc[cold, "popularity_group"])  # None, or NaN under pandas 3's str
    assert math.isnan(pu.loc[cold, "profile_popularity"])
    assert pu.popularity_group.notna().sum() == sum(
        g.n_users for g in result.popularity_bias.user_popularity_groups.values())


def test_to_dataframe_profile_and_popularity_group_rows_equal_the_json() -> None:
    recs, test, train, users = _data(seed=2, n_users=120)
    result = _evaluate(recs, test, train, users, n_boot=20)
    frame, d = result.to_dataframe(), result.to_dict()["popularity_bias"]
    assert str(frame.n.dtype) == "Int64"
    profile = frame[frame.quantity == "popularity_profile"]
    assert len(profile) == 3 * 3  # overall, F, M x three figures
    assert profile.n.isna().all()
    for row in profile.itertuples():
        entry = (d["profile"]["overall"] if pd.isna(row.group)
                 else d["profile"]["groups"][row.group])[row.metric]
        assert (row.value, row.ci_low, row.ci_high) == pytest.approx(
            (entry["value"], entry["ci_low"], entry["ci_high"]), nan_ok=True), row
    groups = frame[frame.quantity == "user_popularity_group"]
    assert set(groups.group) == {"niche", "diverse", "blockbuster"}
    assert len(groups) == 3 * (len(POPULARITY_METRICS) * len(CUTS) + 3)
    for row in groups.itertuples():
        key = row.metric if pd.isna(row.n) else f"{row.metric}@{row.n}"
        entry = d["user_popularity_groups"][row.group][key]
        assert (row.value, row.ci_low, row.ci_high) == pytest.approx(
            (entry["value"], entry["ci_low"], entry["ci_high"]), nan_ok=True), row
    back = FairnessEvaluation.from_dict(result.to_dict()).to_dataframe()
    pd.testing.assert_frame_equal(back, frame)


# ------------------------------------------------------------ the grouping option
@pytest.mark.parametrize(("name", "kwargs", "labels"), [
    ("quantile:4", {"method": "quantile", "q": 4}, ["q1", "q2", "q3", "q4"]),
    ("abdollahpouri:cumulative", {"item_head": "cumulative"},
     ["niche", "diverse", "blockbuster"]),
])
def test_popularity_groups_option_makes_the_groups(name, kwargs, labels) -> None:  # noqa: ANN001
    recs, test, train, users = _mixed_tastes()
    options = EvaluateOptions(n=CUTS, n_boot=0, n_resamples=0, min_group_size=5,
                              popularity_groups=name)
    kw = dict(n_items=N_ITEMS, train=train, options=options, rng=3)
    result = evaluate(recs, test, users, attribute="popularity_group",
                      protected=labels[0], **kw)
    by_hand = evaluate(recs, test, add_popularity_groups(users, train, **kwargs),
                       attribute="popularity_group", protected=labels[0], **kw)
    assert sorted(result.groups) == sorted(labels)
    assert repr(result.to_dict()) == repr(by_hand.to_dict())
    bias = result.popularity_bias
    assert bias is not None and list(bias.user_popularity_groups) == labels
    for label, group in bias.user_popularity_groups.items():
        assert group.n_users == result.groups[label].n_users
    d = result.to_dict()["popularity_bias"]
    assert d["user_popularity_method"] == name and name.split(":")[0] in d["user_popularity_rule"]
    back = FairnessEvaluation.from_dict(result.to_dict()).popularity_bias
    assert back is not None and back.popularity_grouping == bias.popularity_grouping


def test_default_grouping_and_older_json() -> None:
    recs, test, train, users = _data(seed=2, n_users=120)
    d = _evaluate(recs, test, train, users, n_boot=0).to_dict()
    assert d["popularity_bias"]["user_popularity_method"] == "abdollahpouri"
    del d["popularity_bias"]["user_popularity_method"]
    back = FairnessEvaluation.from_dict(d).popularity_bias
    assert back is not None and back.popularity_grouping.name == "abdollahpouri"
    d["popularity_bias"]["user_popularity_method"] = "median"
    with pytest.raises(InputError, match=r"popularity_bias\.user_popularity_method must be"):
        FairnessEvaluation.from_dict(d)


@pytest.mark.parametrize("value", ["median", "quantile:1", "quantile", "abdollahpouri:x", 3])
def test_bad_popularity_groups_option(value) -> None:  # noqa: ANN001
    with pytest.raises(InputError, match=r"`popularity_groups` must be 'abdollahpouri', "
                       r"'abdollahpouri:cumulative' or 'quantile:Q'"):
        EvaluateOptions(popularity_groups=value)


def test_more_quantiles_than_training_users() -> None:
    recs, test, train, users = _data(seed=2, n_users=60)
    options = EvaluateOptions(n=CUTS, n_boot=0, n_resamples=0, min_group_size=1,
                              popularity_groups="quantile:500")
    kw = dict(n_items=N_ITEMS, train=train, options=options, rng=3)
    bias = evaluate(recs, test, users, attribute="gender", protected="F", **kw).popularity_bias
    assert bias is not None and bias.user_popularity_groups == {}
    with pytest.raises(InputError, match="`q` must be an integer >= 2 and <= the number"):
        evaluate(recs, test, users, attribute="popularity_group", protected="q1", **kw)


# ------------------------------------------------------------- the CIs' rules
def test_ci_rule_is_recorded_and_read_back() -> None:
    recs, test, train, users = _data(seed=2, n_users=120)
    result = _evaluate(recs, test, train, users, n_boot=50)
    bias = result.popularity_bias
    assert bias is not None and bias.ci_rule == CI_RULE
    methods = {"percentile": "percentile bootstrap", "basic": "basic bootstrap",
               "basic-atanh-folded": "basic bootstrap on atanh, folded"}
    for key, est in bias.overall.items():
        assert est.ci.method == methods[CI_RULE[key.split("@")[0]]], key
    assert bias.profile_overall["profile_tail_share"].ci.method == "basic bootstrap"
    assert bias.user_popularity_groups["niche"].metrics["novelty@10"].ci.method == \
        "basic bootstrap"
    d = result.to_dict()
    assert d["popularity_bias"]["ci_rule"] == dict(CI_RULE)
    back = FairnessEvaluation.from_dict(d).popularity_bias
    assert back is not None and back.ci_rule == CI_RULE
    for key, est in back.overall.items():
        assert est.ci.method == bias.overall[key].ci.method, key
    assert back.user_popularity_groups["diverse"].profile["profile_popularity"].ci.method == \
        "percentile bootstrap"
    del d["popularity_bias"]["ci_rule"]  # a JSON written before it: percentile CIs
    older = FairnessEvaluation.from_dict(d).popularity_bias
    assert older is not None and older.ci_rule == OLDER_CI_RULE
    assert {e.ci.method for e in older.overall.values()} == {"percentile bootstrap"}
    d["popularity_bias"]["ci_rule"] = {"aplt": "bca"}
    with pytest.raises(InputError, match=r"popularity_bias\.ci_rule: unknown figure 'aplt' or "
                       r"rule 'bca'"):
        FairnessEvaluation.from_dict(d)
    d["popularity_bias"]["ci_rule"] = {"arp": "basic"}  # a partial one: the rest percentile
    partial = FairnessEvaluation.from_dict(d).popularity_bias
    assert partial is not None and partial.ci_rule["arp"] == "basic"
    assert partial.ci_rule["aplt"] == "percentile"
    no_boot = _evaluate(recs, test, train, users, n_boot=0).popularity_bias
    assert no_boot is not None and no_boot.overall["aplt@10"].ci.method == NO_BOOT


def test_parity_at_one_and_undefined() -> None:
    """Lists of head items only: P_T = 0, so PopRSP = |d| = 1 in every resample, where
    the atanh reflection is degenerate and the percentile one of |d*| is used; PopREO has
    no hit at all (only tail items are relevant): undefined, with an undefined CI."""
    recs, test, train, users = _data(seed=4, n_users=150)
    pop = train.drop_duplicates(["user_id", "item_id"]).groupby("item_id").size()
    head = pop.sort_values(ascending=False, kind="stable").index[:20].to_numpy()
    recs = pd.DataFrame({"user_id": np.repeat(users.user_id.to_numpy(), 10),
                         "item_id": np.tile(head[:10], len(users)),
                         "rank": np.tile(np.arange(1, 11), len(users))})
    test = test[~test.item_id.isin(head)]
    bias = _evaluate(recs, test, train, users, n_boot=50).popularity_bias
    assert bias is not None
    rsp = bias.overall["poprsp@5"]
    assert rsp.value == 1.0 and (rsp.ci.low, rsp.ci.high) == (1.0, 1.0)
    assert rsp.ci.method == "percentile bootstrap of |d| (estimate at |d| = 1)"
    reo = bias.overall["popreo@5"]
    assert math.isnan(reo.value) and math.isnan(reo.ci.low) and math.isnan(reo.ci.high)


def test_basic_intervals_stay_in_the_figures_range() -> None:
    """Head-only lists but for three users with one tail item: APLT is near 0 and its
    replicates skewed right, so the reflected low bound falls below 0 and is clipped."""
    recs, test, train, users = _data(seed=4, n_users=150)
    pop = train.drop_duplicates(["user_id", "item_id"]).groupby("item_id").size()
    ranked = pop.sort_values(ascending=False, kind="stable").index.to_numpy()
    items = np.tile(ranked[:10], (len(users), 1))
    items[:3, 9] = ranked[-1]  # three users get one tail item each
    recs = pd.DataFrame({"user_id": np.repeat(users.user_id.to_numpy(), 10),
                         "item_id": items.ravel(),
                         "rank": np.tile(np.arange(1, 11), len(users))})
    bias = _evaluate(recs, test, train, users, n_boot=200).popularity_bias
    assert bias is not None
    aplt = bias.overall["aplt@10"]
    assert aplt.value == pytest.approx(3 / 10 / 150)
    assert aplt.ci.low == 0.0 < aplt.value <= aplt.ci.high
    sections = [bias.overall, *bias.groups.values(),
                *(g.metrics for g in bias.user_popularity_groups.values())]
    for section in sections:
        for key, est in section.items():
            name, cut = key.split("@")
            top = {"aplt": 1.0, "aclt": float(cut)}.get(name)
            if top is not None and not math.isnan(est.ci.low):
                assert 0.0 <= est.ci.low <= est.ci.high <= top, key
            if name == "novelty" and not math.isnan(est.ci.low):
                assert est.ci.low >= 0.0, key
    for profile in (bias.profile_overall, *(g.profile for g in
                                           bias.user_popularity_groups.values())):
        for f in ("profile_tail_share", "test_tail_share"):
            assert 0.0 <= profile[f].ci.low <= profile[f].ci.high <= 1.0, f


def test_one_head_for_every_popularity_figure_of_the_lists() -> None:
    """``long_tail_share@N`` and APLT@N read the same head (issue 36: one head), so over
    users who all have a list they are the same number; the data's own profile keeps its
    short head (the items holding 20 % of the interactions), which is a different set."""
    recs, test, train, users = _data(seed=4)
    result = _evaluate(recs, test, train, users, n_boot=0)
    bias = result.popularity_bias
    assert bias is not None and result.long_tail_share is not None
    for c in CUTS:
        assert result.long_tail_share[c] == pytest.approx(bias.overall[f"aplt@{c}"].value,
                                                          rel=1e-12)
    assert bias.n_head_items == math.ceil(0.2 * N_ITEMS)
    assert result.popularity is not None and result.popularity.n_head_items != bias.n_head_items
