"""`--tau` (sPB's relevance-set threshold) on every command that computes sPB."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from helpers import synthetic_table
from recaudit.cli import app
from recaudit.positional import simulate_evaluations

runner = CliRunner()
FAST = ["--n-resamples", "99", "--n-boot", "50", "--seed", "1", "--quiet"]


@pytest.fixture(scope="module")
def evals_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("tau") / "evals.csv"
    simulate_evaluations(20, k=5, n_perms=8, p_bias=0.3, rng=2).to_frame().to_csv(path,
                                                                                index=False)
    return path


@pytest.mark.parametrize("bad", ["0", "1.5", "-0.2", "nan", "high", ""])
def test_bad_tau_is_a_usage_error_naming_the_option(evals_csv, bad):
    res = runner.invoke(app, ["positional", "analyze", str(evals_csv), "--tau", bad, *FAST])
    assert res.exit_code == 2
    assert "`--tau` must be 'auto'" in res.output and "(0, 1]" in res.output


def test_analyze_tau_is_used_and_recorded(evals_csv):
    out = {}
    for tau in ("auto", "0.8", "1"):
        res = runner.invoke(app, ["positional", "analyze", str(evals_csv), "--tau", tau,
                                  "--json", *FAST])
        assert res.exit_code == 0, res.output
        out[tau] = json.loads(res.stdout)
    assert out["auto"]["tau"] == "auto" and out["auto"]["spb_paper"]["tau"] is None
    assert out["auto"]["spb_paper"]["p_hat"] is not None
    assert out["0.8"]["tau"] == 0.8 and out["0.8"]["spb_paper"]["tau"] == 0.8
    assert out["0.8"]["spb_paper"]["p_hat"] is None
    # tau = 1 keeps every item selected in the training folds in R: the smallest sPB
    assert out["1"]["spb_paper"]["value"] <= out["0.8"]["spb_paper"]["value"]
    assert out["0.8"]["spb_paper"]["value"] != out["auto"]["spb_paper"]["value"]
    # everything but sPB is untouched by tau
    assert out["0.8"]["pb"] == out["auto"]["pb"] and out["0.8"]["ps"] == out["auto"]["ps"]


def test_analyze_by_condition_with_tau(tmp_path):
    table, _ = synthetic_table(models={"m": 0.4}, temperatures=(0.6,),
                               conditions=("permutation", "decoding"), n_queries=8, n_evals=5)
    path = tmp_path / "grid.parquet"
    table.to_parquet(path, index=False)
    res = runner.invoke(app, ["positional", "analyze", str(path), "--by",
                              "model,k,temperature,condition", "--tau", "0.9", "--json", *FAST])
    assert res.exit_code == 0, res.output
    groups = json.loads(res.stdout)
    assert {g["tau"] for g in groups} == {0.9}
    assert all(g["spb_paper"]["threshold_from"] is None for g in groups)  # fixed tau: no borrowing


def test_study_analyze_only_tau_recorded_everywhere(tmp_path):
    table, cands = synthetic_table(models={"m": 0.4}, temperatures=(0.0, 0.6),
                                   conditions=("permutation", "decoding"), n_queries=8,
                                   n_evals=5)
    table.to_parquet(tmp_path / "evaluations.parquet", index=False)
    cands.to_parquet(tmp_path / "candidates.parquet", index=False)
    res = runner.invoke(app, ["positional", "study", "--analyze-only", str(tmp_path),
                              "--tau", "0.85", "--n-boot", "50", "--n-resamples", "99",
                              "--seed", "0", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["settings"]["tau"] == 0.85
    study = json.loads((tmp_path / "study.json").read_text())
    assert study["settings"]["tau"] == 0.85
    spb = [r for r in study["rows"] if r["metric"] == "spb_paper"]
    assert spb and all(r["note"] == "fixed tau = 0.85" for r in spb)
    analysis = json.loads((tmp_path / "analysis.json").read_text())
    assert {g["tau"] for g in analysis} == {0.85}
    assert {g["spb_paper"]["tau"] for g in analysis} == {0.85}
    bad = runner.invoke(app, ["positional", "study", "--analyze-only", str(tmp_path),
                              "--tau", "2"])
    assert bad.exit_code == 2 and "`--tau` must be" in bad.output


def test_run_tau_reaches_analysis_json(tmp_path, retriever, emb_cache):
    from helpers import prepared_run, write_config

    path = write_config(tmp_path, cache_dir=emb_cache, n_queries=6, n_perms=5)
    # prepared in process (the CLI resumes without loading the embedder)
    run = prepared_run(path, tmp_path / "run", retriever)
    res = runner.invoke(app, ["positional", "run", str(path), "--out", str(run), "--resume",
                              "--tau", "0.7", "--json"])
    assert res.exit_code == 0, res.output
    printed = json.loads(res.stdout)["analysis"]
    written = json.loads((run / "analysis.json").read_text(encoding="utf-8"))
    assert written == printed
    assert {g["tau"] for g in written} == {0.7}
    assert {g["spb_paper"]["tau"] for g in written} == {0.7}
    bad = runner.invoke(app, ["positional", "run", str(path), "--out", str(run), "--resume",
                              "--tau", "zero"])
    assert bad.exit_code == 2 and "`--tau` must be" in bad.output
