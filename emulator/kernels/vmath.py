"""Vectorisable float64 math for FLOAT32 and FLOAT16 results: no calls, no branches (selects),
so LLVM turns a loop of them into vector code. libm's functions are scalar calls, and Numba's
SVML route needs an SVML-patched llvmlite, which PyPI's wheels are not.

Each function's relative error is below 2**-44 over the inputs whose result a FLOAT32 can hold,
so the result rounded once to FLOAT32 or FLOAT16 is the correctly rounded one or its neighbour (a
float64 within 2**-44 of a rounding tie may round either way): within 1 ULP, the rows' bound.
Outside float32's range the input is clamped where that cannot change a FLOAT32 result (exp of
x < -110 is below half the smallest subnormal, of x > 90 above the largest float32). FLOAT64
tensors keep libm's functions.
"""

from __future__ import annotations

import math

import numpy as np

from .floats import bits_double
from .jit import inline

FUNCTIONS = ("exp64", "tanh64")  # what a row's fast32 body may call (generate.py imports them)

_INV_LN2 = 1.4426950408889634
_LN2_HI = 0.6931471803691238  # ln 2 split so that k·_LN2_HI is exact for |k| < 2**20
_LN2_LO = 1.9082149292705877e-10
# 1/n! for n = 11 … 0: Taylor series of exp on |r| ≤ ln(2)/2 (truncation below 2**-47 relative).
_EXP = (1 / 39916800, 1 / 3628800, 1 / 362880, 1 / 40320, 1 / 5040, 1 / 720, 1 / 120, 1 / 24,
        1 / 6, 0.5, 1.0, 1.0)


@inline
def horner(x, coefficients):  # pragma: no cover
    """The polynomial with these coefficients (highest degree first) at x."""
    p = 0.0
    for c in coefficients:
        p = p * x + c
    return p


@inline
def exp64(x):  # pragma: no cover
    """exp(x) in float64 for a FLOAT32 or FLOAT16 result: 2**k · exp(r), x = k·ln 2 + r."""
    x = np.float64(x)
    c = x if x < 90.0 else 90.0  # NaN stays NaN through neither comparison
    c = c if c > -110.0 else -110.0
    k = np.rint(c * _INV_LN2)
    r = (c - k * _LN2_HI) - k * _LN2_LO
    scale = bits_double((np.int64(k) + np.int64(1023)) << np.int64(52))
    y = horner(r, _EXP) * scale
    return y if x == x else x


# tanh near 0: x + x·s·q(s), s = x², q's Taylor coefficients highest first (to x**13: enough
# below |x| = 1/16).
_TANH = (21844 / 6081075, -1382 / 155925, 62 / 2835, -17 / 315, 2 / 15, -1 / 3)


@inline
def tanh64(x):  # pragma: no cover
    """tanh(x) in float64 for a FLOAT32 or FLOAT16 result: 1 - 2 / (exp(2|x|) + 1) with the sign
    of x, and a Taylor polynomial below |x| = 1/16 (where the difference would cancel)."""
    x = np.float64(x)
    a = abs(x)
    big = 1.0 - 2.0 / (exp64(2.0 * a) + 1.0)
    s = x * x
    small = a + a * s * horner(s, _TANH)
    y = small if a < 0.0625 else big
    y = math.copysign(y, x)
    return y if x == x else x
