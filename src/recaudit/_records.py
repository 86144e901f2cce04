"""Reading result JSON back: the helpers every result type's ``from_dict`` shares.

One number rule for every reader: a number is a JSON number (never ``true``, never a
string such as ``"0.5"`` or ``"inf"``), ``null`` an undefined one (``nan``), a whole
number a JSON number without a fraction (``to_float``, ``to_int``, ``to_bool``,
``to_text``; by key: ``number``, ``integer``, ``text``, ``items`` for a list, ...); a
value of another kind is an :class:`~recaudit.InputError` naming the file or result
(``what``) and the key. Key *names* may be looked up tolerantly for JSON written by
other tools or older versions (``norm_key``, ``find_key``, ``need_key``: case- and
separator-insensitive, aliases), never their values.

A result's ``to_dict()`` gives plain JSON values (``nan`` becomes ``null`` once written
with :func:`recaudit._io.to_jsonable`); ``from_dict`` reads either form back. A missing
key or a value of the wrong kind raises :class:`~recaudit.InputError` naming the key
and the type being read (``MSG_MISSING``, ``MSG_NOT_NUMBER``).
"""

from __future__ import annotations

import math
import re
import reprlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .exceptions import InputError

__all__ = [
    "MSG_MISSING",
    "MSG_NOT_FLAG",
    "MSG_NOT_NUMBER",
    "MSG_NOT_OBJECT",
    "MSG_KEY_WRITTEN_BY",
    "MSG_NOT_INTEGER",
    "MSG_NOT_LIST",
    "MSG_NOT_NUMBERS",
    "MSG_NOT_POSITIONS",
    "as_mapping",
    "integer",
    "items",
    "find_key",
    "need_key",
    "norm_key",
    "float_array",
    "need",
    "number",
    "optional_number",
    "positions",
    "text",
    "to_bool",
    "to_float",
    "to_int",
    "to_text",
]

MSG_MISSING = "{what}: missing key `{key}` (is this the JSON of its `to_dict()`?)"
MSG_NOT_NUMBER = "{what}: `{key}` must be a number or null, got {value!r}"
MSG_NOT_OBJECT = "{what} must be a JSON object, got {kind}"
MSG_KEY_WRITTEN_BY = "{where}: missing key `{key}`; it is written by {command}"
MSG_NOT_INTEGER = "{what}: `{key}` must be a whole number, got {value}"
MSG_NOT_NUMBERS = ("{what}: `{key}` must be a list of numbers (null for undefined), "
                   "got {value}")
MSG_NOT_POSITIONS = "{what}: `{key}` must be a list of whole numbers or null, got {value}"
MSG_NOT_FLAG = "{what}: `{key}` must be true or false, got {value}"
MSG_NOT_LIST = "{what}: `{key}` must be a JSON list, got {kind}"
MSG_NOT_TEXT = "{what}: `{key}` must be text, got {value!r}"

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 40
_REPR.maxlist, _REPR.maxlevel = 4, 2
#: The value quoted in a message: its repr, long ones cut (a message is one short line).
_quote = _REPR.repr


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
    if not _is_number(value):
        raise InputError(MSG_NOT_NUMBER.format(what=what, key=key, value=value))
    return float(value)


def integer(obj: Mapping[str, Any], key: str, what: str) -> int:
    """``obj[key]`` as an int: a whole JSON number (``4`` or ``4.0``), never ``null``."""
    return to_int(need(obj, key, what), key, what)


def to_int(value: Any, key: str, what: str) -> int:
    """A whole JSON number as an int; ``key`` and ``what`` name it in the error."""
    if not _is_number(value) or not math.isfinite(value) or value != int(value):
        raise InputError(MSG_NOT_INTEGER.format(what=what, key=key, value=_quote(value)))
    return int(value)


def text(obj: Mapping[str, Any], key: str, what: str) -> str:
    """``obj[key]`` as a JSON string, never a number or ``null`` read as one."""
    return to_text(need(obj, key, what), key, what)


def to_text(value: Any, key: str, what: str) -> str:
    """A JSON string as a str; ``key`` and ``what`` name anything else in the error."""
    if not isinstance(value, str):
        raise InputError(MSG_NOT_TEXT.format(what=what, key=key, value=value))
    return value


def items(obj: Mapping[str, Any], key: str, what: str,
          read: Callable[[Any, str, str], Any] | None = None) -> tuple[Any, ...]:
    """``obj[key]``, a JSON list, as a tuple of its items, each read by ``read``
    (``to_float``, ``to_int``, ``to_text``; None: as they are, e.g. objects a type's
    ``from_dict`` reads); a missing key or another kind is an :class:`InputError`."""
    value = need(obj, key, what)
    if not isinstance(value, list):
        raise InputError(MSG_NOT_LIST.format(what=what, key=key, kind=type(value).__name__))
    return tuple(value) if read is None else tuple(read(v, key, what) for v in value)


def to_bool(value: Any, key: str, what: str) -> bool:
    """A JSON ``true`` / ``false`` as a bool (never ``1`` or ``"false"`` read as one)."""
    if not isinstance(value, bool | np.bool_):
        raise InputError(MSG_NOT_FLAG.format(what=what, key=key, value=_quote(value)))
    return bool(value)


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(
        value, int | float | np.integer | np.floating)


def optional_number(obj: Mapping[str, Any], key: str, what: str) -> float | None:
    """``obj[key]`` as a float, ``None`` kept (for fields that are ``None`` by meaning)."""
    return None if need(obj, key, what) is None else number(obj, key, what)


def positions(obj: Mapping[str, Any], key: str, what: str) -> tuple[int, ...]:
    """A list of (1-based) positions, ``null`` read as none."""
    value = need(obj, key, what)
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise InputError(MSG_NOT_POSITIONS.format(what=what, key=key, value=_quote(value)))
    return tuple(to_int(p, key, what) for p in value)


def float_array(values: Sequence[Any] | npt.ArrayLike, key: str = "values",
                what: str = "JSON") -> npt.NDArray[np.float64]:
    """A (nested) JSON list of numbers as a float array, ``null`` as ``nan``.

    Anything else -- a string, a ragged nesting -- is an :class:`InputError` naming
    ``key`` and ``what``.
    """
    try:
        return np.array(_nulls_to_nan(values), dtype=float)
    except (TypeError, ValueError):
        raise InputError(MSG_NOT_NUMBERS.format(what=what, key=key,
                                                value=_quote(values))) from None


def _nulls_to_nan(values: Any) -> Any:
    if values is None:
        return math.nan
    if isinstance(values, list | tuple):
        return [_nulls_to_nan(v) for v in values]
    if isinstance(values, np.ndarray) or _is_number(values):
        return values
    raise TypeError(values)
