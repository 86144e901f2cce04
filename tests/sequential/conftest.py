"""Fixtures of the sequential-audit tests (the runner tests' helpers and retriever)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runner"))


@pytest.fixture(scope="session")
def emb_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("emb-cache-seq")


@pytest.fixture(scope="session")
def retriever(emb_cache):
    from recaudit.llm._retrieval import Retriever

    return Retriever(cache_dir=emb_cache)
