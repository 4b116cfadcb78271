"""TOP_K1 and TOP_K: the page's examples, kernel vs reference over generated cases (every data
type, rank, axis, K, ties, NaN/inf/-0, extremes, strides) under every strategy, and the
feature-level accept/reject matrix."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from descriptors import *
from emulator import DMLCreateDevice1, DMLError, min_feature_level
from emulator.ops.top_k1 import top_k
from emulator.plan import TopKPlan

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

F32, U32, U64 = DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_UINT32, DML_TENSOR_DATA_TYPE_UINT64
I64 = DML_TENSOR_DATA_TYPE_INT64
TEN = [*EIGHT, I64, U64]  # the 5_0 band's value types
DEC, INC = DML_AXIS_DIRECTION_DECREASING, DML_AXIS_DIRECTION_INCREASING
LEVELS = ["2_1", "3_0", "3_1", "4_0"]


def topk1(i, v, ix, axis, k, direction=DEC):
    return DML_OPERATOR_DESC(Desc=DML_TOP_K1_OPERATOR_DESC(
        InputTensor=i, OutputValueTensor=v, OutputIndexTensor=ix, Axis=axis, K=k,
        AxisDirection=direction))


def out_sizes(sizes, axis, k):
    return [k if d == axis else s for d, s in enumerate(sizes)]


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="4_0")


@pytest.fixture(scope="module")
def device5():
    """5_0: 64-bit values and UINT64 indices."""
    return DMLCreateDevice1(feature_level="5_0")


# -- the page's examples -------------------------------------------------------------------------
A = [[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]]
B = [[1, 2, 2, 3], [3, 4, 5, 5], [6, 6, 6, 6]]
EXAMPLES = [
    (A, 3, 2, DEC, [[11, 10], [9, 8], [7, 6]], [[3, 2], [2, 3], [3, 2]]),
    (A, 2, 2, DEC, [[4, 5, 10, 11], [3, 2, 9, 8]], [[2, 2, 0, 0], [1, 1, 1, 1]]),
    (B, 3, 3, DEC, [[3, 2, 2], [5, 5, 4], [6, 6, 6]], [[3, 1, 2], [2, 3, 1], [0, 1, 2]]),
    (B, 3, 3, INC, [[1, 2, 2], [3, 4, 5], [6, 6, 6]], [[0, 1, 2], [0, 1, 2], [0, 1, 2]]),
]


@pytest.mark.parametrize("x,axis,k,direction,values,indices", EXAMPLES)
def test_page_examples(device, x, axis, k, direction, values, indices):
    x = np.array(x, np.float32).reshape(1, 1, 3, 4)
    o = out_sizes(x.shape, axis, k)
    [v, i] = device.execute(topk1(tensor_desc(x), desc(F32, o), desc(U32, o), axis, k, direction),
                            [x])
    np.testing.assert_array_equal(v.reshape(np.shape(values)), values)
    np.testing.assert_array_equal(i.reshape(np.shape(indices)), indices)
    if direction == DEC:  # TOP_K is TOP_K1 with DECREASING
        op = DML_OPERATOR_DESC(Desc=DML_TOP_K_OPERATOR_DESC(
            InputTensor=tensor_desc(x), OutputValueTensor=desc(F32, o),
            OutputIndexTensor=desc(U32, o), Axis=axis, K=k))
        [v0, i0] = device.execute(op, [x])
        np.testing.assert_array_equal(v0, v)
        np.testing.assert_array_equal(i0, i)


# -- NaN, infinities, signed zeros, ties -----------------------------------------------------------
def test_nan_inf_and_zero_placement(device):
    nan, inf = np.float32("nan"), np.float32("inf")
    x = np.array([1, -0.0, nan, inf, 0.0, -inf, nan, -2, 0.0], np.float32)
    n = x.size
    for direction, order in [(DEC, [2, 6, 3, 0, 1, 4, 8, 7, 5]), (INC, [5, 7, 1, 4, 8, 0, 3, 2, 6])]:
        [v, i] = device.execute(topk1(tensor_desc(x), desc(F32, [n]), desc(U32, [n]), 0, n,
                                      direction), [x])
        assert i.tolist() == order
        np.testing.assert_array_equal(bits(v), bits(x[order]))  # -0 stays -0: values are copies


def test_float16_nan_payloads_and_signed_zero_are_copied(device):
    x = np.array([0x7E01, 0x8000, 0xFC00, 0x0000, 0x7C00, 0xFE00], np.uint16).view(np.float16)
    [v, i] = device.execute(topk1(tensor_desc(x), desc(DML_TENSOR_DATA_TYPE_FLOAT16, [6]),
                                  desc(U32, [6]), 0, 6), [x])
    assert i.tolist() == [0, 5, 4, 1, 3, 2]
    assert v.view(np.uint16).tolist() == [0x7E01, 0xFE00, 0x7C00, 0x8000, 0x0000, 0xFC00]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                   np.int64, np.uint64])
def test_integer_extremes(device5, dtype):
    info = np.iinfo(dtype)
    x = np.array([0, info.max, info.min, 1, info.max, info.min, info.min + 1, info.max - 1,
                  -1 if info.min < 0 else info.max // 2 + 1], dtype)
    n = x.size
    dt = data_type_of_numpy(x.dtype)
    for direction, idx in ((DEC, U32), (INC, U64)):
        [v, i] = device5.execute(topk1(tensor_desc(x), desc(dt, [n]), desc(idx, [n]), 0, n,
                                       direction), [x])
        assert i.dtype == (np.uint32 if idx == U32 else np.uint64)
        ev, ei = top_k(x, 0, n, direction == DEC)
        assert i.tolist() == ei.tolist() and v.tolist() == ev.tolist()
        assert v.tolist() == sorted(x.tolist(), reverse=direction == DEC)


def test_all_equal_rows_return_the_first_k_indices(device):
    x = np.full((3, 50), 7, np.int16)
    for direction in (DEC, INC):
        [v, i] = device.execute(topk1(tensor_desc(x), desc(DML_TENSOR_DATA_TYPE_INT16, [3, 20]),
                                      desc(U32, [3, 20]), 1, 20, direction), [x])
        assert (i == np.arange(20)).all() and (v == 7).all()


# -- generated cases against the reference -------------------------------------------------------
def special_values(rng, dt, count):
    """Random data with many ties, and the type's edge values mixed in."""
    dtype = np_dtype(dt)
    if dtype.kind == "f":
        pool = np.array([0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan, 1e-3, -7.0], dtype)
        if rng.random() < 0.5:
            return rng.choice(pool, count)
        return rng.standard_normal(count).astype(dtype)
    info = np.iinfo(dtype)
    pool = np.array([info.min, info.max, 0, 1, info.max - 1, info.min + 1, 3], dtype)
    if rng.random() < 0.5:
        return rng.choice(pool, count)
    return rng.integers(info.min, int(info.max) + 1, count, dtype=dtype)


def random_layout(rng, sizes, broadcast=True):
    """None (packed), padded strides, or (inputs only) a zero (broadcast) stride."""
    mode = rng.choice(["packed", "padded", "zero"] if broadcast else ["packed", "padded"])
    if mode == "packed":
        return None
    acc, strides = 1, []
    for s in reversed(sizes):
        strides.append(acc)
        acc *= s + int(rng.integers(0, 3))
    strides = list(reversed(strides))
    if mode == "zero":
        strides[int(rng.integers(0, len(sizes)))] = 0
    return strides


def run_case(device, dt, sizes, axis, k, direction, in_strides, val_strides, idx_strides, rng,
             op_factory=topk1, idx_dt=U32):
    raw_in = strided_buffer(rng, dt, sizes, in_strides)
    # Tie-heavy data with the type's edge values in every byte of the buffer; with a broadcast
    # (zero) stride several coordinates read the same element.
    fill = special_values(rng, dt, raw_in.size // np_dtype(dt).itemsize)
    raw_in[: fill.nbytes] = fill.view(np.uint8)
    x = logical(raw_in, np_dtype(dt), sizes, in_strides)
    o = out_sizes(sizes, axis, k)
    raw_v = strided_buffer(rng, dt, o, val_strides, fill=SENTINEL)
    raw_i = strided_buffer(rng, idx_dt, o, idx_strides, fill=SENTINEL)
    op = op_factory(desc(dt, sizes, in_strides), desc(dt, o, val_strides),
                    desc(idx_dt, o, idx_strides), axis, k, direction)
    before = raw_in.copy()
    device.execute(op, [raw_in], [raw_v, raw_i])
    ev, ei = top_k(np.ascontiguousarray(x), axis, k, direction == DEC)
    got_v = logical(raw_v, np_dtype(dt), o, val_strides)
    got_i = logical(raw_i, np_dtype(idx_dt), o, idx_strides)
    np.testing.assert_array_equal(got_i, ei)
    np.testing.assert_array_equal(bits(got_v), bits(ev))
    for raw, item, strides in ((raw_v, np_dtype(dt).itemsize, val_strides),
                               (raw_i, np_dtype(idx_dt).itemsize, idx_strides)):
        untouched = ~addressed_mask(raw.size, item, o, strides)
        assert (raw[untouched] == SENTINEL).all(), "bytes outside the output elements changed"
    np.testing.assert_array_equal(raw_in, before)


def random_case(rng, rank):
    max_size = {1: 300, 2: 40, 3: 12, 4: 7, 5: 5}.get(rank, 3)
    sizes = [int(rng.integers(1, max_size + 1)) for _ in range(rank)]
    axis = int(rng.integers(0, rank))
    n = sizes[axis]
    k = int(rng.choice([1, n, rng.integers(1, n + 1)]))
    return sizes, axis, k


@pytest.mark.parametrize("rank", range(1, 9))
@pytest.mark.parametrize("dt", TEN, ids=lambda t: t.name.removeprefix("DML_TENSOR_DATA_TYPE_"))
def test_matches_reference(device5, dt, rank):
    rng = np.random.default_rng(100 * rank + int(dt))
    for _ in range(5):
        sizes, axis, k = random_case(rng, rank)
        direction = DEC if rng.random() < 0.5 else INC
        run_case(device5, dt, sizes, axis, k, direction, random_layout(rng, sizes),
                 random_layout(rng, out_sizes(sizes, axis, k), broadcast=False),
                 random_layout(rng, out_sizes(sizes, axis, k), broadcast=False), rng,
                 idx_dt=U32 if rng.random() < 0.5 else U64)


@pytest.mark.parametrize("strategy", [("rows", 1), ("rows", 3), ("columns", 1), ("columns", 4),
                                      ("radix", 1), ("radix", 2)])
@pytest.mark.parametrize("dt", [F32, DML_TENSOR_DATA_TYPE_FLOAT16, DML_TENSOR_DATA_TYPE_INT8,
                                DML_TENSOR_DATA_TYPE_UINT16, DML_TENSOR_DATA_TYPE_INT32])
def test_every_strategy_and_split(device5, monkeypatch, dt, strategy):
    """Each algorithm, with the axis split into chunks and merged, gives the reference's bytes."""
    monkeypatch.setattr(TopKPlan, "strategy", lambda self, threads: strategy)
    rng = np.random.default_rng(int(dt) * 7 + strategy[1])
    for sizes, axis, k in [([3, 400, 5], 1, 1), ([2, 300, 6], 1, 9), ([200, 7], 0, 7),
                           ([4, 1, 257], 2, 12), ([120, 3, 2], 0, 4)]:
        if strategy[0] == "columns" and axis == len(sizes) - 1:
            continue  # column mode needs sequences that are neighbours in memory
        run_case(device5, dt, sizes, axis, k, DEC if rng.random() < 0.5 else INC, None, None,
                 None, rng, idx_dt=U64 if strategy[1] > 1 else U32)


def test_top_k_v0_ranks_64_bit_values(device5):
    """TOP_K (DECREASING) at 5_0: INT64 values with UINT64 indices, ties by ascending index."""
    x = np.array([[5, -(2**63), 2**63 - 1, 5, 0, 2**63 - 1]], np.int64)
    op = DML_OPERATOR_DESC(Desc=DML_TOP_K_OPERATOR_DESC(
        InputTensor=tensor_desc(x), OutputValueTensor=desc(I64, [1, 4]),
        OutputIndexTensor=desc(U64, [1, 4]), Axis=1, K=4))
    [v, i] = device5.execute(op, [x])
    assert v.tolist() == [[2**63 - 1, 2**63 - 1, 5, 5]] and i.tolist() == [[2, 5, 0, 3]]


def test_long_sequence_is_split_across_threads(device):
    """A single long sequence (the [1,1,1,2^24] workload, smaller): split, then merged."""
    rng = np.random.default_rng(3)
    run_case(device, F32, [1, 1, 1, 100_000], 3, 8, DEC, None, None, None, rng)
    plan = TopKPlan.build(4, [0] * 7, 8, 3, [1, 1, 1, 100_000], [100_000, 100_000, 100_000, 1],
                          [8, 8, 8, 1], [8, 8, 8, 1])
    assert plan.strategy(2) == ("rows", 4) and plan.strategy(16)[1] == 24


def test_doubled_stride_index_layout_keeps_upper_halves(device):
    """ONNX Runtime writes int64 indices as UINT32 with doubled strides into an int64 buffer."""
    x = np.random.default_rng(0).standard_normal((4, 10)).astype(np.float32)
    idx64 = np.full((4, 3), -1, np.int64)
    values = np.zeros((4, 3), np.float32)
    op = topk1(tensor_desc(x), desc(F32, [4, 3]), desc(U32, [4, 3], [6, 2]), 1, 3)
    device.execute(op, [x], [values, idx64.view(np.uint8)])  # its bytes are the resource
    words = idx64.view(np.uint32).reshape(4, 3, 2)
    assert (words[..., 1] == 0xFFFFFFFF).all(), "the upper halves were written"
    np.testing.assert_array_equal(words[..., 0], np.argsort(-x, axis=1, kind="stable")[:, :3])


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rank=st.integers(1, 8), dt=st.sampled_from(TEN),
       inc=st.booleans(), idx=st.sampled_from([U32, U64]))
def test_property(seed, rank, dt, inc, idx):
    rng = np.random.default_rng(seed)
    sizes, axis, k = random_case(rng, rank)
    run_case(_DEVICE, dt, sizes, axis, k, INC if inc else DEC, random_layout(rng, sizes), None,
             None, rng, idx_dt=idx)


_DEVICE = DMLCreateDevice1(feature_level="5_0")


# -- feature levels ----------------------------------------------------------------------------
def tk(dims=4, dt=F32, idx_dt=U32, axis=None, k=2, v_dt=None, v_sizes=None, i_sizes=None,
       i_dims=None, direction=DEC, n=5):
    sizes = [n] * dims
    axis = dims - 1 if axis is None else axis
    o = out_sizes(sizes, axis, k) if axis < dims else sizes
    return topk1(desc(dt, sizes), desc(v_dt or dt, v_sizes or o),
                 desc(idx_dt, i_sizes or ([*o, 1] if i_dims else o)), axis, k, direction)


OK = None
MATRIX = [
    ("4-D float32", tk(4), dict.fromkeys(LEVELS, OK)),
    ("4-D uint8 increasing", tk(4, DML_TENSOR_DATA_TYPE_UINT8, direction=INC),
     dict.fromkeys(LEVELS, OK)),
    ("1-D", tk(1), {"2_1": ("DML_OPERATOR_TOP_K1", "InputTensor.DimensionCount = 1 is invalid",
                            "DML_FEATURE_LEVEL_3_1 or later allows it",
                            "this device emulates DML_FEATURE_LEVEL_2_1"),
                    "3_0": ("DML_FEATURE_LEVEL_3_1 or later allows it",), "3_1": OK, "4_0": OK}),
    ("8-D", tk(8, n=2, k=1), {"2_1": ("DimensionCount = 8",), "3_0": ("DimensionCount = 8",),
                              "3_1": OK, "4_0": OK}),
    ("5-D", tk(5), {"2_1": ("DimensionCount = 5", "3_1"), "3_0": ("3_1",), "3_1": OK, "4_0": OK}),
    ("int64", tk(4, DML_TENSOR_DATA_TYPE_INT64), dict.fromkeys(LEVELS, (
        "InputTensor.DataType = DML_TENSOR_DATA_TYPE_INT64 is invalid",
        "DML_FEATURE_LEVEL_5_0 or later allows it"))),
    ("float64", tk(4, DML_TENSOR_DATA_TYPE_FLOAT64), dict.fromkeys(LEVELS, (
        "InputTensor.DataType = DML_TENSOR_DATA_TYPE_FLOAT64 is invalid",
        "supported data types here are FLOAT32"))),
    ("int32 indices", tk(4, idx_dt=DML_TENSOR_DATA_TYPE_INT32), dict.fromkeys(LEVELS, (
        "OutputIndexTensor.DataType = DML_TENSOR_DATA_TYPE_INT32 is invalid",
        "supported data types here are UINT32"))),
    ("value type differs", tk(4, v_dt=DML_TENSOR_DATA_TYPE_FLOAT16), dict.fromkeys(LEVELS, (
        "OutputValueTensor.DataType = DML_TENSOR_DATA_TYPE_FLOAT16 is invalid",
        "InputTensor and OutputValueTensor must have the same DataType"))),
    ("index rank differs", tk(4, i_dims=True), dict.fromkeys(LEVELS, (
        "OutputIndexTensor.DimensionCount = 5 is invalid", "same DimensionCount"))),
    ("K = 0", tk(4, k=0, v_sizes=[5, 5, 5, 1], i_sizes=[5, 5, 5, 1]), dict.fromkeys(LEVELS, (
        "K = 0 is invalid", "must lie in [1, InputTensor.Sizes[3]] = [1, 5]"))),
    ("K > size", tk(4, k=6), dict.fromkeys(LEVELS, ("K = 6 is invalid", "[1, 5]"))),
    ("K = size", tk(4, k=5), dict.fromkeys(LEVELS, OK)),
    ("Axis out of range", tk(4, axis=4), dict.fromkeys(LEVELS, (
        "Axis = 4 is invalid", "must be less than InputTensor.DimensionCount (4)"))),
    ("value sizes", tk(4, v_sizes=[5, 5, 5, 3]), dict.fromkeys(LEVELS, (
        "OutputValueTensor.Sizes = {5, 5, 5, 3} is invalid",
        "Sizes[Axis = 3] = K, that is {5, 5, 5, 2}"))),
    ("index sizes", tk(4, axis=1, i_sizes=[5, 5, 5, 5]), dict.fromkeys(LEVELS, (
        "OutputIndexTensor.Sizes = {5, 5, 5, 5} is invalid", "{5, 2, 5, 5}"))),
    ("direction", topk1(desc(F32, [2, 2, 2, 2]), desc(F32, [2, 2, 2, 1]), desc(U32, [2, 2, 2, 1]),
                        3, 1, 2), dict.fromkeys(LEVELS, ("AxisDirection = 2 is invalid",))),
]


@pytest.mark.parametrize("name,op,expect", MATRIX, ids=[m[0] for m in MATRIX])
@pytest.mark.parametrize("level", LEVELS)
def test_feature_level_matrix(name, op, expect, level):
    check_level_case(op, level, expect[level], "DML_OPERATOR_TOP_K1")


def top_k0(dt=F32, dims=4):
    sizes = [3] * dims
    o = out_sizes(sizes, dims - 1, 2)
    return DML_OPERATOR_DESC(Desc=DML_TOP_K_OPERATOR_DESC(
        InputTensor=desc(dt, sizes), OutputValueTensor=desc(dt, o), OutputIndexTensor=desc(U32, o),
        Axis=dims - 1, K=2))


@pytest.mark.parametrize("op,level", [
    (tk(4), DML_FEATURE_LEVEL_2_1), (tk(2), DML_FEATURE_LEVEL_3_1),
    (top_k0(), DML_FEATURE_LEVEL_2_0), (top_k0(DML_TENSOR_DATA_TYPE_INT8), DML_FEATURE_LEVEL_2_1),
    (top_k0(dims=3), DML_FEATURE_LEVEL_3_1), (tk(4, DML_TENSOR_DATA_TYPE_UINT64),
                                              DML_FEATURE_LEVEL_5_0),
    (tk(4, k=0, v_sizes=[5, 5, 5, 1], i_sizes=[5, 5, 5, 1]), None),
])
def test_min_feature_level(op, level):
    assert min_feature_level(op) == level


def test_top_k_levels():
    with pytest.raises(DMLError, match="DML_OPERATOR_TOP_K was introduced in DML_FEATURE_LEVEL_2_0"):
        DMLCreateDevice1(feature_level="1_0").CreateOperator(top_k0())
    DMLCreateDevice1(feature_level="2_0").CreateOperator(top_k0())
    with pytest.raises(DMLError, match=r"DML_TENSOR_DATA_TYPE_INT8 is invalid.*DML_FEATURE_LEVEL_2_1"):
        DMLCreateDevice1(feature_level="2_0").CreateOperator(top_k0(DML_TENSOR_DATA_TYPE_INT8))
    with pytest.raises(DMLError, match="DML_OPERATOR_TOP_K1 was introduced in DML_FEATURE_LEVEL_2_1"):
        DMLCreateDevice1(feature_level="2_0").CreateOperator(tk(4))
