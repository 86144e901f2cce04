"""POB-ICM against scipy and a hand-written within-query permutation loop."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from recaudit import InputError
from recaudit.positional import (
    Evaluations,
    _icm,
    contingency_table,
    evaluations_from_table,
    pob_icm,
    simulate_evaluations,
)


def _nonempty(table: np.ndarray) -> np.ndarray:
    return table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]


def test_against_scipy_chi2_contingency(biased: Evaluations) -> None:
    res = pob_icm(biased, n_resamples=9, rng=0)
    ref = stats.chi2_contingency(_nonempty(contingency_table(biased)), correction=False)
    assert res.statistic == pytest.approx(ref.statistic, rel=1e-10)
    assert res.pvalue_asymptotic == pytest.approx(ref.pvalue, rel=1e-8)
    assert res.df == ref.dof


def _chi2(item: np.ndarray, label: np.ndarray) -> float:
    table = np.zeros((item.max() + 1, label.max() + 1))
    np.add.at(table, (item, label), 1)
    return float(stats.chi2_contingency(_nonempty(table), correction=False).statistic)


def test_against_scipy_permutation_test_one_query() -> None:
    # One query: the within-query shuffle is a full shuffle of the labels, so
    # scipy's exact 'pairings' permutation test (6! orderings) is the reference.
    rng = np.random.default_rng(3)
    orders = np.array([rng.permutation(3) for _ in range(6)])
    orders[:4] = orders[0]  # repeated permutations make a non-trivial table
    pos = np.array([0, 0, 0, 1, 2, 0])
    ev = Evaluations(
        3,
        np.array(["q"]),
        np.zeros(6, np.int64),
        orders,
        pos,
        orders[np.arange(6), pos],
        np.arange(1, 7),
    )
    labels = _icm._permutation_labels(orders)[0]
    ref = stats.permutation_test(
        (labels,),
        lambda lab: _chi2(ev.item, lab),
        permutation_type="pairings",
        alternative="greater",
        n_resamples=np.inf,
    )
    ours = pob_icm(ev, n_resamples=4999, rng=1)
    assert ours.statistic == pytest.approx(ref.statistic)
    assert ours.pvalue == pytest.approx(ref.pvalue, abs=0.025)


def test_against_manual_within_query_loop(biased: Evaluations) -> None:
    ev = simulate_evaluations(12, k=3, n_perms=6, p_bias=0.15, rng=5)
    labels = _icm._permutation_labels(ev.orders)[0]
    obs = _chi2(ev.item, labels)
    rng = np.random.default_rng(8)
    null = []
    for _ in range(600):
        shuffled = labels.copy()
        for q in range(ev.n_queries):
            idx = np.flatnonzero(ev.query == q)
            shuffled[idx] = rng.permutation(shuffled[idx])
        null.append(_chi2(ev.item, shuffled))
    manual = (1 + np.sum(np.array(null) >= obs - 1e-9)) / 601
    ours = pob_icm(ev, n_resamples=4999, rng=9)
    assert ours.statistic == pytest.approx(obs)
    assert ours.pvalue == pytest.approx(manual, abs=0.06)
    # the null distributions agree too (two-sample KS, same law)
    assert stats.ks_2samp(ours.null_distribution, null).pvalue > 0.001


def test_null_keeps_margins_and_matches_observed_when_nothing_moves() -> None:
    # Every query always yields the same item: shuffles reproduce the table, p = 1.
    ev = simulate_evaluations(15, k=4, n_perms=8, p_bias=0.0, rng=2)
    item = np.repeat(np.arange(15) % 4, 8)
    pos = np.argmax(ev.orders == item[:, None], axis=1)
    ev = Evaluations(4, ev.query_ids, ev.query, ev.orders, pos, item, ev.rows)
    res = pob_icm(ev, n_resamples=199, rng=0)
    assert res.pvalue == 1.0
    np.testing.assert_allclose(res.null_distribution, res.statistic, rtol=1e-9)


def test_exhaustive_design_has_k_factorial_columns() -> None:
    perms = np.array(list(itertools.permutations(range(4))))
    rows = []
    rng = np.random.default_rng(0)
    for q in range(10):
        for p in perms:
            rows.append((f"q{q}", " ".join(map(str, p + 1)), 1 if rng.random() < 0.5 else 2))
    ev = evaluations_from_table(
        pd.DataFrame(rows, columns=["query_id", "order", "selected_position"])
    )
    res = pob_icm(ev, n_resamples=99, rng=0)
    assert contingency_table(ev).shape == (4, 24)
    assert res.n_columns == 24
    assert 0 < res.pvalue <= 1


def test_icm_detects_strong_bias_and_is_reproducible(biased: Evaluations) -> None:
    a = pob_icm(biased, n_resamples=199, rng=42)
    b = pob_icm(biased, n_resamples=199, rng=np.random.default_rng(42))
    assert a.pvalue == b.pvalue == pytest.approx(1 / 200)
    np.testing.assert_array_equal(a.null_distribution, b.null_distribution)


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_n_resamples_is_validated(biased: Evaluations, bad: object) -> None:
    with pytest.raises(InputError, match=re.escape(_icm.MSG_N_RESAMPLES.format(value=bad))):
        pob_icm(biased, n_resamples=bad)  # type: ignore[arg-type]


def test_type_one_error_on_null_data() -> None:
    # Small version of `recaudit positional simulate` at p_bias = 0.
    rng = np.random.default_rng(7)
    pvalues = [
        pob_icm(simulate_evaluations(20, k=4, n_perms=10, rng=rng), n_resamples=99, rng=rng).pvalue
        for _ in range(80)
    ]
    assert np.mean(np.array(pvalues) <= 0.05) <= 0.125  # binomial(80, 0.05) > 10: p < 0.6%
    assert stats.kstest(pvalues, "uniform").pvalue > 0.001  # valid: p ~ U(0, 1) under H0
