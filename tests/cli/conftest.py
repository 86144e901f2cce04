"""Fixtures of the CLI tests: the runner's config helpers and one loaded retriever."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# the runner tests' helpers (catalog + simulated-backend config writer)
sys.path.insert(0, str(Path(__file__).parents[1] / "runner"))
sys.path.insert(0, str(Path(__file__).parents[1] / "study"))


@pytest.fixture(scope="session")
def emb_cache(tmp_path_factory):
    """One embedding cache for the whole session."""
    return tmp_path_factory.mktemp("cli-emb-cache")


@pytest.fixture(scope="session")
def retriever(emb_cache):
    """The packaged MiniLM retriever, loaded once (the CLI runs resume without it)."""
    from recaudit.llm._retrieval import Retriever

    return Retriever(cache_dir=emb_cache)
