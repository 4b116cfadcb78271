"""Tensors of the 4-bit data types (UINT4 and INT4, DML_FEATURE_LEVEL_6_3): two elements per byte.

A 4-bit tensor's Sizes and Strides count elements, as for every other type, and element ``e``
(its offset: the sum of coordinate * stride) lives in byte ``e // 2``: in the low nibble (bits
0-3) when ``e`` is even, in the high nibble when it is odd. That is the order ONNX and ONNX
Runtime's DirectML provider pack 4-bit weights in (docs/decisions.md). INT4 nibbles are two's
complement (-8 … 7).

``read`` unpacks a tensor into a logical int8/uint8 array; ``write`` packs a logical array in,
leaving every nibble the tensor does not address (padding, the other half of a shared byte)
unchanged. Both work in slices of at most ``SLICE`` elements, so their scratch stays small.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from descriptors import DML_TENSOR_DATA_TYPE

T = DML_TENSOR_DATA_TYPE
FOUR_BIT = (T.DML_TENSOR_DATA_TYPE_UINT4, T.DML_TENSOR_DATA_TYPE_INT4)
# The logical array type of each 4-bit type, and its range.
LOGICAL = {T.DML_TENSOR_DATA_TYPE_UINT4: np.dtype(np.uint8),
           T.DML_TENSOR_DATA_TYPE_INT4: np.dtype(np.int8)}
RANGE = {T.DML_TENSOR_DATA_TYPE_UINT4: (0, 15), T.DML_TENSOR_DATA_TYPE_INT4: (-8, 7)}
SLICE = 1 << 20


def _offsets(sizes: Sequence[int], strides: Sequence[int], start: int, stop: int) -> np.ndarray:
    """The element offsets of the row-major flat indices [start, stop)."""
    flat = np.arange(start, stop, dtype=np.int64)
    out = np.zeros_like(flat)
    for n, st in zip(reversed(sizes), reversed(strides)):
        flat, c = np.divmod(flat, n)
        out += c * st
    return out


def read(data_type: int, sizes: Sequence[int], strides: Sequence[int],
         region: np.ndarray) -> np.ndarray:
    """The logical values (shaped by ``sizes``) of a 4-bit tensor in ``region`` (bytes)."""
    signed = data_type == T.DML_TENSOR_DATA_TYPE_INT4
    count = math.prod(sizes)
    out = np.empty(count, LOGICAL[T(data_type)])
    for start in range(0, count, SLICE):
        e = _offsets(sizes, strides, start, min(count, start + SLICE))
        nib = (region[e >> 1] >> ((e & 1) << 2).astype(np.uint8)) & 15
        out[start:start + e.size] = (nib.astype(np.int8) ^ 8) - 8 if signed else nib
    return out.reshape(tuple(sizes))


def write(data_type: int, sizes: Sequence[int], strides: Sequence[int], region: np.ndarray,
          values: np.ndarray) -> None:
    """Pack ``values`` (shaped by ``sizes``; integers within the type's range) into a 4-bit
    tensor in ``region`` (bytes). An output's elements never share an offset (validation), so
    the even offsets touch distinct bytes, and so do the odd ones."""
    flat = np.ascontiguousarray(values).reshape(-1)
    for start in range(0, flat.size, SLICE):
        e = _offsets(sizes, strides, start, min(flat.size, start + SLICE))
        v = flat[start:start + e.size].astype(np.uint8) & 15
        low = (e & 1) == 0
        b = e[low] >> 1
        region[b] = (region[b] & 0xF0) | v[low]
        b = e[~low] >> 1
        region[b] = (region[b] & 0x0F) | (v[~low] << 4)
