"""Per-user top-N metrics: hand examples, ranx, RecBole, properties, bad input."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from _fm_data import synthetic
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from recaudit import InputError
from recaudit.fairness import METRICS, per_user_metrics, ranking_metrics
from recaudit.fairness import _metrics as mod


def test_hand_example() -> None:
    # ranks 1..4; relevant at ranks 2 and 4; |T_u| = 3
    hits = np.array([[False, True, False, True]])
    m = ranking_metrics(hits, np.array([3]), n=[1, 2, 4])
    d = 1 / np.log2(np.arange(2, 6))
    np.testing.assert_allclose(m["precision"], [[0, 0.5, 0.5]])
    np.testing.assert_allclose(m["recall"], [[0, 1 / 3, 2 / 3]])
    np.testing.assert_allclose(m["hit"], [[0, 1, 1]])
    np.testing.assert_allclose(m["mrr"], [[0, 0.5, 0.5]])
    np.testing.assert_allclose(m["ndcg"], [[0, d[1] / (d[0] + d[1]), (d[1] + d[3]) / d[:3].sum()]])


def test_against_ranx() -> None:
    ranx = pytest.importorskip("ranx")
    recs, test, _ = synthetic(n_users=25, n_items=30, length=10, seed=3)
    ours = per_user_metrics(recs, test, n=[3, 10]).set_index("user_id")
    qrels = ranx.Qrels({u: {str(i): 1 for i in g.item_id} for u, g in test.groupby("user_id")})
    run = ranx.Run(
        {
            u: {str(i): float(100 - r) for i, r in zip(g.item_id, g["rank"], strict=True)}
            for u, g in recs.groupby("user_id")
        }
    )
    names = {
        "ndcg": "ndcg",
        "precision": "precision",
        "recall": "recall",
        "hit": "hit_rate",
        "mrr": "mrr",
    }
    keys = [f"{names[m]}@{k}" for m in METRICS for k in (3, 10)]
    ref = ranx.evaluate(qrels, run, keys, return_mean=False, make_comparable=True)
    order = list(qrels.keys())
    for m in METRICS:
        for k in (3, 10):
            np.testing.assert_allclose(
                ours.loc[order, f"{m}@{k}"].to_numpy(), ref[f"{names[m]}@{k}"], atol=1e-12
            )


def test_against_recbole(monkeypatch: pytest.MonkeyPatch) -> None:
    metrics = pytest.importorskip("recbole.evaluator.metrics")
    # RecBole 1.2.1 still uses `np.float`, removed in numpy 1.24.
    monkeypatch.setattr(np, "float", float, raising=False)
    rng = np.random.default_rng(7)
    hits = rng.random((200, 15)) < 0.15
    n_rel = rng.integers(1, 25, size=200)
    ours = ranking_metrics(hits, n_rel, n=[5, 10, 15])
    cfg = {"topk": [5, 10, 15], "metric_decimal_place": 6}
    cols = [4, 9, 14]
    ref = {
        "ndcg": metrics.NDCG(cfg).metric_info(hits, n_rel),
        "precision": metrics.Precision(cfg).metric_info(hits),
        "recall": metrics.Recall(cfg).metric_info(hits, n_rel),
        "hit": metrics.Hit(cfg).metric_info(hits),
        "mrr": metrics.MRR(cfg).metric_info(hits),
    }
    for m in METRICS:
        np.testing.assert_allclose(ours[m], ref[m][:, cols], atol=1e-12, err_msg=m)
        np.testing.assert_allclose(ours[m].mean(axis=0), ref[m][:, cols].mean(axis=0))


@settings(max_examples=60, deadline=None)
@given(
    hits=hnp.arrays(bool, st.tuples(st.integers(1, 12), st.integers(6, 9))),
    data=st.data(),
)
def test_metrics_in_unit_interval_and_monotone(hits: np.ndarray, data: st.DataObject) -> None:
    n_rel = np.maximum(hits.sum(axis=1), 1) + data.draw(
        hnp.arrays(np.int64, hits.shape[0], elements=st.integers(0, 5))
    )
    m = ranking_metrics(hits, n_rel, n=[1, 3, 6])
    for name, v in m.items():
        assert ((v >= 0) & (v <= 1 + 1e-12)).all(), name
    for name in ("recall", "hit", "mrr"):  # non-decreasing in N
        assert (np.diff(m[name], axis=1) >= -1e-12).all(), name


def test_short_and_missing_lists_count_as_misses() -> None:
    recs = pd.DataFrame({"user_id": ["a", "a"], "item_id": [1, 2], "rank": [1, 2]})
    test = pd.DataFrame({"user_id": ["a", "b", "b"], "item_id": [2, 1, 1]})
    out = per_user_metrics(recs, test, n=[5]).set_index("user_id")
    assert out.loc["a", "precision@5"] == pytest.approx(1 / 5)
    assert out.loc["b", "ndcg@5"] == 0.0 and out.loc["b", "n_relevant"] == 1  # duplicates once


@pytest.mark.parametrize(
    ("recs", "message"),
    [
        ({"user_id": ["a", "a"], "item_id": [1, 2], "rank": [1, 1]}, mod.DUPLICATE_RANK_MSG),
        ({"user_id": ["a", "a"], "item_id": [1, 2], "rank": [1, 3]}, mod.RANK_GAP_MSG),
        ({"user_id": ["a", "a"], "item_id": [1, 1], "rank": [1, 2]}, mod.DUPLICATE_ITEM_MSG),
        ({"user_id": ["a", "a"], "item_id": [1, 2], "rank": [1, 1.5]}, mod.BAD_RANK_MSG),
        ({"user_id": ["a", "a"], "item_id": [1, 2], "rank": [0, 1]}, mod.BAD_RANK_MSG),
        ({"user_id": ["a", "a"], "item_id": [1, 2], "rank": ["1", "2"]}, mod.BAD_RANK_MSG),
        ({"user_id": ["a", None], "item_id": [1, 2], "rank": [1, 2]}, mod.MISSING_VALUE_MSG),
        ({"user_id": ["a"], "item_id": [1]}, mod.MISSING_COLUMNS_MSG),
    ],
)
def test_bad_recs(recs: dict[str, list[object]], message: str) -> None:
    test = pd.DataFrame({"user_id": ["a"], "item_id": [1]})
    with pytest.raises(InputError, match=re.escape(message.split("{")[0])):
        per_user_metrics(pd.DataFrame(recs), test, n=[2])


def test_duplicate_hidden_behind_a_full_count() -> None:
    # ranks 1, 3, 3: three rows and max rank 3, yet rank 2 is missing and 3 repeated
    recs = pd.DataFrame({"user_id": ["a"] * 3, "item_id": [1, 2, 3], "rank": [1, 3, 3]})
    test = pd.DataFrame({"user_id": ["a"], "item_id": [1]})
    with pytest.raises(InputError, match=r"duplicated \(user_id, rank\) = \('a', 3\) at row 3"):
        per_user_metrics(recs, test, n=[2])


def test_error_names_the_row() -> None:
    recs = pd.DataFrame(
        {"user_id": ["a", "a", "b", "b"], "item_id": [1, 2, 1, 3], "rank": [1, 2, 1, 1]}
    )
    test = pd.DataFrame({"user_id": ["a"], "item_id": [1]})
    with pytest.raises(InputError, match=r"\('b', 1\) at row 4"):
        per_user_metrics(recs, test, n=[2])


@pytest.mark.parametrize("n", [[], [0], [5, 5], [2.5], "5"])
def test_bad_n(n: object) -> None:
    with pytest.raises(InputError, match="`n` must be"):
        ranking_metrics(np.zeros((1, 5), dtype=bool), np.array([1]), n=n)  # type: ignore[arg-type]


def test_kernel_rejects_users_without_test_items() -> None:
    with pytest.raises(InputError, match="`n_relevant`"):
        ranking_metrics(np.zeros((2, 5), dtype=bool), np.array([1, 0]), n=[5])
    with pytest.raises(InputError, match="`hits`"):
        ranking_metrics(np.zeros((2, 3), dtype=bool), np.array([1, 1]), n=[5])


def test_inputs_not_mutated() -> None:
    recs, test, _ = synthetic(n_users=10)
    before = recs.copy(), test.copy()
    per_user_metrics(recs, test)
    pd.testing.assert_frame_equal(recs, before[0])
    pd.testing.assert_frame_equal(test, before[1])


def test_integer_and_string_ids_agree() -> None:
    # compact integer ids take a lookup-table path, strings a hashing path
    recs, test, _ = synthetic(n_users=40, seed=9)
    as_int = {"user_id": lambda t: t["user_id"].str[1:].astype(int)}
    by_str = per_user_metrics(recs, test).set_index("user_id").sort_index()
    by_int = per_user_metrics(recs.assign(**as_int), test.assign(**as_int)).set_index("user_id")
    by_int.index = "u" + by_int.index.astype(str)
    pd.testing.assert_frame_equal(by_str, by_int.loc[by_str.index])
    text = {"item_id": lambda t: "i" + t["item_id"].astype(str)}
    by_text = per_user_metrics(recs.assign(**text), test.assign(**text)).set_index("user_id")
    pd.testing.assert_frame_equal(by_str, by_text.loc[by_str.index])
