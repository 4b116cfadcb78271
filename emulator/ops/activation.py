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

from descriptors import (
    DML_FEATURE_LEVEL,
    DML_OPERATOR_DESC,
    DML_OPERATOR_TYPE,
    SCHEMA,
)

from ..activations import BY_OPERATOR, Activation, params_of
from ..plan import UnaryPlan
from ..validation import Band, Context, check_attribute, fmt, same
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


def check_fused(ctx: Context, value: Any) -> tuple[Activation, tuple[float, float]] | None:
    """Validate a host's FusedActivation; returns the activation and its (p0, p1), or None."""
    if value is None:
        return None
    if isinstance(value, DML_OPERATOR_DESC):
        op_type, inner = value.Type, value.Desc
    elif hasattr(type(value), "OPERATOR_TYPE"):
        op_type, inner = type(value).OPERATOR_TYPE, value
    else:
        ctx.fail("FusedActivation", type(value).__name__,
                 "must be a DML_OPERATOR_DESC of a fusable activation")
    act = BY_OPERATOR.get(op_type)  # type: ignore[call-overload]
    if act is None or act.fusable_from is None:
        fusable = ", ".join(a.name for a in BY_OPERATOR.values() if a.fusable_from)
        ctx.fail("FusedActivation.Type", _name(op_type),
                 f"the activations that can be fused are {fusable}")
    if act.fusable_from > ctx.level:
        ctx.fail("FusedActivation.Type", act.operator, "this activation can be fused only from "
                 f"{act.fusable_from.name}", act.fusable_from)
    schema = SCHEMA[act.operator]
    if getattr(type(inner), "OPERATOR_TYPE", None) != act.operator:
        ctx.fail("FusedActivation.Desc", type(inner).__name__, f"must be a {schema.struct_name}")
    inner_ctx = Context(ctx.operator, ctx.level, "FusedActivation.Desc.")
    for f in schema.fields:
        value = getattr(inner, f.name)
        if f.is_tensor:
            if value is not None:
                inner_ctx.fail(f.name, "a tensor desc", "a fused activation's tensors must be null")
            continue
        if value is None:
            inner_ctx.fail(f.name, value, "this field is required")
        setattr(inner_ctx, f.name, check_attribute(inner_ctx, f, value))
    values = SimpleNamespace(**{f.name: getattr(inner_ctx, f.name) for f in schema.attributes})
    check_attributes(inner_ctx, act, values)
    return act, params_of(act, values)


def _name(op_type: Any) -> str:
    try:
        return DML_OPERATOR_TYPE(op_type).name
    except (ValueError, TypeError):
        return fmt(op_type)


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
