"""The SQLite journal: exactly-once rows, failed rows retried, meta checks, locking."""

from __future__ import annotations

import sqlite3
import time

import pytest

from recaudit.audit._journal import EVALUATION_COLUMNS, EvalKey, EvalRecord, Journal
from recaudit.exceptions import JournalError

KEY = EvalKey("m", 3, 0.0, "permutation", "q1", 0, 0)


def rec(status="ok", key=KEY, **kw):
    base = {"order": (2, 1, 3), "identifiers": ("1", "2", "3")}
    if status == "ok":
        base.update(selected_position=1, selected_original_index=2, selected_item_id="b",
                    raw_response='{"article_number": 1}')
    if status == "discarded":
        base.update(raw_response="blah", discard_reason="no identifier")
    if status == "failed":
        base.update(error_class="EndpointError", error_message="down")
    base.update(kw)
    return EvalRecord(key=key, status=status, **base)


def test_wal_mode_and_roundtrip(tmp_path):
    with Journal(tmp_path / "j.sqlite", meta={"config_hash": "a"}, resume=False) as j:
        j.write(rec())
        j.write(rec("discarded", key=EvalKey("m", 3, 0.0, "permutation", "q2", 0, 0)))
        assert j.counts() == {"ok": 1, "discarded": 1, "failed": 0}
        df = j.to_frame()
    assert list(df.columns) == list(EVALUATION_COLUMNS)
    assert df["order"].tolist() == ["2 1 3", "2 1 3"]
    assert df["selected_position"].tolist()[0] == 1
    assert df["selected_position"].isna().tolist() == [False, True]
    conn = sqlite3.connect(tmp_path / "j.sqlite")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_completed_row_is_never_overwritten(tmp_path):
    with Journal(tmp_path / "j.sqlite", meta={}, resume=False) as j:
        j.write(rec())
        j.write(rec(selected_position=3, selected_original_index=3))
        assert j.to_frame()["selected_position"].tolist() == [1]


def test_failed_row_is_replaced_and_counted(tmp_path):
    with Journal(tmp_path / "j.sqlite", meta={}, resume=False) as j:
        j.write(rec("failed"))
        assert j.completed_keys() == set()
        assert j.failures()["error_class"].tolist() == ["EndpointError"]
        assert len(j.to_frame()) == 0  # failed rows never reach the table
        j.write(rec("failed"))
        j.write(rec())
        assert j.completed_keys() == {KEY}
        assert j.counts() == {"ok": 1, "discarded": 0, "failed": 0}
        attempts = j._conn.execute("SELECT attempts FROM evaluations").fetchone()[0]
        assert attempts == 3


def test_resume_checks_meta(tmp_path):
    path = tmp_path / "j.sqlite"
    Journal(path, meta={"config_hash": "a"}, resume=False).close()
    with pytest.raises(JournalError, match="already exists"):
        Journal(path, meta={"config_hash": "a"}, resume=False)
    with pytest.raises(JournalError, match="different config.*config_hash"):
        Journal(path, meta={"config_hash": "b"}, resume=True)
    with Journal(path, meta={"config_hash": "a"}, resume=True) as j:
        assert j.meta == {"config_hash": "a"}
    with pytest.raises(JournalError, match="nothing to resume"):
        Journal(tmp_path / "other.sqlite", meta={}, resume=True)


def test_second_process_is_locked_out(tmp_path):
    path = tmp_path / "j.sqlite"
    with Journal(path, meta={}, resume=False):
        with pytest.raises(JournalError, match="in use"):
            Journal(path, meta={}, resume=True)
    Journal(path, meta={}, resume=True).close()


def test_corrupt_file_is_a_journal_error(tmp_path):
    path = tmp_path / "j.sqlite"
    path.write_bytes(b"not a database at all" * 100)
    with pytest.raises(JournalError, match="cannot be used"):
        Journal(path, meta={}, resume=True)


def test_small_batch_commits(tmp_path):
    path = tmp_path / "j.sqlite"

    def visible():
        with sqlite3.connect(path) as other:
            return other.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]

    keys = [EvalKey("m", 3, 0.0, "permutation", f"q{i}", 0, 0) for i in range(5)]
    with Journal(path, meta={}, resume=False, commit_every=3, commit_interval_s=60) as j:
        j.write(rec(key=keys[0]))
        j.write(rec(key=keys[1]))
        assert visible() == 0  # pending: not acknowledged, re-run if the process dies
        j.write(rec(key=keys[2]))
        assert visible() == 3
        j.write(rec(key=keys[3]))
    assert visible() == 4  # close commits the rest
    with Journal(path, meta={}, resume=True, commit_interval_s=0) as j:
        j.write(rec(key=keys[4]))
        assert visible() == 5  # interval elapsed: committed at once
    with pytest.raises(JournalError, match="`commit_every` must be"):
        Journal(tmp_path / "x.sqlite", meta={}, resume=False, commit_every=0)


def _visible(path):
    with sqlite3.connect(path) as other:
        return other.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]


def _wait_for(predicate, timeout_s=20.0):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_background_writer_commits_at_the_batch_boundary(tmp_path):
    path = tmp_path / "j.sqlite"
    keys = [EvalKey("m", 3, 0.0, "permutation", f"q{i}", 0, 0) for i in range(9)]
    with Journal(path, meta={}, resume=False, commit_every=4, commit_interval_s=3600,
                 background=True) as j:
        for key in keys[:3]:
            j.write(rec(key=key))
        time.sleep(0.3)  # the writer only wakes for a full batch (or after an hour)
        assert _visible(path) == 0  # one short of a batch: nothing acknowledged yet
        j.write(rec(key=keys[3]))
        assert _wait_for(lambda: _visible(path) == 4)  # the full batch, in one commit
        for key in keys[4:7]:
            j.write(rec(key=key))
        time.sleep(0.3)
        assert _visible(path) == 4
        assert j.counts()["ok"] == 7  # reads flush first
        assert _visible(path) == 7
        j.write(rec(key=keys[7]))
    assert _visible(path) == 8  # close commits the rest
    with Journal(path, meta={}, resume=True, commit_every=1000, commit_interval_s=0.01,
                 background=True) as j:
        j.write(rec(key=keys[8]))
        assert _wait_for(lambda: _visible(path) == 9)  # the interval elapsed
        j.write(rec(key=keys[8], raw_response="second"))  # completed: never replaced
    with Journal(path, meta={}, resume=True) as j:
        frame = j.to_frame()
    assert len(frame) == 9 and frame["query_id"].is_unique
    assert "second" not in set(frame["raw_response"])


def test_background_writer_error_reaches_the_caller(tmp_path):
    path = tmp_path / "j.sqlite"
    j = Journal(path, meta={}, resume=False, commit_every=1, background=True)
    j.write(rec(status="bogus"))  # violates the status CHECK constraint in the writer
    with pytest.raises(JournalError, match="writer thread failed.*CHECK constraint"):
        assert _wait_for(lambda: j._writer_error is not None)
        j.write(rec())
    with pytest.raises(JournalError, match="writer thread failed"):
        j.close()
    assert j._lock_file.closed  # the lock is released even so
