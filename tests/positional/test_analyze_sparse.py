"""analyze with sparse queries (0, 1 or 2+ valid evaluations) and decoding groups."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from recaudit.cli import app
from recaudit.positional import (
    AnalysisOptions,
    analyze,
    analyze_groups,
    evaluations_from_table,
    permutation_sensitivity,
    pob_unbp,
    positional_bias,
    simulate_evaluations,
    strong_positional_bias,
)
from recaudit.positional._analyze import REASON_ONE_ORDER

OPTS = {"n_resamples": 99, "n_boot": 50}
REASON_PS = "PS needs >= 2 per query"


@pytest.fixture(scope="module")
def sparse() -> pd.DataFrame:
    """30 queries: 5 with 0 valid evaluations, 8 with 1, 2 with 2, 15 with 10."""
    table = simulate_evaluations(30, k=4, n_perms=10, p_bias=0.3, rng=5).to_frame()
    table["selected_position"] = table["selected_position"].astype("Int64")
    rank = table.groupby("query_id").cumcount()
    code = pd.factorize(table["query_id"])[0]
    keep = np.select([code < 5, code < 13, code < 15], [0, 1, 2], default=10)
    table.loc[rank.to_numpy() >= keep, "selected_position"] = pd.NA
    return table


def _qualifying(table: pd.DataFrame) -> pd.DataFrame:
    valid = table.dropna(subset=["selected_position"])
    size = valid.groupby("query_id")["query_id"].transform("size")
    return valid[size >= 2].reset_index(drop=True)


def test_sparse_counts(sparse: pd.DataFrame) -> None:
    res = analyze(sparse, AnalysisOptions(**OPTS), rng=0)
    assert res.n_queries == 25
    assert res.n_queries_all_discarded == 5
    assert res.n_queries_excluded_ps == 8
    assert res.n_evaluations == 8 + 2 * 2 + 15 * 10
    assert res.n_discarded == 300 - res.n_evaluations
    d = res.to_dict()
    for name in ("ps", "ps_modal", "spb_paper"):
        assert d[name]["n_queries"] == 17 and d[name]["reason"] is None
    for name in ("pob_icm", "pob_unbp", "pb", "spb", "spb_soft", "positional_share"):
        assert d[name]["n_queries"] == 25 and d[name]["reason"] is None


def test_sparse_statistics_equal_the_qualifying_subset(sparse: pd.DataFrame) -> None:
    res = analyze(sparse, AnalysisOptions(**OPTS), rng=0)
    sub = evaluations_from_table(_qualifying(sparse))
    _, g_ps, g_ps2, _, g_spb, _ = np.random.default_rng(0).spawn(6)
    boot = {"n_boot": 50}
    ps_modal = permutation_sensitivity(sub, rng=g_ps, **boot)
    ps2 = permutation_sensitivity(sub, kind="pairwise", rng=g_ps2, **boot)
    spb = strong_positional_bias(sub, rng=g_spb, **boot)
    assert res.ps is not None and res.ps_modal is not None and res.spb_paper is not None
    assert (res.ps_modal.value, res.ps_modal.ci) == (ps_modal.value, ps_modal.ci)
    assert (res.ps.value, res.ps.ci) == (ps2.value, ps2.ci)
    assert (res.spb_paper.value, res.spb_paper.ci, res.spb_paper.p_hat) == (
        spb.value, spb.ci, spb.p_hat)
    # POB-UNBP and PB use every query with a valid evaluation.
    full = evaluations_from_table(sparse)
    assert res.pob_unbp is not None
    assert res.pob_unbp.L == pob_unbp(full).L
    assert res.pb.plugin == positional_bias(full, n_boot=50, rng=0).plugin
    assert res.spb is not None  # the relevance-set model uses every query too


def test_all_single_evaluation(sparse: pd.DataFrame) -> None:
    single = sparse.dropna(subset=["selected_position"]).groupby("query_id").head(1)
    res = analyze(single, AnalysisOptions(**OPTS), rng=0)
    assert res.n_queries_excluded_ps == res.n_queries == 25
    assert res.pob_unbp is not None and np.isfinite(res.pob_unbp.L)
    assert res.ps is None and res.ps_modal is None and res.spb_paper is None
    d = res.to_dict()
    assert d["ps_modal"]["value"] is None and d["ps_modal"]["n_queries"] == 0
    assert REASON_PS in d["ps_modal"]["reason"]
    assert "pairwise PS needs >= 2" in d["ps"]["reason"]
    assert "sPB needs >= 2" in d["spb_paper"]["reason"]
    assert d["pob_unbp"]["reason"] is None and d["pob_unbp"]["L"] is not None


def test_one_query_unbp_is_null_with_reason(sparse: pd.DataFrame) -> None:
    one = sparse[sparse["query_id"] == sparse["query_id"].iloc[-1]]
    d = analyze(one, AnalysisOptions(**OPTS), rng=0).to_dict()
    assert d["pob_unbp"]["L"] is None and "needs >= 2 queries" in d["pob_unbp"]["reason"]
    assert d["ps"]["value"] is not None


def test_decoding_group_has_no_tests() -> None:
    audit = simulate_evaluations(20, k=4, n_perms=10, p_bias=0.3, rng=1).to_frame()
    decoding = simulate_evaluations(20, k=4, n_perms=10, p_bias=0.0, rng=2).to_frame()
    decoding["order"] = "1 2 3 4"
    table = pd.concat(
        [audit.assign(condition="permutation"), decoding.assign(condition="decoding")],
        ignore_index=True,
    )
    grouped = analyze_groups(table, AnalysisOptions(**OPTS), by=["condition"], rng=0)
    dec, perm = grouped.groups
    assert dec.group == {"condition": "decoding"}
    assert dec.pob_icm is None and dec.pob_unbp is None
    assert dec.ps_modal is not None and dec.spb_paper is not None and np.isfinite(dec.pb.value)
    # reordering is what PS measures and what separates position from relevance
    assert dec.ps is None and dec.spb is None
    assert perm.pob_icm is not None and perm.pob_unbp is not None
    # Holm family = the applicable tests only.
    assert grouped.pob_icm_pvalue_holm[1] == perm.pob_icm.pvalue
    d_dec, _ = grouped.to_list()
    for name in ("pob_icm", "pob_unbp"):
        assert d_dec[name]["pvalue"] is None and d_dec[name]["pvalue_holm"] is None
        assert "decoding" in d_dec[name]["reason"]
    assert d_dec["ps_modal"]["reason"] is None
    assert d_dec["ps"]["reason"] == REASON_ONE_ORDER
    assert "identity-order" in d_dec["spb"]["reason"]


def test_cli_json_sparse(sparse: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "sparse.csv"
    sparse.to_csv(path, index=False)
    fast = ["--n-resamples", "99", "--n-boot", "50", "--seed", "1", "--quiet"]
    out = CliRunner().invoke(app, ["positional", "analyze", str(path), "--json", *fast])
    assert out.exit_code == 0, out.output
    d = json.loads(out.stdout)
    for key in (
        "n_queries",
        "n_evaluations",
        "n_discarded",
        "n_queries_all_discarded",
        "n_queries_excluded_ps",
        "k",
        "position_distribution",
        "selection_rate_matrix",
    ):
        assert key in d
    assert {"statistic", "pvalue", "pvalue_asymptotic", "n_queries", "reason"} <= set(d["pob_icm"])
    assert {"L", "pvalue", "reject", "n_queries", "reason"} <= set(d["pob_unbp"])
    for name in ("ps", "pb", "spb"):
        assert {"value", "ci_low", "ci_high", "n_queries", "reason"} <= set(d[name])
    assert d["n_queries_excluded_ps"] == 8 and d["ps"]["n_queries"] == 17
    # The table output handles null statistics.
    single = sparse.dropna(subset=["selected_position"]).groupby("query_id").head(1)
    single.to_csv(path, index=False)
    out = CliRunner().invoke(app, ["positional", "analyze", str(path), *fast])
    assert out.exit_code == 0, out.output
    assert "n/a" in out.stdout
