"""`recaudit positional plan`: JSON shape, pilot folders, bounded options (exit 2)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from recaudit.cli import app
from recaudit.positional import effect_from_evaluations, plan_audit, simulate_evaluations

runner = CliRunner()
FAST = ["--reps", "100", "--half-width-reps", "10"]


def _plan(*args: str) -> list[dict]:
    res = runner.invoke(app, ["positional", "plan", *args, *FAST, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_json_lists_every_design_with_what_a_run_needs():
    rows = _plan("--k", "5", "--orders", "20", "--p-bias", "0.1", "--power", "0.8",
                 "--alpha", "0.05", "--price-per-mtok", "0.5/2", "--prompt-tokens", "400",
                 "--completion-tokens", "10", "--calls-per-s", "8")
    assert [r["design"] for r in rows] == ["fixed", "sequential", "exact", "exact+sequential"]
    for r in rows:
        assert {"design", "queries", "calls", "power", "k", "orders", "alpha", "answers",
                "stopping", "max_evaluations", "wall_s", "money"} <= set(r)
        assert r["k"] == 5 and r["orders"] == 20 and r["alpha"] == 0.05
        assert r["power"] >= 0.8 and r["queries"] >= 2
        assert r["money"] == pytest.approx(r["calls"] * (400 * 0.5 + 10 * 2) / 1e6)
    assert sum(r["cheapest"] for r in rows) == 1


def test_flags_pick_the_designs_beside_the_fixed_baseline():
    assert [r["design"] for r in _plan("--p-bias", "0.1", "--exact")] == ["fixed", "exact"]
    seq = _plan("--pb", "0.08", "--sequential", "--queries", "30")
    assert [r["design"] for r in seq] == ["fixed", "sequential"]
    assert all(r["queries"] == 30 for r in seq)
    assert seq[0]["pb"] == pytest.approx(0.08) and seq[0]["effect_source"] == "pb"


def test_table_output_marks_the_cheapest():
    res = runner.invoke(app, ["positional", "plan", "--p-bias", "0.1", *FAST])
    assert res.exit_code == 0, res.output
    assert "exact+sequential *" in res.stdout
    assert "cheapest design reaching 80% power" in res.stdout


def test_the_table_with_tokens_time_and_money_fits_80_columns():
    res = runner.invoke(app, ["positional", "plan", "--p-bias", "0.03", "--price-per-mtok",
                              "0.15/0.60", "--prompt-tokens", "600", "--completion-tokens",
                              "20", "--calls-per-s", "4", *FAST], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    assert "\u2026" not in res.stdout and max(map(len, res.stdout.splitlines())) <= 80
    assert "2.0M/66k" in res.stdout  # fixed: 165 queries x 20 orders x 600 / 20 tokens
    row = next(ln.split() for ln in res.stdout.splitlines() if "exact+sequential" in ln)
    assert "/" in row[4]  # its calls: expected/budget, as the sampled sequential design's


def test_half_width_sizes_the_fixed_designs():
    """`--half-width W`: the fixed designs sized so that PB's CI half-width is at most W
    (their power at that size shown), marked against the width."""
    rows = _plan("--k", "5", "--orders", "20", "--p-bias", "0.1", "--half-width", "0.02")
    assert [r["design"] for r in rows] == ["fixed", "exact"]
    for r in rows:
        assert r["target_half_width"] == 0.02 and r["pb_half_width"] <= 0.02
        assert r["adequate"] and r["queries"] >= 2 and r["power"] > 0.9
    assert rows[1]["queries"] < rows[0]["queries"] and rows[1]["cheapest"]
    res = runner.invoke(app, ["positional", "plan", "--p-bias", "0.1", "--half-width",
                              "0.02", *FAST])
    assert res.exit_code == 0, res.output
    text = " ".join(res.stdout.split())
    assert "queries for PB ± 0.02" in text and "cheapest design reaching PB ± 0.02" in text


@pytest.fixture()
def pilot_run(tmp_path):
    run = tmp_path / "pilot"
    run.mkdir()
    table = simulate_evaluations(60, k=5, n_perms=10, p_bias=0.3, rng=1).to_frame()
    table["k"] = 5
    table["model"] = "sim"
    table["temperature"] = 0.0
    table["condition"] = "permutation"
    table["latency_s"] = 0.5
    table["prompt_tokens"] = 300
    table["completion_tokens"] = np.where(np.arange(len(table)) % 2, 10, 20)
    table.to_parquet(run / "evaluations.parquet", index=False)
    (run / "config.resolved.json").write_text(json.dumps({"concurrency": 4}))
    return run


def test_pilot_gives_effect_tokens_and_rate(pilot_run):
    rows = _plan("--pilot", str(pilot_run), "--price-per-mtok", "1")
    fixed = rows[0]
    assert fixed["effect_source"] == "pilot"
    assert 0.15 < fixed["pb"] < 0.32  # truth 0.24
    assert fixed["prompt_tokens"] == pytest.approx(300 * fixed["calls"])
    assert fixed["completion_tokens"] == pytest.approx(15 * fixed["calls"])
    assert fixed["wall_s"] == pytest.approx(fixed["calls"] / (4 / 0.5))  # 4 in flight / 0.5 s
    assert fixed["money"] == pytest.approx(fixed["calls"] * 315 / 1e6)


def test_the_rate_counts_the_engine_s_slots_not_the_run_s_concurrency(pilot_run):
    """An in-process llama.cpp engine answers `n_parallel` calls at a time whatever the
    run's concurrency (its latency starts when a slot takes the call): the rate is
    min(concurrency, slots) / latency (measured on SmolLM2: 0.48 calls/s, not 0.97)."""
    (pilot_run / "run.json").write_text(json.dumps({"sessions": [{"backends": [
        {"model": "sim", "engine": "llama.cpp", "n_parallel": 2},
        {"model": "other", "engine": "llama.cpp", "n_parallel": 1}]}]}))
    fixed = _plan("--pilot", str(pilot_run))[0]
    assert fixed["wall_s"] == pytest.approx(fixed["calls"] / (2 / 0.5))  # 2 slots / 0.5 s


@pytest.fixture()
def vectors_pilot(pilot_run):
    """The pilot with choice-probability vectors less biased than its answers (answers
    at p_bias 0.3, vectors at 0.1: as at temperature 0, where the greedy answers are)."""
    table = pd.read_parquet(pilot_run / "evaluations.parquet")
    ev, rel = simulate_evaluations(60, k=5, n_perms=10, p_bias=0.3, rng=1,
                                   return_truth=True)  # the fixture's answers
    assert (ev.position + 1 == table["selected_position"]).all()
    shown = rel[ev.query[:, None], ev.orders]
    probs = 0.9 * shown / shown.sum(axis=1, keepdims=True)
    probs[:, 0] += 0.1
    table["choice_probs"] = [json.dumps(list(p)) for p in probs]
    table.to_parquet(pilot_run / "evaluations.parquet", index=False)
    return pilot_run, table


def test_a_vectors_pilot_plans_the_sampled_designs_with_its_answers(vectors_pilot):
    """The sampled designs get the answers' PB (larger: fewer queries than the vectors'
    effect gives them), the exact designs the vectors' as before; each design says
    which effect it was planned with."""
    run, table = vectors_pilot
    answers = effect_from_evaluations(table, exact=False, rng=0)
    vectors = effect_from_evaluations(table, exact=True, rng=0)
    assert answers.pb > 2 * vectors.pb
    rows = {r["design"]: r for r in _plan("--pilot", str(run))}
    old = {d.design: d for d in plan_audit(vectors, orders=20, reps=100, half_width_reps=10,
                                           rng=0).designs}  # every design on the vectors
    for name, effect in (("fixed", answers), ("sequential", answers), ("exact", vectors),
                         ("exact+sequential", vectors)):
        row = rows[name]
        assert row["effect"] == effect.to_dict() and row["pb"] == effect.pb
        assert row["effect"]["measured_on"] == ("vectors" if "exact" in name else "answers")
    for name in ("fixed", "sequential"):
        assert rows[name]["queries"] < old[name].queries
    assert (rows["exact"]["queries"], rows["exact"]["power"]) == (
        old["exact"].queries, old["exact"].power)
    res = runner.invoke(app, ["positional", "plan", "--pilot", str(run), *FAST])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert f"PB = {answers.pb:.4f} on the answers (sampled designs)" in text
    assert f"{vectors.pb:.4f} on the vectors (exact designs)" in text


def test_vectors_without_parsed_answers_plan_every_design(vectors_pilot):
    run, table = vectors_pilot
    table["selected_position"] = np.nan
    table.to_parquet(run / "evaluations.parquet", index=False)
    res = runner.invoke(app, ["positional", "plan", "--pilot", str(run), "--exact", *FAST,
                              "--json"])
    assert res.exit_code == 0, res.output
    assert "the pilot's answers give no effect" in " ".join(res.stderr.split())
    rows = json.loads(res.stdout)
    assert [r["effect"]["measured_on"] for r in rows] == ["vectors", "vectors"]


def test_a_pilot_without_vectors_plans_every_design_with_its_answers(pilot_run):
    rows = _plan("--pilot", str(pilot_run), "--exact")
    assert [r["effect"]["measured_on"] for r in rows] == ["answers", "answers"]
    assert rows[0]["effect"] == rows[1]["effect"]


def test_pilot_errors_name_the_fix(pilot_run, tmp_path):
    res = runner.invoke(app, ["positional", "plan", "--pilot", str(pilot_run), "--k", "10"])
    assert res.exit_code == 2 and "no evaluation at k = 10" in res.output
    res = runner.invoke(app, ["positional", "plan", "--pilot", str(tmp_path / "none")])
    assert res.exit_code == 2 and "not a run folder" in res.output
    res = runner.invoke(app, ["positional", "plan", "--pilot", str(pilot_run),
                              "--pilot-model", "other"])
    assert res.exit_code == 2 and "no such model" in res.output


@pytest.mark.parametrize(("args", "needle"), [
    (["--k", "30", "--p-bias", "0.1"], "`--k` must be between 2 and 20 (the largest "
                                       "accepted value is 20)"),
    (["--k", "1", "--p-bias", "0.1"], "`--k` must be between 2 and 20"),
    (["--p-bias", "1.5"], "`--p-bias` must be between 0 and 1"),
    (["--pb", "nan"], "`--pb` must be between"),
    (["--pb", "0.85", "--k", "5"], "`pb` must be in [0, 1 - 1/k]"),
    (["--p-bias", "0.1", "--power", "1.2"], "largest accepted value is 0.999"),
    (["--p-bias", "0.1", "--alpha", "0.9"], "`--alpha` must be between"),
    (["--p-bias", "0.1", "--orders", "100000"], "largest accepted value is 10000"),
    (["--p-bias", "0.1", "--queries", "1"], "`--queries` must be between 2"),
    (["--p-bias", "0.1", "--temperatures", "0"], "`--temperatures` must be between 1"),
    (["--p-bias", "0.1", "--reps", "1000000"], "`--reps` must be between"),
    (["--p-bias", "0.1", "--calls-per-s", "0"], "`--calls-per-s` must be between"),
    (["--p-bias", "0.1", "--price-per-mtok", "abc"], "`--price-per-mtok` must be one price"),
    (["--p-bias", "0.1", "--price-per-mtok", "1/2/3"], "`--price-per-mtok` must be one"),
    (["--p-bias", "0.1", "--price-per-mtok", "-1"], "`--price-per-mtok` must be between"),
    ([], "give the effect to detect"),
    (["--p-bias", "0.1", "--pb", "0.1"], "give one effect"),
    (["--p-bias", "0.1", "--half-width", "0"], "`--half-width` must be between"),
    (["--p-bias", "0.1", "--half-width", "0.6"], "largest accepted value is 0.5"),
    (["--p-bias", "0.1", "--half-width", "0.02", "--queries", "40"],
     "give `--half-width` (size for a CI width) or `--queries`"),
    (["--p-bias", "0.1", "--half-width", "0.02", "--sequential"],
     "`--half-width` sizes the fixed designs"),
])
def test_bad_inputs_exit_2_with_one_line(args, needle):
    res = runner.invoke(app, ["positional", "plan", *args])
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert needle in text
    assert "Traceback" not in res.output
    # one message (rich may wrap it at the terminal's width), no usage box
    assert res.output.lstrip().startswith("error:") and res.output.count("error:") == 1


def test_batch_prices_every_design_at_half_the_live_price():
    args = ("--p-bias", "0.1", "--exact", "--price-per-mtok", "0.5/2", "--prompt-tokens",
            "400", "--completion-tokens", "10")
    live, batch = _plan(*args), _plan(*args, "--batch")
    assert [r["design"] for r in batch] == [r["design"] for r in live]
    for lv, bt in zip(live, batch, strict=True):
        assert bt["calls"] == lv["calls"] and bt["queries"] == lv["queries"]
        assert bt["money"] == pytest.approx(0.5 * lv["money"])
        assert (lv["batch_discount"], bt["batch_discount"]) == (1.0, 0.5)
    custom = _plan(*args, "--batch-discount", "0.25")
    assert custom[0]["money"] == pytest.approx(0.25 * live[0]["money"])
    res = runner.invoke(app, ["positional", "plan", *args, "--batch", *FAST])
    assert res.exit_code == 0, res.output
    assert "money at the batch price (0.5 x the live price" in res.stdout


def test_batch_discount_out_of_range_exits_2():
    res = runner.invoke(app, ["positional", "plan", "--p-bias", "0.1",
                              "--batch-discount", "1.5", *FAST])
    assert res.exit_code == 2 and "`--batch-discount` must be between" in res.output
