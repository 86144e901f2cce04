"""The run journal: one SQLite row per evaluation, written as results arrive.

The journal is what makes a run resumable and exactly-once. Every evaluation has a
key (model, k, temperature, condition, query_id, perm_index, sample_index) that is the
PRIMARY KEY of the ``evaluations`` table; rows are committed in small batches (every
~50 ms, see :class:`Journal`), so a crash (even ``kill -9``) loses only calls still in
flight or not yet committed -- never acknowledged, so never counted -- and ``--resume``
runs exactly the keys that have no completed row. The ``meta`` table holds
the hash of the resolved config: resuming with another config is a
:class:`~recaudit.exceptions.JournalError`.

Rows have one of three statuses:

- ``ok`` -- the answer parsed to one prompt position;
- ``discarded`` -- the backend answered but the answer did not parse (a real outcome of
  the system under test, counted and reported);
- ``failed`` -- the backend gave up (endpoint errors after all retries). Not an
  outcome: failed rows are re-attempted by ``--resume`` and never reach the
  evaluations table.

Any text an endpoint returns is journaled: NUL characters and megabytes as they are;
text that no UTF-8 store can hold (a lone surrogate such as a JSON ``\\ud800``
escape decodes to) is stored as its JSON string literal and the row's ``escaped``
column names the fields so stored -- a recorded, reversible escape
(:func:`unescape_row`). A record SQLite still refuses costs only itself, never the
other records of its batch (:attr:`Journal.rejected`).
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Collection, Iterator, Mapping
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

from ..exceptions import JournalError
from ._journal_columns import (
    COLUMNS,
    EVALUATION_COLUMNS,
    KEY_FIELDS,
    SCHEMA,
    UPSERT,
    EvalKey,
    EvalRecord,
    MemorySink,
    ResultSink,
    escape_row,
    records_to_frame,
    unescape_row,
)

__all__ = [
    "EVALUATION_COLUMNS",
    "EvalKey",
    "EvalRecord",
    "Journal",
    "MemorySink",
    "ResultSink",
    "escape_row",
    "records_to_frame",
    "unescape_row",
]

MSG_EXISTS = (
    "journal {path} already exists; pass `--resume` to continue that run or choose "
    "another `--out` folder"
)
MSG_MISMATCH = (
    "journal {path} was written with a different config ({field}: journal has "
    "{old!r}, this config gives {new!r}); resume with the original config or choose "
    "another `--out` folder"
)
MSG_MISMATCH_SETTINGS = (
    "journal {path} was written with a different config (config_hash differs: "
    "{changes}); resume with the original config or choose another `--out` folder"
)
MSG_NO_META = (
    "journal {path} holds {n} evaluation rows but no record of the config they were run "
    "with (its meta table is empty); it cannot be resumed safely: start the run again "
    "in another `--out` folder"
)
#: The meta entry holding the config identity (JSON) that names differing settings;
#: compared through ``config_hash``, not on its own.
CONFIG_META = "config"
#: Most differing settings a mismatch message lists.
_MAX_CHANGES = 4
MSG_LOCKED = "journal {path} is in use by another running process; wait for it or stop it"
MSG_MISSING = "no journal at {path}; there is nothing to resume (drop `--resume`)"
MSG_REJECTED = (
    "journal {path}: {n} result(s) could not be journaled (first: {key}: {error}); the "
    "other results are kept, and `--resume` runs exactly the missing ones again"
)


class Journal:
    """The SQLite journal of one run (``journal.sqlite`` in the run folder).

    The file is in WAL mode. Records are committed in batches, one transaction per
    batch (``executemany``): as soon as ``commit_every`` records are pending or
    ``commit_interval_s`` has passed since the last commit. A record that is not yet
    committed when the process dies (even ``kill -9``) was never acknowledged: it has
    no row and ``--resume`` simply runs it again, so exactly-once holds for the
    recorded rows. :meth:`flush` and :meth:`close` commit the rest. An advisory lock
    (``journal.sqlite.lock``) keeps two processes from running the same journal.

    With ``background=True`` (what ``positional run`` uses) the commits run in a writer
    thread: :meth:`write` only queues the row, so the runner's event loop never waits
    for the disk, and the thread commits every ``commit_interval_s`` or as soon as
    ``commit_every`` rows are queued. An error in the writer thread is raised as a
    :class:`~recaudit.exceptions.JournalError` by the next :meth:`write`,
    :meth:`flush` or :meth:`close`.

    Parameters
    ----------
    path : path-like
        The journal file.
    meta : mapping of str to str
        Identity of the run (``config_hash``, ``catalog_sha256``, ...). Written on
        create, compared on resume.
    resume : bool
        Open an existing journal (it must exist and its meta must match) instead of
        creating a new one (it must not exist).
    commit_every : int
        Commit when this many records are pending (1 = commit every record).
    commit_interval_s : float
        Commit when this long has passed since the last commit (the most a crash can
        lose, in wall time).
    background : bool
        Commit in a writer thread instead of inside :meth:`write`.
    also_accept : mapping of str to collection of str, optional
        Other stored meta values that match on resume (e.g. the config hash an older
        version computed for the same config).

    Notes
    -----
    The tables and the meta rows of a new journal are written in one transaction. A
    journal left without meta rows (by a version that wrote them separately and was
    killed in between) and without evaluation rows is initialised by ``resume``.
    """

    def __init__(self, path: str | os.PathLike[str], *, meta: Mapping[str, str],
                 resume: bool, commit_every: int = 64,
                 commit_interval_s: float = 0.05, background: bool = False,
                 also_accept: Mapping[str, Collection[str]] | None = None) -> None:
        path, meta = _journal_iv(path, meta, commit_every, commit_interval_s)
        self.path = path
        self.commit_every = commit_every
        self.commit_interval_s = commit_interval_s
        # deque: append (caller) and popleft (writer thread) are atomic
        self._pending: deque[dict[str, object]] = deque()
        self._last_commit = time.monotonic()
        self._db_lock = threading.Lock()  # one user of the connection at a time
        self._wake = threading.Event()
        self._closing = False
        self._writer_error: BaseException | None = None
        #: Records SQLite refused on their own account: (key, error); not journaled,
        #: so ``--resume`` runs them again. ``run_audit`` reports them.
        self.rejected: list[tuple[EvalKey, str]] = []
        self._thread: threading.Thread | None = None
        if resume and not path.exists():
            raise JournalError(MSG_MISSING.format(path=path))
        if not resume and path.exists():
            raise JournalError(MSG_EXISTS.format(path=path))
        self._lock_file = open(path.with_name(path.name + ".lock"), "a+")  # noqa: SIM115
        try:
            fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            self._lock_file.close()
            raise JournalError(MSG_LOCKED.format(path=path)) from exc
        try:
            self._conn = sqlite3.connect(path, isolation_level=None,
                                         check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            # tables and meta rows in ONE transaction: a process killed while creating
            # the journal leaves no journal without its identity
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        self._conn.execute(statement)
                self._add_missing_columns()
                if resume:
                    self._check_meta(meta, also_accept or {})
                else:
                    self._conn.executemany(
                        "INSERT INTO meta VALUES (?, ?)", sorted(meta.items())
                    )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            self.close()
            raise JournalError(f"journal {path} cannot be used: {exc}") from exc
        except BaseException:  # JournalError, or interrupted: release the lock
            self.close()
            raise
        if background:
            self._thread = threading.Thread(target=self._writer, name="recaudit-journal",
                                            daemon=True)
            self._thread.start()

    def _add_missing_columns(self) -> None:
        """Journals written before a column marked ``added`` existed (``outside_mass``,
        ``escaped``) gain it (NULL) on open."""
        cols = {row[1] for row in self._conn.execute("PRAGMA table_info(evaluations)")}
        for c in COLUMNS:
            if c.added and c.name not in cols:
                self._conn.execute(f"ALTER TABLE evaluations ADD COLUMN {c.name} {c.sql}")

    def _check_meta(self, meta: Mapping[str, str],
                    also_accept: Mapping[str, Collection[str]]) -> None:
        stored = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
        if meta and not stored:
            # created by a process killed between the tables and the meta rows (before
            # both were one transaction): nothing was run, so initialise it
            n = self._conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]
            if n:
                raise JournalError(MSG_NO_META.format(path=self.path, n=n))
            self._conn.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
            return
        check_meta(self.path, stored, meta, also_accept)
        if CONFIG_META in meta and CONFIG_META not in stored:  # a journal older than it
            self._conn.execute("INSERT INTO meta VALUES (?, ?)",
                               (CONFIG_META, meta[CONFIG_META]))

    @property
    def meta(self) -> dict[str, str]:
        """The stored identity of the run."""
        with self._db_lock:
            return dict(self._conn.execute("SELECT key, value FROM meta").fetchall())

    def write(self, record: EvalRecord) -> None:
        """Journal ``record`` (committed with its batch, see the class docstring).

        A completed row (``ok``/``discarded``) is never overwritten: writing a key
        twice keeps the first completed result (exactly-once). A ``failed`` row is
        replaced by the next attempt's result and its ``attempts`` count grows.
        """
        self._raise_writer_error()
        self._pending.append(record.to_row())
        if self._thread is not None:
            if len(self._pending) >= self.commit_every:
                self._wake.set()
        elif (len(self._pending) >= self.commit_every
                or time.monotonic() - self._last_commit >= self.commit_interval_s):
            self.flush()

    def flush(self) -> None:
        """Commit every pending record now, in one transaction."""
        self._raise_writer_error()
        try:
            self._commit_pending()
        except sqlite3.Error as exc:
            raise JournalError(f"journal {self.path}: writing results failed: {exc}") from exc

    def _commit_pending(self) -> None:
        """One transaction for every pending row. A row SQLite refuses on its own
        account (:data:`_ROW_ERRORS`: text it cannot bind, a value out of range or
        beyond SQLite's size limit) costs only itself: the batch is then written row by row and the
        refused rows go to :attr:`rejected`. Any other error (disk, lock) keeps the
        whole batch pending for the next try and is raised."""
        with self._db_lock:
            n = len(self._pending)
            if n:
                batch = [self._pending.popleft() for _ in range(n)]
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    try:
                        self._conn.executemany(UPSERT, batch)
                    except _ROW_ERRORS:
                        # start again row by row: rows executemany applied before the
                        # bad one must not be applied twice (attempts would grow)
                        self._conn.execute("ROLLBACK")
                        self._conn.execute("BEGIN IMMEDIATE")
                        for row in batch:
                            try:
                                self._conn.execute(UPSERT, row)
                            except _ROW_ERRORS as exc:
                                self.rejected.append((_key_of(row), _describe_error(exc)))
                except BaseException:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    self._pending.extendleft(reversed(batch))  # kept for the next try
                    raise
                self._conn.execute("COMMIT")
            self._last_commit = time.monotonic()

    def _writer(self) -> None:
        while not self._closing:
            self._wake.wait(self.commit_interval_s)
            self._wake.clear()
            try:
                self._commit_pending()
            except BaseException as exc:  # noqa: BLE001 -- handed to the caller's thread
                self._writer_error = exc
                return

    def _raise_writer_error(self) -> None:
        exc = self._writer_error
        if exc is not None:
            raise JournalError(
                f"journal {self.path}: the writer thread failed: {exc}; results not yet "
                "committed will be run again by `--resume`"
            ) from exc

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """The connection inside one ``BEGIN IMMEDIATE`` transaction (pending records
        committed first), for a caller's own tables next to ``evaluations`` (the batch
        files' pending keys, :mod:`recaudit.audit._batch`): committed on exit, rolled
        back on an exception. Rows of ``evaluations`` written through it must use
        :data:`UPSERT` (exactly-once)."""
        self.flush()
        with self._db_lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def completed_keys(self) -> set[EvalKey]:
        """Keys with an ``ok`` or ``discarded`` row (not re-run on resume)."""
        self.flush()
        with self._db_lock:
            cur = self._conn.execute(
                f"SELECT {', '.join(KEY_FIELDS)} FROM evaluations WHERE status != 'failed'"
            )
            return {EvalKey(*row) for row in cur}

    def counts(self) -> dict[str, int]:
        """Number of rows per status."""
        self.flush()
        with self._db_lock:
            cur = self._conn.execute(
                "SELECT status, COUNT(*) FROM evaluations GROUP BY status")
            out = {"ok": 0, "discarded": 0, "failed": 0}
            out.update(dict(cur.fetchall()))
        return out

    def failures(self) -> pd.DataFrame:
        """Failed rows: key, ``error_class``, ``error_message``, ``attempts``."""
        self.flush()
        with self._db_lock:
            return pd.read_sql_query(
                f"SELECT {', '.join(KEY_FIELDS)}, error_class, error_message, attempts "
                "FROM evaluations WHERE status = 'failed'",
                self._conn,
            )

    def to_frame(self) -> pd.DataFrame:
        """The evaluations table (``ok`` and ``discarded`` rows), sorted by key."""
        self.flush()
        with self._db_lock:
            self._conn.row_factory = sqlite3.Row
            try:
                rows = self._conn.execute(
                    "SELECT * FROM evaluations WHERE status != 'failed'"
                ).fetchall()
            finally:
                self._conn.row_factory = None
        return records_to_frame(dict(r) for r in rows)

    def close(self) -> None:
        """Commit pending records, stop the writer, close the file, release the lock."""
        thread = self._thread
        if thread is not None:
            self._closing = True
            self._wake.set()
            thread.join()
            self._thread = None
        conn = getattr(self, "_conn", None)
        try:
            if conn is not None:
                self.flush()
        finally:
            if conn is not None:
                conn.close()
                self._conn = None  # type: ignore[assignment]
            if not self._lock_file.closed:
                fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_UN)
                self._lock_file.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_meta(path: Path, stored: Mapping[str, str], meta: Mapping[str, str],
               also_accept: Mapping[str, Collection[str]] | None = None) -> None:
    """Raise :class:`JournalError` when ``stored`` (a journal's meta) does not match
    ``meta`` (this run's).

    Every key of ``meta`` but :data:`CONFIG_META` must be equal (or one of
    ``also_accept[key]``); a ``config_hash`` mismatch names the settings that differ
    when both sides hold their :data:`CONFIG_META` identity.
    """
    accept = also_accept or {}
    for field, new in sorted(meta.items()):
        if field == CONFIG_META:
            continue
        old = stored.get(field)
        if old == new or (old is not None and old in accept.get(field, ())):
            continue
        if field == "config_hash" and CONFIG_META in stored and CONFIG_META in meta:
            changes = settings_changes(stored[CONFIG_META], meta[CONFIG_META])
            if changes:
                raise JournalError(MSG_MISMATCH_SETTINGS.format(path=path, changes=changes))
        raise JournalError(MSG_MISMATCH.format(path=path, field=field, old=old, new=new))


def read_meta(path: str | os.PathLike[str]) -> dict[str, str]:
    """A journal's meta, read-only (no lock, nothing written); ``{}`` when the file
    has no meta table. Raises :class:`JournalError` when it is not a SQLite file."""
    uri = f"file:{Path(path).resolve()}?mode=ro"
    try:
        with closing(sqlite3.connect(uri, uri=True, timeout=5)) as conn:
            return dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return {}
        raise JournalError(f"journal {path} cannot be used: {exc}") from exc
    except sqlite3.DatabaseError as exc:
        raise JournalError(f"journal {path} cannot be used: {exc}") from exc


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted paths to the leaves of a JSON value; list items that are tables with a
    ``name`` are keyed by it (``models.remote.params.p_bias``)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out or {prefix: {}}
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        out = {}
        for i, v in enumerate(value):
            name = v.get("name", i)
            inner = {k: x for k, x in v.items() if k != "name"}
            out.update(_flatten(inner, f"{prefix}.{name}"))
        return out
    return {prefix: value}


def settings_changes(old_json: str, new_json: str) -> str:
    """The settings that differ between two config identities (JSON), e.g.
    ```design.n_perms`: journal has 20, this config gives 10``; ``""`` when none
    (or when either does not parse)."""
    try:
        old, new = _flatten(json.loads(old_json)), _flatten(json.loads(new_json))
    except ValueError:
        return ""
    names = sorted(k for k in old.keys() | new.keys() if old.get(k, _ABSENT) != new.get(k, _ABSENT))
    parts = [f"`{n}`: journal has {_show(old.get(n, _ABSENT))}, this config gives "
             f"{_show(new.get(n, _ABSENT))}" for n in names[:_MAX_CHANGES]]
    if len(names) > _MAX_CHANGES:
        parts.append(f"and {len(names) - _MAX_CHANGES} more")
    return "; ".join(parts)


_ABSENT = object()


def _show(value: object) -> str:
    if value is _ABSENT:
        return "nothing"
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


#: Errors that belong to one row's values (what an endpoint returned: text SQLite
#: cannot bind, an integer beyond 64 bits, a value beyond SQLite's size limit): that row
#: is refused alone. Anything else -- locked, disk full, I/O, or a constraint our own
#: code broke -- keeps the batch pending and is raised.
_ROW_ERRORS = (UnicodeError, OverflowError, sqlite3.DataError)


def _key_of(row: Mapping[str, object]) -> EvalKey:
    return EvalKey(*(row[f] for f in KEY_FIELDS))  # type: ignore[arg-type]


def _describe_error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")[:300]


def _journal_iv(
    path: str | os.PathLike[str], meta: Mapping[str, str], commit_every: int,
    commit_interval_s: float,
) -> tuple[Path, dict[str, str]]:
    if isinstance(commit_every, bool) or not isinstance(commit_every, int) or commit_every < 1:
        raise JournalError(f"`commit_every` must be an integer >= 1, got {commit_every!r}")
    if not commit_interval_s >= 0:
        raise JournalError(f"`commit_interval_s` must be >= 0, got {commit_interval_s!r}")
    path = Path(path)
    if not path.parent.is_dir():
        raise JournalError(f"`path` folder {path.parent} does not exist; create it first")
    clean = {str(k): str(v) for k, v in meta.items()}
    return path, clean
