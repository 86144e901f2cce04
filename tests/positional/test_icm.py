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


def test_null_with_singleton_columns_matches_manual_loop() -> None:
    # k = 6 with 8 sampled permutations per query: most columns are singletons
    # (drawn only through the partial shuffle), some repeat across queries.
    ev = simulate_evaluations(25, k=6, n_perms=8, p_bias=0.1, rng=21)
    labels = _icm._permutation_labels(ev.orders)[0]
    counts = np.bincount(labels)
    assert (counts == 1).any() and (counts > 1).any()
    rng = np.random.default_rng(22)
    null = []
    for _ in range(800):
        shuffled = labels.copy()
        for q in range(ev.n_queries):
            idx = np.flatnonzero(ev.query == q)
            shuffled[idx] = rng.permutation(shuffled[idx])
        null.append(_chi2(ev.item, shuffled))
    ours = pob_icm(ev, n_resamples=3999, rng=23)
    assert ours.statistic == pytest.approx(_chi2(ev.item, labels))
    assert stats.ks_2samp(ours.null_distribution, null).pvalue > 0.001
    assert np.mean(ours.null_distribution) == pytest.approx(np.mean(null), rel=0.01)


def test_threads_do_not_change_the_result(biased: Evaluations) -> None:
    one = pob_icm(biased, n_resamples=5000, rng=4)
    two = pob_icm(biased, n_resamples=5000, rng=4, n_jobs=2)
    np.testing.assert_array_equal(one.null_distribution, two.null_distribution)
    with pytest.raises(InputError, match=re.escape(_icm.MSG_N_JOBS.format(value=0))):
        pob_icm(biased, n_jobs=0)


def _first_position_table(orders: list[np.ndarray], n_queries: int) -> Evaluations:
    """Every evaluation picks prompt position 1: maximal positional bias."""
    rows = [(f"q{q}", " ".join(map(str, o + 1)), 1) for q in range(n_queries) for o in orders]
    return evaluations_from_table(
        pd.DataFrame(rows, columns=["query_id", "order", "selected_position"]))


def test_no_repeated_column_has_no_power_and_says_so() -> None:
    """Sampled orders at k = 10 never repeat: X2 = N(R - 1) under every shuffle, so even
    a model that always answers position 1 gets p = 1 (spec section 4: 'weak when
    columns are sparse'); the result says why. The same bias with orders shared across
    queries (repeated columns) is detected, with no caveat."""
    from recaudit.report._sections_study import ICM_NO_REPEATS_START

    k, n_q, rng = 10, 12, np.random.default_rng(3)
    unique = [rng.permutation(k) for _ in range(n_q * 8)]
    rows = [(f"q{i // 8}", " ".join(map(str, o + 1)), 1) for i, o in enumerate(unique)]
    sparse = evaluations_from_table(
        pd.DataFrame(rows, columns=["query_id", "order", "selected_position"]))
    res = pob_icm(sparse, n_resamples=199, rng=0)
    assert res.n_columns == n_q * 8 and res.n_in_repeated_columns == 0
    assert res.statistic == pytest.approx(len(unique) * (res.n_rows - 1))
    assert res.pvalue == 1.0
    np.testing.assert_allclose(res.null_distribution, res.statistic, rtol=1e-12)
    assert res.caveat is not None and res.caveat.startswith(ICM_NO_REPEATS_START)
    assert str(res.n_columns) in res.caveat

    shared = _first_position_table(unique[:8], n_q)
    res = pob_icm(shared, n_resamples=199, rng=0)
    assert res.n_in_repeated_columns == n_q * 8 and res.caveat is None
    assert res.pvalue == pytest.approx(1 / 200)


def test_statistic_of_a_table_without_association_is_zero_not_negative() -> None:
    # every label sees items 2, 2, 0, 0: X^2 = 0, which rounding made -1.07e-14 (printed
    # as "-0.0" in the CLI's table)
    item = np.tile(np.array([2, 2, 0, 0], dtype=np.int64), 7)
    label = np.repeat(np.arange(7, dtype=np.int64), 4)
    value = _icm._chi2_statistic(item, label, 7, 7)
    assert value == 0.0 and np.copysign(1.0, value) == 1.0
