"""A run display that implements `embedding` hears the catalog's embedding."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import write_config

pytest.importorskip("sentence_transformers")


class _Display:
    def __init__(self) -> None:
        self.embedded: list[tuple[int, int]] = []
        self.total: int | None = None

    def start(self, total: int) -> None:
        self.total = total

    def update(self, *, done: int, discarded: int, failed: int, retries: int) -> None:
        pass

    def embedding(self, done: int, total: int) -> None:
        self.embedded.append((done, total))


def test_a_fresh_catalog_reports_its_embedding_then_a_cached_one_does_not(tmp_path: Path):
    from recaudit.audit import load_audit_config, run_audit

    config = write_config(tmp_path, cache_dir=tmp_path / "cache", n_queries=3, n_perms=2)
    first = _Display()
    run_audit(load_audit_config(config), out_dir=tmp_path / "a", progress=first)
    assert first.embedded and first.embedded[-1][0] == first.embedded[-1][1] == 30
    assert first.total == 6
    again = _Display()
    run_audit(load_audit_config(config), out_dir=tmp_path / "b", progress=again)
    assert again.embedded == []  # cached on disk: nothing to embed
