"""The operator registry: every DirectML operator type, what validates it and what executes it.

``REGISTRY`` maps each of the 177 ``DML_OPERATOR_TYPE``s to its ``OperatorSpec``: its schema (the
generated fields), its support tables and rules (``emulator.support``: the Availability level, the
"Tensor support" bands, the "must have the same" constraints, the rules the tables cannot say) and,
where the emulator can run it, the module that plans and references it (``emulator.ops``). An
operator without such a module is *valid but not executable*: CreateOperator judges it exactly,
CompileOperator fails with E_NOTIMPL. ``validate_operator`` is the one validation path that
``CreateOperator``, ``min_feature_level`` and ``dml-emulator check`` share.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from descriptors import (
    DML_FEATURE_LEVEL,
    DML_OPERATOR_TYPE,
    DML_TENSOR_DATA_TYPE,
    SCHEMAS,
    OperatorSchema,
)

from . import compute, elementwise, movement, reduction
from .elementwise import blockwise
from .errors import E_NOTIMPL, DMLError, invalid_arg
from .featurelevels import ALL_LEVELS, level_name
from .fieldtypes import check_fields
from .ops import (
    adam_optimizer,
    dynamic_quantize_linear,
    mvn,
    mvn1,
    mvn2,
    qlmm,
    slice1,
    softmax,
    top_k,
    top_k1,
)
from .ops import slice as slice0
from .support.loader import SUPPORT, OperatorSupport
from .validation import (
    Band,
    Context,
    Validated,
    check_support,
    fmt,
    labelled,
    same,
    tensors_of,
    unwrap_operator_desc,
)

OP = DML_OPERATOR_TYPE
FL = DML_FEATURE_LEVEL

# The operators with a CPU kernel: each module has plan and reference, and validate for the
# rules its support entry does not name (see ops/__init__.py). The activation and softmax modules
# are generated per operator from their tables.
EXECUTABLE: dict[DML_OPERATOR_TYPE, Any] = {
    OP.DML_OPERATOR_SLICE: slice0, OP.DML_OPERATOR_SLICE1: slice1,
    OP.DML_OPERATOR_TOP_K: top_k, OP.DML_OPERATOR_TOP_K1: top_k1,
    OP.DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION: mvn,
    OP.DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1: mvn1,
    OP.DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION2: mvn2,
    OP.DML_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY: qlmm,
    OP.DML_OPERATOR_DYNAMIC_QUANTIZE_LINEAR: dynamic_quantize_linear,
    OP.DML_OPERATOR_ADAM_OPTIMIZER: adam_optimizer,
    **{op: softmax.module(op) for op in softmax.OPERATORS},
    **{row.operator: elementwise.module(row.operator) for row in elementwise.ROWS},
    **{op: blockwise.module(op) for op in blockwise.ROW_OF},
    **{row.operator: movement.module(row.operator) for row in movement.ROWS},
    **{row.operator: reduction.module(row.operator) for row in reduction.ROWS},
    **{row.operator: compute.module(row.operator) for row in compute.ROWS},
}


@dataclass(frozen=True)
class OperatorSpec:
    operator: DML_OPERATOR_TYPE
    schema: OperatorSchema
    support_entry: OperatorSupport | None  # None: no support table known (not even validated)
    module: Any | None  # the ops module when executable

    @property
    def executable(self) -> bool:
        return self.module is not None

    @property
    def validated(self) -> bool:
        return self.support_entry is not None

    @property
    def introduced(self) -> DML_FEATURE_LEVEL:
        """The level of the page's Availability line (the header's block when no page says)."""
        if self.support_entry is not None:
            return self.support_entry.available
        return self.schema.introduced

    @property
    def in_place(self) -> bool:
        """Whether an output may alias an input: DirectML's schema flag."""
        return self.schema.in_place

    @property
    def kernel_types(self) -> frozenset[DML_TENSOR_DATA_TYPE]:
        """The data types the CPU kernel executes (the module's KERNEL_TYPES). A band may admit
        more; those descs are valid but not executable here."""
        return frozenset(self.module.KERNEL_TYPES) if self.module is not None else frozenset()

    def not_executable_because(self, validated: Validated) -> str | None:
        """Why this valid operator cannot run here (None: it can)."""
        if self.module is None:
            return "it has no CPU kernel yet"
        for _, label, t in tensors_of(self.schema, validated.values):
            if t.data_type not in self.kernel_types:
                return (f"its kernel does not handle {label}.DataType = {t.data_type.name} "
                        "yet")
        unsupported = getattr(self.module, "unsupported", None)
        return unsupported(validated.values) if unsupported is not None else None

    @property
    def support(self) -> tuple[Band, ...]:
        return self.support_entry.bands if self.support_entry is not None else ()


REGISTRY: dict[DML_OPERATOR_TYPE, OperatorSpec] = {
    s.operator: OperatorSpec(s.operator, s, SUPPORT.get(s.operator), EXECUTABLE.get(s.operator))
    for s in SCHEMAS
}


def not_executable(spec: OperatorSpec, level: int, reason: str) -> DMLError:
    return DMLError(E_NOTIMPL, f"{spec.operator.name} is valid at {level_name(level)} but not yet "
                    f"executable by dml-emulator: {reason} (run 'dml-emulator info' for what "
                    "executes)")


def spec_for(op_type: DML_OPERATOR_TYPE, level: int) -> OperatorSpec:
    """The spec of an operator the level has; else E_INVALIDARG naming the level that has it."""
    spec = REGISTRY[op_type]
    if not spec.validated:
        raise DMLError(E_NOTIMPL, f"{op_type.name}: dml-emulator does not know this operator's "
                       "support tables yet, so it cannot validate it")
    if spec.introduced > level:
        raise invalid_arg(
            f"{op_type.name} was introduced in {level_name(spec.introduced)}; this device "
            f"emulates {level_name(level)}. {level_name(spec.introduced)} or later allows it.")
    return spec


def _check_same(ctx: Context, entry: OperatorSupport, values: SimpleNamespace) -> None:
    for rule in entry.same:
        # Absent optional tensors are skipped; a tensor array's tensors each take part.
        present = [p for n in rule.tensors for p in labelled(n, getattr(values, n))]
        for what in rule.what:
            attr = {"DataType": "data_type", "DimensionCount": "dim_count", "Sizes": "sizes"}[what]
            for (a, ta), (b, tb) in itertools.pairwise(present):
                same(ctx, a, b, what, getattr(ta, attr), getattr(tb, attr))


def _check_enum_levels(ctx: Context, entry: OperatorSupport, values: SimpleNamespace) -> None:
    for field, levels in entry.enum_levels.items():
        value = getattr(values, field)
        needed = levels.get(getattr(value, "name", ""))
        if needed is not None and needed > ctx.level:
            ctx.fail(field, value, f"{fmt(value)} is accepted from {level_name(needed)}", needed)


def validate_operator(desc: Any, level: int) -> tuple[OperatorSpec, Validated]:
    """Normalise and validate an operator desc at ``level``: DMLError (E_INVALIDARG) if invalid.

    Order: the fields' C types; the executable module's own rules; the "same" constraints; the
    support bands (tensor ranks and data types, naming the first level that would accept a
    rejected tensor); enum values by level; the page's other rules (which may then rely on the
    ranks the bands allow)."""
    op_type, inner = unwrap_operator_desc(desc)
    spec = spec_for(op_type, level)
    ctx = Context(op_type, level)
    values = check_fields(ctx, spec.schema, inner)
    if spec.module is not None and hasattr(spec.module, "validate"):
        spec.module.validate(ctx, values)
    entry = spec.support_entry
    if entry is not None:
        _check_same(ctx, entry, values)
    check_support(ctx, spec.support, spec.schema, values)
    if entry is not None:
        _check_enum_levels(ctx, entry, values)
        for rule in entry.rules:
            rule(ctx, values)
    return spec, Validated(op_type, spec.schema, level, values)


def min_feature_level(operator_desc: Any) -> DML_FEATURE_LEVEL | None:
    """The lowest feature level (1_0 … 6_4) at which the desc is valid; None if at none."""
    for level in ALL_LEVELS:
        try:
            validate_operator(operator_desc, level)
        except DMLError:
            continue
        return level
    return None
