"""A real local Ray cluster (2 CPUs, loopback) shared by the Ray executor tests.

The embedding cache and retriever come from the root conftest; retrieval runs in the
driver (the actors only run backends), and the CLI subprocess of ``test_cli_ray`` finds
the cached catalog embeddings on disk through the config's ``cache_dir``."""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def ray_cluster():
    """A new 2-CPU Ray cluster on this machine's loopback; shut down (only what it
    started) after.

    Started by :func:`recaudit.audit._ray_executor.init_local` (``ray.init(address=
    "local", num_cpus=2)`` in Ray's single-machine mode): node address 127.0.0.1,
    every Ray process listening on loopback only. The workers import this worktree's
    ``src`` (absolute PYTHONPATH), not another installed copy. Yields the cluster's
    GCS address (``127.0.0.1:PORT``, for ``--ray-address``).
    """
    try:  # not `importorskip` alone: without Ray, `import ray` finds this folder
        importlib.metadata.version("ray")  # (tests/ is on sys.path) as a namespace package
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the `ray` extra is not installed: pip install 'recaudit[ray]'")
    ray = pytest.importorskip("ray", reason="the `ray` extra is not installed")
    src = str(ROOT / "src")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [src, *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]])
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if ray.is_initialized():
        ray.shutdown()
    from recaudit._ray_session import init_local

    init_local(num_cpus=2, include_dashboard=False, log_to_driver=False,
               object_store_memory=200 * 1024**2, namespace="recaudit")
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
