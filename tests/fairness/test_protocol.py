"""Evaluation protocols: names, RecBole's sampler semantics, evaluation within candidates."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recaudit import InputError
from recaudit.fairness import (
    FULL,
    EvaluateOptions,
    FairnessEvaluation,
    Protocol,
    evaluate,
    parse_protocol,
    sample_candidates,
)
from recaudit.fairness._protocol import _draw_negatives
from recaudit.fairness.study.models import most_popular_candidates, random_candidates

OPTIONS = EvaluateOptions(n=(5, 10), n_boot=20, n_resamples=19, min_group_size=5)


@pytest.fixture(scope="module")
def data() -> dict[str, pd.DataFrame]:
    """60 users x 120 items, Zipf popularity; 2-4 test items per user, rest known."""
    rng = np.random.default_rng(4)
    weights = 1.0 / np.arange(1, 121)
    rows = []
    for u in range(60):
        k = int(rng.integers(8, 20))
        for i in rng.choice(120, size=k, replace=False, p=weights / weights.sum()):
            rows.append((f"u{u}", f"i{i}"))
    inter = pd.DataFrame(rows, columns=["user_id", "item_id"])
    test = inter.groupby("user_id").head(3).reset_index(drop=True)
    users = pd.DataFrame({"user_id": [f"u{u}" for u in range(60)],
                          "gender": ["F" if u % 3 == 0 else "M" for u in range(60)]})
    items = pd.DataFrame({"item_id": [f"i{i}" for i in range(120)]})
    train = inter.merge(test, how="left", indicator=True).query("_merge == 'left_only'")
    return {"inter": inter, "test": test, "users": users, "items": items,
            "train": train.drop(columns="_merge")}


@pytest.mark.parametrize(("name", "expected"), [
    ("full", FULL),
    ("uni100", Protocol("uni100", "uniform", 100)),
    ("pop7", Protocol("pop7", "popularity", 7)),
])
def test_parse_protocol(name: str, expected: Protocol) -> None:
    assert parse_protocol(name) == expected
    assert parse_protocol(expected) is expected


@pytest.mark.parametrize("bad", ["uni", "uni0", "uni010", "pop-5", "Uni100", "random100", 100])
def test_parse_protocol_rejects(bad: object) -> None:
    with pytest.raises(InputError, match=r"`protocol` must be 'full', 'uniN' or 'popN'"):
        parse_protocol(bad)


@pytest.mark.parametrize("name", ["uni10", "pop10"])
def test_negatives_never_among_the_users_interactions(data, name: str) -> None:
    cand = sample_candidates(name, data["test"], data["inter"], data["items"], rng=0)
    known = set(map(tuple, data["inter"][["user_id", "item_id"]].to_numpy()))
    test = set(map(tuple, data["test"][["user_id", "item_id"]].to_numpy()))
    pairs = set(map(tuple, cand.to_numpy()))
    assert len(pairs) == len(cand)  # distinct pairs
    assert test <= pairs  # every test positive is a candidate
    assert not (pairs - test) & known  # no negative is a known interaction
    assert set(cand["user_id"]) == set(data["test"]["user_id"])


def test_n_draws_per_positive_with_duplicates_kept(data) -> None:
    # RecBole draws N per test positive with replacement; the candidate set keeps the
    # distinct ones (its score matrix has one cell per item)
    positives = np.repeat(np.arange(3), [1, 2, 4])
    used = np.array([0, 1, 5, 10 + 2, 20 + 3])  # keys user * 10 + item
    owner, drawn = _draw_negatives(Protocol("uni50", "uniform", 50), positives, used,
                                   np.ones(10), np.random.default_rng(1))
    assert np.bincount(owner).tolist() == [50, 100, 200]
    assert not np.isin(owner * 10 + drawn, used).any()
    cand = sample_candidates("uni30", data["test"], data["inter"], data["items"], rng=2)
    n_test = data["test"].groupby("user_id").size()
    n_cand = cand.groupby("user_id").size()
    assert (n_cand <= n_test * 31).all() and (n_cand > n_test).all()


def test_popularity_sampling_frequencies_match_popularity() -> None:
    # one user who knows items 0 and 1: negatives ~ popularity restricted to 2..9
    counts = np.array([50, 40, 30, 20, 10, 8, 6, 4, 2, 1], dtype=float)
    owner, drawn = _draw_negatives(Protocol("pop20000", "popularity", 20000),
                                   np.zeros(1, dtype=np.int64), np.array([0, 1]), counts,
                                   np.random.default_rng(3))
    freq = np.bincount(drawn, minlength=10) / drawn.size
    expected = np.r_[0, 0, counts[2:]] / counts[2:].sum()
    se = np.sqrt(expected * (1 - expected) / drawn.size)
    assert freq[:2].sum() == 0
    assert np.all(np.abs(freq - expected) <= 4 * se + 1e-12)


def test_popularity_counts_every_interaction_row(data) -> None:
    # an item nobody interacted with has no popularity: pop never draws it, uni does
    items = pd.concat([data["items"], pd.DataFrame({"item_id": ["never"]})])
    pop = sample_candidates("pop50", data["test"], data["inter"], items, rng=0)
    uni = sample_candidates("uni50", data["test"], data["inter"], items, rng=0)
    assert "never" not in set(pop["item_id"]) and "never" in set(uni["item_id"])


def test_same_seed_same_candidates(data) -> None:
    a = sample_candidates("pop20", data["test"], data["inter"], data["items"], rng=5)
    b = sample_candidates("pop20", data["test"], data["inter"], data["items"], rng=5)
    c = sample_candidates("pop20", data["test"], data["inter"], data["items"], rng=6)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_sampler_errors(data) -> None:
    with pytest.raises(InputError, match="'full' has no candidates"):
        sample_candidates("full", data["test"], data["inter"], data["items"])
    with pytest.raises(InputError, match=r"`test` has item_id 'x9'"):
        sample_candidates("uni5", pd.DataFrame({"user_id": ["u0"], "item_id": ["x9"]}),
                          data["inter"], data["items"])
    everything = pd.DataFrame({"user_id": "u0", "item_id": data["items"]["item_id"]})
    with pytest.raises(InputError, match=r"user_id 'u0' has interacted with every item"):
        sample_candidates("uni5", everything.head(2), everything, data["items"])


def _sampled(data, name: str = "uni20", seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    cand = sample_candidates(name, data["test"], data["inter"], data["items"], rng=seed)
    return cand, random_candidates(cand, n=10, rng=seed)


def _evaluate(data, recs: pd.DataFrame, **kwargs) -> FairnessEvaluation:
    return evaluate(recs, data["test"], data["users"], attribute="gender", protected="F",
                    items=data["items"], train=data["train"], options=OPTIONS, rng=0, **kwargs)


def test_evaluation_records_the_protocol_and_its_warnings(data) -> None:
    cand, recs = _sampled(data)
    ev = _evaluate(data, recs, candidates=cand, protocol="uni20")
    assert ev.protocol == "uni20"
    assert len(ev.warnings) == 2
    assert "Krichene & Rendle, KDD 2020" in ev.warnings[0]
    assert "group gaps" in ev.warnings[0] and "compare with full ranking" in ev.warnings[0]
    out = ev.to_dict()
    assert out["protocol"] == "uni20" and out["warnings"] == list(ev.warnings)
    back = FairnessEvaluation.from_dict(out)
    assert back.protocol == "uni20" and back.warnings == ev.warnings
    full = _evaluate(data, random_candidates(cand, n=10, rng=0))
    assert full.protocol == "full" and full.warnings == ()
    assert "warnings" not in full.to_dict()
    older = {k: v for k, v in full.to_dict().items() if k != "protocol"}
    assert FairnessEvaluation.from_dict(older).protocol == "full"


def test_metrics_within_candidates_by_hand(data) -> None:
    # one test item per user ranked 2nd of its candidates: NDCG@5 = 1/log2(3), hit 1
    test = data["test"].groupby("user_id").head(1)
    cand = sample_candidates("uni5", test, data["inter"], data["items"], rng=0)
    recs = []
    for user, items in cand.groupby("user_id")["item_id"]:
        positive = test.loc[test["user_id"] == user, "item_id"].iloc[0]
        others = [i for i in items if i != positive]
        order = [others[0], positive, *others[1:]]
        recs.append(pd.DataFrame({"user_id": user, "item_id": order,
                                  "rank": np.arange(1, len(order) + 1)}))
    ev = evaluate(pd.concat(recs), test, data["users"], attribute="gender", protected="F",
                  items=data["items"], options=OPTIONS, rng=0, candidates=cand,
                  protocol="uni5")
    assert ev.overall["ndcg@5"].value == pytest.approx(1 / np.log2(3))
    assert ev.overall["hit@5"].value == 1.0 and ev.overall["mrr@5"].value == 0.5
    assert ev.inter_bias["ndcg@5"].rd.value == pytest.approx(0.0)


def test_recommended_item_outside_the_candidates_is_an_error(data) -> None:
    cand, recs = _sampled(data)
    bad = recs.copy()
    user = bad.loc[0, "user_id"]
    outside = sorted(set(data["items"]["item_id"]) - set(cand.loc[cand.user_id == user,
                                                                 "item_id"]))[0]
    bad.loc[0, "item_id"] = outside
    with pytest.raises(InputError, match=rf"`recs` row 1: user_id '{user}' is recommended "
                                         rf"item_id '{outside}', which is not among"):
        _evaluate(data, bad, candidates=cand, protocol="uni20")


def test_test_item_outside_the_candidates_is_an_error(data) -> None:
    cand, recs = _sampled(data)
    first = data["test"].iloc[0]
    fewer = cand[~((cand.user_id == first.user_id) & (cand.item_id == first.item_id))]
    recs = recs[~((recs.user_id == first.user_id) & (recs.item_id == first.item_id))]
    with pytest.raises(InputError, match=rf"`test` row 1: item_id '{first.item_id}' of "
                                         rf"user_id '{first.user_id}' is not among"):
        _evaluate(data, recs, candidates=fewer, protocol="uni20")


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"candidates": "CAND"}, "`candidates` need `protocol`"),
    ({"protocol": "uni20"}, "'uni20' ranks within sampled candidates: pass `candidates`"),
    ({"candidates": "CAND", "protocol": "full"}, "'full' ranks the whole catalog"),
    ({"candidates": "CAND", "protocol": "uniform"}, "`protocol` must be 'full', 'uniN'"),
])
def test_protocol_and_candidates_go_together(data, kwargs: dict, fragment: str) -> None:
    cand, recs = _sampled(data)
    kwargs = {k: cand if v == "CAND" else v for k, v in kwargs.items()}
    with pytest.raises(InputError, match=fragment):
        _evaluate(data, recs, **kwargs)


def test_baselines_rank_within_the_candidates(data) -> None:
    cand = sample_candidates("pop20", data["test"], data["inter"], data["items"], rng=1)
    pop = most_popular_candidates(cand, data["train"], n=10)
    counts = data["train"].groupby("item_id").size()
    for user, lst in pop.groupby("user_id", sort=False):
        mine = cand.loc[cand.user_id == user, "item_id"]
        expected = counts.reindex(mine).fillna(0).sort_values(ascending=False, kind="stable")
        assert lst["score"].tolist() == expected.to_numpy()[: len(lst)].tolist()
        assert lst["rank"].tolist() == list(range(1, len(lst) + 1))
        assert set(lst["item_id"]) <= set(mine)
    rnd = random_candidates(cand, n=10, rng=0)
    pd.testing.assert_frame_equal(rnd, random_candidates(cand, n=10, rng=0))
    assert (rnd.groupby("user_id").size() == 10).all()
    for recs in (pop, rnd):
        ev = _evaluate(data, recs, candidates=cand, protocol="pop20")
        assert ev.n_users == 60
