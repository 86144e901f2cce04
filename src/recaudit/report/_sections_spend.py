"""The report's spend section: what a positional run folder paid, from ``run.json``.

``recaudit positional run`` records in ``run.json`` (``spend``, see
:mod:`recaudit.audit._spend`) the calls, prompt and completion tokens, summed call
latency, retries and -- when the model has a price -- the money per (model, k,
temperature, condition) cell, with the run's total and its wall time summed over
sessions. The page shows one row per cell and a total row; every number cell points
into the sidecar's ``spend`` object (``data-path``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._page import Cell, Section, Table, finite

__all__ = ["spend_section"]

#: The per-cell numbers shown, in order: (key in run.json, column title, format).
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


def _row(key: tuple[Cell, ...], row: Mapping[str, Any], path: str) -> tuple[Cell, ...]:
    return (*key, *(_num(f"{path}/{k}", row.get(k), fmt) for k, _, fmt in _NUMBERS))


def spend_section(spend: Mapping[str, Any], *, base: str = "spend") -> Section:
    """One row per cell of ``run.json``'s ``spend`` and the total (calls, tokens, call
    time, money), with the run's wall time and the calls that reported no usage."""
    cells = [c for c in spend.get("cells") or [] if isinstance(c, Mapping)]
    raw_total = spend.get("total")
    total: Mapping[str, Any] = raw_total if isinstance(raw_total, Mapping) else {}
    rows = []
    for i, c in enumerate(cells):
        temp: Any = c.get("temperature")
        key = (Cell(str(c.get("model", ""))), Cell(str(c.get("k", "")), value=c.get("k")),
               Cell(f"{float(temp):g}" if finite(temp) else str(temp or "")),
               Cell(str(c.get("condition", ""))))
        rows.append(_row(key, c, f"{base}/cells/{i}"))
    if total:
        rows.append(_row((Cell("total", css="total"), Cell(""), Cell(""), Cell("")),
                         total, f"{base}/total"))
    notes = []
    wall: Any = total.get("wall_s")
    if finite(wall):
        notes.append(f"Wall time over every session of the run: {float(wall):.1f} s "
                     "(call time sums the calls' latencies: more than the wall time when "
                     "calls overlap).")
    missing = total.get("calls_without_usage")
    if finite(missing) and missing:
        notes.append(f"{int(missing)} call(s) reported no token usage and count 0 tokens.")
    if not any("money" in c for c in cells):
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
