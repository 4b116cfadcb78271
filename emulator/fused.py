"""Fused activations: the ``FusedActivation`` field of a host operator (GEMM, CONVOLUTION, MVN1,
ELEMENT_WISE_ADD1 …) and the activation arrays of the recurrent operators.

A fused activation is an activation operator's desc whose tensor fields are null; its attributes
are checked by the same field types as anywhere else. Which activations may be fused, and from
which level, is the activation table's (``emulator.activations``) fact; a recurrent network's
activation array accepts any activation of that table.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from descriptors import DML_OPERATOR_DESC, DML_OPERATOR_TYPE, SCHEMA

from .activations import BY_OPERATOR
from .fieldtypes import FIELD_TYPES, FusedActivation
from .validation import Context, fmt


def _operator_name(op_type: Any) -> str:
    try:
        return DML_OPERATOR_TYPE(op_type).name
    except (ValueError, TypeError):
        return fmt(op_type)


def check_fused_activation(ctx: Context, field: str, value: Any,
                           standalone_ok: bool = False) -> FusedActivation:
    """Validate one activation desc given as a fused activation (tensors null)."""
    if isinstance(value, DML_OPERATOR_DESC):
        op_type, inner = value.Type, value.Desc
    elif hasattr(type(value), "OPERATOR_TYPE"):
        op_type, inner = type(value).OPERATOR_TYPE, value
    else:
        ctx.fail(field, type(value).__name__, "must be a DML_OPERATOR_DESC of an activation")
    act = BY_OPERATOR.get(op_type)  # type: ignore[call-overload]
    if act is None or (act.fusable_from is None and not standalone_ok):
        allowed = ", ".join(a.name for a in BY_OPERATOR.values()
                            if a.fusable_from or standalone_ok)
        ctx.fail(f"{field}.Type", _operator_name(op_type),
                 f"the activations that can be fused are {allowed}")
    level = act.fusable_from if act.fusable_from is not None else act.introduced
    if level > ctx.level:
        ctx.fail(f"{field}.Type", act.operator,
                 f"this activation can be fused only from {level.name}", level)
    sch = SCHEMA[act.operator]
    if getattr(type(inner), "OPERATOR_TYPE", None) != act.operator:
        ctx.fail(f"{field}.Desc", type(inner).__name__, f"must be a {sch.struct_name}")
    inner_ctx = Context(ctx.operator, ctx.level, f"{ctx.prefix}{field}.Desc.")
    values: dict[str, Any] = {}
    for f in sch.fields:
        v = getattr(inner, f.name)
        if f.is_tensor:
            if v is not None:
                inner_ctx.fail(f.name, "a tensor desc", "a fused activation's tensors must be null")
            continue
        if v is None:
            inner_ctx.fail(f.name, v, "this field is required")
        values[f.name] = FIELD_TYPES[f.type].check(inner_ctx, f, v, values)
    return FusedActivation(act.operator, SimpleNamespace(**values))
