"""`positional run --sequential` then `recaudit report`: the sequential section, end to end."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from helpers import write_config
from recaudit.audit import RunOptions
from recaudit.cli import app

MODELS = """\
[[models]]
name = "biased"
backend = "simulated"
p_bias = 0.6

[[models]]
name = "null"
backend = "simulated"
p_bias = 0.0
"""


def test_sequential_run_folder_reports_its_decision(tmp_path, retriever, emb_cache):
    from recaudit.audit._config import load_audit_config
    from recaudit.audit._run import run_audit
    from recaudit.audit._sequential_driver import SequentialOptions

    path = write_config(tmp_path, cache_dir=emb_cache, n_queries=30, n_perms=5, models=MODELS)
    run = tmp_path / "run"
    # the run in process (the CLI would load the embedder); the CLI then resumes it:
    # nothing left to evaluate, sequential.json rewritten, analysis.json written
    run_audit(load_audit_config(path), out_dir=run, retriever=retriever,
              run=RunOptions(sequential=SequentialOptions(alpha=0.05, max_evaluations=100)))
    res = CliRunner().invoke(app, ["positional", "run", str(path), "--out", str(run),
                                   "--resume", "--sequential", "--max-evaluations", "100",
                                   "--quiet"])
    assert res.exit_code == 0, res.output
    # the verdict is the sequential decision, never the descriptive fixed-sample tests'
    verdict = " ".join(res.output.split())
    assert "Positional bias detected (sequential test, alpha = 0.05" in verdict
    assert "biased k=" in verdict and "Holm across groups" not in verdict
    # the plain words of what the model did, without the fixed-sample tests' sentence
    assert "Where position mattered most (biased, k=" in verdict
    assert "How much position decided:" in verdict and "Chance alone" not in verdict
    assert " nan" not in verdict
    out = tmp_path / "report.html"
    rep = CliRunner().invoke(app, ["report", str(run), "-o", str(out)])
    assert rep.exit_code == 0, rep.output
    html = out.read_text(encoding="utf-8")
    sidecar = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    doc = json.loads((run / "sequential.json").read_text(encoding="utf-8"))
    assert sidecar["sequential"] == doc
    cells = {c["model"]: c for c in doc["cells"]}
    assert cells["biased"]["decision"] == "rejected"
    assert cells["biased"]["evaluations_used"] < cells["biased"]["budget"] == 100
    assert "rejected uniformity (stopped)" in html and "Sequential audit" in html
    assert f'data-path="sequential/cells/0/evaluations_used" ' \
           f'data-value="{cells["biased"]["evaluations_used"]}"' in html
    assert "fig-sequential" in [f["id"] for f in sidecar["figures"]]
