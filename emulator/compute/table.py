"""The compute rows on the matrix-multiply core (``matmul.MatmulPlan``): GEMM now; the
convolutions, attention and the recurrent operators join as rows of this table.

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

from descriptors import DML_MATRIX_TRANSFORM
from descriptors import DML_OPERATOR_TYPE as OP
from descriptors import DML_TENSOR_DATA_TYPE as T

from ..activations import BY_OPERATOR as ACTIVATIONS
from ..activations import params_of
from ..family import Row
from ..ops.common import ieee_reference
from ..ops.softmax import axes_function
from .matmul import MatmulPlan

TRANSPOSE = DML_MATRIX_TRANSFORM.DML_MATRIX_TRANSFORM_TRANSPOSE
FLOATS = (T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16)


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


ROWS = (
    Row(OP.DML_OPERATOR_GEMM, gemm_plan, gemm_reference, FLOATS),
)
