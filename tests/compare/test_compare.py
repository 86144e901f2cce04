"""Paired comparisons of positional bias: statistics, adjustment and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests
from typer.testing import CliRunner

from recaudit._multiplicity import adjust_pvalues
from recaudit.cli import app
from recaudit.exceptions import InputError
from recaudit.positional import simulate_evaluations
from recaudit.positional._compare import Comparison, compare_systems
from recaudit.positional._unbp import query_position_shares

runner = CliRunner()


def _pair(seed: int = 0, n: int = 80) -> tuple[pd.DataFrame, pd.DataFrame]:
    a = simulate_evaluations(n, k=4, p_bias=0.3, rng=seed).to_frame()
    b = a.copy()
    b["selected_position"] = np.random.default_rng(seed + 1).integers(1, 5, len(b))
    return a, b


def _evals(frame: pd.DataFrame):  # type: ignore[no-untyped-def]
    from recaudit.positional import evaluations_from_table

    return evaluations_from_table(frame)


def test_paired_ci_matches_hand_rolled_bootstrap() -> None:
    a, b = _pair()
    ea, eb = _evals(a), _evals(b)
    (row,) = [c for c in compare_systems({"a": ea, "b": eb}, n_boot=400, rng=3)
              if c.measure == "pb_plugin"]
    assert row.paired
    xa, xb = query_position_shares(ea), query_position_shares(eb)
    gen = np.random.default_rng(3)
    n = xa.shape[0]
    reps = []
    for _ in range(400):
        w = gen.multinomial(n, np.full(n, 1.0 / n))
        qa, qb = w @ xa / n, w @ xb / n
        reps.append(0.5 * np.abs(qa - 0.25).sum() - 0.5 * np.abs(qb - 0.25).sum())
    lo, hi = np.quantile(reps, [0.025, 0.975])
    assert row.ci_low == pytest.approx(lo, abs=1e-9)
    assert row.ci_high == pytest.approx(hi, abs=1e-9)
    assert row.difference == pytest.approx(
        0.5 * np.abs(xa.mean(0) - 0.25).sum() - 0.5 * np.abs(xb.mean(0) - 0.25).sum())


def test_paired_interval_narrower_than_unpaired_for_correlated_systems() -> None:
    a, _ = _pair(n=120)
    b = a.copy()
    flip = np.random.default_rng(9).random(len(b)) < 0.2
    b.loc[flip, "selected_position"] = np.random.default_rng(10).integers(1, 5, flip.sum())
    paired = compare_systems({"a": _evals(a), "b": _evals(b)}, n_boot=500, rng=1)[0]
    b2 = b.iloc[1:].reset_index(drop=True)  # different keys: unpaired path
    unpaired = compare_systems({"a": _evals(a), "b": _evals(b2)}, n_boot=500, rng=1)[0]
    assert paired.paired and not unpaired.paired
    assert paired.ci_high - paired.ci_low < unpaired.ci_high - unpaired.ci_low


@pytest.mark.parametrize(("ours", "theirs"), [("holm", "holm"), ("bh", "fdr_bh")])
def test_adjustment_matches_statsmodels(ours: str, theirs: str) -> None:
    p = np.random.default_rng(0).uniform(0, 0.2, 12)
    np.testing.assert_allclose(adjust_pvalues(p, ours), multipletests(p, method=theirs)[1])


def test_adjustment_rejects_unknown_method() -> None:
    with pytest.raises(InputError, match="adjust"):
        adjust_pvalues([0.1], "bonferroni-ish")


def test_three_systems_give_every_pair_and_round_trip() -> None:
    a, b = _pair()
    c = a.copy()
    rows = compare_systems({"a": _evals(a), "b": _evals(b), "c": _evals(c)}, n_boot=200,
                           rng=0, adjust="bh")
    assert {(r.a, r.b) for r in rows} == {("a", "b"), ("a", "c"), ("b", "c")}
    assert all(r.pvalue_adjusted >= r.pvalue - 1e-12 for r in rows)
    ac = [r for r in rows if (r.a, r.b) == ("a", "c")]
    assert all(r.difference == 0.0 and r.pvalue == 1.0 for r in ac)
    assert Comparison.from_dict(rows[0].to_dict()) == rows[0]


def test_one_system_is_an_input_error() -> None:
    a, _ = _pair()
    with pytest.raises(InputError, match=">= 2 systems"):
        compare_systems({"a": _evals(a)})


def test_cli_tables_json_rows(tmp_path: Path) -> None:
    a, b = _pair()
    a.to_csv(tmp_path / "a.csv", index=False)
    b.to_csv(tmp_path / "b.csv", index=False)
    res = runner.invoke(app, ["positional", "compare", str(tmp_path / "a.csv"),
                              str(tmp_path / "b.csv"), "--n-boot", "200", "--seed", "1",
                              "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    keys = {"a", "b", "measure", "difference", "ci_low", "ci_high", "pvalue",
            "pvalue_adjusted", "paired"}
    assert all(keys <= set(r) for r in rows)
    assert {r["measure"] for r in rows} == {"pb_plugin", "first", "spb", "soft",
                                            "positional_share"}
    assert all(r["paired"] for r in rows)


def test_cli_run_folder_by_model_and_verdict(tmp_path: Path) -> None:
    a, b = _pair(n=150)
    run = tmp_path / "run"
    run.mkdir()
    pd.concat([a.assign(model="m1"), b.assign(model="m2")]).to_parquet(
        run / "evaluations.parquet")
    res = runner.invoke(app, ["positional", "compare", str(run), "--by", "model",
                              "--n-boot", "300", "--seed", "2"])
    assert res.exit_code == 0, res.output
    assert "m2 is less position-biased than m1" in " ".join(res.output.split())


@pytest.mark.parametrize("extra", [["--adjust", "foo"], ["--by", "nope"]])
def test_cli_bad_input_exits_2(tmp_path: Path, extra: list[str]) -> None:
    a, _ = _pair()
    a.to_csv(tmp_path / "a.csv", index=False)
    res = runner.invoke(app, ["positional", "compare", str(tmp_path / "a.csv"), *extra])
    assert res.exit_code == 2
    assert len(res.output.strip().splitlines()) == 1


def test_cli_missing_run_folder_exits_2(tmp_path: Path) -> None:
    res = runner.invoke(app, ["positional", "compare", str(tmp_path), str(tmp_path)])
    assert res.exit_code == 2


def test_run_gives_every_model_the_same_queries_and_orders(tmp_path, retriever, emb_cache):
    """The paired design comparisons rely on: one config's models see the same
    (query, order) keys, whatever the design kind."""
    from helpers import write_config
    from recaudit.audit import load_audit_config, run_audit

    models = "".join(f'[[models]]\nname = "{n}"\nbackend = "simulated"\np_bias = {p}\n\n'
                     for n, p in (("a", 0.1), ("b", 0.5), ("c", 0.0)))
    for kind in ("sampled", "shared"):
        folder = tmp_path / kind
        folder.mkdir()
        path = write_config(folder, cache_dir=emb_cache, n_queries=5, n_perms=4,
                            models=models)
        path.write_text(path.read_text(encoding="utf-8").replace(
            'kind = "sampled"', f'kind = "{kind}"'), encoding="utf-8")
        cfg = load_audit_config(path)
        table = pd.read_parquet(run_audit(cfg, out_dir=folder / "run",
                                          retriever=retriever).evaluations_path)
        keys = {m: set(g[["query_id", "perm_index", "order"]].itertuples(index=False))
                for m, g in table.groupby("model")}
        assert keys["a"] == keys["b"] == keys["c"] and len(keys["a"]) == 20


def test_split_measures_tell_strong_from_soft_bias_between_systems() -> None:
    # the same queries, orders and position-driven share (0.2): one system takes the
    # item at position 1 whatever it is (strong bias), the other the earliest relevant
    # candidate (soft only); the paired comparison puts the difference in sPB
    from recaudit.positional._scenarios import scenario_truth, simulate_scenario

    paper = simulate_scenario("paper", 200, k=5, p_bias=0.2, n_orders=16, rng=3)
    primacy = simulate_scenario("primacy", 200, k=5, p_bias=0.2, n_orders=16, rng=3)
    rows = {r.measure: r for r in compare_systems({"paper": paper, "primacy": primacy},
                                                  n_boot=200, rng=0)}
    truth = (scenario_truth("paper", k=5, p_bias=0.2, rng=0).spb
             - scenario_truth("primacy", k=5, p_bias=0.2, rng=0).spb)
    spb = rows["spb"]
    assert spb.paired and spb.ci_low > 0 and spb.ci_low <= truth <= spb.ci_high
    assert spb.pvalue_adjusted < 0.05
    assert rows["soft"].difference < 0  # primacy's effect is soft
    assert {"spb", "soft", "positional_share"} <= set(rows)


def test_an_unidentified_split_gives_nan_rows_not_a_number() -> None:
    from recaudit.positional._scenarios import simulate_scenario

    always = simulate_scenario("paper", 30, k=5, p_bias=1.0, rng=2)  # position 1 always
    other = simulate_scenario("paper", 30, k=5, p_bias=0.1, rng=2)
    rows = {r.measure: r for r in compare_systems({"a": always, "b": other}, n_boot=100,
                                                  rng=0)}
    assert np.isnan(rows["spb"].difference) and np.isnan(rows["spb"].pvalue_adjusted)
    assert np.isfinite(rows["pb_plugin"].difference)
