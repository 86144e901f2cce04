"""The fairness study's grid search on a real local Ray cluster: same summary as local."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from recaudit.fairness.study import parse_fairness_config, run_fairness_study

pytest.importorskip("recbole")

MODELS = {
    "ItemKNN": {"grid": {"k": [5, 20]}},
    "MF": {"grid": {"embedding_size": [8, 16]}},
}


def toy_study(root: Path, output: Path) -> dict:
    """60 users (20 F) x 30 items, the shape of the fairness CLI test's toy data."""
    rows = ["user_id,item_id"] + [f"{u},{i % 30}" for u in range(60)
                                  for i in range(u % 7, u % 7 + 12 + u % 5)]
    (root / "inter.csv").write_text("\n".join(rows) + "\n")
    users = ["user_id,gender"] + [f"{u},{'F' if u % 3 == 0 else 'M'}" for u in range(60)]
    (root / "users.csv").write_text("\n".join(users) + "\n")
    return {
        "study": {"output": str(output), "epochs": 2, "list_length": 5, "n": [5],
                  "seed": 3, "n_boot": 20, "n_resamples": 19},
        "datasets": [{"name": "toy", "path": str(root / "inter.csv"),
                      "users": str(root / "users.csv"), "format": "table",
                      "attribute": "gender", "protected": "F", "sample": 100000,
                      "min_group_size": 5}],
        "models": MODELS,
    }


def _summary(output: Path) -> pd.DataFrame:
    return pd.read_csv(output / "toy" / "summary.csv").drop(columns="train_seconds")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, ray_cluster):
    root = tmp_path_factory.mktemp("fair")
    local = run_fairness_study(parse_fairness_config(toy_study(root, root / "local")))
    events: list[tuple[str, dict]] = []
    dist = run_fairness_study(parse_fairness_config(toy_study(root, root / "ray")), executor="ray",
                     progress=lambda e, f: events.append((e, f)))
    return {"root": root, "local": local, "ray": dist, "events": events}


def test_ray_grid_search_gives_the_local_summary(runs):
    root = runs["root"]
    pd.testing.assert_frame_equal(_summary(root / "ray"), _summary(root / "local"))
    for name in MODELS:
        lm = runs["local"].to_dict()["datasets"]["toy"]["models"][name]
        rm = runs["ray"].to_dict()["datasets"]["toy"]["models"][name]
        assert rm["params"] == lm["params"] and rm["valid_score"] == lm["valid_score"]
        assert [p["valid_score"] for p in rm["grid"]] == [p["valid_score"] for p in lm["grid"]]
        for point in range(2):  # every grid point ran as its own task, in its own folder
            assert (root / "ray" / "toy" / "models" / name / "grid" / f"{point:03d}"
                    / "point.pkl").is_file()
        pd.testing.assert_frame_equal(
            pd.read_parquet(root / "ray" / "toy" / "recs" / f"{name}.parquet"),
            pd.read_parquet(root / "local" / "toy" / "recs" / f"{name}.parquet"))


def test_ray_resume_skips_finished_models_and_grid_points(runs, monkeypatch):
    import recaudit.fairness.study._ray as fray

    root = runs["root"]
    raw = toy_study(root, root / "ray")
    # lose one model's completion marker: its grid points are reloaded, not retrained
    (root / "ray" / "toy" / "models" / "MF" / "done.json").unlink()

    def boom(*args, **kwargs):
        raise AssertionError("a finished grid point was trained again")

    monkeypatch.setattr(fray, "_train_point", boom)
    events: list[tuple[str, dict]] = []
    again = run_fairness_study(parse_fairness_config(raw), executor="ray",
                      progress=lambda e, f: events.append((e, f)))
    models = again.to_dict()["datasets"]["toy"]["models"]
    assert models["ItemKNN"]["resumed"] is True and models["MF"]["resumed"] is False
    pd.testing.assert_frame_equal(_summary(root / "ray"), _summary(root / "local"))
    assert json.loads((root / "ray" / "toy" / "models" / "MF" / "done.json").read_text())
