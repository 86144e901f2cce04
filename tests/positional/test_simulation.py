"""The batched simulation path of power_study against the per-data-set functions."""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy import stats

from recaudit import InputError
from recaudit.positional import (
    _icm,
    _simulation,
    _unbp,
    pob_icm,
    pob_unbp,
    power_study,
    query_position_shares,
    simulate_evaluations,
)


def _summaries(item: np.ndarray, position: np.ndarray, label: np.ndarray, k: int, perms: int):  # type: ignore[no-untyped-def]
    """Joint (item, position) counts and distinct items / permutations per query."""
    joint = np.bincount((item * k + position).ravel(), minlength=k * k)
    q_items = item.reshape(-1, perms)
    q_labels = label.reshape(-1, perms)
    distinct_items = np.array([np.unique(r).size for r in q_items])
    distinct_labels = np.array([np.unique(r).size for r in q_labels])
    return joint, np.bincount(distinct_items, minlength=k + 1), np.bincount(distinct_labels)


def test_batch_generator_has_the_law_of_simulate_evaluations() -> None:
    k, n_q, perms, p_bias, reps = 4, 20, 6, 0.3, 300
    item, position, label = _simulation._simulate_batch(
        reps, n_q, k, perms, p_bias, np.random.default_rng(1)
    )
    rng = np.random.default_rng(2)
    evs = [
        simulate_evaluations(n_q, k=k, n_perms=perms, p_bias=p_bias, rng=rng) for _ in range(reps)
    ]
    ref = (
        np.stack([e.item for e in evs]),
        np.stack([e.position for e in evs]),
        np.stack([_icm._permutation_labels(e.orders)[0] for e in evs]),
    )
    for ours, theirs in zip(
        _summaries(*ref, k, perms), _summaries(item, position, label, k, perms), strict=False
    ):
        size = max(ours.size, theirs.size)
        table = np.array(
            [np.pad(ours, (0, size - ours.size)), np.pad(theirs, (0, size - theirs.size))]
        )
        table = table[:, table.sum(axis=0) > 0]
        assert stats.chi2_contingency(table).pvalue > 0.001


def test_batched_unbp_and_icm_decisions_match_the_functions() -> None:
    k, n_q, perms = 5, 15, 20
    item, position, label = _simulation._simulate_batch(
        40, n_q, k, perms, 0.1, np.random.default_rng(3)
    )
    shares = _simulation._shares(position, n_q, k)
    batched = _unbp._reject_many(shares, 0.05)
    for r in range(item.shape[0]):
        orders = np.tile(np.arange(k), (item.shape[1], 1))  # labels stand in for orders
        ev = simulate_evaluations(n_q, k=k, n_perms=perms, rng=0)
        ev = type(ev)(k, ev.query_ids, ev.query, orders, position[r], item[r], ev.rows)
        np.testing.assert_array_equal(query_position_shares(ev), shares[r])
        assert pob_unbp(ev).reject == batched[r]
    stat, null = _simulation._icm_batch(
        item[:3], label[:3], n_q, k, 99, np.arange(1, 5, dtype=np.uint64)
    )
    for r in range(3):
        ref = _icm._chi2_statistic(
            item[r], np.unique(label[r], return_inverse=True)[1], k, np.unique(label[r]).size
        )
        assert stat[r] == ref and null[r].shape == (99,)


def test_power_study_is_reproducible_and_reports_progress() -> None:
    done: list[int] = []
    kw = dict(k=[4, 21], queries=[10], perms=4, p_bias=[0.0, 0.5], reps=7, n_resamples=19)
    a = power_study(**kw, rng=5, progress=done.append)  # type: ignore[arg-type]
    b = power_study(**kw, rng=np.random.default_rng(5))  # type: ignore[arg-type]
    assert a == b and sum(done) == 2 * 2 * 7
    assert {r.k for r in a.rows} == {4, 21}


def test_power_study_icm_matches_pob_icm_in_law() -> None:
    # Rejection rates of the batched ICM and of pob_icm on simulate_evaluations data.
    rate = (
        power_study(
            k=[4],
            queries=[12],
            perms=6,
            p_bias=[0.2],
            reps=300,
            n_resamples=39,
            tests=["pob_icm"],
            rng=8,
        )
        .rows[0]
        .rejection_rate
    )
    rng = np.random.default_rng(9)
    ref = np.mean(
        [
            pob_icm(
                simulate_evaluations(12, k=4, n_perms=6, p_bias=0.2, rng=rng),
                n_resamples=39,
                rng=rng,
            ).pvalue
            <= 0.05
            for _ in range(300)
        ]
    )
    # two binomial(300) proportions: |difference| < 4 standard errors
    se = np.sqrt(2 * 0.25 / 300)
    assert abs(rate - ref) < 4 * se


def test_power_study_unbp_needs_two_queries() -> None:
    with pytest.raises(InputError, match=re.escape(_unbp.MSG_TWO_QUERIES.format(n=1))):
        power_study(k=[3], queries=[1, 5], perms=3, reps=2)
    rows = power_study(k=[3], queries=[1], perms=3, reps=2, tests=["pob_icm"], n_resamples=19).rows
    assert len(rows) == 3


def test_power_rows_read_their_json_back_strictly():
    from recaudit.exceptions import InputError
    from recaudit.positional import PowerRow

    row = PowerRow("pob_unbp", 5, 100, 20, 0.05, 200, 0.61, 0.54, 0.67)
    assert PowerRow.from_dict(row.to_dict()) == row
    assert row.rejection.value == 0.61 and row.rejection.ci.high == 0.67
    for key, bad in (("rejection_rate", "0.61"), ("k", 5.5), ("reps", True)):
        with pytest.raises(InputError, match=key):
            PowerRow.from_dict({**row.to_dict(), key: bad})
