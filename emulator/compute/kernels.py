"""The compute family's own kernels (outside ``kernels/`` so that editing them does not re-key
every cached kernel): ``im2col``, which lays out the input windows of a convolution as the B
matrix of the matrix-multiply core.

One mechanism serves both directions: a convolution reads, for output position ``o`` and filter
tap ``k`` along each spatial dimension, the virtual coordinate ``v = o * stride - pad + k *
dilation`` of its input *upsampled* by ``up`` (``up - 1`` zeros between elements): the element
``v / up`` where ``v`` is a multiple of ``up`` inside the input, 0 elsewhere. A forward
convolution has ``up = 1``; a backward (transposed) one is the forward convolution of the input
upsampled by its Strides, with stride 1 and ``pad = (kernel - 1) * dilation - StartPadding``
(plan in ``conv.py``).

``geo`` (int64): N, G, Cg, then per spatial dimension (three, leading ones of size 1): kernel,
output size, input size, stride, dilation, pad, up. The column matrix is dense float32
[N, G, Cg * kernel taps, output positions], rows in (channel, tap) order, taps row-major.
"""

from __future__ import annotations

import numpy as np

from ..kernels.floats import load32
from ..kernels.jit import inline, kernel, prange

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


@kernel
def im2col(x, xs, geo, col):  # pragma: no cover - compiled
    """``col`` [N, G, Cg * taps, positions] from ``x`` (element strides ``xs``: n, c, then the
    three spatial dimensions')."""
    n_count, groups, cg = geo[G_N], geo[G_G], geo[G_CG]
    k0, k1, k2 = geo[3], geo[3 + FIELDS], geo[3 + 2 * FIELDS]
    o0, o1, o2 = geo[4], geo[4 + FIELDS], geo[4 + 2 * FIELDS]
    taps = k0 * k1 * k2
    positions = o0 * o1 * o2
    rows = n_count * groups * cg * taps
    for row in prange(rows):
        tap = row % taps
        channel = (row // taps) % (groups * cg)
        n = row // (taps * groups * cg)
        t2 = tap % k2
        t1 = (tap // k2) % k1
        t0 = tap // (k2 * k1)
        base = n * xs[0] + channel * xs[1]
        out = row * positions
        for a in range(o0):
            i0, ok0 = _coordinate(geo, 0, a, t0)
            for b in range(o1):
                i1, ok1 = _coordinate(geo, 1, b, t1)
                start = out + (a * o1 + b) * o2
                if not (ok0 and ok1):
                    for c in range(o2):
                        col[start + c] = np.float32(0.0)
                    continue
                line = base + i0 * xs[2] + i1 * xs[3]
                in2 = geo[5 + 2 * FIELDS]
                st2, d2 = geo[6 + 2 * FIELDS], geo[7 + 2 * FIELDS]
                p2, up2 = geo[8 + 2 * FIELDS], geo[9 + 2 * FIELDS]
                v0 = t2 * d2 - p2
                s2 = xs[4]
                if up2 == 1:  # the outputs whose v is inside: one range, copied straight
                    lo, hi = _inside(v0, st2, in2, o2)
                    for c in range(lo):
                        col[start + c] = np.float32(0.0)
                    first = line + v0 * s2
                    step = st2 * s2
                    for c in range(lo, hi):
                        col[start + c] = load32(x, first + c * step)
                    for c in range(hi, o2):
                        col[start + c] = np.float32(0.0)
                else:
                    for c in range(o2):
                        v = v0 + c * st2
                        i = v // up2
                        if v >= 0 and i < in2 and v == i * up2:
                            col[start + c] = load32(x, line + i * s2)
                        else:
                            col[start + c] = np.float32(0.0)


@kernel
def depthwise(x, xs, geo, w, bias, out):  # pragma: no cover - compiled
    """A convolution whose groups each hold one input and one output channel, directly:
    ``out`` [N, C, positions] (dense float32) = bias[c] + the sum over taps (row-major order) of
    w[c, tap] x the input element the tap reads (``geo`` as for im2col, every ``up`` 1)."""
    n_count, channels = geo[G_N], geo[G_G]
    k0, k1, k2 = geo[3], geo[3 + FIELDS], geo[3 + 2 * FIELDS]
    o0, o1, o2 = geo[4], geo[4 + FIELDS], geo[4 + 2 * FIELDS]
    in2 = geo[5 + 2 * FIELDS]
    st2, d2, p2 = geo[6 + 2 * FIELDS], geo[7 + 2 * FIELDS], geo[8 + 2 * FIELDS]
    taps = k0 * k1 * k2
    s2 = xs[4]
    for task in prange(n_count * channels * o0 * o1):
        b = task % o1
        a = (task // o1) % o0
        channel = (task // (o1 * o0)) % channels
        n = task // (o1 * o0 * channels)
        start = ((n * channels + channel) * o0 + a) * o1 * o2 + b * o2
        for c in range(o2):
            out[start + c] = bias[channel]
        base = n * xs[0] + channel * xs[1]
        for tap in range(taps):
            t2 = tap % k2
            t1 = (tap // k2) % k1
            t0 = tap // (k2 * k1)
            i0, ok0 = _coordinate(geo, 0, a, t0)
            i1, ok1 = _coordinate(geo, 1, b, t1)
            if not (ok0 and ok1):
                continue
            weight = w[channel * taps + tap]
            v0 = t2 * d2 - p2
            lo, hi = _inside(v0, st2, in2, o2)
            first = base + i0 * xs[2] + i1 * xs[3] + v0 * s2
            step = st2 * s2
            for c in range(lo, hi):
                out[start + c] += weight * load32(x, first + c * step)
