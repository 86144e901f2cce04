"""The study runner end to end: all nine models once on a small ML-100K sample."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pytest

from recaudit import ConfigError
from recaudit.fairness import FairnessComparison
from recaudit.fairness.study import load_recbole_atomic, parse_fairness_config, run_fairness_study
from recaudit.fairness.study.models import MODELS

# tiny settings: the point is that every model runs through our split, not accuracy
SMALL = {
    "ItemKNN": {"grid": {"k": [10, 50]}},
    "MF": {"grid": {"embedding_size": [16]}},
    "DMF": {
        "grid": {"user_embedding_size": [16]},
        "settings": {
            "item_embedding_size": 16,
            "user_hidden_size_list": [16],
            "item_hidden_size_list": [16],
        },
    },
    "NeuMF": {
        "grid": {"mf_embedding_size": [8]},
        "settings": {"mlp_embedding_size": 8, "mlp_hidden_size": [16]},
    },
    "NNCF": {
        "grid": {"ui_embedding_size": [16]},
        "settings": {
            "neigh_embedding_size": 8,
            "num_conv_kernel": 8,
            "neigh_num": 10,
            "conv_kernel_size": 3,
            "pool_kernel_size": 2,
            "mlp_hidden_size": [16],
        },
    },
    "NGCF": {"grid": {"embedding_size": [16]}, "settings": {"hidden_size_list": [16]}},
    "SGL": {"grid": {"embedding_size": [16]}, "settings": {"n_layers": 1}},
    "LightGCN": {"grid": {"embedding_size": [16]}, "settings": {"n_layers": 1}},
    "DGCF": {"grid": {"embedding_size": [16]}, "settings": {"n_iterations": 1}},
}


def small_ml100k(source: Path, target: Path) -> Path:
    """150 users (60 F, 90 M) x the 300 most popular items of ML-100K, as atomic files."""
    data = load_recbole_atomic(source)
    users = data.users.sort_values("user_id", key=lambda s: s.astype(int))
    chosen = pd.concat(
        [users[users["gender"] == "F"].head(60), users[users["gender"] == "M"].head(90)]
    )
    top = data.interactions["item_id"].value_counts().index[:300]
    inter = data.interactions[
        data.interactions["user_id"].isin(chosen["user_id"])
        & data.interactions["item_id"].isin(top)
    ]
    folder = target / "ml-small"
    folder.mkdir(parents=True)
    with (folder / "ml-small.inter").open("w") as fh:
        fh.write("user_id:token\titem_id:token\trating:float\ttimestamp:float\n")
        inter.to_csv(fh, sep="\t", header=False, index=False)
    with (folder / "ml-small.user").open("w") as fh:
        fh.write("user_id:token\tage:token\tgender:token\toccupation:token\tzip_code:token\n")
        chosen.to_csv(fh, sep="\t", header=False, index=False)
    return folder


def study_config(data: Path, output: Path, models: dict) -> dict:
    return {
        "study": {
            "output": str(output),
            "epochs": 1,
            "list_length": 15,
            "seed": 7,
            "n_boot": 50,
            "n_resamples": 49,
        },
        "datasets": [
            {
                "path": str(data),
                "format": "recbole",
                "attribute": "gender",
                "protected": "F",
                "sample": 6000,
                "min_group_size": 20,
            }
        ],
        "models": models,
    }


@pytest.fixture(scope="module")
def study(ml100k_path, tmp_path_factory):
    pytest.importorskip("torch", reason="training needs the `fairness` extra (torch)")
    pytest.importorskip("recbole", reason="training needs RecBole: "
                                          "pip install --no-deps recbole==1.2.1")
    root = tmp_path_factory.mktemp("study")
    data = small_ml100k(ml100k_path, root)
    raw = study_config(data, root / "run", SMALL)
    events: list[tuple[str, dict]] = []
    t0 = time.perf_counter()
    result = run_fairness_study(parse_fairness_config(raw),
                                progress=lambda e, f: events.append((e, f)))
    return {
        "raw": raw,
        "result": result,
        "events": events,
        "seconds": time.perf_counter() - t0,
        "data": data,
        "root": root,
    }


def test_every_model_trains_and_recommends(study):
    models = study["result"].to_dict()["datasets"]["ml-small"]["models"]
    assert set(models) == set(MODELS) | {"MostPop", "Random"}
    timings = {name: round(info["train_seconds"], 1) for name, info in models.items()}
    print("training seconds:", timings, "total:", round(study["seconds"], 1))
    for name in MODELS:
        assert models[name]["resumed"] is False
        assert models[name]["valid_metric"] == "NDCG@10"
        assert 0 <= models[name]["valid_score"] <= 1
    assert len(models["ItemKNN"]["grid"]) == 2  # both grid points tried


def test_recs_exclude_known_items_and_use_original_ids(study):
    folder = study["result"].output / "ml-small"
    train = pd.read_parquet(folder / "train.parquet")
    valid = pd.read_parquet(folder / "valid.parquet")
    test = pd.read_parquet(folder / "test.parquet")
    known = set(map(tuple, pd.concat([train, valid])[["user_id", "item_id"]].values))
    catalogue = set(pd.concat([train, valid, test])["item_id"])
    for name in [*MODELS, "MostPop", "Random"]:
        recs = pd.read_parquet(folder / "recs" / f"{name}.parquet")
        assert list(recs.columns) == ["user_id", "item_id", "rank", "score", "model"]
        assert set(recs["model"]) == {name}
        assert set(recs["user_id"]) == set(test["user_id"])  # every test user
        assert recs.groupby("user_id").size().eq(15).all()
        assert (
            recs.groupby("user_id")["rank"].apply(lambda r: r.tolist() == list(range(1, 16))).all()
        )
        assert not known & set(map(tuple, recs[["user_id", "item_id"]].values)), name
        # original ML-100K ids (text tokens), never RecBole's internal integers
        assert set(recs["item_id"]) <= catalogue, name
        assert recs["score"].is_monotonic_decreasing or (
            recs.groupby("user_id")["score"].apply(lambda s: s.is_monotonic_decreasing).all()
        )


def test_tables_and_results_written(study):
    out = study["result"].output
    results = json.loads((out / "results.json").read_text())
    ds = results["datasets"]["ml-small"]
    assert ds["groups"]["sizes"] == {"protected": 60, "unprotected": 90}
    assert ds["split"]["n_train"] + ds["split"]["n_valid"] + ds["split"]["n_test"] == 6000
    for table in ("train", "valid", "test", "users"):
        assert (out / "ml-small" / f"{table}.parquet").exists()
        assert (out / "ml-small" / f"{table}.csv").exists()
    summary = pd.read_csv(out / "ml-small" / "summary.csv")
    assert set(summary["model"]) == set(MODELS) | {"MostPop", "Random"}
    for n in (5, 10, 15):
        assert summary[f"IB-NDCG@{n}"].between(0, 1).all()
        assert (summary[f"IB-NDCG@{n}_low"] <= summary[f"IB-NDCG@{n}_high"]).all()
    assert {"NDCG@10_F", "NDCG@10_M", "IC@10", "AvgPop@10"} <= set(summary.columns)
    ev = ds["models"]["MF"]["evaluation"]
    assert ev["protected"] == "F" and ev["settings"]["n_boot"] == 50
    compared = FairnessComparison.from_dict(
        json.loads((out / "ml-small" / "compare.json").read_text()))
    assert set(compared.models) == set(MODELS) | {"MostPop", "Random"}
    k = len(compared.models)
    assert len({(r.a, r.b) for r in compared.rows}) == k * (k - 1) // 2
    row = next(r for r in compared.rows if (r.a, r.metric, r.group) == ("MF", "ndcg@10", ""))
    assert row.value_a == pytest.approx(ev["overall"]["ndcg@10"]["value"], rel=1e-12)
    for name in MODELS:
        assert (out / "ml-small" / "models" / name / "done.json").exists()
        assert (out / "ml-small" / "models" / name / "recbole.log").exists()
    # RecBole wrote nothing into the working directory
    assert not Path("log_tensorboard").exists() and not Path("saved").exists()


def test_resume_skips_finished_models(study, monkeypatch):
    import recaudit.fairness.study.models._recbole as rb

    def boom(*args, **kwargs):
        raise AssertionError("a finished model was trained again")

    monkeypatch.setattr(rb, "train_model", boom)
    events: list[tuple[str, dict]] = []
    again = run_fairness_study(parse_fairness_config(study["raw"]),
                               progress=lambda e, f: events.append((e, f)))
    models = again.to_dict()["datasets"]["ml-small"]["models"]
    assert all(models[name]["resumed"] for name in MODELS)
    skipped = [f["name"] for e, f in events if e == "model" and f["skipped"]]
    assert skipped == list(SMALL)


def test_changed_data_settings_refuse_the_run_folder(study):
    raw = json.loads(json.dumps(study["raw"]))
    raw["datasets"][0]["sample"] = 5000
    with pytest.raises(ConfigError, match=r"holds a run of a different config"):
        run_fairness_study(parse_fairness_config(raw))


def test_unknown_hyperparameter_is_an_error(study):
    raw = study_config(
        study["data"], study["root"] / "run-bad", {"MF": {"grid": {"embeding_size": [8]}}}
    )
    with pytest.raises(
        ConfigError, match=r"hyperparameter 'embeding_size' is not a RecBole 1.2.1 setting of MF"
    ):
        run_fairness_study(parse_fairness_config(raw))


def test_recommend_maps_integer_ids_back(study, tmp_path):
    from recaudit.fairness import InteractionData, split_per_user, to_implicit
    from recaudit.fairness.study.models import recommend, train_model, write_atomic_split

    data = load_recbole_atomic(study["data"])
    inter = data.interactions.astype({"user_id": int, "item_id": int})
    users = data.users.astype({"user_id": int})
    split = split_per_user(to_implicit(InteractionData(inter, users)), rng=3)
    trained = train_model(
        "ItemKNN",
        write_atomic_split(split, tmp_path / "data"),
        workdir=tmp_path / "work",
        grid={"k": [20]},
        epochs=1,
    )
    test_users = split.test["user_id"].unique()
    recs = recommend(
        trained, test_users, n=10, exclude=split.known, items=inter["item_id"].unique()
    )
    assert recs["user_id"].map(type).eq(int).all() and recs["item_id"].map(type).eq(int).all()
    assert set(recs["item_id"]) <= set(inter["item_id"])
    known = set(map(tuple, split.known[["user_id", "item_id"]].values))
    assert not known & set(map(tuple, recs[["user_id", "item_id"]].values))
    assert trained.to_dict()["params"] == {"k": 20}


def test_pairwise_scoring_in_chunks_gives_the_same_lists(study, tmp_path, monkeypatch):
    from recaudit.fairness import split_per_user, to_implicit
    from recaudit.fairness.study.models import _recbole, recommend, train_model, write_atomic_split

    data = to_implicit(load_recbole_atomic(study["data"]))
    split = split_per_user(data, rng=5)
    trained = train_model(
        "NeuMF",
        write_atomic_split(split, tmp_path / "data"),
        workdir=tmp_path / "work",
        grid={"mf_embedding_size": [8]},
        epochs=1,
        settings={"mlp_embedding_size": 8, "mlp_hidden_size": [16]},
    )
    users = split.test["user_id"].unique()
    items = data.interactions["item_id"].unique()
    whole = recommend(trained, users, n=10, exclude=split.known, items=items)
    monkeypatch.setattr(_recbole, "PAIRS_PER_CALL", 1000)  # 3 users per predict call
    chunked = recommend(trained, users, n=10, exclude=split.known, items=items)
    pd.testing.assert_frame_equal(whole, chunked)


def test_every_grid_point_records_its_convergence_and_the_best_checkpoint_is_kept(study):
    models = study["result"].to_dict()["datasets"]["ml-small"]["models"]
    for name in MODELS:
        for point in models[name]["grid"]:
            assert 1 <= point["best_epoch"] <= point["epochs_run"] <= point["epoch_budget"]
            assert point["stopped_early"] == (point["epochs_run"] < point["epoch_budget"])
        assert Path(models[name]["checkpoint"]).is_file()
        assert Path(models[name]["checkpoint"]).name == "best.pth"
    assert models["ItemKNN"]["grid"][0]["epoch_budget"] == 1  # no iterative training


def test_early_stopping_ends_training_before_the_budget(study, tmp_path):
    from recaudit.fairness import split_per_user, to_implicit
    from recaudit.fairness.study.models import train_model, write_atomic_split
    from recaudit.fairness.study.models._recbole_compat import load_checkpoint

    split = split_per_user(to_implicit(load_recbole_atomic(study["data"])), rng=5)
    trained = train_model(
        "MF",
        write_atomic_split(split, tmp_path / "data"),
        workdir=tmp_path / "work",
        grid={"learning_rate": [0.05, 0.001]},
        epochs=40,
        settings={"stopping_step": 2, "embedding_size": 16},
    )
    fast = trained.grid[0]
    assert fast.stopped_early and fast.epochs_run < 40
    assert fast.best_epoch == fast.epochs_run - 3  # RecBole stops after stopping_step + 1 misses
    kept = load_checkpoint(trained.checkpoint)
    best_index = max(range(2), key=lambda i: trained.grid[i].valid_score)
    assert kept["epoch"] + 1 == trained.grid[best_index].best_epoch
    state = trained.model.state_dict()
    assert all((kept["state_dict"][k] == v).all() for k, v in state.items())
    assert sorted(p.name for p in (tmp_path / "work").rglob("*.pth")) == ["best.pth"]
