"""The elementwise_math group's rules (emulator/support/elementwise_math.py) and the band its JSON
adds from the feature-level history: for each rule, descs that CreateOperator accepts and descs
that break exactly that rule, naming the field; plus one accepted desc per operator of the group."""

from __future__ import annotations

from typing import Any

import pytest

from descriptors import *
from emulator import DMLCreateDevice1, DMLError, min_feature_level

F32 = DML_TENSOR_DATA_TYPE_FLOAT32
F16 = DML_TENSOR_DATA_TYPE_FLOAT16
I8 = DML_TENSOR_DATA_TYPE_INT8
U8 = DML_TENSOR_DATA_TYPE_UINT8
I32 = DML_TENSOR_DATA_TYPE_INT32
U32 = DML_TENSOR_DATA_TYPE_UINT32

SHAPE = (1, 2, 3, 4)


def td(dt: int = F32, shape: tuple[int, ...] = SHAPE) -> Any:
    return tensor_desc(shape, dt)


def desc(struct: Any, **fields: Any) -> Any:
    return DML_OPERATOR_DESC(Desc=struct(**fields))


def create(struct: Any, level: str = "6_4", **fields: Any) -> Any:
    return DMLCreateDevice1(feature_level=level).CreateOperator(desc(struct, **fields))


def rejects(struct: Any, match: str, level: str = "6_4", **fields: Any) -> None:
    with pytest.raises(DMLError, match=match):
        create(struct, level, **fields)


# ----------------------------------------------------------------------------------------------
# Every operator of the group accepts a plain desc


UNARY_FLOAT = ["ABS", "ACOS", "ASIN", "ATAN", "CEIL", "COS", "EXP", "FLOOR", "IDENTITY", "LOG",
               "RECIP", "SIN", "SQRT", "TAN"]
BINARY_FLOAT = ["ADD", "DIVIDE", "MAX", "MEAN", "MIN", "MULTIPLY", "SUBTRACT"]


def _struct(name: str) -> Any:
    return globals()[f"DML_ELEMENT_WISE_{name}_OPERATOR_DESC"]


CASES: list[tuple[str, dict[str, Any]]] = (
    [(n, {"InputTensor": td(), "OutputTensor": td()}) for n in UNARY_FLOAT]
    + [(n, {"ATensor": td(), "BTensor": td(), "OutputTensor": td()}) for n in BINARY_FLOAT]
    + [(n, {"ATensor": td(U8), "BTensor": td(U8), "OutputTensor": td(U8)})
       for n in ("LOGICAL_AND", "LOGICAL_OR", "LOGICAL_XOR")]
    + [(n, {"ATensor": td(F16), "BTensor": td(F16), "OutputTensor": td(U8)})
       for n in ("LOGICAL_EQUALS", "LOGICAL_GREATER_THAN", "LOGICAL_LESS_THAN")]
    + [("LOGICAL_NOT", {"InputTensor": td(U32), "OutputTensor": td(U32)}),
       ("CLIP", {"InputTensor": td(), "OutputTensor": td(), "Min": -1.0, "Max": 1.0}),
       ("THRESHOLD", {"InputTensor": td(), "OutputTensor": td(), "Min": 0.5}),
       ("CONSTANT_POW", {"InputTensor": td(), "OutputTensor": td(), "Exponent": 2.0}),
       ("POW", {"InputTensor": td(), "ExponentTensor": td(), "OutputTensor": td()}),
       ("QUANTIZE_LINEAR", {"InputTensor": td(), "ScaleTensor": td(),
                            "ZeroPointTensor": td(U8), "OutputTensor": td(U8)}),
       ("DEQUANTIZE_LINEAR", {"InputTensor": td(U8), "ScaleTensor": td(),
                              "ZeroPointTensor": td(U8), "OutputTensor": td()})])


@pytest.mark.parametrize(("name", "fields"), CASES, ids=[c[0] for c in CASES])
def test_group_operator_valid(name: str, fields: dict[str, Any]) -> None:
    create(_struct(name), **fields)
    # every one of these is a 1_0 operator and the desc is one the 1_0 tables allow or a later
    # band widened; the lowest accepting level is what the JSON's bands say
    assert min_feature_level(desc(_struct(name), **fields)) is not None


def test_logical_compare_output_flag_type() -> None:
    # the comparison's output is a flag: UINT8 from 2_0 on, UINT32 only at 1_0
    fields = {"ATensor": td(), "BTensor": td(), "OutputTensor": td(U8)}
    assert min_feature_level(desc(DML_ELEMENT_WISE_LOGICAL_EQUALS_OPERATOR_DESC, **fields)) \
        == DML_FEATURE_LEVEL_2_0
    rejects(DML_ELEMENT_WISE_LOGICAL_EQUALS_OPERATOR_DESC, r"BTensor\.DataType",
            ATensor=td(), BTensor=td(F16), OutputTensor=td(U8))


# ----------------------------------------------------------------------------------------------
# element_wise_pow: before 3_0 the exponent has the input's data type


def test_pow_same_type_before_3_0_valid() -> None:
    create(DML_ELEMENT_WISE_POW_OPERATOR_DESC, "2_1",
           InputTensor=td(F16), ExponentTensor=td(F16), OutputTensor=td(F16))


def test_pow_mixed_types_before_3_0_rejected() -> None:
    rejects(DML_ELEMENT_WISE_POW_OPERATOR_DESC, r"ExponentTensor\.DataType", "2_1",
            InputTensor=td(F32), ExponentTensor=td(F16), OutputTensor=td(F32))


def test_pow_mixed_types_from_3_0_valid() -> None:
    fields = {"InputTensor": td(F32), "ExponentTensor": td(I32), "OutputTensor": td(F32)}
    create(DML_ELEMENT_WISE_POW_OPERATOR_DESC, "3_0", **fields)
    assert min_feature_level(desc(DML_ELEMENT_WISE_POW_OPERATOR_DESC, **fields)) \
        == DML_FEATURE_LEVEL_3_0
    fields = {"InputTensor": td(F32), "ExponentTensor": td(F16), "OutputTensor": td(F32)}
    assert min_feature_level(desc(DML_ELEMENT_WISE_POW_OPERATOR_DESC, **fields)) \
        == DML_FEATURE_LEVEL_3_0


# ----------------------------------------------------------------------------------------------
# CONSTANT_POW: the history's 3_0 integer widening (a band the page's table does not show)


def test_constant_pow_integer_from_3_0() -> None:
    fields = {"InputTensor": td(I32), "OutputTensor": td(I32), "Exponent": 2.0}
    create(DML_ELEMENT_WISE_CONSTANT_POW_OPERATOR_DESC, "3_0", **fields)
    rejects(DML_ELEMENT_WISE_CONSTANT_POW_OPERATOR_DESC, r"InputTensor", "2_1", **fields)
    assert min_feature_level(desc(DML_ELEMENT_WISE_CONSTANT_POW_OPERATOR_DESC, **fields)) \
        == DML_FEATURE_LEVEL_3_0


# ----------------------------------------------------------------------------------------------
# element_wise_quantize_linear


def ql(**over: Any) -> dict[str, Any]:
    return dict({"InputTensor": td(F32), "ScaleTensor": td(F32), "ZeroPointTensor": td(U8),
                 "OutputTensor": td(U8)}, **over)


def test_quantize_linear_valid() -> None:
    create(DML_ELEMENT_WISE_QUANTIZE_LINEAR_OPERATOR_DESC, "1_0", **ql())
    create(DML_ELEMENT_WISE_QUANTIZE_LINEAR_OPERATOR_DESC, "2_1",
           **ql(InputTensor=td(I32), ZeroPointTensor=td(I8), OutputTensor=td(I8)))
    create(DML_ELEMENT_WISE_QUANTIZE_LINEAR_OPERATOR_DESC, "6_0",
           **ql(InputTensor=td(F16), ScaleTensor=td(F16)))
    create(DML_ELEMENT_WISE_QUANTIZE_LINEAR_OPERATOR_DESC, "6_2", **ql(ZeroPointTensor=None))


def test_quantize_linear_zero_point_required_before_6_2() -> None:
    rejects(DML_ELEMENT_WISE_QUANTIZE_LINEAR_OPERATOR_DESC, r"ZeroPointTensor", "6_1",
            **ql(ZeroPointTensor=None))
    assert min_feature_level(desc(DML_ELEMENT_WISE_QUANTIZE_LINEAR_OPERATOR_DESC,
                                  **ql(ZeroPointTensor=None))) == DML_FEATURE_LEVEL_6_2


def test_quantize_linear_int32_input_needs_float32_scale() -> None:
    rejects(DML_ELEMENT_WISE_QUANTIZE_LINEAR_OPERATOR_DESC, r"ScaleTensor\.DataType", "6_0",
            **ql(InputTensor=td(I32), ScaleTensor=td(F16)))


def test_quantize_linear_float_input_scale_same_type() -> None:
    rejects(DML_ELEMENT_WISE_QUANTIZE_LINEAR_OPERATOR_DESC, r"ScaleTensor\.DataType", "6_0",
            **ql(InputTensor=td(F16), ScaleTensor=td(F32)))
    rejects(DML_ELEMENT_WISE_QUANTIZE_LINEAR_OPERATOR_DESC, r"ScaleTensor\.DataType", "6_0",
            **ql(InputTensor=td(F32), ScaleTensor=td(F16)))


# ----------------------------------------------------------------------------------------------
# element_wise_dequantize_linear


def dql(**over: Any) -> dict[str, Any]:
    return dict({"InputTensor": td(U8), "ScaleTensor": td(F32), "ZeroPointTensor": td(U8),
                 "OutputTensor": td(F32)}, **over)


def test_dequantize_linear_valid() -> None:
    create(DML_ELEMENT_WISE_DEQUANTIZE_LINEAR_OPERATOR_DESC, "1_0", **dql())
    create(DML_ELEMENT_WISE_DEQUANTIZE_LINEAR_OPERATOR_DESC, "6_0",
           **dql(ScaleTensor=td(F16), OutputTensor=td(F16)))
    create(DML_ELEMENT_WISE_DEQUANTIZE_LINEAR_OPERATOR_DESC, "6_2", **dql(ZeroPointTensor=None))


def test_dequantize_linear_zero_point_required_before_6_2() -> None:
    rejects(DML_ELEMENT_WISE_DEQUANTIZE_LINEAR_OPERATOR_DESC, r"ZeroPointTensor", "6_1",
            **dql(ZeroPointTensor=None))
    assert min_feature_level(desc(DML_ELEMENT_WISE_DEQUANTIZE_LINEAR_OPERATOR_DESC,
                                  **dql(ZeroPointTensor=None))) == DML_FEATURE_LEVEL_6_2


def test_dequantize_linear_type_pairs() -> None:
    # the "same DataType" constraints of the JSON (no rule function needed)
    rejects(DML_ELEMENT_WISE_DEQUANTIZE_LINEAR_OPERATOR_DESC, r"ZeroPointTensor\.DataType",
            **dql(ZeroPointTensor=td(I8)))
    rejects(DML_ELEMENT_WISE_DEQUANTIZE_LINEAR_OPERATOR_DESC, r"ScaleTensor\.DataType",
            **dql(ScaleTensor=td(F16)))
