"""Small simulated evaluation tables shared by the positional tests."""

from __future__ import annotations

import pandas as pd
import pytest

from recaudit.positional import Evaluations, simulate_evaluations


@pytest.fixture(scope="session")
def biased() -> Evaluations:
    return simulate_evaluations(40, k=5, n_perms=20, p_bias=0.3, rng=11)


@pytest.fixture(scope="session")
def unbiased() -> Evaluations:
    return simulate_evaluations(40, k=5, n_perms=20, p_bias=0.0, rng=12)


@pytest.fixture()
def table(biased: Evaluations) -> pd.DataFrame:
    return biased.to_frame()
