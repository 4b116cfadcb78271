"""Struct classes mirroring DirectML.h: frozen dataclasses with the C field names.

Construct them by keyword or, as C++ aggregate initialisation does, by position in header order
(``DML_SIZE_2D(4, 2)``); to change one field of a frozen struct, use ``dataclasses.replace(desc,
Field=value)``. Operator desc classes (``DML_SLICE1_OPERATOR_DESC`` ... all 177) are generated from
``schema.SCHEMAS``, and the helper and graph structs from the generated struct table, so field lists
live in one place. Conveniences C has no need for: count fields may be omitted and are then derived
from the array's length; arrays are stored as tuples. Nothing here validates: a descriptor holds
data, and the device judges it (see ``emulator.validation``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._generated import STRUCTS
from .enums import (
    DML_BINDING_TYPE,
    DML_OPERATOR_TYPE,
    DML_TENSOR_DATA_TYPE,
    DML_TENSOR_FLAGS,
    DML_TENSOR_TYPE,
)
from .schema import SCHEMAS, OperatorSchema

_STRUCT = {"frozen": True}


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
            except Exception:  # a DMLError: malformed, and the device names the problem
                total = None
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


@dataclass(**_STRUCT)
class DML_SCALAR_UNION:
    """A scalar of any data type: give exactly one member, by keyword (``Float32=1.5``).

    Where a desc holds a scalar union, a plain Python int or float is accepted too and read as the
    member its companion DataType field names.
    """

    Bytes: Sequence[int] | None = None
    Int8: int | None = None
    UInt8: int | None = None
    Int16: int | None = None
    UInt16: int | None = None
    Int32: int | None = None
    UInt32: int | None = None
    Int64: int | None = None
    UInt64: int | None = None
    Float32: float | None = None
    Float64: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "Bytes", _tuple_or_none(self.Bytes))

    def members(self) -> dict[str, Any]:
        """The members that were given (exactly one in a valid union)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) is not None}


def _derive_counts(fields: Sequence[tuple[str, str | None]]) -> Any:
    """A __post_init__ that turns arrays into tuples and fills omitted count fields."""
    arrays_by_count: dict[str, list[str]] = {}
    for name, count in fields:
        if count:
            arrays_by_count.setdefault(count, []).append(name)

    def post_init(self: Any) -> None:
        for count, arrays in arrays_by_count.items():
            _derive_count(self, count, *arrays)

    return post_init


def _struct_class(name: str, fields: Sequence[tuple[str, str | None]], doc: str,
                  namespace: dict[str, Any] | None = None) -> type:
    cls = dataclasses.make_dataclass(
        name, [(f, Any, dataclasses.field(default=None)) for f, _ in fields],
        namespace={"__post_init__": _derive_counts(fields), "__doc__": doc, **(namespace or {})},
        frozen=True)
    cls.__module__ = __name__
    return cls


def _operator_desc_class(schema: OperatorSchema) -> type:
    doc = (f"Mirror of ``{schema.struct_name}`` (DirectML.h). Fields, in header order: "
           + ", ".join(f.name + ("?" if f.optional else "") for f in schema.fields) + ".")
    return _struct_class(schema.struct_name, [(f.name, f.count) for f in schema.fields], doc,
                         {"OPERATOR_TYPE": schema.operator, "SCHEMA": schema})


OPERATOR_DESC_CLASSES: dict[DML_OPERATOR_TYPE, type] = {
    s.operator: _operator_desc_class(s) for s in SCHEMAS
}
globals().update({cls.__name__: cls for cls in OPERATOR_DESC_CLASSES.values()})
# DirectML.h's alias: SCATTER_ELEMENTS is the operator SCATTER's desc, under both names.
DML_SCATTER_ELEMENTS_OPERATOR_DESC = OPERATOR_DESC_CLASSES[
    DML_OPERATOR_TYPE.DML_OPERATOR_SCATTER_ELEMENTS]

# The helper and graph structs with no behaviour of their own, from the generated struct table.
_HAND_WRITTEN = {n for n, v in list(globals().items())
                 if n.startswith("DML_") and isinstance(v, type)}
GENERIC_STRUCTS: dict[str, Any] = {
    name: _struct_class(name, [(f[0], f[2]) for f in fields],
                        f"Mirror of ``{name}`` (DirectML.h). Fields, in header order: "
                        + ", ".join(f[0] for f in fields) + ".")
    for name, fields in STRUCTS.items() if name not in _HAND_WRITTEN
}
globals().update(GENERIC_STRUCTS)
