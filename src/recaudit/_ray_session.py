"""Connecting to Ray, shared by the positional audit's Ray executor
(:mod:`recaudit.audit._ray_executor`) and the fairness grid search
(:mod:`recaudit.fairness.study._ray`): the ``executor`` / ``ray_address`` check, the import
with its missing-extra message, and a session bound to loopback for local clusters.

Top-level because both studies use it and neither may import the other's package
(tests/test_import_graph.py).
"""

from __future__ import annotations

import os
from typing import Any

from .exceptions import ConfigError, MissingExtraError

__all__ = [
    "EXECUTORS",
    "NAMESPACE",
    "check_executor",
    "import_ray",
    "init_local",
    "is_loopback",
    "ray_session",
]

#: Accepted values of ``--executor``.
EXECUTORS = ("local", "ray")
#: Namespace of the evaluation actors (tests find them there by name).
NAMESPACE = "recaudit"

MSG_EXECUTOR = "`executor` must be one of {allowed}, got {value!r}"
MSG_ADDRESS = "`ray_address` is only used with `executor='ray'` (got executor={executor!r})"


def import_ray() -> Any:
    """Import :mod:`ray` or raise :class:`~recaudit.exceptions.MissingExtraError`."""
    try:
        import ray
    except ImportError as exc:
        raise MissingExtraError("ray", "ray") from exc
    return ray


def check_executor(executor: str, ray_address: str | None) -> str:
    """Validate ``executor`` / ``ray_address`` (shared by the positional and fairness runs)."""
    if executor not in EXECUTORS:
        raise ConfigError(MSG_EXECUTOR.format(allowed=EXECUTORS, value=executor))
    if ray_address is not None and executor != "ray":
        raise ConfigError(MSG_ADDRESS.format(executor=executor))
    if executor == "ray":
        import_ray()
    return executor


#: Hosts of a loopback address (``--ray-address 127.0.0.1:PORT``).
LOOPBACK_HOSTS = ("127.0.0.1", "localhost")
#: Ray's switch for "single-machine mode": with it off, Ray takes 127.0.0.1 as the
#: node's address and every Ray process listens on loopback only (Ray's default on
#: macOS and Windows; read by ``ray._private.services.get_node_ip_address``).
_RAY_CLUSTER_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


class _loopback:  # noqa: N801 -- a context manager
    """Make Ray use 127.0.0.1 as this node's address while a cluster starts or joins.

    On Linux Ray resolves ``127.0.0.1`` to the machine's outbound address and its
    processes listen on every interface. Ray's single-machine mode (the one it uses on
    macOS/Windows) takes 127.0.0.1 instead; it is read from
    ``ray._private.ray_constants.ENABLE_RAY_CLUSTER`` in this process and from the
    environment variable ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` in the processes the
    cluster spawns. Both are set for the ``with`` block and restored after it (the
    started processes keep the environment they inherited).
    """

    def __enter__(self) -> None:
        from ray._private import ray_constants

        self._constants = ray_constants
        self._old = (ray_constants.ENABLE_RAY_CLUSTER, os.environ.get(_RAY_CLUSTER_ENV))
        ray_constants.ENABLE_RAY_CLUSTER = False
        os.environ[_RAY_CLUSTER_ENV] = "0"

    def __exit__(self, *exc: object) -> None:
        flag, env = self._old
        self._constants.ENABLE_RAY_CLUSTER = flag
        if env is None:
            os.environ.pop(_RAY_CLUSTER_ENV, None)
        else:
            os.environ[_RAY_CLUSTER_ENV] = env


def is_loopback(address: str | None) -> bool:
    """Whether ``address`` (``"host:port"``) names a cluster on this machine's loopback."""
    if address is None or "://" in address:
        return False
    return address.rsplit(":", 1)[0] in LOOPBACK_HOSTS


def init_local(**kwargs: Any) -> Any:
    """Start a new Ray cluster on this machine, bound to 127.0.0.1 only.

    ``ray.init(address="local", **kwargs)`` in Ray's single-machine mode (see
    :class:`_loopback`): the node address is 127.0.0.1 and the GCS, raylet, object
    store and workers listen on loopback only, so nothing of the cluster is reachable
    from the network (Ray has no authentication). ``address="local"`` always starts a
    new cluster (never joins one found on the machine or in ``RAY_ADDRESS``). Returns
    the :mod:`ray` module.
    """
    ray = import_ray()
    with _loopback():
        ray.init(address="local", **kwargs)
    return ray


class ray_session:  # noqa: N801 -- used as a context manager, like open()
    """Connect to Ray for the duration of a ``with`` block.

    Reuses a connection the caller already opened (``ray.is_initialized()``); otherwise
    connects to ``address`` (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``; a
    ``127.0.0.1:PORT`` address joins a loopback-only cluster, see :func:`init_local`)
    or, with ``address=None``, starts a new local cluster on this machine bound to
    127.0.0.1 (:func:`init_local`), and shuts down what it started on exit.
    """

    def __init__(self, address: str | None = None) -> None:
        self.address = address
        self._ray = import_ray()
        self._started = False

    def __enter__(self) -> Any:
        ray = self._ray
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"log_to_driver": False, "namespace": NAMESPACE}
            if self.address is None:
                init_local(include_dashboard=False, **kwargs)
            elif is_loopback(self.address):
                with _loopback():
                    ray.init(address=self.address, **kwargs)
            else:
                ray.init(address=self.address, **kwargs)
            self._started = True
        return ray

    def __exit__(self, *exc: object) -> None:
        if self._started:
            self._ray.shutdown()
