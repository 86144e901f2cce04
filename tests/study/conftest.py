"""Fixtures of the study tests (helpers live in ``study_helpers``)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def study_cache(tmp_path_factory):
    """One embedding cache for the session."""
    return tmp_path_factory.mktemp("study-emb-cache")


@pytest.fixture(scope="session")
def study_retriever(study_cache):
    """The packaged MiniLM retriever, loaded once."""
    from recaudit.llm._retrieval import Retriever

    return Retriever(cache_dir=study_cache)
