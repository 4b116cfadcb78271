"""The field-type table: how every kind of operator-desc field is checked, normalised and read.

One row per field type of the schema (``descriptors.schema.Field.type``): UINT, INT, UINT64, FLOAT,
BOOL, every enum, UINT/INT/FLOAT arrays, tensors and tensor arrays, fused activations and their
arrays, DML_SCALE_BIAS, DML_SIZE_2D and DML_SCALAR_UNION. ``check`` turns a Python value into the
normalised value the rules see (docs/support-tables.md lists them) or fails with ``DMLError``
naming the field: this is also where hostile input stops (huge ints, infinities in integer fields,
wrong types). ``from_json`` reads the value as DxDispatch model files write it.
"""

from __future__ import annotations

import enum
import numbers
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, NamedTuple

import numpy as np

from descriptors import (
    DML_OPERATOR_TYPE,
    DML_SCALAR_UNION,
    DML_TENSOR_DATA_TYPE,
    ENUMS,
    Field,
    schema,
)
from descriptors.structs import GENERIC_STRUCTS

from .cvalues import INT_RANGES, to_double, to_enum, to_float
from .validation import (
    UINT32_MAX,
    Context,
    check_array,
    check_int,
    check_tensor,
    fmt,
    is_int,
)

T = DML_TENSOR_DATA_TYPE
DML_SCALE_BIAS = GENERIC_STRUCTS["DML_SCALE_BIAS"]
DML_SIZE_2D = GENERIC_STRUCTS["DML_SIZE_2D"]
ENUM_BY_NAME: dict[str, type[enum.IntEnum] | type[enum.IntFlag]] = {e.__name__: e for e in ENUMS}


class ScaleBias(NamedTuple):
    Scale: float
    Bias: float


class Size2D(NamedTuple):
    Width: int
    Height: int


class FusedActivation(NamedTuple):
    """A validated fused activation: its operator and its normalised attribute values."""

    operator: DML_OPERATOR_TYPE
    values: SimpleNamespace


def check_double(ctx: Context, field: str, value: Any) -> float:
    """A real number as a C double (see ``cvalues.to_double``)."""
    return to_double(value, ctx.where(field))


def check_float(ctx: Context, field: str, value: Any) -> float:
    """A C FLOAT: a real number rounded to float32 (beyond float32's range: ±inf, as in C)."""
    return to_float(value, ctx.where(field))


def check_bool(ctx: Context, field: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)) and not (is_int(value) and value in (0, 1)):
        ctx.fail(field, value, "a BOOL must be true or false")
    return bool(value)


def check_enum(ctx: Context, field: str, value: Any, enum_type: Any) -> Any:
    return to_enum(value, enum_type, ctx.where(field))


def _sequence(ctx: Context, f: Field, value: Any, count: int, what: str) -> tuple:
    if not isinstance(value, (tuple, list)):
        ctx.fail(f.name, value, f"must be an array of {count} {what}")
    if len(value) != count:
        ctx.fail(f.name, value, f"must hold exactly {count} values (its count field "
                 f"{f.count} says {count})")
    return tuple(value)


def _check_scalar_int(ctx: Context, f: Field, value: Any, out: Mapping[str, Any]) -> int:
    lo, hi = INT_RANGES[f.type]
    return check_int(ctx, f.name, value, lo, hi, f.type)


def _check_int_array(ctx: Context, f: Field, value: Any, out: Mapping[str, Any]) -> tuple:
    return check_array(ctx, f.name, value, out[f.count or ""], f.type.removesuffix("_ARRAY"))


def _check_float_array(ctx: Context, f: Field, value: Any, out: Mapping[str, Any]) -> tuple:
    items = _sequence(ctx, f, value, out[f.count or ""], "FLOAT values")
    return tuple(check_float(ctx, f"{f.name}[{i}]", v) for i, v in enumerate(items))


def _check_tensor(ctx: Context, f: Field, value: Any, out: Mapping[str, Any]) -> Any:
    return check_tensor(ctx, f.name, value, is_output=f.kind == "output")


def _check_tensor_array(ctx: Context, f: Field, value: Any, out: Mapping[str, Any]) -> tuple:
    items = _sequence(ctx, f, value, out[f.count or ""], "tensor descs")
    for i, t in enumerate(items):
        if t is None:
            ctx.fail(f"{f.name}[{i}]", t, "every tensor of the array is required")
    return tuple(check_tensor(ctx, f"{f.name}[{i}]", t, is_output=f.kind == "output")
                 for i, t in enumerate(items))


def _check_scale_bias(ctx: Context, f: Field, value: Any, out: Mapping[str, Any]) -> ScaleBias:
    if not isinstance(value, DML_SCALE_BIAS):
        ctx.fail(f.name, value, "must be a DML_SCALE_BIAS (or null)")
    return ScaleBias(check_float(ctx, f"{f.name}.Scale", value.Scale),
                     check_float(ctx, f"{f.name}.Bias", value.Bias))


def _check_size_2d(ctx: Context, f: Field, value: Any, out: Mapping[str, Any]) -> Size2D:
    if not isinstance(value, DML_SIZE_2D):
        ctx.fail(f.name, value, "must be a DML_SIZE_2D")
    return Size2D(check_int(ctx, f"{f.name}.Width", value.Width, 0, UINT32_MAX, "UINT"),
                  check_int(ctx, f"{f.name}.Height", value.Height, 0, UINT32_MAX, "UINT"))


# The C members of DML_SCALAR_UNION (struct format, little-endian) and the member each data type
# reads; FLOAT16 reads the union's first two bytes as a half.
_UNION_MEMBERS = {"Int8": "<b", "UInt8": "<B", "Int16": "<h", "UInt16": "<H", "Int32": "<i",
                  "UInt32": "<I", "Int64": "<q", "UInt64": "<Q", "Float32": "<f",
                  "Float64": "<d"}
_MEMBER_OF_TYPE = {T.DML_TENSOR_DATA_TYPE_INT8: "Int8", T.DML_TENSOR_DATA_TYPE_UINT8: "UInt8",
                   T.DML_TENSOR_DATA_TYPE_INT16: "Int16", T.DML_TENSOR_DATA_TYPE_UINT16: "UInt16",
                   T.DML_TENSOR_DATA_TYPE_INT32: "Int32", T.DML_TENSOR_DATA_TYPE_UINT32: "UInt32",
                   T.DML_TENSOR_DATA_TYPE_INT64: "Int64", T.DML_TENSOR_DATA_TYPE_UINT64: "UInt64",
                   T.DML_TENSOR_DATA_TYPE_FLOAT32: "Float32",
                   T.DML_TENSOR_DATA_TYPE_FLOAT64: "Float64",
                   T.DML_TENSOR_DATA_TYPE_FLOAT16: "Float16"}
_FORMAT = {**_UNION_MEMBERS, "Float16": "<e"}


def _member_range(member: str) -> tuple[int, int]:
    """The values an integer member of the union holds (Int8 … UInt64)."""
    bits = struct.calcsize(_FORMAT[member]) * 8
    if member.startswith("Int"):
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def scalar_from_number(ctx: Context, field: str, value: Any, data_type: T) -> int | float:
    """A plain Python number read as the member ``data_type`` names (range-checked)."""
    member = _MEMBER_OF_TYPE[data_type]
    if member.startswith("Float"):
        x = check_double(ctx, field, value)
        with np.errstate(over="ignore"):
            return x if member == "Float64" else float(
                np.float32(x) if member == "Float32" else np.float16(x))
    return check_int(ctx, field, value, *_member_range(member),
                     data_type.name.removeprefix("DML_TENSOR_DATA_TYPE_"))


def _union_bytes(ctx: Context, field: str, value: DML_SCALAR_UNION) -> bytes:
    given = value.members()
    if len(given) != 1:
        ctx.fail(field, ", ".join(given) or "no member",
                 "a DML_SCALAR_UNION holds exactly one member")
    (name, member), = given.items()
    if name == "Bytes":
        items = tuple(member) if isinstance(member, (tuple, list)) else None
        if items is None or len(items) > 8 or not all(is_int(b) and 0 <= b <= 255 for b in items):
            ctx.fail(f"{field}.Bytes", member, "Bytes holds at most 8 values in [0, 255]")
        return bytes(items).ljust(8, b"\0")
    fmt_ = _UNION_MEMBERS[name]
    probe = Context(ctx.operator, ctx.level, ctx.prefix + field + ".")
    if name.startswith("Float"):
        number: int | float = check_float(probe, name, member) if name == "Float32" \
            else check_double(probe, name, member)
    else:
        number = check_int(probe, name, member, *_member_range(name), name)
    return struct.pack(fmt_, number).ljust(8, b"\0")


def check_scalar_union(ctx: Context, field: str, value: Any, data_type: Any) -> int | float:
    """The scalar a union field holds, read as the member its companion DataType names."""
    if not isinstance(data_type, T) or data_type not in _MEMBER_OF_TYPE:
        ctx.fail(field, value, f"its data type field must name a scalar type, not {fmt(data_type)}")
    if isinstance(value, DML_SCALAR_UNION):
        raw = _union_bytes(ctx, field, value)
        fmt_ = _FORMAT[_MEMBER_OF_TYPE[data_type]]
        (x,) = struct.unpack(fmt_, raw[:struct.calcsize(fmt_)])
        return float(x) if isinstance(x, float) else int(x)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.number)):
        ctx.fail(field, value, "must be a DML_SCALAR_UNION or a number")
    return scalar_from_number(ctx, field, value, data_type)


def _check_scalar_union(ctx: Context, f: Field, value: Any, out: Mapping[str, Any]) -> Any:
    return check_scalar_union(ctx, f.name, value, out.get(f.companion) if f.companion else None)


def _check_enum(ctx: Context, f: Field, value: Any, out: Mapping[str, Any]) -> Any:
    return check_enum(ctx, f.name, value, ENUM_BY_NAME[f.type])


def _check_bool(ctx: Context, f: Field, value: Any, out: Mapping[str, Any]) -> bool:
    return check_bool(ctx, f.name, value)


def _check_float(ctx: Context, f: Field, value: Any, out: Mapping[str, Any]) -> float:
    return check_float(ctx, f.name, value)


def _check_operator_desc(ctx: Context, f: Field, value: Any, out: Mapping[str, Any]) -> Any:
    from .fused import check_fused_activation

    return check_fused_activation(ctx, f.name, value, out)


def _check_operator_desc_array(ctx: Context, f: Field, value: Any,
                               out: Mapping[str, Any]) -> tuple:
    from .fused import check_fused_activation

    items = _sequence(ctx, f, value, out[f.count or ""], "activation descs")
    return tuple(check_fused_activation(ctx, f"{f.name}[{i}]", v, out, recurrent=True)
                 for i, v in enumerate(items))


@dataclass(frozen=True)
class FieldType:
    """How one type of field is checked and normalised."""

    name: str
    check: Callable[[Context, Field, Any, Mapping[str, Any]], Any]


FIELD_TYPES: dict[str, FieldType] = {
    t.name: t for t in (
        FieldType(schema.UINT, _check_scalar_int),
        FieldType(schema.INT, _check_scalar_int),
        FieldType(schema.UINT64, _check_scalar_int),
        FieldType(schema.FLOAT, _check_float),
        FieldType(schema.BOOL, _check_bool),
        FieldType(schema.UINT_ARRAY, _check_int_array),
        FieldType(schema.INT_ARRAY, _check_int_array),
        FieldType(schema.FLOAT_ARRAY, _check_float_array),
        FieldType(schema.TENSOR, _check_tensor),
        FieldType(schema.TENSOR_ARRAY, _check_tensor_array),
        FieldType(schema.SCALE_BIAS, _check_scale_bias),
        FieldType(schema.SIZE_2D, _check_size_2d),
        FieldType(schema.SCALAR_UNION, _check_scalar_union),
        FieldType(schema.OPERATOR_DESC, _check_operator_desc),
        FieldType(schema.OPERATOR_DESC_ARRAY, _check_operator_desc_array),
        *(FieldType(name, _check_enum) for name in ENUM_BY_NAME),
    )
}


def check_fields(ctx: Context, sch: Any, desc: Any, fused: bool = False) -> SimpleNamespace:
    """Every field of an operator desc through its field type; the normalised values by name.

    Count fields first (arrays are checked against them); a count left out is derived from its
    array by the struct, and a null required field fails. ``fused``: the desc is a fused
    activation, whose tensors must be null."""
    out: dict[str, Any] = {}
    for f in sch.fields:
        if f.is_count:
            value = getattr(desc, f.name)
            if value is None:
                ctx.fail(f.name, value, "a count field must be given (or derived from its arrays)")
            out[f.name] = check_int(ctx, f.name, value, 0, UINT32_MAX, "UINT")
    for f in sch.fields:
        if f.is_count:
            continue
        value = getattr(desc, f.name)
        if fused and f.is_tensor:
            if value is not None:
                ctx.fail(f.name, "a tensor desc", "a fused activation's tensors must be null")
            out[f.name] = None
            continue
        if value is None:
            if not f.optional and not (f.is_array and out.get(f.count or "") == 0):
                ctx.fail(f.name, value, "this field is required")
            out[f.name] = () if f.is_array and not f.optional else None
            continue
        out[f.name] = FIELD_TYPES[f.type].check(ctx, f, value, out)
    return SimpleNamespace(**out)


__all__ = ["FIELD_TYPES", "FieldType", "FusedActivation", "ScaleBias", "Size2D", "check_bool",
           "check_enum", "check_fields", "check_float", "check_scalar_union"]
