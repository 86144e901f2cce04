"""Batch files end to end: a REAL llama.cpp server (the packaged SmolLM2 GGUF) answers a
``--batch-file`` through the local batch driver (``batch_driver.py``, OpenAI's output
format), ``--batch-results`` reads it back, and the journaled answers are the ones the
live path gets for the same requests (the same answer, choice probabilities within
0.02: the server's prompt cache moves its arithmetic slightly between requests)."""

from __future__ import annotations

import asyncio
import json

import pandas as pd
import pytest
from batch_driver import answer
from test_llamacpp_e2e import NEEDS_XLLAMACPP, llama_server  # noqa: F401 -- the fixture

from helpers import write_config
from recaudit.audit._batch import decode_custom_id, run_batch
from recaudit.audit._config import config_backends, load_audit_config
from recaudit.audit._plan import build_tasks, parse_position, prepare_inputs
from recaudit.audit._runner import _evaluate

pytestmark = [pytest.mark.llamacpp, NEEDS_XLLAMACPP]

MODEL = """\
[[models]]
name = "smollm2"
backend = "openai"
base_url = "{url}"
model = "smollm2"
timeout_s = 120
"""


def test_llama_server_answers_a_batch_file_like_the_live_path(llama_server, tmp_path,  # noqa: F811
                                                              emb_cache, retriever):
    cfg_path = write_config(tmp_path, cache_dir=emb_cache, n_queries=2, n_perms=3, k=3,
                            models=MODEL.format(url=llama_server), choice_probabilities=True,
                            extra="")
    text = cfg_path.read_text().replace("[prompt]\n", "[prompt]\nmax_tokens = 16\n"
                                        "constrained = true\n")
    cfg_path.write_text(text)
    cfg = load_audit_config(cfg_path)
    run_dir, batch = tmp_path / "run", tmp_path / "requests.jsonl"
    first = run_batch(cfg, out_dir=run_dir, batch_file=batch, retriever=retriever)
    assert first.written == first.planned == 6

    out, errors = tmp_path / "output.jsonl", tmp_path / "errors.jsonl"
    n_ok, n_err = answer(batch, out, errors, llama_server.removesuffix("/v1"))
    assert (n_ok, n_err) == (6, 0)
    done = run_batch(cfg, out_dir=run_dir, resume=True, batch_results=[out, errors],
                     retriever=retriever)
    counts = done.ingested[0]
    assert counts.ok + counts.discarded == 6 and counts.lines == 6
    assert done.complete and done.pending == 0 and done.failed == 0
    table = pd.read_parquet(done.evaluations_path)
    assert len(table) == 6 and (table.prompt_tokens > 50).all()
    valid = table[table.selected_position.notna()]
    assert len(valid) >= 4
    assert valid.choice_probs.notna().all()
    for row in valid.itertuples():
        probs = json.loads(row.choice_probs)
        assert sum(probs) == pytest.approx(1.0)

    # the same requests through the live backend give the same answers (greedy, seeded)
    inputs = prepare_inputs(cfg, run_dir=run_dir, resume=True, retriever=None,
                            say=lambda _m: None)
    tasks = {t.key: t for t in build_tasks(cfg, queries=inputs.queries,
                                           candidates=inputs.candidates,
                                           template=inputs.template)}
    keys = [decode_custom_id(json.loads(x)["custom_id"])[1]
            for x in batch.read_text().splitlines()[:2]]

    async def live():
        backend = config_backends(cfg)[("smollm2", 3)]
        try:
            return [await _evaluate(tasks[k], backend, parse_position) for k in keys]
        finally:
            await backend.aclose()

    by_key = table.set_index(["query_id", "perm_index"])
    for record in asyncio.run(live()):
        row = by_key.loc[(record.key.query_id, record.key.perm_index)]
        # the server's prompt cache may move a whitespace token, not the answer
        assert json.loads(row.raw_response) == json.loads(record.raw_response)
        assert (pd.isna(row.selected_position) and record.selected_position is None) \
            or row.selected_position == record.selected_position
        if record.choice_probs is not None:
            assert json.loads(row.choice_probs) == pytest.approx(list(record.choice_probs),
                                                                 abs=0.02)
