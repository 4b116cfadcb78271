"""The reduction group's rules (emulator/support/reduction.py): for each rule, a desc that
CreateOperator accepts and descs that break exactly that rule, naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from descriptors import *
from emulator import DMLCreateDevice1, DMLError, min_feature_level

F32 = DML_TENSOR_DATA_TYPE_FLOAT32
F16 = DML_TENSOR_DATA_TYPE_FLOAT16
I32 = DML_TENSOR_DATA_TYPE_INT32
U32 = DML_TENSOR_DATA_TYPE_UINT32
I64 = DML_TENSOR_DATA_TYPE_INT64


def td(shape: tuple[int, ...], dt: int = F32) -> Any:
    return tensor_desc(shape, dt)


def create(struct: Any, level: str = "6_4") -> Any:
    return DMLCreateDevice1(feature_level=level).CreateOperator(DML_OPERATOR_DESC(Desc=struct))


def rejects(struct: Any, match: str, level: str = "6_4") -> None:
    with pytest.raises(DMLError, match=match):
        create(struct, level)


# ----------------------------------------------------------------------------------------------
# REDUCE


def reduce(fn: Any = DML_REDUCE_FUNCTION_SUM, shape: tuple[int, ...] = (2, 3, 4),
           out: tuple[int, ...] = (2, 1, 4), axes: tuple[int, ...] = (1,), dt: int = F32,
           out_dt: int | None = None) -> Any:
    return DML_REDUCE_OPERATOR_DESC(
        Function=fn, InputTensor=td(shape, dt), OutputTensor=td(out, dt if out_dt is None else out_dt),
        AxisCount=len(axes), Axes=axes)


def test_reduce_axes_valid() -> None:
    create(reduce())
    create(reduce(out=(1, 1, 1), axes=(0, 1, 2)))
    create(reduce(out=(2, 1, 1), axes=(2, 1)))


def test_reduce_axes_out_of_range() -> None:
    rejects(reduce(axes=(3,)), r"Axes\[0\]")


def test_reduce_axis_count_zero() -> None:
    rejects(reduce(out=(2, 3, 4), axes=()), r"AxisCount")


def test_reduce_output_sizes() -> None:
    rejects(reduce(out=(2, 3, 4)), r"OutputTensor\.Sizes")
    rejects(reduce(out=(1, 1, 4)), r"OutputTensor\.Sizes")


def test_reduce_function_types_valid() -> None:
    create(reduce(DML_REDUCE_FUNCTION_ARGMAX, out_dt=U32))
    create(reduce(DML_REDUCE_FUNCTION_ARGMIN, out_dt=I64))
    create(reduce(DML_REDUCE_FUNCTION_MAX, dt=DML_TENSOR_DATA_TYPE_INT8))
    create(reduce(DML_REDUCE_FUNCTION_SUM, dt=I64), level="5_0")
    create(reduce(DML_REDUCE_FUNCTION_AVERAGE, dt=F16))


def test_reduce_function_input_type() -> None:
    rejects(reduce(DML_REDUCE_FUNCTION_AVERAGE, dt=I32), r"InputTensor\.DataType")
    rejects(reduce(DML_REDUCE_FUNCTION_SUM, dt=DML_TENSOR_DATA_TYPE_INT8),
            r"InputTensor\.DataType")


def test_reduce_function_type_level() -> None:
    rejects(reduce(DML_REDUCE_FUNCTION_SUM, dt=I64), r"InputTensor\.DataType.*5_0", level="4_1")
    desc = DML_OPERATOR_DESC(Desc=reduce(DML_REDUCE_FUNCTION_SUM, dt=I64))
    assert min_feature_level(desc) == DML_FEATURE_LEVEL_5_0


def test_reduce_arg_output_type() -> None:
    rejects(reduce(DML_REDUCE_FUNCTION_ARGMAX), r"OutputTensor\.DataType")
    # before 3_0 the index output is UINT32 only
    rejects(reduce(DML_REDUCE_FUNCTION_ARGMAX, shape=(1, 2, 3, 4), out=(1, 1, 3, 4),
                   out_dt=I32), r"OutputTensor\.DataType", level="2_1")
    create(reduce(DML_REDUCE_FUNCTION_ARGMAX, shape=(1, 2, 3, 4), out=(1, 1, 3, 4),
                  out_dt=U32), level="2_1")


def test_reduce_same_data_type() -> None:
    rejects(reduce(DML_REDUCE_FUNCTION_SUM, out_dt=F16), r"OutputTensor\.DataType")


# ----------------------------------------------------------------------------------------------
# ARGMIN / ARGMAX


@pytest.mark.parametrize("struct", [DML_ARGMIN_OPERATOR_DESC, DML_ARGMAX_OPERATOR_DESC])
def test_arg_reduce_axes(struct: Any) -> None:
    def make(out: tuple[int, ...], axes: tuple[int, ...]) -> Any:
        return struct(InputTensor=td((2, 3, 4)), OutputTensor=td(out, U32), AxisCount=len(axes),
                      Axes=axes, AxisDirection=DML_AXIS_DIRECTION_DECREASING)

    create(make((2, 3, 1), (2,)))
    create(make((1, 1, 1), (0, 1, 2)))
    rejects(make((2, 3, 4), (2,)), r"OutputTensor\.Sizes")
    rejects(make((2, 3, 1), (5,)), r"Axes\[0\]")
    rejects(make((2, 3, 4), ()), r"AxisCount")


# ----------------------------------------------------------------------------------------------
# Batch normalization


def bn(mean: tuple[int, ...] = (1, 3, 1, 1), spatial: bool = True) -> Any:
    return DML_BATCH_NORMALIZATION_OPERATOR_DESC(
        InputTensor=td((2, 3, 4, 5)), MeanTensor=td(mean), VarianceTensor=td(mean),
        ScaleTensor=td((1, 3, 1, 1)), BiasTensor=td((1, 3, 1, 1)), OutputTensor=td((2, 3, 4, 5)),
        Spatial=spatial, Epsilon=1e-5)


def test_batch_normalization_valid() -> None:
    create(bn())
    create(bn(mean=(2, 3, 4, 5)))
    create(bn(spatial=False, mean=(1, 3, 4, 5)), level="3_1")
    create(bn(spatial=False), level="4_0")  # Spatial is ignored from 4_0


def test_batch_normalization_broadcast() -> None:
    rejects(bn(mean=(1, 2, 1, 1)), r"MeanTensor\.Sizes\[1\]")


def test_batch_normalization_spatial() -> None:
    rejects(bn(spatial=False), r"MeanTensor\.Sizes\[2\].*4_0", level="3_1")


def bn_grad(struct: Any, mean: tuple[int, ...] = (1, 3, 1, 1)) -> Any:
    x = (2, 3, 4, 5)
    return struct(InputTensor=td(x), InputGradientTensor=td(x), MeanTensor=td(mean),
                  VarianceTensor=td(mean), ScaleTensor=td(mean), OutputGradientTensor=td(x),
                  OutputScaleGradientTensor=td(mean), OutputBiasGradientTensor=td(mean),
                  Epsilon=1e-5)


@pytest.mark.parametrize("struct", [DML_BATCH_NORMALIZATION_GRAD_OPERATOR_DESC,
                                    DML_BATCH_NORMALIZATION_TRAINING_GRAD_OPERATOR_DESC])
def test_batch_normalization_grad(struct: Any) -> None:
    create(bn_grad(struct))
    create(bn_grad(struct, mean=(1, 1, 1, 1)))
    rejects(bn_grad(struct, mean=(1, 3, 2, 1)), r"MeanTensor\.Sizes\[2\]")


def bn_training(scale: tuple[int, ...] = (1, 3, 1, 1), fused_add: bool = False) -> Any:
    x = (2, 3, 4, 5)
    return DML_BATCH_NORMALIZATION_TRAINING_OPERATOR_DESC(
        InputTensor=td(x), ScaleTensor=td(scale), BiasTensor=td(scale),
        FusedAddTensor=td(x) if fused_add else None, OutputTensor=td(x),
        OutputMeanTensor=td(scale), OutputVarianceTensor=td(scale), Epsilon=1e-5)


def test_batch_normalization_training() -> None:
    create(bn_training())
    create(bn_training(fused_add=True))
    rejects(bn_training(scale=(1, 6, 1, 1)), r"ScaleTensor\.Sizes\[1\]")


# ----------------------------------------------------------------------------------------------
# MVN2, LRN, LP normalization


def mvn2(out: tuple[int, ...] = (2, 3, 4), scale: tuple[int, ...] | None = (1, 3, 1),
         bias: tuple[int, ...] | None = None, axes: tuple[int, ...] = (1, 2)) -> Any:
    return DML_MEAN_VARIANCE_NORMALIZATION2_OPERATOR_DESC(
        InputTensor=td((2, 3, 4)), ScaleTensor=td(scale) if scale else None,
        BiasTensor=td(bias) if bias else None, OutputTensor=td(out), AxisCount=len(axes),
        Axes=axes, UseMean=True, UseVariance=True, Epsilon=1e-5)


def test_mean_variance_normalization2_valid() -> None:
    create(mvn2())  # Scale without Bias
    create(mvn2(scale=None, bias=(2, 1, 4)))
    create(mvn2(scale=None))


def test_mean_variance_normalization2_rules() -> None:
    rejects(mvn2(out=(2, 3, 5)), r"OutputTensor\.Sizes")
    rejects(mvn2(scale=(1, 2, 1)), r"ScaleTensor\.Sizes\[1\]")
    rejects(mvn2(bias=(1, 1, 3)), r"BiasTensor\.Sizes\[2\]")
    rejects(mvn2(axes=(3,)), r"Axes\[0\]")
    rejects(mvn2(axes=()), r"AxisCount")


@pytest.mark.parametrize("grad", [False, True])
def test_local_response_normalization(grad: bool) -> None:
    def make(local_size: int) -> Any:
        x = td((1, 3, 4, 5))
        common = {"CrossChannel": True, "LocalSize": local_size, "Alpha": 1e-4, "Beta": 0.75,
                  "Bias": 1.0}
        if grad:
            return DML_LOCAL_RESPONSE_NORMALIZATION_GRAD_OPERATOR_DESC(
                InputTensor=x, InputGradientTensor=td((1, 3, 4, 5)),
                OutputGradientTensor=td((1, 3, 4, 5)), **common)
        return DML_LOCAL_RESPONSE_NORMALIZATION_OPERATOR_DESC(
            InputTensor=x, OutputTensor=td((1, 3, 4, 5)), **common)

    create(make(3))
    rejects(make(0), r"LocalSize")


def lp(axis: int = 1, p: int = 2) -> Any:
    return DML_LP_NORMALIZATION_OPERATOR_DESC(InputTensor=td((2, 3, 4)),
                                              OutputTensor=td((2, 3, 4)), Axis=axis,
                                              Epsilon=1e-5, P=p)


def test_lp_normalization() -> None:
    create(lp())
    create(lp(axis=2, p=1))
    rejects(lp(axis=3), r"Axis")
    rejects(lp(p=3), r"P = 3")
    rejects(lp(p=0), r"P = 0")


# ----------------------------------------------------------------------------------------------
# Cumulative operators, SOFTMAX1 family


@pytest.mark.parametrize("product", [False, True])
def test_cumulative_axis(product: bool) -> None:
    def make(axis: int) -> Any:
        x = td((2, 3, 4), I32)
        y = td((2, 3, 4), I32)
        if product:
            return DML_CUMULATIVE_PRODUCT_OPERATOR_DESC(
                InputTensor=x, OutputTensor=y, Axis=axis,
                AxisDirection=DML_AXIS_DIRECTION_INCREASING, HasExclusiveProduct=False)
        return DML_CUMULATIVE_SUMMATION_OPERATOR_DESC(
            InputTensor=x, OutputTensor=y, Axis=axis,
            AxisDirection=DML_AXIS_DIRECTION_DECREASING, HasExclusiveSum=True)

    create(make(2))
    create(make(0))
    rejects(make(3), r"Axis = 3")


@pytest.mark.parametrize("struct", [DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC,
                                    DML_ACTIVATION_LOG_SOFTMAX1_OPERATOR_DESC,
                                    DML_ACTIVATION_HARDMAX1_OPERATOR_DESC])
def test_softmax1_axes(struct: Any) -> None:
    def make(axes: tuple[int, ...]) -> Any:
        return struct(InputTensor=td((2, 2, 2)), OutputTensor=td((2, 2, 2)),
                      AxisCount=len(axes), Axes=axes)

    create(make((0, 2)))
    create(make((2,)))
    rejects(make((0, 3)), r"Axes\[1\]")
    rejects(make(()), r"AxisCount")
