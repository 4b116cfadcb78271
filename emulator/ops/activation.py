"""Activation rules shared by the standalone activations and by every operator that fuses one.

The standalone activation operators (DML_ACTIVATION_*_OPERATOR_DESC but the softmax family) are
rows of the element-wise table (``emulator/elementwise/table.py``), built from the activation
table (``emulator.activations``); they call ``check_attributes`` (SOFTPLUS needs Steepness >= 1
before 6_4). Which activations fuse where: support/fused_activations.json (``emulator.fused``);
``check_fused`` validates a host's FusedActivation.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from descriptors import DML_OPERATOR_TYPE

from ..activations import BY_OPERATOR, Activation, params_of
from ..fieldtypes import FusedActivation
from ..validation import Context, same
from .common import FL, FLOAT16, FLOAT32

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
