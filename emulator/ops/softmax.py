"""DML_OPERATOR_ACTIVATION_SOFTMAX, _LOG_SOFTMAX and _HARDMAX (the version-0 descs): along the
last dimension of an input of effective rank at most 2 (its DimensionCount without leading
dimensions of size 1).

    SOFTMAX(x_i) = exp(x_i) / sum_j exp(x_j);  LOG_SOFTMAX = ln of that;
    HARDMAX(x_i) = 1 for the first largest element of the row, else 0.

Computed in float64 with the row maximum subtracted (the same value for finite rows).
**Decisions** (the formula where it is defined, IEEE arithmetic where it is not): a NaN in a row
makes the whole SOFTMAX/LOG_SOFTMAX row NaN, and is the HARDMAX maximum (NaN ranks highest, as in
TOP_K); a +inf makes the row NaN (sum(exp) is +inf and exp(+inf)/+inf is NaN; ONNX Runtime gives
the same row); a row of only -inf is NaN (0/0); a -inf beside finite values gives 0 (LOG_SOFTMAX
-inf).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace

import numpy as np

from descriptors import DML_OPERATOR_TYPE

from ..plan import SoftmaxPlan
from ..validation import Context
from .activation import FLOATS, check_same_tensor
from .common import ieee_reference

OP = DML_OPERATOR_TYPE
MODES = {OP.DML_OPERATOR_ACTIVATION_SOFTMAX: 0, OP.DML_OPERATOR_ACTIVATION_LOG_SOFTMAX: 1,
         OP.DML_OPERATOR_ACTIVATION_HARDMAX: 2}
OPERATORS = tuple(MODES)


def effective_rank(sizes: tuple[int, ...]) -> int:
    lead = 0
    while lead < len(sizes) - 1 and sizes[lead] == 1:
        lead += 1
    return len(sizes) - lead


def row_function(x: np.ndarray, mode: int) -> np.ndarray:
    """The formulas on float64 rows (last axis), with the decisions above."""
    with np.errstate(all="ignore"):
        if mode == 2:
            first = np.argmax(x, axis=-1)  # the first NaN, else the first of the largest
            return (np.arange(x.shape[-1]) == first[..., None]).astype(np.float64)
        m = np.max(x, axis=-1, keepdims=True)  # NaN if the row holds one
        undefined = ~np.isfinite(m)  # NaN, +inf (inf/inf) or all -inf (0/0)
        e = np.exp(x - np.where(undefined, 0, m))
        total = e.sum(axis=-1, keepdims=True)
        y = e / total if mode == 0 else (x - m) - np.log(total)
        return np.where(undefined, np.nan, y)


def module(op: DML_OPERATOR_TYPE) -> SimpleNamespace:
    mode = MODES[op]

    def validate(ctx: Context, v: SimpleNamespace) -> None:
        check_same_tensor(ctx, v)
        r = effective_rank(v.InputTensor.sizes)
        ctx.require(r <= 2, "InputTensor.Sizes", v.InputTensor.sizes,
                    f"the effective rank (dimensions after leading 1s) is {r}; at most 2 is "
                    "supported")

    def plan(v: SimpleNamespace) -> SoftmaxPlan:
        i = v.InputTensor
        return SoftmaxPlan.build(i.element_size, i.sizes, i.strides, v.OutputTensor.strides, mode)

    @ieee_reference
    def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        x = inputs["InputTensor"]
        return {"OutputTensor": row_function(x.astype(np.float64), mode).astype(x.dtype)}

    return SimpleNamespace(
        __name__=f"{__name__}[{op.name}]", __doc__=__doc__,
        KERNEL_TYPES=FLOATS,
        validate=validate, plan=plan, reference=reference)
