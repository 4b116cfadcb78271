"""Scalar helpers the element-wise table's bodies call: integer operations whose C meaning depends
on the type's signedness (chosen at compile time), and the few float functions with a page-given
rule. Every integer helper computes in 64 bits (as C promotes narrow types, and the store truncates
to the tensor's width) and never traps: division by 0 gives 0 and INT64_MIN / -1 wraps (decisions
in docs/decisions.md, "Element-wise operators").
"""

from __future__ import annotations

import math

import numpy as np
from numba import types
from numba.extending import overload

# The names a row's body may call (generate.py imports what it uses).
HELPERS = ("trunc_div", "trunc_mod", "floor_mod", "shift_left", "shift_right", "popcount",
           "round_mode", "at_least", "at_most", "ceil_into", "floor_into", "as_type", "int_pow")


def _signed(t: types.Type) -> bool:
    return isinstance(t, types.Integer) and bool(getattr(t, "signed", False))


def trunc_div(a, b):  # pragma: no cover - replaced by the overload
    """C's integer ``a / b``: the quotient rounded toward 0."""
    raise NotImplementedError


def trunc_mod(a, b):  # pragma: no cover - replaced by the overload
    """C's ``a % b``: the remainder has the dividend's sign."""
    raise NotImplementedError


def floor_mod(a, b):  # pragma: no cover - replaced by the overload
    """Python's ``a % b``: the remainder has the divisor's sign."""
    raise NotImplementedError


@overload(trunc_div, inline="always")
def _trunc_div(a, b):  # pragma: no cover - typing
    if _signed(a):
        def signed(a, b):
            x, y = np.int64(a), np.int64(b)
            if y == 0:
                return np.int64(0)
            if y == -1:
                return -x  # wraps for INT64_MIN (sdiv would trap)
            q = x // y
            if q * y != x and (x < 0) != (y < 0):
                q += 1
            return q
        return signed

    def unsigned(a, b):
        x, y = np.uint64(a), np.uint64(b)
        return x // y if y != 0 else np.uint64(0)
    return unsigned


@overload(trunc_mod, inline="always")
def _trunc_mod(a, b):  # pragma: no cover - typing
    if _signed(a):
        def signed(a, b):
            x, y = np.int64(a), np.int64(b)
            if y == 0 or y == -1:
                return np.int64(0)
            r = x % y  # Python's sign (the divisor's): move it to the dividend's
            if r != 0 and (r < 0) != (x < 0):
                r -= y
            return r
        return signed

    def unsigned(a, b):
        x, y = np.uint64(a), np.uint64(b)
        return x % y if y != 0 else np.uint64(0)
    return unsigned


@overload(floor_mod, inline="always")
def _floor_mod(a, b):  # pragma: no cover - typing
    if isinstance(a, types.Float):
        def real(a, b):
            # CPython's float_rem: fmod, then moved to the divisor's sign; a zero takes its sign.
            r = np.fmod(a, b)
            if r != 0:
                if (b < 0) != (r < 0):
                    r += b
            else:
                r = math.copysign(0.0, b)
            return r
        return real
    if _signed(a):
        def signed(a, b):
            x, y = np.int64(a), np.int64(b)
            if y == 0 or y == -1:
                return np.int64(0)
            return x % y
        return signed

    def unsigned(a, b):
        x, y = np.uint64(a), np.uint64(b)
        return x % y if y != 0 else np.uint64(0)
    return unsigned


def shift_left(a, b):  # pragma: no cover - replaced by the overload
    """``a << b`` on unsigned integers; a count of 64 or more gives 0 (the store keeps the tensor's
    width, so any count at or past the width gives 0)."""
    raise NotImplementedError


def shift_right(a, b):  # pragma: no cover - replaced by the overload
    """Logical ``a >> b``; a count at or past the width gives 0."""
    raise NotImplementedError


@overload(shift_left, inline="always")
def _shift_left(a, b):  # pragma: no cover - typing
    def impl(a, b):
        x, y = np.uint64(a), np.uint64(b)
        return x << y if y < np.uint64(64) else np.uint64(0)
    return impl


@overload(shift_right, inline="always")
def _shift_right(a, b):  # pragma: no cover - typing
    def impl(a, b):
        x, y = np.uint64(a), np.uint64(b)
        return x >> y if y < np.uint64(64) else np.uint64(0)
    return impl


def popcount(a):  # pragma: no cover - replaced by the overload
    """The number of 1 bits of an unsigned integer (any width up to 64)."""
    raise NotImplementedError


@overload(popcount, inline="always")
def _popcount(a):  # pragma: no cover - typing
    def impl(a):
        x = np.uint64(a)
        x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
        x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) &
                                                    np.uint64(0x3333333333333333))
        x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
        return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)
    return impl


def round_mode(a, mode):  # pragma: no cover - replaced by the overload
    """ROUND's three DML_ROUNDING_MODEs: 0 halves to nearest even, 1 toward zero, 2 halves away
    from zero (the page's TOWARD_INFINITY). Exact; a zero keeps its sign."""
    raise NotImplementedError


@overload(round_mode, inline="always")
def _round_mode(a, mode):  # pragma: no cover - typing
    def impl(a, mode):
        if mode == 0:
            return np.rint(a)
        t = np.trunc(a)
        if mode == 2 and abs(a - t) >= 0.5:  # a - t is exact: the fraction of a
            t += math.copysign(1.0, a)
        return t
    return impl


# An integer tensor's element against a FLOAT attribute (CLIP's Min and Max, THRESHOLD's Min):
# compared exactly (a 64-bit integer converted to float64 would round), and a bound that is not
# an integer stands for the nearest integer inside the interval (ceil for a lower bound, floor
# for an upper one), saturated to the tensor's type. A NaN bound loses, as in Direct3D's max/min.


def _range(t: types.Integer) -> tuple[float, float, int, int]:
    """(2**k just above the type's maximum, its minimum as a float, minimum, maximum)."""
    bits = int(t.bitwidth)  # type: ignore[attr-defined]
    if _signed(t):
        return 2.0 ** (bits - 1), -(2.0 ** (bits - 1)), -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return 2.0 ** bits, 0.0, 0, 2 ** bits - 1


def at_least(x, f):  # pragma: no cover - replaced by the overload
    """x >= f exactly, for an integer x and a float f; True for a NaN f."""
    raise NotImplementedError


def at_most(x, f):  # pragma: no cover - replaced by the overload
    """x <= f exactly; True for a NaN f."""
    raise NotImplementedError


def ceil_into(x, f):  # pragma: no cover - replaced by the overload
    """The smallest value of x's type that is >= f (its maximum if none); x for a NaN f."""
    raise NotImplementedError


def floor_into(x, f):  # pragma: no cover - replaced by the overload
    """The largest value of x's type that is <= f (its minimum if none); x for a NaN f."""
    raise NotImplementedError


@overload(at_least, inline="always")
def _at_least(x, f):  # pragma: no cover - typing
    top, bottom, _, _ = _range(x)
    cast = getattr(np, x.name)

    def impl(x, f):
        if f != f or f <= bottom:
            return True
        c = np.ceil(f)
        if c >= top:
            return False
        return x >= cast(c)
    return impl


@overload(at_most, inline="always")
def _at_most(x, f):  # pragma: no cover - typing
    top, bottom, _, _ = _range(x)
    cast = getattr(np, x.name)

    def impl(x, f):
        if f != f or f >= top:
            return True
        if f < bottom:
            return False
        return x <= cast(np.floor(f))
    return impl


@overload(ceil_into, inline="always")
def _ceil_into(x, f):  # pragma: no cover - typing
    top, bottom, lo, hi = _range(x)
    cast = getattr(np, x.name)
    lo_c, hi_c = cast(lo), cast(hi)

    def impl(x, f):
        if f != f:
            return x
        c = np.ceil(f)
        if c >= top:
            return hi_c
        if c <= bottom:
            return lo_c
        return cast(c)
    return impl


@overload(floor_into, inline="always")
def _floor_into(x, f):  # pragma: no cover - typing
    top, bottom, lo, hi = _range(x)
    cast = getattr(np, x.name)
    lo_c, hi_c = cast(lo), cast(hi)

    def impl(x, f):
        if f != f:
            return x
        if f >= top:
            return hi_c
        if f < bottom:
            return lo_c
        return cast(np.floor(f))
    return impl


def as_type(x, v):  # pragma: no cover - replaced by the overload
    """The int64 ``v`` (an integer parameter, its bits for a UINT64 above 2**63) in x's type."""
    raise NotImplementedError


@overload(as_type, inline="always")
def _as_type(x, v):  # pragma: no cover - typing
    cast = getattr(np, x.name)
    return lambda x, v: cast(v)


def int_pow(a, e):  # pragma: no cover - replaced by the overload
    """a ** e for integers, exact modulo the type's width (squaring with wrapping multiplication;
    the store keeps the width). A negative exponent gives 1/a**|e| toward zero: 1 for a = 1,
    ±1 for a = -1, else 0 (0 for a = 0, as integer division by 0)."""
    raise NotImplementedError


@overload(int_pow, inline="always")
def _int_pow(a, e):  # pragma: no cover - typing
    signed_base = _signed(a)
    wide = np.int64 if signed_base else np.uint64
    exp_wide = np.int64 if _signed(e) else np.uint64

    def impl(a, e):
        x = wide(a)
        n = exp_wide(e)
        one = wide(1)
        bit = exp_wide(1)
        if n < exp_wide(0):
            if x == one:
                return one
            if signed_base and x == wide(-1):
                return one if (n & bit) == exp_wide(0) else x
            return x - x
        result = one
        while n != exp_wide(0):
            if (n & bit) != exp_wide(0):
                result = result * x
            x = x * x
            n = n >> bit
        return result
    return impl
