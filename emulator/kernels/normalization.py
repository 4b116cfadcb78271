"""Mean-variance normalization (MVN2, MVN1, MVN) with a fused activation epilogue.

A group is every coordinate outside the normalized axes; a task holds whole groups. Statistics
are float64: the group is shifted by its first element (so a large common offset cancels before
squaring) and summed row by row with reassociation allowed (``jit.reduction``), which
vectorises; one thread sums a whole group, so the bytes do not depend on the thread count.
Normalization runs in float32 with the mean split into a float32 pair (hi + lo), so
``x - mean`` stays exact for inputs far from zero:

    y = ((x - mean_hi) - mean_lo) * (inv_std * scale) + bias,   then the activation, then store.

Axis dimensions arrive collapsed; the last one is the inner loop, processed in blocks.

``mvn_task`` is a task kernel (``kernels/tasks.py``: on the worker pool, a task per block of
groups), x and y the storage type (float32, or uint16 bits for FLOAT16), Scale and Bias (the
same type) the launch's w and z; its argument block (``mvn_block``) holds the scalars and the
collapsed sizes and strides.

``use_mean`` False (MVN2 without UseMean): the mean is 0, so nothing is shifted or subtracted
and the variance is the mean of the squares (the RMS normalization); with neither the mean nor
the variance, the statistics are not computed.

Non-finite inputs follow the formula element by element: a group holding +inf (and no -inf or NaN)
has mean +inf, so without NormalizeVariance its finite elements give -inf and its +inf elements
inf - inf = NaN; its variance is NaN, so with NormalizeVariance the group is NaN. The shift is then
0 (a +inf shift would turn every difference into NaN) and the mean is not split (its low part
would be inf - inf). A variance of 0 with Epsilon 0 gives 0/0 = NaN, as the formula does.
"""

from __future__ import annotations

import math

import numpy as np
from numba import carray

from .activation import IDENTITY, RELU, activate
from .floats import bits_double, load32, load64, store
from .index import offsets4
from .jit import inline, reduction
from .stream import store_fence, stream_copy
from .strided import pointer_like
from .tasks import HEAD, W, Z, block

ROW_BLOCK = 2048
# The argument block's fields (after HEAD): the lengths of x, y, scale and bias (set at each
# dispatch), the group and axis ranks, the scalars (EPS, P0, P1: float64 bits), then the
# group part's sizes and its input, output, scale and bias strides, then the axis part's.
XN, YN, SN, BN, GD, AD, COUNT, HAS_SCALE, HAS_BIAS, USE_MEAN, NORMALIZE_VARIANCE, KIND, EPS, \
    P0, P1, GROUPS, GROUP_BLOCK, STREAM = range(18)
FIELDS = 18
# A FLOAT32 output of STREAM_BYTES or more (more than the caches can hold) with rows of at
# least STREAM_ROW contiguous elements is normalized into a buffer in L1 and written with
# non-temporal stores (kernels/stream.py). A task holds about TASK_ELEMENTS elements of groups
# (leaving at least 256 tasks), so that its one store fence and its buffers are cheap. Measured
# on two instances of the 16-core Xeon, [8192, 4096] LayerNorm (128 MiB out), ms at 16 / 2
# threads: FLOAT32 streamed 3.99 / 21.5 and 4.19 / 21.2, cached 5.00 / 23.9 and 3.82 / 23.8;
# FLOAT16 streamed 3.05 / 16.8 and 2.70 / 14.7, cached 2.66 / 15.1 and 2.28 / 14.3 (so FLOAT16
# is not streamed); one group a task instead of blocks, cached: 5.22 / 24.6 (FLOAT32) and
# 2.76 / 15.8 (FLOAT16). (The batch-normalization family's affine pass does not stream:
# reduction/norms.py.)
STREAM_BYTES = 64 << 20
STREAM_ROW = 256
TASK_ELEMENTS = 1 << 16


def mvn_block(g, a, count: int, has_scale: bool, has_bias: bool, use_mean: bool,
              normalize_variance: bool, eps: float, kind: int, p0: float, p1: float,
              element_size: int) -> tuple[np.ndarray, int]:
    """The argument block of ``mvn_task`` (g, a: the five rows of each part; XN .. BN 0) and
    the task count."""
    groups = int(np.prod(g[0]))
    stream = (element_size == 4 and groups * count * element_size >= STREAM_BYTES
              and int(a[2][-1]) == 1 and int(a[0][-1]) >= STREAM_ROW)
    per_task = max(1, min(TASK_ELEMENTS // count, groups // 256))
    bits = [int(np.float64(v).view(np.int64)) for v in (eps, p0, p1)]
    head = [0, 0, 0, 0, len(g[0]), len(a[0]), count, has_scale, has_bias, use_mean,
            normalize_variance, kind, *bits, groups, per_task, stream]
    return (block([*head, *(int(v) for part in (g, a) for row in part for v in row)]),
            -(-groups // per_task))


@reduction
def row_sums(x, base, xs, n, shift):  # pragma: no cover
    """Sum of d = x - shift and of d² over one row, in float64."""
    s1 = 0.0
    s2 = 0.0
    if xs == 1:
        for j in range(np.uint64(n)):
            d = load64(x, base + j) - shift
            s1 += d
            s2 += d * d
    else:
        for j in range(np.uint64(n)):
            d = load64(x, base + j * xs) - shift
            s1 += d
            s2 += d * d
    return s1, s2


def mvn_task(xp, yp, pp, task):  # pragma: no cover - compiled
    """Task ``task``'s block of groups: each group's statistics, then its normalized
    elements."""
    h = carray(pp, HEAD + FIELDS)
    f = h[HEAD:]
    gd, ad = f[GD], f[AD]
    p = carray(pp, HEAD + FIELDS + 5 * (gd + ad))[HEAD + FIELDS:]
    q = p[5 * gd:]
    x, y = carray(xp, f[XN]), carray(yp, f[YN])
    stream = f[STREAM] != 0
    buf = np.empty(ROW_BLOCK, np.float32)
    out = np.empty(ROW_BLOCK if stream else 1, y.dtype)  # the streamed row piece
    per = f[GROUP_BLOCK]
    for g in range(task * per, min(f[GROUPS], (task + 1) * per)):
        _group(x, y, carray(pointer_like(h[W], xp), f[SN]), carray(pointer_like(h[Z], xp), f[BN]),
               g, p[:gd], p[gd:2 * gd], p[2 * gd:3 * gd], p[3 * gd:4 * gd], p[4 * gd:5 * gd],
               q[:ad], q[ad:2 * ad], q[2 * ad:3 * ad], q[3 * ad:4 * ad], q[4 * ad:5 * ad],
               f[COUNT], f[HAS_SCALE] != 0, f[HAS_BIAS] != 0, f[USE_MEAN] != 0,
               f[NORMALIZE_VARIANCE] != 0, bits_double(f[EPS]), f[KIND], bits_double(f[P0]),
               bits_double(f[P1]), buf, stream, out)
    if stream:
        store_fence()


@inline
def _group(x, y, scale, bias, g, g_sizes, g_in, g_out, g_scale, g_bias, a_sizes, a_in, a_out,
           a_scale, a_bias, count, has_scale, has_bias, use_mean, normalize_variance, eps, kind,
           p0, p1, buf, stream, out):  # pragma: no cover
    """Group ``g`` (buf: float32 scratch of ROW_BLOCK; with ``stream``, contiguous output
    pieces are written to ``out`` and streamed from there)."""
    last = a_sizes.shape[0] - 1
    inner = a_sizes[last]
    rows = np.int64(1)
    for k in range(last):
        rows *= a_sizes[k]
    lead = a_sizes[:last]
    xs = np.uint64(a_in[last])
    ys = np.uint64(a_out[last])
    ss = np.uint64(a_scale[last]) if has_scale else np.uint64(0)
    bs = np.uint64(a_bias[last]) if has_bias else np.uint64(0)
    one = np.float32(1.0)
    zero = np.float32(0.0)
    gi, go, gs, gb = offsets4(g, g_sizes, g_in, g_out, g_scale, g_bias)
    shift = load64(x, np.uint64(gi)) if use_mean else 0.0
    if not math.isfinite(shift):
        shift = 0.0
    s1 = 0.0
    s2 = 0.0
    if use_mean or normalize_variance:
        for r in range(rows):
            ri, _, _, _ = offsets4(r, lead, a_in, a_in, a_in, a_in)
            r1, r2 = row_sums(x, np.uint64(gi + ri), xs, inner, shift)
            s1 += r1
            s2 += r2
    md = s1 / count
    # Without UseMean the mean is 0: the variance is the mean of the squares (RMS).
    var = s2 / count - md * md if use_mean else s2 / count
    if var < 0.0:  # rounding; a NaN variance (a group with ±inf or NaN) stays NaN
        var = 0.0
    mean = shift + md if use_mean else 0.0
    inv = np.float32(1.0 / math.sqrt(var + eps)) if normalize_variance else one
    hi = np.float32(mean)
    lo = np.float32(mean - np.float64(hi)) if math.isfinite(hi) else zero
    for r in range(rows):
        ri, ro, rs, rb = offsets4(r, lead, a_in, a_out, a_scale, a_bias)
        for j0 in range(0, inner, ROW_BLOCK):
            n = np.uint64(min(inner - j0, ROW_BLOCK))
            xb = np.uint64(gi + ri) + np.uint64(j0) * xs
            sb = np.uint64(gs + rs) + np.uint64(j0) * ss
            bb = np.uint64(gb + rb) + np.uint64(j0) * bs
            yb = np.uint64(go + ro) + np.uint64(j0) * ys
            if stream:  # (ys == 1: the plan's rule)
                dst, db = out, np.uint64(0)
            else:
                dst, db = y, yb
            if (ss == 0 and bs == 0 and xs == 1 and ys == 1
                    and kind in (IDENTITY, RELU)):
                # The common case in one loop, without the buffer round trip.
                a = inv * load32(scale, sb) if has_scale else inv
                b = load32(bias, bb) if has_bias else zero
                if kind == RELU:
                    for j in range(n):
                        v = ((load32(x, xb + j) - hi) - lo) * a + b
                        if not v > zero:  # D3D's max(0, v): +0 for NaN and ±0 (a
                            v = zero      # conditional expression passed to the inlined
                        store(dst, db + j, v)  # store came out wrong: keep it a statement)
                else:
                    for j in range(n):
                        v = ((load32(x, xb + j) - hi) - lo) * a + b
                        store(dst, db + j, v)
            elif (ss == 1 and bs == 1 and has_scale and has_bias and xs == 1 and ys == 1
                    and kind in (IDENTITY, RELU)):
                # LayerNorm: Scale and Bias vary along the row (one per column), in one loop.
                # The product is the same (inv * scale) the buffered path forms.
                if kind == RELU:
                    for j in range(n):
                        v = ((load32(x, xb + j) - hi) - lo) * (inv * load32(scale, sb + j)) \
                            + load32(bias, bb + j)
                        if not v > zero:
                            v = zero
                        store(dst, db + j, v)
                else:
                    for j in range(n):
                        v = ((load32(x, xb + j) - hi) - lo) * (inv * load32(scale, sb + j)) \
                            + load32(bias, bb + j)
                        store(dst, db + j, v)
            else:
                if ss == 0 and bs == 0:  # scale and bias constant along the row
                    a = inv * load32(scale, sb) if has_scale else inv
                    b = load32(bias, bb) if has_bias else zero
                    if xs == 1:
                        for j in range(n):
                            buf[j] = ((load32(x, xb + j) - hi) - lo) * a + b
                    else:
                        for j in range(n):
                            buf[j] = ((load32(x, xb + j * xs) - hi) - lo) * a + b
                elif xs == 1 and ss == 1 and bs == 1:  # per-element scale and bias
                    for j in range(n):
                        v = (load32(x, xb + j) - hi) - lo
                        buf[j] = v * (inv * load32(scale, sb + j)) + load32(bias, bb + j)
                else:
                    for j in range(n):
                        v = (load32(x, xb + j * xs) - hi) - lo
                        a = inv * load32(scale, sb + j * ss) if has_scale else inv
                        b = load32(bias, bb + j * bs) if has_bias else zero
                        buf[j] = v * a + b
                activate(kind, buf, n, p0, p1)
                if ys == 1:
                    for j in range(n):
                        store(dst, db + j, buf[j])
                else:
                    for j in range(n):
                        store(y, yb + j * ys, buf[j])
            if stream:
                stream_copy(y, yb, out, np.uint64(0), n)
