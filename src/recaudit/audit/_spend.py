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

:class:`RunSpend` is the ``spend`` object read back (``from_dict``, strict: a missing
key or a value of the wrong kind is an :class:`~recaudit.InputError` naming the file
and the key); its ``to_dict`` is the object :func:`record_spend` writes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pandas as pd

from .._io import to_jsonable, write_text_atomic
from .._records import as_mapping, integer, items, need, number, optional_number, text

__all__ = ["BATCH_DISCOUNT", "RunSpend", "SpendCell", "SpendTotal", "record_spend",
           "spend_by_cell"]

#: A provider batch's price as a share of the live price (OpenAI Batch API and the
#: OpenAI-compatible clones: half price, answers within 24 h).
BATCH_DISCOUNT = 0.5

CELL = ("model", "k", "temperature", "condition")
#: The whole-number fields of a spend row (the rest are numbers; the cell's key is text
#: but for ``k`` and ``temperature``).
_WHOLE = ("k", "calls", "prompt_tokens", "completion_tokens", "calls_without_usage",
          "retries")
_TEXT = ("model", "condition")
#: Fields written only when known (a price given; the sessions' wall time).
_OPTIONAL = ("money", "money_batch", "wall_s")


def _read_row(cls: type, obj: Any, where: str) -> dict[str, Any]:
    """The fields of ``cls`` from ``obj``: text, whole numbers, numbers, the optional
    ones ``None`` when absent (strict: a missing key or a wrong kind named)."""
    obj = as_mapping(obj, where)
    values: dict[str, Any] = {}
    for f in fields(cls):
        if f.name in _OPTIONAL:
            values[f.name] = optional_number(obj, f.name, where) if f.name in obj else None
        elif f.name in _TEXT:
            values[f.name] = text(obj, f.name, where)
        elif f.name in _WHOLE:
            values[f.name] = integer(obj, f.name, where)
        else:
            values[f.name] = number(obj, f.name, where)
    return values


def _row_dict(row: Any) -> dict[str, Any]:
    """A spend row's JSON: every field in order, the optional ones only when known."""
    return to_jsonable({f.name: getattr(row, f.name) for f in fields(row)
                        if f.name not in _OPTIONAL or getattr(row, f.name) is not None})


@dataclass(frozen=True)
class SpendCell:
    """What one (model, k, temperature, condition) cell spent (:func:`spend_by_cell`).

    Attributes
    ----------
    model, k, temperature, condition
        The cell.
    calls, prompt_tokens, completion_tokens, calls_without_usage, retries : int
        Calls (ok and discarded evaluations), tokens as the backend reported them,
        calls that reported none, retries.
    latency_s : float
        Summed call time (more than the wall time when calls overlap).
    money, money_batch : float or None
        Live and provider-batch price (None: the model has no price).
    """

    model: str
    k: int
    temperature: float
    condition: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    calls_without_usage: int
    latency_s: float
    retries: int
    money: float | None = None
    money_batch: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The cell's entry of ``spend.cells`` (``money`` keys only with a price)."""
        return _row_dict(self)

    @classmethod
    def from_dict(cls, obj: Any, *, where: str = "spend cell") -> SpendCell:
        """Inverse of :meth:`to_dict` (strict; a missing or wrong key named)."""
        return cls(**_read_row(cls, obj, where))


@dataclass(frozen=True)
class SpendTotal:
    """The run's total (``spend.total``): the cells' sums and the wall time.

    Attributes
    ----------
    calls, prompt_tokens, completion_tokens, calls_without_usage, retries : int
        Sums over the cells.
    latency_s : float
        Summed call time.
    money, money_batch : float or None
        Sums over the priced cells (None: no cell has a price).
    wall_s : float or None
        Wall time summed over the run's sessions (None: no session recorded).
    """

    calls: int
    prompt_tokens: int
    completion_tokens: int
    calls_without_usage: int
    latency_s: float
    retries: int
    money: float | None = None
    money_batch: float | None = None
    wall_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """``spend.total`` (``money`` and ``wall_s`` keys only when known)."""
        return _row_dict(self)

    @classmethod
    def from_dict(cls, obj: Any, *, where: str = "spend total") -> SpendTotal:
        """Inverse of :meth:`to_dict` (strict; a missing or wrong key named)."""
        return cls(**_read_row(cls, obj, where))


@dataclass(frozen=True)
class RunSpend:
    """``run.json``'s ``spend``: one :class:`SpendCell` per cell and the total."""

    cells: tuple[SpendCell, ...]
    total: SpendTotal

    def to_dict(self) -> dict[str, Any]:
        """``{"cells": [...], "total": {...}}``, as :func:`record_spend` writes it."""
        return {"cells": [c.to_dict() for c in self.cells], "total": self.total.to_dict()}

    @classmethod
    def from_dict(cls, obj: Any, *, where: str = "spend") -> RunSpend:
        """Inverse of :meth:`to_dict`; ``where`` names the file in every error."""
        obj = as_mapping(obj, where)
        return cls(tuple(SpendCell.from_dict(c, where=f"{where}, cells[{i}]")
                         for i, c in enumerate(items(obj, "cells", where))),
                   SpendTotal.from_dict(need(obj, "total", where), where=f"{where}, total"))


def spend_by_cell(table: pd.DataFrame,
                  prices: Mapping[str, tuple[float, float]] | None = None, *,
                  batch_discount: float = BATCH_DISCOUNT) -> list[SpendCell]:
    """One :class:`SpendCell` per cell of the evaluations ``table`` (ok and discarded
    rows): ``calls``, ``prompt_tokens``, ``completion_tokens``, ``calls_without_usage``,
    ``latency_s`` (summed call time: more than the wall time when calls overlap),
    ``retries`` and, with a price for the cell's model, ``money``
    (:math:`(t_{in} p_{in} + t_{out} p_{out}) / 10^6`) and ``money_batch``
    (``batch_discount`` times ``money``)."""
    if not 0 < batch_discount <= 1:
        raise ValueError(f"batch_discount must be in (0, 1], got {batch_discount!r}")
    if table.empty:
        return []
    frame = table.assign(
        _p=pd.to_numeric(table.get("prompt_tokens"), errors="coerce"),
        _c=pd.to_numeric(table.get("completion_tokens"), errors="coerce"),
        _l=pd.to_numeric(table.get("latency_s"), errors="coerce"),
        _r=pd.to_numeric(table.get("retries", 0), errors="coerce"),
    )
    cells = []
    for key, g in frame.groupby(list(CELL), sort=True, dropna=False):
        model, k, temperature, condition = (v.item() if hasattr(v, "item") else v
                                            for v in key)
        prompt, completion = int(g["_p"].fillna(0).sum()), int(g["_c"].fillna(0).sum())
        price = (prices or {}).get(str(model))
        money = None if price is None else (prompt * price[0] + completion * price[1]) / 1e6
        cells.append(SpendCell(
            model=str(model), k=int(k), temperature=float(temperature),
            condition=str(condition), calls=int(len(g)), prompt_tokens=prompt,
            completion_tokens=completion,
            calls_without_usage=int((g["_p"].isna() & g["_c"].isna()).sum()),
            latency_s=float(g["_l"].fillna(0).sum()), retries=int(g["_r"].fillna(0).sum()),
            money=money, money_batch=None if money is None else batch_discount * money))
    return cells


def _totals(cells: list[SpendCell], wall_s: float | None) -> SpendTotal:
    """The cells' sums (money over the priced cells, None when none is) and the wall
    time."""
    priced = [c for c in cells if c.money is not None]
    return SpendTotal(
        calls=sum(c.calls for c in cells), prompt_tokens=sum(c.prompt_tokens for c in cells),
        completion_tokens=sum(c.completion_tokens for c in cells),
        calls_without_usage=sum(c.calls_without_usage for c in cells),
        latency_s=float(sum(c.latency_s for c in cells)),
        retries=sum(c.retries for c in cells),
        money=sum(c.money or 0.0 for c in priced) if priced else None,
        money_batch=sum(c.money_batch or 0.0 for c in priced) if priced else None,
        wall_s=wall_s)


def record_spend(manifest: Path, table: pd.DataFrame, *, wall_s: float, ran_now: int,
                 prices: Mapping[str, tuple[float, float]] | None = None) -> RunSpend:
    """Add the run's spend to ``run.json`` (written atomically) and return it.

    ``sessions[-1]["spend"] = {"wall_s", "calls"}`` for this session; ``spend`` =
    :meth:`RunSpend.to_dict` over every journaled evaluation, its total's ``wall_s``
    summed over the sessions.
    """
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    cells = spend_by_cell(table, prices)
    sessions = data.get("sessions")
    total_wall = None
    if isinstance(sessions, list) and sessions and isinstance(sessions[-1], dict):
        sessions[-1]["spend"] = {"wall_s": wall_s, "calls": ran_now}
        total_wall = sum(
            float(s.get("spend", {}).get("wall_s", 0.0)) for s in sessions
            if isinstance(s, dict) and isinstance(s.get("spend"), dict))
    spend = RunSpend(tuple(cells), _totals(cells, total_wall))
    data["spend"] = spend.to_dict()
    write_text_atomic(manifest, json.dumps(data, indent=2))
    return spend
