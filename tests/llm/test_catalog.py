from __future__ import annotations

import re

import pandas as pd
import pytest

from recaudit.exceptions import InputError
from recaudit.llm import CANONICAL_COLUMNS, Catalog, ColumnMap, load_catalog
from recaudit.llm import _catalog as mod


def _write(tmp_path, name, text, encoding="utf-8"):
    p = tmp_path / name
    p.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return p


def test_myntra_loads_with_builtin_map(myntra):
    assert len(myntra) == 12491
    assert tuple(myntra.items.columns) == CANONICAL_COLUMNS
    assert myntra.items["item_id"].is_unique
    assert (myntra.items["title"] != "").all()
    assert myntra.items["price"].dtype == float and myntra.items["price"].notna().all()
    assert myntra.has("brand") and myntra.has("colour") and not myntra.has("category")
    assert re.fullmatch(r"[0-9a-f]{64}", myntra.sha256)


def test_hash_is_content_based(myntra, tmp_path):
    p = tmp_path / "small.csv"
    pd.DataFrame({"id": ["a", "b"], "title": ["A", "B"], "description": ["x", ""]}).to_csv(
        p, index=False
    )
    first, again = load_catalog(p), load_catalog(p)
    assert first.sha256 == again.sha256
    p.write_text("id,title,description\na,A,x\nb,B2,\n")
    assert load_catalog(p).sha256 != first.sha256
    sub = myntra.subset([0, 1, 2])
    assert len(sub) == 3 and sub.sha256 != myntra.sha256


def test_formats_agree(tmp_path):
    frame = pd.DataFrame(
        {
            "sku": ["1", "2", "3"],
            "name": ["Red shirt", "Blue jeans", "Hat"],
            "about": ["a", "b", "c"],
            "kind": ["shirt", "jeans", "hat"],
            "cost": ["10", "", "7.5"],
        }
    )
    cols = {
        "id": "sku",
        "title": "name",
        "description": "about",
        "category": "kind",
        "price": "cost",
    }
    frame.to_csv(tmp_path / "c.csv", index=False)
    frame.to_parquet(tmp_path / "c.parquet", index=False)
    frame.to_json(tmp_path / "c.jsonl", orient="records", lines=True)
    cats = [
        load_catalog(tmp_path / f"c.{ext}", columns=cols) for ext in ("csv", "parquet", "jsonl")
    ]
    assert cats[0].sha256 == cats[1].sha256 == cats[2].sha256
    assert cats[0].items["category"].tolist() == ["shirt", "jeans", "hat"]
    assert cats[0].items["price"].isna().tolist() == [False, True, False]


def test_missing_column(tmp_path):
    p = _write(tmp_path, "c.csv", "id,name,description\n1,A,x\n")
    with pytest.raises(InputError, match=r"no column 'title' \(mapped to `title`\)"):
        load_catalog(p)


def test_missing_and_duplicate_ids_name_rows(tmp_path):
    p = _write(tmp_path, "c.csv", "id,title,description\n1,A,x\n,B,y\n3,C,z\n")
    with pytest.raises(InputError, match=r"column 'id' \(`id`\) is empty in data row\(s\) 2;"):
        load_catalog(p)
    p = _write(tmp_path, "d.csv", "id,title,description\n1,A,x\n2,B,y\n1,C,z\n")
    with pytest.raises(InputError, match=r"duplicate id '1' in data rows 1, 3;"):
        load_catalog(p)


def test_empty_title_names_rows(tmp_path):
    p = _write(tmp_path, "c.csv", "pid,t,d\n1,A,x\n2,  ,y\n3,C,z\n4,,w\n")
    with pytest.raises(InputError, match=r"column 't' \(`title`\) is empty in data row\(s\) 2, 4;"):
        load_catalog(p, columns={"id": "pid", "title": "t", "description": "d"})


def test_bad_encoding_names_row_and_column(tmp_path):
    raw = b"id,title,description\n1,Shirt,fine\n2,Caf" + b"\xe9 mug" + b",ok\n"
    p = _write(tmp_path, "c.csv", raw)
    with pytest.raises(
        InputError, match=r"not valid UTF-8 in data row 2 \(file line 3\), column 'title'"
    ):
        load_catalog(p)
    p = _write(
        tmp_path,
        "c.jsonl",
        b'{"id": "1", "title": "a", "description": "b"}\n{"id": "2", "title": "\xff"}\n',
    )
    with pytest.raises(InputError, match=r"data row 2 \(file line 2\)"):
        load_catalog(p)


def test_bad_encoding_row_counts_multiline_fields(tmp_path):
    raw = b'id,title,description\n1,A,"two\nlines"\n2,B,"x\xff"\n'
    with pytest.raises(InputError, match=r"data row 2 \(file line 4\), column 'description'"):
        load_catalog(_write(tmp_path, "c.csv", raw))


def test_bad_price_and_map_keys(tmp_path):
    p = _write(tmp_path, "c.csv", "id,title,description,p\n1,A,x,10\n2,B,y,ten\n")
    with pytest.raises(
        InputError, match=r"column 'p' \(`price`\) is not a number in data row\(s\) 2"
    ):
        load_catalog(
            p, columns={"id": "id", "title": "title", "description": "description", "price": "p"}
        )
    with pytest.raises(InputError, match=re.escape("`columns` has unknown key(s) 'colour_name'")):
        load_catalog(
            p, columns={"id": "id", "title": "title", "description": "d", "colour_name": "c"}
        )
    with pytest.raises(InputError, match=re.escape("unknown format '.xlsx'")):
        load_catalog(_write(tmp_path, "c.xlsx", "x"))


def test_from_frame_and_myntra_map():
    cmap = ColumnMap.myntra()
    assert cmap.price == "Price (INR)" and cmap.category is None
    cat = Catalog.from_frame(
        pd.DataFrame({"id": [1, 2], "title": ["a", "b"], "description": ["", ""]})
    )
    assert cat.items["item_id"].tolist() == ["1", "2"]
    assert mod.MSG_EMPTY_TITLE.startswith("catalog column")
