"""The typed study config: unknown keys and bad values are errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from recaudit import ConfigError
from recaudit.fairness.study import default_config_path, load_fairness_config, parse_fairness_config


def base() -> dict:
    return {
        "study": {"output": "out"},
        "datasets": [
            {"path": "data/ml", "format": "recbole", "attribute": "gender", "protected": "F"}
        ],
        "models": {"MF": {"grid": {"learning_rate": [0.01, 0.001]}}},
    }


def test_parse_defaults():
    config = parse_fairness_config(base())
    assert config.evaluate.n == (5, 10, 15) and config.list_length == 20 and config.epochs == 20
    assert config.baselines == ("MostPop", "Random")
    (dataset,) = config.datasets
    assert dataset.name == "ml" and dataset.sample == 100_000 and dataset.seed == 2020
    assert config.models[0].grid == {"learning_rate": (0.01, 0.001)}


@pytest.mark.parametrize(
    "where,key,pattern",
    [
        (
            ("study",),
            "outptu",
            r"unknown key `outptu` in \[study\] of config; allowed keys: baselines, epochs",
        ),
        (
            ("datasets", 0),
            "protect",
            r"unknown key `protect` in \[\[datasets\]\] #1 of config; allowed keys: attribute",
        ),
        (
            ("models", "MF"),
            "grids",
            r"unknown key `grids` in \[models.MF\] of config; allowed keys: epochs, grid, settings",
        ),
        ((), "extra", r"unknown key `extra` in config; allowed keys: datasets, models, study"),
    ],
)
def test_unknown_keys_are_errors(where, key, pattern):
    raw = base()
    table = raw
    for part in where:
        table = table[part]
    table[key] = 1
    with pytest.raises(ConfigError, match=pattern):
        parse_fairness_config(raw)


def test_bad_values():
    raw = base()
    raw["models"]["Wide"] = {}
    with pytest.raises(ConfigError, match=r"unknown model 'Wide'; choose one of ItemKNN, MF"):
        parse_fairness_config(raw)
    raw = base()
    raw["study"]["epochs"] = 0
    with pytest.raises(
        ConfigError, match=r"`epochs` in \[study\] of config must be a positive integer, got 0"
    ):
        parse_fairness_config(raw)
    raw = base()
    raw["study"]["n"] = [5, 30]
    with pytest.raises(
        ConfigError,
        match=r"`list_length` in \[study\] of config \(20\) must be >= the largest `n` \(30\)",
    ):
        parse_fairness_config(raw)
    raw = base()
    raw["datasets"][0]["format"] = "csv"
    with pytest.raises(
        ConfigError, match=r"`format` in \[\[datasets\]\] #1 of config must be one of recbole"
    ):
        parse_fairness_config(raw)
    raw = base()
    del raw["datasets"][0]["attribute"]
    with pytest.raises(ConfigError, match=r"missing key `attribute` in \[\[datasets\]\] #1"):
        parse_fairness_config(raw)
    raw = base()
    raw["models"]["MF"]["grid"]["learning_rate"] = 0.01
    with pytest.raises(
        ConfigError,
        match=r"`grid.learning_rate` in \[models.MF\] of config must be a non-empty list",
    ):
        parse_fairness_config(raw)
    raw = base()
    raw["study"]["baselines"] = ["Pop"]
    with pytest.raises(ConfigError, match=r"unknown baseline 'Pop'"):
        parse_fairness_config(raw)


def test_packaged_default_config_parses():
    config = load_fairness_config(default_config_path())
    assert [m.name for m in config.models] == [
        "ItemKNN",
        "MF",
        "DMF",
        "NeuMF",
        "NNCF",
        "NGCF",
        "SGL",
        "LightGCN",
        "DGCF",
    ]
    assert config.datasets[0].attribute == "gender" and config.datasets[0].protected == "F"
    # packaged: relative paths start at the working directory
    assert config.datasets[0].path == Path.cwd() / "../shared/data/ml-100k"


def test_bad_toml(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[study\n")
    with pytest.raises(ConfigError, match=r"is not valid TOML"):
        load_fairness_config(path)
    with pytest.raises(ConfigError, match=r"config file not found"):
        load_fairness_config(tmp_path / "missing.toml")


def test_import_does_not_load_recbole():
    import subprocess
    import sys

    code = (
        "import sys, recaudit.fairness, recaudit.fairness.study.models, recaudit.cli; "
        "print('recbole' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_protocols_default_and_forms():
    assert parse_fairness_config(base()).protocols == ("full",)
    raw = base()
    raw["study"]["protocols"] = ["full", "uni100", "pop100", "uni7"]
    assert parse_fairness_config(raw).protocols == ("full", "uni100", "pop100", "uni7")
    assert parse_fairness_config(raw).to_dict()["protocols"] == ["full", "uni100", "pop100", "uni7"]


@pytest.mark.parametrize(("value", "pattern"), [
    (["uni0"], r"`protocols` in \[study\] of config must list 'full', 'uniN' or 'popN' "
               r"\(N a positive integer, e\.g\. 'uni100', 'pop100'\), got 'uni0'"),
    (["full", "sampled"], r"must list 'full', 'uniN' or 'popN' .*got 'sampled'"),
    ([100], r"must list 'full', 'uniN' or 'popN' .*got 100"),
    ([], r"`protocols` in \[study\] of config must be a non-empty list of protocol names"),
    ("uni100", r"must be a non-empty list of protocol names, got 'uni100'"),
    (["uni100", "uni100"], r"`protocols` in \[study\] of config must be distinct"),
])
def test_bad_protocols(value, pattern):
    raw = base()
    raw["study"]["protocols"] = value
    with pytest.raises(ConfigError, match=pattern):
        parse_fairness_config(raw)


def test_popularity_groups_default_and_forms():
    config = parse_fairness_config(base())
    assert config.evaluate.popularity_groups.name == "abdollahpouri"
    for name in ("abdollahpouri", "abdollahpouri:cumulative", "quantile:4"):
        raw = base()
        raw["study"]["popularity_groups"] = name
        config = parse_fairness_config(raw)
        assert config.to_dict()["popularity_groups"] == name
        options = config.evaluate_options(config.datasets[0])
        assert options.popularity_groups.name == name


@pytest.mark.parametrize(("value", "pattern"), [
    ("quantile:1", r"`popularity_groups` in \[study\] of config must be 'abdollahpouri', "
                   r"'abdollahpouri:cumulative' or 'quantile:Q' with Q an integer >= 2 "
                   r"\(e\.g\. 'quantile:4'\), got 'quantile:1'"),
    ("niche", r"`popularity_groups` in \[study\] of config must be .*got 'niche'"),
    (4, r"`popularity_groups` in \[study\] of config must be a string, got 4"),
])
def test_bad_popularity_groups(value, pattern):
    raw = base()
    raw["study"]["popularity_groups"] = value
    with pytest.raises(ConfigError, match=pattern):
        parse_fairness_config(raw)


@pytest.mark.parametrize(("where", "key", "value", "pattern"), [
    (("study",), "epochs", 10**9, r"`epochs` in \[study\] of config must be <= 10,000 \("),
    (("models", "MF"), "epochs", 10**9, r"`epochs` in \[models.MF\] of config must be <= 10,000"),
    (("study",), "num_threads", 10**6, r"`num_threads` in \[study\] of config must be <= \d+ "
                                        r"\(this machine has \d+ cores"),
    (("study",), "epochs", True, r"`epochs` in \[study\] of config must be a positive integer"),
])
def test_sizes_have_upper_bounds(where, key, value, pattern):
    # issue 34: a number that parses but cannot run is refused up front, naming the key
    raw = base()
    table = raw
    for part in where:
        table = table[part]
    table[key] = value
    with pytest.raises(ConfigError, match=pattern):
        parse_fairness_config(raw)
