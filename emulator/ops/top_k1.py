"""DML_OPERATOR_TOP_K1 (DML_TOP_K1_OPERATOR_DESC): the K largest (DECREASING) or smallest
(INCREASING) elements of every sequence along ``Axis``, sorted, with their indices.

Rules (Microsoft's DML_TOP_K1_OPERATOR_DESC page): the three tensors share a DimensionCount;
input and values share a DataType; both outputs have the input's sizes except ``Sizes[Axis] == K``;
``Axis < DimensionCount``. **Decisions** (docs/decisions.md): 1 <= K <= the axis size; ties are
ordered by ascending index in both directions; NaN ranks above +inf (first when DECREASING, last
when INCREASING), NaNs tie by index; -0 and +0 are equal.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace

import numpy as np

from descriptors import DML_AXIS_DIRECTION, DML_TENSOR_DATA_TYPE, NUMPY_DTYPE

from ..plan import TopKPlan
from ..validation import Context, same
from .common import EIGHT_TYPES

T = DML_TENSOR_DATA_TYPE
DECREASING = DML_AXIS_DIRECTION.DML_AXIS_DIRECTION_DECREASING


# Every type of the bands: values up to 32 bits pack a 32-bit order-preserving key with their
# index into one 64-bit word (kernels/topk.py); INT64 and UINT64 values (5_0) are ranked by a
# stable sort of 64-bit keys. UINT32 or UINT64 (5_0) indices.
KERNEL_TYPES = (*EIGHT_TYPES, T.DML_TENSOR_DATA_TYPE_INT64, T.DML_TENSOR_DATA_TYPE_UINT64)


def validate(ctx: Context, v: SimpleNamespace) -> None:
    i, val, idx = v.InputTensor, v.OutputValueTensor, v.OutputIndexTensor
    same(ctx, "InputTensor", "OutputValueTensor", "DimensionCount", i.dim_count, val.dim_count)
    same(ctx, "InputTensor", "OutputIndexTensor", "DimensionCount", i.dim_count, idx.dim_count)
    same(ctx, "InputTensor", "OutputValueTensor", "DataType", i.data_type, val.data_type)
    ctx.require(v.Axis < i.dim_count, "Axis", v.Axis,
                f"must be less than InputTensor.DimensionCount ({i.dim_count})")
    n = i.sizes[v.Axis]
    ctx.require(1 <= v.K <= n, "K", v.K,
                f"must lie in [1, InputTensor.Sizes[{v.Axis}]] = [1, {n}]")
    expected = tuple(v.K if d == v.Axis else s for d, s in enumerate(i.sizes))
    for name, t in (("OutputValueTensor", val), ("OutputIndexTensor", idx)):
        ctx.require(t.sizes == expected, f"{name}.Sizes", t.sizes,
                    f"must equal InputTensor.Sizes with Sizes[Axis = {v.Axis}] = K, that is "
                    "{" + ", ".join(map(str, expected)) + "}")


def key_constants(data_type: T, decreasing: bool) -> tuple[int, ...]:
    """abs_mask, inf_bits, nan_bits, sign_bit, pos_xor, neg_xor, dir_mask (kernels/topk.py)."""
    dtype = np.dtype(NUMPY_DTYPE[data_type])
    bits = dtype.itemsize * 8
    ones, sign = (1 << bits) - 1, 1 << (bits - 1)
    direction = 0 if decreasing else ones
    if data_type == T.DML_TENSOR_DATA_TYPE_FLOAT32:
        return 0x7FFFFFFF, 0x7F800000, 0x7FC00000, sign, sign, ones, direction
    if data_type == T.DML_TENSOR_DATA_TYPE_FLOAT16:
        return 0x7FFF, 0x7C00, 0x7E00, sign, sign, ones, direction
    flip = sign if dtype.kind == "i" else 0
    return ones, ones, 0, sign, flip, flip, direction


def top_k_plan(v: SimpleNamespace, decreasing: bool) -> TopKPlan:
    i = v.InputTensor
    return TopKPlan.build(i.element_size, key_constants(i.data_type, decreasing), v.K, v.Axis,
                          i.sizes, i.strides, v.OutputValueTensor.strides,
                          v.OutputIndexTensor.strides, v.OutputIndexTensor.element_size)


def plan(v: SimpleNamespace) -> TopKPlan:
    return top_k_plan(v, v.AxisDirection == DECREASING)


def top_k(x: np.ndarray, axis: int, k: int, decreasing: bool) -> tuple[np.ndarray, np.ndarray]:
    """The page's definition in NumPy: a stable sort of each sequence by value (NaN above +inf,
    -0 equal to +0, ties by ascending index), keeping the first K."""
    seq = np.moveaxis(x, axis, -1)
    index = np.broadcast_to(np.arange(seq.shape[-1]), seq.shape)
    value: np.ndarray
    if seq.dtype.kind == "f":
        nan = np.isnan(seq)
        value = np.where(nan, 0, seq).astype(np.float64) + 0.0  # + 0.0 turns -0 into +0
        descending = -value
    else:  # integers as they are (64-bit ones too); ~v reverses the order without overflow
        nan = np.zeros(seq.shape, bool)
        value = seq
        descending = np.invert(value)
    if decreasing:
        order = np.lexsort((index, descending, ~nan), axis=-1)
    else:
        order = np.lexsort((index, value, nan), axis=-1)
    order = order[..., :k]
    values = np.take_along_axis(seq, order, axis=-1)
    return np.moveaxis(values, -1, axis), np.moveaxis(order.astype(np.uint32), -1, axis)


def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    values, indices = top_k(inputs["InputTensor"], v.Axis, v.K, v.AxisDirection == DECREASING)
    return {"OutputValueTensor": values,
            "OutputIndexTensor": indices.astype(NUMPY_DTYPE[v.OutputIndexTensor.data_type])}
