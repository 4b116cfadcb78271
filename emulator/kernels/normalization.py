"""Mean-variance normalization (MVN2, MVN1, MVN) with a fused activation epilogue.

One task per group (every coordinate outside the normalized axes). Statistics are float64: the
group is shifted by its first element (so a large common offset cancels before squaring) and
summed row by row with reassociation allowed (``jit.reduction``), which vectorises; one thread
sums a whole group, so the bytes do not depend on the thread count. Normalization runs in
float32 with the mean split into a float32 pair (hi + lo), so ``x - mean`` stays exact for
inputs far from zero:

    y = ((x - mean_hi) - mean_lo) * (inv_std * scale) + bias,   then the activation, then store.

Axis dimensions arrive collapsed; the last one is the inner loop, processed in blocks.

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

from .activation import IDENTITY, RELU, activate
from .floats import load32, load64, store
from .index import offsets4
from .jit import kernel, prange, reduction

ROW_BLOCK = 2048


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


@kernel
def mvn(x, y, scale, bias, g_sizes, g_in, g_out, g_scale, g_bias, a_sizes, a_in, a_out,
        a_scale, a_bias, count, has_scale, has_bias, use_mean, normalize_variance, eps, kind,
        p0, p1):  # pragma: no cover
    groups = np.int64(1)
    for k in range(g_sizes.shape[0]):
        groups *= g_sizes[k]
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
    for g in prange(groups):
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
        buf = np.empty(min(inner, ROW_BLOCK), np.float32)
        for r in range(rows):
            ri, ro, rs, rb = offsets4(r, lead, a_in, a_out, a_scale, a_bias)
            for j0 in range(0, inner, ROW_BLOCK):
                n = np.uint64(min(inner - j0, ROW_BLOCK))
                xb = np.uint64(gi + ri) + np.uint64(j0) * xs
                sb = np.uint64(gs + rs) + np.uint64(j0) * ss
                bb = np.uint64(gb + rb) + np.uint64(j0) * bs
                yb = np.uint64(go + ro) + np.uint64(j0) * ys
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
                            store(y, yb + j, v)  # store came out wrong: keep it a statement)
                    else:
                        for j in range(n):
                            v = ((load32(x, xb + j) - hi) - lo) * a + b
                            store(y, yb + j, v)
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
                            store(y, yb + j, v)
                    else:
                        for j in range(n):
                            v = ((load32(x, xb + j) - hi) - lo) * (inv * load32(scale, sb + j)) \
                                + load32(bias, bb + j)
                            store(y, yb + j, v)
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
                            store(y, yb + j, buf[j])
                    else:
                        for j in range(n):
                            store(y, yb + j * ys, buf[j])
