"""Sequential (anytime-valid) audits: evaluate in rounds, stop when bias is proven.

``recaudit positional run CONFIG --sequential --alpha 0.05 --max-evaluations N`` goes
through :func:`~recaudit.audit.run_audit` with :class:`SequentialOptions`; the
plan is built as usual, then this driver runs it round by round:

- CELLS are the (model, k, temperature, condition) groups; each cell has its own
  e-process (:func:`recaudit.positional.sequential_uniformity_test`) at level
  ``alpha / n_cells`` (Bonferroni across cells, so the run's family-wise type-I error
  is <= alpha, anytime) and its own budget of ``max_evaluations`` evaluations.
- The TASK ORDER of a cell is deterministic: its queries shuffled by a generator
  seeded from ``(seed, "sequential", cell)``, each query's evaluations kept together
  (a query block). A round takes the next whole query blocks of every active cell,
  ``round_evaluations`` evaluations per cell (rounded up to whole blocks, truncated at
  the budget); rounds of all active cells run together.
- After each round the e-process of every active cell is recomputed FROM THE JOURNAL
  in the deterministic order, looked at after each completed round, and a cell stops
  at the first look with E >= n_cells / alpha or when its budget is spent. A resumed
  run recomputes the same path (same order, same looks) and continues where the
  journal ends; ``sequential.json`` in the run folder holds the evidence.

Validity needs a fresh uniformly random order per evaluation: the ``sampled`` design
with ``samples_per_order = 1`` and the ``permutation`` / ``labels_permutation``
conditions (checked; see docs/exact-and-sequential.md for the proof).

EXACT MODE: when the run records choice probabilities (``[prompt]
choice_probabilities = true``) and ``answers`` is ``"auto"`` (the default) or
``"exact"``, each cell's e-process reads the per-evaluation probability VECTORS
(:func:`recaudit.positional._sequential_exact.sequential_exact_test`, valid under
"each query's choice vector averaged over its random orders is uniform"), every row
with a vector counting, its text parsed or not; rows without one are skipped.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._io import write_text_atomic
from .._seeds import stable_words
from ..exceptions import ConfigError, InputError
from ..positional import (
    positional_bias_from_shares,
    sequential_exact_test,
    sequential_uniformity_test,
)
from ._config import AuditConfig
from ._journal import EvalKey, Journal
from ._runner import EvalTask, RunProgress, RunSummary
from ._sequential_file import (
    MIN_QUERIES_WIDTH,
    SequentialAudit,
    SequentialCell,
    SequentialEvidence,
    SequentialOptions,
    SequentialPb,
)

__all__ = ["SEQUENTIAL_FILE", "SequentialOptions", "cell_order", "drive_sequential"]

SEQUENTIAL_FILE = "sequential.json"
SEQUENTIAL_CONDITIONS = ("permutation", "labels_permutation")

MSG_DESIGN = (
    "--sequential needs a fresh uniformly random order per evaluation: set [design] "
    "kind = \"sampled\" and samples_per_order = 1 (got kind = {kind!r}, "
    "samples_per_order = {spo})"
)
MSG_VECTOR_LENGTH = ("journal: a `choice_probs` vector does not have k = {k} entries; the "
                     "journal is not from this config (use a new --out)")
MSG_CONDITION = (
    "--sequential tests permutation conditions only ({allowed}); remove {bad} from "
    "`conditions` (identity orders make the selected position the item itself)"
)

Cell = tuple[str, int, float, str]


def check_sequential_config(cfg: AuditConfig) -> None:
    """Raise :class:`ConfigError` when the design breaks the validity argument."""
    if cfg.design.kind != "sampled" or cfg.design.samples_per_order != 1:
        raise ConfigError(MSG_DESIGN.format(kind=cfg.design.kind,
                                            spo=cfg.design.samples_per_order))
    bad = [c for c in cfg.conditions if c not in SEQUENTIAL_CONDITIONS]
    if bad:
        raise ConfigError(MSG_CONDITION.format(allowed=", ".join(SEQUENTIAL_CONDITIONS),
                                               bad=", ".join(bad)))


def _cell(key: EvalKey) -> Cell:
    return (key.model, key.k, key.temperature, key.condition)


def cell_order(tasks: Sequence[EvalTask], seed: int) -> dict[Cell, list[list[EvalTask]]]:
    """Per cell: its query blocks in the deterministic sequential order.

    Queries are shuffled by a generator seeded from ``(seed, "sequential", cell)``;
    inside a block, tasks keep their plan order (perm_index, sample_index).
    """
    blocks: dict[Cell, dict[str, list[EvalTask]]] = {}
    for t in tasks:
        blocks.setdefault(_cell(t.key), {}).setdefault(t.key.query_id, []).append(t)
    out: dict[Cell, list[list[EvalTask]]] = {}
    for cell, by_query in blocks.items():
        ids = sorted(by_query)
        rng = np.random.default_rng(np.random.SeedSequence(
            stable_words("sequential", seed, *cell)))
        out[cell] = [sorted(by_query[ids[i]], key=lambda t: t.key)
                     for i in rng.permutation(len(ids))]
    return out


def _rounds(blocks: list[list[EvalTask]], options: SequentialOptions) -> list[list[EvalTask]]:
    """The cell's rounds: whole query blocks, >= round_evaluations each, truncated at
    the budget."""
    rounds: list[list[EvalTask]] = []
    current: list[EvalTask] = []
    used = 0
    for block in blocks:
        for task in block:
            if used == options.max_evaluations:
                break
            current.append(task)
            used += 1
        if used == options.max_evaluations or len(current) >= options.round_evaluations:
            if current:
                rounds.append(current)
            current = []
        if used == options.max_evaluations:
            break
    if current:
        rounds.append(current)
    return rounds


def _evidence(cell_rounds: list[list[EvalTask]], n_done: int, status: dict[EvalKey, Any],
              k: int, alpha: float, method: str,
              vectors: dict[EvalKey, Any] | None = None) -> SequentialEvidence:
    """The cell's evidence over its first ``n_done`` completed rounds.

    E is looked at after EVERY valid evaluation (Ville's inequality bounds the
    supremum over all of them); a crossing inside a round is acted on at the end of
    that round, so ``evaluations_used`` counts up to that round's end. With
    ``vectors`` (exact mode) the evidence is the rows' choice-probability vectors.
    """
    source = status if vectors is None else vectors
    observed: list[Any] = []
    round_end: list[int] = []  # evaluations sent up to the end of each valid one's round
    used = 0
    for rnd in cell_rounds[:n_done]:
        valid = [source[t.key] for t in rnd if source.get(t.key) is not None]
        used += len(rnd)
        observed.extend(valid)
        round_end.extend([used] * len(valid))
    if vectors is None:
        res = sequential_uniformity_test(np.asarray([int(p) - 1 for p in observed],
                                                    dtype=np.int64),
                                         k=k, alpha=alpha, method=method)  # type: ignore[arg-type]
    else:
        if any(len(v) != k for v in observed):
            raise InputError(MSG_VECTOR_LENGTH.format(k=k))
        probs = np.asarray(observed, dtype=float).reshape(len(observed), k)
        res = sequential_exact_test(probs, alpha=alpha, method=method)  # type: ignore[arg-type]
    # keep the JSON small: the path at round ends (and at the crossing)
    looks: list[int] = []
    if observed:
        ends = np.flatnonzero(np.diff(np.r_[round_end, np.inf]) > 0) + 1
        looks = sorted({int(t) for t in ends if t <= res.stopped_at} | {res.stopped_at})
    return SequentialEvidence(
        reject=res.reject, stopped_at=res.stopped_at, e_value=res.e_value,
        threshold=1.0 / res.alpha, pvalue=res.pvalue, alpha=res.alpha, method=res.method,
        checkpoints=tuple(looks),
        log_e_path=tuple(float(res.log_e_path[t - 1]) for t in looks),
        counts=tuple(res.counts.tolist() if vectors is None
                     else [round(float(c), 3) for c in res.counts]),
        cs_low=tuple(res.cs_low.tolist()), cs_high=tuple(res.cs_high.tolist()),
        answers="sampled" if vectors is None else "exact",
        evaluations_at_checkpoints=tuple(round_end[t - 1] for t in looks),
        valid_evaluations=res.stopped_at if observed else 0,
        evaluations_used=round_end[res.stopped_at - 1] if res.reject else used)


async def drive_sequential(
    options: SequentialOptions,
    cfg: AuditConfig,
    tasks: Sequence[EvalTask],
    journal: Journal,
    run_dir: Path,
    run_batch: Callable[[list[EvalTask]], Awaitable[RunSummary]],
    say: Callable[[str], None] = lambda _m: None,
    progress: RunProgress | None = None,
) -> RunSummary:
    """Run ``tasks`` in rounds until every cell rejected or spent its budget.

    ``run_batch`` evaluates a list of tasks (journaling each result); the journal is
    re-read after every round. Writes ``run_dir / sequential.json`` after every round
    (atomically) and returns a summary of everything run by this call. ``progress``
    counts against the sum of the cells' budgets (a stop ends below it).
    """
    check_sequential_config(cfg)
    exact = options.exact(cfg)
    ordered = cell_order(tasks, cfg.seed)
    cells = sorted(ordered)
    level = options.alpha / len(cells)
    plan = {c: _rounds(ordered[c], options) for c in cells}
    active = set(cells)
    state: dict[Cell, SequentialEvidence] = {}
    totals = {"ok": 0, "discarded": 0, "failed": 0, "retries": 0, "elapsed": 0.0}
    n_round = {c: 0 for c in cells}
    if progress is not None:
        progress.start(sum(len(r) for c in cells for r in plan[c]))
    while True:
        status, vectors = _journal_status(journal)
        for c in sorted(active):
            if _advance(c, plan[c], n_round, status, state, level, options,
                        vectors if exact else None, cfg.seed):
                active.discard(c)
        _write(run_dir, options, cfg, cells, level, plan, state, ordered, n_round)
        batch = [t for c in sorted(active) for t in plan[c][n_round[c]]
                 if t.key not in status]
        if not active or not batch:
            break
        if progress is None:
            say(f"round: {len(batch)} evaluations in {len(active)} active cell(s)")
        summary = await run_batch(batch)
        for name in ("ok", "discarded", "failed", "retries"):
            totals[name] += getattr(summary, name)
        totals["elapsed"] += summary.elapsed_s
        if progress is not None:
            progress.update(done=int(totals["ok"] + totals["discarded"] + totals["failed"]),
                            discarded=int(totals["discarded"]), failed=int(totals["failed"]),
                            retries=int(totals["retries"]))
        if summary.failed:
            break  # run_audit reports the failures; --resume retries exactly them
    done = int(totals["ok"] + totals["discarded"] + totals["failed"])
    return RunSummary(total=done, ok=int(totals["ok"]), discarded=int(totals["discarded"]),
                      failed=int(totals["failed"]), retries=int(totals["retries"]),
                      elapsed_s=float(totals["elapsed"]), aborted=False)


def _advance(c: Cell, rounds: list[list[EvalTask]], n_round: dict[Cell, int],
             status: dict[EvalKey, Any], state: dict[Cell, SequentialEvidence], level: float,
             options: SequentialOptions, vectors: dict[EvalKey, Any] | None = None,
             seed: int = 0) -> bool:
    """Advance cell ``c`` over the rounds already complete in the journal, updating its
    evidence; whether the cell is done (rejected -- or with ``ci_width``, its PB CI
    narrow enough -- or every round run)."""
    while n_round[c] < len(rounds) and all(t.key in status for t in rounds[n_round[c]]):
        n_round[c] += 1
        evidence = _evidence(rounds, n_round[c], status, c[1], level, options.method,
                             vectors)
        if options.ci_width is not None:  # runs past a rejection until the width
            pb = _pb_at_look(rounds[:n_round[c]], status, vectors, c, seed)
            evidence = replace(evidence, pb=pb, ci_width_reached=_narrow(pb, options.ci_width),
                               evaluations_used=sum(len(r) for r in rounds[:n_round[c]]))
        state[c] = evidence
        if _stops(evidence, options):
            break
    ev = state.get(c)
    return (ev is not None and _stops(ev, options)) or n_round[c] >= len(rounds)


def _stops(evidence: SequentialEvidence, options: SequentialOptions) -> bool:
    """A cell's stop rule at one look: the rejection, or with ``ci_width`` the width."""
    if options.ci_width is None:
        return evidence.reject
    return bool(evidence.ci_width_reached)


def _narrow(pb: SequentialPb, width: float) -> bool:
    """Whether PB's CI is defined, over at least ``MIN_QUERIES_WIDTH`` queries, and at
    most ``width`` wide."""
    return pb.n_queries >= MIN_QUERIES_WIDTH and math.isfinite(pb.ci_low) \
        and math.isfinite(pb.ci_high) and pb.ci_high - pb.ci_low <= width


def _pb_at_look(done: list[list[EvalTask]], status: dict[EvalKey, Any],
                vectors: dict[EvalKey, Any] | None, c: Cell, seed: int) -> SequentialPb:
    """PB with its CI over the cell's completed rounds (queries whole: a round takes
    whole query blocks), from per-query position shares or, in exact mode, per-query
    mean choice vectors; the bootstrap seeded by (seed, cell, evaluations), so a resume
    recomputes the same numbers."""
    k = c[1]
    rows: dict[str, list[npt.NDArray[np.float64]]] = {}
    for rnd in done:
        for t in rnd:
            if vectors is not None:
                v = vectors.get(t.key)
                if v is None:
                    continue
                x = np.asarray(v, dtype=float)
            else:
                pos = status.get(t.key)
                if pos is None:
                    continue
                x = np.zeros(k)
                x[int(pos) - 1] = 1.0
            rows.setdefault(t.key.query_id, []).append(x)
    if len(rows) < 2:
        return SequentialPb(math.nan, math.nan, math.nan, len(rows))
    shares = np.stack([np.mean(v, axis=0) for v in rows.values()])
    n_eval = sum(len(v) for v in rows.values())
    gen = np.random.default_rng(stable_words("ci_width", seed, *c, n_eval))
    pb = positional_bias_from_shares(shares, rng=gen)
    return SequentialPb(pb.value, pb.ci.low, pb.ci.high, len(rows))


def _journal_status(journal: Journal) -> tuple[dict[EvalKey, Any], dict[EvalKey, Any]]:
    """Completed keys -> selected position (1-based) or None for a discard; and
    completed keys -> choice-probability vector (list of float) or None."""
    df = journal.to_frame()
    out: dict[EvalKey, Any] = {}
    vectors: dict[EvalKey, Any] = {}
    has_probs = "choice_probs" in df.columns
    for row in df.itertuples(index=False):
        key = EvalKey(str(row.model), int(row.k), float(row.temperature),
                      str(row.condition), str(row.query_id), int(row.perm_index),
                      int(row.sample_index))
        pos = row.selected_position
        out[key] = None if pd.isna(pos) else int(pos)
        vectors[key] = _vector(row.choice_probs) if has_probs else None
    return out, vectors


def _vector(value: Any) -> list[float] | None:
    """A journal's ``choice_probs`` cell as a list of floats (None when absent)."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return None
    if isinstance(value, str):
        value = json.loads(value)
    return None if value is None else [float(x) for x in value]


def _decision(ev: SequentialEvidence | None, options: SequentialOptions, ran_all: bool,
              capped: bool) -> str:
    """A cell's state: running, rejected, ci_width_reached (with ``--ci-width``: the
    width reached without a rejection), budget_spent or plan_exhausted."""
    if ev is not None and _stops(ev, options):
        return "rejected" if ev.reject else "ci_width_reached"
    if ev is not None and ran_all:
        return "budget_spent" if capped else "plan_exhausted"
    return "running"


def _write(run_dir: Path, options: SequentialOptions, cfg: AuditConfig, cells: list[Cell],
           level: float, plan: dict[Cell, list[list[EvalTask]]],
           state: dict[Cell, SequentialEvidence],
           ordered: dict[Cell, list[list[EvalTask]]], n_round: dict[Cell, int]) -> None:
    """Write the run's :class:`SequentialAudit` (its ``to_dict``) to ``sequential.json``."""
    out_cells = []
    for c in cells:
        ev = state.get(c)
        planned = sum(len(b) for b in ordered[c])
        budget = sum(len(r) for r in plan[c])
        decision = _decision(ev, options, n_round[c] >= len(plan[c]), budget < planned)
        out_cells.append(SequentialCell(model=c[0], k=c[1], temperature=c[2], condition=c[3],
                                        decision=decision, planned_evaluations=planned,
                                        budget=budget, evidence=ev))
    audit = SequentialAudit(options=options, alpha_per_cell=level, n_cells=len(cells),
                            seed=cfg.seed, cells=tuple(out_cells))
    text = json.dumps(audit.to_dict(), indent=2, allow_nan=False)
    write_text_atomic(run_dir / SEQUENTIAL_FILE, text)
