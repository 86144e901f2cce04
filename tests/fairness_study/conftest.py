"""Shared fixtures of the fairness data/model tests (``ml100k_path`` is in the root
conftest)."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
