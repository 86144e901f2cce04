"""The API key is read from the variable named in the config and never written:
not to the run folder (journal, WAL, tables, resolved config), not to logs, not to
stdout/stderr, not to exception messages -- even when the server echoes it back."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import threading

import httpx
import pytest
from runner_helpers import LoopbackServer, write_config
from typer.testing import CliRunner

from recaudit.cli import app
from recaudit.exceptions import EndpointError
from recaudit.llm._audit import run_audit
from recaudit.llm._config import load_config

SECRET = "sk-PLANTED-7f3a9c1e55d04b2b"
MODEL = """\
[[models]]
name = "remote"
backend = "openai"
base_url = "{url}"
api_key_env = "RECAUDIT_TEST_SECRET"
max_retries = 2
"""


def assert_clean(folder, *texts):
    for path in folder.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    for text in texts:
        assert SECRET not in text


def echoing_handler(seen):
    """First attempt of each request: a 500 echoing the Authorization header; then an
    answer that echoes it."""
    bodies: set[bytes] = set()

    def handler(request):
        seen.append(request.headers.get("authorization"))
        auth = request.headers.get("authorization", "")
        if request.content not in bodies:
            bodies.add(request.content)
            return httpx.Response(500, text=f"internal error for {auth}")
        return httpx.Response(200, json={"choices": [{"message": {
            "content": '{"article_number": 1, "note": "' + auth + '"}'}}]})

    return handler


def test_key_never_leaks_in_process(tmp_path, retriever, emb_cache, monkeypatch, caplog):
    monkeypatch.setenv("RECAUDIT_TEST_SECRET", SECRET)
    caplog.set_level(logging.DEBUG)
    cfg = load_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=3, n_perms=3,
                                   models=MODEL.format(url="http://llm.test/v1")))
    seen: list[str] = []
    res = run_audit(cfg, out_dir=tmp_path / "run", retriever=retriever,
                    transport=httpx.MockTransport(echoing_handler(seen)))
    assert seen and all(s == f"Bearer {SECRET}" for s in seen)  # the key is sent
    assert res.ok + res.discarded == 9
    # an endpoint that rejects the request and echoes the key in its error body
    cfg2 = load_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=3, n_perms=3,
                                    models=MODEL.format(url="http://llm.test/v1")))

    def reject(request):
        return httpx.Response(401, text=f"bad key {request.headers['authorization']}")

    with pytest.raises(EndpointError) as info:
        run_audit(cfg2, out_dir=tmp_path / "run2", retriever=retriever,
                  transport=httpx.MockTransport(reject))
    assert "HTTP 401" in str(info.value) or "failed" in str(info.value)
    with sqlite3.connect(tmp_path / "run2" / "journal.sqlite") as conn:
        messages = [r[0] for r in conn.execute("SELECT error_message FROM evaluations")]
    assert messages and all("***" in m for m in messages)
    assert_clean(tmp_path, str(info.value), caplog.text, repr(res))


def test_key_never_leaks_through_the_cli(tmp_path, retriever, emb_cache, monkeypatch):
    monkeypatch.setenv("RECAUDIT_TEST_SECRET", SECRET)
    loop = asyncio.new_event_loop()
    server = LoopbackServer(lambda n: "500" if n % 4 == 0 else "ok")
    started = threading.Event()

    def serve():
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.__aenter__())
        started.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    started.wait(10)
    try:
        path = write_config(tmp_path, cache_dir=emb_cache, n_queries=3, n_perms=4,
                            models=MODEL.format(url=server.base_url))
        # prepare the run folder in process (no embedder in the CLI), empty its journal
        run_audit(load_config(path), out_dir=tmp_path / "run", retriever=retriever,
                  transport=httpx.MockTransport(lambda r: httpx.Response(200, json={
                      "choices": [{"message": {"content": '{"article_number": 2}'}}]})))
        with sqlite3.connect(tmp_path / "run" / "journal.sqlite") as conn:
            conn.execute("DELETE FROM evaluations")
        result = CliRunner().invoke(app, ["positional", "run", str(path), "--out",
                                          str(tmp_path / "run"), "--resume", "--json"])
        assert result.exit_code == 0, result.output
        summary = json.loads(result.stdout)
        assert summary["run"]["ran_now"] == 12 and summary["run"]["retries"] >= 3
        assert server.requests >= 15
        assert_clean(tmp_path, result.output)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
