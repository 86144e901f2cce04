"""A run with several models: `compare.json`, the comparison section, the verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from report_synth import resolve, tagged_numbers

from helpers import write_config
from recaudit.audit._analysis import run_and_analyze
from recaudit.audit._config import load_audit_config
from recaudit.positional import RunComparisons
from recaudit.report import build_report

MODELS = "".join(f'[[models]]\nname = "{n}"\nbackend = "simulated"\np_bias = {p}\n\n'
                 for n, p in (("steady", 0.05), ("eager", 0.8), ("twin", 0.05)))


@pytest.fixture(scope="module")
def three_models(tmp_path_factory: pytest.TempPathFactory, retriever: Any,
                 emb_cache: Path) -> Path:
    folder = tmp_path_factory.mktemp("compare")
    cfg = load_audit_config(write_config(folder, cache_dir=emb_cache, n_queries=30, n_perms=6,
                                   models=MODELS))
    return run_and_analyze(cfg, out_dir=folder / "run", retriever=retriever).audit.run_dir


def test_the_run_writes_its_comparisons(three_models: Path) -> None:
    rows = json.loads((three_models / "compare.json").read_text())
    back = RunComparisons.from_list(rows)
    assert back.to_list() == rows and back.within == ("k", "temperature", "condition")
    pb = {(r["a"], r["b"]): r for r in rows if r["measure"] == "pb_plugin"}
    assert set(pb) == {("eager", "steady"), ("eager", "twin"), ("steady", "twin")}
    assert all(r["paired"] and r["adjust"] == "holm" for r in rows)
    assert pb[("eager", "steady")]["pvalue_adjusted"] <= 0.05 < pb[("steady", "twin")][
        "pvalue_adjusted"]
    assert pb[("eager", "steady")]["adjusted_level"] == pytest.approx(1 - 0.05 / 3)


def test_the_report_names_the_less_biased_model(three_models: Path) -> None:
    report = build_report(three_models)
    html = " ".join(report.html.split())
    assert 'id="tab-compare"' in html and "Comparing the models" in html
    assert "fig-compare" in [f["id"] for f in report.data["figures"]]
    verdict = " ".join(report.data["verdict"].split())
    assert "steady is less position-biased than eager" in verdict
    assert "twin is less position-biased than eager" in verdict
    assert "98.3% CI" in verdict  # Holm's family of three: the Bonferroni level
    cells = tagged_numbers(report.html, "comparisons/")
    assert cells
    for path, value in cells:
        assert json.loads(value) == pytest.approx(resolve(report.data, path)), path


def test_one_model_writes_no_comparisons(positional_dir: Path) -> None:
    assert not (positional_dir / "compare.json").exists()
    assert "tab-compare" not in build_report(positional_dir).html


def test_a_comparison_that_fails_is_a_warning_not_a_lost_analysis(
        three_models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from recaudit.audit import _analysis
    from recaudit.exceptions import InputError, RecauditWarning

    run = Path(shutil.copytree(three_models, tmp_path / "run"))
    (run / "analysis.json").unlink()

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise InputError("no pair to compare")

    monkeypatch.setattr(_analysis, "compare_cells", broken)
    with pytest.warns(RecauditWarning, match="compare.json was not written: no pair"):
        done = _analysis.analyze_run(run / "evaluations.parquet", seed=1)
    assert done.rows is not None and (run / "analysis.json").is_file()
    assert done.comparisons is None and not (run / "compare.json").exists()  # not stale
