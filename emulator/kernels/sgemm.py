"""A float32 matrix product for small shapes, its register tile emitted as LLVM IR.

``sgemm(m, n, k, a, lda, b, ldb, c, ldc)``: C = A x B (row-major FLOAT32, int64 addresses,
leading dimensions in elements; C overwritten), single-threaded, called from compiled kernels.

Why: a BLAS packs A and B for every call and its kernels are tuned for large products; the
recurrent rows call it once per task and step on H [batch x hidden] x a packed Rᵀ block, where
M is the batch (16 in issue 17's LSTM). On the 2-core AMD dev box OpenBLAS ran 16 x 512 x 128
at about a third of its 1024^3 rate. Here the tile is MR rows x NV vectors of LANES floats of
accumulators held in registers (phis) for the whole k loop: each step loads NV vectors of B's
row k and broadcasts one element of each A row, one FMA per accumulator (``llvm.fma``: one
rounding per step, so a dot product's error is within the classical bound of any order). A is
read in place (a row's elements k apart are one broadcast each), B row by row (a small panel
first copied dense where several row tiles read it: ``sgemm``).

Shapes: LANES 16 where the CPU has AVX-512 (the tile 6 x 32 in 12 zmm registers; the function
is asked for 512-bit vectors), else 8 (6 x 16 in 12 ymm of AVX2's 16). Rows left over after the
6-row tiles take a 4-, 2- or 1-row tile; columns left over after the last whole tile a
one-vector tile, then a scalar loop. The bytes depend only on the shapes, never on the thread
that runs a call.
"""

from __future__ import annotations

from typing import Any

import llvmlite.binding as llb
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .jit import helper, inline
from .qgemm import _emit_tile_loop
from .strided import typed_pointer

LANES = 16 if "+avx512f" in llb.get_host_cpu_features().flatten().split(",") else 8
NV = 2  # vectors of columns per tile
NR = NV * LANES  # columns per tile
MR = 6  # rows per tile
PACK_MOST = 4096  # floats: a packed panel (k x NR) stays in L1 beside A's rows and C's tile

_I64, _F32 = ir.IntType(64), ir.FloatType()
_f32s = typed_pointer(types.float32)


def _tile_intrinsic(rows: int, vectors: int) -> Any:
    @intrinsic
    def tile(typingctx, a, lda, b, ldb, k, c, ldc):  # pragma: no cover - code generation
        """C[rows x vectors * LANES] = A[rows x k] x B[k x vectors * LANES] at int64 addresses
        (leading dimensions in elements)."""
        sig = types.void(types.int64, types.int64, types.int64, types.int64, types.int64,
                         types.int64, types.int64)

        def codegen(context, builder, signature, args):
            a_base, lda_, b_base, ldb_, count, c_base, ldc_ = args
            if LANES == 16:  # 512-bit vectors in the function this is inlined into
                for attr in ('"prefer-vector-width"="512"', '"min-legal-vector-width"="512"'):
                    set.add(builder.function.attributes, attr)
            vt = ir.VectorType(_F32, LANES)
            fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt] * 3),
                                                 f"llvm.fma.v{LANES}f32")
            four = ir.Constant(_I64, 4)
            lda_b, ldb_b, ldc_b = (builder.mul(v, four) for v in (lda_, ldb_, ldc_))

            def b_loads(kk):
                row = builder.add(b_base, builder.mul(kk, ldb_b))
                return [builder.load(builder.inttoptr(builder.add(
                    row, ir.Constant(_I64, 4 * LANES * v)), vt.as_pointer()), align=4)
                    for v in range(vectors)]

            def a_word(kk, r):
                return builder.add(builder.add(a_base, builder.mul(kk, four)),
                                   builder.mul(lda_b, ir.Constant(_I64, r)))

            def c_at(r, v):
                return builder.add(builder.add(c_base, builder.mul(ldc_b, ir.Constant(_I64, r))),
                                   ir.Constant(_I64, 4 * LANES * v))

            _emit_tile_loop(builder, "sgemm", count, (rows, vectors, LANES), b_loads, a_word, 4,
                            lambda acc, splat, b: builder.call(fma, [splat, b, acc]), c_at, 4,
                            element=_F32)
            return context.get_dummy_value()

        return sig, codegen

    return tile


_tile6, _tile4, _tile2, _tile1 = (_tile_intrinsic(r, NV) for r in (6, 4, 2, 1))
_vec6, _vec4, _vec2, _vec1 = (_tile_intrinsic(r, 1) for r in (6, 4, 2, 1))


@inline
def _tile(rows, whole, a, lda, b, ldb, k, c, ldc):  # pragma: no cover - compiled
    """The tile of ``rows`` rows (6, 4, 2 or 1) and NV vectors (``whole``) or one."""
    if whole:
        if rows == 6:
            _tile6(a, lda, b, ldb, k, c, ldc)
        elif rows == 4:
            _tile4(a, lda, b, ldb, k, c, ldc)
        elif rows == 2:
            _tile2(a, lda, b, ldb, k, c, ldc)
        else:
            _tile1(a, lda, b, ldb, k, c, ldc)
    elif rows == 6:
        _vec6(a, lda, b, ldb, k, c, ldc)
    elif rows == 4:
        _vec4(a, lda, b, ldb, k, c, ldc)
    elif rows == 2:
        _vec2(a, lda, b, ldb, k, c, ldc)
    else:
        _vec1(a, lda, b, ldb, k, c, ldc)


@inline
def _panel(whole, j, m, k, a, lda, b, ldb, c, ldc):  # pragma: no cover - compiled
    """Columns j .. j + NR - 1 (``whole``) or j .. j + LANES - 1 of every row, B's panel at
    address ``b`` with rows ``ldb`` apart: the 6-row tiles, then a 4-, 2- or 1-row tile.
    Inlined, so that a packed panel's constant ``ldb`` reaches the tiles' k loops (a runtime
    row stride there cost ~15 % at k = 64)."""
    i = 0
    while i + MR <= m:
        _tile(6, whole, a + 4 * i * lda, lda, b, ldb, k, c + 4 * (i * ldc + j), ldc)
        i += MR
    if i + 4 <= m:
        _tile(4, whole, a + 4 * i * lda, lda, b, ldb, k, c + 4 * (i * ldc + j), ldc)
        i += 4
    if i + 2 <= m:
        _tile(2, whole, a + 4 * i * lda, lda, b, ldb, k, c + 4 * (i * ldc + j), ldc)
        i += 2
    if i < m:
        _tile(1, whole, a + 4 * i * lda, lda, b, ldb, k, c + 4 * (i * ldc + j), ldc)


@helper
def sgemm(m, n, k, a, lda, b, ldb, c, ldc):  # pragma: no cover - compiled
    """C[m x n] = A[m x k] x B[k x n], row-major FLOAT32 at int64 addresses (module doc).

    Column panels outer, the row tiles inner, so a panel of B serves every row tile while it is
    in cache (row tiles outer swept all of B once per tile: the recurrent steps' 2 MB Rᵀ blocks
    came from L3 three times a step for a batch of 16). Where two or more 6-row tiles share a
    panel small enough to stay in L1 (``PACK_MOST``), it is first copied into a dense k x NR
    buffer: B's rows in place are ``ldb`` apart, which for a power-of-two row length maps the
    panel onto a few L1 sets, so every tile re-read it from L2 (Xeon, one thread, 512 x 512 x
    64 in cache: 157 against 108 GFLOP/s in place; OpenBLAS 139). A larger panel is read in
    place: packed, the recurrent steps' 512 x 32 panels (64 KB) cost a second pass over Rᵀ and
    still came from L2 (LSTM 512/128/16, 2 threads, dev box: 62 -> 103 ms)."""
    pack = m >= 2 * MR and 0 < k * NR <= PACK_MOST
    pk = np.empty(k * NR if pack else 1, np.float32)
    at = pk.ctypes.data
    pb = _f32s(b)
    j = 0
    while j + NR <= n:
        if pack:
            for q in range(k):
                row = q * ldb + j
                for v in range(NR):
                    pk[q * NR + v] = pb[row + v]
            _panel(True, j, m, k, a, lda, at, NR, c, ldc)
        else:
            _panel(True, j, m, k, a, lda, b + 4 * j, ldb, c, ldc)
        j += NR
    while j + LANES <= n:
        _panel(False, j, m, k, a, lda, b + 4 * j, ldb, c, ldc)
        j += LANES
    if j < n:  # the last columns one by one
        pa, pc = _f32s(a), _f32s(c)
        for r in range(m):
            for jj in range(j, n):
                s = np.float32(0.0)
                for q in range(k):
                    s = s + pa[r * lda + q] * pb[q * ldb + jj]
                pc[r * ldc + jj] = s
    pk[0] = 0.0  # pk is used after the tiles: Numba frees an array after its last use
