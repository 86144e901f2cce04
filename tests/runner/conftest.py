"""Fixtures of the runner tests (the embedding cache and retriever are in the root
conftest)."""

from __future__ import annotations

import pytest


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
