"""Read a pilot run folder for ``recaudit positional plan --pilot RUN``.

The planning statistics (:mod:`recaudit.positional`) never read a run folder; this
reader hands them one cell of the pilot's evaluations table and measures, from the
same folder, what a call costs: mean prompt and completion tokens per call (the
journal's ``prompt_tokens``, ``completion_tokens``) and the backend's rate. The rate
is Little's law on the journaled latencies: with ``concurrency`` calls in flight
(``config.resolved.json``), capped by the engine's own parallel slots where the run
records them (``n_parallel`` of the model's backend in ``run.json``: the in-process
llama.cpp engine answers ``batch_size`` calls at a time and times a call from the
moment a slot takes it), ``calls/s = min(in flight, calls) / mean latency`` -- an
estimate that assumes the pilot kept its in-flight limit full.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..exceptions import InputError

__all__ = ["Pilot", "read_pilot"]

MSG_NOT_RUN = ("`--pilot {path}`: not a run folder (no evaluations.parquet or "
               "journal.sqlite); pass a `recaudit positional run --out` folder")
MSG_NO_K = "`--pilot {path}`: no evaluation at k = {k} (the pilot has k = {have}); pass `--k`"
MSG_CELLS = ("`--pilot {path}`: {n} cells at k = {k} ({cells}); plan from one: pass "
             "`--pilot-model NAME` (and a pilot with one temperature and condition)")
MSG_NO_MODEL = "`--pilot-model {model}`: no such model in {path} (it has {have})"
CELL = ("model", "temperature", "condition")


@dataclass(frozen=True)
class Pilot:
    """One cell of a pilot run and what its calls cost.

    ``exact``: the cell has choice-probability vectors (most rows); ``calls_per_s``,
    ``prompt_tokens``, ``completion_tokens`` are ``None`` when not recorded.
    """

    table: pd.DataFrame
    cell: str
    exact: bool
    calls_per_s: float | None
    prompt_tokens: float | None
    completion_tokens: float | None


def _read_evaluations(run: Path) -> pd.DataFrame:
    from ..audit import EVALUATION_COLUMNS
    from ..positional import read_table

    if (run / "evaluations.parquet").is_file():
        return read_table(run / "evaluations.parquet")
    journal = run / "journal.sqlite"
    if not journal.is_file():
        raise InputError(MSG_NOT_RUN.format(path=run))
    columns = ", ".join(f'"{c}"' for c in EVALUATION_COLUMNS)
    try:  # a run still going or interrupted: its completed rows, read-only
        with closing(sqlite3.connect(f"file:{journal}?mode=ro", uri=True)) as conn:
            return pd.read_sql_query(f"SELECT {columns} FROM evaluations "  # noqa: S608
                                     "WHERE status != 'failed'", conn)
    except (sqlite3.Error, pd.errors.DatabaseError) as exc:
        raise InputError(f"`--pilot {run}`: {journal.name} is unreadable ({exc})") from None


def _mean(table: pd.DataFrame, column: str) -> float | None:
    if column not in table.columns:
        return None
    values = pd.to_numeric(table[column], errors="coerce").dropna()
    return float(values.mean()) if len(values) else None


def _concurrency(run: Path) -> int:
    try:
        cfg = json.loads((run / "config.resolved.json").read_text(encoding="utf-8"))
        value = int(cfg["concurrency"])
    except (OSError, ValueError, KeyError, TypeError):
        return 1  # unknown: one call in flight (a lower bound on the rate)
    return max(1, value)


def _engine_slots(run: Path, model: str | None) -> int | None:
    """The fewest ``n_parallel`` slots the pilot's backends recorded for ``model`` (any
    model when None) in ``run.json``'s last session; None when none is recorded."""
    from ..audit import manifest_backends

    slots = [int(b["n_parallel"]) for b in manifest_backends(run / "run.json")
             if isinstance(b.get("n_parallel"), int)
             and (model is None or b.get("model") == model)]
    return max(1, min(slots)) if slots else None


def read_pilot(run: Path, *, k: int, model: str | None = None) -> Pilot:
    """The pilot's evaluations at ``k`` (one model, temperature, condition) and rates."""
    if not run.is_dir():
        raise InputError(MSG_NOT_RUN.format(path=run))
    table = _read_evaluations(run)
    if "k" in table.columns:
        have = sorted({int(v) for v in table["k"].dropna()})
        table = table[table["k"] == k]
        if table.empty:
            raise InputError(MSG_NO_K.format(path=run, k=k, have=have))
    present = [c for c in CELL if c in table.columns]
    if model is not None:
        if "model" not in table.columns or not (table["model"] == model).any():
            models = sorted(map(str, table["model"].unique())) if "model" in table else []
            raise InputError(MSG_NO_MODEL.format(model=model, path=run, have=models))
        table = table[table["model"] == model]
    cells = table[present].drop_duplicates() if present else pd.DataFrame()
    if len(cells) > 1:
        names = "; ".join(" ".join(map(str, row)) for row in cells.itertuples(index=False))
        raise InputError(MSG_CELLS.format(path=run, n=len(cells), k=k, cells=names))
    cell = " ".join(map(str, cells.iloc[0])) if len(cells) else "all rows"
    exact = bool("choice_probs" in table.columns
                 and table["choice_probs"].notna().mean() >= 0.5)
    latency = _mean(table, "latency_s")
    names = table["model"].dropna().unique() if "model" in table.columns else []
    slots = _engine_slots(run, str(names[0]) if len(names) == 1 else model)
    in_flight = min(_concurrency(run), slots) if slots is not None else _concurrency(run)
    rate = (min(in_flight, len(table)) / latency) if latency else None
    return Pilot(table=table.reset_index(drop=True), cell=cell, exact=exact, calls_per_s=rate,
                 prompt_tokens=_mean(table, "prompt_tokens"),
                 completion_tokens=_mean(table, "completion_tokens"))
