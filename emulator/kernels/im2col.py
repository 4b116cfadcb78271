"""The input windows of a convolution, shared by the compute family's convolution kernels
(``compute/kernels.py``: im2col, the tiles; ``compute/winograd.py``: its direct recomputation),
here in ``kernels/`` because they are inlined into kernels of other modules (the disk cache is
keyed by this folder's sources: ``jit.cache_root``).

``geo`` (int64): N, G, Cg, then per spatial dimension (three, leading ones of size 1): kernel,
output size, input size, stride, dilation, pad, up. An output position ``o`` and filter tap
``k`` read the virtual coordinate ``v = o * stride - pad + k * dilation`` of the input
upsampled by ``up`` (``up - 1`` zeros between elements): the element ``v / up`` where ``v`` is
a multiple of ``up`` inside the input, 0 elsewhere.
"""

from __future__ import annotations

import numpy as np

from .blas_calls import sgemm32, sgemm64
from .floats import load32
from .jit import inline

G_N, G_G, G_CG, G_SPATIAL = 0, 1, 2, 3  # then 7 per spatial dimension
FIELDS = 7  # kernel, out, in, stride, dilation, pad, up


@inline
def _coordinate(geo, d, o, t):  # pragma: no cover - compiled
    """The input index read by output position ``o`` and tap ``t`` along spatial dimension
    ``d``, and whether it exists (inside the input, on an element of the upsampled grid)."""
    base = 3 + d * FIELDS
    v = o * geo[base + 3] - geo[base + 5] + t * geo[base + 4]
    up = geo[base + 6]
    if up == 1:  # (an integer division costs more than the rest of a short line)
        return v, v >= 0 and v < geo[base + 2]
    i = v // up
    return i, v >= 0 and i < geo[base + 2] and v == i * up


@inline
def _inside(v0, step, size, count):  # pragma: no cover - compiled
    """The outputs c in [lo, hi) of a line whose input coordinate v0 + c * step lies in
    [0, size), clamped to [0, count)."""
    if step == 1:
        lo, hi = max(0, -v0), size - v0
    else:
        lo = -(v0 // step) if v0 < 0 else 0
        hi = (size - v0 + step - 1) // step if size > v0 else 0
    hi = min(max(hi, lo), count)
    return min(lo, hi), hi


@inline
def fill_tile(x, xs, geo, n, channel0, first, count, col, at, pitch):  # pragma: no cover
    """The column matrix's rows for one image and group (input channels from ``channel0``),
    restricted to the output positions [first, first + count): row r's position first + c at
    ``col[at + r * pitch + c]``."""
    cg = geo[G_CG]
    k0, k1, k2 = geo[3], geo[3 + FIELDS], geo[3 + 2 * FIELDS]
    o1, o2 = geo[4 + FIELDS], geo[4 + 2 * FIELDS]
    in2 = geo[5 + 2 * FIELDS]
    st2, d2 = geo[6 + 2 * FIELDS], geo[7 + 2 * FIELDS]
    p2, up2 = geo[8 + 2 * FIELDS], geo[9 + 2 * FIELDS]
    taps = k0 * k1 * k2
    s2 = xs[4]
    for row in range(cg * taps):
        tap = row % taps
        t2 = tap % k2
        t1 = (tap // k2) % k1
        t0 = tap // (k2 * k1)
        base = n * xs[0] + (channel0 + row // taps) * xs[1]
        v0 = t2 * d2 - p2
        done = 0
        while done < count:
            p = first + done
            c0 = p % o2
            b = (p // o2) % o1
            a = p // (o2 * o1)
            length = min(o2 - c0, count - done)
            start = at + row * pitch + done
            i0, ok0 = _coordinate(geo, 0, a, t0)
            i1, ok1 = _coordinate(geo, 1, b, t1)
            if not (ok0 and ok1):
                for c in range(length):
                    col[start + c] = np.float32(0.0)
            elif up2 == 1:
                lo, hi = _inside(v0, st2, in2, o2)
                lo = min(max(lo - c0, 0), length)
                hi = min(max(hi - c0, lo), length)
                line = base + i0 * xs[2] + i1 * xs[3] + (v0 + c0 * st2) * s2
                for c in range(lo):
                    col[start + c] = np.float32(0.0)
                step = st2 * s2
                # unsigned offsets, all of them: the copy vectorises (at stride 2 as every
                # other element of two vectors)
                src, dst = np.uint64(line + lo * step), np.uint64(start + lo)
                if step == 1:
                    for c in range(np.uint64(hi - lo)):
                        col[dst + c] = load32(x, src + c)
                elif step == 2:
                    two = np.uint64(2)
                    for c in range(np.uint64(hi - lo)):
                        col[dst + c] = load32(x, src + two * c)
                else:
                    for c in range(np.uint64(hi - lo)):
                        col[dst + c] = load32(x, src + np.uint64(step) * c)
                for c in range(hi, length):
                    col[start + c] = np.float32(0.0)
            else:
                line = base + i0 * xs[2] + i1 * xs[3]
                for c in range(length):
                    v = v0 + (c0 + c) * st2
                    i = v // up2
                    if v >= 0 and i < in2 and v == i * up2:
                        col[start + c] = load32(x, line + i * s2)
                    else:
                        col[start + c] = np.float32(0.0)
            done += length


@inline
def direct_tile(x, xs, geo, w, bias, out, os, gemm, wide, n, g, first, count,
                col):  # pragma: no cover - compiled
    """Output positions [first, first + count) of image ``n`` and group ``g``, directly: their
    column matrix laid out in ``col``, then one single-threaded CBLAS sgemm at address ``gemm``
    (``wide``: 64-bit integers) adds the packed filter ``w`` [G, Cout/G, Cg * taps] x columns
    to ``out`` (float32; element strides ``os``: image, channel; positions at unit stride),
    which first holds the bias (``bias``: one per output channel, or empty)."""
    groups, cg = geo[G_G], geo[G_CG]
    kc = cg * geo[3] * geo[3 + FIELDS] * geo[3 + 2 * FIELDS]
    cog = w.size // (groups * kc)
    fill_tile(x, xs, geo, n, g * cg, first, count, col, 0, count)
    o = n * os[0] + g * cog * os[1] + first
    beta = np.float32(0.0)
    if bias.size > 0:
        for co in range(cog):
            value = bias[g * cog + co]
            row = np.uint64(o + co * os[1])
            for c in range(np.uint64(count)):
                out[row + c] = value
        beta = np.float32(1.0)
    w_at = g * cog * kc * 4
    if wide:
        sgemm64(gemm, cog, count, kc, w, w_at, kc, col, count, beta, out, o * 4, os[1])
    else:
        sgemm32(gemm, cog, count, kc, w, w_at, kc, col, count, beta, out, o * 4, os[1])
