"""``recaudit joint`` end to end on the real ML-100K with the packaged SmolLM2 on the
llama.cpp engine: both studies' figures from one run, ``joint.json`` read back, the
rerun resumes, and bad settings are refused before the model runs."""

from __future__ import annotations

import importlib.util
import json

import pytest
from typer.testing import CliRunner

from recaudit.cli import app
from recaudit.exceptions import InputError
from recaudit.joint import JointAudit, JointOptions

runner = CliRunner()

NEEDS_XLLAMACPP = pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None,
    reason="xllamacpp is not installed: pip install 'recaudit[llamacpp]' to run this test")

SMALL = ["--users", "24", "--orders", "2", "--k", "3", "--min-group-size", "3",
         "--n-boot", "200", "--no-report", "--json"]


@pytest.fixture(scope="module")
def joint_run(ml100k_path, smollm2_path, tmp_path_factory):
    out = tmp_path_factory.mktemp("joint")
    result = runner.invoke(app, ["joint", "--data", str(ml100k_path), "--out", str(out),
                                 *SMALL])
    assert result.exit_code == 0, result.output
    return out, json.loads(result.stdout)


@NEEDS_XLLAMACPP
@pytest.mark.slow
def test_one_run_gives_both_studies_figures(joint_run):
    out, doc = joint_run
    assert doc["users"] == 24 and doc["orders"] == 2 and doc["k"] == 3
    pos = doc["positional"]
    assert pos["n_evaluations"] + pos["n_discarded"] == 48 and pos["k"] == 3
    assert len(pos["position_distribution"]) == 3
    for system in ("llm", "retriever"):
        ev = doc[system]
        assert sum(g["n_users"] for g in ev["groups"].values()) == 24
        assert "hit@1" in ev["rd"] and "arp@1" in ev["popularity_bias"]["overall"]
    lift = doc["position_lift_by_class"]
    assert "reason" in lift or set(lift["classes"]) == {"head", "tail"}
    # joint.json holds the same document and reads back into the result type
    saved = json.loads((out / "joint.json").read_text(encoding="utf-8"))
    back = JointAudit.from_dict(saved)
    assert back.users == 24 and back.positional.k == 3
    assert back.to_dict()["positional"]["pb"] == saved["positional"]["pb"]


@NEEDS_XLLAMACPP
@pytest.mark.slow
def test_rerun_resumes_without_new_calls_and_gives_the_same_numbers(joint_run, ml100k_path):
    out, doc = joint_run
    again = runner.invoke(app, ["joint", "--data", str(ml100k_path), "--out", str(out),
                                *SMALL])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout) == doc


@pytest.mark.parametrize(("args", "field"), [
    (["--users", "1"], "`users`"),
    (["--orders", "100000"], "`orders`"),
    (["--k", "1"], "`k`"),
    (["--n-boot", "10"], "`n_boot`"),
    (["--n-threads", "100000"], "`n_threads`"),
])
def test_bad_settings_exit_2_naming_the_setting(args, field, tmp_path):
    result = runner.invoke(app, ["joint", "--data", str(tmp_path), *args])
    assert result.exit_code == 2
    assert field in result.output and "Traceback" not in result.output


def test_a_data_path_that_is_not_a_folder_is_refused(tmp_path):
    result = runner.invoke(app, ["joint", "--data", str(tmp_path / "absent")])
    assert result.exit_code == 2 and "`data`" in result.output


def test_an_unknown_attribute_is_refused_before_the_model_runs(ml100k_path, tmp_path):
    result = runner.invoke(app, ["joint", "--data", str(ml100k_path), "--attribute",
                                 "shoe_size", "--out", str(tmp_path / "o"), "--json"])
    assert result.exit_code == 2 and "`attribute`" in result.output
    assert not (tmp_path / "o" / "run").exists()


def test_an_absent_protected_value_is_refused(ml100k_path, tmp_path):
    with pytest.raises(InputError, match="`protected`"):
        from recaudit.joint import run_joint_audit

        run_joint_audit(JointOptions(data=ml100k_path, protected="X"), tmp_path)
