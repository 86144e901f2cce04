"""The identity-order conditions (decoding, labels: one fixed order per query) are never
read as position bias (docs/decisions/0418, 0420).

Its positions are retrieval ranks: a model that answers its most relevant candidate
looks maximally "position-biased" there. A run of that condition alone, analysed by
model (without ``condition`` in ``--by``), used to print "Positional bias detected"
with POB-UNBP L 58 pp; pooled with a permuted condition it mixed ranks with positions.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from recaudit import InputError
from recaudit.cli import app
from recaudit.positional import (
    AnalysisOptions,
    analyze,
    analyze_exact,
    analyze_exact_groups,
    analyze_groups,
    simulate_evaluations,
)
from recaudit.positional._analyze import REASON_IDENTITY_TESTS
from recaudit.positional._exact import ExactAnalysis

FAST = AnalysisOptions(n_resamples=99, n_boot=50)
REASON_DECODING = REASON_IDENTITY_TESTS.format(condition="decoding")
runner = CliRunner()


def _decoding(seed: int = 0) -> pd.DataFrame:
    """A relevance-driven model in the identity order: its answers pile on the first
    ranks (position 1 of a sorted list holds the best candidate)."""
    df = simulate_evaluations(20, k=5, n_perms=4, p_bias=0.6, rng=seed).to_frame()
    df["order"] = "1 2 3 4 5"
    eye = np.eye(5)
    df["choice_probs"] = [json.dumps(eye[int(p) - 1].tolist())
                          for p in df["selected_position"]]
    return df.assign(condition="decoding", model="m")


def _permuted(seed: int = 1) -> pd.DataFrame:
    df = simulate_evaluations(20, k=5, n_perms=4, p_bias=0.0, rng=seed).to_frame()
    return df.assign(condition="permutation", model="m")


def test_a_decoding_table_runs_no_positional_test() -> None:
    res = analyze(_decoding(), FAST, rng=0)
    assert res.pob_icm is None and res.pob_unbp is None and not res.rejects
    d = res.to_dict()
    assert d["pob_unbp"]["reason"] == REASON_DECODING == d["pob_icm"]["reason"]
    grouped = analyze_groups(_decoding(), FAST, by=["model"], rng=0)
    assert grouped.groups[0].pob_unbp is None and not grouped.rejects


def test_decoding_rows_pooled_with_permuted_ones_are_refused() -> None:
    both = pd.concat([_decoding(), _permuted()], ignore_index=True)
    with pytest.raises(InputError, match="pools condition 'decoding'.*'permutation'"):
        analyze_groups(both, FAST, by=["model"], rng=0)
    with pytest.raises(InputError, match=r"--by \.\.\.,condition"):
        analyze(both, FAST, rng=0)
    apart = analyze_groups(both, FAST, by=["model", "condition"], rng=0)
    assert [g.pob_unbp is None for g in apart.groups] == [True, False]


def test_exact_mode_on_decoding_rows_has_no_pob_unbp_and_says_why() -> None:
    res = analyze_exact(_decoding(), FAST, rng=0)
    assert res.pob_unbp is None and res.unbp_reason == REASON_DECODING
    back = ExactAnalysis.from_dict(res.to_dict())
    assert back.unbp_reason == REASON_DECODING  # (json: the matrix holds NaN)
    assert json.dumps(back.to_dict()) == json.dumps(res.to_dict())
    grouped = analyze_exact_groups(_decoding(), FAST, by=["model"], rng=0)
    assert np.isnan(grouped.pob_unbp_pvalue_holm).all() and not grouped.rejects


@pytest.mark.parametrize("exact", [False, True])
def test_the_cli_says_no_test_applies_not_no_bias(tmp_path, exact) -> None:
    path = tmp_path / "decoding.csv"
    _decoding().to_csv(path, index=False)
    args = ["positional", "analyze", str(path), "--by", "model", "--n-boot", "50",
            "--n-resamples", "99", "--seed", "0"] + (["--exact"] if exact else [])
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert "No positional test applies" in out and "retrieval rank" in out
    assert "bias detected" not in out and "No positional bias" not in out
    pooled = tmp_path / "pooled.csv"
    pd.concat([_decoding(), _permuted()], ignore_index=True).to_csv(pooled, index=False)
    bad = runner.invoke(app, ["positional", "analyze", str(pooled), "--by", "model"])
    assert bad.exit_code == 2 and "analyse each condition apart" in bad.output
    assert "Traceback" not in bad.output


def test_the_labels_condition_is_identity_order_too() -> None:
    # random labels over the identity order: a position is still a retrieval rank
    labels = _decoding().assign(condition="labels")
    res = analyze(labels, FAST, rng=0)
    assert res.pob_icm is None and res.pob_unbp is None and not res.rejects
    assert res.to_dict()["pob_unbp"]["reason"] == REASON_IDENTITY_TESTS.format(
        condition="labels")
    assert analyze_exact(labels, FAST, rng=0).pob_unbp is None
    both = pd.concat([labels, _permuted()], ignore_index=True)
    with pytest.raises(InputError, match="pools condition 'labels'.*'permutation'"):
        analyze_groups(both, FAST, by=["model"], rng=0)
    apart = analyze_groups(both, FAST, by=["model", "condition"], rng=0)
    assert [g.pob_unbp is None for g in apart.groups] == [True, False]
