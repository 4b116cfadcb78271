"""descriptors: enum values as in directml.h, struct names and fields, the C helpers."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

import descriptors as d
from descriptors import *
from emulator import DMLError

DATA = Path(__file__).parent / "data"


def test_every_operator_type_has_the_header_value():
    lines = [ln.split() for ln in (DATA / "directml-operator-types.txt").read_text().splitlines()
             if ln[:1].isdigit()]
    assert len(lines) == 178
    for value, name in lines:
        assert getattr(d, name) == int(value), name
        assert d.DML_OPERATOR_TYPE[name] == int(value)
    assert len(d.DML_OPERATOR_TYPE) == 178
    assert d.DML_OPERATOR_SCATTER == d.DML_OPERATOR_SCATTER_ELEMENTS == 94


@pytest.mark.parametrize("name,value", [
    ("DML_TENSOR_DATA_TYPE_UNKNOWN", 0), ("DML_TENSOR_DATA_TYPE_FLOAT32", 1),
    ("DML_TENSOR_DATA_TYPE_FLOAT16", 2), ("DML_TENSOR_DATA_TYPE_UINT32", 3),
    ("DML_TENSOR_DATA_TYPE_UINT16", 4), ("DML_TENSOR_DATA_TYPE_UINT8", 5),
    ("DML_TENSOR_DATA_TYPE_INT32", 6), ("DML_TENSOR_DATA_TYPE_INT16", 7),
    ("DML_TENSOR_DATA_TYPE_INT8", 8), ("DML_TENSOR_DATA_TYPE_FLOAT64", 9),
    ("DML_TENSOR_DATA_TYPE_UINT64", 10), ("DML_TENSOR_DATA_TYPE_INT64", 11),
    ("DML_TENSOR_DATA_TYPE_UINT4", 12), ("DML_TENSOR_DATA_TYPE_INT4", 13),
    ("DML_TENSOR_TYPE_INVALID", 0), ("DML_TENSOR_TYPE_BUFFER", 1),
    ("DML_TENSOR_FLAG_NONE", 0), ("DML_TENSOR_FLAG_OWNED_BY_DML", 1),
    ("DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT", 0), ("DML_FEATURE_FEATURE_LEVELS", 1),
    ("DML_AXIS_DIRECTION_INCREASING", 0), ("DML_AXIS_DIRECTION_DECREASING", 1),
    ("DML_BINDING_TYPE_NONE", 0), ("DML_BINDING_TYPE_BUFFER", 1),
    ("DML_BINDING_TYPE_BUFFER_ARRAY", 2), ("DML_EXECUTION_FLAG_NONE", 0),
    ("DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION", 1),
    ("DML_EXECUTION_FLAG_DISABLE_META_COMMANDS", 2), ("DML_EXECUTION_FLAG_DESCRIPTORS_VOLATILE", 4),
    ("DML_CREATE_DEVICE_FLAG_NONE", 0), ("DML_CREATE_DEVICE_FLAG_DEBUG", 1),
    ("DML_TENSOR_DIMENSION_COUNT_MAX", 5), ("DML_TENSOR_DIMENSION_COUNT_MAX1", 8),
    ("DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT", 16), ("DML_TEMPORARY_BUFFER_ALIGNMENT", 256),
    ("DML_PERSISTENT_BUFFER_ALIGNMENT", 256),
    ("DML_OPERATOR_TOP_K", 71), ("DML_OPERATOR_SLICE1", 111), ("DML_OPERATOR_ACTIVATION_GELU", 157),
])
def test_constants(name, value):
    assert getattr(d, name) == value


@pytest.mark.parametrize("name,value", [
    ("1_0", 0x1000), ("2_0", 0x2000), ("2_1", 0x2100), ("3_0", 0x3000), ("3_1", 0x3100),
    ("4_0", 0x4000), ("4_1", 0x4100), ("5_0", 0x5000), ("5_1", 0x5100), ("5_2", 0x5200),
    ("6_0", 0x6000), ("6_1", 0x6100), ("6_2", 0x6200), ("6_3", 0x6300), ("6_4", 0x6400),
])
def test_feature_levels(name, value):
    assert getattr(d, "DML_FEATURE_LEVEL_" + name) == value
    assert isinstance(getattr(d, "DML_FEATURE_LEVEL_" + name), d.DML_FEATURE_LEVEL)


def test_enum_classes_and_flags():
    assert issubclass(d.DML_TENSOR_FLAGS, int)
    both = DML_EXECUTION_FLAG_DISABLE_META_COMMANDS | DML_EXECUTION_FLAG_DESCRIPTORS_VOLATILE
    assert both == 6 and isinstance(both, d.DML_EXECUTION_FLAGS)
    assert d.parse_enum(d.DML_TENSOR_DATA_TYPE, "FLOAT16") is DML_TENSOR_DATA_TYPE_FLOAT16
    assert d.parse_enum(d.DML_OPERATOR_TYPE, "DML_OPERATOR_TOP_K1") is DML_OPERATOR_TOP_K1
    with pytest.raises(KeyError, match="not a DML_AXIS_DIRECTION"):
        d.parse_enum(d.DML_AXIS_DIRECTION, "SIDEWAYS")
    assert d.short_name(DML_OPERATOR_ACTIVATION_RELU) == "ACTIVATION_RELU"


# Field names and order as in DirectML.h, written out independently of the schema.
# Every struct's fields in header order, from the facts the schema is generated from (DML_OPERATOR_DESC
# is not in them: a pair of Type and Desc, as DML_TENSOR_DESC).
_FACTS = json.loads((Path(__file__).resolve().parent.parent / "tools" / "directml-schema.json")
                    .read_text())
STRUCT_FIELDS = {
    **{name: " ".join(f["name"] for f in fields) for name, fields in _FACTS["structs"].items()},
    **{op["struct"]: " ".join(f["name"] for f in op["fields"]) for op in _FACTS["operators"]},
    "DML_OPERATOR_DESC": "Type Desc",
}

@pytest.mark.parametrize("struct", sorted(STRUCT_FIELDS))
def test_struct_fields_match_the_header(struct):
    cls = getattr(d, struct)
    assert [f.name for f in dataclasses.fields(cls)] == STRUCT_FIELDS[struct].split()
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen


def test_every_activation_of_the_reference_has_a_desc():
    activations = [op for op in d.DML_OPERATOR_TYPE if op.name.startswith("DML_OPERATOR_ACTIVATION")
                   and op.value <= 157 and op.value != 129]  # RELU_GRAD is not an activation desc
    for op in activations:
        name = op.name.removeprefix("DML_OPERATOR_")
        cls = getattr(d, f"DML_{name}_OPERATOR_DESC")
        assert op == cls.OPERATOR_TYPE
        assert d.OPERATOR_DESC_CLASSES[op] is cls


def test_count_fields_are_derived_and_arrays_frozen():
    s = DML_SLICE1_OPERATOR_DESC(InputWindowOffsets=[0, 1], InputWindowSizes=[2, 2],
                                 InputWindowStrides=[1, -1])
    assert s.DimensionCount == 2 and s.InputWindowOffsets == (0, 1)
    given = DML_SLICE1_OPERATOR_DESC(DimensionCount=3, InputWindowOffsets=[0, 1])
    assert given.DimensionCount == 3  # kept as given; the device checks agreement
    assert DML_BUFFER_ARRAY_BINDING(Bindings=[DML_BUFFER_BINDING()] * 3).BindingCount == 3
    assert DML_FEATURE_QUERY_FEATURE_LEVELS(
        RequestedFeatureLevels=[DML_FEATURE_LEVEL_3_0]).RequestedFeatureLevelCount == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.DimensionCount = 4
    with pytest.raises(TypeError):
        DML_SLICE1_OPERATOR_DESC(InputWindowOffset=[0])  # misspelt field


def test_operator_desc_type_is_derived_from_the_desc():
    inner = DML_ACTIVATION_RELU_OPERATOR_DESC()
    assert DML_OPERATOR_DESC(Desc=inner).Type == DML_OPERATOR_ACTIVATION_RELU
    assert DML_OPERATOR_DESC(Type=DML_OPERATOR_SLICE, Desc=inner).Type == DML_OPERATOR_SLICE


@pytest.mark.parametrize("dt,sizes,strides,expected", [
    (DML_TENSOR_DATA_TYPE_FLOAT32, [1, 2, 3], None, 24),
    (DML_TENSOR_DATA_TYPE_UINT8, [3], None, 4),  # rounded up to a multiple of 4
    (DML_TENSOR_DATA_TYPE_FLOAT16, [3, 3], None, 20),
    (DML_TENSOR_DATA_TYPE_FLOAT32, [2, 3], [4, 1], 28),  # (1*4 + 2*1 + 1) * 4
    (DML_TENSOR_DATA_TYPE_INT8, [5, 7], [0, 1], 8),  # broadcast: (0 + 6 + 1) = 7 -> 8
    (DML_TENSOR_DATA_TYPE_UINT32, [4], [0], 4),
    (DML_TENSOR_DATA_TYPE_INT64, [2, 2], [1, 2], 32),
])
def test_calc_buffer_tensor_size(dt, sizes, strides, expected):
    assert DMLCalcBufferTensorSize(dt, len(sizes), sizes, strides) == expected


def test_total_size_defaults_to_the_helper():
    t = DML_BUFFER_TENSOR_DESC(DataType=DML_TENSOR_DATA_TYPE_FLOAT16, Sizes=[3], Strides=[2])
    assert t.DimensionCount == 1 and t.TotalTensorSizeInBytes == 12
    bad = DML_BUFFER_TENSOR_DESC(DataType=99, Sizes=[3])
    assert bad.TotalTensorSizeInBytes is None  # left for the device to reject


def test_tensor_desc_from_shape_and_array():
    t = tensor_desc((2, 3), DML_TENSOR_DATA_TYPE_INT16, strides=(4, 1))
    assert t.Type == DML_TENSOR_TYPE_BUFFER and t.Desc.Sizes == (2, 3)
    assert t.Desc.Strides == (4, 1) and t.Desc.TotalTensorSizeInBytes == 16  # 7 elements, 14 -> 16
    for dtype, dt in [(np.float16, DML_TENSOR_DATA_TYPE_FLOAT16), (np.uint8, DML_TENSOR_DATA_TYPE_UINT8),
                      (np.int64, DML_TENSOR_DATA_TYPE_INT64), (np.float32, DML_TENSOR_DATA_TYPE_FLOAT32)]:
        a = np.zeros((4, 5), dtype)
        assert tensor_desc(a).Desc.DataType == dt and tensor_desc(a).Desc.Sizes == (4, 5)
    owned = tensor_desc(np.zeros(3, np.float32), flags=DML_TENSOR_FLAG_OWNED_BY_DML)
    assert owned.Desc.Flags == DML_TENSOR_FLAG_OWNED_BY_DML
    with pytest.raises(DMLError, match="complex64"):
        tensor_desc(np.zeros(2, np.complex64))
    with pytest.raises(DMLError, match="data_type"):
        tensor_desc((2, 2))
