"""evaluate(): group means, RD/NRD/IB with CIs, permutation test, groups, bad input."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
import pytest
from _fm_data import ml100k, popularity_baseline, synthetic  # noqa: F401  (fixture)
from scipy import stats

from recaudit import InputError
from recaudit.fairness import UNDEFINED_RD_REASON, EvaluateOptions, FairnessEvaluation, evaluate
from recaudit.fairness import _inputs as mod
from recaudit.fairness import _metrics as metrics_mod
from recaudit.fairness import _options as options_mod
from recaudit.fairness import _results as results_mod


def _escape(message: str) -> str:
    return re.escape(message.split("{")[0])


@pytest.fixture(scope="module")
def result() -> FairnessEvaluation:
    recs, test, users = synthetic(n_users=150, gap=0.6, seed=1)
    return evaluate(
        recs,
        test,
        users,
        attribute="gender",
        protected="F",
        n_items=80,
        options=EvaluateOptions(n=[5, 10], n_boot=400, n_resamples=399),
        rng=0,
    )


def test_point_estimates_match_per_user_table(result: FairnessEvaluation) -> None:
    pu = result.per_user
    for key in ("ndcg@5", "recall@10", "mrr@10"):
        f = pu.loc[pu.group == "F", key].mean()
        m = pu.loc[pu.group == "M", key].mean()
        assert result.groups["F"].metrics[key].value == pytest.approx(f)
        assert result.overall[key].value == pytest.approx(pu[key].mean())
        ib = result.inter_bias[key]
        assert ib.rd.value == pytest.approx((m - f) / (m + f))
        assert ib.nrd.value == pytest.approx(((m - f) / (m + f) + 1) / 2)
        cut = int(key.split("@")[1])
        ic = result.item_coverage[cut].value
        assert ib.ib.value == pytest.approx(np.sqrt(ib.nrd.value * (1 - ic)))


def test_cis_bracket_the_estimates(result: FairnessEvaluation) -> None:
    for ib in result.inter_bias.values():
        for est in (ib.rd, ib.nrd, ib.ib):
            assert est.ci.low <= est.value <= est.ci.high
    for g in result.groups.values():
        for est in g.metrics.values():
            assert est.ci.low <= est.value <= est.ci.high


def test_gap_is_detected(result: FairnessEvaluation) -> None:
    ib = result.inter_bias["hit@5"]
    assert ib.rd.value > 0 and ib.pvalue < 0.01 and ib.pvalue_holm >= ib.pvalue
    assert ib.pvalue >= 1 / 400  # +1 correction


def test_group_bootstrap_against_scipy() -> None:
    recs, test, users = synthetic(n_users=200, seed=4)
    r = evaluate(
        recs,
        test,
        users,
        attribute="gender",
        protected="F",
        options=EvaluateOptions(n=[10], n_boot=3000, n_resamples=0),
        rng=1,
    )
    x = r.per_user.loc[r.per_user.group == "F", "ndcg@10"].to_numpy()
    ref = stats.bootstrap(
        (x,), np.mean, method="percentile", n_resamples=3000, random_state=2
    ).confidence_interval
    ci = r.groups["F"].metrics["ndcg@10"].ci
    assert ci.low == pytest.approx(ref.low, abs=0.01)
    assert ci.high == pytest.approx(ref.high, abs=0.01)


def test_permutation_pvalue_is_calibrated_under_the_null() -> None:
    # no gap: p-values of 20 independent data sets should not pile up near 0
    ps = []
    for seed in range(20):
        recs, test, users = synthetic(n_users=60, seed=100 + seed)
        r = evaluate(
            recs,
            test,
            users,
            attribute="gender",
            protected="F",
            options=EvaluateOptions(n=[10], n_boot=0, n_resamples=199),
            rng=seed,
        )
        ps.append(r.inter_bias["hit@10"].pvalue)
    assert np.mean(np.array(ps) < 0.05) <= 0.2
    assert stats.kstest(ps, "uniform").pvalue > 0.001


def test_seeded_and_reproducible() -> None:
    recs, test, users = synthetic(n_users=60)
    options = EvaluateOptions(n=[5], n_boot=50, n_resamples=49)
    kw = dict(attribute="gender", protected="F", options=options)
    a = evaluate(recs, test, users, rng=3, **kw).to_dict()  # type: ignore[arg-type]
    b = evaluate(recs, test, users, rng=np.random.default_rng(3), **kw).to_dict()  # type: ignore[arg-type]
    assert str(a) == str(b)  # nan-aware equality of the whole report


def test_inputs_not_mutated() -> None:
    recs, test, users = synthetic(n_users=60)
    copies = [t.copy() for t in (recs, test, users)]
    evaluate(recs, test, users, attribute="gender", protected="F",
             options=EvaluateOptions(n_boot=10, n_resamples=9), rng=0)
    for before, after in zip(copies, (recs, test, users), strict=True):
        pd.testing.assert_frame_equal(before, after)


def test_undefined_rd_is_flagged() -> None:
    recs, test, users = synthetic(n_users=60)
    far = test.assign(item_id=test.item_id + 1000)  # nothing relevant is ever recommended
    r = evaluate(
        recs, far, users, attribute="gender", protected="F",
        options=EvaluateOptions(n=[5], n_boot=20, n_resamples=19),
        rng=0,
    )
    ib = r.inter_bias["ndcg@5"]
    assert np.isnan(ib.rd.value) and np.isnan(ib.nrd.value) and np.isnan(ib.ib.value)
    assert ib.undefined_reason == UNDEFINED_RD_REASON and ib.n_undefined_replicates == 20
    assert r.to_dict()["rd"]["ndcg@5"]["undefined"] == UNDEFINED_RD_REASON


def test_intersections_and_more_than_two_groups() -> None:
    recs, test, users = synthetic(n_users=200, seed=5)
    r = evaluate(
        recs,
        test,
        users,
        attribute=["gender", "age"],
        protected=("F", "young"),
        options=EvaluateOptions(n=[10], n_boot=50, n_resamples=49, min_group_size=5),
        rng=0,
    )
    assert r.protected == "F & young"
    assert set(r.groups) == {"F & young", "F & old", "M & young", "M & old"}
    assert list(r.groups)[0] == "F & young"
    pu = r.per_user
    pg = pu.loc[pu.group == "F & young", "ndcg@10"].mean()
    ug = pu.loc[pu.group != "F & young", "ndcg@10"].mean()  # all others pooled
    assert r.inter_bias["ndcg@10"].unprotected_mean == pytest.approx(ug)
    assert r.inter_bias["ndcg@10"].rd.value == pytest.approx((ug - pg) / (ug + pg))
    same = evaluate(
        recs,
        test,
        users,
        attribute=["gender", "age"],
        protected="F & young",
        options=EvaluateOptions(n=[10], n_boot=0, n_resamples=0, min_group_size=5),
    )
    assert same.protected == r.protected


def test_swapping_the_protected_group_flips_rd() -> None:
    recs, test, users = synthetic(n_users=90, seed=2)
    kw = dict(attribute="gender", options=EvaluateOptions(n=[10], n_boot=0, n_resamples=0))
    f = evaluate(recs, test, users, protected="F", **kw)  # type: ignore[arg-type]
    m = evaluate(recs, test, users, protected="M", **kw)  # type: ignore[arg-type]
    assert f.inter_bias["ndcg@10"].rd.value == pytest.approx(-m.inter_bias["ndcg@10"].rd.value)


def test_exclusions_are_counted() -> None:
    recs, test, users = synthetic(n_users=60)
    extra = pd.concat(
        [users, pd.DataFrame({"user_id": ["ghost"], "gender": ["F"], "age": ["old"]})]
    )
    no_list = recs[recs.user_id != "u1"]
    r = evaluate(no_list, test, extra, attribute="gender", protected="F",
                 options=EvaluateOptions(n_boot=0, n_resamples=0))
    assert r.n_users == 60 and r.n_users_excluded == 1 and r.n_users_without_recs == 1
    assert r.per_user.set_index("user_id").loc["u1", "hit@15"] == 0.0


def test_coverage_resampling_is_biased_low_and_optional() -> None:
    recs, test, users = synthetic(n_users=60)
    kw: dict[str, Any] = dict(attribute="gender", protected="F", n_items=200, rng=0)
    opts: dict[str, Any] = dict(n=[5], n_resamples=0)
    fixed = evaluate(recs, test, users, options=EvaluateOptions(n_boot=200, **opts), **kw)
    assert np.isnan(fixed.item_coverage[5].ci.low)
    assert fixed.item_coverage[5].ci.method == results_mod.COVERAGE_FIXED
    resampled = evaluate(
        recs, test, users, options=EvaluateOptions(n_boot=200, resample_coverage=True, **opts), **kw
    )
    ci = resampled.item_coverage[5].ci
    assert ci.high <= resampled.item_coverage[5].value  # a resample never covers more


def test_popularity_figures() -> None:
    recs, test, users = synthetic(n_users=60)
    train = pd.DataFrame({"user_id": "x", "item_id": np.repeat(np.arange(60), np.arange(60))})
    r = evaluate(
        recs,
        test,
        users,
        attribute="gender",
        protected="F",
        train=train,
        options=EvaluateOptions(n=[5], n_boot=0, n_resamples=0),
    )
    top5 = recs[recs["rank"] <= 5]
    assert r.avg_popularity is not None and r.avg_popularity_normalized is not None
    assert r.avg_popularity[5] == pytest.approx(top5.item_id.mean())  # popularity(i) = i
    assert r.avg_popularity_normalized[5] == pytest.approx(top5.item_id.mean() / 59)
    assert r.popularity is not None and r.popularity.n_interactions == train.shape[0]
    d = r.to_dict()
    assert {"avg_popularity@5", "gini_exposure@5", "long_tail_share@5", "popularity"} <= set(d)


def test_to_dict_and_dataframe_shapes(result: FairnessEvaluation) -> None:
    d = result.to_dict()
    assert d["groups"]["F"]["n_users"] == 50
    assert set(d["groups"]["F"]["ndcg@5"]) == {"value", "ci_low", "ci_high"}
    assert {"value", "ci_low", "ci_high", "pvalue", "pvalue_holm"} <= set(d["rd"]["mrr@10"])
    assert {"value", "ci_low", "ci_high"} <= set(d["ib"]["precision@5"])
    assert "item_coverage@10" in d and "n_users_excluded" in d and "overall" in d
    df = result.to_dataframe()
    assert set(df.quantity) >= {"mean", "overall", "rd", "nrd", "ib", "item_coverage"}
    assert len(df[df.quantity == "rd"]) == 10


def test_ml100k_popularity_baseline(ml100k: tuple[pd.DataFrame, pd.DataFrame]) -> None:  # noqa: F811
    inter, users = ml100k
    train, test, recs = popularity_baseline(inter, seed=0)
    r = evaluate(
        recs,
        test,
        users,
        attribute="gender",
        protected="F",
        n_items=1682,
        train=train,
        options=EvaluateOptions(n=[5, 10, 15], n_boot=200, n_resamples=199),
        rng=0,
    )
    assert r.n_users == 943 and r.n_users_excluded == 0
    assert r.groups["F"].n_users == 273 and r.groups["M"].n_users == 670
    assert 0 < r.item_coverage[10].value < 0.1  # a popularity baseline covers little
    ib = r.inter_bias["ndcg@10"]
    assert 0.5 < ib.ib.value < 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda r, t, u: (r, t, u.assign(gender=u.gender.where(u.index != 3))),
            mod.ATTRIBUTE_NAN_MSG,
        ),
        (lambda r, t, u: (r, t, u.iloc[1:]), metrics_mod.UNKNOWN_USER_MSG),
        (lambda r, t, u: (r, t, pd.concat([u, u.iloc[:1]])), mod.USERS_DUPLICATE_MSG),
        (lambda r, t, u: (r, t, u.assign(gender="M")), mod.PROTECTED_ABSENT_MSG),
    ],
)
def test_bad_users(change: object, message: str) -> None:
    recs, test, users = synthetic(n_users=60)
    r, t, u = change(recs, test, users)  # type: ignore[operator]
    with pytest.raises(InputError, match=_escape(message)):
        evaluate(r, t, u, attribute="gender", protected="F",
                 options=EvaluateOptions(n_boot=0, n_resamples=0))


def test_unknown_user_hints_at_dtype_mismatch() -> None:
    recs, test, users = synthetic(n_users=60)
    numeric = users.assign(user_id=range(60))
    # pandas 2 stores the string ids as `object`, pandas 3 as its `str` dtype
    with pytest.raises(InputError,
                       match=r"user_id 'u0' \(row 1\).*dtypes differ: recs (object|str)"):
        evaluate(recs, test, numeric, attribute="gender", protected="F")


def test_nan_attribute_names_row_and_column() -> None:
    recs, test, users = synthetic(n_users=60)
    users = users.assign(gender=users.gender.where(users.index != 3))
    with pytest.raises(InputError, match=r"column `gender` is missing for user_id 'u3' \(row 4\)"):
        evaluate(recs, test, users, attribute="gender", protected="F")


def test_small_group_names_group_and_size() -> None:
    recs, test, users = synthetic(n_users=60)
    with pytest.raises(
        InputError, match=r"group 'F' has 20 evaluated users, fewer than `min_group_size` = 25"
    ):
        evaluate(recs, test, users, attribute="gender", protected="F",
                 options=EvaluateOptions(min_group_size=25))


def test_catalog_checks() -> None:
    recs, test, users = synthetic(n_users=60, n_items=60)
    items = pd.DataFrame({"item_id": np.arange(50)})
    with pytest.raises(
        InputError, match=r"item_id \d+ \(row \d+\) that is not in the item catalog"
    ):
        evaluate(recs, test, users, attribute="gender", protected="F", items=items)
    with pytest.raises(InputError, match=_escape(mod.CATALOG_BOTH_MSG)):
        evaluate(recs, test, users, attribute="gender", protected="F", items=items, n_items=9)
    with pytest.raises(InputError, match=_escape(mod.N_ITEMS_SMALL_MSG)):
        evaluate(recs, test, users, attribute="gender", protected="F", n_items=10)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_boot": -1}, options_mod.POSITIVE_INT_MSG),
        ({"min_group_size": 0}, options_mod.POSITIVE_INT_MSG),
        ({"confidence_level": 1.5}, options_mod.CONFIDENCE_MSG),
        ({"attribute": []}, mod.ATTRIBUTE_MSG),
        ({"attribute": ["gender", "age"], "protected": "F"}, mod.PROTECTED_ARITY_MSG),
    ],
)
def test_bad_parameters(kwargs: dict[str, object], message: str) -> None:
    recs, test, users = synthetic(n_users=60)
    args: dict[str, object] = {"attribute": "gender", "protected": "F"} | kwargs
    fields = {k: args.pop(k) for k in list(args) if k in EvaluateOptions.__dataclass_fields__}
    with pytest.raises(InputError, match=_escape(message)):
        evaluate(recs, test, users, options=EvaluateOptions(**fields), **args)  # type: ignore[arg-type]
