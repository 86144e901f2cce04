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


@pytest.fixture(scope="session")
def _fault_server_session():
    from fault_server import FaultServer

    with FaultServer(stall_s=2.0) as server:
        yield server


@pytest.fixture()
def fault_server(_fault_server_session):
    """The session's loopback fault server (``fault_server.py``), script and log reset."""
    _fault_server_session.reset()
    yield _fault_server_session
    _fault_server_session.reset()
