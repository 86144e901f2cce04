"""`positional analyze RUN` without --seed uses the run's seed (config.resolved.json),
as its --help says: the same table twice, and the same as --seed SEED."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from recaudit.cli import app
from recaudit.positional import run_seed, simulate_evaluations

runner = CliRunner()
FAST = ["--n-boot", "50", "--n-resamples", "49", "--json"]


def test_a_run_folder_is_analysed_with_its_seed(tmp_path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    simulate_evaluations(20, k=4, n_perms=6, p_bias=0.2, rng=1).to_frame().to_parquet(
        run / "evaluations.parquet")
    (run / "config.resolved.json").write_text(json.dumps({"seed": 7}))
    first, again, given = (runner.invoke(app, ["positional", "analyze", str(run), *FAST, *x])
                           for x in ([], [], ["--seed", "7"]))
    assert first.exit_code == 0, first.output
    assert first.stdout == again.stdout == given.stdout
    other = runner.invoke(app, ["positional", "analyze", str(run), *FAST, "--seed", "8"])
    assert json.loads(other.stdout)["pb"] != json.loads(first.stdout)["pb"]
    (run / "config.resolved.json").write_text("{}")  # no config seed: still analysed
    assert runner.invoke(app, ["positional", "analyze", str(run), *FAST]).exit_code == 0
    (run / "config.resolved.json").write_text("not json")  # broken: refused, not ignored
    broken = runner.invoke(app, ["positional", "analyze", str(run), *FAST])
    assert broken.exit_code == 2 and "config.resolved.json" in broken.output
    assert "Traceback" not in broken.output
    assert runner.invoke(app, ["positional", "analyze", str(run), *FAST,
                               "--seed", "3"]).exit_code == 0


@pytest.mark.parametrize(("text", "seed"), [
    ('{"seed": 7}', 7), ('{"seed": 0}', 0), ("[7]", None), ("{}", None)])
def test_one_reader_of_a_run_folders_seed(tmp_path, text, seed) -> None:
    """``recaudit.positional.run_seed``: what ``positional analyze RUN`` and
    ``analyze_study_folder`` take as the run's seed (None: analysed unseeded)."""
    (tmp_path / "config.resolved.json").write_text(text)
    assert run_seed(tmp_path) == seed
    assert run_seed(tmp_path / "elsewhere") is None


@pytest.mark.parametrize("text", ["not json", '{"seed": true}', '{"seed": -1}',
                                  '{"seed": 7.5}', '{"seed": "7"}'])
def test_a_broken_seed_is_refused_not_ignored(tmp_path, text) -> None:
    from recaudit.exceptions import InputError

    (tmp_path / "config.resolved.json").write_text(text)
    with pytest.raises(InputError, match="config.resolved.json"):
        run_seed(tmp_path)
