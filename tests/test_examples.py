"""The shipped example configs parse, and every key they set is documented."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "openai-audit.toml"


def _keys(table: dict, prefix: str = "") -> set[str]:
    out = set()
    for key, value in table.items():
        if isinstance(value, dict):
            out |= _keys(value, f"{prefix}{key}.")
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            for item in value:
                out |= _keys(item, f"{prefix}{key}.")
        else:
            out.add(f"{prefix}{key}")
    return out


def test_the_openai_example_parses_into_an_openai_audit() -> None:
    from recaudit.audit import load_audit_config

    if not (EXAMPLE.parent / "../../shared/data/myntra/myntra_products_catalog.csv").is_file():
        pytest.skip("../shared/data/myntra is absent: the example's catalog path cannot be "
                    "checked here (see ../shared/data/README.md)")
    cfg = load_audit_config(EXAMPLE)
    (model,) = cfg.models
    assert model.backend == "openai"
    assert model.params.base_url == "http://127.0.0.1:8080/v1"
    assert model.params.api_key_env is None  # a local server needs none


def test_every_key_of_the_example_is_documented_in_runner_md() -> None:
    doc = (ROOT / "docs" / "runner.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"`([a-z_]+)`", doc))
    keys = {k.rsplit(".", 1)[-1] for k in _keys(tomllib.loads(EXAMPLE.read_text()))}
    assert keys - documented == set()


def test_the_readme_quick_tour_starts_from_the_example() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tour = readme.split("## Quick tour: the command line", 1)[1]
    first = next(line for line in tour.splitlines() if line.startswith("recaudit "))
    assert "examples/openai-audit.toml" in first


def _server_command(text: str) -> str:
    """The `llamacpp_server` command of a text, its continuation lines joined."""
    lines = [line.lstrip("# ").rstrip() for line in text.splitlines()]
    start = next(i for i, line in enumerate(lines)
                 if line.startswith("python -m recaudit.llm.llamacpp_server"))
    command = []
    for line in lines[start:]:
        command.append(line.rstrip("\\").strip())
        if not line.endswith("\\"):
            break
    return " ".join(command)


def test_the_example_serves_llamacpp_with_a_slot_per_request() -> None:
    """The example's header and runner.md start the server by its packaged name (no
    private import) with one slot per request the example has in flight."""
    text = EXAMPLE.read_text()
    concurrency = tomllib.loads(text)["models"][0]["concurrency"]
    section = (ROOT / "docs" / "runner.md").read_text(encoding="utf-8").split(
        "## Serving a GGUF with llama.cpp", 1)[1]
    for source in (text, section):
        command = _server_command(source).split()
        assert command[command.index("--model") + 1] == "smollm2-135m"
        assert int(command[command.index("--n-parallel") + 1]) == concurrency
        assert int(command[command.index("--n-threads") + 1]) == 2
    assert "._" not in text  # no import of a private module


def test_the_ranking_example_parses_into_a_ranking_audit() -> None:
    from recaudit.audit import load_audit_config

    example = ROOT / "examples" / "ranking-smollm2.toml"
    keys = {k.rsplit(".", 1)[-1] for k in _keys(tomllib.loads(example.read_text()))}
    documented = set(re.findall(r"`([a-z_]+)`",
                                (ROOT / "docs" / "runner.md").read_text(encoding="utf-8")))
    assert keys - documented == set()
    if not (example.parent / "../../shared/data/myntra/myntra_products_catalog.csv").is_file():
        pytest.skip("../shared/data/myntra is absent: the example's catalog path cannot be "
                    "checked here (see ../shared/data/README.md)")
    cfg = load_audit_config(example)
    assert cfg.prompt.answer == "ranking" and cfg.prompt.constrained  # under its schema
    assert cfg.models[0].backend == "local"
