"""Exact mode end to end: a simulated audit with `choice_probabilities = true`."""

from __future__ import annotations

import pandas as pd
import pytest

from helpers import write_config
from recaudit.audit._config import load_audit_config
from recaudit.audit._run import run_audit
from recaudit.positional import AnalysisOptions, analyze, analyze_exact


def test_simulated_audit_records_vectors_and_exact_analysis_uses_them(tmp_path, retriever,
                                                                     emb_cache):
    path = write_config(tmp_path, cache_dir=emb_cache, n_queries=12, n_perms=10,
                        choice_probabilities=True)
    res = run_audit(load_audit_config(path), out_dir=tmp_path / "run", retriever=retriever)
    df = pd.read_parquet(res.evaluations_path)
    # helpers.SIM_MODEL: p_bias 0.4, discard rate 0.05 (= the outside mass)
    assert df["choice_probs"].notna().all()
    assert df["outside_mass"].eq(0.05).all()
    ex = analyze_exact(df, AnalysisOptions(n_boot=200), rng=0)
    assert ex.n_evaluations == len(df) and ex.n_missing == 0  # discards keep vectors
    # position 1's population share is 1/k + p_bias (1 - 1/k) = 0.55 at k = 4
    assert ex.position_distribution[0].value == pytest.approx(0.55, abs=0.05)
    sampled = analyze(df, AnalysisOptions(n_boot=200, n_resamples=99), rng=0)
    assert ex.pob_unbp.reject and ex.pob_unbp.L >= sampled.pob_unbp.L
