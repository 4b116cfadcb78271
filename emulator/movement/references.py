"""Plain NumPy references of the data-movement operators, written from the pages' definitions
(independently of the index maps the plans build: NumPy's own concatenate, split, pad, tile and
reshape/transpose), on logical arrays."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

# DML_PADDING_MODE → numpy.pad's mode (NumPy folds pads longer than the dimension over the
# padding already made, as the PADDING1 page says DirectML does).
PAD_MODES = {"DML_PADDING_MODE_CONSTANT": "constant", "DML_PADDING_MODE_EDGE": "edge",
             "DML_PADDING_MODE_REFLECTION": "reflect", "DML_PADDING_MODE_SYMMETRIC": "symmetric",
             "DML_PADDING_MODE_WRAP": "wrap"}


def join(parts: Sequence[np.ndarray], axis: int) -> np.ndarray:
    return np.concatenate(parts, axis=axis)


def split(x: np.ndarray, sizes: Sequence[int], axis: int) -> list[np.ndarray]:
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)


def padding(x: np.ndarray, mode: str, value: np.generic, start: Sequence[int],
            end: Sequence[int]) -> np.ndarray:
    widths = list(zip(start, end))
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=value)
    pad: Any = np.pad  # (its mode argument is a literal type; ours come from PAD_MODES)
    return pad(x, widths, mode=mode)


def tile(x: np.ndarray, repeats: Sequence[int]) -> np.ndarray:
    return np.tile(x, repeats)


def depth_to_space(x: np.ndarray, b: int, order: str) -> np.ndarray:
    """DEPTH_COLUMN_ROW (ONNX's DCR): input channel (b1·B + b2)·C' + c; COLUMN_ROW_DEPTH
    (CRD): c·B² + b1·B + b2, for output (c, h·B + b1, w·B + b2)."""
    n, c, h, w = x.shape
    if order == "DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW":
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return y.reshape(n, c // (b * b), h * b, w * b)


def space_to_depth(x: np.ndarray, b: int, order: str) -> np.ndarray:
    """The inverse of depth_to_space with the same order."""
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b)
    if order == "DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW":
        y = y.transpose(0, 3, 5, 1, 2, 4)
    else:
        y = y.transpose(0, 1, 3, 5, 2, 4)
    return y.reshape(n, c * b * b, h // b, w // b)


def slice_grad(dy: np.ndarray, out_sizes: Sequence[int], offsets: Sequence[int],
               sizes: Sequence[int], strides: Sequence[int]) -> np.ndarray:
    """Zeros of the forward input's sizes, with the incoming gradient scattered back to the
    elements the forward SLICE1 read."""
    out = np.zeros(out_sizes, dy.dtype)
    index = []
    for off, size, stride, n in zip(offsets, sizes, strides, dy.shape):
        first = off + (size - 1 if stride < 0 else 0)
        index.append(first + stride * np.arange(n))
    out[np.ix_(*index)] = dy
    return out


def fill_sequence(sizes: Sequence[int], start: float | int, delta: float | int,
                  dtype: np.dtype) -> np.ndarray:
    """The page's loop (Value written, then Value += ValueDelta) in closed form: element i in
    row-major order is ValueStart + i·ValueDelta; integers wrap (exactly what repeated adds give),
    floats are that value in float64 rounded once to the type (decisions.md)."""
    i = range(int(np.prod(sizes)))
    if dtype.kind == "f":
        exact = [float(start) + float(k) * float(delta) for k in i]
        return np.array(exact, np.float64).astype(dtype).reshape(sizes)
    width = 8 * dtype.itemsize
    wrapped = [(int(start) + int(k) * int(delta)) % (1 << width) for k in i]
    return np.array(wrapped, np.uint64).astype(f"u{dtype.itemsize}").view(dtype).reshape(sizes)
