"""Ctrl-C (SIGINT) on a real ``python -m recaudit.cli positional run``: the command says
how many evaluations are journaled and that ``--resume`` continues, exits 130 with no
traceback, and the resumed run loses and duplicates nothing."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import prepared_run, write_config
from recaudit.audit._run import MSG_INTERRUPTED

SRC = str(Path(__file__).resolve().parents[2] / "src")


def cli(*args: str, cwd: Path) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-m", "recaudit.cli", "positional", "run", *args],
                            cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def completed(path: Path) -> int:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1) as conn:
            return conn.execute("SELECT COUNT(*) FROM evaluations "
                                "WHERE status != 'failed'").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


@pytest.mark.parametrize(("quiet", "sig", "code"), [
    (True, signal.SIGINT, 130), (False, signal.SIGINT, 130), (True, signal.SIGTERM, 143)],
    ids=["SIGINT-quiet", "SIGINT", "SIGTERM-quiet"])
def test_ctrl_c_says_what_is_journaled_and_how_to_continue(tmp_path, retriever, emb_cache,
                                                           quiet, sig, code) -> None:
    """SIGTERM (``kill``) takes Ctrl-C's path: the same message, exit 128 + 15."""
    # 0.1 s per evaluation, 2 at a time: 8 s for the 160, so a loaded machine still
    # signals the run before it ends (at 0.04 s it once finished first under load)
    config = write_config(tmp_path, cache_dir=emb_cache, n_queries=10, n_perms=16,
                          delay_s=0.1, concurrency=2)
    run = prepared_run(config, tmp_path / "run", retriever)
    journal = run / "journal.sqlite"
    args = [str(config), "--out", str(run), "--resume", "--no-analyze"]
    proc = cli(*args, *(["--quiet"] if quiet else []), cwd=tmp_path)
    deadline = time.monotonic() + 240
    while completed(journal) < 20:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the runner made no progress"
        time.sleep(0.02)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert "Traceback" not in err, err
    done = completed(journal)
    assert 20 <= done < 160
    expected = MSG_INTERRUPTED.format(done=done, planned=160, journal=journal, failed="",
                                      missing=160 - done)
    assert expected in " ".join(err.split()), err  # (rich may wrap the line)
    assert re.search(r"--resume", err)
    resumed = cli(*args, "--quiet", cwd=tmp_path)
    _, err = resumed.communicate(timeout=240)
    assert resumed.returncode == 0, err
    with sqlite3.connect(journal) as conn:
        n_rows, n_keys, attempts = conn.execute(
            "SELECT COUNT(*), COUNT(DISTINCT query_id || '/' || perm_index), MAX(attempts) "
            "FROM evaluations").fetchone()
    assert (n_rows, n_keys, attempts) == (160, 160, 1)  # 0 lost, 0 duplicated
