"""How a run executes: the settings that travel from the command line to the executor.

The config says WHAT an audit measures (and its hash identifies the run); these say HOW
this invocation runs it: continue a journal or start one, where the evaluations run,
and whether each cell stops sequentially. One frozen object, validated once, carries
them through :func:`~recaudit.audit.run_and_analyze`, :func:`~recaudit.audit.run_audit`
and the executor, instead of four loose keywords at every layer.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._ray_session import EXECUTORS, check_executor
from ..exceptions import ConfigError
from ._sequential_driver import SequentialOptions

__all__ = ["MSG_SEQUENTIAL_RAY", "RunOptions"]

MSG_SEQUENTIAL_RAY = ("`--sequential` runs on the local executor only; drop "
                      "`--executor ray` (or run the sequential audit without it)")


@dataclass(frozen=True)
class RunOptions:
    """How one invocation runs an audit.

    Attributes
    ----------
    resume : bool
        Continue the run folder's journal: run exactly the keys without a completed
        row (never-run keys and ``failed`` ones).
    executor : {"local", "ray"}
        Where evaluations run: this process's asyncio runner, or the workers of a Ray
        cluster (the journal is still written here).
    ray_address : str, optional
        Ray cluster address for ``executor="ray"`` (default: a new local cluster).
    sequential : SequentialOptions, optional
        Run in rounds and stop each cell when an anytime-valid test decides (local
        executor only).

    Raises
    ------
    ConfigError
        On construction: an unknown executor, an address without ``ray``, a
        sequential run on Ray, a ``resume`` that is not a bool.
    """

    resume: bool = False
    executor: str = "local"
    ray_address: str | None = None
    sequential: SequentialOptions | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.resume, bool):
            raise ConfigError(f"`resume` must be true or false, got {self.resume!r}")
        if self.executor not in EXECUTORS \
                or (self.ray_address is not None and self.executor != "ray"):
            check_executor(self.executor, self.ray_address)  # raises the one message
        if self.sequential is not None:
            if not isinstance(self.sequential, SequentialOptions):
                raise ConfigError("`sequential` must be SequentialOptions or None")
            if self.executor != "local":
                raise ConfigError(MSG_SEQUENTIAL_RAY)
