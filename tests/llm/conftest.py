"""Shared fixtures of the testbed tests: the real Myntra catalog (``myntra_csv`` is in
the root conftest and skips with a clear message when the data is absent).

The catalog loads once per test session.
"""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="session")
def myntra(myntra_csv):
    from recaudit.llm import ColumnMap, load_catalog

    return load_catalog(myntra_csv, columns=ColumnMap.myntra())


@pytest.fixture(scope="session")
def myntra_small(myntra):
    """600 random products: enough for retrieval tests, quick to embed (~3 s)."""
    rows = np.random.default_rng(20261129).choice(len(myntra), 600, replace=False)
    return myntra.subset(rows)
