"""The shared file helpers: atomic writes and strict JSON values."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from recaudit._io import plain, to_jsonable, write_atomic, write_text_atomic


def test_write_atomic_leaves_the_old_file_when_the_writer_fails(tmp_path):
    target = tmp_path / "a.json"
    write_text_atomic(target, "old")

    def broken(path):
        path.write_text("half", encoding="utf-8")
        raise OSError("disk full")

    with pytest.raises(OSError):
        write_atomic(target, broken)
    assert target.read_text(encoding="utf-8") == "old"
    write_text_atomic(target, "new")
    assert target.read_text(encoding="utf-8") == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]  # no temporary left


def test_to_jsonable_is_strict_json():
    value = {1: np.float64("nan"), "b": [np.int64(3), (math.inf, pd.NA)],
             "c": np.array([1.5, 2.0])}
    out = to_jsonable(value)
    assert out == {"1": None, "b": [3, [None, None]], "c": [1.5, 2.0]}
    json.dumps(out, allow_nan=False)


def test_write_bytes_atomic_round_trip(tmp_path):
    from recaudit._io import write_bytes_atomic

    target = tmp_path / "a.bin"
    write_bytes_atomic(target, b"\x00\x01")
    write_bytes_atomic(target, b"\x02")
    assert target.read_bytes() == b"\x02"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin"]


def test_plain_gives_python_scalars_for_messages():
    assert repr(plain(np.int64(3))) == "3" and repr(plain(np.float64(1.5))) == "1.5"
    assert repr(plain(np.str_("F"))) == "'F'" and type(plain(np.bool_(True))) is bool
    assert plain([np.int64(1), (np.int32(2), "a")]) == [1, (2, "a")]
    assert repr(plain([np.int64(1), (np.int32(2), "a")])) == "[1, (2, 'a')]"
    assert plain("x") == "x" and plain(None) is None
