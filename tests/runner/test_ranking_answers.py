"""`[prompt] answer = "ranking"`: the run asks for a ranking of all k candidates,
parses it strictly, journals it, and the run folder feeds `topn` and `analyze`."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from helpers import write_config
from recaudit.audit._config import config_hash, config_to_dict, load_audit_config
from recaudit.audit._journal import EVALUATION_COLUMNS
from recaudit.audit._run import run_audit
from recaudit.cli import app
from recaudit.exceptions import ConfigError

RANKING = '\n[prompt]\nanswer = "ranking"\n'


def test_pick_is_the_default_and_leaves_the_hash_unchanged(tmp_path, emb_cache):
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache))
    assert cfg.prompt.answer == "pick"
    assert "answer" not in config_to_dict(cfg)["prompt"]  # configs older than the key
    explicit = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, name="b.toml",
                                        extra='\n[prompt]\nanswer = "pick"\n'))
    ranking = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, name="c.toml",
                                       extra=RANKING))
    assert config_hash(explicit) == config_hash(cfg) != config_hash(ranking)
    assert config_to_dict(ranking)["prompt"]["answer"] == "ranking"


@pytest.mark.parametrize("prompt, match", [
    ('answer = "list"', "prompt.answer"),
    ('answer = "ranking"\nchoice_probabilities = true', "choice_probabilities"),
])
def test_bad_answer_settings_are_refused(tmp_path, emb_cache, prompt, match):
    with pytest.raises(ConfigError, match=match):
        load_audit_config(write_config(tmp_path, cache_dir=emb_cache,
                                       extra=f"\n[prompt]\n{prompt}\n"))


def test_constrained_ranking_needs_a_schema_engine(tmp_path, emb_cache, monkeypatch):
    """The transformers engine's constrained mode writes a pick: refused; the llama.cpp
    engine decodes under the ranking schema: accepted, its backend not in pick mode."""
    from recaudit.audit._config import config_backends

    folder = tmp_path / "hf-model"
    folder.mkdir()
    constrained = '\n[prompt]\nanswer = "ranking"\nconstrained = true\n'
    hf = (f'[[models]]\nname = "m"\nbackend = "local"\nmodel = "{folder}"\n'
          'engine = "transformers"\n')
    with pytest.raises(ConfigError, match="transformers engine"):
        load_audit_config(write_config(tmp_path, cache_dir=emb_cache, models=hf, extra=constrained))
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    models = f'[[models]]\nname = "m"\nbackend = "local"\nmodel = "{gguf}"\n'
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, name="b.toml",
                                         extra=constrained, models=models))
    assert cfg.models[0].params.resolved_engine() == "llamacpp"
    from recaudit.llm.backends import _llamacpp

    built = []

    def record(self, *args, **kwargs):  # no model is loaded: only the mode is checked
        built.append(kwargs.get("constrained"))
        raise RuntimeError("not loading")

    monkeypatch.setattr(_llamacpp.LlamaCppBackend, "__init__", record)
    with pytest.raises(RuntimeError, match="not loading"):
        config_backends(cfg)
    assert built == [False]


def test_a_ranking_run_journals_every_ranking(tmp_path, retriever, emb_cache):
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=8, n_perms=6,
                                   extra=RANKING))
    res = run_audit(cfg, out_dir=tmp_path / "run", retriever=retriever)
    df = pd.read_parquet(res.evaluations_path)
    assert list(df.columns) == list(EVALUATION_COLUMNS) and "ranking" in df.columns
    assert len(df) == 48 and res.discarded > 0  # the simulated model's 5 % discards
    ok = df[df["selected_position"].notna()]
    for _, row in ok.iterrows():
        ranking = [int(x) for x in row["ranking"].split()]
        assert sorted(ranking) == [1, 2, 3, 4]
        assert ranking[0] == row["selected_position"]
        answer = json.loads(row["raw_response"])["ranking"]
        idents = row["identifiers"].split()
        assert [idents.index(str(a)) + 1 for a in answer] == ranking
    bad = df[df["selected_position"].isna()]
    assert bad["ranking"].isna().all() and bad["discard_reason"].eq("no_json").all()


def test_the_ranking_prompt_is_the_default_template(tmp_path, retriever, emb_cache):
    from recaudit.audit._plan import build_tasks, prepare_inputs

    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=2, n_perms=2,
                                   extra='\n[prompt]\nanswer = "ranking"\nconstrained = true\n'))
    inputs = prepare_inputs(cfg, run_dir=tmp_path / "run", resume=False,
                            retriever=retriever, say=lambda _m: None)
    tasks = build_tasks(cfg, queries=inputs.queries, candidates=inputs.candidates,
                        template=inputs.template)
    assert {t.answer for t in tasks} == {"ranking"}
    text = tasks[0].request.messages[-1].content
    assert "Rank ALL the articles" in text and '"ranking"' in text
    fmt = tasks[0].request.response_format
    assert fmt is not None and fmt["schema"]["properties"]["ranking"]["maxItems"] == 4


def test_topn_and_analyze_read_the_run_folder(tmp_path, retriever, emb_cache):
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=10, n_perms=6,
                                   extra=RANKING))
    run = run_audit(cfg, out_dir=tmp_path / "run", retriever=retriever).run_dir
    cli = CliRunner()
    topn = cli.invoke(app, ["positional", "topn", str(run), "--json", "--seed", "1",
                            "--n-resamples", "199", "--n-boot", "200"])
    assert topn.exit_code == 0, topn.output
    out = json.loads(topn.output)
    table = pd.read_parquet(run / "evaluations.parquet")
    assert out["n_evaluations"] == int(table["ranking"].notna().sum())
    assert out["kendall_tau"]["value"] > 0  # the simulated model's primacy (p_bias 0.4)
    head = cli.invoke(app, ["positional", "analyze", str(run), "--json", "--seed", "1",
                            "--n-resamples", "199", "--n-boot", "200"])
    assert head.exit_code == 0, head.output
    analysis = json.loads(head.output)
    ok = table[table["selected_position"].notna()]
    assert analysis["n_evaluations"] == len(ok) == out["n_evaluations"]
    per_query = (ok["selected_position"] == 1).groupby(ok["query_id"]).mean()
    assert np.isclose(analysis["position_distribution"][0], per_query.mean())


def test_topn_on_a_pick_run_says_what_to_do(tmp_path, retriever, emb_cache):
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=3, n_perms=2))
    run = run_audit(cfg, out_dir=tmp_path / "run", retriever=retriever).run_dir
    res = CliRunner().invoke(app, ["positional", "topn", str(run)])
    assert res.exit_code == 2 and "answer = \"ranking\"" in res.output
    assert "Traceback" not in res.output


def test_run_writes_topn_json_per_cell(tmp_path, retriever, emb_cache):
    from helpers import prepared_run
    from recaudit.positional import TopNGroups

    path = write_config(tmp_path, cache_dir=emb_cache, n_queries=8, n_perms=6,
                        models=_two_models(), extra=RANKING)
    run = prepared_run(path, tmp_path / "run", retriever)
    cli = CliRunner()
    res = cli.invoke(app, ["positional", "run", str(path), "--out", str(run), "--resume",
                           "--json"])
    assert res.exit_code == 0, res.output
    printed = json.loads(res.stdout)["topn"]
    written = json.loads((run / "topn.json").read_text(encoding="utf-8"))
    assert printed == written and [r["model"] for r in written] == ["biased", "fair"]
    groups = TopNGroups.from_list(written)
    assert groups.by == ("model", "k", "temperature", "condition")
    assert groups.to_list() == written  # reads its own JSON back
    biased, fair = (g.result for g in groups.groups)
    assert biased is not None and fair is not None
    assert biased.kendall.value > fair.kendall.value  # p_bias 0.9 vs 0
    assert groups.groups[0].pvalue_holm >= biased.pvalue  # Holm never lowers a p-value
    table = cli.invoke(app, ["positional", "run", str(path), "--out", str(run), "--resume"])
    assert table.exit_code == 0 and "Ranked lists" in table.output, table.output


def _two_models() -> str:
    return ('[[models]]\nname = "biased"\nbackend = "simulated"\np_bias = 0.9\n\n'
            '[[models]]\nname = "fair"\nbackend = "simulated"\np_bias = 0.0\n')


def test_topn_json_is_read_strictly():
    from recaudit.exceptions import InputError
    from recaudit.positional import TopNGroups, TopNResult, simulate_rankings, topn_bias

    res = topn_bias(simulate_rankings(n_queries=20, n_perms=4, k=4, p_bias=0.3, rng=1),
                    n_resamples=99, n_boot=100, rng=2)
    assert TopNResult.from_dict(res.to_dict()).to_dict() == res.to_dict()
    bad = dict(res.to_dict(), pvalue="0.5")
    with pytest.raises(InputError, match="pvalue"):
        TopNResult.from_dict(bad)
    with pytest.raises(InputError, match="pvalue_holm"):
        TopNGroups.from_list([{"model": "m", "result": None, "pvalue_holm": True}])
