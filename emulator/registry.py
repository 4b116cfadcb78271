"""The operator registry: the one table of what the emulator implements.

``REGISTRY`` maps each implemented DML_OPERATOR_TYPE to its ``OperatorSpec``: the module holding its
support table, rules, kernel plan and NumPy reference (``emulator.ops``), the feature level that
introduced it, and whether an input and an output may share one resource region (in-place).
``validate_operator`` runs the whole validation path that ``CreateOperator`` and
``min_feature_level`` share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from descriptors import DML_FEATURE_LEVEL, DML_OPERATOR_TYPE, SCHEMA, OperatorSchema

from .activations import BY_OPERATOR
from .errors import invalid_arg
from .featurelevels import ALL_LEVELS, level_name
from .ops import activation, mvn, mvn1, prelu, qlmm, slice1, softmax, top_k, top_k1
from .ops import slice as slice0
from .validation import Band, Context, Validated, check_fields, check_support, unwrap_operator_desc

OP = DML_OPERATOR_TYPE
FL = DML_FEATURE_LEVEL


@dataclass(frozen=True)
class OperatorSpec:
    operator: DML_OPERATOR_TYPE
    # An ops/ module, or a module-like namespace generated from a table (activations): it has
    # SUPPORT, validate, plan and reference.
    module: Any
    introduced: DML_FEATURE_LEVEL
    in_place: bool = False

    @property
    def schema(self) -> OperatorSchema:
        return SCHEMA[self.operator]

    @property
    def support(self) -> tuple[Band, ...]:
        return tuple(self.module.SUPPORT)


REGISTRY: dict[DML_OPERATOR_TYPE, OperatorSpec] = {
    OP.DML_OPERATOR_SLICE: OperatorSpec(OP.DML_OPERATOR_SLICE, slice0, FL.DML_FEATURE_LEVEL_1_0),
    OP.DML_OPERATOR_SLICE1: OperatorSpec(OP.DML_OPERATOR_SLICE1, slice1, FL.DML_FEATURE_LEVEL_2_1),
    OP.DML_OPERATOR_TOP_K: OperatorSpec(OP.DML_OPERATOR_TOP_K, top_k, FL.DML_FEATURE_LEVEL_2_0),
    OP.DML_OPERATOR_TOP_K1: OperatorSpec(OP.DML_OPERATOR_TOP_K1, top_k1, FL.DML_FEATURE_LEVEL_2_1),
    OP.DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION: OperatorSpec(
        OP.DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION, mvn, FL.DML_FEATURE_LEVEL_1_0),
    OP.DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1: OperatorSpec(
        OP.DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1, mvn1, FL.DML_FEATURE_LEVEL_2_1),
    OP.DML_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY: OperatorSpec(
        OP.DML_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY, qlmm, FL.DML_FEATURE_LEVEL_2_1),
    OP.DML_OPERATOR_ACTIVATION_PARAMETERIZED_RELU: OperatorSpec(
        OP.DML_OPERATOR_ACTIVATION_PARAMETERIZED_RELU, prelu, FL.DML_FEATURE_LEVEL_1_0,
        in_place=True),
    # Activations in the one activation table (emulator/activations.py); all run in place.
    **{op: OperatorSpec(op, activation.module(op), BY_OPERATOR[op].introduced, in_place=True)
       for op in (OP.DML_OPERATOR_ACTIVATION_ELU, OP.DML_OPERATOR_ACTIVATION_HARD_SIGMOID,
                  OP.DML_OPERATOR_ACTIVATION_IDENTITY, OP.DML_OPERATOR_ACTIVATION_LEAKY_RELU,
                  OP.DML_OPERATOR_ACTIVATION_LINEAR, OP.DML_OPERATOR_ACTIVATION_PARAMETRIC_SOFTPLUS,
                  OP.DML_OPERATOR_ACTIVATION_RELU, OP.DML_OPERATOR_ACTIVATION_SCALED_ELU,
                  OP.DML_OPERATOR_ACTIVATION_SCALED_TANH, OP.DML_OPERATOR_ACTIVATION_SIGMOID,
                  OP.DML_OPERATOR_ACTIVATION_SOFTPLUS, OP.DML_OPERATOR_ACTIVATION_SOFTSIGN,
                  OP.DML_OPERATOR_ACTIVATION_TANH, OP.DML_OPERATOR_ACTIVATION_THRESHOLDED_RELU,
                  OP.DML_OPERATOR_ACTIVATION_SHRINK, OP.DML_OPERATOR_ACTIVATION_CELU,
                  OP.DML_OPERATOR_ACTIVATION_GELU)},
    **{op: OperatorSpec(op, softmax.module(op), FL.DML_FEATURE_LEVEL_1_0, in_place=True)
       for op in (OP.DML_OPERATOR_ACTIVATION_SOFTMAX, OP.DML_OPERATOR_ACTIVATION_LOG_SOFTMAX,
                  OP.DML_OPERATOR_ACTIVATION_HARDMAX)},
}


def not_implemented(op_type: DML_OPERATOR_TYPE) -> str:
    return (f"{op_type.name} is not implemented by dml-emulator (implemented: "
            + ", ".join(op.name for op in REGISTRY) + ")")


def spec_for(op_type: DML_OPERATOR_TYPE, level: int) -> OperatorSpec:
    """The spec of an operator the emulator implements and the level has; else E_INVALIDARG."""
    spec = REGISTRY.get(op_type)
    if spec is None:
        raise invalid_arg(not_implemented(op_type))
    if spec.introduced > level:
        raise invalid_arg(
            f"{op_type.name} was introduced in {level_name(spec.introduced)}; this device "
            f"emulates {level_name(level)}")
    return spec


def validate_operator(desc: Any, level: int) -> tuple[OperatorSpec, Validated]:
    """Normalise and validate an operator desc at ``level``: DMLError (E_INVALIDARG) if invalid."""
    op_type, inner = unwrap_operator_desc(desc)
    spec = spec_for(op_type, level)
    ctx = Context(op_type, level)
    values = check_fields(ctx, spec.schema, inner)
    # The operator's own rules first: when they fail, no feature level would help, so the
    # support tables' "X or later allows it" hint is only given when it is true.
    spec.module.validate(ctx, values)
    check_support(ctx, spec.support, spec.schema, values)
    return spec, Validated(op_type, spec.schema, level, values)


def min_feature_level(operator_desc: Any) -> DML_FEATURE_LEVEL | None:
    """The lowest feature level the emulator knows at which the desc is valid; None if none."""
    from .errors import DMLError

    for level in ALL_LEVELS:
        try:
            validate_operator(operator_desc, level)
        except DMLError:
            continue
        return level
    return None
