"""Vectorisable math for FLOAT32 and FLOAT16 results: no calls, no branches (selects), FMAs,
polynomials as four interleaved chains (``poly4``), and no float-to-integer conversions (the
exponent comes from a shifter's bits), so LLVM turns a loop of them into vector code. libm's
functions are scalar calls, and Numba's SVML route needs an SVML-patched llvmlite, which PyPI's
wheels are not.

- ``exp32`` computes in float32 (16 lanes on AVX-512, 8 on AVX2).
- ``exp64``, ``tanh64``, ``erf64`` compute in float64 from a float32 or float16 input (relative
  error below 2**-30 before the final rounding, 2**-44 for exp64), except where they build on
  exp32: tanh64 from |x| = 1 and erf64 from |x| = 1, where the formula scales exp32's error down.

Every one is within the rows' 1-ULP bound of the exact value over every float32 input, checked
against float64 libm by ``python -m emulator.kernels.vmath`` (``prove``, a few minutes): exp32
at most 0.8736 ULP, tanh64 0.6942, erf64 0.6533. A FLOAT16 result is one more rounding of a
value that close: within 0.5 + 2**-13 FLOAT16 ULP. Outside float32's range the input is clamped
where that cannot change the result (exp of x < -104 rounds to 0, of x > 89 to inf). FLOAT64
tensors keep libm's functions.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .floats import bits_double, bits_float, double_bits, float_bits, fma
from .jit import inline

FUNCTIONS = ("exp32", "exp64", "tanh64", "erf64")  # what a row's fast32 body may call

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
    p = x - x  # a zero of x's type
    for c in coefficients:
        p = fma(p, x, c)
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
_SHIFT_32 = np.float32(12582912.0)  # 1.5·2**23
_SHIFT_BITS_32 = 0x4B400000
_ONE_32 = np.float32(1.0)


@inline
def exp32(x):  # pragma: no cover
    """exp(x) in float32 arithmetic: 2**k · exp(r), x = k·ln 2 + r, the scale applied in two
    halves so that a subnormal result is rounded once and 2**k never leaves the exponent range."""
    x = np.float32(x)
    c = x if x < np.float32(89.0) else np.float32(89.0)
    c = c if c > np.float32(-104.0) else np.float32(-104.0)
    t = fma(c, _LOG2E_32, _SHIFT_32)
    k = t - _SHIFT_32
    r = fma(-k, _LN2_HI_32, c)
    r = fma(-k, _LN2_LO_32, r)
    y = fma(r, fma(r, horner(r, _Q32), _ONE_32), _ONE_32)
    n = float_bits(t) - np.int32(_SHIFT_BITS_32)
    h = n >> np.int32(1)
    y = y * bits_float((h + np.int32(127)) << np.int32(23))
    y = y * bits_float((n - h + np.int32(127)) << np.int32(23))
    return y if x == x else x


# tanh on |x| < 1: x·P(x²), P a degree-9 Chebyshev fit of tanh(x)/x in x² (relative error
# 3.2e-11; highest degree first).
_TANH = (-4.0885090053182514e-05, 0.00030443804265241884, -0.0011816719094318272,
         0.003419404804096281, -0.00879299295944782, 0.021851678685028145, -0.05396562211314288,
         0.13333313393566695, -0.33333332743507854, 0.9999999999710771)
_TANH4 = split4(_TANH)


@inline
def tanh64(x):  # pragma: no cover
    """tanh(x) for a FLOAT32 or FLOAT16 result: x·P(x²) below |x| = 1; from there
    1 - 2 / (exp(2|x|) + 1) in float64 with exp32 (whose error the formula scales by at most
    2e / (e² - 1) = 0.28 at |x| = 1: within 0.37 FLOAT32 ULP before the final rounding)."""
    x = np.float64(x)
    a = abs(x)
    small = a * poly4(x * x, _TANH4)
    e = np.float64(exp32(np.float32(2.0 * (a if a < 45.0 else 45.0))))
    big = 1.0 - 2.0 / (e + 1.0)
    y = small if a < 1.0 else big
    y = math.copysign(y, x)
    return y if x == x else x


# erf on |x| < 1: x·P(x²), P a degree-7 Chebyshev fit of erf(x)/x in x² (relative error
# 3.7e-11). On 1 ≤ |x| < 4: 1 - exp(-x²)·erfcx(|x|), erfcx a degree-12 Chebyshev fit in
# t = (2|x| - 5) / 3 (relative error 7.6e-9, which erfc(x) ≤ 0.16 scales to 0.02 FLOAT32 ULP of
# erf), exp(-x²) as exp32 of x² rounded to float32 times exp(-(the rounding error)) ≈ 1 - lo
# (within 0.27 ULP of erf at |x| = 1, less beyond). From |x| = 4, erf rounds to ±1 in FLOAT32
# (erfc(4) < 2**-25). Highest degree first.
_ERF = (-9.67359116943455e-06, 0.0001126825402169864, -0.0008484396568555994,
        0.005221053413802682, -0.026865438310979452, 0.11283782622070483, -0.376126384759919,
        1.1283791670623609)
_ERFCX = (1.3819089051970648e-05, -3.6928723572287755e-05, 5.4947248088621696e-05,
          -0.00014394859789284209, 0.00041450809795985747, -0.001017117774302623,
          0.0024017016954216187, -0.0055673329095320915, 0.012489703671475576,
          -0.027005725289738425, 0.05611047258428537, -0.11152100469538206, 0.21080636427594107)
_ERF4, _ERFCX4 = split4(_ERF), split4(_ERFCX)


@inline
def erf64(x):  # pragma: no cover
    """erf(x) in float64 for a FLOAT32 or FLOAT16 result (x² is exact in float64 for such an
    x)."""
    x = np.float64(x)
    a = abs(x)
    s = x * x
    small = a * poly4(s, _ERF4)
    m = a if a < 4.0 else 4.0
    m = m if m > 1.0 else 1.0
    q = m * m
    hi = np.float32(q)
    lo = q - np.float64(hi)
    e = np.float64(exp32(-hi)) * (1.0 - lo)
    mid = 1.0 - e * poly4(m * (2.0 / 3.0) - 5.0 / 3.0, _ERFCX4)
    y = small if a < 1.0 else (mid if a < 4.0 else 1.0)
    y = math.copysign(y, x)
    return y if x == x else x


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
    """Every float32 input of exp32, tanh64 and erf64 against float64 libm: the largest error in
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
    for name, f, ref, odd in (("exp32", exp32, ref_exp, False), ("tanh64", tanh64, ref_tanh, True),
                              ("erf64", erf64, ref_erf, True)):
        worst = _worst(f, ref)
        out[name] = worst(0, 0x7F800000, 64)
        if not odd:  # an odd function's negative inputs mirror the positive ones exactly
            out[name] = max(out[name], worst(negative, negative + 0x7F800000, 64))
    return out


if __name__ == "__main__":  # pragma: no cover
    for name, ulp in prove().items():
        print(f"{name}: at most {ulp:.4f} ULP from the exact value over every float32 input")
