"""The element-wise family, driven by its table: every row, every data type its kernel handles,
against the row's NumPy reference (bit-exact where the row's bound is 0). Layouts: ranks 1 to 8,
packed, padded and broadcast (zero) input strides, padded output strides whose gaps must stay
untouched; values include NaN, ±inf, ±0, subnormals and the integer extremes. ScaleBias and a
fused activation are run wherever the row has them. The generated kernel modules must match the
table."""

from __future__ import annotations

import numpy as np
import pytest

from descriptors import *
from emulator import DMLCreateDevice1, DMLError
from emulator.elementwise import ROWS, compute, generate
from emulator.elementwise.plan import FLOAT_TYPES, INT_TYPES
from emulator.registry import REGISTRY

from .helpers import SENTINEL, addressed_mask, bits, desc, logical, np_dtype, strided_buffer

T = DML_TENSOR_DATA_TYPE


def test_generated_kernel_modules_match_the_table():
    assert generate.write(check=True) == [], "run: python -m emulator.elementwise.generate"


def kernel_types(row):
    """The types the kernel handles that the operator's last band allows for every tensor."""
    band = REGISTRY[row.operator].support[-1]
    allowed = set.intersection(*(set(types) for _, types in band.tensors.values()))
    return sorted(t for t in REGISTRY[row.operator].kernel_types if t in allowed)


CASES = [(row, dt) for row in ROWS for dt in kernel_types(row)]


def special_values(rng, dtype: np.dtype, n: int) -> np.ndarray:
    """Random values with the edge values of the type mixed in."""
    if dtype.kind == "f":
        x = (rng.standard_normal(n) * 4).astype(dtype)
        info = np.finfo(dtype)
        specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, info.tiny / 4, -info.tiny,
                             info.max, -info.max, 1.0, -1.0, 2.5, -2.5], dtype)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        specials = np.array([info.min, info.max, 0, 1, info.max - 1, info.min + 1], dtype)
    picks = rng.random(n) < 0.3
    x[picks] = rng.choice(specials, picks.sum())
    return x


def layout(rng, sizes, broadcast_ok: bool):
    """None (packed), padded strides, or (inputs only) zero strides on some dimensions."""
    r = rng.random()
    if r < 0.35:
        return None
    acc, strides = 1, []
    for s in reversed(sizes):
        if broadcast_ok and rng.random() < 0.3:
            strides.append(0)
        else:
            strides.append(acc)
            acc *= s + int(rng.integers(0, 2))
    return list(reversed(strides))


def desc_of(row, dt, tensors, params) -> DML_OPERATOR_DESC:
    cls = OPERATOR_DESC_CLASSES[row.operator]
    return DML_OPERATOR_DESC(Desc=cls(**tensors, **params))


def params_for(row, rng, dt) -> dict:
    """Attribute values for the row's desc (random, edge values included)."""
    names = {f.name for f in SCHEMA[row.operator].fields}
    out: dict = {}
    if "Min" in names and "MinMaxDataType" in names:  # CLIP1: scalar unions of the output type
        lo, hi = sorted(rng.standard_normal(2) * 3)
        out.update(MinMaxDataType=dt, Min=float(lo), Max=float(hi))
    elif "Min" in names:
        lo, hi = sorted(rng.standard_normal(2) * 3)
        out.update(Min=float(lo), Max=float(hi))
    return out


def run_case(device, rng, row, dt, scale_bias=None, fused=None):
    dtype = np_dtype(dt)
    rank = int(rng.integers(1, 9))
    sizes = [int(rng.integers(1, {1: 300, 2: 20, 3: 8}.get(rank, 3) + 1)) for _ in range(rank)]
    tensors, raws, arrays = {}, [], []
    for name in row.inputs:
        strides = layout(rng, sizes, broadcast_ok=True)
        raw = strided_buffer(rng, dt, sizes, strides, fill=0)
        # Every element of the buffer (a broadcast tensor's distinct elements, each once).
        typed = raw[: raw.size // dtype.itemsize * dtype.itemsize].view(dtype)
        typed[:] = special_values(rng, dtype, typed.size)
        tensors[name] = desc(dt, sizes, strides)
        raws.append(raw)
        arrays.append(np.array(logical(raw, dtype, sizes, strides)))
    out_strides = layout(rng, sizes, broadcast_ok=False)
    raw_out = strided_buffer(rng, dt, sizes, out_strides, fill=SENTINEL)
    tensors["OutputTensor"] = desc(dt, sizes, out_strides)
    params = params_for(row, rng, dt)
    if scale_bias is not None:
        params["ScaleBias"] = scale_bias
    if fused is not None:
        params["FusedActivation"] = fused
    op = desc_of(row, dt, tensors, params)
    device.execute(op, raws, [raw_out])
    v = device.CreateOperator(op).validated.values
    want = compute(row, v, arrays)
    got = logical(raw_out, dtype, sizes, out_strides)
    if row.ulp == 0:
        same = bits(got) == bits(want)
        if dtype.kind == "f":
            same |= np.isnan(got) & np.isnan(want)  # any NaN is the formula's NaN
        assert same.all(), (row.name, dt.name, sizes, got[~same][:5], want[~same][:5])
    untouched = ~addressed_mask(raw_out.size, dtype.itemsize, sizes, out_strides)
    assert (raw_out[untouched] == SENTINEL).all(), "a gap of the output was written"


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="6_4")


@pytest.mark.parametrize("row,dt", CASES, ids=[f"{r.name}-{d.name[21:]}" for r, d in CASES])
def test_kernel_matches_the_reference(device, row, dt):
    rng = np.random.default_rng(abs(hash((row.name, int(dt)))) % 2**32)
    for _ in range(4):
        run_case(device, rng, row, dt)


SB_CASES = [(r, d) for r, d in CASES if r.scale_bias and d in FLOAT_TYPES]


@pytest.mark.parametrize("row,dt", SB_CASES, ids=[f"{r.name}-{d.name[21:]}" for r, d in SB_CASES])
def test_scale_bias_applies_to_the_input_first(device, row, dt):
    rng = np.random.default_rng(int(dt))
    for sb in (DML_SCALE_BIAS(2.0, 10.0), DML_SCALE_BIAS(-0.5, 0.25), DML_SCALE_BIAS(0.0, -0.0)):
        run_case(device, rng, row, dt, scale_bias=sb)


FUSED_CASES = [(r, d) for r, d in CASES if r.fused and d in FLOAT_TYPES]


@pytest.mark.parametrize("row,dt", FUSED_CASES,
                         ids=[f"{r.name}-{d.name[21:]}" for r, d in FUSED_CASES])
@pytest.mark.parametrize("act", [DML_ACTIVATION_RELU_OPERATOR_DESC(),
                                 DML_ACTIVATION_ELU_OPERATOR_DESC(Alpha=0.5),
                                 DML_ACTIVATION_LINEAR_OPERATOR_DESC(Alpha=2.0, Beta=-1.0)],
                         ids=["RELU", "ELU", "LINEAR"])
def test_fused_activation_applies_to_the_result(device, row, dt, act):
    rng = np.random.default_rng(int(dt))
    run_case(device, rng, row, dt, fused=act)


def test_hand_computed_examples(device):
    a = np.array([1, 2, 3], np.float32)
    b = np.array([5, 8, -5], np.float32)
    t = tensor_desc(a)
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_ADD1_OPERATOR_DESC(
        t, t, t, DML_ACTIVATION_ELU_OPERATOR_DESC(Alpha=0.5))), [a, b])
    assert y.tolist() == [6, 10, np.float32(0.5 * np.expm1(-2.0))]
    i = np.array([2**31 - 1, -2**31, 7], np.int32)
    ti = tensor_desc(i)
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_ADD_OPERATOR_DESC(ti, ti, ti)),
                         [i, np.array([1, -1, 8], np.int32)])
    assert y.tolist() == [-2**31, 2**31 - 1, 15]  # wraps, as C's two's-complement arithmetic
    x = np.array([np.nan, -3, 0, 3], np.float32)
    tx = tensor_desc(x)
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_CLIP_OPERATOR_DESC(
        tx, tx, None, -1.0, 1.0)), [x])
    assert y.tolist() == [-1, -1, 0, 1]  # NaN: max(Min, NaN) is Min (Direct3D's max)
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_MAX_OPERATOR_DESC(tx, tx, tx)),
                         [x, np.array([1, np.nan, -0.0, 5], np.float32)])
    assert y[0] == 1 and y[1] == -3 and y[3] == 5


def test_broadcast_row_and_column(device):
    """[64, 300] + [1, 300] and + [64, 1], through zero strides (the kernel's broadcast loops)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 300)).astype(np.float32)
    for shape, strides in (((1, 300), (0, 1)), ((64, 1), (1, 0))):
        b = rng.standard_normal(shape).astype(np.float32)
        op = DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_ADD_OPERATOR_DESC(
            tensor_desc(a), desc(T.DML_TENSOR_DATA_TYPE_FLOAT32, (64, 300), strides),
            tensor_desc(a)))
        [y] = device.execute(op, [a, b.ravel().view(np.uint8)])
        assert np.array_equal(y, a + b)


def test_scale_bias_on_integers_is_valid_but_not_executable():
    d = desc(T.DML_TENSOR_DATA_TYPE_INT32, (4,))
    dev = DMLCreateDevice1()
    op = dev.CreateOperator(DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC(
        d, d, DML_SCALE_BIAS(2.0, 1.0))))
    with pytest.raises(DMLError, match="ScaleBias on integer tensors is not executable yet"):
        dev.CompileOperator(op)


def test_every_row_is_registered_with_its_types():
    for row in ROWS:
        types = set(REGISTRY[row.operator].kernel_types)
        assert (row.float_body is not None) == (set(FLOAT_TYPES) <= types)
        assert (row.int_body is not None) == (set(INT_TYPES) <= types)
