"""The report of a run folder with ``sequential.json`` (`positional run --sequential`)."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from report_synth import resolve

from recaudit import InputError
from recaudit.report import build_report


class _Numbers(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.cells: list[tuple[str, str]] = []
        self.svg_ids: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("data-path", "").startswith("sequential/"):  # type: ignore[union-attr]
            self.cells.append((str(a["data-path"]), str(a["data-value"])))
        if tag == "svg" and a.get("aria-labelledby"):
            self.svg_ids.append(str(a["aria-labelledby"]))


def test_decision_budget_and_confidence_sequences_are_shown(sequential_dir: Path) -> None:
    report = build_report(sequential_dir)
    doc = json.loads((sequential_dir / "sequential.json").read_text())
    assert report.data["sequential"] == doc
    html = report.html
    assert "Sequential audit (anytime-valid)" in html and 'id="tab-sequential"' in html
    assert "rejected uniformity (stopped)" in html and "not rejected, budget spent" in html
    assert "1 of 2 cell(s) rejected" in html
    parser = _Numbers()
    parser.feed(html)
    paths = dict(parser.cells)
    biased, null = doc["cells"]
    # evaluations used vs the maximum, E at stop, threshold
    assert json.loads(paths["sequential/cells/0/evaluations_used"]) == biased["evaluations_used"]
    assert json.loads(paths["sequential/cells/0/budget"]) == 100
    assert biased["evaluations_used"] < 100 == null["evaluations_used"]
    assert json.loads(paths["sequential/cells/0/e_value"]) == pytest.approx(biased["e_value"])
    assert f"{null['e_value']:.3g} / 40" in html  # E at stop against the threshold 1/alpha
    # one confidence-sequence row per position of each cell, low and high
    k = biased["k"]
    for i in (0, 1):
        for j in range(k):
            assert f"sequential/cells/{i}/cs_low/{j}" in paths
            assert f"sequential/cells/{i}/cs_high/{j}" in paths
    # every number resolves in the sidecar
    sidecar = report.data
    # + the verdict's alpha (this fixture's cells are not the analysis's configurations,
    # so the verdict names no cell's E; the demo's test checks that it does)
    assert len(parser.cells) == 2 * 5 + 2 * 3 * k + 1
    for path, value in parser.cells:
        assert json.loads(value) == pytest.approx(resolve(sidecar, path)), path
    # the e-value figure is listed and drawn
    assert "fig-sequential" in [f["id"] for f in report.data["figures"]]
    assert html.count("<polyline") >= 2


def test_the_verdict_gives_the_sequential_decision_not_the_fixed_sample_tests(
        sequential_dir: Path) -> None:
    """After a sequential run the verdict's test is the anytime-valid decision; the
    fixed-sample p-values are descriptive only and stay out of the verdict's words."""
    report = build_report(sequential_dir)
    lead = report.html.split('<p class="lead">')[1].split("</p>")[0]
    text = " ".join(lead.replace("<", " <").split())
    assert "An anytime-valid sequential test decided this audit" in text
    assert "in 1 of 2 cell(s)" in text and "Chance alone" not in text
    assert "POB-UNBP" not in text


def test_without_sequential_json_nothing_changes(positional_dir: Path) -> None:
    report = build_report(positional_dir)
    assert "sequential" not in report.data and "tab-sequential" not in report.html


def test_sequential_without_paths_has_no_figure(sequential_dir: Path) -> None:
    doc = json.loads((sequential_dir / "sequential.json").read_text())
    for c in doc["cells"]:
        c.update(log_e_path=[], checkpoints=[], evaluations_at_checkpoints=[])
    (sequential_dir / "sequential.json").write_text(json.dumps(doc))
    report = build_report(sequential_dir)
    assert "tab-sequential" in report.html
    assert "fig-sequential" not in [f["id"] for f in report.data["figures"]]


@pytest.mark.parametrize(("edit", "match"), [
    (lambda d: d.pop("cells"), "missing key `cells`"),
    (lambda d: d["cells"][1].pop("budget"), r"cells\[1\]: missing key `budget`"),
])
def test_malformed_sequential_json_is_named(sequential_dir: Path, edit: Any,
                                            match: str) -> None:
    doc = json.loads((sequential_dir / "sequential.json").read_text())
    edit(doc)
    (sequential_dir / "sequential.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match=match):
        build_report(sequential_dir)


def test_a_ci_width_run_shows_pb_at_the_stop(sequential_dir: Path) -> None:
    path = sequential_dir / "sequential.json"
    doc = json.loads(path.read_text())
    doc["options"]["ci_width"] = 0.1
    cell = doc["cells"][1]
    cell.update(decision="ci_width_reached", ci_width_reached=True,
                pb={"value": 0.012, "ci_low": 0.0, "ci_high": 0.08, "n_queries": 20})
    path.write_text(json.dumps(doc))
    report = build_report(sequential_dir)
    html = report.html
    assert "PB at stop [95% CI]" in html and "0.012 [0.000, 0.080]" in html
    assert "PB known to the requested CI width" in html
    assert "at most 0.1 wide" in html
    parser = _Numbers()
    parser.feed(html)
    paths = dict(parser.cells)
    assert json.loads(paths["sequential/cells/1/pb/value"]) == 0.012
    assert resolve(report.data, "sequential/cells/1/pb/value") == 0.012


def test_without_ci_width_there_is_no_pb_column(sequential_dir: Path) -> None:
    assert "PB at stop" not in build_report(sequential_dir).html
