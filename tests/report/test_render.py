"""The rendered page and its sidecar: determinism, consistency, escaping, API, CLI."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from report_synth import PAYLOADS, resolve
from typer.testing import CliRunner

from recaudit import InputError
from recaudit.cli import app
from recaudit.report import Report, build_report
from recaudit.report._plots import pareto_front
from recaudit.report._svg import nice_ticks

TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00")


class _Tags(HTMLParser):
    """Collects start tags with their attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _tags(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


@pytest.fixture(params=["positional", "fairness"])
def report(request: pytest.FixtureRequest, positional_dir: Path, fairness_dir: Path) -> Report:
    return build_report(positional_dir if request.param == "positional" else fairness_dir)


def test_same_input_same_bytes_apart_from_the_timestamp(
    positional_dir: Path, fairness_dir: Path
) -> None:
    for source in (positional_dir, fairness_dir):
        a, b = build_report(source), build_report(source)
        assert TIMESTAMP.sub("T", a.html) == TIMESTAMP.sub("T", b.html)
        assert TIMESTAMP.sub("T", a.sidecar) == TIMESTAMP.sub("T", b.sidecar)


def test_source_date_epoch_makes_the_bytes_identical(
    positional_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    a, b = build_report(positional_dir), build_report(positional_dir)
    assert a.html == b.html and "2023-11-14T22:13:20+00:00" in a.html


def test_every_number_on_the_page_is_in_the_sidecar(report: Report) -> None:
    data = report.data
    numbers = [attrs for _, attrs in _tags(report.html) if "data-path" in attrs]
    assert len(numbers) > 50
    for attrs in numbers:
        expected = resolve(data, attrs["data-path"])
        assert json.loads(attrs["data-value"]) == expected, attrs
    # the verdict's numbers are tagged too
    verdict = report.html.split('<div class="verdict">', 1)[1].split("</div>", 1)[0]
    assert "data-path" in verdict
    assert data["verdict"].startswith(("Where position mattered most", "We compared"))


def test_formatted_text_matches_the_value(positional_dir: Path) -> None:
    html = build_report(positional_dir).html
    data = build_report(positional_dir).data
    g = data["groups"][0]["pb"]
    cell = f'data-path="groups/0/pb/value" data-value="{json.dumps(g["value"])}">'
    assert f"{cell}{g['value']:.3f} [{g['ci_low']:.3f}, {g['ci_high']:.3f}]</td>" in html


def test_page_is_self_contained(report: Report) -> None:
    tags = _tags(report.html)
    assert [t for t, _ in tags if t in {"link", "img", "iframe", "object", "embed"}] == []
    assert [a for t, a in tags if t == "script"] == [{}]  # only our inline script
    urls = re.findall(r"""(?:src|href)\s*=\s*["']?([^"' >]+)""", report.html)
    assert all(u.startswith("#") for u in urls), urls
    assert "Content-Security-Policy" in report.html and "default-src 'none'" in report.html
    n_svg = sum(1 for t, _ in tags if t == "svg")
    assert n_svg == len(report.data["figures"]) >= 4


def test_csp_hash_matches_the_inline_script(report: Report) -> None:
    import base64
    import hashlib

    script = report.html.split("<script>", 1)[1].split("</script>", 1)[0]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"'sha256-{digest}'" in report.html


@pytest.mark.parametrize("which", ["hostile_positional", "hostile_fairness"])
def test_untrusted_strings_are_escaped(which: str, request: pytest.FixtureRequest) -> None:
    report = build_report(request.getfixturevalue(which))
    for payload in PAYLOADS:
        assert payload not in report.html
        assert payload[:14] not in report.html  # not even "<script>window" / "<img src=x one"
    assert "&lt;script&gt;window.__pwned=1" in report.html  # shown, escaped
    tags = _tags(report.html)
    assert [t for t, _ in tags].count("script") == 1
    assert not [t for t, _ in tags if t == "img"]
    assert not [(t, a) for t, a in tags for k in a if k.startswith("on")]
    # the sidecar keeps the strings verbatim (it is data, not markup)
    assert json.dumps(PAYLOADS[0]) in json.dumps(report.data)


def test_report_is_frozen_and_data_is_a_copy(positional_dir: Path) -> None:
    report = build_report(positional_dir)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.html = ""  # type: ignore[misc]
    report.data["groups"].clear()
    assert report.data["groups"]
    assert report.to_json() == report.sidecar


def test_save_writes_page_and_sidecar(tmp_path: Path, fairness_dir: Path) -> None:
    report = build_report(fairness_dir)
    html_path, json_path = report.save(tmp_path / "out" / "audit.html")
    assert html_path.read_text(encoding="utf-8") == report.html
    assert json.loads(json_path.read_text()) == report.data
    with pytest.raises(InputError, match="must not end in .json"):
        report.save(tmp_path / "audit.json")


def test_kind_can_be_forced(positional_dir: Path) -> None:
    assert build_report(positional_dir / "analysis.json", kind="positional").kind == "positional"
    with pytest.raises(InputError, match="no results.json"):
        build_report(positional_dir, kind="fairness")


def test_without_simulation_or_decoding_the_page_says_so(positional_dir: Path) -> None:
    analysis = json.loads((positional_dir / "analysis.json").read_text())
    (positional_dir / "analysis.json").write_text(
        json.dumps([g for g in analysis if g["condition"] != "decoding"])
    )
    (positional_dir / "simulation.json").unlink()
    report = build_report(positional_dir)
    assert "No decoding-only condition" in report.html
    assert "simulation.json" in report.html and "fig-power" not in report.html


def test_single_configuration_renders_a_dot_plot() -> None:
    from report_synth import FIXTURES

    one = json.loads((FIXTURES / "positional_run" / "analysis.json").read_text())[0]
    report = build_report(one)
    assert "fig-metrics" in report.html and "1 configuration " in report.data["verdict"]


def test_against_brute_force_pareto_front() -> None:
    points = [(0.6, 0.3), (0.5, 0.25), (0.7, 0.4), (0.65, 0.28), (0.55, 0.35), (0.5, 0.2)]
    brute = [
        i
        for i, (x, y) in enumerate(points)
        if not any((x2 <= x and y2 >= y) and (x2, y2) != (x, y) for x2, y2 in points)
    ]
    assert sorted(pareto_front(points)) == brute


@pytest.mark.parametrize(
    ("lo", "hi"), [(0, 1), (0.013, 0.087), (3, 1234), (-0.2, 0.35), (0.5, 20.5)]
)
def test_nice_ticks_cover_the_range_with_round_steps(lo: float, hi: float) -> None:
    ticks = nice_ticks(lo, hi)
    steps = {round(b - a, 9) for a, b in itertools.pairwise(ticks)}
    assert len(steps) == 1 and 3 <= len(ticks) <= 11
    assert ticks[0] >= lo - 1e-9 and ticks[-1] <= hi + 1e-9


def test_cli_writes_the_report(tmp_path: Path, fairness_dir: Path) -> None:
    out = tmp_path / "r.html"
    result = CliRunner().invoke(app, ["report", str(fairness_dir), "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["kind"] == "fairness"
    assert out.is_file() and out.with_suffix(".json").is_file()


def test_cli_input_error_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", str(tmp_path), "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 2
    assert "cannot tell what folder" in result.output


def test_undefined_values_render_as_na(positional_dir: Path) -> None:
    analysis = json.loads((positional_dir / "analysis.json").read_text())
    analysis[0]["pb"]["ci_low"] = analysis[0]["pb"]["ci_high"] = None
    analysis[0]["spb"] = {"value": None, "ci_low": None, "ci_high": None}
    analysis[0]["selection_rate_matrix"][0] = [None] * analysis[0]["k"]
    analysis[0]["position_distribution_ci_low"][2] = None
    (positional_dir / "analysis.json").write_text(json.dumps(analysis))
    report = build_report(positional_dir)
    assert 'data-path="groups/0/spb/value" data-value="null">n/a</td>' in report.html
    pb = report.data["groups"][0]["pb"]
    assert f'data-path="groups/0/pb/value" data-value="{json.dumps(pb["value"])}">' in report.html
    assert pb["ci_low"] is None


def test_fairness_without_popularity_and_one_n(fairness_dir: Path) -> None:
    results = json.loads((fairness_dir / "results.json").read_text())
    for r in results.values():
        for key in [k for k in r if k.startswith("avg_popularity")]:
            del r[key]
        for section in ("overall", "rd", "nrd", "ib", *[f"groups/{g}" for g in r["groups"]]):
            d = r["groups"][section.split("/")[1]] if "/" in section else r[section]
            for key in [k for k in d if k.endswith(("@5", "@15"))]:
                del d[key]
    report = build_report(results)
    assert "Average popularity is absent" in report.html
    assert report.data["headline"] == {"metric": "ndcg", "n": 10}
    assert "long_tail.parquet" in report.data["missing"][0]


def test_long_names_are_shortened_in_plots_only(positional_dir: Path) -> None:
    analysis = json.loads((positional_dir / "analysis.json").read_text())
    long_name = "a-model-name-that-goes-on-" + "x" * 80
    for g in analysis:
        if g["model"] == "qwen2.5-7b-instruct":
            g["model"] = long_name
    report = build_report(analysis)
    assert long_name in report.html  # whole in the tables and hover titles
    svgs = "".join(re.findall(r"<svg.*?</svg>", report.html, re.S))
    assert "a-model-name-that-goes-on-xxxxxxxxx\u2026" in svgs


def _report_with_split(positional_dir: Path, split: dict) -> Report:
    """The report of the fixture run with every group's split replaced by ``split``
    (an ``analyze`` JSON's spb / spb_soft / positional_share)."""
    analysis = json.loads((positional_dir / "analysis.json").read_text())
    for group in analysis:
        for key in ("spb", "spb_soft", "positional_share"):
            group[key] = split[key]
    (positional_dir / "analysis.json").write_text(json.dumps(analysis))
    return build_report(positional_dir)


def test_an_unidentified_split_shows_its_bounds_and_why(positional_dir: Path) -> None:
    # a real analysis of a model that answers by position every time (p_bias = 1):
    # `analyze` returns sPB as n/a with the identification bounds and a note
    from recaudit.positional import AnalysisOptions, analyze
    from recaudit.positional._scenarios import simulate_scenario

    ev = simulate_scenario("paper", 30, k=5, p_bias=1.0, rng=2)
    split = analyze(ev, AnalysisOptions(n_resamples=9, n_boot=50), rng=0).to_dict()
    assert split["spb"]["note"] is not None
    report = _report_with_split(positional_dir, split)
    assert "not identified" in report.html
    reason = split["spb"]["note"].removeprefix("not identified: ").split(", so ")[0]
    assert f"is not identified here: {reason}. So sPB is only known to lie between 0 and" \
        in report.html
    assert "(bounds)</td>" in report.html
    assert report.data["groups"][0]["spb_note"] == split["spb"]["note"]
    assert report.data["groups"][0]["spb"]["ci_low"] == 0.0


def test_an_identified_split_has_no_note(positional_dir: Path) -> None:
    report = build_report(positional_dir)
    assert all(g["spb_note"] is None for g in report.data["groups"])
    assert "(bounds)</td>" not in report.html


def test_the_engine_that_answered_is_named(positional_dir: Path) -> None:
    """run.json's last session names the engine, its version, the quantisation and
    the answer mode; the page shows them (the engine is part of the system under test)."""
    entry = {"model": "smollm2", "k": 5, "backend": "local",
             "name": "llamacpp:SmolLM2-135M-Instruct.Q4_1.gguf+constrained",
             "engine": "llama.cpp", "engine_version": "xllamacpp 2026.10.11549",
             "quantization": "Q4_1", "answer_mode": "constrained: forced prefix"}
    old = {**entry, "engine": "transformers", "engine_version": "transformers 5.24.0"}
    (positional_dir / "run.json").write_text(json.dumps({"sessions": [
        {"backends": [old]}, {"backends": [entry]}]}))
    report = build_report(positional_dir)
    assert report.data["reproduction"]["engines"] == [
        {k: str(v) for k, v in entry.items() if k != "backend"}]
    assert "xllamacpp 2026.10.11549" in report.html and "Q4_1" in report.html
    (positional_dir / "run.json").write_text("{not json")
    assert build_report(positional_dir).data["reproduction"]["engines"] == []


def test_a_floor_that_could_be_a_spread_effect_is_marked(positional_dir: Path) -> None:
    # a real analysis of a model averse to position 1, its effect spread over the
    # others: the floor absorbs it; the page shows what sPB could be if it were positional
    from recaudit.positional import AnalysisOptions, analyze
    from recaudit.positional._scenarios import simulate_scenario

    ev = simulate_scenario("diffuse", 200, k=5, p_bias=0.1, n_orders=16, rng=1)
    split = analyze(ev, AnalysisOptions(n_resamples=9, n_boot=50), rng=0).to_dict()
    upper = split["spb"]["upper_if_spread"]
    assert upper > split["spb"]["ci_high"] + 0.005
    report = _report_with_split(positional_dir, split)
    assert f"\u2020 \u2264 {upper:.3f}</td>" in report.html
    assert "spread over several positions" in report.html
    assert report.data["groups"][0]["spb_upper_if_spread"] == pytest.approx(upper)
    # the plain words say it too, tagged to the sidecar
    assert "which the data cannot tell apart, sPB could be as large as" in " ".join(
        report.html.split())


def test_an_unmarked_split_has_no_spread_mark(positional_dir: Path) -> None:
    assert "\u2020 \u2264" not in build_report(positional_dir).html
