"""Reading result JSON back: the helpers every result type's ``from_dict`` shares.

Two kinds: strict readers of a result's own JSON (``need``, ``number``, ...), and
tolerant key lookup for JSON written by other tools or older versions (``norm_key``,
``find_key``, ``need_key``, ``json_float``: case- and separator-insensitive keys,
aliases), used by the fairness results' ``from_dict`` and the report's loaders.

A result's ``to_dict()`` gives plain JSON values (``nan`` becomes ``null`` once written
with :func:`recaudit._io.to_jsonable`); ``from_dict`` reads either form back. A missing
key or a value of the wrong kind raises :class:`~recaudit.InputError` naming the key
and the type being read (``MSG_MISSING``, ``MSG_NOT_NUMBER``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .exceptions import InputError

__all__ = [
    "MSG_MISSING",
    "MSG_NOT_NUMBER",
    "MSG_NOT_OBJECT",
    "MSG_KEY_WRITTEN_BY",
    "MSG_NOT_A_NUMBER",
    "as_mapping",
    "find_key",
    "json_float",
    "need_key",
    "norm_key",
    "float_array",
    "need",
    "number",
    "optional_number",
    "positions",
    "to_float",
]

MSG_MISSING = "{what}: missing key `{key}` (is this the JSON of its `to_dict()`?)"
MSG_NOT_NUMBER = "{what}: `{key}` must be a number or null, got {value!r}"
MSG_NOT_OBJECT = "{what} must be a JSON object, got {kind}"
MSG_KEY_WRITTEN_BY = "{where}: missing key `{key}`; it is written by {command}"
MSG_NOT_A_NUMBER = "expected a number, got {value!r}"


def norm_key(key: str) -> str:
    """A key compared case- and separator-insensitively: lower case, spaces and dashes
    as underscores (``"Item-Coverage"`` -> ``"item_coverage"``)."""
    return re.sub(r"[\s\-]+", "_", str(key).strip().lower())


def find_key(obj: Mapping[str, Any], *aliases: str) -> Any:
    """``obj[key]`` for the first key whose normalised form is an alias, else ``None``."""
    wanted = {norm_key(a) for a in aliases}
    for key, value in obj.items():
        if norm_key(key) in wanted:
            return value
    return None


def need_key(obj: Mapping[str, Any], where: str, command: str, *aliases: str) -> Any:
    """:func:`find_key`, but a key absent under every alias (not merely ``null``) is an
    :class:`~recaudit.InputError` naming it and the ``command`` that writes it."""
    wanted = {norm_key(a) for a in aliases}
    if not any(norm_key(k) in wanted for k in obj):
        raise InputError(MSG_KEY_WRITTEN_BY.format(where=where, key=aliases[0],
                                                   command=command))
    return find_key(obj, *aliases)


def json_float(value: Any) -> float:
    """A JSON number or ``null`` (-> ``nan``) as a float."""
    if value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise InputError(MSG_NOT_A_NUMBER.format(value=value)) from exc


def as_mapping(obj: Any, what: str) -> Mapping[str, Any]:
    """``obj`` if it is a JSON object (a mapping), else an :class:`InputError`."""
    if not isinstance(obj, Mapping):
        raise InputError(MSG_NOT_OBJECT.format(what=what, kind=type(obj).__name__))
    return obj


def need(obj: Mapping[str, Any], key: str, what: str) -> Any:
    """``obj[key]``; a missing key is an :class:`InputError` naming it."""
    try:
        return obj[key]
    except KeyError:
        raise InputError(MSG_MISSING.format(what=what, key=key)) from None


def number(obj: Mapping[str, Any], key: str, what: str) -> float:
    """``obj[key]`` as a float; ``null`` (an undefined value) reads as ``nan``."""
    return to_float(need(obj, key, what), key, what)


def to_float(value: Any, key: str, what: str) -> float:
    """A JSON number as a float, ``null`` as ``nan``; ``key`` and ``what`` name it in
    the error."""
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise InputError(MSG_NOT_NUMBER.format(what=what, key=key, value=value))
    return float(value)


def optional_number(obj: Mapping[str, Any], key: str, what: str) -> float | None:
    """``obj[key]`` as a float, ``None`` kept (for fields that are ``None`` by meaning)."""
    return None if need(obj, key, what) is None else number(obj, key, what)


def positions(obj: Mapping[str, Any], key: str, what: str) -> tuple[int, ...]:
    """A list of (1-based) positions, ``null`` read as none."""
    value = need(obj, key, what)
    return () if value is None else tuple(int(p) for p in value)


def float_array(values: Sequence[Any] | npt.ArrayLike) -> npt.NDArray[np.float64]:
    """A (nested) JSON list of numbers as a float array, ``null`` as ``nan``."""
    return np.array(_nulls_to_nan(values), dtype=float)


def _nulls_to_nan(values: Any) -> Any:
    if values is None:
        return math.nan
    if isinstance(values, list | tuple):
        return [_nulls_to_nan(v) for v in values]
    return values
