"""Assemble the report: the list of sections for the input kind, the verdict, the
sidecar data and the page.

:func:`positional_page` and :func:`fairness_page` list the section builders of each
kind in page order (a builder per section, in ``_sections_*``); the page primitives
are in :mod:`._page`. Every number printed on the page carries ``data-path`` and
``data-value`` (see :mod:`._page`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
from markupsafe import Markup

from .. import __version__
from .._io import MSG_CANNOT_WRITE, check_output
from .._read import one_line
from ..exceptions import InputError
from ._load import Kind, load
from ._load_fairness import FairnessRun
from ._load_positional import PositionalRun
from ._page import Section, finite, json_value
from ._sections_compare import comparison_section
from ._sections_fairness import (
    fairness_data,
    fairness_verdict,
    groups_section,
    headline,
    inter_bias_section,
    long_tail_section,
    tradeoff_section,
)
from ._sections_fairness_compare import fairness_comparison_section
from ._sections_popularity import popularity_bias_section, popularity_groups_section
from ._sections_positional import (
    discards_section,
    distribution_section,
    heatmap_section,
    metrics_section,
    noise_floor_section,
    positional_data,
    positional_verdict,
    power_section,
)
from ._sections_protocol import protocols_section
from ._sections_rankings import rankings_section
from ._sections_sequential import sequential_sections
from ._sections_spend import spend_section
from ._sections_study import study_sections

__all__ = ["Report", "build_report", "fairness_page", "positional_page"]

_SORT_JS = """\
document.querySelectorAll("table.sortable").forEach(function (table) {
  var heads = table.querySelectorAll("thead th");
  heads.forEach(function (th, col) {
    th.tabIndex = 0;
    function sort() {
      var asc = th.getAttribute("aria-sort") !== "ascending";
      heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var numeric = rows.some(function (r) { return r.cells[col].hasAttribute("data-value"); });
      function key(row) {
        var cell = row.cells[col];
        if (!numeric) { return cell.textContent.trim().toLowerCase(); }
        var x = parseFloat(cell.getAttribute("data-value"));
        return isNaN(x) ? null : x;
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === y) { return 0; }
        if (x === null) { return 1; }
        if (y === null) { return -1; }
        return (x < y ? -1 : 1) * (asc ? 1 : -1);
      });
      rows.forEach(function (r) { body.appendChild(r); });
    }
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sort(); } });
  });
});
"""



def positional_page(run: PositionalRun) -> tuple[dict[str, Any], list[Section], Markup]:
    """The positional report's sidecar data, sections (in page order) and verdict."""
    sections = [
        distribution_section(run),
        heatmap_section(run),
        metrics_section(run),
        noise_floor_section(run),
        discards_section(run),
    ]
    if run.comparisons is not None:  # a run folder with several models
        sections.append(comparison_section(run.comparisons, alpha=run.alpha))
    if run.rankings is not None:  # a `[prompt] answer = "ranking"` run folder
        sections.append(rankings_section(run.rankings, alpha=run.alpha))
    if run.simulation:
        sections.append(power_section(run))
    if run.study is not None:  # `recaudit positional study` folder
        sections.extend(study_sections(run.study))
    if run.sequential is not None:  # `recaudit positional run --sequential` folder
        sections.extend(sequential_sections(run.sequential))
    if run.spend is not None:  # `recaudit positional run` folder: run.json's spend
        sections.append(spend_section(run.spend))
    verdict, summary = positional_verdict(run)
    return positional_data(run, summary), sections, verdict


def fairness_page(run: FairnessRun) -> tuple[dict[str, Any], list[Section], Markup]:
    """The fairness report's sidecar data, sections (in page order) and verdict."""
    metric, main_n = headline(run)
    optional = [
        protocols_section(run, metric, main_n),
        tradeoff_section(run),
        inter_bias_section(run),
        groups_section(run),
        popularity_bias_section(run, main_n),
        popularity_groups_section(run, main_n),
        long_tail_section(run),
        None if run.comparison is None else fairness_comparison_section(
            run.comparison, f"{metric}@{main_n}", alpha=run.alpha),
    ]
    sections = [s for s in optional if s is not None]
    return fairness_data(run), sections, fairness_verdict(run)


# --------------------------------------------------------------------------- page
@dataclass(frozen=True)
class Report:
    """A rendered audit report: one self-contained HTML page and its JSON sidecar.

    Attributes
    ----------
    kind : {"positional", "fairness"}
        Which study the report is about.
    html : str
        The page; works offline (inline SVG, inline CSS and script, no fetch).
    sidecar : str
        The JSON sidecar text, holding every number shown on the page.
    """

    kind: Kind
    html: str
    sidecar: str

    @property
    def data(self) -> dict[str, Any]:
        """The sidecar as a fresh dict (changing it does not change the report)."""
        return json.loads(self.sidecar)

    def to_json(self) -> str:
        """The sidecar JSON text."""
        return self.sidecar

    def save(self, path: Path | str) -> tuple[Path, Path]:
        """Write the page to ``path`` and the sidecar beside it (``.json`` suffix).

        Returns
        -------
        tuple of Path
            The HTML path and the sidecar path.
        """
        html_path = Path(path)
        json_path = html_path.with_suffix(".json")
        if json_path == html_path:
            raise InputError(f"the report path must not end in .json, got {html_path}")
        for target in (html_path, json_path):
            check_output(target, what="report path", example="report.html")
        try:
            html_path.parent.mkdir(parents=True, exist_ok=True)
            html_path.write_text(self.html, encoding="utf-8")
            json_path.write_text(self.sidecar + "\n", encoding="utf-8")
        except OSError as exc:  # no permission, a full or read-only disk
            raise InputError(MSG_CANNOT_WRITE.format(what="the report", path=html_path,
                                                     error=one_line(exc))) from None
        return html_path, json_path


def _generated_at() -> str:
    """Now (UTC), or ``SOURCE_DATE_EPOCH`` when set, for reproducible builds."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = datetime.fromtimestamp(int(epoch), UTC) if epoch else datetime.now(UTC)
    return moment.replace(microsecond=0).isoformat()


def _environment() -> dict[str, str]:
    return {
        "recaudit": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "jinja2": jinja2.__version__,
    }


def _env() -> jinja2.Environment:
    loader = jinja2.PackageLoader("recaudit.report", "templates")
    env = jinja2.Environment(
        loader=loader,
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["jsonnum"] = lambda value: json.dumps(json_value(value))
    env.tests["finite"] = finite
    return env


def build_report(
    source: Path | str | Mapping[str, Any] | list, *, kind: Kind | None = None
) -> Report:
    """Build the audit report of a positional or fairness run.

    Parameters
    ----------
    source : Path, str, dict or list
        A run folder (positional: ``analysis.json`` [+ ``evaluations.parquet``,
        ``simulation.json``, ``config.resolved.*``]; fairness: ``results.json``
        [+ ``long_tail.parquet``]), a JSON file, or the parsed JSON of
        ``recaudit positional analyze --json`` / ``recaudit fairness evaluate --json``.
    kind : {"positional", "fairness"}, optional
        Skip recognition of the source.

    Returns
    -------
    Report
        ``.html`` (the page), ``.data`` (the sidecar), ``.save(path)``.

    Raises
    ------
    InputError
        Unrecognised source, or a missing file or key (named, with the command that
        produces it).

    Examples
    --------
    >>> report = build_report(Path("runs/positional-2026-11-29"))  # doctest: +SKIP
    >>> report.save("report.html")  # doctest: +SKIP
    """
    run = load(source, kind=kind)
    if isinstance(run, PositionalRun):
        data, sections, verdict = positional_page(run)
        run_kind: Kind = "positional"
        title = "Positional bias audit"
    else:
        data, sections, verdict = fairness_page(run)
        run_kind = "fairness"
        title = "Inter-bias (fairness) audit"
    generated_at = _generated_at()
    environment = _environment()
    figures = [f for s in sections for f in s.figures]
    sidecar = {
        "kind": run_kind,
        "source": run.source,
        "generated_at": generated_at,
        "rendered_with": environment,
        "verdict": verdict.striptags(),
        **data,
        "figures": [{"id": f.id, "title": f.title, "caption": f.caption} for f in figures],
        "missing": list(run.missing),
    }
    digest = base64.b64encode(hashlib.sha256(_SORT_JS.encode()).digest()).decode()
    html = (
        _env()
        .get_template(f"{run_kind}.html.j2")
        .render(
            title=title,
            run=run,
            kind=run_kind,
            verdict=verdict,
            sections=sections,
            generated_at=generated_at,
            environment=environment,
            data=data,
            script=Markup(_SORT_JS),
            script_hash=f"sha256-{digest}",
        )
    )
    return Report(
        kind=run_kind,
        html=html,
        sidecar=json.dumps(json_value(sidecar), indent=1, allow_nan=False),
    )
