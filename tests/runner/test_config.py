"""Config parsing: unknown keys named with the allowed ones, clear value errors, and a
bad config writes nothing (everything is validated before the run folder exists)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from helpers import write_config
from recaudit.audit._config import (
    DesignConfig,
    LocalParams,
    OpenAIParams,
    SimulatedParams,
    config_hash,
    load_audit_config,
)
from recaudit.cli import app
from recaudit.exceptions import ConfigError

runner = CliRunner()


def edit(path, old, new):
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def test_defaults_and_types(tmp_path, emb_cache):
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache))
    assert cfg.design == DesignConfig(kind="sampled", n_perms=5, samples_per_order=1)
    assert cfg.catalog.path == tmp_path / "catalog.csv"
    assert cfg.models[0].params == SimulatedParams(p_bias=0.4, discard_rate=0.05)
    assert cfg.prompt.max_tokens == 96 and cfg.prompt.identifiers == "positional"
    assert cfg.retrieval.k == (4,)


def test_openai_model_keys(tmp_path, emb_cache, monkeypatch):
    monkeypatch.setenv("MY_KEY", "x")
    path = write_config(tmp_path, cache_dir=emb_cache, models="""\
[[models]]
name = "gpt"
backend = "openai"
base_url = "https://api.example.com/v1"
api_key_env = "MY_KEY"
rate_limit_per_s = 2.5
""")
    p = load_audit_config(path).models[0].params
    assert p == OpenAIParams(base_url="https://api.example.com/v1", model="gpt",
                             api_key_env="MY_KEY", rate_limit_per_s=2.5)


def test_local_model_is_a_packaged_name_or_an_existing_path(tmp_path, emb_cache):
    """A packaged model name stays a name (nothing is located while parsing, so it
    parses without the package); anything else is a path that must exist."""
    local = """\
[[models]]
name = "m"
backend = "local"
model = "{model}"
"""
    for model in ("gemma3-270m", "smollm2-135m"):
        path = write_config(tmp_path, cache_dir=emb_cache, models=local.format(model=model))
        assert load_audit_config(path).models[0].params == LocalParams(model=model)
    (tmp_path / "my-model").mkdir()
    path = write_config(tmp_path, cache_dir=emb_cache, models=local.format(model="my-model"))
    assert load_audit_config(path).models[0].params == LocalParams(model=tmp_path / "my-model")
    path = write_config(tmp_path, cache_dir=emb_cache, models=local.format(model="gemma3"))
    with pytest.raises(ConfigError, match=r"`models.m.model`: 'gemma3' is neither a packaged "
                                          r"model \(smollm2-135m, gemma3-270m\) nor an "
                                          r"existing path"):
        load_audit_config(path)


def test_hash_ignores_operational_keys(tmp_path, emb_cache):
    path = write_config(tmp_path, cache_dir=emb_cache, delay_s=0.0)
    h = config_hash(load_audit_config(path))
    edit(path, "concurrency = 4", "concurrency = 1")
    edit(path, "delay_s = 0.0", "delay_s = 0.5")
    assert config_hash(load_audit_config(path)) == h
    edit(path, "n_perms = 5", "n_perms = 6")
    assert config_hash(load_audit_config(path)) != h


BAD = [
    ("seed = 7", "seed = 7\ntemprature = [0.2]",
     r"unknown key `temprature`; allowed keys: catalog, queries, retrieval, prompt"),
    ('kind = "sampled"', 'kind = "sampled"\nperms = 3',
     r"unknown key `design.perms`; allowed keys in \[design\]: kind, n_perms, samples_per_order"),
    ("p_bias = 0.4", 'p_bias = 0.4\nbase_url = "http://x"',
     r"unknown key `models.sim.base_url`; allowed keys in \[models.sim\]: name, backend, "
     r"p_bias, position_weights"),
    ("n_perms = 5", 'n_perms = "ten"', r"`design.n_perms` must be an integer, got 'ten'"),
    ("n_perms = 5", "n_perms = 0", r"`design.n_perms` must be >= 1, got 0"),
    ('kind = "sampled"', 'kind = "random"', r"`design.kind` must be one of sampled, shared"),
    ("p_bias = 0.4", "p_bias = 1.4", r"`models.sim.p_bias` must be <= 1.0"),
    ('backend = "simulated"', 'backend = "vllm"', r"`models\[0\].backend` must be one of "
                                                  r"openai, local, simulated"),
    ('path = "catalog.csv"', 'path = "nope.csv"', r"`catalog.path`: .*nope.csv does not exist"),
    ("n = 8", 'n = 8\nfile = "catalog.csv"', r"exactly one of `n`.*or `file`"),
    ("k = [4]", "k = [1]", r"`retrieval.k` must be an integer >= 2"),
    ('conditions = ["permutation"]', 'conditions = ["shuffle"]',
     r"`conditions` must be a non-empty list drawn from permutation, decoding, labels"),
    ("temperatures = [0.0]", "temperatures = [-1]", r"`temperatures` must be"),
    ('id = "id"', 'id = "id"\nsku = "x"', r"unknown key `catalog.columns.sku`"),
    ("p_bias = 0.4", "p_bias = 0.4\nposition_weights = [1, 2, 3]",
     r"`models.sim.position_weights` has 3 entries but `retrieval.k` = \[4\]"),
    ("seed = 7", "seed = 7\n[[[", r"is not valid TOML"),
    ('kind = "sampled"\nn_perms = 5', 'kind = "exhaustive"\nn_perms = 5',
     r"`\[design\]` with k=4: .*24"),
    # upper bounds (issue 34): the message names the key, the bound and why
    ("concurrency = 4", "concurrency = 1000000000",
     r"`concurrency` must be <= 4,096 \(requests in flight"),
    ('backend = "simulated"\np_bias = 0.4\ndiscard_rate = 0.05\ndelay_s = 0.0',
     'backend = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nmax_retries = 1000000000',
     r"`models.sim.max_retries` must be <= 100 \(a call retried"),
    ('backend = "simulated"\np_bias = 0.4\ndiscard_rate = 0.05\ndelay_s = 0.0',
     'backend = "openai"\nbase_url = "http://127.0.0.1:9/v1"\ntimeout_s = 1e300',
     r"`models.sim.timeout_s` must be <= 86400"),
    ('backend = "simulated"\np_bias = 0.4\ndiscard_rate = 0.05\ndelay_s = 0.0',
     'backend = "local"\nn_threads = 1000000000',
     r"`models.sim.n_threads` must be <= \d+ \(this machine has \d+ cores"),
]


@pytest.mark.parametrize(("old", "new", "message"), BAD)
def test_bad_config_is_a_clear_error(tmp_path, emb_cache, old, new, message):
    path = write_config(tmp_path, cache_dir=emb_cache)
    edit(path, old, new)
    with pytest.raises(ConfigError, match=message):
        load_audit_config(path)


LATE_BAD = [
    # these parse but fail while planning: still before the run folder exists
    ('id = "id"', 'id = "sku"', "sku"),
    ('backend = "simulated"\np_bias = 0.4\ndiscard_rate = 0.05\ndelay_s = 0.0',
     'backend = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
     'api_key_env = "RECAUDIT_UNSET_KEY_VAR"', "RECAUDIT_UNSET_KEY_VAR"),
]


@pytest.mark.parametrize(("old", "new", "needle"), LATE_BAD + [
    (o, n, "".join(m.split("`")[1].split())) for o, n, m in (BAD[0], BAD[3], BAD[8])])
def test_cli_bad_config_exits_2_and_writes_nothing(tmp_path, emb_cache, monkeypatch, old,
                                                    new, needle):
    monkeypatch.delenv("RECAUDIT_UNSET_KEY_VAR", raising=False)
    path = write_config(tmp_path, cache_dir=emb_cache)
    edit(path, old, new)
    out = tmp_path / "run"
    result = runner.invoke(app, ["positional", "run", str(path), "--out", str(out), "--quiet"])
    assert result.exit_code == 2, result.output
    assert "error:" in result.output
    assert needle in "".join(result.output.split())
    assert not out.exists()


def test_concurrency_is_one_rule_validated_once(tmp_path, emb_cache):
    """The run's `concurrency` is the total in flight; a model's own limit above it could
    never be reached and is refused, naming the key and the fix; the summary reports the
    limits the run uses (docs/runner.md, "Concurrency")."""
    from recaudit.audit._config import effective_concurrency

    remote = '[[models]]\nname = "remote"\nbackend = "openai"\nbase_url = "http://x.test/v1"\n'
    path = write_config(tmp_path, cache_dir=emb_cache, concurrency=4,
                        models=remote + "concurrency = 16\n")
    with pytest.raises(ConfigError, match=r"`models.remote.concurrency` = 16 can never be "
                       r"reached: the run's `concurrency` = 4 .* raise `concurrency`"):
        load_audit_config(path)
    path = write_config(tmp_path, cache_dir=emb_cache, concurrency=4,
                        models=remote + "concurrency = 2\n")
    assert effective_concurrency(load_audit_config(path)) == {"total": 4,
                                                        "per_model": {"remote": 2}}
    # the per-model default (8) is capped by the run's total, and said so
    path = write_config(tmp_path, cache_dir=emb_cache, concurrency=4, models=remote)
    assert effective_concurrency(load_audit_config(path))["per_model"] == {"remote": 4}
    local = '[[models]]\nname = "lm"\nbackend = "local"\nbatch_size = 8\n'
    path = write_config(tmp_path, cache_dir=emb_cache, concurrency=4, models=local)
    with pytest.raises(ConfigError, match=r"`models.lm.batch_size` = 8 can never be reached"):
        load_audit_config(path)
