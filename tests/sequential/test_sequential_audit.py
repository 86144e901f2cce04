"""`run_audit(..., run=RunOptions(sequential=...))` / `positional run --sequential`: rounds,
stop rule,
sequential.json, resume, config checks (simulated backend)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from helpers import write_config
from recaudit.audit import MIN_QUERIES_WIDTH, RunOptions, SequentialAudit
from recaudit.audit._config import DesignConfig, load_audit_config
from recaudit.audit._run import run_audit
from recaudit.audit._sequential_driver import SEQUENTIAL_FILE, SequentialOptions
from recaudit.exceptions import ConfigError

MODELS = """\
[[models]]
name = "biased"
backend = "simulated"
p_bias = 0.6
discard_rate = 0.05

[[models]]
name = "null"
backend = "simulated"
p_bias = 0.0
"""


def _reads_back(path):
    """``sequential.json`` read into :class:`SequentialAudit` and written back is the
    same file, byte for byte (the report renders the type)."""
    text = path.read_text()
    audit = SequentialAudit.from_dict(json.loads(text), where=str(path))
    assert json.dumps(audit.to_dict(), indent=2, allow_nan=False) == text
    assert SequentialAudit.from_dict(audit.to_dict()) == audit
    return audit


def _cfg(tmp_path, emb_cache, n_queries=30):
    return load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=n_queries,
                                    n_perms=5, models=MODELS))


def test_biased_cell_stops_early_null_cell_spends_its_budget(tmp_path, retriever, emb_cache):
    cfg = _cfg(tmp_path, emb_cache)
    opts = SequentialOptions(alpha=0.05, max_evaluations=100, round_evaluations=10)
    seen = {}

    class Recorder:
        def start(self, total):
            seen["total"] = total

        def update(self, *, done, discarded, failed, retries):
            seen["done"] = done

    res = run_audit(cfg, out_dir=tmp_path / "run", retriever=retriever,
                    run=RunOptions(sequential=opts), progress=Recorder())
    doc = json.loads((tmp_path / "run" / SEQUENTIAL_FILE).read_text())
    cells = {c["model"]: c for c in doc["cells"]}
    assert seen["total"] == 200 and seen["done"] == res.ran_now
    assert doc["alpha_per_cell"] == pytest.approx(0.025) and doc["n_cells"] == 2
    b, n = cells["biased"], cells["null"]
    assert b["decision"] == "rejected" and b["e_value"] >= 40
    assert b["evaluations_used"] < 100 and b["evaluations_used"] % 10 == 0
    assert n["decision"] == "budget_spent" and n["evaluations_used"] == 100
    assert n["e_value"] < 40
    df = pd.read_parquet(tmp_path / "run" / "evaluations.parquet")
    used = df.groupby("model").size().to_dict()
    assert used == {"biased": b["evaluations_used"], "null": 100}
    assert res.ran_now == len(df) and res.planned == 2 * 30 * 5
    # the evidence is recomputable from the table in the deterministic order
    assert sum(b["counts"]) == b["valid_evaluations"]
    audit = _reads_back(tmp_path / "run" / SEQUENTIAL_FILE)
    assert audit.cells[0].evidence is not None and audit.cells[0].evidence.counts == tuple(
        b["counts"])


def test_resume_recomputes_the_same_evidence_and_runs_nothing(tmp_path, retriever, emb_cache):
    cfg = _cfg(tmp_path, emb_cache)
    opts = SequentialOptions(alpha=0.05, max_evaluations=60, round_evaluations=10)
    run_audit(cfg, out_dir=tmp_path / "run", retriever=retriever, run=RunOptions(sequential=opts))
    first = json.loads((tmp_path / "run" / SEQUENTIAL_FILE).read_text())
    res = run_audit(cfg, out_dir=tmp_path / "run", run=RunOptions(resume=True, sequential=opts))
    assert res.ran_now == 0
    assert json.loads((tmp_path / "run" / SEQUENTIAL_FILE).read_text()) == first
    # a larger budget on resume continues the null cell where the journal ends
    more = SequentialOptions(alpha=0.05, max_evaluations=80, round_evaluations=10)
    res = run_audit(cfg, out_dir=tmp_path / "run", run=RunOptions(resume=True, sequential=more))
    doc = json.loads((tmp_path / "run" / SEQUENTIAL_FILE).read_text())
    null = next(c for c in doc["cells"] if c["model"] == "null")
    assert null["evaluations_used"] == 80 and res.ran_now == 20


def test_interrupted_run_resumes_to_the_uninterrupted_result(tmp_path, retriever, emb_cache):
    cfg = _cfg(tmp_path, emb_cache)
    opts = SequentialOptions(alpha=0.05, max_evaluations=60, round_evaluations=10)
    run_audit(cfg, out_dir=tmp_path / "a", retriever=retriever, run=RunOptions(sequential=opts))
    # "crash" after the first 30 evaluations: a budget of 30, then resume with 60
    run_audit(cfg, out_dir=tmp_path / "b", retriever=retriever,
              run=RunOptions(sequential=SequentialOptions(alpha=0.05, max_evaluations=30,
                                           round_evaluations=10)))
    run_audit(cfg, out_dir=tmp_path / "b", run=RunOptions(resume=True, sequential=opts))
    a = json.loads((tmp_path / "a" / SEQUENTIAL_FILE).read_text())
    b = json.loads((tmp_path / "b" / SEQUENTIAL_FILE).read_text())
    assert a["cells"] == b["cells"]


@pytest.mark.parametrize(("change", "msg"), [
    ({"design": DesignConfig(kind="shared", n_perms=5)}, "kind = \"sampled\""),
    ({"design": DesignConfig(kind="sampled", n_perms=5, samples_per_order=2)},
     "samples_per_order = 1"),
    ({"conditions": ("permutation", "decoding")}, "remove decoding"),
])
def test_designs_that_break_validity_are_refused(tmp_path, emb_cache, change, msg):
    cfg = _cfg(tmp_path, emb_cache).with_overrides(**change)
    with pytest.raises(ConfigError, match=msg):
        run_audit(cfg, out_dir=tmp_path / "run", run=RunOptions(sequential=SequentialOptions()))
    assert not (tmp_path / "run").exists()


def test_cli_flags(tmp_path, emb_cache, embedder):
    from typer.testing import CliRunner

    from recaudit.cli import app

    path = write_config(tmp_path, cache_dir=emb_cache, n_queries=10, n_perms=5,
                        models=MODELS)
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["positional", "run", str(path), "--out", str(out),
                                      "--sequential", "--alpha", "0.05",
                                      "--max-evaluations", "30", "--no-analyze", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert {c["model"] for c in doc["sequential"]["cells"]} == {"biased", "null"}
    assert (out / SEQUENTIAL_FILE).exists()



def test_sequential_refuses_the_ray_executor(tmp_path, emb_cache):
    with pytest.raises(ConfigError, match="local executor only"):
        run_audit(_cfg(tmp_path, emb_cache), out_dir=tmp_path / "run",
                  run=RunOptions(sequential=SequentialOptions(), executor="ray"))
    assert not (tmp_path / "run").exists()


def _exact_cfg(tmp_path, emb_cache):
    return load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=30, n_perms=5,
                                    models=MODELS, choice_probabilities=True))


def test_exact_run_stops_on_the_probability_vectors(tmp_path, retriever, emb_cache):
    """With choice probabilities recorded, each cell's e-process reads the vectors
    (the simulated backend's exact law): the biased cell stops no later than on the
    sampled answers of the same evaluations, the null cell spends its budget."""
    cfg = _exact_cfg(tmp_path, emb_cache)
    opts = SequentialOptions(alpha=0.05, max_evaluations=100, round_evaluations=10,
                             method="omnibus")
    run_audit(cfg, out_dir=tmp_path / "exact", retriever=retriever, run=RunOptions(sequential=opts))
    doc = json.loads((tmp_path / "exact" / SEQUENTIAL_FILE).read_text())
    cells = {c["model"]: c for c in doc["cells"]}
    b, n = cells["biased"], cells["null"]
    assert b["answers"] == "exact" and n["answers"] == "exact"
    assert b["decision"] == "rejected" and b["e_value"] >= 40
    assert n["decision"] == "budget_spent" and n["e_value"] < 40
    # every row has a vector (discarded texts included): the evidence counts them all
    assert b["valid_evaluations"] <= b["evaluations_used"]
    assert sum(b["counts"]) == pytest.approx(b["valid_evaluations"], abs=0.01)
    _reads_back(tmp_path / "exact" / SEQUENTIAL_FILE)
    # the same journal read as sampled answers needs at least as many evaluations
    sampled = SequentialOptions(alpha=0.05, max_evaluations=100, round_evaluations=10,
                                method="omnibus", answers="sampled")
    run_audit(cfg, out_dir=tmp_path / "sampled", retriever=retriever,
              run=RunOptions(sequential=sampled))
    doc_s = json.loads((tmp_path / "sampled" / SEQUENTIAL_FILE).read_text())
    bs = next(c for c in doc_s["cells"] if c["model"] == "biased")
    assert bs["answers"] == "sampled"
    assert b["evaluations_used"] <= bs["evaluations_used"]


def test_exact_evidence_matches_the_table(tmp_path, retriever, emb_cache):
    """The null cell spends its budget: its expected counts are the sums of the
    table's vectors, and its anytime p-value is consistent with its path."""
    cfg = _exact_cfg(tmp_path, emb_cache)
    opts = SequentialOptions(alpha=0.05, max_evaluations=60, round_evaluations=10)
    run_audit(cfg, out_dir=tmp_path / "run", retriever=retriever, run=RunOptions(sequential=opts))
    doc = json.loads((tmp_path / "run" / SEQUENTIAL_FILE).read_text())
    null = next(c for c in doc["cells"] if c["model"] == "null")
    df = pd.read_parquet(tmp_path / "run" / "evaluations.parquet")
    vectors = np.array([json.loads(v) for v in df.loc[df["model"] == "null", "choice_probs"]])
    assert len(vectors) == 60 == null["valid_evaluations"]
    assert np.allclose(null["counts"], vectors.sum(axis=0), atol=0.002)
    # the p-value takes the max over every evaluation, the stored path only round ends
    assert null["pvalue"] <= min(1.0, np.exp(-max(null["log_e_path"]))) + 1e-12


@pytest.mark.parametrize(("opts", "prompt", "msg"), [
    ({"answers": "exact"}, False, "choice_probabilities = true"),
    ({"method": "dirichlet"}, True, "exact mode"),
    ({"answers": "both"}, True, "`answers`"),
])
def test_exact_mode_configuration_errors(tmp_path, emb_cache, opts, prompt, msg):
    path = write_config(tmp_path, cache_dir=emb_cache, n_queries=10, n_perms=5,
                        models=MODELS, choice_probabilities=prompt)
    with pytest.raises(ConfigError, match=msg):
        run_audit(load_audit_config(path), out_dir=tmp_path / "run",
                  run=RunOptions(sequential=SequentialOptions(**opts)))


def test_ci_width_stops_each_cell_at_its_width_rejected_or_not(tmp_path, retriever, emb_cache):
    cfg = _cfg(tmp_path, emb_cache, n_queries=40)
    opts = SequentialOptions(alpha=0.05, max_evaluations=200, round_evaluations=10,
                             ci_width=0.35)
    run_audit(cfg, out_dir=tmp_path / "run", retriever=retriever, run=RunOptions(sequential=opts))
    doc = json.loads((tmp_path / "run" / SEQUENTIAL_FILE).read_text())
    cells = {c["model"]: c for c in doc["cells"]}
    for c in cells.values():  # every cell stopped at its first look narrow enough
        pb = c["pb"]
        assert c["ci_width_reached"] and pb["ci_high"] - pb["ci_low"] <= 0.35
        assert c["evaluations_used"] < 200
        assert pb["n_queries"] >= MIN_QUERIES_WIDTH  # decision 0421: no earlier stop
    # the biased cell ran past its rejection (at a wider CI) to the width
    assert cells["biased"]["decision"] == "rejected"
    assert cells["null"]["decision"] == "ci_width_reached" and not cells["null"]["reject"]
    assert _reads_back(tmp_path / "run" / SEQUENTIAL_FILE).options == opts
    df = pd.read_parquet(tmp_path / "run" / "evaluations.parquet")
    assert df.groupby("model").size().to_dict() == {
        m: c["evaluations_used"] for m, c in cells.items()}
    # the PB at the stop is the library's on the same per-query shares
    from recaudit.positional import positional_bias_from_shares
    null = df[df["model"] == "null"].dropna(subset=["selected_position"])
    shares = np.stack([np.bincount(g["selected_position"].astype(int) - 1, minlength=4)
                       / len(g) for _, g in null.groupby("query_id", sort=False)])
    assert shares.shape[0] == cells["null"]["pb"]["n_queries"]
    again = positional_bias_from_shares(shares, rng=0)
    assert abs(again.value - cells["null"]["pb"]["value"]) < 0.02  # other cross-fit folds
    # a resume recomputes the same numbers
    first = (tmp_path / "run" / SEQUENTIAL_FILE).read_text()
    run_audit(cfg, out_dir=tmp_path / "run", run=RunOptions(resume=True, sequential=opts))
    assert (tmp_path / "run" / SEQUENTIAL_FILE).read_text() == first


@pytest.mark.parametrize("width", [0.0, 1.5, True])
def test_ci_width_out_of_range_is_refused(width):
    with pytest.raises(ConfigError, match="--ci-width"):
        SequentialOptions(ci_width=width)


def test_cli_ci_width_needs_sequential(tmp_path, emb_cache):
    from typer.testing import CliRunner

    from recaudit.cli import app

    path = write_config(tmp_path, cache_dir=emb_cache, n_queries=10, n_perms=5,
                        models=MODELS)
    result = CliRunner().invoke(app, ["positional", "run", str(path), "--out",
                                      str(tmp_path / "run"), "--ci-width", "0.1"])
    assert result.exit_code == 2 and "--sequential" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_the_sequential_line_gives_pb_and_its_interval_when_it_stopped_on_a_width(capsys):
    """A cell stopped on ``--ci-width`` (the demo's default) prints PB [CI] on what the
    test read; one stopped at the rejection alone prints none."""
    from recaudit.cli._positional_tables import print_sequential

    cell = {"model": "m", "k": 5, "temperature": 0.0, "condition": "permutation",
            "decision": "rejected", "evaluations_used": 48, "e_value": 22.0,
            "answers": "exact", "reject": True, "evaluations_at_checkpoints": [24],
            "pb": {"value": 0.2585, "ci_low": 0.2159, "ci_high": 0.3012, "n_queries": 6}}
    print_sequential({"cells": [cell], "alpha_per_cell": 0.05})
    err = " ".join(capsys.readouterr().err.split())
    assert "rejected after 24 evaluations, ran to 48 for PB's interval (E = 22, threshold " \
        "20); PB on the choice probabilities 0.259 [0.216, 0.301] (6 queries)" in err
    print_sequential({"cells": [{**cell, "pb": None, "answers": "sampled",
                                 "evaluations_used": 24}], "alpha_per_cell": 0.05})
    err = " ".join(capsys.readouterr().err.split())
    assert "PB on" not in err and "rejected after 24 evaluations (E = 22" in err
