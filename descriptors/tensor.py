"""Buffer tensor helpers: ``DMLCalcBufferTensorSize`` (as the C helper) and ``tensor_desc``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

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


def _invalid(message: str) -> Exception:
    from emulator.errors import invalid_arg  # the one error type of the public API

    return invalid_arg(f"DMLCalcBufferTensorSize: {message}")


def _is_uint(value: Any) -> bool:
    return bool(isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
                and 0 <= value <= 0xFFFFFFFF)


def _uints(values: Any, count: int, name: str) -> list[int]:
    """The first ``count`` UINTs of an array, as C reads them."""
    items = list(values) if isinstance(values, (tuple, list)) else \
        values.tolist() if isinstance(values, np.ndarray) and values.ndim == 1 else None
    if items is None or len(items) < count or not all(_is_uint(v) for v in items[:count]):
        raise _invalid(f"{name} must be an array of at least dimensionCount ({count}) UINT values")
    return [int(v) for v in items[:count]]


def DMLCalcBufferTensorSize(
    dataType: int,
    dimensionCount: int,
    sizes: Sequence[int],
    strides: Sequence[int] | None = None,
) -> int:
    """The minimum TotalTensorSizeInBytes of a buffer tensor, exactly as DirectML's C helper.

    Packed: prod(sizes) * element size; strided: (sum((size-1)*stride) + 1) * element size;
    then rounded up to a multiple of 4. Arguments C could not express (an unknown data type, a
    size that is not a UINT, fewer sizes than dimensionCount) are DMLError E_INVALIDARG.
    """
    if not _is_uint(dataType) or int(dataType) not in ELEMENT_SIZE_BITS:
        raise _invalid("dataType must be a DML_TENSOR_DATA_TYPE other than UNKNOWN")
    if not _is_uint(dimensionCount):
        raise _invalid("dimensionCount must be a UINT")
    bits = ELEMENT_SIZE_BITS[int(dataType)]
    count = int(dimensionCount)
    dims = _uints(sizes, count, "sizes")
    if strides is None:
        elements = 1
        for s in dims:
            elements *= s
    else:
        steps = _uints(strides, count, "strides")
        elements = 1 + sum((s - 1) * st for s, st in zip(dims, steps))
    size_bytes = (elements * bits + 7) // 8
    return (size_bytes + 3) & ~3


def tensor_desc(
    shape_or_array: Any,
    data_type: int | None = None,
    strides: Sequence[int] | None = None,
    flags: int = DML_TENSOR_FLAGS.DML_TENSOR_FLAG_NONE,
) -> DML_TENSOR_DESC:
    """A buffer tensor desc from a shape and data type, or from a numpy array's shape and dtype.

    Like every struct, the desc holds what it is given (the device judges it); only a numpy
    dtype with no DML_TENSOR_DATA_TYPE, or no data type at all, is refused here."""
    if isinstance(shape_or_array, np.ndarray) or (
            isinstance(getattr(shape_or_array, "dtype", None), np.dtype)
            and isinstance(getattr(shape_or_array, "shape", None), tuple)):
        shape: Any = tuple(int(s) for s in shape_or_array.shape) or (1,)
        if data_type is None:
            name = str(shape_or_array.dtype)
            if name not in _FROM_NUMPY:
                from emulator.errors import invalid_arg

                raise invalid_arg(f"tensor_desc: numpy dtype {name} has no DML_TENSOR_DATA_TYPE "
                                  "(pass data_type)")
            data_type = _FROM_NUMPY[name]
    else:
        shape = shape_or_array
    if data_type is None:
        from emulator.errors import invalid_arg

        raise invalid_arg("tensor_desc: data_type is required when a shape (not an array) is "
                          "given")
    return DML_TENSOR_DESC(Desc=DML_BUFFER_TENSOR_DESC(
        DataType=_enum_or_raw(DML_TENSOR_DATA_TYPE, data_type),
        Flags=_enum_or_raw(DML_TENSOR_FLAGS, flags), Sizes=shape, Strides=strides))


def _enum_or_raw(enum_type: Any, value: Any) -> Any:
    """The enum member for a valid value; anything else as given, for the device to judge."""
    try:
        return enum_type(value)
    except (TypeError, ValueError):
        return value


def data_type_of_numpy(dtype: Any) -> DML_TENSOR_DATA_TYPE:
    """The DML data type of a numpy dtype (KeyError if none)."""
    return _FROM_NUMPY[str(dtype)]
