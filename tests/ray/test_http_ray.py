"""HTTP backends on Ray: the rate limit is split over the actors; a real loopback server."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from helpers import write_config
from recaudit.audit import RunOptions
from recaudit.audit._config import EndpointConfig, OpenAIParams, load_audit_config
from recaudit.audit._ray_executor import worker_config
from recaudit.audit._run import run_audit

ROOT = Path(__file__).resolve().parents[2]


def _openai(url: str, rate: float | None, concurrency: int = 8) -> EndpointConfig:
    return EndpointConfig(name="remote", backend="openai",
                       params=OpenAIParams(base_url=url, model="fake", concurrency=concurrency,
                                           rate_limit_per_s=rate, max_retries=1))


def test_worker_config_splits_rate_and_concurrency(tmp_path, emb_cache):
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache))
    cfg = replace(cfg, models=(*cfg.models, _openai("http://x.test/v1", 10.0, 5)),
                  concurrency=5)
    for n, rate, conc in ((1, 10.0, 5), (2, 5.0, 3), (4, 2.5, 2), (16, 0.625, 1)):
        w = worker_config(cfg, n)
        params = w.models[-1].params
        assert params.rate_limit_per_s == pytest.approx(rate)  # cluster total = 10/s
        assert params.concurrency == conc and w.concurrency == conc
        assert w.models[0] == cfg.models[0]  # the simulated model is untouched
    assert worker_config(replace(cfg, models=(_openai("http://x.test/v1", None),)), 2
                         ).models[0].params.rate_limit_per_s is None


@pytest.fixture()
def fake_server():
    """bench_runner.py's chat-completions server (always answers 2) in a subprocess."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "bench_runner.py"),
                             "--serve", str(port), "--latency-ms", "5"])
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_openai_backend_on_ray_matches_local(tmp_path, ray_cluster, retriever, emb_cache,
                                             fake_server):
    base = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=4, n_perms=5))
    cfg = replace(base, models=(_openai(fake_server, 200.0),))
    local = run_audit(cfg, out_dir=tmp_path / "local", retriever=retriever)
    dist = run_audit(cfg, out_dir=tmp_path / "ray", retriever=retriever,
                     run=RunOptions(executor="ray"))
    assert dist.ran_now == local.ran_now == 20 and dist.ok == 20
    pd.testing.assert_frame_equal(
        pd.read_parquet(dist.evaluations_path).drop(columns="latency_s"),
        pd.read_parquet(local.evaluations_path).drop(columns="latency_s"))
