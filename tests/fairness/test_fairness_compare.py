"""Paired model comparisons on the inter-bias figures (`compare_models`): its figures are
`evaluate`'s, its tests are ranx's / scipy's / statsmodels' on the same per-user values,
the permutation p is the exact one within Monte-Carlo error, and the result round-trips."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from _fm_data import synthetic
from scipy import stats
from statsmodels.stats.multitest import multipletests

from recaudit import InputError
from recaudit._io import to_jsonable
from recaudit.fairness import (
    EvaluateOptions,
    FairnessComparison,
    compare_models,
    evaluate,
    per_user_metrics,
)
from recaudit.fairness._compare import permutations_needed

CUTS = (5, 10)


def _models(seed: int = 0) -> tuple[dict[str, pd.DataFrame], pd.DataFrame, pd.DataFrame]:
    """Three models on one test: A, A's lists reordered (B), other lists with a gap (C)."""
    recs, test, users = synthetic(n_users=150, gap=0.0, seed=seed)
    rng = np.random.default_rng(seed + 1)
    reordered = recs.assign(rank=recs.groupby("user_id")["rank"].transform(
        lambda r: rng.permutation(r.to_numpy())))
    other, _, _ = synthetic(n_users=150, gap=0.6, seed=seed + 7)
    return {"A": recs, "B": reordered, "C": other}, test, users


def _compare(recs, test, users, **kw) -> FairnessComparison:
    options = kw.pop("options", EvaluateOptions(n=CUTS, n_boot=300, n_resamples=299))
    return compare_models(recs, test, users, attribute="gender", protected="F",
                          options=options, rng=kw.pop("rng", 0), **kw)


def _row(result: FairnessComparison, a: str, b: str, metric: str, group: str = ""):
    return next(r for r in result.rows
                if (r.a, r.b, r.metric, r.group) == (a, b, metric, group))


def test_the_figures_are_evaluate_s() -> None:
    recs, test, users = _models()
    result = _compare(recs, test, users)
    n_items = len(pd.unique(pd.concat([t.item_id for t in [*recs.values(), test]])))
    for name in recs:
        ev = evaluate(recs[name], test, users, attribute="gender", protected="F",
                      n_items=n_items, options=EvaluateOptions(n=CUTS, n_boot=0,
                                                                n_resamples=0))
        for a, b in itertools.combinations(recs, 2):
            if name not in (a, b):
                continue
            side = "value_a" if name == a else "value_b"
            for key in ("ndcg@10", "precision@5", "mrr@10"):
                assert getattr(_row(result, a, b, key), side) == pytest.approx(
                    ev.overall[key].value, rel=1e-12)
                assert getattr(_row(result, a, b, key, "F"), side) == pytest.approx(
                    ev.groups["F"].metrics[key].value, rel=1e-12)
                ib = ev.inter_bias[key]
                for gap in ("rd", "nrd", "ib"):
                    assert getattr(_row(result, a, b, f"{gap}_{key}"), side) == pytest.approx(
                        getattr(ib, gap).value, rel=1e-12)


def test_every_pair_metric_and_group_has_a_row() -> None:
    recs, test, users = _models()
    result = _compare(recs, test, users)
    per_key = 1 + 2 + 3  # overall, F, M, rd, nrd, ib
    assert len(result.rows) == 3 * 5 * len(CUTS) * per_key
    assert {(r.a, r.b) for r in result.rows} == {("A", "B"), ("A", "C"), ("B", "C")}
    assert result.n_users == 150 and result.protected == "F"


def test_a_model_against_itself_differs_by_nothing() -> None:
    recs, test, users = _models()
    result = _compare({"A": recs["A"], "same": recs["A"]}, test, users, stat_test="t")
    for r in result.rows:
        if math.isfinite(r.value_a):
            assert r.difference == 0 and r.pvalue == 1.0 and r.pvalue_adjusted == 1.0, r
            assert r.ci_low == 0 and r.ci_high == 0, r  # IB: every D_(-u) is 0 too


def test_paired_t_is_ranx_s() -> None:
    """The t test of each metric equals ranx's `compare(stat_test="student")` on the same
    lists (ranx computes its own per-user metrics)."""
    ranx = pytest.importorskip("ranx")
    recs, test, users = _models()
    result = _compare({"A": recs["A"], "C": recs["C"]}, test, users, stat_test="t")
    qrels = ranx.Qrels({u: {str(i): 1 for i in g.item_id} for u, g in test.groupby("user_id")})
    runs = [ranx.Run({u: {str(i): float(100 - r) for i, r in zip(g.item_id, g["rank"],
                                                                  strict=True)}
                      for u, g in recs[name].groupby("user_id")}, name=name)
            for name in ("A", "C")]
    names = {"ndcg": "ndcg", "precision": "precision", "recall": "recall", "mrr": "mrr"}
    for metric, cut in itertools.product(names, CUTS):
        report = ranx.compare(qrels, runs, [f"{names[metric]}@{cut}"], stat_test="student",
                              make_comparable=True, rounding_digits=16).to_dict()
        theirs = float(report["A"]["comparisons"]["C"][f"{names[metric]}@{cut}"])
        assert _row(result, "A", "C", f"{metric}@{cut}").pvalue == pytest.approx(theirs,
                                                                                   rel=1e-9)


@pytest.mark.parametrize("test_name", ["t", "wilcoxon"])
def test_group_rows_use_the_group_s_users(test_name: str) -> None:
    recs, test, users = _models()
    result = _compare({"A": recs["A"], "C": recs["C"]}, test, users, stat_test=test_name)
    per_user = {m: per_user_metrics(recs[m], test, n=CUTS).set_index("user_id")
                for m in ("A", "C")}
    women = users.loc[users.gender == "F", "user_id"]
    xa, xc = (per_user[m].reindex(women).fillna(0.0)["ndcg@10"].to_numpy() for m in "AC")
    ref = (stats.ttest_rel(xa, xc) if test_name == "t" else stats.wilcoxon(xa - xc)).pvalue
    row = _row(result, "A", "C", "ndcg@10", "F")
    assert row.pvalue == pytest.approx(ref, rel=1e-9) and row.n_users == women.size
    assert row.test == test_name and _row(result, "A", "C", "rd_ndcg@10").test == "permutation"


def test_the_permutation_p_is_the_exact_one() -> None:
    """On 12 users the 4,096 sign patterns can be enumerated: the Monte-Carlo p of the
    mean difference is within 3 standard errors of the exact p."""
    recs, test, users = synthetic(n_users=12, n_items=30, length=10, seed=5)
    other, _, _ = synthetic(n_users=12, n_items=30, length=10, seed=6, gap=0.8)
    options = EvaluateOptions(n=(10,), n_boot=50, n_resamples=20000, min_group_size=1)
    result = _compare({"A": recs, "B": other}, test, users, options=options)
    xa = per_user_metrics(recs, test, n=(10,)).set_index("user_id")["ndcg@10"]
    xb = per_user_metrics(other, test, n=(10,)).set_index("user_id")["ndcg@10"]
    d = (xa - xb.reindex(xa.index)).to_numpy()
    signs = np.array(list(itertools.product([1.0, -1.0], repeat=d.size)))
    exact = float(np.mean(np.abs(signs @ d) >= abs(d.sum()) - 1e-12))
    got = _row(result, "A", "B", "ndcg@10").pvalue
    assert abs(got - exact) <= 3 * math.sqrt(exact * (1 - exact) / 20000) + 1e-4


def _ib(lists: pd.DataFrame, test: pd.DataFrame, users: pd.DataFrame, n_items: int) -> float:
    """IB@10 of NDCG written out from its definition: NRD of the group means over the
    users with a test item, IC the share of the catalog in any list."""
    x = per_user_metrics(lists, test, n=(10,)).set_index("user_id")["ndcg@10"]
    tested = users[users.user_id.isin(test.user_id)].set_index("user_id")
    x = x.reindex(tested.index).fillna(0.0)
    pg, ug = x[tested.gender == "F"].mean(), x[tested.gender == "M"].mean()
    nrd = ((ug - pg) / (ug + pg) + 1) / 2
    ic = lists.loc[lists["rank"] <= 10, "item_id"].nunique() / n_items
    return math.sqrt(nrd * (1 - ic))


def test_the_ib_permutation_p_is_the_exact_one() -> None:
    """IB's test swaps whole lists: on 12 users the 4,096 swap patterns can be
    enumerated (IC and NRD recomputed from the swapped lists by the definitions); the
    Monte-Carlo p is within 3 standard errors of the exact p, and the values are
    `evaluate`'s."""
    recs, test, users = synthetic(n_users=12, n_items=200, length=10, seed=5)
    other, _, _ = synthetic(n_users=12, n_items=200, length=10, seed=8, gap=0.8)
    other = other[other["rank"] <= 6]  # shorter lists: a coverage difference as well
    n_items = 200
    options = EvaluateOptions(n=(10,), n_boot=50, n_resamples=20000, min_group_size=1)
    result = _compare({"A": recs, "B": other}, test, users, options=options, n_items=n_items)
    row = _row(result, "A", "B", "ib_ndcg@10")
    observed = _ib(recs, test, users, n_items) - _ib(other, test, users, n_items)
    assert row.difference == pytest.approx(observed, rel=1e-12)
    assert row.test == "permutation"
    by_user = {u: (recs[recs.user_id == u], other[other.user_id == u]) for u in users.user_id}
    null = []
    for pattern in itertools.product([False, True], repeat=len(by_user)):
        a = pd.concat([pair[s] for pair, s in zip(by_user.values(), pattern, strict=True)])
        b = pd.concat([pair[not s] for pair, s in zip(by_user.values(), pattern, strict=True)])
        null.append(_ib(a, test, users, n_items) - _ib(b, test, users, n_items))
    exact = float(np.mean(np.abs(null) >= abs(observed) - 1e-12))
    assert 0.01 < exact < 0.99  # a case where the test has something to say
    assert abs(row.pvalue - exact) <= 3 * math.sqrt(exact * (1 - exact) / 20000) + 1e-4


def test_identical_models_rarely_differ_in_ib() -> None:
    """Two recommenders drawn from one model: their coverages differ by chance, yet the
    IB test (whole lists swapped) rejects at about its level (the test holding coverage
    fixed rejected 41 % of such rows: docs/validation-fairness.md)."""
    rejected = []
    for seed in range(40):
        recs, test, users = synthetic(n_users=60, n_items=400, length=10, seed=seed)
        twin, _, _ = synthetic(n_users=60, n_items=400, length=10, seed=1000 + seed)
        options = EvaluateOptions(n=(10,), n_boot=20, n_resamples=199, min_group_size=5)
        result = _compare({"A": recs, "B": twin}, test, users, options=options,
                          adjust="none", n_items=400, rng=seed)
        rejected.append(_row(result, "A", "B", "ib_hit@10").pvalue <= 0.05)
    assert np.mean(rejected) <= 0.15  # 0.05 +- 3 s.e. at 40 data sets


@pytest.mark.parametrize(("adjust", "theirs"), [("holm", "holm"), ("bh", "fdr_bh")])
def test_each_family_is_one_kind_of_row(adjust: str, theirs: str) -> None:
    """A family: the rows of one kind (mean, a group's mean, rd, nrd) over every pair,
    metric and cut-off; each adjusted as statsmodels does, its intervals at its level."""
    recs, test, users = _models()
    result = _compare(recs, test, users, adjust=adjust)

    def kind(r) -> str:
        gap = r.metric.split("_", 1)[0]
        return gap if gap in ("rd", "nrd", "ib") else r.group or "mean"

    families = {kind(r) for r in result.rows}
    assert families == {"mean", "F", "M", "rd", "nrd", "ib"}
    for family in families:
        rows = [r for r in result.rows if kind(r) == family]
        p = np.array([r.pvalue for r in rows])
        ok = np.isfinite(p)
        assert ok.sum() == 3 * 5 * len(CUTS)
        got = np.array([r.pvalue_adjusted for r in rows])[ok]
        np.testing.assert_allclose(got, multipletests(p[ok], method=theirs)[1], rtol=1e-12)
        if adjust == "holm":
            assert all(r.adjusted_level == pytest.approx(1 - 0.05 / ok.sum()) for r in rows)
            wide = [r for r in rows if math.isfinite(r.difference) and r.ci_high > r.ci_low]
            assert all(r.ci_low_adjusted <= r.ci_low and r.ci_high_adjusted >= r.ci_high
                       for r in wide)


def test_the_permutations_are_enough_for_the_family() -> None:
    """30 rows per family (3 pairs x 5 metrics x 2 cut-offs): Holm needs 1/(B+1) <=
    0.05/30, so the 299 asked become 599, and a clear difference passes the family."""
    recs, test, users = _models()
    result = _compare(recs, test, users)
    assert permutations_needed(3, 10, 0.05) == 599 and result.n_resamples == 599
    assert permutations_needed(11, 15, 0.05) == 16_499
    assert _compare(recs, test, users, adjust="none").n_resamples == 299
    oracle = pd.concat([test.assign(rank=test.groupby("user_id").cumcount() + 1),
                        recs["A"].assign(rank=recs["A"]["rank"] + 100)])
    oracle = oracle.drop_duplicates(["user_id", "item_id"]).sort_values(["user_id", "rank"])
    oracle["rank"] = oracle.groupby("user_id").cumcount() + 1
    clear = _row(_compare({"A": recs["A"], "oracle": oracle, "B": recs["B"]}, test, users),
                 "A", "oracle", "hit@10")
    assert clear.pvalue <= 1 / 600 + 1e-12 and clear.pvalue_adjusted <= 0.05


def test_round_trip_through_json() -> None:
    recs, test, users = _models()
    result = _compare(recs, test, users)
    doc = json.loads(json.dumps(to_jsonable(result.to_dict())))
    back = FairnessComparison.from_dict(doc)
    assert json.dumps(to_jsonable(back.to_dict())) == json.dumps(to_jsonable(result.to_dict()))
    doc["rows"][0]["pvalue"] = "0.5"
    with pytest.raises(InputError, match=r"row 0: `pvalue` must be a number or null"):
        FairnessComparison.from_dict(doc)


def test_the_same_seed_gives_the_same_rows() -> None:
    recs, test, users = _models()
    one, two = (_compare(recs, test, users, rng=9) for _ in range(2))
    # as JSON: an undefined row's nan, which Python 3.13's dataclass equality compares
    # with == (3.11 compared field tuples, where the same nan object is equal)
    assert json.dumps(to_jsonable(one.to_dict())) == json.dumps(to_jsonable(two.to_dict()))


@pytest.mark.parametrize(("kw", "message"), [
    ({"stat_test": "mann-whitney"}, "`stat_test` must be one of permutation, t, wilcoxon"),
    ({"adjust": "bonferroni"}, "`adjust` must be one of holm, bh, none"),
    ({"options": EvaluateOptions(n=CUTS, n_boot=0)}, "needs `n_boot` >= 1"),
])
def test_bad_settings_are_refused(kw: dict, message: str) -> None:
    recs, test, users = _models()
    with pytest.raises(InputError, match=message):
        _compare(recs, test, users, **kw)


def test_one_model_is_refused() -> None:
    recs, test, users = _models()
    with pytest.raises(InputError, match="needs >= 2 models"):
        _compare({"A": recs["A"]}, test, users)


def test_a_sampled_protocol_is_named_checked_and_warned() -> None:
    """Under a sampled protocol the values are `evaluate`'s under it, the result names
    the protocol and carries its warnings, and a list outside the candidates is
    refused as `evaluate` refuses it."""
    recs, test, users = _models()
    two = {"A": recs["A"], "C": recs["C"]}
    candidates = pd.concat([t[["user_id", "item_id"]] for t in (*two.values(), test)]
                           ).drop_duplicates()
    result = _compare(two, test, users, candidates=candidates, protocol="uni100")
    assert result.protocol == "uni100" and len(result.warnings) == 2
    assert "sampled ranking (uni100)" in result.warnings[0]
    n_items = len(pd.unique(pd.concat([t.item_id for t in [*two.values(), test]])))
    ev = evaluate(recs["C"], test, users, attribute="gender", protected="F",
                  n_items=n_items, options=EvaluateOptions(n=CUTS, n_boot=0, n_resamples=0),
                  candidates=candidates, protocol="uni100")
    assert _row(result, "A", "C", "ndcg@10").value_b == pytest.approx(
        ev.overall["ndcg@10"].value, rel=1e-12)
    back = FairnessComparison.from_dict(json.loads(json.dumps(to_jsonable(result.to_dict()))))
    assert back.protocol == "uni100" and back.warnings == result.warnings
    old = to_jsonable(result.to_dict())
    del old["protocol"], old["warnings"]  # a compare.json written before the keys
    assert FairnessComparison.from_dict(old).protocol == "full"
    with pytest.raises(InputError, match="not among"):
        _compare(two, test, users, candidates=candidates.iloc[5:], protocol="uni100")
