"""run.json records what a run spent: calls, tokens, wall time and money, per cell."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from helpers import write_config
from recaudit.audit import RunOptions, load_audit_config, run_audit
from recaudit.audit._spend import spend_by_cell
from recaudit.exceptions import ConfigError


def test_spend_sums_the_table_per_cell_and_prices_it():
    table = pd.DataFrame({
        "model": ["a", "a", "a", "b"], "k": [5, 5, 5, 5], "temperature": [0.0] * 4,
        "condition": ["permutation"] * 4,
        "prompt_tokens": pd.array([100, 200, None, 50], dtype="Int64"),
        "completion_tokens": pd.array([10, 20, None, 5], dtype="Int64"),
        "latency_s": [1.0, 2.0, 0.5, 1.0], "retries": [0, 1, 0, 0]})
    a, b = spend_by_cell(table, {"a": (2.0, 8.0)})
    assert (a.calls, a.prompt_tokens, a.completion_tokens) == (3, 300, 30)
    assert a.calls_without_usage == 1 and a.retries == 1
    assert a.money == pytest.approx((300 * 2.0 + 30 * 8.0) / 1e6)
    assert a.money_batch == pytest.approx(0.5 * a.money)  # the providers' batch price
    assert b.money is None and b.money_batch is None and b.calls == 1
    assert "money" not in b.to_dict() and "money_batch" not in b.to_dict()
    (a4,) = spend_by_cell(table[table["model"] == "a"], {"a": (2.0, 8.0)},
                          batch_discount=0.25)
    assert a4.money_batch == pytest.approx(0.25 * a.money)


def test_a_run_records_its_spend_and_a_resume_adds_a_session(tmp_path, retriever, emb_cache):
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=3, n_perms=2))
    run_audit(cfg, out_dir=tmp_path / "run", retriever=retriever)
    run_audit(cfg, out_dir=tmp_path / "run", retriever=retriever, run=RunOptions(resume=True))
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    first, second = manifest["sessions"]
    assert first["spend"]["calls"] == 6 and second["spend"]["calls"] == 0
    assert manifest["spend"]["total"]["calls"] == 6
    assert manifest["spend"]["total"]["wall_s"] >= first["spend"]["wall_s"] > 0
    assert [c["model"] for c in manifest["spend"]["cells"]] == ["sim"]


@pytest.mark.parametrize("price", ["[1, 2, 3]", "-1", '"free"'])
def test_a_bad_price_is_refused(tmp_path, emb_cache, price):
    models = f"""
[[models]]
name = "remote"
backend = "openai"
base_url = "http://127.0.0.1:9/v1"
price_per_mtok = {price}
"""
    with pytest.raises(ConfigError, match="price_per_mtok"):
        load_audit_config(write_config(tmp_path, cache_dir=emb_cache, models=models))
