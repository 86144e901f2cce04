"""Under --quiet or --json nothing but recaudit's own output reaches the streams."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import write_config

pytest.importorskip("sentence_transformers")


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--quiet", "--json"])
def test_no_third_party_progress_bars(tmp_path: Path, emb_cache: Path, flag: str) -> None:
    config = write_config(tmp_path, cache_dir=tmp_path / "fresh-cache", n_queries=3,
                          n_perms=2)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TQDM_", "HF_HUB_"))}
    res = subprocess.run(
        [sys.executable, "-c", "from recaudit.cli import main; main()", "positional", "run",
         str(config), "--out", str(tmp_path / "run"), flag, "--no-analyze"],
        capture_output=True, text=True, env=env, timeout=600, check=False)
    assert res.returncode == 0, res.stderr
    # the embedder loads (a fresh cache) and would draw "Loading weights: 100%|###|"
    for bar in ("it/s]", "%|", "Loading weights"):
        assert bar not in res.stderr, res.stderr
    if flag == "--json":
        import json

        json.loads(res.stdout)


def test_the_quiet_environment_is_set_only_when_asked(monkeypatch) -> None:
    from recaudit.cli import QUIET_ENVIRONMENT, silence_third_party

    for key in QUIET_ENVIRONMENT:
        monkeypatch.delenv(key, raising=False)
    silence_third_party(["positional", "analyze", "t.csv"])
    assert not any(key in os.environ for key in QUIET_ENVIRONMENT)
    silence_third_party(["positional", "analyze", "t.csv", "--json"])
    assert all(os.environ[key] == value for key, value in QUIET_ENVIRONMENT.items())
