"""Top-N positional bias: statistic, calibration, effect sizes, parser, simulator."""

from __future__ import annotations

import asyncio

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from recaudit._stats import binomial_interval
from recaudit.exceptions import InputError
from recaudit.llm import (
    Candidate,
    SimulatedBackend,
    SimulationProfile,
    collect_rankings,
    parse_ranking,
    positional_identifiers,
    ranking_from_choice_probs,
    ranking_template,
    render_request,
)
from recaudit.positional import (
    draw_ranking,
    kendall_position_rank,
    rankings_from_table,
    simulate_rankings,
    spearman_position_rank,
    top1_table,
    topn_bias,
)


def test_against_scipy_spearmanr():
    rng = np.random.default_rng(0)
    for k in (2, 5, 9):
        rows = np.array([rng.permutation(k) + 1 for _ in range(20)])
        ours = spearman_position_rank(rows)
        ref = [stats.spearmanr(np.arange(1, k + 1), r).statistic for r in rows]
        np.testing.assert_allclose(ours, ref, atol=1e-12)


def test_kendall_tau_against_scipy_kendalltau():
    rng = np.random.default_rng(1)
    for k in (2, 5, 10, 20):
        rows = np.array([rng.permutation(k) + 1 for _ in range(20)])
        ours = kendall_position_rank(rows)
        ref = [stats.kendalltau(np.arange(1, k + 1), r).statistic for r in rows]
        np.testing.assert_allclose(ours, ref, atol=1e-12)


def test_kendall_tau_and_displacement_of_the_result():
    table = simulate_rankings(n_queries=40, n_perms=6, k=5, p_bias=0.4, rng=3)
    res = topn_bias(table, n_resamples=99, n_boot=300, rng=0)
    ev = rankings_from_table(table)
    taus = np.array([stats.kendalltau(np.arange(1, 6), r).statistic for r in ev.position_rank])
    per_query = pd.Series(taus).groupby(ev.query).mean()
    assert res.kendall.value == pytest.approx(per_query.mean())
    assert res.kendall.ci.low < res.kendall.value < res.kendall.ci.high
    assert res.kendall.value > 0.1  # primacy
    for mean, disp in zip(res.mean_rank, res.displacement, strict=True):
        assert disp.value == pytest.approx(mean.value - 3.0)
        assert disp.ci.low == pytest.approx(mean.ci.low - 3.0)
    assert res.displacement[0].value < 0  # the first position is ranked better
    doc = res.to_dict()
    assert doc["kendall_tau"]["value"] == res.kendall.value and len(doc["displacement"]) == 5


def test_the_lists_top1_gives_the_papers_measures():
    from recaudit.positional import analyze

    table = simulate_rankings(n_queries=30, n_perms=8, k=5, p_bias=0.5, rng=7)
    table.loc[3, "ranking"] = None  # a discarded answer
    top = top1_table(table)
    assert list(top.columns) == ["query_id", "order", "selected_position"]
    assert top["selected_position"].isna().sum() == 1
    firsts = [int(r.split()[0]) for r in table["ranking"].dropna()]
    assert top["selected_position"].dropna().tolist() == firsts
    res = analyze(top, rng=0)
    assert res.n_evaluations == 239 and res.n_discarded == 1
    assert res.pb.value > 0.2 and res.pob_unbp.pvalue < 0.05  # primacy of the list's head


def test_against_scipy_permutation_test_one_query():
    # one query, 6 evaluations, k = 4: the within-query shuffle is a re-pairing of
    # orders with item rankings, i.e. scipy's `pairings` permutation test (exact: 720)
    rng = np.random.default_rng(3)
    k, n = 4, 6
    orders = np.array([rng.permutation(k) for _ in range(n)])
    item_rank = np.array([rng.permutation(k) + 1 for _ in range(n)])
    item_rank[:3] = np.take_along_axis(np.broadcast_to(np.arange(1, k + 1), (3, k)),
                                       np.argsort(orders[:3], axis=1), axis=1)  # some primacy
    table = pd.DataFrame({
        "query_id": ["q"] * n,
        "order": [" ".join(map(str, o + 1)) for o in orders],
        # positions best first: the position holding rank 1, 2, ...
        "ranking": [" ".join(str(int(np.flatnonzero(np.take(r, o) == j)[0]) + 1)
                             for j in range(1, k + 1)) for o, r in zip(orders, item_rank,
                                                                        strict=True)],
    })

    def statistic(y):  # re-pair the fixed orders with permuted rankings
        pr = np.take_along_axis(item_rank[np.asarray(y)], orders, axis=1)
        return spearman_position_rank(pr).mean()

    ref = stats.permutation_test((np.arange(n),), statistic, permutation_type="pairings",
                                 n_resamples=np.inf, alternative="greater")
    res = topn_bias(table, statistic="spearman", n_resamples=5000, n_boot=10, rng=1)
    assert res.statistic == pytest.approx(ref.statistic)
    # scipy's exact p counts the identity pairing among 720; ours is Monte Carlo + 1
    assert 0.0 < ref.pvalue < 1.0
    assert res.pvalue == pytest.approx(ref.pvalue, abs=0.02)


@pytest.mark.parametrize("statistic", ["rank_bias", "spearman"])
def test_type_one_error_on_the_null(statistic):
    rejections, reps = 0, 80
    rng = np.random.default_rng(11)
    for _ in range(reps):
        table = simulate_rankings(n_queries=10, n_perms=5, k=5, p_bias=0.0, rng=rng)
        rejections += topn_bias(table, statistic=statistic, n_resamples=99, n_boot=1,
                                rng=rng).pvalue <= 0.05
    ci = binomial_interval(int(rejections), reps)
    assert ci.low <= 0.05  # not anti-conservative beyond Monte-Carlo error


@pytest.mark.parametrize("statistic", ["rank_bias", "spearman"])
def test_power_on_a_primacy_generator(statistic):
    rng = np.random.default_rng(12)
    reps = 20
    hits = sum(topn_bias(simulate_rankings(n_queries=15, n_perms=5, k=5, p_bias=0.2,
                                           rng=rng), statistic=statistic, n_resamples=99,
                         n_boot=1, rng=rng).pvalue <= 0.05 for _ in range(reps))
    assert hits / reps > 0.8


def test_rank_bias_sees_a_u_shape_that_spearman_misses():
    # positions 1 and k boosted alike (primacy + recency): no monotone trend
    rng = np.random.default_rng(8)
    rows = []
    for q in range(30):
        worth = rng.uniform(1, 3, size=5)
        for _ in range(6):
            order = tuple(int(x) + 1 for x in rng.permutation(5))
            ranking = draw_ranking(worth, order, p_bias=0.5, rng=rng,
                                   position_weights=[1, 0, 0, 0, 1])
            rows.append({"query_id": f"q{q}", "order": " ".join(map(str, order)),
                         "ranking": " ".join(map(str, ranking))})
    table = pd.DataFrame(rows)
    rb = topn_bias(table, n_resamples=199, n_boot=50, rng=0)
    rho = topn_bias(table, statistic="spearman", alternative="two-sided", n_resamples=199,
                    n_boot=50, rng=0)
    assert rb.pvalue < 0.01 and rho.pvalue > 0.05
    m = [e.value for e in rb.mean_rank]
    assert m[0] < 3 and m[4] < 3 and m[2] > 3


def test_effect_sizes():
    # ranking == prompt order for every evaluation: RB = 1, top-1 PB = 1 - 1/k
    rng = np.random.default_rng(0)
    k = 5
    orders = [" ".join(map(str, rng.permutation(k) + 1)) for _ in range(30)]
    table = pd.DataFrame({"query_id": [f"q{i % 6}" for i in range(30)], "order": orders,
                          "ranking": ["1 2 3 4 5"] * 30})
    res = topn_bias(table, n_resamples=99, n_boot=100, rng=0)
    assert res.statistic == pytest.approx(1.0) and res.rank_bias.value == pytest.approx(1.0)
    assert res.top1_pb.value == pytest.approx(1 - 1 / k)
    assert [e.value for e in res.mean_rank] == pytest.approx([1, 2, 3, 4, 5])
    assert res.pvalue < 0.05
    null = topn_bias(simulate_rankings(n_queries=200, n_perms=5, k=k, p_bias=0.0, rng=4),
                     n_resamples=99, n_boot=200, rng=0)
    assert all(abs(e.value - 3.0) < 0.15 for e in null.mean_rank)
    assert null.rank_bias.value < 0.1 and null.top1_pb.value < 0.08


def test_rankings_table_validation_and_discards():
    t = pd.DataFrame({"query_id": ["a", "a", "b"], "order": ["1 2 3", "3 2 1", "2 1 3"],
                      "ranking": ["1 2 3", "", "3 1 2"]})
    ev = rankings_from_table(t)
    assert ev.n_discarded == 1 and ev.n_queries == 2
    # row 3: positions best first 3 1 2 -> item at position 3 (item 3) has rank 1
    assert ev.item_rank[1].tolist() == [3, 2, 1]
    with pytest.raises(InputError, match="lacks column"):
        rankings_from_table(t.drop(columns="ranking"))
    with pytest.raises(InputError, match="must list every prompt position"):
        rankings_from_table(t.assign(ranking=["1 2 2", "", "1 2 3"]))
    with pytest.raises(InputError, match="`alternative`"):
        topn_bias(t, alternative="less")
    with pytest.raises(InputError, match="`statistic`"):
        topn_bias(t, statistic="kendall")


def test_parse_ranking():
    ids = ("1", "2", "3")
    assert parse_ranking('{"ranking": [2, 3, 1]}', ids).positions == (2, 3, 1)
    assert parse_ranking('["3", "1", "2"]', ids).positions == (3, 1, 2)
    for text, reason in [("", "empty"), ("no", "no_json"), ('{"ranking": [1,', "invalid_json"),
                         ('ok {"ranking": [1,2,3]}', "extra_text"),
                         ('{"rank": [1, 2, 3]}', "missing_key"),
                         ('{"ranking": 1}', "not_a_list"),
                         ('{"ranking": [1, 2, 4]}', "unknown_identifier"),
                         ('{"ranking": [1, 1, 2]}', "duplicate_identifier"),
                         ('{"ranking": [1, 2]}', "incomplete")]:
        assert parse_ranking(text, ids).discard_reason == reason, text
    assert ranking_from_choice_probs([0.1, 0.6, 0.3]) == (2, 3, 1)


def test_simulated_backend_rankings_end_to_end():
    k = 5
    tpl = ranking_template()

    def cands(q):
        return tuple(Candidate(i, f"{q}{i}", f"t{i}", "", 0.0) for i in range(1, k + 1))

    rng = np.random.default_rng(5)
    reqs = [render_request(tpl, f"query {q}", cands(q),
                           tuple(int(x) + 1 for x in rng.permutation(k)),
                           identifiers=positional_identifiers(k), temperature=0.0, seed=s,
                           query_id=f"q{q}")
            for q in range(25) for s in range(6)]
    results = {}
    for p_bias in (0.0, 0.3):
        sim = SimulatedBackend(SimulationProfile.primacy(p_bias), k=k, seed=1,
                               answer="ranking")
        table = asyncio.run(collect_rankings(sim, reqs))
        again = asyncio.run(collect_rankings(sim, reqs))
        assert table["ranking"].tolist() == again["ranking"].tolist()  # per-key determinism
        assert (table["ranking"] != "").all()
        results[p_bias] = topn_bias(table, n_resamples=199, n_boot=100, rng=0)
    assert results[0.3].pvalue < 0.01 < results[0.0].pvalue
    assert results[0.3].rank_bias.value > results[0.0].rank_bias.value


def test_choice_probability_rankings_with_the_simulator():
    sim = SimulatedBackend(SimulationProfile.primacy(0.2), k=3, seed=0)
    req = render_request(ranking_template(), "q", tuple(
        Candidate(i, str(i), "t", "", 0.0) for i in range(1, 4)), (2, 3, 1),
        identifiers=positional_identifiers(3), temperature=0.0, seed=1, query_id="a")
    table = asyncio.run(collect_rankings(sim, [req], source="probabilities"))
    probs = sim.choice_distribution(req)
    assert table["ranking"][0] == " ".join(map(str, ranking_from_choice_probs(probs)))


def test_docstring_examples():
    import doctest

    from recaudit.positional import _topn

    result = doctest.testmod(_topn, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_topn_cli(tmp_path):
    import json

    from typer.testing import CliRunner

    from recaudit.cli import app

    table = simulate_rankings(n_queries=12, n_perms=5, k=4, p_bias=0.5, rng=3)
    table.to_csv(tmp_path / "rankings.csv", index=False)
    res = CliRunner().invoke(app, ["positional", "topn", str(tmp_path / "rankings.csv"),
                                   "--n-resamples", "99", "--n-boot", "50", "--seed", "1",
                                   "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["pvalue"] < 0.05 and out["statistic_name"] == "rank_bias"
    # an evaluations table with choice probabilities: the probability ranking
    evals = pd.DataFrame({"query_id": ["a", "a", "b"], "order": ["1 2 3", "3 1 2", "2 3 1"],
                          "selected_position": [1, 1, 2],
                          "choice_probs": ["[0.6, 0.3, 0.1]", "[0.5, 0.2, 0.3]", None]})
    evals.to_csv(tmp_path / "evals.csv", index=False)
    res = CliRunner().invoke(app, ["positional", "topn", str(tmp_path / "evals.csv"),
                                   "--from-choice-probs", "--n-resamples", "9",
                                   "--n-boot", "5", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["n_evaluations"] == 2 and out["n_discarded"] == 1
    res = CliRunner().invoke(app, ["positional", "topn", str(tmp_path / "rankings.csv"),
                                   "--from-choice-probs"])
    assert res.exit_code == 2 and "choice_probs" in res.output
