"""SLICE1 and SLICE: documented examples, kernel vs reference over generated cases, and the
feature-level accept/reject matrix with its error text."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from descriptors import *
from emulator import DMLCreateDevice1, DMLError, min_feature_level
from emulator.registry import REGISTRY, validate_operator

from .helpers import (
    EIGHT,
    SENTINEL,
    addressed_mask,
    bits,
    check_level_case,
    desc,
    logical,
    np_dtype,
    strided_buffer,
)

UPSTREAM = Path(__file__).parent / "data" / "upstream"
F32 = DML_TENSOR_DATA_TYPE_FLOAT32
LEVELS = ["2_1", "3_0", "3_1", "4_0"]
PAGE_INPUT = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)


def slice1(i, o, offsets, sizes, strides):
    return DML_OPERATOR_DESC(Desc=DML_SLICE1_OPERATOR_DESC(
        InputTensor=i, OutputTensor=o, InputWindowOffsets=offsets, InputWindowSizes=sizes,
        InputWindowStrides=strides))


def slice0(i, o, offsets, sizes, strides):
    return DML_OPERATOR_DESC(Desc=DML_SLICE_OPERATOR_DESC(
        InputTensor=i, OutputTensor=o, Offsets=offsets, Sizes=sizes, Strides=strides))


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="4_0")


# -- the documentation's examples ----------------------------------------------------------------
@pytest.mark.parametrize("strides,expected", [
    ([1, 1, 2, 2], [[2, 4], [10, 12]]),      # Example 1: positive strides
    ([1, 1, -2, 2], [[14, 16], [6, 8]]),     # Example 2: negative strides
])
def test_slice1_page_examples(device, strides, expected):
    op = slice1(tensor_desc(PAGE_INPUT), tensor_desc((1, 1, 2, 2), F32), [0, 0, 0, 1],
                [1, 1, 4, 3], strides)
    [out] = device.execute(op, [PAGE_INPUT])
    np.testing.assert_array_equal(out, np.array(expected, np.float32).reshape(1, 1, 2, 2))


@pytest.mark.parametrize("offsets,sizes,strides,expected", [
    ([0, 0, 1, 2], [1, 1, 3, 2], [1, 1, 1, 1], [[7, 8], [11, 12], [15, 16]]),  # contiguous
    ([0, 0, 1, 0], [1, 1, 2, 2], [1, 1, 2, 3], [[5, 8], [13, 16]]),            # strided
])
def test_slice_page_examples(device, offsets, sizes, strides, expected):
    exp = np.array(expected, np.float32).reshape(1, 1, *np.shape(expected))
    op = slice0(tensor_desc(PAGE_INPUT), tensor_desc(exp.shape, F32), offsets, sizes, strides)
    [out] = device.execute(op, [PAGE_INPUT])
    np.testing.assert_array_equal(out, exp)


def test_upstream_dml_slice_model_through_the_api(device):
    """reference/dxdispatch-models/dml_slice.json, built field by field through the public API."""
    model = json.loads((UPSTREAM / "dml_slice.json").read_text())
    res, d = model["resources"], model["dispatchables"]["slice"]["desc"]
    seq = res["input"]["initialValues"]
    x = (seq["valueStart"] + seq["valueDelta"] * np.arange(seq["valueCount"])).astype(np.float32)
    out = np.zeros(res["output"]["initialValues"]["valueCount"], np.float32)
    op = slice0(desc(F32, d["InputTensor"]["Sizes"]), desc(F32, d["OutputTensor"]["Sizes"]),
                d["Offsets"], d["Sizes"], d["Strides"])
    assert op.Desc.DimensionCount == d["DimensionCount"]
    device.execute(op, [x.reshape(d["InputTensor"]["Sizes"])],
                   [out.reshape(d["OutputTensor"]["Sizes"])])
    assert out.tolist() == [7, 9, 12, 14, 17, 19]  # what DxDispatch prints for this model


# -- generated cases: kernel vs the NumPy reference ----------------------------------------------
def random_case(rng, rank, *, allow_negative=True):
    """Sizes, input strides (packed, padded or with zeros), a window and output layout."""
    max_size = {1: 40, 2: 12, 3: 8, 4: 6, 5: 4}.get(rank, 3)
    in_sizes = [int(rng.integers(1, max_size + 1)) for _ in range(rank)]
    mode = rng.choice(["packed", "padded", "zero"])
    in_strides = None
    if mode != "packed":
        acc, strides = 1, []
        for s in reversed(in_sizes):
            strides.append(acc)
            acc *= s + int(rng.integers(0, 3))
        in_strides = list(reversed(strides))
        if mode == "zero":
            for i in rng.choice(rank, size=int(rng.integers(1, rank + 1)), replace=False):
                in_strides[i] = 0
    offsets, wsizes, wstrides, out_sizes = [], [], [], []
    for n in in_sizes:
        off = int(rng.integers(0, n))
        size = int(rng.integers(1, n - off + 1))
        stride = int(rng.integers(1, 4)) * (int(rng.choice([-1, 1])) if allow_negative else 1)
        reach = 1 + (size - 1) // abs(stride)
        offsets.append(off), wsizes.append(size), wstrides.append(stride)
        out_sizes.append(int(rng.integers(1, reach + 1)))
    out_strides = None
    if rng.random() < 0.5:  # padded output: gaps between elements must keep their bytes
        acc, strides = 1, []
        for s in reversed(out_sizes):
            strides.append(acc)
            acc *= s + int(rng.integers(0, 3))
        out_strides = list(reversed(strides))
    return in_sizes, in_strides, offsets, wsizes, wstrides, out_sizes, out_strides


def run_and_compare(device, op_desc, dt, in_sizes, in_strides, out_sizes, out_strides, rng):
    raw_in = strided_buffer(rng, dt, in_sizes, in_strides)  # random bytes: NaNs, payloads, extremes
    before_in = raw_in.copy()
    raw_out = strided_buffer(rng, dt, out_sizes, out_strides, fill=SENTINEL)
    device.execute(op_desc, [raw_in], [raw_out])
    spec, validated = validate_operator(op_desc, device.feature_level)
    x = logical(raw_in, np_dtype(dt), in_sizes, in_strides)
    expected = spec.module.reference(validated.values, {"InputTensor": x})["OutputTensor"]
    got = logical(raw_out, np_dtype(dt), out_sizes, out_strides)
    np.testing.assert_array_equal(bits(got), bits(expected))
    untouched = ~addressed_mask(raw_out.size, np_dtype(dt).itemsize, out_sizes, out_strides)
    assert (raw_out[untouched] == SENTINEL).all(), "bytes outside the output elements changed"
    np.testing.assert_array_equal(raw_in, before_in)


@pytest.mark.parametrize("rank", range(1, 9))
@pytest.mark.parametrize("dt", EIGHT, ids=lambda t: t.name.removeprefix("DML_TENSOR_DATA_TYPE_"))
def test_slice1_matches_reference(device, dt, rank):
    rng = np.random.default_rng(1000 * rank + int(dt))
    for _ in range(6):
        in_sizes, in_strides, offs, ws, wst, out_sizes, out_strides = random_case(rng, rank)
        op = slice1(desc(dt, in_sizes, in_strides), desc(dt, out_sizes, out_strides), offs, ws, wst)
        run_and_compare(device, op, dt, in_sizes, in_strides, out_sizes, out_strides, rng)


@pytest.mark.parametrize("rank", [1, 3, 4, 5, 8])
@pytest.mark.parametrize("dt", EIGHT, ids=lambda t: t.name.removeprefix("DML_TENSOR_DATA_TYPE_"))
def test_slice_matches_reference(device, dt, rank):
    rng = np.random.default_rng(7000 + 100 * rank + int(dt))
    for _ in range(4):
        in_sizes, in_strides, offs, _, wst, out_sizes, out_strides = random_case(
            rng, rank, allow_negative=False)
        # SLICE: Sizes are the output sizes; keep every copied element inside the input.
        op = slice0(desc(dt, in_sizes, in_strides), desc(dt, out_sizes, out_strides), offs,
                    out_sizes, wst)
        run_and_compare(device, op, dt, in_sizes, in_strides, out_sizes, out_strides, rng)


@pytest.mark.parametrize("shape,window", [
    ((3, 40000), ([0, 1], [3, 39999], [1, -1])),    # few long rows: chunked across threads
    ((1, 70001), ([0, 0], [1, 70001], [1, 3])),      # one row, strided, several chunks
    ((2, 5, 20000), ([1, 0, 0], [1, 5, 20000], [1, -2, 1])),
])
def test_slice1_long_rows(device, shape, window):
    rng = np.random.default_rng(5)
    dt = DML_TENSOR_DATA_TYPE_UINT16
    offs, ws, wst = window
    out_sizes = [1 + (s - 1) // abs(t) for s, t in zip(ws, wst)]
    op = slice1(desc(dt, shape), desc(dt, out_sizes), offs, ws, wst)
    run_and_compare(device, op, dt, list(shape), None, out_sizes, None, rng)


def test_float16_nan_payloads_are_copied_bit_exactly(device):
    patterns = np.array([0x7C01, 0x7E00, 0xFE01, 0x7FFF, 0x8000, 0x0001, 0xFC00, 0x7BFF],
                        np.uint16)
    op = slice1(desc(DML_TENSOR_DATA_TYPE_FLOAT16, [8]), desc(DML_TENSOR_DATA_TYPE_FLOAT16, [8]),
                [0], [8], [-1])
    [out] = device.execute(op, [patterns.view(np.float16)])
    np.testing.assert_array_equal(out.view(np.uint16), patterns[::-1])


def test_broadcast_input_strides_repeat_one_element(device):
    x = np.array([42], np.int32)
    op = slice1(desc(DML_TENSOR_DATA_TYPE_INT32, [5, 7], [0, 0]),
                desc(DML_TENSOR_DATA_TYPE_INT32, [2, 3]), [1, 0], [4, 7], [-2, 3])
    [out] = device.execute(op, [x])
    assert out.shape == (2, 3) and (out == 42).all()


def test_integer_extremes_survive(device):
    for dt, dtype in [(DML_TENSOR_DATA_TYPE_INT8, np.int8), (DML_TENSOR_DATA_TYPE_UINT32, np.uint32),
                      (DML_TENSOR_DATA_TYPE_INT16, np.int16)]:
        info = np.iinfo(dtype)
        x = np.array([info.min, info.max, 0, -1 if info.min else 1], dtype)
        op = slice1(desc(dt, [4]), desc(dt, [4]), [0], [4], [-1])
        [out] = device.execute(op, [x])
        np.testing.assert_array_equal(out, x[::-1])


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rank=st.integers(1, 8),
       dt=st.sampled_from(EIGHT))
def test_slice1_property(seed, rank, dt):
    """Any valid generated window on any layout equals the reference, and touches nothing else."""
    rng = np.random.default_rng(seed)
    in_sizes, in_strides, offs, ws, wst, out_sizes, out_strides = random_case(rng, rank)
    op = slice1(desc(dt, in_sizes, in_strides), desc(dt, out_sizes, out_strides), offs, ws, wst)
    run_and_compare(_DEVICE, op, dt, in_sizes, in_strides, out_sizes, out_strides, rng)


_DEVICE = DMLCreateDevice1(feature_level="4_0")


# -- feature levels: accept/reject matrix ------------------------------------------------------
def s1(dims=4, dt=F32, out_dt=None, out_sizes=None, count=None, window=None, in_sizes=None):
    in_sizes = in_sizes or [3] * dims
    offs, ws, wst = window or ([0] * dims, list(in_sizes), [1] * dims)
    out = out_sizes or [1 + (w - 1) // abs(s) for w, s in zip(ws, wst)]
    return DML_OPERATOR_DESC(Desc=DML_SLICE1_OPERATOR_DESC(
        InputTensor=desc(dt, in_sizes), OutputTensor=desc(out_dt or dt, out),
        DimensionCount=count if count is not None else len(in_sizes), InputWindowOffsets=offs,
        InputWindowSizes=ws, InputWindowStrides=wst))


def s0(dims=4, dt=F32):
    return slice0(desc(dt, [3] * dims), desc(dt, [2] * dims), [1] * dims, [2] * dims, [1] * dims)


OK = None
DIMS_NEED_3_0 = ("DimensionCount = {n} is invalid", "DML_FEATURE_LEVEL_3_0 or later allows it")
MATRIX = [
    # name, desc, {level: None (accepted) or substrings of the error}
    ("slice1 4-D", s1(4), dict.fromkeys(LEVELS, OK)),
    ("slice1 5-D int8", s1(5, DML_TENSOR_DATA_TYPE_INT8), dict.fromkeys(LEVELS, OK)),
    ("slice1 1-D", s1(1), {"2_1": ("InputTensor.DimensionCount = 1 is invalid",
                                    "supported dimension counts here are 4 to 5",
                                    "DML_FEATURE_LEVEL_3_0 or later allows it",
                                    "this device emulates DML_FEATURE_LEVEL_2_1"),
                           "3_0": OK, "3_1": OK, "4_0": OK}),
    ("slice1 3-D", s1(3), {"2_1": ("DML_OPERATOR_SLICE1", "InputTensor.DimensionCount = 3",
                                    "DML_FEATURE_LEVEL_3_0"), "3_0": OK, "3_1": OK, "4_0": OK}),
    ("slice1 8-D", s1(8, DML_TENSOR_DATA_TYPE_UINT16), {
        "2_1": ("InputTensor.DimensionCount = 8", "DML_FEATURE_LEVEL_3_0 or later"),
        "3_0": OK, "3_1": OK, "4_0": OK}),
    ("slice1 9-D", s1(9), dict.fromkeys(LEVELS, (
        "InputTensor.DimensionCount = 9 is invalid", "1 to 8 dimensions"))),
    ("slice1 float64", s1(4, DML_TENSOR_DATA_TYPE_FLOAT64), dict.fromkeys(LEVELS, (
        "InputTensor.DataType = DML_TENSOR_DATA_TYPE_FLOAT64 is invalid",
        "DML_FEATURE_LEVEL_4_1 or later allows it"))),
    ("slice1 int64 6-D at 2_1", s1(6, DML_TENSOR_DATA_TYPE_INT64), {
        "2_1": ("DataType = DML_TENSOR_DATA_TYPE_INT64", "DML_FEATURE_LEVEL_4_1"),
        "3_0": ("DML_FEATURE_LEVEL_4_1",), "3_1": ("DML_FEATURE_LEVEL_4_1",),
        "4_0": ("DML_FEATURE_LEVEL_4_1",)}),
    ("slice1 mixed types", s1(4, F32, DML_TENSOR_DATA_TYPE_FLOAT16), dict.fromkeys(LEVELS, (
        "OutputTensor.DataType = DML_TENSOR_DATA_TYPE_FLOAT16 is invalid",
        "InputTensor and OutputTensor must have the same DataType",
        "InputTensor.DataType is DML_TENSOR_DATA_TYPE_FLOAT32"))),
    ("slice1 rank mismatch", s1(4, out_sizes=[3, 3, 3, 3, 1], window=([0] * 4, [3] * 4, [1] * 4)),
     dict.fromkeys(LEVELS, ("OutputTensor.DimensionCount = 5 is invalid",
                            "same DimensionCount"))),
    ("slice1 count field", s1(4, count=5), dict.fromkeys(LEVELS, (
        "InputWindowOffsets", "must hold exactly 5 values"))),
    ("slice1 zero stride", s1(4, window=([0] * 4, [3] * 4, [1, 0, 1, 1]), out_sizes=[3] * 4),
     dict.fromkeys(LEVELS, ("InputWindowStrides[1] = 0 is invalid",
                            "window strides may not be 0"))),
    ("slice1 empty window", s1(4, window=([0] * 4, [3, 3, 0, 3], [1] * 4), out_sizes=[3] * 4),
     dict.fromkeys(LEVELS, ("InputWindowSizes[2] = 0 is invalid", "may not be empty"))),
    ("slice1 window outside", s1(4, window=([0, 1, 0, 0], [3] * 4, [1] * 4), out_sizes=[3] * 4),
     dict.fromkeys(LEVELS, ("InputWindowOffsets[1] + InputWindowSizes[1] = 4 is invalid",
                            "inside InputTensor.Sizes[1] = 3"))),
    ("slice1 output too big", s1(4, window=([0] * 4, [3] * 4, [1, 1, -2, 1]), out_sizes=[3] * 4),
     dict.fromkeys(LEVELS, ("OutputTensor.Sizes[2] = 3 is invalid", "at most", "= 2 elements"))),
    ("slice1 negative offset", s1(4, window=([0, -1, 0, 0], [3] * 4, [1] * 4), out_sizes=[3] * 4),
     dict.fromkeys(LEVELS, ("InputWindowOffsets[1] = -1 is invalid", "[0, 4294967295]"))),
    ("slice 4-D", s0(4), dict.fromkeys(LEVELS, OK)),
    ("slice 2-D", s0(2), {"2_1": ("DML_OPERATOR_SLICE: InputTensor.DimensionCount = 2",
                                  "DML_FEATURE_LEVEL_3_0"), "3_0": OK, "3_1": OK, "4_0": OK}),
]


@pytest.mark.parametrize("name,op,expect", MATRIX, ids=[m[0] for m in MATRIX])
@pytest.mark.parametrize("level", LEVELS)
def test_feature_level_matrix(name, op, expect, level):
    check_level_case(op, level, expect[level], "DML_OPERATOR_SLICE")


@pytest.mark.parametrize("level,ok", [("1_0", False), ("2_0", False), ("2_1", True)])
def test_slice1_needs_2_1_and_slice_int8_needs_2_1(level, ok):
    device = DMLCreateDevice1(feature_level=level)
    if ok:
        device.CreateOperator(s1(4))
        device.CreateOperator(s0(4, DML_TENSOR_DATA_TYPE_INT8))
        return
    with pytest.raises(DMLError, match="DML_OPERATOR_SLICE1 was introduced in DML_FEATURE_LEVEL_2_1; "
                                       f"this device emulates DML_FEATURE_LEVEL_{level}"):
        device.CreateOperator(s1(4))
    device.CreateOperator(s0(4))  # SLICE exists from 1_0
    with pytest.raises(DMLError, match=r"DataType = DML_TENSOR_DATA_TYPE_INT8 is invalid.*"
                                       "DML_FEATURE_LEVEL_2_1 or later allows it"):
        device.CreateOperator(s0(4, DML_TENSOR_DATA_TYPE_INT8))


@pytest.mark.parametrize("op,expected", [
    (s1(4), DML_FEATURE_LEVEL_2_1), (s1(3), DML_FEATURE_LEVEL_3_0), (s0(4), DML_FEATURE_LEVEL_1_0),
    (s0(4, DML_TENSOR_DATA_TYPE_UINT8), DML_FEATURE_LEVEL_2_1),
    (s1(2, DML_TENSOR_DATA_TYPE_FLOAT64), DML_FEATURE_LEVEL_4_1),
    (s1(4, window=([0] * 4, [3] * 4, [0] * 4), out_sizes=[1] * 4), None),
])
def test_min_feature_level(op, expected):
    assert min_feature_level(op) == expected


def test_slice_rules(device):
    bad_size = slice0(desc(F32, [4, 4]), desc(F32, [2, 2]), [0, 0], [2, 3], [1, 1])
    with pytest.raises(DMLError, match=r"Sizes\[1\] = 3 is invalid: the slice's Sizes must match "
                                       r"OutputTensor.Sizes\[1\] = 2"):
        device.CreateOperator(bad_size)
    outside = slice0(desc(F32, [4, 4]), desc(F32, [2, 2]), [0, 1], [2, 2], [1, 3])
    with pytest.raises(DMLError, match=r"Offsets\[1\] \+ \(Sizes\[1\] - 1\) \* Strides\[1\] = 4 is "
                                       r"invalid: every copied element must lie inside"):
        device.CreateOperator(outside)
    zero = slice0(desc(F32, [4, 4]), desc(F32, [2, 2]), [0, 0], [2, 2], [1, 0])
    with pytest.raises(DMLError, match=r"Strides\[1\] = 0 is invalid"):
        device.CreateOperator(zero)


def test_registry_specs_agree_with_the_schema():
    for op, spec in REGISTRY.items():
        assert spec.operator == op and spec.schema.operator == op
        tensor_fields = {f.name for f in spec.schema.fields if f.is_tensor}
        for band in spec.support:
            assert set(band.tensors) == tensor_fields, (op.name, band.level)
        if spec.executable:
            for name in ("plan", "reference"):
                assert callable(getattr(spec.module, name)), (op.name, name)
            assert spec.module.__doc__, f"{op.name}: operator modules carry a docstring"
