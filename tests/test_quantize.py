"""QUANTIZE and DEQUANTIZE (6_3): per-tensor, per-axis and blockwise quantization tensors, 8-bit
and 4-bit data, against a reference written here from the formula (blocks expanded with
np.repeat, 4-bit nibbles packed and unpacked one element at a time, low nibble first)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from descriptors import *
from emulator import DMLCreateDevice1, DMLError

from .helpers import desc, logical, np_dtype, strided_buffer

T = DML_TENSOR_DATA_TYPE
QT = DML_QUANTIZATION_TYPE
FOUR = {T.DML_TENSOR_DATA_TYPE_INT4: (-8, 7), T.DML_TENSOR_DATA_TYPE_UINT4: (0, 15)}
QUANTIZED = (T.DML_TENSOR_DATA_TYPE_INT8, T.DML_TENSOR_DATA_TYPE_UINT8,
             T.DML_TENSOR_DATA_TYPE_INT4, T.DML_TENSOR_DATA_TYPE_UINT4)
FLOATS = (T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16)


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level=DML_FEATURE_LEVEL.DML_FEATURE_LEVEL_6_3)


def value_range(dt) -> tuple[int, int]:
    if dt in FOUR:
        return FOUR[dt]
    info = np.iinfo(np_dtype(dt))
    return int(info.min), int(info.max)


def offsets(sizes, strides):
    strides = strides or [int(np.prod(sizes[i + 1:])) for i in range(len(sizes))]
    for c in itertools.product(*(range(n) for n in sizes)):
        yield c, sum(i * s for i, s in zip(c, strides))


def pack4(raw: np.ndarray, values: np.ndarray, sizes, strides) -> None:
    for c, e in offsets(sizes, strides):
        v = int(values[c]) & 15
        raw[e // 2] = (raw[e // 2] & 0xF0) | v if e % 2 == 0 else (raw[e // 2] & 0x0F) | (v << 4)


def unpack4(raw: np.ndarray, dt, sizes, strides) -> np.ndarray:
    out = np.zeros(sizes, np.int64)
    for c, e in offsets(sizes, strides):
        v = (int(raw[e // 2]) >> (4 * (e % 2))) & 15
        out[c] = v - 16 if dt == T.DML_TENSOR_DATA_TYPE_INT4 and v >= 8 else v
    return out


def tensor(rng, dt, sizes, values, padded: bool):
    """A buffer holding ``values`` (shaped by sizes) with packed or padded strides."""
    strides = None
    if padded:
        acc, strides = 1, []
        for s in reversed(sizes):
            strides.append(acc)
            acc *= s + int(rng.integers(0, 2))
        strides.reverse()
    raw = strided_buffer(rng, dt, sizes, strides)
    if dt in FOUR:
        pack4(raw, values, sizes, strides)
    else:
        logical(raw, np_dtype(dt), sizes, strides)[...] = values
    return desc(dt, sizes, strides), raw, strides


def block_sizes(rng, sizes):
    """Per dimension: 1 (per tensor), the size (per axis) or a divisor (blocks)."""
    out = []
    for n in sizes:
        divisors = [d for d in range(1, n + 1) if n % d == 0]
        out.append(int(rng.choice(divisors)))
    return out


def run(device, rng, op, qtype, ftype, with_zero_point):
    rank = int(rng.integers(1, 9))
    sizes = [int(rng.choice([1, 2, 3, 4, 6, 8])) for _ in range(rank)]
    qsizes = block_sizes(rng, sizes)
    lo, hi = value_range(qtype)
    fdtype = np_dtype(ftype)
    scale = rng.uniform(0.05, 2.0, qsizes).astype(fdtype)
    scale.flat[0] = fdtype.type(1.0)
    zp = rng.integers(lo, hi, qsizes, endpoint=True) if with_zero_point else None
    s_desc, s_raw, _ = tensor(rng, ftype, qsizes, scale, rng.random() < 0.5)
    q_tensors, q_raws = [s_desc], [s_raw]
    if zp is not None:
        z_desc, z_raw, _ = tensor(rng, qtype, qsizes, zp, rng.random() < 0.5)
        q_tensors.append(z_desc)
        q_raws.append(z_raw)
    big_scale = np.ones(sizes)
    big_zp = np.zeros(sizes)
    big_scale = big_scale * _expand(scale.astype(np.float64), sizes)
    if zp is not None:
        big_zp = big_zp + _expand(zp.astype(np.float64), sizes)
    if op == DML_OPERATOR_TYPE.DML_OPERATOR_QUANTIZE:
        x = (rng.standard_normal(sizes) * 40).astype(fdtype)
        x.flat[:4] = np.array([np.nan, np.inf, -np.inf, 0.5], fdtype)[: x.size]
        in_type, out_type = ftype, qtype
        with np.errstate(all="ignore"):  # x / scale in float32 (decisions)
            quotient = x.astype(np.float32) / big_scale.astype(np.float32)
        want = np.rint(quotient.astype(np.float64)) + big_zp
        want = np.where(np.isnan(want), 0, np.clip(want, lo, hi))
    else:
        x = rng.integers(lo, hi, sizes, endpoint=True)
        in_type, out_type = qtype, ftype
        want = ((x - big_zp) * big_scale).astype(fdtype)
    x_desc, x_raw, _ = tensor(rng, in_type, sizes, x, rng.random() < 0.5)
    out_strides = None
    if rng.random() < 0.5:
        acc, out_strides = 1, []
        for s in reversed(sizes):
            out_strides.append(acc)
            acc *= s + int(rng.integers(0, 3))
        out_strides.reverse()
    out_raw = strided_buffer(rng, out_type, sizes, out_strides, fill=0xA5)
    before = out_raw.copy()
    cls = DML_QUANTIZE_OPERATOR_DESC if op == DML_OPERATOR_TYPE.DML_OPERATOR_QUANTIZE else \
        DML_DEQUANTIZE_OPERATOR_DESC
    d = DML_OPERATOR_DESC(op, cls(
        InputTensor=x_desc,
        QuantizationType=QT.DML_QUANTIZATION_TYPE_SCALE_ZERO_POINT if zp is not None
        else QT.DML_QUANTIZATION_TYPE_SCALE,
        QuantizationTensorCount=len(q_tensors), QuantizationTensors=q_tensors,
        OutputTensor=desc(out_type, sizes, out_strides)))
    device.execute(d, {"InputTensor": x_raw, "QuantizationTensors": q_raws}, [out_raw])
    if out_type in FOUR:
        got = unpack4(out_raw, out_type, sizes, out_strides)
        assert (got == want).all(), (sizes, qsizes, x[got != want][:4], got[got != want][:4],
                                     want[got != want][:4])
        # Every nibble the output does not address keeps its value.
        mask = np.zeros(out_raw.size * 2, bool)
        for _, e in offsets(sizes, out_strides):
            mask[e] = True
        nib_before = np.stack([before & 15, before >> 4], 1).ravel()
        nib_after = np.stack([out_raw & 15, out_raw >> 4], 1).ravel()
        assert (nib_before[~mask] == nib_after[~mask]).all()
    else:
        got = logical(out_raw, np_dtype(out_type), sizes, out_strides)
        ok = (got == want) | (np.isnan(got) & np.isnan(want))
        assert ok.all(), (sizes, qsizes, got[~ok][:4], want[~ok][:4])


def _expand(q, sizes):
    for d, n in enumerate(sizes):
        q = np.repeat(q, n // q.shape[d], axis=d)
    return q


@pytest.mark.parametrize("op", [DML_OPERATOR_TYPE.DML_OPERATOR_QUANTIZE,
                                DML_OPERATOR_TYPE.DML_OPERATOR_DEQUANTIZE],
                         ids=["quantize", "dequantize"])
@pytest.mark.parametrize("qtype", QUANTIZED, ids=lambda t: t.name[21:])
@pytest.mark.parametrize("ftype", FLOATS, ids=lambda t: t.name[21:])
@pytest.mark.parametrize("with_zero_point", [True, False], ids=["zp", "scale"])
def test_matches_the_formula_blockwise(device, op, qtype, ftype, with_zero_point):
    rng = np.random.default_rng([int(op), int(qtype), int(ftype), with_zero_point])
    for _ in range(6):
        run(device, rng, op, qtype, ftype, with_zero_point)


def test_matmulnbits_layout(device):
    """ONNX Runtime's MatMulNBits weight: B [N, K] UINT4 with K/32 blocks per row, a FLOAT16 scale
    and a UINT4 zero point per block (the zero point's rows padded to a whole byte)."""
    rng = np.random.default_rng(7)
    n, k, block = 5, 64, 32
    b = rng.integers(0, 16, (n, k))
    scale = rng.uniform(0.01, 0.1, (n, k // block)).astype(np.float16)
    zp = rng.integers(0, 16, (n, k // block))
    u4, f16 = T.DML_TENSOR_DATA_TYPE_UINT4, T.DML_TENSOR_DATA_TYPE_FLOAT16
    zp_strides = (k // block + (k // block) % 2, 1)
    zp_raw = strided_buffer(rng, u4, zp.shape, zp_strides)
    pack4(zp_raw, zp, zp.shape, zp_strides)
    d = DML_OPERATOR_DESC(DML_OPERATOR_TYPE.DML_OPERATOR_DEQUANTIZE, DML_DEQUANTIZE_OPERATOR_DESC(
        desc(u4, (n, k)), QT.DML_QUANTIZATION_TYPE_SCALE_ZERO_POINT, 2,
        [tensor_desc(scale), desc(u4, zp.shape, zp_strides)], desc(f16, (n, k))))
    [w] = device.execute(d, [b, scale, zp_raw])
    want = ((b - np.repeat(zp, block, 1)) * np.repeat(scale.astype(np.float64), block, 1))
    assert (w == want.astype(np.float16)).all()


def test_four_bit_values_pack_low_nibble_first(device):
    """INT4 [4]: values -1, 2, -8, 7 are the bytes 0x2F, 0x78."""
    x = np.array([-1.0, 2.0, -8.0, 7.0], np.float32)
    one = np.ones(1, np.float32)
    i4 = T.DML_TENSOR_DATA_TYPE_INT4
    d = DML_OPERATOR_DESC(DML_OPERATOR_TYPE.DML_OPERATOR_QUANTIZE, DML_QUANTIZE_OPERATOR_DESC(
        tensor_desc(x), QT.DML_QUANTIZATION_TYPE_SCALE, 1, [tensor_desc(one)], desc(i4, (4,))))
    raw = np.zeros(4, np.uint8)
    device.execute(d, [x, one], [raw])
    assert raw.tolist() == [0x2F, 0x78, 0, 0]
    [values] = device.execute(d, [x, one])  # execute returns a 4-bit output's values
    assert values.tolist() == [-1, 2, -8, 7]


def test_tensor_array_binds_one_point_per_tensor(device):
    """QuantizationTensors is two bind points: the compiled operator has three inputs."""
    x = np.zeros((2, 2), np.float32)
    d = DML_OPERATOR_DESC(DML_OPERATOR_TYPE.DML_OPERATOR_QUANTIZE, DML_QUANTIZE_OPERATOR_DESC(
        tensor_desc(x), QT.DML_QUANTIZATION_TYPE_SCALE_ZERO_POINT, 2,
        [tensor_desc(np.ones((2, 1), np.float32)), tensor_desc(np.zeros((2, 1), np.uint8))],
        desc(T.DML_TENSOR_DATA_TYPE_UINT8, (2, 2))))
    compiled = device.CompileOperator(device.CreateOperator(d))
    names = [n for n, _ in compiled.bind_points("input")]
    assert names == ["InputTensor", "QuantizationTensors[0]", "QuantizationTensors[1]"]
    assert compiled.GetBindingProperties().RequiredDescriptorCount == 4
    with pytest.raises(DMLError, match="QuantizationTensors"):
        device.execute(d, {"InputTensor": x, "QuantizationTensors": [np.ones((2, 1), np.float32)]})


def test_four_bit_input_values_are_checked(device):
    x = np.zeros(2, np.float32)
    d = DML_OPERATOR_DESC(DML_OPERATOR_TYPE.DML_OPERATOR_DEQUANTIZE, DML_DEQUANTIZE_OPERATOR_DESC(
        desc(T.DML_TENSOR_DATA_TYPE_INT4, (2,)), QT.DML_QUANTIZATION_TYPE_SCALE, 1,
        [tensor_desc(np.ones(1, np.float32))], tensor_desc(x)))
    with pytest.raises(DMLError, match="holds the integers -8 to 7"):
        device.execute(d, [[3, 9], np.ones(1, np.float32)])
    [y] = device.execute(d, [[3, -8], np.full(1, 0.5, np.float32)])
    assert y.tolist() == [1.5, -4.0]


# ----------------------------------------------------------------------------------------------
# DYNAMIC_QUANTIZE_LINEAR


def dynamic(device, x, qtype, strides=None, out_strides=None, raw=None):
    sizes = x.shape
    ftype = T.DML_TENSOR_DATA_TYPE_FLOAT16 if x.dtype == np.float16 else \
        T.DML_TENSOR_DATA_TYPE_FLOAT32
    ones = (1,) * len(sizes)
    d = DML_OPERATOR_DESC(DML_OPERATOR_TYPE.DML_OPERATOR_DYNAMIC_QUANTIZE_LINEAR,
                          DML_DYNAMIC_QUANTIZE_LINEAR_OPERATOR_DESC(
                              desc(ftype, sizes, strides), desc(qtype, sizes, out_strides),
                              desc(T.DML_TENSOR_DATA_TYPE_FLOAT32, ones), desc(qtype, ones)))
    out_raw = strided_buffer(np.random.default_rng(0), qtype, sizes, out_strides, fill=0x5A)
    _, scale, zp = device.execute(d, [x if raw is None else raw], [out_raw, None, None])
    return logical(out_raw, np_dtype(qtype), sizes, out_strides), scale.item(), zp.item(), d


def test_dynamic_quantize_linear_onnx_examples(device):
    """ONNX's DynamicQuantizeLinear test vectors: the range always holds 0."""
    u8 = T.DML_TENSOR_DATA_TYPE_UINT8
    y, scale, zp, _ = dynamic(device, np.array([0, 2, -3, -2.5, 1.34, 0.5], np.float32), u8)
    assert scale == np.float32(5 / 255) and zp == 153
    assert y.tolist() == [153, 255, 0, 26, 221, 179]
    y, scale, zp, _ = dynamic(
        device, np.array([-1.0, -2.1, -1.3, -2.5, -3.34, -4.0], np.float32), u8)
    assert scale == np.float32(4 / 255) and zp == 255
    assert y.tolist() == [191, 121, 172, 96, 42, 0]
    y, scale, zp, _ = dynamic(device, np.zeros(3, np.float32), T.DML_TENSOR_DATA_TYPE_INT8)
    assert (scale, zp, y.tolist()) == (1.0, -128, [-128, -128, -128])


@pytest.mark.parametrize("qtype", QUANTIZED[:2], ids=lambda t: t.name[21:])
@pytest.mark.parametrize("ftype", FLOATS, ids=lambda t: t.name[21:])
def test_dynamic_quantize_linear_matches_the_reference(device, qtype, ftype):
    from emulator.ops import dynamic_quantize_linear as dql

    rng = np.random.default_rng([int(qtype), int(ftype)])
    for _ in range(6):
        rank = int(rng.integers(1, 9))
        sizes = tuple(int(rng.integers(1, 5)) for _ in range(rank))
        x = (rng.standard_normal(sizes) * rng.choice([0.01, 1, 300])).astype(np_dtype(ftype))
        x += np_dtype(ftype).type(rng.choice([-2.0, 0.0, 3.0]))
        if x.size > 2:
            x.flat[1] = np.nan
        strides = [int(np.prod(sizes[i + 1:])) * 2 for i in range(rank)]  # every other element
        raw = np.zeros(x.size * 2 * x.itemsize + 4, np.uint8)
        logical(raw, x.dtype, sizes, strides)[...] = x
        out_strides = [int(np.prod(sizes[i + 1:])) * 3 for i in range(rank)]  # gaps of 2
        y, scale, zp, d = dynamic(device, x, qtype, strides, out_strides, raw)
        v = device.CreateOperator(d).validated.values
        want = dql.reference(v, {"InputTensor": x})
        assert scale == want["OutputScaleTensor"].item() and zp == want["OutputZeroPointTensor"]
        assert (y == want["OutputTensor"]).all(), (x, y, want)
