"""Generic validation: tensor-desc rules, schema-driven field checks and the support tables.

``validate_operator(desc, level)`` turns a user's ``DML_OPERATOR_DESC`` into a ``Validated``
operator (its normalised fields: ``Tensor`` objects, tuples of ints, floats) or raises ``DMLError``
(E_INVALIDARG) whose message names the operator, the field, the value, the rule and, where a later
feature level would accept it, that level. Per-operator rules live in ``emulator.ops``; this module
holds only what every operator shares.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, NoReturn

import numpy as np

from descriptors import (
    DML_BUFFER_TENSOR_DESC,
    DML_FEATURE_LEVEL,
    DML_OPERATOR_DESC,
    DML_OPERATOR_TYPE,
    DML_TENSOR_DATA_TYPE,
    DML_TENSOR_DESC,
    DML_TENSOR_DIMENSION_COUNT_MAX1,
    DML_TENSOR_FLAGS,
    DML_TENSOR_TYPE,
    ELEMENT_SIZE_BITS,
    NUMPY_DTYPE,
    SCHEMA,
    DMLCalcBufferTensorSize,
    OperatorSchema,
    schema,
)

from .cvalues import (
    INT_RANGES,
    UINT32_MAX,
    UINT64_MAX,
    is_int,
    show,
    to_int,
)
from .cvalues import fail as c_fail
from .errors import DMLError, invalid_arg
from .featurelevels import ALL_LEVELS, level_name
from .resources import typed_view

OWNED_BY_DML = DML_TENSOR_FLAGS.DML_TENSOR_FLAG_OWNED_BY_DML
fmt = show  # the name every rule module uses


def data_type_name(value: int) -> str:
    try:
        return DML_TENSOR_DATA_TYPE(value).name
    except ValueError:
        return str(value)


@dataclass(frozen=True)
class Tensor:
    """A validated buffer tensor, with strides resolved (packed when the desc gave none)."""

    data_type: DML_TENSOR_DATA_TYPE
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    explicit_strides: bool
    total_bytes: int
    flags: DML_TENSOR_FLAGS
    alignment: int

    @property
    def dim_count(self) -> int:
        return len(self.sizes)

    @property
    def element_size(self) -> int:
        return ELEMENT_SIZE_BITS[self.data_type] // 8

    @property
    def element_count(self) -> int:
        return math.prod(self.sizes)

    @property
    def extent(self) -> int:
        """The elements from the first to the last one the tensor addresses (1 + the last
        element's offset): what its strides reach, whatever TotalTensorSizeInBytes says."""
        return 1 + sum((n - 1) * s for n, s in zip(self.sizes, self.strides))

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(NUMPY_DTYPE[self.data_type])

    @property
    def owned_by_dml(self) -> bool:
        return bool(self.flags & OWNED_BY_DML)

    def view(self, data: np.ndarray) -> np.ndarray:
        """The logical array (shaped by Sizes) this tensor addresses in ``data`` (bytes; a view)."""
        return np.lib.stride_tricks.as_strided(
            typed_view(data, self.dtype), shape=self.sizes,
            strides=[s * self.element_size for s in self.strides])

    @property
    def base_alignment(self) -> int:
        """The binding offset alignment this tensor requires (16, or more if it guarantees more)."""
        return max(16, self.alignment)


def packed_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(sizes):
        strides.append(acc)
        acc *= s
    return tuple(reversed(strides))


@dataclass(frozen=True)
class Band:
    """One "Tensor support" table of an operator page: from ``level`` on, each tensor's allowed
    dimension counts and data types (until a later band replaces it)."""

    level: DML_FEATURE_LEVEL
    tensors: Mapping[str, tuple[tuple[int, ...], tuple[DML_TENSOR_DATA_TYPE, ...]]]


def band_at(bands: Sequence[Band], level: int) -> Band | None:
    """The band in force at ``level`` (the latest one that starts at or before it)."""
    best = None
    for band in bands:
        if band.level <= level and (best is None or band.level > best.level):
            best = band
    return best


class Context:
    """Where a validation runs: which operator, at which feature level; builds the errors."""

    def __init__(self, operator: DML_OPERATOR_TYPE, level: int, prefix: str = ""):
        self.operator = operator
        self.level = level
        self.prefix = prefix  # "FusedActivation." inside a fused desc

    @property
    def op_name(self) -> str:
        return self.operator.name

    def fail(self, field: str, value: Any, rule: str, allowed_from: int | None = None) -> NoReturn:
        """Raise E_INVALIDARG: '<op>: <field> = <value> is invalid: <rule>.' (+ the level)."""
        text = c_fail(self.where(field), value, rule).message
        if allowed_from is not None:
            text += (f" {level_name(allowed_from)} or later allows it; this device emulates "
                     f"{level_name(self.level)}.")
        raise invalid_arg(text)

    def where(self, field: str) -> str:
        """How a message names ``field``: '<operator>: <prefix><field>'."""
        return f"{self.op_name}: {self.prefix}{field}"

    def require(self, condition: bool, field: str, value: Any, rule: str) -> None:
        if not condition:
            self.fail(field, value, rule)


def check_int(ctx: Context, field: str, value: Any, lo: int, hi: int, ctype: str) -> int:
    """A C integer of ``ctype`` in [lo, hi] (``cvalues.to_int``, named as the operator's field)."""
    return to_int(value, ctx.where(field), ctype, lo, hi)


def check_array(ctx: Context, field: str, value: Any, count: int, ctype: str) -> tuple[int, ...]:
    if not isinstance(value, tuple):
        ctx.fail(field, value, f"must be an array of {count} {ctype} values")
    if len(value) != count:
        ctx.fail(field, value, f"must hold exactly {count} values (its count field says {count})")
    lo, hi = INT_RANGES[ctype]
    return tuple(check_int(ctx, f"{field}[{i}]", v, lo, hi, ctype) for i, v in enumerate(value))


def unwrap_tensor_desc(ctx: Context, field: str, value: Any) -> DML_BUFFER_TENSOR_DESC:
    """Accept DML_TENSOR_DESC (Type BUFFER) or a DML_BUFFER_TENSOR_DESC directly."""
    if isinstance(value, DML_BUFFER_TENSOR_DESC):
        return value
    if not isinstance(value, DML_TENSOR_DESC):
        ctx.fail(field, value, "must be a DML_TENSOR_DESC (or DML_BUFFER_TENSOR_DESC)")
    if not is_int(value.Type) or value.Type != DML_TENSOR_TYPE.DML_TENSOR_TYPE_BUFFER:
        ctx.fail(f"{field}.Type", value.Type, "the only tensor type is DML_TENSOR_TYPE_BUFFER")
    if not isinstance(value.Desc, DML_BUFFER_TENSOR_DESC):
        ctx.fail(f"{field}.Desc", value.Desc, "must be a DML_BUFFER_TENSOR_DESC")
    return value.Desc


def check_tensor(ctx: Context, field: str, value: Any, is_output: bool) -> Tensor:
    """Every rule of a buffer tensor desc (Microsoft's DML_BUFFER_TENSOR_DESC page) that does not
    depend on the operator."""
    d = unwrap_tensor_desc(ctx, field, value)
    try:
        data_type = DML_TENSOR_DATA_TYPE(d.DataType)
    except ValueError:
        data_type = None
    if data_type is None or data_type == DML_TENSOR_DATA_TYPE.DML_TENSOR_DATA_TYPE_UNKNOWN \
            or not is_int(d.DataType):
        ctx.fail(f"{field}.DataType", d.DataType, "not a valid DML_TENSOR_DATA_TYPE")
    flags = check_int(ctx, f"{field}.Flags", d.Flags, 0, UINT32_MAX, "DML_TENSOR_FLAGS")
    if flags & ~int(OWNED_BY_DML):
        ctx.fail(f"{field}.Flags", d.Flags, "the only tensor flag is DML_TENSOR_FLAG_OWNED_BY_DML")
    if is_output and flags & OWNED_BY_DML:
        ctx.fail(f"{field}.Flags", "DML_TENSOR_FLAG_OWNED_BY_DML",
                 "only input tensors may be owned by DML")
    n = check_int(ctx, f"{field}.DimensionCount", d.DimensionCount, 0, UINT32_MAX, "UINT")
    if not 1 <= n <= DML_TENSOR_DIMENSION_COUNT_MAX1:
        ctx.fail(f"{field}.DimensionCount", n,
                 f"a tensor has 1 to {DML_TENSOR_DIMENSION_COUNT_MAX1} dimensions "
                 "(DML_TENSOR_DIMENSION_COUNT_MAX1)")
    sizes = check_array(ctx, f"{field}.Sizes", d.Sizes, n, schema.UINT)
    for i, s in enumerate(sizes):
        if s < 1:
            ctx.fail(f"{field}.Sizes[{i}]", s, "every size must be at least 1")
    if math.prod(sizes) > UINT32_MAX:
        ctx.fail(f"{field}.Sizes", sizes, f"a tensor holds at most {UINT32_MAX} (2^32-1) elements")
    if d.Strides is None:
        strides, explicit = packed_strides(sizes), False
    else:
        strides = check_array(ctx, f"{field}.Strides", d.Strides, n, schema.UINT)
        explicit = True
    min_total = DMLCalcBufferTensorSize(data_type, n, sizes, strides if explicit else None)
    total = d.TotalTensorSizeInBytes
    if total is None:
        total = min_total
    total = check_int(ctx, f"{field}.TotalTensorSizeInBytes", total, 0, UINT64_MAX, "UINT64")
    if total < min_total:
        ctx.fail(f"{field}.TotalTensorSizeInBytes", total,
                 f"must be at least DMLCalcBufferTensorSize(...) = {min_total} for these "
                 "sizes, strides and data type")
    if total % 4:
        ctx.fail(f"{field}.TotalTensorSizeInBytes", total, "must be a multiple of 4")
    align = check_int(ctx, f"{field}.GuaranteedBaseOffsetAlignment",
                      d.GuaranteedBaseOffsetAlignment, 0, UINT32_MAX, "UINT")
    elem = max(1, ELEMENT_SIZE_BITS[data_type] // 8)
    if align and (align & (align - 1) or align < elem):
        ctx.fail(f"{field}.GuaranteedBaseOffsetAlignment", align,
                 f"must be 0 or a power of two at least the element size ({elem} bytes)")
    if is_output and explicit:
        clash = self_overlap(sizes, strides)
        if clash is not None:
            ctx.fail(f"{field}.Strides", strides,
                     f"elements {fmt(clash[0])} and {fmt(clash[1])} share memory; the elements of "
                     "an output must not overlap (the result would be undefined)")
    return Tensor(data_type, sizes, strides, explicit, total, DML_TENSOR_FLAGS(flags), align)


EXACT_OVERLAP_LIMIT = 1 << 22  # elements checked one by one when the quick proof fails


def self_overlap(sizes: Sequence[int], strides: Sequence[int]
                 ) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """Two coordinates of a tensor that address the same element, or None if all are distinct.

    Quick proof: with the dimensions of size > 1 sorted by stride, each stride is beyond the
    reach of all smaller ones. Otherwise every element offset is computed (bounded size); a
    tensor too large to check that way is reported through its first two dimensions."""
    dims = sorted((st, n, d) for d, (n, st) in enumerate(zip(sizes, strides)) if n > 1)
    reach = 0
    for st, n, _ in dims:
        if st <= reach:
            break
        reach += (n - 1) * st
    else:
        return None
    count = math.prod(sizes)
    if count > EXACT_OVERLAP_LIMIT:
        d0 = dims[0][2]
        a = [0] * len(sizes)
        b = [0] * len(sizes)
        b[d0] = 1
        return tuple(a), tuple(b)  # unprovable at this size: refuse rather than race
    offsets = np.zeros(sizes, dtype=np.int64)
    for d, (n, st) in enumerate(zip(sizes, strides)):
        shape = [1] * len(sizes)
        shape[d] = n
        offsets = offsets + (np.arange(n, dtype=np.int64) * st).reshape(shape)
    flat = offsets.ravel()
    order = np.argsort(flat, kind="stable")
    dup = np.nonzero(flat[order][1:] == flat[order][:-1])[0]
    if not dup.size:
        return None
    i, j = order[dup[0]], order[dup[0] + 1]
    return (tuple(int(v) for v in np.unravel_index(i, sizes)),
            tuple(int(v) for v in np.unravel_index(j, sizes)))


def _allowed(band: Band | None, field: str, t: Tensor) -> tuple[bool, bool]:
    if band is None or field not in band.tensors:
        return False, False
    dims, types = band.tensors[field]
    return t.dim_count in dims, t.data_type in types


def check_support(ctx: Context, bands: Sequence[Band], sch: OperatorSchema,
                  values: SimpleNamespace) -> None:
    """Each tensor's dimension count and data type against the table in force at the level."""
    band = band_at(bands, ctx.level)
    for name, label, t in tensors_of(sch, values):
        dims_ok, type_ok = _allowed(band, name, t)
        if dims_ok and type_ok:
            continue
        later = next((lv for lv in ALL_LEVELS if lv > ctx.level
                      and all(_allowed(band_at(bands, lv), name, t))), None)
        if not type_ok:
            allowed = band.tensors[name][1] if band and name in band.tensors else ()
            ctx.fail(f"{label}.DataType", t.data_type,
                     "supported data types here are " + (", ".join(
                         a.name.removeprefix("DML_TENSOR_DATA_TYPE_") for a in allowed)
                         or "none"), later)
        dims = band.tensors[name][0] if band and name in band.tensors else ()
        ctx.fail(f"{label}.DimensionCount", t.dim_count,
                 f"supported dimension counts here are {_ranges(dims)}", later)


def tensors_of(sch: OperatorSchema, values: SimpleNamespace
               ) -> list[tuple[str, str, Tensor]]:
    """(field, label, tensor) for every tensor present, in bind-point order: each tensor of a
    tensor array (JOIN's InputTensors) on its own, labelled ``InputTensors[i]``."""
    return [(f.name, label, t) for f in sch.fields if f.is_tensor
            for label, t in labelled(f.name, getattr(values, f.name))]


def labelled(name: str, value: Tensor | tuple[Tensor, ...] | None) -> list[tuple[str, Tensor]]:
    """A tensor field's tensors with their labels: none if absent, each of an array on its own."""
    if value is None:
        return []
    if isinstance(value, tuple):
        return [(f"{name}[{i}]", t) for i, t in enumerate(value)]
    return [(name, value)]


def _ranges(dims: Sequence[int]) -> str:
    return f"{min(dims)} to {max(dims)}" if len(dims) > 1 else str(dims[0]) if dims else "none"


@dataclass(frozen=True)
class Validated:
    """An operator desc that passed every rule at ``level``: what CreateOperator keeps."""

    operator: DML_OPERATOR_TYPE
    schema: OperatorSchema
    level: int
    values: SimpleNamespace

    def tensor(self, name: str) -> Tensor | tuple[Tensor, ...] | None:
        """A tensor field's validated tensor (a tuple for a tensor array; None if absent)."""
        return getattr(self.values, name)


def unwrap_operator_desc(desc: Any) -> tuple[DML_OPERATOR_TYPE, Any]:
    """``DML_OPERATOR_DESC`` (or a bare operator desc struct) → (type, inner desc)."""
    if isinstance(desc, DML_OPERATOR_DESC):
        op_type, inner = desc.Type, desc.Desc
    elif hasattr(type(desc), "OPERATOR_TYPE"):
        op_type, inner = type(desc).OPERATOR_TYPE, desc
    else:
        raise invalid_arg(f"expected a DML_OPERATOR_DESC, got {type(desc).__name__}")
    if op_type is None or not is_int(op_type) \
            or int(op_type) not in DML_OPERATOR_TYPE._value2member_map_:
        raise invalid_arg(f"DML_OPERATOR_DESC.Type = {fmt(op_type)} is not a DML_OPERATOR_TYPE")
    op_type = DML_OPERATOR_TYPE(int(op_type))
    if op_type == DML_OPERATOR_TYPE.DML_OPERATOR_INVALID:
        raise invalid_arg("DML_OPERATOR_DESC.Type = DML_OPERATOR_INVALID is not an operator")
    if inner is None:
        raise invalid_arg(f"{op_type.name}: DML_OPERATOR_DESC.Desc is null")
    inner_type = getattr(type(inner), "OPERATOR_TYPE", None)
    if inner_type is not None and inner_type != op_type:
        raise invalid_arg(
            f"DML_OPERATOR_DESC.Type = {op_type.name} does not match its Desc, a "
            f"{type(inner).__name__} (which is {DML_OPERATOR_TYPE(inner_type).name})")
    sch = SCHEMA.get(op_type)
    if sch is not None and inner_type is None:
        raise invalid_arg(f"{op_type.name}: DML_OPERATOR_DESC.Desc must be a {sch.struct_name}, "
                          f"not {type(inner).__name__}")
    return op_type, inner


def same(ctx: Context, a: str, b: str, what: str, va: Any, vb: Any) -> None:
    """Two tensors must agree on ``what`` (DataType, DimensionCount, Sizes ...)."""
    if va != vb:
        ctx.fail(f"{b}.{what}", vb, f"{a} and {b} must have the same {what} "
                 f"({a}.{what} is {fmt(va)})")


__all__ = ["Band", "Context", "DMLError", "Tensor", "Validated", "band_at", "check_support", "fmt",
           "labelled", "packed_strides", "same", "tensors_of", "unwrap_operator_desc"]
