"""The positional report's companion files are read into their result types (issue 36,
item 2): ``study.json`` (:class:`~recaudit.positional.StudyFile`), ``sequential.json``
(:class:`~recaudit.audit.SequentialAudit`), ``mitigation.json``
(:class:`~recaudit.audit.MitigationComparison`) and ``run.json``'s ``spend``
(:class:`~recaudit.audit.RunSpend`).

Each type's ``to_dict`` gives back the JSON its writer wrote, byte for byte once dumped
the writer's way; its ``from_dict`` refuses a missing key or a string where a number
belongs with one line naming the file and the key, and ``recaudit report`` exits 2 with
that line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from helpers import synthetic_table
from recaudit import InputError
from recaudit.audit import (
    ArmRun,
    MitigationComparison,
    MitigationConfig,
    RunSpend,
    SequentialAudit,
    compare_arms,
    mitigation_comparison,
)
from recaudit.audit._mitigation_compare import write_mitigation_json
from recaudit.audit._spend import record_spend
from recaudit.cli import app
from recaudit.positional import (
    AnalysisOptions,
    PositionalStudyResult,
    StudyComparison,
    StudyFile,
    StudySettings,
    analyze_study,
)
from recaudit.report import build_report

Edit = Callable[[dict[str, Any]], Any]


def _spend_table(*, priced_model: str = "cheap") -> pd.DataFrame:
    rows = [{"model": model, "k": 5, "temperature": 0.0, "condition": "c",
             "prompt_tokens": 100 + i, "completion_tokens": 2, "latency_s": 0.5,
             "retries": 0}
            for model, n in ((priced_model, 3), ("free", 2)) for i in range(n)]
    return pd.DataFrame(rows)


@pytest.fixture
def spend_dir(positional_dir: Path) -> Path:
    """The positional run folder with a ``run.json`` whose ``spend`` one model priced."""
    manifest = positional_dir / "run.json"
    manifest.write_text(json.dumps({"sessions": [{"backends": []}]}))
    record_spend(manifest, _spend_table(), wall_s=4.25, ran_now=5,
                 prices={"cheap": (2.0, 8.0)})
    return positional_dir


def _refused(folder: Path, match: str) -> None:
    """``build_report`` raises one line matching ``match``; the CLI exits 2 with it."""
    with pytest.raises(InputError, match=match) as caught:
        build_report(folder)
    assert "\n" not in str(caught.value)
    res = CliRunner().invoke(app, ["report", str(folder), "-o", str(folder / "r.html")])
    assert res.exit_code == 2, res.output
    assert re.search(match, " ".join(res.output.split())), res.output


# --------------------------------------------------------------------------- spend
def test_spend_reads_back_byte_for_byte(spend_dir: Path) -> None:
    text = (spend_dir / "run.json").read_text()
    doc = json.loads(text)
    spend = RunSpend.from_dict(doc["spend"])
    assert spend.to_dict() == doc["spend"]
    assert json.dumps({**doc, "spend": spend.to_dict()}, indent=2) == text
    assert RunSpend.from_dict(spend.to_dict()) == spend
    cheap, free = spend.cells
    assert (cheap.model, cheap.calls, cheap.prompt_tokens) == ("cheap", 3, 303)
    assert free.money is None and spend.total.wall_s == 4.25
    # the report renders the type, its sidecar is the type's JSON
    assert build_report(spend_dir).data["spend"] == spend.to_dict()


def test_spend_without_any_cell_reads_back(tmp_path: Path) -> None:
    manifest = tmp_path / "run.json"
    manifest.write_text(json.dumps({"sessions": [{"backends": []}]}))
    written = record_spend(manifest, _spend_table().iloc[:0], wall_s=1.0, ran_now=0)
    assert RunSpend.from_dict(written.to_dict()) == written
    assert json.loads(manifest.read_text())["spend"]["total"]["latency_s"] == 0.0


@pytest.mark.parametrize(("edit", "key"), [
    (lambda s: s["cells"][1].pop("calls"), r"spend`, cells\[1\]: missing key `calls`"),
    (lambda s: s["cells"][0].update(prompt_tokens="303"),
     r"spend`, cells\[0\]: `prompt_tokens` must be a whole number"),
    (lambda s: s["total"].update(latency_s="2.5"),
     r"spend`, total: `latency_s` must be a number"),
    (lambda s: s.pop("total"), r"spend`: missing key `total`"),
    (lambda s: s.update(cells={}), r"spend`: `cells` must be a JSON list, got dict"),
])
def test_a_malformed_spend_is_refused(spend_dir: Path, edit: Edit, key: str) -> None:
    path = spend_dir / "run.json"
    doc = json.loads(path.read_text())
    edit(doc["spend"])
    path.write_text(json.dumps(doc))
    _refused(spend_dir, r"run\.json, `" + key)


# ---------------------------------------------------------------------- sequential
def test_sequential_json_reads_back(sequential_dir: Path) -> None:
    text = (sequential_dir / "sequential.json").read_text()
    audit = SequentialAudit.from_dict(json.loads(text), where="sequential.json")
    assert json.dumps(audit.to_dict(), indent=2) == text
    assert SequentialAudit.from_dict(audit.to_dict()) == audit
    biased = audit.cells[0]
    assert biased.decision == "rejected" and biased.evidence is not None
    assert biased.evidence.reject and len(biased.evidence.cs_low) == biased.k
    assert build_report(sequential_dir).data["sequential"] == audit.to_dict()


def test_a_cell_before_its_first_round_has_no_evidence(sequential_dir: Path) -> None:
    path = sequential_dir / "sequential.json"
    doc = json.loads(path.read_text())
    head = ("model", "k", "temperature", "condition", "decision", "planned_evaluations",
            "budget")
    doc["cells"][1] = {key: doc["cells"][1][key] for key in head}
    doc["cells"][1]["decision"] = "running"
    audit = SequentialAudit.from_dict(doc)
    assert audit.cells[1].evidence is None and audit.to_dict() == doc
    path.write_text(json.dumps(doc))
    assert "running (not finished)" in build_report(sequential_dir).html


@pytest.mark.parametrize(("edit", "key"), [
    (lambda d: d["cells"][0].pop("e_value"), r", cells\[0\]: missing key `e_value`"),
    (lambda d: d.update(alpha_per_cell="0.025"), r": `alpha_per_cell` must be a number"),
    (lambda d: d["cells"][1]["cs_low"].__setitem__(0, "0.1"),
     r", cells\[1\]: `cs_low` must be a number"),
    (lambda d: d["options"].pop("answers"), r", options: missing key `answers`"),
    (lambda d: d["cells"][0].update(counts=3),
     r", cells\[0\]: `counts` must be a JSON list, got int"),
])
def test_a_malformed_sequential_json_is_refused(sequential_dir: Path, edit: Edit,
                                                key: str) -> None:
    path = sequential_dir / "sequential.json"
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    _refused(sequential_dir, r"sequential\.json" + key)


# ---------------------------------------------------------------------- mitigation
@pytest.fixture
def mitigation_dir(positional_dir: Path) -> Path:
    """The positional run folder with the ``mitigation.json`` of two arms (``none`` and
    ``ensemble``) compared by :func:`compare_arms` on synthetic evaluations."""
    arms = []
    for method, name, p_bias, tokens in (("none", "sim", 0.4, 100),
                                         ("ensemble", "sim+ensemble(m=3,majority)", 0.0, 300)):
        table, _ = synthetic_table(models={name: p_bias}, conditions=("permutation",),
                                   temperatures=(0.6,), n_queries=15, seed=len(arms))
        table["prompt_tokens"], table["completion_tokens"] = tokens, 3
        folder = positional_dir / "arms" / method
        folder.mkdir(parents=True)
        table.to_parquet(folder / "evaluations.parquet", index=False)
        arms.append(ArmRun(method, folder, folder / "evaluations.parquet", {}))
    mcfg = MitigationConfig(methods=("ensemble",), n_boot=50)
    write_mitigation_json(compare_arms(arms, mcfg, seed=1, n_resamples=49), positional_dir)
    return positional_dir


def test_mitigation_json_reads_back_byte_for_byte(mitigation_dir: Path) -> None:
    text = (mitigation_dir / "mitigation.json").read_text()
    comparison = MitigationComparison.from_dict(json.loads(text))
    assert json.dumps(comparison.to_dict(), indent=2, allow_nan=False) == text
    assert MitigationComparison.from_dict(comparison.to_dict()).to_dict() == \
        comparison.to_dict()
    (group,) = comparison.groups
    none, ensemble = group.arms
    assert (none.mitigation, ensemble.calls_multiplier) == ("none", 3.0)
    assert none.inside_true_set is None and comparison.config.n_boot == 50
    report = build_report(mitigation_dir)
    assert report.data["mitigation"] == {**comparison.to_dict(), "out": str(mitigation_dir)}
    assert f"--out {mitigation_dir}" in report.html
    assert f"{ensemble.pb.value:.3f} [{ensemble.pb.ci.low:.3f}" in report.html


def test_the_mitigation_writer_builds_the_type_it_writes(mitigation_dir: Path,
                                                         tmp_path: Path) -> None:
    """``mitigation_comparison`` is the type ``mitigation.json`` reads back into, and
    ``compare_arms`` its ``to_dict``: written either way, the same bytes."""
    arms = [ArmRun(m, mitigation_dir / "arms" / m,
                   mitigation_dir / "arms" / m / "evaluations.parquet", {})
            for m in ("none", "ensemble")]
    mcfg = MitigationConfig(methods=("ensemble",), n_boot=50)
    typed = mitigation_comparison(arms, mcfg, seed=1, n_resamples=49)
    assert isinstance(typed, MitigationComparison)
    written = write_mitigation_json(typed, tmp_path).read_text()
    assert written == (mitigation_dir / "mitigation.json").read_text()
    assert MitigationComparison.from_dict(json.loads(written)).to_dict() == typed.to_dict()


@pytest.mark.parametrize(("edit", "key"), [
    (lambda d: d["groups"][0]["arms"][1].pop("calls_multiplier"),
     r", groups\[0\], arms\[1\]: missing key `calls_multiplier`"),
    (lambda d: d["groups"][0]["arms"][0]["pb"].update(value="0.3"),
     r", groups\[0\], arms\[0\], `pb`: .*`value` must be a number"),
    (lambda d: d["groups"][0].update(k="5"), r", groups\[0\]: `k` must be a whole number"),
    (lambda d: d["config"].pop("n_boot"), r", config: missing key `n_boot`"),
    (lambda d: d["config"]["methods"].append(3), r", config: `methods` must be text, got 3"),
])
def test_a_malformed_mitigation_json_is_refused(mitigation_dir: Path, edit: Edit,
                                                key: str) -> None:
    path = mitigation_dir / "mitigation.json"
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    _refused(mitigation_dir, r"mitigation\.json" + key)


# --------------------------------------------------------------------------- study
@pytest.fixture(scope="module")
def study_result() -> PositionalStudyResult:
    """The study of a small grid (two models, every condition, with candidates)."""
    table, cands = synthetic_table(models={"biased": 0.5, "fair": 0.0}, n_queries=12,
                                   n_evals=6, discard_rate=0.02, seed=1)
    return analyze_study(table, AnalysisOptions(n_boot=50, n_resamples=49),
                         candidates=cands, rng=3)


@pytest.fixture(scope="module")
def study_text(tmp_path_factory: pytest.TempPathFactory,
               study_result: PositionalStudyResult) -> str:
    """``study.json`` of :func:`study_result`."""
    folder = tmp_path_factory.mktemp("study")
    return study_result.save(folder, write_analysis=False)["json"].read_text()


@pytest.fixture
def study_dir(positional_dir: Path, study_text: str) -> Path:
    (positional_dir / "study.json").write_text(study_text)
    return positional_dir


def test_study_json_reads_back_byte_for_byte(study_dir: Path, study_text: str) -> None:
    study = StudyFile.from_dict(json.loads(study_text))
    assert json.dumps(study.to_dict(), indent=1, allow_nan=False) == study_text
    assert StudyFile.from_dict(study.to_dict()).to_dict() == study.to_dict()
    assert study.rows and study.comparisons and study.dispersion and study.skipped
    # a skip names only the cell keys that apply: an analysis-wide one has none
    assert any(s.model is not None and s.condition is None for s in study.skipped)
    report = build_report(study_dir)
    assert report.data["study"] == study.to_dict()
    assert 'id="tab-study-cells"' in report.html


def test_the_study_result_holds_the_types_it_writes(study_result: PositionalStudyResult,
                                                     study_text: str) -> None:
    """The result's comparisons, regressions, skips and settings are the types
    ``study.json`` reads back into; its file is the table's rows beside them. They
    still read like the JSON objects they are written as (``c["pvalue"]``)."""
    written = study_result.to_file()
    assert json.dumps(written.to_dict(), indent=1, allow_nan=False) == study_text
    assert written.comparisons is study_result.comparisons
    assert len(written.rows) == len(study_result.table)
    first = study_result.comparisons[0]
    assert isinstance(first, StudyComparison) and first["pvalue"] == first.pvalue
    assert isinstance(study_result.settings, StudySettings)
    assert study_result.settings["seed"] == 3
    with pytest.raises(KeyError, match="nope"):
        study_result.settings["nope"]


@pytest.mark.parametrize(("edit", "key"), [
    (lambda d: d["rows"][3].pop("metric"), r", rows\[3\]: missing key `metric`"),
    (lambda d: d["comparisons"][0].update(pvalue="0.2"),
     r", comparisons\[0\]: `pvalue` must be a number"),
    (lambda d: d["dispersion"][0].update(n_queries=2.5),
     r", dispersion\[0\]: `n_queries` must be a whole number"),
    (lambda d: d["settings"].pop("n_queries_complete"),
     r", settings: missing key `n_queries_complete`"),
    (lambda d: d.update(skipped=None), r": `skipped` must be a JSON list, got NoneType"),
])
def test_a_malformed_study_json_is_refused(study_dir: Path, edit: Edit, key: str) -> None:
    path = study_dir / "study.json"
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    _refused(study_dir, r"study\.json" + key)
