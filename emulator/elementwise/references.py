"""Plain NumPy references for the element-wise rows whose formula is more than one NumPy call.

Each reads like its page (docs/elementwise-pages.md) and takes logical arrays: float tensors as
float64 (the caller rounds once to the output type), integer tensors in their own type, and, for
the bitwise rows, every tensor as the unsigned integer of its width (its native encoding).
Integer results are computed in 64 bits and the caller keeps the tensor's width, as C does.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..activations import _max, _min


def wide(a: np.ndarray) -> np.ndarray:
    """An integer array in 64 bits of its signedness (C's promotion, without overflow)."""
    return a.astype(np.int64 if a.dtype.kind == "i" else np.uint64)


def trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's integer a / b: the quotient rounded toward 0; b = 0 gives 0 (a decision), and
    INT64_MIN / -1 wraps."""
    if a.dtype.kind == "f":
        return a / b
    x, y = wide(a), wide(b)
    safe = np.where(y == 0, 1, y)
    q = np.floor_divide(x, safe)
    if x.dtype.kind == "i":
        q = np.where((q * safe != x) & ((x < 0) != (safe < 0)), q + 1, q)
        q = np.where(safe == -1, -x, q)
    return np.where(y == 0, 0, q).astype(x.dtype)


def trunc_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's a % b (MODULUS_TRUNCATE: the result has the dividend's sign): for floats C's fmod,
    exact; for integers b = 0 gives 0 (a decision)."""
    if a.dtype.kind == "f":
        return np.fmod(a, b)
    x, y = wide(a), wide(b)
    safe = np.where((y == 0) | (y == -1) if x.dtype.kind == "i" else y == 0, 1, y)
    return np.where(y == 0, 0, np.fmod(x, safe)).astype(x.dtype)


def floor_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Python's a % b (MODULUS_FLOOR: the result has the divisor's sign); b = 0 gives 0 for
    integers (a decision), NaN for floats (as fmod)."""
    if a.dtype.kind == "f":
        return np.vectorize(_py_float_mod, otypes=[np.float64])(a, b)
    x, y = wide(a), wide(b)
    safe = np.where(y == 0, 1, y)
    return np.where(y == 0, 0, np.mod(x, safe)).astype(x.dtype)


def _py_float_mod(a: float, b: float) -> float:
    """CPython's float %, without its ZeroDivisionError (fmod's NaN instead)."""
    r = math.fmod(a, b) if b != 0 and not math.isinf(a) else math.nan
    if math.isnan(r) or math.isnan(b):
        return math.nan
    if r != 0:
        if (b < 0) != (r < 0):
            r += b
    else:
        r = math.copysign(0.0, b)
    return r


def mean(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(a + b) / 2: for integers the exact sum, halved toward 0 (C's /)."""
    if a.dtype.kind == "f":
        return (a + b) / 2
    return trunc_div(wide(a) + wide(b), np.full(a.shape, 2, np.int64))


def difference_square(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(a - b) * (a - b)."""
    if a.dtype.kind == "f":
        return (a - b) * (a - b)
    d = wide(a).astype(np.int64) - wide(b).astype(np.int64)
    return d * d


def sign(x: np.ndarray) -> np.ndarray:
    """-1 if x < 0, 1 if x > 0, else 0 (NaN and -0 included)."""
    return np.where(x < 0, -1, np.where(x > 0, 1, 0)).astype(x.dtype)


def round_mode(x: np.ndarray, mode: float) -> np.ndarray:
    """DML_ROUNDING_MODE: 0 halves to even, 1 toward zero, 2 halves away from zero."""
    if mode == 0:
        return np.rint(x)
    t = np.trunc(x)
    if mode == 2:
        t = np.where(np.abs(x - t) >= 0.5, t + np.copysign(1.0, x), t)
    return t


def is_infinity(x: np.ndarray, mode: float) -> np.ndarray:
    """The page's formula: isinf(x) && (x > 0 && POSITIVE || x < 0 && NEGATIVE || EITHER)."""
    return np.isinf(x) & (((x > 0) & (mode == 1)) | ((x < 0) & (mode == 2)) | (mode == 0))


def _exact(x: np.ndarray, f: Any) -> np.ndarray:
    """f(v) for every element as a Python int (exact comparisons with floats), back in x's
    type."""
    return np.array([f(int(v)) for v in x.ravel()], x.dtype).reshape(x.shape)


def _ceil_into(dtype: np.dtype, f: float) -> int:
    """The smallest value of the integer type that is >= f, saturated."""
    info = np.iinfo(dtype)
    if f != f:
        return 0  # unused: a NaN bound loses
    return info.max if f >= info.max else info.min if f <= info.min else math.ceil(f)


def _floor_into(dtype: np.dtype, f: float) -> int:
    info = np.iinfo(dtype)
    if f != f:
        return 0  # unused: a NaN bound loses
    return info.max if f >= info.max else info.min if f <= info.min else math.floor(f)


def clip(x: np.ndarray, lo: Any, hi: Any) -> np.ndarray:
    """CLIP's formula, min(Max, max(Min, x)), with Direct3D's max and min; for integers, compared
    exactly, Min standing for ceil(Min) and Max for floor(Max) (saturated)."""
    if x.dtype.kind == "f":
        return _min(hi, _max(lo, x))
    lo_i, hi_i = _ceil_into(x.dtype, lo), _floor_into(x.dtype, hi)

    def one(v: int) -> int:
        m = v if (lo != lo or v >= lo) else lo_i
        return m if (hi != hi or m <= hi) else hi_i
    return _exact(x, one)


def threshold(x: np.ndarray, lo: Any) -> np.ndarray:
    """max(x, Min) with Direct3D's max (for integers: exact, Min standing for ceil(Min))."""
    if x.dtype.kind == "f":
        return _max(x, lo)
    lo_i = _ceil_into(x.dtype, lo)
    return _exact(x, lambda v: v if (lo != lo or v >= lo) else lo_i)


def shift_left(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a << b; a count at or past the element's width gives 0 (a decision)."""
    x, y = a.astype(np.uint64), b.astype(np.uint64)
    return np.where(y < 64, np.left_shift(x, np.minimum(y, 63)), 0).astype(np.uint64)


def shift_right(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Logical a >> b; a count at or past the width gives 0."""
    x, y = a.astype(np.uint64), b.astype(np.uint64)
    return np.where(y < 64, np.right_shift(x, np.minimum(y, 63)), 0).astype(np.uint64)


def bit_count(x: np.ndarray) -> np.ndarray:
    """The number of 1 bits of each element's encoding."""
    return np.bitwise_count(x) if hasattr(np, "bitwise_count") else \
        np.array([bin(int(v)).count("1") for v in x.ravel()]).reshape(x.shape)


def logical_not(x: np.ndarray) -> np.ndarray:
    return (x == 0).astype(np.uint8)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function (2/sqrt(pi) times the integral of exp(-t^2) from 0 to x), by libm."""
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def pow_(x: np.ndarray, e: Any) -> np.ndarray:
    """C's pow: a negative base with a non-integral exponent gives NaN. Two integer tensors: the
    exact power modulo the width, 1/x**|e| toward zero for a negative exponent (0 for x = 0)."""
    if isinstance(e, np.ndarray) and x.dtype.kind in "iu" and e.dtype.kind in "iu":
        return np.array([_int_pow(int(a), int(b)) for a, b in zip(x.ravel(), e.ravel())],
                        dtype=object).reshape(x.shape)
    return np.power(x, e)


def _int_pow(a: int, e: int) -> int:
    if e < 0:
        return 1 if a == 1 else (1 if e % 2 == 0 else -1) if a == -1 else 0
    return pow(a, e, 1 << 64)


def if_(cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a where cond != 0, else b (the encodings are copied)."""
    return np.where(cond != 0, a, b)



def cast(x: np.ndarray, out: np.dtype) -> np.ndarray:
    """CAST to ``out``: floats rounded once to a float type; floats to an integer type truncated
    toward zero, saturated to its range, NaN 0 (Direct3D's conversion); integers to an integer
    type wrapped (C's two's-complement conversion); integers to a float type rounded once."""
    if out.kind == "f" or x.dtype.kind != "f":
        return x.astype(out)
    info = np.iinfo(out)
    t = np.trunc(x)
    y = np.zeros(x.shape, out)
    inside = (t >= info.min) & (t < 2.0 ** (8 * out.itemsize - (out.kind == "i")))
    y[inside] = t[inside].astype(out)
    y[t >= 2.0 ** (8 * out.itemsize - (out.kind == "i"))] = info.max
    y[t < info.min] = info.min
    return y


def quantize_linear(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None,
                    out: np.dtype) -> np.ndarray:
    """clamp(round(x / scale) + zero_point, Min, Max): x / scale in float32 for a float x (in
    float64 for an integer one), halves rounded to even (decisions), the clamp to the output
    type's range (NaN: 0, as CAST)."""
    zp = 0 if zero_point is None else zero_point.astype(np.float64)
    wide = np.float32 if x.dtype.kind == "f" else np.float64
    with np.errstate(all="ignore"):
        quotient = x.astype(wide) / scale.astype(wide)
    q = np.rint(quotient.astype(np.float64)) + zp
    return cast(q, out)


def dequantize_linear(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None,
                      out: np.dtype) -> np.ndarray:
    """(x - zero_point) * scale, in float64, rounded once to the output type."""
    zp = 0 if zero_point is None else zero_point.astype(np.float64)
    return ((x.astype(np.float64) - zp) * scale.astype(np.float64)).astype(out)


def relu_grad(x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """X > 0 ? dY : 0 (NaN and -0 give 0)."""
    return np.where(x > 0, dy, dy.dtype.type(0))


def clip_grad(x: np.ndarray, dy: np.ndarray, lo: Any, hi: Any) -> np.ndarray:
    """0 where x <= Min or x >= Max (inclusive bounds), else the gradient (a NaN x or bound
    passes it); integers compared exactly with the FLOAT bounds."""
    if x.dtype.kind == "f":
        return np.where((x <= lo) | (x >= hi), 0, dy)
    flat = _exact(x, lambda v: int(v <= lo or v >= hi)).astype(bool)
    return np.where(flat, dy.dtype.type(0), dy)


def quantized_linear_add(a: np.ndarray, b: np.ndarray, *scalars_and_out: Any) -> np.ndarray:
    """AValue = (A - AZeroPoint)·AScale, BValue likewise; the output is
    clamp(round((AValue + BValue) / OutputScale) + OutputZeroPoint, Min, Max): float64, halves
    to even, saturated to the output type (NaN 0, as CAST); an absent zero point is 0."""
    *scalars, out = scalars_and_out
    a_s, a_zp, b_s, b_zp, o_s, o_zp = (0.0 if t is None else float(np.ravel(t)[0])
                                        for t in scalars)
    value = (a.astype(np.float64) - a_zp) * a_s + (b.astype(np.float64) - b_zp) * b_s
    return cast(np.rint(value / o_s) + o_zp, out)
