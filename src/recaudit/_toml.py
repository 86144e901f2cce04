"""Reading the TOML config files of every command (one place for the I/O errors).

A thin name for :func:`recaudit._read.read_toml`, the reading layer's TOML reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._read import read_toml as _read_toml

__all__ = ["read_toml"]


def read_toml(path: Path) -> dict[str, Any]:
    """Parse the TOML file at ``path``; a missing, undecodable or malformed file is a
    :class:`~recaudit.exceptions.ConfigError` naming it."""
    return _read_toml(path, what="config file")
