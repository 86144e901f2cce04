"""Provider batch files: an audit's evaluations answered by a batch API at batch prices.

``recaudit positional run CONFIG --batch-file requests.jsonl`` plans the run as usual
(:func:`~recaudit.audit.run_audit`'s plan, journal and run folder) but sends nothing:
it writes every planned evaluation that has no completed journal row and is not already
waiting in an earlier batch file as one line of the OpenAI Batch API input format::

    {"custom_id": "<the evaluation's key>", "method": "POST",
     "url": "/v1/chat/completions", "body": <OpenAIBackend.payload(request)>}

and journals those keys as PENDING. The body is built by the same
:class:`~recaudit.llm.backends.OpenAIBackend` the live run uses (same model name,
messages, seed, ``max_tokens``, ``logprobs`` / ``top_logprobs``, ``response_format``);
it never holds an API key (the key only ever goes into a live request's header).

``recaudit positional run CONFIG --resume --batch-results output.jsonl [--batch-errors
errors.jsonl]`` reads the provider's output (and error) files back into the journal
exactly once; each line is counted as one of

- ``ok`` / ``discarded`` -- an answer, parsed by the live path's parser and
  choice-probability extraction (:meth:`OpenAIBackend.response_from_body`,
  :func:`~recaudit.audit._runner.record_from_response`);
- ``failed`` -- an error line, a non-200 ``status_code``, or a body that is not a chat
  completion: journaled as a ``failed`` row, so the next ``--batch-file`` plans it again;
- ``repeated`` -- the very same line was read before (a results file given twice);
- ``duplicate`` -- another answer for a key that already has a completed row (the
  first answer is kept);
- ``foreign`` -- a recaudit ``custom_id`` of another run folder;
- ``unknown`` -- a ``custom_id`` that does not decode, or names no planned evaluation;
- ``malformed`` -- not a JSON object with a string ``custom_id``;
- ``rejected`` -- an answer SQLite refused to store (left pending).

Keys whose line never came back (a partial or expired batch) stay pending. With
``--sequential`` each batch file holds only the NEXT ROUND of every still-open cell
(:mod:`recaudit.audit._sequential_driver`), planned from the journal, so the
anytime-valid stopping works across batch rounds as it does live.

Journal storage (docs/decisions/, "Pending batch evaluations live in their own
tables"): two tables next to ``evaluations``, created on first use --
``batch_pending`` (key, ``custom_id``, batch file, time written) and ``batch_lines``
(the SHA-256 of every result line read, its outcome and file: what makes a repeated
file a no-op). ``meta`` gains ``batch_run_id``, a random id that every ``custom_id``
of the run carries.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import re
import secrets
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from .._io import write_atomic, write_text_atomic
from ..exceptions import ConfigError, EndpointError, InputError
from ..llm import Backend, CandidateSource
from ..llm.backends import EndpointConfig, OpenAIBackend, OpenAIParams, build_backends
from ._config import AuditConfig
from ._journal import EvalKey, EvalRecord, Journal
from ._journal_columns import KEY_FIELDS, UPSERT
from ._plan import (
    EVALUATIONS,
    JOURNAL,
    MANIFEST,
    build_tasks,
    load_config_catalog,
    parse_position,
    write_inputs,
)
from ._run import _inputs, _prices, _run_audit_iv
from ._run_options import RunOptions
from ._runner import EvalTask, ParseFn, record_from_response, write_manifest
from ._sequential_driver import SequentialOptions, drive_sequential
from ._spend import record_spend

__all__ = [
    "BATCH_URL",
    "BatchIngest",
    "BatchResult",
    "decode_custom_id",
    "encode_custom_id",
    "run_batch",
]

#: The ``url`` of every request line (the chat-completions endpoint).
BATCH_URL = "/v1/chat/completions"
#: The meta entry holding the run's batch id (carried by every ``custom_id``).
RUN_ID_META = "batch_run_id"
_ID_PREFIX = "recaudit"
_ID_VERSION = "1"
_RUN_ID = re.compile(r"[0-9a-f]{12}")
_INT = re.compile(r"0|[1-9][0-9]*")
#: Outcomes of a result line, in report order.
OUTCOMES = ("ok", "discarded", "failed", "repeated", "duplicate", "foreign", "unknown",
            "malformed", "rejected")

MSG_BAD_ID = (
    "custom_id {cid} is not a recaudit evaluation key (expected "
    "recaudit:1:<run id>:<model>:<k>:<temperature>:<condition>:<query_id>:<perm_index>:"
    "<sample_index>, text fields percent-encoded)"
)
MSG_NOT_OPENAI = (
    "batch files are requests to an OpenAI-compatible endpoint: model {name!r} has "
    "backend = {backend!r}; run it live (drop `--batch-file`/`--batch-results`) or "
    "remove it from the config"
)
MSG_FILE_EXISTS = (
    "`--batch-file` {path} already exists (it may be a batch already submitted); "
    "choose a new file name"
)
MSG_NO_RESULTS = "`{option}` {path} does not exist; give the provider's output file"
MSG_RESULTS_RESUME = (
    "`--batch-results` reads answers into an existing run: add `--resume` (and the "
    "run's `--out`)"
)
MSG_NOTHING = "give `--batch-file FILE` (write requests) and/or `--batch-results FILE`"

BATCH_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS batch_pending (\n"
    + "".join(f"    {name} {sql},\n" for name, sql in (
        ("model", "TEXT NOT NULL"), ("k", "INTEGER NOT NULL"),
        ("temperature", "REAL NOT NULL"), ("condition", "TEXT NOT NULL"),
        ("query_id", "TEXT NOT NULL"), ("perm_index", "INTEGER NOT NULL"),
        ("sample_index", "INTEGER NOT NULL"), ("custom_id", "TEXT NOT NULL UNIQUE"),
        ("batch_file", "TEXT NOT NULL"), ("written_utc", "TEXT NOT NULL")))
    + f"    PRIMARY KEY ({', '.join(KEY_FIELDS)})\n);\n"
    "CREATE TABLE IF NOT EXISTS batch_lines (\n"
    "    line_sha256 TEXT PRIMARY KEY,\n    custom_id TEXT,\n    outcome TEXT NOT NULL,\n"
    "    results_file TEXT NOT NULL,\n    ingested_utc TEXT NOT NULL\n);\n"
)
_KEY_MATCH = " AND ".join(f"e.{f} = batch_pending.{f}" for f in KEY_FIELDS)


def encode_custom_id(key: EvalKey, run_id: str) -> str:
    """The ``custom_id`` of ``key`` in the run ``run_id``: readable and reversible.

    ``recaudit:1:<run id>:<model>:<k>:<temperature>:<condition>:<query_id>:<perm_index>:
    <sample_index>``; text fields are percent-encoded (so ``:`` never occurs inside
    one), the temperature is Python's shortest round-tripping ``repr``.

    Examples
    --------
    >>> encode_custom_id(EvalKey("gpt:4o", 5, 0.7, "permutation", "q 1", 3, 0),
    ...                  "0123456789ab")
    'recaudit:1:0123456789ab:gpt%3A4o:5:0.7:permutation:q%201:3:0'
    """
    if not _RUN_ID.fullmatch(run_id):
        raise InputError(f"`run_id` must be 12 lowercase hex digits, got {run_id!r}")
    parts = (_ID_PREFIX, _ID_VERSION, run_id, quote(key.model, safe=""), str(int(key.k)),
             repr(float(key.temperature)), quote(key.condition, safe=""),
             quote(key.query_id, safe=""), str(int(key.perm_index)),
             str(int(key.sample_index)))
    return ":".join(parts)


def decode_custom_id(custom_id: str) -> tuple[str, EvalKey]:
    """``(run id, key)`` of a ``custom_id`` written by :func:`encode_custom_id`.

    Raises
    ------
    InputError
        When ``custom_id`` is not exactly what :func:`encode_custom_id` writes
        (another format, a non-canonical number or escape, a missing field).
    """
    shown = json.dumps(custom_id[:200]) if isinstance(custom_id, str) else repr(custom_id)
    bad = InputError(MSG_BAD_ID.format(cid=shown))
    if not isinstance(custom_id, str) or not custom_id.isascii():  # ours are ASCII
        raise bad
    parts = custom_id.split(":")
    if len(parts) != 10 or parts[0] != _ID_PREFIX or parts[1] != _ID_VERSION:
        raise bad
    run_id, model, k, temp, condition, query_id, perm, sample = parts[2:]
    if not (_RUN_ID.fullmatch(run_id) and all(_INT.fullmatch(x) for x in (k, perm, sample))):
        raise bad
    try:
        key = EvalKey(unquote(model, errors="strict"), int(k), float(temp),
                      unquote(condition, errors="strict"), unquote(query_id, errors="strict"),
                      int(perm), int(sample))
    except (ValueError, UnicodeDecodeError):
        raise bad from None
    if not (key.model and key.condition and key.query_id and math.isfinite(key.temperature)) \
            or encode_custom_id(key, run_id) != custom_id:
        raise bad
    return run_id, key


@dataclass(frozen=True)
class BatchIngest:
    """What reading one results file did (each line counted once, see the module doc).

    Attributes
    ----------
    path : str
        The file read.
    lines : int
        Non-blank lines read.
    ok, discarded, failed, repeated, duplicate, foreign, unknown, malformed, rejected : int
        Lines per outcome (they sum to ``lines``).
    """

    path: str
    lines: int = 0
    ok: int = 0
    discarded: int = 0
    failed: int = 0
    repeated: int = 0
    duplicate: int = 0
    foreign: int = 0
    unknown: int = 0
    malformed: int = 0
    rejected: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready counts."""
        return asdict(self)


@dataclass(frozen=True)
class BatchResult:
    """What :func:`run_batch` did.

    Attributes
    ----------
    run_dir : Path
        The run folder.
    planned : int
        Keys in the plan.
    ingested : tuple of BatchIngest
        One per results file read, in the order given.
    batch_file : Path or None
        The requests file written (``None``: none asked for, or nothing to write).
    written : int
        Request lines written to it.
    pending : int
        Keys waiting for a batch's answer after this call.
    completed : int
        Keys with a completed (``ok``/``discarded``) journal row.
    failed : int
        Keys whose last answer failed and that no pending batch asks again (the next
        ``batch_file`` asks them).
    complete : bool
        Nothing left to ask: every planned key is complete, or (``--sequential``)
        every cell stopped. ``evaluations.parquet`` is then written.
    evaluations_path : Path or None
        ``run_dir / "evaluations.parquet"`` when ``complete``.
    """

    run_dir: Path
    planned: int
    ingested: tuple[BatchIngest, ...]
    batch_file: Path | None
    written: int
    pending: int
    completed: int
    failed: int
    complete: bool
    evaluations_path: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (for ``--json``)."""
        return {"run_dir": str(self.run_dir), "planned": self.planned,
                "ingested": [i.to_dict() for i in self.ingested],
                "batch_file": None if self.batch_file is None else str(self.batch_file),
                "written": self.written, "pending": self.pending,
                "completed": self.completed, "failed": self.failed,
                "complete": self.complete,
                "evaluations": None if self.evaluations_path is None
                else str(self.evaluations_path)}


def batch_backends(cfg: AuditConfig) -> dict[tuple[str, int], OpenAIBackend]:
    """The backends whose :meth:`~OpenAIBackend.payload` is each line's body: built by
    the live run's factory, without an API key (the body never depends on it).

    Raises :class:`ConfigError` for a model that is not ``backend = "openai"``.
    """
    models: list[EndpointConfig] = []
    for m in cfg.models:
        if not isinstance(m.params, OpenAIParams):
            raise ConfigError(MSG_NOT_OPENAI.format(name=m.name, backend=m.backend))
        models.append(replace(m, params=replace(m.params, api_key_env=None)))
    built = build_backends(models, k=cfg.retrieval.k, seed=cfg.seed,
                           constrained=cfg.prompt.constrained)
    return {key: b for key, b in built.items() if isinstance(b, OpenAIBackend)}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _prepare_tables(conn: sqlite3.Connection) -> str:
    """Create the batch tables (idempotent), drop pending keys completed since (a live
    ``--resume`` may have run them), and return the run's batch id (made on first use)."""
    for statement in BATCH_SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute("DELETE FROM batch_pending WHERE EXISTS (SELECT 1 FROM evaluations e "
                 f"WHERE {_KEY_MATCH} AND e.status != 'failed')")
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (RUN_ID_META,)).fetchone()
    if row is not None:
        return str(row[0])
    run_id = secrets.token_hex(6)
    conn.execute("INSERT INTO meta VALUES (?, ?)", (RUN_ID_META, run_id))
    return run_id


def _pending_keys(conn: sqlite3.Connection) -> set[EvalKey]:
    cur = conn.execute(f"SELECT {', '.join(KEY_FIELDS)} FROM batch_pending")
    return {EvalKey(*row) for row in cur}


def request_line(task: EvalTask, backend: OpenAIBackend, run_id: str) -> str:
    """One line of the requests file (compact JSON, UTF-8, as the live request)."""
    line = {"custom_id": encode_custom_id(task.key, run_id), "method": "POST",
            "url": BATCH_URL, "body": backend.payload(task.request)}
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def write_requests(path: Path, tasks: Sequence[EvalTask],
                   backends: Mapping[tuple[str, int], OpenAIBackend], journal: Journal,
                   run_id: str, *, resend_pending: bool = False) -> int:
    """Write ``tasks`` (less the completed ones, and less the pending ones unless
    ``resend_pending``) to ``path`` and journal them as pending; the number written (no
    file when 0).

    The file is written (atomically) BEFORE the keys are journaled as pending: a crash
    in between leaves them unpending, so the next ``--batch-file`` asks again (an
    answer that arrives twice is then counted ``duplicate``), never a pending key whose
    request was never written.
    """
    if path.exists():
        raise InputError(MSG_FILE_EXISTS.format(path=path))
    with journal.transaction() as conn:
        pending = set() if resend_pending else _pending_keys(conn)
    done = journal.completed_keys()
    todo = [t for t in tasks if t.key not in done and t.key not in pending]
    if not todo:
        return 0
    lines = [request_line(t, backends[(t.key.model, t.key.k)], run_id) for t in todo]
    write_text_atomic(path, "\n".join(lines) + "\n")
    written = _now()
    with journal.transaction() as conn:
        conn.executemany(
            f"INSERT OR REPLACE INTO batch_pending VALUES ({', '.join('?' * 10)})",
            [(*(getattr(t.key, f) for f in KEY_FIELDS), encode_custom_id(t.key, run_id),
              str(path), written) for t in todo])
    return len(todo)


@dataclass
class _Reader:
    """What classifying a result line needs (internal)."""

    run_id: str
    tasks: Mapping[EvalKey, EvalTask]
    backends: Mapping[tuple[str, int], OpenAIBackend]
    parse: ParseFn


def _line_failure(doc: Mapping[str, Any]) -> tuple[str | None, object]:
    """(why the line is a failure or ``None``, the completion body)."""
    error = doc.get("error")
    if error is not None:
        if isinstance(error, dict):
            return f"{error.get('code', 'error')}: {error.get('message', '')}"[:500], None
        return f"error: {error}"[:500], None
    response = doc.get("response")
    if not isinstance(response, dict):
        return "the line has neither `response` nor `error`", None
    body = response.get("body")
    status = response.get("status_code")
    if status != 200:
        detail = body.get("error") if isinstance(body, dict) else body
        if isinstance(detail, dict):
            detail = detail.get("message", detail)
        return f"HTTP {status}: {detail}"[:500], None
    if isinstance(body, str):  # some servers send the body as JSON text
        try:
            body = json.loads(body)
        except ValueError:
            return "the response body is not JSON", None
    return None, body


def _classify(raw: bytes, reader: _Reader, completed: Callable[[EvalKey], bool]
              ) -> tuple[str | None, str, EvalRecord | None]:
    """(custom_id, outcome, record to journal) of one result line."""
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, nested beyond the parser
        return None, "malformed", None
    if not isinstance(doc, dict) or not isinstance(doc.get("custom_id"), str):
        return None, "malformed", None
    cid = doc["custom_id"]
    try:
        run_id, key = decode_custom_id(cid)
    except InputError:
        return cid, "unknown", None
    if run_id != reader.run_id:
        return cid, "foreign", None
    task = reader.tasks.get(key)
    if task is None:
        return cid, "unknown", None
    if completed(key):
        return cid, "duplicate", None
    failure, body = _line_failure(doc)
    if failure is None:
        backend = reader.backends[(key.model, key.k)]
        try:
            resp = backend.response_from_body(body, task.request)
        except EndpointError as exc:
            failure = f"unusable response body ({exc})"
        except Exception as exc:  # noqa: BLE001 -- as live: a bad answer is a failed row
            failure = f"unusable response body ({type(exc).__name__}: {exc})"[:500]
        else:
            record = replace(record_from_response(task, resp, reader.parse), latency_s=None)
            return cid, record.status, record
    req = task.request
    return cid, "failed", EvalRecord(
        key=key, status="failed", order=req.order, identifiers=req.identifiers,
        error_class="BatchLineError", error_message=failure)


def ingest_results(path: Path, reader: _Reader, journal: Journal) -> BatchIngest:
    """Read one results (or errors) file into the journal, in ONE transaction."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read batch results {path}: {exc.strerror}") from None
    counts = dict.fromkeys(OUTCOMES, 0)
    ingested = _now()
    with handle, journal.transaction() as conn:
        def completed(key: EvalKey) -> bool:
            row = conn.execute(
                f"SELECT status FROM evaluations WHERE "
                f"{' AND '.join(f'{f} = ?' for f in KEY_FIELDS)}",
                tuple(getattr(key, f) for f in KEY_FIELDS)).fetchone()
            return row is not None and row[0] != "failed"

        for line in handle:  # streamed: an output file may be hundreds of MB
            raw = line.strip()
            if not raw:
                continue
            sha = hashlib.sha256(raw).hexdigest()
            if conn.execute("SELECT 1 FROM batch_lines WHERE line_sha256 = ?",
                            (sha,)).fetchone():
                counts["repeated"] += 1
                continue
            cid, outcome, record = _classify(raw, reader, completed)
            if record is not None:
                try:
                    conn.execute(UPSERT, record.to_row())
                except (UnicodeError, OverflowError, sqlite3.DataError):
                    outcome = "rejected"  # stays pending; the line may be read again
                if outcome != "rejected":
                    conn.execute(f"DELETE FROM batch_pending WHERE "
                                 f"{' AND '.join(f'{f} = ?' for f in KEY_FIELDS)}",
                                 tuple(getattr(record.key, f) for f in KEY_FIELDS))
            counts[outcome] += 1
            if outcome != "rejected":  # the id as JSON text: any string can be stored
                shown = None if cid is None else json.dumps(cid[:300])
                conn.execute("INSERT INTO batch_lines VALUES (?, ?, ?, ?, ?)",
                             (sha, shown, outcome, str(path), ingested))
    return BatchIngest(path=str(path), lines=sum(counts.values()), **counts)


class _NextRound(Exception):  # noqa: N818 -- a signal, not an error
    """Raised by the sequential driver's batch callback: the round to write."""

    def __init__(self, tasks: list[EvalTask]) -> None:
        super().__init__("next round")
        self.tasks = tasks


def _next_tasks(cfg: AuditConfig, tasks: list[EvalTask], journal: Journal, run_dir: Path,
                sequential: SequentialOptions | None, say: Callable[[str], None]
                ) -> tuple[list[EvalTask], bool]:
    """(the tasks the next batch file may hold, whether nothing is left to ask)."""
    if sequential is None:
        done = journal.completed_keys()
        todo = [t for t in tasks if t.key not in done]
        return todo, not todo

    async def stop(batch: list[EvalTask]) -> Any:
        raise _NextRound(batch)

    try:
        asyncio.run(drive_sequential(sequential, cfg, tasks, journal, run_dir, stop, say))
    except _NextRound as nxt:
        return nxt.tasks, False
    return [], True


def run_batch(
    cfg: AuditConfig,
    *,
    out_dir: str | os.PathLike[str],
    resume: bool = False,
    batch_file: str | os.PathLike[str] | None = None,
    batch_results: Sequence[str | os.PathLike[str]] = (),
    sequential: SequentialOptions | None = None,
    resend_pending: bool = False,
    retriever: CandidateSource | None = None,
    on_phase: Callable[[str], None] | None = None,
    parse: ParseFn = parse_position,
) -> BatchResult:
    """Read batch results into a run's journal and/or write its next batch file.

    Parameters
    ----------
    cfg : AuditConfig
        The audit; every model must be ``backend = "openai"``.
    out_dir : path-like
        The run folder (created by the first call, as :func:`run_audit` does).
    resume : bool
        Use the run in ``out_dir`` (needed for ``batch_results``).
    batch_file : path-like, optional
        Write the requests still to ask here (a new file; not written when there is
        nothing to ask) and journal them as pending.
    batch_results : sequence of path-like
        Provider output and error files, read first, each exactly once.
    sequential : SequentialOptions, optional
        Plan only the next round of each open cell (and update ``sequential.json``).
    resend_pending : bool
        Also write the keys pending in earlier batch files (a batch lost or cancelled
        without an error file); an answer that then arrives twice is ``duplicate``.
    retriever, on_phase
        As for :func:`run_audit`.
    parse : callable
        The answer parser (the live run's by default).

    Returns
    -------
    BatchResult

    Raises
    ------
    ConfigError, InputError, JournalError
        Before anything is written: a model that is not ``openai``, an existing
        ``batch_file``, a missing results file, ``batch_results`` without ``resume``.
    """
    started = time.perf_counter()
    out = _run_batch_iv(cfg, out_dir, resume, batch_file, batch_results, sequential)
    run_dir, file_path, result_paths = out
    say = on_phase or (lambda _msg: None)
    backends = batch_backends(cfg)
    catalog = load_config_catalog(cfg)
    inputs, meta, also_accept = _inputs(cfg, catalog, run_dir, resume, retriever, say)
    tasks = build_tasks(cfg, queries=inputs.queries, candidates=inputs.candidates,
                        template=inputs.template)
    if not resume:
        write_inputs(run_dir, cfg, inputs, config_hash=meta["config_hash"])
    with Journal(run_dir / JOURNAL, meta=meta, resume=resume, also_accept=also_accept
                 ) as journal:
        write_manifest(run_dir / MANIFEST, _as_backends(backends), resume=resume,
                       executor="batch")
        with journal.transaction() as conn:
            run_id = _prepare_tables(conn)
        reader = _Reader(run_id, {t.key: t for t in tasks}, backends, parse)
        ingested = tuple(ingest_results(p, reader, journal) for p in result_paths)
        todo, complete = _next_tasks(cfg, tasks, journal, run_dir, sequential, say)
        written = 0
        if file_path is not None and todo:
            written = write_requests(file_path, todo, backends, journal, run_id,
                                     resend_pending=resend_pending)
        with journal.transaction() as conn:
            pending = len(_pending_keys(conn))
            # failed keys that no pending batch asks again
            failed = conn.execute(
                "SELECT COUNT(*) FROM evaluations e WHERE e.status = 'failed' AND NOT "
                f"EXISTS (SELECT 1 FROM batch_pending WHERE {_KEY_MATCH})").fetchone()[0]
        counts = journal.counts()
        table = journal.to_frame()
    evaluations = None
    if complete:
        evaluations = run_dir / EVALUATIONS
        write_atomic(evaluations, lambda p: table.to_parquet(p, index=False))
    record_spend(run_dir / MANIFEST, table, wall_s=time.perf_counter() - started,
                 ran_now=sum(i.ok + i.discarded + i.failed for i in ingested),
                 prices=_prices(cfg))
    return BatchResult(run_dir=run_dir, planned=len(tasks), ingested=ingested,
                       batch_file=file_path if written else None, written=written,
                       pending=pending, completed=counts["ok"] + counts["discarded"],
                       failed=int(failed), complete=complete,
                       evaluations_path=evaluations)


def _as_backends(backends: Mapping[tuple[str, int], OpenAIBackend]
                 ) -> dict[tuple[str, int], Backend]:
    return dict(backends)


def _run_batch_iv(cfg: AuditConfig, out_dir: str | os.PathLike[str], resume: bool,
                  batch_file: str | os.PathLike[str] | None,
                  batch_results: Sequence[str | os.PathLike[str]],
                  sequential: SequentialOptions | None
                  ) -> tuple[Path, Path | None, list[Path]]:
    if batch_file is None and not batch_results:
        raise ConfigError(MSG_NOTHING)
    if batch_results and not resume:
        raise ConfigError(MSG_RESULTS_RESUME)
    run_dir = _run_audit_iv(cfg, out_dir, RunOptions(resume=resume, sequential=sequential),
                            False)
    for m in cfg.models:
        if not isinstance(m.params, OpenAIParams):
            raise ConfigError(MSG_NOT_OPENAI.format(name=m.name, backend=m.backend))
    paths = [Path(p) for p in batch_results]
    for p in paths:
        if not p.is_file():
            raise InputError(MSG_NO_RESULTS.format(option="--batch-results", path=p))
    file_path = None if batch_file is None else Path(batch_file)
    if file_path is not None and file_path.exists():
        raise InputError(MSG_FILE_EXISTS.format(path=file_path))
    return run_dir, file_path, paths
