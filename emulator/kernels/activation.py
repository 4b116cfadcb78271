"""Activation epilogues and the standalone activation kernels.

``activate(kind, buf, n, p0, p1)`` applies one activation (numbered as in ``emulator.activations``)
to ``buf[:n]`` in place; one loop per activation, chosen once per block, so each loop vectorises
where its math allows. It runs in the buffer's precision: float64 for the standalone operators
(results within 1 ULP of the correctly rounded float32/float16), float32 inside MVN. Edge values
follow the page's formula literally, as the table's references do (``emulator.activations``):
comparisons with NaN are false and Direct3D's max/min return the operand that is not NaN, so
RELU, HARD_SIGMOID, THRESHOLDED_RELU, CELU and SHRINK map NaN to a number.

``unary`` runs an elementwise activation over any strides (with an optional per-element slope
for PARAMETERIZED_RELU); ``softmax_rows`` the row-wise SOFTMAX, LOG_SOFTMAX and HARDMAX.
"""

from __future__ import annotations

import math

import numpy as np

from .floats import load64, store
from .index import offsets4
from .jit import helper, kernel, prange

ROW_BLOCK = 2048  # elements converted, activated and stored together
IDENTITY, RELU = 0, 6  # the kinds other kernels special-case (numbers of emulator.activations)


@helper
def softplus(z):  # pragma: no cover
    return max(z, 0.0) + math.log1p(math.exp(-abs(z)))


@helper
def activate(kind, buf, n, p0, p1):  # pragma: no cover
    if kind == IDENTITY:
        return
    if kind == 1:  # LINEAR
        for i in range(n):
            buf[i] = p0 * buf[i] + p1
    elif kind == 2:  # SIGMOID
        for i in range(n):
            buf[i] = 1.0 / (1.0 + math.exp(-buf[i]))
    elif kind == 3:  # HARD_SIGMOID: max(0, min(y, 1)) with D3D's min/max, so NaN gives 1
        for i in range(n):
            y = p0 * buf[i] + p1
            m = y if y < 1.0 else 1.0  # min(y, 1): 1 when y is NaN
            buf[i] = m if m > 0.0 else 0.0  # max(0, m): +0 for m = ±0
    elif kind == 4:  # TANH
        for i in range(n):
            buf[i] = math.tanh(buf[i])
    elif kind == 5:  # SCALED_TANH
        for i in range(n):
            buf[i] = p0 * math.tanh(p1 * buf[i])
    elif kind == RELU:  # max(0, x) with D3D's max: +0 for NaN and ±0 (a select vectorises)
        for i in range(n):
            v = buf[i]
            buf[i] = v if v > 0.0 else 0.0
    elif kind == 7:  # LEAKY_RELU
        for i in range(n):
            v = buf[i]
            buf[i] = v if v >= 0 else p0 * v
    elif kind == 8:  # THRESHOLDED_RELU
        for i in range(n):
            v = buf[i]
            buf[i] = v if v > p0 else 0.0  # NaN > Alpha is false: 0
    elif kind == 9:  # ELU
        for i in range(n):
            v = buf[i]
            buf[i] = v if v >= 0 else p0 * math.expm1(v)
    elif kind == 10:  # CELU: max(0, x) + min(0, Alpha·(exp(x/Alpha) - 1)), D3D's max/min
        for i in range(n):
            v = buf[i]
            t = p0 * math.expm1(v / p0)
            buf[i] = (v if v > 0.0 else 0.0) + (t if t <= 0.0 else 0.0)
    elif kind == 11:  # SCALED_ELU
        for i in range(n):
            v = buf[i]
            # Gamma·(Alpha·exp(x) - Alpha): the difference is +0 at x = ±0, hence the + 0.0
            buf[i] = p1 * v if v > 0 else p1 * (p0 * math.expm1(v) + 0.0)
    elif kind == 12:  # SOFTPLUS
        for i in range(n):
            buf[i] = softplus(p0 * buf[i]) / p0
    elif kind == 13:  # PARAMETRIC_SOFTPLUS
        for i in range(n):
            buf[i] = p0 * softplus(p1 * buf[i])
    elif kind == 14:  # SOFTSIGN (±inf: inf/inf = NaN, as the formula says)
        for i in range(n):
            v = buf[i]
            buf[i] = v / (1.0 + abs(v))
    elif kind == 15:  # SHRINK
        for i in range(n):
            v = buf[i]
            buf[i] = v - p0 if v > p1 else (v + p0 if v < -p1 else 0.0)  # NaN: 0
    elif kind == 16:  # GELU (-inf: -inf·0 = NaN, as the formula says)
        for i in range(n):
            v = buf[i]
            buf[i] = 0.5 * v * math.erfc(-v * 0.7071067811865476)
    elif kind == 17:  # SWISH: x·sigmoid(SigmoidInputScale·x)
        for i in range(n):
            v = buf[i]
            buf[i] = v * (1.0 / (1.0 + math.exp(-(p0 * v))))
    elif kind == 18:  # HARD_SWISH: x·HardSigmoid(x), HardSigmoid as kind 3
        for i in range(n):
            v = buf[i]
            y = p0 * v + p1
            m = y if y < 1.0 else 1.0
            buf[i] = v * (m if m > 0.0 else 0.0)


@kernel
def unary(x, x_base, slope, slope_base, y, y_base, sizes, x_strides, slope_strides, y_strides,
          kind, p0, p1, has_slope):  # pragma: no cover
    """y = activation(x) elementwise over any strides; with ``has_slope``, PARAMETERIZED_RELU:
    y = x if x >= 0 else slope * x."""
    rank = sizes.shape[0]
    inner = sizes[rank - 1]
    xs, ss, ys = x_strides[rank - 1], slope_strides[rank - 1], y_strides[rank - 1]
    rows = np.int64(1)
    for k in range(rank - 1):
        rows *= sizes[k]
    blocks = (inner + ROW_BLOCK - 1) // ROW_BLOCK
    for task in prange(rows * blocks):
        row = task // blocks
        j0 = (task - row * blocks) * ROW_BLOCK
        n = min(inner, j0 + ROW_BLOCK) - j0
        xr, sr, yr, _ = offsets4(row, sizes[: rank - 1], x_strides, slope_strides, y_strides,
                                 y_strides)
        xo, so, yo = x_base + j0 * xs + xr, slope_base + j0 * ss + sr, y_base + j0 * ys + yr
        buf = np.empty(n, np.float64)
        for j in range(n):
            buf[j] = load64(x, xo + j * xs)
        if has_slope:
            for j in range(n):
                v = buf[j]
                if v < 0:
                    buf[j] = load64(slope, so + j * ss) * v
        else:
            activate(kind, buf, n, p0, p1)
        for j in range(n):
            store(y, yo + j * ys, buf[j])


@kernel
def softmax_rows(x, y, lead_sizes, x_lead, y_lead, width, xs, ys, mode):  # pragma: no cover
    """Row-wise over the last dimension: mode 0 SOFTMAX, 1 LOG_SOFTMAX, 2 HARDMAX.

    Computed in float64 with the row maximum subtracted; a row holding NaN or +inf, or all -inf,
    is NaN (the formula's inf/inf and 0/0); HARDMAX marks the first maximum (NaN ranks highest,
    as in TOP_K)."""
    rows = np.int64(1)
    for k in range(lead_sizes.shape[0]):
        rows *= lead_sizes[k]
    for row in prange(rows):
        xo, yo, _, _ = offsets4(row, lead_sizes, x_lead, y_lead, y_lead, y_lead)
        buf = np.empty(width, np.float64)
        best = 0
        for j in range(width):
            v = load64(x, xo + j * xs)
            buf[j] = v
            b = buf[best]
            if (v != v and b == b) or v > b:
                best = j
        m = buf[best]
        if mode == 2:
            for j in range(width):
                buf[j] = 1.0 if j == best else 0.0
        elif m != m or math.isinf(m):  # sum(exp) is NaN, +inf (inf/inf) or 0 (0/0)
            for j in range(width):
                buf[j] = math.nan
        else:  # finite maximum: -inf elements give exp = 0 (LOG_SOFTMAX: -inf)
            total = 0.0
            for j in range(width):
                total += math.exp(buf[j] - m)
            for j in range(width):
                d = buf[j] - m
                buf[j] = math.exp(d) / total if mode == 0 else d - math.log(total)
        for j in range(width):
            store(y, yo + j * ys, buf[j])
