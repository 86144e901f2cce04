"""Resume depends on what the run depends on, not on where the config lies.

The config hash is computed from the config's identity (files by content, the catalog
by its hash, no operational keys): the same config copied to another folder or
written with absolute paths resumes; a different one is refused naming the settings
that differ. A refused resume appends no session to run.json. A journal left without
its meta rows (killed between creating its tables and writing them, by versions that
did those separately) is initialised by --resume when it holds no rows.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing

import pytest

from helpers import damage_journal, write_config
from recaudit.audit import RunOptions
from recaudit.audit._config import config_hash, legacy_config_hash, load_audit_config
from recaudit.audit._journal import CONFIG_META, MSG_NO_META, Journal
from recaudit.audit._run import run_audit
from recaudit.exceptions import JournalError


def sessions(run) -> int:
    return len(json.loads((run / "run.json").read_text())["sessions"])


def meta(run) -> dict[str, str]:
    with closing(sqlite3.connect(run / "journal.sqlite")) as conn:
        return dict(conn.execute("SELECT key, value FROM meta"))


@pytest.fixture()
def started(tmp_path, retriever, emb_cache):
    """A finished run with 7 evaluations lost, and its config (queries from a file)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "queries.csv").write_text("query_id,text\nq1,red jeans\nq2,blue kurta\n"
                                     "q3,black sneakers\n")
    config = write_config(src, cache_dir=emb_cache, n_perms=4)
    config.write_text(config.read_text().replace("n = 8", 'file = "queries.csv"'))
    run = tmp_path / "run"
    run_audit(load_audit_config(config), out_dir=run, retriever=retriever)
    damage_journal(run, lose=7, fail=0)
    (run / "evaluations.parquet").unlink()
    return config, run


def test_a_copied_config_resumes(started, tmp_path) -> None:
    config, run = started
    elsewhere = tmp_path / "elsewhere" / "deeper"
    shutil.copytree(config.parent, elsewhere)
    copied = load_audit_config(elsewhere / config.name)
    assert copied.catalog.path != load_audit_config(config).catalog.path
    assert config_hash(copied) == config_hash(load_audit_config(config))
    assert legacy_config_hash(copied) != legacy_config_hash(load_audit_config(config))
    res = run_audit(copied, out_dir=run, run=RunOptions(resume=True))
    assert res.ran_now == 7 and res.ok + res.discarded == 12


def test_absolute_paths_resume(started) -> None:
    config, run = started
    text = config.read_text()
    for name in ("catalog.csv", "queries.csv"):
        text = text.replace(f'"{name}"', f'"{config.parent / name}"')
    absolute = config.with_name("absolute.toml")
    absolute.write_text(text)
    again = run_audit(load_audit_config(absolute), out_dir=run, run=RunOptions(resume=True))
    assert again.ran_now == 7


@pytest.mark.parametrize(("old", "new", "setting"), [
    ("n_perms = 4", "n_perms = 5", "`design.n_perms`: journal has 4, this config gives 5"),
    ("p_bias = 0.4", "p_bias = 0.3",
     "`models.sim.params.p_bias`: journal has 0.4, this config gives 0.3"),
    ("seed = 7", "seed = 8", "`seed`: journal has 7, this config gives 8"),
])
def test_a_mismatch_names_the_setting_and_adds_no_session(started, old, new, setting) -> None:
    config, run = started
    before = sessions(run)
    config.write_text(config.read_text().replace(old, new))
    with pytest.raises(JournalError, match="different config.*config_hash") as info:
        run_audit(load_audit_config(config), out_dir=run, run=RunOptions(resume=True))
    assert setting in str(info.value)
    assert sessions(run) == before


def test_changed_file_content_is_named(started) -> None:
    config, run = started
    queries = config.parent / "queries.csv"
    queries.write_text(queries.read_text().replace("red jeans", "green jeans"))
    with pytest.raises(JournalError, match=r"`queries\.file\.sha256`: journal has"):
        run_audit(load_audit_config(config), out_dir=run, run=RunOptions(resume=True))
    assert sessions(run) == 1


def test_another_k_is_refused_before_the_folder_is_read(started) -> None:
    config, run = started
    config.write_text(config.read_text().replace("k = [4]", "k = [4, 5]"))
    with pytest.raises(JournalError, match=r"`retrieval\.k`: journal has \[4\], this "
                                           r"config gives \[4, 5\]"):
        run_audit(load_audit_config(config), out_dir=run, run=RunOptions(resume=True))


def test_a_held_journal_adds_no_session(started) -> None:
    config, run = started
    holder = Journal(run / "journal.sqlite", meta={}, resume=True)
    try:
        with pytest.raises(JournalError, match="in use by another running process"):
            run_audit(load_audit_config(config), out_dir=run, run=RunOptions(resume=True))
    finally:
        holder.close()
    assert sessions(run) == 1
    again = run_audit(load_audit_config(config), out_dir=run, run=RunOptions(resume=True))
    assert again.ran_now == 7
    assert sessions(run) == 2


def test_a_journal_without_meta_rows_is_initialised(started) -> None:
    config, run = started
    with closing(sqlite3.connect(run / "journal.sqlite")) as conn, conn:
        conn.execute("DELETE FROM meta")
    # rows but no identity: nothing can tell which config wrote them
    with pytest.raises(JournalError, match=MSG_NO_META.split("{")[0]):
        run_audit(load_audit_config(config), out_dir=run, run=RunOptions(resume=True))
    with closing(sqlite3.connect(run / "journal.sqlite")) as conn, conn:
        conn.execute("DELETE FROM evaluations")  # as left by a kill before any result
    res = run_audit(load_audit_config(config), out_dir=run, run=RunOptions(resume=True))
    assert res.ran_now == 12 and res.ok + res.discarded == 12
    assert set(meta(run)) == {"catalog_sha256", "config_hash", CONFIG_META}


def test_a_new_journal_is_created_in_one_transaction(tmp_path, monkeypatch) -> None:
    """Tables and meta rows are committed together: a process dying while it writes
    the meta rows leaves no journal without identity (and --resume can start it)."""
    path = tmp_path / "j.sqlite"
    real_connect = sqlite3.connect

    class Dies:
        def __init__(self, conn):
            self._conn = conn

        def __getattr__(self, name):
            return getattr(self._conn, name)

        def executemany(self, sql, rows):
            if "INSERT INTO meta" in sql:
                raise KeyboardInterrupt  # killed between the tables and the meta rows
            return self._conn.executemany(sql, rows)

    monkeypatch.setattr(sqlite3, "connect", lambda *a, **kw: Dies(real_connect(*a, **kw)))
    with pytest.raises(KeyboardInterrupt):
        Journal(path, meta={"config_hash": "h"}, resume=False)
    monkeypatch.setattr(sqlite3, "connect", real_connect)
    with closing(sqlite3.connect(path)) as conn:
        tables = conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
    assert path.exists() and tables == []
    with Journal(path, meta={"config_hash": "h"}, resume=True) as j:  # the way forward
        assert j.meta == {"config_hash": "h"}


def test_journals_of_the_previous_hash_still_resume(started) -> None:
    config, run = started
    cfg = load_audit_config(config)
    with closing(sqlite3.connect(run / "journal.sqlite")) as conn, conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'config_hash'",
                     (legacy_config_hash(cfg),))
        conn.execute("DELETE FROM meta WHERE key = ?", (CONFIG_META,))
    assert run_audit(cfg, out_dir=run, run=RunOptions(resume=True)).ran_now == 7
    assert CONFIG_META in meta(run)  # the identity is recorded for later mismatches
