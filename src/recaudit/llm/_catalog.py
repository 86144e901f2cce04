"""Product catalogs: loading, column mapping and validation.

A catalog is any table with an id, a title and a description per product (category,
brand, colour, gender and price are optional and only feed the query templates). It is
read from CSV, Parquet or JSON Lines, mapped onto canonical column names and validated
so that every later step can trust it: ids present and unique, titles non-empty, text
decodable as UTF-8. Errors name the 1-based data row (the header is not a data row),
the source column and the fix.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import pandas as pd

from .._read import MSG_SURROGATE, check_file, check_ids, find_surrogate, read_jsonl, read_table
from ..exceptions import InputError

__all__ = ["CANONICAL_COLUMNS", "Catalog", "ColumnMap", "load_catalog"]

#: Canonical column names of :attr:`Catalog.items`, in order.
CANONICAL_COLUMNS = (
    "item_id",
    "title",
    "description",
    "category",
    "brand",
    "colour",
    "gender",
    "price",
)

MSG_NOT_FOUND = "catalog file not found: {path}"
MSG_FORMAT = (
    "cannot read catalog {path}: unknown format {suffix!r}; use .csv, .parquet or "
    ".jsonl (JSON Lines)"
)
MSG_UNKNOWN_MAP_KEY = (
    "`columns` has unknown key(s) {keys}; valid keys are: id, title, description, "
    "category, brand, colour, gender, price"
)
MSG_MISSING_MAP_KEY = "`columns` must map `{key}` to a column name of the catalog"
MSG_MISSING_COLUMN = (
    "catalog {path} has no column {column!r} (mapped to `{field}`); available columns: "
    "{available}. Pass `columns=ColumnMap(...)` naming the right column"
)
MSG_MISSING_ID = (
    "catalog column {column!r} (`id`) is empty in data row(s) {rows}; every product needs an id"
)
MSG_DUPLICATE_ID = (
    "catalog column {column!r} (`id`) has duplicate id {value!r} in data rows {rows}; "
    "ids must be unique"
)
MSG_EMPTY_TITLE = (
    "catalog column {column!r} (`title`) is empty in data row(s) {rows}; every product "
    "needs a title"
)
MSG_BAD_PRICE = (
    "catalog column {column!r} (`price`) is not a number in data row(s) {rows}; leave it "
    "empty or write a plain number"
)
MSG_EMPTY = "catalog {path} has no data rows"

_MAX_ROWS_IN_MESSAGE = 10


@dataclass(frozen=True)
class ColumnMap:
    """Which source column holds each canonical field.

    Attributes
    ----------
    id, title, description : str
        Required source columns.
    category, brand, colour, gender, price : str or None
        Optional source columns; ``None`` when the catalog lacks the attribute.

    Examples
    --------
    >>> ColumnMap(id="asin", title="name", description="about", category="type").category
    'type'
    """

    id: str = "id"
    title: str = "title"
    description: str = "description"
    category: str | None = None
    brand: str | None = None
    colour: str | None = None
    gender: str | None = None
    price: str | None = None

    @classmethod
    def myntra(cls) -> ColumnMap:
        """The column map of the Myntra fashion catalog (``myntra_products_catalog.csv``)."""
        return cls(
            id="ProductID",
            title="ProductName",
            description="Description",
            brand="ProductBrand",
            colour="PrimaryColor",
            gender="Gender",
            price="Price (INR)",
        )

    def canonical_pairs(self) -> tuple[tuple[str, str | None], ...]:
        """``(canonical column, source column or None)`` in canonical order."""
        names = {"id": "item_id"}
        return tuple((names.get(f.name, f.name), getattr(self, f.name)) for f in fields(self))


@dataclass(frozen=True, eq=False)
class Catalog:
    """A validated product catalog.

    Attributes
    ----------
    items : pandas.DataFrame
        One row per product with the columns :data:`CANONICAL_COLUMNS`: ``item_id``,
        ``title``, ``description`` (str, stripped; description may be empty),
        ``category``, ``brand``, ``colour``, ``gender`` (str, empty when unknown or
        absent) and ``price`` (float, NaN when unknown). Row order = source order.
    sha256 : str
        Hex SHA-256 of the canonical content (every column, in order); keys the
        embedding cache and identifies the catalog in run records.
    source : str
        Where it was loaded from (informational).

    Notes
    -----
    Compared by identity (a DataFrame has no single truth value); compare ``sha256``
    to test for equal content.
    """

    items: pd.DataFrame
    sha256: str
    source: str = ""

    def __len__(self) -> int:
        return len(self.items)

    def has(self, column: str) -> bool:
        """Whether the optional canonical ``column`` has at least one known value."""
        values = self.items[column]
        if column == "price":
            return bool(values.notna().any())
        return bool((values != "").any())

    def subset(self, rows: object) -> Catalog:
        """A new catalog made of the given row positions (with its own hash).

        Useful to work on a sample of a large catalog, e.g.
        ``catalog.subset(rng.choice(len(catalog), 1000, replace=False))``.
        """
        items = self.items.iloc[np.sort(np.asarray(rows, dtype=np.intp))].reset_index(drop=True)
        return Catalog(items=items, sha256=_content_hash(items), source=self.source)

    @classmethod
    def from_frame(
        cls, frame: pd.DataFrame, *, columns: ColumnMap | Mapping[str, str] | None = None
    ) -> Catalog:
        """Validate an in-memory table (all cells read as text) as a catalog."""
        cmap = _column_map(columns)
        return _build(frame.astype("string").fillna(""), cmap, "<frame>")


def load_catalog(
    path: str | Path, *, columns: ColumnMap | Mapping[str, str] | None = None
) -> Catalog:
    """Load and validate a product catalog.

    Parameters
    ----------
    path : str or Path
        A ``.csv`` (comma-separated, header row, UTF-8), ``.parquet`` or ``.jsonl`` /
        ``.ndjson`` (one JSON object per line) file.
    columns : ColumnMap or mapping, optional
        Source column of each canonical field; a mapping uses the :class:`ColumnMap`
        field names as keys (``{"id": "asin", "title": "name", ...}``). Default: the
        columns ``id``, ``title``, ``description``. ``ColumnMap.myntra()`` reads the
        Myntra catalog.

    Returns
    -------
    Catalog

    Raises
    ------
    InputError
        Unreadable file, missing mapped column, undecodable bytes, empty or duplicate
        id, empty title, non-numeric price -- naming the 1-based data row(s) and the
        column.

    Examples
    --------
    >>> path = "myntra_products_catalog.csv"
    >>> cat = load_catalog(path, columns=ColumnMap.myntra())  # doctest: +SKIP
    >>> len(cat)  # doctest: +SKIP
    12491
    """
    p, cmap = _load_catalog_iv(path, columns)
    frame = _read_table(p)
    return _build(frame, cmap, str(p))


def _load_catalog_iv(
    path: str | Path, columns: ColumnMap | Mapping[str, str] | None
) -> tuple[Path, ColumnMap]:
    p = check_file(path, "catalog", missing=MSG_NOT_FOUND)
    if p.suffix.lower() not in {".csv", ".parquet", ".pq", ".jsonl", ".ndjson"}:
        raise InputError(MSG_FORMAT.format(path=p, suffix=p.suffix))
    return p, _column_map(columns)


def _column_map(columns: ColumnMap | Mapping[str, str] | None) -> ColumnMap:
    if columns is None:
        return ColumnMap()
    if isinstance(columns, ColumnMap):
        return columns
    valid = {f.name for f in fields(ColumnMap)}
    unknown = sorted(set(columns) - valid)
    if unknown:
        raise InputError(MSG_UNKNOWN_MAP_KEY.format(keys=", ".join(map(repr, unknown))))
    for key in ("id", "title", "description"):
        if not columns.get(key):
            raise InputError(MSG_MISSING_MAP_KEY.format(key=key))
    return ColumnMap(**dict(columns))


def _read_table(path: Path) -> pd.DataFrame:
    """Every cell as text, through the reading layer (:mod:`recaudit._read`): bytes that
    are not UTF-8, a corrupt Parquet file, a CSV the parser rejects, a header without
    rows, a JSON line that is not an object or holds a lone surrogate escape -- each an
    :class:`InputError` naming the data row (and column)."""
    suffix = path.suffix.lower()
    if suffix in {".parquet", ".pq"}:
        return read_table(path, what="catalog").astype("string").fillna("")
    if suffix == ".csv":
        return read_table(path, what="catalog", dtype=str, keep_default_na=False)
    records = [{k: "" if v is None else str(v) for k, v in obj.items()}
               for obj in read_jsonl(path, what="catalog")]
    return pd.DataFrame.from_records(records).fillna("")


def _rows(mask: pd.Series) -> str:
    """1-based data rows where ``mask`` holds, abbreviated."""
    rows = [str(i + 1) for i in np.flatnonzero(mask.to_numpy())]
    extra = len(rows) - _MAX_ROWS_IN_MESSAGE
    text = ", ".join(rows[:_MAX_ROWS_IN_MESSAGE])
    return text + (f" (and {extra} more)" if extra > 0 else "")


def _build(frame: pd.DataFrame, cmap: ColumnMap, source: str) -> Catalog:
    if len(frame) == 0:
        raise InputError(MSG_EMPTY.format(path=source))
    frame = frame.reset_index(drop=True)
    available = ", ".join(map(repr, frame.columns))
    out: dict[str, pd.Series] = {}
    for (canonical, src), f in zip(cmap.canonical_pairs(), fields(cmap), strict=True):
        if src is None:
            out[canonical] = pd.Series([""] * len(frame), dtype=object)
            continue
        if src not in frame.columns:
            raise InputError(
                MSG_MISSING_COLUMN.format(
                    path=source, column=src, field=f.name, available=available
                )
            )
        out[canonical] = frame[src].astype(str).str.strip()
    items = pd.DataFrame(out)
    check_ids(items[["item_id"]].set_axis([cmap.id], axis=1), [cmap.id], path=source,
              what="catalog")
    empty_id = items["item_id"] == ""
    if empty_id.any():
        raise InputError(MSG_MISSING_ID.format(column=cmap.id, rows=_rows(empty_id)))
    dup = items["item_id"].duplicated(keep=False)
    if dup.any():
        first = items.loc[dup, "item_id"].iloc[0]
        raise InputError(
            MSG_DUPLICATE_ID.format(
                column=cmap.id, value=first, rows=_rows(items["item_id"] == first)
            )
        )
    empty_title = items["title"] == ""
    if empty_title.any():
        raise InputError(MSG_EMPTY_TITLE.format(column=cmap.title, rows=_rows(empty_title)))
    price_text = items["price"]
    price = pd.to_numeric(price_text.where(price_text != ""), errors="coerce")
    bad_price = price.isna() & (price_text != "")
    if bad_price.any():
        raise InputError(MSG_BAD_PRICE.format(column=cmap.price, rows=_rows(bad_price)))
    items["price"] = price.astype(float)
    items = items[list(CANONICAL_COLUMNS)]
    return Catalog(items=items, sha256=_content_hash(items), source=source)


def _content_hash(items: pd.DataFrame) -> str:
    h = hashlib.sha256()
    h.update("\x1f".join(items.columns).encode())
    for i, row in enumerate(items.itertuples(index=False), start=1):
        h.update(b"\x1e")
        text = "\x1f".join("" if pd.isna(v) else str(v) for v in row)
        try:
            h.update(text.encode("utf-8"))
        except UnicodeEncodeError:  # a lone surrogate (an in-memory table)
            found = find_surrogate(list(row))
            column = items.columns[int(found[1].split()[-1])] if found else "?"
            raise InputError(MSG_SURROGATE.format(
                what="catalog", path="<frame>", row=i, column=f", column {column!r}",
                escape=found[0] if found else "?")) from None
    return h.hexdigest()
