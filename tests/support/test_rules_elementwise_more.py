"""The elementwise_more group's rules (emulator/support/elementwise_more.py) and the bands its
JSON adds from the feature-level history: for each rule, a desc that CreateOperator accepts and
descs that break exactly that rule, naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from descriptors import *
from emulator import DMLCreateDevice1, DMLError, min_feature_level

F32 = DML_TENSOR_DATA_TYPE_FLOAT32
F16 = DML_TENSOR_DATA_TYPE_FLOAT16
I8 = DML_TENSOR_DATA_TYPE_INT8
U8 = DML_TENSOR_DATA_TYPE_UINT8
I4 = DML_TENSOR_DATA_TYPE_INT4
U4 = DML_TENSOR_DATA_TYPE_UINT4
I32 = DML_TENSOR_DATA_TYPE_INT32
U32 = DML_TENSOR_DATA_TYPE_UINT32

SCALE = DML_QUANTIZATION_TYPE_SCALE
SCALE_ZP = DML_QUANTIZATION_TYPE_SCALE_ZERO_POINT


def td(shape: tuple[int, ...], dt: int = F32) -> Any:
    return tensor_desc(shape, dt)


def create(struct: Any, level: str = "6_4", **fields: Any) -> Any:
    return DMLCreateDevice1(feature_level=level).CreateOperator(
        DML_OPERATOR_DESC(Desc=struct(**fields)))


def rejects(struct: Any, match: str, level: str = "6_4", **fields: Any) -> None:
    with pytest.raises(DMLError, match=match):
        create(struct, level, **fields)


# ----------------------------------------------------------------------------------------------
# ELEMENT_WISE_QUANTIZED_LINEAR_ADD


def qla(**over: Any) -> dict[str, Any]:
    shape = (2, 3)
    return dict({
        "ATensor": td(shape, U8), "AScaleTensor": td((1, 1)), "AZeroPointTensor": td((1, 1), U8),
        "BTensor": td(shape, I8), "BScaleTensor": td((1, 1)), "BZeroPointTensor": td((1, 1), I8),
        "OutputScaleTensor": td((1, 1)), "OutputZeroPointTensor": td((1, 1), U8),
        "OutputTensor": td(shape, U8)}, **over)


def test_quantized_linear_add_valid() -> None:
    create(DML_ELEMENT_WISE_QUANTIZED_LINEAR_ADD_OPERATOR_DESC, **qla())
    # the zero points are optional
    create(DML_ELEMENT_WISE_QUANTIZED_LINEAR_ADD_OPERATOR_DESC, **qla(
        AZeroPointTensor=None, BZeroPointTensor=None, OutputZeroPointTensor=None))


@pytest.mark.parametrize("field", ["AScaleTensor", "AZeroPointTensor", "BScaleTensor",
                                   "BZeroPointTensor", "OutputScaleTensor",
                                   "OutputZeroPointTensor"])
def test_quantized_linear_add_single_element(field: str) -> None:
    dt = F32 if "Scale" in field else qla()[field].Desc.DataType
    rejects(DML_ELEMENT_WISE_QUANTIZED_LINEAR_ADD_OPERATOR_DESC, rf"{field}\.Sizes",
            **qla(**{field: td((1, 2), dt)}))


def test_quantized_linear_add_sizes() -> None:
    rejects(DML_ELEMENT_WISE_QUANTIZED_LINEAR_ADD_OPERATOR_DESC, r"BTensor\.Sizes",
            **qla(BTensor=td((2, 4), I8)))
    rejects(DML_ELEMENT_WISE_QUANTIZED_LINEAR_ADD_OPERATOR_DESC, r"OutputTensor\.Sizes",
            **qla(OutputTensor=td((3, 2), U8)))


# ----------------------------------------------------------------------------------------------
# DYNAMIC_QUANTIZE_LINEAR


def dql(**over: Any) -> dict[str, Any]:
    return dict({"InputTensor": td((2, 5), F16), "OutputTensor": td((2, 5), I8),
                 "OutputScaleTensor": td((1, 1)), "OutputZeroPointTensor": td((1, 1), I8)},
                **over)


def test_dynamic_quantize_linear_valid() -> None:
    create(DML_DYNAMIC_QUANTIZE_LINEAR_OPERATOR_DESC, **dql())


def test_dynamic_quantize_linear_single_element() -> None:
    rejects(DML_DYNAMIC_QUANTIZE_LINEAR_OPERATOR_DESC, r"OutputScaleTensor\.Sizes",
            **dql(OutputScaleTensor=td((2, 1))))
    rejects(DML_DYNAMIC_QUANTIZE_LINEAR_OPERATOR_DESC, r"OutputZeroPointTensor\.Sizes",
            **dql(OutputZeroPointTensor=td((1, 3), I8)))


def test_dynamic_quantize_linear_sizes() -> None:
    rejects(DML_DYNAMIC_QUANTIZE_LINEAR_OPERATOR_DESC, r"OutputTensor\.Sizes",
            **dql(OutputTensor=td((5, 2), I8)))


# ----------------------------------------------------------------------------------------------
# ELEMENT_WISE_CLIP1 and ELEMENT_WISE_CLIP_GRAD1


def test_clip1() -> None:
    fields = {"InputTensor": td((2, 3), I32), "OutputTensor": td((2, 3), I32), "ScaleBias": None,
              "MinMaxDataType": I32, "Min": -5, "Max": 7}
    create(DML_ELEMENT_WISE_CLIP1_OPERATOR_DESC, level="5_0", **fields)
    rejects(DML_ELEMENT_WISE_CLIP1_OPERATOR_DESC, "MinMaxDataType",
            **dict(fields, MinMaxDataType=F32, Min=-5.0, Max=7.0))


def test_clip_grad1() -> None:
    fields = {"InputTensor": td((4,), F16), "InputGradientTensor": td((4,), F16),
              "OutputGradientTensor": td((4,), F16), "MinMaxDataType": F16, "Min": -1.0,
              "Max": 1.0}
    create(DML_ELEMENT_WISE_CLIP_GRAD1_OPERATOR_DESC, level="5_0", **fields)
    with pytest.raises(DMLError, match=r"MinMaxDataType.*OutputGradientTensor"):
        create(DML_ELEMENT_WISE_CLIP_GRAD1_OPERATOR_DESC, **dict(fields, MinMaxDataType=F32))


# ----------------------------------------------------------------------------------------------
# ADAM_OPTIMIZER


def adam(shape: tuple[int, ...] = (1, 2, 3, 4), step: tuple[int, ...] = (1, 1, 1, 1)
         ) -> dict[str, Any]:
    names = ("InputParametersTensor", "InputFirstMomentTensor", "InputSecondMomentTensor",
             "GradientTensor", "OutputParametersTensor", "OutputFirstMomentTensor",
             "OutputSecondMomentTensor")
    return dict({n: td(shape) for n in names}, TrainingStepTensor=td(step), LearningRate=0.01,
                Beta1=0.9, Beta2=0.999, Epsilon=1e-8)


def test_adam_optimizer() -> None:
    create(DML_ADAM_OPTIMIZER_OPERATOR_DESC, level="3_0", **adam())
    rejects(DML_ADAM_OPTIMIZER_OPERATOR_DESC, r"TrainingStepTensor\.Sizes",
            **adam(step=(1, 1, 1, 2)))


def test_adam_optimizer_4_0_band() -> None:
    # the history's 4_0 widening (no table on the page): 1 to 8 dimensions from 4_0
    desc = DML_OPERATOR_DESC(Desc=DML_ADAM_OPTIMIZER_OPERATOR_DESC(**adam((6,), (1,))))
    assert min_feature_level(desc) == DML_FEATURE_LEVEL_4_0


# ----------------------------------------------------------------------------------------------
# ELEMENT_WISE_IF: the 2_1 band comes from the history


def test_if_integer_types_from_2_1() -> None:
    desc = DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_IF_OPERATOR_DESC(
        ConditionTensor=td((1, 1, 2, 2), U8), ATensor=td((1, 1, 2, 2), I32),
        BTensor=td((1, 1, 2, 2), I32), OutputTensor=td((1, 1, 2, 2), I32)))
    assert min_feature_level(desc) == DML_FEATURE_LEVEL_2_1


# ----------------------------------------------------------------------------------------------
# QUANTIZE and DEQUANTIZE


def quantize(qtype: Any = SCALE_ZP, tensors: tuple[Any, ...] | None = None,
             inp: Any = None, out: Any = None) -> dict[str, Any]:
    if tensors is None:
        tensors = (td((1, 4)), td((1, 4), I4)) if qtype == SCALE_ZP else (td((1, 4)),)
    return {"InputTensor": inp or td((3, 4)), "QuantizationType": qtype,
            "QuantizationTensorCount": len(tensors), "QuantizationTensors": tensors,
            "OutputTensor": out or td((3, 4), I4)}


def dequantize(qtype: Any = SCALE_ZP, tensors: tuple[Any, ...] | None = None,
               inp: Any = None, out: Any = None) -> dict[str, Any]:
    if tensors is None:
        tensors = (td((3, 1), F16), td((3, 1), U8)) if qtype == SCALE_ZP \
            else (td((3, 1), F16),)
    return {"InputTensor": inp or td((3, 4), U8), "QuantizationType": qtype,
            "QuantizationTensorCount": len(tensors), "QuantizationTensors": tensors,
            "OutputTensor": out or td((3, 4), F16)}


def test_quantize_valid() -> None:
    create(DML_QUANTIZE_OPERATOR_DESC, level="6_3", **quantize())
    create(DML_QUANTIZE_OPERATOR_DESC, **quantize(SCALE))
    # blockwise: 4 columns in blocks of 2
    create(DML_QUANTIZE_OPERATOR_DESC, **quantize(tensors=(td((3, 2)), td((3, 2), I4))))


def test_dequantize_valid() -> None:
    create(DML_DEQUANTIZE_OPERATOR_DESC, level="6_3", **dequantize())
    create(DML_DEQUANTIZE_OPERATOR_DESC, **dequantize(SCALE))


@pytest.mark.parametrize("struct,make", [(DML_QUANTIZE_OPERATOR_DESC, quantize),
                                         (DML_DEQUANTIZE_OPERATOR_DESC, dequantize)])
def test_quantization_type_and_count(struct: Any, make: Any) -> None:
    good = make()
    rejects(struct, "QuantizationType", **make(DML_QUANTIZATION_TYPE_NONE, good[
        "QuantizationTensors"]))
    # SCALE with two tensors, SCALE_ZERO_POINT with one
    rejects(struct, "QuantizationTensorCount", **make(SCALE, good["QuantizationTensors"]))
    rejects(struct, "QuantizationTensorCount",
            **make(SCALE_ZP, good["QuantizationTensors"][:1]))


def test_quantize_tensor_shapes() -> None:
    rejects(DML_QUANTIZE_OPERATOR_DESC, r"QuantizationTensors\[0\]\.DimensionCount",
            **quantize(SCALE, (td((1, 1, 4)),)))
    rejects(DML_QUANTIZE_OPERATOR_DESC, r"QuantizationTensors\[0\]\.Sizes",
            **quantize(SCALE, (td((1, 3)),)))
    rejects(DML_QUANTIZE_OPERATOR_DESC, r"QuantizationTensors\[1\]\.Sizes",
            **quantize(tensors=(td((1, 4)), td((1, 1), I4))))
    rejects(DML_QUANTIZE_OPERATOR_DESC, r"OutputTensor\.Sizes",
            **quantize(out=td((4, 3), I4)))


def test_quantize_tensor_types() -> None:
    # the scale is a float of InputTensor's type; the zero point has OutputTensor's type
    rejects(DML_QUANTIZE_OPERATOR_DESC, r"QuantizationTensors\[0\]\.DataType",
            **quantize(SCALE, (td((1, 4), I8),)))
    rejects(DML_QUANTIZE_OPERATOR_DESC, r"QuantizationTensors\[0\]\.DataType",
            **quantize(SCALE, (td((1, 4), F16),)))
    rejects(DML_QUANTIZE_OPERATOR_DESC, r"QuantizationTensors\[1\]\.DataType",
            **quantize(tensors=(td((1, 4)), td((1, 4), U4))))


def test_dequantize_tensor_types_and_shapes() -> None:
    rejects(DML_DEQUANTIZE_OPERATOR_DESC, r"QuantizationTensors\[0\]\.DataType",
            **dequantize(SCALE, (td((3, 1)),)))  # FLOAT32 scale, FLOAT16 output
    rejects(DML_DEQUANTIZE_OPERATOR_DESC, r"QuantizationTensors\[1\]\.DataType",
            **dequantize(tensors=(td((3, 1), F16), td((3, 1), I8))))
    rejects(DML_DEQUANTIZE_OPERATOR_DESC, r"QuantizationTensors\[0\]\.Sizes",
            **dequantize(SCALE, (td((2, 1), F16),)))
    rejects(DML_DEQUANTIZE_OPERATOR_DESC, r"OutputTensor\.Sizes",
            **dequantize(out=td((3, 2), F16)))
