"""Known-truth interaction data to train on: the tail, the planted gap, the oracle, seeding."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recaudit import InputError
from recaudit.fairness import EvaluateOptions, evaluate, long_tail_stats, split_per_user
from recaudit.fairness.simulation._interactions import (
    draw_interactions,
    interaction_model,
    ndcg_per_user,
    oracle_lists,
    oracle_truth,
)

SMALL = {"n_items": 300, "interactions_per_user": 20}


@pytest.mark.parametrize(
    ("share", "eps", "noise"),
    [(0.65, 0.0, "uniform"), (0.65, 0.25, "uniform"), (0.85, 0.25, "uniform"),
     (0.85, 0.25, "popularity")],
)
def test_top_share_matches_the_target(share: float, eps: float, noise: str) -> None:
    gen = np.random.default_rng(0)
    model = interaction_model(rng=gen, top_share=share, protected_noise=eps, noise=noise)
    assert model.expected_top_share() == pytest.approx(share, abs=1e-4)
    data = draw_interactions(model, 1500, rng=gen).data
    assert long_tail_stats(data.interactions).top_share == pytest.approx(share, abs=0.02)


def test_every_user_has_m_distinct_items_and_the_protected_share() -> None:
    gen = np.random.default_rng(1)
    model = interaction_model(rng=gen, protected_noise=0.3, protected_share=0.4, **SMALL)
    d = draw_interactions(model, 2000, rng=gen)
    per_user = d.data.interactions.groupby("user_id")["item_id"].agg(["size", "nunique"])
    assert (per_user["size"] == 20).all() and (per_user["nunique"] == 20).all()
    assert (d.data.users["gender"] == "F").mean() == pytest.approx(0.4, abs=0.04)
    assert d.data.interactions["item_id"].between(0, 299).all()


def test_uniform_noise_sends_the_protected_group_to_the_tail() -> None:
    gen = np.random.default_rng(2)
    model = interaction_model(rng=gen, top_share=0.8, protected_noise=0.5, **SMALL)
    d = draw_interactions(model, 3000, rng=gen)
    inter = d.data.interactions.merge(d.data.users, on="user_id")
    tail = inter["item_id"].map(inter["item_id"].value_counts()).rank(pct=True) < 0.5
    share = tail.groupby(inter["gender"]).mean()
    assert share["F"] > share["M"] + 0.05


def test_no_gap_truth_is_zero_within_mc_error() -> None:
    gen = np.random.default_rng(3)
    model = interaction_model(rng=gen, top_share=0.85, protected_noise=0.0, **SMALL)
    truth = oracle_truth(model, rng=gen, n_users=6000)
    assert 0 < truth.rd_se < 0.02
    assert abs(truth.rd) < 4 * truth.rd_se
    assert truth.nrd == pytest.approx((truth.rd + 1) / 2)


@pytest.mark.parametrize("share", [0.65, 0.85])
def test_planted_gap_is_positive_and_popularity_noise_hides_most_of_it(share: float) -> None:
    gen = np.random.default_rng(4)
    uniform = oracle_truth(
        interaction_model(rng=gen, top_share=share, protected_noise=0.3, **SMALL),
        rng=gen, n_users=6000,
    )
    popular = oracle_truth(
        interaction_model(rng=gen, top_share=share, protected_noise=0.3, noise="popularity",
                          **SMALL),
        rng=gen, n_users=6000,
    )
    assert uniform.rd > 0.05 and uniform.rd > 5 * uniform.rd_se
    assert uniform.protected < uniform.unprotected
    assert popular.rd < uniform.rd - 4 * np.hypot(uniform.rd_se, popular.rd_se)


def test_seeding_is_reproducible() -> None:
    def draw(seed: int) -> pd.DataFrame:
        gen = np.random.default_rng(seed)
        model = interaction_model(rng=gen, protected_noise=0.2, **SMALL)
        d = draw_interactions(model, 200, rng=gen)
        return d.data.interactions.merge(d.data.users, on="user_id")

    pd.testing.assert_frame_equal(draw(7), draw(7))
    assert not draw(7).equals(draw(8))
    a = oracle_truth(interaction_model(rng=np.random.default_rng(5), **SMALL),
                     rng=np.random.default_rng(6), n_users=500)
    b = oracle_truth(interaction_model(rng=np.random.default_rng(5), **SMALL),
                     rng=np.random.default_rng(6), n_users=500)
    assert a == b


def test_oracle_lists_mask_known_items_and_follow_the_inclusion() -> None:
    gen = np.random.default_rng(8)
    sample = draw_interactions(interaction_model(rng=gen, protected_noise=0.3,
                                                 noise="popularity", **SMALL), 300, rng=gen)
    split = split_per_user(sample.data, rng=gen)
    recs = oracle_lists(sample, split.known, n=15)
    assert recs.groupby("user_id").size().eq(15).all()
    known = set(map(tuple, split.known[["user_id", "item_id"]].to_numpy()))
    assert not known & set(map(tuple, recs[["user_id", "item_id"]].to_numpy()))
    assert (recs.groupby("user_id")["score"].diff().dropna() <= 0).all()
    users = sample.data.users.set_index("user_id")
    incl = sample.model.inclusion()
    row = recs.iloc[0]
    user = users.loc[row["user_id"]]
    assert row["score"] == incl[int(user["gender"] == "F"), user["cluster"], row["item_id"]]


def test_against_evaluate_ndcg() -> None:
    """The truth's own NDCG equals the library's group means on the same lists."""
    gen = np.random.default_rng(9)
    sample = draw_interactions(interaction_model(rng=gen, protected_noise=0.3, **SMALL),
                               400, rng=gen)
    split = split_per_user(sample.data, rng=gen)
    recs = oracle_lists(sample, split.known, n=20)
    res = evaluate(recs, split.test, sample.data.users, attribute="gender", protected="F",
                   n_items=300, options=EvaluateOptions(n=(10,), n_boot=0, n_resamples=0),
                   rng=0)
    own = ndcg_per_user(recs, split.test, n=10)
    gender = sample.data.users.set_index("user_id").loc[own.index, "gender"]
    for group in ("F", "M"):
        assert res.groups[group].metrics["ndcg@10"].value == pytest.approx(
            own[gender.to_numpy() == group].mean(), rel=1e-12
        )


def test_bad_input_is_named() -> None:
    gen = np.random.default_rng(0)
    with pytest.raises(InputError, match="top_share"):
        interaction_model(rng=gen, top_share=0.1)
    with pytest.raises(InputError, match="noise"):
        interaction_model(rng=gen, noise="gaussian")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="protected_noise"):
        interaction_model(rng=gen, protected_noise=1.0)
    with pytest.raises(InputError, match="interactions_per_user"):
        interaction_model(rng=gen, n_items=40, interactions_per_user=30)
    with pytest.raises(InputError, match="rng"):
        interaction_model(rng=0)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="n_users"):
        draw_interactions(interaction_model(rng=gen, **SMALL), 0, rng=gen)
