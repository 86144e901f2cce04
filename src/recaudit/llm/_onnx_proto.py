"""The few ONNX protobuf messages a static graph needs, written without the ``onnx`` package.

ONNX Runtime loads a model from its protobuf bytes; building those bytes with the
``onnx`` package would add it and ``ml_dtypes`` to the torch-free install (~10 MB, and
3.4 s to import here) for a dozen fields. This module writes exactly those fields of
``onnx.proto`` (proto2; field numbers from onnx/onnx.proto, IR version 10): a model, a
graph, nodes with float / int / ints attributes, float32 and int64 tensors as raw
little-endian bytes, and tensor inputs and outputs with symbolic dimensions. Encoding
follows the protobuf wire format: a key ``field << 3 | wire type`` as a varint, then
a varint (type 0), 4 bytes (type 5) or a length-prefixed payload (type 2).
:func:`tests/llm/test_bert_encoder.py::test_proto_against_onnx` parses the output with
the ``onnx`` package where it is installed.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["attribute", "graph", "model", "node", "tensor", "value_info"]

#: TensorProto.DataType codes.
FLOAT, INT64 = 1, 7
_DTYPES = {np.dtype(np.float32): FLOAT, np.dtype(np.int64): INT64}
#: AttributeProto.AttributeType codes.
_ATTR_FLOAT, _ATTR_INT, _ATTR_INTS = 1, 2, 7


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64: two's complement, ten bytes
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _bytes(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _str(field: int, text: str) -> bytes:
    return _bytes(field, text.encode("utf-8"))


def _join(field: int, messages: Iterable[bytes]) -> bytes:
    return b"".join(_bytes(field, m) for m in messages)


def attribute(name: str, value: float | int | Sequence[int]) -> bytes:
    """An ``AttributeProto``: a float, an int or a list of ints."""
    if isinstance(value, float):
        return _str(1, name) + _varint(2 << 3 | 5) + struct.pack("<f", value) \
            + _int(20, _ATTR_FLOAT)
    if isinstance(value, int):
        return _str(1, name) + _int(3, value) + _int(20, _ATTR_INT)
    return _str(1, name) + b"".join(_int(8, int(v)) for v in value) + _int(20, _ATTR_INTS)


def node(op_type: str, inputs: Sequence[str], outputs: Sequence[str],
         **attrs: float | int | Sequence[int]) -> bytes:
    """A ``NodeProto`` of the default domain."""
    return (b"".join(_str(1, i) for i in inputs) + b"".join(_str(2, o) for o in outputs)
            + _str(3, outputs[0]) + _str(4, op_type)
            + _join(5, (attribute(k, v) for k, v in sorted(attrs.items()))))


def tensor(name: str, array: npt.NDArray[np.float32] | npt.NDArray[np.int64]) -> bytes:
    """A ``TensorProto`` holding ``array`` (float32 or int64) as raw little-endian bytes."""
    dtype = _DTYPES[array.dtype]
    raw = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
    return (b"".join(_int(1, d) for d in array.shape) + _int(2, dtype) + _str(8, name)
            + _bytes(9, raw))


def value_info(name: str, elem_type: int, dims: Sequence[int | str]) -> bytes:
    """A ``ValueInfoProto`` of a tensor; a ``str`` dimension is symbolic."""
    shape = _join(1, (_int(1, d) if isinstance(d, int) else _str(2, d) for d in dims))
    tensor_type = _int(1, elem_type) + _bytes(2, shape)
    return _str(1, name) + _bytes(2, _bytes(1, tensor_type))


def graph(name: str, nodes: Sequence[bytes], initializers: Sequence[bytes],
          inputs: Sequence[bytes], outputs: Sequence[bytes]) -> bytes:
    """A ``GraphProto``."""
    return (_join(1, nodes) + _str(2, name) + _join(5, initializers) + _join(11, inputs)
            + _join(12, outputs))


def model(graph_bytes: bytes, *, opset: int, ir_version: int) -> bytes:
    """A ``ModelProto`` of ``graph_bytes`` importing the default domain at ``opset``."""
    opset_id = _str(1, "") + _int(2, opset)
    return _int(1, ir_version) + _bytes(7, graph_bytes) + _bytes(8, opset_id)
