"""The elementwise activation operators (DML_ACTIVATION_*_OPERATOR_DESC), generated from the one
activation table (``emulator.activations``), and the validation of fused activations.

Standalone rules: InputTensor and OutputTensor share DataType, DimensionCount and Sizes;
FLOAT32/FLOAT16; 4-D at 1_0, 4-5-D from 2_0, 1-8-D from 3_0 (from the operator's introduction);
SOFTPLUS needs Steepness >= 1 (before 6_4). In-place execution is allowed.

Fused (the host's ``FusedActivation``): LINEAR, SIGMOID, HARD_SIGMOID, TANH, SCALED_TANH, RELU,
LEAKY_RELU, THRESHOLDED_RELU, ELU, CELU (from 3_0), SCALED_ELU, SOFTPLUS, PARAMETRIC_SOFTPLUS,
SOFTSIGN, IDENTITY, SHRINK (from 2_0), GELU (from 5_1); its InputTensor and OutputTensor are null.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import numpy as np

from descriptors import DML_FEATURE_LEVEL, DML_OPERATOR_TYPE

from ..activations import BY_OPERATOR, Activation, params_of
from ..fieldtypes import FusedActivation
from ..plan import UnaryPlan
from ..validation import Band, Context, same
from .common import DIMS_1_8, DIMS_4, DIMS_4_5, FL, FLOAT16, FLOAT32, ieee_reference

FLOATS = (FLOAT32, FLOAT16)


def bands(introduced: DML_FEATURE_LEVEL, tensors: tuple[str, ...]) -> tuple[Band, ...]:
    """The dimension-count bands every activation operator shares, from its introduction on."""
    table = ((FL.DML_FEATURE_LEVEL_1_0, DIMS_4), (FL.DML_FEATURE_LEVEL_2_0, DIMS_4_5),
             (FL.DML_FEATURE_LEVEL_3_0, DIMS_1_8))
    chosen = [(lv, dims) for lv, dims in table if lv >= introduced]
    if not chosen or chosen[0][0] != introduced:  # introduced between rows: the row in force
        in_force = [dims for lv, dims in table if lv <= introduced]
        chosen.insert(0, (introduced, in_force[-1]))
    return tuple(Band(lv, dict.fromkeys(tensors, (dims, FLOATS))) for lv, dims in chosen)


def check_same_tensor(ctx: Context, v: SimpleNamespace, other: str = "OutputTensor") -> None:
    i, o = v.InputTensor, getattr(v, other)
    same(ctx, "InputTensor", other, "DataType", i.data_type, o.data_type)
    same(ctx, "InputTensor", other, "DimensionCount", i.dim_count, o.dim_count)
    same(ctx, "InputTensor", other, "Sizes", i.sizes, o.sizes)


def check_attributes(ctx: Context, act: Activation, values: Any) -> None:
    """Rules on an activation's attributes, standalone or fused."""
    if act.operator == DML_OPERATOR_TYPE.DML_OPERATOR_ACTIVATION_SOFTPLUS:
        s = values.Steepness
        if ctx.level < FL.DML_FEATURE_LEVEL_6_4 and not s >= 1.0:  # NaN fails too
            ctx.fail("Steepness", s, "must be at least 1 (before DML_FEATURE_LEVEL_6_4)",
                     FL.DML_FEATURE_LEVEL_6_4)


def check_fused(ctx: Context, value: FusedActivation | None
                ) -> tuple[Activation, tuple[float, float]] | None:
    """A host's validated FusedActivation (``emulator.fused``) → the activation and its
    (p0, p1) for the kernels, after the activation's own attribute rules; None if absent."""
    if value is None:
        return None
    act = BY_OPERATOR[value.operator]
    check_attributes(Context(ctx.operator, ctx.level, "FusedActivation.Desc."), act, value.values)
    return act, params_of(act, value.values)


def module(op: DML_OPERATOR_TYPE) -> SimpleNamespace:
    """The operator module (SUPPORT, validate, plan, reference) of one elementwise activation."""
    act = BY_OPERATOR[op]

    def validate(ctx: Context, v: SimpleNamespace) -> None:
        check_same_tensor(ctx, v)
        check_attributes(ctx, act, v)

    def plan(v: SimpleNamespace) -> UnaryPlan:
        i = v.InputTensor
        return UnaryPlan.build(i.element_size, i.sizes, i.strides, v.OutputTensor.strides,
                               act.kind, *params_of(act, v))

    @ieee_reference
    def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        x = inputs["InputTensor"]
        y = act.reference(x.astype(np.longdouble), *params_of(act, v)[: len(act.params)])
        return {"OutputTensor": y.astype(x.dtype)}

    return SimpleNamespace(
        __name__=f"{__name__}[{act.name}]", __doc__=f"{op.name}: {__doc__}",
        SUPPORT=bands(act.introduced, ("InputTensor", "OutputTensor")), validate=validate,
        plan=plan, reference=reference)
