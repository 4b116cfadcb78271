"""Calls of the BLAS's ``?gemm`` from compiled kernels (by address: ``compute/blas.address``),
in one module inside ``kernels/`` so that the kernels that inline them (convolution tiles,
batched products, the recurrent loop, attention) are recompiled when they change (the disk
cache is keyed by this folder's sources, ``jit.cache_root``).

- ``sgemm64`` / ``sgemm32`` (NumPy's OpenBLAS with 64-bit integers, a plain CBLAS with 32):
  C = A x B, row-major, no transposes, on arrays and byte offsets;
- ``gemm_row_[sd](64|32)``: one row of a table of calls (transposes, sizes, addresses, alpha,
  beta), single or double precision;
- ``sgemm_at``: C = alpha op(A) op(B) on int64 addresses, with an array kept alive across the
  call; ``address``: a typed pointer's or an array's data address.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .jit import inline

_I32, _I64, _F32 = ir.IntType(32), ir.IntType(64), ir.FloatType()
_VOIDP = ir.IntType(8).as_pointer()


def _gemm_type(int_t: ir.Type) -> ir.FunctionType:
    """CBLAS sgemm: order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc."""
    return ir.FunctionType(ir.VoidType(), [_I32, _I32, _I32, int_t, int_t, int_t, _F32, _VOIDP,
                                           int_t, _VOIDP, int_t, _F32, _VOIDP, int_t])


def _sgemm_intrinsic(int_t: ir.Type) -> Any:
    @intrinsic
    def call(typingctx, fn, m, n, k, a, a_at, lda, b, ldb, beta, c, c_at,
             ldc):  # pragma: no cover - code generation
        """sgemm on arrays ``a`` (from byte ``a_at``), ``b`` and ``c`` (from byte ``c_at``).
        The arrays themselves are the arguments, not their addresses: Numba frees an array
        after its last use, and a buffer made in the kernel would otherwise be gone before
        the call (freed memory, seen as a segmentation fault for large tiles)."""
        sig = types.void(types.int64, types.int64, types.int64, types.int64, a, types.int64,
                         types.int64, b, types.int64, types.float32, c, types.int64,
                         types.int64)

        def codegen(context, builder, sig, args):
            fn, m, n, k, a, a_at, lda, b, ldb, beta, c, c_at, ldc = args

            def i(v):
                return builder.trunc(v, int_t) if int_t.width < 64 else v

            def data(index, value, at=None):
                ary = context.make_array(sig.args[index])(context, builder, value)
                ptr = builder.bitcast(ary.data, _VOIDP)
                return ptr if at is None else builder.gep(ptr, [at])

            builder.call(builder.inttoptr(fn, _gemm_type(int_t).as_pointer()),
                         [ir.Constant(_I32, 101), ir.Constant(_I32, 111), ir.Constant(_I32, 111),
                          i(m), i(n), i(k), ir.Constant(_F32, 1.0), data(4, a, a_at), i(lda),
                          data(7, b), i(ldb), beta, data(10, c, c_at), i(ldc)])
            return context.get_dummy_value()

        return sig, codegen

    return call


sgemm64 = _sgemm_intrinsic(_I64)  # NumPy's OpenBLAS (64-bit integers)
sgemm32 = _sgemm_intrinsic(_I32)  # a plain CBLAS


def _gemm_calls_intrinsic(int_t: ir.Type, real_t: ir.Type) -> Any:
    @intrinsic
    def call(typingctx, fn, ints, reals, i):  # pragma: no cover - code generation
        """``?gemm`` at address ``fn`` with row ``i`` of ``ints`` (transA, transB, M, N, K,
        A, lda, B, ldb, C, ldc: addresses of bound buffers the caller holds) and ``reals``
        (alpha, beta)."""
        sig = types.void(types.int64, ints, reals, types.int64)
        fn_type = ir.FunctionType(ir.VoidType(), [_I32, _I32, _I32, int_t, int_t, int_t, real_t,
                                                  _VOIDP, int_t, _VOIDP, int_t, real_t, _VOIDP,
                                                  int_t])

        def codegen(context, builder, sig, args):
            fn, ints, reals, i = args
            iary = context.make_array(sig.args[1])(context, builder, ints)
            rary = context.make_array(sig.args[2])(context, builder, reals)
            row = builder.mul(i, ir.Constant(_I64, 11))

            def at(k):
                return builder.load(builder.gep(iary.data, [builder.add(row, ir.Constant(
                    _I64, k))]))

            def n(k):
                v = at(k)
                return builder.trunc(v, int_t) if int_t.width < 64 else v

            def p(k):
                return builder.inttoptr(at(k), _VOIDP)

            def real(k):
                v = builder.load(builder.gep(rary.data, [builder.add(builder.mul(
                    i, ir.Constant(_I64, 2)), ir.Constant(_I64, k))]))
                return builder.fptrunc(v, real_t) if isinstance(real_t, ir.FloatType) else v

            trans = [builder.trunc(at(k), _I32) for k in (0, 1)]
            builder.call(builder.inttoptr(fn, fn_type.as_pointer()),
                         [ir.Constant(_I32, 101), *trans, n(2), n(3), n(4), real(0), p(5), n(6),
                          p(7), n(8), real(1), p(9), n(10)])
            return context.get_dummy_value()

        return sig, codegen

    return call


gemm_row_s64 = _gemm_calls_intrinsic(_I64, _F32)
gemm_row_s32 = _gemm_calls_intrinsic(_I32, _F32)
gemm_row_d64 = _gemm_calls_intrinsic(_I64, ir.DoubleType())
gemm_row_d32 = _gemm_calls_intrinsic(_I32, ir.DoubleType())


def _sgemm_at_intrinsic(int_t: ir.Type) -> Any:
    @intrinsic
    def call(typingctx, fn, ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc,
             keep):  # pragma: no cover - code generation
        """Row-major CBLAS sgemm at address ``fn``: C = alpha op(A) op(B) (beta 0; ``ta``,
        ``tb``: 1 to transpose), A, B, C int64 addresses. ``keep``: an array the call reaches
        through an address, passed so that Numba keeps it alive until the call (it frees an
        array after its last use)."""
        sig = types.void(types.int64, types.int64, types.int64, types.int64, types.int64,
                         types.int64, types.float32, types.int64, types.int64, types.int64,
                         types.int64, types.int64, types.int64, keep)
        fn_type = ir.FunctionType(ir.VoidType(), [_I32, _I32, _I32, int_t, int_t, int_t, _F32,
                                                  _VOIDP, int_t, _VOIDP, int_t, _F32, _VOIDP,
                                                  int_t])

        def codegen(context, builder, sig, args):
            fn, ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc, _ = args

            def i(v):
                return builder.trunc(v, int_t) if int_t.width < 64 else v

            def trans(v):  # CBLAS: 111 as it is, 112 transposed
                return builder.trunc(builder.add(v, ir.Constant(_I64, 111)), _I32)

            def p(v):
                return builder.inttoptr(v, _VOIDP)

            builder.call(builder.inttoptr(fn, fn_type.as_pointer()),
                         [ir.Constant(_I32, 101), trans(ta), trans(tb), i(m), i(n), i(k), alpha,
                          p(a), i(lda), p(b), i(ldb), ir.Constant(_F32, 0.0), p(c), i(ldc)])
            return context.get_dummy_value()

        return sig, codegen

    return call


_sgemm_at64, _sgemm_at32 = _sgemm_at_intrinsic(_I64), _sgemm_at_intrinsic(_I32)


@intrinsic
def address(typingctx, ptr):  # pragma: no cover - code generation
    """A typed pointer, or an array's data, as an int64 address."""
    if isinstance(ptr, types.CPointer):
        def codegen(context, builder, sig, args):
            return builder.ptrtoint(args[0], _I64)
    elif isinstance(ptr, types.Array):
        def codegen(context, builder, sig, args):
            ary = context.make_array(sig.args[0])(context, builder, args[0])
            return builder.ptrtoint(ary.data, _I64)
    else:
        return None
    return types.int64(ptr), codegen




@inline
def sgemm_at(wide, fn, ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc,
          keep):  # pragma: no cover - compiled
    if wide:
        _sgemm_at64(fn, ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc, keep)
    else:
        _sgemm_at32(fn, ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc, keep)
