"""The decision records in docs/decisions/ keep their shape: one record per file, a
number that is the file's, a status, a study, links that resolve, and an index that
lists every record."""

from __future__ import annotations

import re
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[1] / "docs" / "decisions"
NAME = re.compile(r"^(\d{4})-[a-z0-9-]+\.md$")
STATUS = re.compile(
    r"^- Status: (accepted|(partly )?superseded by \[\d{4}\]\((\d{4}-[a-z0-9-]+\.md)\).*)$"
)
STUDIES = {"shared", "positional", "inter-bias", "report"}


def _records() -> list[Path]:
    return sorted(p for p in FOLDER.glob("*.md") if p.name != "README.md")


def test_every_record_has_its_number_title_status_and_study() -> None:
    records = _records()
    assert len(records) >= 226
    numbers = []
    for path in records:
        match = NAME.match(path.name)
        assert match, f"{path.name}: name it NNNN-short-title.md"
        lines = path.read_text(encoding="utf-8").splitlines()
        assert lines[0].startswith(f"# {match.group(1)}. "), f"{path.name}: title line"
        status = [line for line in lines[:8] if line.startswith("- Status: ")]
        assert len(status) == 1 and STATUS.match(status[0]), f"{path.name}: {status}"
        study = [line for line in lines[:8] if line.startswith("- Study: ")]
        assert len(study) == 1 and study[0][len("- Study: "):] in STUDIES, path.name
        assert any(line.strip() for line in lines[4:]), f"{path.name}: no text"
        numbers.append(int(match.group(1)))
    assert len(numbers) == len(set(numbers)), "two records share a number"


def test_links_resolve_and_the_index_lists_every_record() -> None:
    index = (FOLDER / "README.md").read_text(encoding="utf-8")
    for path in _records():
        assert f"]({path.name})" in index, f"{path.name} is missing from the index"
        text = path.read_text(encoding="utf-8")
        for target in re.findall(r"\]\((\d{4}-[a-z0-9-]+\.md)\)", text):
            assert (FOLDER / target).is_file(), f"{path.name} links to a missing {target}"
