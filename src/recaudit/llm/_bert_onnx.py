"""The BERT forward pass of :mod:`._bert` as an ONNX graph, run by ONNX Runtime.

The graph is built in memory from the numpy weights (nothing is downloaded, nothing
written to disk; the protobuf bytes by :mod:`._onnx_proto`, so the ``onnx`` package is
not needed) with the standard ONNX operators of opset 20 -- ``Gather``,
``MatMul``, ``Softmax``, ``LayerNormalization``, exact ``Gelu`` -- node for node the
pass that :func:`._bert.numpy_forward` computes; ONNX Runtime then fuses and runs it
with its own thread pool (spinning off, so an idle worker does not burn a shared core).
Input ``input_ids`` (B, L) int64, one length per batch; output ``pooled`` (B, hidden).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from ..exceptions import MissingExtraError
from . import _onnx_proto as proto
from ._bert import BertSpec, BertWeights

__all__ = ["OnnxBert", "build_graph"]

OPSET = 20
IR_VERSION = 10


class _Graph:
    """Collects initializers and nodes; every node gets a fresh output name."""

    def __init__(self) -> None:
        self.inits: list[bytes] = []
        self.nodes: list[bytes] = []

    def init(self, name: str, array: npt.NDArray[Any]) -> str:
        self.inits.append(proto.tensor(name, np.ascontiguousarray(array)))
        return name

    def node(self, op: str, inputs: list[str], output: str | None = None, **attrs: Any) -> str:
        out = output or f"{op.lower()}_{len(self.nodes)}"
        self.nodes.append(proto.node(op, inputs, [out], **attrs))
        return out

    def linear(self, x: str, w: npt.NDArray[np.float32], b: npt.NDArray[np.float32],
               name: str) -> str:
        return self.node("Add", [self.node("MatMul", [x, self.init(name + "_w", w)]),
                                 self.init(name + "_b", b)])

    def layer_norm(self, x: str, w: npt.NDArray[np.float32], b: npt.NDArray[np.float32],
                   name: str, eps: float) -> str:
        return self.node("LayerNormalization",
                         [x, self.init(name + "_w", w), self.init(name + "_b", b)],
                         axis=-1, epsilon=eps)


def _attention(g: _Graph, spec: BertSpec, x: str, layer: Any, i: int) -> str:
    d = spec.hidden
    heads = []
    for j, name in enumerate("qkv"):
        t = g.linear(x, layer.qkv_w[:, j * d : (j + 1) * d], layer.qkv_b[j * d : (j + 1) * d],
                     f"l{i}_{name}")
        t = g.node("Reshape", [t, "shape_heads"])
        heads.append(g.node("Transpose", [t], perm=[0, 2, 3, 1] if name == "k" else [0, 2, 1, 3]))
    scores = g.node("Mul", [g.node("MatMul", [heads[0], heads[1]]), "scale"])
    probs = g.node("Softmax", [scores], axis=-1)
    ctx = g.node("Transpose", [g.node("MatMul", [probs, heads[2]])], perm=[0, 2, 1, 3])
    return g.node("Reshape", [ctx, "shape_hidden"])


def build_graph(spec: BertSpec, w: BertWeights) -> bytes:
    """The serialised ONNX model of the forward pass (weights as initializers)."""
    g = _Graph()
    g.init("word", w.word)
    g.init("position", w.position)
    g.init("type0", w.token_type0)
    g.init("i0", np.array([0], np.int64))
    g.init("i1", np.array([1], np.int64))
    g.init("i2", np.array([2], np.int64))
    g.init("shape_heads", np.array([0, 0, spec.heads, spec.hidden // spec.heads], np.int64))
    g.init("shape_hidden", np.array([0, 0, spec.hidden], np.int64))
    g.init("scale", np.array(1 / math.sqrt(spec.hidden // spec.heads), np.float32))
    length = g.node("Slice", [g.node("Shape", ["input_ids"]), "i1", "i2"])
    x = g.node("Add", [g.node("Gather", ["word", "input_ids"]),
                       g.node("Slice", ["position", "i0", length])])
    x = g.layer_norm(g.node("Add", [x, "type0"]), w.emb_ln_w, w.emb_ln_b, "emb_ln", spec.eps)
    for i, layer in enumerate(w.layers):
        a = g.node("Add", [x, g.linear(_attention(g, spec, x, layer, i), layer.o_w, layer.o_b,
                                       f"l{i}_o")])
        a = g.layer_norm(a, layer.ln1_w, layer.ln1_b, f"l{i}_ln1", spec.eps)
        h = g.node("Gelu", [g.linear(a, layer.i_w, layer.i_b, f"l{i}_i")])
        x = g.layer_norm(g.node("Add", [a, g.linear(h, layer.f_w, layer.f_b, f"l{i}_f")]),
                         layer.ln2_w, layer.ln2_b, f"l{i}_ln2", spec.eps)
    if spec.pooling == "cls":
        g.node("Gather", [x, "i0"], "pooled_3d", axis=1)
        g.node("Squeeze", ["pooled_3d", "i1"], "pooled")
    else:
        g.node("ReduceMean", [x, "i1"], "pooled", keepdims=0)
    graph = proto.graph("bert", g.nodes, g.inits,
                        [proto.value_info("input_ids", proto.INT64, ["B", "L"])],
                        [proto.value_info("pooled", proto.FLOAT, ["B", spec.hidden])])
    return proto.model(graph, opset=OPSET, ir_version=IR_VERSION)


class OnnxBert:
    """An ONNX Runtime session of :func:`build_graph`; call it on ``(B, L)`` ids.

    Parameters
    ----------
    spec, weights : BertSpec, BertWeights
    n_threads : int or None
        ONNX Runtime intra-op threads (``None``: its default, one per core).
    """

    def __init__(self, spec: BertSpec, weights: BertWeights, *, n_threads: int | None) -> None:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise MissingExtraError("onnxruntime", "embed") from exc
        options = ort.SessionOptions()
        if n_threads is not None:
            options.intra_op_num_threads = n_threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self.session = ort.InferenceSession(build_graph(spec, weights), options,
                                            providers=["CPUExecutionProvider"])

    def __call__(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        out = self.session.run(["pooled"], {"input_ids": ids})[0]
        return np.asarray(out, dtype=np.float32)
