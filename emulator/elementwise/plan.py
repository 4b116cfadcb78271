"""The element-wise plan: one for every row, built once at CreateOperator.

All tensors share the output's Sizes (the support tables' "same Sizes" constraints), so one
``collapse`` of every stride set gives the shortest iteration; zero strides (broadcast) and padded
output strides pass through. ``build`` compiles the row's chunk kernel for the tensors' storage
types (FLOAT16 as uint16 bits); ``run`` hands the bound byte ranges to ``kernels/strided.py``'s
parallel driver, which calls it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from descriptors import DML_TENSOR_DATA_TYPE

from ..plan import collapse, int64s
from ..resources import typed_view

T = DML_TENSOR_DATA_TYPE
FLOAT_TYPES = (T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16,
               T.DML_TENSOR_DATA_TYPE_FLOAT64)
INT_TYPES = (T.DML_TENSOR_DATA_TYPE_INT8, T.DML_TENSOR_DATA_TYPE_INT16,
             T.DML_TENSOR_DATA_TYPE_INT32, T.DML_TENSOR_DATA_TYPE_INT64,
             T.DML_TENSOR_DATA_TYPE_UINT8, T.DML_TENSOR_DATA_TYPE_UINT16,
             T.DML_TENSOR_DATA_TYPE_UINT32, T.DML_TENSOR_DATA_TYPE_UINT64)

# Storage type of each data type: the array a kernel sees (FLOAT16 as its bits, which
# kernels/floats.py converts through LLVM's half).
STORAGE: dict[T, str] = {
    T.DML_TENSOR_DATA_TYPE_FLOAT32: "float32", T.DML_TENSOR_DATA_TYPE_FLOAT16: "uint16",
    T.DML_TENSOR_DATA_TYPE_FLOAT64: "float64", T.DML_TENSOR_DATA_TYPE_INT8: "int8",
    T.DML_TENSOR_DATA_TYPE_INT16: "int16", T.DML_TENSOR_DATA_TYPE_INT32: "int32",
    T.DML_TENSOR_DATA_TYPE_INT64: "int64", T.DML_TENSOR_DATA_TYPE_UINT8: "uint8",
    T.DML_TENSOR_DATA_TYPE_UINT16: "uint16", T.DML_TENSOR_DATA_TYPE_UINT32: "uint32",
    T.DML_TENSOR_DATA_TYPE_UINT64: "uint64",
}


_NONE = np.zeros(8, np.uint8)  # the pointer passed for an input an operator does not have


# The bitwise rows' storage: every type as the unsigned integer of its width (its encoding).
BITS: dict[T, str] = {t: f"uint{8 * np.dtype(s).itemsize}" for t, s in STORAGE.items()}


@dataclass(frozen=True, eq=False)
class ElementWisePlan:
    """``output[c] = f(inputs[c] ...)`` for every coordinate c of the output's Sizes."""

    # kernels/strided.py's argument block: the row's chunk kernel for these storage types, the
    # collapsed sizes, x, y, w (zeros where absent) and output strides, p0 … p5, kind and aux
    block: np.ndarray
    inputs: tuple[str, ...]
    output: str
    # 1-element tensors read at dispatch into p0, p1 …: (bind point or None if absent, storage)
    scalars: tuple[tuple[str | None, str], ...] = ()

    @classmethod
    def build(cls, module: str, variant: str,
              inputs: Sequence[tuple[str, T | None, Sequence[int] | None]],
              output: tuple[str, T, Sequence[int], Sequence[int]],
              params: tuple[float, ...], kind: int = 0, aux: int = 0,
              storage_of: Mapping[T, str] = STORAGE,
              scalars: Sequence[tuple[str, T | None]] = (), stream: bool = True,
              ) -> ElementWisePlan:
        """``module``: the row's generated kernel module; ``variant``: which of its chunk kernels;
        ``inputs``: (bind point, data type, strides); ``output``: (bind point, data type, sizes,
        strides); ``storage_of``: the array type of each data type (STORAGE, or BITS for a bitwise
        row); ``scalars``: (bind point, data type or None if absent) of 1-element tensors whose
        values become p0, p1 … at dispatch (an absent one: 0); ``stream``: whether a large
        output may be streamed (``kernels/strided.py``; not for the rows whose function is more
        than an exact operation: they are compute-bound). Compiles (or loads from the disk cache)
        the chunk kernel now."""
        out_name, out_type, sizes, out_strides = output
        none = [0] * len(sizes)  # an absent input: its one zero, everywhere
        c = collapse(sizes, *[none if s is None else s for _, _, s in inputs], out_strides)
        strides = [int64s(s) for s in c[1:]]
        zeros = np.zeros_like(strides[-1])
        strides = strides[:-1] + [zeros] * (3 - len(inputs)) + strides[-1:]
        storage = [storage_of[t] if t is not None else "uint8" for _, t, _ in inputs] + \
            [storage_of[out_type]]
        from ..kernels.strided import chunk_kernel, pack  # (Numba: imported on first use)

        py_func = getattr(importlib.import_module(module), f"chunk_{variant}")
        read = tuple((name, STORAGE[t]) if t is not None else (None, "uint8")
                     for name, t in scalars)
        block = pack(chunk_kernel(py_func, storage), int64s(c[0]), strides, params, kind, aux,
                     np.dtype(storage[-1]).itemsize, stream)
        return cls(block, tuple(n for n, _, _ in inputs), out_name, read)

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        from ..kernels import strided

        arrays = [regions.get(name, _NONE) for name in self.inputs]
        arrays += [_NONE] * (3 - len(arrays)) + [regions[self.output]]
        block = self.block
        if self.scalars:
            block = block.copy()
            params = block[strided.PARAMS:strided.PARAMS + len(self.scalars)].view(np.float64)
            for k, (name, storage) in enumerate(self.scalars):
                params[k] = (float(typed_view(regions[name], storage)[0]) if name is not None
                             else 0.0)
        strided.run(block, *arrays)
