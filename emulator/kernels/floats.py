"""Storage type vs compute type: how kernels read and write FLOAT32 and FLOAT16 tensors.

| DataType | storage (array the kernel sees) | load32 / load64 | store (from float32 or float64) |
|---|---|---|---|
| FLOAT32 | float32 | exact | round to nearest even (float32 / float64 → float32) |
| FLOAT16 | uint16 bits | exact, through LLVM ``half`` (F16C) | round to nearest even, once |

Numba has no CPU float16, so FLOAT16 elements are uint16 bits converted by LLVM intrinsics
(``fpext``/``fptrunc`` on ``half``), which vectorise to F16C instructions. float64 → float16 is
rounded once: to float32 with round-to-odd, then to float16 with round-to-nearest-even (exact,
since float32 carries more than two extra bits). ``load32``/``load64``/``store`` choose the path by
the array's type at compile time.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from .jit import inline


@intrinsic
def half_to_float(typingctx, bits):  # pragma: no cover - code generation
    if bits != types.uint16:
        return None

    def codegen(context, builder, sig, args):
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())

    return types.float32(types.uint16), codegen


@intrinsic
def float_to_half(typingctx, value):  # pragma: no cover - code generation
    if value != types.float32:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))

    return types.uint16(types.float32), codegen


@intrinsic
def float_bits(typingctx, value):  # pragma: no cover - code generation
    """The encoding (uint32) of a float32."""
    if value != types.float32:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(32))

    return types.uint32(types.float32), codegen


@intrinsic
def bits_float(typingctx, bits):  # pragma: no cover - code generation
    """The float32 whose encoding is ``bits`` (any integer, taken modulo 2**32: Numba widens
    int32 arithmetic to int64)."""
    if not isinstance(bits, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.uint32), codegen


@intrinsic
def bits_double(typingctx, bits):  # pragma: no cover - code generation
    """The float64 whose encoding is ``bits`` (int64)."""
    if bits != types.int64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@intrinsic
def double_bits(typingctx, value):  # pragma: no cover - code generation
    """The encoding (int64) of a float64."""
    if value != types.float64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def fma(typingctx, a, b, c):  # pragma: no cover - code generation
    """a·b + c with one rounding, for three float64 or three float32 values (llvm.fma: a vector
    FMA where the CPU has one)."""
    if not (a == b == c and a in (types.float64, types.float32)):
        return None
    t = ir.DoubleType() if a == types.float64 else ir.FloatType()

    def codegen(context, builder, sig, args):
        fn = builder.module.declare_intrinsic("llvm.fma", [t], ir.FunctionType(t, [t, t, t]))
        return builder.call(fn, args)

    return a(a, a, a), codegen


@intrinsic
def wide_vectors(typingctx):  # pragma: no cover - code generation
    """Let LLVM vectorise the function this is inlined into with the CPU's widest vectors: its
    "prefer-vector-width" attribute set to 512. LLVM prefers 256-bit vectors on many AVX-512
    CPUs (its "prefer-256-bit" tuning, Numba's default features), which halves the lanes of
    compute-bound loops such as ``vmath``'s; the attribute is per function, so no other code in
    the process changes (Numba's CPU features are process-wide). Ignored where the CPU has no
    512-bit vectors, and by other architectures."""
    def codegen(context, builder, sig, args):
        # llvmlite's attribute set checks names against a fixed list without string attributes
        set.add(builder.function.attributes, '"prefer-vector-width"="512"')
        return context.get_dummy_value()

    return types.none(), codegen


@intrinsic
def pow2_shifted(typingctx, t):  # pragma: no cover - code generation
    """2**k as a float32, from t = 1.5·2**23 + k (a "shifter" sum that rounded k to an integer
    in t's low bits), for -127 < k < 128: the exponent field is (bits(t) + 127) << 23, since
    the shifter's own bits all shift out. In 32-bit integer IR (Numba would widen the
    arithmetic to 64 bits, which costs vector shuffles)."""
    if t != types.float32:
        return None
    i32 = ir.IntType(32)

    def codegen(context, builder, sig, args):
        b = builder.add(builder.bitcast(args[0], i32), ir.Constant(i32, 127))
        return builder.bitcast(builder.shl(b, ir.Constant(i32, 23)), ir.FloatType())

    return types.float32(types.float32), codegen


@inline
def double_to_half(v):  # pragma: no cover
    """float64 → float16 bits, rounded once to nearest even (via float32 rounded to odd)."""
    f = np.float32(v)
    if np.float64(f) != v and v == v and abs(f) != np.inf:
        b = float_bits(f)
        if abs(np.float64(f)) > abs(v):  # rounded away from zero: step back towards it
            b = np.uint32(b - np.uint32(1))  # (Numba widens uint32 arithmetic otherwise)
        f = bits_float(np.uint32(b | np.uint32(1)))
    elif abs(f) == np.inf and abs(v) != np.inf:  # past float32's range: the largest float32
        f = bits_float(np.uint32(float_bits(f) - np.uint32(1)))
    return float_to_half(f)


def relu(v):  # pragma: no cover - replaced by the overload
    """max(0, v) with Direct3D's max: +0 for NaN, -0 and +0 (a select: it vectorises)."""
    raise NotImplementedError


@overload(relu, inline="always")
def _relu(v):  # pragma: no cover - typing
    if v == types.float32:
        return lambda v: v if v > np.float32(0) else np.float32(0)
    return lambda v: v if v > 0.0 else 0.0


def load32(x, i):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


def load64(x, i):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


def store(y, i, v):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


def store_int(y, i, v):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


def store_saturated(y, i, v):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


@overload(store_saturated, inline="always")
def _store_saturated(y, i, v):  # pragma: no cover - typing
    """A float into an integer tensor as Direct3D converts (ftoi/ftou): toward zero, saturated
    to the type's range, NaN to 0. Every branch is defined behaviour (a plain conversion of an
    out-of-range float is not, in C or LLVM)."""
    dt = y.dtype
    bits = dt.bitwidth
    if dt.signed:
        top, lo, hi = 2.0 ** (bits - 1), -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        bottom = -top
    else:
        top, lo, hi, bottom = 2.0 ** bits, 0, 2 ** bits - 1, 0.0
    np_type = getattr(np, dt.name)
    lo_c, hi_c, zero = np_type(lo), np_type(hi), np_type(0)

    def store_sat(y, i, v):
        if v != v:
            y[i] = zero
        elif v >= top:
            y[i] = hi_c
        elif v <= bottom:
            y[i] = lo_c
        else:
            y[i] = dt(v)
    return store_sat


@overload(store_int, inline="always")
def _store_int(y, i, v):  # pragma: no cover - typing
    """An integer tensor's element (uint16 here is UINT16, not FLOAT16 bits): C's conversion."""
    dt = y.dtype

    def store_integer(y, i, v):
        y[i] = dt(v)
    return store_integer


@overload(load32, inline="always")
def _load32(x, i):  # pragma: no cover - typing
    if x.dtype == types.uint16:
        return lambda x, i: half_to_float(x[i])
    return lambda x, i: np.float32(x[i])


@overload(load64, inline="always")
def _load64(x, i):  # pragma: no cover - typing
    if x.dtype == types.uint16:
        return lambda x, i: np.float64(half_to_float(x[i]))
    return lambda x, i: np.float64(x[i])


@overload(store, inline="always")
def _store(y, i, v):  # pragma: no cover - typing
    if y.dtype == types.uint16:
        if v == types.float64:
            def store_half_from_double(y, i, v):
                y[i] = double_to_half(v)
            return store_half_from_double

        def store_half(y, i, v):
            y[i] = float_to_half(np.float32(v))
        return store_half

    if y.dtype == types.float64:
        def store_double(y, i, v):
            y[i] = np.float64(v)
        return store_double

    def store_float(y, i, v):
        y[i] = np.float32(v)
    return store_float


@intrinsic
def maxnum32(typingctx, a, b):  # pragma: no cover - code generation
    """llvm.maxnum.f32: the larger of two float32, a NaN ignored (NaN only when both are), and
    either zero when they are -0 and +0. A loop of it vectorises (vmaxps and a NaN fix-up),
    where a compare and select does not: Numba puts no fast-math flags on the select."""
    if a != types.float32 or b != types.float32:
        return None
    f32 = ir.FloatType()

    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(f32, [f32, f32]),
                                            "llvm.maxnum.f32")
        return builder.call(fn, args)

    return types.float32(types.float32, types.float32), codegen
