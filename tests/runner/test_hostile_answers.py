"""Whatever text an endpoint returns is journaled, and one bad record never costs the
others of its batch.

An answer holding a lone surrogate (a JSON ``\\ud800`` escape) used to make the
journal writer fail: the whole batch, valid answers included, was lost, the run
stopped, and every ``--resume`` re-sent those calls and failed again. Now lone
surrogates are stored as a recorded, reversible escape (``escaped`` names the fields),
NUL characters and megabytes as they are, and a record SQLite still refuses is
rejected alone. Figures asserted: 0 lost, 0 duplicated evaluations.
"""

from __future__ import annotations

import json
import sqlite3

import pandas as pd
import pytest
from fault_server import MEGABYTES_ANSWER, NUL_ANSWER, SURROGATE_ANSWER

from helpers import OPENAI_MODEL, write_config
from recaudit.audit import RunOptions
from recaudit.audit._config import load_audit_config
from recaudit.audit._journal import MSG_REJECTED, EvalKey, EvalRecord, Journal, unescape_row
from recaudit.audit._run import run_audit
from recaudit.exceptions import JournalError
from recaudit.llm._types import ChatResponse


def rec(i: int, **kw) -> EvalRecord:
    base = {"selected_position": 1, "selected_original_index": 2, "selected_item_id": "b",
            "raw_response": '{"article_number": 1}'}
    base.update(kw)
    return EvalRecord(EvalKey("m", 3, 0.0, "permutation", f"q{i:03d}", 0, 0), "ok",
                      (2, 1, 3), ("1", "2", "3"), **base)


def journal_keys(path) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT query_id, attempts FROM evaluations ORDER BY 1").fetchall()


@pytest.mark.parametrize("background", [False, True])
def test_one_bad_record_never_costs_its_batch(tmp_path, background) -> None:
    texts = {3: "lone \ud800 surrogate", 4: "\udfff", 5: "nul \x00 inside \x00",
             6: "x" * (3 * 2**20), 7: "mixed é \ud83d"}  # \ud83d: half an emoji
    records = [rec(i, raw_response=texts.get(i, '{"article_number": 1}')) for i in range(64)]
    records[9] = rec(9, prompt_tokens=2**70)  # beyond 64 bits: SQLite refuses the row
    records[12] = rec(12, discard_reason="bad \udc80 text", selected_item_id="i\udcff")
    records[13] = EvalRecord(records[13].key, "failed", (2, 1, 3), ("1", "2", "3"),
                             error_class="EndpointError", error_message="echo \ud800")
    path = tmp_path / "j.sqlite"
    with Journal(path, meta={"config_hash": "h"}, resume=False, commit_every=64,
                 background=background) as j:
        for r in records:
            j.write(r)
        j.flush()
        assert [k.query_id for k, _ in j.rejected] == ["q009"]
        assert "OverflowError" in j.rejected[0][1]
        frame = j.to_frame()
    keys = journal_keys(path)
    assert len(keys) == 63 and len({k for k, _ in keys}) == 63  # 0 lost, 0 duplicated
    assert {a for _, a in keys} == {1}
    by_query = {r["query_id"]: unescape_row(r) for r in frame.to_dict(orient="records")}
    for i, text in texts.items():  # lossless: the exact text comes back
        assert by_query[f"q{i:03d}"]["raw_response"] == text
    assert by_query["q012"]["discard_reason"] == "bad \udc80 text"
    assert by_query["q012"]["selected_item_id"] == "i\udcff"
    with sqlite3.connect(path) as conn:
        conn.row_factory = sqlite3.Row
        failed = dict(conn.execute("SELECT * FROM evaluations WHERE status = 'failed'")
                      .fetchone())
    assert unescape_row(failed)["error_message"] == "echo \ud800"
    assert frame.set_index("query_id").loc["q003", "escaped"] == "raw_response"
    assert frame.set_index("query_id").loc["q005", "escaped"] is pd.NA  # NUL: as is
    assert set(frame.set_index("query_id").loc["q012", "escaped"].split(",")) == {
        "selected_item_id", "discard_reason"}
    # the table round-trips through Parquet (no UTF-8 store refuses it)
    frame.to_parquet(tmp_path / "e.parquet", index=False)
    back = pd.read_parquet(tmp_path / "e.parquet")
    assert unescape_row(back.iloc[3].to_dict())["raw_response"] == texts[3]
    # resume: the refused key and the failed one are missing, and run again
    with Journal(path, meta={"config_hash": "h"}, resume=True) as j:
        todo = [r for r in records if r.key not in j.completed_keys()]
        assert [r.key.query_id for r in todo] == ["q009", "q013"]
        j.write(rec(9))
        j.write(rec(13))
    assert len(journal_keys(path)) == 64


def test_hostile_answers_through_a_real_endpoint(tmp_path, retriever, emb_cache,
                                                 fault_server) -> None:
    """Lone surrogates, NUL and a 2 MB answer from a real socket: every evaluation is
    journaled and in the table, the surrogate ones escaped and exactly recoverable."""
    cfg = load_audit_config(write_config(tmp_path, cache_dir=emb_cache, n_queries=4, n_perms=5,
                                   models=OPENAI_MODEL.format(url=fault_server.base_url)))
    kinds = ["surrogate", "nul", "megabytes", "huge-usage", "ok"]
    fault_server.serve(lambda n, seen: kinds[n % len(kinds)])
    res = run_audit(cfg, out_dir=tmp_path / "run", retriever=retriever)
    assert res.planned == 20 and res.ok + res.discarded == 20
    df = pd.read_parquet(tmp_path / "run" / "evaluations.parquet")
    assert len(df) == 20 and not df.duplicated(["query_id", "perm_index"]).any()
    rows = [unescape_row(r) for r in df.to_dict(orient="records")]
    answers = [r["raw_response"] for r in rows]
    assert answers.count(SURROGATE_ANSWER) == 4 and answers.count(NUL_ANSWER) == 4
    assert answers.count(MEGABYTES_ANSWER) == 4
    assert (df["escaped"] == "raw_response").sum() == 4
    # the parser judged each as it judges any answer: the surrogates sit in a JSON
    # string (valid), a raw NUL is not valid JSON, the megabytes are extra text
    reasons = {r["raw_response"][:40]: (r["selected_position"], r["discard_reason"])
               for r in rows}
    assert reasons[SURROGATE_ANSWER[:40]] == (2, None)
    assert reasons[NUL_ANSWER[:40]][1] == "invalid_json"
    assert reasons[MEGABYTES_ANSWER[:40]][1] == "extra_text"
    huge = df[df["prompt_tokens"].isna()]
    assert len(huge) == 4  # token counts beyond 64 bits are not kept (unknown)


def test_a_refused_record_is_reported_and_resume_continues(tmp_path, retriever,
                                                          emb_cache) -> None:
    """A record the journal refuses stops the run with a message saying so (not a
    silent gap in the table); the other records are kept and --resume runs it."""
    config = write_config(tmp_path, cache_dir=emb_cache, n_queries=3, n_perms=4)
    bad_query = {"seen": None}

    def poison(backends, template, queries, candidates):
        class Poison:
            def __init__(self, inner):
                self.inner, self.name = inner, inner.name

            async def complete(self, request):
                resp = await self.inner.complete(request)
                if bad_query["seen"] in (None, request.query_id) and request.seed % 2:
                    bad_query["seen"] = request.query_id
                    return ChatResponse(text=resp.text, prompt_tokens=2**80,
                                        latency_s=resp.latency_s)
                return resp

            async def aclose(self):
                await self.inner.aclose()

        return {key: Poison(b) for key, b in backends.items()}

    with pytest.raises(JournalError) as info:
        run_audit(load_audit_config(config), out_dir=tmp_path / "run", retriever=retriever,
                  wrap_backends=poison)
    message = str(info.value)
    assert message.startswith(MSG_REJECTED.split("{")[0]) and "OverflowError" in message
    n_refused = int(message.split(": ")[1].split()[0])
    kept = journal_keys(tmp_path / "run" / "journal.sqlite")
    assert len(kept) == 12 - n_refused >= 8
    assert not (tmp_path / "run" / "evaluations.parquet").exists()
    res = run_audit(load_audit_config(config), out_dir=tmp_path / "run",
                    run=RunOptions(resume=True), retriever=retriever)
    assert res.ran_now == n_refused and res.ok + res.discarded == 12
    keys = journal_keys(tmp_path / "run" / "journal.sqlite")
    assert len(keys) == 12 and {a for _, a in keys} == {1}
    assert json.loads((tmp_path / "run" / "run.json").read_text())["sessions"][-1]["resume"]
