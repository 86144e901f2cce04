"""RunOptions: how a run executes, validated once on construction."""

from __future__ import annotations

import pytest

from recaudit.audit import RunOptions, SequentialOptions
from recaudit.exceptions import ConfigError


def test_defaults_are_a_new_local_run() -> None:
    run = RunOptions()
    assert (run.resume, run.executor, run.ray_address, run.sequential) == \
        (False, "local", None, None)


@pytest.mark.parametrize("kwargs, match", [
    ({"executor": "cluster"}, "executor"),
    ({"ray_address": "127.0.0.1:6379"}, "ray"),
    ({"executor": "ray", "sequential": SequentialOptions()}, "local executor only"),
    ({"resume": "yes"}, "`resume`"),
    ({"sequential": {"alpha": 0.05}}, "SequentialOptions"),
])
def test_bad_settings_are_refused_on_construction(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        RunOptions(**kwargs)  # type: ignore[arg-type]


def test_the_cli_refuses_a_sequential_run_on_ray(tmp_path) -> None:
    from typer.testing import CliRunner

    from helpers import write_config
    from recaudit.cli import app

    config = write_config(tmp_path, cache_dir=tmp_path / "cache")
    res = CliRunner().invoke(app, ["positional", "run", str(config), "--out",
                                   str(tmp_path / "run"), "--sequential", "--executor", "ray"])
    assert res.exit_code == 2 and "local executor only" in res.output
    assert not (tmp_path / "run").exists()
