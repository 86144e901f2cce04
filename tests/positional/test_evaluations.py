"""Loading and validating the evaluations table."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from recaudit import InputError
from recaudit.positional import _evaluations as E
from recaudit.positional import _metrics as M
from recaudit.positional import evaluations_from_table, group_table, permutation_sensitivity


def _table(rows: list[tuple[str, str, object]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["query_id", "order", "selected_position"])


def test_parses_orders_positions_and_items() -> None:
    ev = evaluations_from_table(_table([("a", "3 1 2", 1), ("a", "1 2 3", 3), ("b", "2 3 1", 2)]))
    assert ev.k == 3 and ev.n_queries == 2 and ev.n_evaluations == 3
    np.testing.assert_array_equal(ev.orders, [[2, 0, 1], [0, 1, 2], [1, 2, 0]])
    np.testing.assert_array_equal(ev.position, [0, 2, 1])
    np.testing.assert_array_equal(ev.item, [2, 2, 2])  # original index shown there
    np.testing.assert_array_equal(ev.query, [0, 0, 1])


def test_discards_are_counted_not_guessed() -> None:
    ev = evaluations_from_table(
        _table([("a", "1 2", 1), ("a", "2 1", None), ("b", "1 2", ""), ("c", "1 2", 2)])
    )
    assert ev.n_discarded == 2
    assert ev.n_evaluations == 2
    assert ev.n_queries == 2 and ev.n_queries_all_discarded == 1
    np.testing.assert_array_equal(ev.rows, [1, 4])


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([("a", "3 1 1 5 4", 1)], E.MSG_NOT_PERMUTATION.format(row=1, value="3 1 1 5 4", k=5)),
        ([("a", "1 2 x", 1)], E.MSG_ORDER_TOKENS.format(row=1, value="1 2 x")),
        ([("a", "1 2 3", 1), ("a", "1 2", 1)], E.MSG_MIXED_K.format(row0=1, k0=3, row1=2, k1=2)),
        ([("a", "1", 1)], E.MSG_K_TOO_SMALL.format(row=1, k=1)),
        ([("a", "1 2", 1), ("b", "2 1", 3)], E.MSG_POSITION.format(row=2, value=3, k=2)),
        ([("a", "1 2", 1.5)], E.MSG_POSITION.format(row=1, value=1.5, k=2)),
        ([("a", "1 2", None)], E.MSG_NO_VALID.format(n=1)),
        ([(None, "1 2", 1)], E.MSG_QUERY_ID.format(row=1)),
    ],
)
def test_bad_input_names_row_and_column(rows: list, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        evaluations_from_table(_table(rows))


def test_missing_column_and_k_column() -> None:
    with pytest.raises(InputError, match=re.escape("has no column `order`")):
        evaluations_from_table(pd.DataFrame({"query_id": ["a"], "selected_position": [1]}))
    bad_k = _table([("a", "1 2", 1)]).assign(k=[3])
    with pytest.raises(InputError, match=re.escape(E.MSG_K_COLUMN.format(row=1, value=3, k=2))):
        evaluations_from_table(bad_k)


def test_single_evaluation_query_is_an_error_where_needed() -> None:
    ev = evaluations_from_table(_table([("a", "1 2", 1), ("a", "2 1", 1), ("b", "1 2", 2)]))
    message = M.MSG_FEW_EVALUATIONS.format(row=3, query="b", n=1, what="pairwise PS")
    with pytest.raises(InputError, match=re.escape(message)):
        permutation_sensitivity(ev, kind="pairwise")
    assert permutation_sensitivity(ev, n_boot=10).value == pytest.approx(0.25)


def test_reads_csv_and_parquet_and_lists(tmp_path: Path, table: pd.DataFrame) -> None:
    ref = evaluations_from_table(table)
    table.to_csv(tmp_path / "e.csv", index=False)
    as_lists = table.assign(order=[list(map(int, o.split())) for o in table["order"]])
    as_lists.to_parquet(tmp_path / "e.parquet")
    for source in (tmp_path / "e.csv", tmp_path / "e.parquet"):
        ev = evaluations_from_table(source)
        np.testing.assert_array_equal(ev.orders, ref.orders)
        np.testing.assert_array_equal(ev.item, ref.item)
    with pytest.raises(InputError, match="use a .csv or .parquet file"):
        (tmp_path / "e.txt").write_text("x")
        evaluations_from_table(tmp_path / "e.txt")


def test_group_table_keeps_row_numbers_and_rejects_unknown_columns(table: pd.DataFrame) -> None:
    table = table.assign(model=np.where(np.arange(len(table)) % 2 == 0, "a", "b"))
    table.loc[5, "order"] = "1 1 2 3 4"
    groups = dict((keys["model"], part) for keys, part in group_table(table, ["model"]))
    with pytest.raises(InputError, match=re.escape("row 6, column `order`")):
        evaluations_from_table(groups["b"])
    with pytest.raises(InputError, match=re.escape("`by`: unknown column `modle`")):
        group_table(table, ["modle"])


def test_does_not_mutate_the_callers_table(table: pd.DataFrame) -> None:
    before = table.copy()
    evaluations_from_table(table)
    pd.testing.assert_frame_equal(table, before)
