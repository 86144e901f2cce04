"""RD, NRD, IB: formulas, ranges, sign, undefined cases."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from recaudit import InputError
from recaudit.fairness import _interbias as mod
from recaudit.fairness import (
    inter_bias,
    normalized_relative_difference,
    relative_difference,
)

unit = st.floats(0.0, 1.0)


def test_formulas() -> None:
    rd = relative_difference([0.3], [0.1])
    assert rd[0] == pytest.approx(0.5)
    assert normalized_relative_difference(rd)[0] == pytest.approx(0.75)
    assert inter_bias([0.75], [0.2])[0] == pytest.approx(np.sqrt(0.75 * 0.8))


def test_negative_when_protected_is_favoured() -> None:
    assert relative_difference([0.1], [0.3])[0] < 0


def test_undefined_when_both_zero() -> None:
    rd = relative_difference([0.0, 0.2], [0.0, 0.0])
    assert np.isnan(rd[0]) and rd[1] == 1.0
    assert np.isnan(normalized_relative_difference(rd)[0])
    assert np.isnan(inter_bias(normalized_relative_difference(rd), 0.5)[0])
    assert "undefined" in mod.UNDEFINED_RD_REASON


@given(unit, unit, unit)
def test_properties(ug: float, pg: float, ic: float) -> None:
    rd = relative_difference([ug], [pg])[0]
    swapped = relative_difference([pg], [ug])[0]
    if ug + pg == 0:
        assert np.isnan(rd) and np.isnan(swapped)
        return
    assert -1 <= rd <= 1
    assert swapped == pytest.approx(-rd)  # RD flips sign when the groups swap
    nrd = normalized_relative_difference([rd])[0]
    assert 0 <= nrd <= 1
    assert 0 <= inter_bias([nrd], [ic])[0] <= 1


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: relative_difference([-0.1], [0.2]), mod.GROUP_MEANS_MSG),
        (lambda: relative_difference([0.1, 0.2], [0.2]), mod.SHAPE_MSG),
        (lambda: normalized_relative_difference([1.5]), mod.RD_MSG),
        (lambda: inter_bias([1.2], [0.1]), mod.NRD_MSG),
        (lambda: inter_bias([0.5], [1.1]), mod.COVERAGE_MSG),
    ],
)
def test_bad_input(call: object, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message.split("{")[0])):
        call()  # type: ignore[operator]
