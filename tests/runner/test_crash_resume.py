"""kill -9 a real ``python -m recaudit.cli positional run`` mid-run, then --resume:
zero lost, zero duplicated evaluations, the same table as an uninterrupted run."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from helpers import write_config
from recaudit.audit._config import load_audit_config
from recaudit.audit._run import run_audit

SRC = str(Path(__file__).resolve().parents[2] / "src")


def cli(*args, cwd):
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-m", "recaudit.cli", "positional", "run", *args],
                            cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def journal_rows(path):
    if not path.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
        try:
            return conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.OperationalError:
        return 0


def test_kill_9_then_resume_loses_and_duplicates_nothing(tmp_path, retriever, emb_cache):
    config = write_config(tmp_path, cache_dir=emb_cache, n_queries=10, n_perms=16,
                          delay_s=0.04, concurrency=2)
    reference = run_audit(load_audit_config(config), out_dir=tmp_path / "reference",
                          retriever=retriever)
    # The killed run starts from the same prepared folder (queries, candidate sets,
    # journal meta) with an empty journal, so the subprocess needs no embedder.
    run_dir = tmp_path / "killed"
    shutil.copytree(tmp_path / "reference", run_dir)
    (run_dir / "evaluations.parquet").unlink()
    journal = run_dir / "journal.sqlite"
    with sqlite3.connect(journal) as conn:
        conn.execute("DELETE FROM evaluations")
    proc = cli(str(config), "--out", str(run_dir), "--resume", "--quiet", "--no-analyze",
               cwd=tmp_path)
    deadline = time.monotonic() + 240
    while journal_rows(journal) < 25:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the runner made no progress"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = journal_rows(journal)
    assert 25 <= before < 160, before
    assert not (run_dir / "evaluations.parquet").exists()

    resumed = cli(str(config), "--out", str(run_dir), "--resume", "--quiet", "--no-analyze",
                  cwd=tmp_path)
    _, err = resumed.communicate(timeout=240)
    assert resumed.returncode == 0, err

    with sqlite3.connect(journal) as conn:
        n_rows, n_keys, max_attempts, failed = conn.execute(
            "SELECT COUNT(*), COUNT(DISTINCT model || k || temperature || condition || "
            "query_id || '/' || perm_index || '/' || sample_index), MAX(attempts), "
            "SUM(status = 'failed') FROM evaluations").fetchone()
    assert (n_rows, n_keys, max_attempts, failed) == (160, 160, 1, 0)
    got = pd.read_parquet(run_dir / "evaluations.parquet").drop(columns="latency_s")
    want = pd.read_parquet(reference.evaluations_path).drop(columns="latency_s")
    pd.testing.assert_frame_equal(got, want)
