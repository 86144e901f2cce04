"""The reading layer (``recaudit._read``): each way a file fails to parse is an
InputError (ConfigError for TOML) whose one-line message names the file, where in it
and the fix."""

from __future__ import annotations

import re

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from recaudit import _read as R
from recaudit.exceptions import ConfigError, InputError


def _msg(template: str, **fields: object) -> str:
    return re.escape(template.format(**fields))


def test_table_failures_name_file_row_and_column(tmp_path) -> None:
    p = tmp_path / "t.csv"
    p.write_bytes(b"a,b\n1,x\n2,caf\xe9\n")
    with pytest.raises(InputError, match=_msg(R.MSG_NOT_UTF8, what="tbl", path=p, row=2,
                                              line=3, column=", column 'b'")):
        R.read_table(p, what="tbl")
    p.write_bytes(b"a,b\n")
    with pytest.raises(InputError, match=_msg(R.MSG_NO_ROWS, what="tbl", path=p)):
        R.read_table(p, what="tbl")
    assert R.read_table(p, what="tbl", allow_empty=True).columns.tolist() == ["a", "b"]
    p.write_bytes(b"  \n\n")
    with pytest.raises(InputError, match=_msg(R.MSG_EMPTY_FILE, what="tbl", path=p)):
        R.read_table(p, what="tbl")
    p.write_bytes(b'a,b\n1,"open\n')
    with pytest.raises(InputError, match=r"tbl .*t\.csv does not parse as CSV \(.*EOF inside"):
        R.read_table(p, what="tbl")
    with pytest.raises(InputError, match="tbl not found: "):
        R.read_table(tmp_path / "nope.csv", what="tbl")


def test_parquet_failures(tmp_path) -> None:
    good = tmp_path / "g.parquet"
    pd.DataFrame({"x": ["a", "b"]}).to_parquet(good)
    bad = tmp_path / "b.parquet"
    bad.write_bytes(good.read_bytes()[:-7])
    with pytest.raises(InputError, match=r"tbl .*b\.parquet is not a readable Parquet file"):
        R.read_table(bad, what="tbl")
    # a writer that does not validate UTF-8 (an encoded surrogate): pyarrow refuses it
    junk = pa.array([b"ok", b"\xed\xa0\x80"], pa.binary()).view(pa.string())
    pq.write_table(pa.table({"x": junk}), bad)
    with pytest.raises(InputError, match="is not a readable Parquet file"):
        R.read_table(bad, what="tbl")
    pd.DataFrame({"x": pd.Series([], dtype=str)}).to_parquet(bad)
    with pytest.raises(InputError, match=_msg(R.MSG_NO_ROWS, what="tbl", path=bad)):
        R.read_table(bad, what="tbl")


def test_jsonl_and_json(tmp_path) -> None:
    p = tmp_path / "c.jsonl"
    p.write_text('{"id": "1"}\n\n{"id": "\\udc80x"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=_msg(R.MSG_SURROGATE, what="cat", path=p, row=2,
                                              column=", key 'id'", escape="\\udc80")):
        R.read_jsonl(p, what="cat")
    p.write_text('{"id": "1"}\n\n[1]\n', encoding="utf-8")
    with pytest.raises(InputError, match=_msg(R.MSG_JSON_LINE, what="cat", path=p, row=2,
                                              line=3, error="a JSON list")):
        R.read_jsonl(p, what="cat")
    p.write_text("\n \n", encoding="utf-8")
    with pytest.raises(InputError, match=_msg(R.MSG_EMPTY_JSONL, what="cat", path=p)):
        R.read_jsonl(p, what="cat")
    j = tmp_path / "r.json"
    j.write_text('{"a": ["\\ud800"]}', encoding="utf-8")
    with pytest.raises(InputError, match=_msg(R.MSG_JSON_SURROGATE, path=j, what="res",
                                              escape="\\ud800", where="key 'a', item 0")):
        R.read_json(j, what="res")
    j.write_bytes(b'{"a": 1')
    with pytest.raises(InputError, match=r"cannot read .*r\.json as JSON \(res\): Expecting"):
        R.read_json(j, what="res")


def test_toml_failures_are_config_errors(tmp_path) -> None:
    p = tmp_path / "c.toml"
    p.write_bytes(b'a = "x"\nb = "\xff"\n')
    with pytest.raises(ConfigError, match=_msg(R.MSG_NOT_UTF8_TEXT, what="config file",
                                               path=p, line=2)):
        R.read_toml(p)
    p.write_text('a = "\\ud800"\n')
    with pytest.raises(ConfigError, match=r"c\.toml is not valid TOML: Escaped character"):
        R.read_toml(p)
    with pytest.raises(ConfigError, match="config file not found"):
        R.read_toml(tmp_path / "none.toml")


def test_messages_are_one_line() -> None:
    assert R.one_line("a\n  b\tc") == "a b c"
    assert len(R.one_line("x" * 1000)) == 160
