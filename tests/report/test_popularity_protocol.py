"""The fairness report's protocol, head/tail and popularity-group sections.

Inputs: a `fairness run` study under two protocols with popularity bias
(report_synth.fairness_study), `evaluate --json` outputs with a sampled protocol, with
the popularity-bias section null, from before it, and a real `evaluate` output.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
from report_synth import SAMPLED_WARNING, fairness_results, popularity_bias

from recaudit.fairness import EvaluateOptions, evaluate
from recaudit.fairness.simulation._lists import simulate_interbias
from recaudit.report import Report, build_report
from recaudit.report import _sections_protocol as protocol
from recaudit.report._sections_popularity import NO_GROUPS, NO_SECTION

SVG_HEAD_TAIL = 'aria-labelledby="fig-head-tail-cap"'
SVG_GROUPS = 'aria-labelledby="fig-popularity-groups-cap"'


class _Paths(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.numbers: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if any(k == "data-path" for k, _ in attrs):
            self.numbers.append(dict(attrs))


def _assert_numbers_in_sidecar(report: Report) -> None:
    parser = _Paths()
    parser.feed(report.html)
    data = report.data
    for attrs in parser.numbers:
        found: Any = data
        for part in str(attrs["data-path"]).split("/"):
            found = found[int(part)] if isinstance(found, list) else found[part]
        assert json.loads(str(attrs["data-value"])) == found, attrs


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


def _verdict(report: Report) -> str:
    return _text(report.html.split('<div class="verdict">', 1)[1].split("</div>", 1)[0])


def _table_rows(html: str, table: str) -> int:
    body = html.split(f'<table id="{table}"', 1)[1].split("</tbody>", 1)[0]
    return body.count("<tr>") - 1  # the header row


def _with_popularity(**kw: Any) -> dict[str, Any]:
    results = fairness_results(**kw)
    for j, r in enumerate(results.values()):
        r["popularity_bias"] = popularity_bias(0.6, {"M": 1412, "F": 531}, seed=j)
        r["n_items"] = 1682
    return results


# ------------------------------------------------------------------------ protocol
def test_study_under_two_protocols(fairness_study_dir: Path) -> None:
    report = build_report(fairness_study_dir)
    verdict = _verdict(report)
    assert "evaluated by full ranking over 1,682 items" in verdict
    assert "(also under uni100: see Evaluation protocols)" in verdict
    assert report.data["verdict"].startswith("We compared 9 models")
    html = report.html
    assert '<section id="protocols">' in html and _table_rows(html, "tab-protocols") == 18
    # the study used a sampled protocol: its warning is shown beside the verdict
    box = html.split('id="protocol-warnings"', 1)[1].split("</div>", 1)[0]
    assert "Warning: sampled metrics" in box and SAMPLED_WARNING in _text(box)
    assert report.data["warnings"] == [SAMPLED_WARNING]
    first = report.data["models"][0]
    assert [p["name"] for p in first["protocols"]] == ["full", "uni100"]
    assert first["protocol"] == "full"
    # sampled NDCG is 2.5x the full one in the fixture, RD 0.6x
    full, sampled = first["protocols"]
    assert sampled["overall"]["ndcg@10"]["value"] > full["overall"]["ndcg@10"]["value"]
    assert abs(sampled["rd"]["ndcg@10"]["value"]) < abs(full["rd"]["ndcg@10"]["value"])
    _assert_numbers_in_sidecar(report)


def test_sampled_evaluation_names_its_protocol_and_warns() -> None:
    results = _with_popularity()
    for r in results.values():
        r["protocol"] = "pop50"
        r["warnings"] = ["sampled metrics: group gaps may differ from full ranking"]
    report = build_report(results)
    verdict = _verdict(report)
    assert ("evaluated by sampled ranking: pop50 \u2014 each test item ranked against 50 "
            "sampled negatives (drawn in proportion to their popularity)") in verdict
    assert "group gaps may differ from full ranking" in _text(
        report.html.split('id="protocol-warnings"', 1)[1].split("</div>", 1)[0])
    assert '<section id="protocols">' not in report.html  # one protocol: no table


def test_sampled_without_warnings_gets_the_reports_own() -> None:
    results = _with_popularity()
    for r in results.values():
        r["protocol"] = "uni100"
    report = build_report(results)
    assert "100 sampled negatives (drawn uniformly)" in _verdict(report)
    assert report.data["warnings"] == [protocol.SAMPLED_WARNING]
    assert "Krichene &amp; Rendle" in report.html


def test_full_ranking_has_no_warning_box_and_mixed_protocols_are_named() -> None:
    results = _with_popularity()
    report = build_report(results)
    assert "evaluated by full ranking over 1,682 items" in _verdict(report)
    assert 'id="protocol-warnings"' not in report.html and report.data["warnings"] == []
    results["MF"]["protocol"] = "uni100"
    mixed = _verdict(build_report(results))
    assert "evaluated under different protocols, not comparable" in mixed
    assert "for MF" in mixed and "full ranking over 1,682 items for ItemKNN" in mixed


# ------------------------------------------------------------------ popularity bias
def test_head_tail_and_popularity_group_sections(fairness_study_dir: Path) -> None:
    report = build_report(fairness_study_dir)
    html = report.html
    assert SVG_HEAD_TAIL in html and SVG_GROUPS in html
    assert "Share of the recommendations from the long tail (APLT@10)" in html
    assert "Profile popularity against recommended popularity (ARP@10)" in html
    assert _table_rows(html, "tab-popularity-bias") == 9 * 3  # all users, M, F
    assert _table_rows(html, "tab-popularity-groups") == 9 * 3  # niche, diverse, blockbuster
    bias = report.data["models"][0]["popularity_bias"]
    assert [g["name"] for g in bias["user_popularity_groups"]] == [
        "niche", "diverse", "blockbuster"]
    # every number with its CI: the APLT of the first row is printed "v [lo, hi]"
    aplt = bias["overall"]["aplt@10"]
    assert f'data-value="{json.dumps(aplt["value"])}">{aplt["value"]:.3f} [' in html
    ids = [f["id"] for f in report.data["figures"]]
    assert ids.index("fig-head-tail") < ids.index("fig-popularity-groups")


def test_null_section_shows_its_reason_and_no_plot() -> None:
    results = _with_popularity()
    reason = "not computed: no `train` table (pass `train` / `--train` with user_id, item_id)"
    results["MF"]["popularity_bias"] = None
    results["MF"]["popularity_bias_reason"] = reason
    report = build_report(results)
    assert f"MF: popularity bias not computed ({reason})." in _text(report.html)
    assert report.data["models"][1]["popularity_bias"] is None
    assert report.data["models"][1]["popularity_bias_reason"] == reason
    assert _table_rows(report.html, "tab-popularity-bias") == 8 * 3  # MF left out
    for r in results.values():
        r["popularity_bias"], r["popularity_bias_reason"] = None, reason
    none = build_report(results)
    assert SVG_HEAD_TAIL not in none.html and SVG_GROUPS not in none.html
    assert "ItemKNN: popularity bias not computed" in none.html
    assert '<section id="popularity-groups">' not in none.html


def test_json_without_the_section_says_so(fairness_dir: Path) -> None:
    report = build_report(fairness_dir)
    assert NO_SECTION.split("`")[0] in report.html and SVG_HEAD_TAIL not in report.html
    results = _with_popularity()
    for r in results.values():  # a section from before the popularity groups
        del r["popularity_bias"]["user_popularity_groups"]
    older = build_report(results)
    assert SVG_HEAD_TAIL in older.html and SVG_GROUPS not in older.html
    assert NO_GROUPS.format(models=", ".join(results)) in older.html


def test_real_evaluate_output() -> None:
    """The JSON `evaluate` writes (to_dict), two models, renders every new part."""
    results = {}
    for name, beta in (("popular", 2.0), ("uniform", 0.0)):
        d = simulate_interbias(160, rng=np.random.default_rng(4), fill_exponent=beta)
        ev = evaluate(d.recs, d.test, d.users, attribute="gender", protected="F", n_items=400,
                      train=d.train, options=EvaluateOptions(n=(5, 10), n_boot=40,
                                                             n_resamples=0), rng=2)
        results[name] = json.loads(json.dumps(ev.to_dict()))
    report = build_report(results)
    assert SVG_HEAD_TAIL in report.html and SVG_GROUPS in report.html
    assert "evaluated by full ranking over 400 items" in _verdict(report)
    _assert_numbers_in_sidecar(report)
    popular, uniform = (m["popularity_bias"]["overall"]["aplt@10"]["value"]
                        for m in report.data["models"])
    assert popular < uniform  # lists filled by popularity reach the tail less often
