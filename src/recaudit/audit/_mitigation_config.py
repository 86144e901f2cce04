"""The ``[mitigation]`` table of ``recaudit positional mitigate``'s config.

The config is an audit config (docs/runner.md) plus::

    [mitigation]
    methods = ["ensemble", "calibration", "canonical"]   # any subset, in this order
    n_boot = 2000                 # bootstrap resamples of every CI
    [mitigation.ensemble]
    m = 3                         # orders per evaluation
    vote = "majority"             # or "borda" (needs choice probabilities)
    [mitigation.calibration]
    queries = 10                  # calibration queries, disjoint from the audited ones
    orders = 5                    # random orders per calibration query
    decision = "argmax"           # or "sample"
    [mitigation.canonical]
    by = "retrieval"              # or "item_id"

Read with the shared typed readers (:mod:`recaudit._config_schema`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._config_schema import Where, check_keys, choice, get_int
from .._stats import DEFAULT_N_BOOT
from .._toml import read_toml
from ..exceptions import ConfigError
from ._config import AuditConfig, parse_audit_config

__all__ = ["METHODS", "MitigationConfig", "load_mitigation_config", "parse_mitigation"]

METHODS = ("ensemble", "calibration", "canonical")
_SECTION_KEYS: dict[str, tuple[str, ...]] = {
    "ensemble": ("m", "vote"),
    "calibration": ("queries", "orders", "decision"),
    "canonical": ("by",),
}
_WHERE = Where("mitigation")


@dataclass(frozen=True)
class MitigationConfig:
    """The ``[mitigation]`` table (module docstring)."""

    methods: tuple[str, ...] = METHODS
    ensemble_m: int = 3
    ensemble_vote: str = "majority"
    calibration_queries: int = 10
    calibration_orders: int = 5
    calibration_decision: str = "argmax"
    canonical_by: str = "retrieval"
    n_boot: int = DEFAULT_N_BOOT

    def suffix(self, method: str) -> str:
        """What an arm appends to every model name."""
        if method == "none":
            return ""
        if method == "ensemble":
            return f"+ensemble(m={self.ensemble_m},{self.ensemble_vote})"
        if method == "calibration":
            return (f"+calibrated({self.calibration_decision},q={self.calibration_queries},"
                    f"o={self.calibration_orders})")
        return f"+canonical({self.canonical_by})"


def load_mitigation_config(path: str | Path) -> tuple[AuditConfig, MitigationConfig]:
    """Read an audit config with a ``[mitigation]`` table.

    Raises
    ------
    ConfigError
        Unknown keys (named, with the allowed ones), bad values, or a bad audit config.
    """
    path = Path(path)
    data = dict(read_toml(path))
    table = data.pop("mitigation", {})
    audit = parse_audit_config(data, base_dir=path.resolve().parent)
    return audit, parse_mitigation(table)


def _methods(t: Mapping[str, Any]) -> tuple[str, ...]:
    methods = t.get("methods", list(METHODS))
    if (not isinstance(methods, list) or not methods or any(m not in METHODS for m in methods)
            or len(set(methods)) != len(methods)):
        raise ConfigError(f"`mitigation.methods` must be a non-empty list of distinct "
                          f"values from {', '.join(METHODS)}; got {methods!r}")
    return tuple(m for m in METHODS if m in methods)


def _section(t: Mapping[str, Any], name: str) -> tuple[Mapping[str, Any], Where]:
    where = _WHERE.child(name)
    value = t.get(name, {})
    if not isinstance(value, Mapping):
        raise ConfigError(f"`{where.path}` must be a table")
    return check_keys(value, _SECTION_KEYS[name], where), where


def _count(t: Mapping[str, Any], key: str, where: Where, default: int) -> int:
    return int(get_int(t, key, where, default=default, minimum=1, kind="an integer >= 1"))


def _option(t: Mapping[str, Any], key: str, where: Where, default: str,
            choices: tuple[str, ...]) -> str:
    return str(choice(t.get(key, default), where.name(key), choices))


def parse_mitigation(t: Any) -> MitigationConfig:
    """Validate a ``[mitigation]`` mapping."""
    if not isinstance(t, Mapping):
        raise ConfigError("`mitigation` must be a table (`[mitigation]`)")
    check_keys(t, ("methods", "n_boot", *METHODS), _WHERE)
    methods = _methods(t)
    (ens, ew), (cal, cw), (can, nw) = (_section(t, n) for n in _SECTION_KEYS)
    return MitigationConfig(
        methods=methods,
        ensemble_m=_count(ens, "m", ew, 3),
        ensemble_vote=_option(ens, "vote", ew, "majority", ("majority", "borda")),
        calibration_queries=_count(cal, "queries", cw, 10),
        calibration_orders=_count(cal, "orders", cw, 5),
        calibration_decision=_option(cal, "decision", cw, "argmax", ("argmax", "sample")),
        canonical_by=_option(can, "by", nw, "retrieval", ("retrieval", "item_id")),
        n_boot=_count(t, "n_boot", _WHERE, DEFAULT_N_BOOT),
    )
