"""Shared fixtures of the fairness data/model tests."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
ML100K = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "ml-100k"


@pytest.fixture(scope="session")
def ml100k_path() -> Path:
    """The real ML-100K atomic files (skip when the shared data folder is absent)."""
    path = ML100K.resolve()
    if not (path / "ml-100k.inter").is_file():
        pytest.skip(f"ML-100K not found at {path} (shared data folder absent)")
    return path
