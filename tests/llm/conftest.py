"""Shared fixtures of the testbed tests: the real Myntra catalog and the real models.

Models load once per test session; tests that need data or models skip with a clear
message when they are absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

MYNTRA_CSV = Path(
    os.environ.get("RECAUDIT_MYNTRA_CSV", "/work/shared/data/myntra/myntra_products_catalog.csv")
)


@pytest.fixture(scope="session")
def myntra():
    from recaudit.llm import ColumnMap, load_catalog

    if not MYNTRA_CSV.is_file():
        pytest.skip(f"Myntra catalog not found at {MYNTRA_CSV} (set RECAUDIT_MYNTRA_CSV)")
    return load_catalog(MYNTRA_CSV, columns=ColumnMap.myntra())


@pytest.fixture(scope="session")
def myntra_small(myntra):
    """600 random products: enough for retrieval tests, quick to embed (~3 s)."""
    rows = np.random.default_rng(20261129).choice(len(myntra), 600, replace=False)
    return myntra.subset(rows)
