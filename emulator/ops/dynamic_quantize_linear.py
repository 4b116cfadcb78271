"""DML_OPERATOR_DYNAMIC_QUANTIZE_LINEAR: quantize a float tensor with a scale and zero point
computed from its own range, and write all three.

The page's formula, with the decisions where it is silent (docs/decisions.md), which are ONNX's
DynamicQuantizeLinear (the operator ONNX Runtime's DirectML provider maps onto this one):
- the range is [min(InputMin, 0), max(InputMax, 0)], NaN elements left out (an all-NaN tensor's
  range is [0, 0]);
- OutputScale = (InputMax - InputMin) / (Max - Min), computed in float64 and rounded once to
  the FLOAT32 output; 1 where the range is empty (an all-zero input), not the formula's 0/0;
- OutputZeroPoint = Min - InputMin / OutputScale, rounded half to even and clamped to
  [Min, Max] (the output's type), with the rounded FLOAT32 scale;
- OutputTensor = clamp(round(x / OutputScale) + OutputZeroPoint, Min, Max) with that scale and
  zero point: ELEMENT_WISE_QUANTIZE_LINEAR's kernel, so x / OutputScale is a float32 division,
  halves round to even and NaN gives 0 (ONNX's test vectors need the float32 quotient);
- an infinite range (±inf elements) gives an infinite scale, whose zero point (inf / inf) is 0.
(Min, Max) is (0, 255) for UINT8 and (-128, 127) for INT8, as the page says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from descriptors import DML_OPERATOR_TYPE
from descriptors import DML_TENSOR_DATA_TYPE as T

from ..elementwise import module as row_module
from ..elementwise.plan import ElementWisePlan
from ..validation import Tensor

KERNEL_TYPES = (T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16,
                T.DML_TENSOR_DATA_TYPE_INT8, T.DML_TENSOR_DATA_TYPE_UINT8)
RANGE = {T.DML_TENSOR_DATA_TYPE_UINT8: (0, 255), T.DML_TENSOR_DATA_TYPE_INT8: (-128, 127)}


def parameters(lo: float, hi: float, qtype: T) -> tuple[np.float32, int]:
    """The scale (FLOAT32) and zero point for the input range [lo, hi] (NaN-free, holding 0)."""
    qmin, qmax = RANGE[qtype]
    scale = np.float32(1.0) if hi == lo else np.float32((hi - lo) / (qmax - qmin))
    z = qmin - lo / np.float64(scale)
    return scale, 0 if z != z else int(np.rint(min(max(z, qmin), qmax)))


def input_range(x: np.ndarray) -> tuple[float, float]:
    """[min(min(x), 0), max(max(x), 0)] in float64, NaN left out."""
    lo = float(np.fmin.reduce(x, axis=None))
    hi = float(np.fmax.reduce(x, axis=None))
    return (min(lo, 0.0) if lo == lo else 0.0), (max(hi, 0.0) if hi == hi else 0.0)


@dataclass(frozen=True, eq=False)
class DynamicQuantizePlan:
    input: Tensor
    output_type: T
    quantize: ElementWisePlan  # QUANTIZE_LINEAR with a zero-stride scale and zero point

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        lo, hi = input_range(self.input.view(regions["InputTensor"]))
        scale, zp = parameters(lo, hi, self.output_type)
        scale_bytes = np.array([scale], np.float32).view(np.uint8)
        zp_bytes = np.array([zp], np.int64).astype(
            np.int8 if self.output_type == T.DML_TENSOR_DATA_TYPE_INT8 else np.uint8).view(
            np.uint8)
        self.quantize.run({"InputTensor": regions["InputTensor"], "ScaleTensor": scale_bytes,
                           "ZeroPointTensor": zp_bytes, "OutputTensor": regions["OutputTensor"]})
        # 1-element tensors: their element is at offset 0.
        regions["OutputScaleTensor"][:4] = scale_bytes
        regions["OutputZeroPointTensor"][:1] = zp_bytes


def plan(v: SimpleNamespace) -> DynamicQuantizePlan:
    x, y = v.InputTensor, v.OutputTensor
    zeros = (0,) * len(x.sizes)
    fake = SimpleNamespace(
        InputTensor=x, OutputTensor=y,
        ScaleTensor=SimpleNamespace(data_type=T.DML_TENSOR_DATA_TYPE_FLOAT32, strides=zeros),
        ZeroPointTensor=SimpleNamespace(data_type=y.data_type, strides=zeros))
    row = row_module(DML_OPERATOR_TYPE.DML_OPERATOR_ELEMENT_WISE_QUANTIZE_LINEAR)
    return DynamicQuantizePlan(x, y.data_type, row.plan(fake))


def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The formula as decided above, element by element in float64."""
    x = inputs["InputTensor"].astype(np.float64)
    qtype = v.OutputTensor.data_type
    qmin, qmax = RANGE[qtype]
    finite = x[~np.isnan(x)]
    lo = min(float(finite.min()), 0.0) if finite.size else 0.0
    hi = max(float(finite.max()), 0.0) if finite.size else 0.0
    scale = np.float32(1.0) if hi == lo else np.float32((hi - lo) / (qmax - qmin))
    zp = np.clip(np.rint(qmin - lo / np.float64(scale)), qmin, qmax)
    zp = 0.0 if np.isnan(zp) else zp  # an infinite range: inf / inf
    with np.errstate(all="ignore"):
        q = np.rint((inputs["InputTensor"].astype(np.float32) / scale).astype(np.float64)) + zp
    dtype = np.int8 if qtype == T.DML_TENSOR_DATA_TYPE_INT8 else np.uint8
    y = np.where(np.isnan(q), 0, np.clip(q, qmin, qmax)).astype(dtype)
    ones = (1,) * x.ndim
    return {"OutputTensor": y, "OutputScaleTensor": np.full(ones, scale, np.float32),
            "OutputZeroPointTensor": np.full(ones, zp, dtype)}
