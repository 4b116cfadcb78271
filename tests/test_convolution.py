"""CONVOLUTION on the matrix-multiply core (``emulator/compute/conv.py``): random descs of both
data types, 1 to 3 spatial dimensions, both modes and directions, groups (depthwise included),
strides, dilations, asymmetric padding, output padding, bias, every fusable activation; padded
and zero (broadcast) input, filter and bias strides, padded output strides whose gaps must stay
untouched; against the float64 reference, written from the page (a backward convolution as the
scatter of its own definition, not the emulator's upsampled forward form).

**The bound** is GEMM's (tests/test_gemm.py) with K = (input channels / GroupCount) x filter
taps: ``(K + 2) * 2**-24 * (sum |x * w| + |bias|)`` plus one rounding to the output type, and
through a fused activation that error times its slope plus the activation's 4 ULP.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from descriptors import *
from emulator import DMLCreateDevice1
from emulator.activations import ACTIVATIONS
from emulator.compute.table import convolve

from .test_gemm import assert_within, dispatch_case, product_bound

T = DML_TENSOR_DATA_TYPE
OP = DML_OPERATOR_TYPE
F32, F16 = T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16
DTYPES = {F32: np.float32, F16: np.float16}
FORWARD, BACKWARD = DML_CONVOLUTION_DIRECTION_FORWARD, DML_CONVOLUTION_DIRECTION_BACKWARD
CROSS, CONV = DML_CONVOLUTION_MODE_CROSS_CORRELATION, DML_CONVOLUTION_MODE_CONVOLUTION
FUSABLE = [a for a in ACTIVATIONS if a.fusable_from]


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="6_4")


def random_attributes(rng, spatial, direction):
    """(sizes of input and filter, attributes) of a valid random convolution."""
    g = int(rng.choice([1, 1, 2, 3]))
    cig, cog = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    if rng.random() < 0.2:  # depthwise
        g, cig, cog = int(rng.integers(2, 5)), 1, 1
    n = int(rng.integers(1, 3))
    kernel = [int(rng.integers(1, 4)) for _ in range(spatial)]
    strides = [int(rng.integers(1, 3)) for _ in range(spatial)]
    dil = [int(rng.integers(1, 3)) for _ in range(spatial)]
    start = [int(rng.integers(0, 3)) for _ in range(spatial)]
    end = [int(rng.integers(0, 3)) for _ in range(spatial)]
    size_cap = {1: 12, 2: 8, 3: 5}[spatial]
    out_pad = [0] * spatial
    if direction == FORWARD:
        ins = [int(rng.integers(max(1, (k - 1) * d + 1 - s - e), size_cap + 1))
               for k, d, s, e in zip(kernel, dil, start, end)]
        x = [n, g * cig, *ins]
        f = [g * cog, cig, *kernel]
    else:
        ins = [int(rng.integers(1, size_cap // 2 + 2)) for _ in range(spatial)]
        out_pad = [int(rng.integers(0, s)) if s > 1 else 0 for s in strides]
        for d in range(spatial):  # keep at least one output element
            full = (ins[d] - 1) * strides[d] + (kernel[d] - 1) * dil[d] + 1 + out_pad[d]
            while start[d] + end[d] >= full:
                start[d], end[d] = max(0, start[d] - 1), max(0, end[d] - 1)
        x = [n, g * cig, *ins]
        f = [g * cig, cog, *kernel]
    attrs = {"Mode": rng.choice([CROSS, CONV]), "Direction": direction, "DimensionCount": spatial,
             "Strides": strides, "Dilations": dil, "StartPadding": start, "EndPadding": end,
             "OutputPadding": out_pad, "GroupCount": g}
    return x, f, attrs


def output_sizes(x, f, a):
    dims = a["DimensionCount"]
    out = [x[0], f[0] if a["Direction"] == FORWARD else f[1] * a["GroupCount"]]
    for d in range(dims):
        window = (f[2 + d] - 1) * a["Dilations"][d] + 1
        if a["Direction"] == FORWARD:
            padded = x[2 + d] + a["StartPadding"][d] + a["EndPadding"][d]
            out.append((padded - window) // a["Strides"][d] + 1)
        else:
            out.append((x[2 + d] - 1) * a["Strides"][d] + window + a["OutputPadding"][d]
                       - a["StartPadding"][d] - a["EndPadding"][d])
    return out


def run_case(device, rng, dt, x_sizes, f_sizes, attrs, with_bias, act=None):
    o_sizes = output_sizes(x_sizes, f_sizes, attrs)
    b_sizes = [1, o_sizes[1]] + [1] * attrs["DimensionCount"]

    def make_op(tensors, out, fused):
        return DML_CONVOLUTION_OPERATOR_DESC(**tensors, OutputTensor=out, FusedActivation=fused,
                                             **attrs)

    got, want, arrays, v, fused, slope = dispatch_case(
        device, rng, dt, OP.DML_OPERATOR_CONVOLUTION,
        [("InputTensor", x_sizes), ("FilterTensor", f_sizes),
         ("BiasTensor", b_sizes if with_bias else None)], o_sizes, make_op, act)
    magnitude = convolve(np.abs(arrays["InputTensor"].astype(np.float64)),
                         np.abs(arrays["FilterTensor"].astype(np.float64)), v)
    if with_bias:
        magnitude = magnitude + np.abs(arrays["BiasTensor"].astype(np.float64))
    k = x_sizes[1] // attrs["GroupCount"] * int(np.prod(f_sizes[2:]))
    return got, want, product_bound(k, magnitude, want, DTYPES[dt], fused, slope)


@pytest.mark.parametrize("spatial", [1, 2, 3])
@pytest.mark.parametrize("direction", [FORWARD, BACKWARD], ids=["FORWARD", "BACKWARD"])
@pytest.mark.parametrize("dt", [F32, F16], ids=["FLOAT32", "FLOAT16"])
def test_random_descs_against_the_definition(device, monkeypatch, dt, direction, spatial):
    """A third of the cases without the direct BLAS: the whole-input im2col and the
    matrix-multiply core instead of the tiles."""
    from emulator.compute import blas

    rng = np.random.default_rng([int(dt), int(direction), spatial])
    for case in range(12):
        monkeypatch.setattr(blas, "DIRECT", case % 3 != 2)
        x, f, attrs = random_attributes(rng, spatial, direction)
        got, want, bound = run_case(device, rng, dt, x, f, attrs, bool(rng.random() < 0.6))
        assert_within(got, want, bound, (case, x, f, attrs, blas.DIRECT))


@pytest.mark.parametrize("act", FUSABLE, ids=[a.name for a in FUSABLE])
def test_fused_activations(device, act):
    rng = np.random.default_rng(act.kind)
    for dt, direction in ((F32, FORWARD), (F16, BACKWARD)):
        x, f, attrs = random_attributes(rng, 2, direction)
        got, want, bound = run_case(device, rng, dt, x, f, attrs, True, act)
        assert_within(got, want, bound, (dt, x, f, attrs))


def conv2d(device, x, w, **attrs):
    out_sizes = output_sizes(list(x.shape), list(w.shape), attrs)
    out = np.zeros(out_sizes, np.float32)
    op = DML_CONVOLUTION_OPERATOR_DESC(InputTensor=tensor_desc(x), FilterTensor=tensor_desc(w),
                                       OutputTensor=tensor_desc(out), **attrs)
    device.execute(op, [x, w, None], [out])
    return out


def attributes(direction=FORWARD, mode=CROSS, strides=(1, 1), start=(0, 0), end=(0, 0),
               out_pad=(0, 0), groups=1):
    return {"Mode": mode, "Direction": direction, "DimensionCount": 2, "Strides": list(strides),
            "Dilations": [1, 1], "StartPadding": list(start), "EndPadding": list(end),
            "OutputPadding": list(out_pad), "GroupCount": groups}


def test_the_mode_table_orients_the_filter(device):
    """CROSS_CORRELATION/FORWARD: the filter as it lies; CONVOLUTION/FORWARD: flipped along
    x and y. A single 1 in the filter's corner picks which input element each output reads."""
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    w = np.zeros((1, 1, 2, 2), np.float32)
    w[0, 0, 0, 0] = 1
    cross = conv2d(device, x, w, **attributes())
    conv = conv2d(device, x, w, **attributes(mode=CONV))
    np.testing.assert_array_equal(cross[0, 0], x[0, 0, :3, :3])
    np.testing.assert_array_equal(conv[0, 0], x[0, 0, 1:, 1:])


def test_backward_is_the_transposed_convolution_onnx_runtime_builds(device):
    """ONNX Runtime's DirectML provider runs ConvTranspose as CROSS_CORRELATION/BACKWARD: each
    input element adds input x filter at stride intervals of the output, written out here by
    hand for a 2 x 2 input, a 2 x 2 filter, stride 2, and the corner cut by StartPadding."""
    x = np.array([[[[1, 2], [3, 4]]]], np.float32)
    w = np.array([[[[1, 10], [100, 1000]]]], np.float32)
    full = conv2d(device, x, w, **attributes(BACKWARD, strides=(2, 2)))
    want = np.zeros((4, 4), np.float32)
    for i in range(2):
        for j in range(2):
            want[2 * i:2 * i + 2, 2 * j:2 * j + 2] += x[0, 0, i, j] * w[0, 0]
    np.testing.assert_array_equal(full[0, 0], want)
    cut = conv2d(device, x, w, **attributes(BACKWARD, strides=(2, 2), start=(1, 1),
                                            out_pad=(1, 1)))
    padded = np.zeros((5, 5), np.float32)
    padded[:4, :4] = want
    np.testing.assert_array_equal(cut[0, 0], padded[1:, 1:])


def test_depthwise_and_grouped_channels_stay_in_their_group(device):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 6, 5, 5)).astype(np.float32)
    w = rng.standard_normal((6, 1, 3, 3)).astype(np.float32)
    out = conv2d(device, x, w, **attributes(groups=6, start=(1, 1), end=(1, 1)))
    for c in range(6):
        alone = conv2d(device, x[:, c:c + 1].copy(), w[c:c + 1].copy(),
                       **attributes(start=(1, 1), end=(1, 1)))
        np.testing.assert_allclose(out[:, c:c + 1], alone, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kernel", [(3, 3), (1, 3, 3), (3, 3, 3), (2, 3)],
                         ids=["3x3", "1x3x3", "3x3x3", "2x3"])
@pytest.mark.parametrize("dilation", [1, 2])
def test_depthwise_sums_in_tap_order_exactly(device, kernel, dilation):
    """The depthwise kernel (3x3 in one pass, other windows tap by tap) adds bias + w * x over
    the taps in row-major order, each product and sum rounded to float32: the same bytes as
    that loop written out here, for 2-D and 3-D windows and dilations."""
    rng = np.random.default_rng(len(kernel) * 10 + dilation)
    d = len(kernel)
    spatial = (4, 6, 7)[-d:]
    x = rng.standard_normal((2, 5, *spatial)).astype(np.float32)
    w = rng.standard_normal((5, 1, *kernel)).astype(np.float32)
    bias = rng.standard_normal((1, 5) + (1,) * d).astype(np.float32)
    pad = [(k - 1) * dilation // 2 for k in kernel]
    out_sp = [s + 2 * p - (k - 1) * dilation for s, p, k in zip(spatial, pad, kernel)]
    out = np.zeros((2, 5, *out_sp), np.float32)
    device.execute(DML_CONVOLUTION_OPERATOR_DESC(
        InputTensor=tensor_desc(x), FilterTensor=tensor_desc(w), BiasTensor=tensor_desc(bias),
        OutputTensor=tensor_desc(out), Mode=CROSS, Direction=FORWARD, DimensionCount=d,
        Strides=[1] * d, Dilations=[dilation] * d, StartPadding=pad, EndPadding=pad,
        OutputPadding=[0] * d, GroupCount=5), [x, w, bias], [out])
    padded = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    want = np.broadcast_to(bias, out.shape).copy()
    for tap in np.ndindex(*kernel):
        window = tuple(slice(t * dilation, t * dilation + o) for t, o in zip(tap, out_sp))
        product = (w[:, 0][(slice(None), *tap)].reshape((1, 5) + (1,) * d)
                   * padded[(slice(None), slice(None), *window)]).astype(np.float32)
        want = (want + product).astype(np.float32)
    assert np.array_equal(out.view(np.uint32), want.view(np.uint32))


def test_a_1x1_filter_reads_the_input_as_it_lies(device):
    """Stride 1, no padding: the input is the column matrix (no im2col), FLOAT16 and padded
    strides included."""
    rng = np.random.default_rng(9)
    for dt in (F32, F16):
        x_sizes, f_sizes = [2, 8, 5, 7], [4, 8, 1, 1]
        got, want, bound = run_case(device, rng, dt, x_sizes, f_sizes, attributes(), True)
        assert_within(got, want, bound, dt)


def test_tiles_give_the_same_bytes_at_any_thread_count_and_without_the_direct_blas(
        device, monkeypatch):
    """The tile path (kernels.conv_tiles: im2col per tile, one single-threaded sgemm each)
    cuts positions from the shape alone, so the thread count changes no byte; the whole-input
    im2col path (no CBLAS entry point) agrees within the bound."""
    import numba

    from emulator.compute import blas

    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 8, 70, 70)).astype(np.float32)  # two tiles per image
    w = rng.standard_normal((6, 8, 3, 3)).astype(np.float32)
    bias = rng.standard_normal((1, 6, 1, 1)).astype(np.float32)
    attrs = attributes(start=(1, 0), end=(2, 1))

    def run():
        out = np.zeros((2, 6, 71, 69), np.float32)
        device.execute(DML_CONVOLUTION_OPERATOR_DESC(
            InputTensor=tensor_desc(x), FilterTensor=tensor_desc(w),
            BiasTensor=tensor_desc(bias), OutputTensor=tensor_desc(out), **attrs),
            [x, w, bias], [out])
        return out

    before = numba.get_num_threads()
    try:
        results = []
        for threads in sorted({1, before}):
            numba.set_num_threads(threads)
            results.append(run())
    finally:
        numba.set_num_threads(before)
    assert all((r.view(np.uint32) == results[0].view(np.uint32)).all() for r in results)
    # The tiles ran single-threaded sgemm calls; NumPy's own products are left at Numba's count.
    from threadpoolctl import threadpool_info

    assert [i["num_threads"] for i in threadpool_info()
            if i["filepath"] == blas.library_path()] == [numba.get_num_threads()]
    monkeypatch.setattr(blas, "DIRECT", False)
    want = convolve(x.astype(np.float64), w.astype(np.float64), SimpleNamespace(**attrs)) + bias
    np.testing.assert_allclose(run(), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(results[0], want, rtol=1e-4, atol=1e-4)
