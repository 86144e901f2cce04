"""Shared fixtures of the report tests: runs built from the committed fixtures and
runs with hostile strings planted in every place a user-controlled string can reach."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from report_synth import (
    FIXTURES,
    IMG_PAYLOAD,
    SCRIPT_PAYLOAD,
    fairness_results,
    fairness_study,
    long_tail_frame,
    positional_run,
)


@pytest.fixture
def positional_dir(tmp_path: Path) -> Path:
    """A copy of the committed positional run folder."""
    return Path(shutil.copytree(FIXTURES / "positional_run", tmp_path / "positional_run"))


@pytest.fixture
def sequential_dir(positional_dir: Path) -> Path:
    """The positional run folder plus ``sequential.json`` of a real simulated
    `positional run --sequential` (fixtures/sequential.json: two cells, "biased"
    p_bias 0.6 and "null" p_bias 0, alpha 0.05, 100 evaluations per cell, rounds of 10;
    the config of tests/sequential)."""
    shutil.copy(FIXTURES / "sequential.json", positional_dir / "sequential.json")
    return positional_dir


@pytest.fixture
def fairness_dir(tmp_path: Path) -> Path:
    """A copy of the committed fairness run folder."""
    return Path(shutil.copytree(FIXTURES / "fairness_run", tmp_path / "fairness_run"))


@pytest.fixture
def fairness_study_dir(tmp_path: Path) -> Path:
    """A `fairness run` folder: results.json of one dataset whose models carry the
    popularity-bias section and evaluations under `full` and `uni100` (with the
    sampled-metrics warning), and the dataset's long_tail.parquet."""
    folder = tmp_path / "fairness_study"
    (folder / "ml-100k").mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps(fairness_study()))
    long_tail_frame().to_parquet(folder / "ml-100k" / "long_tail.parquet", index=False)
    return folder


@pytest.fixture
def hostile_positional(tmp_path: Path) -> Path:
    """A positional run whose model name and raw answers are XSS payloads."""
    folder = tmp_path / "hostile_positional"
    folder.mkdir()
    results, frame = positional_run(
        models={SCRIPT_PAYLOAD: 0.3, "plain-model": 0.0},
        ks=(5,),
        temperatures=(0.0, 0.4),
        n_queries=20,
        perms=5,
        seed=1,
    )
    frame["raw_response"] = IMG_PAYLOAD
    frame.loc[frame.index[:5], "discard_reason"] = IMG_PAYLOAD  # a hostile reason too
    (folder / "analysis.json").write_text(json.dumps(results))
    frame.to_parquet(folder / "evaluations.parquet", index=False)
    (folder / "config.resolved.toml").write_text(
        f'seed = 3\nnote = "{IMG_PAYLOAD.replace(chr(34), "")}"\n'
    )
    return folder


@pytest.fixture
def hostile_fairness(tmp_path: Path) -> Path:
    """A fairness run whose model name, group name and item titles are XSS payloads."""
    folder = tmp_path / "hostile_fairness"
    folder.mkdir()
    results = fairness_results(models={SCRIPT_PAYLOAD: (0.3, 0.6, 0.05), "MF": (0.25, 0.7, 0.02)})
    for r in results.values():
        r["groups"][IMG_PAYLOAD] = r["groups"].pop("F")
    (folder / "results.json").write_text(json.dumps(results))
    items = long_tail_frame(n_items=50)
    items["title"] = IMG_PAYLOAD
    items.to_parquet(folder / "long_tail.parquet", index=False)
    return folder
