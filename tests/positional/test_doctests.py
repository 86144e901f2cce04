"""The examples in the public docstrings run and print what they say."""

from __future__ import annotations

import doctest

import pytest

from recaudit.positional import _icm, _metrics


@pytest.mark.parametrize("module", [_icm, _metrics])
def test_docstring_examples(module: object) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)  # type: ignore[arg-type]
    assert result.failed == 0 and result.attempted > 0
