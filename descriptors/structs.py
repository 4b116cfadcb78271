"""Struct classes mirroring DirectML.h: frozen, keyword-only dataclasses with the C field names.

Operator desc classes (``DML_SLICE1_OPERATOR_DESC`` ...) are generated from ``schema.SCHEMAS`` so
the field list lives in one place. Conveniences C has no need for: count fields may be omitted and
are then derived from the array's length; arrays are stored as tuples. Nothing here validates: a
descriptor holds data, and the device judges it (see ``emulator.validation``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .enums import (
    DML_BINDING_TYPE,
    DML_OPERATOR_TYPE,
    DML_TENSOR_DATA_TYPE,
    DML_TENSOR_FLAGS,
    DML_TENSOR_TYPE,
)
from .schema import SCHEMAS, OperatorSchema

_STRUCT = {"frozen": True, "kw_only": True}


def _tuple_or_none(value: Any) -> Any:
    """Arrays become tuples (immutable, cheap); anything else is kept for the device to judge."""
    if value is None or isinstance(value, (str, bytes)):
        return value
    try:
        return tuple(value)
    except TypeError:
        return value


def _derive_count(obj: Any, count_field: str, *array_fields: str) -> None:
    """Fill an omitted count field from the first given array's length."""
    for name in array_fields:
        object.__setattr__(obj, name, _tuple_or_none(getattr(obj, name)))
    if getattr(obj, count_field) is None:
        for name in array_fields:
            value = getattr(obj, name)
            if isinstance(value, tuple):
                object.__setattr__(obj, count_field, len(value))
                return


@dataclass(**_STRUCT)
class DML_BUFFER_TENSOR_DESC:
    DataType: DML_TENSOR_DATA_TYPE | int
    Flags: DML_TENSOR_FLAGS | int = DML_TENSOR_FLAGS.DML_TENSOR_FLAG_NONE
    DimensionCount: int | None = None
    Sizes: Sequence[int] = ()
    Strides: Sequence[int] | None = None
    TotalTensorSizeInBytes: int | None = None
    GuaranteedBaseOffsetAlignment: int = 0

    def __post_init__(self) -> None:
        _derive_count(self, "DimensionCount", "Sizes", "Strides")
        if self.TotalTensorSizeInBytes is None and isinstance(self.DimensionCount, int):
            from .tensor import DMLCalcBufferTensorSize

            try:
                total = DMLCalcBufferTensorSize(self.DataType, self.DimensionCount, self.Sizes,
                                                self.Strides)
            except (TypeError, ValueError, KeyError):
                total = None  # malformed: the device reports the precise problem
            object.__setattr__(self, "TotalTensorSizeInBytes", total)


@dataclass(**_STRUCT)
class DML_TENSOR_DESC:
    Type: DML_TENSOR_TYPE | int = DML_TENSOR_TYPE.DML_TENSOR_TYPE_BUFFER
    Desc: DML_BUFFER_TENSOR_DESC | None = None


@dataclass(**_STRUCT)
class DML_OPERATOR_DESC:
    """``Type`` may be omitted; it is then taken from the desc's class."""

    Type: DML_OPERATOR_TYPE | int | None = None
    Desc: Any = None

    def __post_init__(self) -> None:
        if self.Type is None:
            object.__setattr__(self, "Type", getattr(type(self.Desc), "OPERATOR_TYPE", None))


@dataclass(**_STRUCT)
class DML_BINDING_PROPERTIES:
    RequiredDescriptorCount: int
    TemporaryResourceSize: int
    PersistentResourceSize: int


@dataclass(**_STRUCT)
class DML_BUFFER_BINDING:
    """``Buffer`` is an ``emulator.Buffer`` or a writable C-contiguous numpy array (or None).

    ``SizeInBytes`` may be omitted: the binding then runs to the end of the buffer.
    """

    Buffer: Any = None
    Offset: int = 0
    SizeInBytes: int | None = None


@dataclass(**_STRUCT)
class DML_BUFFER_ARRAY_BINDING:
    BindingCount: int | None = None
    Bindings: Sequence[DML_BUFFER_BINDING] = ()

    def __post_init__(self) -> None:
        _derive_count(self, "BindingCount", "Bindings")


@dataclass(**_STRUCT)
class DML_BINDING_DESC:
    Type: DML_BINDING_TYPE | int = DML_BINDING_TYPE.DML_BINDING_TYPE_NONE
    Desc: DML_BUFFER_BINDING | DML_BUFFER_ARRAY_BINDING | None = None


@dataclass(**_STRUCT)
class DML_BINDING_TABLE_DESC:
    """The descriptor handles are accepted and ignored: the emulator has no descriptor heap."""

    Dispatchable: Any = None
    CPUDescriptorHandle: Any = None
    GPUDescriptorHandle: Any = None
    SizeInDescriptors: int = 0


@dataclass(**_STRUCT)
class DML_FEATURE_QUERY_FEATURE_LEVELS:
    RequestedFeatureLevelCount: int | None = None
    RequestedFeatureLevels: Sequence[int] = ()

    def __post_init__(self) -> None:
        _derive_count(self, "RequestedFeatureLevelCount", "RequestedFeatureLevels")


@dataclass(**_STRUCT)
class DML_FEATURE_DATA_FEATURE_LEVELS:
    MaxSupportedFeatureLevel: int


@dataclass(**_STRUCT)
class DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT:
    DataType: DML_TENSOR_DATA_TYPE | int


@dataclass(**_STRUCT)
class DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT:
    IsSupported: bool


def _operator_desc_class(schema: OperatorSchema) -> type:
    arrays_by_count: dict[str, list[str]] = {}
    for f in schema.fields:
        if f.count:
            arrays_by_count.setdefault(f.count, []).append(f.name)

    def post_init(self: Any) -> None:
        for count, arrays in arrays_by_count.items():
            _derive_count(self, count, *arrays)

    doc = (f"Mirror of ``{schema.struct_name}`` (DirectML.h). Fields, in header order: "
           + ", ".join(f.name + ("?" if f.optional else "") for f in schema.fields) + ".")
    cls = dataclasses.make_dataclass(
        schema.struct_name,
        [(f.name, Any, dataclasses.field(default=None)) for f in schema.fields],
        namespace={"__post_init__": post_init, "__doc__": doc,
                   "OPERATOR_TYPE": schema.operator, "SCHEMA": schema},
        frozen=True, kw_only=True,
    )
    cls.__module__ = __name__
    return cls


OPERATOR_DESC_CLASSES: dict[DML_OPERATOR_TYPE, type] = {
    s.operator: _operator_desc_class(s) for s in SCHEMAS
}
globals().update({cls.__name__: cls for cls in OPERATOR_DESC_CLASSES.values()})
