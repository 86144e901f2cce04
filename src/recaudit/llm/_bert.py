r"""A torch-free BERT sentence encoder: sentence-transformers' MiniLM without torch.

A sentence-transformers folder made of a BERT ``Transformer`` module, a mean or CLS
``Pooling`` module and an optional ``Normalize`` module (all-MiniLM-L6-v2,
BAAI/bge-small-en-v1.5 and most BERT-family sentence encoders) is read here without
torch: the WordPiece tokenizer from ``tokenizer.json`` through the ``tokenizers``
package (the same Rust tokenizer sentence-transformers calls), the weights from
``model.safetensors`` as numpy arrays, and the forward pass

.. math::

    x_0 = \mathrm{LN}(E_{tok}[t] + E_{pos}[0..L) + E_{type}[0]),\quad
    a_l = \mathrm{LN}(x_{l-1} + \mathrm{MHA}(x_{l-1})W_O + b_O),\quad
    x_l = \mathrm{LN}(a_l + \mathrm{GELU}(a_l W_1 + b_1) W_2 + b_2),

with exact (erf) GELU, ``MHA`` the scaled dot-product attention of
Vaswani et al. (2017) over 12 heads, then mean pooling over the tokens (or the
``[CLS]`` vector) and L2 normalisation (Devlin et al., 2019, "BERT", NAACL;
Reimers & Gurevych, 2019, "Sentence-BERT", EMNLP).

Two engines run that pass: :mod:`onnxruntime` on a graph built in memory from the
same numpy weights (:mod:`._bert_onnx`; the fast one), and plain numpy (the reference,
no dependency beyond the two readers). Texts are grouped by token count so that every
batch has one length: no padding, so no attention mask, and no work spent on padding.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..exceptions import InputError, MissingExtraError

__all__ = ["BertSpec", "BertWeights", "bert_spec", "encode_by_length", "numpy_forward"]

#: Why a folder cannot be read without torch (:func:`bert_spec` returns the reason).
WHY_MODULES = "modules.json is not Transformer + Pooling [+ Normalize]"
WHY_ARCH = "config.json is not a BERT model with absolute positions and GELU"
WHY_POOLING = "pooling is neither mean nor CLS"
WHY_FILES = "no model.safetensors + tokenizer.json"
MSG_EMPTY_TEXT = "text {index} is empty after stripping; pass non-empty texts"

#: Tokens per batch: measured best of 1,024 / 4,096 / 16,384 (benchmarks/README.md).
BATCH_TOKENS = 4096

_ST = "sentence_transformers.models."
Progress = Callable[[int], None]


@dataclass(frozen=True)
class BertSpec:
    """What the forward pass needs to know about a sentence-transformers BERT folder.

    Attributes
    ----------
    folder : Path
    hidden, heads, layers : int
        Width, attention heads and encoder layers (``config.json``).
    eps : float
        LayerNorm epsilon.
    max_seq_length : int
        Tokens kept per text, special tokens included (``sentence_bert_config.json``).
    pooling : str
        ``"mean"`` or ``"cls"`` (``1_Pooling/config.json``).
    normalize : bool
        Whether a ``Normalize`` module ends the pipeline.
    lower_case : bool
        ``do_lower_case`` of ``sentence_bert_config.json`` (applied before tokenizing).
    """

    folder: Path
    hidden: int
    heads: int
    layers: int
    eps: float
    max_seq_length: int
    pooling: str
    normalize: bool
    lower_case: bool


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def bert_spec(folder: Path) -> BertSpec | str:
    """The :class:`BertSpec` of ``folder``, or the reason it cannot run without torch."""
    folder = Path(folder)
    if not (folder / "model.safetensors").is_file() or not (folder / "tokenizer.json").is_file():
        return WHY_FILES
    try:
        modules = _read_json(folder / "modules.json")
        cfg = _read_json(folder / "config.json")
    except (OSError, ValueError):
        return WHY_MODULES
    kinds = [m.get("type", "") for m in modules]
    if kinds not in ([_ST + "Transformer", _ST + "Pooling"],
                     [_ST + "Transformer", _ST + "Pooling", _ST + "Normalize"]):
        return WHY_MODULES
    if (cfg.get("model_type") != "bert" or cfg.get("hidden_act") != "gelu"
            or cfg.get("position_embedding_type", "absolute") != "absolute"):
        return WHY_ARCH
    pool_dir = folder / modules[1].get("path", "1_Pooling")
    pool = _read_json(pool_dir / "config.json") if (pool_dir / "config.json").is_file() else {}
    modes = {k for k, v in pool.items() if k.startswith("pooling_mode") and v}
    if modes not in ({"pooling_mode_mean_tokens"}, {"pooling_mode_cls_token"}):
        return WHY_POOLING
    st_path = folder / "sentence_bert_config.json"
    st = _read_json(st_path) if st_path.is_file() else {}
    max_len = int(st.get("max_seq_length") or cfg.get("max_position_embeddings", 512))
    return BertSpec(
        folder=folder, hidden=int(cfg["hidden_size"]), heads=int(cfg["num_attention_heads"]),
        layers=int(cfg["num_hidden_layers"]), eps=float(cfg.get("layer_norm_eps", 1e-12)),
        max_seq_length=min(max_len, int(cfg.get("max_position_embeddings", 512))),
        pooling="mean" if "pooling_mode_mean_tokens" in modes else "cls",
        normalize=len(kinds) == 3, lower_case=bool(st.get("do_lower_case", False)),
    )


@dataclass(frozen=True)
class BertLayer:
    """One encoder layer's weights, laid out ``x @ W`` (torch stores ``W^T``)."""

    qkv_w: npt.NDArray[np.float32]  # (d, 3d): query | key | value
    qkv_b: npt.NDArray[np.float32]
    o_w: npt.NDArray[np.float32]
    o_b: npt.NDArray[np.float32]
    ln1_w: npt.NDArray[np.float32]
    ln1_b: npt.NDArray[np.float32]
    i_w: npt.NDArray[np.float32]
    i_b: npt.NDArray[np.float32]
    f_w: npt.NDArray[np.float32]
    f_b: npt.NDArray[np.float32]
    ln2_w: npt.NDArray[np.float32]
    ln2_b: npt.NDArray[np.float32]


@dataclass(frozen=True)
class BertWeights:
    """Embedding tables and layers of a BERT model, as float32 numpy arrays."""

    word: npt.NDArray[np.float32]
    position: npt.NDArray[np.float32]
    token_type0: npt.NDArray[np.float32]
    emb_ln_w: npt.NDArray[np.float32]
    emb_ln_b: npt.NDArray[np.float32]
    layers: tuple[BertLayer, ...]

    @classmethod
    def load(cls, spec: BertSpec) -> BertWeights:
        """Read ``model.safetensors`` (keys with or without a ``bert.`` prefix)."""
        try:
            from safetensors.numpy import load_file
        except ImportError as exc:
            raise MissingExtraError("safetensors", "embed") from exc
        raw = load_file(str(spec.folder / "model.safetensors"))
        w = {k.removeprefix("bert."): v.astype(np.float32, copy=False) for k, v in raw.items()}

        def t(name: str) -> npt.NDArray[np.float32]:
            return np.ascontiguousarray(w[name].T)

        layers = []
        for i in range(spec.layers):
            p = f"encoder.layer.{i}."
            att = [p + f"attention.self.{n}" for n in ("query", "key", "value")]
            layers.append(BertLayer(
                qkv_w=np.ascontiguousarray(np.concatenate([w[a + ".weight"] for a in att]).T),
                qkv_b=np.concatenate([w[a + ".bias"] for a in att]),
                o_w=t(p + "attention.output.dense.weight"),
                o_b=w[p + "attention.output.dense.bias"],
                ln1_w=w[p + "attention.output.LayerNorm.weight"],
                ln1_b=w[p + "attention.output.LayerNorm.bias"],
                i_w=t(p + "intermediate.dense.weight"), i_b=w[p + "intermediate.dense.bias"],
                f_w=t(p + "output.dense.weight"), f_b=w[p + "output.dense.bias"],
                ln2_w=w[p + "output.LayerNorm.weight"], ln2_b=w[p + "output.LayerNorm.bias"],
            ))
        return cls(
            word=w["embeddings.word_embeddings.weight"],
            position=w["embeddings.position_embeddings.weight"],
            token_type0=w["embeddings.token_type_embeddings.weight"][0],
            emb_ln_w=w["embeddings.LayerNorm.weight"], emb_ln_b=w["embeddings.LayerNorm.bias"],
            layers=tuple(layers),
        )


def load_tokenizer(spec: BertSpec) -> Any:
    """The folder's ``tokenizer.json`` without padding, truncated at ``max_seq_length``."""
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise MissingExtraError("tokenizers", "embed") from exc
    tok = Tokenizer.from_file(str(spec.folder / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(spec.max_seq_length)
    return tok


def _layer_norm(x: npt.NDArray[np.float32], w: npt.NDArray[np.float32],
                b: npt.NDArray[np.float32], eps: float) -> npt.NDArray[np.float32]:
    x = x - x.mean(-1, keepdims=True)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + np.float32(eps)) * w + b


def _gelu(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Exact GELU, ``x * Phi(x) = x (1 + erf(x / sqrt 2)) / 2`` (Hendrycks & Gimpel, 2016)."""
    from scipy.special import erf

    return np.float32(0.5) * x * (np.float32(1.0) + erf(x * np.float32(1 / math.sqrt(2))))


def numpy_forward(spec: BertSpec, w: BertWeights,
                  ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
    """Pooled (not normalised) embeddings of ``ids`` (B, L), one length, no padding."""
    n, length = ids.shape
    d, h = spec.hidden, spec.heads
    x = w.word[ids] + w.position[:length] + w.token_type0
    x = _layer_norm(x, w.emb_ln_w, w.emb_ln_b, spec.eps).reshape(n * length, d)
    scale = np.float32(1 / math.sqrt(d // h))
    for lw in w.layers:
        qkv = (x @ lw.qkv_w + lw.qkv_b).reshape(n, length, 3, h, d // h).transpose(2, 0, 3, 1, 4)
        s = (qkv[0] * scale) @ qkv[1].transpose(0, 1, 3, 2)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = (s @ qkv[2]).transpose(0, 2, 1, 3).reshape(n * length, d)
        x = _layer_norm(x + ctx @ lw.o_w + lw.o_b, lw.ln1_w, lw.ln1_b, spec.eps)
        x = _layer_norm(x + _gelu(x @ lw.i_w + lw.i_b) @ lw.f_w + lw.f_b,
                        lw.ln2_w, lw.ln2_b, spec.eps)
    x3 = x.reshape(n, length, d)
    return x3[:, 0] if spec.pooling == "cls" else x3.mean(1)


def encode_by_length(
    spec: BertSpec, tokenizer: Any, texts: Sequence[str],
    forward: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.float32]], *,
    batch_tokens: int = BATCH_TOKENS, progress: Progress | None = None,
) -> npt.NDArray[np.float32]:
    """Embeddings of ``texts`` (n, hidden), unit-norm when ``spec.normalize``.

    Texts are tokenized; texts with equal token ids (equal titles, or titles equal
    but for letter case under an uncased tokenizer) are embedded once, so they get
    bitwise-equal vectors and tie exactly. The distinct sequences are grouped by token
    count and passed to ``forward`` in batches of about ``batch_tokens`` tokens (one
    length per batch: no padding). ``progress(done)`` hears, after each batch, how
    many of ``texts`` (duplicates counted) are embedded; the last call is ``len(texts)``.
    """
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str) or not text.strip():
            raise InputError(MSG_EMPTY_TEXT.format(index=i))
    words = [t.lower() for t in texts] if spec.lower_case else texts
    token_ids = [tuple(e.ids) for e in tokenizer.encode_batch(words)]
    first: dict[tuple[int, ...], int] = {}
    inverse = np.array([first.setdefault(ids, len(first)) for ids in token_ids], dtype=np.intp)
    encoded = list(first)  # distinct token sequences, in order of first appearance
    lengths = np.array([len(ids) for ids in encoded])
    counts = np.bincount(inverse, minlength=len(encoded))
    out = np.empty((len(encoded), spec.hidden), dtype=np.float32)
    done = 0
    for length in np.unique(lengths):
        rows = np.flatnonzero(lengths == length)
        step = max(1, batch_tokens // int(length))
        for start in range(0, rows.size, step):
            part = rows[start : start + step]
            ids = np.array([encoded[j] for j in part], dtype=np.int64)
            out[part] = forward(ids)
            done += int(counts[part].sum())
            if progress is not None:
                progress(done)
    if spec.normalize:
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), np.float32(1e-12))
    return np.ascontiguousarray(out[inverse])
