"""The API key is read from the variable named in the config and never written:
not to the run folder (journal, WAL, tables, resolved config), not to logs, not to
stdout/stderr, not to exception messages -- even when the server echoes it back."""

from __future__ import annotations

import json
import logging
import sqlite3

import pytest
from aiohttp import web
from typer.testing import CliRunner

from helpers import write_config
from recaudit.audit._config import load_audit_config
from recaudit.audit._run import run_audit
from recaudit.cli import app
from recaudit.exceptions import EndpointError

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


def echoing_handler():
    """First attempt of each request: a 500 echoing the Authorization header; then an
    answer that echoes it."""
    bodies: set[bytes] = set()

    def handler(n, seen):
        auth = seen.headers.get("Authorization", "")
        if seen.body not in bodies:
            bodies.add(seen.body)
            return web.Response(status=500, text=f"internal error for {auth}")
        return web.json_response({"choices": [{"message": {
            "content": '{"article_number": 1, "note": "' + auth + '"}'}}]})

    return handler


def test_key_never_leaks_in_process(tmp_path, retriever, emb_cache, monkeypatch, caplog,
                                    fault_server):
    monkeypatch.setenv("RECAUDIT_TEST_SECRET", SECRET)
    caplog.set_level(logging.DEBUG)
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=3, n_perms=3,
                                   models=MODEL.format(url=fault_server.base_url)))
    fault_server.serve(echoing_handler())
    res = run_audit(cfg, out_dir=tmp_path / "run", retriever=retriever)
    seen = [s.headers.get("Authorization") for s in fault_server.requests]
    assert len(seen) == 18 and all(s == f"Bearer {SECRET}" for s in seen)  # the key is sent
    assert res.ok + res.discarded == 9
    # an endpoint that rejects the request and echoes the key in its error body
    cfg2 = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=3, n_perms=3,
                                    models=MODEL.format(url=fault_server.base_url)))
    fault_server.serve(lambda n, seen: web.Response(
        status=401, text=f"bad key {seen.headers['Authorization']}"))
    with pytest.raises(EndpointError) as info:
        run_audit(cfg2, out_dir=tmp_path / "run2", retriever=retriever)
    assert "HTTP 401" in str(info.value) or "failed" in str(info.value)
    with sqlite3.connect(tmp_path / "run2" / "journal.sqlite") as conn:
        messages = [r[0] for r in conn.execute("SELECT error_message FROM evaluations")]
    assert messages and all("***" in m for m in messages)
    assert_clean(tmp_path, str(info.value), caplog.text, repr(res))


def test_key_never_leaks_through_the_cli(tmp_path, retriever, emb_cache, monkeypatch,
                                        fault_server):
    monkeypatch.setenv("RECAUDIT_TEST_SECRET", SECRET)
    path = write_config(tmp_path, cache_dir=emb_cache, n_queries=3, n_perms=4,
                        models=MODEL.format(url=fault_server.base_url))
    # prepare the run folder in process (no embedder in the CLI), empty its journal
    run_audit(load_audit_config(path), out_dir=tmp_path / "run", retriever=retriever)
    with sqlite3.connect(tmp_path / "run" / "journal.sqlite") as conn:
        conn.execute("DELETE FROM evaluations")
    fault_server.reset()
    fault_server.serve(lambda n, seen: "500" if n % 4 == 0 else "ok")
    result = CliRunner().invoke(app, ["positional", "run", str(path), "--out",
                                      str(tmp_path / "run"), "--resume", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["run"]["ran_now"] == 12 and summary["run"]["retries"] >= 3
    assert fault_server.n_requests >= 15
    assert all(s.headers["Authorization"] == f"Bearer {SECRET}"
               for s in fault_server.requests)
    assert_clean(tmp_path, result.output)
