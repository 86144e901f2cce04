"""The MovieLens testbed on the real ML-100K: held-out items, training split, and the
item-kNN retriever against scikit-learn's cosine similarity."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recaudit.exceptions import InputError
from recaudit.llm import ItemKNNRetriever, movielens_testbed


@pytest.fixture(scope="module")
def testbed(ml100k_path):
    return movielens_testbed(ml100k_path, n_users=30, history=10, rng=3)


def test_history_precedes_the_held_out_liked_movie(testbed, ml100k_path):
    inter = pd.read_csv(ml100k_path / "ml-100k.inter", sep="\t", dtype=str)
    inter.columns = ["user_id", "item_id", "rating", "timestamp"]
    assert len(testbed.catalog) == 1682 and len(testbed.queries) == 30
    for q, (user, held) in zip(testbed.queries, testbed.test.itertuples(index=False),
                               strict=True):
        assert q.query_id == user and q.source_item_id == held
        mine = inter[inter["user_id"] == user].set_index("item_id")
        assert float(mine.loc[held, "rating"]) >= 4
        hist = testbed.history[user]
        assert len(hist) == 10 and held not in hist
        times = mine["timestamp"].astype(float)
        assert times[list(hist)].max() <= times[held]
        title = testbed.catalog.items.set_index("item_id").loc[hist[-1], "title"]
        assert title in q.text
    held_pairs = set(map(tuple, testbed.test.to_numpy()))
    assert not held_pairs & set(map(tuple, testbed.train.to_numpy()))
    assert len(testbed.train) == len(inter.drop_duplicates(["user_id", "item_id"])) - 30


def test_item_knn_equals_summed_cosine_and_skips_seen_items(testbed):
    cosine_similarity = pytest.importorskip(
        "sklearn.metrics.pairwise", reason="scikit-learn is the independent reference"
    ).cosine_similarity

    train, catalog = testbed.train, testbed.catalog
    got = ItemKNNRetriever(train, testbed.history).retrieve(catalog, testbed.queries[:5], k=10)
    ids = catalog.items["item_id"].astype(str).tolist()
    users = sorted(train["user_id"].unique())
    x = pd.crosstab(train["user_id"], train["item_id"]).reindex(index=users, columns=ids,
                                                                 fill_value=0).clip(upper=1)
    sim = cosine_similarity(x.T.to_numpy())
    col = {item: j for j, item in enumerate(ids)}
    for q in testbed.queries[:5]:
        score = sim[[col[i] for i in testbed.history[q.query_id]]].sum(axis=0)
        seen = set(train.loc[train["user_id"] == q.query_id, "item_id"])
        order = [j for j in np.argsort(-score, kind="stable") if ids[j] not in seen]
        want = [ids[j] for j in order[:10]]
        cands = got[q.query_id]
        assert [c.item_id for c in cands] == want
        assert [c.original_index for c in cands] == list(range(1, 11))
        np.testing.assert_allclose([c.score for c in cands], score[order[:10]], rtol=1e-9)
        assert not seen & {c.item_id for c in cands}


def test_refusals(tmp_path, ml100k_path):
    with pytest.raises(InputError, match="not found"):
        movielens_testbed(tmp_path)
    with pytest.raises(InputError, match="n_users"):
        movielens_testbed(ml100k_path, n_users=0)
    with pytest.raises(InputError, match="lower `n_users`"):
        movielens_testbed(ml100k_path, n_users=900, history=200)
