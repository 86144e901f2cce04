"""Every `recaudit` command starts by importing the CLI: keep that import light."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def test_cli_import_loads_no_heavy_library() -> None:
    """`recaudit --help` (and the start of every command) loads neither pandas, scipy's
    statistics beyond recaudit._stats, the report, nor the LLM stack: those are imported
    by the commands that use them (benchmarks/README.md, "CLI start-up")."""
    code = ("import sys, recaudit.cli; "
            "print(' '.join(m for m in ('pandas', 'recaudit.report', 'recaudit.llm', "
            "'torch', 'sentence_transformers', 'recaudit.fairness', 'recaudit.positional') "
            "if m in sys.modules))")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    assert out.stdout.strip() == ""
