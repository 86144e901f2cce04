"""The live run display fits 80 columns and shows a rate and an ETA from the first item."""

from __future__ import annotations

import io
import time

from rich.console import Console

from recaudit.cli import _run_display as display


def _render(progress) -> str:
    out = io.StringIO()
    Console(file=out, width=80, force_terminal=False, color_system=None).print(
        progress.get_renderable())
    return out.getvalue()


def test_one_line_per_task_in_80_columns_with_rate_and_eta(monkeypatch):
    progress = display.progress_display()
    live = display.RichProgress(progress)
    live.embedding(10, 100)
    live.start(160)
    task = progress.tasks[-1]
    task.start_time = time.monotonic() - 10.0  # 10 s ago, one update: no windowed speed
    live.update(done=40, discarded=0, failed=0, retries=0)
    lines = [line for line in _render(progress).splitlines() if line.strip()]
    assert len(lines) == 2 and all(len(line) <= 80 for line in lines)
    evaluating = lines[1]
    assert "40/160" in evaluating and "4.0/s" in evaluating and "ETA 0:30" in evaluating
    assert "-/s" not in evaluating and "discarded" not in evaluating


def test_troubles_show_once_there_are_any_and_embedding_leaves():
    progress = display.progress_display()
    live = display.RichProgress(progress)
    live.embedding(100, 100)
    live.start(10)
    live.update(done=3, discarded=2, failed=0, retries=1)
    text = _render(progress)
    assert "embedding" not in text
    assert "2 discarded, 1 retries" in text and "failed" not in text
