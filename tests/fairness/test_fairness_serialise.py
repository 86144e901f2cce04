"""to_dict / from_dict of the fairness results: round trips and the report's JSON forms."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from _fm_data import synthetic

from recaudit import InputError
from recaudit._io import to_jsonable
from recaudit.fairness import EvaluateOptions, FairnessEvaluation, evaluate
from recaudit.fairness.study import (
    DatasetResult,
    FairnessStudyResult,
    ModelResult,
    parse_fairness_config,
    run_fairness_study,
)


def _text(d: Any) -> str:
    """Order- and nan-aware equality of two JSON documents."""
    return json.dumps(d, default=str)


def _round_trip(x: FairnessEvaluation) -> FairnessEvaluation:
    back = FairnessEvaluation.from_dict(x.to_dict())
    assert _text(back.to_dict()) == _text(x.to_dict())
    return back


def _train() -> pd.DataFrame:
    return pd.DataFrame({"user_id": "x", "item_id": np.repeat(np.arange(60), np.arange(60))})


CASES = {
    "cis_and_pvalues": dict(
        attribute="gender", protected="F", n_items=80,
        options=EvaluateOptions(n=[5, 10], n_boot=60, n_resamples=59), rng=0,
    ),
    "no_cis_no_pvalues": dict(
        attribute="gender", protected="F", options=EvaluateOptions(n_boot=0, n_resamples=0)
    ),
    "intersections_small_groups_popularity": dict(
        attribute=["gender", "age"], protected=("F", "young"), train=_train(),
        options=EvaluateOptions(n=[10], n_boot=40, n_resamples=39, min_group_size=5,
                                resample_coverage=True, confidence_level=0.9),
        rng=1,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_round_trip(case: str) -> None:
    recs, test, users = synthetic(n_users=120, gap=0.5, seed=2)
    x = evaluate(recs, test, users, **CASES[case])  # type: ignore[arg-type]
    back = _round_trip(x)
    assert back.groups.keys() == x.groups.keys() and back.protected == x.protected
    assert back.inter_bias.keys() == x.inter_bias.keys() and back.n == x.n
    for key, ib in x.inter_bias.items():
        got = back.inter_bias[key]
        assert (got.metric, got.n) == (ib.metric, ib.n)
        assert got.rd.ci.confidence_level == ib.rd.ci.confidence_level
        assert math.isnan(got.pvalue) == math.isnan(ib.pvalue)
    assert back.per_user is None
    assert back.to_dataframe().shape == x.to_dataframe().shape


def test_round_trip_through_json_with_nulls() -> None:
    """The CLI writes nan as null; results.json writes NaN: both read back."""
    recs, test, users = synthetic(n_users=60)
    far = test.assign(item_id=test.item_id + 1000)  # RD undefined everywhere
    x = evaluate(recs, far, users, attribute="gender", protected="F",
                 options=EvaluateOptions(n=[5], n_boot=20, n_resamples=19), rng=0)
    for text in (json.dumps(to_jsonable(x.to_dict())), json.dumps(x.to_dict())):
        back = FairnessEvaluation.from_dict(json.loads(text))
        assert _text(back.to_dict()) == _text(x.to_dict())
        assert back.inter_bias["ndcg@5"].undefined_reason == x.inter_bias["ndcg@5"].undefined_reason


def _report_form() -> dict[str, Any]:
    """A fairness result as the report also reads it: aliases, bare numbers, no settings."""
    def iv(v: float) -> dict[str, Any]:
        return {"estimate": v, "ci": [v - 0.01, v + 0.01]}

    return {
        "groups": {"M": {"n_users": 40, "NDCG@10": iv(0.3), "hit_rate_10": iv(0.6)},
                   "F": {"n_users": 20, "NDCG@10": iv(0.2), "hit_rate_10": iv(0.5)}},
        "overall": {"NDCG@10": iv(0.27), "HR@10": iv(0.57), "coverage@10": 0.12},
        "arp@10": {"value": 150.0, "low": 140.0, "high": 160.0},
        "rd": {"ndcg@10": {"value": 0.2, "ci_low": 0.1, "ci_high": 0.3, "pvalue": 0.01},
               "hit@10": {"value": 0.09, "pvalue": None}},
        "nrd": {"ndcg@10": iv(0.6), "hit@10": 0.545},
        "ib": {"ndcg@10": iv(0.7), "hit@10": 0.7},
        "protected_group": "F",
        "alpha": 0.05,
    }


def test_reads_what_the_report_reads() -> None:
    r = FairnessEvaluation.from_dict(_report_form())
    assert r.protected == "F" and r.unprotected == ("M",) and r.n == (10,)
    assert r.groups["F"].protected and not r.groups["M"].protected
    assert r.groups["M"].metrics["hit@10"].ci.high == pytest.approx(0.61)
    assert r.overall["hit@10"].value == 0.57 and r.item_coverage[10].value == 0.12
    assert r.avg_popularity == {10: 150.0}
    assert r.inter_bias["ndcg@10"].pvalue == 0.01 and math.isnan(r.inter_bias["hit@10"].pvalue)
    assert math.isnan(r.inter_bias["ndcg@10"].pvalue_holm)
    assert r.inter_bias["hit@10"].nrd.value == 0.545 and r.n_users == 60
    again = FairnessEvaluation.from_dict(r.to_dict())  # the canonical form round-trips
    assert _text(again.to_dict()) == _text(r.to_dict())


@pytest.mark.parametrize("drop", ["ib", "nrd", "rd", "overall"])
def test_missing_key_is_named(drop: str) -> None:
    obj = _report_form()
    del obj[drop]
    with pytest.raises(InputError, match=rf"missing key `{drop}`.*recaudit fairness evaluate"):
        FairnessEvaluation.from_dict(obj)


def test_missing_coverage_and_pvalue_are_named() -> None:
    obj = _report_form()
    del obj["overall"]["coverage@10"]
    with pytest.raises(InputError, match=r"missing key `item_coverage@<N>`"):
        FairnessEvaluation.from_dict(obj)
    obj = _report_form()
    del obj["rd"]["ndcg@10"]["pvalue"]
    with pytest.raises(InputError, match=r"rd\.ndcg@10: missing key `pvalue`"):
        FairnessEvaluation.from_dict(obj)
    obj = _report_form()
    del obj["groups"]["M"]
    with pytest.raises(InputError, match=r"at least two group"):
        FairnessEvaluation.from_dict(obj)


def test_study_result_round_trip_built() -> None:
    recs, test, users = synthetic(n_users=60)
    ev = evaluate(recs, test, users, attribute="gender", protected="F",
                  options=EvaluateOptions(n=[5], n_boot=10, n_resamples=9), rng=0)
    result = FairnessStudyResult(
        output=Path("run"),
        config={"n": [5]},
        datasets={"toy": DatasetResult(
            name="toy", dataset={"name": "toy"}, long_tail_raw={"gini": 0.5}, long_tail={},
            groups={"protected": "F"}, split={"n_test": 60},
            models={"MostPop": ModelResult("MostPop", {"baseline": True}, ev),
                    "Stopped": ModelResult("Stopped", {"resumed": False}, None)},
        )},
    )
    back = FairnessStudyResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert _text(back.to_dict()) == _text(result.to_dict())
    assert back.datasets["toy"].models["Stopped"].evaluation is None
    assert back.datasets["toy"].models["MostPop"].evaluation is not None


def test_study_results_json_round_trip(tmp_path: Path) -> None:
    rows = [f"{u},{i}" for u in range(60) for i in range(u % 7, u % 7 + 12)]
    (tmp_path / "inter.csv").write_text("user_id,item_id\n" + "\n".join(rows) + "\n")
    genders = [f"{u},{'F' if u % 3 == 0 else 'M'}" for u in range(60)]
    (tmp_path / "users.csv").write_text("user_id,gender\n" + "\n".join(genders) + "\n")
    config = parse_fairness_config({
        "study": {"output": str(tmp_path / "run"), "n_boot": 20, "n_resamples": 19},
        "datasets": [{"name": "toy", "path": str(tmp_path / "inter.csv"), "format": "table",
                      "users": str(tmp_path / "users.csv"), "attribute": "gender",
                      "protected": "F"}],
    })
    result = run_fairness_study(config)
    on_disk = json.loads((tmp_path / "run" / "results.json").read_text())
    back = FairnessStudyResult.from_dict(on_disk, output=tmp_path / "run")
    assert _text(back.to_dict()) == _text(on_disk)
    assert _text(json.loads(json.dumps(result.to_dict(), default=str))) == _text(on_disk)
    ev = back.datasets["toy"].models["MostPop"].evaluation
    assert ev is not None and ev.protected == "F"


def test_study_result_needs_datasets() -> None:
    with pytest.raises(InputError, match="`datasets` is empty"):
        FairnessStudyResult.from_dict({"datasets": {}})


def test_popularity_bias_round_trip() -> None:
    recs, test, users = synthetic(n_users=120, gap=0.5, seed=2)
    train = recs[["user_id", "item_id"]].iloc[::2]
    x = evaluate(recs, test, users, attribute="gender", protected="F", train=train,
                 options=EvaluateOptions(n=[5, 10], n_boot=40, n_resamples=0), rng=0)
    back = _round_trip(x)
    assert x.popularity_bias is not None and back.popularity_bias is not None
    assert back.popularity_bias.overall.keys() == x.popularity_bias.overall.keys()
    assert "novelty@10" in back.popularity_bias.overall
    for name, section in x.popularity_bias.groups.items():
        for key, est in section.items():
            got = back.popularity_bias.groups[name][key]
            assert (got.value, got.ci.low, got.ci.high) == (est.value, est.ci.low, est.ci.high)
    assert back.popularity_bias.n_head_items == x.popularity_bias.n_head_items
    assert back.popularity_bias_reason is None


def test_popularity_bias_absent_reads_back_as_none() -> None:
    recs, test, users = synthetic(n_users=60)
    x = evaluate(recs, test, users, attribute="gender", protected="F",
                 options=EvaluateOptions(n=[5], n_boot=10, n_resamples=9), rng=0)
    back = _round_trip(x)
    assert back.popularity_bias is None and back.popularity_bias_reason == x.popularity_bias_reason
    old = x.to_dict()
    del old["popularity_bias"], old["popularity_bias_reason"]  # a JSON written before them
    r = FairnessEvaluation.from_dict(old)
    assert r.popularity_bias is None and r.popularity_bias_reason is None
    assert FairnessEvaluation.from_dict(_report_form()).popularity_bias is None


def _evaluation_json() -> dict[str, Any]:
    recs, test, users = synthetic(n_users=80, gap=0.5, seed=3)
    x = evaluate(recs, test, users, attribute="gender", protected="F", train=_train(),
                 options=EvaluateOptions(n=[5], n_boot=20, n_resamples=19), rng=0)
    return json.loads(json.dumps(to_jsonable(x.to_dict())))


@pytest.mark.parametrize(("path", "value", "message"), [
    (("groups", "F", "n_users"), "40", r"groups\.F: `n_users` must be a whole number, got '40'"),
    (("groups", "F", "n_users"), True, r"`n_users` must be a whole number, got True"),
    (("rd", "ndcg@5", "pvalue"), "0.5", r"rd\.ndcg@5: `pvalue` must be a number or null"),
    (("overall", "ndcg@5", "value"), True, r"`value` must be a number or null, got True"),
    (("overall", "ndcg@5", "ci_low"), "inf", r"`ci_low` must be a number or null, got 'inf'"),
    (("item_coverage@5", "value"), "0.3", r"`value` must be a number or null"),
    (("settings", "resample_coverage"), "false", r"`resample_coverage` must be true or false"),
    (("settings", "n_boot"), 20.5, r"`n_boot` must be a whole number, got 20.5"),
    (("popularity_bias", "n_head_items"), "12", r"`n_head_items` must be a whole number"),
    (("popularity", "gini"), "0.4", r"popularity: `gini` must be a number or null"),
])
def test_one_number_rule(path: tuple[str, ...], value: Any, message: str) -> None:
    """A fairness JSON with ``true`` or ``"0.5"`` where a number belongs is refused,
    naming the key, as a positional one is (issue 36: one number rule)."""
    doc = _evaluation_json()
    node = doc
    for key in path[:-1]:
        node = node[key]
    assert path[-1] in node, path
    node[path[-1]] = value
    with pytest.raises(InputError, match=message):
        FairnessEvaluation.from_dict(doc)
