"""`positional run` leaves a folder that `recaudit report` renders without extra steps."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from helpers import prepared_run, write_config
from recaudit.cli import app
from recaudit.report import build_report


def test_run_writes_analysis_json_for_the_report(tmp_path, retriever, emb_cache):
    path = write_config(tmp_path, cache_dir=emb_cache, n_queries=6, n_perms=5)
    # prepared in process (no embedder load in the CLI), journal emptied
    run = prepared_run(path, tmp_path / "run", retriever)
    result = CliRunner().invoke(
        app, ["positional", "run", str(path), "--out", str(run), "--resume", "--json"]
    )
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)["analysis"]
    written = json.loads((run / "analysis.json").read_text(encoding="utf-8"))
    assert written == printed
    assert written[0]["n_evaluations"] + written[0]["n_discarded"] == 30
    report = build_report(run)
    assert "POB-UNBP" in report.html
    assert report.data["kind"] == "positional"
