"""Reading a run's manifest (``run.json``, written by ``_runner.write_manifest``): the
backends of its last session, for the readers outside the run (the report's engines,
the planner's pilot slots)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._read import read_json
from ..exceptions import InputError

__all__ = ["manifest_backends", "read_manifest"]


def read_manifest(path: Path) -> Mapping[str, Any]:
    """``run.json`` as a mapping; empty when absent, unreadable or not a JSON object (a
    companion to the run's evaluations, never a reason to fail)."""
    try:
        data = read_json(path, what="run manifest") if path.is_file() else {}
    except InputError:
        return {}
    return data if isinstance(data, dict) else {}


def manifest_backends(path: Path) -> tuple[Mapping[str, Any], ...]:
    """The backend entries of ``run.json``'s last session, as written (one mapping per
    config model and k: ``model``, ``k``, ``name``, what the backend's ``describe()``
    adds, e.g. ``engine`` or ``n_parallel``).

    Empty when the file is absent or unreadable, has no session, or its last session no
    list of backends; entries that are not mappings are left out. A companion to the
    run's evaluations, never a reason to fail.
    """
    sessions = read_manifest(path).get("sessions")
    last = sessions[-1] if isinstance(sessions, list) and sessions else None
    backends = last.get("backends") if isinstance(last, dict) else None
    if not isinstance(backends, list):
        return ()
    return tuple(b for b in backends if isinstance(b, dict))
