"""The study analysis, the driver, the CLI and the report, on small grids."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests
from study_helpers import study_config
from typer.testing import CliRunner

from helpers import synthetic_table
from recaudit.cli import app
from recaudit.exceptions import InputError
from recaudit.positional import STUDY_COLUMNS, AnalysisOptions, StudyFile, analyze_study
from recaudit.positional._study import REASON_DEGENERATE, REASON_NO_DECODING
from recaudit.report import build_report

FAST = {"n_boot": 200, "n_resamples": 99}


@pytest.fixture(scope="module")
def grid():
    table, cands = synthetic_table(models={"biased": 0.5, "fair": 0.0}, discard_rate=0.01,
                                   seed=1)
    return table, cands, analyze_study(table, AnalysisOptions(**FAST), candidates=cands, rng=3)


def _rows(study, **where):
    t = study.table
    for col, value in where.items():
        t = t[t[col] == value]
    return t


def test_tidy_table_has_every_cell_both_analyses_and_the_columns(grid):
    table, _, study = grid
    assert tuple(study.table.columns) == STUDY_COLUMNS
    cells = table.groupby(["model", "k", "temperature", "condition"]).ngroups
    for analysis in ("full", "complete_case"):
        pb = _rows(study, analysis=analysis, metric="pb")
        assert len(pb) == cells
        assert (pb["ci_low"] <= pb["estimate"]).all() and (pb["estimate"] <= pb["ci_high"]).all()
    assert study.settings["n_queries_with_discards"] > 0


def test_biased_model_is_detected_and_the_fair_one_is_not(grid):
    _, _, study = grid
    unbp = _rows(study, analysis="full", metric="pob_unbp_L", condition="permutation")
    decisions = dict(zip(unbp["model"], unbp["decision"], strict=False))
    assert decisions["biased"] == "reject" and decisions["fair"] == "retain"
    both = _rows(study, analysis="full", metric="spb_difference", condition="both_vs_decoding",
                 model="biased", temperature=0.6)
    # sampling in the identity order is position-biased too (position 1 = retrieval rank
    # 1), so the shift is positive but modest with 30 queries
    assert len(both) == 1 and both["estimate"].iloc[0] > 0
    assert both["n_queries"].iloc[0] > 0 and 0 < both["p_holm"].iloc[0] <= 1


def test_decoding_at_temperature_zero_is_reported_not_tested(grid):
    _, _, study = grid
    row = _rows(study, analysis="full", metric="spb_difference", condition="both_vs_decoding",
                temperature=0.0)
    assert row["estimate"].isna().all() and (row["note"] == REASON_DEGENERATE).all()
    floor = _rows(study, analysis="full", metric="spb_noise_floor", temperature=0.0)
    assert (floor["note"] == REASON_DEGENERATE).all()
    floor6 = _rows(study, analysis="full", metric="spb_noise_floor", temperature=0.6)
    assert floor6["estimate"].notna().all()


def test_holm_across_models_matches_statsmodels(grid):
    _, _, study = grid
    for analysis in ("full", "complete_case"):
        comps = [c for c in study.comparisons if c["analysis"] == analysis]
        families: dict = {}
        for c in comps:
            families.setdefault((c["comparison"], c["k"], c["temperature"]), []).append(c)
        for fam in families.values():
            p = [c["pvalue"] for c in fam]
            ok = [i for i, x in enumerate(p) if np.isfinite(x)]
            if not ok:
                continue
            adj = multipletests([p[i] for i in ok], method="holm")[1]
            for i, a in zip(ok, adj, strict=True):
                assert fam[i]["pvalue_holm"] == pytest.approx(a)
    # untestable slopes (constant outcome: sPB = 0 everywhere) stay out of the family
    disp = [d for d in study.dispersion if d["analysis"] == "full"
            and np.isfinite(d["pvalue"])]
    assert len(disp) >= 8
    adj = multipletests([d["pvalue"] for d in disp], method="holm")[1]
    np.testing.assert_allclose([d["pvalue_holm"] for d in disp], adj)


def test_identity_order_cells_borrow_the_permuted_threshold(grid):
    _, _, study = grid
    row = _rows(study, analysis="full", metric="spb_paper", condition="labels", model="biased",
                temperature=0.6)
    assert "threshold from the permuted cell" in row["note"].iloc[0]


def test_grid_without_decoding_records_why(tmp_path):
    table, cands = synthetic_table(models={"m": 0.3}, conditions=("permutation",),
                                   temperatures=(0.6,), n_queries=12, n_evals=6)
    study = analyze_study(table, AnalysisOptions(**FAST), candidates=cands, rng=0)
    reasons = {s["reason"] for s in study.skipped}
    assert REASON_NO_DECODING in reasons
    assert any("no temperature 0" in r for r in reasons)
    assert not study.comparisons and len(study.dispersion) == 2  # full + complete case
    no_cands = analyze_study(table, AnalysisOptions(**FAST), rng=0)
    assert any("candidates" in s["reason"] for s in no_cands.skipped)


def test_fixed_tau_is_used_for_every_cell():
    table, cands = synthetic_table(models={"m": 0.3}, conditions=("permutation", "decoding"),
                                   temperatures=(0.6,), n_queries=10, n_evals=6)
    study = analyze_study(table, AnalysisOptions(tau=0.8, **FAST), candidates=cands, rng=0)
    spb = _rows(study, analysis="full", metric="spb_paper")
    assert len(spb) == 2 and (spb["note"] == "fixed tau = 0.8").all()
    assert {c["p_hat_a"] for c in study.comparisons} == {None}


def test_missing_columns_are_named():
    table, _ = synthetic_table(models={"m": 0.0}, n_queries=4, n_evals=3)
    with pytest.raises(InputError, match="condition"):
        analyze_study(table.drop(columns=["condition"]), AnalysisOptions(**FAST))


def test_save_and_report_every_number_resolves(grid, tmp_path):
    table, cands, study = grid
    discarded = table["selected_position"].isna()
    table.assign(discard_reason=np.where(discarded, "no identifier", None),
                 raw_response="{}").to_parquet(tmp_path / "evaluations.parquet", index=False)
    paths = study.save(tmp_path)
    back = pd.read_parquet(paths["parquet"])
    assert len(back) == len(study.table)
    assert pd.read_csv(paths["csv"]).shape == study.table.shape
    text = paths["json"].read_text()
    data = json.loads(text)
    assert data["kind"] == "positional_study" and len(data["rows"]) == len(study.table)
    # read back into its type (the report renders it) and written back the same bytes
    typed = StudyFile.from_dict(data, where=str(paths["json"]))
    assert json.dumps(typed.to_dict(), indent=1, allow_nan=False) == text
    assert len(typed.comparisons) == len(study.comparisons)
    assert typed.settings.complete_case_by == tuple(study.settings["complete_case_by"])
    report = build_report(tmp_path)
    assert "tab-study-comparisons" in report.html and "tab-study-dispersion" in report.html
    sidecar = report.data

    class Tags(HTMLParser):
        paths: list = []

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if "data-path" in a and a["data-path"].startswith("study/"):
                self.paths.append((a["data-path"], a["data-value"]))

    parser = Tags()
    parser.feed(report.html)
    assert len(parser.paths) > 50
    for path, value in parser.paths:
        node = sidecar
        for part in path.split("/"):
            node = node[int(part)] if isinstance(node, list) else node[part]
        assert json.loads(value) == node, path


def test_cli_study_resumes_a_positional_run_folder_and_reanalyses(
    tmp_path, retriever, emb_cache
):
    from recaudit.audit._config import load_audit_config
    from recaudit.audit._run import run_audit

    path = study_config(tmp_path, "study-sim.toml", cache_dir=emb_cache)
    run = tmp_path / "run"
    # the folder `recaudit positional run` would make (in process: the embedder is loaded)
    first = run_audit(load_audit_config(path), out_dir=run, retriever=retriever)
    assert first.ran_now == first.planned == 2 * 5 * 2 * 4 * 3
    runner = CliRunner()
    res = runner.invoke(app, ["positional", "study", str(path), "--out", str(run), "--resume",
                              "--json", "--n-boot", "100", "--n-resamples", "99",
                              "--spb-repeats", "3"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["settings"]["spb_n_repeats"] == 3  # passed through to the analysis
    assert summary["run"]["ran_now"] == 0  # resumed, nothing redone
    first_table = pd.read_parquet(run / "study.parquet")
    assert set(first_table["model"]) == {"sim-biased", "sim-fair"}
    res2 = runner.invoke(app, ["positional", "study", "--analyze-only", str(run), "--quiet",
                               "--n-boot", "100", "--n-resamples", "99", "--spb-repeats", "3"])
    assert res2.exit_code == 0, res2.output
    pd.testing.assert_frame_equal(pd.read_parquet(run / "study.parquet"), first_table)
    bad = runner.invoke(app, ["positional", "study", str(path), "--analyze-only", str(run)])
    assert bad.exit_code == 2 and "runs nothing" in bad.output
    assert "Study grid" in build_report(run).html


@pytest.mark.slow
def test_local_model_study(tmp_path, retriever, emb_cache, smollm2_path):
    """The packaged SmolLM2 (constrained) through the whole study: 8 evaluations."""
    from recaudit.audit._config import load_audit_config
    from recaudit.audit._study_driver import run_positional_study

    cfg = load_audit_config(study_config(tmp_path, "study-local.toml", cache_dir=emb_cache))
    result = run_positional_study(cfg, out_dir=tmp_path / "run", retriever=retriever,
                       options=AnalysisOptions(n_boot=100, n_resamples=99))
    assert result.audit.planned == result.audit.ok == 8
    table = result.study.table
    assert set(table["condition"]) >= {"permutation", "decoding", "both_vs_decoding"}
    assert (tmp_path / "run" / "study.json").is_file()
    evals = pd.read_parquet(tmp_path / "run" / "evaluations.parquet")
    assert evals["choice_probs"].notna().all()


def test_packaged_study_config_is_the_paper_grid():
    import importlib.resources

    from recaudit.audit._config import load_audit_config
    from recaudit.exceptions import ConfigError

    path = importlib.resources.files("recaudit.llm").joinpath("configs", "study-smollm2.toml")
    try:
        cfg = load_audit_config(str(path))
    except ConfigError as exc:
        pytest.skip(f"Myntra catalog absent: {exc}")
    assert cfg.retrieval.k == (5, 10) and cfg.temperatures == (0.0, 0.2, 0.4, 0.6)
    assert set(cfg.conditions) == {"permutation", "decoding", "labels", "labels_permutation"}
    assert cfg.design.n_perms == 20 and cfg.prompt.constrained
    assert cfg.prompt.choice_probabilities and cfg.models[0].backend == "local"


def test_complete_case_equal_to_full_gives_equal_numbers():
    # no discards: the complete-case table IS the full table, and common random numbers
    # make every estimate, CI and p-value agree exactly
    table, cands = synthetic_table(models={"biased": 0.4}, n_queries=12, seed=5)
    study = analyze_study(table, AnalysisOptions(**FAST), candidates=cands, rng=11)
    cols = ["model", "k", "temperature", "condition", "metric"]
    full = _rows(study, analysis="full").set_index(cols).sort_index()
    cc = _rows(study, analysis="complete_case").set_index(cols).sort_index()
    values = ["estimate", "ci_low", "ci_high", "p_value", "p_holm"]
    pd.testing.assert_frame_equal(full[values], cc[values])


def test_analysis_json_and_study_json_agree_on_every_cell(grid, tmp_path):
    # one noise-floor rule: analysis.json (the grouped analysis, which `positional run`
    # also writes) and study.json give every cell -- identity-order ones included --
    # the same sPB, and each noise floor is the decoding cell's sPB
    _, _, study = grid
    paths = study.save(tmp_path)
    analysis = json.loads(paths["analysis"].read_text())
    rows = json.loads(paths["json"].read_text())["rows"]
    full = {(r["model"], r["k"], r["temperature"], r["condition"], r["metric"]): r
            for r in rows if r["analysis"] == "full"}
    assert len(analysis) == 16
    checked = 0
    for g in analysis:
        cell = (g["model"], g["k"], g["temperature"], g["condition"])
        for metric in ("spb", "spb_paper", "pb", "ps"):
            r = full[(*cell, metric)]
            assert (r["estimate"], r["ci_low"], r["ci_high"]) == (
                g[metric]["value"], g[metric]["ci_low"], g[metric]["ci_high"]), (cell, metric)
            checked += 1
        if g["condition"] in ("decoding", "labels"):
            assert g["spb_paper"]["threshold_from"]["condition"] == "permutation"
            perm = next(h for h in analysis if h["condition"] == "permutation"
                        and (h["model"], h["k"], h["temperature"]) == cell[:3])
            assert g["spb_paper"]["p_hat"] == perm["spb_paper"]["p_hat"]
        floor = full.get((*cell, "spb_noise_floor"))
        if floor is not None and g["temperature"] > 0:
            dec = next(h for h in analysis if h["condition"] == "decoding"
                       and (h["model"], h["k"], h["temperature"]) == cell[:3])
            assert floor["estimate"] == dec["spb_paper"]["value"]
            assert floor["ci_low"] == dec["spb_paper"]["ci_low"]
            checked += 1
    assert checked == 16 * 4 + 2 * 3  # 2 models x 3 non-decoding cells at T = 0.6


def test_report_shows_the_study_noise_floor(grid, tmp_path):
    # analysis.json and the study use one rule (the permuted cell's threshold), so the
    # page, which reads analysis.json, shows the study's number
    table, _, study = grid
    table.assign(discard_reason=np.where(table["selected_position"].isna(), "x", None),
                 raw_response="{}").to_parquet(tmp_path / "evaluations.parquet", index=False)
    study.save(tmp_path)
    rows = _rows(study, analysis="full", metric="spb_paper", condition="decoding")
    rows = rows[np.isfinite(rows["estimate"])]
    assert len(rows)
    groups = build_report(tmp_path).data["groups"]
    for r in rows.to_dict(orient="records"):
        g = next(g for g in groups if g["model"] == r["model"] and g["k"] == r["k"]
                 and g["temperature"] == r["temperature"] and g["condition"] == "decoding")
        assert g["spb_paper"]["value"] == pytest.approx(r["estimate"])
        assert g["spb_paper"]["ci_low"] == pytest.approx(r["ci_low"])


def test_spb_repeats_are_used_and_recorded(grid, tmp_path):
    from recaudit.positional._metrics import SPB_REPEATS

    table, cands, study = grid
    assert study.settings["spb_n_repeats"] == SPB_REPEATS and study.settings["spb_n_folds"] == 5
    assert all(g["spb_paper"]["n_repeats"] == SPB_REPEATS for g in study.analysis
               if g["spb_paper"]["value"] is not None)
    one = analyze_study(table, AnalysisOptions(spb_repeats=1, **FAST), candidates=cands, rng=3)
    assert one.settings["spb_n_repeats"] == 1
    assert {g["spb_paper"]["n_repeats"] for g in one.analysis} <= {1, None}
    # only sPB and what is built on it change with the repeats
    key = ["analysis", "model", "k", "temperature", "condition", "metric"]
    a = study.table.set_index(key)["estimate"]
    b = one.table.set_index(key)["estimate"]
    pb = a.index.get_level_values("metric") == "pb"
    pd.testing.assert_series_equal(a[pb], b[pb])
    spb = a.index.get_level_values("metric") == "spb_paper"
    assert not np.allclose(a[spb].astype(float), b[spb].astype(float), equal_nan=True)
    # the CLI passes --spb-repeats to the re-analysis and validates it
    run = tmp_path / "run"
    run.mkdir()
    table.to_parquet(run / "evaluations.parquet")
    cands.to_parquet(run / "candidates.parquet")
    runner = CliRunner()
    res = runner.invoke(app, ["positional", "study", "--analyze-only", str(run), "--json",
                              "--n-boot", "50", "--n-resamples", "19", "--spb-repeats", "2",
                              "--seed", "0"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["settings"]["spb_n_repeats"] == 2
    assert json.loads((run / "study.json").read_text())["settings"]["spb_n_repeats"] == 2
    bad = runner.invoke(app, ["positional", "study", "--analyze-only", str(run),
                              "--spb-repeats", "0"])
    assert bad.exit_code == 2 and "`--spb-repeats` must be an integer >= 1" in bad.output
