"""Tables that used to give a silently wrong result are refused, naming the rows:
repeated evaluation keys (sPB moved from 0.245 to 0.167 on a table with repeated
rows), fractional order entries (``[1.9, 2.2, ...]`` truncated to ``1 2 ...``); and an
order of the wrong length only suggests ``--by k`` when that can fix it."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from recaudit import InputError
from recaudit.cli import app
from recaudit.positional import (
    AnalysisOptions,
    analyze,
    analyze_groups,
    evaluations_from_table,
    read_table,
    simulate_evaluations,
    topn_bias,
)
from recaudit.positional import _evaluations as E
from recaudit.positional import _topn as T
from recaudit.positional._analyze_exact import read_exact_table

runner = CliRunner()


def _run_table(n_queries: int = 10, n_perms: int = 6, k: int = 4) -> pd.DataFrame:
    """A table shaped like `positional run`'s: every key column, one row per key."""
    sim = simulate_evaluations(n_queries, k=k, n_perms=n_perms, p_bias=0.3, rng=4).to_frame()
    return sim.assign(model="m", k=k, temperature=0.0, condition="permutation",
                      perm_index=sim.groupby("query_id").cumcount(), sample_index=0)


def test_repeated_keys_are_refused_naming_the_rows(tmp_path: Path) -> None:
    table = _run_table()
    doubled = pd.concat([table, table.iloc[[3, 7]]], ignore_index=True)
    key = ", ".join(f"{c}={doubled.iloc[3][c]!r}" for c in E.KEY_COLUMNS)
    message = E.MSG_DUPLICATE_KEY.format(rows=f"4, {len(table) + 1}", key=key,
                                         more="; 4 rows in all repeat a key")
    with pytest.raises(InputError, match=re.escape(message)):
        analyze(doubled, AnalysisOptions(n_resamples=19, n_boot=10))
    with pytest.raises(InputError, match=re.escape(message)):
        analyze_groups(doubled, AnalysisOptions(n_resamples=19, n_boot=10), by=["model"])
    path = tmp_path / "e.parquet"
    doubled.to_parquet(path, index=False)
    res = runner.invoke(app, ["positional", "analyze", str(path), "--quiet"])
    assert res.exit_code == 2 and "data rows 4, 61 have the same evaluation key" in res.output
    with pytest.raises(InputError, match="have the same evaluation key"):
        read_exact_table(doubled.assign(choice_probs="[0.25, 0.25, 0.25, 0.25]"))
    # the same table without its repeats is analysed
    assert analyze(table, AnalysisOptions(n_resamples=19, n_boot=10)).n_evaluations == len(table)


def test_repeats_are_legitimate_without_an_evaluation_identity() -> None:
    """Without perm_index/sample_index a table has no key: a sampled design may repeat
    an order, the decoding condition repeats the identity order."""
    table = pd.DataFrame({"query_id": ["a"] * 4 + ["b"] * 4,
                          "order": ["1 2 3"] * 8,
                          "selected_position": [1, 1, 2, 3, 1, 2, 2, 3]})
    assert len(read_table(table)) == 8
    assert evaluations_from_table(table).n_evaluations == 8


def test_fractional_order_entries_are_refused(tmp_path: Path) -> None:
    table = _run_table(k=4)
    lists = [np.array([int(x) for x in o.split()], dtype=float) for o in table["order"]]
    as_float = table.assign(order=lists)
    # whole floats are exact: the same evaluations as the integer orders
    np.testing.assert_array_equal(evaluations_from_table(as_float).orders,
                                  evaluations_from_table(table).orders)
    bad = lists.copy()
    bad[5] = np.array([1.9, 2.2, 3.0, 4.0])
    broken = table.assign(order=bad)
    message = E.MSG_ORDER_FRACTION.format(row=6, value=[1.9, 2.2, 3.0, 4.0], entry=1.9)
    with pytest.raises(InputError, match=re.escape(message)):
        evaluations_from_table(broken)
    path = tmp_path / "f.parquet"
    broken.to_parquet(path, index=False)
    res = runner.invoke(app, ["positional", "analyze", str(path), "--quiet"])
    assert res.exit_code == 2 and "holds 1.9, which is not a whole number" in res.output
    with pytest.raises(InputError, match=re.escape("row 1, column `order`: [True, 2]")):
        evaluations_from_table(pd.DataFrame({"query_id": ["a"], "order": [[True, 2]],
                                             "selected_position": [1]}))


def _orders_table(orders: list[str], k: list[int] | None = None) -> pd.DataFrame:
    t = pd.DataFrame({"query_id": [f"q{i % 3}" for i in range(len(orders))],
                      "order": orders, "selected_position": [1] * len(orders)})
    return t if k is None else t.assign(k=k)


def test_a_wrong_length_order_does_not_suggest_by_k() -> None:
    good = ["1 2 3 4", "2 1 4 3", "4 3 2 1", "3 4 1 2"] * 3
    wrong = good.copy()
    wrong[6] = "1 2 3"
    # a k column that says 4 for every row: that row is wrong, --by k cannot help
    with pytest.raises(InputError) as info:
        evaluations_from_table(_orders_table(wrong, [4] * 12))
    text = str(info.value)
    assert text == E.MSG_K_COLUMN.format(row=7, value=4, k=3) and "--by k" not in text
    # no k column, one row of another length: the wrong row is named, no --by k
    with pytest.raises(InputError) as info:
        evaluations_from_table(_orders_table(wrong))
    text = str(info.value)
    assert text == E.MSG_MIXED_K_NO_COLUMN.format(row0=1, k0=4, row1=7, k1=3, split="")
    assert "--by k" not in text
    # the same through analyze --by k of a table with a k column (a group of one k)
    table = pd.concat([_orders_table(wrong, [4] * 12).assign(model="m"),
                       _orders_table(["1 2 3", "3 2 1", "2 3 1"], [3] * 3).assign(model="m")],
                      ignore_index=True)
    with pytest.raises(InputError, match=r"group k=4: row 7, column `k`: 4 does not match "
                                         r"the order length 3") as info:
        analyze_groups(table, AnalysisOptions(n_resamples=9, n_boot=5), by=["k"])
    assert "--by k" not in str(info.value)


def test_mixed_sizes_suggest_by_k_only_where_it_helps() -> None:
    fours = ["1 2 3 4", "2 1 4 3", "4 3 2 1"]
    threes = ["1 2 3", "3 2 1", "2 3 1"]
    mixed = _orders_table(fours + threes, [4, 4, 4, 3, 3, 3])
    with pytest.raises(InputError, match=re.escape(
            E.MSG_MIXED_K_BY.format(row0=1, k0=4, row1=4, k1=3))):
        evaluations_from_table(mixed)
    groups = analyze_groups(mixed.assign(query_id=["a", "a", "b", "a", "a", "b"]),
                            AnalysisOptions(n_resamples=9, n_boot=5),
                            by=["k"])  # --by k fixes it
    assert [g.k for g in groups.groups] == [3, 4]
    # several rows of each size and no k column: the hint says to add one
    with pytest.raises(InputError, match=re.escape(E.MSG_MIXED_K_NO_COLUMN.format(
            row0=1, k0=4, row1=4, k1=3, split=E.MSG_SPLIT_HINT))):
        evaluations_from_table(_orders_table(fours + threes))


def test_topn_refuses_fractions_and_non_numbers() -> None:
    base = pd.DataFrame({"query_id": ["a", "a", "b"], "order": ["1 2 3", "3 2 1", "2 1 3"],
                         "ranking": ["1 2 3", "2 1 3", "3 1 2"]})
    assert topn_bias(base, n_resamples=9, n_boot=5).n_evaluations == 3
    frac = base.assign(ranking=[[1.0, 2.0, 3.0], [2.5, 1.0, 3.0], [3, 1, 2]])
    with pytest.raises(InputError, match=re.escape(T.MSG_NOT_INTS.format(
            row=2, column="ranking", value=[2.5, 1.0, 3.0]))):
        topn_bias(frac, n_resamples=9, n_boot=5)
    words = base.assign(order=["1 2 3", "x y z", "2 1 3"])
    with pytest.raises(InputError, match=re.escape(T.MSG_NOT_INTS.format(
            row=2, column="order", value="x y z"))):
        topn_bias(words, n_resamples=9, n_boot=5)
