"""The integer and quantized products (``emulator/compute/integer.py``): MATRIX_MULTIPLY_INTEGER,
MATRIX_MULTIPLY_INTEGER_TO_FLOAT, CONVOLUTION_INTEGER and QUANTIZED_LINEAR_CONVOLUTION against
their NumPy references (exact integers in Python ints / int64), through random layouts: padded
and zero (broadcast) strides on every input (zero points and scales included), padded output
strides whose gaps must stay untouched.

**Bounds.** Integer outputs (INT32, and the requantized INT8/UINT8) are bit exact. The float
output of MATRIX_MULTIPLY_INTEGER_TO_FLOAT is bit exact too against the stated evaluation: the
exact integer sum rounded once to float64, times (AScale * BScale) in float64, plus Bias in
float64, rounded once to FLOAT32/FLOAT16; so it is within one rounding (plus 3 float64 roundings)
of the exact real value.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from descriptors import *
from emulator import DMLCreateDevice1, DMLError
from emulator.compute import blas, integer
from emulator.registry import REGISTRY

from .helpers import SENTINEL, addressed_mask, desc, layout, logical, strided_buffer

T = DML_TENSOR_DATA_TYPE
I8, U8, I16, U16, I32, U32 = (T.DML_TENSOR_DATA_TYPE_INT8, T.DML_TENSOR_DATA_TYPE_UINT8,
                              T.DML_TENSOR_DATA_TYPE_INT16, T.DML_TENSOR_DATA_TYPE_UINT16,
                              T.DML_TENSOR_DATA_TYPE_INT32, T.DML_TENSOR_DATA_TYPE_UINT32)
F32, F16 = T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16
NP = {I8: np.int8, U8: np.uint8, I16: np.int16, U16: np.uint16, I32: np.int32, U32: np.uint32,
      F32: np.float32, F16: np.float16}
OP = DML_OPERATOR_TYPE


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="6_4")


@pytest.fixture(params=["portable", "vnni", "blas"])
def path(request, monkeypatch):
    """The 8-bit cases run on every exact path: int_kernels.isums (QLMM's portable tiles),
    int_kernels.isums_vnni (its VNNI tiles, plain vector code on a CPU without them) and the
    BLAS."""
    monkeypatch.setattr(integer, "USE_KERNEL", request.param != "blas")
    monkeypatch.setattr(integer, "USE_VNNI", request.param == "vnni")
    return request.param


def ints(rng, dt, shape, extreme=False):
    info = np.iinfo(NP[dt])
    if extreme:  # the range's ends, where sums and limbs are largest
        return rng.choice([info.min, info.max], shape).astype(NP[dt])
    return rng.integers(info.min, int(info.max) + 1, shape).astype(NP[dt])


def dispatch(device, rng, op_type, make, inputs, out_dt, out_sizes, packed=False):
    """``inputs``: (bind point, data type, array or None) in the desc's order; each placed in a
    random layout (padded or zero strides; a zero stride repeats the array's first element along
    that dimension, and the reference sees what is bound). Checks the output gaps and the
    result against the registry's reference, bit for bit; returns the result."""
    descs, raws, arrays = {}, {}, {}
    for name, dt, value in inputs:
        if value is None:
            descs[name] = None
            continue
        strides = None if packed else layout(rng, value.shape, True)
        raw = strided_buffer(rng, dt, value.shape, strides, fill=0)
        view = logical(raw, NP[dt], value.shape, strides)
        view[...] = value
        descs[name], raws[name], arrays[name] = desc(dt, value.shape, strides), raw, np.array(view)
    o_strides = None if packed else layout(rng, out_sizes, False)
    raw_out = strided_buffer(rng, out_dt, out_sizes, o_strides, fill=SENTINEL)
    op = make(descs, desc(out_dt, out_sizes, o_strides))
    before = {k: r.copy() for k, r in raws.items()}
    device.execute(op, [raws.get(name) for name, _, _ in inputs], [raw_out])
    for k, r in raws.items():
        assert (r == before[k]).all(), f"input {k} was changed"
    untouched = ~addressed_mask(raw_out.size, np.dtype(NP[out_dt]).itemsize, out_sizes, o_strides)
    assert (raw_out[untouched] == SENTINEL).all(), "a gap of the output was written"
    got = np.array(logical(raw_out, NP[out_dt], out_sizes, o_strides))
    v = device.CreateOperator(op).validated.values
    want = REGISTRY[op_type].module.reference(v, arrays)["OutputTensor"]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))
    return got


def mmi_op(descs, out):
    return DML_MATRIX_MULTIPLY_INTEGER_OPERATOR_DESC(**descs, OutputTensor=out)


def mmitf_op(descs, out):
    return DML_MATRIX_MULTIPLY_INTEGER_TO_FLOAT_OPERATOR_DESC(**descs, OutputTensor=out)


def quant_shape(kind, rank, m, n):
    """A scale or zero point's Sizes: per tensor, per row of A, per column of B, or a 1-D
    {M} (per row) the 4_0 and 5_2 tables allow."""
    ones = (1,) * rank
    if kind == "row1d" or (kind == "row" and rank == 1):
        return (m,)
    return {"tensor": ones, "row": (*ones[:-2], m, 1), "column": (*ones[:-1], n)}[kind]


# -- MATRIX_MULTIPLY_INTEGER ------------------------------------------------------------------
@pytest.mark.parametrize("a_t,b_t", list(itertools.product((I8, U8), repeat=2)))
def test_matrix_multiply_integer_every_type_granularity_rank_and_layout(device, path, a_t, b_t):
    rng = np.random.default_rng(10 * int(a_t) + int(b_t))
    for case in range(16):
        rank = 2 + case % 3
        batch = [int(rng.integers(1, 4)) for _ in range(rank - 2)]
        m, k, n = (int(x) for x in rng.integers(1, 20, 3))
        if case == 5:
            k = 600  # several exact FLOAT32 chunks of 258 k-steps
        az_kind = rng.choice(["none", "tensor", "row", "row1d"])
        bz_kind = rng.choice(["none", "tensor", "column"])
        extreme = case % 4 == 3
        a = ints(rng, a_t, (*batch, m, k), extreme)
        b = ints(rng, b_t, (*batch, k, n), extreme)
        zr = 1 if az_kind == "row1d" else int(rng.integers(rank, 5))  # zero points 1-4 dims
        az = None if az_kind == "none" else ints(rng, a_t, quant_shape(az_kind, zr, m, n), extreme)
        bz = None if bz_kind == "none" else ints(rng, b_t, quant_shape(bz_kind, zr, m, n), extreme)
        dispatch(device, rng, OP.DML_OPERATOR_MATRIX_MULTIPLY_INTEGER, mmi_op,
                 [("ATensor", a_t, a), ("AZeroPointTensor", a_t, az), ("BTensor", b_t, b),
                  ("BZeroPointTensor", b_t, bz)], I32, [*batch, m, n])


def test_matrix_multiply_integer_golden_and_the_int32_wrap(device, path):
    rng = np.random.default_rng(1)
    a = np.array([[1, 2, 3], [4, 5, 6]], np.uint8)
    b = np.array([[7, 8], [9, 10], [11, 12]], np.uint8)
    got = dispatch(device, rng, OP.DML_OPERATOR_MATRIX_MULTIPLY_INTEGER, mmi_op,
                   [("ATensor", U8, a), ("AZeroPointTensor", U8, np.array([[1], [2]], np.uint8)),
                    ("BTensor", U8, b), ("BZeroPointTensor", U8, np.array([[3, 4]], np.uint8))],
                   I32, [2, 2], packed=True)
    # (A - [1; 2]) x (B - [3 4]) = [[0 1 2], [2 3 4]] x [[4 4], [6 6], [8 8]]
    assert got.tolist() == [[22, 22], [58, 58]]
    # 255 * 255 * 33100 > 2**31 - 1: the INT32 output wraps (as a 32-bit accumulator would).
    k = 33100
    got = dispatch(device, rng, OP.DML_OPERATOR_MATRIX_MULTIPLY_INTEGER, mmi_op,
                   [("ATensor", U8, np.full((1, k), 255, np.uint8)), ("AZeroPointTensor", U8, None),
                    ("BTensor", U8, np.full((k, 2), 255, np.uint8)), ("BZeroPointTensor", U8, None)],
                   I32, [1, 2], packed=True)
    assert got.tolist() == [[255 * 255 * k - 2**32] * 2]


def test_the_portable_numpy_matmul_path_gives_the_same_sums(device, monkeypatch):
    monkeypatch.setattr(blas, "DIRECT", False)
    rng = np.random.default_rng(2)
    a, b = ints(rng, I8, (3, 9, 300)), ints(rng, U8, (3, 300, 5))
    dispatch(device, rng, OP.DML_OPERATOR_MATRIX_MULTIPLY_INTEGER, mmi_op,
             [("ATensor", I8, a), ("AZeroPointTensor", I8, ints(rng, I8, (1, 9, 1))),
              ("BTensor", U8, b), ("BZeroPointTensor", U8, ints(rng, U8, (1, 1, 5)))],
             I32, [3, 9, 5])


# -- MATRIX_MULTIPLY_INTEGER_TO_FLOAT ----------------------------------------------------------
@pytest.mark.parametrize("int_t", [I8, U8, I16, U16, I32, U32])
@pytest.mark.parametrize("float_t", [F32, F16])
def test_integer_to_float_every_type_granularity_rank_bias_and_layout(device, path, int_t, float_t):
    rng = np.random.default_rng(int(int_t) * 7 + int(float_t))
    for case in range(8):
        rank = 2 + case % 3
        batch = [int(rng.integers(1, 3)) for _ in range(rank - 2)]
        m, k, n = (int(x) for x in rng.integers(1, 12, 3))
        extreme = case % 2 == 1
        a = ints(rng, int_t, (*batch, m, k), extreme)
        b = ints(rng, int_t, (*batch, k, n), extreme)
        kinds = rng.choice(["tensor", "row", "row1d"]), rng.choice(["tensor", "column"])
        a_kind, b_kind = kinds
        qr = 1 if a_kind == "row1d" else int(rng.integers(2, 5))
        scale = 2.0 ** -20 if NP[int_t]().itemsize == 4 and float_t == F16 else 0.01
        as_ = (rng.random(quant_shape(a_kind, qr, m, n)) * scale).astype(NP[float_t])
        bs_ = (rng.random(quant_shape(b_kind, qr, m, n)) * scale).astype(NP[float_t])
        az = None if case % 3 == 0 else ints(rng, int_t, quant_shape(a_kind, qr, m, n), extreme)
        bz = None if case % 3 == 1 else ints(rng, int_t, quant_shape(b_kind, qr, m, n), extreme)
        bias = (None if case % 4 == 0
                else rng.standard_normal((*batch, m, n)).astype(NP[float_t]))
        dispatch(device, rng, OP.DML_OPERATOR_MATRIX_MULTIPLY_INTEGER_TO_FLOAT, mmitf_op,
                 [("ATensor", int_t, a), ("AScaleTensor", float_t, as_),
                  ("AZeroPointTensor", int_t, az), ("BTensor", int_t, b),
                  ("BScaleTensor", float_t, bs_), ("BZeroPointTensor", int_t, bz),
                  ("BiasTensor", float_t, bias)], float_t, [*batch, m, n])


def test_integer_to_float_32_bit_sums_beyond_53_bits_round_once(device):
    """(2**32 - 1)**2 * 700 has ~74 bits: the limb products and the carry keep it exact, then it
    is rounded once to float64 (the reference: Python's float of the exact int)."""
    rng = np.random.default_rng(3)
    k = 700
    a = np.full((2, k), -2**31, np.int32)
    a[1, ::3] = 2**31 - 1
    b = np.full((k, 3), 2**31 - 1, np.int32)
    b[::7, 1] = -2**31
    got = dispatch(device, rng, OP.DML_OPERATOR_MATRIX_MULTIPLY_INTEGER_TO_FLOAT, mmitf_op,
                   [("ATensor", I32, a), ("AScaleTensor", F32, np.ones((1, 1), np.float32)),
                    ("AZeroPointTensor", I32, np.full((2, 1), 2**31 - 1, np.int32)),
                    ("BTensor", I32, b), ("BScaleTensor", F32, np.ones((1, 1), np.float32)),
                    ("BZeroPointTensor", I32, np.array([[-2**31, 5, -2**31]], np.int32)),
                    ("BiasTensor", F32, None)], F32, [2, 3], packed=True)
    exact = (-2**31 - (2**31 - 1)) * ((2**31 - 1) - (-2**31)) * k
    assert got[0, 0] == np.float32(float(exact))
    for hi in (2**60 + 12345, -(2**70) - 1, 2**52 - 7):  # the one-rounding conversion itself
        want = float(hi * 2**32 + 2**32 - 1)
        assert integer.exact_float(np.array([hi]), np.array([2**32 - 1]))[0] == want


def test_integer_to_float_nan_and_infinite_scales(device):
    rng = np.random.default_rng(4)
    a = np.array([[0, 1, 2]], np.int8)
    b = np.array([[1], [1], [1]], np.int8)
    for scale, want in ((np.inf, np.inf), (np.nan, np.nan), (0.0, 0.0)):
        got = dispatch(device, rng, OP.DML_OPERATOR_MATRIX_MULTIPLY_INTEGER_TO_FLOAT, mmitf_op,
                       [("ATensor", I8, a), ("AScaleTensor", F32, np.full((1,), scale, np.float32)),
                        ("AZeroPointTensor", I8, None), ("BTensor", I8, b),
                        ("BScaleTensor", F32, np.ones((1,), np.float32)),
                        ("BZeroPointTensor", I8, None), ("BiasTensor", F32, None)],
                       F32, [1, 1], packed=True)
        np.testing.assert_equal(got[0, 0], np.float32(want))


# -- the convolutions --------------------------------------------------------------------------
def conv_case(rng, spatial):
    g = int(rng.choice([1, 1, 2, 3]))
    cig, cog = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    n = int(rng.integers(1, 3))
    kernel = [int(rng.integers(1, 4)) for _ in range(spatial)]
    strides = [int(rng.integers(1, 3)) for _ in range(spatial)]
    dil = [int(rng.integers(1, 3)) for _ in range(spatial)]
    start = [int(rng.integers(0, 3)) for _ in range(spatial)]
    end = [int(rng.integers(0, 3)) for _ in range(spatial)]
    ins = [int(rng.integers(max(1, (k - 1) * d + 1 - s - e), 9))
           for k, d, s, e in zip(kernel, dil, start, end)]
    outs = [(i + s + e - (k - 1) * d - 1) // st + 1
            for i, s, e, k, d, st in zip(ins, start, end, kernel, dil, strides)]
    attrs = {"DimensionCount": spatial, "Strides": strides, "Dilations": dil,
             "StartPadding": start, "EndPadding": end, "GroupCount": g}
    return [n, g * cig, *ins], [g * cog, cig, *kernel], [n, g * cog, *outs], attrs


def channel_shape(rng, r, channels):
    """Per channel {1, C, 1, ..} of rank r, or the same count along another dimension (any one
    non-1 dimension is per channel)."""
    shape = [1] * r
    shape[int(rng.integers(0, r))] = channels
    return tuple(shape)


@pytest.mark.parametrize("x_t,w_t", list(itertools.product((I8, U8), repeat=2)))
def test_convolution_integer_random(device, path, x_t, w_t):
    rng = np.random.default_rng(20 * int(x_t) + int(w_t))
    for case in range(10):
        spatial = 1 + case % 2
        xs, ws, os_, attrs = conv_case(rng, spatial)
        extreme = case % 3 == 2
        x, w = ints(rng, x_t, xs, extreme), ints(rng, w_t, ws, extreme)
        zr = int(rng.integers(1, 5))  # the zero points share a DimensionCount, 1 to 4
        zx = None if case % 4 == 0 else ints(rng, x_t, (1,) * zr, extreme)
        zw = (None if case % 4 == 1 else
              ints(rng, w_t, (1,) * zr if case % 2 else channel_shape(rng, zr, ws[0]), extreme))

        dispatch(device, rng, OP.DML_OPERATOR_CONVOLUTION_INTEGER, conv_op(attrs),
                 [("InputTensor", x_t, x), ("InputZeroPointTensor", x_t, zx),
                  ("FilterTensor", w_t, w), ("FilterZeroPointTensor", w_t, zw)], I32, os_)


def test_convolution_integer_pads_with_the_input_zero_point(device, path):
    """A 3-tap ones filter over [5, 5] with one padded element each side and zero point 5: the
    padding contributes (5 - 5) = 0 (ONNX ConvInteger), so every output is 0."""
    x = np.full((1, 1, 2), 5, np.uint8)
    w = np.ones((1, 1, 3), np.uint8)

    def make(descs, out):
        return DML_CONVOLUTION_INTEGER_OPERATOR_DESC(
            **descs, OutputTensor=out, DimensionCount=1, Strides=[1], Dilations=[1],
            StartPadding=[1], EndPadding=[1], GroupCount=1)

    got = dispatch(device, np.random.default_rng(5), OP.DML_OPERATOR_CONVOLUTION_INTEGER, make,
                   [("InputTensor", U8, x), ("InputZeroPointTensor", U8, np.full((1,), 5, np.uint8)),
                    ("FilterTensor", U8, w), ("FilterZeroPointTensor", U8, None)], I32, [1, 1, 2],
                   packed=True)
    assert got.ravel().tolist() == [0, 0]
    x = np.array([[[7, 9]]], np.uint8)  # (7 - 5) and (9 - 5): [0 + 2 + 4, 2 + 4 + 0]
    got = dispatch(device, np.random.default_rng(5), OP.DML_OPERATOR_CONVOLUTION_INTEGER, make,
                   [("InputTensor", U8, x), ("InputZeroPointTensor", U8, np.full((1,), 5, np.uint8)),
                    ("FilterTensor", U8, w), ("FilterZeroPointTensor", U8, None)], I32, [1, 1, 2],
                   packed=True)
    assert got.ravel().tolist() == [6, 6]


def conv_op(attrs):
    def make(descs, out):
        return DML_CONVOLUTION_INTEGER_OPERATOR_DESC(**descs, OutputTensor=out, **attrs)
    return make


def qconv_op(attrs):
    def make(descs, out):
        return DML_QUANTIZED_LINEAR_CONVOLUTION_OPERATOR_DESC(**descs, OutputTensor=out, **attrs)
    return make


@pytest.mark.parametrize("x_t,w_t,o_t", list(itertools.product((I8, U8), repeat=3)))
def test_quantized_linear_convolution_random(device, path, x_t, w_t, o_t):
    rng = np.random.default_rng(100 * int(x_t) + 10 * int(w_t) + int(o_t))
    for case in range(6):
        spatial = 1 + case % 2
        xs, ws, os_, attrs = conv_case(rng, spatial)
        x, w = ints(rng, x_t, xs), ints(rng, w_t, ws)
        qr = int(rng.integers(1, 5))  # scales and zero points: 1 to 4 dimensions
        per_channel = case % 2 == 0
        cshape = channel_shape(rng, qr, ws[0]) if per_channel else (1,) * qr
        one = (1,) * qr
        inputs = [("InputTensor", x_t, x),
                  ("InputScaleTensor", F32, np.full(one, 0.05 * rng.random() + 0.01, np.float32)),
                  ("InputZeroPointTensor", x_t, None if case == 1 else ints(rng, x_t, one)),
                  ("FilterTensor", w_t, w),
                  ("FilterScaleTensor", F32, (rng.random(cshape) * 0.05 + 0.01).astype(np.float32)),
                  ("FilterZeroPointTensor", w_t, None if case == 3 else ints(rng, w_t, cshape)),
                  ("BiasTensor", I32, None if case == 4 else
                   rng.integers(-3000, 3000, (1, ws[0], *[1] * spatial)).astype(np.int32)),
                  ("OutputScaleTensor", F32, np.full(one, 0.02 * rng.random() + 0.002, np.float32)),
                  ("OutputZeroPointTensor", o_t, None if case == 5 else ints(rng, o_t, one))]
        dispatch(device, rng, OP.DML_OPERATOR_QUANTIZED_LINEAR_CONVOLUTION, qconv_op(attrs),
                 inputs, o_t, os_)


def qconv_1x1(device, x, xs, w, ws, bias, ys, yz, o_t):
    """A 1x1, one-channel convolution of [1, 1, 1, len(x)]: out = requantize(x * w + bias)."""
    attrs = {"DimensionCount": 2, "Strides": [1, 1], "Dilations": [1, 1],
             "StartPadding": [0, 0], "EndPadding": [0, 0], "GroupCount": 1}
    one = (1, 1, 1, 1)
    inputs = [("InputTensor", I8, np.array(x, np.int8).reshape(1, 1, 1, -1)),
              ("InputScaleTensor", F32, np.full(one, xs, np.float32)),
              ("InputZeroPointTensor", I8, None),
              ("FilterTensor", I8, np.full(one, w, np.int8)),
              ("FilterScaleTensor", F32, np.full(one, ws, np.float32)),
              ("FilterZeroPointTensor", I8, None),
              ("BiasTensor", I32, None if bias is None else np.full(one, bias, np.int32)),
              ("OutputScaleTensor", F32, np.full(one, ys, np.float32)),
              ("OutputZeroPointTensor", o_t, None if yz is None else np.full(one, yz, NP[o_t]))]
    return dispatch(device, np.random.default_rng(6), OP.DML_OPERATOR_QUANTIZED_LINEAR_CONVOLUTION,
                    qconv_op(attrs), inputs, o_t, [1, 1, 1, len(x)], packed=True).ravel().tolist()


def test_quantized_linear_convolution_ties_saturation_bias_and_nan(device, path):
    # acc * 0.5: 1.5 -> 2, 2.5 -> 2, -1.5 -> -2, -2.5 -> -2 (round half to even)
    assert qconv_1x1(device, [3, 5, -3, -5], 0.5, 1, 1.0, None, 1.0, None, I8) == [2, 2, -2, -2]
    # the bias joins the accumulator before the scale: (x + 100) * 2, saturated both ways
    assert qconv_1x1(device, [27, -128, 0, 127], 1.0, 1, 2.0, 100, 1.0, None, I8) == \
        [127, -56, 127, 127]
    assert qconv_1x1(device, [-127, -101, 0], 1.0, 1, 1.0, 100, 1.0, 3, U8) == [0, 2, 103]
    # OutputScale 0: acc * inf -> +inf, -inf saturate; 0 * inf = NaN gives the zero point
    assert qconv_1x1(device, [0, 1, -1], 1.0, 1, 1.0, None, 0.0, 9, I8) == [9, 127, -128]


@pytest.mark.parametrize("quantized", [False, True])
def test_convolutions_with_k_beyond_one_exact_float32_chunk(device, path, quantized):
    """Cin 64 x 3x3 = 576 k-steps of extreme values: three FLOAT32 chunks added in float64."""
    rng = np.random.default_rng(7)
    x = ints(rng, U8, (2, 64, 5, 4), extreme=True)
    w = ints(rng, I8, (3, 64, 3, 3), extreme=True)
    attrs = {"DimensionCount": 2, "Strides": [1, 2], "Dilations": [1, 1],
             "StartPadding": [1, 0], "EndPadding": [1, 1], "GroupCount": 1}
    out = [2, 3, 5, 2]
    zx, zw = np.full((1,), 255, np.uint8), np.array([-128, 127, 0], np.int8)
    if not quantized:
        dispatch(device, rng, OP.DML_OPERATOR_CONVOLUTION_INTEGER,
                 lambda d, o: DML_CONVOLUTION_INTEGER_OPERATOR_DESC(**d, OutputTensor=o, **attrs),
                 [("InputTensor", U8, x), ("InputZeroPointTensor", U8, zx),
                  ("FilterTensor", I8, w), ("FilterZeroPointTensor", I8, zw.reshape(3))], I32, out)
        return
    one = np.ones((1,), np.float32)
    dispatch(device, rng, OP.DML_OPERATOR_QUANTIZED_LINEAR_CONVOLUTION, qconv_op(attrs),
             [("InputTensor", U8, x), ("InputScaleTensor", F32, one),
              ("InputZeroPointTensor", U8, zx), ("FilterTensor", I8, w),
              ("FilterScaleTensor", F32, np.array([1e-7, 3e-7, 5e-8], np.float32)),
              ("FilterZeroPointTensor", I8, zw), ("BiasTensor", I32,
                                                  np.array([2**31 - 1, -2**31, 5], np.int32).reshape(1, 3, 1, 1)),
              ("OutputScaleTensor", F32, one), ("OutputZeroPointTensor", I8, None)], I8, out)


def test_products_add_chunks_in_int64_when_float64_could_not_hold_them():
    """A bound of 2**26 makes chunks of 2 k-steps whose total passes 2**53: int64 sums."""
    rng = np.random.default_rng(8)
    bound = 1 << 26
    a = rng.integers(-bound, bound + 1, (2, 3, 9)).astype(np.float64)
    b = rng.integers(-bound, bound + 1, (1, 9, 4)).astype(np.float64)
    a[0, 0] = bound
    b[0, :, 0] = bound  # 9 * 2**52 > 2**53
    got = integer.products(a, b, [(0, 0), (1, 0)], bound, "test")
    assert got.dtype == np.int64
    want = np.matmul(a.astype(np.int64).astype(object), b[0].astype(np.int64).astype(object))
    assert got.tolist() == want.tolist()
    assert got[0, 0, 0] == 9 * 2**52


def test_onnx_golden_vectors(device, path):
    """ONNX's documented MatMulInteger and ConvInteger examples (what ONNX Runtime's DirectML
    provider maps onto these operators), padding example included."""
    rng = np.random.default_rng(9)
    a = np.array([[11, 7, 3], [10, 6, 2], [9, 5, 1], [8, 4, 0]], np.uint8)
    b = np.array([[1, 4], [2, 5], [3, 6]], np.uint8)
    got = dispatch(device, rng, OP.DML_OPERATOR_MATRIX_MULTIPLY_INTEGER, mmi_op,
                   [("ATensor", U8, a), ("AZeroPointTensor", U8, np.array([12], np.uint8)),
                    ("BTensor", U8, b), ("BZeroPointTensor", U8, np.array([0], np.uint8))],
                   I32, [4, 2], packed=True)
    assert got.tolist() == [[-38, -83], [-44, -98], [-50, -113], [-56, -128]]
    x = np.arange(2, 11, dtype=np.uint8).reshape(1, 1, 3, 3)
    w = np.ones((1, 1, 2, 2), np.uint8)
    for pad, want in ((0, [[12, 16], [24, 28]]),
                      (1, [[1, 3, 5, 3], [5, 12, 16, 9], [11, 24, 28, 15], [7, 15, 17, 9]])):
        attrs = {"DimensionCount": 2, "Strides": [1, 1], "Dilations": [1, 1],
                 "StartPadding": [pad, pad], "EndPadding": [pad, pad], "GroupCount": 1}
        got = dispatch(device, rng, OP.DML_OPERATOR_CONVOLUTION_INTEGER, conv_op(attrs),
                       [("InputTensor", U8, x),
                        ("InputZeroPointTensor", U8, np.ones((1, 1, 1, 1), np.uint8)),
                        ("FilterTensor", U8, w), ("FilterZeroPointTensor", U8, None)],
                       I32, [1, 1, 2 + 2 * pad, 2 + 2 * pad], packed=True)
        assert got[0, 0].tolist() == want


@pytest.mark.parametrize("op_type", [OP.DML_OPERATOR_MATRIX_MULTIPLY_INTEGER_TO_FLOAT,
                                     OP.DML_OPERATOR_QUANTIZED_LINEAR_CONVOLUTION])
def test_no_memory_for_scratch_is_e_outofmemory_and_the_output_is_untouched(
        device, path, monkeypatch, op_type):
    real = integer.scratch

    def exhausted(shape, dtype, operator, what):
        return real((1 << 50,), dtype, operator, what)  # more than any machine has

    monkeypatch.setattr(integer, "scratch", exhausted)
    one = np.ones((1,), np.float32)
    if op_type == OP.DML_OPERATOR_MATRIX_MULTIPLY_INTEGER_TO_FLOAT:
        op = DML_MATRIX_MULTIPLY_INTEGER_TO_FLOAT_OPERATOR_DESC(
            ATensor=desc(I8, [2, 3]), AScaleTensor=desc(F32, [1]), BTensor=desc(I8, [3, 2]),
            BScaleTensor=desc(F32, [1]), OutputTensor=desc(F32, [2, 2]))
        inputs = [np.ones((2, 3), np.int8), one, None, np.ones((3, 2), np.int8), one, None, None]
        out = np.full((2, 2), 7, np.float32)
    else:
        op = DML_QUANTIZED_LINEAR_CONVOLUTION_OPERATOR_DESC(
            InputTensor=desc(U8, [1, 1, 4]), InputScaleTensor=desc(F32, [1]),
            FilterTensor=desc(U8, [1, 1, 1]), FilterScaleTensor=desc(F32, [1]),
            OutputScaleTensor=desc(F32, [1]), OutputTensor=desc(U8, [1, 1, 4]), DimensionCount=1,
            Strides=[1], Dilations=[1], StartPadding=[0], EndPadding=[0], GroupCount=1)
        inputs = [np.ones((1, 1, 4), np.uint8), one, None, np.ones((1, 1, 1), np.uint8), one,
                  None, None, one, None]
        out = np.full((1, 1, 4), 7, np.uint8)
    with pytest.raises(DMLError) as info:
        DMLCreateDevice1(feature_level="6_4").execute(DML_OPERATOR_DESC(Desc=op), inputs, [out])
    assert info.value.name == "E_OUTOFMEMORY" and "scratch" in str(info.value)
    assert (out == 7).all()
