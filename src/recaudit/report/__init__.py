"""The audit report: one self-contained HTML page (inline SVG plots, no network) and a
JSON sidecar with every number on the page, for a positional or a fairness run.

>>> from recaudit.report import build_report  # doctest: +SKIP
>>> build_report(Path("runs/my-run")).save("report.html")  # doctest: +SKIP
"""

from __future__ import annotations

from ._plain import comparison_verdict, plain_summary, spread_shown
from ._render import Report, build_report

__all__ = ["Report", "build_report", "comparison_verdict", "plain_summary", "spread_shown"]
