"""The exact-mode backend tests reuse the runner tests' fake tasks (``runner_helpers``)
and loopback fault server (``fault_server``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runner"))
