"""MEAN_VARIANCE_NORMALIZATION2 (6_3): UseMean and UseVariance in every combination, Scale only,
Bias only, both or neither, per-column Scale/Bias (LayerNorm as ONNX Runtime builds it) and the
RMS normalization (UseMean FALSE), every rank with padded and zero strides, fused activations,
non-finite values, and the same bytes at any thread count.

Bounds (the kernel is MVN1's: float64 statistics, normalization in float32 with the mean split
into a float32 pair, one rounding to the output type): FLOAT16 within 1 ULP of the correctly
rounded reference (the float32 arithmetic's error is 2**-13 of a FLOAT16 ULP of the terms, so
only the final rounding counts), except where Bias cancels the rest: there FLOAT32's bound
below, plus one FLOAT16 ULP of the result (millions of elements find such a case); FLOAT32 within 2**-20 of the magnitude of the terms,
|normalized * Scale| + |Bias| (about 5 float32 roundings: 1/sqrt, Scale's product, the
subtraction, the product, the sum; a ULP bound on the result alone cannot hold where Bias
cancels the rest). With a fused activation, which runs in float32 after that: 1e-5 relative
and absolute, as for MVN1. The reference is ``mvn1.normalize`` in float64 (the formula of the
module docstring of ``emulator/ops/mvn2.py``).
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

from descriptors import *
from emulator import DMLCreateDevice1
from emulator.activations import ACTIVATIONS
from emulator.ops.mvn1 import normalize

from .helpers import SENTINEL, addressed_mask, bits, desc, layout, logical, strided_buffer
from .test_activations import PARAMS, ulps

F32, F16 = DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16
DTYPES = {F32: np.float32, F16: np.float16}
EPS = float(np.float32(1e-5))
COMBINATIONS = [(m, v) for m in (True, False) for v in (True, False)]
COMBINATION_IDS = ["mean+variance", "mean", "variance (RMS)", "neither"]
SCALE_BIAS = [(True, True), (True, False), (False, True), (False, False)]
SCALE_BIAS_IDS = ["Scale+Bias", "Scale", "Bias", "none"]


def mvn2(i, o, axes, scale=None, bias=None, use_mean=True, use_variance=True, eps=EPS,
         fused=None):
    return DML_OPERATOR_DESC(Desc=DML_MEAN_VARIANCE_NORMALIZATION2_OPERATOR_DESC(
        InputTensor=i, ScaleTensor=scale, BiasTensor=bias, OutputTensor=o, Axes=list(axes),
        UseMean=use_mean, UseVariance=use_variance, Epsilon=eps, FusedActivation=fused))


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="6_3")


def within_bound(got, x, axes, scale, bias, use_mean, use_variance, eps, fused=None):
    dtype = got.dtype
    want = normalize(x, axes, scale, bias, use_variance, eps, fused, use_mean=use_mean)
    got64 = got.astype(np.float64)
    both_nan = np.isnan(got64) & np.isnan(want)
    if dtype == np.float16:
        close = ulps(got, want.astype(np.float16)) <= 1
        if close.all():
            return True
        # Where Scale's product and Bias cancel, the float32 error (relative to the terms)
        # can exceed the small result's ULP: that error, then the one rounding to FLOAT16.
        spacing = np.spacing(np.abs(want.astype(np.float16))).astype(np.float64)
        ok = np.abs(got64 - want) <= 2.0**-20 * _terms(x, axes, scale, bias, use_mean,
                                                       use_variance, eps) + spacing
        return bool((close | ok | both_nan).all())
    if fused is not None:
        bad = np.abs(got64 - want) > 1e-5 * (1 + np.abs(want))
        return not (bad & ~both_nan).any()
    terms = _terms(x, axes, scale, bias, use_mean, use_variance, eps)
    bad = np.abs(got64 - want) > 2.0**-20 * terms + 1e-37
    return not (bad & ~both_nan).any()


def _terms(x, axes, scale, bias, use_mean, use_variance, eps):
    """|normalized * Scale| + |Bias|, in float64."""
    plain = normalize(x, axes, None, None, use_variance, eps, None, use_mean=use_mean)
    terms = np.abs(plain * (1 if scale is None else scale.astype(np.float64)))
    return terms + (0 if bias is None else np.abs(bias.astype(np.float64)))


def test_hand_computed_combinations(device):
    x = np.array([1, 2, 3, 4], np.float32)

    def y(use_mean, use_variance):
        return device.execute(mvn2(tensor_desc(x), tensor_desc(x), [0], None, None, use_mean,
                                   use_variance, eps=0.0), [x])[0]
    np.testing.assert_allclose(y(True, True), (x - 2.5) / np.sqrt(1.25), rtol=1e-7)
    np.testing.assert_array_equal(y(True, False), x - 2.5)
    np.testing.assert_allclose(y(False, True), x / np.sqrt(7.5), rtol=1e-7)  # mean of squares
    np.testing.assert_array_equal(y(False, False), x)


def test_matches_mvn1_with_use_mean(device):
    """UseMean TRUE is MVN1 (NormalizeVariance = UseVariance), bit for bit."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    s = rng.standard_normal((1, 3, 1, 1)).astype(np.float32)
    b = rng.standard_normal((1, 3, 1, 1)).astype(np.float32)
    for use_variance in (True, False):
        [a] = device.execute(mvn2(tensor_desc(x), tensor_desc(x), (2, 3), tensor_desc(s),
                                  tensor_desc(b), True, use_variance), [x, s, b])
        [m] = device.execute(DML_OPERATOR_DESC(Desc=DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC(
            InputTensor=tensor_desc(x), ScaleTensor=tensor_desc(s), BiasTensor=tensor_desc(b),
            OutputTensor=tensor_desc(x), Axes=[2, 3], NormalizeVariance=use_variance,
            Epsilon=EPS)), [x, s, b])
        np.testing.assert_array_equal(bits(a), bits(m))


@pytest.mark.parametrize("simplified", [False, True], ids=["LayerNorm", "SimplifiedLayerNorm"])
@pytest.mark.parametrize("dt", [F32, F16], ids=["FLOAT32", "FLOAT16"])
def test_layer_normalization_as_onnx_runtime_builds_it(device, dt, simplified):
    """ONNX Runtime's DirectML LayerNormalization: input padded to 4-D with trailing 1s, Axes
    from the normalized axis to the end, per-column Scale (and Bias, not for the simplified
    RMS form, UseMean FALSE); offset data so that centring matters."""
    rng = np.random.default_rng(int(dt) + 2 * simplified)
    dtype = DTYPES[dt]
    x = (rng.standard_normal((4, 9, 768, 1)) + 3).astype(dtype)
    s = rng.standard_normal((1, 1, 768, 1)).astype(dtype)
    b = None if simplified else rng.standard_normal((1, 1, 768, 1)).astype(dtype)
    axes = (2, 3)
    [y] = device.execute(mvn2(tensor_desc(x), tensor_desc(x), axes, tensor_desc(s),
                              None if b is None else tensor_desc(b), not simplified, True),
                         [x, s, b])
    assert within_bound(y, x, axes, s, b, not simplified, True, EPS)
    if simplified:  # the ONNX formula, written out
        x64 = x.astype(np.float64)
        rms = np.sqrt((x64 * x64).mean(axis=axes, keepdims=True) + EPS)
        np.testing.assert_allclose(y, x64 / rms * s, rtol=1e-5 if dt == F32 else 1e-3,
                                   atol=1e-6 if dt == F32 else 1e-3)


def run_case(device, rng, dt, sizes, axes, use_mean, use_variance, with_scale, with_bias,
             fused_act=None):
    dtype = DTYPES[dt]
    in_strides = layout(rng, sizes, True)  # padded or zero (broadcast) strides
    out_strides = layout(rng, sizes, False)
    raw_in = strided_buffer(rng, dt, sizes, in_strides, fill=0)
    x = logical(raw_in, dtype, sizes, in_strides)
    x[...] = (rng.standard_normal(sizes) * 2 + 0.5).astype(dtype)
    inputs, arrays, tensors = [raw_in, None, None], {}, [None, None]
    for k, present in ((1, with_scale), (2, with_bias)):
        if not present:
            continue
        p_sizes = [n if rng.random() < 0.5 else 1 for n in sizes]
        p_strides = layout(rng, p_sizes, True)
        raw = strided_buffer(rng, dt, p_sizes, p_strides, fill=0)
        logical(raw, dtype, p_sizes, p_strides)[...] = rng.standard_normal(p_sizes).astype(dtype)
        arrays[k] = np.array(logical(raw, dtype, p_sizes, p_strides))
        inputs[k] = raw
        tensors[k - 1] = desc(dt, p_sizes, p_strides)
    raw_out = strided_buffer(rng, dt, sizes, out_strides, fill=SENTINEL)
    fused = p32 = None
    if fused_act is not None:
        cls = OPERATOR_DESC_CLASSES[fused_act.operator]
        fused = cls(**dict(zip(fused_act.params, PARAMS.get(fused_act.name, ()))))
        p32 = tuple(float(np.float32(p)) for p in PARAMS.get(fused_act.name, ()))
    device.execute(mvn2(desc(dt, sizes, in_strides), desc(dt, sizes, out_strides), axes,
                        tensors[0], tensors[1], use_mean, use_variance, fused=fused),
                   inputs, [raw_out])
    got = logical(raw_out, dtype, sizes, out_strides)
    assert within_bound(got, np.array(x), axes, arrays.get(1), arrays.get(2), use_mean,
                        use_variance, EPS, (fused_act, p32) if fused_act else None), \
        (sizes, axes, use_mean, use_variance)
    untouched = ~addressed_mask(raw_out.size, np.dtype(dtype).itemsize, sizes, out_strides)
    assert (raw_out[untouched] == SENTINEL).all(), "a gap of the output was written"


@pytest.mark.parametrize("use_mean,use_variance", COMBINATIONS, ids=COMBINATION_IDS)
@pytest.mark.parametrize("with_scale,with_bias", SCALE_BIAS, ids=SCALE_BIAS_IDS)
@pytest.mark.parametrize("dt", [F32, F16], ids=["FLOAT32", "FLOAT16"])
def test_every_combination_rank_and_layout(device, dt, with_scale, with_bias, use_mean,
                                           use_variance):
    rng = np.random.default_rng([int(dt), with_scale, with_bias, use_mean, use_variance])
    for rank in range(1, 9):
        sizes = [int(rng.integers(1, {1: 50, 2: 12, 3: 8, 4: 6}.get(rank, 3) + 1))
                 for _ in range(rank)]
        axes = [int(a) for a in rng.choice(rank, size=int(rng.integers(1, rank + 1)))]
        run_case(device, rng, dt, sizes, axes, use_mean, use_variance, with_scale, with_bias)


FUSABLE = [a for a in ACTIVATIONS if a.fusable_from and a.fusable_from <= DML_FEATURE_LEVEL_6_3]


@pytest.mark.parametrize("act", FUSABLE, ids=lambda a: a.name)
def test_fused_activations(device, act):
    rng = np.random.default_rng(act.kind)
    run_case(device, rng, F32, [2, 3, 4, 5], [3], False, True, True, False, act)
    run_case(device, rng, F16, [2, 3, 4, 5], [1, 2, 3], True, True, False, True, act)


NAN, INF = np.nan, np.inf
# Rows (Axes {1}) with non-finite values, and the formula's result per element, Epsilon 0:
# without UseMean, Variance is the mean of the squares; the absent Bias is 0 and is added, so
# -0 gives +0.
EDGE_GROUPS = [  # (group, RMS (variance only), neither)
    ([1.0, INF, 2.0, 3.0], [0.0, NAN, 0.0, 0.0], [1.0, INF, 2.0, 3.0]),
    ([-1.0, -INF, 2.0, -0.0], [0.0, NAN, 0.0, 0.0], [-1.0, -INF, 2.0, 0.0]),
    ([NAN, 1.0, 2.0, 3.0], [NAN] * 4, [NAN, 1.0, 2.0, 3.0]),
    ([0.0, -0.0, 0.0, 0.0], [NAN] * 4, [0.0] * 4),                  # 0 / sqrt(0 + 0)
    ([3.0, -4.0, 0.0, 0.0], [1.2, -1.6, 0.0, 0.0], [3.0, -4.0, 0.0, 0.0]),
]


@pytest.mark.parametrize("dt", [F32, F16], ids=["FLOAT32", "FLOAT16"])
def test_without_the_mean_non_finite_values_follow_the_formula(device, dt):
    dtype = DTYPES[dt]
    x = np.array([g[0] for g in EDGE_GROUPS], dtype)
    for column, use_variance in ((1, True), (2, False)):
        [y] = device.execute(mvn2(tensor_desc(x), tensor_desc(x), (1,), None, None, False,
                                  use_variance, eps=0.0), [x])
        want = normalize(x, (1,), None, None, use_variance, 0.0, None, use_mean=False)
        for k, group in enumerate(EDGE_GROUPS):
            expected = np.array(group[column], dtype)
            for got in (y[k], want[k].astype(dtype)):
                np.testing.assert_array_equal(np.isnan(got), np.isnan(expected), str(k))
                np.testing.assert_allclose(got, expected, rtol=2e-3, err_msg=str(k))
                assert (np.signbit(got) == np.signbit(expected))[~np.isnan(expected)].all(), k


def test_the_same_bytes_at_any_thread_count(device):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 40, 33)).astype(np.float32)
    s = rng.standard_normal((1, 1, 33)).astype(np.float32)
    before = numba.get_num_threads()
    outs = []
    try:
        for threads in sorted({1, before}):
            numba.set_num_threads(threads)
            for use_mean, use_variance in COMBINATIONS:
                outs.append(device.execute(mvn2(tensor_desc(x), tensor_desc(x), (1, 2),
                                                tensor_desc(s), None, use_mean, use_variance),
                                           [x, s])[0])
    finally:
        numba.set_num_threads(before)
    for k, y in enumerate(outs):
        np.testing.assert_array_equal(bits(y), bits(outs[k % len(COMBINATIONS)]))


@pytest.mark.parametrize("fused", [None, "RELU", "ELU"])
@pytest.mark.parametrize("dt", [F32, F16], ids=["FLOAT32", "FLOAT16"])
def test_large_outputs_are_streamed_with_the_same_bytes(device, dt, fused, monkeypatch):
    """A FLOAT32 output of STREAM_BYTES or more (kernels/normalization.py; here lowered to
    16 MiB) with contiguous rows is written from an L1 buffer with non-temporal stores
    (FLOAT16, measured slower streamed, runs the same test with the field forced on):
    per-column Scale and Bias
    (LayerNorm), a constant Scale (the one-loop path), a fused activation (the buffered path);
    rows padded (their gaps stay untouched) and not a multiple of 32 bytes apart. The bytes
    equal the cached stores' (the plan's STREAM field off) and the reference's bound."""
    from bench.harness import Prepared
    from emulator.kernels import normalization as k
    from emulator.kernels.tasks import HEAD

    monkeypatch.setattr(k, "STREAM_BYTES", 16 << 20)
    dtype = DTYPES[dt]
    rows, cols, pitch = (1100, 3900, 3909) if dt == F32 else (2200, 3900, 3909)
    assert rows * cols * np.dtype(dtype).itemsize >= k.STREAM_BYTES
    rng = np.random.default_rng(int(dt))
    x = (rng.standard_normal((rows, cols)) + 2).astype(dtype)
    act = {None: None, "RELU": DML_ACTIVATION_RELU_OPERATOR_DESC(),
           "ELU": DML_ACTIVATION_ELU_OPERATOR_DESC(Alpha=0.5)}[fused]
    for per_column in (True, False):
        s = rng.standard_normal((1, cols if per_column else 1)).astype(dtype)
        b = rng.standard_normal((1, cols if per_column else 1)).astype(dtype)
        sdesc = desc(dt, (1, cols), (0, 1) if per_column else (0, 0))
        out_desc = desc(dt, (rows, cols), (pitch, 1))
        raw = np.full(DMLCalcBufferTensorSize(dt, 2, (rows, cols), (pitch, 1)), SENTINEL,
                      np.uint8)
        op = mvn2(tensor_desc(x), out_desc, (1,), sdesc, sdesc, fused=act)
        run = Prepared(op, [x, s, b], [raw], level="6_3")
        plan = run.compiled.operator.plan
        assert plan.launch[0][HEAD + k.STREAM] == (dt == F32)
        plan.launch[0][HEAD + k.STREAM] = 1
        run()
        streamed = raw.copy()
        plan.launch[0][HEAD + k.STREAM] = 0
        raw[...] = SENTINEL
        run()
        np.testing.assert_array_equal(streamed, raw)
        got = logical(streamed, dtype, (rows, cols), (pitch, 1))
        scale = np.broadcast_to(s, (1, cols))
        bias = np.broadcast_to(b, (1, cols))
        p32 = (0.5,) if fused == "ELU" else ()
        fa = None if act is None else (next(a for a in ACTIVATIONS if a.name == fused), p32)
        assert within_bound(np.array(got), x, (1,), scale, bias, True, True, EPS, fa)
        untouched = ~addressed_mask(raw.size, np.dtype(dtype).itemsize, (rows, cols),
                                    (pitch, 1))
        assert (streamed[untouched] == SENTINEL).all()
