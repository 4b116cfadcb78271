"""The softmax family: DML_OPERATOR_ACTIVATION_SOFTMAX, _LOG_SOFTMAX and _HARDMAX (the version-0
descs: along the last dimension of an input of effective rank at most 2, its DimensionCount
without leading dimensions of size 1) and their version-1 descs SOFTMAX1, LOG_SOFTMAX1 and
HARDMAX1 (5_1: over the set of ``Axes``, any rank 1-8). Both run on the reduction layout
(groups x elements, ``emulator/reduction/layout.py``): version 0 reduces the last axis.

    SOFTMAX(x_i) = exp(x_i) / sum_j exp(x_j);  LOG_SOFTMAX = ln of that;
    HARDMAX(x_i) = 1 for the first largest element of the group, else 0,

j over the elements sharing every coordinate outside the reduced axes. "First" is in the logical
row-major order of the reduced axes (the HARDMAX1 page: the arg-max index within the reduced
axes, increasing direction).

Computed in float64 with the group maximum subtracted (the same value for finite groups).
**Decisions** (the formula where it is defined, IEEE arithmetic where it is not): a NaN in a group
makes the whole SOFTMAX/LOG_SOFTMAX group NaN, and is the HARDMAX maximum (NaN ranks highest, as in
TOP_K); a +inf makes the group NaN (sum(exp) is +inf and exp(+inf)/+inf is NaN; ONNX Runtime gives
the same row); a group of only -inf is NaN (0/0); a -inf beside finite values gives 0 (LOG_SOFTMAX
-inf). Axes are a set (any order, repeats ignored).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace

import numpy as np

from descriptors import DML_OPERATOR_TYPE

from ..plan import SoftmaxPlan
from ..validation import Context
from .activation import FLOATS, check_same_tensor
from .common import ieee_reference

OP = DML_OPERATOR_TYPE
MODES = {OP.DML_OPERATOR_ACTIVATION_SOFTMAX: 0, OP.DML_OPERATOR_ACTIVATION_LOG_SOFTMAX: 1,
         OP.DML_OPERATOR_ACTIVATION_HARDMAX: 2, OP.DML_OPERATOR_ACTIVATION_SOFTMAX1: 0,
         OP.DML_OPERATOR_ACTIVATION_LOG_SOFTMAX1: 1, OP.DML_OPERATOR_ACTIVATION_HARDMAX1: 2}
# The version-1 descs (an Axes list; their rules are the support table's softmax1_axes).
AXES_LIST = frozenset({OP.DML_OPERATOR_ACTIVATION_SOFTMAX1, OP.DML_OPERATOR_ACTIVATION_LOG_SOFTMAX1,
                       OP.DML_OPERATOR_ACTIVATION_HARDMAX1})
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


def axes_function(x: np.ndarray, axes: Sequence[int], mode: int) -> np.ndarray:
    """The formulas over a set of axes: those axes moved last (in increasing order) and
    flattened into one row, so "first" is their row-major order."""
    reduced = sorted(set(axes))
    kept = [d for d in range(x.ndim) if d not in reduced]
    t = np.transpose(x, kept + reduced)
    y = row_function(t.reshape((*t.shape[:len(kept)], -1)), mode).reshape(t.shape)
    return np.transpose(y, np.argsort(kept + reduced))


def reduced_axes(op: DML_OPERATOR_TYPE, v: SimpleNamespace) -> tuple[int, ...]:
    """The axes an operator reduces: its Axes (version 1), else the last one."""
    return tuple(v.Axes) if op in AXES_LIST else (v.InputTensor.dim_count - 1,)


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
        return SoftmaxPlan.build(i.element_size, i.sizes, reduced_axes(op, v), i.strides,
                                 v.OutputTensor.strides, mode)

    @ieee_reference
    def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        x = inputs["InputTensor"]
        y = axes_function(x.astype(np.float64), reduced_axes(op, v), mode)
        return {"OutputTensor": y.astype(x.dtype)}

    rules = {} if op in AXES_LIST else {"validate": validate}
    return SimpleNamespace(
        __name__=f"{__name__}[{op.name}]", __doc__=__doc__,
        KERNEL_TYPES=FLOATS, plan=plan, reference=reference, **rules)
