"""One rule for relative paths in both config commands: the config file's folder;
the packaged configs (no folder of their own): the working directory. And the demo's
settings come from demo.toml alone."""

from __future__ import annotations

import json
import re
import tomllib
from importlib import resources

import pytest

from helpers import write_config
from recaudit.audit import demo_config as _demo_config
from recaudit.audit._config import load_audit_config as load_audit
from recaudit.exceptions import ConfigError
from recaudit.fairness.study import default_config_path
from recaudit.fairness.study import load_fairness_config as load_study

STUDY = """\
[study]
output = "runs/study"

[[datasets]]
path = "data/ml"
users = "data/users.csv"
format = "table"
attribute = "gender"
protected = "F"

[[datasets]]
name = "abs"
path = "{absolute}"
format = "recbole"
attribute = "gender"
protected = "F"

[models.MF]
grid = {{ learning_rate = [0.01] }}
"""


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """Run from a folder that is NOT the config's."""
    cwd = tmp_path / "a" / "cwd"
    cwd.mkdir(parents=True)
    monkeypatch.chdir(cwd)
    return cwd


def test_study_config_paths_start_at_its_folder(tmp_path, elsewhere):
    folder = tmp_path / "configs"
    folder.mkdir()
    absolute = tmp_path / "abs" / "ml-1m"
    (folder / "study.toml").write_text(STUDY.format(absolute=absolute), encoding="utf-8")
    study = load_study(folder / "study.toml")
    assert study.output == folder / "runs/study"
    assert study.datasets[0].path == folder / "data/ml"
    assert study.datasets[0].users == folder / "data/users.csv"
    assert study.datasets[1].path == absolute  # absolute paths stay as written
    # the same file loaded through a relative path: same answer
    relative = load_study("../../configs/study.toml")
    assert relative.output.resolve() == (folder / "runs/study").resolve()


def test_packaged_study_config_paths_start_at_the_working_directory(elsewhere):
    study = load_study(default_config_path())
    assert study.output == elsewhere / "runs/fairness-ml-100k"
    assert study.datasets[0].path == elsewhere / "../shared/data/ml-100k"
    header = default_config_path().read_text(encoding="utf-8").split("[study]")[0]
    assert "current working directory" in header and "its own folder" in header


def test_audit_config_paths_start_at_its_folder(tmp_path, elsewhere):
    folder = tmp_path / "configs"
    folder.mkdir()
    cfg = load_audit(write_config(folder, cache_dir="emb-cache"))
    assert cfg.catalog.path == folder / "catalog.csv"
    assert cfg.retrieval.cache_dir == folder / "emb-cache"


def _demo_toml() -> dict:
    text = resources.files("recaudit.llm").joinpath("configs", "demo.toml").read_text(
        encoding="utf-8")
    assert "current working directory" in text.split("seed =")[0]  # header states the rule
    return tomllib.loads(text)


def test_demo_defaults_come_from_demo_toml(tmp_path, elsewhere):
    toml = _demo_toml()
    with pytest.raises(ConfigError, match="demo catalog not found at ../shared/data/myntra"):
        _demo_config()
    # demo.toml's relative catalog path, from the working directory
    catalog = elsewhere / toml["catalog"]["path"]
    catalog.parent.mkdir(parents=True)
    catalog.write_text("ProductID,ProductName,Description\n1,a,b\n", encoding="utf-8")
    cfg = _demo_config()
    assert cfg.catalog.path == catalog
    assert cfg.queries.n == toml["queries"]["n"]
    assert cfg.design.n_perms == toml["design"]["n_perms"]
    assert list(cfg.retrieval.k) == toml["retrieval"]["k"]
    assert cfg.prompt.template is not None and cfg.prompt.template.name == "demo_prompt.toml"
    # options override only what they name
    other = _demo_config(queries=3, k=4)
    assert other.queries.n == 3 and list(other.retrieval.k) == [4]
    assert other.design.n_perms == toml["design"]["n_perms"]


def test_demo_help_says_defaults_come_from_demo_toml():
    from typer.testing import CliRunner

    from recaudit.cli import app

    out = CliRunner().invoke(app, ["positional", "demo", "--help"], env={"COLUMNS": "200"})
    assert out.exit_code == 0
    assert out.output.count("demo.toml") >= 4
    assert "[default: 20]" not in out.output and "[default: 8]" not in out.output


@pytest.mark.slow
def test_demo_ends_by_writing_the_report(tmp_path, myntra_csv, smollm2_path):
    """The newcomer's path: `positional demo` writes RUN_DIR/report.html and says where."""
    from typer.testing import CliRunner

    from recaudit.cli import app

    out = tmp_path / "demo"
    res = CliRunner().invoke(app, ["positional", "demo", "--catalog", str(myntra_csv),
                                   "--queries", "2", "--perms", "2", "--k", "3",
                                   "--out", str(out)], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    page = out / "report.html"
    assert page.is_file() and (out / "report.json").is_file()
    assert page.resolve().as_uri() in res.stdout.replace("\n", "")
    assert "Positional bias" in page.read_text(encoding="utf-8")
    from recaudit.cli.positional import DEMO_CI_WIDTH

    seq = json.loads((out / "sequential.json").read_text(encoding="utf-8"))
    assert seq["options"]["ci_width"] == DEMO_CI_WIDTH  # a verdict with an interval
    words = " ".join(re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8")).split())
    assert "An anytime-valid sequential test decided this audit" in words
    assert "against the threshold 20 after" in words  # the demo's one cell, named
