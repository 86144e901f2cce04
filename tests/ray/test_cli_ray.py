"""`--executor ray` through the CLI: a second process joins the cluster by address."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest
from typer.testing import CliRunner

from helpers import write_config
from recaudit.audit._config import load_audit_config
from recaudit.audit._run import run_audit
from recaudit.cli import app
from recaudit.exceptions import MissingExtraError


def test_positional_run_joins_a_cluster_by_address(tmp_path, ray_cluster, retriever,
                                                   emb_cache):
    config = write_config(tmp_path, cache_dir=emb_cache, n_queries=4, n_perms=5)
    local = run_audit(load_audit_config(config), out_dir=tmp_path / "local", retriever=retriever)
    proc = subprocess.run(
        [sys.executable, "-m", "recaudit.cli", "positional", "run", str(config),
         "--out", str(tmp_path / "ray"), "--executor", "ray", "--ray-address", ray_cluster,
         "--json", "--no-analyze"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["run"]["planned"] == out["run"]["ran_now"] == 20
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "ray" / "evaluations.parquet").drop(columns="latency_s"),
        pd.read_parquet(local.evaluations_path).drop(columns="latency_s"))


def test_unknown_executor_exits_2(tmp_path, emb_cache):
    config = write_config(tmp_path, cache_dir=emb_cache)
    result = CliRunner().invoke(app, ["positional", "run", str(config), "--out",
                                      str(tmp_path / "r"), "--executor", "spark"])
    assert result.exit_code == 2
    assert "`executor` must be one of" in result.output
    assert not (tmp_path / "r").exists()


def test_missing_ray_names_the_extra(monkeypatch):
    from recaudit._ray_session import check_executor

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(MissingExtraError, match=r"recaudit\[ray\]"):
        check_executor("ray", None)
    assert check_executor("local", None) == "local"  # the default never needs ray


def test_fairness_run_without_ray_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    (tmp_path / "s.toml").write_text('[study]\noutput = "out"\n[[datasets]]\npath = "x.csv"\n'
                                     'format = "table"\nattribute = "g"\nprotected = "F"\n')
    result = CliRunner().invoke(app, ["fairness", "run", str(tmp_path / "s.toml"),
                                      "--executor", "ray"])
    assert result.exit_code != 0
    assert "recaudit[ray]" in result.output
