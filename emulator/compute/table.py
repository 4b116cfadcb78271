"""The compute rows on the matrix-multiply core (``matmul.MatmulPlan``): GEMM and CONVOLUTION
(``conv.ConvPlan``) now; the integer convolutions, attention and the recurrent operators join as
rows of this table.

GEMM (every level): ``Output = FusedActivation(Alpha * TransA(A) x TransB(B) + Beta * C)`` for
each of the BatchCount x ChannelCount matrices (2 to 4 dimensions from 4_0, 4 before), FLOAT32 or
FLOAT16 (computed in FLOAT32, rounded once on store). C and the output share their Sizes; C, A
and B broadcast only through their strides.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import numpy as np

from descriptors import DML_CONVOLUTION_DIRECTION, DML_CONVOLUTION_MODE, DML_MATRIX_TRANSFORM
from descriptors import DML_OPERATOR_TYPE as OP
from descriptors import DML_TENSOR_DATA_TYPE as T

from ..activations import BY_OPERATOR as ACTIVATIONS
from ..activations import params_of
from ..family import Row
from ..ops.common import ieee_reference
from ..ops.softmax import axes_function
from .conv import ConvPlan
from .matmul import MatmulPlan

TRANSPOSE = DML_MATRIX_TRANSFORM.DML_MATRIX_TRANSFORM_TRANSPOSE
FLOATS = (T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16)
ALL3 = (slice(None),) * 3  # every batch item, group and channel


def fused_reference(fused: Any, y: np.ndarray) -> np.ndarray:
    """A validated FusedActivation (or None) applied to float64 values: the activation's
    formula, or SOFTMAX over the last axis / SOFTMAX1 over its Axes."""
    if fused is None:
        return y
    if fused.operator == OP.DML_OPERATOR_ACTIVATION_SOFTMAX:
        return axes_function(y, (y.ndim - 1,), 0)
    if fused.operator == OP.DML_OPERATOR_ACTIVATION_SOFTMAX1:
        return axes_function(y, tuple(fused.values.Axes), 0)
    act = ACTIVATIONS[fused.operator]
    return act.reference(y, *params_of(act, fused.values)[: len(act.params)])


def gemm_plan(v: SimpleNamespace) -> MatmulPlan:
    return MatmulPlan.build("DML_OPERATOR_GEMM", v.ATensor, v.BTensor, v.OutputTensor,
                            v.TransA == TRANSPOSE, v.TransB == TRANSPOSE, v.Alpha, v.CTensor,
                            v.Beta, v.FusedActivation)


@ieee_reference
def gemm_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                   ) -> dict[str, np.ndarray]:
    """The page's formula in float64, rounded once to the output's type."""
    a = inputs["ATensor"].astype(np.float64)
    b = inputs["BTensor"].astype(np.float64)
    if v.TransA == TRANSPOSE:
        a = np.swapaxes(a, -1, -2)
    if v.TransB == TRANSPOSE:
        b = np.swapaxes(b, -1, -2)
    y = np.float64(v.Alpha) * np.matmul(a, b)
    c = inputs.get("CTensor")
    if c is not None:
        y = y + np.float64(v.Beta) * c.astype(np.float64)
    y = fused_reference(v.FusedActivation, y)
    return {"OutputTensor": y.astype(inputs["ATensor"].dtype)}


def convolve(x: np.ndarray, w: np.ndarray, v: SimpleNamespace) -> np.ndarray:
    """The convolution of float64 ``x`` {N, C, spatial..} by ``w`` as the page defines it, before
    the bias: FORWARD slides the filter over the padded input (cross-correlation; CONVOLUTION
    flips the filter first); BACKWARD is the transposed convolution, written as its own
    definition: every input element scatters input x filter into the full output
    ((In - 1) * Stride + (Kernel - 1) * Dilation + 1 + OutputPadding along each dimension), from
    which StartPadding and EndPadding are cut."""
    g, dims = v.GroupCount, v.DimensionCount
    if v.Mode == DML_CONVOLUTION_MODE.DML_CONVOLUTION_MODE_CONVOLUTION:
        w = np.flip(w, tuple(range(2, 2 + dims)))
    n, c = x.shape[:2]
    kernel = w.shape[2:]
    taps = list(np.ndindex(*kernel))
    if v.Direction == DML_CONVOLUTION_DIRECTION.DML_CONVOLUTION_DIRECTION_FORWARD:
        cog = w.shape[0] // g
        pad = [(0, 0), (0, 0)] + [(v.StartPadding[d], v.EndPadding[d]) for d in range(dims)]
        xp = np.pad(x, pad)
        out_sp = [(xp.shape[2 + d] - ((kernel[d] - 1) * v.Dilations[d] + 1)) // v.Strides[d] + 1
                  for d in range(dims)]
        y = np.zeros((n, w.shape[0], *out_sp))
        xg = xp.reshape(n, g, c // g, *xp.shape[2:])
        wg = w.reshape(g, cog, c // g, *kernel)
        for t in taps:
            window = xg[ALL3 + tuple(slice(t[d] * v.Dilations[d],
                                           t[d] * v.Dilations[d] + (out_sp[d] - 1)
                                           * v.Strides[d] + 1, v.Strides[d])
                                     for d in range(dims))]
            y += np.einsum("ngi...,goi->ngo...", window, wg[ALL3 + t]).reshape(y.shape)
        return y
    cog = w.shape[1]
    full = [(x.shape[2 + d] - 1) * v.Strides[d] + (kernel[d] - 1) * v.Dilations[d] + 1
            + v.OutputPadding[d] for d in range(dims)]
    y = np.zeros((n, g, cog, *full))
    xg = x.reshape(n, g, c // g, *x.shape[2:])
    wg = w.reshape(g, c // g, cog, *kernel)
    for t in taps:
        contribution = np.einsum("ngi...,gio->ngo...", xg, wg[ALL3 + t])
        index = tuple(slice(t[d] * v.Dilations[d],
                            t[d] * v.Dilations[d] + (x.shape[2 + d] - 1) * v.Strides[d] + 1,
                            v.Strides[d]) for d in range(dims))
        y[ALL3 + index] += contribution
    y = y.reshape(n, g * cog, *full)
    return y[ALL3[:2] + tuple(slice(v.StartPadding[d], full[d] - v.EndPadding[d])
                              for d in range(dims))]


@ieee_reference
def convolution_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                          ) -> dict[str, np.ndarray]:
    """The page's steps in float64: the convolution, the bias broadcast over each output channel
    and added, the fused activation; rounded once."""
    x = inputs["InputTensor"]
    y = convolve(x.astype(np.float64), inputs["FilterTensor"].astype(np.float64), v)
    bias = inputs.get("BiasTensor")
    if bias is not None:
        y = y + bias.astype(np.float64)
    y = fused_reference(v.FusedActivation, y)
    return {"OutputTensor": y.astype(x.dtype)}


ROWS = (
    Row(OP.DML_OPERATOR_GEMM, gemm_plan, gemm_reference, FLOATS),
    Row(OP.DML_OPERATOR_CONVOLUTION, ConvPlan.build, convolution_reference, FLOATS),
)
