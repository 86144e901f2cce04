"""Sampled ranking with real RecBole models: against RecBole's own sampled evaluation,
ranking within candidates, and a finished model scored under a new protocol."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from recaudit.fairness import EvaluateOptions, InteractionData, evaluate, split_per_user
from recaudit.fairness.study import parse_fairness_config, run_fairness_study
from recaudit.fairness.study.models import _candidates as cb
from recaudit.fairness.study.models import _recbole as rb

OPTIONS = EvaluateOptions(n=(5, 10), n_boot=0, n_resamples=0, min_group_size=1)
METRICS = ("ndcg", "recall", "hit", "mrr", "precision")


@pytest.fixture(scope="module")
def recbole():
    pytest.importorskip("torch", reason="training needs the `fairness` extra (torch)")
    pytest.importorskip("recbole", reason="training needs RecBole: "
                                          "pip install --no-deps recbole==1.2.1")
    from recaudit.fairness.study.models._recbole_compat import import_recbole

    return import_recbole()


def toy(seed: int = 3) -> tuple[pd.DataFrame, pd.DataFrame]:
    """80 users x 150 items with Zipf-like popularity; every third user 'F'."""
    rng = np.random.default_rng(seed)
    pop = 1.0 / np.arange(1, 151) ** 0.8
    rows = [(f"u{u}", f"i{i}") for u in range(80)
            for i in rng.choice(150, size=int(rng.integers(15, 40)), replace=False,
                                p=pop / pop.sum())]
    users = pd.DataFrame({"user_id": [f"u{u}" for u in range(80)],
                          "gender": ["F" if u % 3 == 0 else "M" for u in range(80)]})
    return pd.DataFrame(rows, columns=["user_id", "item_id"]), users


def _recbole_sampled_run(split, work: Path, mode: str) -> tuple[dict, pd.DataFrame, object]:
    """BPR trained 1 epoch by RecBole with ``eval_args.mode = mode``: RecBole's own
    test metrics, the negatives its test loader drew, and the model."""
    from recbole.config import Config
    from recbole.data import create_dataset, data_preparation
    from recbole.utils import get_model, get_trainer, init_seed

    from recaudit.fairness.study.models._recbole_compat import recbole_session

    data_path = rb.write_atomic_split(split, work / "recbole")
    settings = {**rb._FIXED, "data_path": str(data_path), "checkpoint_dir": str(work / "ck"),
                "epochs": 1, "seed": 5, "embedding_size": 16, "topk": [10],
                "eval_args": {"group_by": "user", "order": "RO", "mode": mode},
                "metrics": ["NDCG", "Recall", "Hit", "MRR", "Precision"]}
    with recbole_session(work / "wd"):
        config = Config(model="BPR", dataset="study", config_dict=settings)
        init_seed(config["seed"], config["reproducibility"])
        dataset = create_dataset(config)
        train_data, _, test_data = data_preparation(config, dataset)
        model = get_model("BPR")(config, train_data._dataset).to("cpu")
        trainer = get_trainer(config["MODEL_TYPE"], "BPR")(config, model)
        trainer.fit(train_data, None, verbose=False, saved=False, show_progress=False)
        # the test loader draws its negatives from numpy's global stream: the same
        # seed before iterating and before evaluating gives the same negatives
        np.random.seed(11)  # noqa: NPY002 -- RecBole's sampler reads the global stream
        drawn = [np.stack([b["user_id"].numpy(), b["item_id"].numpy()], 1)
                 for b, *_ in test_data]
        np.random.seed(11)  # noqa: NPY002
        result = dict(trainer.evaluate(test_data, load_best_model=False, show_progress=False))
    pairs = np.concatenate(drawn)
    cand = pd.DataFrame({"user_id": dataset.field2id_token["user_id"][pairs[:, 0]],
                         "item_id": dataset.field2id_token["item_id"][pairs[:, 1]]})
    return result, cand.drop_duplicates(), cb.LoadedModel("BPR", model, dataset)


@pytest.mark.parametrize("mode", ["uni20", "pop20"])
def test_against_recbole_sampled_evaluation(recbole, tmp_path, mode):
    inter, users = toy()
    split = split_per_user(InteractionData(interactions=inter, users=users, name="t"), rng=1)
    result, cand, model = _recbole_sampled_run(split, tmp_path, mode)
    known = set(map(tuple, inter.to_numpy()))
    test = set(map(tuple, split.test[["user_id", "item_id"]].to_numpy()))
    assert not (set(map(tuple, cand.to_numpy())) - test) & known  # RecBole's rule too
    recs = cb.recommend_candidates(model, cand, n=10)
    ev = evaluate(recs, split.test, users, attribute="gender", protected="F",
                  items=pd.DataFrame({"item_id": inter["item_id"].unique()}),
                  options=OPTIONS, rng=0, candidates=cand, protocol=mode)
    for metric in METRICS:  # RecBole rounds to 4 decimals
        assert ev.overall[f"{metric}@10"].value == pytest.approx(result[f"{metric}@10"],
                                                                 abs=5e-5)


def test_pairwise_scoring_gives_the_full_sort_lists(recbole, tmp_path, monkeypatch):
    inter, users = toy(seed=4)
    split = split_per_user(InteractionData(interactions=inter, users=users, name="t"), rng=1)
    _, cand, model = _recbole_sampled_run(split, tmp_path, "uni20")
    whole = cb.recommend_candidates(model, cand, n=10, batch_size=7)

    def not_implemented(interaction):
        raise NotImplementedError

    monkeypatch.setattr(model.model, "full_sort_predict", not_implemented)  # as NeuMF
    monkeypatch.setattr(rb, "PAIRS_PER_CALL", 500)
    pairwise = cb.recommend_candidates(model, cand, n=10)
    pd.testing.assert_frame_equal(whole, pairwise, atol=1e-5)
    assert set(map(tuple, whole[["user_id", "item_id"]].to_numpy())) <= set(
        map(tuple, cand.to_numpy()))


def _study(tmp_path: Path, output: Path, protocols: list[str]) -> dict:
    inter, users = toy(seed=5)
    inter.to_csv(tmp_path / "inter.csv", index=False)
    users.to_csv(tmp_path / "users.csv", index=False)
    return {
        "study": {"output": str(output), "epochs": 1, "list_length": 10, "n": [5, 10],
                  "n_boot": 20, "n_resamples": 19, "protocols": protocols},
        "datasets": [{"name": "toy", "path": str(tmp_path / "inter.csv"), "format": "table",
                      "users": str(tmp_path / "users.csv"), "attribute": "gender",
                      "protected": "F", "min_group_size": 10}],
        "models": {"MF": {"grid": {"embedding_size": [8]}}},
    }


def test_a_finished_model_gains_a_protocol_without_retraining(recbole, tmp_path, monkeypatch):
    first = run_fairness_study(parse_fairness_config(_study(tmp_path, tmp_path / "run", ["full"])))
    assert "evaluations" not in first.to_dict()["datasets"]["toy"]["models"]["MF"]

    def boom(*args, **kwargs):
        raise AssertionError("a finished model was trained again")

    monkeypatch.setattr("recaudit.fairness.study._run.train_model", boom)
    events: list[tuple[str, dict]] = []
    raw = _study(tmp_path, tmp_path / "run", ["full", "uni20"])
    again = run_fairness_study(parse_fairness_config(raw),
                               progress=lambda e, f: events.append((e, f)))
    assert ("rescore", {"name": "MF", "protocols": ["uni20"]}) in events
    entry = json.loads((tmp_path / "run" / "results.json").read_text())["datasets"]["toy"]
    mf = entry["models"]["MF"]
    assert mf["resumed"] and mf["rescored"] == ["uni20"]
    assert list(mf["evaluations"]) == ["full", "uni20"]
    assert mf["evaluations"]["uni20"]["protocol"] == "uni20"
    assert mf["evaluation"]["protocol"] == "full"
    summary = pd.read_csv(tmp_path / "run" / "toy" / "summary.csv")
    assert sorted(zip(summary["model"], summary["protocol"], strict=True)) == [
        ("MF", "full"), ("MF", "uni20"), ("MostPop", "full"), ("MostPop", "uni20"),
        ("Random", "full"), ("Random", "uni20")]
    compared = {p: json.loads((tmp_path / "run" / "toy" / name).read_text())
                for p, name in (("full", "compare.json"), ("uni20", "compare-uni20.json"))}
    assert {p: c["protocol"] for p, c in compared.items()} == {"full": "full",
                                                               "uni20": "uni20"}
    assert not compared["full"]["warnings"] and compared["uni20"]["warnings"]
    rescored = pd.read_parquet(tmp_path / "run" / "toy" / "recs" / "uni20" / "MF.parquet")
    cand = pd.read_parquet(tmp_path / "run" / "toy" / "candidates" / "uni20.parquet")
    assert set(map(tuple, rescored[["user_id", "item_id"]].to_numpy())) <= set(
        map(tuple, cand.to_numpy()))
    # a third run finds every list: nothing is scored again
    events.clear()
    run_fairness_study(parse_fairness_config(raw), progress=lambda e, f: events.append((e, f)))
    assert not [e for e, _ in events if e == "rescore"]
    # the checkpoint scores as the freshly trained model: same candidates, same lists
    monkeypatch.undo()
    fresh = run_fairness_study(
        parse_fairness_config(_study(tmp_path, tmp_path / "fresh", ["full", "uni20"])))
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "fresh" / "toy" / "candidates" / "uni20.parquet"), cand)
    trained = pd.read_parquet(tmp_path / "fresh" / "toy" / "recs" / "uni20" / "MF.parquet")
    pd.testing.assert_frame_equal(trained, rescored, atol=1e-5)
    resumed_ev = again.datasets["toy"].models["MF"].evaluations["uni20"]
    fresh_ev = fresh.datasets["toy"].models["MF"].evaluations["uni20"]
    assert resumed_ev.overall["ndcg@10"].value == pytest.approx(
        fresh_ev.overall["ndcg@10"].value)
