"""Helpers of the study tests (imported as ``study_helpers``; not a conftest)."""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers import write_catalog

HERE = Path(__file__).parent


def study_config(folder: Path, name: str, *, cache_dir: Path) -> Path:
    """Copy ``tests/study/<name>`` into ``folder`` beside a catalog; return its path."""
    write_catalog(folder / "catalog.csv")
    target = folder / name
    shutil.copy(HERE / name, target)
    text = target.read_text(encoding="utf-8").replace(
        "[retrieval]", f'[retrieval]\ncache_dir = "{cache_dir}"')
    target.write_text(text, encoding="utf-8")
    return target
