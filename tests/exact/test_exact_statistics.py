"""Exact mode: statistics on choice-probability vectors."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from recaudit.exceptions import InputError
from recaudit.positional import (
    AnalysisOptions,
    analyze,
    analyze_exact,
    evaluations_from_table,
    exact_evaluations_from_table,
    pob_unbp,
    simulate_evaluations,
)
from recaudit.positional._exact import MSG_BAD_VECTOR, MSG_NO_COLUMN, MSG_NO_PROBS


def exact_table(n_queries, k, p_bias, *, perms=20, seed=0):
    """The section-8 model with each evaluation's exact position probabilities and a
    choice sampled from them."""
    rng = np.random.default_rng(seed)
    rows = []
    for j in range(n_queries):
        rel = rng.random(k) < 0.5
        while not rel.any():
            rel = rng.random(k) < 0.5
        for _ in range(perms):
            order = rng.permutation(k)
            probs = (1 - p_bias) * rel[order] / rel.sum()
            probs[0] += p_bias
            pos = rng.choice(k, p=probs)
            rows.append({"query_id": f"q{j}", "order": " ".join(map(str, order + 1)),
                         "selected_position": pos + 1,
                         "choice_probs": json.dumps(probs.tolist())})
    return pd.DataFrame(rows)


def one_hot_table(evals):
    df = evals.to_frame()
    eye = np.eye(evals.k)
    df["choice_probs"] = [json.dumps(eye[p].tolist()) for p in evals.position]
    return df


def test_against_sampled_statistics_when_probabilities_are_one_hot():
    # a one-hot vector at the sampled choice IS the sampled choice: every statistic
    # must equal the sampled-mode one (an independent implementation)
    ev = simulate_evaluations(60, k=5, n_perms=20, p_bias=0.2, rng=4)
    ex = analyze_exact(one_hot_table(ev), AnalysisOptions(n_boot=200), rng=1)
    ref = analyze(ev, AnalysisOptions(n_boot=200, n_resamples=99), rng=1)
    assert ex.pob_unbp.L == pytest.approx(ref.pob_unbp.L)
    assert ex.pob_unbp.pvalue == pytest.approx(ref.pob_unbp.pvalue)
    assert ex.pb.plugin == pytest.approx(ref.pb.plugin)
    assert ex.ps.value == pytest.approx(ref.ps.value)
    assert ex.ps_modal.value == pytest.approx(ref.ps_modal.value)
    np.testing.assert_allclose(ex.selection_rate_matrix, ref.selection_rate_matrix)
    np.testing.assert_allclose([e.value for e in ex.position_distribution],
                               [e.value for e in ref.position_distribution])


def test_exact_shares_have_the_mean_of_sampled_shares_and_less_variance():
    df = exact_table(400, 5, 0.2, seed=1)
    ex = exact_evaluations_from_table(df)
    sampled = evaluations_from_table(df)
    from recaudit.positional import query_position_shares

    ys, ye = query_position_shares(sampled), ex.query_shares()
    se = ys.std(axis=0, ddof=1) / np.sqrt(400)
    assert np.all(np.abs(ys.mean(axis=0) - ye.mean(axis=0)) < 4 * se)
    assert np.all(ye.var(axis=0) < ys.var(axis=0))
    # the favoured position's population share is 1/k + p_bias (1 - 1/k) = 0.36
    assert ye.mean(axis=0)[0] == pytest.approx(0.36, abs=0.01)


def test_pairwise_ps_is_the_expectation_of_sampled_pairwise_ps():
    # 3 evaluations of one query with known vectors: average the sampled pairwise PS
    # over every joint draw (exact enumeration)
    probs = np.array([[0.5, 0.3, 0.2], [0.2, 0.2, 0.6], [0.1, 0.8, 0.1]])
    orders = [(1, 2, 3), (3, 1, 2), (2, 3, 1)]
    df = pd.DataFrame({"query_id": ["q"] * 3, "order": [" ".join(map(str, o)) for o in orders],
                       "selected_position": [1, 1, 1],
                       "choice_probs": [json.dumps(p.tolist()) for p in probs]})
    ex = analyze_exact(pd.concat([df, df.assign(query_id="r")]), AnalysisOptions(n_boot=10), rng=0)
    expected = 0.0
    for a in range(3):
        for b in range(3):
            for c in range(3):
                w = probs[0, a] * probs[1, b] * probs[2, c]
                items = [orders[0][a], orders[1][b], orders[2][c]]
                counts = np.bincount(items, minlength=4)
                expected += w * (1 - (counts * (counts - 1)).sum() / 6)
    assert ex.ps.value == pytest.approx(expected)  # three distinct orders: every pair counts


def test_exact_pob_unbp_holds_alpha_under_the_null_and_gains_power():
    one_boot = AnalysisOptions(n_boot=1)
    rej_null = [analyze_exact(exact_table(30, 5, 0.0, seed=s), one_boot).pob_unbp.reject
                for s in range(40)]
    assert np.mean(rej_null) <= 0.1
    df = exact_table(8, 5, 0.1, seed=3)
    assert analyze_exact(df, one_boot).pob_unbp.L > 0
    assert pob_unbp(evaluations_from_table(df)).L <= analyze_exact(df, one_boot).pob_unbp.L


def test_missing_vectors_are_counted_and_outside_mass_reported():
    df = exact_table(10, 4, 0.1, perms=5, seed=2)
    df.loc[[0, 7], "choice_probs"] = None
    df["outside_mass"] = 0.25
    ex = analyze_exact(df, AnalysisOptions(n_boot=10), rng=0)
    assert ex.n_missing == 2 and ex.n_evaluations == 48
    assert ex.outside_mass == pytest.approx(0.25)
    d = ex.to_dict()
    assert d["choice"] == "probabilities" and d["n_missing"] == 2
    json.dumps(d)


@pytest.mark.parametrize(("mutate", "msg"), [
    (lambda df: df.drop(columns="choice_probs"), re.escape(MSG_NO_COLUMN[:40])),
    (lambda df: df.assign(choice_probs=None), re.escape(MSG_NO_PROBS.split("(")[0])),
    (lambda df: df.assign(choice_probs="[0.5, 0.6, 0.0, 0.0]"), r"row 1, column `choice_probs`"),
    (lambda df: df.assign(choice_probs="[1.0]"), r"row 1, column `choice_probs`"),
    (lambda df: df.assign(choice_probs="nope"), r"row 1, column `choice_probs`"),
])
def test_bad_tables_name_row_and_column(mutate, msg):
    df = exact_table(3, 4, 0.1, perms=2)
    with pytest.raises(InputError, match=msg):
        exact_evaluations_from_table(mutate(df))
    assert "probabilities summing to 1" in MSG_BAD_VECTOR


def test_exact_spb_averages_over_fold_assignments():
    # repeated cross-validation in exact mode: with one-hot vectors the exact sPB
    # estimates the sampled-mode sPB's estimand; averaging removes the fold lottery
    from recaudit.exceptions import InputError
    from recaudit.positional import strong_positional_bias

    ev = simulate_evaluations(40, k=5, n_perms=10, p_bias=0.3, rng=6)
    table = one_hot_table(ev)
    one = [analyze_exact(table, AnalysisOptions(n_boot=50, spb_repeats=1),
                         rng=s).spb_paper.value for s in range(12)]
    many = [analyze_exact(table, AnalysisOptions(n_boot=50, spb_repeats=20), rng=s).spb_paper.value
            for s in range(12)]
    assert np.std(many) < 0.5 * np.std(one)
    sampled = strong_positional_bias(ev, n_repeats=50, n_boot=50, rng=0).value
    exact = analyze_exact(table, AnalysisOptions(n_boot=50, spb_repeats=50), rng=0)
    assert exact.spb_paper.value == pytest.approx(sampled, abs=0.01)
    assert exact.to_dict()["spb_paper"]["n_repeats"] == 50
    with pytest.raises(InputError, match="n_repeats"):
        analyze_exact(table, AnalysisOptions(spb_repeats=0))
