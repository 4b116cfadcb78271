"""Rules of the reduction group (REDUCE, ARGMIN/ARGMAX, the normalizations, the cumulative
operators and the SOFTMAX1 family) that the support tables cannot express.

Each function is named in ``reduction.json``'s ``rules`` lists and receives the validated fields
(``v``): reduced output sizes, attribute ranges (axes against the input's rank, LocalSize, P),
broadcasting of per-channel tensors, REDUCE's per-function data-type tables and the level-dependent
BATCH_NORMALIZATION Spatial rule. The ``same`` constraints and the bands are checked by the loader.
MEAN_VARIANCE_NORMALIZATION and MEAN_VARIANCE_NORMALIZATION1 have their rules in ``emulator/ops``.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

from descriptors import DML_FEATURE_LEVEL, DML_REDUCE_FUNCTION, DML_TENSOR_DATA_TYPE

from ..ops.activation import check_fused
from ..validation import Context, Tensor, fmt, same

__all__ = [
    "arg_reduce_axes", "batch_normalization", "batch_normalization_grad",
    "batch_normalization_training", "cumulative_axis", "local_response_normalization",
    "local_response_normalization_grad", "lp_normalization", "mean_variance_normalization2",
    "reduce_axes", "reduce_function_types", "softmax1_axes",
]

FL = DML_FEATURE_LEVEL
RF = DML_REDUCE_FUNCTION
DT = DML_TENSOR_DATA_TYPE


# ----------------------------------------------------------------------------------------------
# Shared helpers


def _axes(ctx: Context, v: SimpleNamespace) -> None:
    """AxisCount >= 1 and every entry of Axes in [0, InputTensor.DimensionCount - 1]."""
    rank = v.InputTensor.dim_count
    ctx.require(v.AxisCount >= 1, "AxisCount", v.AxisCount, "at least one axis must be given")
    for k, a in enumerate(v.Axes):
        ctx.require(a < rank, f"Axes[{k}]", a,
                    f"must be in [0, InputTensor.DimensionCount - 1] = [0, {rank - 1}]")


def _reduced_sizes(ctx: Context, v: SimpleNamespace) -> None:
    """OutputTensor.Sizes = InputTensor.Sizes with every axis in Axes set to 1."""
    _axes(ctx, v)
    reduced = set(v.Axes)
    want = tuple(1 if d in reduced else s for d, s in enumerate(v.InputTensor.sizes))
    ctx.require(v.OutputTensor.sizes == want, "OutputTensor.Sizes", v.OutputTensor.sizes,
                f"must be the input sizes with each reduced axis set to 1, i.e. {fmt(want)}")


def _broadcastable(ctx: Context, name: str, t: Tensor | None, inp: Tensor) -> None:
    """Each dimension of ``t`` is 1 (broadcast) or InputTensor's size of that dimension."""
    if t is None:
        return
    for d, (s, n) in enumerate(zip(t.sizes, inp.sizes)):
        ctx.require(s in (1, n), f"{name}.Sizes[{d}]", s,
                    f"must be 1 (broadcast) or InputTensor.Sizes[{d}] = {n}")


# ----------------------------------------------------------------------------------------------
# REDUCE, ARGMIN, ARGMAX


def reduce_axes(ctx: Context, v: SimpleNamespace) -> None:
    """REDUCE: axes in range; the output keeps the rank, reduced axes have size 1."""
    _reduced_sizes(ctx, v)


def arg_reduce_axes(ctx: Context, v: SimpleNamespace) -> None:
    """ARGMIN / ARGMAX: axes in range; the output keeps the rank, reduced axes have size 1."""
    _reduced_sizes(ctx, v)


_F = (DT.DML_TENSOR_DATA_TYPE_FLOAT32, DT.DML_TENSOR_DATA_TYPE_FLOAT16)
_I32 = (DT.DML_TENSOR_DATA_TYPE_INT32, DT.DML_TENSOR_DATA_TYPE_UINT32)
_I64 = (DT.DML_TENSOR_DATA_TYPE_INT64, DT.DML_TENSOR_DATA_TYPE_UINT64)
_SMALL = (DT.DML_TENSOR_DATA_TYPE_INT16, DT.DML_TENSOR_DATA_TYPE_INT8,
          DT.DML_TENSOR_DATA_TYPE_UINT16, DT.DML_TENSOR_DATA_TYPE_UINT8)
_ARG_OUT = (DT.DML_TENSOR_DATA_TYPE_INT64, DT.DML_TENSOR_DATA_TYPE_INT32,
            DT.DML_TENSOR_DATA_TYPE_UINT64, DT.DML_TENSOR_DATA_TYPE_UINT32)
_Types = tuple[DML_TENSOR_DATA_TYPE, ...]
_Table = tuple[tuple[DML_FEATURE_LEVEL, _Types, _Types], ...]

# The page's per-function tables: (from level, InputTensor types, OutputTensor types). The ranks
# of each table are those of the JSON bands (4 before 3_0, 1 to 8 from 3_0) for every function.
_ARG: _Table = (
    (FL.DML_FEATURE_LEVEL_1_0, _F, (DT.DML_TENSOR_DATA_TYPE_UINT32,)),
    (FL.DML_FEATURE_LEVEL_2_1, _F + _I32 + _SMALL, (DT.DML_TENSOR_DATA_TYPE_UINT32,)),
    (FL.DML_FEATURE_LEVEL_3_0, _F + _I32 + _SMALL, _ARG_OUT),
    (FL.DML_FEATURE_LEVEL_4_1, _F + _I32 + _I64 + _SMALL, _ARG_OUT),
)
_FLOAT_ONLY: _Table = ((FL.DML_FEATURE_LEVEL_1_0, _F, _F),)
_L1: _Table = (
    (FL.DML_FEATURE_LEVEL_1_0, _F, _F),
    (FL.DML_FEATURE_LEVEL_5_0, _F + _I32 + _I64, _F + _I32 + _I64),
)
_MINMAX: _Table = (
    (FL.DML_FEATURE_LEVEL_1_0, _F, _F),
    (FL.DML_FEATURE_LEVEL_2_1, _F + _I32, _F + _I32),
    (FL.DML_FEATURE_LEVEL_3_0, _F + _I32 + _SMALL, _F + _I32 + _SMALL),
    (FL.DML_FEATURE_LEVEL_5_0, _F + _I32 + _I64 + _SMALL, _F + _I32 + _I64 + _SMALL),
)
_SUM: _Table = (
    (FL.DML_FEATURE_LEVEL_1_0, _F, _F),
    (FL.DML_FEATURE_LEVEL_2_1, _F + _I32, _F + _I32),
    (FL.DML_FEATURE_LEVEL_5_0, _F + _I32 + _I64, _F + _I32 + _I64),
)
REDUCE_TYPES: dict[DML_REDUCE_FUNCTION, _Table] = {
    RF.DML_REDUCE_FUNCTION_ARGMAX: _ARG, RF.DML_REDUCE_FUNCTION_ARGMIN: _ARG,
    RF.DML_REDUCE_FUNCTION_AVERAGE: _FLOAT_ONLY, RF.DML_REDUCE_FUNCTION_L2: _FLOAT_ONLY,
    RF.DML_REDUCE_FUNCTION_LOG_SUM: _FLOAT_ONLY, RF.DML_REDUCE_FUNCTION_LOG_SUM_EXP: _FLOAT_ONLY,
    RF.DML_REDUCE_FUNCTION_L1: _L1, RF.DML_REDUCE_FUNCTION_SUM_SQUARE: _L1,
    RF.DML_REDUCE_FUNCTION_MIN: _MINMAX, RF.DML_REDUCE_FUNCTION_MAX: _MINMAX,
    RF.DML_REDUCE_FUNCTION_MULTIPLY: _SUM, RF.DML_REDUCE_FUNCTION_SUM: _SUM,
}


def _types(row: tuple[DML_FEATURE_LEVEL, _Types, _Types], output: bool) -> _Types:
    return row[2] if output else row[1]


def _first_level(table: _Table, output: bool, dt: DML_TENSOR_DATA_TYPE
                 ) -> DML_FEATURE_LEVEL | None:
    for row in table:
        if dt in _types(row, output):
            return row[0]
    return None


def _type_names(types: Sequence[DML_TENSOR_DATA_TYPE]) -> str:
    return ", ".join(t.name.removeprefix("DML_TENSOR_DATA_TYPE_") for t in types)


def reduce_function_types(ctx: Context, v: SimpleNamespace) -> None:
    """REDUCE: the data types the page's table for ``Function`` allows at this level; the output
    has the input's DataType except for ARGMIN/ARGMAX (an integer index type)."""
    fn = v.Function
    table = REDUCE_TYPES[fn]
    row = [r for r in table if r[0] <= ctx.level][-1]
    for output, name in ((False, "InputTensor"), (True, "OutputTensor")):
        dt = getattr(v, name).data_type
        allowed = _types(row, output)
        if dt not in allowed:
            later = _first_level(table, output, dt)
            ctx.fail(f"{name}.DataType", dt,
                     f"{fn.name} accepts {_type_names(allowed)} for {name} at this level",
                     later if later is not None and later > ctx.level else None)
    if fn not in (RF.DML_REDUCE_FUNCTION_ARGMAX, RF.DML_REDUCE_FUNCTION_ARGMIN):
        same(ctx, "InputTensor", "OutputTensor", "DataType",
             v.InputTensor.data_type, v.OutputTensor.data_type)


# ----------------------------------------------------------------------------------------------
# Batch normalization


def _height_width(rank: int) -> tuple[int, ...]:
    """The Height and Width dimensions: the last two of a tensor of rank 4 or more."""
    return (rank - 2, rank - 1) if rank >= 4 else ()


def batch_normalization(ctx: Context, v: SimpleNamespace) -> None:
    """Mean/Variance/Scale/Bias broadcast against the input; before 4_0, Spatial FALSE forbids
    broadcasting Height and Width of Mean and Variance; the fused activation's own attribute
    rules (SOFTPLUS's Steepness before 6_4), as for every fusing host."""
    check_fused(ctx, v.FusedActivation)
    inp = v.InputTensor
    for name in ("MeanTensor", "VarianceTensor", "ScaleTensor", "BiasTensor"):
        _broadcastable(ctx, name, getattr(v, name), inp)
    if v.Spatial or ctx.level >= FL.DML_FEATURE_LEVEL_4_0:
        return
    for name in ("MeanTensor", "VarianceTensor"):
        t = getattr(v, name)
        for d in _height_width(t.dim_count):
            if t.sizes[d] != inp.sizes[d]:
                ctx.fail(f"{name}.Sizes[{d}]", t.sizes[d],
                         "with Spatial FALSE the Height and Width dimensions must not broadcast: "
                         f"must equal InputTensor.Sizes[{d}] = {inp.sizes[d]} (Spatial is ignored "
                         "from DML_FEATURE_LEVEL_4_0)", FL.DML_FEATURE_LEVEL_4_0)


def batch_normalization_grad(ctx: Context, v: SimpleNamespace) -> None:
    """BATCH_NORMALIZATION_GRAD and _TRAINING_GRAD: MeanTensor's dimensions are 1 or the input's
    (Variance, Scale and the scale/bias gradients share its Sizes)."""
    _broadcastable(ctx, "MeanTensor", v.MeanTensor, v.InputTensor)


def batch_normalization_training(ctx: Context, v: SimpleNamespace) -> None:
    """ScaleTensor's dimensions are 1 or the input's (Bias and the mean/variance outputs share
    its Sizes); the fused activation's own attribute rules."""
    check_fused(ctx, v.FusedActivation)
    _broadcastable(ctx, "ScaleTensor", v.ScaleTensor, v.InputTensor)


# ----------------------------------------------------------------------------------------------
# Other normalizations


def mean_variance_normalization2(ctx: Context, v: SimpleNamespace) -> None:
    """Output has the input's Sizes; Scale/Bias (each optional) broadcast; axes in range."""
    inp = v.InputTensor
    same(ctx, "InputTensor", "OutputTensor", "Sizes", inp.sizes, v.OutputTensor.sizes)
    _broadcastable(ctx, "ScaleTensor", v.ScaleTensor, inp)
    _broadcastable(ctx, "BiasTensor", v.BiasTensor, inp)
    _axes(ctx, v)


def _local_size(ctx: Context, v: SimpleNamespace) -> None:
    ctx.require(v.LocalSize >= 1, "LocalSize", v.LocalSize, "must be at least 1")


def local_response_normalization(ctx: Context, v: SimpleNamespace) -> None:
    """LocalSize >= 1."""
    _local_size(ctx, v)


def local_response_normalization_grad(ctx: Context, v: SimpleNamespace) -> None:
    """LocalSize >= 1."""
    _local_size(ctx, v)


def lp_normalization(ctx: Context, v: SimpleNamespace) -> None:
    """Axis < InputTensor.DimensionCount; P is 1 or 2."""
    rank = v.InputTensor.dim_count
    ctx.require(v.Axis < rank, "Axis", v.Axis,
                f"must be less than InputTensor.DimensionCount ({rank})")
    ctx.require(v.P in (1, 2), "P", v.P, "the order of the norm must be 1 or 2")


# ----------------------------------------------------------------------------------------------
# Cumulative operators, SOFTMAX1 family


def cumulative_axis(ctx: Context, v: SimpleNamespace) -> None:
    """CUMULATIVE_SUMMATION / CUMULATIVE_PRODUCT: Axis < InputTensor.DimensionCount."""
    rank = v.InputTensor.dim_count
    ctx.require(v.Axis < rank, "Axis", v.Axis,
                f"must be less than InputTensor.DimensionCount ({rank})")


def softmax1_axes(ctx: Context, v: SimpleNamespace) -> None:
    """SOFTMAX1 / LOG_SOFTMAX1 / HARDMAX1: AxisCount >= 1, each axis < DimensionCount."""
    _axes(ctx, v)
