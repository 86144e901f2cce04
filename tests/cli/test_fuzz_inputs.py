"""Malformed files thrown at every command that reads a file (hypothesis).

Every command that reads a file goes through one reading layer (``recaudit._read``),
so every parse failure is an ``InputError``: exit code 2 and ONE short line naming
the file, never a traceback. Each example takes a valid input of one command, breaks
it in a way that makes it certainly invalid (bytes that are not UTF-8 at a drawn
offset, the header alone, an empty file, a Parquet file cut at a drawn offset or
replaced by drawn bytes, a lone surrogate escape in a JSON line or a TOML string, an
unclosed quote, a JSON document cut short) and runs the real command in process.
A second property breaks inputs ARBITRARILY (drawn bytes flipped, inserted or
deleted) for the fast analysis commands: whatever the outcome, no traceback.

Counted across the examples: 0 tracebacks (every one asserted).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from helpers import fairness_tables, write_catalog
from recaudit.cli import app
from recaudit.positional import simulate_evaluations

runner = CliRunner()

#: Longest error line accepted as "short" (the paths of pytest's tmp folders are long).
MAX_MESSAGE = 600
BAD_UTF8 = (b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xe2\x82", b"\xc0\xaf", b"\x80",
            b"\xf8\x88\x80\x80\x80")
STATS = ["--n-resamples", "19", "--n-boot", "10", "--quiet"]


def _evaluations() -> pd.DataFrame:
    sim = simulate_evaluations(12, k=4, n_perms=6, p_bias=0.3, rng=1).to_frame()
    n = len(sim)
    rng = np.random.default_rng(2)
    probs = rng.dirichlet(np.ones(4), size=n)
    return sim.assign(model="m", k=4, temperature=0.0, condition="permutation",
                      perm_index=sim.groupby("query_id").cumcount(), sample_index=0,
                      choice_probs=[json.dumps(p.tolist()) for p in probs],
                      raw_response='{"article_number": 1}', discard_reason=None)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Valid inputs of every command, one folder."""
    root = tmp_path_factory.mktemp("fuzz-base")
    ev = _evaluations()
    ev.to_csv(root / "evals.csv", index=False)
    ev.to_parquet(root / "evals.parquet", index=False)
    ranks = ev[["query_id", "order"]].assign(ranking=["1 2 3 4"] * len(ev))
    ranks.to_csv(root / "rankings.csv", index=False)
    recs, test, users = fairness_tables()
    recs.to_csv(root / "recs.csv", index=False)
    test.to_csv(root / "test.csv", index=False)
    users.to_csv(root / "users.csv", index=False)
    users.to_parquet(root / "users.parquet", index=False)
    write_catalog(root / "catalog.csv")
    cat = pd.read_csv(root / "catalog.csv", dtype=str)
    cat.to_parquet(root / "catalog.parquet", index=False)
    with open(root / "catalog.jsonl", "w", encoding="utf-8") as f:
        for rec in cat.to_dict(orient="records"):
            f.write(json.dumps(rec) + "\n")
    (root / "queries.csv").write_text("query_id,text\nq1,red jeans\nq2,blue kurta\n")
    (root / "queries.jsonl").write_text('{"query_id": "q1", "text": "red jeans"}\n'
                                        '{"query_id": "q2", "text": "blue kurta"}\n')
    (root / "template.toml").write_text(
        'system = "You are a shop assistant."\n'
        'user = "Articles:\\n{candidates}\\nRequest: {query}"\n')
    (root / "analysis.json").write_text(json.dumps(_analysis_json(root / "evals.csv")))
    inter = ["user_id,item_id"] + [f"{u},{i}" for u in range(40) for i in range(u % 5, u % 5 + 8)]
    (root / "inter.csv").write_text("\n".join(inter) + "\n")
    fusers = ["user_id,gender"] + [f"{u},{'F' if u % 3 == 0 else 'M'}" for u in range(40)]
    (root / "fusers.csv").write_text("\n".join(fusers) + "\n")
    return root


def _analysis_json(evals: Path) -> object:
    res = runner.invoke(app, ["positional", "analyze", str(evals), "--json", *STATS])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def audit_toml(folder: Path, *, catalog: str = "catalog.csv", queries: str = "n = 3",
               template: str = "") -> str:
    prompt = f'[prompt]\ntemplate = "{template}"\n' if template else ""
    return f"""seed = 1
[catalog]
path = "{catalog}"
[catalog.columns]
id = "id"
title = "title"
description = "description"

[queries]
{queries}
[retrieval]
k = [4]
{prompt}
[design]
n_perms = 2

[[models]]
name = "sim"
backend = "simulated"
"""


def fairness_toml(folder: Path) -> str:
    # relative paths (resolved against the config's folder): the file's bytes, and so
    # the examples hypothesis draws from them, do not depend on the folder's name
    return """[study]
output = "frun"
n_boot = 5
n_resamples = 5
[[datasets]]
name = "toy"
path = "inter.csv"
users = "fusers.csv"
format = "table"
attribute = "gender"
protected = "F"
"""


@dataclass(frozen=True)
class Target:
    """One command and the input file it reads that the example breaks."""

    name: str
    file: str  # the file broken, in the example's folder
    kind: str  # text | table | parquet | jsonl | toml | json
    command: Callable[[Path], list[str]]
    prepare: Callable[[Path], None] = lambda folder: None
    #: breaks that leave this input valid (e.g. a companion table without rows)
    valid_breaks: tuple[str, ...] = ()


def _audit(folder: Path, **kw: str) -> None:
    (folder / "audit.toml").write_text(audit_toml(folder, **kw))


def _fairness(folder: Path) -> None:
    (folder / "study.toml").write_text(fairness_toml(folder))


def _fe(folder: Path, users: str = "users.csv") -> list[str]:
    return ["fairness", "evaluate", "--recs", str(folder / "recs.csv"), "--test",
            str(folder / "test.csv"), "--users", str(folder / users), "--attribute",
            "gender", "--protected", "F", "--n-boot", "0", "--n-resamples", "0"]


def _run(folder: Path) -> list[str]:
    return ["positional", "run", str(folder / "audit.toml"), "--out", str(folder / "run"),
            "--quiet", "--no-analyze"]


def _study_dir(folder: Path) -> None:
    (folder / "rundir").mkdir(exist_ok=True)
    shutil.copy(folder / "evals.parquet", folder / "rundir" / "evaluations.parquet")
    (folder / "rundir" / "config.resolved.json").write_text(json.dumps({"seed": 4}))


def _report_dir(folder: Path) -> None:
    """A positional run folder as `positional run` leaves it (for `recaudit report`)."""
    _study_dir(folder)
    shutil.copy(folder / "analysis.json", folder / "rundir" / "analysis.json")


TARGETS = [
    Target("analyze csv", "evals.csv", "table",
           lambda f: ["positional", "analyze", str(f / "evals.csv"), *STATS]),
    Target("analyze parquet", "evals.parquet", "parquet",
           lambda f: ["positional", "analyze", str(f / "evals.parquet"), *STATS]),
    Target("analyze --exact csv", "evals.csv", "table",
           lambda f: ["positional", "analyze", str(f / "evals.csv"), "--exact",
                      "--n-boot", "10", "--quiet"]),
    Target("analyze --exact parquet", "evals.parquet", "parquet",
           lambda f: ["positional", "analyze", str(f / "evals.parquet"), "--exact",
                      "--n-boot", "10", "--quiet"]),
    Target("topn rankings", "rankings.csv", "table",
           lambda f: ["positional", "topn", str(f / "rankings.csv"), "--n-resamples", "19",
                      "--n-boot", "10"]),
    Target("topn --from-choice-probs", "evals.parquet", "parquet",
           lambda f: ["positional", "topn", str(f / "evals.parquet"), "--from-choice-probs",
                      "--n-resamples", "19", "--n-boot", "10"]),
    Target("study --analyze-only", "rundir/evaluations.parquet", "parquet",
           lambda f: ["positional", "study", "--analyze-only", str(f / "rundir"),
                      "--n-boot", "10", "--n-resamples", "19", "--quiet"], _study_dir),
    Target("fairness evaluate --recs", "recs.csv", "table", _fe),
    Target("fairness evaluate --test", "test.csv", "table", _fe),
    Target("fairness evaluate --users", "users.csv", "table", _fe),
    Target("fairness evaluate --users parquet", "users.parquet", "parquet",
           lambda f: _fe(f, "users.parquet")),
    Target("run: config", "audit.toml", "toml", _run, _audit),
    Target("run: csv catalog", "catalog.csv", "table", _run, _audit),
    Target("run: jsonl catalog", "catalog.jsonl", "jsonl", _run,
           lambda f: _audit(f, catalog="catalog.jsonl")),
    Target("run: parquet catalog", "catalog.parquet", "parquet", _run,
           lambda f: _audit(f, catalog="catalog.parquet")),
    Target("run: csv queries", "queries.csv", "table", _run,
           lambda f: _audit(f, queries='file = "queries.csv"')),
    Target("run: jsonl queries", "queries.jsonl", "jsonl", _run,
           lambda f: _audit(f, queries='file = "queries.jsonl"')),
    Target("run: prompt template", "template.toml", "toml", _run,
           lambda f: _audit(f, template="template.toml")),
    Target("mitigate: config", "audit.toml", "toml",
           lambda f: ["positional", "mitigate", str(f / "audit.toml"), "--out",
                      str(f / "mit"), "--quiet"], _audit),
    Target("fairness run: config", "study.toml", "toml",
           lambda f: ["fairness", "run", str(f / "study.toml"), "--quiet"], _fairness),
    Target("fairness run: interactions", "inter.csv", "table",
           lambda f: ["fairness", "run", str(f / "study.toml"), "--quiet"], _fairness),
    Target("fairness run: users", "fusers.csv", "table",
           lambda f: ["fairness", "run", str(f / "study.toml"), "--quiet"], _fairness),
    Target("report: analyze --json", "analysis.json", "json",
           lambda f: ["report", str(f / "analysis.json"), "-o", str(f / "r.html")]),
    Target("report: run folder's analysis.json", "rundir/analysis.json", "json",
           lambda f: ["report", str(f / "rundir"), "-o", str(f / "r.html")], _report_dir),
    Target("report: run folder's evaluations", "rundir/evaluations.parquet", "parquet",
           lambda f: ["report", str(f / "rundir"), "-o", str(f / "r.html")], _report_dir,
           valid_breaks=("zero_rows",)),  # the report's evaluations are a companion
    Target("report: run folder's config", "rundir/config.resolved.json", "json",
           lambda f: ["report", str(f / "rundir"), "-o", str(f / "r.html")], _report_dir),
    Target("study --analyze-only: config", "rundir/config.resolved.json", "json",
           lambda f: ["positional", "study", "--analyze-only", str(f / "rundir"),
                      "--n-boot", "10", "--n-resamples", "19", "--quiet"], _study_dir),
]

#: Mutations that make a file of each kind certainly unreadable.
BREAKS = {
    "table": ("bad_utf8", "header_only", "empty", "unclosed_quote"),
    "text": ("bad_utf8", "empty"),
    "parquet": ("truncate", "garbage", "empty", "zero_rows"),
    "jsonl": ("bad_utf8", "surrogate", "not_object", "empty"),
    "toml": ("bad_utf8", "surrogate", "unclosed_string"),
    "json": ("bad_utf8", "truncate_json", "surrogate_json"),
}


def _break(data: bytes, how: str, draw: st.DataObject, path: Path) -> bytes:
    """``data`` (a valid file) made certainly invalid by ``how``."""
    if how == "bad_utf8":
        pos = draw.draw(st.integers(0, len(data)), label="offset")
        return data[:pos] + draw.draw(st.sampled_from(BAD_UTF8), label="bytes") + data[pos:]
    if how == "header_only":
        return data.split(b"\n", 1)[0] + b"\n"
    if how == "empty":
        return draw.draw(st.sampled_from([b"", b"\n", b"   \n\n"]), label="empty")
    if how == "unclosed_quote":
        return data.rstrip(b"\n") + b'\n"an unclosed quote,' + b"x" * 3
    if how == "truncate":
        return data[: draw.draw(st.integers(0, len(data) - 1), label="cut")]
    if how == "garbage":
        junk = draw.draw(st.binary(min_size=0, max_size=300), label="garbage")
        return draw.draw(st.sampled_from([b"", b"PAR1"]), label="magic") + junk + b"PAR1"
    if how == "zero_rows":
        frame = pd.read_parquet(path)
        frame.iloc[:0].to_parquet(path, index=False)
        return path.read_bytes()
    if how == "surrogate":
        code = draw.draw(st.integers(0xD800, 0xDFFF), label="surrogate")
        escape = f"\\u{code:04x}"
        text = data.decode()
        quotes = [i for i, c in enumerate(text) if c == '"']
        # inside a string value: just after an opening quote of a value
        starts = quotes[0::2] if path.suffix == ".toml" else quotes[2::4]
        pos = draw.draw(st.sampled_from(starts), label="string") + 1
        return (text[:pos] + escape + text[pos:]).encode()
    if how == "not_object":
        return data + draw.draw(st.sampled_from([b"[1, 2]\n", b"42\n", b"{oops\n"]),
                                label="line")
    if how == "unclosed_string":
        return data + b'\nbroken = "no end\n'
    if how == "truncate_json":
        body = data.rstrip()
        return body[: draw.draw(st.integers(0, len(body) - 1), label="cut")]
    if how == "surrogate_json":
        doc = json.loads(data)
        return json.dumps([doc, "\ud800"]).encode()  # json.dumps writes the \ud800 escape
    raise AssertionError(how)


def _check_clean_error(result, target: Target, how: str) -> None:
    where = f"{target.name} / {how}"
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        where, repr(result.exception), result.output)
    assert "Traceback" not in result.output, (where, result.output)
    assert result.exit_code == 2, (where, result.exit_code, result.output)
    lines = [ln for ln in result.output.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, (where, result.output)
    assert lines[0].startswith("error: "), (where, result.output)
    assert len(lines[0]) <= MAX_MESSAGE, (where, len(lines[0]), result.output)
    assert Path(target.file).name in lines[0], (where, "the file is not named", lines[0])


def _folder(base: Path, tmp_path_factory: pytest.TempPathFactory, target: Target) -> Path:
    folder = tmp_path_factory.mktemp("fuzz")
    for p in base.iterdir():
        if p.is_file():
            shutil.copy(p, folder / p.name)
    target.prepare(folder)
    return folder


PAIRS = [(t, how) for t in TARGETS for how in BREAKS[t.kind] if how not in t.valid_breaks]


@pytest.mark.parametrize(("target", "how"), PAIRS,
                         ids=[f"{t.name} / {how}" for t, how in PAIRS])
@settings(max_examples=3, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_malformed_files_exit_2_with_one_line(base: Path, tmp_path_factory, target: Target,
                                              how: str, data) -> None:
    """Every break of every command's input (hypothesis draws where and what)."""
    folder = _folder(base, tmp_path_factory, target)
    path = folder / target.file
    path.write_bytes(_break(path.read_bytes(), how, data, path))
    result = runner.invoke(app, target.command(folder), env={"COLUMNS": "10000"})
    _check_clean_error(result, target, how)
    assert not (folder / "run").exists() or not any((folder / "run").iterdir())


FAST = {"analyze csv", "analyze parquet", "analyze --exact csv", "analyze --exact parquet",
        "topn rankings", "topn --from-choice-probs", "study --analyze-only",
        "fairness evaluate --recs", "fairness evaluate --users parquet",
        "report: analyze --json", "report: run folder's evaluations"}


@pytest.mark.parametrize("target", [t for t in TARGETS if t.name in FAST], ids=lambda t: t.name)
def test_the_unbroken_inputs_work(base: Path, tmp_path_factory, target: Target) -> None:
    """The examples break files that work: the errors above come from the damage."""
    folder = _folder(base, tmp_path_factory, target)
    result = runner.invoke(app, target.command(folder))
    assert result.exit_code == 0, (target.name, result.output)


#: Fast commands whose input is broken arbitrarily (the outcome may be a result).
ANY_TARGETS = [t for t in TARGETS if t.name in {
    "analyze csv", "analyze parquet", "analyze --exact csv", "topn rankings",
    "fairness evaluate --recs", "fairness evaluate --users", "report: analyze --json"}]


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_arbitrary_damage_never_gives_a_traceback(base: Path, tmp_path_factory, data) -> None:
    target = data.draw(st.sampled_from(ANY_TARGETS), label="target")
    folder = _folder(base, tmp_path_factory, target)
    path = folder / target.file
    raw = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        pos = data.draw(st.integers(0, max(0, len(raw) - 1)), label="pos")
        op = data.draw(st.sampled_from(["flip", "insert", "delete"]), label="op")
        byte = data.draw(st.integers(0, 255), label="byte")
        if op == "flip" and raw:
            raw[pos] = byte
        elif op == "insert":
            raw.insert(pos, byte)
        elif raw:
            del raw[pos]
    path.write_bytes(bytes(raw))
    result = runner.invoke(app, target.command(folder), env={"COLUMNS": "10000"})
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        target.name, repr(result.exception), result.output)
    assert "Traceback" not in result.output, (target.name, result.output)
    assert result.exit_code in (0, 1, 2), (target.name, result.exit_code, result.output)
    if result.exit_code == 2:
        lines = [ln for ln in result.stderr.strip().splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), (target.name, result.output)
