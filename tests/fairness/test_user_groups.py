"""User popularity groups: hand-built data, quantiles, the users-table column, errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recaudit import InputError
from recaudit.fairness.popularity._user_groups import add_popularity_groups, user_popularity_groups


def _train() -> pd.DataFrame:
    # 10 items, pop: i0 = 10 users, i1 = 8, i2..i9 = 1 each (u0..u7 one each)
    rows = [(u, "i0") for u in range(10)] + [(u, "i1") for u in range(8)]
    rows += [(u, f"i{u + 2}") for u in range(8)]
    rows += [(9, "i0")]  # a duplicate pair counts once
    return pd.DataFrame(rows, columns=["user_id", "item_id"])


def test_abdollahpouri_hand() -> None:
    # head = ceil(0.2 * 10) = 2 items {i0, i1}; ratio: u0..u7 = 2/3, u8 = u9 = 1
    g = user_popularity_groups(_train())
    # ceil(0.2 * 10) = 2 users per extreme; lowest ratio: u0, u1 (ties by id)
    assert g.loc[[0, 1]].tolist() == ["niche", "niche"]
    assert g.loc[[8, 9]].tolist() == ["blockbuster", "blockbuster"]
    assert (g.loc[2:7] == "diverse").all()
    assert g.name == "popularity_group" and g.index.name == "user_id"


def test_catalog_head() -> None:
    # a 15-item catalog (5 items outside train): head = ceil(0.2 * 15) = 3 items
    # {i0, i1, i2} (i2..i9 tie at 1 user, ties by id); ratio: u0 = 1, u1..u7 = 2/3,
    # u8 = u9 = 1, so the niche users move from u0, u1 to u1, u2
    g = user_popularity_groups(_train(), n_items=15)
    assert g.loc[[1, 2]].tolist() == ["niche", "niche"]
    assert g.loc[0] == "diverse"
    assert g.loc[[8, 9]].tolist() == ["blockbuster", "blockbuster"]
    assert user_popularity_groups(_train(), n_items=10).equals(user_popularity_groups(_train()))
    users = pd.DataFrame({"user_id": [0, 2]})
    assert add_popularity_groups(users, _train(), n_items=15)["popularity_group"].tolist() == [
        "diverse", "niche"]
    for bad in (9, True, 12.0, "15"):
        with pytest.raises(InputError, match=r"`n_items` \(the catalog size\).*10 distinct"):
            user_popularity_groups(_train(), n_items=bad)  # type: ignore[arg-type]


def test_cumulative_head() -> None:
    # 27 distinct pairs; 20 % = 5.4 -> the head is i0 alone (10 interactions)
    g = user_popularity_groups(_train(), item_head="cumulative")
    # ratio: u0..u7 = 1/3, u8 = 1/2, u9 = 1
    assert g.loc[[8, 9]].tolist() == ["blockbuster", "blockbuster"]
    assert g.loc[[0, 1]].tolist() == ["niche", "niche"]


def test_quantile() -> None:
    # mean popularity: u0..u7 = (10 + 8 + 1) / 3, u8 = 9, u9 = 10
    g = user_popularity_groups(_train(), method="quantile", q=2)
    assert g.value_counts().to_dict() == {"q1": 5, "q2": 5}
    assert g.loc[[8, 9]].tolist() == ["q2", "q2"]
    g3 = user_popularity_groups(_train(), method="quantile", q=3)
    assert sorted(g3.value_counts().tolist()) == [3, 3, 4]


def test_users_column_and_intersection() -> None:
    users = pd.DataFrame({"user_id": [9, 0, 5], "gender": ["F", "M", "F"]})
    out = add_popularity_groups(users, _train())
    assert out["popularity_group"].tolist() == ["blockbuster", "niche", "diverse"]
    assert "popularity_group" not in users.columns  # the caller's table is not mutated
    joined = out["gender"] + " & " + out["popularity_group"]
    assert joined.tolist()[0] == "F & blockbuster"


def test_errors() -> None:
    with pytest.raises(InputError, match="method"):
        user_popularity_groups(_train(), method="median")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="`q`"):
        user_popularity_groups(_train(), method="quantile", q=1)
    with pytest.raises(InputError, match="at least 3 users"):
        user_popularity_groups(_train().head(2))
    users = pd.DataFrame({"user_id": [0, 42]})
    with pytest.raises(InputError, match=r"user_id 42 \(row 2\)"):
        add_popularity_groups(users, _train())
    with pytest.raises(InputError, match="already has"):
        add_popularity_groups(pd.DataFrame({"user_id": [0], "popularity_group": ["x"]}), _train())


def test_random_partition() -> None:
    rng = np.random.default_rng(0)
    train = pd.DataFrame({"user_id": rng.integers(0, 50, 600), "item_id": rng.zipf(1.5, 600)})
    g = user_popularity_groups(train)
    n = train.user_id.nunique()
    k = int(np.ceil(0.2 * n))
    assert (g == "niche").sum() == k and (g == "blockbuster").sum() == k
