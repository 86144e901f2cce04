"""What a run spent: calls, tokens in and out, wall time and money, per cell.

Recorded in ``run.json`` after every session (``sessions[-1]["spend"]``: this session's
wall time and calls) and for the whole run (``spend``: every journaled evaluation, so a
resumed run adds up), per (model, k, temperature, condition) cell. Tokens are what the
backend reported (``prompt_tokens``, ``completion_tokens``; an evaluation that reported
none counts 0 and is counted in ``calls_without_usage``). Money is computed only for
models with a price (``[[models]] price_per_mtok``: dollars -- or any currency -- per
million prompt and completion tokens). Beside it, ``money_batch`` is what the same
tokens cost as a provider batch (OpenAI's Batch API and its clones, ``run --batch-file``):
``batch_discount`` (default :data:`BATCH_DISCOUNT`, half price) times ``money``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from .._io import write_text_atomic

__all__ = ["BATCH_DISCOUNT", "record_spend", "spend_by_cell"]

#: A provider batch's price as a share of the live price (OpenAI Batch API and the
#: OpenAI-compatible clones: half price, answers within 24 h).
BATCH_DISCOUNT = 0.5

CELL = ("model", "k", "temperature", "condition")


def spend_by_cell(table: pd.DataFrame,
                  prices: Mapping[str, tuple[float, float]] | None = None, *,
                  batch_discount: float = BATCH_DISCOUNT) -> list[dict[str, Any]]:
    """One row per cell of the evaluations ``table`` (ok and discarded rows):
    ``calls``, ``prompt_tokens``, ``completion_tokens``, ``calls_without_usage``,
    ``latency_s`` (summed call time: more than the wall time when calls overlap),
    ``retries`` and, with a price for the cell's model, ``money``
    (:math:`(t_{in} p_{in} + t_{out} p_{out}) / 10^6`) and ``money_batch``
    (``batch_discount`` times ``money``)."""
    if not 0 < batch_discount <= 1:
        raise ValueError(f"batch_discount must be in (0, 1], got {batch_discount!r}")
    if table.empty:
        return []
    cols = [c for c in CELL if c in table.columns]
    frame = table.assign(
        _p=pd.to_numeric(table.get("prompt_tokens"), errors="coerce"),
        _c=pd.to_numeric(table.get("completion_tokens"), errors="coerce"),
        _l=pd.to_numeric(table.get("latency_s"), errors="coerce"),
        _r=pd.to_numeric(table.get("retries", 0), errors="coerce"),
    )
    rows = []
    for key, g in frame.groupby(cols, sort=True, dropna=False):
        cell = dict(zip(cols, key if isinstance(key, tuple) else (key,), strict=True))
        row: dict[str, Any] = {
            **{c: (v.item() if hasattr(v, "item") else v) for c, v in cell.items()},
            "calls": int(len(g)),
            "prompt_tokens": int(g["_p"].fillna(0).sum()),
            "completion_tokens": int(g["_c"].fillna(0).sum()),
            "calls_without_usage": int((g["_p"].isna() & g["_c"].isna()).sum()),
            "latency_s": float(g["_l"].fillna(0).sum()),
            "retries": int(g["_r"].fillna(0).sum()),
        }
        price = (prices or {}).get(str(cell.get("model")))
        if price is not None:
            row["money"] = (row["prompt_tokens"] * price[0]
                            + row["completion_tokens"] * price[1]) / 1e6
            row["money_batch"] = batch_discount * row["money"]
        rows.append(row)
    return rows


def _totals(cells: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("calls", "prompt_tokens", "completion_tokens", "calls_without_usage",
            "latency_s", "retries")
    out: dict[str, Any] = {k: sum(c[k] for c in cells) for k in keys}
    if any("money" in c for c in cells):
        out["money"] = sum(c.get("money", 0.0) for c in cells)
        out["money_batch"] = sum(c.get("money_batch", 0.0) for c in cells)
    return out


def record_spend(manifest: Path, table: pd.DataFrame, *, wall_s: float, ran_now: int,
                 prices: Mapping[str, tuple[float, float]] | None = None) -> dict[str, Any]:
    """Add the run's spend to ``run.json`` (written atomically) and return it.

    ``sessions[-1]["spend"] = {"wall_s", "calls"}`` for this session; ``spend`` =
    ``{"cells": [...], "total": {...}}`` over every journaled evaluation.
    """
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    cells = spend_by_cell(table, prices)
    total = _totals(cells)
    spend: dict[str, Any] = {"cells": cells, "total": total}
    sessions = data.get("sessions")
    if isinstance(sessions, list) and sessions and isinstance(sessions[-1], dict):
        sessions[-1]["spend"] = {"wall_s": wall_s, "calls": ran_now}
        total["wall_s"] = sum(
            float(s.get("spend", {}).get("wall_s", 0.0)) for s in sessions
            if isinstance(s, dict) and isinstance(s.get("spend"), dict))
    data["spend"] = spend
    write_text_atomic(manifest, json.dumps(data, indent=2))
    return spend
