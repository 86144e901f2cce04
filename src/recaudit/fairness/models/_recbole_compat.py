"""Everything needed to run RecBole 1.2.1 on this stack, in one place.

RecBole is an optional dependency (the ``fairness`` extra). This module is the only
place that imports it, and the only place that knows its quirks:

- the version pins it needs (``numpy<2``, ``scipy<1.12``, ``pandas<3``,
  ``setuptools<81``; see ``docs/decisions.md``);
- two shims for bugs on torch >= 2.6 (below, one comment each);
- three containment measures, because RecBole assumes it owns the process:
  it parses ``sys.argv`` (its ``Config`` turns ``--x=y`` arguments into settings),
  writes ``./log_tensorboard`` into the current directory, and seeds ``random``,
  ``numpy`` and ``torch`` *globally* in ``init_seed``.

:func:`recbole_session` applies all of it for the duration of a ``with`` block.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import random
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ...exceptions import MissingExtraError

__all__ = [
    "RECBOLE_VERSION",
    "import_recbole",
    "load_checkpoint",
    "recbole_session",
]

#: The RecBole release the shims below were written for (the ``fairness`` extra pins it).
RECBOLE_VERSION = "1.2.1"


def import_recbole() -> tuple[ModuleType, ModuleType]:
    """Import ``torch`` and ``recbole`` lazily, with the compatibility shims applied.

    Returns
    -------
    torch, recbole : module
        The two imported modules.

    Raises
    ------
    MissingExtraError
        When either is not installed (``pip install 'recaudit[fairness]'``).
    """
    try:
        torch = importlib.import_module("torch")
    except ImportError as exc:
        raise MissingExtraError("torch", "fairness") from exc
    try:
        recbole = importlib.import_module("recbole")
        collector = importlib.import_module("recbole.evaluator.collector")
    except ImportError as exc:
        raise MissingExtraError("recbole", "fairness") from exc
    _patch_collector(collector.Collector)
    return torch, recbole


def _patch_collector(collector_cls: Any) -> None:
    # Shim 1 -- RecBole 1.2.1 ``Collector.get_data_struct`` calls ``.cpu()`` on every
    # stored value, but ``data.num_items``/``data.num_users`` are plain ints, so the
    # metrics that need them (ItemCoverage, GiniIndex, AveragePopularity, ...) crash
    # with "'int' object has no attribute 'cpu'" (upstream issues #2131 and #2191).
    # The replacement moves only tensors to the CPU; everything else is unchanged.
    if getattr(collector_cls.get_data_struct, "_recaudit_shim", False):
        return
    import copy

    def get_data_struct(self: Any) -> Any:
        data = self.data_struct._data_dict
        for key, value in data.items():
            if hasattr(value, "cpu"):
                data[key] = value.cpu()
        returned = copy.deepcopy(self.data_struct)
        for key in ["rec.topk", "rec.meanrank", "rec.score", "rec.items", "data.label"]:
            if key in self.data_struct:
                del self.data_struct[key]
        return returned

    get_data_struct._recaudit_shim = True  # type: ignore[attr-defined]
    collector_cls.get_data_struct = get_data_struct


def load_checkpoint(path: Path) -> dict[str, Any]:
    """Load a RecBole checkpoint file written by its ``Trainer``.

    Shim 2 -- torch >= 2.6 defaults ``torch.load(weights_only=True)``, but RecBole
    pickles its whole ``Config`` object into every checkpoint, so the default load
    fails with an ``UnpicklingError``. Checkpoints read here are the ones this run
    just wrote into its own run folder, so ``weights_only=False`` is safe; RecBole's
    own ``torch.load`` calls are covered by ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1``
    inside :func:`recbole_session`.
    """
    torch, _ = import_recbole()
    state: dict[str, Any] = torch.load(path, map_location="cpu", weights_only=False)
    return state


@contextlib.contextmanager
def recbole_session(workdir: Path, *, num_threads: int = 1) -> Iterator[logging.Logger]:
    """Run RecBole code contained: argv, cwd, logs, threads and global RNG state.

    Inside the block:

    - ``sys.argv`` is just the program name, so RecBole's ``Config`` cannot pick up
      the caller's command-line options as settings;
    - the working directory is ``workdir`` (RecBole's tensorboard writer and any
      relative path it makes land there, never in the caller's directory);
    - RecBole's log messages go to ``workdir/recbole.log`` (not to the console);
    - torch uses ``num_threads`` intra-op threads (1 by default: on a small shared
      CPU more threads spin-wait and run several times slower);
    - ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` (shim 2 for RecBole's own loads);
    - ``FutureWarning`` and ``UserWarning`` are silenced: RecBole 1.2.1 triggers
      deprecation notices of pandas 3 and torch on every run that its users cannot
      act on.

    On exit everything is restored, including the global states of ``random``,
    ``numpy.random`` and ``torch`` that RecBole's ``init_seed`` overwrites: the caller's
    global random streams are the same after the block as before it.

    Parameters
    ----------
    workdir : pathlib.Path
        Folder that receives RecBole's files; created if missing.
    num_threads : int, default 1
        torch intra-op threads during the block.

    Yields
    ------
    logging.Logger
        The root logger RecBole writes to.
    """
    torch, _ = import_recbole()
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    saved_argv = sys.argv
    saved_cwd = os.getcwd()
    saved_env = os.environ.get("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")
    saved_threads = torch.get_num_threads()
    saved_py_rng = random.getstate()
    saved_np_rng = np.random.get_state()  # noqa: NPY002 -- saving, not seeding
    saved_torch_rng = torch.random.get_rng_state()
    logger = logging.getLogger()
    saved_level = logger.level
    handler = logging.FileHandler(workdir / "recbole.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", UserWarning)
        try:
            sys.argv = [saved_argv[0] if saved_argv else "recaudit"]
            os.chdir(workdir)
            os.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"
            torch.set_num_threads(num_threads)
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
            yield logger
        finally:
            logger.removeHandler(handler)
            handler.close()
            logger.setLevel(saved_level)
            torch.set_num_threads(saved_threads)
            if saved_env is None:
                os.environ.pop("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", None)
            else:
                os.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = saved_env
            os.chdir(saved_cwd)
            sys.argv = saved_argv
            random.setstate(saved_py_rng)
            np.random.set_state(saved_np_rng)  # noqa: NPY002 -- restoring, not seeding
            torch.random.set_rng_state(saved_torch_rng)
