"""The pooling rows (``emulator/compute/pooling.py`` on ``pool_kernels.py``'s window engine):
the pages' worked examples; random descs of every operator over every data type of its last
band, 2 and 3 spatial dimensions, window sizes, strides, dilations, asymmetric padding (windows
that hold padding only included), padded and zero (broadcast) input strides, padded output
strides whose gaps must stay untouched; against the float64 references written from the pages.

**Bounds.** Bit exact: MAX_POOLING(1, 2) values and indices for every type, AVERAGE_POOLING(1)
(float64 sums in window order, one rounding), LP_POOLING(1) with P = 1 or 2, QUANTIZED_LINEAR_
AVERAGE_POOLING, MAX_POOLING_GRAD. LP_POOLING with P >= 3: within 1 ULP of the output type
(the engine's ``pow`` is libm's, the reference's NumPy's). AVERAGE_POOLING_GRAD: within 1 ULP of
the output type plus ``2**-40 x`` the sum of the magnitudes of the terms (the engine adds an
element's terms tap by tap, the reference window by window: float64 sums in another order).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from descriptors import *
from emulator import DMLCreateDevice1
from emulator.registry import REGISTRY

from .helpers import SENTINEL, addressed_mask, bits, desc, layout, logical, strided_buffer

T = DML_TENSOR_DATA_TYPE
OP = DML_OPERATOR_TYPE
F32, F16 = T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16
U32, U64 = T.DML_TENSOR_DATA_TYPE_UINT32, T.DML_TENSOR_DATA_TYPE_UINT64
I8, U8 = T.DML_TENSOR_DATA_TYPE_INT8, T.DML_TENSOR_DATA_TYPE_UINT8
FLOATS = [F32, F16]
MAX_TYPES = [*FLOATS, T.DML_TENSOR_DATA_TYPE_INT64, T.DML_TENSOR_DATA_TYPE_INT32,
             T.DML_TENSOR_DATA_TYPE_INT16, I8, U64, U32, T.DML_TENSOR_DATA_TYPE_UINT16, U8]


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="6_4")


def np_type(dt):
    return np.dtype(NUMPY_DTYPE[dt])


def window(rng, spatial, dilations=True):
    """Random window attributes and input sizes (N, C, spatial...), window fitting the padding."""
    k = [int(rng.integers(1, 4)) for _ in range(spatial)]
    s = [int(rng.integers(1, 4)) for _ in range(spatial)]
    dil = [int(rng.integers(1, 3)) if dilations else 1 for _ in range(spatial)]
    p = [int(rng.integers(0, 3)) for _ in range(spatial)]
    e = [int(rng.integers(0, 3)) for _ in range(spatial)]
    cap = 9 if spatial == 2 else 6
    ins = [int(rng.integers(max(1, (kk - 1) * dd + 1 - pp - ee), cap + 1))
           for kk, dd, pp, ee in zip(k, dil, p, e)]
    sizes = [int(rng.integers(1, 3)), int(rng.integers(1, 4)), *ins]
    attrs = {"DimensionCount": spatial, "Strides": s, "WindowSize": k, "StartPadding": p,
             "EndPadding": e}
    if dilations:
        attrs["Dilations"] = dil
    out = sizes[:2] + [(ins[d] + p[d] + e[d] - ((k[d] - 1) * dil[d] + 1)) // s[d] + 1
                       for d in range(spatial)]
    return sizes, out, attrs


def values(rng, dt, sizes, edges=True):
    """Small integers (many ties), with NaN, +-inf and -0 sprinkled in for floats; the full range
    (extremes included) for integers."""
    dtype = np_type(dt)
    if dtype.kind == "f":
        v = rng.integers(-4, 5, size=sizes).astype(np.float64) * 0.5
        if edges:
            r = rng.random(sizes)
            v[r < 0.05] = np.nan
            v[(r >= 0.05) & (r < 0.08)] = np.inf
            v[(r >= 0.08) & (r < 0.11)] = -np.inf
            v[(r >= 0.11) & (r < 0.15)] = -0.0
        return v.astype(dtype)
    info = np.iinfo(dtype)
    v = rng.integers(info.min, info.max, size=sizes, dtype=dtype, endpoint=True)
    r = rng.random(sizes)
    v[r < 0.1] = info.min
    v[(r >= 0.1) & (r < 0.2)] = info.max
    v[(r >= 0.2) & (r < 0.4)] = v.reshape(-1)[0]  # ties
    return v


def dispatch(device, rng, op_type, inputs, outputs, attrs, broadcast=True):
    """``inputs``: [(bind point, data type, values or None)], ``outputs``: [(bind point, data
    type, sizes or None)], each in a random layout; checks that the outputs' gaps stay
    untouched; returns (got, want) dicts of the outputs."""
    descs, raws, arrays = {}, [], {}
    for name, dt, v in inputs:
        if v is None:
            descs[name] = None
            raws.append(None)
            continue
        strides = layout(rng, v.shape, broadcast)
        raw = strided_buffer(rng, dt, v.shape, strides, fill=0)
        view = logical(raw, np_type(dt), v.shape, strides)
        view[...] = v
        descs[name], arrays[name] = desc(dt, v.shape, strides), np.array(view)
        raws.append(raw)
    outs = []
    for name, dt, sizes in outputs:
        if sizes is None:
            descs[name] = None
            continue
        strides = layout(rng, sizes, False)
        raw = strided_buffer(rng, dt, sizes, strides, fill=SENTINEL)
        descs[name] = desc(dt, sizes, strides)
        outs.append((name, dt, sizes, strides, raw))
    op = globals()[f"DML_{op_type.name.removeprefix('DML_OPERATOR_')}_OPERATOR_DESC"](
        **descs, **attrs)
    bind = [raw for *_, raw in outs]
    if any(sizes is None for _, _, sizes in outputs):
        bind = [next((r for n, *_, r in outs if n == name), None) for name, _, _ in outputs]
    device.execute(op, raws, bind)
    got = {}
    for name, dt, sizes, strides, raw in outs:
        size = np_type(dt).itemsize
        assert (raw[~addressed_mask(raw.size, size, sizes, strides)] == SENTINEL).all(), name
        got[name] = np.array(logical(raw, np_type(dt), sizes, strides))
    v = device.CreateOperator(op).validated.values
    want = REGISTRY[op_type].module.reference(v, arrays)
    return got, want


def same(got, want):
    """Bit-exact, but any NaN equals any NaN."""
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.kind == "f":
        both_nan = np.isnan(got) & np.isnan(want)
        assert (bits(got)[~both_nan] == bits(want)[~both_nan]).all(), (got, want)
    else:
        np.testing.assert_array_equal(got, want)


def within_ulp(got, want, extra=0.0):
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all()
    g, w = got[~nan].astype(np.float64), want[~nan].astype(np.float64)
    inf = np.isinf(w)
    assert (g[inf] == w[inf]).all()
    ulp = np.spacing(np.abs(want[~nan][~inf])).astype(np.float64)
    assert (np.abs(g[~inf] - w[~inf]) <= ulp + extra).all(), (got, want)


# --- the pages' examples ----------------------------------------------------------------------

def plain(device, op, inputs, outputs=None):
    return device.execute(op, inputs, outputs)


def test_max_pooling2_and_grad_pages_examples(device):
    x = np.array([[1, 2, 3], [2, 4, 2], [5, 6, 7]], np.float32).reshape(1, 1, 3, 3)
    attrs = {"DimensionCount": 2, "Strides": [1, 1], "WindowSize": [2, 2],
             "StartPadding": [0, 0], "EndPadding": [0, 0], "Dilations": [1, 1]}
    y, ind = device.execute(DML_MAX_POOLING2_OPERATOR_DESC(
        InputTensor=tensor_desc(x), OutputTensor=tensor_desc((1, 1, 2, 2), F32),
        OutputIndicesTensor=tensor_desc((1, 1, 2, 2), U32), **attrs), [x])
    np.testing.assert_array_equal(y.reshape(2, 2), [[4, 4], [6, 7]])
    np.testing.assert_array_equal(ind.reshape(2, 2), [[4, 4], [7, 8]])
    dy = np.array([[1, 2], [4, 5]], np.float32).reshape(1, 1, 2, 2)
    (dx,) = device.execute(DML_MAX_POOLING_GRAD_OPERATOR_DESC(
        InputTensor=tensor_desc(x), InputGradientTensor=tensor_desc(dy),
        OutputGradientTensor=tensor_desc(x.shape, F32), **attrs), [x, dy])
    np.testing.assert_array_equal(dx.reshape(3, 3), [[0, 0, 0], [0, 3, 0], [0, 4, 5]])


def test_average_pooling_and_grad_pages_examples(device):
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    attrs = {"DimensionCount": 2, "Strides": [1, 1], "WindowSize": [2, 2],
             "StartPadding": [0, 0], "EndPadding": [0, 0], "IncludePadding": False}
    (y,) = device.execute(DML_AVERAGE_POOLING_OPERATOR_DESC(
        InputTensor=tensor_desc(x), OutputTensor=tensor_desc((1, 1, 2, 2), F32), **attrs), [x])
    np.testing.assert_array_equal(y.reshape(2, 2), [[3, 4], [6, 7]])
    dy = np.array([[1, 2], [3, 4]], np.float32).reshape(1, 1, 2, 2)
    (dx,) = device.execute(DML_AVERAGE_POOLING_GRAD_OPERATOR_DESC(
        InputGradientTensor=tensor_desc(dy), OutputGradientTensor=tensor_desc(x.shape, F32),
        **attrs), [dy])
    np.testing.assert_array_equal(dx.reshape(3, 3), [[0.25, 0.75, 0.5], [1, 2.5, 1.5],
                                                     [0.75, 1.75, 1]])


# --- decisions, by hand -------------------------------------------------------------------------

def max2(device, x, dt, k, s=(1, 1), p=(0, 0), e=(0, 0), d=(1, 1), index=U32):
    out = [x.shape[0], x.shape[1]] + [(x.shape[2 + i] + p[i] + e[i] - (k[i] - 1) * d[i] - 1)
                                      // s[i] + 1 for i in range(2)]
    return device.execute(DML_MAX_POOLING2_OPERATOR_DESC(
        InputTensor=tensor_desc(x.shape, dt), OutputTensor=tensor_desc(out, dt),
        OutputIndicesTensor=tensor_desc(out, index), DimensionCount=2, Strides=list(s),
        WindowSize=list(k), StartPadding=list(p), EndPadding=list(e), Dilations=list(d)),
        [np.ascontiguousarray(x)])


@pytest.mark.parametrize("dt", FLOATS)
def test_max_skips_nan_keeps_the_first_tie_and_ties_zeros(device, dt):
    nan, inf = np.nan, np.inf
    x = np.array([[nan, 1.0, -0.0, 0.0, nan, nan, -inf, 2.0]], np_type(dt)).reshape(1, 1, 1, 8)
    y, ind = max2(device, x, dt, (1, 2), s=(1, 2))
    # windows: [nan, 1] -> 1 at 1; [-0, +0] -> -0 at 2 (a tie: the first); [nan, nan] -> NaN at 4
    # (the first); [-inf, 2] -> 2 at 7.
    assert ind.reshape(-1).tolist() == [1, 2, 4, 7]
    r = y.reshape(-1)
    assert r[0] == 1 and r[1] == 0 and np.signbit(r[1]) and np.isnan(r[2]) and r[3] == 2
    y, ind = max2(device, np.full((1, 1, 1, 2), -inf, np_type(dt)), dt, (1, 2))
    assert y.reshape(-1)[0] == -inf and ind.reshape(-1)[0] == 0  # -inf is an element


def test_a_window_of_padding_only_gives_the_lowest_value_and_index_minus_one(device):
    x = np.array([5, 6], np.int8).reshape(1, 1, 1, 2)
    y, ind = max2(device, x, I8, (1, 1), p=(0, 2), index=U64)
    assert y.reshape(-1).tolist() == [-128, -128, 5, 6]
    assert ind.reshape(-1).tolist() == [2**64 - 1, 2**64 - 1, 0, 1]
    xf = np.array([5, 6], np.float32).reshape(1, 1, 1, 2)
    y, _ = max2(device, xf, F32, (1, 1), p=(0, 1))
    assert y.reshape(-1).tolist() == [-np.inf, 5, 6]


def test_indices_are_logical_positions_of_a_strided_input(device):
    # A {1, 2, 2, 2} input laid out with padded strides: the index is its row-major position.
    raw = np.zeros(64, np.float32)
    strides = (0, 16, 5, 2)
    view = np.lib.stride_tricks.as_strided(raw, (1, 2, 2, 2), [s * 4 for s in strides])
    view[...] = np.array([[[1, 9], [3, 4]], [[8, 2], [7, 9]]], np.float32)
    y, ind = device.execute(DML_MAX_POOLING1_OPERATOR_DESC(
        InputTensor=desc(F32, (1, 2, 2, 2), strides),
        OutputTensor=tensor_desc((1, 2, 1, 1), F32),
        OutputIndicesTensor=tensor_desc((1, 2, 1, 1), U32), DimensionCount=2,
        Strides=[1, 1], WindowSize=[2, 2], StartPadding=[0, 0], EndPadding=[0, 0]), [raw])
    assert y.reshape(-1).tolist() == [9, 9] and ind.reshape(-1).tolist() == [1, 7]


def test_uint64_and_int64_extremes_are_exact(device):
    x = np.array([2**64 - 1, 2**63, 2**63 - 1, 0], np.uint64).reshape(1, 1, 2, 2)
    y, ind = max2(device, x, U64, (2, 1))
    assert y.reshape(-1).tolist() == [2**64 - 1, 2**63] and ind.reshape(-1).tolist() == [0, 1]
    x = np.array([-2**63, -2**63 + 1, 2**63 - 1, -1], np.int64).reshape(1, 1, 1, 4)
    y, ind = max2(device, x, T.DML_TENSOR_DATA_TYPE_INT64, (1, 2))
    assert y.reshape(-1).tolist() == [-2**63 + 1, 2**63 - 1, 2**63 - 1]


def test_lp_uses_the_magnitude_and_average_excludes_padding(device):
    x = np.array([-3.0, 4.0], np.float32).reshape(1, 1, 1, 2)
    common = {"DimensionCount": 2, "Strides": [1, 1], "WindowSize": [1, 2],
              "StartPadding": [0, 1], "EndPadding": [0, 0]}
    (y,) = device.execute(DML_LP_POOLING_OPERATOR_DESC(
        InputTensor=tensor_desc(x), OutputTensor=tensor_desc((1, 1, 1, 2), F32), P=1,
        **common), [x])
    assert y.reshape(-1).tolist() == [3.0, 7.0]
    for include, want in ((False, [-3.0, 0.5]), (True, [-1.5, 0.5])):
        (y,) = device.execute(DML_AVERAGE_POOLING_OPERATOR_DESC(
            InputTensor=tensor_desc(x), OutputTensor=tensor_desc((1, 1, 1, 2), F32),
            IncludePadding=include, **common), [x])
        assert y.reshape(-1).tolist() == want


# --- random descs against the references --------------------------------------------------------

CASES = 3


@pytest.mark.parametrize("spatial", [2, 3])
@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("op_type", [OP.DML_OPERATOR_AVERAGE_POOLING,
                                     OP.DML_OPERATOR_AVERAGE_POOLING1])
def test_average_pooling(device, op_type, dt, spatial):
    rng = np.random.default_rng([int(op_type), int(dt), spatial])
    for _ in range(CASES):
        sizes, out, attrs = window(rng, spatial, op_type == OP.DML_OPERATOR_AVERAGE_POOLING1)
        attrs["IncludePadding"] = bool(rng.integers(0, 2))
        got, want = dispatch(device, rng, op_type, [("InputTensor", dt, values(rng, dt, sizes))],
                             [("OutputTensor", dt, out)], attrs)
        same(got["OutputTensor"], want["OutputTensor"])


@pytest.mark.parametrize("k, s", [(3, 2), (3, 1), (2, 2)])
@pytest.mark.parametrize("op_type", [OP.DML_OPERATOR_MAX_POOLING, OP.DML_OPERATOR_AVERAGE_POOLING])
def test_the_common_windows_one_pass_per_window_row(device, op_type, k, s):
    """2 or 3 wide, stride 1 or 2, on a contiguous input (SUM's fused rows, MAX's separable
    ones), with the padding that makes border columns and the edge values."""
    rng = np.random.default_rng([int(op_type), k, s])
    for dt in FLOATS:
        for p, e in ((1, 1), (0, 0), (2, 1), (1, 2)):
            ins = [int(rng.integers(max(1, k - p - e), 12)) for _ in range(2)]
            sizes = [2, 3, *ins]
            out = sizes[:2] + [(i + p + e - k) // s + 1 for i in ins]
            attrs = {"DimensionCount": 2, "Strides": [s, s], "WindowSize": [k, k],
                     "StartPadding": [p, p], "EndPadding": [e, e]}
            if op_type == OP.DML_OPERATOR_AVERAGE_POOLING:
                attrs["IncludePadding"] = bool(p % 2)
            descs = {"InputTensor": tensor_desc(sizes, dt), "OutputTensor": tensor_desc(out, dt)}
            x = values(rng, dt, sizes)
            op = globals()[f"DML_{op_type.name.removeprefix('DML_OPERATOR_')}_OPERATOR_DESC"](
                **descs, **attrs)
            (y,) = device.execute(op, [x])
            v = device.CreateOperator(op).validated.values
            same(y, REGISTRY[op_type].module.reference(v, {"InputTensor": x})["OutputTensor"])


@pytest.mark.parametrize("spatial", [2, 3])
@pytest.mark.parametrize("dt", FLOATS)
def test_max_without_indices_column_maxima_then_rows(device, dt, spatial):
    """The separable MAX (no indices, unit strides along the width): windows of 1 to 6 taps per
    dimension (more than 3 rows: the extra passes), strides 1 to 3, dilations (the pass per
    window column), padding, on values where rows free of NaN are common, many ±0 ties (the
    outputs done again in window order) and ±inf; a few rows hold a NaN (done again whole)."""
    rng = np.random.default_rng([int(dt), spatial, 29])
    for case in range(24):
        k = [int(rng.integers(1, 7)) for _ in range(spatial)]
        s = [int(rng.integers(1, 4)) for _ in range(spatial)]
        dil = [int(rng.integers(1, 3)) if case % 3 == 0 else 1 for _ in range(spatial)]
        p = [int(rng.integers(0, kk)) for kk in k]
        e = [int(rng.integers(0, kk)) for kk in k]
        least = [max(1, (kk - 1) * dd + 1 - pp - ee) for kk, dd, pp, ee in zip(k, dil, p, e)]
        ins = [int(rng.integers(lo, lo + (12 if spatial == 2 else 6))) for lo in least]
        sizes = [int(rng.integers(1, 3)), int(rng.integers(1, 4)), *ins]
        out = sizes[:2] + [(ins[d] + p[d] + e[d] - ((k[d] - 1) * dil[d] + 1)) // s[d] + 1
                           for d in range(spatial)]
        v = rng.integers(-2, 2, size=sizes).astype(np.float64) * 0.5
        r = rng.random(sizes)
        v[r < 0.3] = -0.0
        v[(r >= 0.3) & (r < 0.33)] = np.inf
        v[(r >= 0.33) & (r < 0.36)] = -np.inf
        v[r > 0.998] = np.nan
        x = v.astype(np_type(dt))
        op = DML_MAX_POOLING2_OPERATOR_DESC(
            InputTensor=tensor_desc(sizes, dt), OutputTensor=tensor_desc(out, dt),
            OutputIndicesTensor=None, DimensionCount=spatial, Strides=s, WindowSize=k,
            StartPadding=p, EndPadding=e, Dilations=dil)
        (y,) = device.execute(op, [x])
        vals = device.CreateOperator(op).validated.values
        want = REGISTRY[OP.DML_OPERATOR_MAX_POOLING2].module.reference(vals, {"InputTensor": x})
        same(y, want["OutputTensor"])


def test_max_rows_wider_than_the_separable_buffers(device):
    """Input rows wider than pool_kernels.FAST_WIDTH take the tap-by-tap path (its buffers hold
    output rows): the same values as the reference on either side of the bound."""
    from emulator.compute.pool_kernels import FAST_WIDTH

    rng = np.random.default_rng(5)
    for width in (FAST_WIDTH, FAST_WIDTH + 7):
        x = (rng.integers(-3, 3, size=(1, 2, 3, width)) * 0.5).astype(np.float32)
        x[0, 0, 1, ::97] = -0.0
        out = [1, 2, 2, (width + 1 - 3) // 2 + 1]
        op = DML_MAX_POOLING2_OPERATOR_DESC(
            InputTensor=tensor_desc(x.shape, F32), OutputTensor=tensor_desc(out, F32),
            OutputIndicesTensor=None, DimensionCount=2, Strides=[1, 2], WindowSize=[2, 3],
            StartPadding=[0, 1], EndPadding=[0, 0], Dilations=[1, 1])
        (y,) = device.execute(op, [x])
        vals = device.CreateOperator(op).validated.values
        want = REGISTRY[OP.DML_OPERATOR_MAX_POOLING2].module.reference(vals, {"InputTensor": x})
        same(y, want["OutputTensor"])


@pytest.mark.parametrize("spatial", [2, 3])
@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("op_type", [OP.DML_OPERATOR_LP_POOLING, OP.DML_OPERATOR_LP_POOLING1])
def test_lp_pooling(device, op_type, dt, spatial):
    rng = np.random.default_rng([int(op_type), int(dt), spatial])
    for p in (1, 2, 3, 7):
        sizes, out, attrs = window(rng, spatial, op_type == OP.DML_OPERATOR_LP_POOLING1)
        attrs["P"] = p
        got, want = dispatch(device, rng, op_type, [("InputTensor", dt, values(rng, dt, sizes))],
                             [("OutputTensor", dt, out)], attrs)
        if p <= 2:
            same(got["OutputTensor"], want["OutputTensor"])
        else:
            within_ulp(got["OutputTensor"], want["OutputTensor"])


@pytest.mark.parametrize("spatial", [2, 3])
@pytest.mark.parametrize("dt", MAX_TYPES)
@pytest.mark.parametrize("op_type", [OP.DML_OPERATOR_MAX_POOLING, OP.DML_OPERATOR_MAX_POOLING1,
                                     OP.DML_OPERATOR_MAX_POOLING2])
def test_max_pooling(device, op_type, dt, spatial):
    rng = np.random.default_rng([int(op_type), int(dt), spatial])
    for case in range(CASES if dt in FLOATS else 2):
        sizes, out, attrs = window(rng, spatial, op_type == OP.DML_OPERATOR_MAX_POOLING2)
        outputs = [("OutputTensor", dt, out)]
        if op_type != OP.DML_OPERATOR_MAX_POOLING:
            outputs.append(("OutputIndicesTensor", [U32, U64][case % 2], out if case < 2 else None))
        got, want = dispatch(device, rng, op_type, [("InputTensor", dt, values(rng, dt, sizes))],
                             outputs, attrs)
        for name in got:
            same(got[name], want[name])


@pytest.mark.parametrize("spatial", [2, 3])
@pytest.mark.parametrize("dt", [I8, U8])
def test_quantized_linear_average_pooling(device, dt, spatial):
    rng = np.random.default_rng([int(dt), spatial, 17])
    for case in range(4):
        sizes, out, attrs = window(rng, spatial)
        attrs["IncludePadding"] = bool(case % 2)
        c = sizes[1]
        odt = [I8, U8][int(rng.integers(0, 2))]
        shape = [1, c] + [1] * spatial if case >= 2 else [1] * (2 + spatial)

        def scale(shape=shape):
            return rng.uniform(0.002, 0.5, shape).astype(np.float32)

        def zero(t, shape=shape):
            return values(rng, t, shape) if rng.random() < 0.7 else None
        inputs = [("InputTensor", dt, values(rng, dt, sizes)), ("InputScaleTensor", F32, scale()),
                  ("InputZeroPointTensor", dt, zero(dt)), ("OutputScaleTensor", F32, scale()),
                  ("OutputZeroPointTensor", odt, zero(odt))]
        got, want = dispatch(device, rng, OP.DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING,
                             inputs, [("OutputTensor", odt, out)], attrs)
        same(got["OutputTensor"], want["OutputTensor"])


def test_quantized_average_rounds_half_to_even_and_saturates(device):
    x = np.array([1, 2, 3, 4, 127, 127], np.int8).reshape(1, 1, 1, 6)
    common = {"DimensionCount": 2, "Strides": [1, 2], "WindowSize": [1, 2],
              "StartPadding": [0, 0], "EndPadding": [0, 0], "Dilations": [1, 1],
              "IncludePadding": False}
    one = np.ones((1, 1, 1, 1), np.float32)
    quarter = np.full((1, 1, 1, 1), 0.25, np.float32)
    (y,) = device.execute(DML_QUANTIZED_LINEAR_AVERAGE_POOLING_OPERATOR_DESC(
        InputTensor=tensor_desc(x), InputScaleTensor=tensor_desc(one),
        InputZeroPointTensor=None, OutputScaleTensor=tensor_desc(one),
        OutputZeroPointTensor=None, OutputTensor=tensor_desc((1, 1, 1, 3), I8), **common),
        [x, one, None, one, None])
    assert y.reshape(-1).tolist() == [2, 4, 127]  # 1.5 -> 2, 3.5 -> 4
    (y,) = device.execute(DML_QUANTIZED_LINEAR_AVERAGE_POOLING_OPERATOR_DESC(
        InputTensor=tensor_desc(x), InputScaleTensor=tensor_desc(one),
        InputZeroPointTensor=None, OutputScaleTensor=tensor_desc(quarter),
        OutputZeroPointTensor=None, OutputTensor=tensor_desc((1, 1, 1, 3), U8), **common),
        [x, one, None, quarter, None])
    assert y.reshape(-1).tolist() == [6, 14, 255]  # 1.5 / 0.25, 3.5 / 0.25, saturated


@pytest.mark.parametrize("spatial", [2, 3])
@pytest.mark.parametrize("dt", FLOATS)
def test_average_pooling_grad(device, dt, spatial):
    rng = np.random.default_rng([int(dt), spatial, 3])
    for _ in range(CASES):
        sizes, out, attrs = window(rng, spatial, dilations=False)
        attrs["IncludePadding"] = bool(rng.integers(0, 2))
        dy = rng.standard_normal(out).astype(np_type(dt))
        got, want = dispatch(device, rng, OP.DML_OPERATOR_AVERAGE_POOLING_GRAD,
                             [("InputGradientTensor", dt, dy)],
                             [("OutputGradientTensor", dt, sizes)], attrs)
        magnitude = np.abs(dy.astype(np.float64)).sum()
        within_ulp(got["OutputGradientTensor"], want["OutputGradientTensor"],
                   2.0 ** -40 * magnitude)


@pytest.mark.parametrize("spatial", [2, 3])
@pytest.mark.parametrize("dt", FLOATS)
def test_max_pooling_grad(device, dt, spatial):
    rng = np.random.default_rng([int(dt), spatial, 5])
    for _ in range(CASES):
        sizes, out, attrs = window(rng, spatial)
        x = values(rng, dt, sizes)
        dy = rng.standard_normal(out).astype(np_type(dt))
        got, want = dispatch(device, rng, OP.DML_OPERATOR_MAX_POOLING_GRAD,
                             [("InputTensor", dt, x), ("InputGradientTensor", dt, dy)],
                             [("OutputGradientTensor", dt, sizes)], attrs)
        same(got["OutputGradientTensor"], want["OutputGradientTensor"])


def test_results_do_not_depend_on_the_thread_count(device):
    import numba

    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 3, 17, 19)).astype(np.float32)
    results = []
    for threads in (1, numba.config.NUMBA_NUM_THREADS):
        numba.set_num_threads(threads)
        try:
            results.append(max2(device, x, F32, (3, 3), s=(2, 2), p=(1, 1), e=(1, 1)))
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_a_window_far_larger_than_the_input_costs_its_live_taps(device):
    # Width 3, a window of 2**20 columns with 2**20 - 1 columns of start padding: output column
    # o covers input columns [0, o], so MAX is the running maximum and the averages are prefix
    # sums (divided by the count, or by the whole window with IncludePadding).
    big = 2**20
    x = np.array([2.0, -1.0, 5.0], np.float32).reshape(1, 1, 1, 3)
    common = {"DimensionCount": 2, "Strides": [1, 1], "WindowSize": [1, big],
              "StartPadding": [0, big - 1], "EndPadding": [0, 0]}
    out = tensor_desc((1, 1, 1, 3), F32)
    y, ind = device.execute(DML_MAX_POOLING2_OPERATOR_DESC(
        InputTensor=tensor_desc(x), OutputTensor=out, OutputIndicesTensor=tensor_desc(
            (1, 1, 1, 3), U32), Dilations=[1, 1], **common), [x])
    assert y.reshape(-1).tolist() == [2, 2, 5] and ind.reshape(-1).tolist() == [0, 0, 2]
    for include, want in ((False, [2.0, 0.5, 2.0]), (True, [2.0 / big, 1.0 / big, 6.0 / big])):
        (y,) = device.execute(DML_AVERAGE_POOLING_OPERATOR_DESC(
            InputTensor=tensor_desc(x), OutputTensor=out, IncludePadding=include, **common), [x])
        np.testing.assert_array_equal(y.reshape(-1), np.array(want, np.float32))
        dy = np.array([1.0, 2.0, 3.0], np.float32).reshape(1, 1, 1, 3)
        (dx,) = device.execute(DML_AVERAGE_POOLING_GRAD_OPERATOR_DESC(
            InputGradientTensor=tensor_desc(dy), OutputGradientTensor=tensor_desc(x.shape, F32),
            IncludePadding=include, **common), [dy])
        d = [float(big)] * 3 if include else [1.0, 2.0, 3.0]
        want_dx = [1 / d[0] + 2 / d[1] + 3 / d[2], 2 / d[1] + 3 / d[2], 3 / d[2]]
        np.testing.assert_allclose(dx.reshape(-1), want_dx, rtol=1e-6)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([2, 3]), st.sampled_from(MAX_TYPES))
def test_property_max_pooling2_matches_the_reference(device, seed, spatial, dt):
    """Random windows (dilations, asymmetric padding), layouts and values of any type: the
    values and both index types agree with the reference bit for bit."""
    rng = np.random.default_rng(seed)
    sizes, out, attrs = window(rng, spatial)
    index = [U32, U64][seed % 2]
    got, want = dispatch(device, rng, OP.DML_OPERATOR_MAX_POOLING2,
                         [("InputTensor", dt, values(rng, dt, sizes))],
                         [("OutputTensor", dt, out), ("OutputIndicesTensor", index, out)], attrs)
    for name in got:
        same(got[name], want[name])
