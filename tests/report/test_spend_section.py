"""The report's spend section: ``run.json``'s ``spend`` (calls, tokens, time, money)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from report_synth import resolve, tagged_numbers

from recaudit.audit._spend import record_spend
from recaudit.report import build_report


def _table() -> pd.DataFrame:
    rows = []
    for model, n in (("cheap", 3), ("free", 2)):
        for i in range(n):
            rows.append({"model": model, "k": 5, "temperature": 0.0, "condition": "c",
                         "prompt_tokens": 100 + i, "completion_tokens": 2,
                         "latency_s": 0.5, "retries": 0})
    return pd.DataFrame(rows)


def _run_json(folder: Path, *, priced: bool = True) -> dict[str, Any]:
    manifest = folder / "run.json"
    manifest.write_text(json.dumps({"sessions": [{"backends": []}]}))
    prices = {"cheap": (2.0, 8.0)} if priced else None
    return record_spend(manifest, _table(), wall_s=4.25, ran_now=5, prices=prices).to_dict()


def test_spend_per_cell_and_total_are_shown_andresolve(positional_dir: Path) -> None:
    spend = _run_json(positional_dir)
    report = build_report(positional_dir)
    assert report.data["spend"] == json.loads(json.dumps(spend))
    html = report.html
    assert 'id="tab-spend"' in html and "Spend (calls, tokens, time, money)" in html
    assert "4.2 s" in html or "4.3 s" in html  # the wall time over sessions
    cells = tagged_numbers(html, "spend/")
    paths = dict(cells)
    # cheap: 3 calls, 303 prompt + 6 completion tokens at 2 and 8 per million
    assert json.loads(paths["spend/cells/0/calls"]) == 3
    assert json.loads(paths["spend/cells/0/prompt_tokens"]) == 303
    assert json.loads(paths["spend/cells/0/money"]) == pytest.approx((303 * 2 + 6 * 8) / 1e6)
    assert "spend/cells/1/money" not in paths  # no price for "free"
    assert json.loads(paths["spend/total/calls"]) == 5
    assert json.loads(paths["spend/total/money"]) == pytest.approx((303 * 2 + 6 * 8) / 1e6)
    # the same tokens as a provider batch: half the live price, per cell and in total
    assert json.loads(paths["spend/cells/0/money_batch"]) == pytest.approx(
        (303 * 2 + 6 * 8) / 2e6)
    assert json.loads(paths["spend/total/money_batch"]) == pytest.approx(
        (303 * 2 + 6 * 8) / 2e6)
    assert "as a batch" in html and "half the live price" in html
    for path, value in cells:
        assert json.loads(value) == pytest.approx(resolve(report.data, path)), path


def test_without_price_money_is_not_available(positional_dir: Path) -> None:
    _run_json(positional_dir, priced=False)
    html = build_report(positional_dir).html
    assert "No price was given" in html and 'data-path="spend/total/money"' not in html


def test_without_spend_there_is_no_section(positional_dir: Path) -> None:
    (positional_dir / "run.json").write_text(json.dumps({"sessions": []}))
    report = build_report(positional_dir)
    assert "spend" not in report.data and "tab-spend" not in report.html
