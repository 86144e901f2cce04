"""``recaudit positional run ... --batch-file / --batch-results``: provider batch files.

Thin: calls :func:`recaudit.audit._batch.run_batch` and prints what it did (one line
per results file with its counts, the file written, what is pending, what to do next).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.markup import escape

from ._common import err_console, print_json
from ._positional_tables import (
    print_analysis,
    print_sequential,
    print_sequential_verdict,
    print_skipped,
)
from ._run_display import phase_printer

__all__ = ["batch_run"]

_SHOWN = ("ok", "discarded", "failed", "repeated", "duplicate", "foreign", "unknown",
          "malformed", "rejected")


def batch_run(cfg: Any, *, out: Path, resume: bool, sequential: Any,
              batch_file: Path | None, batch_results: Path | None,
              batch_errors: Path | None, as_json: bool, quiet: bool,
              resend_pending: bool = False, analyze: bool = True,
              options: Any = None) -> None:
    """Read batch results and/or write the next batch file of the run in ``out``; once
    the run is complete, analyse it as ``run`` does (``analysis.json``, the tables)."""
    from ..audit import run_batch

    live = not (quiet or as_json)
    results = [p for p in (batch_results, batch_errors) if p is not None]
    done = run_batch(cfg, out_dir=out, resume=resume, batch_file=batch_file,
                     batch_results=results, sequential=sequential,
                     resend_pending=resend_pending, on_phase=phase_printer(live))
    analysis = None
    if done.complete and analyze and done.evaluations_path is not None:
        from ..audit import analyze_run

        analysis = analyze_run(done.evaluations_path, options, seed=cfg.seed)
    if as_json:
        print_json({**done.to_dict(), "analysis": None if analysis is None
                    else analysis.rows})
        return
    if not quiet:
        _print_progress(done, batch_file)
    print_skipped(analysis)
    if analysis is None or analysis.rows is None:
        return
    from ..audit import GROUP_BY

    doc = None
    if sequential is not None:
        from .._read import read_json

        doc = read_json(done.run_dir / "sequential.json", what="the sequential evidence")
        if not quiet:
            print_sequential(doc)
            err_console.print("[yellow]note:[/] after a sequential stop the fixed-sample "
                              "p-values below are descriptive only; the sequential decision "
                              "above is the valid test", highlight=False)
    print_analysis(analysis.rows, list(GROUP_BY), verdict=doc is None)
    if doc is not None:
        print_sequential_verdict(doc)


def _print_progress(done: Any, batch_file: Path | None) -> None:
    """What was read, what was written, what is left."""
    for ing in done.ingested:
        parts = ", ".join(f"{getattr(ing, n)} {n}" for n in _SHOWN if getattr(ing, n))
        err_console.print(f"read {escape(ing.path)}: {ing.lines} lines ({parts or 'none'})",
                          highlight=False)
    if done.batch_file is not None:
        err_console.print(
            f"[green]wrote[/] {done.written} requests to {escape(str(done.batch_file))}: "
            "submit it to the provider's batch API (endpoint /v1/chat/completions), then "
            "read its output with `--resume --batch-results OUTPUT.jsonl "
            "[--batch-errors ERRORS.jsonl]`", highlight=False)
    elif batch_file is not None and not done.complete:
        err_console.print(f"nothing to write to {escape(str(batch_file))}: every evaluation "
                          "still to ask is pending in an earlier batch file (a batch lost "
                          "without an error file: add `--batch-resend-pending`)",
                          highlight=False)
    err_console.print(
        f"{done.completed} of {done.planned} planned evaluations journaled, "
        f"{done.pending} pending, {done.failed} failed"
        + (" (planned again by the next `--batch-file`)" if done.failed else ""),
        highlight=False)
    if not done.complete and done.batch_file is None and (done.failed or not done.pending):
        err_console.print("ask for the rest with `--resume --batch-file NEXT.jsonl`",
                          highlight=False)
    if done.complete and done.evaluations_path is not None:
        err_console.print(f"[green]complete:[/] {escape(str(done.evaluations_path))} "
                          f"(`recaudit report {escape(str(done.run_dir))}` for the page)",
                          highlight=False)
