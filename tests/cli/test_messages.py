"""Messages that name the real cause: topn on a run without choice probabilities, one
row-numbering convention in every command (data rows from 1, the header is not a
row), a warning before prompts far beyond a model's context."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from helpers import prepared_run, write_config, write_products
from recaudit.audit._config import load_audit_config
from recaudit.audit._plan import MSG_LONG_PROMPTS
from recaudit.audit._run import run_audit
from recaudit.cli import app
from recaudit.cli import positional as P
from recaudit.exceptions import RecauditWarning
from recaudit.positional import simulate_evaluations

runner = CliRunner()


def _evaluations(**columns: object) -> pd.DataFrame:
    sim = simulate_evaluations(8, k=4, n_perms=4, p_bias=0.3, rng=2).to_frame()
    return sim.assign(model="m", **columns)


def test_topn_without_choice_probabilities_names_the_setting(tmp_path: Path) -> None:
    path = tmp_path / "e.parquet"
    _evaluations(choice_probs=None).to_parquet(path, index=False)
    res = runner.invoke(app, ["positional", "topn", str(path), "--from-choice-probs"])
    assert res.exit_code == 2
    assert res.output.strip() == "error: " + P.MSG_TOPN_NO_PROBS.format(path=path, n=32)
    assert "choice_probabilities = true" in res.output
    assert "every row was discarded" not in res.output
    _evaluations().to_parquet(path, index=False)
    res = runner.invoke(app, ["positional", "topn", str(path), "--from-choice-probs"])
    assert res.exit_code == 2
    assert res.output.strip() == "error: " + P.MSG_TOPN_NO_PROBS_COLUMN.format(path=path)
    bad = _evaluations(choice_probs=[json.dumps([0.25] * 4)] * 31 + ["[0.5, oops"])
    bad.to_parquet(path, index=False)
    res = runner.invoke(app, ["positional", "topn", str(path), "--from-choice-probs"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert res.output.strip() == "error: " + P.MSG_TOPN_BAD_PROBS.format(
        path=path, row=32, value="[0.5, oops")
    res = runner.invoke(app, ["positional", "topn", str(path), "--by", "other"])
    assert res.exit_code == 2
    assert res.output.strip() == "error: " + P.MSG_TOPN_NO_MODEL.format(model="other",
                                                                      path=path)


def test_every_command_numbers_data_rows_from_1(tmp_path: Path) -> None:
    """The same broken third data row is 'row 3' for the positional reader, the
    rankings reader and the fairness tables alike."""
    ev = _evaluations()
    ev.loc[2, "order"] = "1 2 2 4"
    ev.to_csv(tmp_path / "e.csv", index=False)
    res = runner.invoke(app, ["positional", "analyze", str(tmp_path / "e.csv"), "--quiet"])
    assert res.exit_code == 2 and "row 3, column `order`" in res.output, res.output
    ranks = ev[["query_id", "order"]].assign(ranking="1 2 3 4")
    ranks.loc[2, "order"] = "1 2 3 4"
    ranks.loc[2, "ranking"] = "1 2 2 4"
    ranks.to_csv(tmp_path / "r.csv", index=False)
    res = runner.invoke(app, ["positional", "topn", str(tmp_path / "r.csv")])
    assert res.exit_code == 2 and "row 3: `ranking` '1 2 2 4'" in res.output, res.output
    users = pd.DataFrame({"user_id": [f"u{i}" for i in range(30)],
                          "gender": ["F" if i % 3 == 0 else "M" for i in range(30)]})
    recs = pd.DataFrame({"user_id": ["u0", "u0", "u0"] + [f"u{i}" for i in range(1, 30)],
                         "item_id": [1, 2, 3] + [1] * 29, "rank": [1, 2, 2] + [1] * 29})
    test = pd.DataFrame({"user_id": users.user_id, "item_id": 1})
    for name, table in (("recs", recs), ("test", test), ("users", users)):
        table.to_csv(tmp_path / f"{name}.csv", index=False)
    res = runner.invoke(app, ["fairness", "evaluate", "--recs", str(tmp_path / "recs.csv"),
                              "--test", str(tmp_path / "test.csv"), "--users",
                              str(tmp_path / "users.csv"), "--attribute", "gender",
                              "--protected", "F", "--n-boot", "0", "--n-resamples", "0"])
    assert res.exit_code == 2 and "('u0', 2) at row 3" in res.output, res.output


def _long_catalog(path: Path) -> None:
    """Four products (k = 4: every prompt shows them all), one with a 900 kB description
    (under the readers' 1,000,000-character field bound, far beyond any context)."""
    rows = [(f"P{i:03d}", f"Brand{i} Red Jeans {i}", "A red pair of jeans.", "B", "red")
            for i in range(1, 5)]
    rows[2] = (rows[2][0], rows[2][1], "very long " * 90_000, "B", "red")
    write_products(path, rows)
    (path.parent / "queries.csv").write_text("query_id,text\nq1,red jeans\nq2,jeans\n"
                                             "q3,a pair of jeans\n")


def _long_config(tmp_path: Path, emb_cache: Path) -> Path:
    config = write_config(tmp_path, cache_dir=emb_cache, n_perms=2, catalog=_long_catalog)
    config.write_text(config.read_text().replace("n = 8", 'file = "queries.csv"'))
    return config


def test_prompts_far_beyond_the_context_are_warned_about(tmp_path: Path, retriever,
                                                         emb_cache) -> None:
    config = _long_config(tmp_path, emb_cache)
    with pytest.warns(RecauditWarning) as caught:
        res = run_audit(load_audit_config(config), out_dir=tmp_path / "run", retriever=retriever)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1
    assert MSG_LONG_PROMPTS.split("{")[0] in messages[0] and "item 'P003'" in messages[0]
    assert "900,0" in messages[0]  # the candidate's characters
    assert res.ok + res.discarded == 6  # a warning, not an error
    # the command line prints it as one `warning:` line before the run
    with pytest.warns(RecauditWarning):
        run = prepared_run(config, tmp_path / "run2", retriever)
    out = runner.invoke(app, ["positional", "run", str(config), "--out", str(run),
                              "--resume", "--quiet", "--no-analyze"],
                        env={"COLUMNS": "10000"})
    assert out.exit_code == 0, out.output
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith("warning:")]
    assert len(lines) == 1 and "item 'P003'" in lines[0] and "~32,768 tokens" in lines[0]


def test_ordinary_prompts_give_no_warning(tmp_path: Path, retriever, emb_cache) -> None:
    config = write_config(tmp_path, cache_dir=emb_cache, n_queries=3, n_perms=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecauditWarning)
        assert run_audit(load_audit_config(config), out_dir=tmp_path / "run",
                         retriever=retriever).planned == 6


def test_a_line_break_inside_a_data_value_does_not_split_the_message(tmp_path):
    """Hypothesis found it: a header cell "\\x1cuery_id" (a line boundary for
    str.splitlines) printed raw gave a two-line error. It is escaped."""
    from typer.testing import CliRunner

    from recaudit.cli import app

    path = tmp_path / "evals.csv"
    path.write_text("\x1cuery_id,order,selected_position\nq,1 2 3,1\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["positional", "analyze", str(path)])
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and "\\x1cuery_id" in lines[0], res.output
