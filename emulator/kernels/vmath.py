"""Vectorisable math for FLOAT32 and FLOAT16 results: no calls, no branches (selects), FMAs, and
no float-to-integer conversions (the exponent comes from a shifter's bits), so LLVM turns a loop
of them into vector code. libm's functions are scalar calls, and Numba's SVML route needs an
SVML-patched llvmlite, which PyPI's wheels are not.

- ``exp32``, ``tanh32``, ``erf32`` compute in float32 (16 lanes on AVX-512: they ask for
  512-bit vectors in the loop they are inlined into, ``floats.wide_vectors``; 8 on AVX2).
- ``exp_difference(x, m)``: exp(x - m) with the difference kept exact (the softmax's exp).
- ``exp64`` computes in float64 (relative error below 2**-44), for the LOG_SOFTMAX sums.

The float32 ones are each within 1 ULP of the exact value over every float32 input, checked
against float64 libm by ``python -m emulator.kernels.vmath`` (``prove``, a few minutes on two
cores): exp32 at most 0.8736 ULP, tanh32 0.8605, erf32 0.7172. A FLOAT16 result is one more
rounding of a value that close: within 0.5 + 2**-13 FLOAT16 ULP. Outside the range where the
result changes, the input is clamped (exp of x < -104 rounds to 0, of x > 89 to inf; tanh is ±1
from |x| = 9.01, erf from 3.92), in a way that lets NaN through. FLOAT64 tensors keep libm's
functions.
"""


from __future__ import annotations

import math
from typing import Any

import numpy as np

from .floats import bits_double, bits_float, double_bits, fma, pow2_shifted, wide_vectors
from .jit import inline

FUNCTIONS = ("exp32", "exp64", "tanh32", "erf32")  # what a row's fast32 body may call

_INV_LN2 = 1.4426950408889634
_LN2_HI = 0.6931471803691238  # ln 2 split so that k·_LN2_HI is exact for |k| < 2**20
_LN2_LO = 1.9082149292705877e-10
_SHIFT = 6755399441055744.0  # 1.5·2**52: t = x + _SHIFT rounds x to an integer in t's low bits
_SHIFT_BITS = 0x4338000000000000
# 1/n! for n = 11 … 0: Taylor series of exp on |r| ≤ ln(2)/2 (truncation below 2**-47 relative).
_EXP = (1 / 39916800, 1 / 3628800, 1 / 362880, 1 / 40320, 1 / 5040, 1 / 720, 1 / 120, 1 / 24,
        1 / 6, 0.5, 1.0, 1.0)


@inline
def horner(x, coefficients):  # pragma: no cover
    """The polynomial with these coefficients (highest degree first) at x, with FMAs."""
    p = coefficients[0]
    for i in range(1, len(coefficients)):
        p = fma(p, x, coefficients[i])
    return p


def split4(coefficients: tuple[float, ...]) -> tuple[tuple[float, ...], ...]:
    """A polynomial (highest degree first) as four polynomials in x**4, for ``poly4``: part j
    has the coefficients of the powers k ≡ j (mod 4)."""
    n = len(coefficients) - 1
    return tuple(tuple(coefficients[n - k] for k in range(n - (n - j) % 4, -1, -4) if k >= j)
                 for j in range(4))


@inline
def poly4(x, parts):  # pragma: no cover
    """A ``split4`` polynomial at x: four independent Horner chains in x**4, so the FMAs of
    neighbouring chains overlap (one chain of dependent FMAs left the vector units idle: a
    13-term Horner ran at a third of their speed)."""
    x2 = x * x
    x4 = x2 * x2
    a = horner(x4, parts[0])
    b = horner(x4, parts[1])
    c = horner(x4, parts[2])
    d = horner(x4, parts[3])
    return fma(x2, fma(x, d, c), fma(x, b, a))


_EXP4 = split4(_EXP)


@inline
def exp64(x):  # pragma: no cover
    """exp(x) in float64 for a FLOAT32 or FLOAT16 result: 2**k · exp(r), x = k·ln 2 + r."""
    x = np.float64(x)
    c = x if x < 90.0 else 90.0  # NaN stays NaN through neither comparison
    c = c if c > -110.0 else -110.0
    t = fma(c, _INV_LN2, _SHIFT)  # k = round(c / ln 2) in t's low bits
    k = t - _SHIFT
    r = fma(-k, _LN2_HI, c)
    r = fma(-k, _LN2_LO, r)
    scale = bits_double((double_bits(t) - np.int64(_SHIFT_BITS - 1023)) << np.int64(52))
    y = poly4(r, _EXP4) * scale
    return y if x == x else x


# exp32: q(r) = (exp(r) - 1 - r) / r**2 on |r| ≤ ln(2)/2, a least-squares fit at Chebyshev
# nodes rounded to float32 (highest degree first); exp(r) = 1 + r·(1 + r·q(r)).
_Q32 = tuple(np.float32(v) for v in (0.00019899276, 0.0013933644, 0.008333298, 0.041666467,
                                      0.16666667, 0.5))
_LOG2E_32 = np.float32(1.442695)
_LN2_HI_32 = np.float32(0.693145751953125)  # 0x3F317200: k·hi exact for |k| < 2**8
_LN2_LO_32 = np.float32(1.4286068e-06)
_SHIFT_32 = np.float32(12582912.0)  # 1.5·2**23: t = x + _SHIFT_32 rounds x to an integer
_ONE_32 = np.float32(1.0)
_HALF_32 = np.float32(0.5)


@inline
def _reduce(c):  # pragma: no cover
    """For a float32 c (|c| < 2**7): (t, r) with c = k·ln 2 + r, |r| ≤ ln(2)/2, k held in the
    shifter sum t (``pow2_shifted(t)`` is 2**k)."""
    t = fma(c, _LOG2E_32, _SHIFT_32)
    k = t - _SHIFT_32
    r = fma(-k, _LN2_HI_32, c)
    return t, fma(-k, _LN2_LO_32, r)


@inline
def _exp_reduced(r):  # pragma: no cover
    """exp(r) for |r| ≤ ln(2)/2: 1 + r·(1 + r·q(r))."""
    return fma(r, fma(r, horner(r, _Q32), _ONE_32), _ONE_32)


@inline
def _exp_clamped(x, lo):  # pragma: no cover
    """exp(x + lo), x a float32 and lo a correction below half an ULP of x: 2**k · exp(r),
    x = k·ln 2 + r (k·ln 2's high part is exact, so r is x's distance from it plus lo), the
    scale applied in two halves (2**h · 2**(k-h), h = round(k/2)) so that a subnormal result is
    rounded once and no half leaves the exponent range. x is clamped to 89 first (exp rounds
    to inf above), and below -104, where exp rounds to 0, 0 is selected and exp(0) computed
    instead (exp(-104) itself came out 0 through subnormal products, which Intel cores run as
    ~100-cycle microcode assists: a softmax over scores masked with -10,000 paid one for every
    masked element). The selects let NaN through (they keep x when the comparison is false);
    NaN stays NaN through every later step."""
    c = np.float32(89.0) if x > np.float32(89.0) else x
    under = c < np.float32(-104.0)
    c = np.float32(0.0) if under else c  # its result is 0 (below): no subnormal computed
    t, r = _reduce(c)
    th = fma(t - _SHIFT_32, _HALF_32, _SHIFT_32)  # h in th's shifter bits, k - h in tl's
    tl = t - (th - _SHIFT_32)
    e = _exp_reduced(r + lo) * pow2_shifted(th) * pow2_shifted(tl)
    return np.float32(0.0) if under else e


@inline
def exp32(x):  # pragma: no cover
    """exp(x) in float32 arithmetic (-0 as the correction: r + -0 is r, which LLVM folds)."""
    wide_vectors()
    return _exp_clamped(np.float32(x), np.float32(-0.0))


@inline
def exp_difference(x, m):  # pragma: no cover
    """exp(x - m) for float32 x and m, with the difference exact: x - m rounded is d, and its
    rounding error e (Knuth's two-sum: d + e == x - m exactly) goes into the reduced argument,
    so the result is exp32's (the softmax's exp(x - max), where a rounded difference of 100
    would cost 100 · 2**-24 relative: 10^2 ULP). Within 1.1 ULP of the exact value (1.02 the
    most over 2·10^7 random pairs, subnormal results included); NaN in either gives NaN."""
    wide_vectors()
    x = np.float32(x)
    b = -np.float32(m)
    d = x + b
    x1 = d - b
    b1 = d - x1
    e = (x - x1) + (b - b1)
    e = e if abs(d) < np.float32(np.inf) else np.float32(0.0)  # d = ±inf: no error, no NaN
    return _exp_clamped(d, e)


# The float32 tanh and erf are piecewise, every piece evaluated and the right one selected (a
# branch would stop vectorisation), each piece a form whose last operation is one FMA onto a
# value it does not round, so the result is rounded about once:
# - near 0, odd: x + x·s·P(s) (tanh) or x + x·P(s) (erf), s = x², where the correction term is
#   small against x;
# - a middle piece: A + d·M(d), d = |x| - C exact (Sterbenz), C a float32 chosen so that f(C)
#   is within 2**-38 of the float32 A;
# - the tail from the exponential: tanh = 1 - 2 / (2**k·(1 + p) + 1) with the sum in one FMA;
#   erf = 1 - exp(-x²)·G(|x|), G = erfc·exp(x²) (erfcx), where erfc is small against 1.
# Coefficients: Lawson's near-minimax fits of the error that matters (relative to the result),
# rounded to float32 one at a time from the lowest degree with the rest refitted each time
# (``python tools/fit_vmath.py`` fits them again); Horner's rule (with three pieces in flight
# the chains overlap anyway, and it rounds better than four interleaved chains).
_TANH_SMALL = tuple(np.float32(v) for v in (  # P(s) on |x| < 0.625
    0.0021526841446757317, -0.008190013468265533, 0.021706894040107727, -0.05394817888736725,
    0.13333220779895782, -0.3333333134651184))
_TANH_C, _TANH_A = np.float32(0.81272113), np.float32(0.67108864)
_TANH_MID = tuple(np.float32(v) for v in (  # M(d) on 0.625 ≤ |x| < 1
    0.014547454193234444, 0.006813008338212967, -0.06264074146747589, 0.07979142665863037,
    0.06431964784860611, -0.36885717511177063, 0.5496400594711304))


@inline
def tanh32(x):  # pragma: no cover
    """tanh(x) in float32 arithmetic: the three pieces switch at |x| = 0.625 and 1; the tail
    clamps 2|x| at 20 (tanh rounds to ±1 from |x| = 9.01)."""
    wide_vectors()
    x = np.float32(x)
    a = abs(x)
    s = x * x
    small = fma(a * s, horner(s, _TANH_SMALL), a)
    d = a - _TANH_C
    middle = fma(d, horner(d, _TANH_MID), _TANH_A)
    c = a + a
    c = np.float32(20.0) if c > np.float32(20.0) else c  # NaN passes
    t, r = _reduce(c)
    p = fma(r * r, horner(r, _Q32), r)  # expm1(r)
    e = pow2_shifted(t)
    big = _ONE_32 - np.float32(2.0) / fma(e, p, e + _ONE_32)  # e·(1 + p) + 1 rounded once
    y = small if a < np.float32(0.625) else (middle if a < _ONE_32 else big)
    return np.float32(math.copysign(y, x))


_ERF_SMALL = tuple(np.float32(v) for v in (  # P(s) = erf(x)/x - 1 on |x| < 0.75
    -0.0006737583898939192, 0.005113156978040934, -0.026834335178136826, 0.11283379048109055,
    -0.3761261999607086, 0.12837916612625122))
_ERF_C, _ERF_A = np.float32(0.9931337), np.float32(0.83983094)
_ERF_MID = tuple(np.float32(v) for v in (  # M(d) on 0.75 ≤ |x| < 1.25
    0.014802140183746815, 0.003378171008080244, -0.06931095570325851, 0.07157820463180542,
    0.1364349126815796, -0.4179380536079407, 0.4208274781703949))
_ERF_TOP = np.float32(3.92)  # erfc(3.92) < 2**-25: erf rounds to ±1 from here
_ERF_TAIL_C = np.float32((1.25 + 3.92) / 2)
_ERF_TAIL = tuple(np.float32(v) for v in (  # G(|x|) in |x| - 2.585 on 1.25 ≤ |x| < 3.92
    -0.0002299578773090616, -0.0002574327227193862, -0.0010215580696240067,
    0.0021337075158953667, -0.007082041352987289, 0.02306872233748436, -0.07026822865009308,
    0.20466135442256927))


@inline
def erf32(x):  # pragma: no cover
    """erf(x) in float32 arithmetic: the pieces switch at |x| = 0.75 and 1.25; the tail clamps
    |x| at 3.92, where 1 - erfc rounds to 1 (x² rounded to float32 costs at most 0.08 ULP
    there: the tail's erfc is below 0.08)."""
    wide_vectors()
    x = np.float32(x)
    a = abs(x)
    small = fma(a, horner(x * x, _ERF_SMALL), a)
    d = a - _ERF_C
    middle = fma(d, horner(d, _ERF_MID), _ERF_A)
    m = _ERF_TOP if a > _ERF_TOP else a  # NaN passes
    t, r = _reduce(-(m * m))
    e = _exp_reduced(r) * pow2_shifted(t)
    tail = fma(-e, horner(m - _ERF_TAIL_C, _ERF_TAIL), _ONE_32)
    y = small if a < np.float32(0.75) else (middle if a < np.float32(1.25) else tail)
    return np.float32(math.copysign(y, x))


def _worst(f: Any, reference: Any) -> Any:  # pragma: no cover - run by hand
    """A kernel: the largest distance, in ULP of the exact value, of float32(f(x)) from
    ``reference(x)`` (float64 libm) over the float32 bit patterns [lo, hi)."""
    from .jit import kernel, prange

    @kernel
    def worst(lo, hi, parts):
        out = np.zeros(parts)
        for p in prange(parts):
            w = 0.0
            for i in range(lo + (hi - lo) * p // parts, lo + (hi - lo) * (p + 1) // parts):
                x = bits_float(np.int32(i))
                want = reference(np.float64(x))
                if x != x or abs(want) > 3.4028234663852886e38:
                    continue
                e = math.frexp(want)[1] if want != 0 else -200
                got = np.float64(np.float32(f(x)))
                w = max(w, abs(got - want) / math.ldexp(1.0, max(e - 24, -149)))
            out[p] = w
        return out.max()

    return worst


def prove() -> dict[str, float]:  # pragma: no cover - run by hand: python -m emulator.kernels.vmath
    """Every float32 input of exp32, tanh32 and erf32 against float64 libm: the largest error in
    ULP (a few minutes on two cores)."""
    import numba

    @numba.njit
    def ref_exp(x):
        return math.exp(x)

    @numba.njit
    def ref_tanh(x):
        return math.tanh(x)

    @numba.njit
    def ref_erf(x):
        return math.erf(x)

    out = {}
    negative = -(1 << 31)
    for name, f, ref, odd in (("exp32", exp32, ref_exp, False), ("tanh32", tanh32, ref_tanh, True),
                              ("erf32", erf32, ref_erf, True)):
        worst = _worst(f, ref)
        out[name] = worst(0, 0x7F800000, 64)
        if not odd:  # an odd function's negative inputs mirror the positive ones exactly
            out[name] = max(out[name], worst(negative, negative + 0x7F800000, 64))
    return out


if __name__ == "__main__":  # pragma: no cover
    for name, ulp in prove().items():
        print(f"{name}: at most {ulp:.4f} ULP from the exact value over every float32 input")
