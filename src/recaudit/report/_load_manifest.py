"""What a run's manifest (``run.json``) adds to its report: the engines that answered
and what the run spent. Both are companions, not the analysis: an absent or unreadable
manifest shows neither."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..audit import RunSpend, manifest_backends, read_manifest

__all__ = ["ENGINE_FIELDS", "engines", "spend"]

#: The fields of a ``run.json`` backend entry the report shows, in order.
ENGINE_FIELDS = ("model", "k", "name", "engine", "engine_version", "quantization",
                 "answer_mode", "model_id", "base_url")


def engines(path: Path) -> tuple[Mapping[str, str], ...]:
    """The backends of ``run.json``'s last session (none when it has none;
    :func:`~recaudit.audit.manifest_backends`), their :data:`ENGINE_FIELDS` as text."""
    return tuple({f: str(b[f]) for f in ENGINE_FIELDS if b.get(f) is not None}
                 for b in manifest_backends(path))


def spend(path: Path) -> RunSpend | None:
    """``run.json``'s ``spend`` (None when it has none; a malformed one is an
    :class:`~recaudit.InputError` naming the file and the key)."""
    found = read_manifest(path).get("spend")
    return None if found is None else RunSpend.from_dict(found, where=f"{path}, `spend`")
