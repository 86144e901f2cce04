"""A fairness study folder with `compare.json`: the comparison section, its numbers in
the sidecar, and the verdict naming the model with the smaller group gap."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from report_synth import resolve, tagged_numbers

from recaudit._io import to_jsonable
from recaudit.fairness import EvaluateOptions, compare_models
from recaudit.fairness.simulation import simulate_interbias
from recaudit.report import build_report


def _write_comparison(folder: Path) -> None:
    """Three models on one simulated test: two alike with no gap, one with a large gap."""
    data = simulate_interbias(400, rng=np.random.default_rng(0), n_items=300, rd=0.0)
    gapped = simulate_interbias(400, rng=np.random.default_rng(0), n_items=300, rd=0.6)
    recs = {"MF": data.recs, "LightGCN": gapped.recs,
            "ItemKNN": data.recs.assign(rank=data.recs["rank"])}
    result = compare_models(recs, data.test, data.users, attribute="gender", protected="F",
                            options=EvaluateOptions(n=(5, 10, 15), n_boot=300,
                                                    n_resamples=299), rng=0)
    (folder / "ml-100k" / "compare.json").write_text(json.dumps(to_jsonable(result.to_dict())))


def test_the_section_its_numbers_and_the_verdict(fairness_study_dir: Path) -> None:
    _write_comparison(fairness_study_dir)
    report = build_report(fairness_study_dir)
    html = " ".join(report.html.split())
    assert 'id="tab-fairness-compare"' in html and "fig-fairness-compare" in html
    cells = tagged_numbers(report.html, "comparison/")
    assert cells
    for path, value in cells:
        assert json.loads(value) == pytest.approx(resolve(report.data, path), nan_ok=True), path
    verdict = " ".join(report.data["verdict"].split())
    assert "Models compared:" in verdict
    assert "has a smaller group gap than LightGCN" in verdict


def test_without_compare_json_there_is_no_section(fairness_study_dir: Path) -> None:
    report = build_report(fairness_study_dir)
    assert "tab-fairness-compare" not in report.html and report.data.get(
        "comparison") is None


def test_a_damaged_compare_json_is_refused_naming_it(fairness_study_dir: Path) -> None:
    from recaudit import InputError

    _write_comparison(fairness_study_dir)
    path = fairness_study_dir / "ml-100k" / "compare.json"
    doc = json.loads(path.read_text())
    doc["rows"][3]["difference"] = "0.1"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"compare.json, row 3: `difference` must be a "
                                         r"number or null"):
        build_report(fairness_study_dir)


def test_a_sampled_comparison_says_its_protocol(fairness_study_dir: Path) -> None:
    """compare.json of a study whose first protocol is sampled: the section names the
    protocol and shows its warnings; the IB rows appear in the table."""
    _write_comparison(fairness_study_dir)
    path = fairness_study_dir / "ml-100k" / "compare.json"
    doc = json.loads(path.read_text())
    doc["protocol"] = "uni100"
    doc["warnings"] = ["sampled ranking (uni100): metrics computed on sampled negatives"]
    path.write_text(json.dumps(doc))
    html = " ".join(build_report(fairness_study_dir).html.split())
    assert "ranked under the sampled protocol uni100" in html
    assert "sampled ranking (uni100): metrics computed on sampled negatives" in html
    assert "ib_ndcg@10" in html


def test_ib_rows_show_their_interval(fairness_study_dir: Path) -> None:
    """IB rows have a jackknife interval now (decision 0417): the table shows it, the
    method note no longer says IB has none."""
    _write_comparison(fairness_study_dir)
    report = build_report(fairness_study_dir)
    ib = [r for r in report.data["comparison"]["rows"] if r["metric"] == "ib_ndcg@10"]
    assert ib and all(math.isfinite(r["ci_low_adjusted"]) for r in ib)
    html = " ".join(report.html.split())
    for r in ib:
        assert f"[{r['ci_low_adjusted']:+.3f}, {r['ci_high_adjusted']:+.3f}]" in html
    assert "has no interval" not in html and "delete-one-user jackknife" in html
