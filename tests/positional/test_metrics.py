"""PS, PB, sPB and the position distribution: references, properties, recovery."""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.weightstats import DescrStatsW

from recaudit import InputError
from recaudit._stats import studentized_interval
from recaudit.positional import (
    AnalysisOptions,
    Evaluations,
    analyze_exact,
    permutation_sensitivity,
    pob_icm,
    pob_unbp,
    position_distribution,
    positional_bias,
    selection_rate_matrix,
    simulate_evaluations,
    strong_positional_bias,
)
from recaudit.positional import _metrics as M


def _constant_item(n_queries: int, k: int, n_perms: int, seed: int) -> Evaluations:
    ev = simulate_evaluations(n_queries, k=k, n_perms=n_perms, rng=seed)
    item = np.repeat(np.arange(n_queries) % k, n_perms)
    pos = np.argmax(ev.orders == item[:, None], axis=1)
    return Evaluations(k, ev.query_ids, ev.query, ev.orders, pos, item, ev.rows)


def test_against_scipy_bootstrap_ps(biased: Evaluations) -> None:
    counts = M.item_counts(biased)
    per_query = 1 - counts.max(axis=1) / counts.sum(axis=1)
    ours = permutation_sensitivity(biased, n_boot=4000, rng=0)
    ref = stats.bootstrap(
        (per_query,), np.mean, method="percentile", n_resamples=4000, random_state=1
    ).confidence_interval
    assert ours.value == pytest.approx(per_query.mean())
    assert ours.ci.low == pytest.approx(ref.low, abs=0.01)
    assert ours.ci.high == pytest.approx(ref.high, abs=0.01)


def _pairwise_ps_by_enumeration(ev: Evaluations) -> np.ndarray:
    """PS_j by looping over every pair of query j's evaluations under different orders."""
    out = []
    for j in range(ev.n_queries):
        rows = np.flatnonzero(ev.query == j)
        pairs = disagree = 0
        for a, b in itertools.combinations(rows, 2):
            if not np.array_equal(ev.orders[a], ev.orders[b]):
                pairs += 1
                disagree += ev.item[a] != ev.item[b]
        out.append(disagree / pairs)
    return np.asarray(out)


def _bootstrap_t_by_loop(x: np.ndarray, n_boot: int, seed: int) -> tuple[float, float]:
    """Bootstrap-t interval of mean(x) by resampling indices in a loop (Efron &
    Tibshirani 1993, ch. 12.5): an implementation independent of the weights."""
    gen = np.random.default_rng(seed)
    n, se = x.size, x.std(ddof=1) / np.sqrt(x.size)
    t_star = []
    for _ in range(n_boot):
        r = x[gen.integers(0, n, n)]
        if r.std(ddof=1) > 0:
            t_star.append((r.mean() - x.mean()) / (r.std(ddof=1) / np.sqrt(n)))
    q_low, q_high = np.quantile(t_star, [0.05, 0.95])
    return max(0.0, x.mean() - q_high * se), min(1.0, x.mean() - q_low * se)


def test_against_independent_bootstrap_t_pairwise_ps(biased: Evaluations) -> None:
    # the pairwise PS's interval is the bootstrap-t interval of the mean of PS_j
    # (docs/decisions/): checked on PS_j computed independently, by a loop
    per_query = _pairwise_ps_by_enumeration(biased)
    ours = permutation_sensitivity(biased, kind="pairwise", confidence_level=0.9,
                                   n_boot=4000, rng=0)
    low, high = _bootstrap_t_by_loop(per_query, 4000, seed=1)
    assert ours.value == pytest.approx(per_query.mean())
    assert ours.ci.low == pytest.approx(low, abs=0.01)
    assert ours.ci.high == pytest.approx(high, abs=0.01)
    assert ours.ci.confidence_level == 0.9 and ours.ci.method == "bootstrap-t"


def test_against_statsmodels_studentized_interval_of_symmetric_values() -> None:
    # for symmetric values the bootstrap-t quantiles are those of Student's t
    x = np.random.default_rng(5).normal(size=400)
    ours = studentized_interval(x, n_boot=4000, rng=np.random.default_rng(0))
    low, high = DescrStatsW(x).tconfint_mean(alpha=0.05)
    assert ours.low == pytest.approx(low, abs=0.01)
    assert ours.high == pytest.approx(high, abs=0.01)


def test_exact_mode_pairwise_ps_has_the_sampled_mode_interval() -> None:
    # one-hot probability vectors at the sampled choices are the sampled choices, so
    # exact mode's pairwise PS and its interval (from exact mode's 4th child stream)
    # equal sampled mode's
    ev = simulate_evaluations(60, k=5, n_perms=20, p_bias=0.2, rng=4)
    df = ev.to_frame()
    df["choice_probs"] = [json.dumps(np.eye(ev.k)[p].tolist()) for p in ev.position]
    ex = analyze_exact(df, AnalysisOptions(n_boot=200), rng=1)
    ref = permutation_sensitivity(ev, kind="pairwise", n_boot=200,
                                  rng=np.random.default_rng(1).spawn(5)[3])
    assert ex.ps is not None and ex.ps.ci.method == ref.ci.method == "bootstrap-t"
    assert (ex.ps.value, ex.ps.ci.low, ex.ps.ci.high) == (
        pytest.approx(ref.value), pytest.approx(ref.ci.low), pytest.approx(ref.ci.high))


def test_studentized_interval_clips_degenerates_and_needs_two_values() -> None:
    gen = np.random.default_rng(0)
    x = np.array([0.0, 0.0, 0.0, 0.0, 0.1])
    raw = studentized_interval(x, n_boot=500, rng=gen)
    clipped = studentized_interval(x, n_boot=500, rng=np.random.default_rng(0),
                                   bounds=(0.0, 1.0))
    assert raw.low < 0 < raw.high and (clipped.low, clipped.high) == (0.0, raw.high)
    same = studentized_interval([0.3] * 6, n_boot=50, rng=gen)
    assert (same.low, same.high) == (0.3, 0.3)
    for few in ([0.4], [], [np.nan, 0.2]):
        ci = studentized_interval(few, n_boot=50, rng=gen)
        assert np.isnan(ci.low) and np.isnan(ci.high)


def test_pairwise_ps_by_hand() -> None:
    ev = _constant_item(6, 4, 5, seed=0)
    assert permutation_sensitivity(ev, kind="pairwise", n_boot=10).value == 0.0
    c = np.array([3, 2])  # a query with items chosen 3 and 2 times of 5
    assert 1 - (c * (c - 1)).sum() / (5 * 4) == pytest.approx(0.6)


@settings(max_examples=15, deadline=None)
@given(
    n=st.integers(2, 12), k=st.integers(2, 6), n_perms=st.integers(2, 6), seed=st.integers(0, 99)
)
def test_constant_recommendation_gives_ps_zero_and_icm_p_one(
    n: int, k: int, n_perms: int, seed: int
) -> None:
    ev = _constant_item(n, k, n_perms, seed)
    assert permutation_sensitivity(ev, n_boot=20, rng=seed).value == 0.0
    assert pob_icm(ev, n_resamples=49, rng=seed).pvalue == 1.0
    assert strong_positional_bias(ev, n_boot=20, rng=seed).value == 0.0


@settings(max_examples=15, deadline=None)
@given(n=st.integers(2, 10), k=st.integers(2, 6), p=st.floats(0, 1), seed=st.integers(0, 99))
def test_pvalues_in_unit_interval_and_metrics_are_rates(
    n: int, k: int, p: float, seed: int
) -> None:
    ev = simulate_evaluations(n, k=k, n_perms=4, p_bias=p, rng=seed)
    assert 0 < pob_icm(ev, n_resamples=19, rng=seed).pvalue <= 1
    unbp = pob_unbp(ev)
    assert 0 <= unbp.pvalue <= 1 and unbp.L >= 0
    for est in (positional_bias(ev, n_boot=20, rng=0), permutation_sensitivity(ev, n_boot=20)):
        assert 0 <= est.ci.low <= est.ci.high <= 1 and 0 <= est.value <= 1


@settings(max_examples=10, deadline=None)
@given(k=st.integers(2, 8), reps=st.integers(1, 4), n=st.integers(2, 6))
def test_exact_uniformity_gives_zero_bound(k: int, reps: int, n: int) -> None:
    # Every query selects each position equally often: q = uniform exactly.
    orders = np.tile(np.arange(k), (n * k * reps, 1))
    position = np.tile(np.arange(k), n * reps)
    query = np.repeat(np.arange(n), k * reps)
    ev = Evaluations(
        k, np.arange(n), query, orders, position, position, np.arange(1, query.size + 1)
    )
    res = pob_unbp(ev)
    assert res.L == 0.0 and res.pvalue == 1.0 and not res.reject
    assert positional_bias(ev, n_boot=10).value == pytest.approx(0.0, abs=1e-12)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 999))
def test_relabelling_and_reordering_queries_changes_nothing(seed: int) -> None:
    ev = simulate_evaluations(8, k=4, n_perms=5, p_bias=0.3, rng=seed)
    rng = np.random.default_rng(seed)
    table = ev.to_frame()
    table["query_id"] = table["query_id"].map(
        {q: f"x{rng.integers(1e9)}-{q}" for q in ev.query_ids}
    )
    shuffled = table.sample(frac=1.0, random_state=seed)
    from recaudit.positional import evaluations_from_table

    other = evaluations_from_table(shuffled)
    assert pob_icm(other, n_resamples=9).statistic == pytest.approx(
        pob_icm(ev, n_resamples=9).statistic
    )
    assert pob_unbp(other).L == pytest.approx(pob_unbp(ev).L)
    assert pob_unbp(other).pvalue == pytest.approx(pob_unbp(ev).pvalue)
    assert permutation_sensitivity(other, n_boot=5).value == pytest.approx(
        permutation_sensitivity(ev, n_boot=5).value
    )
    # the plug-in; the cross-fitted value depends on the random fold of each query
    assert positional_bias(other, n_boot=5).plugin == pytest.approx(
        positional_bias(ev, n_boot=5).plugin
    )
    np.testing.assert_array_equal(selection_rate_matrix(other), selection_rate_matrix(ev))


def test_position_distribution_and_selection_rates(biased: Evaluations) -> None:
    dist = position_distribution(biased, n_boot=200, rng=0)
    shares = np.array([e.value for e in dist])
    assert shares.sum() == pytest.approx(1.0)
    assert shares[0] > 0.3  # the favoured first position
    assert all(e.ci.low <= e.value <= e.ci.high for e in dist)
    s = selection_rate_matrix(biased)
    assert s.shape == (5, 5) and np.nanmin(s) >= 0 and np.nanmax(s) <= 1
    assert np.nanmean(s[:, 0]) > np.nanmean(s[:, 1:])  # column differences = position


def test_against_known_strong_bias_rate_k5() -> None:
    # Small version of the recovery table in docs/positional-statistics.md.
    ev, relevant = simulate_evaluations(300, k=5, n_perms=20, p_bias=0.5, rng=3, return_truth=True)
    truth = np.mean(0.5 * (5 - relevant.sum(axis=1)) / 5)
    res = strong_positional_bias(ev, n_boot=200, rng=4)
    assert res.value == pytest.approx(truth, abs=0.05)
    assert res.p_hat == pytest.approx(0.5, abs=0.08)
    null = strong_positional_bias(simulate_evaluations(300, k=5, rng=5), n_boot=10, rng=6)
    assert null.value < 0.01  # the noise floor at k = 5


def test_fixed_tau_is_the_spec_definition() -> None:
    ev = _constant_item(5, 3, 5, seed=1)
    res = strong_positional_bias(ev, tau=0.9, n_boot=10)
    assert res.tau == 0.9 and res.p_hat is None and res.value == 0.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tau": 0.0}, M.MSG_TAU.format(value=0.0)),
        ({"tau": "fixed"}, M.MSG_TAU.format(value="fixed")),
        ({"n_folds": 1}, M.MSG_FOLDS.format(value=1)),
        ({"n_boot": 0}, "`n_boot` must be an integer >= 1, got 0"),
        ({"confidence_level": 1.5}, "`confidence_level` must be in (0, 1), got 1.5"),
    ],
)
def test_spb_arguments_are_validated(biased: Evaluations, kwargs: dict, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        strong_positional_bias(biased, **kwargs)


def test_ps_kind_is_validated(biased: Evaluations) -> None:
    with pytest.raises(InputError, match=re.escape(M.MSG_KIND.format(value="mode"))):
        permutation_sensitivity(biased, kind="mode")  # type: ignore[arg-type]
