"""`recaudit fairness compare` through typer's CliRunner: JSON rows, the table and its
sentences, and bad input as exit 2 with a one-line message."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from _fm_data import synthetic
from typer.testing import CliRunner

from recaudit.cli import app
from recaudit.fairness import FairnessComparison

runner = CliRunner()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fairness-compare-cli")
    recs, test, users = synthetic(n_users=90, seed=3)
    better, _, _ = synthetic(n_users=90, seed=11, gap=0.9)
    paths = {"a": root / "a.csv", "b": root / "b.parquet", "test": root / "test.csv",
             "users": root / "users.csv"}
    recs.to_csv(paths["a"], index=False)
    better.to_parquet(paths["b"])
    test.to_csv(paths["test"], index=False)
    users.to_csv(paths["users"], index=False)
    paths["candidates"] = root / "candidates.csv"
    pd.concat([t[["user_id", "item_id"]] for t in (recs, better, test)]).drop_duplicates(
        ).to_csv(paths["candidates"], index=False)
    return paths


def _args(files: dict[str, Path], *extra: str) -> list[str]:
    return ["fairness", "compare", "--recs", f"A={files['a']}", "--recs", f"B={files['b']}",
            "--test", str(files["test"]), "--users", str(files["users"]),
            "--attribute", "gender", "--protected", "F", "--n", "5", "10",
            "--n-boot", "100", "--n-resamples", "99", "--seed", "0", *extra]


def test_json_has_every_row(files: dict[str, Path]) -> None:
    res = runner.invoke(app, _args(files, "--json", "--stat-test", "t", "--adjust", "bh"))
    assert res.exit_code == 0, res.output
    result = FairnessComparison.from_dict(json.loads(res.stdout))
    assert result.models == ("A", "B") and result.test == "t" and result.adjust == "bh"
    assert len(result.rows) == 5 * 2 * 6  # metrics x cut-offs x (mean, F, M, rd, nrd, ib)
    ib = next(r for r in result.rows if r.metric == "ib_ndcg@10")
    assert ib.test == "permutation" and ib.ci_low_adjusted <= ib.difference <= ib.ci_high_adjusted
    assert math.isfinite(ib.ci_low) and math.isfinite(ib.ci_high_adjusted)
    row = next(r for r in result.rows if r.metric == "ndcg@10" and not r.group)
    assert {"a", "b", "metric", "difference", "ci_low", "ci_high", "pvalue",
            "pvalue_adjusted"} <= set(row.to_dict())


def test_a_sampled_protocol_is_named_and_warned(files: dict[str, Path]) -> None:
    res = runner.invoke(app, _args(files, "--json", "--protocol", "pop50", "--candidates",
                                   str(files["candidates"])))
    assert res.exit_code == 0, res.output
    result = FairnessComparison.from_dict(json.loads(res.stdout))
    assert result.protocol == "pop50" and result.warnings
    assert "sampled ranking (pop50)" in res.stderr
    res = runner.invoke(app, _args(files, "--protocol", "pop50"))
    assert res.exit_code == 2 and "pass `candidates`" in res.output


def test_the_table_and_its_sentences(files: dict[str, Path]) -> None:
    res = runner.invoke(app, _args(files))
    assert res.exit_code == 0, res.output
    assert "Paired comparisons (permutation; holm within each family of rows, 199" in " ".join(
        res.stdout.split())
    assert "rd_ndcg@10" in res.stdout and "A vs B:" in res.stdout
    text = " ".join(res.stdout.split())
    assert "the inter-bias IB of ndcg@10" in text
    assert "(test only)" not in text  # IB rows have their jackknife interval


@pytest.mark.parametrize(("extra", "message"), [
    (("--recs", "lonely.csv"), "`--recs` takes NAME=PATH"),
    (("--recs", "A=x.csv"), "`--recs` names the model 'A' twice"),
    (("--stat-test", "z"), "`stat_test` must be one of permutation, t, wilcoxon"),
    (("--adjust", "sidak"), "`adjust` must be one of holm, bh, none"),
    (("--n-boot", "0"), "needs `n_boot` >= 1"),
])
def test_bad_input_is_one_line_and_exit_2(files: dict[str, Path], extra: tuple[str, ...],
                                          message: str) -> None:
    res = runner.invoke(app, _args(files, *extra))
    assert res.exit_code == 2, res.output
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], res.stderr


def test_one_model_is_refused(files: dict[str, Path]) -> None:
    args = _args(files)
    i = args.index("--recs", 3)
    res = runner.invoke(app, args[:i] + args[i + 2:])
    assert res.exit_code == 2 and "needs >= 2 models" in res.stderr
