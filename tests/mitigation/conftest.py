"""Fixtures of the mitigation tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="session")
def emb_cache(tmp_path_factory):
    """One embedding cache for the whole session."""
    return tmp_path_factory.mktemp("emb-cache")


@pytest.fixture(scope="session")
def retriever(emb_cache):
    """One loaded retriever (the packaged MiniLM)."""
    from recaudit.llm._retrieval import Retriever

    return Retriever(cache_dir=emb_cache)
