"""Fixtures of the runner tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def emb_cache(tmp_path_factory):
    """One embedding cache for the whole session (catalog embeddings reused)."""
    return tmp_path_factory.mktemp("emb-cache")


@pytest.fixture(scope="session")
def retriever(emb_cache):
    """One loaded retriever (the packaged MiniLM) shared by the in-process tests."""
    from recaudit.llm._retrieval import Retriever

    return Retriever(cache_dir=emb_cache)
