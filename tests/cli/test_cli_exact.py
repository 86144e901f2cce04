"""`recaudit positional analyze --exact` on a real simulated run with choice probabilities."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests
from typer.testing import CliRunner

from recaudit.cli import app
from recaudit.positional import AnalysisOptions, analyze_exact

runner = CliRunner()
FAST = ["--n-boot", "100", "--seed", "3", "--quiet"]


@pytest.fixture(scope="module")
def exact_run(tmp_path_factory, retriever, emb_cache):
    """A simulated audit (p_bias 0.4, k = 4) that records choice-probability vectors."""
    from helpers import write_config
    from recaudit.audit._config import load_audit_config
    from recaudit.audit._run import run_audit

    folder = tmp_path_factory.mktemp("exact-run")
    path = write_config(folder, cache_dir=emb_cache, n_queries=10, n_perms=8,
                        choice_probabilities=True)
    res = run_audit(load_audit_config(path), out_dir=folder / "run", retriever=retriever)
    return res.evaluations_path.parent


def test_exact_on_a_run_folder_matches_the_library(exact_run):
    res = runner.invoke(app, ["positional", "analyze", str(exact_run), "--exact", "--json",
                              *FAST])
    assert res.exit_code == 0, res.output
    printed = json.loads(res.stdout)
    assert printed["choice"] == "probabilities" and "pob_icm" not in printed
    table = pd.read_parquet(exact_run / "evaluations.parquet")
    direct = analyze_exact(table, AnalysisOptions(n_boot=100), rng=3).to_dict()
    assert printed == json.loads(json.dumps(direct))
    # the simulated model favours position 1: 1/k + p_bias (1 - 1/k) = 0.55 at k = 4
    assert printed["position_distribution"][0] == pytest.approx(0.55, abs=0.08)
    assert printed["pob_unbp"]["reject"] is True


def test_exact_by_group_holm_against_statsmodels(exact_run, tmp_path):
    table = pd.read_parquet(exact_run / "evaluations.parquet")
    two = pd.concat([table.assign(model="a"), table.assign(model="b")], ignore_index=True)
    path = tmp_path / "two.parquet"
    two.to_parquet(path, index=False)
    res = runner.invoke(app, ["positional", "analyze", str(path), "--exact", "--by", "model",
                              "--json", *FAST])
    assert res.exit_code == 0, res.output
    groups = json.loads(res.stdout)
    assert [g["model"] for g in groups] == ["a", "b"]
    raw = [g["pob_unbp"]["pvalue"] for g in groups]
    adj = multipletests(raw, method="holm")[1]
    assert [g["pob_unbp"]["pvalue_holm"] for g in groups] == pytest.approx(list(adj))
    assert all(g["choice"] == "probabilities" for g in groups)
    # printed summary and --fail-on-bias
    shown = runner.invoke(app, ["positional", "analyze", str(path), "--exact", "--by", "model",
                                "--fail-on-bias", *FAST])
    assert shown.exit_code == 1
    assert "exact mode" in shown.stdout and "Positional bias detected" in shown.stdout
    assert "model=a" in shown.stdout


def test_missing_columns_are_named(exact_run, tmp_path):
    table = pd.read_parquet(exact_run / "evaluations.parquet")
    path = tmp_path / "no-probs.csv"
    table.drop(columns=["choice_probs"]).to_csv(path, index=False)
    res = runner.invoke(app, ["positional", "analyze", str(path), "--exact", *FAST])
    assert res.exit_code == 2
    out = " ".join(res.output.split())
    assert "exact mode needs column(s) `choice_probs`" in out
    assert "choice_probabilities = true" in out
    path2 = tmp_path / "no-order.csv"
    table.drop(columns=["choice_probs", "order"]).to_csv(path2, index=False)
    res2 = runner.invoke(app, ["positional", "analyze", str(path2), "--exact", *FAST])
    assert res2.exit_code == 2
    assert "`order`, `choice_probs`" in " ".join(res2.output.split())
    # the sampled analysis of the same table still works
    ok = runner.invoke(app, ["positional", "analyze", str(path), "--json", "--n-resamples",
                             "99", *FAST])
    assert ok.exit_code == 0, ok.output


def test_exact_rejects_tau_and_an_empty_folder(exact_run, tmp_path):
    res = runner.invoke(app, ["positional", "analyze", str(exact_run), "--exact", "--tau",
                              "0.8", *FAST])
    assert res.exit_code == 2 and "`--tau` does not apply to `--exact`" in res.output
    empty = runner.invoke(app, ["positional", "analyze", str(tmp_path), "--exact", *FAST])
    assert empty.exit_code == 2 and "no evaluations.parquet" in empty.output


def test_exact_passes_spb_repeats(exact_run):
    res = runner.invoke(app, ["positional", "analyze", str(exact_run), "--exact", "--json",
                              *FAST, "--spb-repeats", "3"])
    assert res.exit_code == 0, res.output
    printed = json.loads(res.stdout)
    table = pd.read_parquet(exact_run / "evaluations.parquet")
    direct = analyze_exact(table, AnalysisOptions(n_boot=100, spb_repeats=3), rng=3).to_dict()
    assert printed["spb_paper"]["n_repeats"] == 3
    assert printed == json.loads(json.dumps(direct))
