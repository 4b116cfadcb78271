"""Mean-variance normalization (MVN1, MVN) with a fused activation epilogue.

One task per group (every coordinate outside the normalized axes). Statistics are float64: the
group is shifted by its first element (so a large common offset cancels before squaring) and
summed in 8 independent lanes in a fixed order — vectorisable without reassociation, and the same
bytes whatever the thread count. Normalization runs in float32 with the mean split into a float32
pair (hi + lo), so ``x - mean`` stays exact for inputs far from zero:

    y = ((x - mean_hi) - mean_lo) * (inv_std * scale) + bias,   then the activation, then store.

Axis dimensions arrive collapsed; the last one is the inner loop, processed in blocks.
"""

from __future__ import annotations

import math

import numpy as np

from .activation import activate
from .floats import load32, load64, store
from .jit import helper, kernel, prange

LANES = 8
ROW_BLOCK = 2048


@helper
def offsets4(index, sizes, s0, s1, s2, s3):  # pragma: no cover
    """Element offsets of coordinate number ``index`` of ``sizes`` in four stride sets."""
    o0 = np.int64(0)
    o1 = np.int64(0)
    o2 = np.int64(0)
    o3 = np.int64(0)
    rem = np.int64(index)
    for k in range(sizes.shape[0] - 1, -1, -1):
        c = rem % sizes[k]
        rem //= sizes[k]
        o0 += c * s0[k]
        o1 += c * s1[k]
        o2 += c * s2[k]
        o3 += c * s3[k]
    return o0, o1, o2, o3


@kernel
def mvn(x, y, scale, bias, g_sizes, g_in, g_out, g_scale, g_bias, a_sizes, a_in, a_out,
        a_scale, a_bias, count, has_scale, has_bias, normalize_variance, eps, kind, p0,
        p1):  # pragma: no cover
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
    ss = np.uint64(a_scale[last])
    bs = np.uint64(a_bias[last])
    for g in prange(groups):
        gi, go, gs, gb = offsets4(g, g_sizes, g_in, g_out, g_scale, g_bias)
        shift = load64(x, np.uint64(gi))
        acc1 = np.zeros(LANES, np.float64)
        acc2 = np.zeros(LANES, np.float64)
        for r in range(rows):
            ri, _, _, _ = offsets4(r, lead, a_in, a_in, a_in, a_in)
            base = np.uint64(gi + ri)
            full = inner - inner % LANES
            for j in range(0, full, LANES):
                for lane in range(LANES):
                    d = load64(x, base + np.uint64(j + lane) * xs) - shift
                    acc1[lane] += d
                    acc2[lane] += d * d
            for j in range(full, inner):
                d = load64(x, base + np.uint64(j) * xs) - shift
                acc1[j - full] += d
                acc2[j - full] += d * d
        s1 = 0.0
        s2 = 0.0
        for lane in range(LANES):
            s1 += acc1[lane]
            s2 += acc2[lane]
        md = s1 / count
        var = max(s2 / count - md * md, 0.0)
        mean = shift + md
        inv = np.float32(1.0 / math.sqrt(var + eps)) if normalize_variance else np.float32(1.0)
        hi = np.float32(mean)
        lo = np.float32(mean - np.float64(hi))
        buf = np.empty(min(inner, ROW_BLOCK), np.float32)
        for r in range(rows):
            ri, ro, rs, rb = offsets4(r, lead, a_in, a_out, a_scale, a_bias)
            for j0 in range(0, inner, ROW_BLOCK):
                n = min(inner - j0, ROW_BLOCK)
                xb = np.uint64(gi + ri) + np.uint64(j0) * xs
                sb = np.uint64(gs + rs) + np.uint64(j0) * ss
                bb = np.uint64(gb + rb) + np.uint64(j0) * bs
                for j in range(np.uint64(n)):
                    v = (load32(x, xb + j * xs) - hi) - lo
                    a = inv * load32(scale, sb + j * ss) if has_scale else inv
                    b = load32(bias, bb + j * bs) if has_bias else np.float32(0.0)
                    buf[j] = v * a + b
                activate(kind, buf, n, p0, p1)
                yb = np.uint64(go + ro) + np.uint64(j0) * ys
                for j in range(np.uint64(n)):
                    store(y, yb + j * ys, buf[j])
