"""Reading the TOML config files of every command (one place for the I/O errors)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from .exceptions import ConfigError

__all__ = ["read_toml"]


def read_toml(path: Path) -> dict[str, Any]:
    """Parse the TOML file at ``path``; a missing or malformed file is a ConfigError."""
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc
