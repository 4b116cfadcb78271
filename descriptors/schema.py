"""The operator schema: each operator desc's fields in header order, with kind and type.

Built from the generated facts (``_generated.OPERATORS``, from ``tools/directml-schema.json``): it
drives the struct classes (``descriptors.structs``), the order of bind points (tensor fields in
struct order, each tensor of an array its own bind point), the device's field checks (one checker
per field ``type``, ``emulator.fieldtypes``) and the model-file reader. Field names and order are
those of DirectML.h; nothing here is typed by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import _generated
from .enums import DML_FEATURE_LEVEL, DML_OPERATOR_TYPE

OP = DML_OPERATOR_TYPE

# Field types (``Field.type``): the schema types of DirectML's own schema, with two refinements
# that matter for checking: a UINT whose C type is an enum is that enum's name, and a C BOOL is
# BOOL.
TENSOR = "TENSOR_DESC"
TENSOR_ARRAY = "TENSOR_DESC_ARRAY"
OPERATOR_DESC = "OPERATOR_DESC"
OPERATOR_DESC_ARRAY = "OPERATOR_DESC_ARRAY"
UINT, INT, UINT64, FLOAT, BOOL = "UINT", "INT", "UINT64", "FLOAT", "BOOL"
UINT_ARRAY, INT_ARRAY, FLOAT_ARRAY = "UINT_ARRAY", "INT_ARRAY", "FLOAT_ARRAY"
SCALE_BIAS, SIZE_2D, SCALAR_UNION = "SCALE_BIAS", "SIZE_2D", "SCALAR_UNION"
ENUM_NAMES = frozenset(e.__name__ for e in _generated.ENUMS)


@dataclass(frozen=True)
class Field:
    """One member of an operator desc struct."""

    name: str
    kind: str  # "input" | "output" | "attribute"
    type: str  # a field type above, or an enum's name (DML_REDUCE_FUNCTION ...)
    ctype: str = ""  # the C type as the header writes it
    optional: bool = False  # _Maybenull_ in the header
    count: str | None = None  # for arrays: the field holding their length
    is_count: bool = False  # a count field (DimensionCount ...); may be omitted in Python
    # For a SCALAR_UNION: the DML_TENSOR_DATA_TYPE field naming which member is meant (the nearest
    # one before it: ValueDataType, MinMaxDataType, PaddingValueDataType).
    companion: str | None = None

    @property
    def is_tensor(self) -> bool:
        """A tensor or an array of tensors: bind points."""
        return self.type in (TENSOR, TENSOR_ARRAY)

    @property
    def is_array(self) -> bool:
        return self.count is not None

    @property
    def is_enum(self) -> bool:
        return self.type in ENUM_NAMES


@dataclass(frozen=True)
class OperatorSchema:
    operator: DML_OPERATOR_TYPE
    struct_name: str
    fields: tuple[Field, ...]
    introduced: DML_FEATURE_LEVEL  # the header block that declares the type
    in_place: bool  # DirectML's schema: an output may alias an input

    @property
    def is_activation(self) -> bool:
        """Activation descs double as fused activations, whose tensor fields must then be null."""
        return self.operator.name.startswith("DML_OPERATOR_ACTIVATION_")

    @property
    def inputs(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.kind == "input")

    @property
    def outputs(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.kind == "output")

    @property
    def attributes(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.kind == "attribute")

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)


def _field_type(ctype: str, schema_type: str) -> str:
    base = ctype.removeprefix("const ").rstrip("*").strip()
    if schema_type == UINT and base in ENUM_NAMES:
        return base
    if base == "BOOL":
        return BOOL
    return schema_type


def _level(text: str) -> DML_FEATURE_LEVEL:
    return DML_FEATURE_LEVEL.__members__[f"DML_FEATURE_LEVEL_{text}"]


def _schema(row: tuple) -> OperatorSchema:
    name, _value, struct, introduced, in_place, fields = row
    counts = {f[5] for f in fields if f[5]}
    out: list[Field] = []
    for fname, ctype, kind, stype, optional, count in fields:
        ftype = _field_type(ctype, stype)
        companion = next((f.name for f in reversed(out) if f.type == "DML_TENSOR_DATA_TYPE"),
                         None) if ftype == SCALAR_UNION else None
        out.append(Field(fname, kind, ftype, ctype, optional, count, fname in counts, companion))
    return OperatorSchema(OP.__members__[name], struct, tuple(out), _level(introduced), in_place)


SCHEMAS: tuple[OperatorSchema, ...] = tuple(_schema(row) for row in _generated.OPERATORS)
SCHEMA: dict[DML_OPERATOR_TYPE, OperatorSchema] = {s.operator: s for s in SCHEMAS}
