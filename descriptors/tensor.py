"""Buffer tensor helpers: ``DMLCalcBufferTensorSize`` (as the C helper) and ``tensor_desc``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .enums import DML_TENSOR_DATA_TYPE, DML_TENSOR_FLAGS
from .structs import DML_BUFFER_TENSOR_DESC, DML_TENSOR_DESC

T = DML_TENSOR_DATA_TYPE

# Bytes per element of each data type (the 4-bit types are packed two per byte).
ELEMENT_SIZE_BITS: dict[int, int] = {
    T.DML_TENSOR_DATA_TYPE_FLOAT32: 32, T.DML_TENSOR_DATA_TYPE_FLOAT16: 16,
    T.DML_TENSOR_DATA_TYPE_UINT32: 32, T.DML_TENSOR_DATA_TYPE_UINT16: 16,
    T.DML_TENSOR_DATA_TYPE_UINT8: 8, T.DML_TENSOR_DATA_TYPE_INT32: 32,
    T.DML_TENSOR_DATA_TYPE_INT16: 16, T.DML_TENSOR_DATA_TYPE_INT8: 8,
    T.DML_TENSOR_DATA_TYPE_FLOAT64: 64, T.DML_TENSOR_DATA_TYPE_UINT64: 64,
    T.DML_TENSOR_DATA_TYPE_INT64: 64, T.DML_TENSOR_DATA_TYPE_UINT4: 4,
    T.DML_TENSOR_DATA_TYPE_INT4: 4,
}

# numpy dtype names of each data type (FLOAT16 is numpy float16; the 4-bit types have none).
NUMPY_DTYPE: dict[int, str] = {
    T.DML_TENSOR_DATA_TYPE_FLOAT32: "float32", T.DML_TENSOR_DATA_TYPE_FLOAT16: "float16",
    T.DML_TENSOR_DATA_TYPE_UINT32: "uint32", T.DML_TENSOR_DATA_TYPE_UINT16: "uint16",
    T.DML_TENSOR_DATA_TYPE_UINT8: "uint8", T.DML_TENSOR_DATA_TYPE_INT32: "int32",
    T.DML_TENSOR_DATA_TYPE_INT16: "int16", T.DML_TENSOR_DATA_TYPE_INT8: "int8",
    T.DML_TENSOR_DATA_TYPE_FLOAT64: "float64", T.DML_TENSOR_DATA_TYPE_UINT64: "uint64",
    T.DML_TENSOR_DATA_TYPE_INT64: "int64",
}
_FROM_NUMPY = {name: T(value) for value, name in NUMPY_DTYPE.items()}


def DMLCalcBufferTensorSize(
    dataType: int,
    dimensionCount: int,
    sizes: Sequence[int],
    strides: Sequence[int] | None = None,
) -> int:
    """The minimum TotalTensorSizeInBytes of a buffer tensor, exactly as DirectML's C helper.

    Packed: prod(sizes) * element size; strided: (sum((size-1)*stride) + 1) * element size;
    then rounded up to a multiple of 4.
    """
    bits = ELEMENT_SIZE_BITS[int(dataType)]
    sizes = list(sizes)[:dimensionCount]
    if strides is None:
        elements = 1
        for s in sizes:
            elements *= int(s)
    else:
        elements = 1 + sum((int(s) - 1) * int(st) for s, st in zip(sizes, list(strides)))
    size_bytes = (elements * bits + 7) // 8
    return (size_bytes + 3) & ~3


def tensor_desc(
    shape_or_array: Any,
    data_type: int | None = None,
    strides: Sequence[int] | None = None,
    flags: int = DML_TENSOR_FLAGS.DML_TENSOR_FLAG_NONE,
) -> DML_TENSOR_DESC:
    """A buffer tensor desc from a shape and data type, or from a numpy array's shape and dtype."""
    if hasattr(shape_or_array, "dtype") and hasattr(shape_or_array, "shape"):
        shape = tuple(int(s) for s in shape_or_array.shape) or (1,)
        if data_type is None:
            name = str(shape_or_array.dtype)
            if name not in _FROM_NUMPY:
                raise TypeError(f"numpy dtype {name} has no DML_TENSOR_DATA_TYPE")
            data_type = _FROM_NUMPY[name]
    else:
        shape = tuple(int(s) for s in shape_or_array)
    if data_type is None:
        raise TypeError("tensor_desc needs data_type when given a shape")
    return DML_TENSOR_DESC(Desc=DML_BUFFER_TENSOR_DESC(
        DataType=DML_TENSOR_DATA_TYPE(data_type), Flags=DML_TENSOR_FLAGS(flags), Sizes=shape,
        Strides=None if strides is None else tuple(strides)))


def data_type_of_numpy(dtype: Any) -> DML_TENSOR_DATA_TYPE:
    """The DML data type of a numpy dtype (KeyError if none)."""
    return _FROM_NUMPY[str(dtype)]
