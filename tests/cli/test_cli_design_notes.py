"""Before a run: a sampled design at large k leaves POB-ICM without repeated columns."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from recaudit.audit._designs import expected_repeated, pob_icm_design_notes
from recaudit.cli import app

runner = CliRunner()


@pytest.mark.parametrize(("k", "n"), [(3, 10), (4, 30), (5, 120)])
def test_expected_repeated_against_simulation(k: int, n: int) -> None:
    """E = n (1 - (1 - 1/k!)^(n-1)) against 20,000 simulated draws of n orders."""
    m = int(np.prod(np.arange(1, k + 1)))
    draws = np.random.default_rng(k).integers(0, m, size=(20_000, n))
    counts = np.stack([np.bincount(row, minlength=m) for row in draws])
    repeated = np.where(counts >= 2, counts, 0).sum(axis=1)
    se = repeated.std() / np.sqrt(len(repeated))
    assert abs(repeated.mean() - expected_repeated(k, n)) < 4 * se
    assert expected_repeated(1, 5) == 5 and expected_repeated(1, 1) == 0


def test_notes_only_where_icm_is_blind() -> None:
    args = {"n_queries": 24, "n_perms": 20, "samples_per_order": 1}
    notes = pob_icm_design_notes((5, 10), kind="sampled", **args)
    assert len(notes) == 1 and notes[0].startswith("k = 10 with sampled orders")
    assert not pob_icm_design_notes((10,), kind="shared", **args)
    assert not pob_icm_design_notes((10,), kind="sampled", **{**args, "samples_per_order": 2})
    assert not pob_icm_design_notes((10,), kind="sampled", **{**args, "n_queries": None})


def test_run_prints_the_note_before_running(tmp_path, retriever, emb_cache) -> None:
    from helpers import prepared_run, write_config

    path = write_config(tmp_path, cache_dir=emb_cache, n_queries=6, n_perms=5, k=10)
    run = prepared_run(path, tmp_path / "run", retriever)
    res = runner.invoke(app, ["positional", "run", str(path), "--out", str(run), "--resume",
                              "--no-analyze"], env={"COLUMNS": "400"})
    assert res.exit_code == 0, res.output
    assert "k = 10 with sampled orders" in res.output and 'kind = "shared"' in res.output
    quiet = runner.invoke(app, ["positional", "run", str(path), "--out", str(run),
                                "--resume", "--no-analyze", "--quiet"])
    assert quiet.exit_code == 0 and "sampled orders" not in quiet.output
