"""Recognising and loading report sources: tolerant of names, strict on essentials."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from report_synth import FIXTURES

from recaudit import InputError
from recaudit.report._load import FairnessRun, PositionalRun, load


def _analysis() -> list[dict]:
    return json.loads((FIXTURES / "positional_run" / "analysis.json").read_text())


def _fairness() -> dict:
    return json.loads((FIXTURES / "fairness_run" / "results.json").read_text())


def test_recognises_every_kind_of_source(positional_dir: Path, fairness_dir: Path) -> None:
    assert isinstance(load(positional_dir), PositionalRun)
    assert isinstance(load(positional_dir / "analysis.json"), PositionalRun)
    assert isinstance(load(_analysis()), PositionalRun)
    assert isinstance(load(_analysis()[0]), PositionalRun)  # one ungrouped object
    assert isinstance(load({"alpha": 0.01, "groups": _analysis()}), PositionalRun)
    assert isinstance(load(fairness_dir), FairnessRun)
    assert isinstance(load(fairness_dir / "results.json"), FairnessRun)
    one = _fairness()["MF"]
    run = load(one)
    assert isinstance(run, FairnessRun) and len(run.models) == 1


def test_positional_folder_reads_every_companion_file(positional_dir: Path) -> None:
    run = load(positional_dir)
    assert run.missing == ()
    assert run.seed == "20261129" and run.config_name == "config.resolved.toml"
    assert run.simulation and run.discard_examples
    # discards counted from the evaluations table agree with the analysis
    for model, by_reason in run.discards.items():
        assert sum(by_reason.values()) == sum(g.n_discarded for g in run.groups if g.model == model)


def test_missing_companions_are_listed_not_fatal(positional_dir: Path) -> None:
    for name in ("evaluations.parquet", "simulation.json", "config.resolved.toml"):
        (positional_dir / name).unlink()
    run = load(positional_dir)
    assert len(run.missing) == 3
    assert "evaluations.parquet" in run.missing[0] and "recaudit positional run" in run.missing[0]
    # discards then come from the analysis counts
    assert sum(sum(c.values()) for c in run.discards.values()) == sum(
        g.n_discarded for g in run.groups
    )


def test_json_only_source_says_the_folder_adds_more(positional_dir: Path) -> None:
    run = load(positional_dir / "analysis.json")
    assert len(run.missing) == 1 and "pass RUN_DIR" in run.missing[0]


def test_tolerates_naming_variations() -> None:
    obj = _analysis()[0]
    obj["sPB"] = obj.pop("spb")
    obj["POB-ICM"] = obj.pop("pob_icm")
    obj["position_distribution"] = [
        {"value": v, "ci_low": lo, "ci_high": hi}
        for v, lo, hi in zip(
            obj.pop("position_distribution"),
            obj.pop("position_distribution_ci_low"),
            obj.pop("position_distribution_ci_high"),
            strict=True,
        )
    ]
    group = load(obj).groups[0]
    assert group.spb.value == _analysis()[0]["spb"]["value"]
    assert (
        group.position_distribution[0].ci.low == _analysis()[0]["position_distribution_ci_low"][0]
    )


def test_position_distribution_without_cis() -> None:
    obj = _analysis()[0]
    del obj["position_distribution_ci_low"], obj["position_distribution_ci_high"]
    group = load(obj).groups[0]
    assert all(math.isnan(p.ci.low) for p in group.position_distribution)


def test_fairness_metric_names_are_normalised() -> None:
    res = _fairness()["MF"]
    res["overall"] = {k.upper(): v for k, v in res["overall"].items()}  # NDCG@10
    res["ib"] = {k.replace("hit@", "hit_rate_"): v for k, v in res["ib"].items()}  # hit_rate_10
    model = load(res).models[0].evaluation  # the library's FairnessEvaluation
    assert "ndcg@10" in model.overall and not math.isnan(model.inter_bias["hit@10"].ib.value)
    assert model.item_coverage[10].value == res["item_coverage@10"]


@pytest.mark.parametrize(
    ("drop", "match"),
    [
        ("pb", r"missing key `pb`.*recaudit positional analyze"),
        ("selection_rate_matrix", r"missing key `selection_rate_matrix`"),
        ("n_discarded", r"result #0 \(model 'llama-3.1-8b-instruct'\): missing key `n_discarded`"),
    ],
)
def test_missing_positional_key_is_named(drop: str, match: str) -> None:
    obj = _analysis()
    del obj[0][drop]
    with pytest.raises(InputError, match=match):
        load(obj)


def test_missing_nested_key_is_named() -> None:
    obj = _analysis()
    del obj[1]["pob_unbp"]["L"]
    with pytest.raises(InputError, match=r"result #1 .*pob_unbp: missing key `L`"):
        load(obj)


@pytest.mark.parametrize("drop", ["ib", "nrd", "rd", "overall"])
def test_missing_fairness_key_is_named(drop: str) -> None:
    res = _fairness()
    del res["SGL"][drop]
    with pytest.raises(
        InputError, match=rf"model 'SGL': missing key `{drop}`.*recaudit fairness evaluate"
    ):
        load(res)


def test_missing_coverage_is_named() -> None:
    res = _fairness()
    for key in [k for k in res["MF"] if k.startswith("item_coverage")]:
        del res["MF"][key]
    with pytest.raises(InputError, match=r"model 'MF': missing key `item_coverage@<N>`"):
        load(res)


def test_folder_without_analysis_says_how_to_make_it(positional_dir: Path) -> None:
    (positional_dir / "analysis.json").unlink()
    with pytest.raises(InputError, match=r"no analysis\.json.*recaudit positional analyze"):
        load(positional_dir)


def test_unrecognised_sources(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot tell what folder"):
        load(tmp_path)
    with pytest.raises(InputError, match="no such file or folder"):
        load(tmp_path / "absent.json")
    (tmp_path / "x.json").write_text('{"hello": 1}')
    with pytest.raises(InputError, match="cannot tell what"):
        load(tmp_path / "x.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(InputError, match="cannot read .* as JSON"):
        load(tmp_path / "bad.json")
    with pytest.raises(InputError, match="`kind` must be"):
        load({}, kind="other")  # type: ignore[arg-type]


def test_evaluations_without_discard_column(positional_dir: Path) -> None:
    import pandas as pd

    frame = pd.read_parquet(positional_dir / "evaluations.parquet").drop(columns="discard_reason")
    frame.to_parquet(positional_dir / "evaluations.parquet", index=False)
    with pytest.raises(
        InputError, match=r"missing column `discard_reason`.*recaudit positional run"
    ):
        load(positional_dir)


def test_fairness_study_run_folder(fairness_dir: Path, tmp_path: Path) -> None:
    """The results.json of `recaudit fairness run` nests evaluations per dataset."""
    per_model = json.loads((fairness_dir / "results.json").read_text())
    study = {
        "config": {"seed": 1},
        "datasets": {
            "ml-100k": {
                "models": {name: {"evaluation": ev, "train_seconds": 1.0}
                           for name, ev in per_model.items()}
            }
        },
    }
    (tmp_path / "results.json").write_text(json.dumps(study))
    (tmp_path / "ml-100k").mkdir()
    (tmp_path / "ml-100k" / "long_tail.parquet").write_bytes(
        (fairness_dir / "long_tail.parquet").read_bytes()
    )
    run = load(tmp_path)
    direct = load(fairness_dir)
    assert isinstance(run, FairnessRun)
    assert [m.name for m in run.models] == [m.name for m in direct.models]
    assert run.long_tail == direct.long_tail
    assert not run.missing
