"""The study's files without training: its one table writer (`study._run._write_table`:
Parquet and CSV, or Parquet only) and the run folder's `study.json` check."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from recaudit import ConfigError
from recaudit.fairness.study import _run as _study
from recaudit.fairness.study import parse_fairness_config


def test_write_table_writes_both_formats_or_the_ones_asked(tmp_path: Path) -> None:
    frame = pd.DataFrame({"user_id": ["a", "b"], "item_id": [1, 2]})
    _study._write_table(frame, tmp_path / "both")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "both.parquet"), frame)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "both.csv", dtype={"user_id": str}),
                                  frame)
    _study._write_table(frame, tmp_path / "candidates", suffixes=(".parquet",))
    assert sorted(p.name for p in tmp_path.glob("candidates*")) == ["candidates.parquet"]
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "candidates.parquet"), frame)
    assert not list(tmp_path.glob("*.tmp*"))  # written through a temporary name, renamed


def test_one_writer() -> None:
    assert not hasattr(_study, "_write_parquet")


def _config(tmp_path: Path, **study: object):  # noqa: ANN202
    return parse_fairness_config({
        "study": {"output": str(tmp_path / "run"), **study},
        "datasets": [{"path": "data/ml", "format": "recbole", "attribute": "gender",
                      "protected": "F"}],
        "models": {"MF": {}},
    })


def test_popularity_groups_may_change_in_a_run_folder(tmp_path: Path) -> None:
    """The groups only change the evaluation (recomputed every run): a folder made
    before the key existed, or with other groups, is resumed; a data setting is not."""
    _study._run_iv(_config(tmp_path))
    stamp = tmp_path / "run" / "study.json"
    older = json.loads(stamp.read_text())
    del older["popularity_groups"]
    stamp.write_text(json.dumps(older))
    _study._run_iv(_config(tmp_path, popularity_groups="quantile:4"))
    assert json.loads(stamp.read_text())["popularity_groups"] == "quantile:4"
    with pytest.raises(ConfigError):
        _study._run_iv(_config(tmp_path, seed=7))


def test_one_evaluate_options_from_the_study_table(tmp_path: Path) -> None:
    """`[study]`'s n, n_boot, n_resamples and popularity_groups are one EvaluateOptions;
    each dataset's evaluation takes it with the dataset's min_group_size; study.json keeps
    the flat keys it always had."""
    config = _config(tmp_path, n=[10, 5], n_boot=30, n_resamples=29,
                     popularity_groups="quantile:4")
    assert config.evaluate.n == (5, 10)
    assert (config.evaluate.n_boot, config.evaluate.n_resamples) == (30, 29)
    options = config.evaluate_options(config.datasets[0])
    assert options.min_group_size == config.datasets[0].min_group_size == 20
    assert options.popularity_groups.name == "quantile:4"
    flat = config.to_dict()
    assert (flat["n"], flat["n_boot"], flat["n_resamples"], flat["popularity_groups"]) == (
        [5, 10], 30, 29, "quantile:4")
    assert "evaluate" not in flat


def test_a_folder_with_the_cut_offs_in_toml_order_resumes(tmp_path: Path) -> None:
    """Folders written before the config held one EvaluateOptions kept `n` as typed
    ([10, 5]); the same cut-offs resume, other cut-offs are refused."""
    _study._run_iv(_config(tmp_path, n=[10, 5]))
    stamp = tmp_path / "run" / "study.json"
    older = json.loads(stamp.read_text())
    older["n"] = [10, 5]
    stamp.write_text(json.dumps(older))
    _study._run_iv(_config(tmp_path, n=[5, 10]))
    with pytest.raises(ConfigError, match="holds a run of a different config"):
        _study._run_iv(_config(tmp_path, n=[5, 20]))


def test_duplicate_cut_offs_name_the_table(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\[study\] of config"):
        _config(tmp_path, n=[5, 5])
