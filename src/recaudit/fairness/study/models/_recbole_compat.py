"""Everything needed to run RecBole 1.2.1 on this stack, in one place.

RecBole is an optional dependency (the ``fairness`` extra). This module is the only
place that imports it, and the only place that knows its quirks:

- how it is installed: ``pip install --no-deps recbole==1.2.1`` beside the
  ``fairness`` extra, which lists RecBole's runtime requirements without its
  ``ray<=2.6.3`` pin (RecBole imports Ray only for hyper-parameter tuning, which
  recaudit does not use); :func:`import_recbole` checks that and names the command to
  run. ``pandas<3`` and ``setuptools<81`` stay (docs/decisions/0008);
- four shims, one comment each: two for RecBole bugs on torch >= 2.6, one for numpy 2
  (the aliases ``Config.compatibility_settings`` builds) and one for scipy >= 1.12
  (``dok_matrix._update``, used by NGCF and LightGCN);
- three containment measures, because RecBole assumes it owns the process:
  it parses ``sys.argv`` (its ``Config`` turns ``--x=y`` arguments into settings),
  writes ``./log_tensorboard`` into the current directory, and seeds ``random``,
  ``numpy`` and ``torch`` *globally* in ``init_seed``.

:func:`recbole_session` applies all of it for the duration of a ``with`` block.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import logging
import os
import random
import re
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ....exceptions import MissingExtraError

__all__ = [
    "RECBOLE_INSTALL",
    "RECBOLE_VERSION",
    "import_recbole",
    "load_checkpoint",
    "recbole_session",
]

#: The RecBole release the shims below were written for.
RECBOLE_VERSION = "1.2.1"
#: What a user runs to get a working RecBole (docs/decisions/0008, "RecBole without its
#: Ray pin"): the extra brings RecBole's runtime requirements, then RecBole itself
#: without its ``ray<=2.6.3`` pin.
RECBOLE_INSTALL = (
    f"pip install 'recaudit[fairness]' && pip install --no-deps recbole=={RECBOLE_VERSION}"
)
#: RecBole requirements recaudit does not need: Ray serves only RecBole's
#: hyper-parameter tuning (``recbole.trainer.hyper_tuning``, ``recbole.quick_start``).
UNUSED_REQUIREMENTS = frozenset({"ray"})
MSG_VERSION = (
    "recbole {found} is installed, but recaudit's RecBole shims are written for "
    "recbole {expected}; install it with `pip install --no-deps recbole=={expected}`"
)
#: numpy names that RecBole 1.2.1 uses (``np.float``, ``np.bool``, ``np.str`` in its
#: metrics and data code) and that its ``Config.compatibility_settings`` puts on numpy,
#: each built from a name that exists on numpy 1.26 and 2.x alike.
NUMPY_ALIASES = {
    "bool": "bool_",
    "int": "int_",
    "float": "float64",
    "complex": "complex128",
    "object": "object_",
    "str": "str_",
    "long": "int_",
    "unicode": "str_",
}

_checked = False


def import_recbole() -> tuple[ModuleType, ModuleType]:
    """Import ``torch`` and ``recbole`` lazily, with the compatibility shims applied.

    Returns
    -------
    torch, recbole : module
        The two imported modules.

    Raises
    ------
    MissingExtraError
        When torch, RecBole or one of RecBole's runtime requirements is not installed;
        the message gives the command to run (:data:`RECBOLE_INSTALL` for RecBole).
    """
    global _checked
    if not _checked:
        _check_installation()
        _checked = True
    try:
        torch = importlib.import_module("torch")
    except ImportError as exc:
        raise MissingExtraError("torch", "fairness") from exc
    try:
        recbole = importlib.import_module("recbole")
        configurator = importlib.import_module("recbole.config.configurator")
        collector = importlib.import_module("recbole.evaluator.collector")
    except ImportError as exc:
        if exc.name is not None and not exc.name.startswith("recbole"):
            raise MissingExtraError(exc.name, "fairness") from exc
        raise MissingExtraError("recbole", "fairness", RECBOLE_INSTALL) from exc
    _patch_collector(collector.Collector)
    _patch_config(configurator.Config)
    _patch_dok_matrix()
    return torch, recbole


def missing_requirements() -> list[str]:
    """RecBole's declared runtime requirements that are not installed (Ray excepted).

    Returns
    -------
    list of str
        Distribution names, in RecBole's order; empty when everything it imports on
        recaudit's code paths is there.
    """
    missing = []
    for spec in importlib.metadata.requires("recbole") or ():
        if ";" in spec and "extra" in spec.split(";", 1)[1]:
            continue  # an optional extra of RecBole's (hyperopt)
        match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", spec)
        if match is None:
            continue
        name = match.group(0)
        if name.lower() in UNUSED_REQUIREMENTS:
            continue
        try:
            importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
    return missing


def _check_installation() -> None:
    try:
        found = importlib.metadata.version("recbole")
    except importlib.metadata.PackageNotFoundError as exc:
        raise MissingExtraError("recbole", "fairness", RECBOLE_INSTALL) from exc
    if found != RECBOLE_VERSION:
        warnings.warn(MSG_VERSION.format(found=found, expected=RECBOLE_VERSION),
                      RuntimeWarning, stacklevel=3)
    missing = missing_requirements()
    if missing:
        raise MissingExtraError(", ".join(missing), "fairness")


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


def _patch_config(config_cls: Any) -> None:
    # Shim 3 -- every RecBole ``Config`` calls ``compatibility_settings``, which puts
    # the pre-1.24 names (``np.float``, ``np.bool``, ...) on numpy because RecBole's own
    # code still uses them, reading ``np.float_``, ``np.complex_`` and ``np.unicode_``
    # to do so; numpy 2 removed those three, so every Config raised AttributeError. The
    # replacement sets the same names from ``NUMPY_ALIASES`` (``np.float64``,
    # ``np.complex128``, ``np.str_``, ...) and only where numpy lacks them (numpy 2 has
    # its own ``np.bool`` and ``np.long``); it never puts ``np.float_`` & co. back.
    if getattr(config_cls.compatibility_settings, "_recaudit_shim", False):
        return

    def compatibility_settings(self: Any) -> None:
        for name, target in NUMPY_ALIASES.items():
            if name not in vars(np):  # hasattr would warn (np.str)
                setattr(np, name, getattr(np, target))

    compatibility_settings._recaudit_shim = True  # type: ignore[attr-defined]
    config_cls.compatibility_settings = compatibility_settings


def _patch_dok_matrix() -> None:
    # Shim 4 -- NGCF and LightGCN build their adjacency matrix with
    # ``scipy.sparse.dok_matrix._update(dict)``, a private method scipy 1.12 removed
    # when ``dok_matrix`` stopped subclassing ``dict`` (it now keeps its entries in
    # ``self._dict``). The old method was ``dict.update(self, data)`` without checks;
    # the replacement does the same on ``self._dict``. Added only where it is missing.
    import scipy.sparse as sp

    if hasattr(sp.dok_matrix, "_update"):
        return

    def _update(self: Any, data: dict[tuple[int, int], Any]) -> None:
        self._dict.update(data)

    sp.dok_matrix._update = _update


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
