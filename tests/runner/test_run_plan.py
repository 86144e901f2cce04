"""`positional run --plan`: a plan's design sizes the run (k, queries, orders, stopping)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from helpers import write_config
from recaudit.audit import apply_plan, choose_design, load_audit_config, run_audit
from recaudit.cli import app
from recaudit.exceptions import ConfigError

runner = CliRunner()
FAST = ["--reps", "60", "--half-width-reps", "40", "--seed", "3"]


def _plan(*args: str) -> list[dict]:
    res = runner.invoke(app, ["positional", "plan", *args, *FAST, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_the_chosen_design_sizes_the_run(tmp_path, retriever, emb_cache):
    plan = _plan("--k", "3", "--orders", "2", "--p-bias", "0.3", "--queries", "4")
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=8, n_perms=5))
    sized, seq = apply_plan(cfg, choose_design(plan, "fixed"))
    assert seq is None and sized.retrieval.k == (3,) and sized.queries.n == 4
    assert sized.design.n_perms == 2 and sized.models == cfg.models
    res = run_audit(sized, out_dir=tmp_path / "run", retriever=retriever)
    assert res.planned == 4 * 2


def test_sequential_and_exact_designs_turn_their_levers_on(tmp_path, emb_cache):
    plan = _plan("--k", "3", "--orders", "2", "--p-bias", "0.3", "--queries", "4")
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache))
    _, seq = apply_plan(cfg, choose_design(plan, "sequential"))
    assert seq is not None and seq.alpha == pytest.approx(0.05)
    assert seq.max_evaluations >= 4 * 2
    exact, _ = apply_plan(cfg, choose_design(plan, "exact"))
    assert exact.prompt.choice_probabilities is True


def test_plan_errors_name_the_fix(tmp_path, emb_cache):
    plan = _plan("--k", "3", "--orders", "2", "--p-bias", "0.3", "--queries", "4",
                 "--temperatures", "2")
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    config = write_config(tmp_path, cache_dir=emb_cache)
    res = runner.invoke(app, ["positional", "run", str(config), "--plan",
                              str(tmp_path / "plan.json"), "--design", "fixed"])
    assert res.exit_code == 2 and "temperature" in res.output
    res = runner.invoke(app, ["positional", "run", str(config), "--plan",
                              str(tmp_path / "plan.json"), "--design", "nope"])
    assert res.exit_code == 2 and "no design 'nope'" in res.output
    with pytest.raises(ConfigError, match="cheapest"):
        choose_design([{**d, "cheapest": False} for d in plan], None)
