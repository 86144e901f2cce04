"""The report of a `[prompt] answer = "ranking"` run folder: its ranked-list section."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from report_synth import resolve, tagged_numbers

from helpers import write_config
from recaudit import InputError
from recaudit.audit._analysis import run_and_analyze
from recaudit.audit._config import load_audit_config
from recaudit.report import build_report

TWO_MODELS = ('[[models]]\nname = "biased"\nbackend = "simulated"\np_bias = 0.9\n\n'
              '[[models]]\nname = "fair"\nbackend = "simulated"\np_bias = 0.0\n'
              'discard_rate = 0.1\n')


@pytest.fixture(scope="module")
def ranking_run(tmp_path_factory: pytest.TempPathFactory, retriever: Any,
                emb_cache: Path) -> Path:
    folder = tmp_path_factory.mktemp("ranking")
    cfg = load_audit_config(write_config(folder, cache_dir=emb_cache, n_queries=12, n_perms=6,
                                   models=TWO_MODELS,
                                   extra='\n[prompt]\nanswer = "ranking"\n'))
    return run_and_analyze(cfg, out_dir=folder / "run", retriever=retriever).audit.run_dir


def test_the_section_shows_every_cell_with_its_numbers(ranking_run: Path) -> None:
    report = build_report(ranking_run)
    doc = json.loads((ranking_run / "topn.json").read_text())
    assert report.data["rankings"] == doc
    html = report.html
    assert "Ranked-list answers" in html and 'id="tab-rankings"' in html
    assert "fig-rankings" in [f["id"] for f in report.data["figures"]]
    # the plain-words finding names the biased model and says which way the first item moved
    assert "moved the rankings in 1 of 2 cell(s)" in html
    assert "Strongest in biased" in html and "places better" in html
    cells = tagged_numbers(html, "rankings/")
    assert len(cells) == 2 * 5  # per cell: count, tau, RB, p (Holm), top-1 PB
    for path, value in cells:
        assert json.loads(value) == pytest.approx(resolve(report.data, path)), path
    biased, fair = doc
    assert biased["pvalue_holm"] <= 0.05 < fair["pvalue_holm"]
    # the top-1 sections read the lists' first items: the same valid evaluations
    analysis = json.loads((ranking_run / "analysis.json").read_text())
    assert [a["n_evaluations"] for a in analysis] == \
        [d["result"]["n_evaluations"] for d in doc]


def test_a_damaged_topn_json_is_named(ranking_run: Path, tmp_path: Path) -> None:
    import shutil

    run = Path(shutil.copytree(ranking_run, tmp_path / "run"))
    doc = json.loads((run / "topn.json").read_text())
    doc[0]["result"]["kendall_tau"]["value"] = "0.2"
    (run / "topn.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match="value"):
        build_report(run)


def test_a_pick_run_has_no_ranking_section(positional_dir: Path) -> None:
    report = build_report(positional_dir)
    assert "rankings" not in report.data and "tab-rankings" not in report.html
