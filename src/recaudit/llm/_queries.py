"""Shopping queries: templated generation from catalog attributes, or loading a file.

Generation follows the paper's recipe (natural-language requests from templates whose
slots are filled from catalog attributes; the paper used 56 templates). Each query is
built around one catalog product drawn at random (its *source item*), so slot values
always co-occur in the catalog (a "red kurta for men" is only asked when one exists).
"""

from __future__ import annotations

import math
import re
import string
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from .._read import check_file, check_ids, read_jsonl, read_table, read_text
from .._stats import as_generator
from ..exceptions import InputError
from ._catalog import Catalog

__all__ = ["Query", "QueryTemplate", "generate_queries", "load_queries", "query_templates"]

#: Slots a template may use, and the catalog column each one needs.
SLOTS = {
    "type": "title",
    "brand": "brand",
    "colour": "colour",
    "gender": "gender",
    "price": "price",
}

MSG_N = "`n` must be a positive integer, got {n!r}"
MSG_TOO_FEW = (
    "could only generate {got} distinct queries out of the requested n={n} from this "
    "catalog; lower `n` or use a larger catalog"
)
MSG_NOT_FOUND = "query file not found: {path}"
MSG_FORMAT = "cannot read queries from {path}: use .csv, .jsonl or .txt, got {suffix!r}"
MSG_COLUMNS = "query file {path} must have the columns `query_id` and `text`; found {found}"
MSG_EMPTY_TEXT = "query file {path}: empty `text` in data row(s) {rows}"
MSG_EMPTY_ID = "query file {path}: empty `query_id` in data row(s) {rows}"
MSG_DUP_ID = "query file {path}: duplicate query_id {value!r} in data rows {rows}"
MSG_NO_QUERIES = "query file {path} holds no queries"

_GENDER_WORDS = {"unisex": "everyone", "unisex kids": "kids"}
_TYPE_WORD = re.compile(r"^[A-Za-z][A-Za-z\-]{2,}$")
_MAX_ATTEMPTS_PER_QUERY = 50


@dataclass(frozen=True)
class Query:
    """One shopping request.

    Attributes
    ----------
    query_id : str
        Stable id (``q0001``...).
    text : str
        The request shown to the model.
    template_id : str
        Template it came from (``""`` for loaded queries).
    source_item_id : str
        Catalog id of the product whose attributes filled the slots (``""`` for
        loaded queries).
    """

    query_id: str
    text: str
    template_id: str = ""
    source_item_id: str = ""


@dataclass(frozen=True)
class QueryTemplate:
    """A query template: ``text`` with ``{slot}`` placeholders from :data:`SLOTS`."""

    template_id: str
    text: str

    @property
    def slots(self) -> frozenset[str]:
        """The slot names the template uses."""
        return frozenset(f for _, f, _, _ in string.Formatter().parse(self.text) if f)


def query_templates() -> tuple[QueryTemplate, ...]:
    """The packaged templates (``recaudit/llm/data/query_templates.txt``)."""
    text = resources.files("recaudit.llm").joinpath("data/query_templates.txt").read_text("utf-8")
    out = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            tid, body = (part.strip() for part in line.split("|", 1))
            out.append(QueryTemplate(tid, body))
    return tuple(out)


def generate_queries(
    catalog: Catalog, n: int, *, rng: np.random.Generator | int | None
) -> tuple[Query, ...]:
    """Generate ``n`` distinct templated queries from catalog attributes.

    Each query draws a source product uniformly from the catalog, then a template
    uniformly among those whose slots that product can fill, and fills the slots from
    its attributes:

    - ``{type}``: the ``category`` column when present, otherwise the product type
      read from the title (the last word of the title before " with ", e.g.
      "Men Blue Slim Fit Jeans" -> "jeans"; units and codes are skipped);
    - ``{brand}``, ``{colour}``: the columns, as written (colour lower-cased);
    - ``{gender}``: the column lower-cased ("unisex" -> "everyone");
    - ``{price}``: the smallest round bound (1, 2, 5 x 10^m) >= the product's price.

    Texts are deduplicated case-insensitively; query ids are ``q0001``, ``q0002``...
    in generation order.

    Parameters
    ----------
    catalog : Catalog
    n : int
        Number of queries.
    rng : numpy.random.Generator, int or None
        Seeds the draws (same seed and catalog -> same queries).

    Returns
    -------
    tuple of Query

    Raises
    ------
    InputError
        If ``n`` is not positive, or fewer than ``n`` distinct queries can be made.
    """
    n, gen = _generate_queries_iv(n, rng)
    templates = query_templates()
    attrs = _slot_values(catalog)
    available = {slot for slot in SLOTS if (attrs[slot] != "").any()}
    usable = [t for t in templates if t.slots <= available]
    records = attrs.to_dict("records")
    item_ids = catalog.items["item_id"].tolist()
    seen: set[str] = set()
    out: list[Query] = []
    width = max(4, len(str(n)))
    for _ in range(n * _MAX_ATTEMPTS_PER_QUERY):
        if len(out) == n:
            break
        row = int(gen.integers(len(attrs)))
        values = records[row]
        fits = [t for t in usable if all(values[s] for s in t.slots)]
        if not fits:
            continue
        template = fits[int(gen.integers(len(fits)))]
        text = _fill(template, values)
        key = text.casefold()
        if key in seen:
            continue
        seen.add(key)
        out.append(
            Query(
                query_id=f"q{len(out) + 1:0{width}d}",
                text=text,
                template_id=template.template_id,
                source_item_id=item_ids[row],
            )
        )
    if len(out) < n:
        raise InputError(MSG_TOO_FEW.format(got=len(out), n=n))
    return tuple(out)


def _generate_queries_iv(
    n: int, rng: np.random.Generator | int | None
) -> tuple[int, np.random.Generator]:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise InputError(MSG_N.format(n=n))
    return int(n), as_generator(rng)


def _product_type(title: str) -> str:
    head = re.split(r"\s+with\s+", title, maxsplit=1, flags=re.IGNORECASE)[0]
    for word in reversed(head.split()):
        if _TYPE_WORD.match(word):
            return word.lower()
    return ""


def _price_bound(price: float) -> str:
    if not math.isfinite(price) or price <= 0:
        return ""
    m = 10 ** math.floor(math.log10(price))
    bound = next(s * m for s in (1, 2, 5, 10) if s * m >= price)
    return f"{bound:,}"


def _slot_values(catalog: Catalog) -> pd.DataFrame:
    items = catalog.items
    has_category = (items["category"] != "").any()
    types = items["category"].str.lower() if has_category else items["title"].map(_product_type)
    gender = items["gender"].str.lower().map(lambda g: _GENDER_WORDS.get(g, g))
    return pd.DataFrame(
        {
            "type": types,
            "brand": items["brand"],
            "colour": items["colour"].str.lower(),
            "gender": gender,
            "price": items["price"].map(_price_bound),
        }
    ).reset_index(drop=True)


def _fill(template: QueryTemplate, values: dict[str, str]) -> str:
    body = template.text
    plural = values["type"].endswith("s") and not values["type"].endswith("ss")
    if plural:  # "a {colour} {type}" -> "{colour} jeans"
        body = re.sub(r"\b[aA] (?=\{)", "", body)
    text = body.format(**{slot: values[slot] for slot in template.slots})
    text = re.sub(r"\b([aA]) (?=[aeiouAEIOU])", r"\1n ", text)
    return text[0].upper() + text[1:]


def load_queries(path: str | Path) -> tuple[Query, ...]:
    """Load queries from a file.

    Formats: ``.csv`` with columns ``query_id`` and ``text`` (optional
    ``template_id``); ``.jsonl`` with one object per line with the same keys; ``.txt``
    with one query per line (blank lines skipped; ids ``q0001``... in file order).

    Raises
    ------
    InputError
        Missing file or columns, empty text or id, duplicate id (with 1-based data rows).
    """
    p = _load_queries_iv(path)
    suffix = p.suffix.lower()
    if suffix == ".txt":
        text = read_text(p, what="query file")
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        width = max(4, len(str(len(lines))))
        frame = pd.DataFrame(
            {"query_id": [f"q{i:0{width}d}" for i in range(1, len(lines) + 1)], "text": lines}
        )
    elif suffix == ".csv":
        frame = read_table(p, what="query file", dtype=str, keep_default_na=False)
    else:
        records = [{k: "" if v is None else str(v) for k, v in obj.items()}
                   for obj in read_jsonl(p, what="query file")]
        frame = pd.DataFrame.from_records(records)
    if len(frame) == 0:
        raise InputError(MSG_NO_QUERIES.format(path=p))
    if not {"query_id", "text"} <= set(frame.columns):
        raise InputError(MSG_COLUMNS.format(path=p, found=", ".join(map(repr, frame.columns))))
    frame = frame.fillna("").astype(str)
    check_ids(frame, ["query_id"], path=p, what="query file")
    ids, texts = frame["query_id"].str.strip(), frame["text"].str.strip()
    for mask, msg in ((ids == "", MSG_EMPTY_ID), (texts == "", MSG_EMPTY_TEXT)):
        if mask.any():
            raise InputError(msg.format(path=p, rows=_rows(mask)))
    dup = ids.duplicated(keep=False)
    if dup.any():
        value = ids[dup].iloc[0]
        raise InputError(MSG_DUP_ID.format(path=p, value=value, rows=_rows(ids == value)))
    tids = frame["template_id"].str.strip() if "template_id" in frame.columns else [""] * len(frame)
    return tuple(Query(q, t, tid) for q, t, tid in zip(ids, texts, tids, strict=True))


def _load_queries_iv(path: str | Path) -> Path:
    p = check_file(path, "query file", missing=MSG_NOT_FOUND)
    if p.suffix.lower() not in {".csv", ".jsonl", ".ndjson", ".txt"}:
        raise InputError(MSG_FORMAT.format(path=p, suffix=p.suffix))
    return p


def _rows(mask: pd.Series) -> str:
    return ", ".join(str(i + 1) for i in np.flatnonzero(mask.to_numpy()))
