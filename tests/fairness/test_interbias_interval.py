"""RD, NRD and IB intervals: BCa over the stratified user bootstrap (decision "RD, NRD
and IB intervals are BCa"), its jackknife, its JSON record, and its edge cases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _fm_data import synthetic
from scipy import stats

from recaudit import InputError
from recaudit._stats import BCA_METHOD
from recaudit.fairness import (
    EvaluateOptions,
    FairnessEvaluation,
    evaluate,
    item_coverage,
    relative_difference,
)
from recaudit.fairness._exposure import _coverage_jackknife
from recaudit.fairness._interbias_interval import (
    INTER_BIAS_CI_RULE,
    interbias_jackknife,
)


def _rd(u: np.ndarray, p: np.ndarray, axis: int = -1) -> np.ndarray:
    mu, mp = np.mean(u, axis=axis), np.mean(p, axis=axis)
    return (mu - mp) / (mu + mp)


def test_jackknife_against_deleting_each_user() -> None:
    rng = np.random.default_rng(0)
    x = rng.exponential(size=(23, 3)) * (rng.random((23, 3)) < 0.5)
    group = np.r_[np.zeros(5), np.ones(10), np.full(7, 2), [3]].astype(int)  # 4 strata
    members = [np.flatnonzero(group == g) for g in range(4)]
    prot = group == 0
    ic = rng.uniform(0.1, 0.9, size=(23, 3))
    jack = interbias_jackknife(x, members, prot, ic)
    for g, idx in enumerate(members):
        if idx.size < 2:  # a group of one is not resampled: no jackknife values
            assert all(jack[name][g].shape == (0, 3) for name in ("rd", "nrd", "ib"))
            continue
        for row, i in enumerate(idx):
            keep = np.arange(23) != i
            rd = relative_difference(x[keep & ~prot].mean(axis=0), x[keep & prot].mean(axis=0))
            np.testing.assert_allclose(jack["rd"][g][row], rd, rtol=1e-12)
            np.testing.assert_allclose(jack["nrd"][g][row], (rd + 1) / 2, rtol=1e-12)
            np.testing.assert_allclose(jack["ib"][g][row], np.sqrt((rd + 1) / 2 * (1 - ic[i])),
                                       rtol=1e-12)


def test_coverage_jackknife_against_deleting_each_user() -> None:
    rng = np.random.default_rng(1)
    top = rng.integers(0, 30, size=(12, 6))
    top[3, 4:] = -1  # a short list
    top[5, 1] = top[5, 0]  # an item listed twice by one user counts once
    got = _coverage_jackknife(top, 40, (2, 6))
    for i in range(12):
        want = item_coverage(np.delete(top, i, axis=0), n_items=40, n=(2, 6))
        np.testing.assert_allclose(got[i], want, rtol=1e-12)


@pytest.fixture(scope="module")
def small_group() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """200 users, of whom 30 protected (``F``), with a gap."""
    recs, test, users = synthetic(n_users=200, n_items=60, gap=0.5, seed=7)
    users = users.assign(gender=np.where(np.arange(200) < 30, "F", "M"))
    return recs, test, users


def test_rd_interval_against_scipy_bootstrap_bca(small_group: tuple) -> None:
    recs, test, users = small_group
    r = evaluate(recs, test, users, attribute="gender", protected="F",
                 options=EvaluateOptions(n=[10], n_boot=6000, n_resamples=0), rng=3)
    pu = r.per_user
    xf = pu.loc[pu.group == "F", "mrr@10"].to_numpy()
    xm = pu.loc[pu.group == "M", "mrr@10"].to_numpy()
    ref = stats.bootstrap((xm, xf), _rd, method="BCa", n_resamples=6000, random_state=4,
                          vectorized=True).confidence_interval
    est = r.inter_bias["mrr@10"].rd
    assert est.value == pytest.approx(float(_rd(xm, xf)))
    assert est.ci.method == BCA_METHOD
    # two independent 6,000-resample draws: bounds agree to Monte-Carlo error (~0.01)
    assert est.ci.low == pytest.approx(ref.low, abs=0.03)
    assert est.ci.high == pytest.approx(ref.high, abs=0.03)


def test_bias_corrected_rd_by_hand(small_group: tuple) -> None:
    recs, test, users = small_group
    r = evaluate(recs, test, users, attribute="gender", protected="F",
                 options=EvaluateOptions(n=[10], n_boot=0, n_resamples=0), rng=0)
    pu = r.per_user
    xf = pu.loc[pu.group == "F", "mrr@10"].to_numpy()
    xm = pu.loc[pu.group == "M", "mrr@10"].to_numpy()
    rd = float(_rd(xm, xf))
    bias = (xf.size - 1) * (np.mean([_rd(xm, np.delete(xf, i)) for i in range(xf.size)]) - rd)
    bias += (xm.size - 1) * (np.mean([_rd(np.delete(xm, i), xf) for i in range(xm.size)]) - rd)
    ib = r.inter_bias["mrr@10"]
    assert ib.rd_bias_corrected == pytest.approx(rd - bias, abs=1e-12)
    assert ib.nrd_bias_corrected == pytest.approx((rd - bias + 1) / 2, abs=1e-12)
    assert bias > 0  # a small group's mean in the denominator: RD biased upward


def test_nrd_and_ib_intervals_are_rds_mapped(small_group: tuple) -> None:
    recs, test, users = small_group
    r = evaluate(recs, test, users, attribute="gender", protected="F", n_items=60,
                 options=EvaluateOptions(n=[5, 10], n_boot=500, n_resamples=0), rng=5)
    for key, ib in r.inter_bias.items():
        lo, hi = ib.rd.ci.low, ib.rd.ci.high
        # NRD is affine in RD: the same z0, the same acceleration, the mapped quantiles
        assert ib.nrd.ci.low == pytest.approx((lo + 1) / 2, abs=1e-12)
        assert ib.nrd.ci.high == pytest.approx((hi + 1) / 2, abs=1e-12)
        # IB (IC fixed) is monotone in RD: the same up to the jackknife's acceleration
        ic = r.item_coverage[ib.n].value
        assert ib.ib.ci.low == pytest.approx(np.sqrt((lo + 1) / 2 * (1 - ic)), abs=2e-3)
        assert ib.ib.ci.high == pytest.approx(np.sqrt((hi + 1) / 2 * (1 - ic)), abs=2e-3)
        assert ib.rd.ci.method == ib.nrd.ci.method == ib.ib.ci.method == BCA_METHOD, key


def test_resampled_coverage_moves_ib_only() -> None:
    # 400 items for 2,000 slots at @10: many items listed by one user, so IC varies
    recs, test, users = synthetic(n_users=200, n_items=400, gap=0.5, seed=8)
    opts = dict(n=[10], n_boot=400, n_resamples=0)
    fixed = evaluate(recs, test, users, attribute="gender", protected="F", n_items=400,
                     options=EvaluateOptions(**opts), rng=6)
    moving = evaluate(recs, test, users, attribute="gender", protected="F", n_items=400,
                      options=EvaluateOptions(**opts, resample_coverage=True), rng=6)
    a, b = fixed.inter_bias["ndcg@10"], moving.inter_bias["ndcg@10"]
    assert (a.rd.ci.low, a.rd.ci.high) == (b.rd.ci.low, b.rd.ci.high)
    assert (a.ib.ci.low, a.ib.ci.high) != (b.ib.ci.low, b.ib.ci.high)
    assert np.isfinite([b.ib.ci.low, b.ib.ci.high]).all() and b.ib.ci.low <= b.ib.ci.high


def test_protected_group_at_zero_and_tiny_groups() -> None:
    recs, test, users = synthetic(n_users=60, n_items=40, seed=2)
    users = users.assign(gender=np.where(np.arange(60) < 3, "F", "M"))
    # the three protected users' test items never in their lists: every metric 0, RD = 1
    f_users = users.user_id[:3]
    far = test.user_id.isin(f_users)
    test = test.assign(item_id=np.where(far, test.item_id + 1000, test.item_id))
    r = evaluate(recs, test, users, attribute="gender", protected="F",
                 options=EvaluateOptions(n=[5], n_boot=200, n_resamples=0, min_group_size=1),
                 rng=0)
    ib = r.inter_bias["ndcg@5"]
    assert ib.rd.value == 1.0
    assert (ib.rd.ci.low, ib.rd.ci.high) == (1.0, 1.0)  # no resample can move it
    assert (ib.nrd.ci.low, ib.nrd.ci.high) == (1.0, 1.0)


def test_undefined_replicates_are_dropped() -> None:
    """Resamples in which both group means are 0 are left out of the BCa interval."""
    recs, test, users = synthetic(n_users=80, n_items=40, seed=3)
    users = users.assign(gender=np.where(np.arange(80) < 40, "F", "M"))
    # one user in each group with a hit at rank 1, everyone else none at @1
    keep = recs["rank"] > 1
    first = recs.loc[~keep].set_index("user_id")["item_id"]
    test = test[~test.apply(lambda t: first.get(t.user_id) == t.item_id, axis=1)]
    one = pd.DataFrame({"user_id": ["u0", "u1"], "item_id": [first["u0"], first["u1"]]})
    test = pd.concat([test, one], ignore_index=True)
    r = evaluate(recs, test, users, attribute="gender", protected="F",
                 options=EvaluateOptions(n=[1], n_boot=300, n_resamples=0, min_group_size=1),
                 rng=1)
    ib = r.inter_bias["hit@1"]
    assert ib.n_undefined_replicates > 0
    assert np.isfinite([ib.rd.ci.low, ib.rd.ci.high]).all()
    assert -1.0 <= ib.rd.ci.low <= ib.rd.ci.high <= 1.0


def test_json_records_the_rule(small_group: tuple) -> None:
    recs, test, users = small_group
    r = evaluate(recs, test, users, attribute="gender", protected="F",
                 options=EvaluateOptions(n=[5], n_boot=50, n_resamples=0), rng=0)
    d = r.to_dict()
    assert r.inter_bias_ci_rule == INTER_BIAS_CI_RULE == d["settings"]["inter_bias_ci_rule"]
    back = FairnessEvaluation.from_dict(d)
    assert back.inter_bias_ci_rule == "bca"
    assert back.inter_bias["ndcg@5"].rd.ci.method == BCA_METHOD
    assert back.groups["F"].metrics["ndcg@5"].ci.method == "percentile bootstrap"
    entry = d["rd"]["ndcg@5"]
    assert entry["value_bias_corrected"] == r.inter_bias["ndcg@5"].rd_bias_corrected
    assert back.inter_bias["ndcg@5"].ib_bias_corrected == r.inter_bias["ndcg@5"].ib_bias_corrected
    # a JSON written before the rule was recorded used percentile intervals
    del d["settings"]["inter_bias_ci_rule"]
    for section in ("rd", "nrd", "ib"):
        del d[section]["ndcg@5"]["value_bias_corrected"]
    old = FairnessEvaluation.from_dict(d)
    assert old.inter_bias_ci_rule == "percentile"
    assert old.inter_bias["ndcg@5"].rd.ci.method == "percentile bootstrap"
    assert np.isnan(old.inter_bias["ndcg@5"].rd_bias_corrected)
    d["settings"]["inter_bias_ci_rule"] = "studentized"
    with pytest.raises(InputError, match="`inter_bias_ci_rule` must be one of percentile, "
                       "bca, got 'studentized'"):
        FairnessEvaluation.from_dict(d)
