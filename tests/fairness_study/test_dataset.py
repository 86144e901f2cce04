"""Implicit feedback, sampling, per-user splits, groups and long-tail statistics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recaudit import InputError
from recaudit.fairness import (
    InteractionData,
    long_tail_stats,
    protected_groups,
    sample_interactions,
    split_per_user,
    to_implicit,
)
from recaudit.fairness._dataset import gini, split_counts


def make_data(n_users: int = 60, n_items: int = 50, seed: int = 0) -> InteractionData:
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(n_users):
        k = int(rng.integers(1, 40))
        for i in rng.choice(n_items, size=k, replace=False):
            rows.append((u, int(i), int(rng.integers(1, 6))))
    inter = pd.DataFrame(rows, columns=["user_id", "item_id", "rating"])
    users = pd.DataFrame(
        {"user_id": range(n_users), "gender": ["F" if u % 3 == 0 else "M" for u in range(n_users)]}
    )
    return InteractionData(inter, users, name="synthetic")


def test_implicit_threshold_and_duplicates():
    inter = pd.DataFrame({"user_id": [1, 1, 1, 2], "item_id": [1, 2, 1, 3], "rating": [5, 2, 4, 3]})
    data = InteractionData(inter, pd.DataFrame({"user_id": [1, 2]}))
    assert len(to_implicit(data).interactions) == 3
    kept = to_implicit(data, threshold=4)
    assert kept.interactions[["user_id", "item_id"]].values.tolist() == [[1, 1]]
    assert kept.users["user_id"].tolist() == [1]
    with pytest.raises(
        InputError, match=r"`threshold` was given but the interactions have no feedback"
    ):
        to_implicit(InteractionData(inter[["user_id", "item_id"]], data.users), threshold=1)


def test_sampling_is_seeded_and_sized():
    data = make_data()
    a = sample_interactions(data, 300, rng=np.random.default_rng(5))
    b = sample_interactions(data, 300, rng=np.random.default_rng(5))
    c = sample_interactions(data, 300, rng=np.random.default_rng(6))
    assert len(a.interactions) == 300
    pd.testing.assert_frame_equal(a.interactions, b.interactions)
    assert not a.interactions.equals(c.interactions)
    assert set(a.users["user_id"]) == set(a.interactions["user_id"])
    assert len(sample_interactions(data, 10**9, rng=1).interactions) == len(data.interactions)
    with pytest.raises(InputError, match=r"`n` must be a positive integer or None, got 0"):
        sample_interactions(data, 0)


@pytest.mark.parametrize(
    "n,expected",
    [
        (1, (1, 0, 0)),
        (2, (1, 0, 1)),
        (3, (1, 1, 1)),
        (10, (8, 1, 1)),
        (20, (16, 2, 2)),
        (25, (21, 2, 2)),
        (9, (7, 1, 1)),
    ],
)
def test_split_counts_follow_recbole_rule(n, expected):
    assert tuple(split_counts([n], (0.8, 0.1, 0.1))[0]) == expected


def test_split_per_user_proportions_and_no_leakage():
    data = to_implicit(make_data())
    split = split_per_user(data, rng=np.random.default_rng(3))
    pairs = [
        set(map(tuple, f[["user_id", "item_id"]].values))
        for f in (split.train, split.valid, split.test)
    ]
    assert not (pairs[0] & pairs[1]) and not (pairs[0] & pairs[2]) and not (pairs[1] & pairs[2])
    assert sum(map(len, pairs)) == len(data.interactions)
    sizes = data.interactions.groupby("user_id").size()
    for part, frame in enumerate((split.train, split.valid, split.test)):
        got = frame.groupby("user_id").size().reindex(sizes.index, fill_value=0)
        want = split_counts(sizes.to_numpy(), (0.8, 0.1, 0.1))[:, part]
        np.testing.assert_array_equal(got.to_numpy(), want)
    again = split_per_user(data, rng=np.random.default_rng(3))
    pd.testing.assert_frame_equal(split.test, again.test)
    other = split_per_user(data, rng=np.random.default_rng(4))
    assert not split.test.equals(other.test)


def test_split_rejects_duplicates_and_bad_fractions():
    data = make_data()
    dup = InteractionData(pd.concat([data.interactions] * 2), data.users)
    with pytest.raises(InputError, match=r"repeat user-item pairs; call `to_implicit`"):
        split_per_user(dup, rng=1)
    with pytest.raises(
        InputError, match=r"`fractions` must be three non-negative numbers summing to 1"
    ):
        split_per_user(data, fractions=(0.8, 0.1, 0.2), rng=1)


def test_protected_groups():
    data = make_data()
    groups, same = protected_groups(data, attribute="gender", protected="F", min_group_size=5)
    assert same is data
    assert groups.sizes == {"protected": 20, "unprotected": 40}
    assert set(groups.users.loc[groups.users["group"] == "protected", "gender"]) == {"F"}


def test_protected_value_absent():
    with pytest.raises(
        InputError, match=r"protected value 'W' does not occur in `gender` .*'F', 'M'"
    ):
        protected_groups(make_data(), attribute="gender", protected="W")


def test_attribute_absent():
    with pytest.raises(InputError, match=r"`attribute` 'sex' is not a column of the users table"):
        protected_groups(make_data(), attribute="sex", protected="F")


def test_group_too_small_names_group_and_size():
    with pytest.raises(
        InputError,
        match=r"group 'protected' \(gender == 'F'\) has 20 users, below `min_group_size`=25",
    ):
        protected_groups(make_data(), attribute="gender", protected="F", min_group_size=25)


def test_nan_attributes():
    data = make_data()
    users = data.users.copy()
    users.loc[[1, 2], "gender"] = [np.nan, ""]
    data = InteractionData(data.interactions, users)
    with pytest.raises(
        InputError,
        match=r"2 users with interactions have no `gender` value; set `drop_missing=True`",
    ):
        protected_groups(data, attribute="gender", protected="F", min_group_size=5)
    groups, kept = protected_groups(
        data, attribute="gender", protected="F", min_group_size=5, drop_missing=True
    )
    assert sum(groups.sizes.values()) == 58
    assert not kept.interactions["user_id"].isin([1, 2]).any()


def test_users_missing_from_users_table_count_as_missing():
    data = make_data()
    data = InteractionData(data.interactions, data.users.iloc[1:])
    with pytest.raises(InputError, match=r"1 users with interactions have no `gender` value"):
        protected_groups(data, attribute="gender", protected="F", min_group_size=5)


def test_protected_value_matched_as_text():
    data = make_data()
    users = data.users.assign(flag=(data.users["user_id"] % 2))
    groups, _ = protected_groups(
        InteractionData(data.interactions, users), attribute="flag", protected=1, min_group_size=5
    )
    assert groups.sizes == {"protected": 30, "unprotected": 30}


def test_bad_tables():
    with pytest.raises(
        InputError, match=r"`interactions` has no column `item_id` \(columns: user_id, x\)"
    ):
        InteractionData(pd.DataFrame({"user_id": [1], "x": [1]}), pd.DataFrame({"user_id": [1]}))
    with pytest.raises(InputError, match=r"`interactions` has 1 missing values in `user_id`"):
        InteractionData(
            pd.DataFrame({"user_id": [np.nan], "item_id": [1]}), pd.DataFrame({"user_id": [1]})
        )
    with pytest.raises(InputError, match=r"`users` lists 1 user ids more than once"):
        InteractionData(
            pd.DataFrame({"user_id": [1], "item_id": [1]}), pd.DataFrame({"user_id": [1, 1]})
        )


def test_long_tail_against_hand_computation():
    # item a: 4, b: 3, c: 2, d: 1, e: 1 interactions (11 in total)
    items = ["a"] * 4 + ["b"] * 3 + ["c"] * 2 + ["d", "e"]
    inter = pd.DataFrame({"user_id": range(11), "item_id": items})
    stats = long_tail_stats(inter)
    assert stats.n_items == 5 and stats.n_interactions == 11 and stats.n_users == 11
    # top 20% of 5 items = 1 item (a): 4/11
    assert stats.top_share == pytest.approx(4 / 11)
    # Gini, sorted x = 1,1,2,3,4: sum (2i-n-1) x = -4*1 -2*1 + 0*2 + 2*3 + 4*4 = 16; / (5 * 11)
    assert stats.gini == pytest.approx(16 / 55)
    assert stats.interactions_per_item.tolist() == [4, 3, 2, 1, 1]
    assert long_tail_stats(inter, top_fraction=0.5).top_share == pytest.approx(9 / 11)


def test_gini_extremes():
    assert gini([3, 3, 3]) == pytest.approx(0.0)
    assert gini([0, 0, 0, 9]) == pytest.approx(3 / 4)


def test_real_ml100k_long_tail(ml100k_path):
    from recaudit.fairness.study import load_recbole_atomic

    stats = long_tail_stats(load_recbole_atomic(ml100k_path).interactions)
    assert stats.n_items == 1682
    assert 0.6 < stats.top_share < 0.7
