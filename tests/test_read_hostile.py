"""Files that parse but mean something else, and the tracebacks issue 34 found: each is
an InputError (exit 2) naming the file and where in it."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from recaudit import _read as R
from recaudit._io import MSG_OUTPUT_IS_DIRECTORY
from recaudit.audit._config import config_identity, load_audit_config
from recaudit.cli import app
from recaudit.exceptions import ConfigError, InputError
from recaudit.positional import simulate_evaluations

runner = CliRunner()


def _msg(template: str, **fields: object) -> str:
    return re.escape(template.format(**fields))


def test_a_nul_byte_is_located_not_cut(tmp_path: Path) -> None:
    """pandas ends a value at a NUL: ``m\\x00x`` would be read as ``m`` and merge."""
    p = tmp_path / "t.csv"
    p.write_bytes(b"model,x\nm,1\nm\x00x,2\n")
    with pytest.raises(InputError, match=_msg(R.MSG_NUL, what="tbl", path=p, row=2, line=3,
                                              column=", column 'model'")):
        R.read_table(p, what="tbl")
    p.write_bytes(b'model,x\n"a,b",1\n"q",\x00\n')  # quoted commas do not shift the column
    with pytest.raises(InputError, match=r"data row 2 \(file line 3\), column 'x'"):
        R.read_table(p, what="tbl")


def test_a_header_written_twice(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("a,b,a\n1,2,3\n")
    with pytest.raises(InputError, match=_msg(R.MSG_DUPLICATE_HEADER, what="tbl", path=p,
                                              column="a", first=1, second=3)):
        R.read_table(p, what="tbl")
    # `x` and `x.1` are two names (pandas would call the second `a` `a.1` too)
    p.write_text("a,a.1\n1,2\n")
    assert R.read_table(p, what="tbl").columns.tolist() == ["a", "a.1"]
    # without a header row there is nothing to check
    p.write_text("1,2,3\n")
    assert R.read_table(p, what="tbl", header=None).shape == (1, 3)
    q = tmp_path / "t.parquet"
    pq.write_table(pa.table([pa.array([1]), pa.array([2])], names=["u", "u"]), q)
    with pytest.raises(InputError, match=_msg(R.MSG_DUPLICATE_HEADER, what="tbl", path=q,
                                              column="u", first=1, second=2)):
        R.read_table(q, what="tbl")


def test_a_json_line_naming_a_key_twice(tmp_path: Path) -> None:
    """The JSON Lines twin of a repeated header (a catalog or query file)."""
    p = tmp_path / "c.jsonl"
    p.write_text('{"id": "a", "title": "t"}\n\n{"id": "b", "title": "u", "id": "c"}\n')
    with pytest.raises(InputError, match=_msg(R.MSG_DUPLICATE_KEY, what="catalog", path=p,
                                              row=2, line=3, key="id")):
        R.read_jsonl(p, what="catalog")
    p.write_text('{"id": "a", "meta": {"x": 1}}\n')
    assert R.read_jsonl(p, what="catalog") == [{"id": "a", "meta": {"x": 1}}]


def test_control_characters_in_ids(tmp_path: Path) -> None:
    frame = pd.DataFrame({"model": ["m", "m\x1bx"], "text": ["ok\tok", "x"]})
    with pytest.raises(InputError, match=r"data row 2, column 'model': the id 'm\\x1bx' "
                                         r"holds the control character '\\x1b' \(escape\)"):
        R.check_ids(frame, ["model", "absent"], path="f.csv", what="tbl")
    R.check_ids(frame, ["absent"], path="f.csv", what="tbl")  # free text is not an id
    R.check_ids(pd.DataFrame({"model": [1, 2]}), ["model"], path="f.csv", what="tbl")


def test_integer_ids_spelt_two_ways() -> None:
    a = pd.DataFrame({"item_id": ["x", "13.0", "12.0"]})
    b = pd.DataFrame({"item_id": ["12", "13", "x"]})
    with pytest.raises(InputError, match=_msg(
            R.MSG_ID_SPELLING, what_a="A", path_a="a.csv", what_b="B", path_b="b.csv",
            column="item_id", value_a="12.0", value_b="12", row_a=3, row_b=1, n=2)):
        R.check_id_spelling([("A", "a.csv", a), ("B", "b.csv", b)], ["item_id"])
    # a file writing 12 both ways shares the spelling `12` with the other: it joins
    both = pd.DataFrame({"item_id": ["12", "12.0"]})
    R.check_id_spelling([("A", "a.csv", both), ("B", "b.csv", b)], ["item_id"])
    # the same spelling, words, or a column one file lacks: nothing to say
    R.check_id_spelling([("A", "a.csv", b), ("B", "b.csv", b.copy())], ["item_id"])
    R.check_id_spelling([("A", "a.csv", a), ("B", "b.csv", b.rename(columns=str.upper))],
                        ["item_id"])


def test_folders_and_fifos_are_said_to_be_what_they_are(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=_msg(R.MSG_IS_DIRECTORY, what="tbl", path=tmp_path)):
        R.read_table(tmp_path, what="tbl")
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=_msg(R.MSG_NOT_REGULAR, what="tbl", path=fifo,
                                              kind="FIFO (named pipe)")):
        R.read_table(fifo, what="tbl")
    with pytest.raises(InputError, match="tbl not found"):
        R.read_json(tmp_path / "absent.json", what="tbl")
    with pytest.raises(ConfigError, match=_msg(R.MSG_IS_DIRECTORY, what="config file",
                                               path=tmp_path)):
        R.read_toml(tmp_path)


def test_documents_nested_too_deep(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    for name, reader in (("d.json", R.read_json), ("d.jsonl", R.read_jsonl)):
        p = tmp_path / name
        p.write_text(deep + "\n")
        with pytest.raises(InputError, match="is nested deeper than its reader follows"):
            reader(p, what="doc")
    p = tmp_path / "d.toml"
    p.write_text("a = " + deep + "\n")
    with pytest.raises(ConfigError, match="is nested deeper than its reader follows"):
        R.read_toml(p)


def test_a_hashed_file_that_cannot_be_read(tmp_path: Path, monkeypatch) -> None:
    """The query file and the prompt template are hashed for the run's identity before
    the reader sees them: the hash goes through the same checks."""
    p = tmp_path / "queries.txt"
    p.write_text("red jeans\n")
    assert len(R.file_sha256(p, what="query file")) == 64
    real_open = Path.open

    def refuse(self: Path, *a, **kw):
        if self == p:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *a, **kw)

    monkeypatch.setattr(Path, "open", refuse)
    with pytest.raises(InputError, match=_msg(R.MSG_UNREADABLE, what="query file", path=p,
                                              error="[Errno 13] Permission denied: "
                                              f"'{p}'")):
        R.file_sha256(p, what="query file")
    monkeypatch.undo()
    with pytest.raises(InputError, match="query file .* is a folder"):
        R.file_sha256(tmp_path, what="query file")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file without read permission")
def test_unreadable_template_is_exit_2(tmp_path: Path) -> None:  # pragma: no cover
    from helpers import write_catalog

    write_catalog(tmp_path / "catalog.csv")
    t = tmp_path / "t.toml"
    t.write_text('system = "s"\nuser = "{candidates} {query}"\n')
    t.chmod(0)
    (tmp_path / "a.toml").write_text(
        '[catalog]\npath = "catalog.csv"\n[catalog.columns]\nid = "id"\ntitle = "title"\n'
        'description = "description"\n[queries]\nn = 2\n[prompt]\ntemplate = "t.toml"\n'
        '[[models]]\nname = "s"\nbackend = "simulated"\n')
    with pytest.raises(InputError, match="cannot read prompt template"):
        config_identity(load_audit_config(tmp_path / "a.toml"))


def _evals(tmp_path: Path) -> Path:
    p = tmp_path / "ev.csv"
    simulate_evaluations(8, k=4, n_perms=4, p_bias=0.3, rng=1).to_frame().to_csv(p, index=False)
    return p


def test_cli_tracebacks_left_by_the_hostile_test(tmp_path: Path) -> None:
    ev = _evals(tmp_path)
    res = runner.invoke(app, ["positional", "analyze", str(ev), "--seed", "-1", "--quiet"])
    assert res.exit_code == 2 and res.output.startswith("error: the seed"), res.output
    res = runner.invoke(app, ["positional", "analyze", str(ev), "--json", "--quiet",
                              "--n-resamples", "19", "--n-boot", "10"])
    (tmp_path / "a.json").write_text(res.stdout)
    folder = tmp_path / "out"
    folder.mkdir()
    res = runner.invoke(app, ["report", str(tmp_path / "a.json"), "-o", str(folder)])
    assert res.exit_code == 2, res.output
    assert res.output.strip() == "error: " + MSG_OUTPUT_IS_DIRECTORY.format(
        what="`--output`", path=folder, example=folder / "report.html")
    res = runner.invoke(app, ["report", str(folder), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 2 and "Traceback" not in res.output
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    res = runner.invoke(app, ["report", str(fifo), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 2 and "FIFO" in res.output, res.output
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    res = runner.invoke(app, ["report", str(deep), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 2 and "nested deeper" in res.output, res.output


def test_per_user_pointing_at_a_folder(tmp_path: Path) -> None:
    users = pd.DataFrame({"user_id": [f"u{i}" for i in range(40)],
                          "gender": ["F" if i % 2 else "M" for i in range(40)]})
    recs = pd.DataFrame([(u, i, i + 1) for u in users.user_id for i in range(5)],
                        columns=["user_id", "item_id", "rank"])
    for name, frame in (("users", users), ("recs", recs), ("test", recs.iloc[::3])):
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    target = tmp_path / "per_user.csv"
    target.mkdir()
    res = runner.invoke(app, ["fairness", "evaluate", "--recs", str(tmp_path / "recs.csv"),
                              "--test", str(tmp_path / "test.csv"), "--users",
                              str(tmp_path / "users.csv"), "--attribute", "gender",
                              "--protected", "F", "--n-boot", "0", "--n-resamples", "0",
                              "--per-user", str(target)])
    assert res.exit_code == 2, res.output
    assert "`--per-user` file" in res.output and "is a folder" in res.output
    assert json.dumps(res.output)  # one printable line


@pytest.mark.parametrize("quoted", [False, True])
def test_a_field_of_megabytes_is_refused_naming_row_and_column(tmp_path, quoted):
    from recaudit._read import read_table
    from recaudit._read_fields import MAX_FIELD_CHARS

    big = ("x" * 999 + "\n") * (MAX_FIELD_CHARS // 1000 + 5) if quoted \
        else "x" * (MAX_FIELD_CHARS + 10)
    path = tmp_path / "recs.csv"
    path.write_text('user_id,item_id\nu1,i1\nu2,"' + big + '"\n' if quoted
                    else "user_id,item_id\nu1,i1\nu2," + big + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"row 2, column 'item_id' holds a field of"):
        read_table(path, what="`--recs` file")


@pytest.mark.parametrize("kind", ["string", "large_string", "dictionary", "binary"])
def test_a_parquet_field_of_megabytes_is_refused_naming_row_and_column(tmp_path, kind):
    """The Parquet reader holds the same bound, checked on the Arrow table before pandas
    turns the strings into Python objects."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from recaudit._read import read_table
    from recaudit._read_fields import MAX_FIELD_CHARS

    values = ["i1", "i2", "x" * (MAX_FIELD_CHARS + 10)]
    column = {"string": pa.array(values), "large_string": pa.array(values, pa.large_string()),
              "dictionary": pa.array(values).dictionary_encode(),
              "binary": pa.array([v.encode() for v in values], pa.binary())}[kind]
    path = tmp_path / "recs.parquet"
    pq.write_table(pa.table({"user_id": ["u1", "u2", "u3"], "item_id": column}), path)
    with pytest.raises(InputError, match=r"row 3, column 'item_id' holds a field of "
                                         r"1,000,010 characters"):
        read_table(path, what="`--recs` file")
    pq.write_table(pa.table({"user_id": ["u1"], "item_id": ["x" * 1000]}), path)
    assert read_table(path, what="`--recs` file").shape == (1, 2)


def test_a_large_file_of_short_fields_is_read(tmp_path):
    from recaudit._read import read_table
    from recaudit._read_fields import MAX_FIELD_CHARS

    rows = MAX_FIELD_CHARS // 10 + 1000
    path = tmp_path / "recs.csv"
    path.write_text("user_id,item_id\n" + "".join(f"u{i},i{i % 97}\n" for i in range(rows)),
                    encoding="utf-8")
    assert path.stat().st_size > MAX_FIELD_CHARS
    assert len(read_table(path, what="`--recs` file")) == rows
