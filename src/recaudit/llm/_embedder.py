"""Sentence encoders behind :class:`~recaudit.llm.Retriever`: one interface, three engines.

``"onnx"`` (ONNX Runtime on the graph of :mod:`._bert_onnx`) and ``"numpy"`` (the
reference pass of :mod:`._bert`) need no torch: they read a BERT-family
sentence-transformers folder directly (``pip install 'recaudit[embed]'``).
``"torch"`` is sentence-transformers itself (``recaudit[llm]``) and reads any folder
it can load. ``"auto"`` takes the first that applies, in that order: ONNX Runtime,
sentence-transformers, numpy. On the packaged all-MiniLM-L6-v2 the three agree to a
cosine of 1 - 2.4e-7 on Myntra titles (docs/testbed.md), so they share one cache.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..exceptions import InputError, MissingExtraError
from ._bert import BertSpec, BertWeights, bert_spec, encode_by_length, load_tokenizer, numpy_forward

__all__ = ["ENGINES", "Encoder", "make_encoder", "resolve_engine"]

ENGINES = ("auto", "onnx", "numpy", "torch")
MSG_ENGINE = "`engine` must be one of {choices}, got {value!r}"
MSG_NO_TORCH_FREE = (
    "embedding model folder {folder} cannot run on the {engine!r} engine ({why}); "
    "use engine='torch' (sentence-transformers, `pip install 'recaudit[llm]'`)"
)
MSG_INSTALL = ("pip install 'recaudit[embed]' (ONNX Runtime, no torch; BERT-family "
               "folders such as the packaged MiniLM) or 'recaudit[llm]' (sentence-transformers)")
_TORCH_FREE = ("tokenizers", "safetensors")

#: ``progress(done, total)``: texts embedded so far, of the total.
Progress = Callable[[int, int], None]


def _have(*modules: str) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in modules)


def resolve_engine(engine: str, folder: Path) -> tuple[str, BertSpec | None]:
    """The engine ``engine`` means for ``folder``, and its :class:`BertSpec` if torch-free.

    Nothing is imported here: with no engine installed, ``"auto"`` resolves to
    ``"torch"``, whose loading raises :class:`MissingExtraError` naming both extras.

    Raises
    ------
    InputError
        An unknown engine, or a torch-free engine for a folder it cannot read.
    """
    if engine not in ENGINES:
        raise InputError(MSG_ENGINE.format(choices=", ".join(map(repr, ENGINES)), value=engine))
    spec = bert_spec(folder)
    if engine == "torch":
        return engine, None
    if isinstance(spec, str):
        if engine == "auto":
            return "torch", None
        raise InputError(MSG_NO_TORCH_FREE.format(folder=folder, engine=engine, why=spec))
    if engine != "auto":
        return engine, spec
    if _have(*_TORCH_FREE, "onnxruntime"):
        return "onnx", spec
    if _have(*_TORCH_FREE) and not _have("sentence_transformers"):
        return "numpy", spec
    return "torch", None  # nothing installed: loading says which extra to install


class Encoder:
    """``encode(texts, progress)`` -> float32 embeddings (n, d), one engine.

    Parameters
    ----------
    folder : Path
        The sentence-transformers model folder.
    engine : str
        ``"onnx"``, ``"numpy"`` or ``"torch"`` (resolved: see :func:`resolve_engine`).
    spec : BertSpec or None
        Required for the torch-free engines.
    n_threads : int or None
        Intra-op threads of ONNX Runtime or torch (``None``: the library's default);
        the numpy engine uses its BLAS's own setting.
    batch_size : int
        Sentences per sentence-transformers batch (torch engine only; the torch-free
        engines batch by token count).
    """

    def __init__(self, folder: Path, engine: str, spec: BertSpec | None, *,
                 n_threads: int | None, batch_size: int) -> None:
        self.folder, self.engine, self.spec = folder, engine, spec
        self.n_threads, self.batch_size = n_threads, batch_size
        self._model: Any = None
        self._tokenizer: Any = None

    @property
    def model(self) -> Any:
        """The loaded model (a ``SentenceTransformer``, an ONNX session or the weights)."""
        if self._model is None:
            self._model = self._load()
        return self._model

    def _load(self) -> Any:
        if self.engine == "torch":
            import os

            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise MissingExtraError("sentence-transformers", "llm", MSG_INSTALL) from exc
            return SentenceTransformer(str(self.folder), device="cpu")
        assert self.spec is not None  # resolve_engine gives a spec to these engines
        self._tokenizer = load_tokenizer(self.spec)
        weights = BertWeights.load(self.spec)
        if self.engine == "numpy":
            return weights
        from ._bert_onnx import OnnxBert

        return OnnxBert(self.spec, weights, n_threads=self.n_threads)

    def encode(self, texts: Sequence[str], *, chunk: int,
               progress: Progress | None = None) -> npt.NDArray[np.float32]:
        """Unit-norm embeddings of ``texts``; ``progress(done, total)`` after each part."""
        texts = list(texts)
        if self.engine == "torch":
            return self._encode_torch(texts, chunk=chunk, progress=progress)
        model, spec = self.model, self.spec
        assert spec is not None
        forward = (lambda ids: numpy_forward(spec, model, ids)) if self.engine == "numpy" \
            else model
        report = None if progress is None else (lambda done: progress(done, len(texts)))
        out = encode_by_length(spec, self._tokenizer, texts, forward, progress=report)
        if not spec.normalize:  # the Retriever compares by cosine: unit vectors always
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), np.float32(1e-12))
        return out

    def _encode_torch(self, texts: list[str], *, chunk: int,
                      progress: Progress | None) -> npt.NDArray[np.float32]:
        model = self.model  # first: without sentence-transformers, MissingExtraError
        import torch

        step = len(texts) if progress is None else max(chunk, self.batch_size)
        previous = torch.get_num_threads()
        if self.n_threads is not None:
            torch.set_num_threads(self.n_threads)
        try:
            parts = []
            for start in range(0, max(len(texts), 1), max(step, 1)):
                parts.append(model.encode(
                    texts[start : start + step], batch_size=self.batch_size,
                    normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False))
                if progress is not None:
                    progress(min(start + step, len(texts)), len(texts))
        finally:
            torch.set_num_threads(previous)
        out = parts[0] if len(parts) == 1 else np.concatenate(parts)
        return np.ascontiguousarray(out, dtype=np.float32)


def make_encoder(folder: Path, engine: str, *, n_threads: int | None,
                 batch_size: int) -> Encoder:
    """An :class:`Encoder` for ``folder`` on ``engine`` (``"auto"`` resolved here)."""
    resolved, spec = resolve_engine(engine, folder)
    return Encoder(folder, resolved, spec, n_threads=n_threads, batch_size=batch_size)
