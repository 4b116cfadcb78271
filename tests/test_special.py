"""DIAGONAL_MATRIX1, VALUE_SCALE_2D, NONZERO_COORDINATES and RANDOM_GENERATOR
(``emulator/movement/special.py``): random descs of every data type and rank the last band
allows (padded and zero input strides, padded output strides whose gaps must stay untouched)
against each row's reference; the pages' examples as golden vectors; Philox 4x32-10 against
Random123's known answers; the state's counter arithmetic; edge values."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from descriptors import *
from emulator import DMLCreateDevice1
from emulator.movement.special import ROWS, philox_blocks
from emulator.registry import REGISTRY

from .helpers import (
    SENTINEL,
    addressed_mask,
    bits,
    desc,
    initialize_and_dispatch,
    layout,
    logical,
    np_dtype,
    strided_buffer,
)

T = DML_TENSOR_DATA_TYPE
OP = DML_OPERATOR_TYPE
F32, F16, U32 = T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16, \
    T.DML_TENSOR_DATA_TYPE_UINT32
PHILOX = DML_RANDOM_GENERATOR_TYPE.DML_RANDOM_GENERATOR_TYPE_PHILOX_4X32_10
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="6_4")


def last_band(op):
    return REGISTRY[op].support[-1].tensors


def edge_values(dt, size: int, rng) -> np.ndarray:
    """``size`` elements of the type: about half 0 (and -0.0), the rest its extremes and random
    values (floats: ±inf, NaN, the smallest subnormal, the largest finite)."""
    dtype = np_dtype(dt)
    if dtype.kind == "f":
        info = np.finfo(dtype)
        pool = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, info.smallest_subnormal, info.max,
                         -info.max, 1.0, -2.5], dtype)
        values = (rng.standard_normal(size) * 100).astype(dtype)
    else:
        info = np.iinfo(dtype)
        pool = np.array([0, info.min, info.max, 1], dtype)
        values = rng.integers(info.min, info.max, size, dtype=dtype, endpoint=True)
    special = rng.random(size) < 0.3
    values[special] = rng.choice(pool, int(special.sum()))
    values[rng.random(size) < 0.4] = 0
    return values


def filled_buffer(rng, dt, sizes, strides, edges: bool) -> np.ndarray:
    """A strided buffer: random bytes, or (``edges``) edge values in every element slot."""
    raw = strided_buffer(rng, dt, sizes, strides)
    if edges:
        dtype = np_dtype(dt)
        typed = raw[: raw.size // dtype.itemsize * dtype.itemsize].view(dtype)
        typed[:] = edge_values(dt, typed.size, rng)
    return raw


def scalar_value(rng, dt):
    """A random DIAGONAL_MATRIX1 Value of the type, extremes included."""
    dtype = np_dtype(dt)
    if dtype.kind == "f":
        return float(rng.choice([1.0, -2.5, 0.0, -0.0, np.inf, 300.0,
                                 float(np.array(rng.standard_normal() * 50).astype(dtype))]))
    info = np.iinfo(dtype)
    choices = [int(info.min), int(info.max), 0, 1, int(rng.integers(info.min, info.max,
                                                                    dtype=dtype))]
    return choices[int(rng.integers(0, len(choices)))]  # (rng.choice would make floats)


def make_case(rng, op, dt):
    """(inputs {name: (data type, sizes)}, outputs {name: (data type, sizes)}, attributes)."""
    if op == OP.DML_OPERATOR_DIAGONAL_MATRIX1:
        rank = int(rng.choice(last_band(op)["OutputTensor"][0]))
        sizes = [int(rng.integers(1, 8)) for _ in range(rank)]
        h, w = sizes[-2:]
        ends = [INT32_MIN, INT32_MAX, *range(-h - 1, w + 2)]
        begin, end = int(rng.choice(ends)), int(rng.choice(ends))
        ins = {"InputTensor": (dt, sizes)} if rng.random() < 0.5 else {}
        return ins, {"OutputTensor": (dt, sizes)}, {
            "ValueDataType": dt, "Value": scalar_value(rng, dt), "DiagonalFillBegin": begin,
            "DiagonalFillEnd": end}
    if op == OP.DML_OPERATOR_VALUE_SCALE_2D:
        c = int(rng.choice([1, 3]))
        sizes = [int(rng.integers(1, 4)), c, int(rng.integers(1, 6)), int(rng.integers(1, 9))]
        scale = float(rng.choice([0.5, -3.0, 0.0, -0.0, 1e-3, 7.3, np.inf]))
        bias = [float(rng.choice([0.0, -0.0, 0.1, -250.5, 1e30])) for _ in range(c)]
        return {"InputTensor": (dt, sizes)}, {"OutputTensor": (dt, sizes)}, {
            "Scale": scale, "ChannelCount": c, "Bias": bias}
    if op == OP.DML_OPERATOR_NONZERO_COORDINATES:
        rank = int(rng.choice(last_band(op)["InputTensor"][0]))
        sizes = [int(rng.integers(1, 4 if rank > 4 else 6)) for _ in range(rank)]
        if rng.random() < 0.3:  # leading 1s: N may exceed the effective rank
            k = int(rng.integers(0, rank + 1))
            sizes[:k] = [1] * k
        low = next((k for k, s in enumerate(sizes) if s != 1), rank)
        n = int(rng.integers(max(rank - low, 1), rank + 1))
        coord_rank = int(rng.integers(2, 9))
        count_rank = int(rng.integers(1, 9))
        m = int(np.prod(sizes))
        return {"InputTensor": (dt, sizes)}, {
            "OutputCountTensor": (U32, [1] * count_rank),
            "OutputCoordinatesTensor": (U32, [1] * (coord_rank - 2) + [m, n])}, {}
    if op == OP.DML_OPERATOR_RANDOM_GENERATOR:
        rank = int(rng.integers(1, 9))
        sizes = [int(rng.integers(1, 4 if rank > 4 else 9)) for _ in range(rank)]
        state = [1] * int(rng.integers(0, 8)) + [6]
        outs = {"OutputTensor": (U32, sizes)}
        if rng.random() < 0.7:
            outs["OutputStateTensor"] = (U32, state)
        return {"InputStateTensor": (U32, state)}, outs, {"Type": PHILOX}
    raise AssertionError(op)


def dispatch(device, operator, inputs, outputs) -> None:
    """Bind byte arrays by field name (a name not given: an absent optional tensor, bound as
    DML_BINDING_TYPE_NONE) and dispatch once."""
    compiled = device.CompileOperator(device.CreateOperator(operator))
    table = device.CreateBindingTable(DML_BINDING_TABLE_DESC(
        Dispatchable=compiled,
        SizeInDescriptors=compiled.GetBindingProperties().RequiredDescriptorCount))

    def bind(arrays, names):
        return [None if n not in arrays else DML_BINDING_DESC(
            Type=DML_BINDING_TYPE_BUFFER, Desc=DML_BUFFER_BINDING(
                Buffer=arrays[n], Offset=0, SizeInBytes=arrays[n].nbytes)) for n in names]

    table.BindInputs(bind(inputs, [n for n, _ in compiled.bind_points("input")]))
    table.BindOutputs(bind(outputs, [n for n, _ in compiled.bind_points("output")]))
    initialize_and_dispatch(device, compiled, table)


def run_case(device, rng, row, dt):
    op = row.operator
    ins, outs, attrs = make_case(rng, op, dt)
    tensors, inputs, raws = {}, {}, {}
    for name, (tdt, sizes) in ins.items():
        strides = layout(rng, sizes, True)
        raw = filled_buffer(rng, tdt, sizes, strides, edges=op != OP.DML_OPERATOR_RANDOM_GENERATOR
                            or rng.random() < 0.5)
        if op == OP.DML_OPERATOR_RANDOM_GENERATOR and rng.random() < 0.5:  # near the wrap
            logical(raw, np.uint32, sizes, strides).reshape(-1)[:4] = 0xFFFFFFFF - \
                rng.integers(0, 3, 4)
        tensors[name] = desc(tdt, sizes, strides)
        raws[name] = raw
        inputs[name] = np.array(logical(raw, np_dtype(tdt), sizes, strides))
    out_raws = {}
    for name, (tdt, sizes) in outs.items():
        strides = layout(rng, sizes, False)
        out_raws[name] = (tdt, sizes, strides, strided_buffer(rng, tdt, sizes, strides,
                                                              fill=SENTINEL))
        tensors[name] = desc(tdt, sizes, strides)
    operator = DML_OPERATOR_DESC(Desc=OPERATOR_DESC_CLASSES[op](**tensors, **attrs))
    dispatch(device, operator, raws, {n: r for n, (*_, r) in out_raws.items()})
    v = device.CreateOperator(operator).validated.values
    want = REGISTRY[op].module.reference(v, inputs)
    assert set(want) == set(outs)
    for name, (tdt, sizes, strides, raw) in out_raws.items():
        dtype = np_dtype(tdt)
        got = logical(raw, dtype, sizes, strides)
        expected = np.asarray(want[name]).astype(dtype)
        written = np.ones(got.shape, bool)
        if name == "OutputCoordinatesTensor":  # only the first count rows are written
            count = int(np.ravel(want["OutputCountTensor"])[0])
            written = (np.arange(sizes[-2]) < count)[:, None] & written
        assert got.shape == expected.shape
        same = bits(got) == bits(expected)
        if dtype.kind == "f":  # a NaN's payload is not specified: any NaN where NaN is due
            same |= np.isnan(got) & np.isnan(expected)
        same |= ~written
        assert same.all(), (row.name, dt.name, attrs, got[~same][:5], expected[~same][:5])
        untouched = ~addressed_mask(raw.size, dtype.itemsize, sizes, strides)
        unwritten = logical(raw, dtype, sizes, strides)[~written]
        assert (raw[untouched] == SENTINEL).all(), f"{name}: a gap of the output was written"
        assert (bits(unwritten) == bits(np.full(1, SENTINEL, np.uint8).repeat(
            dtype.itemsize).view(dtype))).all(), "a coordinate row past the count was written"


def type_cases():
    out = []
    for row in ROWS:
        band = REGISTRY[row.operator].support[-1]
        types = set().union(*(set(t) for _, t in band.tensors.values()))
        out += [(row, t) for t in sorted(types & set(row.kernel_types))
                if row.operator != OP.DML_OPERATOR_NONZERO_COORDINATES or
                t in band.tensors["InputTensor"][1]]
    return out


CASES = type_cases()


def test_every_type_of_the_last_bands_is_covered():
    names = {(r.name, t.name[21:]) for r, t in CASES}
    assert len([n for n in names if n[0] == "diagonal_matrix1"]) == 11
    assert len([n for n in names if n[0] == "nonzero_coordinates"]) == 8
    assert {n for n in names if n[0] == "value_scale_2d"} == {
        ("value_scale_2d", "FLOAT32"), ("value_scale_2d", "FLOAT16")}
    assert {n for n in names if n[0] == "random_generator"} == {("random_generator", "UINT32")}


@pytest.mark.parametrize("row,dt", CASES, ids=[f"{r.name}-{t.name[21:]}" for r, t in CASES])
def test_kernel_matches_the_reference(device, row, dt):
    rng = np.random.default_rng(zlib.crc32(f"{row.name}{dt.name}".encode()))
    for _ in range(12):
        run_case(device, rng, row, dt)


# --- DIAGONAL_MATRIX1 ------------------------------------------------------------------------------

EXAMPLE = np.array([[4, 7, 3, 7, 9], [1, 2, 8, 6, 9], [9, 4, 1, 8, 7], [4, 3, 4, 2, 4]],
                   np.float32)


def diagonal1(device, value, begin, end, x=None, sizes=(4, 5), dt=F32):
    op = DML_OPERATOR_DESC(Desc=DML_DIAGONAL_MATRIX1_OPERATOR_DESC(
        InputTensor=None if x is None else tensor_desc(x), OutputTensor=tensor_desc(sizes, dt),
        ValueDataType=dt, Value=value, DiagonalFillBegin=begin, DiagonalFillEnd=end))
    [y] = device.execute(op, {} if x is None else {"InputTensor": x})
    return y.reshape(sizes)


@pytest.mark.parametrize("value,begin,end,x,expected", [
    # The first example prints ones although its Value is 7 (a typo of the page): Value 1 here.
    (1.0, 0, 1, None, [[1, 0, 0, 0, 0], [0, 1, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 0, 1, 0]]),
    (7.0, 0, 3, None, [[7, 7, 7, 0, 0], [0, 7, 7, 7, 0], [0, 0, 7, 7, 7], [0, 0, 0, 7, 7]]),
    (0.0, INT32_MIN, 1, EXAMPLE, [[0, 7, 3, 7, 9], [0, 0, 8, 6, 9], [0, 0, 0, 8, 7],
                                  [0, 0, 0, 0, 4]]),
    (0.0, 1, 0, EXAMPLE, [[4, 0, 0, 0, 0], [0, 2, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 0, 2, 0]]),
])
def test_diagonal_matrix1_page_examples(device, value, begin, end, x, expected):
    assert diagonal1(device, value, begin, end, x).tolist() == expected


@pytest.mark.parametrize("offset", [-5, -4, -1, 0, 1, 3, 4, 5, 6])
def test_diagonal_matrix1_is_diagonal_matrix_with_offset_and_offset_plus_1(device, offset):
    """The page's Remarks: Begin = Offset, End = Offset + 1 is DIAGONAL_MATRIX."""
    op = DML_OPERATOR_DESC(Desc=DML_DIAGONAL_MATRIX_OPERATOR_DESC(
        OutputTensor=tensor_desc((2, 3, 4, 5), F32), Offset=offset, Value=-2.5))
    [old] = device.execute(op, [])
    new = diagonal1(device, -2.5, offset, offset + 1, sizes=(2, 3, 4, 5))
    assert bits(new).tolist() == bits(old.reshape(2, 3, 4, 5)).tolist()
    assert (new == -2.5).sum() == 6 * max(0, min(4, 5 - offset) - max(0, -offset))


@pytest.mark.parametrize("begin,end,want", [
    (2, 2, "input"),  # an empty range: nothing takes Value
    (INT32_MAX, INT32_MIN, "input"),  # reversed over everything: nothing outside it
    (INT32_MIN, INT32_MAX, "value"),
    (INT32_MAX, INT32_MAX - 1, "value"),  # reversed, empty excluded range
    (-10, 10, "value"),
])
def test_diagonal_matrix1_range_extremes(device, begin, end, want):
    x = np.arange(12, dtype=np.int64).reshape(3, 4) - 6
    y = diagonal1(device, -(2**63), begin, end, x, (3, 4), T.DML_TENSOR_DATA_TYPE_INT64)
    assert y.tolist() == (x.tolist() if want == "input" else [[-(2**63)] * 4] * 3)


def test_diagonal_matrix1_reversed_range_fills_outside_it(device):
    """Begin 2 > End -1: every diagonal but x - y in [-1, 2) takes Value; the input elsewhere."""
    x = np.full((4, 6), 9, np.uint8)
    y = diagonal1(device, 255, 2, -1, x, (4, 6), T.DML_TENSOR_DATA_TYPE_UINT8)
    top = np.arange(6)[None, :] - np.arange(4)[:, None]
    assert (y == np.where((top >= -1) & (top < 2), 9, 255)).all()


def test_diagonal_matrix1_keeps_value_bits_and_broadcast_inputs(device):
    """A FLOAT16 -0.0 Value keeps its sign; a zero-strided input is read as broadcast."""
    x = np.array([1.5, -3.0, 7.0], np.float16)
    op = DML_OPERATOR_DESC(Desc=DML_DIAGONAL_MATRIX1_OPERATOR_DESC(
        InputTensor=tensor_desc((2, 3, 3), F16, strides=(0, 0, 1)),
        OutputTensor=tensor_desc((2, 3, 3), F16), ValueDataType=F16, Value=-0.0,
        DiagonalFillBegin=0, DiagonalFillEnd=1))
    [y] = device.execute(op, {"InputTensor": x})
    y = y.reshape(2, 3, 3)
    eye = np.eye(3, dtype=bool)
    assert (bits(y)[:, eye] == 0x8000).all()
    assert (y[:, ~eye] == np.broadcast_to(x, (3, 3))[~eye]).all()


# --- VALUE_SCALE_2D --------------------------------------------------------------------------------

def value_scale(device, x, scale, bias, dt=F32):
    op = DML_OPERATOR_DESC(Desc=DML_VALUE_SCALE_2D_OPERATOR_DESC(
        InputTensor=tensor_desc(x.shape, dt), OutputTensor=tensor_desc(x.shape, dt),
        Scale=scale, ChannelCount=len(bias), Bias=bias))
    [y] = device.execute(op, [x])
    return y.reshape(x.shape)


def test_value_scale_2d_golden(device):
    x = np.arange(12, dtype=np.float32).reshape(1, 3, 2, 2)
    y = value_scale(device, x, 0.5, [0.25, -1.0, 100.0])
    assert y.tolist() == [[[[0.25, 0.75], [1.25, 1.75]], [[1.0, 1.5], [2.0, 2.5]],
                           [[104.0, 104.5], [105.0, 105.5]]]]
    x16 = np.array([1, -2, 0.5, 65504, -0.0, 3], np.float16).reshape(2, 1, 1, 3)
    y16 = value_scale(device, x16, 2.0, [-1.0], F16)
    assert y16.ravel().tolist() == [1.0, -5.0, 0.0, np.inf, -1.0, 5.0]


def test_value_scale_2d_edge_values(device):
    """NaN propagates; inf·0 is NaN; -0·s + -0 stays -0, + +0 is +0; overflow is inf."""
    x = np.array([np.nan, np.inf, -0.0, -0.0, 3e38, 1.0], np.float32).reshape(1, 1, 2, 3)
    y = value_scale(device, x, 0.0, [-0.0]).ravel()
    assert np.isnan(y[0]) and np.isnan(y[1]) and bits(y[2:4]).tolist() == [0x80000000] * 2
    y = value_scale(device, x, 2.0, [0.0]).ravel()
    assert bits(y[2:4]).tolist() == [0, 0] and y[4] == np.inf and y[5] == 2.0


def test_value_scale_2d_is_identity_with_scale_bias_per_channel(device):
    """Bit for bit ELEMENT_WISE_IDENTITY with ScaleBias {Scale, Bias[c]} on each channel, for
    values where float64-then-round and a fused multiply-add could round differently."""
    rng = np.random.default_rng(7)
    for dt in (F32, F16):
        dtype = np_dtype(dt)
        x = (rng.standard_normal((2, 3, 8, 16)) * 1000).astype(dtype)
        scale = float(np.float32(1 / 3))
        bias = [float(np.float32(b)) for b in (0.1, -1e-3, 12345.678)]
        y = value_scale(device, x, scale, bias, dt)
        for c in range(3):
            xc = np.ascontiguousarray(x[:, c:c + 1])
            op = DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC(
                InputTensor=tensor_desc(xc.shape, dt), OutputTensor=tensor_desc(xc.shape, dt),
                ScaleBias=DML_SCALE_BIAS(Scale=scale, Bias=bias[c])))
            [yc] = device.execute(op, [xc])
            assert (bits(y[:, c:c + 1]) == bits(yc.reshape(xc.shape))).all()
            exact = x[:, c].astype(np.float64) * scale + bias[c]
            assert (y[:, c] == exact.astype(dtype)).all()  # float64, rounded once


# --- NONZERO_COORDINATES ---------------------------------------------------------------------------

def nonzero(device, x, n, dt=F32, coords=None):
    m = x.size
    op = DML_OPERATOR_DESC(Desc=DML_NONZERO_COORDINATES_OPERATOR_DESC(
        InputTensor=tensor_desc(x.shape, dt), OutputCountTensor=tensor_desc((1,) * x.ndim, U32),
        OutputCoordinatesTensor=tensor_desc((1, 1, m, n), U32)))
    if coords is None:
        coords = np.full((1, 1, m, n), 77, np.uint32)
    count, out = device.execute(op, {"InputTensor": x}, {
        "OutputCountTensor": np.full((1,) * x.ndim, 5, np.uint32),
        "OutputCoordinatesTensor": coords})
    return int(count.ravel()[0]), out.reshape(m, n)


def test_nonzero_coordinates_page_example(device):
    x = np.array([[1.0, 0.0, 0.0, 2.0], [-0.0, 3.5, 0.0, -5.2]], np.float32).reshape(1, 1, 2, 4)
    count, coords = nonzero(device, x, 3)
    assert count == 4
    assert coords[:4].tolist() == [[0, 0, 0], [0, 0, 3], [0, 1, 1], [0, 1, 3]]
    assert (coords[4:] == 77).all()  # rows past the count: not written


def test_nonzero_coordinates_field_example_order(device):
    """{1,0}, {1,2} and {0,5} come out in ascending element order."""
    x = np.zeros((1, 1, 2, 6), np.int8)
    x[0, 0, 1, 0] = x[0, 0, 1, 2] = -128
    x[0, 0, 0, 5] = 1
    count, coords = nonzero(device, x, 2, T.DML_TENSOR_DATA_TYPE_INT8)
    assert count == 3 and coords[:3].tolist() == [[0, 5], [1, 0], [1, 2]]


def test_nonzero_coordinates_float_zeros_nan_and_inf(device):
    """±0 are zero (the page); NaN, ±inf and the smallest subnormal are not."""
    for dt in (F32, F16):
        dtype = np_dtype(dt)
        values = [0.0, -0.0, np.nan, np.inf, -np.inf, np.finfo(dtype).smallest_subnormal, -0.0]
        x = np.array(values, dtype).reshape(1, 1, 1, 7)
        count, coords = nonzero(device, x, 1, dt)
        assert count == 4 and coords[:4, 0].tolist() == [2, 3, 4, 5]


def test_nonzero_coordinates_all_zero_writes_only_the_count(device):
    count, coords = nonzero(device, np.zeros((1, 1, 3, 2), np.uint16), 2,
                            T.DML_TENSOR_DATA_TYPE_UINT16)
    assert count == 0 and (coords == 77).all()


def test_nonzero_coordinates_eight_dimensions_and_wide_n(device):
    """A rank-8 input, coordinates with N = DimensionCount (leading dimensions of size 1 give
    zero columns)."""
    x = np.zeros((1, 1, 2, 1, 3, 1, 1, 2), np.uint32)
    x[0, 0, 1, 0, 2, 0, 0, 1] = 0xFFFFFFFF
    x[0, 0, 0, 0, 1, 0, 0, 0] = 1
    op = DML_OPERATOR_DESC(Desc=DML_NONZERO_COORDINATES_OPERATOR_DESC(
        InputTensor=tensor_desc(x), OutputCountTensor=tensor_desc((1,), U32),
        OutputCoordinatesTensor=tensor_desc((12, 8), U32)))
    count, coords = device.execute(op, [x])
    assert int(count[0]) == 2
    assert coords[:2].tolist() == [[0, 0, 0, 0, 1, 0, 0, 0], [0, 0, 1, 0, 2, 0, 0, 1]]


# --- RANDOM_GENERATOR ------------------------------------------------------------------------------

KNOWN_ANSWERS = [  # Random123's kat_vectors for philox4x32_10: counter, key, result
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def counter_value(words) -> int:
    return sum(int(w) << (32 * k) for k, w in enumerate(words))


def _words(counter: int) -> list[int]:
    counter %= 2**128
    return [(counter >> (32 * k)) & 0xFFFFFFFF for k in range(4)]


def random(device, state, sizes, with_state=True, state_sizes=(1, 1, 1, 6)):
    state = np.asarray(state, np.uint32).reshape(state_sizes)
    op = DML_OPERATOR_DESC(Desc=DML_RANDOM_GENERATOR_OPERATOR_DESC(
        InputStateTensor=tensor_desc(state), OutputTensor=tensor_desc(sizes, U32),
        OutputStateTensor=tensor_desc(state) if with_state else None, Type=PHILOX))
    outputs = {"OutputTensor": np.zeros(int(np.prod(sizes)), np.uint32)}
    if with_state:
        outputs["OutputStateTensor"] = np.zeros(6, np.uint32)
    dispatch(device, op, {"InputStateTensor": state}, outputs)
    return list(outputs.values())


@pytest.mark.parametrize("counter,key,result", KNOWN_ANSWERS)
def test_philox_known_answers(device, counter, key, result):
    """The kernel (through the operator) and the reference's Philox, each on its own."""
    [y, state] = random(device, [*counter, *key], (1, 1, 1, 4))
    assert y.tolist() == list(result)
    assert philox_blocks(counter_value(counter), key, 1).ravel().tolist() == list(result)
    assert state.tolist() == [*_words(counter_value(counter) + 1), *key]


def test_random_output_is_the_blocks_in_order_and_the_last_one_cut_short(device):
    key = (0xA4093822, 0x299F31D0)
    [y, state] = random(device, [7, 0, 0, 0, *key], (3, 3))
    blocks = philox_blocks(7, key, 3).ravel()
    assert y.tolist() == blocks[:9].tolist()
    assert state.tolist() == [10, 0, 0, 0, *key]  # ceil(9 / 4) = 3 counters used


def test_random_state_continues_the_stream(device):
    """Two executions chained through OutputStateTensor use the counters one execution of the
    whole would (block-wise: the first execution's unused words are skipped)."""
    seed = [0, 0, 0, 0, 12345, 678]
    [first, state] = random(device, seed, (6,))
    [second, _] = random(device, state, (2, 4))
    [whole, _] = random(device, seed, (16,))
    assert first.tolist() == whole[:6].tolist() and second.tolist() == whole[8:].tolist()


@pytest.mark.parametrize("counter", [
    (0xFFFFFFFF, 0, 0, 0),  # carry into word 1
    (0xFFFFFFFF, 0xFFFFFFFF, 5, 0),  # carry from the low 64 bits into word 2
    (0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF),  # 2^128 wraps to 0
])
def test_random_counter_carries_and_wraps(device, counter):
    key = (1, 2)
    [y, state] = random(device, [*counter, *key], (1, 1, 3, 4))
    c = counter_value(counter)
    expected = np.concatenate([philox_blocks((c + b) % 2**128, key, 1).ravel() for b in range(3)])
    assert y.tolist() == expected.tolist()
    assert state.tolist() == [*_words(c + 3), *key]


def test_random_page_counter_increment(device):
    """The page's example: {3,3,20,7219} advances the counter by 324,855. (The page prints the
    advanced low word as 0x746f776e, which is the starting 0x74746c65 minus 324,855: its two
    values are swapped; the text says the counter is incremented.)"""
    counter = (0x74746C65, 0x6D536561, 0x6F46726F, 0x48656C6C)
    key = (0xDEADBEEF, 0x12345678)
    [y, state] = random(device, [*counter, *key], (3, 3, 20, 7219))
    c = counter_value(counter)
    assert counter_value(state[:4]) == c + 324_855 and state[3] == 0x48656C6C
    assert 0x74746C65 - 324_855 == 0x746F776E
    assert y.size == 4 * 324_855  # whole blocks: the last is counter + 324,854
    assert y[-4:].tolist() == philox_blocks(c + 324_854, key, 1).ravel().tolist()
    assert y[:8].tolist() == philox_blocks(c, key, 2).ravel().tolist()


def test_random_without_output_state_and_other_state_ranks(device):
    seed = [1, 2, 3, 4, 5, 6]
    [a] = random(device, seed, (5,), with_state=False, state_sizes=(6,))
    [b, _] = random(device, seed, (5,), state_sizes=(1, 1, 1, 1, 1, 1, 1, 6))
    assert a.tolist() == b.tolist()
    [c] = random(device, [1, 2, 3, 4, 5, 7], (5,), with_state=False, state_sizes=(6,))
    assert a.tolist() != c.tolist()  # another key, another stream


def test_random_state_in_and_out_may_not_share_a_buffer(device):
    """RANDOM_GENERATOR is not an in-place operator: one buffer bound as both states is
    E_INVALIDARG at RecordDispatch (chain executions through two buffers instead)."""
    from emulator import E_INVALIDARG, DMLError

    state = np.array([3, 0, 0, 0, 9, 9], np.uint32)
    op = DML_OPERATOR_DESC(Desc=DML_RANDOM_GENERATOR_OPERATOR_DESC(
        InputStateTensor=tensor_desc(state), OutputTensor=tensor_desc((4,), U32),
        OutputStateTensor=tensor_desc(state), Type=PHILOX))
    with pytest.raises(DMLError) as info:
        dispatch(device, op, {"InputStateTensor": state},
                 {"OutputTensor": np.zeros(4, np.uint32), "OutputStateTensor": state})
    assert info.value.hresult == E_INVALIDARG
    assert state.tolist() == [3, 0, 0, 0, 9, 9]


def test_execute_binds_an_absent_optional_output_as_none():
    """``device.execute`` runs RANDOM_GENERATOR without OutputStateTensor (its BindOutputs list
    has a None for the absent state, not one entry fewer)."""
    key = (0xA4093822, 0x299F31D0)
    state = np.array([7, 0, 0, 0, *key], np.uint32).reshape(1, 1, 1, 6)
    op = DML_OPERATOR_DESC(Desc=DML_RANDOM_GENERATOR_OPERATOR_DESC(
        InputStateTensor=tensor_desc(state), OutputTensor=tensor_desc((2, 4), U32),
        OutputStateTensor=None, Type=PHILOX))
    [y] = DMLCreateDevice1(feature_level="6_4").execute(op, [state])
    assert y.ravel().tolist() == philox_blocks(7, key, 2).ravel().tolist()
