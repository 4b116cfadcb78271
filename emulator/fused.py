"""Fused activations: the ``FusedActivation`` field of a host operator (GEMM, CONVOLUTION, MVN1,
ELEMENT_WISE_ADD1 …) and the activation arrays of the recurrent operators (RNN, LSTM, GRU).

Which activations a host may fuse, from which level, is data: ``support/fused_activations.json``,
transcribed from Microsoft's fused-activation page and the feature-level history (its "about" key
gives the format). A fused activation is an operator desc whose tensor fields are null; its
attributes are checked by the same field types as anywhere else.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from descriptors import DML_FEATURE_LEVEL, DML_OPERATOR_DESC, DML_OPERATOR_TYPE, SCHEMA

from .featurelevels import level_name, parse_level
from .fieldtypes import FusedActivation, check_fields
from .validation import Context, fmt, is_int

TABLE = Path(__file__).resolve().parent / "support" / "fused_activations.json"


@dataclass(frozen=True)
class FusionTable:
    # activation -> (level from which it fuses, the only hosts that may fuse it or None for any)
    activations: dict[DML_OPERATOR_TYPE, tuple[DML_FEATURE_LEVEL, frozenset | None]]
    # host -> (activation -> level) for activations only that host may fuse
    also: dict[DML_OPERATOR_TYPE, dict[DML_OPERATOR_TYPE, DML_FEATURE_LEVEL]]
    # host -> the output data type names for which it may fuse (None: any)
    output_types: dict[DML_OPERATOR_TYPE, frozenset | None]

    def level_for(self, host: DML_OPERATOR_TYPE, act: DML_OPERATOR_TYPE,
                  recurrent: bool) -> DML_FEATURE_LEVEL | None:
        """The level from which ``host`` may fuse ``act``; None if never."""
        entry = self.activations.get(act)
        if entry is not None and (recurrent or entry[1] is None or host in entry[1]):
            return entry[0]
        return None if recurrent else self.also.get(host, {}).get(act)

    def fusable_by(self, host: DML_OPERATOR_TYPE, recurrent: bool) -> list[DML_OPERATOR_TYPE]:
        return [a for a in (*self.activations, *self.also.get(host, {}))
                if self.level_for(host, a, recurrent) is not None]


@functools.cache
def table() -> FusionTable:
    doc = json.loads(TABLE.read_text(encoding="utf-8"))
    op = DML_OPERATOR_TYPE.__members__
    return FusionTable(
        {op[a]: (parse_level(v["from"]),
                 frozenset(op[h] for h in v["hosts"]) if "hosts" in v else None)
         for a, v in doc["activations"].items()},
        {op[h]: {op[a]: parse_level(lv) for a, lv in v.get("also", {}).items()}
         for h, v in doc["hosts"].items()},
        {op[h]: frozenset(v["output_types"]) if "output_types" in v else None
         for h, v in doc["hosts"].items()})


def _operator_name(op_type: Any) -> str:
    try:
        return DML_OPERATOR_TYPE(op_type).name
    except (ValueError, TypeError):
        return fmt(op_type)


def check_fused_activation(ctx: Context, field: str, value: Any, host_values: Mapping[str, Any],
                           recurrent: bool = False) -> FusedActivation:
    """Validate one activation desc given as a fused activation of ``ctx.operator``."""
    if isinstance(value, DML_OPERATOR_DESC):
        op_type, inner = value.Type, value.Desc
    elif hasattr(type(value), "OPERATOR_TYPE"):
        op_type, inner = type(value).OPERATOR_TYPE, value
    else:
        ctx.fail(field, type(value).__name__, "must be a DML_OPERATOR_DESC of an activation")
    fusion = table()
    code: Any = op_type
    act = DML_OPERATOR_TYPE(int(code)) if is_int(code) and \
        int(code) in DML_OPERATOR_TYPE._value2member_map_ else None
    level = fusion.level_for(ctx.operator, act, recurrent) if act is not None else None
    if act is None or level is None:
        allowed = ", ".join(a.name.removeprefix("DML_OPERATOR_")
                            for a in fusion.fusable_by(ctx.operator, recurrent))
        ctx.fail(f"{field}.Type", _operator_name(op_type),
                 f"the activations {ctx.op_name} can fuse are {allowed}")
    if level > ctx.level:
        ctx.fail(f"{field}.Type", act,
                 f"{ctx.op_name} can fuse this activation only from {level_name(level)}", level)
    types = fusion.output_types.get(ctx.operator)
    out = host_values.get("OutputTensor")
    if types is not None and out is not None and out.data_type.name.removeprefix(
            "DML_TENSOR_DATA_TYPE_") not in types:
        ctx.fail(field, act, "a fused activation needs an OutputTensor of type "
                 + " or ".join(sorted(types)) + f", not {out.data_type.name}")
    sch = SCHEMA[act]
    if getattr(type(inner), "OPERATOR_TYPE", None) != act:
        ctx.fail(f"{field}.Desc", type(inner).__name__, f"must be a {sch.struct_name}")
    # Messages name the host operator; the activation's own schema gives the fields.
    inner_ctx = Context(ctx.operator, ctx.level, f"{ctx.prefix}{field}.Desc.")
    return FusedActivation(act, check_fields(inner_ctx, sch, inner, fused=True))
