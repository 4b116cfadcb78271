"""The movement group's rules (emulator/support/movement.py): for each rule a desc that
CreateOperator accepts, and descs that break exactly that rule, whose error names the field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from descriptors import *
from emulator import DMLCreateDevice1, DMLError, min_feature_level

F32 = DML_TENSOR_DATA_TYPE_FLOAT32
I32 = DML_TENSOR_DATA_TYPE_INT32
U32 = DML_TENSOR_DATA_TYPE_UINT32
FL = DML_FEATURE_LEVEL


def td(shape: tuple[int, ...], data_type: int = F32) -> Any:
    return tensor_desc(shape, data_type)


def create(struct: Any, level: str = "6_4") -> Any:
    return DMLCreateDevice1(feature_level=level).CreateOperator(DML_OPERATOR_DESC(Desc=struct))


# --- builders: valid by default, any field overridable -------------------------------------

def split(**kw: Any) -> Any:
    f = {"InputTensor": td((2, 6, 4)), "OutputCount": 2,
         "OutputTensors": (td((2, 2, 4)), td((2, 4, 4))), "Axis": 1}
    f.update(kw)
    return DML_SPLIT_OPERATOR_DESC(**f)


def join(**kw: Any) -> Any:
    f = {"InputCount": 2, "InputTensors": (td((2, 2, 4)), td((2, 4, 4))),
         "OutputTensor": td((2, 6, 4)), "Axis": 1}
    f.update(kw)
    return DML_JOIN_OPERATOR_DESC(**f)


def padding(**kw: Any) -> Any:
    f = {"InputTensor": td((1, 1, 2, 3)), "OutputTensor": td((1, 1, 5, 9)),
         "PaddingMode": DML_PADDING_MODE_CONSTANT, "PaddingValue": 0.0, "DimensionCount": 4,
         "StartPadding": (0, 0, 1, 2), "EndPadding": (0, 0, 2, 4)}
    f.update(kw)
    return DML_PADDING_OPERATOR_DESC(**f)


def padding1(**kw: Any) -> Any:
    f = {"InputTensor": td((1, 1, 2, 3)), "OutputTensor": td((1, 1, 5, 9)),
         "PaddingMode": DML_PADDING_MODE_CONSTANT, "PaddingValueDataType": F32,
         "PaddingValue": 9.0, "DimensionCount": 4,
         "StartPadding": (0, 0, 1, 2), "EndPadding": (0, 0, 2, 4)}
    f.update(kw)
    return DML_PADDING1_OPERATOR_DESC(**f)


def gather(**kw: Any) -> Any:
    f = {"InputTensor": td((3, 2)), "IndicesTensor": td((1, 4), U32),
         "OutputTensor": td((4, 2)), "Axis": 0, "IndexDimensions": 1}
    f.update(kw)
    return DML_GATHER_OPERATOR_DESC(**f)


def gather_elements(**kw: Any) -> Any:
    f = {"InputTensor": td((3, 3)), "IndicesTensor": td((2, 3), U32),
         "OutputTensor": td((2, 3)), "Axis": 0}
    f.update(kw)
    return DML_GATHER_ELEMENTS_OPERATOR_DESC(**f)


def scatter_elements(**kw: Any) -> Any:
    f = {"InputTensor": td((3, 3)), "IndicesTensor": td((2, 3), U32),
         "UpdatesTensor": td((2, 3)), "OutputTensor": td((3, 3)), "Axis": 0}
    f.update(kw)
    return DML_SCATTER_OPERATOR_DESC(**f)


def gather_nd(**kw: Any) -> Any:
    f = {"InputTensor": td((2, 2)), "IndicesTensor": td((2, 1), U32),
         "OutputTensor": td((2, 2)), "InputDimensionCount": 2, "IndicesDimensionCount": 2}
    f.update(kw)
    return DML_GATHER_ND_OPERATOR_DESC(**f)


def gather_nd1(**kw: Any) -> Any:
    f = {"InputTensor": td((1, 3, 2, 2)), "IndicesTensor": td((1, 3, 2, 2), U32),
         "OutputTensor": td((1, 1, 3, 2)), "InputDimensionCount": 3,
         "IndicesDimensionCount": 3, "BatchDimensionCount": 1}
    f.update(kw)
    return DML_GATHER_ND1_OPERATOR_DESC(**f)


def scatter_nd(**kw: Any) -> Any:
    f = {"InputTensor": td((4, 3)), "IndicesTensor": td((2, 1), U32),
         "UpdatesTensor": td((2, 3)), "OutputTensor": td((4, 3)),
         "InputDimensionCount": 2, "IndicesDimensionCount": 2}
    f.update(kw)
    return DML_SCATTER_ND_OPERATOR_DESC(**f)


def max_unpooling(**kw: Any) -> Any:
    f = {"InputTensor": td((1, 1, 2, 2)), "IndicesTensor": td((1, 1, 2, 2), U32),
         "OutputTensor": td((1, 1, 4, 4))}
    f.update(kw)
    return DML_MAX_UNPOOLING_OPERATOR_DESC(**f)


def one_hot(**kw: Any) -> Any:
    f = {"IndicesTensor": td((1, 1, 3, 1), U32), "ValuesTensor": td((1, 1, 1, 2)),
         "OutputTensor": td((1, 1, 3, 4)), "Axis": 3}
    f.update(kw)
    return DML_ONE_HOT_OPERATOR_DESC(**f)


def reverse_subsequences(**kw: Any) -> Any:
    f = {"InputTensor": td((1, 1, 3, 4)), "SequenceLengthsTensor": td((1, 1, 3, 1), U32),
         "OutputTensor": td((1, 1, 3, 4)), "Axis": 3}
    f.update(kw)
    return DML_REVERSE_SUBSEQUENCES_OPERATOR_DESC(**f)


def depth_to_space(**kw: Any) -> Any:
    f = {"InputTensor": td((1, 8, 2, 3)), "OutputTensor": td((1, 2, 4, 6)), "BlockSize": 2}
    f.update(kw)
    return DML_DEPTH_TO_SPACE_OPERATOR_DESC(**f)


def depth_to_space1(**kw: Any) -> Any:
    f = {"InputTensor": td((1, 8, 2, 3)), "OutputTensor": td((1, 2, 4, 6)), "BlockSize": 2,
         "Order": DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH}
    f.update(kw)
    return DML_DEPTH_TO_SPACE1_OPERATOR_DESC(**f)


def space_to_depth(**kw: Any) -> Any:
    f = {"InputTensor": td((1, 2, 4, 6)), "OutputTensor": td((1, 8, 2, 3)), "BlockSize": 2}
    f.update(kw)
    return DML_SPACE_TO_DEPTH_OPERATOR_DESC(**f)


def space_to_depth1(**kw: Any) -> Any:
    f = {"InputTensor": td((1, 2, 4, 6)), "OutputTensor": td((1, 8, 2, 3)), "BlockSize": 2,
         "Order": DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW}
    f.update(kw)
    return DML_SPACE_TO_DEPTH1_OPERATOR_DESC(**f)


def tile(**kw: Any) -> Any:
    f = {"InputTensor": td((1, 1, 2, 3)), "OutputTensor": td((1, 1, 6, 9)), "RepeatsCount": 4,
         "Repeats": (1, 1, 3, 3)}
    f.update(kw)
    return DML_TILE_OPERATOR_DESC(**f)


def slice_grad(**kw: Any) -> Any:
    f = {"InputGradientTensor": td((1, 1, 2, 2)), "OutputGradientTensor": td((1, 1, 4, 4)),
         "DimensionCount": 4, "InputWindowOffsets": (0, 0, 0, 1),
         "InputWindowSizes": (1, 1, 4, 3), "InputWindowStrides": (1, 1, -2, 2)}
    f.update(kw)
    return DML_SLICE_GRAD_OPERATOR_DESC(**f)


def fill_value_constant(**kw: Any) -> Any:
    f = {"OutputTensor": td((2, 3)), "ValueDataType": F32, "Value": 13.0}
    f.update(kw)
    return DML_FILL_VALUE_CONSTANT_OPERATOR_DESC(**f)


def fill_value_sequence(**kw: Any) -> Any:
    f = {"OutputTensor": td((1, 3)), "ValueDataType": F32, "ValueStart": 3.0, "ValueDelta": 2.0}
    f.update(kw)
    return DML_FILL_VALUE_SEQUENCE_OPERATOR_DESC(**f)


def diagonal_matrix1(**kw: Any) -> Any:
    f = {"InputTensor": None, "OutputTensor": td((4, 5)), "ValueDataType": F32, "Value": 7.0,
         "DiagonalFillBegin": 0, "DiagonalFillEnd": 1}
    f.update(kw)
    return DML_DIAGONAL_MATRIX1_OPERATOR_DESC(**f)


Builder = Callable[..., Any]

VALID: list[tuple[Builder, dict[str, Any]]] = [
    (split, {}),
    (split, {"OutputCount": 1, "OutputTensors": (td((2, 6, 4)),), "Axis": 2}),
    (join, {}),
    (join, {"InputCount": 3, "InputTensors": (td((1, 1, 2, 2)),) * 3,
            "OutputTensor": td((1, 1, 2, 6)), "Axis": 3}),
    (padding, {}),
    (padding, {"PaddingMode": DML_PADDING_MODE_REFLECTION, "StartPadding": (0, 0, 3, 4),
               "OutputTensor": td((1, 1, 7, 11))}),
    (padding1, {}),
    (padding1, {"InputTensor": td((2, 3), I32), "OutputTensor": td((3, 3), I32),
                "PaddingValueDataType": I32, "PaddingValue": 5, "DimensionCount": 2,
                "StartPadding": (1, 0), "EndPadding": (0, 0)}),
    (gather, {}),
    (gather, {"InputTensor": td((1, 3, 3)), "IndicesTensor": td((1, 1, 2), U32),
              "OutputTensor": td((3, 1, 2)), "Axis": 2, "IndexDimensions": 2}),
    (gather, {"InputTensor": td((1, 3, 2)), "IndicesTensor": td((1, 2, 2), U32),
              "OutputTensor": td((2, 2, 2)), "Axis": 1, "IndexDimensions": 2}),
    (gather, {"InputTensor": td((4,)), "IndicesTensor": td((5,), U32),
              "OutputTensor": td((5,))}),
    (gather_elements, {}),
    (scatter_elements, {}),
    (gather_nd, {}),
    (gather_nd, {"InputTensor": td((3, 4, 5, 6, 7)), "IndicesTensor": td((1, 1, 1, 2, 3), U32),
                 "OutputTensor": td((1, 1, 2, 6, 7)), "InputDimensionCount": 5,
                 "IndicesDimensionCount": 3}),
    (gather_nd, {"InputTensor": td((1, 2, 2, 2)), "IndicesTensor": td((1, 1, 2, 2), U32),
                 "OutputTensor": td((1, 1, 2, 2)), "InputDimensionCount": 3,
                 "IndicesDimensionCount": 2}),
    (gather_nd1, {}),
    (gather_nd1, {"InputTensor": td((2, 2)), "IndicesTensor": td((2, 1), U32),
                  "OutputTensor": td((2, 2)), "InputDimensionCount": 2,
                  "IndicesDimensionCount": 2, "BatchDimensionCount": 0}),
    (scatter_nd, {}),
    (max_unpooling, {}),
    (one_hot, {}),
    (one_hot, {"IndicesTensor": td((1, 1, 1, 4), I32), "ValuesTensor": td((1, 1, 3, 1)),
               "Axis": 2}),
    (reverse_subsequences, {}),
    (reverse_subsequences, {"SequenceLengthsTensor": td((1, 1, 1, 4), U32), "Axis": 2}),
    (depth_to_space, {}),
    (depth_to_space1, {}),
    (space_to_depth, {}),
    (space_to_depth1, {}),
    (tile, {}),
    (slice_grad, {}),
    (slice_grad, {"InputGradientTensor": td((1, 1, 1, 1))}),
    (fill_value_constant, {}),
    (fill_value_constant, {"OutputTensor": td((2, 3), I32), "ValueDataType": I32, "Value": 4}),
    (fill_value_sequence, {}),
    (diagonal_matrix1, {}),
    (diagonal_matrix1, {"InputTensor": td((4, 5)), "Value": 0.0, "DiagonalFillBegin": 1,
                        "DiagonalFillEnd": 0}),
]


@pytest.mark.parametrize("build, fields", VALID,
                         ids=[f"{b.__name__}-{i}" for i, (b, _) in enumerate(VALID)])
def test_valid_descs_are_accepted(build: Builder, fields: dict[str, Any]) -> None:
    create(build(**fields))


INVALID: list[tuple[Builder, dict[str, Any], str]] = [
    # split
    (split, {"OutputTensors": (td((2, 2, 4)), td((2, 3, 4)))}, r"InputTensor\.Sizes\[1\]"),
    (split, {"OutputTensors": (td((2, 2, 4)), td((2, 4, 5)))}, r"OutputTensors\[1\]\.Sizes\[2\]"),
    (split, {"Axis": 3}, r"Axis = 3"),
    # join
    (join, {"OutputTensor": td((2, 7, 4))}, r"OutputTensor\.Sizes\[1\]"),
    (join, {"InputTensors": (td((3, 2, 4)), td((2, 4, 4)))}, r"InputTensors\[0\]\.Sizes\[0\]"),
    (join, {"Axis": 5}, r"Axis = 5"),
    # padding
    (padding, {"OutputTensor": td((1, 1, 5, 8))}, r"OutputTensor\.Sizes"),
    (padding, {"EndPadding": (0, 0, 2, 3)}, r"OutputTensor\.Sizes"),
    (padding, {"DimensionCount": 3, "StartPadding": (0, 1, 2), "EndPadding": (0, 2, 4)},
     r"DimensionCount = 3"),
    # padding1
    (padding1, {"PaddingValueDataType": I32, "PaddingValue": 9}, r"PaddingValueDataType"),
    (padding1, {"OutputTensor": td((1, 1, 6, 9))}, r"OutputTensor\.Sizes"),
    # gather
    (gather, {"OutputTensor": td((4, 3))}, r"OutputTensor\.Sizes"),
    (gather, {"Axis": 2}, r"Axis = 2"),
    (gather, {"IndexDimensions": 3}, r"IndexDimensions = 3"),
    (gather, {"IndicesTensor": td((2, 4), U32)}, r"IndicesTensor\.Sizes"),
    (gather, {"InputTensor": td((2, 3, 3)), "IndicesTensor": td((1, 2, 2), U32),
              "OutputTensor": td((2, 2, 2)), "Axis": 2, "IndexDimensions": 2},
     r"OutputTensor\.DimensionCount"),
    # gather_elements
    (gather_elements, {"IndicesTensor": td((2, 2), U32), "OutputTensor": td((2, 2))},
     r"IndicesTensor\.Sizes\[1\]"),
    (gather_elements, {"OutputTensor": td((3, 3))}, r"OutputTensor\.Sizes"),
    (gather_elements, {"Axis": 2}, r"Axis = 2"),
    # scatter_elements
    (scatter_elements, {"UpdatesTensor": td((2, 2))}, r"UpdatesTensor\.Sizes"),
    (scatter_elements, {"OutputTensor": td((3, 4))}, r"OutputTensor\.Sizes"),
    (scatter_elements, {"IndicesTensor": td((2, 2), U32), "UpdatesTensor": td((2, 2))},
     r"IndicesTensor\.Sizes\[1\]"),
    (scatter_elements, {"Axis": 2}, r"Axis = 2"),
    # gather_nd
    (gather_nd, {"InputDimensionCount": 3}, r"InputDimensionCount = 3"),
    (gather_nd, {"InputDimensionCount": 0}, r"InputDimensionCount = 0"),
    (gather_nd, {"IndicesDimensionCount": 3}, r"IndicesDimensionCount = 3"),
    (gather_nd, {"InputDimensionCount": 1}, r"InputTensor\.Sizes"),
    (gather_nd, {"OutputTensor": td((2, 3))}, r"OutputTensor\.Sizes"),
    (gather_nd, {"IndicesTensor": td((2, 3), U32)}, r"IndicesTensor\.Sizes\[1\]"),
    # The tuple must end within the meaningful input dimensions (a 2-tuple into the one
    # meaningful dimension of {1, 4}: found by the fuzzer, the plan had no dimension to index).
    (gather_nd, {"InputTensor": td((1, 4)), "InputDimensionCount": 1,
                 "IndicesTensor": td((1, 2), U32), "IndicesDimensionCount": 1,
                 "OutputTensor": td((1, 1))}, r"may not exceed InputDimensionCount \(1\)"),
    # gather_nd1
    (gather_nd1, {"BatchDimensionCount": 4}, r"BatchDimensionCount = 4"),
    (gather_nd1, {"IndicesTensor": td((1, 2, 2, 2), U32), "OutputTensor": td((1, 1, 2, 2))},
     r"IndicesTensor\.Sizes\[1\]"),
    (gather_nd1, {"OutputTensor": td((1, 1, 3, 3))}, r"OutputTensor\.Sizes"),
    # scatter_nd
    (scatter_nd, {"UpdatesTensor": td((2, 2))}, r"UpdatesTensor\.Sizes"),
    (scatter_nd, {"OutputTensor": td((4, 4))}, r"OutputTensor\.Sizes"),
    (scatter_nd, {"IndicesDimensionCount": 3}, r"IndicesDimensionCount = 3"),
    # max_unpooling
    (max_unpooling, {"IndicesTensor": td((1, 1, 2, 1), U32)}, r"IndicesTensor\.Sizes"),
    # one_hot
    (one_hot, {"IndicesTensor": td((1, 1, 3, 2), U32)}, r"IndicesTensor\.Sizes\[3\]"),
    (one_hot, {"IndicesTensor": td((1, 1, 2, 1), U32)}, r"IndicesTensor\.Sizes\[2\]"),
    (one_hot, {"ValuesTensor": td((1, 1, 1, 1))}, r"ValuesTensor\.Sizes"),
    (one_hot, {"Axis": 4}, r"Axis = 4"),
    # reverse_subsequences
    (reverse_subsequences, {"SequenceLengthsTensor": td((1, 1, 3, 2), U32)},
     r"SequenceLengthsTensor\.Sizes\[3\]"),
    (reverse_subsequences, {"SequenceLengthsTensor": td((1, 2, 3, 1), U32)},
     r"SequenceLengthsTensor\.Sizes\[1\]"),
    (reverse_subsequences, {"OutputTensor": td((1, 1, 3, 5))}, r"OutputTensor\.Sizes"),
    (reverse_subsequences, {"Axis": 4}, r"Axis = 4"),
    # depth / space
    (depth_to_space, {"OutputTensor": td((1, 2, 4, 5))}, r"OutputTensor\.Sizes"),
    (depth_to_space, {"BlockSize": 0}, r"BlockSize = 0"),
    (depth_to_space, {"InputTensor": td((1, 6, 2, 3)), "OutputTensor": td((1, 1, 4, 6))},
     r"InputTensor\.Sizes\[1\]"),
    (depth_to_space1, {"OutputTensor": td((1, 8, 2, 3))}, r"OutputTensor\.Sizes"),
    (space_to_depth, {"OutputTensor": td((1, 2, 8, 12))}, r"OutputTensor\.Sizes"),
    (space_to_depth, {"BlockSize": 0}, r"BlockSize = 0"),
    (space_to_depth, {"InputTensor": td((1, 2, 5, 6))}, r"InputTensor\.Sizes\[2\]"),
    (space_to_depth1, {"BlockSize": 3}, r"InputTensor\.Sizes\[2\]"),
    # tile
    (tile, {"Repeats": (1, 1, 0, 3)}, r"Repeats\[2\]"),
    (tile, {"OutputTensor": td((1, 1, 6, 8))}, r"OutputTensor\.Sizes"),
    (tile, {"RepeatsCount": 3, "Repeats": (1, 3, 3)}, r"RepeatsCount = 3"),
    # slice_grad
    (slice_grad, {"InputWindowStrides": (1, 1, 0, 2)}, r"InputWindowStrides\[2\]"),
    (slice_grad, {"InputWindowSizes": (1, 1, 4, 4)},
     r"InputWindowOffsets\[3\] \+ InputWindowSizes\[3\]"),
    (slice_grad, {"InputWindowSizes": (1, 1, 0, 3)}, r"InputWindowSizes\[2\]"),
    (slice_grad, {"InputGradientTensor": td((1, 1, 3, 2))}, r"InputGradientTensor\.Sizes\[2\]"),
    (slice_grad, {"DimensionCount": 3, "InputWindowOffsets": (0, 0, 1),
                  "InputWindowSizes": (1, 4, 3), "InputWindowStrides": (1, 2, 2)},
     r"DimensionCount = 3"),
    # generators
    (fill_value_constant, {"ValueDataType": I32, "Value": 13}, r"ValueDataType"),
    (fill_value_sequence, {"ValueDataType": I32, "ValueStart": 3, "ValueDelta": 2},
     r"ValueDataType"),
    (diagonal_matrix1, {"ValueDataType": I32, "Value": 7}, r"ValueDataType"),
    (diagonal_matrix1, {"InputTensor": td((4, 4))}, r"InputTensor\.Sizes"),
]


@pytest.mark.parametrize("build, fields, match", INVALID,
                         ids=[f"{b.__name__}-{i}" for i, (b, _, _) in enumerate(INVALID)])
def test_broken_rule_names_the_field(build: Builder, fields: dict[str, Any], match: str) -> None:
    with pytest.raises(DMLError, match=match):
        create(build(**fields))


def test_padding_modes_by_level() -> None:
    symmetric = padding(PaddingMode=DML_PADDING_MODE_SYMMETRIC)
    wrap = padding(PaddingMode=DML_PADDING_MODE_WRAP)
    assert min_feature_level(DML_OPERATOR_DESC(Desc=symmetric)) == FL.DML_FEATURE_LEVEL_3_0
    assert min_feature_level(DML_OPERATOR_DESC(Desc=wrap)) == FL.DML_FEATURE_LEVEL_6_4
    with pytest.raises(DMLError, match="PaddingMode"):
        create(padding1(PaddingMode=DML_PADDING_MODE_WRAP), "6_3")
    create(padding1(PaddingMode=DML_PADDING_MODE_WRAP), "6_4")


def test_availability_choices() -> None:
    # SCATTER_ELEMENTS and MAX_UNPOOLING: header and history (2_0) over the pages (1_0, 3_0).
    four_d = scatter_elements(InputTensor=td((1, 1, 3, 3)), IndicesTensor=td((1, 1, 2, 3), U32),
                              UpdatesTensor=td((1, 1, 2, 3)), OutputTensor=td((1, 1, 3, 3)),
                              Axis=2)
    assert min_feature_level(DML_OPERATOR_DESC(Desc=four_d)) == FL.DML_FEATURE_LEVEL_2_0
    assert min_feature_level(DML_OPERATOR_DESC(Desc=max_unpooling())) == FL.DML_FEATURE_LEVEL_2_0
