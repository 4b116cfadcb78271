"""Test helpers: strided buffers with sentinels between elements, bit views, desc builders."""

from __future__ import annotations

import numpy as np

from descriptors import (
    DML_BUFFER_TENSOR_DESC,
    DML_TENSOR_DATA_TYPE,
    DML_TENSOR_DESC,
    NUMPY_DTYPE,
    DMLCalcBufferTensorSize,
)

T = DML_TENSOR_DATA_TYPE
SENTINEL = 0xA5

# The eight data types of SLICE1/TOP_K1 from 2_1 on.
EIGHT = [T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16,
         T.DML_TENSOR_DATA_TYPE_INT32, T.DML_TENSOR_DATA_TYPE_INT16, T.DML_TENSOR_DATA_TYPE_INT8,
         T.DML_TENSOR_DATA_TYPE_UINT32, T.DML_TENSOR_DATA_TYPE_UINT16,
         T.DML_TENSOR_DATA_TYPE_UINT8]


def np_dtype(data_type: int) -> np.dtype:
    return np.dtype(NUMPY_DTYPE[data_type])


def bits(a: np.ndarray) -> np.ndarray:
    """An array's elements as unsigned integers of the same width (bit-exact comparison)."""
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")


def desc(data_type: int, sizes, strides=None, total=None, flags=0, alignment=0) -> DML_TENSOR_DESC:
    return DML_TENSOR_DESC(Desc=DML_BUFFER_TENSOR_DESC(
        DataType=data_type, Flags=flags, Sizes=tuple(sizes),
        Strides=None if strides is None else tuple(strides), TotalTensorSizeInBytes=total,
        GuaranteedBaseOffsetAlignment=alignment))


def packed(sizes) -> tuple[int, ...]:
    return tuple(int(np.prod(sizes[i + 1:], dtype=np.int64)) for i in range(len(sizes)))


def logical(raw: np.ndarray, dtype, sizes, strides=None) -> np.ndarray:
    """The elements a tensor addresses in a byte buffer, shaped by Sizes (a view)."""
    dt = np.dtype(dtype)
    strides = packed(sizes) if strides is None else strides
    typed = raw[: raw.size // dt.itemsize * dt.itemsize].view(dt)
    # as_strided does not check bounds: a view past the buffer would read or write other memory
    assert 0 in sizes or sum((n - 1) * s for n, s in zip(sizes, strides)) < typed.size, \
        "view past the buffer"
    return np.lib.stride_tricks.as_strided(typed, shape=tuple(sizes),
                                           strides=[s * dt.itemsize for s in strides])


def addressed_mask(nbytes: int, element_size: int, sizes, strides=None) -> np.ndarray:
    """True for every byte that belongs to an element the tensor addresses."""
    mask = np.zeros(nbytes, dtype=np.uint8)
    ut = np.dtype(f"u{element_size}")
    logical(mask, ut, sizes, strides)[...] = np.iinfo(ut).max
    return mask != 0


def layout(rng, sizes, broadcast_ok: bool):
    """None (packed), padded strides, or (inputs only) zero strides on some dimensions."""
    r = rng.random()
    if r < 0.35:
        return None
    acc, strides = 1, []
    for s in reversed(sizes):
        if broadcast_ok and rng.random() < 0.3:
            strides.append(0)
        else:
            strides.append(acc)
            acc *= s + int(rng.integers(0, 2))
    return list(reversed(strides))


def strided_buffer(rng: np.random.Generator, data_type: int, sizes, strides=None,
                   fill: int | None = None) -> np.ndarray:
    """A buffer of DMLCalcBufferTensorSize bytes: random bytes, or ``fill`` everywhere."""
    n = DMLCalcBufferTensorSize(data_type, len(sizes), sizes, strides)
    if fill is None:
        return rng.integers(0, 256, size=n, dtype=np.uint8)
    return np.full(n, fill, dtype=np.uint8)


def check_level_case(op, level: str, wanted, operator_name: str) -> None:
    """One cell of an accept/reject matrix: accepted (wanted None) at ``level``, or rejected with
    E_INVALIDARG and a message containing the operator's name and every string of ``wanted``."""
    import pytest

    from emulator import E_INVALIDARG, DMLCreateDevice1, DMLError

    device = DMLCreateDevice1(feature_level=level)
    if wanted is None:
        assert device.CreateOperator(op) is not None
        return
    with pytest.raises(DMLError) as info:
        device.CreateOperator(op)
    message = str(info.value)
    assert info.value.hresult == E_INVALIDARG and operator_name in message, message
    for text in wanted:
        assert text in message, (text, message)


def initialize_and_dispatch(device, compiled, table) -> None:
    """What an application does to run ``compiled`` once: record its initializer (with an empty
    binding table of the size it asks for), then its dispatch with ``table``; close; execute."""
    from descriptors import DML_BINDING_TABLE_DESC
    from emulator import CommandList, CommandQueue

    init = device.CreateOperatorInitializer([compiled])
    init_table = device.CreateBindingTable(DML_BINDING_TABLE_DESC(
        Dispatchable=init, SizeInDescriptors=init.GetBindingProperties().RequiredDescriptorCount))
    recorder, commands = device.CreateCommandRecorder(), CommandList()
    recorder.RecordDispatch(commands, init, init_table)
    recorder.RecordDispatch(commands, compiled, table)
    commands.Close()
    CommandQueue().ExecuteCommandLists([commands])
