"""The operator schema: each operator desc's fields in header order, with kind and C type.

This one table drives the generated struct classes (``descriptors.structs``), the order of bind
points (inputs, then outputs, in struct order), the device's generic field checks and the model-file
reader. Field names and order are those of DirectML.h.
"""

from __future__ import annotations

from dataclasses import dataclass

from .enums import DML_OPERATOR_TYPE as OP

# C types of attribute fields.
UINT, INT, FLOAT, BOOL = "UINT", "INT", "FLOAT", "BOOL"
AXIS_DIRECTION = "DML_AXIS_DIRECTION"
OPERATOR_DESC = "const DML_OPERATOR_DESC*"  # a fused activation
TENSOR = "const DML_TENSOR_DESC*"


@dataclass(frozen=True)
class Field:
    """One member of an operator desc struct."""

    name: str
    kind: str  # "input" | "output" | "attribute"
    ctype: str  # TENSOR for tensors, else UINT/INT/FLOAT/BOOL/AXIS_DIRECTION/OPERATOR_DESC
    optional: bool = False  # _Maybenull_ in the header
    count: str | None = None  # for arrays: the field holding their length
    is_count: bool = False  # a count field (DimensionCount, AxisCount); may be omitted in Python

    @property
    def is_tensor(self) -> bool:
        return self.ctype == TENSOR

    @property
    def is_array(self) -> bool:
        return self.count is not None


@dataclass(frozen=True)
class OperatorSchema:
    operator: OP
    struct_name: str
    fields: tuple[Field, ...]
    # Activation descs double as fused activations, whose tensor fields must then be null.
    is_activation: bool = False

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


def _in(name: str, optional: bool = False) -> Field:
    return Field(name, "input", TENSOR, optional)


def _out(name: str) -> Field:
    return Field(name, "output", TENSOR)


def _attr(name: str, ctype: str, count: str | None = None, optional: bool = False) -> Field:
    return Field(name, "attribute", ctype, optional, count)


def _count(name: str) -> Field:
    return Field(name, "attribute", UINT, is_count=True)


def _op(op: OP, struct_name: str, *fields: Field, activation: bool = False) -> OperatorSchema:
    return OperatorSchema(op, struct_name, fields, activation)


def _activation(op: OP, *attrs: tuple[str, str]) -> OperatorSchema:
    name = op.name.removeprefix("DML_OPERATOR_")
    fields = (_in("InputTensor"), _out("OutputTensor"), *(_attr(n, t) for n, t in attrs))
    return _op(op, f"DML_{name}_OPERATOR_DESC", *fields, activation=True)


_FUSED = _attr("FusedActivation", OPERATOR_DESC, optional=True)

SCHEMAS: tuple[OperatorSchema, ...] = (
    _op(OP.DML_OPERATOR_SLICE, "DML_SLICE_OPERATOR_DESC",
        _in("InputTensor"), _out("OutputTensor"), _count("DimensionCount"),
        _attr("Offsets", UINT, "DimensionCount"), _attr("Sizes", UINT, "DimensionCount"),
        _attr("Strides", UINT, "DimensionCount")),
    _op(OP.DML_OPERATOR_SLICE1, "DML_SLICE1_OPERATOR_DESC",
        _in("InputTensor"), _out("OutputTensor"), _count("DimensionCount"),
        _attr("InputWindowOffsets", UINT, "DimensionCount"),
        _attr("InputWindowSizes", UINT, "DimensionCount"),
        # Signed in the real header (the documentation page wrongly shows UINT).
        _attr("InputWindowStrides", INT, "DimensionCount")),
    _op(OP.DML_OPERATOR_TOP_K, "DML_TOP_K_OPERATOR_DESC",
        _in("InputTensor"), _out("OutputValueTensor"), _out("OutputIndexTensor"),
        _attr("Axis", UINT), _attr("K", UINT)),
    _op(OP.DML_OPERATOR_TOP_K1, "DML_TOP_K1_OPERATOR_DESC",
        _in("InputTensor"), _out("OutputValueTensor"), _out("OutputIndexTensor"),
        _attr("Axis", UINT), _attr("K", UINT), _attr("AxisDirection", AXIS_DIRECTION)),
    _op(OP.DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION,
        "DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC",
        _in("InputTensor"), _in("ScaleTensor", True), _in("BiasTensor", True), _out("OutputTensor"),
        _attr("CrossChannel", BOOL), _attr("NormalizeVariance", BOOL), _attr("Epsilon", FLOAT),
        _FUSED),
    _op(OP.DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1,
        "DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC",
        _in("InputTensor"), _in("ScaleTensor", True), _in("BiasTensor", True), _out("OutputTensor"),
        _count("AxisCount"), _attr("Axes", UINT, "AxisCount"), _attr("NormalizeVariance", BOOL),
        _attr("Epsilon", FLOAT), _FUSED),
    _op(OP.DML_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY,
        "DML_QUANTIZED_LINEAR_MATRIX_MULTIPLY_OPERATOR_DESC",
        _in("ATensor"), _in("AScaleTensor"), _in("AZeroPointTensor", True), _in("BTensor"),
        _in("BScaleTensor"), _in("BZeroPointTensor", True), _in("OutputScaleTensor"),
        _in("OutputZeroPointTensor", True), _out("OutputTensor")),
    _activation(OP.DML_OPERATOR_ACTIVATION_ELU, ("Alpha", FLOAT)),
    _activation(OP.DML_OPERATOR_ACTIVATION_HARDMAX),
    _activation(OP.DML_OPERATOR_ACTIVATION_HARD_SIGMOID, ("Alpha", FLOAT), ("Beta", FLOAT)),
    _activation(OP.DML_OPERATOR_ACTIVATION_IDENTITY),
    _activation(OP.DML_OPERATOR_ACTIVATION_LEAKY_RELU, ("Alpha", FLOAT)),
    _activation(OP.DML_OPERATOR_ACTIVATION_LINEAR, ("Alpha", FLOAT), ("Beta", FLOAT)),
    _activation(OP.DML_OPERATOR_ACTIVATION_LOG_SOFTMAX),
    _op(OP.DML_OPERATOR_ACTIVATION_PARAMETERIZED_RELU,
        "DML_ACTIVATION_PARAMETERIZED_RELU_OPERATOR_DESC",
        _in("InputTensor"), _in("SlopeTensor"), _out("OutputTensor")),
    _activation(OP.DML_OPERATOR_ACTIVATION_PARAMETRIC_SOFTPLUS, ("Alpha", FLOAT), ("Beta", FLOAT)),
    _activation(OP.DML_OPERATOR_ACTIVATION_RELU),
    _activation(OP.DML_OPERATOR_ACTIVATION_SCALED_ELU, ("Alpha", FLOAT), ("Gamma", FLOAT)),
    _activation(OP.DML_OPERATOR_ACTIVATION_SCALED_TANH, ("Alpha", FLOAT), ("Beta", FLOAT)),
    _activation(OP.DML_OPERATOR_ACTIVATION_SIGMOID),
    _activation(OP.DML_OPERATOR_ACTIVATION_SOFTMAX),
    _activation(OP.DML_OPERATOR_ACTIVATION_SOFTPLUS, ("Steepness", FLOAT)),
    _activation(OP.DML_OPERATOR_ACTIVATION_SOFTSIGN),
    _activation(OP.DML_OPERATOR_ACTIVATION_TANH),
    _activation(OP.DML_OPERATOR_ACTIVATION_THRESHOLDED_RELU, ("Alpha", FLOAT)),
    _activation(OP.DML_OPERATOR_ACTIVATION_SHRINK, ("Bias", FLOAT), ("Threshold", FLOAT)),
    _activation(OP.DML_OPERATOR_ACTIVATION_CELU, ("Alpha", FLOAT)),
    _activation(OP.DML_OPERATOR_ACTIVATION_GELU),
)

SCHEMA: dict[OP, OperatorSchema] = {s.operator: s for s in SCHEMAS}
