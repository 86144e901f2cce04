"""Damaged ``analyze --json`` values read by ``recaudit report``: exit 2, one line.

Regression for the case hypothesis found (``test_fuzz_inputs.py``): two deleted bytes
turned ``"tau": "auto"`` into ``"tau": "uto"``, and the reader's bare ``float(...)``
raised a ValueError traceback. Every field now goes through the validated readers of
``recaudit._records``: the message names the file, the result, the field and the fix.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from recaudit.cli import app
from recaudit.positional import simulate_evaluations

runner = CliRunner()
FIX = "rewrite it with `recaudit positional analyze RUN_DIR --json > RUN_DIR/analysis.json`"


@pytest.fixture(scope="module")
def analysis(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A valid ``analyze --json`` object (small: 12 queries, k=4)."""
    folder = tmp_path_factory.mktemp("damaged-analysis")
    simulate_evaluations(12, k=4, n_perms=6, p_bias=0.3, rng=1).to_frame().to_csv(
        folder / "evals.csv", index=False)
    res = runner.invoke(app, ["positional", "analyze", str(folder / "evals.csv"), "--json",
                              "--n-resamples", "19", "--n-boot", "10", "--quiet"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _report(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "analysis.json"
    path.write_text(text)
    return runner.invoke(app, ["report", str(path), "-o", str(tmp_path / "r.html")],
                         env={"COLUMNS": "10000"})


def _one_error_line(result: Any) -> str:
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        repr(result.exception), result.output)
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


def test_the_example_hypothesis_found(analysis: dict[str, Any], tmp_path: Path) -> None:
    """The bytes hypothesis saved: a space and the ``a`` of ``"auto"`` deleted."""
    text = json.dumps(analysis)
    assert text.startswith('{"k": 4, "n_queries"') and '"tau": "auto"' in text
    broken = text[:8] + text[9:]  # delete byte 8 (the space after `"k": 4,`)
    broken = broken.replace('"tau": "auto"', '"tau": "uto"', 1)
    line = _one_error_line(_report(tmp_path, broken))
    assert line == (f"error: {tmp_path / 'analysis.json'}, positional result #0: "
                    "PositionalAnalysis: `tau` must be 'auto' or a number in (0, 1], "
                    f"got 'uto'; {FIX}")


@pytest.mark.parametrize(("path", "value", "message"), [
    (("tau",), None, "PositionalAnalysis: `tau` must be 'auto' or a number in (0, 1], got None"),
    (("tau",), 1.5, "PositionalAnalysis: `tau` must be 'auto' or a number in (0, 1], got 1.5"),
    (("pob_icm", "df"), "66", "PobIcmResult: `df` must be a whole number, got '66'"),
    (("pob_icm", "n_queries"), None, "Coverage: `n_queries` must be a whole number, got None"),
    (("n_queries_excluded_ps",), "x",
     "PositionalAnalysis: `n_queries_excluded_ps` must be a whole number, got 'x'"),
    (("spb_paper", "n_folds"), 2.5, "StrongBiasResult: `n_folds` must be a whole number, got 2.5"),
    (("pb", "favoured_positions"), "1",
     "PositionalBiasResult: `favoured_positions` must be a list of whole numbers or null, "
     "got '1'"),
    (("pb", "favoured_positions"), [1, "x"],
     "PositionalBiasResult: `favoured_positions` must be a whole number, got 'x'"),
])
def test_a_damaged_field_of_the_library_readers(analysis: dict[str, Any], tmp_path: Path,
                                                path: tuple[str, ...], value: Any,
                                                message: str) -> None:
    doc = json.loads(json.dumps(analysis))
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    line = _one_error_line(_report(tmp_path, json.dumps(doc)))
    assert line == (f"error: {tmp_path / 'analysis.json'}, positional result #0: "
                    f"{message}; {FIX}")


@pytest.mark.parametrize(("key", "value", "message"), [
    ("k", "uto", "`k` must be a whole number, got 'uto'"),
    ("n_queries", None, "`n_queries` must be a whole number, got None"),
    ("selection_rate_matrix", 3, "`selection_rate_matrix` must be a JSON list, got int"),
    ("position_distribution", None,
     "`position_distribution` and its CIs must have k=4 entries, got 0/4/4"),
    ("position_distribution_ci", "uto", "`position_distribution_ci` must be a JSON list, got str"),
    ("position_distribution_ci", [{}, {}, {}, {}],
     "`position_distribution_ci` must be a list of [low, high] pairs"),
    ("temperature", "hot", "`temperature` must be a number or null, got 'hot'"),
])
def test_a_damaged_field_of_the_report_reader(analysis: dict[str, Any], tmp_path: Path,
                                              key: str, value: Any, message: str) -> None:
    doc = {**analysis, key: value}
    line = _one_error_line(_report(tmp_path, json.dumps(doc)))
    assert line == f"error: {tmp_path / 'analysis.json'}, positional result #0: {message}"
