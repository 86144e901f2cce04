"""Files that parse but mean something else, and numbers nothing can do (hypothesis).

Issue 34: every command that reads a file or a number is thrown generated hostile
inputs and must answer with exit code 2 and ONE line naming the field (the column, the
option or the config key) -- never a traceback, a silent merge, or an allocation that
takes the machine down. Each property runs the real command in process
(``typer.testing.CliRunner``) with small statistics, so an example takes well under a
second:

- a column header written twice (CSV and Parquet, every table reader);
- an id holding a control character (NUL included: pandas would cut ``m\\x00x`` to
  ``m``);
- integer ids written ``12.0`` in one file and ``12`` in another (fairness evaluate);
- choice-probability vectors with NaN, a negative entry or a sum other than 1 (topn
  ``--from-choice-probs``, the check ``analyze --exact`` makes);
- every numeric option and config key across its whole range: below its minimum, and
  beyond what this machine can hold (``RECAUDIT_MEMORY_BYTES`` fixes "this machine" at
  1 GiB here, so the bounds are the same everywhere), with the peak memory of the test
  process checked to stay bounded;
- generated tables (drawn column names and cells): any outcome but a traceback.
"""

from __future__ import annotations

import csv
import json
import math
import re
import resource
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from helpers import fairness_tables, write_catalog
from recaudit.cli import app
from recaudit.positional import simulate_evaluations

runner = CliRunner()
MEMORY = 2**30  # "this machine" of the bounds, in every test of this module
ENV = {"COLUMNS": "10000", "RECAUDIT_MEMORY_BYTES": str(MEMORY)}
STATS = ["--n-resamples", "19", "--n-boot", "10", "--quiet"]
FAST = settings(max_examples=25, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
#: Control characters an id may not hold (C0, DEL, C1).
CONTROL = st.one_of(st.integers(0, 0x1F), st.integers(0x7F, 0x9F)).map(chr)


def _evaluations() -> pd.DataFrame:
    sim = simulate_evaluations(12, k=4, n_perms=6, p_bias=0.3, rng=1).to_frame()
    probs = np.random.default_rng(2).dirichlet(np.ones(4), size=len(sim))
    return sim.assign(model="m", choice_probs=[json.dumps(p.tolist()) for p in probs])


def _fairness() -> dict[str, pd.DataFrame]:
    recs, test, users = fairness_tables()
    return {"recs": recs, "test": test, "users": users}


def _fe(folder: Path, ext: str = "csv") -> list[str]:
    return ["fairness", "evaluate", "--recs", str(folder / f"recs.{ext}"), "--test",
            str(folder / f"test.{ext}"), "--users", str(folder / f"users.{ext}"),
            "--attribute", "gender", "--protected", "F", "--n-boot", "0",
            "--n-resamples", "0"]


#: (name, file stem, frame, command, id columns) of every table reader.
def _targets() -> list[tuple[str, str, pd.DataFrame, object, tuple[str, ...]]]:
    ev = _evaluations()
    ranks = ev[["query_id", "order"]].assign(ranking="1 2 3 4")
    f = _fairness()
    return [
        ("analyze", "evals", ev,
         lambda d, e: ["positional", "analyze", str(d / f"evals.{e}"), *STATS],
         ("query_id", "model")),
        ("analyze --exact", "evals", ev,
         lambda d, e: ["positional", "analyze", str(d / f"evals.{e}"), "--exact",
                       "--n-boot", "10", "--quiet"], ("query_id", "model")),
        ("topn", "rankings", ranks,
         lambda d, e: ["positional", "topn", str(d / f"rankings.{e}"), "--n-resamples",
                       "19", "--n-boot", "10"], ("query_id",)),
        ("topn --from-choice-probs", "evals", ev,
         lambda d, e: ["positional", "topn", str(d / f"evals.{e}"), "--from-choice-probs",
                       "--n-resamples", "19", "--n-boot", "10"], ("query_id", "model")),
        ("fairness --recs", "recs", f["recs"], _fe, ("user_id", "item_id")),
        ("fairness --test", "test", f["test"], _fe, ("user_id", "item_id")),
        ("fairness --users", "users", f["users"], _fe, ("user_id",)),
    ]


TARGETS = _targets()
IDS = [t[0] for t in TARGETS]


def _write_all(folder: Path, ext: str) -> None:
    """Every target's valid table into ``folder`` (CSV or Parquet)."""
    for _, stem, frame, _, _ in TARGETS:
        path = folder / f"{stem}.{ext}"
        if ext == "csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path, index=False)


def _one_error_line(result, *needles: str) -> str:
    """The single ``error:`` line of a clean refusal; each needle must be in it."""
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        repr(result.exception), result.output)
    assert "Traceback" not in result.output, result.output
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = [ln for ln in result.output.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    for ext in ("csv", "parquet"):
        _write_all(folder, ext)
    return folder


@pytest.mark.parametrize("ext", ["csv", "parquet"])
@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_the_valid_tables_work(tables: Path, target, ext: str) -> None:
    """The properties below break these tables: their refusals come from the damage."""
    result = runner.invoke(app, target[3](tables, ext), env=ENV)
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("ext", ["csv", "parquet"])
@pytest.mark.parametrize("target", TARGETS, ids=IDS)
@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_a_header_written_twice_is_refused(tables: Path, tmp_path_factory, target, ext,
                                           data) -> None:
    """Six readers used to take the first of two same-named columns silently."""
    name, stem, frame, command, _ = target
    folder = tmp_path_factory.mktemp("dup")
    _write_all(folder, ext)
    column = data.draw(st.sampled_from(list(frame.columns)), label="column")
    where = data.draw(st.integers(0, len(frame.columns)), label="at")
    values = frame[column].astype(str).tolist()
    path = folder / f"{stem}.{ext}"
    names = [*frame.columns]
    arrays = [pa.array(frame[c].astype(str).tolist()) for c in names]
    names.insert(where, column)
    arrays.insert(where, pa.array(values))
    table = pa.table(arrays, names=names)
    if ext == "parquet":
        pq.write_table(table, path)
    else:
        pd.DataFrame({i: a.to_pylist() for i, a in enumerate(arrays)}).to_csv(
            path, index=False, header=names)
    result = runner.invoke(app, command(folder, ext), env=ENV)
    _one_error_line(result, path.name, repr(column), "twice")


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
@FAST
@given(data=st.data())
def test_an_id_with_a_control_character_is_refused(tables: Path, tmp_path_factory, target,
                                                   data) -> None:
    """``m\\x00x`` and ``m`` must not become one model, user or item."""
    name, stem, frame, command, id_columns = target
    ext = data.draw(st.sampled_from(["csv", "parquet"]), label="format")
    folder = tmp_path_factory.mktemp("ctl")
    _write_all(folder, ext)
    column = data.draw(st.sampled_from(id_columns), label="column")
    row = data.draw(st.integers(0, len(frame) - 1), label="row")
    char = data.draw(CONTROL, label="char")
    broken = frame.astype({column: str}).copy()
    value = broken.at[row, column]
    pos = data.draw(st.integers(0, len(value)), label="pos")
    # inside the id: a leading or trailing whitespace control would be stripped by some
    # readers as padding, so it goes between two characters when it is whitespace
    if char.isspace():
        broken.at[row, column] = value[:1] + char + value[1:] + "x"
    else:
        broken.at[row, column] = value[:pos] + char + value[pos:]
    path = folder / f"{stem}.{ext}"
    if ext == "csv":  # quoted: a bare CR would end the record (a different damage)
        broken.to_csv(path, index=False, quoting=csv.QUOTE_NONNUMERIC)
    else:
        broken.to_parquet(path, index=False)
    result = runner.invoke(app, command(folder, ext), env=ENV)
    line = _one_error_line(result, path.name)
    assert f"data row {row + 1}" in line or "control" in line, line
    assert repr(column) in line or f"`{column}`" in line, line


@FAST
@given(which=st.sampled_from(["recs", "test", "users"]),
       other=st.sampled_from(["recs", "test"]), suffix=st.sampled_from([".0", ".00"]),
       pad=st.booleans())
def test_integer_ids_written_two_ways_are_refused(tmp_path_factory, which, other, suffix,
                                                  pad) -> None:
    """``12.0`` in one file and ``12`` in another used to give every metric 0."""
    folder = tmp_path_factory.mktemp("ids")
    f = _fairness()
    f["users"] = f["users"].assign(user_id=range(60))
    f["recs"] = f["recs"].assign(user_id=f["recs"].user_id.str[1:])
    f["test"] = f["test"].assign(user_id=f["test"].user_id.str[1:])
    column = "user_id" if which == "users" else "item_id"
    target = which if which != other else ("test" if other == "recs" else "recs")
    f[target] = f[target].assign(**{column: [("0" if pad else "") + str(v) + suffix
                                             for v in f[target][column]]})
    for stem, frame in f.items():
        frame.to_csv(folder / f"{stem}.csv", index=False)
    result = runner.invoke(app, _fe(folder), env=ENV)
    line = _one_error_line(result, f"{target}.csv", column)
    assert "match only when read as numbers" in line


BAD_VECTORS = st.one_of(
    st.just([math.nan, 0.5, 0.25, 0.25]),
    st.lists(st.floats(-1, -1e-6), min_size=1, max_size=1).map(
        lambda neg: [neg[0], 0.5, 0.25, 0.25 - neg[0]]),
    st.floats(1.01, 10).map(lambda s: [s / 4] * 4),
    st.floats(0, 0.99).map(lambda s: [s / 4] * 4),
)


@FAST
@given(vector=BAD_VECTORS, row=st.integers(0, 71), exact=st.booleans())
def test_bad_probability_vectors_are_refused_by_topn_as_by_exact(tmp_path_factory, vector,
                                                                 row, exact) -> None:
    folder = tmp_path_factory.mktemp("probs")
    ev = _evaluations()
    ev.loc[row, "choice_probs"] = json.dumps(vector)
    path = folder / "evals.parquet"
    ev.to_parquet(path, index=False)
    command = (["positional", "analyze", str(path), "--exact", "--n-boot", "10", "--quiet"]
               if exact else ["positional", "topn", str(path), "--from-choice-probs",
                              "--n-resamples", "19", "--n-boot", "10"])
    line = _one_error_line(runner.invoke(app, command, env=ENV), "choice_probs")
    assert re.search(rf"row {row + 1}\b", line), line
    assert "summing to 1" in line


# -- numbers ---------------------------------------------------------------------------

#: Values no machine of 1 GiB can do, and values below every minimum.
HUGE = st.integers(10**12, 10**40)
SMALL = st.integers(-10**40, -1)


def _options(tables: Path) -> list[tuple[str, list[str], str, st.SearchStrategy[int]]]:
    """(option, command without it, name the message must hold, values)."""
    evals = str(tables / "evals.csv")
    ranks = str(tables / "rankings.csv")
    fe = _fe(tables)
    without = [a for a in fe if a not in ("--n-boot", "--n-resamples", "0")]
    quick = ["--n-boot", "10", "--n-resamples", "19"]
    analyze = ["positional", "analyze", evals, "--quiet"]
    sim = ["positional", "simulate", "--k", "4", "--queries", "10", "--perms", "4",
           "--reps", "2", "--n-resamples", "19", "--quiet"]

    def simulate(option: str) -> list[str]:
        i = sim.index(option)
        return sim[:i] + sim[i + 2:]

    recs = str(tables / "recs.csv")
    compare = ["fairness", "compare", "--recs", f"A={recs}", "--recs", f"B={recs}",
               *without[4:]]  # fairness evaluate's tables and groups, two models

    return [
        ("--n-resamples", [*analyze, "--n-boot", "10"], "n-resamples", HUGE | SMALL),
        ("--n-boot", [*analyze, "--n-resamples", "19"], "n-boot", HUGE | SMALL),
        ("--spb-repeats", [*analyze, *quick], "spb-repeats", HUGE | SMALL),
        ("--seed", [*analyze, *quick], "seed", SMALL),
        ("--k", simulate("--k"), "k`", HUGE | st.integers(-10**40, 1)),
        ("--queries", simulate("--queries"), "queries`", HUGE | SMALL),
        ("--perms", simulate("--perms"), "perms`", HUGE | SMALL),
        ("--reps", simulate("--reps"), "reps`", st.integers(10**13, 10**40) | SMALL),
        ("--n-resamples", simulate("--n-resamples"), "n_resamples",
         HUGE | st.integers(-10**40, 18)),
        ("--n-resamples", ["positional", "topn", ranks, "--n-boot", "10"], "n-resamples",
         HUGE | SMALL),
        ("--n-boot", ["positional", "topn", ranks, "--n-resamples", "19"], "n-boot",
         HUGE | SMALL),
        ("--n", [*without, "--n-boot", "0", "--n-resamples", "0"], "n", HUGE | SMALL),
        ("--n-boot", [*without, "--n-resamples", "0"], "n-boot", HUGE | SMALL),
        ("--n-resamples", [*without, "--n-boot", "0"], "n-resamples", HUGE | SMALL),
        ("--n-boot", [*compare, "--n-resamples", "19"], "n-boot", HUGE | SMALL),
        ("--n-resamples", [*compare, "--n-boot", "10"], "n-resamples", HUGE | SMALL),
        ("--n", [*compare, "--n-boot", "10", "--n-resamples", "19"], "n", HUGE | SMALL),
    ]


@pytest.fixture(scope="module")
def option_cases(tables: Path) -> list[tuple[str, list[str], str, st.SearchStrategy[int]]]:
    ev = _evaluations()
    ev[["query_id", "order"]].assign(ranking="1 2 3 4").to_csv(tables / "rankings.csv",
                                                                index=False)
    return _options(tables)


OPTION_IDS = ["analyze --n-resamples", "analyze --n-boot", "analyze --spb-repeats",
              "analyze --seed", "simulate --k", "simulate --queries", "simulate --perms",
              "simulate --reps", "simulate --n-resamples", "topn --n-resamples",
              "topn --n-boot", "fairness --n", "fairness --n-boot", "fairness --n-resamples",
              "fairness compare --n-boot", "fairness compare --n-resamples",
              "fairness compare --n"]


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


@pytest.mark.parametrize("index", range(len(OPTION_IDS)), ids=OPTION_IDS)
@FAST
@given(data=st.data())
def test_numeric_options_across_their_range(option_cases, index: int, data) -> None:
    """Below the minimum or beyond this machine: exit 2, the option named, and the
    process's peak memory not grown by the attempt (no allocation was tried)."""
    option, command, name, values = option_cases[index]
    value = data.draw(values, label=option)
    before = _peak_rss()
    result = runner.invoke(app, [*command, option, str(value)], env=ENV)
    line = _one_error_line(result)
    assert name.replace("-", "_") in line.replace("-", "_"), (option, value, line)
    assert _peak_rss() - before < 256 * 2**20, (option, value)


# -- config keys -------------------------------------------------------------------------

AUDIT = """seed = 1
[catalog]
path = "catalog.csv"
[catalog.columns]
id = "id"
title = "title"
description = "description"
[queries]
n = {n}
[retrieval]
k = [{k}]
[design]
n_perms = {n_perms}
samples_per_order = {samples}
[[models]]
name = "sim"
backend = "simulated"
delay_s = {delay}
"""
BASE = {"n": 3, "k": 4, "n_perms": 2, "samples": 1, "delay": 0.0}


@FAST
@given(key=st.sampled_from(["n", "k", "n_perms", "samples"]), value=HUGE,
       delay=st.sampled_from([None, 1e300, 1e9]))
def test_audit_config_sizes_are_bounded(tmp_path_factory, key: str, value: int,
                                        delay: float | None) -> None:
    """``queries.n``, ``retrieval.k``, ``design.n_perms``, ``samples_per_order`` of
    10^12 and more, and a ``delay_s`` of years: refused before anything is built."""
    folder = tmp_path_factory.mktemp("cfg")
    write_catalog(folder / "catalog.csv")
    fields = dict(BASE, **({"delay": delay} if delay is not None else {key: value}))
    (folder / "audit.toml").write_text(AUDIT.format(**fields), encoding="utf-8")
    before = _peak_rss()
    result = runner.invoke(app, ["positional", "run", str(folder / "audit.toml"), "--out",
                                 str(folder / "run"), "--quiet", "--no-analyze"], env=ENV)
    name = "delay_s" if delay is not None else \
        {"n": "queries.n", "samples": "samples_per_order"}.get(key, key)
    _one_error_line(result, name)
    assert not (folder / "run").exists()
    assert _peak_rss() - before < 256 * 2**20


# -- generated tables --------------------------------------------------------------------

CELLS = st.one_of(st.text(max_size=6), st.integers(-3, 30).map(str), st.just(""),
                  st.sampled_from(["1 2 3 4", "4 3 2 1", "[0.25, 0.25, 0.25, 0.25]", "nan"]))
COLUMNS = ["query_id", "order", "selected_position", "model", "ranking", "choice_probs",
           "user_id", "item_id", "rank", "gender", "x"]


@FAST
@given(columns=st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=6),
       n_rows=st.integers(1, 8), data=st.data(),
       target=st.sampled_from(["analyze", "topn", "fairness --recs"]))
def test_generated_tables_never_give_a_traceback(tmp_path_factory, columns, n_rows, data,
                                                 target: str) -> None:
    folder = tmp_path_factory.mktemp("gen")
    _write_all(folder, "csv")
    rows = [[data.draw(CELLS, label="cell") for _ in columns] for _ in range(n_rows)]
    stem = {"analyze": "evals", "topn": "rankings", "fairness --recs": "recs"}[target]
    path = folder / f"{stem}.csv"
    pd.DataFrame(rows).to_csv(path, index=False, header=columns)
    command = dict((t[0], t[3]) for t in TARGETS)[target](folder, "csv")
    result = runner.invoke(app, command, env=ENV)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        repr(result.exception), result.output)
    assert "Traceback" not in result.output, result.output
    assert result.exit_code in (0, 1, 2), result.output
    if result.exit_code == 2:
        lines = [ln for ln in result.output.strip().splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), result.output
