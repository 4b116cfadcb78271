"""CONVOLUTION's 3x3 stride-1 path by Winograd's F(2x2, 3x3) (``emulator/compute/winograd.py``).

Its sums are not the direct path's: **the bound** (docs/decisions.md, "Convolution by Winograd's
F(2x2, 3x3)") is the direct bound's form over the *transformed* magnitudes,
``(Cin/G + 9) * 2**-24 * MAG`` plus one rounding to the output type, where MAG is the algorithm
itself run on |x|, |w| with every transform matrix replaced by its absolute values (plus |bias|):
the input transform rounds twice, the filter's once, the product of Cin/G terms is within the
classical bound, and the output transform rounds five times. MAG covers a tile's whole 4x4
patch, so a large input next to an output's window (inside its tile) widens that output's bound:
the adversarial case below holds the path to exactly that. A task whose outputs are not all
finite is the direct path's, within test_convolution's bound (the larger of the two is used).

The tests lower the path's thresholds (channels, tiles a task, tasks) so that small random
shapes take it, count that it ran, and check: random descs (both data types, both modes,
forward and backward at stride 1, groups, asymmetric and negative-equivalent padding, bias,
fused activations, padded layouts) against the float64 reference within that bound; NaN and
infinities (a task whose outputs are not all finite is recomputed directly, so they land
exactly where the reference puts them); a non-finite filter (the whole dispatch direct);
DML_EXECUTION_FLAG_DISABLE_META_COMMANDS (never this path); the same bytes at any thread count.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

from descriptors import *
from emulator import DMLCreateDevice1
from emulator.compute import blas, winograd
from emulator.compute.table import convolve
from emulator.kernels import pool
from emulator.pythonic import run

from .test_convolution import CONV, CROSS, F16, F32, FUSABLE, output_sizes
from .test_gemm import assert_within, dispatch_case, product_bound

T = DML_TENSOR_DATA_TYPE
OP = DML_OPERATOR_TYPE
DTYPES = {F32: np.float32, F16: np.float16}
FORWARD, BACKWARD = DML_CONVOLUTION_DIRECTION_FORWARD, DML_CONVOLUTION_DIRECTION_BACKWARD
B_ABS = np.array([[1, 0, 1, 0], [0, 1, 1, 0], [0, 1, 1, 0], [0, 1, 0, 1]], np.float64)
G_ABS = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, 0.5, 0.5], [0, 0, 1]])
A_ABS = np.array([[1, 1, 1, 0], [0, 1, 1, 1]], np.float64)


FORWARD_PAD1 = {"Mode": CROSS, "Direction": FORWARD, "DimensionCount": 2, "Strides": [1, 1],
                "Dilations": [1, 1], "StartPadding": [1, 1], "EndPadding": [1, 1],
                "OutputPadding": [0, 0], "GroupCount": 1}


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="6_4")


@pytest.fixture
def counted(monkeypatch):
    """Small shapes take the path; returns a list that counts its dispatches."""
    monkeypatch.setattr(blas, "DIRECT", True)
    monkeypatch.setattr(winograd, "MIN_CHANNELS", 1)
    monkeypatch.setattr(winograd, "MIN_TILES", 1)
    calls = []
    original = winograd.run

    def counting(*args):
        calls.append(args[-1])
        return original(*args)

    monkeypatch.setattr(winograd, "run", counting)
    return calls


def forward_equivalent(x_sizes, w, attrs):
    """(compute-oriented filter [Cout, Cin/G, 3, 3], start pads (rows, columns)) of the forward
    cross-correlation a stride-1 convolution is (the emulator's own reading, conv.py)."""
    backward = attrs["Direction"] == BACKWARD
    g = attrs["GroupCount"]
    if backward:  # [Cin, Cout/G, k, k] -> [Cout, Cin/G, k, k]
        cig, cog = w.shape[0] // g, w.shape[1]
        w = w.reshape(g, cig, cog, 3, 3).swapaxes(1, 2).reshape(g * cog, cig, 3, 3)
    if (attrs["Mode"] == CONV) != backward:
        w = w[..., ::-1, ::-1]
    pads = [2 - s if backward else s for s in attrs["StartPadding"]]
    return w, pads


def winograd_magnitude(x, w, bias, attrs, o_sizes):
    """MAG (module doc): F(2x2, 3x3) on |x| and |w| with |Bᵀ|, |G|, |Aᵀ|, plus |bias|."""
    w, pads = forward_equivalent(x.shape, np.abs(w.astype(np.float64)), attrs)
    g = attrs["GroupCount"]
    n, c_in = x.shape[:2]
    oh, ow = o_sizes[2:]
    th, tw = -(-oh // 2), -(-ow // 2)
    rows, cols = 2 * th + 2, 2 * tw + 2
    xp = np.zeros((n, c_in, rows, cols))
    ax = np.abs(x.astype(np.float64))
    for i in range(rows):
        for j in range(cols):
            yi, xj = i - pads[0], j - pads[1]
            if 0 <= yi < x.shape[2] and 0 <= xj < x.shape[3]:
                xp[:, :, i, j] = ax[:, :, yi, xj]
    d = np.empty((n, c_in, th, tw, 4, 4))
    for a in range(4):
        for b in range(4):
            d[..., a, b] = xp[:, :, a:a + 2 * th:2, b:b + 2 * tw:2]
    v = B_ABS @ d @ B_ABS.T
    u = G_ABS @ w @ G_ABS.T  # [Cout, Cin/G, 4, 4]
    cog, cig = w.shape[0] // g, c_in // g
    m = np.concatenate([np.einsum("nctwab,ocab->notwab", v[:, k * cig:(k + 1) * cig],
                                  u[k * cog:(k + 1) * cog]) for k in range(g)], axis=1)
    y = A_ABS @ m @ A_ABS.T  # [n, Cout, th, tw, 2, 2]
    y = y.transpose(0, 1, 2, 4, 3, 5).reshape(n, g * cog, 2 * th, 2 * tw)[:, :, :oh, :ow]
    if bias is not None:
        y = y + np.abs(bias.astype(np.float64)).reshape(1, -1, 1, 1)
    return y


def random_case(rng):
    """(input sizes, filter sizes, attributes) of a random 3x3 stride-1 convolution."""
    g = int(rng.choice([1, 1, 2]))
    cig, cog = int(rng.integers(1, 7)), int(rng.integers(1, 7))
    direction = FORWARD if rng.random() < 0.6 else BACKWARD
    n = int(rng.integers(1, 4))
    h, w = int(rng.integers(1, 12)), int(rng.integers(1, 12))
    top = 3 if direction == FORWARD else 4
    start = [int(rng.integers(0, top)) for _ in range(2)]
    end = [int(rng.integers(0, top)) for _ in range(2)]
    attrs = {"Mode": rng.choice([CROSS, CONV]), "Direction": direction, "DimensionCount": 2,
             "Strides": [1, 1], "Dilations": [1, 1], "StartPadding": start, "EndPadding": end,
             "OutputPadding": [0, 0], "GroupCount": g}
    x = [n, g * cig, h, w]
    f = [g * cog, cig, 3, 3] if direction == FORWARD else [g * cig, cog, 3, 3]
    o = output_sizes(x, f, attrs)
    if min(o[2:]) < 1:
        return random_case(rng)
    return x, f, attrs


def dispatch(device, rng, dt, x_sizes, f_sizes, attrs, act=None, values=None, direct=False):
    """(got, reference, bound, whether the path could take it); ``direct``: the bound is also
    the direct path's where larger (non-finite inputs: tasks recomputed directly)."""
    o_sizes = output_sizes(x_sizes, f_sizes, attrs)
    b_sizes = [1, o_sizes[1], 1, 1]

    made = []

    def make_op(tensors, out, fused):
        made.append(DML_CONVOLUTION_OPERATOR_DESC(**tensors, OutputTensor=out,
                                                  FusedActivation=fused, **attrs))
        return made[-1]

    got, want, arrays, v, fused, slope = dispatch_case(
        device, rng, dt, OP.DML_OPERATOR_CONVOLUTION,
        [("InputTensor", x_sizes), ("FilterTensor", f_sizes), ("BiasTensor", b_sizes)],
        o_sizes, make_op, act, values)
    with np.errstate(invalid="ignore"):  # (a non-finite input: MAG NaN there)
        mag = winograd_magnitude(arrays["InputTensor"], arrays["FilterTensor"],
                                 arrays["BiasTensor"], attrs, o_sizes)
    cig = x_sizes[1] // attrs["GroupCount"]
    bound = product_bound(cig + 7, mag, want, DTYPES[dt], fused, slope)  # (+ 2): (Cin/G + 9)
    if direct:  # test_convolution's bound
        flat = convolve(np.abs(arrays["InputTensor"].astype(np.float64)),
                        np.abs(arrays["FilterTensor"].astype(np.float64)), v) + \
            np.abs(arrays["BiasTensor"].astype(np.float64)).reshape(1, -1, 1, 1)
        bound = np.fmax(bound, product_bound(cig * 9, flat, want, DTYPES[dt], fused, slope))
    # whether the path could take it: the tile path's output layout (positions at unit stride,
    # or the dense scratch), which the random output layout may not give
    plan = device.CreateOperator(made[0]).plan
    return got, want, bound, plan.winograd > 0 and plan.tile_strides is not None


@pytest.mark.parametrize("dt", [F32, F16], ids=["FLOAT32", "FLOAT16"])
def test_random_descs_within_the_transformed_bound(device, counted, monkeypatch, dt):
    rng = np.random.default_rng([int(dt), 3])
    taken = 0
    for case in range(40):
        monkeypatch.setattr(winograd, "TILES", int(rng.integers(1, 40)))
        monkeypatch.setattr(winograd, "TASKS", int(rng.integers(1, 8)))
        monkeypatch.setattr(pool, "ENABLED", bool(case % 2))  # the worker pool, or prange
        x, f, attrs = random_case(rng)
        before = len(counted)
        act = rng.choice(FUSABLE) if rng.random() < 0.3 else None
        got, want, bound, eligible = dispatch(device, rng, dt, x, f, attrs, act)
        assert len(counted) == before + eligible, (case, x, f, attrs)
        assert_within(got, want, bound, (case, x, f, attrs, act))
        taken += eligible
    assert taken >= 30


def test_large_values_beside_a_window_stay_within_the_bound(device, counted):
    """1e30 in every fourth column: outputs whose windows miss them still see them through
    their tile's patch, and the stated bound (MAG over the patch) holds them."""
    rng = np.random.default_rng(7)

    def values(name, sizes):
        v = rng.standard_normal(sizes)
        if name == "InputTensor":
            v[..., 3::4] = 1e30
        return v

    got, want, bound, _ = dispatch(device, rng, F32, [2, 5, 9, 12], [4, 5, 3, 3],
                                   FORWARD_PAD1, values=values)
    assert counted
    assert_within(got, want, bound, "large")


@pytest.mark.parametrize("where", ["input", "filter"])
def test_non_finite_values_land_where_the_reference_puts_them(device, counted, where):
    rng = np.random.default_rng(11)
    attrs = dict(FORWARD_PAD1, Mode=CONV, StartPadding=[1, 0], EndPadding=[0, 1])

    def values(name, sizes):
        v = rng.standard_normal(sizes)
        if name == ("InputTensor" if where == "input" else "FilterTensor"):
            flat = v.reshape(-1)
            picks = rng.choice(flat.size, 3, replace=False)
            flat[picks] = [np.inf, -np.inf, np.nan]
        return v

    got, want, bound, _ = dispatch(device, rng, F32, [2, 4, 10, 9], [5, 4, 3, 3], attrs,
                                   values=values, direct=True)
    assert np.isfinite(want).any() and not np.isfinite(want).all()
    assert (np.isnan(got) == np.isnan(want)).all()
    assert (np.isinf(got) == np.isinf(want)).all()
    fin = np.isfinite(want)
    assert_within(got[fin], want[fin], bound[fin], where)
    if where == "input":
        assert counted  # the path ran; its tasks with non-finite outputs went direct
    else:
        assert not counted  # a non-finite filter: the whole dispatch direct


def conv_desc(x, f, y, attrs):
    return DML_CONVOLUTION_OPERATOR_DESC(
        InputTensor=tensor_desc(x), FilterTensor=tensor_desc(f), OutputTensor=tensor_desc(y),
        **attrs)


def test_disable_meta_commands_takes_the_direct_path(device, counted):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 8, 12, 12)).astype(np.float32)
    f = rng.standard_normal((8, 8, 3, 3)).astype(np.float32)
    y = np.empty_like(x)
    op = device.CreateOperator(conv_desc(x, f, y, FORWARD_PAD1))
    flags = DML_EXECUTION_FLAGS.DML_EXECUTION_FLAG_DISABLE_META_COMMANDS
    direct = run(device, device.CompileOperator(op, flags), [x, f, None], None, op.name)[0]
    assert not counted
    fast = run(device, device.CompileOperator(op), [x, f, None], None, op.name)[0]
    assert len(counted) == 1
    np.testing.assert_allclose(fast, direct, rtol=0, atol=1e-4)


def test_the_same_bytes_at_any_thread_count(device, counted):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 16, 20, 18)).astype(np.float32)
    f = rng.standard_normal((24, 16, 3, 3)).astype(np.float32)
    y = np.empty((3, 24, 20, 18), np.float32)
    desc = conv_desc(x, f, y, FORWARD_PAD1)
    threads = numba.get_num_threads()
    try:
        outs = []
        for t in sorted({1, threads}):
            numba.set_num_threads(t)
            outs.append(run(device, device.CompileOperator(device.CreateOperator(desc)),
                            [x, f, None], None, "CONVOLUTION")[0])
    finally:
        numba.set_num_threads(threads)
    assert len(counted) == len(outs)
    assert all(np.array_equal(o, outs[0]) for o in outs)


@pytest.mark.parametrize(("change", "takes"), [
    ({}, True),
    ({"Strides": [2, 2]}, False),
    ({"Dilations": [1, 2]}, False),
    ({"kernel": 5}, False),
    ({"channels": 4}, False),  # below MIN_CHANNELS
    ({"batch": 1, "size": 6}, False),  # too few tiles a task
])
def test_which_shapes_take_the_path(device, change, takes):
    """The shape alone decides (never the thread count): 3x3, stride 1, dilation 1, channels
    and tiles enough."""
    k = change.get("kernel", 3)
    c = change.get("channels", 16)
    size = change.get("size", 28)
    x = np.zeros((change.get("batch", 4), c, size, size), np.float32)
    attrs = dict(FORWARD_PAD1, **{key: v for key, v in change.items()
                                   if key in ("Strides", "Dilations")})
    pad = (k - 1) // 2
    attrs["StartPadding"] = attrs["EndPadding"] = [pad, pad]
    f = np.zeros((c, c, k, k), np.float32)
    o = output_sizes(list(x.shape), list(f.shape), attrs)
    op = device.CreateOperator(conv_desc(x, f, np.zeros(o, np.float32), attrs))
    assert (op.plan.winograd > 0) == takes
