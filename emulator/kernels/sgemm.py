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
read in place (a row's elements k apart are one broadcast each), B row by row, neither packed.

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

from .jit import helper
from .strided import typed_pointer

LANES = 16 if "+avx512f" in llb.get_host_cpu_features().flatten().split(",") else 8
NV = 2  # vectors of columns per tile
NR = NV * LANES  # columns per tile
MR = 6  # rows per tile

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
            zero = ir.Constant(vt, [0.0] * LANES)
            entry = builder.block
            body = builder.append_basic_block("sgemm.body")
            done = builder.append_basic_block("sgemm.done")
            builder.cbranch(builder.icmp_signed(">", count, ir.Constant(_I64, 0)), body, done)
            builder.position_at_end(body)
            kk = builder.phi(_I64)
            kk.add_incoming(ir.Constant(_I64, 0), entry)
            acc = [[builder.phi(vt) for _ in range(vectors)] for _ in range(rows)]
            for row in acc:
                for phi in row:
                    phi.add_incoming(zero, entry)
            b_row = builder.add(b_base, builder.mul(kk, ldb_b))
            bv = [builder.load(builder.inttoptr(
                builder.add(b_row, ir.Constant(_I64, 4 * LANES * v)), vt.as_pointer()), align=4)
                for v in range(vectors)]
            a_col = builder.add(a_base, builder.mul(kk, four))
            new = []
            for r in range(rows):
                at = builder.add(a_col, builder.mul(lda_b, ir.Constant(_I64, r)))
                x = builder.load(builder.inttoptr(at, _F32.as_pointer()), align=4)
                splat = builder.shuffle_vector(
                    builder.insert_element(ir.Constant(vt, ir.Undefined), x,
                                           ir.Constant(ir.IntType(32), 0)),
                    ir.Constant(vt, ir.Undefined), ir.Constant(ir.VectorType(
                        ir.IntType(32), LANES), [0] * LANES))
                new.append([builder.call(fma, [splat, bv[v], acc[r][v]])
                            for v in range(vectors)])
            k_next = builder.add(kk, ir.Constant(_I64, 1))
            kk.add_incoming(k_next, body)
            for r in range(rows):
                for v in range(vectors):
                    acc[r][v].add_incoming(new[r][v], body)
            builder.cbranch(builder.icmp_signed("<", k_next, count), body, done)
            builder.position_at_end(done)
            finals = []
            for r in range(rows):
                for v in range(vectors):
                    final = builder.phi(vt)
                    final.add_incoming(zero, entry)
                    final.add_incoming(new[r][v], body)
                    finals.append(final)
            for r in range(rows):
                row_at = builder.add(c_base, builder.mul(ldc_b, ir.Constant(_I64, r)))
                for v in range(vectors):
                    at = builder.add(row_at, ir.Constant(_I64, 4 * LANES * v))
                    builder.store(finals[r * vectors + v], builder.inttoptr(at, vt.as_pointer()),
                                  align=4)
            return context.get_dummy_value()

        return sig, codegen

    return tile


_tile6, _tile4, _tile2, _tile1 = (_tile_intrinsic(r, NV) for r in (6, 4, 2, 1))
_vec6, _vec4, _vec2, _vec1 = (_tile_intrinsic(r, 1) for r in (6, 4, 2, 1))


@helper
def _rows(rows, i, n, k, a, lda, b, ldb, c, ldc):  # pragma: no cover - compiled
    """Rows i .. i + rows - 1 (rows 6, 4, 2 or 1): the whole tiles, a one-vector tile, then
    the last columns one by one."""
    ai = a + 4 * i * lda
    ci = c + 4 * i * ldc
    j = 0
    while j + NR <= n:
        if rows == 6:
            _tile6(ai, lda, b + 4 * j, ldb, k, ci + 4 * j, ldc)
        elif rows == 4:
            _tile4(ai, lda, b + 4 * j, ldb, k, ci + 4 * j, ldc)
        elif rows == 2:
            _tile2(ai, lda, b + 4 * j, ldb, k, ci + 4 * j, ldc)
        else:
            _tile1(ai, lda, b + 4 * j, ldb, k, ci + 4 * j, ldc)
        j += NR
    while j + LANES <= n:
        if rows == 6:
            _vec6(ai, lda, b + 4 * j, ldb, k, ci + 4 * j, ldc)
        elif rows == 4:
            _vec4(ai, lda, b + 4 * j, ldb, k, ci + 4 * j, ldc)
        elif rows == 2:
            _vec2(ai, lda, b + 4 * j, ldb, k, ci + 4 * j, ldc)
        else:
            _vec1(ai, lda, b + 4 * j, ldb, k, ci + 4 * j, ldc)
        j += LANES
    if j < n:
        pa, pb, pc = _f32s(ai), _f32s(b), _f32s(ci)
        for r in range(rows):
            for jj in range(j, n):
                s = np.float32(0.0)
                for q in range(k):
                    s = s + pa[r * lda + q] * pb[q * ldb + jj]
                pc[r * ldc + jj] = s


@helper
def sgemm(m, n, k, a, lda, b, ldb, c, ldc):  # pragma: no cover - compiled
    """C[m x n] = A[m x k] x B[k x n], row-major FLOAT32 at int64 addresses (module doc)."""
    i = 0
    while i + MR <= m:
        _rows(6, i, n, k, a, lda, b, ldb, c, ldc)
        i += MR
    if i + 4 <= m:
        _rows(4, i, n, k, a, lda, b, ldb, c, ldc)
        i += 4
    if i + 2 <= m:
        _rows(2, i, n, k, a, lda, b, ldb, c, ldc)
        i += 2
    if i < m:
        _rows(1, i, n, k, a, lda, b, ldb, c, ldc)
