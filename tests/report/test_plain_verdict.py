"""The verdict in plain words: built from the numbers, the same on the page and at the
terminal, never a bare ``nan``; and the one-model fairness verdict.

The positional data are real analyses (``recaudit positional analyze --json``) of
evaluations drawn here: a model that answers position 1 or position k only (the
README's demo: 74% / 0 / 0 / 0 / 26%), the paper's model at p_bias = 1 (the
strong/soft split is not identified), and the committed fixture (several models).
Every expected sentence is rebuilt in the test from the JSON numbers, independently
of ``recaudit.report._plain``.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from report_synth import FIXTURES
from typer.testing import CliRunner

from recaudit.cli import app
from recaudit.report import build_report, plain_summary

runner = CliRunner()
#: Cheap but real analysis settings.
FAST = ["--n-boot", "200", "--n-resamples", "199", "--seed", "1"]
NAN = re.compile(r"\bnan\b", re.IGNORECASE)


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def _words(text: str) -> str:
    """Whitespace (line wraps, non-breaking spaces) collapsed to single spaces."""
    return " ".join(text.split())


def _verdict(html: str) -> list[str]:
    """The verdict's paragraphs as text."""
    block = html.split('<div class="verdict">', 1)[1].split("</div>", 1)[0]
    out = []
    for p in re.findall(r"<p[^>]*>(.*?)</p>", block, re.S):
        parser = _Text()
        parser.feed(p)
        out.append(_words("".join(parser.parts)))
    return out


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _pct_ci(est: dict[str, Any]) -> str:
    return f"{_pct(est['value'])} (95% CI {_pct(est['ci_low'])}\u2013{_pct(est['ci_high'])})"


def _first_or_last(n_queries: int, k: int, p_first: float, seed: int) -> pd.DataFrame:
    """Evaluations of a model that answers the first position with probability
    ``p_first`` and the last otherwise, whatever is shown (8 random orders a query)."""
    gen = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        for _ in range(8):
            order = " ".join(str(i + 1) for i in gen.permutation(k))
            rows.append({"query_id": f"q{q}", "order": order,
                         "selected_position": 1 if gen.random() < p_first else k})
    return pd.DataFrame(rows)


def _analyze(table: pd.DataFrame, folder: Path) -> tuple[dict[str, Any], str]:
    """``analyze --json`` written as ``folder/analysis.json``, and the terminal output."""
    folder.mkdir(parents=True, exist_ok=True)
    csv = folder / "answers.csv"  # not a run folder's evaluations table
    table.to_csv(csv, index=False)
    res = runner.invoke(app, ["positional", "analyze", str(csv), *FAST, "--json"])
    assert res.exit_code == 0, res.output
    (folder / "analysis.json").write_text(res.stdout)
    shown = runner.invoke(app, ["positional", "analyze", str(csv), *FAST, "--quiet"])
    assert shown.exit_code == 0, shown.output
    return json.loads(res.stdout), shown.stdout


@pytest.fixture(scope="module")
def first_or_last(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, Path]:
    folder = tmp_path_factory.mktemp("first-or-last")
    row, terminal = _analyze(_first_or_last(20, 5, 0.74, seed=0), folder)
    return row, terminal, folder


def _expected_lead(row: dict[str, Any]) -> str:
    q = row["position_distribution"]
    assert q[1] == q[2] == q[3] == 0 and q[0] > q[4] > 0
    return (f"The model picked the candidate shown first in {_pct(q[0])} of its answers and "
            f"the one shown last in {_pct(q[4])}; it never picked positions 2\u20134. With "
            f"no preference for a position, each of the 5 would get 20%.")


def test_the_verdict_opens_with_what_the_model_did_by_position(first_or_last) -> None:  # noqa: ANN001
    row, _, folder = first_or_last
    paragraphs = _verdict(build_report(folder).html)
    lead = paragraphs[0]
    assert lead.startswith(_expected_lead(row))
    # the tests are named in words first, their p-values after
    assert ("Chance alone would rarely produce this (a p-value at or below 0.05 says so): "
            "a test of whether the positions' shares are even (POB-UNBP) gives p < 0.001"
            ) in lead
    assert "a test of whether the candidate picked depends on the order shown (POB-ICM)" in lead
    # the acronyms' paragraph comes last
    assert paragraphs[-1].startswith("In the tests' terms: we audited 1 model")


@pytest.fixture(scope="module")
def paper_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """The spec's generative model at p_bias = 0.4, k = 5: the split is identified."""
    from recaudit.positional import simulate_evaluations

    folder = tmp_path_factory.mktemp("paper-model")
    table = simulate_evaluations(60, k=5, n_perms=10, p_bias=0.4, rng=3).to_frame()
    row, _ = _analyze(table, folder)
    assert row["spb"]["note"] is None
    return row, folder


def _raw_distance_sentence(pb: float, tv: float) -> str:
    if pb < tv - 5e-4:
        return f"The raw distance of the shares from even is larger, {tv:.3f}, because small"
    if pb < tv + 5e-4:
        return f"The raw distance of the shares from even is the same, {tv:.3f}: here"
    return f"The raw distance of the shares from even is {tv:.3f} (PB is cross-fitted"


def test_the_how_much_numbers_are_reconciled_on_the_page(paper_model) -> None:  # noqa: ANN001
    row, folder = paper_model
    report = build_report(folder)
    how_much = _verdict(report.html)[1]
    share, spb, soft, pb = (row[key] for key in ("positional_share", "spb", "spb_soft", "pb"))
    # the strong and soft parts add up to the position-driven share (the library's split)
    assert spb["value"] + soft["value"] == pytest.approx(share["value"], abs=1e-9)
    # the raw distance is the TV of the position shares from uniform, computed here
    tv = 0.5 * sum(abs(x - 1 / 5) for x in row["position_distribution"])
    assert pb["plugin"] == pytest.approx(tv, abs=1e-12)
    assert how_much.startswith(f"How much position decided: position, not the candidates, "
                               f"made {_pct_ci(share)} of the answers")
    assert (f"Of those, {_pct_ci(spb)} of all answers went to a candidate the model does not "
            f"pick for that query when position plays no part (strong bias, sPB) and "
            f"{_pct_ci(soft)} to one it does pick anyway (soft bias).") in how_much
    pb_text = f"{pb['value']:.3f} [{pb['ci_low']:.3f}, {pb['ci_high']:.3f}]"
    assert f"PB = {pb_text} counts the answers position moved away from an even spread" \
        in how_much
    assert pb["value"] < share["value"] and "It is below the position-driven share" in how_much
    assert _raw_distance_sentence(pb["value"], tv) in how_much
    # every number of the verdict is tagged with where it lives in the sidecar
    assert report.data["groups"][0]["pb"]["plugin"] == pytest.approx(tv)
    for path in ("pb/plugin", "positional_share/value", "spb/value", "spb_soft/value",
                 "position_distribution/0/value"):
        assert f'data-path="groups/0/{path}"' in report.html


def test_the_terminal_says_the_same_in_words(first_or_last) -> None:  # noqa: ANN001
    row, terminal, _ = first_or_last
    text = _words(terminal)
    assert _expected_lead(row) in text
    assert "Chance alone would rarely produce this" in text
    # both 1 and 5 are favoured: every answer was made by position, the split is bounded
    assert f"made {_pct_ci(row['positional_share'])} of the answers" in text
    assert "is not identified here: " in text and "not identified [0.000, " in terminal
    assert not NAN.search(terminal)
    # the paragraphs are wrapped at spaces only: "p < 0.001" is never split
    assert all(len(line) <= 80 for line in terminal.splitlines())
    assert "p <\n" not in terminal and "p\n" not in terminal


def test_after_a_sequential_run_the_words_leave_the_fixed_sample_tests_out(first_or_last) -> None:  # noqa: ANN001, E501
    row, _, _ = first_or_last
    words = plain_summary([row], tests=False)
    assert _words(words).startswith(_expected_lead(row))
    assert "Chance alone" not in words and "POB-" not in words
    assert "How much position decided" in words
    assert "Chance alone would rarely" in plain_summary([row])


@pytest.fixture(scope="module")
def unidentified(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, Path]:
    from recaudit.positional._scenarios import simulate_scenario

    folder = tmp_path_factory.mktemp("unidentified")
    table = simulate_scenario("paper", 30, k=5, p_bias=1.0, rng=2).to_frame()
    row, terminal = _analyze(table, folder)
    assert row["spb"]["value"] is None and row["spb"]["note"].startswith("not identified: ")
    return row, terminal, folder


def test_an_unidentified_spb_is_explained_not_printed_as_nan(unidentified) -> None:  # noqa: ANN001
    row, terminal, _ = unidentified
    note = row["spb"]["note"]
    assert not NAN.search(terminal)
    assert "not identified [0.000, " in terminal  # the table: the identification bounds
    text = _words(terminal)
    assert f"sPB and soft bias (all): {_words(note)}" in text  # the whole reason
    reason = _words(note.removeprefix("not identified: ").split(", so ")[0])
    assert f"is not identified here: {reason}. So sPB is only known to lie between 0 and " \
        f"{row['spb']['ci_high']:.3f}." in text


def test_an_unidentified_spb_on_the_page(unidentified) -> None:  # noqa: ANN001
    row, _, folder = unidentified
    report = build_report(folder)
    how_much = _verdict(report.html)[1]
    reason = _words(row["spb"]["note"].removeprefix("not identified: ").split(", so ")[0])
    assert f"is not identified here: {reason}." in how_much
    assert f"between 0 and {row['spb']['ci_high']:.3f}" in how_much
    assert "sPB = n/a [0.000, " in _verdict(report.html)[-1] and "(bounds)" in report.html


def test_an_unidentified_spb_without_an_interval_gives_its_point_bound(tmp_path: Path) -> None:
    """Three queries (a sequential demo's early stop): the share has no interval, so the
    bound on sPB is the share times (1 - 1/k), said to be a point value, never "n/a"."""
    from recaudit.positional._scenarios import simulate_scenario

    table = simulate_scenario("paper", 3, k=5, p_bias=1.0, rng=2).to_frame()
    row, terminal = _analyze(table, tmp_path)
    assert row["spb"]["note"].startswith("not identified: ")
    assert row["positional_share"]["ci_high"] is None
    text = _words(terminal)
    bound = 100 * row["positional_share"]["value"] * (1 - 1 / 5)
    assert (f"So sPB is at most the position-driven share times (1 - 1/k), {bound:.0f}% "
            "here: a point value, since 3 queries are too few for an interval.") in text
    assert "n/a" not in text.split("How much position decided:")[-1]


def test_several_configurations_lead_with_the_strongest(positional_dir: Path) -> None:
    """The committed fixture (3 models, 12 configurations, no positional share)."""
    analysis = json.loads((positional_dir / "analysis.json").read_text())
    audited = [g for g in analysis if g["condition"] != "decoding"]
    top = max(audited, key=lambda g: g["pb"]["value"])
    q = top["position_distribution"]
    rest = sorted(q[1:])
    expected = (f"Where position mattered most ({top['model']}, k={top['k']}, "
                f"T={top['temperature']:g}, {top['condition']}), the model picked the "
                f"candidate shown first in {_pct(q[0])} of its answers; each of the other "
                f"positions got {_pct(rest[0])}\u2013{_pct(rest[-1])}.")
    assert all(x <= 1 / top["k"] < q[0] for x in rest)
    paragraphs = _verdict(build_report(positional_dir).html)
    assert paragraphs[0].startswith(expected)
    assert "(p-values adjusted for testing several configurations: Holm)" in paragraphs[0]
    # without the split, sPB alone is said in words
    spb = top["spb"]
    assert paragraphs[1].startswith(f"How much position decided: position moved "
                                    f"{_pct_ci(spb)} of the answers to a candidate")


def test_the_verdict_never_leads_with_an_identity_order_condition(
        positional_dir: Path) -> None:
    # docs/decisions/0420: a labels cell shows the retrieval order, so its PB is where
    # the answers sit among the ranks, not a position effect
    path = positional_dir / "analysis.json"
    analysis = json.loads(path.read_text())
    audited = sorted((g for g in analysis if g["condition"] != "decoding"),
                     key=lambda g: g["pb"]["value"])
    top, second = audited[-1], audited[-2]
    top["condition"] = "labels"
    path.write_text(json.dumps(analysis))
    paragraphs = _verdict(build_report(positional_dir).html)
    assert paragraphs[0].startswith(
        f"Where position mattered most ({second['model']}, k={second['k']}, "
        f"T={second['temperature']:g}, {second['condition']})")


def test_terminal_with_groups_names_the_strongest(tmp_path: Path) -> None:
    a = _first_or_last(12, 5, 0.9, seed=1).assign(model="a")
    b = _first_or_last(12, 5, 0.5, seed=2).assign(model="b")
    csv = tmp_path / "ev.csv"
    pd.concat([a, b]).to_csv(csv, index=False)
    res = runner.invoke(app, ["positional", "analyze", str(csv), "--by", "model", *FAST,
                              "--quiet"])
    assert res.exit_code == 0, res.output
    text = _words(res.stdout)
    assert "Where position mattered most (a, k=5, T=0), the model picked the candidate " \
        "shown first in" in text
    assert not NAN.search(res.stdout)


# ------------------------------------------------------------------------ fairness
def _one(name: str | None) -> dict[str, Any]:
    results = json.loads((FIXTURES / "fairness_run" / "results.json").read_text())
    one = results["ItemKNN"]
    return one if name is None else {**one, "model": name}


def test_one_fairness_model_gets_its_value_not_a_range(tmp_path: Path) -> None:
    path = tmp_path / "eval-2026-12-01.json"
    path.write_text(json.dumps(_one("MostPop")))
    report = build_report(path)
    verdict = _verdict(report.html)[0]
    ib = report.data["models"][0]["ib"]["ndcg@10"]
    assert verdict.startswith("We evaluated one model, MostPop, on the user groups")
    assert (f"Its IB-ndcg@10 (0 = no combined bias, higher = more) is {ib['value']:.3f} "
            f"[{ib['ci_low']:.3f}, {ib['ci_high']:.3f}].") in verdict
    assert "ranges from" not in verdict and "Pareto front" not in verdict
    assert report.data["models"][0]["name"] == "MostPop"
    assert "eval-2026-12-01" not in report.html.split("<main>", 1)[1].split("Source:", 1)[0]


def test_an_unnamed_model_is_not_named_after_its_file(tmp_path: Path) -> None:
    path = tmp_path / "eval-2026-12-01.json"
    path.write_text(json.dumps(_one(None)))
    report = build_report(path)
    assert report.data["models"][0]["name"] == "unnamed model"
    assert _verdict(report.html)[0].startswith("We evaluated one model (its JSON names none)")
    assert any("--model NAME" in m for m in report.data["missing"])
    body = report.html.split("<main>", 1)[1]
    assert "eval-2026-12-01" not in body


def test_several_fairness_models_keep_the_range(fairness_dir: Path) -> None:
    verdict = _verdict(build_report(fairness_dir).html)[0]
    assert "ranges from" in verdict and "Pareto front" in verdict
    assert verdict.startswith("We compared 9 models")


@pytest.mark.parametrize(("shares", "expected"), [
    ([0.3, 0.1, 0.0, 0.3, 0.3],
     "picked the candidate shown first in 30% of its answers, the one shown fourth in 30% "
     "and the one shown last in 30%; position 2 got 10% and it never picked position 3."),
    ([0.2, 0.2, 0.2, 0.2, 0.2],
     "picked the candidate shown first in 20% of its answers; each of the other positions "
     "got 20%."),
    ([0.0, 0.0, 0.0, 0.0, 1.0],
     "picked the candidate shown last in 100% of its answers; it never picked positions "
     "1\u20134."),
    ([0.004, 0.3, 0.0, 0.3, 0.396],
     "picked the candidate shown last in 40% of its answers, the one shown second in 30% "
     "and the one shown fourth in 30%; position 1 got <1% and it never picked position 3."),
])
def test_the_position_sentence_names_every_position(first_or_last, shares, expected) -> None:  # noqa: ANN001, E501
    row = json.loads(json.dumps(first_or_last[0]))
    row["position_distribution"] = shares
    assert _words(plain_summary([row])).startswith(f"The model {expected}")
