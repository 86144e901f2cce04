"""Typed readers for the TOML configs of every command (one mechanism, one message
shape).

The audit config (:mod:`recaudit.audit._config`), the ``[mitigation]`` table
(:mod:`recaudit.audit._mitigation_config`) and the fairness study config
(:mod:`recaudit.fairness.study._config`) read their tables through these functions, so an
unknown key or a bad value is rejected everywhere the same way:

- ``unknown key <name>; allowed keys[ in [table]]: a, b, c``
- ``<name> must be <kind>, got <value>`` (and ``must be one of a, b, got <value>``)
- ``missing key <name>``

where ``<name>`` is the key as the user wrote it: a dotted path (```design.n_perms```,
the audit's style) or a key and the table it sits in (```epochs` in [study] of
study.toml``, the fairness study's style) -- a :class:`Where` holds which.

Hand-written rather than a schema library (pydantic, msgspec, cattrs): those word
their own errors, and the messages here are part of the interface (tests pin them,
docs quote them); the whole mechanism is these few readers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .exceptions import ConfigError

__all__ = [
    "MSG_CHOICE",
    "MSG_MISSING",
    "MSG_UNKNOWN_KEY",
    "MSG_VALUE",
    "REQUIRED",
    "Where",
    "check_keys",
    "choice",
    "get_bool",
    "get_float",
    "get_int",
    "get_path",
    "get_str",
    "get_table",
    "get_typed",
    "int_list",
]

MSG_UNKNOWN_KEY = "unknown key {name}; allowed keys{scope}: {allowed}"
MSG_VALUE = "{name} must be {kind}, got {value!r}"
MSG_CHOICE = "{name} must be one of {choices}, got {value!r}"
MSG_MISSING = "missing key {name}"


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: ``default=REQUIRED``: the key must be present (:data:`MSG_MISSING` otherwise).
REQUIRED: Any = _Required()


@dataclass(frozen=True)
class Where:
    """Where a table sits, for messages.

    Attributes
    ----------
    path : str
        Dotted prefix of the table's keys (``"design"``, ``"models.sim"``; ``""`` at
        the top level): keys are named ```design.n_perms```.
    label : str
        Or a description of the table (``"[study] of study.toml"``): keys are named
        ```epochs` in [study] of study.toml``.
    sort_allowed : bool
        List the allowed keys sorted (else in declaration order).
    """

    path: str = ""
    label: str = ""
    sort_allowed: bool = False

    def name(self, key: str) -> str:
        """How a message names ``key`` of this table."""
        dotted = f"{self.path}.{key}" if self.path else key
        return f"`{dotted}`" + (f" in {self.label}" if self.label else "")

    def child(self, key: str) -> Where:
        """The table ``key`` inside this one (dotted style)."""
        return Where(f"{self.path}.{key}" if self.path else key, self.label,
                     self.sort_allowed)

    @property
    def title(self) -> str:
        """How a message names the table itself."""
        if self.label:
            return self.label
        return f"`{self.path}`" if self.path else "`config`"


def check_keys(table: Any, allowed: Iterable[str], where: Where) -> Mapping[str, Any]:
    """``table`` as a mapping; a :class:`ConfigError` for a non-table or for the first
    key not in ``allowed`` (named, with the allowed ones)."""
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where.title} must be a table, got {type(table).__name__}")
    names = list(allowed)
    for key in table:
        if key not in names:
            scope = f" in [{where.path}]" if where.path and not where.label else ""
            shown = sorted(names) if where.sort_allowed else names
            raise ConfigError(MSG_UNKNOWN_KEY.format(name=where.name(key), scope=scope,
                                                     allowed=", ".join(shown)))
    return table


def _missing(t: Mapping[str, Any], key: str, where: Where, default: Any) -> bool:
    """Whether ``key`` is absent (raising when it is :data:`REQUIRED`)."""
    if key in t:
        return False
    if default is REQUIRED:
        raise ConfigError(MSG_MISSING.format(name=where.name(key)))
    return True


def get_table(data: Mapping[str, Any], key: str, default: Any = REQUIRED) -> Mapping[str, Any]:
    """The sub-table ``[key]`` of ``data`` (``default`` when absent)."""
    value = data.get(key, default)
    if value is REQUIRED:
        raise ConfigError(MSG_MISSING.format(name=f"`[{key}]`"))
    if not isinstance(value, Mapping):
        raise ConfigError(f"`{key}` must be a table (`[{key}]`), got {type(value).__name__}")
    return value


def get_typed(t: Mapping[str, Any], key: str, where: Where, types: type | tuple[type, ...],
              kind: str, default: Any = REQUIRED, *, positive: bool = False) -> Any:
    """``t[key]`` when it is an instance of ``types`` (a bool only when ``types``
    names bool; ``>= 1`` with ``positive``), else :data:`MSG_VALUE` with ``kind``."""
    if _missing(t, key, where, default):
        return default
    value = t[key]
    allowed = types if isinstance(types, tuple) else (types,)
    bad = not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed)
    if not bad and positive and value < 1:
        bad = True
    if bad:
        raise ConfigError(MSG_VALUE.format(name=where.name(key), kind=kind, value=value))
    return value


def get_int(t: Mapping[str, Any], key: str, where: Where, *, default: int | None = None,
            minimum: int | None = None, kind: str | None = None,
            maximum: tuple[int, str] | None = None) -> Any:
    """An integer (``default`` when absent, ``None`` allowed as default).

    Without ``kind``: ``must be an integer`` for a non-integer, ``must be >= minimum``
    for a small one; with ``kind`` (e.g. ``"an integer >= 1"``) one message for both.
    ``maximum = (largest, why)`` refuses a larger value with ``why`` in the message.
    """
    value = t.get(key, default)
    if value is None:
        return None
    name = where.name(key)
    is_int = isinstance(value, int) and not isinstance(value, bool)
    small = is_int and minimum is not None and value < minimum
    if kind is not None and (not is_int or small):
        raise ConfigError(MSG_VALUE.format(name=name, kind=kind, value=value))
    if not is_int:
        raise ConfigError(MSG_VALUE.format(name=name, kind="an integer", value=value))
    if small:
        raise ConfigError(MSG_VALUE.format(name=name, kind=f">= {minimum}", value=value))
    if maximum is not None and value > maximum[0]:
        raise ConfigError(MSG_VALUE.format(name=name, kind=f"<= {maximum[0]:,} ({maximum[1]})",
                                           value=value))
    return value


def get_float(t: Mapping[str, Any], key: str, where: Where, *, default: float | None,
              low: float | None = None, high: float | None = None,
              open_low: bool = False) -> Any:
    """A finite number as a float, within ``[low, high]`` (``(low, high]`` with
    ``open_low``)."""
    value = t.get(key, default)
    if value is None:
        return None
    name = where.name(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(MSG_VALUE.format(name=name, kind="a number", value=value))
    if low is not None and (value <= low if open_low else value < low):
        raise ConfigError(MSG_VALUE.format(name=name, kind=f"{'>' if open_low else '>='} {low}",
                                           value=value))
    if high is not None and value > high:
        raise ConfigError(MSG_VALUE.format(name=name, kind=f"<= {high}", value=value))
    return float(value)


def choice(value: Any, name: str, choices: Iterable[str]) -> Any:
    """``value`` when it is one of ``choices``, else :data:`MSG_CHOICE`."""
    options = tuple(choices)
    if value not in options:
        raise ConfigError(MSG_CHOICE.format(name=name, choices=", ".join(options), value=value))
    return value


def get_str(t: Mapping[str, Any], key: str, where: Where, *, default: str | None = None,
            choices: Iterable[str] | None = None) -> Any:
    """A non-empty string (one of ``choices`` when given)."""
    value = t.get(key, default)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(MSG_VALUE.format(name=where.name(key), kind="a non-empty string",
                                           value=value))
    return value if choices is None else choice(value, where.name(key), choices)


def get_bool(t: Mapping[str, Any], key: str, where: Where, *, default: bool) -> bool:
    """``true`` or ``false``."""
    value = t.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(MSG_VALUE.format(name=where.name(key), kind="true or false",
                                           value=value))
    return value


def get_path(t: Mapping[str, Any], key: str, where: Where, base_dir: Path, *,
             must_exist: bool = True) -> Path | None:
    """A path, relative ones resolved against ``base_dir`` (the config's folder)."""
    value = get_str(t, key, where)
    if value is None:
        return None
    path = Path(value).expanduser()
    path = path if path.is_absolute() else (base_dir / path)
    if must_exist and not path.exists():
        raise ConfigError(f"{where.name(key)}: {path} does not exist; fix the path "
                          "(relative paths start at the config file's folder)")
    return path


def int_list(t: Mapping[str, Any], key: str, where: Where, default: tuple[int, ...], *,
             minimum: int = 1, kind: str = "a list of positive integers") -> tuple[int, ...]:
    """A non-empty list of integers ``>= minimum``."""
    values = t.get(key, list(default))
    if (not isinstance(values, list) or not values
            or any(isinstance(v, bool) or not isinstance(v, int) or v < minimum
                   for v in values)):
        raise ConfigError(MSG_VALUE.format(name=where.name(key), kind=kind, value=values))
    return tuple(values)
