"""The one-group and grouped analyses, and the `recaudit positional` commands."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests
from typer.testing import CliRunner

from recaudit import InputError
from recaudit.cli import app
from recaudit.positional import AnalysisOptions, analyze, analyze_groups, simulate_evaluations

runner = CliRunner()
FAST = ["--n-resamples", "99", "--n-boot", "50", "--seed", "1", "--quiet"]


@pytest.fixture(scope="module")
def grouped_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    parts = []
    for model, p_bias, seed in (("a", 0.4, 1), ("b", 0.0, 2), ("c", 0.1, 3)):
        part = simulate_evaluations(20, k=4, n_perms=10, p_bias=p_bias, rng=seed).to_frame()
        parts.append(part.assign(model=model, temperature=0.0))
    table = pd.concat(parts, ignore_index=True)
    table.loc[7, "selected_position"] = None
    path = tmp_path_factory.mktemp("evals") / "evals.csv"
    table.to_csv(path, index=False)
    return path


def test_against_statsmodels_holm_across_groups(grouped_csv: Path) -> None:
    grouped = analyze_groups(grouped_csv, AnalysisOptions(n_resamples=99, n_boot=20),
                             by=["model"], rng=0)
    raw = [g.pob_icm.pvalue for g in grouped.groups]
    np.testing.assert_allclose(grouped.pob_icm_pvalue_holm, multipletests(raw, method="holm")[1])
    raw = [g.pob_unbp.pvalue for g in grouped.groups]
    np.testing.assert_allclose(grouped.pob_unbp_pvalue_holm, multipletests(raw, method="holm")[1])
    assert [g.group["model"] for g in grouped.groups] == ["a", "b", "c"]
    assert grouped.groups[0].n_discarded == 1


def test_analyze_accepts_a_dataframe_and_is_reproducible(grouped_csv: Path) -> None:
    table = pd.read_csv(grouped_csv)
    table = table[table["model"] == "a"]
    a = analyze(table, AnalysisOptions(n_resamples=99, n_boot=50), rng=3).to_dict()
    b = analyze(table, AnalysisOptions(n_resamples=99, n_boot=50), rng=3).to_dict()
    assert json.dumps(a) == json.dumps(b)


def test_cli_analyze_json_contract(grouped_csv: Path) -> None:
    result = runner.invoke(app, ["positional", "analyze", str(grouped_csv), "--json", *FAST])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    for key in (
        "n_queries",
        "n_evaluations",
        "n_discarded",
        "k",
        "position_distribution",
        "selection_rate_matrix",
    ):
        assert key in out
    assert out["n_discarded"] == 1 and out["k"] == 4
    assert {"statistic", "pvalue", "pvalue_asymptotic"} <= set(out["pob_icm"])
    assert {"L", "pvalue", "reject"} <= set(out["pob_unbp"])
    for metric in ("ps", "pb", "spb"):
        assert 0 <= out[metric]["ci_low"] <= out[metric]["value"] <= out[metric]["ci_high"] <= 1
    assert len(out["position_distribution"]) == 4
    assert np.array(out["selection_rate_matrix"]).shape == (4, 4)


def test_cli_analyze_grouped_json_has_keys_and_holm(grouped_csv: Path) -> None:
    args = ["positional", "analyze", str(grouped_csv), "--by", "model,temperature", "--json", *FAST]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert [g["model"] for g in out] == ["a", "b", "c"]
    assert all(g["temperature"] == 0.0 for g in out)
    assert all("pvalue_holm" in g["pob_icm"] and "pvalue_holm" in g["pob_unbp"] for g in out)


def test_cli_table_verdict_and_fail_on_bias(grouped_csv: Path) -> None:
    result = runner.invoke(app, ["positional", "analyze", str(grouped_csv), "--by", "model", *FAST])
    assert result.exit_code == 0
    assert "Positional bias detected" in result.stdout and "model=a" in result.stdout
    result = runner.invoke(
        app, ["positional", "analyze", str(grouped_csv), "--by", "model", "--fail-on-bias", *FAST]
    )
    assert result.exit_code == 1


def test_cli_bad_input_exits_2_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("query_id,order,selected_position\nq1,1 2 3,1\nq1,3 1 1,2\n")
    result = runner.invoke(app, ["positional", "analyze", str(bad), "--quiet"])
    assert result.exit_code == 2
    assert "row 2, column `order`: '3 1 1' is not a permutation of 1..3" in result.output


def test_cli_simulate_takes_several_values_per_option() -> None:
    args = [
        "positional",
        "simulate",
        "--k",
        "3",
        "4",
        "--queries",
        "10",
        "20",
        "--perms",
        "5",
        "--p-bias",
        "0",
        "0.5",
        "--reps",
        "3",
        "--n-resamples",
        "19",
        "--seed",
        "2",
        "--json",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert len(rows) == 2 * 2 * 2 * 2
    assert {r["k"] for r in rows} == {3, 4} and {r["queries"] for r in rows} == {10, 20}
    assert {r["p_bias"] for r in rows} == {0.0, 0.5}
    keys = {
        "test",
        "k",
        "queries",
        "perms",
        "p_bias",
        "reps",
        "rejection_rate",
        "ci_low",
        "ci_high",
    }
    assert all(set(r) == keys for r in rows)
    same = runner.invoke(app, [*args[:2], "--k", "3,4", "--k", "3", *args[5:]])
    assert same.exit_code == 0


def test_cli_simulate_table_and_bad_values() -> None:
    result = runner.invoke(
        app,
        [
            "positional",
            "simulate",
            "--k",
            "4",
            "--queries",
            "10",
            "--p-bias",
            "0.6",
            "--reps",
            "2",
            "--perms",
            "5",
            "--n-resamples",
            "19",
            "--seed",
            "1",
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "80% power" in result.stdout
    bad = runner.invoke(app, ["positional", "simulate", "--k", "five", "--reps", "1"])
    assert bad.exit_code == 2
    assert "`--k`: 'five' is not a list of numbers" in bad.output
    bad = runner.invoke(app, ["positional", "simulate", "--k", "1", "--reps", "1", "--quiet"])
    assert bad.exit_code == 2 and "`k` must be an integer >= 2, got 1" in bad.output


def test_grouped_errors_name_the_group(grouped_csv: Path) -> None:
    table = pd.read_csv(grouped_csv, dtype={"order": str})
    table.loc[table.index[table["model"] == "b"][0], "order"] = "1 2 3"
    with pytest.raises(InputError, match=re.escape("group model=b: column `order`: mixed k")):
        analyze_groups(table, AnalysisOptions(n_resamples=9), by=["model"])


def test_cli_and_json_say_when_pob_icm_cannot_see_bias(tmp_path: Path) -> None:
    """k = 10 with sampled orders: no column repeats. The JSON carries the caveat and
    the summary prints it once for all groups that share it; POB-UNBP still rejects."""
    parts = [simulate_evaluations(15, k=10, n_perms=8, p_bias=0.9, rng=s).to_frame()
             .assign(model=m) for m, s in (("a", 1), ("b", 2))]
    path = tmp_path / "k10.csv"
    pd.concat(parts, ignore_index=True).to_csv(path, index=False)
    res = runner.invoke(app, ["positional", "analyze", str(path), "--by", "model",
                              "--json", *FAST])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    assert all(r["pob_icm"]["n_in_repeated_columns"] == 0 and r["pob_icm"]["pvalue"] == 1.0
               and "no permutation column repeats" in r["pob_icm"]["caveat"]
               and r["pob_unbp"]["reject"] for r in rows)
    res = runner.invoke(app, ["positional", "analyze", str(path), "--by", "model",
                              "--n-resamples", "99", "--n-boot", "50", "--seed", "1"],
                        env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert res.output.count("no permutation column repeats") == 1
    assert "POB-ICM (2 groups: model=a; model=b)" in res.output
