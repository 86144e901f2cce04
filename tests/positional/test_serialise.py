"""Result types read their own JSON back: ``from_dict(to_dict(x)).to_dict() == to_dict(x)``.

On real analyses of the synthetic tables of tests/helpers.py: grouped with Holm and
the identity-order conditions (``decoding``: no POB tests; ``labels``: borrowed
threshold), fewer than 5 queries (null CIs with ``ci_reason``), one query (no
POB-UNBP), a fixed ``tau``, exact mode.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import pytest

from helpers import synthetic_table
from recaudit import InputError
from recaudit._io import to_jsonable
from recaudit._stats import ConfidenceInterval, Estimate
from recaudit.positional import (
    AnalysisOptions,
    GroupedAnalysis,
    GroupedExactAnalysis,
    PositionalAnalysis,
    analyze,
    analyze_exact,
    analyze_exact_groups,
    analyze_groups,
)
from recaudit.positional._analysis_json import Coverage
from recaudit.positional._crossfit import PositionalBiasResult
from recaudit.positional._exact import ExactAnalysis
from recaudit.positional._metrics import StrongBiasResult
from recaudit.positional._strong import StrongSoftResult

FAST = {"n_boot": 100, "n_resamples": 49}


def _json(obj: Any) -> Any:
    """What a file holds: strict JSON (nan as null), read back."""
    return json.loads(json.dumps(to_jsonable(obj), allow_nan=False))


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    frame, _ = synthetic_table(models={"biased": 0.5, "fair": 0.0}, n_queries=12, n_evals=6,
                               discard_rate=0.05, seed=2)
    return frame


@pytest.fixture(scope="module")
def grouped(table: pd.DataFrame) -> GroupedAnalysis:
    return analyze_groups(table, AnalysisOptions(**FAST),
                          by=["model", "temperature", "condition"], rng=1)


def test_grouped_analysis_round_trips_through_json(grouped: GroupedAnalysis) -> None:
    rows = _json(grouped.to_list())
    conditions = {r["condition"] for r in rows}
    assert {"decoding", "labels", "permutation"} <= conditions
    # None statistics are in there: decoding has no POB tests, identity orders no split
    assert any(g.pob_icm is None for g in grouped.groups)
    assert any(g.spb is None for g in grouped.groups)
    back = GroupedAnalysis.from_list(rows)
    assert back.by == ("model", "temperature", "condition")
    assert _json(back.to_list()) == rows
    # and straight from to_dict() (nan, numpy scalars), without the file in between
    for g in grouped.groups:
        assert _json(PositionalAnalysis.from_dict(g.to_dict()).to_dict()) == _json(g.to_dict())


def test_statistics_read_back_as_the_library_types(grouped: GroupedAnalysis) -> None:
    back = GroupedAnalysis.from_list(_json(grouped.to_list()))
    for a, b in zip(grouped.groups, back.groups, strict=True):
        assert b.group == a.group and b.tau == a.tau
        assert b.coverage == a.coverage
        assert (a.pob_icm is None) == (b.pob_icm is None)
        if a.pob_icm is not None and b.pob_icm is not None:
            assert b.pob_icm.n_rows == a.pob_icm.n_rows
            assert b.pob_icm.caveat == a.pob_icm.caveat
        assert isinstance(b.pb, PositionalBiasResult) and b.pb.favoured == a.pb.favoured
        assert (a.spb is None) == (b.spb is None)
        assert b.spb is None or isinstance(b.spb, StrongSoftResult)
        assert b.spb_paper is None or isinstance(b.spb_paper, StrongBiasResult)
        assert b.spb_threshold_from == a.spb_threshold_from
        np.testing.assert_array_equal(b.selection_rate_matrix, a.selection_rate_matrix)
    np.testing.assert_array_equal(back.pob_icm_pvalue_holm, grouped.pob_icm_pvalue_holm)
    np.testing.assert_array_equal(back.pob_unbp_pvalue_holm, grouped.pob_unbp_pvalue_holm)
    assert back.rejects == grouped.rejects


def test_a_borrowed_threshold_and_a_fixed_tau_round_trip(table: pd.DataFrame) -> None:
    grouped = analyze_groups(table, AnalysisOptions(**FAST), by=["model", "condition"], rng=2)
    borrowed = [g for g in grouped.groups if g.spb_threshold_from]
    assert borrowed
    for g in borrowed:
        d = _json(g.to_dict())
        assert _json(PositionalAnalysis.from_dict(d).to_dict()) == d
    fixed = analyze(table[table["condition"] == "permutation"], AnalysisOptions(tau=0.8, **FAST),
                    rng=3)
    d = _json(fixed.to_dict())
    assert d["tau"] == 0.8 and _json(PositionalAnalysis.from_dict(d).to_dict()) == d


@pytest.mark.parametrize("n_queries", [1, 3])
def test_few_queries_null_cis_round_trip(table: pd.DataFrame, n_queries: int) -> None:
    part = table[(table["condition"] == "permutation") & (table["model"] == "biased")
                 & table["query_id"].isin([f"q{i}" for i in range(n_queries)])]
    res = analyze(part, AnalysisOptions(**FAST), rng=4)
    d = _json(res.to_dict())
    assert d["pb"]["ci_low"] is None and "ci_reason" in d["pb"]
    if n_queries == 1:
        assert d["pob_unbp"]["reason"] is not None
    back = PositionalAnalysis.from_dict(d)
    assert (back.pob_unbp is None) == (n_queries == 1)
    assert _json(back.to_dict()) == d


def _exact_frame(table: pd.DataFrame) -> pd.DataFrame:
    part = table[table["condition"] == "permutation"].dropna(subset=["selected_position"])
    part = part.copy()
    k = 5
    part["choice_probs"] = [json.dumps(np.eye(k)[int(p) - 1].tolist())
                            for p in part["selected_position"]]
    return part


def test_exact_mode_round_trips(table: pd.DataFrame) -> None:
    frame = _exact_frame(table)
    one = analyze_exact(frame[frame["model"] == "biased"], AnalysisOptions(n_boot=100), rng=5)
    d = _json(one.to_dict())
    assert _json(ExactAnalysis.from_dict(d).to_dict()) == d
    grouped = analyze_exact_groups(frame, AnalysisOptions(n_boot=100),
                                   by=["model", "temperature"], rng=5)
    rows = _json(grouped.to_list())
    back = GroupedExactAnalysis.from_list(rows)
    assert back.by == ("model", "temperature") and _json(back.to_list()) == rows


def test_small_types_round_trip() -> None:
    ci = ConfidenceInterval(0.1, float("nan"), 0.9, "wilson")
    assert _json(ConfidenceInterval.from_dict(_json(ci.to_dict())).to_dict()) == _json(
        ci.to_dict())
    est = Estimate.from_dict({"value": 0.5, "ci_low": None, "ci_high": 0.7},
                             confidence_level=0.9)
    assert np.isnan(est.ci.low) and est.ci.confidence_level == 0.9
    assert Coverage.from_dict(Coverage(3, "why").to_dict()) == Coverage(3, "why")


def test_missing_or_wrong_keys_are_named() -> None:
    with pytest.raises(InputError, match=r"Estimate: missing key `ci_low`"):
        Estimate.from_dict({"value": 1.0})
    with pytest.raises(InputError, match=r"Estimate: `value` must be a number or null"):
        Estimate.from_dict({"value": "x", "ci_low": 0, "ci_high": 1})
    with pytest.raises(InputError, match=r"PositionalAnalysis must be a JSON object"):
        PositionalAnalysis.from_dict([])  # type: ignore[arg-type]
