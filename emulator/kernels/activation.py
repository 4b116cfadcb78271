"""Activation epilogues and the standalone activation kernels.

``activate(kind, buf, n, p0, p1)`` applies one activation (numbered as in ``emulator.activations``)
to ``buf[:n]`` in place; one loop per activation, chosen once per block, so each loop vectorises
where its math allows. It runs in the buffer's precision: float64 for the standalone operators
(results within 1 ULP of the correctly rounded float32/float16), float32 inside MVN. Edge values
follow the page's formula literally, as the table's references do (``emulator.activations``):
comparisons with NaN are false and Direct3D's max/min return the operand that is not NaN, so
RELU, HARD_SIGMOID, THRESHOLDED_RELU, CELU and SHRINK map NaN to a number.

Each activation is one scalar function (``a_<name>``), which the standalone activation operators'
element-wise rows call too. (The softmax family runs on the reduction layout:
``emulator/reduction/softmax_kernels.py``.)
"""

from __future__ import annotations

import math

from .jit import helper, inline

IDENTITY, RELU = 0, 6  # the kinds other kernels special-case (numbers of emulator.activations)


@inline
def softplus(z):  # pragma: no cover
    return max(z, 0.0) + math.log1p(math.exp(-abs(z)))


# One scalar function per activation, f(v, p0, p1) in the value's precision: the formula of
# ``emulator.activations`` with Direct3D's max/min. ``activate`` loops over them (the epilogue of
# MVN and of element-wise hosts), and the element-wise rows of the standalone activations call
# them (``emulator/elementwise/table.py``), so each formula is written once.


@inline
def a_identity(v, p0, p1):  # pragma: no cover
    return v


@inline
def a_linear(v, p0, p1):  # pragma: no cover
    return p0 * v + p1


@inline
def a_sigmoid(v, p0, p1):  # pragma: no cover
    return 1.0 / (1.0 + math.exp(-v))


@inline
def a_hard_sigmoid(v, p0, p1):  # pragma: no cover
    """max(0, min(Alpha·x + Beta, 1)) with D3D's min/max, so NaN gives 1; +0 for ±0."""
    y = p0 * v + p1
    m = y if y < 1.0 else 1.0
    return m if m > 0.0 else 0.0


@inline
def a_tanh(v, p0, p1):  # pragma: no cover
    return math.tanh(v)


@inline
def a_scaled_tanh(v, p0, p1):  # pragma: no cover
    return p0 * math.tanh(p1 * v)


@inline
def a_relu(v, p0, p1):  # pragma: no cover
    """max(0, x) with D3D's max: +0 for NaN and ±0 (a select vectorises)."""
    return v if v > 0.0 else 0.0


@inline
def a_leaky_relu(v, p0, p1):  # pragma: no cover
    return v if v >= 0 else p0 * v


@inline
def a_thresholded_relu(v, p0, p1):  # pragma: no cover
    return v if v > p0 else 0.0  # NaN > Alpha is false: 0


@inline
def a_elu(v, p0, p1):  # pragma: no cover
    return v if v >= 0 else p0 * math.expm1(v)


@inline
def a_celu(v, p0, p1):  # pragma: no cover
    """max(0, x) + min(0, Alpha·(exp(x/Alpha) - 1)), D3D's max/min."""
    t = p0 * math.expm1(v / p0)
    return (v if v > 0.0 else 0.0) + (t if t <= 0.0 else 0.0)


@inline
def a_scaled_elu(v, p0, p1):  # pragma: no cover
    """Gamma·(Alpha·exp(x) - Alpha): the difference is +0 at x = ±0, hence the + 0.0."""
    return p1 * v if v > 0 else p1 * (p0 * math.expm1(v) + 0.0)


@inline
def a_softplus(v, p0, p1):  # pragma: no cover
    return softplus(p0 * v) / p0


@inline
def a_parametric_softplus(v, p0, p1):  # pragma: no cover
    return p0 * softplus(p1 * v)


@inline
def a_softsign(v, p0, p1):  # pragma: no cover
    return v / (1.0 + abs(v))  # ±inf: inf/inf = NaN, as the formula says


@inline
def a_shrink(v, p0, p1):  # pragma: no cover
    return v - p0 if v > p1 else (v + p0 if v < -p1 else 0.0)  # NaN: 0


@inline
def a_gelu(v, p0, p1):  # pragma: no cover
    return 0.5 * v * math.erfc(-v * 0.7071067811865476)  # -inf: -inf·0 = NaN, as the formula


@inline
def a_swish(v, p0, p1):  # pragma: no cover
    """x·sigmoid(SigmoidInputScale·x)."""
    return v * (1.0 / (1.0 + math.exp(-(p0 * v))))


@inline
def a_hard_swish(v, p0, p1):  # pragma: no cover
    """x·HardSigmoid(x), HardSigmoid as a_hard_sigmoid."""
    return v * a_hard_sigmoid(v, p0, p1)


# The scalar function of each activation kind (numbered as in ``emulator.activations``).
FUNCTIONS = ("a_identity", "a_linear", "a_sigmoid", "a_hard_sigmoid", "a_tanh", "a_scaled_tanh",
             "a_relu", "a_leaky_relu", "a_thresholded_relu", "a_elu", "a_celu", "a_scaled_elu",
             "a_softplus", "a_parametric_softplus", "a_softsign", "a_shrink", "a_gelu",
             "a_swish", "a_hard_swish")


@helper
def activate(kind, buf, n, p0, p1):  # pragma: no cover
    """``buf[:n] = f(buf[:n])`` for the activation ``kind``: one loop per kind, chosen once per
    block, so each vectorises where its math allows."""
    if kind == IDENTITY:
        return
    if kind == 1:
        for i in range(n):
            buf[i] = a_linear(buf[i], p0, p1)
    elif kind == 2:
        for i in range(n):
            buf[i] = a_sigmoid(buf[i], p0, p1)
    elif kind == 3:
        for i in range(n):
            buf[i] = a_hard_sigmoid(buf[i], p0, p1)
    elif kind == 4:
        for i in range(n):
            buf[i] = a_tanh(buf[i], p0, p1)
    elif kind == 5:
        for i in range(n):
            buf[i] = a_scaled_tanh(buf[i], p0, p1)
    elif kind == RELU:
        for i in range(n):
            buf[i] = a_relu(buf[i], p0, p1)
    elif kind == 7:
        for i in range(n):
            buf[i] = a_leaky_relu(buf[i], p0, p1)
    elif kind == 8:
        for i in range(n):
            buf[i] = a_thresholded_relu(buf[i], p0, p1)
    elif kind == 9:
        for i in range(n):
            buf[i] = a_elu(buf[i], p0, p1)
    elif kind == 10:
        for i in range(n):
            buf[i] = a_celu(buf[i], p0, p1)
    elif kind == 11:
        for i in range(n):
            buf[i] = a_scaled_elu(buf[i], p0, p1)
    elif kind == 12:
        for i in range(n):
            buf[i] = a_softplus(buf[i], p0, p1)
    elif kind == 13:
        for i in range(n):
            buf[i] = a_parametric_softplus(buf[i], p0, p1)
    elif kind == 14:
        for i in range(n):
            buf[i] = a_softsign(buf[i], p0, p1)
    elif kind == 15:
        for i in range(n):
            buf[i] = a_shrink(buf[i], p0, p1)
    elif kind == 16:
        for i in range(n):
            buf[i] = a_gelu(buf[i], p0, p1)
    elif kind == 17:
        for i in range(n):
            buf[i] = a_swish(buf[i], p0, p1)
    elif kind == 18:
        for i in range(n):
            buf[i] = a_hard_swish(buf[i], p0, p1)
