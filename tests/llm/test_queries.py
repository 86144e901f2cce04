from __future__ import annotations

import re

import pandas as pd
import pytest

from recaudit.exceptions import InputError
from recaudit.llm import Catalog, generate_queries, load_queries, query_templates
from recaudit.llm._queries import SLOTS, _price_bound, _product_type


def test_at_least_50_templates_with_known_slots():
    templates = query_templates()
    assert len(templates) >= 50
    assert len({t.template_id for t in templates}) == len(templates)
    for t in templates:
        assert t.slots and t.slots <= set(SLOTS), t


def test_seeded_deterministic_distinct(myntra):
    a = generate_queries(myntra, 300, rng=7)
    b = generate_queries(myntra, 300, rng=7)
    c = generate_queries(myntra, 300, rng=8)
    assert a == b and a != c
    assert len({q.text.casefold() for q in a}) == 300
    assert [q.query_id for q in a[:2]] == ["q0001", "q0002"]
    assert len({q.template_id for q in a}) >= 40  # the templates are actually used
    assert not any("{" in q.text for q in a)


def test_slot_values_come_from_the_source_item(myntra):
    items = myntra.items.set_index("item_id")
    for q in generate_queries(myntra, 100, rng=3):
        item = items.loc[q.source_item_id]
        assert _product_type(item["title"]) in q.text.lower()
        if q.template_id in {"T11", "T12", "T13", "T15"}:
            assert item["brand"] in q.text


def test_templates_without_slots_in_catalog_are_skipped():
    frame = pd.DataFrame(
        {
            "id": [str(i) for i in range(40)],
            "title": [f"Item {i} Lamp" for i in range(40)],
            "description": ["d"] * 40,
            "colour": ["red", "blue"] * 20,
        }
    )
    cat = Catalog.from_frame(
        frame,
        columns={"id": "id", "title": "title", "description": "description", "colour": "colour"},
    )
    used = {t.template_id: t for t in query_templates()}
    for q in generate_queries(cat, 20, rng=0):
        assert used[q.template_id].slots <= {"type", "colour"}


def test_too_few_distinct_queries_is_an_error():
    cat = Catalog.from_frame(
        pd.DataFrame({"id": ["1"], "title": ["Blue Mug"], "description": ["x"]})
    )
    with pytest.raises(
        InputError, match=r"could only generate \d+ distinct queries out of the requested n=100"
    ):
        generate_queries(cat, 100, rng=0)
    with pytest.raises(InputError, match=r"`n` must be a positive integer, got 0"):
        generate_queries(cat, 0, rng=0)


def test_helpers():
    assert _product_type("Roadster Men Blue Slim Fit Jeans with Belt") == "jeans"
    assert _product_type("Nivea Men Body Lotion 400 ml") == "lotion"
    assert [_price_bound(p) for p in (90, 649, 1000, 1001, 63090)] == [
        "100",
        "1,000",
        "1,000",
        "2,000",
        "100,000",
    ]


def test_load_queries_formats_and_errors(tmp_path):
    (tmp_path / "q.txt").write_text("red shirt\n\nblue jeans\n")
    assert [(q.query_id, q.text) for q in load_queries(tmp_path / "q.txt")] == [
        ("q0001", "red shirt"),
        ("q0002", "blue jeans"),
    ]
    (tmp_path / "q.csv").write_text("query_id,text\na,red shirt\nb,blue jeans\n")
    (tmp_path / "q.jsonl").write_text(
        '{"query_id": "a", "text": "red shirt"}\n{"query_id": "b", "text": "blue jeans"}\n'
    )
    assert load_queries(tmp_path / "q.csv") == load_queries(tmp_path / "q.jsonl")
    (tmp_path / "d.csv").write_text("query_id,text\na,x\nb,y\na,z\n")
    with pytest.raises(InputError, match=re.escape("duplicate query_id 'a' in data rows 1, 3")):
        load_queries(tmp_path / "d.csv")
    (tmp_path / "e.csv").write_text("query_id,text\na,x\nb,\n")
    with pytest.raises(InputError, match=r"empty `text` in data row\(s\) 2"):
        load_queries(tmp_path / "e.csv")
    (tmp_path / "f.csv").write_text("id,query\na,x\n")
    with pytest.raises(InputError, match="must have the columns `query_id` and `text`"):
        load_queries(tmp_path / "f.csv")
