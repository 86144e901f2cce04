"""Loaders for the interaction datasets of the inter-bias study.

Every loader returns an :class:`~recaudit.fairness.InteractionData` with the
canonical columns ``user_id``, ``item_id`` and, when the source has them, ``rating``
or ``plays`` and ``timestamp``; the users table keeps the source's attribute columns
(``gender``, ``age``, ``country``, ...). Ids keep their original values (as text for
the Last.fm and RecBole ``token`` fields).

Formats (``format=`` of :func:`load_dataset`):

``recbole``
    RecBole atomic files ``NAME.inter`` and ``NAME.user`` (tab-separated, typed
    headers ``field:type``), e.g. RecBole's ``ml-100k``.
``movielens-100k``
    GroupLens raw ``u.data`` (user, item, rating, timestamp; tabs) and ``u.user``
    (``id|age|gender|occupation|zip``).
``movielens-1m``
    GroupLens raw ``ratings.dat`` and ``users.dat`` (``::``-separated; users:
    ``id::gender::age::occupation::zip``).
``lastfm-1k``
    ``userid-profile.tsv`` (header ``#id gender age country registered``) and
    ``userid-timestamp-artid-artname-traid-traname.tsv`` (one row per listen); a
    user-artist interaction with ``plays`` = number of listens.
``lastfm-360k``
    ``usersha1-profile.tsv`` (``id gender age country signup``, no header) and
    ``usersha1-artmbid-artname-plays.tsv``; user-artist ``plays`` summed.
``table``
    Any CSV or Parquet interactions file plus a users file, with a column map.

For both Last.fm formats the item is the artist's MusicBrainz id, or its name when
the id is empty (as the paper's artist-level LastFM data).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from ..._read import one_line, read_table
from ...exceptions import InputError
from .. import ITEM_ID, USER_ID, InteractionData

__all__ = [
    "FORMATS",
    "load_dataset",
    "load_lastfm_1k",
    "load_lastfm_360k",
    "load_movielens",
    "load_recbole_atomic",
    "load_table",
]

FORMATS = (
    "recbole",
    "movielens-100k",
    "movielens-1m",
    "lastfm-1k",
    "lastfm-360k",
    "table",
)

MSG_NOT_FOUND = "{what} not found: {path}"
MSG_BAD_FORMAT = "`format` must be one of {formats}, got {value!r}"
MSG_COLUMN_MAP = (
    "`columns` maps {key!r} to {column!r}, which is not a column of {path} (columns: {columns})"
)


def _require_file(path: Path, what: str) -> Path:
    if not path.is_file():
        raise InputError(MSG_NOT_FOUND.format(what=what, path=path))
    return path


def _read_atomic(path: Path, what: str) -> pd.DataFrame:
    """Read one RecBole atomic file; ``token`` fields as text, numbers as numbers."""
    header_frame = read_table(path, what=what, sep="\t", quoting=csv.QUOTE_NONE,
                              nrows=0, allow_empty=True)
    names, dtypes = [], {}
    for raw in header_frame.columns:
        name, _, kind = str(raw).partition(":")
        names.append(name)
        if kind in ("token", "token_seq", "float_seq"):
            dtypes[name] = str
    frame = read_table(
        path,
        what=what,
        sep="\t",
        skiprows=1,
        names=names,
        dtype=dtypes,
        quoting=csv.QUOTE_NONE,
        keep_default_na=False,
        na_values={n: [""] for n in names if n not in dtypes},
    )
    return frame


def load_recbole_atomic(path: str | Path, *, name: str | None = None) -> InteractionData:
    """Load RecBole atomic files ``NAME.inter`` and ``NAME.user``.

    Parameters
    ----------
    path : str or pathlib.Path
        The dataset folder (``.../ml-100k``) or its ``.inter`` file.
    name : str, optional
        Dataset name (the file stem); by default the folder name.

    Returns
    -------
    InteractionData

    Examples
    --------
    >>> data = load_recbole_atomic("../shared/data/ml-100k")  # doctest: +SKIP
    >>> data.users["gender"].value_counts().to_dict()  # doctest: +SKIP
    {'M': 670, 'F': 273}
    """
    path = Path(path)
    if path.suffix == ".inter":
        folder, stem = path.parent, name or path.stem
    else:
        folder, stem = path, name or path.name
    inter = _read_atomic(_require_file(folder / f"{stem}.inter", "RecBole .inter file"),
                         "RecBole .inter file")
    users = _read_atomic(_require_file(folder / f"{stem}.user", "RecBole .user file"),
                         "RecBole .user file")
    keep = [c for c in (USER_ID, ITEM_ID, "rating", "plays", "timestamp") if c in inter.columns]
    return InteractionData(inter[keep], users, name=stem)


def load_movielens(path: str | Path) -> InteractionData:
    """Load a raw GroupLens MovieLens 100K or 1M folder.

    The variant is recognised by its files: ``u.data``/``u.user`` (100K) or
    ``ratings.dat``/``users.dat`` (1M).

    Parameters
    ----------
    path : str or pathlib.Path
        The extracted ``ml-100k`` or ``ml-1m`` folder.

    Returns
    -------
    InteractionData
        ``rating`` (1-5) and ``timestamp`` columns; users with ``age``, ``gender``,
        ``occupation``, ``zip_code``.
    """
    folder = Path(path)
    inter_cols = [USER_ID, ITEM_ID, "rating", "timestamp"]
    if (folder / "u.data").is_file():
        inter = read_table(folder / "u.data", what="MovieLens 100K u.data", sep="\t",
                           names=inter_cols)
        users = read_table(
            _require_file(folder / "u.user", "MovieLens 100K u.user"),
            what="MovieLens 100K u.user",
            sep="|",
            names=[USER_ID, "age", "gender", "occupation", "zip_code"],
            dtype={"zip_code": str},
        )
        name = "ml-100k"
    elif (folder / "ratings.dat").is_file():
        inter = _read_double_colon(folder / "ratings.dat", inter_cols)
        users = _read_double_colon(
            _require_file(folder / "users.dat", "MovieLens 1M users.dat"),
            [USER_ID, "gender", "age", "occupation", "zip_code"],
        )
        users["zip_code"] = users["zip_code"].astype(str)
        name = "ml-1m"
    else:
        raise InputError(
            MSG_NOT_FOUND.format(what="MovieLens u.data (100K) or ratings.dat (1M)", path=folder)
        )
    return InteractionData(inter, users, name=name)


def _read_double_colon(path: Path, names: list[str]) -> pd.DataFrame:
    try:  # latin-1: the GroupLens 1M files are not UTF-8 (and latin-1 decodes any byte)
        text = path.read_text("latin-1")
    except OSError as exc:
        raise InputError(f"cannot read {path}: {one_line(exc)}") from None
    rows = [line.rstrip("\r\n").split("::") for line in text.splitlines()]
    frame = pd.DataFrame([r for r in rows if len(r) == len(names)], columns=names)
    if len(frame) != len([r for r in rows if r != [""]]):
        raise InputError(f"{path} has rows without exactly {len(names)} `::`-separated fields")
    for column in frame.columns:
        converted = pd.to_numeric(frame[column], errors="coerce")
        if converted.notna().all():
            frame[column] = converted
    return frame


def _artist_item(mbid: pd.Series, name: pd.Series) -> pd.Series:
    mbid = mbid.fillna("").astype(str)
    return mbid.where(mbid.str.len() > 0, "name:" + name.fillna("").astype(str))


def load_lastfm_1k(path: str | Path) -> InteractionData:
    """Load the raw Last.fm-1K dataset (Celma, 2010) as user-artist play counts.

    Parameters
    ----------
    path : str or pathlib.Path
        Folder with ``userid-profile.tsv`` and
        ``userid-timestamp-artid-artname-traid-traname.tsv``.

    Returns
    -------
    InteractionData
        ``plays`` (listens per user-artist) and ``timestamp`` (the last listen, as
        in the file, ISO 8601); users with ``gender``, ``age``, ``country``,
        ``registered`` (empty fields become missing values).
    """
    folder = Path(path)
    users = read_table(
        _require_file(folder / "userid-profile.tsv", "Last.fm-1K userid-profile.tsv"),
        what="Last.fm-1K userid-profile.tsv",
        sep="\t",
        header=0,
        names=[USER_ID, "gender", "age", "country", "registered"],
        dtype={USER_ID: str, "gender": str, "country": str, "registered": str},
        quoting=csv.QUOTE_NONE,
    )
    events = read_table(
        _require_file(
            folder / "userid-timestamp-artid-artname-traid-traname.tsv",
            "Last.fm-1K listening-events file",
        ),
        what="Last.fm-1K listening-events file",
        sep="\t",
        header=None,
        names=[USER_ID, "timestamp", "artid", "artname", "traid", "traname"],
        usecols=[USER_ID, "timestamp", "artid", "artname"],
        dtype=str,
        quoting=csv.QUOTE_NONE,
        keep_default_na=False,
    )
    events[ITEM_ID] = _artist_item(events["artid"], events["artname"])
    inter = (
        events.groupby([USER_ID, ITEM_ID], sort=False)
        .agg(plays=("timestamp", "size"), timestamp=("timestamp", "max"))
        .reset_index()
    )
    return InteractionData(inter, users, name="lastfm-1k")


def load_lastfm_360k(path: str | Path) -> InteractionData:
    """Load the raw Last.fm-360K dataset (Celma, 2010) as user-artist play counts.

    Parameters
    ----------
    path : str or pathlib.Path
        Folder with ``usersha1-profile.tsv`` and ``usersha1-artmbid-artname-plays.tsv``.

    Returns
    -------
    InteractionData
        ``plays`` summed per user-artist; users with ``gender``, ``age``,
        ``country``, ``signup``.
    """
    folder = Path(path)
    users = read_table(
        _require_file(folder / "usersha1-profile.tsv", "Last.fm-360K usersha1-profile.tsv"),
        what="Last.fm-360K usersha1-profile.tsv",
        sep="\t",
        header=None,
        names=[USER_ID, "gender", "age", "country", "signup"],
        dtype={USER_ID: str, "gender": str, "country": str, "signup": str},
        quoting=csv.QUOTE_NONE,
    )
    plays = read_table(
        _require_file(folder / "usersha1-artmbid-artname-plays.tsv", "Last.fm-360K plays file"),
        what="Last.fm-360K plays file",
        sep="\t",
        header=None,
        names=[USER_ID, "artmbid", "artname", "plays"],
        dtype={USER_ID: str, "artmbid": str, "artname": str},
        quoting=csv.QUOTE_NONE,
        keep_default_na=False,
        na_values={"plays": [""]},
    )
    plays[ITEM_ID] = _artist_item(plays["artmbid"], plays["artname"])
    inter = plays.groupby([USER_ID, ITEM_ID], sort=False)["plays"].sum().reset_index()
    users = users.drop_duplicates(USER_ID)
    return InteractionData(inter, users, name="lastfm-360k")


def _read_table(path: Path, what: str) -> pd.DataFrame:
    _require_file(path, what)
    return read_table(path, what=what)


def load_table(
    interactions: str | Path,
    users: str | Path,
    *,
    columns: Mapping[str, str] | None = None,
    name: str | None = None,
) -> InteractionData:
    """Load interactions and users from CSV/TSV/Parquet files with a column map.

    Parameters
    ----------
    interactions, users : str or pathlib.Path
        The two files (``.csv``, ``.tsv`` or ``.parquet``).
    columns : mapping, optional
        Canonical name -> column in the files, for ``user_id``, ``item_id``,
        ``rating``, ``plays``, ``timestamp`` (e.g. ``{"user_id": "uid"}``); the
        user id is renamed in both files. Unmapped canonical names are used as is.
    name : str, optional
        Dataset name; by default the interactions file stem.

    Returns
    -------
    InteractionData
    """
    inter_path, users_path = Path(interactions), Path(users)
    inter = _read_table(inter_path, "interactions table")
    user_table = _read_table(users_path, "users table")
    mapping = dict(columns or {})
    allowed = {USER_ID, ITEM_ID, "rating", "plays", "timestamp"}
    for key in mapping:
        if key not in allowed:
            raise InputError(f"`columns` key {key!r} is not one of {', '.join(sorted(allowed))}")
    for key, column in mapping.items():
        if column not in inter.columns:
            raise InputError(
                MSG_COLUMN_MAP.format(
                    key=key,
                    column=column,
                    path=inter_path,
                    columns=", ".join(map(str, inter.columns)),
                )
            )
    inter = inter.rename(columns={v: k for k, v in mapping.items()})
    user_col = mapping.get(USER_ID, USER_ID)
    if user_col not in user_table.columns:
        raise InputError(
            MSG_COLUMN_MAP.format(
                key=USER_ID,
                column=user_col,
                path=users_path,
                columns=", ".join(map(str, user_table.columns)),
            )
        )
    user_table = user_table.rename(columns={user_col: USER_ID})
    keep = [c for c in (USER_ID, ITEM_ID, "rating", "plays", "timestamp") if c in inter.columns]
    return InteractionData(inter[keep], user_table, name=name or inter_path.stem)


def load_dataset(
    path: str | Path,
    *,
    format: str,
    users: str | Path | None = None,
    columns: Mapping[str, str] | None = None,
    name: str | None = None,
) -> InteractionData:
    """Load a dataset in one of :data:`FORMATS`.

    Parameters
    ----------
    path : str or pathlib.Path
        Dataset folder, or the interactions file for ``recbole`` and ``table``.
    format : str
        One of :data:`FORMATS`.
    users : str or pathlib.Path, optional
        Users file (``table`` only).
    columns : mapping, optional
        Column map (``table`` only), see :func:`load_table`.
    name : str, optional
        Dataset name override.

    Returns
    -------
    InteractionData
    """
    users_path = _load_dataset_iv(format, users, columns)
    if users_path is not None:
        return load_table(path, users_path, columns=columns, name=name)
    if format == "recbole":
        data = load_recbole_atomic(path, name=name)
    elif format in ("movielens-100k", "movielens-1m"):
        data = load_movielens(path)
    elif format == "lastfm-1k":
        data = load_lastfm_1k(path)
    else:
        data = load_lastfm_360k(path)
    return data if name is None else InteractionData(data.interactions, data.users, name=name)


def _load_dataset_iv(
    format: str, users: str | Path | None, columns: Mapping[str, str] | None
) -> Path | None:
    if format not in FORMATS:
        raise InputError(MSG_BAD_FORMAT.format(formats=", ".join(FORMATS), value=format))
    if format == "table" and users is None:
        raise InputError("`users` (the users file) is required with format 'table'")
    if format != "table" and (users is not None or columns):
        raise InputError(f"`users` and `columns` apply to format 'table' only, not {format!r}")
    return None if users is None else Path(users)
