"""DML_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY: A {.., M, K} x B {.., K, N} -> Output {.., M, N},
each INT8 or UINT8, with FLOAT32 scales and optional zero points (0 when absent):

    acc = sum_k (A[m, k] - AZeroPoint) * (B[k, n] - BZeroPoint)            (exact, integers)
    Output[m, n] = saturate(round_half_even(acc * ((AScale / OutputScale) * BScale))
                            + OutputZeroPoint)                               (float64)

**Decision** (directml.md §5): one rounding, evaluated in float64 from the float32 scales in the
order written (the division once per row); a NaN result gives OutputZeroPoint.

Rules: A, B and Output share a DimensionCount and their batch sizes; B's K equals A's; Output is
{.., M, N}; each zero point has its tensor's DataType; all scale and zero-point tensors share a
DimensionCount; AScale, AZeroPoint, OutputScale and OutputZeroPoint are per-tensor {1, .., 1} or
per-row {1, .., M, 1}; BScale and BZeroPoint per-tensor or per-column {1, .., 1, N}. 4-D only
before 4_0; from 4_0 A/B/Output 2 to 4 dimensions and scales/zero points 1 to 4, shapes right-
aligned.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace

import numpy as np

from ..plan import QLMMPlan
from ..validation import Context, Tensor, fmt, same
from .common import FLOAT32, INT8, UINT8

MATRICES = ("ATensor", "BTensor", "OutputTensor")
ZERO_POINTS = ("AZeroPointTensor", "BZeroPointTensor", "OutputZeroPointTensor")
SCALES = ("AScaleTensor", "BScaleTensor", "OutputScaleTensor")
# Each scale or zero point: its matrix, and whether it may vary along rows (M) or columns (N).
ROLE = {"AScaleTensor": "row", "AZeroPointTensor": "row", "OutputScaleTensor": "row",
        "OutputZeroPointTensor": "row", "BScaleTensor": "column", "BZeroPointTensor": "column"}
I8 = (INT8, UINT8)


KERNEL_TYPES = (*I8, FLOAT32)  # INT8/UINT8 matrices and zero points, FLOAT32 scales


def validate(ctx: Context, v: SimpleNamespace) -> None:
    a, b, o = v.ATensor, v.BTensor, v.OutputTensor
    same(ctx, "ATensor", "BTensor", "DimensionCount", a.dim_count, b.dim_count)
    same(ctx, "ATensor", "OutputTensor", "DimensionCount", a.dim_count, o.dim_count)
    ctx.require(a.dim_count >= 2, "ATensor.DimensionCount", a.dim_count,
                "a matrix has at least 2 dimensions")
    m, k = a.sizes[-2:]
    ctx.require(b.sizes[-2] == k, "BTensor.Sizes", b.sizes,
                f"B's K (Sizes[{b.dim_count - 2}]) must equal A's K = {k}")
    n = b.sizes[-1]
    expected = (*a.sizes[:-2], m, n)
    ctx.require(b.sizes[:-2] == a.sizes[:-2], "BTensor.Sizes", b.sizes,
                f"the batch sizes must equal ATensor's {fmt(a.sizes[:-2])}")
    ctx.require(o.sizes == expected, "OutputTensor.Sizes", o.sizes,
                f"must be {{.., M, N}} = {fmt(expected)}")
    for zp, matrix in zip(ZERO_POINTS, MATRICES):
        t = getattr(v, zp)
        if t is not None:
            same(ctx, matrix, zp, "DataType", getattr(v, matrix).data_type, t.data_type)
    present = [(name, getattr(v, name)) for name in (*SCALES, *ZERO_POINTS)
               if getattr(v, name) is not None]
    first_name, first = present[0]
    for name, t in present[1:]:
        same(ctx, first_name, name, "DimensionCount", first.dim_count, t.dim_count)
    for name, t in present:
        check_quantization_shape(ctx, name, t, m, n)


def check_quantization_shape(ctx: Context, name: str, t: Tensor, m: int, n: int) -> None:
    """Per-tensor {1, .., 1}; per-row {1, .., M, 1}; per-column {1, .., 1, N} (right-aligned)."""
    ones = (1,) * t.dim_count
    if t.sizes == ones:
        return
    if ROLE[name] == "row":
        allowed = (*ones[:-2], m, 1) if t.dim_count >= 2 else None
        what = f"per-tensor {fmt(ones)} or per-row {{.., M, 1}} with M = {m}"
    else:
        allowed = (*ones[:-1], n)
        what = f"per-tensor {fmt(ones)} or per-column {{.., 1, N}} with N = {n}"
    ctx.require(t.sizes == allowed, f"{name}.Sizes", t.sizes, f"must be {what}")


def plan(v: SimpleNamespace) -> QLMMPlan:
    return QLMMPlan.build(v)


def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The formula in NumPy: int64 matmul (exact), then float64, one rounding, saturation."""
    def arr(name: str, default: float = 0) -> np.ndarray:
        x = inputs.get(name)
        if x is None:
            return np.zeros((1, 1), np.int64)
        rank = v.ATensor.dim_count
        return x.reshape((1,) * (rank - x.ndim) + x.shape)  # right-aligned

    a = inputs["ATensor"].astype(np.int64) - arr("AZeroPointTensor").astype(np.int64)
    b = inputs["BTensor"].astype(np.int64) - arr("BZeroPointTensor").astype(np.int64)
    acc = np.matmul(a, b)
    out_dtype = np.int8 if v.OutputTensor.data_type == INT8 else np.uint8
    info = np.iinfo(out_dtype)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ratio = arr("AScaleTensor").astype(np.float64) / arr("OutputScaleTensor").astype(np.float64)
        real = acc.astype(np.float64) * (ratio * arr("BScaleTensor").astype(np.float64))
        q = np.rint(np.nan_to_num(real, nan=0.0, posinf=np.inf, neginf=-np.inf))
        q = q + arr("OutputZeroPointTensor").astype(np.float64)
        q = np.clip(q, info.min, info.max)
    return {"OutputTensor": q.astype(out_dtype)}
