"""The Ray executor on a real local cluster: same table as the local executor."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pandas as pd
import pytest

from helpers import damage_journal, write_config
from recaudit.audit import RunOptions
from recaudit.audit._config import load_audit_config
from recaudit.audit._run import run_audit

KEY = ["model", "k", "temperature", "condition", "query_id", "perm_index", "sample_index"]


def _table(path):
    return pd.read_parquet(path).drop(columns="latency_s")


def test_simulated_audit_matches_local(tmp_path, ray_cluster, retriever, emb_cache):
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=6, n_perms=4,
                                   conditions='["permutation", "decoding", "labels"]'))
    local = run_audit(cfg, out_dir=tmp_path / "local", retriever=retriever)
    dist = run_audit(cfg, out_dir=tmp_path / "ray", retriever=retriever,
                     run=RunOptions(executor="ray"))
    assert dist.planned == dist.ran_now == local.planned == 72
    pd.testing.assert_frame_equal(_table(dist.evaluations_path), _table(local.evaluations_path))
    conn = sqlite3.connect(tmp_path / "ray" / "journal.sqlite")
    assert conn.execute("SELECT count(*), max(attempts) FROM evaluations").fetchone() == (72, 1)


class KillOneActor:
    """A RunProgress that SIGKILLs one evaluation actor's worker process mid-run."""

    def __init__(self, after: int):
        self.after = after
        self.killed_pid: int | None = None
        self.total = 0

    def start(self, total: int) -> None:
        self.total = total

    def update(self, *, done: int, discarded: int, failed: int, retries: int) -> None:
        if self.killed_pid is not None or done < self.after:
            return
        import os
        import signal

        import ray

        names = sorted(a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                       if a["name"].startswith("eval-"))
        actor = ray.get_actor(names[0], namespace="recaudit")
        self.killed_pid = ray.get(actor.pid.remote())
        os.kill(self.killed_pid, signal.SIGKILL)


def test_killed_worker_loses_nothing_and_duplicates_nothing(tmp_path, ray_cluster, retriever,
                                                            emb_cache):
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=10, n_perms=12,
                                   delay_s=0.05, concurrency=2))
    local = run_audit(cfg, out_dir=tmp_path / "local", retriever=retriever)
    killer = KillOneActor(after=20)
    dist = run_audit(cfg, out_dir=tmp_path / "ray", retriever=retriever,
                     run=RunOptions(executor="ray"), progress=killer)
    assert killer.killed_pid is not None and killer.total == 120
    assert dist.ran_now == dist.planned == 120
    conn = sqlite3.connect(tmp_path / "ray" / "journal.sqlite")
    rows = conn.execute(f"SELECT {', '.join(KEY)}, attempts, retries FROM evaluations").fetchall()
    assert len(rows) == 120 and len({r[:7] for r in rows}) == 120  # every key once
    assert {r[7] for r in rows} == {1}  # no key was written twice
    resubmitted = sum(r[8] for r in rows)
    # the killed actor held up to two batches: their unjournaled keys ran again
    assert resubmitted >= 1 and dist.summary.retries == resubmitted
    got, want = _table(dist.evaluations_path), _table(local.evaluations_path)
    pd.testing.assert_frame_equal(got.drop(columns="retries"), want.drop(columns="retries"))
    assert (got["retries"] >= want["retries"]).all()


LOCAL_MODEL = """\
[prompt]
constrained = true

[[models]]
name = "smol"
backend = "local"
engine = "transformers"
batch_size = 1
"""


@pytest.mark.slow
def test_local_smollm2_constrained_matches_local(tmp_path, ray_cluster, retriever, emb_cache,
                                                 smollm2_path):
    """The packaged SmolLM2 on the transformers engine, constrained at T=0
    (deterministic): same answers on Ray."""
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=2, n_perms=2,
                                   models=LOCAL_MODEL))
    local = run_audit(cfg, out_dir=tmp_path / "local",
                      retriever=retriever)
    dist = run_audit(cfg, out_dir=tmp_path / "ray", retriever=retriever,
                     run=RunOptions(executor="ray"))
    assert dist.ran_now == local.ran_now == 4
    got, want = _table(dist.evaluations_path), _table(local.evaluations_path)
    assert got["selected_position"].notna().all()  # constrained: every answer parses
    pd.testing.assert_frame_equal(got.drop(columns="choice_probs"),
                                  want.drop(columns="choice_probs"))
    if want["choice_probs"].notna().any():
        np.testing.assert_allclose(np.array(got["choice_probs"].map(json.loads).tolist()),
                                   np.array(want["choice_probs"].map(json.loads).tolist()),
                                   atol=1e-6)


def test_ray_resumes_a_local_run_exactly(tmp_path, ray_cluster, retriever, emb_cache):
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=5, n_perms=6))
    reference = run_audit(cfg, out_dir=tmp_path / "a", retriever=retriever)
    run_audit(cfg, out_dir=tmp_path / "b", retriever=retriever)
    # lose 11 rows and turn 4 into failures, as if the local process had died mid-run
    damage_journal(tmp_path / "b", lose=11, fail=4)
    res = run_audit(cfg, out_dir=tmp_path / "b", run=RunOptions(resume=True, executor="ray"))
    assert res.ran_now == 15 and res.planned == 30
    pd.testing.assert_frame_equal(_table(res.evaluations_path),
                                  _table(reference.evaluations_path))
    again = run_audit(cfg, out_dir=tmp_path / "b", run=RunOptions(resume=True, executor="ray"))
    assert again.ran_now == 0 and again.summary.total == 0


@pytest.mark.slow
def test_llamacpp_engine_on_ray_matches_local(tmp_path, ray_cluster, retriever, emb_cache,
                                              smollm2_path):
    """The packaged SmolLM2 GGUF on the in-process llama.cpp engine, four slots per actor,
    constrained at T=0: Ray gives the local executor's answers (llama.cpp is not
    batch-invariant: probabilities differ by up to ~0.02 between batchings, so an answer
    near a tie may flip; docs/runner.md)."""
    model = LOCAL_MODEL.replace('engine = "transformers"\n', "").replace(
        "batch_size = 1", "batch_size = 4")
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=3, n_perms=4,
                                   models=model))
    local = run_audit(cfg, out_dir=tmp_path / "local", retriever=retriever)
    dist = run_audit(cfg, out_dir=tmp_path / "ray", retriever=retriever,
                     run=RunOptions(executor="ray"))
    assert dist.ran_now == local.ran_now == 12
    got, want = _table(dist.evaluations_path), _table(local.evaluations_path)
    assert got["selected_position"].notna().all()
    assert (got["selected_position"] == want["selected_position"]).mean() >= 0.9


def test_a_load_that_never_ends_becomes_an_endpoint_error(monkeypatch):
    """Fault injection: an actor whose model load hangs ends the batch with an
    EndpointError after LOAD_TIMEOUT_S (the run then stops cleanly), never a hang."""
    import asyncio
    import time

    from recaudit.audit import _ray_executor
    from recaudit.exceptions import EndpointError

    monkeypatch.setattr(_ray_executor, "LOAD_TIMEOUT_S", 0.2)
    actor = _ray_executor.EvalActor.__new__(_ray_executor.EvalActor)
    actor._warming = None
    actor._warm = lambda: time.sleep(1.0)  # the load that does not finish in time

    async def both():
        with pytest.raises(EndpointError, match="did not load within"):
            await actor.warm()
        with pytest.raises(EndpointError, match="did not load within"):
            await actor.run([])

    asyncio.run(both())
