"""The elementwise activation operators (DML_ACTIVATION_*_OPERATOR_DESC), generated from the one
activation table (``emulator.activations``), and the validation of fused activations.

Standalone rules: InputTensor and OutputTensor share DataType, DimensionCount and Sizes; SOFTPLUS
needs Steepness >= 1 (before 6_4). The support tables (support/activations.json) give the ranks
and types per level; the kernels execute FLOAT32 and FLOAT16 (the integer types later levels admit
for RELU and SHRINK are valid but not executable yet). Which activations fuse where:
support/fused_activations.json (``emulator.fused``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import numpy as np

from descriptors import DML_OPERATOR_TYPE

from ..activations import BY_OPERATOR, Activation, params_of
from ..fieldtypes import FusedActivation
from ..plan import UnaryPlan
from ..validation import Context, same
from .common import FL, FLOAT16, FLOAT32, ieee_reference

FLOATS = (FLOAT32, FLOAT16)


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
        KERNEL_TYPES=FLOATS, validate=validate,
        plan=plan, reference=reference)
