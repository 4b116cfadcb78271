"""The activations group: its facts from emulator/support/activations.json, driven through the
device (availability, the bands a later level widens, the "same" constraints) and the rules the
existing modules keep (effective rank of SOFTMAX/LOG_SOFTMAX/HARDMAX, SOFTPLUS's Steepness).

activations.py defines no rule functions (the pages state nothing beyond the tables for the
operators without a module), so each test below checks one table fact: a desc that is valid and
one that breaks exactly that fact, whose error names the field.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from descriptors import *
from descriptors import DML_OPERATOR_TYPE
from emulator import DMLCreateDevice1, DMLError, min_feature_level
from emulator.support.loader import HERE

F32 = DML_TENSOR_DATA_TYPE_FLOAT32
F16 = DML_TENSOR_DATA_TYPE_FLOAT16
I32 = DML_TENSOR_DATA_TYPE_INT32
I8 = DML_TENSOR_DATA_TYPE_INT8
U16 = DML_TENSOR_DATA_TYPE_UINT16
SIZES = (2, 3, 4)


def t(sizes: tuple[int, ...] = SIZES, dt: Any = F32) -> Any:
    return tensor_desc(sizes, dt)


def create(desc: Any, level: str = "6_4") -> None:
    DMLCreateDevice1(feature_level=level).CreateOperator(
        DML_OPERATOR_DESC(Desc=desc))


def relu_grad(dt: Any = F32, out: tuple[int, ...] = SIZES, grad_dt: Any = None) -> Any:
    return DML_ACTIVATION_RELU_GRAD_OPERATOR_DESC(
        InputTensor=t(dt=dt), InputGradientTensor=t(dt=grad_dt or dt),
        OutputGradientTensor=t(out, dt))


def swish(out: tuple[int, ...] = SIZES, dt: Any = F32) -> Any:
    return DML_ACTIVATION_SWISH_OPERATOR_DESC(
        InputTensor=t(dt=dt), OutputTensor=t(out, dt), SigmoidInputScale=1.0)


def hard_swish(out: tuple[int, ...] = SIZES, out_dt: Any = F32) -> Any:
    return DML_ACTIVATION_HARD_SWISH_OPERATOR_DESC(
        InputTensor=t(), OutputTensor=t(out, out_dt), Alpha=1 / 6, Beta=0.5)


# ----------------------------------------------------------------------------------------------
# The JSON files themselves


def test_group_lists_all_24_operators_without_rules():
    table = json.loads((HERE / "activations.json").read_text(encoding="utf-8"))
    names = [op.name for op in DML_OPERATOR_TYPE if op.name.startswith("DML_OPERATOR_ACTIVATION_")
             and not op.name.endswith(("SOFTMAX1", "HARDMAX1"))]
    assert sorted(table) == sorted(names)
    assert all(row["rules"] == [] for row in table.values())


def test_fused_activations_json_names_operators_and_levels():
    data = json.loads((HERE / "fused_activations.json").read_text(encoding="utf-8"))
    assert "about" in data
    levels = {"1_0", "2_0", "2_1", "3_0", "3_1", "4_0", "4_1", "5_0", "5_1", "5_2", "6_0", "6_1",
              "6_2", "6_3", "6_4"}
    for host, row in data["hosts"].items():
        assert DML_OPERATOR_TYPE[host] and row["from"] in levels
        for act, lv in row.get("also", {}).items():
            assert DML_OPERATOR_TYPE[act] and lv in levels
    for act, row in data["activations"].items():
        assert DML_OPERATOR_TYPE[act] and row["from"] in levels
        for host in row.get("hosts", ()):
            assert host in data["hosts"]
    assert data["hosts"]["DML_OPERATOR_GEMM"]["also"]["DML_OPERATOR_ACTIVATION_SOFTMAX"] == "6_1"
    assert data["activations"]["DML_OPERATOR_ELEMENT_WISE_CLIP"]["from"] == "6_0"


# ----------------------------------------------------------------------------------------------
# Operators without a module: RELU_GRAD, SWISH, HARD_SWISH


def test_relu_grad_valid_from_3_0():
    create(relu_grad(), "3_0")
    assert min_feature_level(DML_OPERATOR_DESC(Desc=relu_grad())).name.endswith("3_0")
    with pytest.raises(DMLError, match="DML_FEATURE_LEVEL_3_0"):
        create(relu_grad(), "2_1")


def test_relu_grad_gradient_sizes_match_input():
    with pytest.raises(DMLError, match="OutputGradientTensor"):
        create(relu_grad(out=(2, 3, 5)))


def test_relu_grad_gradient_type_matches_input():
    with pytest.raises(DMLError, match="InputGradientTensor"):
        create(relu_grad(grad_dt=F16))


def test_relu_grad_integers_from_5_1():
    create(relu_grad(I8), "5_1")
    with pytest.raises(DMLError, match=r"InputTensor\.DataType"):
        create(relu_grad(I8), "5_0")


def test_relu_grad_eight_dimensions():
    create(relu_grad(), "3_0")
    big = (1,) * 9
    with pytest.raises(DMLError, match="InputTensor"):
        create(DML_ACTIVATION_RELU_GRAD_OPERATOR_DESC(
            InputTensor=t(big), InputGradientTensor=t(big), OutputGradientTensor=t(big)))


def test_swish_available_from_6_2():
    create(swish(), "6_2")
    with pytest.raises(DMLError, match="DML_FEATURE_LEVEL_6_2"):
        create(swish(), "6_1")


def test_swish_output_sizes_match_input():
    with pytest.raises(DMLError, match=r"OutputTensor\.Sizes"):
        create(swish(out=(2, 3, 5)))


def test_swish_floats_only():
    create(swish(dt=F16))
    with pytest.raises(DMLError, match=r"InputTensor\.DataType"):
        create(swish(dt=I32))


def test_hard_swish_available_from_6_2():
    create(hard_swish(), "6_2")
    with pytest.raises(DMLError, match="DML_FEATURE_LEVEL_6_2"):
        create(hard_swish(), "6_1")


def test_hard_swish_output_matches_input():
    with pytest.raises(DMLError, match=r"OutputTensor\.DataType"):
        create(hard_swish(out_dt=F16))
    with pytest.raises(DMLError, match=r"OutputTensor\.DimensionCount"):
        create(hard_swish(out=(2, 12)))


# ----------------------------------------------------------------------------------------------
# Operators with a module: the bands the pages widen at 5_1, and the rules those modules keep


def test_relu_integers_from_5_1():
    desc = DML_ACTIVATION_RELU_OPERATOR_DESC(InputTensor=t(dt=I32),
                                             OutputTensor=t(dt=I32))
    create(desc, "5_1")
    with pytest.raises(DMLError, match=r"InputTensor\.DataType"):
        create(desc, "5_0")


def test_parameterized_relu_integers_from_5_1_and_slope_sizes():
    def prelu(slope: tuple[int, ...] = SIZES, dt: Any = F32) -> Any:
        return DML_ACTIVATION_PARAMETERIZED_RELU_OPERATOR_DESC(
            InputTensor=t(dt=dt), SlopeTensor=t(slope, dt), OutputTensor=t(dt=dt))

    create(prelu(dt=I8), "5_1")
    with pytest.raises(DMLError, match=r"InputTensor\.DataType"):
        create(prelu(dt=I8), "5_0")
    with pytest.raises(DMLError, match="SlopeTensor"):
        create(prelu(slope=(2, 3, 1)))


def test_shrink_unsigned_from_5_1_and_available_from_2_0():
    def shrink(dt: Any = F32, sizes: tuple[int, ...] = (1, 2, 3, 4)) -> Any:
        return DML_ACTIVATION_SHRINK_OPERATOR_DESC(
            InputTensor=t(sizes, dt), OutputTensor=t(sizes, dt), Bias=0.0, Threshold=0.5)

    create(shrink(), "2_0")
    with pytest.raises(DMLError, match="DML_FEATURE_LEVEL_2_0"):
        create(shrink(), "1_0")
    create(shrink(U16), "5_1")
    with pytest.raises(DMLError, match=r"InputTensor\.DataType"):
        create(shrink(U16), "5_0")


def test_elu_four_dimensions_at_1_0():
    def elu(sizes: tuple[int, ...]) -> Any:
        return DML_ACTIVATION_ELU_OPERATOR_DESC(
            InputTensor=t(sizes), OutputTensor=t(sizes), Alpha=1.0)

    create(elu((1, 2, 3, 4)), "1_0")
    with pytest.raises(DMLError, match=r"InputTensor\.DimensionCount"):
        create(elu(SIZES), "1_0")
    create(elu(SIZES), "3_0")


def test_celu_and_gelu_levels():
    celu = DML_ACTIVATION_CELU_OPERATOR_DESC(InputTensor=t(), OutputTensor=t(),
                                             Alpha=1.0)
    gelu = DML_ACTIVATION_GELU_OPERATOR_DESC(InputTensor=t(), OutputTensor=t())
    create(celu, "3_0")
    create(gelu, "5_1")
    with pytest.raises(DMLError, match="DML_FEATURE_LEVEL_3_0"):
        create(celu, "2_1")
    with pytest.raises(DMLError, match="DML_FEATURE_LEVEL_5_1"):
        create(gelu, "5_0")


def test_softmax_effective_rank_at_most_2():
    ok = DML_ACTIVATION_SOFTMAX_OPERATOR_DESC(InputTensor=t((1, 1, 3, 4)),
                                              OutputTensor=t((1, 1, 3, 4)))
    create(ok)
    bad = DML_ACTIVATION_HARDMAX_OPERATOR_DESC(InputTensor=t(), OutputTensor=t())
    with pytest.raises(DMLError, match=r"InputTensor\.Sizes"):
        create(bad)


def test_softplus_steepness_below_1_from_6_4():
    desc = DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC(InputTensor=t(), OutputTensor=t(),
                                                 Steepness=0.5)
    create(desc, "6_4")
    with pytest.raises(DMLError, match="Steepness"):
        create(desc, "6_3")
