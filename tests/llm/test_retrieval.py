from __future__ import annotations

import numpy as np
import pytest

from recaudit.exceptions import InputError
from recaudit.llm import (
    Query,
    Retriever,
    candidates_from_frame,
    candidates_to_frame,
    generate_queries,
)

K = 5


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("emb-cache")


@pytest.fixture(scope="module")
def retriever(cache_dir):
    pytest.importorskip("sentence_transformers")
    return Retriever(cache_dir=cache_dir)


@pytest.fixture(scope="module")
def queries(myntra_small):
    return generate_queries(myntra_small, 40, rng=5)


@pytest.fixture(scope="module")
def retrieved(retriever, myntra_small, queries):
    return retriever.retrieve(myntra_small, queries, k=K)


def test_k_distinct_candidates_sorted_by_score(retrieved, queries, myntra_small):
    assert set(retrieved) == {q.query_id for q in queries}
    ids = set(myntra_small.items["item_id"])
    for cands in retrieved.values():
        assert [c.original_index for c in cands] == list(range(1, K + 1))
        assert len({c.item_id for c in cands}) == K and {c.item_id for c in cands} <= ids
        scores = [c.score for c in cands]
        assert scores == sorted(scores, reverse=True) and all(-1 <= s <= 1 + 1e-6 for s in scores)


def test_scores_are_cosines_and_top_k_is_exact(retriever, retrieved, queries, myntra_small):
    emb = retriever.catalog_embeddings(myntra_small)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-5)
    q = retriever.embed([queries[0].text])[0]
    sims = emb @ q
    best = np.argsort(-sims)[:K]
    cands = retrieved[queries[0].query_id]
    assert [c.item_id for c in cands] == myntra_small.items["item_id"].iloc[best].tolist()
    np.testing.assert_allclose([c.score for c in cands], sims[best], atol=1e-5)


def test_exact_title_query_retrieves_that_product(retriever, myntra_small):
    items = myntra_small.items
    unique = items[~items["title"].duplicated(keep=False)].head(10)
    qs = [Query(f"t{i}", title) for i, title in enumerate(unique["title"])]
    got = retriever.retrieve(myntra_small, qs, k=3)
    for q, item_id in zip(qs, unique["item_id"], strict=True):
        assert got[q.query_id][0].item_id == item_id


def test_second_run_uses_the_disk_cache(retriever, retrieved, cache_dir, myntra_small, queries):
    assert retriever.n_embedded == len(myntra_small)  # embedded once, then memory
    path = retriever.cache_path(myntra_small)
    assert path.is_file() and path.parent == cache_dir
    assert retriever.model_id in path.name and myntra_small.sha256[:32] in path.name
    fresh = Retriever(cache_dir=cache_dir)
    again = fresh.retrieve(myntra_small, queries, k=K)
    assert fresh.n_embedded == 0
    assert again == retrieved
    other = myntra_small.subset(range(100))
    assert fresh.cache_path(other) != path


def test_frame_round_trip(retrieved, queries, tmp_path):
    frame = candidates_to_frame(retrieved, queries=queries)
    assert len(frame) == len(queries) * K
    assert {"query_id", "query_text", "original_index", "item_id", "score"} <= set(frame.columns)
    frame.to_parquet(tmp_path / "c.parquet", index=False)
    import pandas as pd

    assert candidates_from_frame(pd.read_parquet(tmp_path / "c.parquet")) == retrieved


def test_errors(retriever, myntra_small, tmp_path):
    with pytest.raises(InputError, match="is not a local folder"):
        Retriever(tmp_path / "nope")
    with pytest.raises(
        InputError, match=r"`k` must be an integer between 1 and the catalog size 600"
    ):
        retriever.retrieve(myntra_small, [Query("a", "x")], k=0)
    with pytest.raises(InputError, match="duplicate query_id 'a'"):
        retriever.retrieve(myntra_small, [Query("a", "x"), Query("a", "y")], k=2)


def test_embedding_progress_counts_up_to_the_distinct_titles_and_changes_nothing(
        retriever, retrieved, myntra_small, queries, tmp_path):
    from recaudit.llm._retrieval import EMBED_CHUNK

    calls: list[tuple[int, int]] = []
    fresh = Retriever(cache_dir=tmp_path)  # nothing cached: the titles are embedded
    again = fresh.retrieve(myntra_small, queries, k=K, progress=lambda d, t: calls.append((d, t)))
    n = myntra_small.items["title"].nunique()  # each distinct title is embedded once
    assert calls[-1] == (n, n) and all(t == n for _, t in calls)
    assert [d for d, _ in calls] == sorted({d for d, _ in calls})  # strictly increasing
    if fresh.engine == "torch":  # sentence-transformers: one call per EMBED_CHUNK titles
        assert len(calls) == -(-n // EMBED_CHUNK)
    else:  # torch-free engines: one call per batch of one token length
        assert len(calls) >= 2
    assert [[c.item_id for c in again[q.query_id]] for q in queries] == \
        [[c.item_id for c in retrieved[q.query_id]] for q in queries]
    np.testing.assert_allclose(fresh.catalog_embeddings(myntra_small),
                               retriever.catalog_embeddings(myntra_small), atol=1e-5)
    calls.clear()
    Retriever(cache_dir=tmp_path).retrieve(myntra_small, queries, k=K,
                                           progress=lambda d, t: calls.append((d, t)))
    assert calls == []  # cached: nothing to report


def test_a_repeated_title_is_embedded_once_with_the_same_vector(retriever, myntra_small,
                                                                 tmp_path):
    items = myntra_small.items
    assert items["title"].duplicated().any()  # the sample holds repeated titles
    emb = Retriever(cache_dir=tmp_path).catalog_embeddings(myntra_small)
    direct = retriever.embed(items["title"].tolist())
    np.testing.assert_allclose(emb, direct, atol=2e-6)
    first = ~items["title"].duplicated()
    for _, rows in items.groupby("title").groups.items():
        rows = [items.index.get_loc(r) for r in rows]
        assert (emb[rows] == emb[rows[0]]).all()
    assert first.sum() < len(items)
