"""Provider batch files (``run --batch-file`` / ``--batch-results``): the requests file,
the custom_id codec, exactly-once reading of hostile result files, failed lines planned
again, sequential rounds across batches, and the CLI."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pandas as pd
import pytest

from helpers import write_config
from recaudit.audit import RunOptions
from recaudit.audit._batch import (
    BATCH_URL,
    batch_backends,
    decode_custom_id,
    encode_custom_id,
    run_batch,
)
from recaudit.audit._config import config_backends, load_audit_config
from recaudit.audit._journal import EvalKey
from recaudit.audit._plan import build_tasks, prepare_inputs
from recaudit.audit._sequential_driver import SequentialOptions
from recaudit.exceptions import ConfigError, InputError
from recaudit.llm.backends._openai import choice_probabilities_from_logprobs

SECRET = "sk-test-BATCHSECRET-0123456789abcdef"
MODEL = """\
[[models]]
name = "remote"
backend = "openai"
base_url = "http://127.0.0.1:9/v1"
model = "tiny-model"
api_key_env = "RECAUDIT_BATCH_TEST_KEY"
"""
N_KEYS = 6  # 2 queries x 3 orders, k = 3


def config(tmp_path: Path, emb_cache: Path, *, n_queries: int = 2, n_perms: int = 3,
           probs: bool = False) -> Path:
    return write_config(tmp_path, cache_dir=emb_cache, n_queries=n_queries, n_perms=n_perms,
                        k=3, models=MODEL, choice_probabilities=probs)


def completion(content: str, *, logprobs: list | None = None) -> dict:
    choice: dict = {"index": 0, "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop"}
    if logprobs is not None:
        choice["logprobs"] = {"content": logprobs}
    return {"id": "chatcmpl-1", "object": "chat.completion", "choices": [choice],
            "usage": {"prompt_tokens": 120, "completion_tokens": 7}}


def ok_line(custom_id: str, content: str = '{"article_number": 1}', n: int = 0,
            **kw: object) -> str:
    return json.dumps({"id": f"batch_req_{n}", "custom_id": custom_id,
                       "response": {"status_code": 200, "request_id": f"r{n}",
                                    "body": completion(content, **kw)}, "error": None})


def read_lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def journal_rows(run_dir: Path) -> pd.DataFrame:
    with closing(sqlite3.connect(run_dir / "journal.sqlite")) as conn:
        return pd.read_sql_query("SELECT * FROM evaluations", conn)


@pytest.fixture()
def key_env(monkeypatch):
    monkeypatch.setenv("RECAUDIT_BATCH_TEST_KEY", SECRET)


# -- custom_id --------------------------------------------------------------------------


@pytest.mark.parametrize("key", [
    EvalKey("remote", 3, 0.0, "permutation", "q0001", 2, 0),
    EvalKey("gpt:4o/mini %x", 10, 0.7, "labels_permutation", "q:1 ü/é|\n", 0, 12),
    EvalKey("m", 5, 1e-07, "decoding", "0", 999999, 3),
])
def test_custom_id_round_trips(key):
    cid = encode_custom_id(key, "0123456789ab")
    assert decode_custom_id(cid) == ("0123456789ab", key)
    assert cid.isascii() and "\n" not in cid and cid.count(":") == 9


@pytest.mark.parametrize("cid", [
    "", "garbage", "batch_req_1",
    "recaudit:2:0123456789ab:m:3:0.0:permutation:q1:0:0",  # another version
    "recaudit:1:0123456789AB:m:3:0.0:permutation:q1:0:0",  # run id not lower hex
    "recaudit:1:0123456789ab:m:03:0.0:permutation:q1:0:0",  # non-canonical int
    "recaudit:1:0123456789ab:m:3:0.00:permutation:q1:0:0",  # non-canonical float
    "recaudit:1:0123456789ab:m:3:nan:permutation:q1:0:0",
    "recaudit:1:0123456789ab:m:3:0.0:permutation:q%3a1:0:0",  # lower-case escape
    "recaudit:1:0123456789ab:m:3:0.0:permutation:q%FF:0:0",  # not UTF-8
    "recaudit:1:0123456789ab::3:0.0:permutation:q1:0:0",  # empty model
    "recaudit:1:0123456789ab:m:3:0.0:permutation:q1:0",  # a field missing
    "recaudit:1:0123456789ab:m:3:0.0:permutation:q1:0:-1",
])
def test_custom_id_refuses_what_does_not_decode(cid):
    with pytest.raises(InputError, match="is not a recaudit evaluation key"):
        decode_custom_id(cid)


# -- the requests file ----------------------------------------------------------------


def test_batch_file_lines_are_the_live_requests_without_the_key(tmp_path, emb_cache,
                                                                retriever, key_env):
    cfg = load_audit_config(config(tmp_path, emb_cache, probs=True))
    run_dir, batch = tmp_path / "run", tmp_path / "requests.jsonl"
    done = run_batch(cfg, out_dir=run_dir, batch_file=batch, retriever=retriever)
    assert done.written == done.planned == done.pending == N_KEYS and not done.complete
    text = batch.read_text(encoding="utf-8")
    assert SECRET not in text and "Bearer" not in text and "api_key" not in text
    lines = read_lines(batch)
    assert {tuple(sorted(x)) for x in lines} == {("body", "custom_id", "method", "url")}
    assert {(x["method"], x["url"]) for x in lines} == {("POST", BATCH_URL)}
    # the body is what the LIVE backend (built with its key) would send
    inputs = prepare_inputs(cfg, run_dir=run_dir, resume=True, retriever=None,
                            say=lambda _m: None)
    tasks = {t.key: t for t in build_tasks(cfg, queries=inputs.queries,
                                           candidates=inputs.candidates,
                                           template=inputs.template)}
    live = config_backends(cfg)[("remote", 3)]
    assert live._secret == SECRET  # the live one does hold the key
    for line in lines:
        _, key = decode_custom_id(line["custom_id"])
        assert line["body"] == live.payload(tasks[key].request)
        assert line["body"]["logprobs"] is True and line["body"]["top_logprobs"] >= 3
    assert len({x["custom_id"] for x in lines}) == N_KEYS
    # every key is pending: a second batch file would hold nothing
    again = run_batch(cfg, out_dir=run_dir, resume=True, batch_file=tmp_path / "b2.jsonl",
                      retriever=retriever)
    assert again.written == 0 and again.pending == N_KEYS
    assert not (tmp_path / "b2.jsonl").exists()
    for path in run_dir.rglob("*"):  # journal, WAL, tables, run.json, config
        assert SECRET.encode() not in path.read_bytes(), path
    with closing(sqlite3.connect(run_dir / "journal.sqlite")) as conn:
        assert conn.execute("SELECT COUNT(*) FROM batch_pending").fetchone()[0] == N_KEYS
        assert conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0] == 0


def test_resend_pending_writes_a_lost_batch_again(tmp_path, emb_cache, retriever, key_env):
    cfg = load_audit_config(config(tmp_path, emb_cache))
    run_dir = tmp_path / "run"
    run_batch(cfg, out_dir=run_dir, batch_file=tmp_path / "b1.jsonl", retriever=retriever)
    again = run_batch(cfg, out_dir=run_dir, resume=True, batch_file=tmp_path / "b2.jsonl",
                      resend_pending=True, retriever=retriever)
    assert again.written == N_KEYS and again.pending == N_KEYS
    assert (tmp_path / "b1.jsonl").read_text() == (tmp_path / "b2.jsonl").read_text()
    out = tmp_path / "out.jsonl"  # both batches answered: the second answer is a duplicate
    out.write_text("".join(ok_line(x["custom_id"], n=n * 10 + i) + "\n"
                           for n in (1, 2)
                           for i, x in enumerate(read_lines(tmp_path / "b1.jsonl"))))
    done = run_batch(cfg, out_dir=run_dir, resume=True, batch_results=[out],
                     retriever=retriever)
    assert (done.ingested[0].ok, done.ingested[0].duplicate) == (N_KEYS, N_KEYS)
    assert done.complete and len(journal_rows(run_dir)) == N_KEYS


def test_batch_refuses_an_existing_file_and_non_openai_models(tmp_path, emb_cache):
    batch = tmp_path / "requests.jsonl"
    batch.write_text("submitted\n")
    cfg = load_audit_config(config(tmp_path, emb_cache))
    with pytest.raises(InputError, match="already exists"):
        run_batch(cfg, out_dir=tmp_path / "run", batch_file=batch)
    assert batch.read_text() == "submitted\n" and not (tmp_path / "run").exists()
    with pytest.raises(ConfigError, match="add `--resume`"):
        run_batch(cfg, out_dir=tmp_path / "run", batch_results=[batch])
    (tmp_path / "s").mkdir()
    sim = load_audit_config(write_config(tmp_path / "s", cache_dir=emb_cache, k=3))
    with pytest.raises(ConfigError, match="backend = 'simulated'"):
        run_batch(sim, out_dir=tmp_path / "run2", batch_file=tmp_path / "new.jsonl")


# -- reading results: hostile files -------------------------------------------------


def test_hostile_results_are_counted_once_and_failures_planned_again(
        tmp_path, emb_cache, retriever, key_env):
    cfg = load_audit_config(config(tmp_path, emb_cache))
    run_dir, batch = tmp_path / "run", tmp_path / "requests.jsonl"
    run_batch(cfg, out_dir=run_dir, batch_file=batch, retriever=retriever)
    ids = [x["custom_id"] for x in read_lines(batch)]
    other_run = ids[0].split(":")
    other_run[2] = "ffffffffffff" if other_run[2] != "ffffffffffff" else "000000000000"
    out = tmp_path / "output.jsonl"
    out.write_text("\n".join([
        ok_line(ids[0], n=0),                                   # ok
        ok_line(ids[1], "I pick the third one", n=1),           # discarded (real outcome)
        ok_line(ids[0], '{"article_number": 2}', n=2),          # duplicate of ids[0]
        ok_line(":".join(other_run), n=3),                      # foreign run
        ok_line("batch-of-someone-else", n=4),                  # unknown
        "{not json",                                            # malformed
        json.dumps(["a", "list"]),                              # malformed
        json.dumps({"custom_id": ids[2], "response": {"status_code": 200, "body": {
            "choices": []}}, "error": None}),                   # failed: no choices
        "[" * 100_000 + "]" * 100_000,                          # malformed: too deep
        ok_line(ids[5][:-1] + "\ud800", n=5),                   # unknown: lone surrogate
        ok_line("x" * 1_000_000, n=6),                          # unknown: a megabyte id
        # ids[3], ids[4], ids[5] missing: a partial file
    ]) + "\n\n", encoding="utf-8")
    with out.open("ab") as f:
        f.write(b'{"custom_id": "\xff\xfe"}\r\n')                   # malformed: not UTF-8
    errors = tmp_path / "errors.jsonl"
    errors.write_text("\n".join([
        json.dumps({"id": "e1", "custom_id": ids[3], "response": None,
                    "error": {"code": "batch_expired", "message": "expired"}}),
        json.dumps({"id": "e2", "custom_id": ids[4], "response": {
            "status_code": 500, "request_id": "x", "body": {"error": {"message": "boom"}}},
            "error": None}),
    ]) + "\n", encoding="utf-8")
    done = run_batch(cfg, out_dir=run_dir, resume=True, batch_results=[out, errors],
                     retriever=retriever)
    first, err = (i.to_dict() for i in done.ingested)
    assert first == {"path": str(out), "lines": 12, "ok": 1, "discarded": 1, "failed": 1,
                     "repeated": 0, "duplicate": 1, "foreign": 1, "unknown": 3,
                     "malformed": 4, "rejected": 0}
    assert err["failed"] == 2 and err["lines"] == 2
    assert (done.completed, done.failed, done.pending) == (2, 3, 1) and not done.complete
    rows = journal_rows(run_dir)
    assert len(rows) == 5 and rows.set_index("status").index.value_counts().to_dict() == {
        "failed": 3, "ok": 1, "discarded": 1}
    kept = rows[rows.status == "ok"].iloc[0]
    assert kept.raw_response == '{"article_number": 1}' and kept.selected_position == 1
    assert set(rows[rows.status == "failed"].error_class) == {"BatchLineError"}
    assert rows.error_message.str.contains("batch_expired|HTTP 500: boom|choices").sum() == 3

    # the same files again: every line is `repeated`, nothing changes
    again = run_batch(cfg, out_dir=run_dir, resume=True, batch_results=[out, errors],
                      retriever=retriever)
    assert [i.repeated for i in again.ingested] == [12, 2]
    assert [i.lines for i in again.ingested] == [12, 2]
    pd.testing.assert_frame_equal(journal_rows(run_dir), rows)

    # the next batch file holds exactly the failed keys (ids[5] is still pending)
    nxt = tmp_path / "round2.jsonl"
    done2 = run_batch(cfg, out_dir=run_dir, resume=True, batch_file=nxt, retriever=retriever)
    assert sorted(x["custom_id"] for x in read_lines(nxt)) == sorted(ids[2:5])
    assert done2.pending == 4
    out2 = tmp_path / "output2.jsonl"
    out2.write_text("".join(ok_line(c, '{"article_number": 3}', n=10 + i) + "\n"
                            for i, c in enumerate(ids[2:6])), encoding="utf-8")
    final = run_batch(cfg, out_dir=run_dir, resume=True, batch_results=[out2],
                      retriever=retriever)
    assert final.complete and final.pending == 0 and final.completed == N_KEYS
    table = pd.read_parquet(final.evaluations_path)
    assert len(table) == N_KEYS and not table.duplicated(
        ["query_id", "perm_index", "sample_index"]).any()
    assert table.latency_s.isna().all() and (table.prompt_tokens == 120).all()
    spend = json.loads((run_dir / "run.json").read_text())["sessions"][-1]
    assert spend["executor"] == "batch"


def test_choice_probabilities_come_from_the_batch_logprobs(tmp_path, emb_cache, retriever,
                                                           key_env):
    cfg = load_audit_config(config(tmp_path, emb_cache, probs=True))
    run_dir, batch = tmp_path / "run", tmp_path / "requests.jsonl"
    run_batch(cfg, out_dir=run_dir, batch_file=batch, retriever=retriever)
    tokens = [{"token": t, "logprob": -0.1, "top_logprobs": []}
              for t in ('{"', "article_number", '":', " ")]
    answer = {"token": "2", "logprob": -0.4, "top_logprobs": [
        {"token": "2", "logprob": -0.4}, {"token": "1", "logprob": -1.5},
        {"token": " 3", "logprob": -2.0}, {"token": "x", "logprob": -3.0}]}
    content = [*tokens, answer, {"token": "}", "logprob": 0.0, "top_logprobs": []}]
    lines = read_lines(batch)
    out = tmp_path / "out.jsonl"
    out.write_text(ok_line(lines[0]["custom_id"], '{"article_number": 2}', n=99,
                           logprobs=[1, 2]) + "\n")  # logprobs the live path fails on too
    done = run_batch(cfg, out_dir=run_dir, resume=True, batch_results=[out],
                     retriever=retriever)
    assert done.ingested[0].failed == 1 and done.failed == 1
    assert "AttributeError" in journal_rows(run_dir).error_message[0]
    out = tmp_path / "out2.jsonl"
    out.write_text("".join(ok_line(x["custom_id"], '{"article_number": 2}', n=i,
                                   logprobs=content) + "\n" for i, x in enumerate(lines)))
    done = run_batch(cfg, out_dir=run_dir, resume=True, batch_results=[out],
                     retriever=retriever)
    assert done.complete and done.ingested[0].ok == len(lines)
    table = pd.read_parquet(done.evaluations_path)
    expected, outside = choice_probabilities_from_logprobs(content, ("1", "2", "3"))
    for row in table.itertuples():
        assert json.loads(row.choice_probs) == pytest.approx(list(expected))
        assert row.outside_mass == pytest.approx(outside)
        assert row.selected_position == 2


# -- sequential rounds ----------------------------------------------------------------


def test_sequential_stopping_works_across_batch_rounds(tmp_path, emb_cache, retriever,
                                                       key_env):
    cfg = load_audit_config(config(tmp_path, emb_cache, n_queries=8, n_perms=3))
    seq = SequentialOptions(alpha=0.05, max_evaluations=24, round_evaluations=3)
    run_dir = tmp_path / "run"
    backend = batch_backends(cfg)[("remote", 3)]
    assert backend._secret is None
    sizes, results = [], None
    for rnd in range(20):
        batch = tmp_path / f"round{rnd}.jsonl"
        done = run_batch(cfg, out_dir=run_dir, resume=rnd > 0, batch_file=batch,
                         batch_results=[results] if results else (), sequential=seq,
                         retriever=retriever)
        if done.complete:
            break
        lines = read_lines(batch)
        sizes.append(len(lines))
        results = tmp_path / f"out{rnd}.jsonl"
        # always the first position shown: strong positional bias
        results.write_text("".join(ok_line(x["custom_id"], n=rnd * 100 + i) + "\n"
                                   for i, x in enumerate(lines)))
    else:
        pytest.fail("the sequential batch rounds never finished")
    assert sizes and all(s == 3 for s in sizes)  # a round = whole query blocks of 3
    evidence = json.loads((run_dir / "sequential.json").read_text())
    cell = evidence["cells"][0]
    assert cell["decision"] == "rejected"
    assert cell["evaluations_used"] == sum(sizes) < 24
    table = pd.read_parquet(done.evaluations_path)
    assert len(table) == sum(sizes) and (table.selected_position == 1).all()


# -- the command line -------------------------------------------------------------------


def test_cli_batch_round_trip(tmp_path, emb_cache, retriever, key_env, monkeypatch):
    from typer.testing import CliRunner

    from recaudit.cli import app

    cfg_path = config(tmp_path, emb_cache)
    run_dir = tmp_path / "run"
    # prepare the run folder in process (no embedder load in the CLI)
    run_batch(load_audit_config(cfg_path), out_dir=run_dir, batch_file=tmp_path / "b0.jsonl",
              retriever=retriever)
    lines = read_lines(tmp_path / "b0.jsonl")
    out = tmp_path / "out.jsonl"
    out.write_text("".join(ok_line(x["custom_id"], n=i) + "\n" for i, x in enumerate(lines))
                   + "garbage\n")
    runner = CliRunner()
    res = runner.invoke(app, ["positional", "run", str(cfg_path), "--out", str(run_dir),
                              "--resume", "--batch-results", str(out), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["complete"] and doc["ingested"][0]["ok"] == N_KEYS
    assert doc["ingested"][0]["malformed"] == 1
    assert doc["analysis"][0]["n_evaluations"] == N_KEYS  # analysed as `run` does
    assert (run_dir / "analysis.json").is_file()
    res = runner.invoke(app, ["positional", "run", str(cfg_path), "--out", str(run_dir),
                              "--batch-results", str(out)])
    assert res.exit_code == 2 and "--resume" in res.output
    res = runner.invoke(app, ["positional", "run", str(cfg_path), "--out", str(run_dir),
                              "--resume", "--batch-file", str(out)])
    assert res.exit_code == 2 and "already exists" in res.output


def test_journals_without_batch_tables_gain_them_and_keep_opening(tmp_path, emb_cache,
                                                                  retriever, key_env):
    from recaudit.audit._journal import Journal, read_meta

    cfg = load_audit_config(config(tmp_path, emb_cache))
    run_dir = tmp_path / "run"
    run_batch(cfg, out_dir=run_dir, batch_file=tmp_path / "b1.jsonl", retriever=retriever)
    ids = [x["custom_id"] for x in read_lines(tmp_path / "b1.jsonl")]
    # as a journal written before batch files existed: no batch tables, no run id
    with closing(sqlite3.connect(run_dir / "journal.sqlite")) as conn, conn:
        conn.execute("DROP TABLE batch_pending")
        conn.execute("DROP TABLE batch_lines")
        conn.execute("DELETE FROM meta WHERE key = 'batch_run_id'")
    done = run_batch(cfg, out_dir=run_dir, resume=True, batch_file=tmp_path / "b2.jsonl",
                     retriever=retriever)
    assert done.written == N_KEYS
    new_ids = [x["custom_id"] for x in read_lines(tmp_path / "b2.jsonl")]
    assert {c.split(":")[2] for c in ids} != {c.split(":")[2] for c in new_ids}
    # answers to the old file are now another run's; a planned-looking key outside the
    # plan is unknown
    run_id, key = decode_custom_id(new_ids[0])
    outside = encode_custom_id(EvalKey(key.model, key.k, key.temperature, key.condition,
                                       key.query_id, 99, 0), run_id)
    out = tmp_path / "out.jsonl"
    out.write_text(ok_line(ids[0], n=1) + "\n" + ok_line(outside, n=2) + "\n")
    res = run_batch(cfg, out_dir=run_dir, resume=True, batch_results=[out],
                    retriever=retriever)
    assert (res.ingested[0].foreign, res.ingested[0].unknown) == (1, 1)
    assert res.completed == 0 and res.pending == N_KEYS
    # the journal with batch tables still opens as a plain journal (a live resume)
    meta = {k: v for k, v in read_meta(run_dir / "journal.sqlite").items()
            if k != "batch_run_id"}
    with Journal(run_dir / "journal.sqlite", meta=meta, resume=True) as journal:
        assert journal.counts() == {"ok": 0, "discarded": 0, "failed": 0}


def test_batch_rounds_send_and_decide_what_the_live_sequential_run_does(
        tmp_path, emb_cache, retriever, key_env, fault_server):
    """The same answers (the fault server's ANSWER, position 2, for every request),
    live and through batch rounds: the same request bodies on the wire, the same
    rounds, the same sequential evidence and decision."""
    from batch_driver import answer
    from fault_server import ANSWER

    from recaudit.audit._run import run_audit

    path = config(tmp_path, emb_cache, n_queries=8, n_perms=3)
    path.write_text(path.read_text().replace("http://127.0.0.1:9/v1", fault_server.base_url))
    cfg = load_audit_config(path)
    seq = SequentialOptions(alpha=0.05, max_evaluations=24, round_evaluations=3)
    run_audit(cfg, out_dir=tmp_path / "live", run=RunOptions(sequential=seq), retriever=retriever)
    live_bodies = sorted(json.dumps(s.json, sort_keys=True) for s in fault_server.requests)
    assert all(s.headers.get("Authorization") == f"Bearer {SECRET}"
               for s in fault_server.requests)
    fault_server.reset()

    run_dir, results, batch_bodies = tmp_path / "batch", [], []
    for rnd in range(20):
        batch = tmp_path / f"round{rnd}.jsonl"
        done = run_batch(cfg, out_dir=run_dir, resume=rnd > 0, batch_file=batch,
                         batch_results=results, sequential=seq, retriever=retriever)
        if done.complete:
            break
        batch_bodies += [json.dumps(x["body"], sort_keys=True) for x in read_lines(batch)]
        results = [tmp_path / f"out{rnd}.jsonl", tmp_path / f"err{rnd}.jsonl"]
        assert answer(batch, *results, fault_server.base_url.removesuffix("/v1")) \
            == (len(read_lines(batch)), 0)
    else:
        pytest.fail("the sequential batch rounds never finished")
    assert sorted(batch_bodies) == live_bodies
    assert all("Authorization" not in s.headers for s in fault_server.requests)
    live = json.loads((tmp_path / "live" / "sequential.json").read_text())
    batched = json.loads((run_dir / "sequential.json").read_text())
    assert batched == live and live["cells"][0]["decision"] == "rejected"
    live_table = pd.read_parquet(tmp_path / "live" / "evaluations.parquet")
    table = pd.read_parquet(done.evaluations_path)
    cols = ["query_id", "perm_index", "selected_position", "raw_response", "prompt_tokens"]
    pd.testing.assert_frame_equal(table[cols], live_table[cols])
    assert (table.raw_response == ANSWER).all()


def test_cli_sequential_batch_rounds_print_the_verdict(tmp_path, emb_cache, retriever,
                                                       key_env):
    from typer.testing import CliRunner

    from recaudit.cli import app

    cfg_path = config(tmp_path, emb_cache, n_queries=8, n_perms=3)
    run_dir = tmp_path / "run"
    seq = SequentialOptions(alpha=0.05, max_evaluations=24)  # the CLI's round size (20)
    first = run_batch(load_audit_config(cfg_path), out_dir=run_dir, sequential=seq,
                      batch_file=tmp_path / "b0.jsonl", retriever=retriever)
    assert first.written == 21  # whole query blocks of 3, >= 20
    out = tmp_path / "out0.jsonl"
    out.write_text("".join(ok_line(x["custom_id"], n=i) + "\n"
                           for i, x in enumerate(read_lines(tmp_path / "b0.jsonl"))))
    res = CliRunner().invoke(app, [
        "positional", "run", str(cfg_path), "--out", str(run_dir), "--resume",
        "--sequential", "--max-evaluations", "24", "--batch-results", str(out),
        "--batch-file", str(tmp_path / "b1.jsonl")])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "21 ok" in text and "complete:" in text and "rejected after 21" in text
    assert not (tmp_path / "b1.jsonl").exists()  # nothing left to ask
    assert (run_dir / "analysis.json").is_file()
