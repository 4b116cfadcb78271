"""Rules of the elementwise_math group that the support tables cannot express.

Each function is named in ``elementwise_math.json``'s ``rules`` lists and receives the validated
fields (``v``). Most operators of the group need none: their pages say nothing beyond the bands and
the "same DataType / DimensionCount / Sizes" constraints. What is left:

- ELEMENT_WISE_POW: before DML_FEATURE_LEVEL_3_0 the exponent tensor has the input's data type.
- ELEMENT_WISE_QUANTIZE_LINEAR / ELEMENT_WISE_DEQUANTIZE_LINEAR: ZeroPointTensor is optional only
  from DML_FEATURE_LEVEL_6_2 (the schema marks it optional at every level), and QUANTIZE_LINEAR's
  ScaleTensor type follows InputTensor's type.

The ``same`` constraints and the bands are checked before these rules run, so the tensors' ranks
and data types are already those the tables allow.
"""

from __future__ import annotations

from types import SimpleNamespace

from descriptors import DML_FEATURE_LEVEL, DML_TENSOR_DATA_TYPE

from ..validation import Context, Tensor, same

__all__ = ["element_wise_dequantize_linear", "element_wise_pow", "element_wise_quantize_linear"]

FL_3_0 = DML_FEATURE_LEVEL.DML_FEATURE_LEVEL_3_0
FL_6_2 = DML_FEATURE_LEVEL.DML_FEATURE_LEVEL_6_2
INT32 = DML_TENSOR_DATA_TYPE.DML_TENSOR_DATA_TYPE_INT32
FLOAT32 = DML_TENSOR_DATA_TYPE.DML_TENSOR_DATA_TYPE_FLOAT32


def _zero_point_present(ctx: Context, v: SimpleNamespace) -> None:
    """Before 6_2 the zero-point tensor is a required input."""
    if v.ZeroPointTensor is None and ctx.level < FL_6_2:
        ctx.fail("ZeroPointTensor", None,
                 "the zero-point tensor may only be omitted from DML_FEATURE_LEVEL_6_2 on",
                 allowed_from=FL_6_2)


def element_wise_pow(ctx: Context, v: SimpleNamespace) -> None:
    """Before 3_0, ExponentTensor.DataType == InputTensor.DataType; from 3_0 it may differ."""
    if ctx.level < FL_3_0:
        same(ctx, "InputTensor", "ExponentTensor", "DataType", v.InputTensor.data_type,
             v.ExponentTensor.data_type)


def element_wise_quantize_linear(ctx: Context, v: SimpleNamespace) -> None:
    """ZeroPointTensor required before 6_2; ScaleTensor.DataType is FLOAT32 when InputTensor is
    INT32, otherwise InputTensor.DataType."""
    _zero_point_present(ctx, v)
    data: Tensor = v.InputTensor
    scale: Tensor = v.ScaleTensor
    if data.data_type == INT32:
        ctx.require(scale.data_type == FLOAT32, "ScaleTensor.DataType", scale.data_type,
                    "an INT32 InputTensor is quantized with a FLOAT32 ScaleTensor")
    else:
        same(ctx, "InputTensor", "ScaleTensor", "DataType", data.data_type, scale.data_type)


def element_wise_dequantize_linear(ctx: Context, v: SimpleNamespace) -> None:
    """ZeroPointTensor required before 6_2 (the data-type pairs are ``same`` constraints)."""
    _zero_point_present(ctx, v)
