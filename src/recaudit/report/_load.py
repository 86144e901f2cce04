"""Recognise a report source and load it: positional (:mod:`._load_positional`, the
library's own result types) or fairness (:mod:`._load_fairness`).

A missing key raises :class:`~recaudit.InputError` naming the key, where it was
expected and the command that produces it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from .._read import check_file
from .._records import find_key
from ..exceptions import InputError
from ._files import first_file, read_json_file
from ._load_fairness import FAIRNESS_CMD, FairnessRun, load_fairness
from ._load_positional import POSITIONAL_CMD, PositionalRun, load_positional

__all__ = ["FairnessRun", "Kind", "PositionalRun", "load"]

Kind = Literal["positional", "fairness"]

UNRECOGNISED = (
    "cannot tell what {what} is: expected a positional run folder (evaluations.parquet "
    "and analysis.json), the JSON of " + POSITIONAL_CMD + ", a fairness run folder "
    "(results.json) or the JSON of " + FAIRNESS_CMD
)


def _detect(obj: Any) -> Kind | None:
    items: Iterable[Any] = obj if isinstance(obj, list) else [obj]
    for item in items:
        if not isinstance(item, Mapping):
            return None
        if find_key(item, "pob_unbp", "pob_icm", "unbp", "icm") is not None:
            return "positional"
        if isinstance(find_key(item, "groups", "results"), list):
            return _detect(find_key(item, "groups", "results"))
        if find_key(item, "groups") is not None and find_key(item, "ib", "nrd") is not None:
            return "fairness"
        if isinstance(item.get("datasets"), Mapping):
            return "fairness"
        if all(isinstance(v, Mapping) and find_key(v, "groups") is not None for v in item.values()):
            return "fairness" if item else None
        return None
    return None


def load(
    source: Path | str | Mapping[str, Any] | list, *, kind: Kind | None = None
) -> PositionalRun | FairnessRun:
    """Recognise and load a report source.

    Parameters
    ----------
    source : Path or dict or list
        A positional run folder, a fairness run folder, a JSON file, or the parsed
        JSON itself.
    kind : {"positional", "fairness"}, optional
        Skip recognition and read ``source`` as this kind.

    Returns
    -------
    PositionalRun or FairnessRun

    Raises
    ------
    InputError
        Unrecognised source, missing file or key (the message names both the key
        and the command that writes it).
    """
    if kind not in (None, "positional", "fairness"):
        raise InputError(f"`kind` must be 'positional', 'fairness' or None, got {kind!r}")
    folder: Path | None = None
    if isinstance(source, str | Path):
        path = Path(source)
        if path.is_dir():
            folder = path
            analysis = first_file(path, "analysis.json")
            results = first_file(path, "results.json")
            if kind == "fairness" or (kind is None and results is not None and analysis is None):
                if results is None:
                    raise InputError(f"{path}: no results.json; it is written by {FAIRNESS_CMD}")
                obj, kind = read_json_file(results), "fairness"
            elif analysis is not None:
                obj, kind = read_json_file(analysis), "positional"
            elif kind == "positional" or first_file(path, "evaluations.parquet", "evaluations.csv"):
                raise InputError(f"{path}: no analysis.json; write it with {POSITIONAL_CMD}")
            else:
                raise InputError(UNRECOGNISED.format(what=f"folder {path}"))
        else:
            check_file(path, "report source", missing="{path}: no such file or folder")
            obj = read_json_file(path)
        name = str(path)
    else:
        obj, name = source, "<in-memory result>"
    kind = kind or _detect(obj)
    if kind == "positional":
        return load_positional(obj, source=name, folder=folder)
    if kind == "fairness":
        return load_fairness(obj, source=name, folder=folder)
    raise InputError(UNRECOGNISED.format(what=name))
