"""ACTIVATION_SOFTMAX1, LOG_SOFTMAX1 and HARDMAX1 (5_1): over a set of axes, any rank 1-8.

Bounds (``bound``): LOG_SOFTMAX within 1 ULP of the correctly rounded result, for FLOAT32 and
FLOAT16: it computes in float64 (exp with a relative error below 2**-44, sums of at most a few
thousand positive terms, log1p of the sum less its exact 1), so its value before the one
rounding is within 1e-12 relative of the exact one. SOFTMAX within 2 ULP for FLOAT32 and 1 ULP
for FLOAT16: a group at a time it computes in float32 (exp(x - m) with the difference exact,
within 1.1 ULP; the sum in float64; each exp times 1/sum rounded once), tiles of groups along
a strided axis in float64 as LOG_SOFTMAX does. The reference is the page's formula in long double (64-bit significand);
LOG_SOFTMAX's log of the sum is written log1p(sum - 1) with the 1 (the maximum's own term) left
out of the sum, the same value, so the reference keeps its own precision where one element
dominates. HARDMAX is exact. Also: the HARDMAX1 page's examples, version 1 over the last axis
equal to version 0 bit for bit, both kernel modes (a group at a time; tiles of groups when the
reduced axis is strided) with their long-group paths, padded and zero strides, output gaps
untouched, NaN/±inf/±0, and the same bytes at any thread count.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

from descriptors import *
from emulator import DMLCreateDevice1
from emulator.ops.softmax import axes_function
from emulator.reduction.softmax_kernels import BLOCK, TILE_SCRATCH

from .helpers import SENTINEL, addressed_mask, bits, desc, layout, logical, strided_buffer
from .test_activations import INF_ROWS, ulps

F32, F16 = DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16
DTYPES = {F32: np.float32, F16: np.float16}
CLASSES = (DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC, DML_ACTIVATION_LOG_SOFTMAX1_OPERATOR_DESC,
           DML_ACTIVATION_HARDMAX1_OPERATOR_DESC)
VERSION_0 = (DML_ACTIVATION_SOFTMAX_OPERATOR_DESC, DML_ACTIVATION_LOG_SOFTMAX_OPERATOR_DESC,
             DML_ACTIVATION_HARDMAX_OPERATOR_DESC)
MODES = ["SOFTMAX1", "LOG_SOFTMAX1", "HARDMAX1"]


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="5_1")


def op(mode, i, o, axes):
    return DML_OPERATOR_DESC(Desc=CLASSES[mode](InputTensor=i, OutputTensor=o, Axes=list(axes)))


def exact(x: np.ndarray, axes, mode: int) -> np.ndarray:
    """The page's formulas in long double, over the axes flattened in row-major order:
    exp(x_i - m) / sum_j exp(x_j - m) and its ln, (x_i - m) - log1p(sum over j != k of
    exp(x_j - m)), k the first maximum (finite inputs); HARDMAX from the module's reference."""
    if mode == 2:
        return axes_function(x.astype(np.float64), axes, 2)
    reduced = sorted(set(axes))
    kept = [d for d in range(x.ndim) if d not in reduced]
    t = np.transpose(x, kept + reduced)
    rows = t.reshape((*t.shape[:len(kept)], -1)).astype(np.longdouble)
    m = rows.max(axis=-1, keepdims=True)
    e = np.exp(rows - m)
    first = np.arange(rows.shape[-1]) == rows.argmax(axis=-1)[..., None]
    rest = np.where(first, 0, e).sum(axis=-1, keepdims=True)
    y = e / (1 + rest) if mode == 0 else (rows - m) - np.log1p(rest)
    return np.transpose(y.reshape(t.shape), np.argsort(kept + reduced))


def run(device, rng, mode, dt, sizes, axes, values=None, in_strides=None, out_strides=None):
    """One dispatch on strided buffers (random bytes in the input's gaps, sentinels in the
    output's); checks the bound and the untouched gaps, returns (output, input) logically."""
    dtype = DTYPES[dt]
    raw_in = strided_buffer(rng, dt, sizes, in_strides)
    x = logical(raw_in, dtype, sizes, in_strides)
    # (Through zero strides one element is written many times; x reads back what is there.)
    x[...] = np.asarray(rng.standard_normal(sizes) * 3 if values is None else values, dtype)
    raw_out = strided_buffer(rng, dt, sizes, out_strides, fill=SENTINEL)
    device.execute(op(mode, desc(dt, sizes, in_strides), desc(dt, sizes, out_strides), axes),
                   [raw_in], [raw_out])
    got = logical(raw_out, dtype, sizes, out_strides)
    untouched = ~addressed_mask(raw_out.size, np.dtype(dtype).itemsize, sizes, out_strides)
    assert (raw_out[untouched] == SENTINEL).all(), "a gap of the output was written"
    return got.copy(), np.array(x)


def bound(mode: int, dtype) -> int:
    """The ULP bound of a mode's results of this type (the module's docstring)."""
    return 2 if mode == 0 and np.dtype(dtype) == np.float32 else 1


def check(got, x, axes, mode, what=""):
    want = exact(x, axes, mode).astype(got.dtype)
    if mode == 2:
        np.testing.assert_array_equal(got, want, err_msg=str(what))
    else:
        assert ulps(got, want).max() <= bound(mode, got.dtype), (what, ulps(got, want).max())


# -- the page's examples ----------------------------------------------------------------------------
PAGE_INPUT = [[[12, 0], [-101, 11]], [[3, 234], [0, -101]]]
PAGE_EXAMPLES = [
    ((1,), [[[1, 0], [0, 1]], [[1, 1], [0, 0]]]),
    ((0,), [[[1, 0], [0, 1]], [[0, 1], [1, 0]]]),
    ((0, 2), [[[0, 0], [0, 1]], [[0, 1], [0, 0]]]),
]


@pytest.mark.parametrize("axes,want", PAGE_EXAMPLES, ids=["axes 1", "axes 0", "axes 0 2"])
def test_hardmax1_page_examples(device, axes, want):
    x = np.array(PAGE_INPUT, np.float32)
    [y] = device.execute(op(2, tensor_desc(x), tensor_desc(x), axes), [x])
    np.testing.assert_array_equal(y, np.array(want, np.float32))


@pytest.mark.parametrize("mode", range(3), ids=MODES)
@pytest.mark.parametrize("dt", [F32, F16], ids=["FLOAT32", "FLOAT16"])
def test_version_1_over_the_last_axis_is_version_0(device, mode, dt):
    """The pages: equivalent to the version-0 operator when Axes is {DimensionCount - 1}."""
    x = (np.random.default_rng(mode).standard_normal((1, 1, 6, 37)) * 4).astype(DTYPES[dt])
    x[0, 0, 1, [3, 9]] = 30
    [a] = device.execute(op(mode, tensor_desc(x), tensor_desc(x), [3]), [x])
    [b] = device.execute(DML_OPERATOR_DESC(Desc=VERSION_0[mode](
        InputTensor=tensor_desc(x), OutputTensor=tensor_desc(x))), [x])
    np.testing.assert_array_equal(bits(a), bits(b))
    check(a, x, [3], mode)


# -- accuracy over ranks, axis sets and layouts -----------------------------------------------------
def axis_sets(rng, rank):
    """Contiguous, scattered, all, and unsorted with repeats."""
    yield [rank - 1]
    yield list(range(rank))
    if rank >= 3:
        yield [0, rank - 1]
    k = int(rng.integers(1, rank + 1))
    yield [int(a) for a in rng.choice(rank, size=k + 1, replace=True)]


@pytest.mark.parametrize("mode", range(3), ids=MODES)
@pytest.mark.parametrize("dt", [F32, F16], ids=["FLOAT32", "FLOAT16"])
def test_every_rank_axis_set_and_layout(device, mode, dt):
    rng = np.random.default_rng(10 * mode + int(dt))
    for rank in range(1, 9):
        for axes in axis_sets(rng, rank):
            sizes = [int(rng.integers(1, {1: 40, 2: 12, 3: 7, 4: 5}.get(rank, 3) + 1))
                     for _ in range(rank)]
            in_strides, out_strides = layout(rng, sizes, True), layout(rng, sizes, False)
            got, x = run(device, rng, mode, dt, sizes, axes, None, in_strides, out_strides)
            check(got, x, axes, mode, (sizes, axes, in_strides, out_strides))


# Shapes that reach each path: groups at a time (rows gathered across reduced dimensions; longer
# than a block), tiles of groups (one chunk; several chunks), and a reduced axis of size 1.
PATHS = [
    ((6, 3, 40), (0, 2)),                      # groups: reduced dims not adjacent
    ((3, 50, 7, 20), (1, 3)),                  # groups of 1,000 gathered from 50 rows
    ((3, BLOCK + 900), (1,)),                  # groups longer than a block
    ((2, 60, 3, 40), (1, 3)),                  # 2,400 in rows of 40: blocks end mid-row
    ((5, 70, 30), (1,)),                       # tiles of neighbouring groups, one chunk
    ((TILE_SCRATCH // 8 + 300, 12), (0,)),     # tiles of 8 groups, several chunks
    ((2, 900, 3, 16), (1, 2)),                 # tiles, 900 x 3 reduced, several chunks
    ((4, 1, 9), (1,)),                         # one element per group
]


@pytest.mark.parametrize("sizes,axes", PATHS, ids=[str(p) for p in PATHS])
@pytest.mark.parametrize("mode", range(3), ids=MODES)
def test_both_kernel_modes(device, sizes, axes, mode):
    rng = np.random.default_rng(len(sizes) + mode)
    for dt in (F32, F16):
        values = rng.standard_normal(sizes) * 3
        flat = values.reshape(-1)
        flat[rng.choice(flat.size, min(flat.size, 40))] = flat.max()  # HARDMAX ties
        got, x = run(device, rng, mode, dt, list(sizes), axes, values)
        check(got, x, axes, mode, (sizes, axes))
        got, x = run(device, rng, mode, dt, list(sizes), axes, late_maximum(rng, sizes, axes))
        check(got, x, axes, mode, (sizes, axes, "late maximum"))


def late_maximum(rng, sizes, axes) -> np.ndarray:
    """Random values whose maximum is tied at the last two elements of every group (row-major
    over the reduced axes): found in the last block or chunk."""
    reduced = sorted(set(axes))
    kept = [d for d in range(len(sizes)) if d not in reduced]
    t = np.transpose(rng.standard_normal(sizes) * 3, kept + reduced).copy()
    rows = t.reshape(-1, int(np.prod([sizes[d] for d in reduced])))
    rows[:, -2:] = 20
    return np.transpose(rows.reshape(t.shape), np.argsort(kept + reduced))


def test_hardmax1_first_is_row_major_over_the_reduced_axes(device):
    """Ties across axes: the first in the row-major order of the reduced axes (the page's
    arg-max index within Axes), whatever order Axes lists them in."""
    x = np.zeros((3, 2, 4), np.float32)
    x[1, 0, 2] = x[0, 1, 2] = x[2, 0, 2] = 5  # group (·, ·, 2) over axes {0, 1}
    for axes in ([0, 1], [1, 0], [1, 0, 1]):
        [y] = device.execute(op(2, tensor_desc(x), tensor_desc(x), axes), [x])
        assert y[:, :, 2].tolist() == [[0, 1], [0, 0], [0, 0]], axes  # (0, 1) before (1, 0)
        assert (y[0, 0, [0, 1, 3]] == 1).all() and y.sum() == 4


@pytest.mark.parametrize("axes", [(1,), (0,)], ids=["groups", "tiles"])
def test_log_softmax_of_a_dominant_element_keeps_its_small_log(device, axes):
    """ln(sum) for a sum of 1 + 1e-13: log1p of the small part, not log of the rounded sum."""
    x = np.array([[0, -30, -30, -35, -32, -31]] * 4, np.float32)
    x = x if axes == (1,) else np.ascontiguousarray(x.T)
    [y] = device.execute(op(1, tensor_desc(x), tensor_desc(x), axes), [x])
    want = exact(x, axes, 1).astype(np.float32)
    assert ulps(y, want).max() <= 1
    rest = float(np.exp(np.array([-30, -30, -35, -32, -31], np.longdouble)).sum())
    assert want.flat[0] == np.float32(-rest)
    naive = -np.log(np.exp(x.astype(np.float64)).sum(axis=axes[0]))  # 1 + rest rounded first
    assert ulps(naive.astype(np.float32)[:1], want.flat[:1]).max() > 1000


@pytest.mark.parametrize("dt", [F32, F16], ids=["FLOAT32", "FLOAT16"])
def test_softmax_keeps_the_difference_from_the_maximum_exact(device, dt):
    """Groups whose elements lie far below their maximum, at magnitudes where x - m rounds in
    float32 (e.g. 60.1 - 0.3): exp(x - m) of the rounded difference would be up to ~10^2 ULP
    off, the kernel's stays within the bound (and is not merely lucky: the rounded difference
    is checked to miss it)."""
    rng = np.random.default_rng(7)
    dtype = DTYPES[dt]
    top = rng.uniform(0.1, 70, (64, 1))
    x = np.concatenate([top, top - rng.uniform(0, 80, (64, 300)) * rng.uniform(0.5, 1, 300)],
                       axis=1).astype(dtype)
    [y] = device.execute(op(0, tensor_desc(x), tensor_desc(x), [1]), [x])
    want = exact(x, [1], 0).astype(dtype)
    assert ulps(y, want).max() <= bound(0, dtype)
    if dt == F32:
        m = x.max(axis=1, keepdims=True)
        e = np.exp((x - m).astype(np.float64))  # the difference rounded to float32 first
        rounded = (e / np.exp(x.astype(np.float64) - m).sum(axis=1, keepdims=True))
        assert ulps(rounded.astype(np.float32), want).max() > 8


# -- edge values ------------------------------------------------------------------------------------
ZERO_ROWS = [  # (row, SOFTMAX, LOG_SOFTMAX, HARDMAX): -0 equals +0
    ([-0.0, 0.0, -0.0, 0.0], [0.25] * 4, [-2 * float(np.log(2))] * 4, [1, 0, 0, 0]),
    ([np.nan, np.inf, 1.0, np.nan], [np.nan] * 4, [np.nan] * 4, [1, 0, 0, 0]),
    ([1.0, np.nan, np.inf, 1.0], [np.nan] * 4, [np.nan] * 4, [0, 1, 0, 0]),
]


@pytest.mark.parametrize("mode", range(3), ids=MODES)
@pytest.mark.parametrize("dt", [F32, F16], ids=["FLOAT32", "FLOAT16"])
def test_nan_infinities_and_zeros_in_both_kernel_modes(device, mode, dt):
    """The module's decisions (NaN or +inf in a group, or only -inf: NaN; -inf beside finite
    values: 0; HARDMAX's first maximum, NaN highest), along the contiguous last axis and along
    a strided first axis (tiles of groups)."""
    from .test_activations import assert_edges

    cases = INF_ROWS + ZERO_ROWS
    x = np.array([c[0] for c in cases], DTYPES[dt])
    [rows] = device.execute(op(mode, tensor_desc(x), tensor_desc(x), [1]), [x])
    xt = np.ascontiguousarray(x.T)
    [cols] = device.execute(op(mode, tensor_desc(xt), tensor_desc(xt), [0]), [xt])
    for k, case in enumerate(cases):
        assert_edges(rows[k], case[1 + mode], f"row {k}")
        assert_edges(cols[:, k], case[1 + mode], f"column {k}")


# -- threads ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("sizes,axes", [((64, 256), (0,)), ((300, 33), (1,))],
                         ids=["tiles", "groups"])
def test_the_same_bytes_at_any_thread_count(device, sizes, axes):
    """Tiles narrow and group ranges shrink with more threads; no result changes."""
    x = (np.random.default_rng(5).standard_normal(sizes) * 3).astype(np.float32)
    before = numba.get_num_threads()
    outs = []
    try:
        for threads in sorted({1, before}):
            numba.set_num_threads(threads)
            for mode in range(3):
                outs.append((threads, mode, device.execute(
                    op(mode, tensor_desc(x), tensor_desc(x), axes), [x])[0]))
    finally:
        numba.set_num_threads(before)
    for threads, mode, y in outs:
        np.testing.assert_array_equal(bits(y), bits(outs[mode][2]), err_msg=str(threads))
