"""`recaudit fairness run` through the real CLI (baselines only: no training)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from recaudit.cli import app

from .conftest import FIXTURES


def write_config(tmp_path, extra: str = "") -> str:
    rows = ["user_id,item_id"] + [f"{u},{i}" for u in range(60) for i in range(u % 7, u % 7 + 12)]
    (tmp_path / "inter.csv").write_text("\n".join(rows) + "\n")
    users = ["user_id,gender"] + [f"{u},{'F' if u % 3 == 0 else 'M'}" for u in range(60)]
    (tmp_path / "users.csv").write_text("\n".join(users) + "\n")
    config = tmp_path / "study.toml"
    config.write_text(
        f"""
[study]
output = "{tmp_path / "run"}"
n_boot = 20
n_resamples = 19
{extra}
[[datasets]]
name = "toy"
path = "{tmp_path / "inter.csv"}"
users = "{tmp_path / "users.csv"}"
format = "table"
attribute = "gender"
protected = "F"
"""
    )
    return str(config)


def test_run_baselines_json(tmp_path):
    result = CliRunner().invoke(
        app, ["fairness", "run", write_config(tmp_path), "--json", "--quiet"]
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    models = out["datasets"]["toy"]["models"]
    assert set(models) == {"MostPop", "Random"}
    assert models["MostPop"]["evaluation"]["protected"] == "F"
    assert (tmp_path / "run" / "toy" / "recs" / "Random.csv").exists()


def test_unknown_key_exits_2(tmp_path):
    result = CliRunner().invoke(app, ["fairness", "run", write_config(tmp_path, "colour = 1")])
    assert result.exit_code == 2
    # (rich markup in cli/_common.exit_on_error currently swallows the "[study]" text)
    assert "unknown key `colour` in" in result.output and "allowed" in result.output


def test_data_override_needs_existing_path(tmp_path):
    result = CliRunner().invoke(
        app, ["fairness", "run", write_config(tmp_path), "--data", str(FIXTURES / "nope.csv")]
    )
    assert result.exit_code == 2
    assert "table not found" in result.output


def test_run_with_protocols_prints_how_models_move(tmp_path):
    config = write_config(tmp_path, 'protocols = ["full", "uni5", "pop5"]')
    result = CliRunner().invoke(app, ["fairness", "run", config, "--quiet"])
    assert result.exit_code == 0, result.output
    assert "Protocols: NDCG@10, RD-NDCG@10, IB-NDCG@10" in result.stdout
    for name in ("uni5", "pop5", "MostPop", "Random"):
        assert name in result.stdout
    result = CliRunner().invoke(app, ["fairness", "run", config, "--json", "--quiet"])
    out = json.loads(result.stdout)
    shifts = out["protocol_shifts"]
    assert len(shifts) == 2 * 3
    assert {r["protocol"] for r in shifts} == {"full", "uni5", "pop5"}
    assert all(r["delta_ndcg"] == 0 for r in shifts if r["protocol"] == "full")
    most_pop = out["datasets"]["toy"]["models"]["MostPop"]
    assert list(most_pop["evaluations"]) == ["full", "uni5", "pop5"]
    assert most_pop["evaluation"] == most_pop["evaluations"]["full"]
    assert most_pop["evaluations"]["uni5"]["warnings"]
    folder = tmp_path / "run" / "toy"
    assert (folder / "candidates" / "uni5.parquet").exists()
    assert (folder / "recs" / "pop5" / "MostPop.parquet").exists()


def test_run_without_protocols_has_no_shift_table(tmp_path):
    result = CliRunner().invoke(app, ["fairness", "run", write_config(tmp_path), "--quiet"])
    assert result.exit_code == 0, result.output
    assert "Protocols:" not in result.stdout
