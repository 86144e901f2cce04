"""The test cluster (and any cluster the executor starts) lives on 127.0.0.1 only."""

from __future__ import annotations

import os

import pytest

from recaudit._ray_session import is_loopback


def test_cluster_node_address_is_loopback(ray_cluster):
    import ray

    assert ray_cluster.startswith("127.0.0.1:")
    nodes = ray.nodes()
    assert nodes and {n["NodeManagerAddress"] for n in nodes} == {"127.0.0.1"}

    @ray.remote(num_cpus=0)
    def worker_ip() -> str:
        import ray

        return str(ray.util.get_node_ip_address())

    assert ray.get(worker_ip.remote()) == "127.0.0.1"


def test_cluster_listens_on_loopback_only(ray_cluster):
    psutil = pytest.importorskip("psutil")
    me = psutil.Process()
    ours = {me.pid} | {p.pid for p in me.children(recursive=True)}
    try:
        listening = [c for c in psutil.net_connections("tcp")
                     if c.status == psutil.CONN_LISTEN and c.pid in ours]
    except psutil.AccessDenied:
        pytest.skip("this system does not let psutil list sockets")
    assert listening, "the Ray processes of the test cluster should listen somewhere"
    hosts = {c.laddr.ip.removeprefix("::ffff:") for c in listening}
    assert hosts == {"127.0.0.1"}, hosts


def test_loopback_switch_is_restored_after_start(ray_cluster):
    from ray._private import ray_constants

    assert ray_constants.ENABLE_RAY_CLUSTER is True  # later connections use real IPs
    assert "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER" not in os.environ


@pytest.mark.parametrize(("address", "expected"), [
    ("127.0.0.1:6379", True), ("localhost:6379", True), ("10.0.0.5:6379", False),
    ("ray://127.0.0.1:10001", False), ("auto", False), (None, False),
])
def test_is_loopback(address, expected):
    assert is_loopback(address) is expected


def test_guided_batches_shrink_and_keep_order_and_one_model():
    from types import SimpleNamespace

    from recaudit.audit._ray_executor import _next_batch

    tasks = [SimpleNamespace(key=SimpleNamespace(model=m, i=i))
             for m, n in (("a", 150), ("b", 10)) for i in range(n)]
    pending = list(reversed(tasks))
    batches = []
    while pending:
        batches.append(_next_batch(pending, None, n_slots=4))  # type: ignore[arg-type]
    assert [t for b in batches for t in b] == tasks  # every task once, in plan order
    assert all(len({t.key.model for t in b}) == 1 for b in batches)
    sizes = [len(b) for b in batches]
    assert sizes[0] == 20  # ceil(160 / 8)
    a_sizes = [len(b) for b in batches if b[0].key.model == "a"]
    assert a_sizes == sorted(a_sizes, reverse=True) and a_sizes[-1] <= 2
    fixed = list(reversed(tasks[:10]))
    assert len(_next_batch(fixed, 3, n_slots=4)) == 3  # type: ignore[arg-type]
