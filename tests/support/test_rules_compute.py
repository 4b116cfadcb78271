"""The compute group's rules (emulator/support/compute.py): for each rule, a desc that
CreateOperator accepts and descs that break exactly that rule, naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from descriptors import *
from emulator import DMLCreateDevice1, DMLError

F32 = DML_TENSOR_DATA_TYPE_FLOAT32
I8 = DML_TENSOR_DATA_TYPE_INT8
U8 = DML_TENSOR_DATA_TYPE_UINT8
I32 = DML_TENSOR_DATA_TYPE_INT32
U32 = DML_TENSOR_DATA_TYPE_UINT32


def td(shape: tuple[int, ...], dt: int = F32, flags: int = 0) -> Any:
    return tensor_desc(shape, dt, flags=flags)


def act(struct: Any) -> Any:
    return DML_OPERATOR_DESC(Desc=struct())


def conv() -> dict[str, Any]:
    return {"InputTensor": td((1, 2, 5, 5)), "FilterTensor": td((4, 2, 3, 3)),
                "BiasTensor": td((1, 4, 1, 1)), "OutputTensor": td((1, 4, 3, 3)),
                "Mode": DML_CONVOLUTION_MODE_CROSS_CORRELATION,
                "Direction": DML_CONVOLUTION_DIRECTION_FORWARD,
                "DimensionCount": 2, "Strides": (1, 1), "Dilations": (1, 1), "StartPadding": (0, 0),
                "EndPadding": (0, 0), "OutputPadding": (0, 0), "GroupCount": 1}


def conv_backward() -> dict[str, Any]:
    # transposed: input {1, 2, 3, 3}, filter {C_in = 2, C_out = 4, 3, 3}, stride 2 -> 7x7
    return dict(conv(), InputTensor=td((1, 2, 3, 3)), FilterTensor=td((2, 4, 3, 3)),
                OutputTensor=td((1, 4, 7, 7)), Strides=(2, 2),
                Direction=DML_CONVOLUTION_DIRECTION_BACKWARD)


def gemm() -> dict[str, Any]:
    return {"ATensor": td((2, 3)), "BTensor": td((3, 4)), "CTensor": td((2, 4)),
                "OutputTensor": td((2, 4)), "TransA": DML_MATRIX_TRANSFORM_NONE,
                "TransB": DML_MATRIX_TRANSFORM_NONE, "Alpha": 1.0, "Beta": 1.0}


def pool(**extra: Any) -> dict[str, Any]:
    return dict(InputTensor=td((1, 2, 5, 5)), OutputTensor=td((1, 2, 2, 2)), DimensionCount=2,
                Strides=(2, 2), WindowSize=(2, 2), StartPadding=(0, 0), EndPadding=(0, 0),
                **extra)


def mmi() -> dict[str, Any]:
    return {"ATensor": td((2, 3), I8), "AZeroPointTensor": td((2, 1), I8),
                "BTensor": td((3, 4), U8), "BZeroPointTensor": td((1, 4), U8),
                "OutputTensor": td((2, 4), I32)}


def mmitf() -> dict[str, Any]:
    return {"ATensor": td((2, 3), I8), "AScaleTensor": td((1, 1)), "AZeroPointTensor": td((2, 1), I8),
                "BTensor": td((3, 4), I8), "BScaleTensor": td((1, 4)), "BZeroPointTensor": td((1, 4), I8),
                "BiasTensor": td((2, 4)), "OutputTensor": td((2, 4))}


def conv_int() -> dict[str, Any]:
    return {"InputTensor": td((1, 2, 5, 5), U8), "InputZeroPointTensor": td((1, 1, 1, 1), U8),
                "FilterTensor": td((4, 2, 3, 3), I8), "FilterZeroPointTensor": td((1, 4, 1, 1), I8),
                "OutputTensor": td((1, 4, 3, 3), I32), "DimensionCount": 2, "Strides": (1, 1),
                "Dilations": (1, 1), "StartPadding": (0, 0), "EndPadding": (0, 0), "GroupCount": 1}


def qlconv() -> dict[str, Any]:
    one = (1, 1, 1, 1)
    return {"InputTensor": td((1, 2, 5, 5), U8), "InputScaleTensor": td(one),
                "InputZeroPointTensor": td(one, U8), "FilterTensor": td((4, 2, 3, 3), I8),
                "FilterScaleTensor": td((1, 4, 1, 1)), "FilterZeroPointTensor": td((1, 4, 1, 1), I8),
                "BiasTensor": td((1, 4, 1, 1), I32), "OutputScaleTensor": td(one),
                "OutputZeroPointTensor": td(one, U8), "OutputTensor": td((1, 4, 3, 3), U8),
                "DimensionCount": 2, "Strides": (1, 1), "Dilations": (1, 1), "StartPadding": (0, 0),
                "EndPadding": (0, 0), "GroupCount": 1}


def qlap() -> dict[str, Any]:
    return dict(pool(Dilations=(1, 1), IncludePadding=False),
                InputTensor=td((1, 2, 5, 5), I8), OutputTensor=td((1, 2, 2, 2), I8),
                InputScaleTensor=td((1, 2, 1, 1)), InputZeroPointTensor=td((1, 1, 1, 1), I8),
                OutputScaleTensor=td((1, 1, 1, 1)), OutputZeroPointTensor=td((1, 2, 1, 1), I8))


def recurrent(gates: int, bias_gates: int, acts: int, **extra: Any) -> dict[str, Any]:
    # seq 3, batch 2, input 4, hidden 5, forward
    tanh = act(DML_ACTIVATION_TANH_OPERATOR_DESC)
    return dict(InputTensor=td((1, 3, 2, 4)), WeightTensor=td((1, 1, gates * 5, 4)),
                RecurrenceTensor=td((1, 1, gates * 5, 5)), BiasTensor=td((1, 1, 1, bias_gates * 5)),
                HiddenInitTensor=td((1, 1, 2, 5)), SequenceLengthsTensor=td((1, 1, 1, 2), U32),
                OutputSequenceTensor=td((3, 1, 2, 5)), OutputSingleTensor=td((1, 1, 2, 5)),
                ActivationDescs=(tanh,) * acts,
                Direction=DML_RECURRENT_NETWORK_DIRECTION_FORWARD, **extra)


def lstm() -> dict[str, Any]:
    return recurrent(4, 8, 3, CellMemInitTensor=td((1, 1, 2, 5)), PeepholeTensor=td((1, 1, 1, 15)),
                     OutputCellSingleTensor=td((1, 1, 2, 5)), ClipThreshold=1.0,
                     UseClipThreshold=True, CoupleInputForget=False)


def mha(**extra: Any) -> dict[str, Any]:
    # batch 2, seq 3, kv seq 4, 2 heads of size 4 -> hidden 8
    fields = {"QueryTensor": td((2, 3, 8)), "KeyTensor": td((2, 4, 8)), "ValueTensor": td((2, 4, 8)),
                  "OutputTensor": td((2, 3, 8)), "Scale": 0.5, "MaskFilterValue": -10000.0,
                  "MaskType": DML_MULTIHEAD_ATTENTION_MASK_TYPE_NONE}
    fields.update(extra)
    return fields


STRUCTS = {
    "conv": DML_CONVOLUTION_OPERATOR_DESC,
    "gemm": DML_GEMM_OPERATOR_DESC,
    "avg": DML_AVERAGE_POOLING_OPERATOR_DESC,
    "avg1": DML_AVERAGE_POOLING1_OPERATOR_DESC,
    "lp": DML_LP_POOLING_OPERATOR_DESC,
    "lp1": DML_LP_POOLING1_OPERATOR_DESC,
    "max": DML_MAX_POOLING_OPERATOR_DESC,
    "max1": DML_MAX_POOLING1_OPERATOR_DESC,
    "max2": DML_MAX_POOLING2_OPERATOR_DESC,
    "avggrad": DML_AVERAGE_POOLING_GRAD_OPERATOR_DESC,
    "maxgrad": DML_MAX_POOLING_GRAD_OPERATOR_DESC,
    "qlap": DML_QUANTIZED_LINEAR_AVERAGE_POOLING_OPERATOR_DESC,
    "mmi": DML_MATRIX_MULTIPLY_INTEGER_OPERATOR_DESC,
    "mmitf": DML_MATRIX_MULTIPLY_INTEGER_TO_FLOAT_OPERATOR_DESC,
    "convint": DML_CONVOLUTION_INTEGER_OPERATOR_DESC,
    "qlconv": DML_QUANTIZED_LINEAR_CONVOLUTION_OPERATOR_DESC,
    "rnn": DML_RNN_OPERATOR_DESC,
    "gru": DML_GRU_OPERATOR_DESC,
    "lstm": DML_LSTM_OPERATOR_DESC,
    "mha": DML_MULTIHEAD_ATTENTION_OPERATOR_DESC,
    "mha1": DML_MULTIHEAD_ATTENTION1_OPERATOR_DESC,
}


def valid(kind: str) -> dict[str, Any]:
    return {
        "conv": conv, "conv_backward": conv_backward, "gemm": gemm,
        "avg": lambda: pool(IncludePadding=True),
        "avg1": lambda: pool(Dilations=(1, 1), IncludePadding=True),
        "lp": lambda: pool(P=2), "lp1": lambda: pool(Dilations=(1, 1), P=2),
        "max": pool,
        "max1": lambda: pool(OutputIndicesTensor=td((1, 2, 2, 2), U32)),
        # dilation 2: window 3 -> (5 - 3) / 2 + 1 = 2
        "max2": lambda: pool(OutputIndicesTensor=td((1, 2, 2, 2), U32), Dilations=(2, 2)),
        "avggrad": lambda: {"InputGradientTensor": td((1, 2, 2, 2)),
                                "OutputGradientTensor": td((1, 2, 5, 5)), "DimensionCount": 2,
                                "Strides": (2, 2), "WindowSize": (2, 2), "StartPadding": (0, 0),
                                "EndPadding": (0, 0), "IncludePadding": False},
        "maxgrad": lambda: {"InputTensor": td((1, 2, 5, 5)), "InputGradientTensor": td((1, 2, 2, 2)),
                                "OutputGradientTensor": td((1, 2, 5, 5)), "DimensionCount": 2,
                                "Strides": (2, 2), "WindowSize": (2, 2), "StartPadding": (0, 0),
                                "EndPadding": (0, 0), "Dilations": (1, 1)},
        "qlap": qlap, "mmi": mmi, "mmitf": mmitf, "convint": conv_int, "qlconv": qlconv,
        "rnn": lambda: recurrent(1, 2, 1), "gru": lambda: recurrent(3, 6, 2,
                                                                    LinearBeforeReset=False),
        "lstm": lstm, "mha": lambda: mha(HeadCount=2),
        "mha1": lambda: mha(QueryHeadCount=2, KeyValueHeadCount=2),
    }[kind]()


def create(kind: str, **overrides: Any) -> Any:
    struct = STRUCTS["conv" if kind == "conv_backward" else kind]
    fields = valid(kind)
    fields.update(overrides)
    desc = DML_OPERATOR_DESC(Desc=struct(**fields))
    return DMLCreateDevice1(feature_level="6_4").CreateOperator(desc)


@pytest.mark.parametrize("kind", ["conv", "conv_backward", "gemm", "avg", "avg1", "lp", "lp1",
                                  "max", "max1", "max2", "avggrad", "maxgrad", "qlap", "mmi",
                                  "mmitf", "convint", "qlconv", "rnn", "gru", "lstm", "mha",
                                  "mha1"])
def test_valid_descs_are_accepted(kind: str) -> None:
    assert create(kind) is not None


P = DML_MULTIHEAD_ATTENTION_MASK_TYPE_BOOLEAN
BROKEN: list[tuple[str, dict[str, Any], str]] = [
    # convolution
    ("conv", {"OutputTensor": td((1, 4, 4, 4))}, r"OutputTensor\.Sizes"),
    ("conv", {"DimensionCount": 3, "Strides": (1, 1, 1), "Dilations": (1, 1, 1),
              "StartPadding": (0, 0, 0), "EndPadding": (0, 0, 0), "OutputPadding": (0, 0, 0)},
     "DimensionCount"),
    ("conv", {"GroupCount": 0}, "GroupCount"),
    ("conv", {"FilterTensor": td((4, 1, 3, 3))}, r"FilterTensor\.Sizes"),
    ("conv", {"BiasTensor": td((1, 3, 1, 1))}, r"BiasTensor\.Sizes"),
    ("conv", {"Strides": (0, 1)}, r"Strides\[0\]"),
    ("conv_backward", {"OutputTensor": td((1, 4, 6, 6))}, r"OutputTensor\.Sizes"),
    ("conv_backward", {"FilterTensor": td((3, 4, 3, 3))}, r"FilterTensor\.Sizes"),
    # gemm
    ("gemm", {"BTensor": td((4, 4))}, r"BTensor\.Sizes"),
    ("gemm", {"OutputTensor": td((2, 5)), "CTensor": None}, r"OutputTensor\.Sizes"),
    ("gemm", {"TransA": DML_MATRIX_TRANSFORM_TRANSPOSE}, r"BTensor\.Sizes"),
    # pooling
    ("avg", {"OutputTensor": td((1, 2, 3, 3))}, r"OutputTensor\.Sizes"),
    ("avg", {"WindowSize": (6, 2)}, r"WindowSize\[0\]"),
    ("avg", {"Strides": (2, 0)}, r"Strides\[1\]"),
    ("avg1", {"Dilations": (0, 1)}, r"Dilations\[0\]"),
    ("lp", {"OutputTensor": td((1, 2, 3, 3))}, r"OutputTensor\.Sizes"),
    ("lp", {"P": 0}, "P"),
    ("lp1", {"P": 0}, "P"),
    ("max", {"OutputTensor": td((1, 3, 2, 2))}, r"OutputTensor\.Sizes"),
    ("max1", {"OutputIndicesTensor": td((1, 2, 2, 1), U32)}, r"OutputIndicesTensor\.Sizes"),
    ("max2", {"OutputTensor": td((1, 2, 2, 3)), "OutputIndicesTensor": None},
     r"OutputTensor\.Sizes"),
    ("max2", {"OutputIndicesTensor": td((1, 2, 1, 2), U32)}, r"OutputIndicesTensor\.Sizes"),
    ("avggrad", {"InputGradientTensor": td((1, 2, 3, 3))}, r"InputGradientTensor\.Sizes"),
    ("maxgrad", {"InputGradientTensor": td((1, 2, 3, 3))}, r"InputGradientTensor\.Sizes"),
    ("qlap", {"InputScaleTensor": td((1, 3, 1, 1))}, r"InputScaleTensor\.Sizes"),
    ("qlap", {"OutputTensor": td((1, 2, 3, 3), I8)}, r"OutputTensor\.Sizes"),
    # integer / quantized
    ("mmi", {"BTensor": td((4, 4), U8), "BZeroPointTensor": None}, r"BTensor\.Sizes"),
    ("mmi", {"AZeroPointTensor": td((1, 2), I8)}, r"AZeroPointTensor\.Sizes"),
    ("mmi", {"BZeroPointTensor": td((4, 1), U8)}, r"BZeroPointTensor\.Sizes"),
    ("mmitf", {"BScaleTensor": td((4, 1))}, r"BScaleTensor\.Sizes"),
    ("mmitf", {"AScaleTensor": td((1, 2))}, r"AScaleTensor\.Sizes"),
    ("mmitf", {"OutputTensor": td((2, 5)), "BiasTensor": None}, r"OutputTensor\.Sizes"),
    ("convint", {"OutputTensor": td((1, 4, 2, 2), I32)}, r"OutputTensor\.Sizes"),
    ("convint", {"InputZeroPointTensor": td((1, 2, 1, 1), U8)}, r"InputZeroPointTensor\.Sizes"),
    ("convint", {"FilterZeroPointTensor": td((1, 3, 1, 1), I8)},
     r"FilterZeroPointTensor\.Sizes"),
    ("qlconv", {"OutputScaleTensor": td((1, 4, 1, 1))}, r"OutputScaleTensor\.Sizes"),
    ("qlconv", {"FilterScaleTensor": td((1, 2, 1, 1))}, r"FilterScaleTensor\.Sizes"),
    ("qlconv", {"BiasTensor": td((1, 4, 1, 2), I32)}, r"BiasTensor\.Sizes"),
    ("qlconv", {"OutputTensor": td((1, 4, 5, 5), U8)}, r"OutputTensor\.Sizes"),
    # recurrent
    ("rnn", {"RecurrenceTensor": td((1, 1, 5, 4))}, r"RecurrenceTensor\.Sizes"),
    ("rnn", {"BiasTensor": td((1, 1, 1, 5))}, r"BiasTensor\.Sizes"),
    ("rnn", {"OutputSequenceTensor": td((2, 1, 2, 5))}, r"OutputSequenceTensor\.Sizes"),
    ("rnn", {"SequenceLengthsTensor": td((1, 1, 1, 3), U32)}, r"SequenceLengthsTensor\.Sizes"),
    ("rnn", {"WeightTensor": td((1, 2, 5, 4))}, r"WeightTensor\.Sizes"),
    ("rnn", {"Direction": DML_RECURRENT_NETWORK_DIRECTION_BIDIRECTIONAL},
     r"WeightTensor\.Sizes"),
    ("rnn", {"InputTensor": td((1, 3, 2, 4), flags=1)}, r"InputTensor\.Flags"),
    ("gru", {"ActivationDescs": (act(DML_ACTIVATION_TANH_OPERATOR_DESC),)},
     "ActivationDescCount"),
    ("gru", {"HiddenInitTensor": td((1, 1, 2, 4))}, r"HiddenInitTensor\.Sizes"),
    ("lstm", {"PeepholeTensor": td((1, 1, 1, 20))}, r"PeepholeTensor\.Sizes"),
    ("lstm", {"OutputCellSingleTensor": td((1, 1, 1, 5))}, r"OutputCellSingleTensor\.Sizes"),
    ("lstm", {"ClipThreshold": 0.0}, "ClipThreshold"),
    # attention
    ("mha", {"HeadCount": 3}, "HeadCount"),
    ("mha", {"HeadCount": 0}, "HeadCount"),
    ("mha", {"KeyTensor": None}, "QueryTensor"),
    ("mha", {"StackedQueryKeyValueTensor": td((2, 3, 2, 3, 4))}, "QueryTensor"),
    ("mha", {"MaskType": P}, "MaskType"),
    ("mha", {"PastKeyTensor": td((2, 2, 1, 4))}, "PastValueTensor"),
    ("mha", {"OutputPresentKeyTensor": td((2, 2, 4, 4))}, "OutputPresentValueTensor"),
    ("mha", {"OutputTensor": td((2, 4, 8))}, r"OutputTensor\.Sizes"),
    ("mha", {"KeyTensor": td((1, 4, 8))}, r"KeyTensor\.Sizes"),
    ("mha", {"QueryTensor": td((2, 1, 3, 8))}, r"QueryTensor\.Sizes"),
    ("mha", {"ValueTensor": td((2, 5, 8))}, r"ValueTensor\.Sizes"),
    ("mha", {"KeyTensor": None, "ValueTensor": None,
             "StackedKeyValueTensor": td((2, 4, 2, 2, 3))}, r"StackedKeyValueTensor\.Sizes"),
    ("mha", {"BiasTensor": td((23,))}, r"BiasTensor\.Sizes"),
    ("mha", {"PastKeyTensor": td((2, 2, 1, 3)), "PastValueTensor": td((2, 2, 1, 4))},
     r"PastKeyTensor\.Sizes"),
    ("mha", {"PastKeyTensor": td((2, 2, 1, 4)), "PastValueTensor": td((2, 2, 2, 4))},
     r"PastValueTensor\.Sizes"),
    ("mha", {"OutputPresentKeyTensor": td((2, 2, 5, 4)),
             "OutputPresentValueTensor": td((2, 2, 4, 4))}, r"OutputPresentKeyTensor\.Sizes"),
    ("mha", {"RelativePositionBiasTensor": td((2, 3, 3, 4))},
     r"RelativePositionBiasTensor\.Sizes"),
    ("mha", {"MaskTensor": td((2, 1, 2, 4), I32),
             "MaskType": DML_MULTIHEAD_ATTENTION_MASK_TYPE_BOOLEAN}, r"MaskTensor\.Sizes"),
    ("mha", {"MaskTensor": td((1, 3), I32),
             "MaskType": DML_MULTIHEAD_ATTENTION_MASK_TYPE_KEY_SEQUENCE_LENGTH},
     r"MaskTensor\.Sizes"),
    ("mha1", {"QueryHeadCount": 4, "KeyValueHeadCount": 2, "QueryTensor": None,
              "KeyTensor": None, "StackedQueryKeyTensor": td((2, 3, 4, 2, 2)),
              "OutputTensor": td((2, 3, 16))}, "KeyValueHeadCount"),
    ("mha1", {"QueryHeadCount": 3}, "QueryHeadCount"),
    ("mha1", {"KeyValueHeadCount": 0}, "KeyValueHeadCount"),
    ("mha1", {"QueryTensor": None, "KeyTensor": None,
              "StackedQueryKeyTensor": td((2, 3, 1, 2, 4))}, r"StackedQueryKeyTensor\.Sizes"),
]


@pytest.mark.parametrize(("kind", "overrides", "field"), BROKEN,
                         ids=[f"{k}-{'-'.join(o)}" for k, o, _ in BROKEN])
def test_broken_descs_name_the_field(kind: str, overrides: dict[str, Any], field: str) -> None:
    with pytest.raises(DMLError, match=rf": {field} = .* is invalid"):
        create(kind, **overrides)


def test_stacked_layouts_are_accepted() -> None:
    qk = td((2, 3, 2, 2, 4))
    assert create("mha", QueryTensor=None, KeyTensor=None, StackedQueryKeyTensor=qk,
                  ValueTensor=td((2, 3, 8)))
    assert create("mha", QueryTensor=None, KeyTensor=None, ValueTensor=None,
                  StackedQueryKeyValueTensor=td((2, 3, 2, 3, 4)))
    assert create("mha", KeyTensor=None, ValueTensor=None,
                  StackedKeyValueTensor=td((2, 4, 2, 2, 4)))


def test_grouped_query_heads_are_accepted() -> None:
    # query heads of size 4 over one key/value head: the output has a row of 4 per query head
    assert create("mha1", QueryHeadCount=2, KeyValueHeadCount=1, KeyTensor=td((2, 4, 4)),
                  ValueTensor=td((2, 4, 4)), OutputTensor=td((2, 3, 8)))


def test_mask_with_mask_type_is_accepted() -> None:
    assert create("mha", HeadCount=2, MaskTensor=td((2, 3, 4), I32), MaskType=P)


def test_three_dimensional_convolution_from_4_0() -> None:
    assert create("conv", InputTensor=td((1, 2, 5)), FilterTensor=td((4, 2, 3)),
                  BiasTensor=td((1, 4, 1)), OutputTensor=td((1, 4, 3)), DimensionCount=1,
                  Strides=(1,), Dilations=(1,), StartPadding=(0,), EndPadding=(0,),
                  OutputPadding=(0,))


def test_one_dimensional_per_row_zero_point() -> None:
    assert create("mmi", AZeroPointTensor=td((2,), I8), BZeroPointTensor=td((4,), U8))
