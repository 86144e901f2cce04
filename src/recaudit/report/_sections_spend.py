"""The report's spend section: what a positional run folder paid, from ``run.json``.

``recaudit positional run`` records in ``run.json`` (``spend``, see
:mod:`recaudit.audit._spend`) the calls, prompt and completion tokens, summed call
latency, retries and -- when the model has a price -- the money per (model, k,
temperature, condition) cell, with the run's total and its wall time summed over
sessions. The page shows one row per cell and a total row; every number cell points
into the sidecar's ``spend`` object (``data-path``).
"""

from __future__ import annotations

from typing import Any

from ..audit import RunSpend, SpendCell, SpendTotal
from ._page import Cell, Section, Table, finite

__all__ = ["spend_section"]

#: The per-cell numbers shown, in order: (field of the row, column title, format).
_NUMBERS = (
    ("calls", "calls", "{:d}"),
    ("prompt_tokens", "prompt tokens", "{:,d}"),
    ("completion_tokens", "completion tokens", "{:,d}"),
    ("latency_s", "call time (s)", "{:.1f}"),
    ("money", "money", "{:.4f}"),
    ("money_batch", "as a batch", "{:.4f}"),
)


def _num(path: str, value: Any, fmt: str) -> Cell:
    if not finite(value):
        return Cell("n/a" if value is None else str(value))
    try:
        text = fmt.format(value)
    except ValueError:  # an integer format given a float
        text = f"{value:g}"
    return Cell(text, path, value)


def _row(key: tuple[Cell, ...], row: SpendCell | SpendTotal, path: str) -> tuple[Cell, ...]:
    return (*key, *(_num(f"{path}/{k}", getattr(row, k), fmt) for k, _, fmt in _NUMBERS))


def spend_section(spend: RunSpend, *, base: str = "spend") -> Section:
    """One row per cell of ``run.json``'s ``spend`` and the total (calls, tokens, call
    time, money), with the run's wall time and the calls that reported no usage."""
    total = spend.total
    rows = []
    for i, c in enumerate(spend.cells):
        key = (Cell(c.model), Cell(str(c.k), value=c.k), Cell(f"{c.temperature:g}"),
               Cell(c.condition))
        rows.append(_row(key, c, f"{base}/cells/{i}"))
    rows.append(_row((Cell("total", css="total"), Cell(""), Cell(""), Cell("")),
                     total, f"{base}/total"))
    notes = []
    if finite(total.wall_s):
        notes.append(f"Wall time over every session of the run: {total.wall_s:.1f} s "
                     "(call time sums the calls' latencies: more than the wall time when "
                     "calls overlap).")
    if total.calls_without_usage:
        notes.append(f"{total.calls_without_usage} call(s) reported no token usage and "
                     "count 0 tokens.")
    if all(c.money is None for c in spend.cells):
        notes.append("No price was given (`[[models]] price_per_mtok`): money is n/a.")
    else:
        notes.append("As a batch: what the same tokens cost as a provider batch (OpenAI "
                     "Batch API and its clones, `run --batch-file`: half the live price, "
                     "answers within 24 h).")
    table = Table(
        "tab-spend",
        "What the run spent per cell: calls (ok and discarded evaluations), prompt and "
        "completion tokens as the backend reported them, summed call time and, with a "
        "price per million tokens, the money live and as a provider batch.",
        ("model", "k", "T", "condition", *(title for _, title, _ in _NUMBERS)),
        tuple(rows),
    )
    return Section("spend", "Spend (calls, tokens, time, money)", tables=(table,),
                   notes=tuple(notes))
