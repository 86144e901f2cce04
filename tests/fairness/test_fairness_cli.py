"""`recaudit fairness evaluate` through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from _fm_data import synthetic
from typer.testing import CliRunner

from recaudit.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fairness-cli")
    recs, test, users = synthetic(n_users=90, gap=0.5, seed=3)
    paths = {"recs": root / "recs.csv", "test": root / "test.parquet", "users": root / "users.csv"}
    recs.to_csv(paths["recs"], index=False)
    test.to_parquet(paths["test"])
    users.to_csv(paths["users"], index=False)
    paths["train"] = root / "train.csv"
    recs[["user_id", "item_id"]].to_csv(paths["train"], index=False)
    return paths


def _base(files: dict[str, Path]) -> list[str]:
    return [
        "fairness",
        "evaluate",
        "--recs",
        str(files["recs"]),
        "--test",
        str(files["test"]),
        "--users",
        str(files["users"]),
        "--attribute",
        "gender",
        "--protected",
        "F",
        "--n-boot",
        "50",
        "--n-resamples",
        "49",
        "--seed",
        "0",
    ]


@pytest.mark.parametrize(
    "n_args", [["--n", "5", "10", "15"], ["--n", "5,10,15"], ["--n", "5", "--n", "10", "--n", "15"]]
)
def test_json_output_and_n_forms(files: dict[str, Path], n_args: list[str]) -> None:
    res = runner.invoke(app, [*_base(files), *n_args, "--json", "--train", str(files["train"])])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["n"] == [5, 10, 15]
    assert d["groups"]["F"]["n_users"] == 30
    assert set(d["groups"]["M"]["ndcg@15"]) == {"value", "ci_low", "ci_high"}
    assert {"value", "ci_low", "ci_high", "pvalue", "pvalue_holm"} <= set(d["rd"]["hit@5"])
    assert set(d["nrd"]["mrr@10"]) >= {"value", "ci_low", "ci_high"}
    assert set(d["ib"]["precision@5"]) >= {"value", "ci_low", "ci_high"}
    assert "recall@10" in d["overall"] and "item_coverage@15" in d
    assert d["n_users_excluded"] == 0 and "gini_exposure@5" in d and "avg_popularity@5" in d
    bias = d["popularity_bias"]
    keys = {f"{m}@{c}" for m in ("arp", "aplt", "aclt", "poprsp", "popreo", "novelty")
            for c in (5, 10, 15)}
    assert set(bias["overall"]) == keys and d["popularity_bias_reason"] is None
    assert set(bias["groups"]) == {"F", "M"} and set(bias["groups"]["F"]) == keys
    assert set(bias["groups"]["M"]["aplt@10"]) == {"value", "ci_low", "ci_high"}


def test_json_without_train_has_the_reason(files: dict[str, Path]) -> None:
    res = runner.invoke(app, [*_base(files), "--n", "5", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["popularity_bias"] is None and "--train" in d["popularity_bias_reason"]
    assert "avg_popularity@5" not in d


def _popularity_group_args(files: dict[str, Path], attribute: str, protected: str) -> list[str]:
    args = _base(files)
    args[args.index("--attribute") + 1] = attribute
    args[args.index("--protected") + 1] = protected
    return [*args, "--n", "10", "--min-group-size", "2"]


@pytest.mark.parametrize(
    ("attribute", "protected", "group"),
    [("popularity_group", "niche", "niche"),
     ("gender,popularity_group", "F,niche", "F & niche")],
)
def test_popularity_group_attribute(
    files: dict[str, Path], attribute: str, protected: str, group: str
) -> None:
    args = _popularity_group_args(files, attribute, protected)
    res = runner.invoke(app, [*args, "--train", str(files["train"]), "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["protected"] == group and group in d["popularity_bias"]["groups"]
    assert d["attribute"] == attribute.split(",")


def test_popularity_group_needs_train(files: dict[str, Path]) -> None:
    res = runner.invoke(app, _popularity_group_args(files, "popularity_group", "niche"))
    assert res.exit_code == 2
    assert "--train" in res.output and len(res.output.strip().splitlines()) == 1


def test_table_shows_popularity_bias(files: dict[str, Path]) -> None:
    res = runner.invoke(app, [*_base(files), "--n", "10", "--train", str(files["train"])],
                        env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    assert "Popularity bias" in res.stdout and "novelty" in res.stdout
    block = res.stdout[res.stdout.index("Popularity bias"):]
    assert max(len(line) for line in block.splitlines()) <= 80


def test_default_n_and_table(files: dict[str, Path]) -> None:
    res = runner.invoke(app, _base(files))
    assert res.exit_code == 0, res.output
    assert "Inter-bias" in res.stdout and "ndcg@15" in res.stdout


def test_same_numbers_as_the_library(files: dict[str, Path]) -> None:
    from recaudit.fairness import EvaluateOptions, evaluate

    res = runner.invoke(app, [*_base(files), "--n", "10", "--json"])
    d = json.loads(res.stdout)
    recs = pd.read_csv(files["recs"], dtype={"user_id": str, "item_id": str})
    test = pd.read_parquet(files["test"]).astype({"user_id": str, "item_id": str})
    users = pd.read_csv(files["users"], dtype={"user_id": str})
    r = evaluate(
        recs,
        test,
        users,
        attribute="gender",
        protected="F",
        options=EvaluateOptions(n=[10], n_boot=50, n_resamples=49),
        rng=0,
    )
    assert d["rd"]["ndcg@10"]["value"] == pytest.approx(r.inter_bias["ndcg@10"].rd.value)
    assert d["rd"]["ndcg@10"]["ci_low"] == pytest.approx(r.inter_bias["ndcg@10"].rd.ci.low)


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--protected", "X"], "protected group 'X'"),
        (["--n", "5", "ten"], "`--n` takes integers"),
        (["--min-group-size", "40"], "group 'F' has 30 evaluated users"),
        (["--n-items", "3"], "`n_items` = 3 is smaller"),
        (["--model", " "], "`--model` must be a printable, non-empty name"),
        (["--model", "a\x00b"], "`--model` must be a printable, non-empty name"),
    ],
)
def test_bad_input_exits_2(files: dict[str, Path], extra: list[str], fragment: str) -> None:
    res = runner.invoke(app, [*_base(files), *extra])
    assert res.exit_code == 2
    assert fragment in res.output and len(res.output.strip().splitlines()) == 1


def test_model_name_reaches_the_json_and_the_report(files: dict[str, Path],
                                                    tmp_path: Path) -> None:
    """`--model` names the recommender in --json and in `recaudit report` (the
    report never names a model after its file)."""
    from recaudit.report import build_report

    res = runner.invoke(app, [*_base(files), "--n", "10", "--model", "MostPop", "--json",
                              "--n-boot", "20", "--n-resamples", "0"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["model"] == "MostPop" and "groups" in out
    path = tmp_path / "evaluation-2026.json"
    path.write_text(res.stdout)
    report = build_report(path)
    assert [m["name"] for m in report.data["models"]] == ["MostPop"]
    assert report.data["verdict"].startswith("We evaluated one model, MostPop, on")
    table = runner.invoke(app, [*_base(files), "--n", "10", "--model", "MostPop",
                                "--n-boot", "20", "--n-resamples", "0"])
    assert table.exit_code == 0 and table.stdout.startswith("model: MostPop")
    assert " nan " not in table.stdout and "n/a" in table.stdout  # p not computed


def test_missing_file_and_stray_arguments(files: dict[str, Path], tmp_path: Path) -> None:
    args = _base(files)
    args[args.index("--recs") + 1] = str(tmp_path / "nope.csv")
    res = runner.invoke(app, args)
    assert res.exit_code == 2 and "file not found" in res.output
    res = runner.invoke(app, [*_base(files), "7"])
    assert res.exit_code == 2 and "unexpected arguments" in res.output


def test_recbole_atomic_users(files: dict[str, Path], tmp_path: Path) -> None:
    users = pd.read_csv(files["users"])
    atomic = tmp_path / "x.user"
    users.rename(columns={"user_id": "user_id:token", "gender": "gender:token"}).to_csv(
        atomic, sep="\t", index=False
    )
    args = _base(files)
    args[args.index("--users") + 1] = str(atomic)
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output


def test_resample_coverage_flag(files: dict[str, Path]) -> None:
    res = runner.invoke(app, [*_base(files), "--n", "5", "--resample-coverage", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["settings"]["resample_coverage"] is True
    assert d["item_coverage@5"]["ci_high"] <= d["item_coverage@5"]["value"]


@pytest.fixture(scope="module")
def candidates(files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every user's recommended and test items: a candidate table holding both."""
    recs, test = pd.read_csv(files["recs"]), pd.read_parquet(files["test"])
    path = tmp_path_factory.mktemp("candidates") / "uni100.csv"
    pairs = pd.concat([recs[["user_id", "item_id"]], test[["user_id", "item_id"]]])
    pairs.drop_duplicates().to_csv(path, index=False)
    return path


def test_sampled_protocol_warns_on_stderr_and_in_json(
    files: dict[str, Path], candidates: Path
) -> None:
    args = [*_base(files), "--candidates", str(candidates), "--protocol", "uni100", "--json"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["protocol"] == "uni100"
    assert any("Krichene & Rendle" in w for w in d["warnings"])
    assert "warning: sampled ranking (uni100)" in res.stderr
    assert "Krichene & Rendle, KDD 2020" in res.stderr
    plain = runner.invoke(app, [*_base(files), "--json"])
    full = json.loads(plain.stdout)
    assert full["protocol"] == "full" and "warnings" not in full
    assert "warning" not in plain.stderr
    # same lists, same numbers: only the label and the warnings differ
    assert d["rd"] == full["rd"]


def test_sampled_protocol_table_names_it(files: dict[str, Path], candidates: Path) -> None:
    res = runner.invoke(app, [*_base(files), "--candidates", str(candidates),
                              "--protocol", "pop100"])
    assert res.exit_code == 0, res.output
    assert "protocol: pop100" in res.stdout


@pytest.mark.parametrize(("extra", "fragment"), [
    (["--candidates", "CAND"], "`candidates` need `protocol`"),
    (["--protocol", "uni100"], "'uni100' ranks within sampled candidates"),
    (["--candidates", "CAND", "--protocol", "full"], "'full' ranks the whole catalog"),
    (["--protocol", "uni"], "`protocol` must be 'full', 'uniN' or 'popN'"),
    (["--candidates", "SMALL", "--protocol", "uni100"], "is not among the user's candidates"),
])
def test_bad_protocol_combinations_exit_2(
    files: dict[str, Path], candidates: Path, tmp_path: Path, extra: list[str], fragment: str
) -> None:
    small = tmp_path / "small.csv"
    pd.read_csv(candidates).iloc[1:].to_csv(small, index=False)
    extra = [{"CAND": str(candidates), "SMALL": str(small)}.get(a, a) for a in extra]
    res = runner.invoke(app, [*_base(files), *extra])
    assert res.exit_code == 2
    assert fragment in res.output and len(res.output.strip().splitlines()) == 1


# ---------------------------------------------------- --popularity-groups, --per-user
def test_popularity_groups_option(files: dict[str, Path]) -> None:
    args = _popularity_group_args(files, "popularity_group", "q1")
    res = runner.invoke(app, [*args, "--train", str(files["train"]),
                              "--popularity-groups", "quantile:3", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert set(d["groups"]) == {"q1", "q2", "q3"} and d["protected"] == "q1"
    bias = d["popularity_bias"]
    assert bias["user_popularity_method"] == "quantile:3"
    assert "method 'quantile', q=3" in bias["user_popularity_rule"]
    assert list(bias["user_popularity_groups"]) == ["q1", "q2", "q3"]
    default = runner.invoke(app, [*_base(files), "--n", "10", "--train", str(files["train"]),
                                  "--json"])
    assert json.loads(default.stdout)["popularity_bias"]["user_popularity_method"] == (
        "abdollahpouri")


@pytest.mark.parametrize(("extra", "fragment"), [
    (["--popularity-groups", "quantile:1", "--train", "TRAIN"],
     "`--popularity-groups` must be 'abdollahpouri', 'abdollahpouri:cumulative' or "
     "'quantile:Q' with Q an integer >= 2 (e.g. 'quantile:4'), got 'quantile:1'"),
    (["--popularity-groups", "niche", "--train", "TRAIN"], "got 'niche'"),
    (["--popularity-groups", "quantile:4"], "`--popularity-groups` needs `--train`"),
    (["--per-user", "rows.json"], "`--per-user` must name a .csv or .parquet file"),
])
def test_bad_popularity_groups_and_per_user_exit_2(
    files: dict[str, Path], extra: list[str], fragment: str
) -> None:
    extra = [str(files["train"]) if a == "TRAIN" else a for a in extra]
    res = runner.invoke(app, [*_base(files), "--n", "10", *extra])
    assert res.exit_code == 2
    assert fragment in res.output and len(res.output.strip().splitlines()) == 1


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_per_user_file_averages_to_the_json(
    files: dict[str, Path], tmp_path: Path, suffix: str
) -> None:
    out = tmp_path / f"rows{suffix}"
    res = runner.invoke(app, [*_base(files), "--n", "5", "10", "--train", str(files["train"]),
                              "--per-user", str(out), "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    rows = pd.read_csv(out) if suffix == ".csv" else pd.read_parquet(out)
    assert len(rows) == d["n_users"]
    assert {"user_id", "group", "n_relevant", "popularity_group"} <= set(rows.columns)
    assert set(rows.popularity_group) == set(d["popularity_bias"]["user_popularity_groups"])
    for key in ("ndcg@10", "hit@5", "mrr@10"):
        assert rows[key].mean() == pytest.approx(d["overall"][key]["value"], rel=1e-12)
    for key in ("arp@5", "aplt@10", "aclt@10", "novelty@5"):
        assert rows[key].mean() == pytest.approx(
            d["popularity_bias"]["overall"][key]["value"], rel=1e-12)
    for key in ("profile_popularity", "profile_tail_share", "test_tail_share"):
        assert rows[key].mean() == pytest.approx(
            d["popularity_bias"]["profile"]["overall"][key]["value"], rel=1e-12)
    for name, group in d["popularity_bias"]["user_popularity_groups"].items():
        assert (rows.popularity_group == name).sum() == group["n_users"]


def test_per_user_without_train_has_the_accuracy_columns(files: dict[str, Path],
                                                       tmp_path: Path) -> None:
    out = tmp_path / "rows.csv"
    res = runner.invoke(app, [*_base(files), "--n", "10", "--per-user", str(out)])
    assert res.exit_code == 0, res.output
    rows = pd.read_csv(out)
    assert list(rows.columns) == ["user_id", "group", "n_relevant", "ndcg@10", "precision@10",
                                  "recall@10", "hit@10", "mrr@10"]
