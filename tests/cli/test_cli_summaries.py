"""Readable summaries at any terminal width: no cell cut to an ellipsis or cropped."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from helpers import synthetic_table
from recaudit.cli import app

runner = CliRunner()
FAST = ["--n-resamples", "99", "--n-boot", "50", "--seed", "1", "--quiet"]
BY = "model,k,temperature,condition"
BORDERS_LEFT, BORDERS_RIGHT = "┏┃┡│└", "┓┃┩│┘"


@pytest.fixture(scope="module")
def grid16(tmp_path_factory):
    """A study grid: 2 models x 2 temperatures x 4 conditions = 16 groups."""
    table, cands = synthetic_table(models={"sim-biased": 0.4, "sim-fair": 0.0}, n_queries=10,
                                   n_evals=5, discard_rate=0.02, seed=3)
    folder = tmp_path_factory.mktemp("grid16")
    table.to_parquet(folder / "evaluations.parquet", index=False)
    cands.to_parquet(folder / "candidates.parquet", index=False)
    return folder


def _check_layout(text: str, width: int) -> list[str]:
    lines = text.splitlines()
    assert "…" not in text and "..." not in text
    assert max(len(line) for line in lines) <= width
    for line in lines:  # every table row ends in its right border: nothing cropped
        if line.strip() and line.strip()[0] in BORDERS_LEFT:
            assert line.rstrip()[-1] in BORDERS_RIGHT, line
    return lines


def _fmt(e):
    if e["value"] is None:  # e.g. sPB of an identity-order condition
        return "n/a"
    return f"{e['value']:.3f} [{e['ci_low']:.3f}, {e['ci_high']:.3f}]"


def _analyze(folder, width, *extra):
    return runner.invoke(app, ["positional", "analyze", str(folder), "--by", BY, *FAST,
                               *extra], env={"COLUMNS": str(width)})


@pytest.mark.parametrize("width", [80, 100])
def test_sixteen_groups_fit_the_terminal(grid16, width):
    res = _analyze(grid16, width)
    assert res.exit_code == 0, res.output
    lines = _check_layout(res.stdout, width)
    groups = json.loads(_analyze(grid16, width, "--json").stdout)
    assert len(groups) == 16
    # one row per group (with its keys on the row), every statistic shown whole
    for g in groups:
        for stat in ("ps", "pb", "spb"):
            assert _fmt(g[stat]) in res.stdout, (g["condition"], stat)
        rows = [line for line in lines if f" {g['model']} " in line
                and f" {g['condition']} " in line and f" {g['temperature']:g} " in line]
        assert rows, g
    assert "Positional bias (k=5) [1/" in res.stdout  # constant key k in the title


def test_narrow_terminal_prints_one_block_per_group(grid16):
    res = _analyze(grid16, 40)
    assert res.exit_code == 0, res.output
    _check_layout(res.stdout, 40)
    assert res.stdout.count("statistic") == 16


def test_few_groups_keep_one_table_with_a_column_per_group(grid16, tmp_path):
    import pandas as pd

    table = pd.read_parquet(grid16 / "evaluations.parquet")
    two = table[(table["condition"] == "permutation") & (table["temperature"] == 0.6)]
    two.to_parquet(tmp_path / "two.parquet", index=False)
    res = runner.invoke(app, ["positional", "analyze", str(tmp_path / "two.parquet"), "--by",
                              "model", *FAST], env={"COLUMNS": "120"})
    assert res.exit_code == 0, res.output
    _check_layout(res.stdout, 120)
    header = next(line for line in res.stdout.splitlines() if "statistic" in line)
    assert "model=sim-biased" in header and "model=sim-fair" in header


def test_study_summary_fits_80_columns(grid16):
    res = runner.invoke(app, ["positional", "study", "--analyze-only", str(grid16),
                              "--n-boot", "50", "--n-resamples", "99", "--seed", "0"],
                        env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    _check_layout(res.stdout, 80)
    assert "Positional study: cells" in res.stdout
    assert "labels_permutation" in res.stdout


def test_one_group_is_one_table_at_80_columns(grid16, tmp_path):
    """The demo's case: one group with four keys; its keys go to the title, not a header."""
    import pandas as pd

    table = pd.read_parquet(grid16 / "evaluations.parquet")
    one = table[(table["model"] == "sim-biased") & (table["condition"] == "permutation")
                & (table["temperature"] == 0.6)]
    one.to_parquet(tmp_path / "one.parquet", index=False)
    res = runner.invoke(app, ["positional", "analyze", str(tmp_path / "one.parquet"),
                              "--by", BY, *FAST], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    _check_layout(res.stdout, 80)
    assert res.stdout.count("statistic") == 1 and "[1/" not in res.stdout
    assert "condition=permutation" in res.stdout.split("statistic")[0]  # in the title


def test_large_k_groups_print_k_once_a_blind_icm_and_an_underflowing_p(tmp_path):
    """k = 15 and 20 with random orders (no order repeats: POB-ICM is blind) and every
    answer at position 1 (POB-UNBP's p underflows): the packed tables name k once, the
    blind test's asymptotic p is not printed as if it meant something, and p = 0 reads
    as < 1e-300."""
    import pandas as pd

    from recaudit.positional import simulate_evaluations

    frames = []
    for k in (15, 20):
        f = simulate_evaluations(12, k=k, n_perms=8, p_bias=1.0, rng=k).to_frame()
        frames.append(f.assign(model="m", k=k))
    path = tmp_path / "large_k.parquet"
    pd.concat(frames, ignore_index=True).to_parquet(path, index=False)
    res = runner.invoke(app, ["positional", "analyze", str(path), "--by", "model,k", *FAST],
                        env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    _check_layout(res.stdout, 80)
    headers = [ln for ln in res.stdout.splitlines() if ln.startswith("┃ k ")]
    assert headers and all(ln.count(" k ") == 1 for ln in headers)
    assert "n/a (blind)" in res.stdout and "(< 1e-300)" in res.stdout
