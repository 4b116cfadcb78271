"""The element-wise plan: one for every row, built once at CreateOperator.

All tensors share the output's Sizes (the support tables' "same Sizes" constraints), so one
``collapse`` of every stride set gives the shortest iteration; zero strides (broadcast) and padded
output strides pass through. ``run`` views each binding in its storage type (FLOAT16 as uint16 bits)
and calls the row's generated driver.
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


@dataclass(frozen=True, eq=False)
class ElementWisePlan:
    """``OutputTensor[c] = f(inputs[c] ...)`` for every coordinate c of the output's Sizes."""

    module: str  # the generated kernel module (emulator.elementwise.kernels.<name>)
    entry: str  # run_f, run_i, run_f_sb or run_f_act
    inputs: tuple[str, ...]
    storage: tuple[str, ...]  # numpy storage dtype of each input, then of the output
    sizes: np.ndarray
    strides: tuple[np.ndarray, ...]  # each input's, then the output's (collapsed)
    params: tuple[float, float, float, float]
    kind: int

    @classmethod
    def build(cls, module: str, entry: str, inputs: Sequence[tuple[str, T, Sequence[int]]],
              output: tuple[T, Sequence[int], Sequence[int]],
              params: tuple[float, float, float, float], kind: int = 0) -> ElementWisePlan:
        """``inputs``: (bind point, data type, strides); ``output``: (data type, sizes,
        strides)."""
        out_type, sizes, out_strides = output
        c = collapse(sizes, *[s for _, _, s in inputs], out_strides)
        return cls(module, entry, tuple(n for n, _, _ in inputs),
                   (*(STORAGE[t] for _, t, _ in inputs), STORAGE[out_type]), int64s(c[0]),
                   tuple(int64s(s) for s in c[1:]), params, kind)

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        kernel = getattr(importlib.import_module(self.module), self.entry)
        arrays = [typed_view(regions[name], dt)
                  for name, dt in zip((*self.inputs, "OutputTensor"), self.storage)]
        args: list[object] = []
        for a in arrays:
            args += [a, 0]
        kernel(*args, self.sizes, *self.strides, *self.params, self.kind)
