"""`recaudit positional mitigate`: config, arms, comparison, validation on the simulator."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from mitigation_helpers import write_config
from typer.testing import CliRunner

from recaudit.audit import (
    MitigationComparison,
    agreement,
    compare_arms,
    load_mitigation_config,
    parse_mitigation,
    run_mitigation,
)
from recaudit.cli import app
from recaudit.exceptions import ConfigError
from recaudit.llm import SimulatedBackend, SimulationProfile
from recaudit.positional import evaluations_from_table, relevance_sets


def test_parse_mitigation_defaults_and_errors():
    m = parse_mitigation({})
    assert m.methods == ("ensemble", "calibration", "canonical") and m.ensemble_m == 3
    m = parse_mitigation({"methods": ["canonical", "ensemble"], "ensemble": {"m": 5}})
    assert m.methods == ("ensemble", "canonical") and m.suffix("ensemble").endswith(
        "(m=5,majority)")
    for bad, match in [
        ({"method": ["ensemble"]}, "unknown key `mitigation.method`"),
        ({"methods": ["voting"]}, "`mitigation.methods` must be"),
        ({"ensemble": {"m": 0}}, r"`mitigation.ensemble.m` must be an integer >= 1"),
        ({"ensemble": {"orders": 3}}, "unknown key `mitigation.ensemble.orders`"),
        ({"calibration": {"decision": "max"}}, "`mitigation.calibration.decision` must be"),
        ({"canonical": {"by": "price"}}, "`mitigation.canonical.by` must be"),
    ]:
        with pytest.raises(ConfigError, match=match):
            parse_mitigation(bad)


def test_unknown_audit_keys_still_rejected(tmp_path, emb_cache):
    path = write_config(tmp_path, cache_dir=emb_cache)
    path.write_text("bogus = 1\n" + path.read_text())
    with pytest.raises(ConfigError, match="unknown key `bogus`"):
        load_mitigation_config(path)


def _table(rows):
    return pd.DataFrame(rows, columns=["query_id", "order", "selected_position"])


def test_relevance_sets_and_agreement_by_hand():
    # one query, no position effect (item 1 at several positions): PB small but not 0;
    # with a null-like table the rule keeps the items selected at all.
    rows = [("a", "1 2 3", 1), ("a", "2 1 3", 2), ("a", "3 1 2", 2), ("a", "1 3 2", 1),
            ("b", "1 2 3", 2), ("b", "2 3 1", 1), ("b", "3 2 1", 2), ("b", "1 2 3", 2)]
    ev = evaluations_from_table(_table(rows))
    sets = relevance_sets(ev)
    assert sets.tolist()[0] == [True, False, False]  # query a always picks item 1
    assert sets[1, 1]  # query b mostly picks item 2
    same = agreement(ev, ev, n_boot=50, rng=0)
    assert same.iou.value == 1.0 and same.n_queries == 2
    # a mitigated run that always picks item 3 of query a: outside R_a
    mit = evaluations_from_table(_table([("a", "1 2 3", 3), ("a", "3 2 1", 1),
                                         ("b", "2 1 3", 1)]))
    agr = agreement(ev, mit, n_boot=50, rng=0)
    assert agr.inside.value == pytest.approx((0.0 + 1.0) / 2)
    rm = relevance_sets(mit)
    iou = [(sets[j] & rm[j]).sum() / (sets[j] | rm[j]).sum() for j in range(2)]
    assert not rm[0, 0] and agr.iou.value == pytest.approx(np.mean(iou))


@pytest.fixture(scope="module")
def study(tmp_path_factory, emb_cache, retriever):
    folder = tmp_path_factory.mktemp("mitigate")
    path = write_config(folder, cache_dir=emb_cache, n_queries=30, n_perms=10, p_bias=0.4)
    cfg, mcfg = load_mitigation_config(path)
    arms = run_mitigation(cfg, mcfg, out_dir=folder / "out", retriever=retriever)
    result = compare_arms(arms, mcfg, seed=cfg.seed, cfg=cfg)
    return cfg, mcfg, folder, arms, result


def _true_inside(cfg, arm, k=5):
    """Share of an arm's answers inside the simulator's TRUE relevance sets."""
    sim = SimulatedBackend(SimulationProfile.primacy(0.4, max_relevant=2), k=k, seed=cfg.seed)
    t = pd.read_parquet(arm.evaluations_path)
    t = t[t["selected_original_index"].notna()]
    inside = [int(i) in sim.relevance_set(q) for q, i in
              zip(t["query_id"], t["selected_original_index"], strict=True)]
    return float(np.mean(inside))


def test_mitigations_remove_the_simulated_bias(study):
    cfg, mcfg, folder, arms, result = study
    rows = {a["mitigation"]: a for a in result["groups"][0]["arms"]}
    none = rows["none"]
    assert none["pb"]["ci_low"] > 0.15  # p_bias 0.4: PB ~ 0.4 (1 - 1/5) = 0.32
    for method in ("ensemble", "canonical"):
        # order-independent answers: PB near 0 (plug-in bias only)
        assert rows[method]["pb"]["value"] < 0.1 < none["pb"]["ci_low"]
    # calibration overcorrects multiplicatively (see docs/mitigation.md) but halves PB
    assert rows["calibration"]["pb"]["value"] < none["pb"]["value"] / 2 + 0.05
    truth = {a.method: _true_inside(cfg, a) for a in arms}
    for method, value in truth.items():  # equal evaluations per query: pooled == mean
        assert rows[method]["inside_true_set"]["value"] == pytest.approx(value)
    # the unmitigated model lands in R about (1 - 0.4) + 0.4 * E|R|/k of the time
    assert truth["none"] < 0.85
    assert truth["ensemble"] > truth["none"]
    assert truth["calibration"] > 0.95  # dividing the prior out recovers R
    assert rows["ensemble"]["calls_multiplier"] == 3.0
    assert rows["calibration"]["calls_multiplier"] == pytest.approx(1 + 50 / 300)
    assert rows["canonical"]["calls_multiplier"] == 1.0
    assert none["iou_relevance_sets"]["value"] == 1.0


def test_mitigate_resumes_without_new_calls(study, retriever):
    cfg, mcfg, folder, arms, result = study
    prior_file = folder / "out" / "calibration_prior.json"
    before = prior_file.read_text()
    again = run_mitigation(cfg, mcfg, out_dir=folder / "out", retriever=retriever)
    assert prior_file.read_text() == before  # the prior is reused, not re-estimated
    assert compare_arms(again, mcfg, seed=cfg.seed, cfg=cfg) == result


def test_cli_writes_mitigation_json(study):
    cfg, mcfg, folder, arms, result = study
    res = CliRunner().invoke(app, ["positional", "mitigate", str(folder / "mitigate.toml"),
                                   "--out", str(folder / "out"), "--json"])
    assert res.exit_code == 0, res.output
    text = (folder / "out" / "mitigation.json").read_text()
    data = json.loads(text)
    assert data["kind"] == "mitigation"
    # read back into its type (calibration prior, TRUE-set shares) and written back the same
    typed = MitigationComparison.from_dict(data)
    assert json.dumps(typed.to_dict(), indent=2, allow_nan=False) == text
    assert typed.groups[0].arms[2].prior is not None
    assert [a["mitigation"] for a in data["groups"][0]["arms"]] == [
        "none", "ensemble", "calibration", "canonical"]
    res = CliRunner().invoke(app, ["positional", "mitigate", str(folder / "nope.toml")])
    assert res.exit_code != 0
    # OUT is a positional run folder too: the report shows every arm and before/after
    from recaudit.report import build_report

    report = build_report(folder / "out")
    assert "Mitigation, before and after" in report.html
    assert report.data["mitigation"]["groups"][0]["arms"][1]["mitigation"] == "ensemble"
    assert {g["model"] for g in json.loads((folder / "out" / "analysis.json").read_text())} \
        == {"sim" + mcfg.suffix(m) for m in ("none", *mcfg.methods)}


def test_cli_passes_tau_and_spb_repeats(study):
    """`--tau` / `--spb-repeats` reach both mitigation.json and the folder's analysis.json."""
    cfg, mcfg, folder, arms, result = study
    out = folder / "out"
    res = CliRunner().invoke(app, ["positional", "mitigate", str(folder / "mitigate.toml"),
                                   "--out", str(out), "--json", "--tau", "0.3",
                                   "--spb-repeats", "3"])
    assert res.exit_code == 0, res.output
    data = json.loads((out / "mitigation.json").read_text())
    assert data["analysis"]["tau"] == 0.3 and data["analysis"]["spb_repeats"] == 3
    spb = [a["spb_paper"] for g in data["groups"] for a in g["arms"]
           if a["spb_paper"] is not None]
    assert spb and all(s["tau"] == 0.3 and s["n_repeats"] == 3 for s in spb)
    analysis = json.loads((out / "analysis.json").read_text())
    assert all(row["tau"] == 0.3 for row in analysis)
    assert {row["spb_paper"]["n_repeats"] for row in analysis
            if row["spb_paper"]["value"] is not None} == {3}
    res = CliRunner().invoke(app, ["positional", "mitigate", str(folder / "mitigate.toml"),
                                   "--out", str(out), "--spb-repeats", "0"])
    assert res.exit_code != 0 and "--spb-repeats" in res.output
