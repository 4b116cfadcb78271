"""D3D12 stand-ins: ``Buffer`` (a buffer resource), and how any bound object becomes bytes.

A ``Buffer`` is zero-filled host memory. A writable, C-contiguous numpy array is accepted wherever
a buffer is: its bytes are the resource.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .cvalues import show, to_int
from .errors import E_OUTOFMEMORY, DMLError, invalid_arg

# Host allocations are aligned to this many bytes (DirectML's largest binding alignment).
_ALIGN = 256


class Buffer:
    """An emulated buffer resource of ``size_in_bytes`` bytes, zero-filled on creation."""

    def __init__(self, size_in_bytes: int):
        size = to_int(size_in_bytes, "Buffer: size_in_bytes", "UINT64")
        try:
            raw = np.zeros(size + _ALIGN, dtype=np.uint8)
        except (MemoryError, ValueError):
            raise DMLError(E_OUTOFMEMORY, f"Buffer: {size} bytes cannot be allocated on this "
                           "machine") from None
        start = (-raw.ctypes.data) % _ALIGN
        self._bytes = raw[start:start + size]

    @classmethod
    def from_array(cls, a: Any) -> Buffer:
        """A new buffer holding a copy of the array's bytes (C order), padded with zeros to a
        multiple of 4 bytes, as every DirectML tensor size is. ``a`` is a numpy array or anything
        numpy makes a numeric array of (bool, integer, float or complex)."""
        try:
            arr = np.ascontiguousarray(a)
        except (TypeError, ValueError, OverflowError) as e:
            raise invalid_arg(f"Buffer.from_array: {show(a)} is not an array of numbers ({e})"
                              ) from None
        if arr.dtype.kind not in "biufc":
            raise invalid_arg(f"Buffer.from_array: a {arr.dtype} array has no numeric bytes to "
                              "copy (pass numbers: bool, integer, float or complex)")
        raw = arr.reshape(-1).view(np.uint8)
        buf = cls((raw.size + 3) & ~3)
        buf._bytes[: raw.size] = raw
        return buf

    @property
    def size_in_bytes(self) -> int:
        return int(self._bytes.size)

    def numpy(self, dtype: Any = None, shape: Any = None, offset: int = 0) -> np.ndarray:
        """A view of the buffer's bytes from ``offset`` as ``dtype`` (default uint8), reshaped
        to ``shape`` (an int or a sequence of ints; default: every whole element after offset)."""
        try:
            dt = np.dtype(np.uint8 if dtype is None else dtype)
        except (TypeError, ValueError, SyntaxError):
            dt = np.dtype(object)
        if dt.hasobject or dt.itemsize == 0 or dt.kind not in "biufcV":
            raise invalid_arg(f"Buffer.numpy: dtype = {show(dtype)} is invalid: must be a numpy "
                              "dtype of numbers (float32, uint8, ...)")
        start = to_int(offset, "Buffer.numpy: offset", "UINT64", 0, self.size_in_bytes,
                       f"must lie in [0, {self.size_in_bytes}] (the buffer's size)")
        data = self._bytes[start:]
        if shape is None:
            return typed_view(data, dt)
        dims = [shape] if not isinstance(shape, (tuple, list)) else list(shape)
        sizes = [to_int(d, f"Buffer.numpy: shape[{i}]", "UINT64") for i, d in enumerate(dims)]
        count = 1
        for s in sizes:
            count *= s
        if count * dt.itemsize > data.size:
            raise invalid_arg(f"Buffer.numpy: shape = {show(tuple(sizes))} of {dt} needs "
                              f"{count * dt.itemsize} bytes; the buffer holds {data.size} from "
                              f"offset {start}")
        return data[: count * dt.itemsize].view(dt).reshape(sizes)

    def __repr__(self) -> str:
        return f"Buffer({self.size_in_bytes})"


def scratch(shape: tuple[int, ...], dtype: Any, operator: str, what: str) -> np.ndarray:
    """Scratch memory for a dispatch, taken before anything is written: when the process has
    none left, E_OUTOFMEMORY (naming the operator and what the memory was for) and no buffer
    changed."""
    try:
        return np.empty(shape, dtype)
    except MemoryError:
        size = math.prod(shape) * np.dtype(dtype).itemsize
        raise DMLError(E_OUTOFMEMORY, f"{operator}: no memory for {size} bytes of scratch "
                       f"({what})") from None


def typed_view(data: np.ndarray, dtype: Any) -> np.ndarray:
    """The whole elements of a 1-D uint8 array viewed as ``dtype`` (no copy; a tail shorter than
    one element is left out)."""
    dt = np.dtype(dtype)
    return data[: data.size // dt.itemsize * dt.itemsize].view(dt)


def resource_bytes(obj: Any, where: str) -> np.ndarray:
    """The whole resource as a 1-D uint8 array that aliases it (no copy)."""
    if isinstance(obj, Buffer):
        return obj._bytes
    if isinstance(obj, np.ndarray):
        arr = obj.view(np.ndarray)  # a subclass (np.matrix, a masked array): its plain data
        if arr.dtype.hasobject:
            raise invalid_arg(f"{where}: a numpy array of Python objects ({arr.dtype}) has no "
                              "bytes to use as a buffer")
        if not arr.flags.c_contiguous or not arr.flags.writeable:
            raise invalid_arg(f"{where}: a numpy array used as a buffer must be writable and "
                              "C-contiguous")
        return arr.reshape(-1).view(np.uint8)
    raise invalid_arg(f"{where}: Buffer = {type(obj).__name__} is not a buffer resource "
                      "(use emulator.Buffer or a writable C-contiguous numpy array)")


def address(region: np.ndarray) -> int:
    return int(region.__array_interface__["data"][0])
