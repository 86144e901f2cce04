"""Config -> plan -> run -> evaluations table, in process (simulated and openai)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from aiohttp import web

from helpers import OPENAI_MODEL, damage_journal, write_config
from recaudit.audit import RunOptions
from recaudit.audit._config import load_audit_config
from recaudit.audit._journal import EVALUATION_COLUMNS
from recaudit.audit._run import run_audit
from recaudit.exceptions import EndpointError, JournalError
from recaudit.positional import evaluations_from_table


def test_simulated_audit_writes_the_run_folder(tmp_path, retriever, emb_cache):
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=6, n_perms=4,
                                   conditions='["permutation", "decoding", "labels"]'))
    res = run_audit(cfg, out_dir=tmp_path / "run", retriever=retriever)
    assert res.planned == res.ran_now == 6 * 4 * 3
    run = tmp_path / "run"
    for name in ("config.resolved.json", "queries.parquet", "candidates.parquet",
                 "journal.sqlite", "evaluations.parquet"):
        assert (run / name).exists(), name
    df = pd.read_parquet(run / "evaluations.parquet")
    assert list(df.columns) == list(EVALUATION_COLUMNS)
    assert len(df) == res.ok + res.discarded == 72
    assert df.groupby("condition").size().to_dict() == {"decoding": 24, "labels": 24,
                                                        "permutation": 24}
    dec = df[df["condition"] == "decoding"]
    assert set(dec["order"]) == {"1 2 3 4"} and dec["perm_index"].eq(0).all()
    lab = df[df["condition"] == "labels"]
    assert not lab["identifiers"].str.fullmatch(r"1 2 3 4").any()
    perm = df[df["condition"] == "permutation"]
    assert perm["identifiers"].eq("1 2 3 4").all()
    cands = pd.read_parquet(run / "candidates.parquet")
    assert {"k", "query_id", "original_index", "item_id", "score"} <= set(cands.columns)
    ok = df[df["selected_position"].notna()]
    merged = ok.merge(cands, left_on=["query_id", "selected_original_index"],
                      right_on=["query_id", "original_index"])
    assert (merged["selected_item_id"] == merged["item_id"]).all() and len(merged) == len(ok)
    resolved = json.loads((run / "config.resolved.json").read_text())
    assert resolved["config_hash"] and resolved["catalog_sha256"]
    # the statistics accept the table as is
    evaluations_from_table(df[df["condition"] == "permutation"])


def test_resume_runs_exactly_the_missing_keys(tmp_path, retriever, emb_cache):
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=5, n_perms=6))
    full = run_audit(cfg, out_dir=tmp_path / "a", retriever=retriever)
    reference = pd.read_parquet(full.evaluations_path)
    run_audit(cfg, out_dir=tmp_path / "b", retriever=retriever)
    # lose 11 rows and turn 4 into failures, as if the process had died mid-run
    damage_journal(tmp_path / "b", lose=11, fail=4)
    (tmp_path / "b" / "evaluations.parquet").unlink()
    res = run_audit(cfg, out_dir=tmp_path / "b",
                    run=RunOptions(resume=True))  # no retriever: uses the folder
    assert res.ran_now == 15 and res.planned == 30
    pd.testing.assert_frame_equal(pd.read_parquet(res.evaluations_path).drop(
        columns="latency_s"), reference.drop(columns="latency_s"))


def test_resume_guards(tmp_path, retriever, emb_cache):
    path = write_config(tmp_path, cache_dir=emb_cache, n_queries=3, n_perms=2)
    cfg = load_audit_config(path)
    with pytest.raises(JournalError, match="nothing to resume"):
        run_audit(cfg, out_dir=tmp_path / "run", run=RunOptions(resume=True))
    assert not (tmp_path / "run").exists()
    run_audit(cfg, out_dir=tmp_path / "run", retriever=retriever)
    with pytest.raises(JournalError, match="already holds a run.*--resume"):
        run_audit(cfg, out_dir=tmp_path / "run", retriever=retriever)
    path.write_text(path.read_text().replace("p_bias = 0.4", "p_bias = 0.5"))
    with pytest.raises(JournalError, match="different config.*config_hash"):
        run_audit(load_audit_config(path), out_dir=tmp_path / "run", run=RunOptions(resume=True))
    # operational keys (concurrency, delay) do not change the hash
    path.write_text(path.read_text().replace("p_bias = 0.5", "p_bias = 0.4")
                    .replace("concurrency = 4", "concurrency = 2"))
    again = run_audit(load_audit_config(path), out_dir=tmp_path / "run",
                      run=RunOptions(resume=True))
    assert again.ran_now == 0


def test_endpoint_down_then_resume(tmp_path, retriever, emb_cache, fault_server):
    url = fault_server.base_url
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=4, n_perms=3,
                                   models=OPENAI_MODEL.format(url=url)))
    fault_server.script([], then="reset")  # every connection reset: the endpoint is down
    with pytest.raises(EndpointError, match=f"{url}/chat/completions.*--resume"):
        run_audit(cfg, out_dir=tmp_path / "run", retriever=retriever)
    assert not (tmp_path / "run" / "evaluations.parquet").exists()
    fault_server.reset()
    fault_server.serve(lambda n, seen: web.json_response({"choices": [{"message": {
        "content": '{"article_number": 2, "article_title": "x"}'}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 9}}))
    res = run_audit(cfg, out_dir=tmp_path / "run", run=RunOptions(resume=True))
    prompts = [seen.json for seen in fault_server.requests]
    assert res.ok == 12 and len(prompts) == 12
    df = pd.read_parquet(res.evaluations_path)
    assert df["selected_position"].eq(2).all()
    assert df["prompt_tokens"].eq(100).all() and df["completion_tokens"].eq(9).all()
    assert prompts[0]["model"] == "tiny" and prompts[0]["max_tokens"] == 96
    assert prompts[0]["messages"][0]["role"] == "system"
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert [s["resume"] for s in manifest["sessions"]] == [False, True]
    for session in manifest["sessions"]:
        assert session["backends"] == [{
            "model": "remote", "k": 4, "backend": "openai", "name": "remote",
            "model_id": "tiny", "base_url": url}]


LOCAL_MODEL = """\
[[models]]
name = "smollm2"
backend = "local"
batch_size = 2

[prompt]
constrained = true
"""


def test_local_constrained_audit_has_no_discards(tmp_path, retriever, emb_cache, smollm2_path):
    """The packaged SmolLM2 in constrained mode: every answer parses."""
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=2, n_perms=2,
                                   models=LOCAL_MODEL))
    res = run_audit(cfg, out_dir=tmp_path / "run", retriever=retriever)
    assert res.planned == res.ok == 4 and res.discarded == 0
    resolved = json.loads((tmp_path / "run" / "config.resolved.json").read_text())
    assert resolved["prompt"]["constrained"] is True
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    (entry,) = manifest["sessions"][0]["backends"]
    # a GGUF model runs on the in-process llama.cpp engine, which the manifest names
    assert entry["model"] == "smollm2" and entry["n_parallel"] == 2
    assert entry["engine"] == "llama.cpp" and entry["quantization"] == "Q4_1"
    assert entry["name"].startswith("llamacpp:") and entry["name"].endswith("+constrained")
