"""End to end on known-truth interactions: generate, split, train BPR (1 epoch), evaluate."""

from __future__ import annotations

import numpy as np
import pytest

from recaudit.fairness import EvaluateOptions, evaluate, split_per_user
from recaudit.fairness.simulation._interactions import (
    draw_interactions,
    interaction_model,
    oracle_lists,
)


def test_bpr_one_epoch_on_synthetic_interactions(tmp_path):
    pytest.importorskip("torch", reason="training needs the `fairness` extra (torch)")
    pytest.importorskip("recbole", reason="training needs RecBole: "
                                          "pip install --no-deps recbole==1.2.1")
    from recaudit.fairness.study.models import recommend, train_model, write_atomic_split

    gen = np.random.default_rng(0)
    model = interaction_model(rng=gen, n_items=150, top_share=0.85, protected_noise=0.25,
                              interactions_per_user=20)
    sample = draw_interactions(model, 150, rng=gen)
    split = split_per_user(sample.data, rng=gen)
    trained = train_model("MF", write_atomic_split(split, tmp_path / "data"),
                          workdir=tmp_path / "work", epochs=1, settings={"embedding_size": 8})
    users = split.test["user_id"].unique()
    items = sample.data.interactions["item_id"].unique()
    options = EvaluateOptions(n=(10,), n_boot=50, n_resamples=0, min_group_size=20)
    results = {}
    for name, recs in (
        ("MF", recommend(trained, users, n=10, exclude=split.known, items=items)),
        ("Oracle", oracle_lists(sample, split.known, n=10, users=users)),
    ):
        assert set(recs["user_id"]) == set(users)
        results[name] = evaluate(recs, split.test, sample.data.users, attribute="gender",
                                 protected="F", n_items=model.n_items, train=split.train,
                                 options=options, rng=1)
    for res in results.values():
        assert np.isfinite(res.inter_bias["ndcg@10"].rd.value)
        assert 0 <= res.popularity_bias.overall["aplt@10"].value <= 1
    # the ideal recommender is at least as accurate as a one-epoch BPR
    assert results["Oracle"].overall["ndcg@10"].value >= results["MF"].overall["ndcg@10"].value
