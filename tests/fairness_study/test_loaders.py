"""Loaders on small fixtures written in each raw format."""

from __future__ import annotations

import pandas as pd
import pytest

from recaudit import InputError
from recaudit.fairness.study import (
    load_dataset,
    load_lastfm_1k,
    load_lastfm_360k,
    load_movielens,
    load_recbole_atomic,
    load_table,
)

from .conftest import FIXTURES


def test_movielens_100k_raw():
    data = load_movielens(FIXTURES / "ml-100k-raw")
    assert data.name == "ml-100k"
    assert list(data.interactions.columns) == ["user_id", "item_id", "rating", "timestamp"]
    assert len(data.interactions) == 6
    assert data.interactions.iloc[0].tolist() == [196, 242, 3, 881250949]
    assert data.users.set_index("user_id")["gender"].to_dict() == {22: "M", 186: "F", 196: "M"}
    assert data.users.set_index("user_id").loc[186, "zip_code"] == "00000"


def test_movielens_1m_raw():
    data = load_movielens(FIXTURES / "ml-1m-raw")
    assert data.name == "ml-1m"
    assert data.interactions.iloc[0].tolist() == [1, 1193, 5, 978300760]
    assert data.users.set_index("user_id")["gender"].to_dict() == {1: "F", 2: "M", 3: "M"}
    assert data.users.set_index("user_id").loc[2, "age"] == 56


def test_lastfm_1k_counts_listens_per_artist():
    data = load_lastfm_1k(FIXTURES / "lastfm-1k")
    inter = data.interactions.set_index(["user_id", "item_id"])["plays"]
    assert inter[("user_000001", "a7f7df4a-77d8-4f12-8acd-5c60c93f4de8")] == 2
    assert inter[("user_000001", "f1b1cf71-bd35-4e99-8624-24a6e15f133a")] == 1
    # empty MusicBrainz id: the artist name is the item; quotes are kept verbatim
    assert inter[("user_000002", 'name:Some "Quoted" Artist')] == 1
    assert len(data.interactions) == 5
    users = data.users.set_index("user_id")
    assert users.loc["user_000002", "gender"] == "f"
    assert pd.isna(users.loc["user_000001", "age"])
    assert users.loc["user_000003", "country"] == "United States"


def test_lastfm_360k_sums_plays():
    data = load_lastfm_360k(FIXTURES / "lastfm-360k")
    inter = data.interactions.set_index(["user_id", "item_id"])["plays"]
    u1, u2 = "00000c289a1829a808ac09c00daf10bc3c4e223b", "00001411dc427966b17297bf4d69e7e193135d89"
    assert inter[(u1, "3bd73256-3905-4f3a-97e2-8b341527f805")] == 2137
    assert inter[(u1, "name:van halen")] == 30
    assert inter[(u2, "3bd73256-3905-4f3a-97e2-8b341527f805")] == 20  # two rows summed
    assert pd.isna(data.users.set_index("user_id").loc[u2, "gender"])
    assert data.users.set_index("user_id").loc[u1, "signup"] == "Feb 1, 2007"


def test_recbole_atomic_keeps_token_ids_as_text():
    data = load_recbole_atomic(FIXTURES / "recbole" / "tiny")
    assert data.name == "tiny"
    assert data.interactions["user_id"].tolist() == ["1", "1", "2"]
    assert data.interactions["rating"].tolist() == [5.0, 3.0, 4.0]
    assert data.users["gender"].tolist() == ["M", "F"]
    same = load_recbole_atomic(FIXTURES / "recbole" / "tiny" / "tiny.inter")
    pd.testing.assert_frame_equal(same.interactions, data.interactions)


def test_table_with_column_map():
    data = load_table(
        FIXTURES / "inter.csv",
        FIXTURES / "users.csv",
        columns={"user_id": "uid", "item_id": "movie", "rating": "score"},
    )
    assert list(data.interactions.columns) == ["user_id", "item_id", "rating"]
    assert data.users.columns.tolist() == ["user_id", "sex"]


def test_table_parquet(tmp_path):
    pd.read_csv(FIXTURES / "inter.csv").to_parquet(tmp_path / "i.parquet")
    data = load_dataset(
        tmp_path / "i.parquet",
        format="table",
        users=FIXTURES / "users.csv",
        columns={"user_id": "uid", "item_id": "movie"},
    )
    assert len(data.interactions) == 3


def test_load_dataset_dispatch():
    assert load_dataset(FIXTURES / "lastfm-1k", format="lastfm-1k").name == "lastfm-1k"
    assert load_dataset(FIXTURES / "ml-1m-raw", format="movielens-1m", name="x").name == "x"


def test_missing_mapped_column():
    with pytest.raises(
        InputError, match=r"`columns` maps 'item_id' to 'film', which is not a column"
    ):
        load_table(
            FIXTURES / "inter.csv",
            FIXTURES / "users.csv",
            columns={"user_id": "uid", "item_id": "film"},
        )


def test_missing_required_column():
    with pytest.raises(InputError, match=r"`interactions` has no column `item_id`"):
        load_table(FIXTURES / "inter.csv", FIXTURES / "users.csv", columns={"user_id": "uid"})


def test_unknown_format_and_missing_files(tmp_path):
    with pytest.raises(InputError, match=r"`format` must be one of .* got 'netflix'"):
        load_dataset(tmp_path, format="netflix")
    with pytest.raises(InputError, match=r"Last.fm-1K userid-profile.tsv not found"):
        load_lastfm_1k(tmp_path)
    with pytest.raises(
        InputError, match=r"MovieLens u.data \(100K\) or ratings.dat \(1M\) not found"
    ):
        load_movielens(tmp_path)
    with pytest.raises(InputError, match=r"`users` \(the users file\) is required"):
        load_dataset(FIXTURES / "inter.csv", format="table")


def test_real_ml100k(ml100k_path):
    data = load_recbole_atomic(ml100k_path)
    assert len(data.interactions) == 100_000
    assert data.n_users == 943 and data.n_items == 1682
    assert data.users["gender"].value_counts().to_dict() == {"M": 670, "F": 273}
