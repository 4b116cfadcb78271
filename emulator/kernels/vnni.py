"""An int8 GEMM micro-kernel on AVX512-VNNI (vpdpbusd), emitted as LLVM IR.

Numba has no vector types, and LLVM does not form vpdpbusd from scalar code (it stops at 16-bit
dot products), so ``vnni_tile`` is a Numba intrinsic that writes the loop itself: a 6 x 64 tile
of int32 accumulators held in 24 zmm registers, each 4-k step loading four 64-byte B vectors and
broadcasting 4 bytes of each A row. vpdpbusd multiplies unsigned bytes (A) by signed bytes (B)
and adds groups of four into int32 lanes, exactly.

Packing makes every INT8/UINT8 pair fit: an INT8 A is shifted to unsigned (a + 128) and a UINT8 B
to signed (b - 128); the shifts and the zero points are corrected exactly afterwards from the row
sums of A and the column sums of B (see ``qgemm.requantize``). Used only where the CPU reports
avx512vnni (``HAS_VNNI``); ``qgemm.gemm`` is the portable path.
"""

from __future__ import annotations

import llvmlite.binding as llb
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .jit import kernel, prange
from .qgemm import batch_offsets

HAS_VNNI = "+avx512vnni" in llb.get_host_cpu_features().flatten().split(",")
MR = 6  # rows of A per tile
NV = 4  # 16-lane vectors of columns per tile
NR = 16 * NV  # columns per tile
K4_BLOCK = 16384  # 4-k groups per int32 accumulation: 255 * 128 * 65536 < 2^31


def _address(context, builder, array_type, array, byte_offset):
    data = context.make_array(array_type)(context, builder, array).data
    return builder.add(builder.ptrtoint(data, ir.IntType(64)), byte_offset)


@intrinsic
def vnni_tile(typingctx, ap, a_off, bp, b_off, k4, c, c_off, ldc):  # pragma: no cover
    """c[c_off + r * ldc + j] = sum over k4 groups of ap x bp for the MR x NR tile (overwrites).

    ap: uint8 panel, groups of MR rows x 4 bytes from byte a_off; bp: int8 panel, groups of
    NV x 64 bytes from byte b_off; c: int32 array, rows ``ldc`` elements apart."""
    sig = types.void(ap, a_off, bp, b_off, k4, c, c_off, ldc)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        i32 = ir.IntType(32)
        v16 = ir.VectorType(i32, 16)
        ap_t, _, bp_t, _, _, c_t, _, _ = signature.args
        row_bytes = builder.mul(args[7], ir.Constant(i64, 4))
        a_base = _address(context, builder, ap_t, args[0], args[1])
        b_base = _address(context, builder, bp_t, args[2], args[3])
        c_base = _address(context, builder, c_t, args[5], builder.mul(args[6], ir.Constant(i64, 4)))
        count = args[4]
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(v16, [v16, v16, v16]),
                                            "llvm.x86.avx512.vpdpbusd.512")
        zero = ir.Constant(v16, [0] * 16)
        entry = builder.block
        body = builder.append_basic_block("vnni.body")
        done = builder.append_basic_block("vnni.done")
        builder.cbranch(builder.icmp_signed(">", count, ir.Constant(i64, 0)), body, done)

        builder.position_at_end(body)
        k = builder.phi(i64)
        acc = [[builder.phi(v16) for _ in range(NV)] for _ in range(MR)]
        k.add_incoming(ir.Constant(i64, 0), entry)
        for row in acc:
            for phi in row:
                phi.add_incoming(zero, entry)
        b_step = builder.add(b_base, builder.mul(k, ir.Constant(i64, NV * 64)))
        bvec = [builder.load(builder.inttoptr(builder.add(b_step, ir.Constant(i64, 64 * v)),
                                              v16.as_pointer()), align=1) for v in range(NV)]
        a_step = builder.add(a_base, builder.mul(k, ir.Constant(i64, MR * 4)))
        new = []
        for r in range(MR):
            word = builder.load(builder.inttoptr(builder.add(a_step, ir.Constant(i64, 4 * r)),
                                                 i32.as_pointer()), align=1)
            splat = builder.shuffle_vector(
                builder.insert_element(ir.Constant(v16, ir.Undefined), word, ir.Constant(i32, 0)),
                ir.Constant(v16, ir.Undefined), ir.Constant(v16, [0] * 16))
            new.append([builder.call(fn, [acc[r][v], splat, bvec[v]]) for v in range(NV)])
        k_next = builder.add(k, ir.Constant(i64, 1))
        k.add_incoming(k_next, body)
        for r in range(MR):
            for v in range(NV):
                acc[r][v].add_incoming(new[r][v], body)
        builder.cbranch(builder.icmp_signed("<", k_next, count), body, done)

        builder.position_at_end(done)
        finals = []
        for r in range(MR):  # every phi first: LLVM wants them at the top of the block
            for v in range(NV):
                final = builder.phi(v16)
                final.add_incoming(zero, entry)
                final.add_incoming(new[r][v], body)
                finals.append((r, v, final))
        for r, v, final in finals:
            row = builder.add(c_base, builder.mul(row_bytes, ir.Constant(i64, r)))
            at = builder.add(row, ir.Constant(i64, 4 * 16 * v))
            builder.store(final, builder.inttoptr(at, v16.as_pointer()), align=1)
        return context.get_dummy_value()

    return sig, codegen


@kernel
def pack_a(a, bsizes, ba, batches, M, K, sm, sk, flip, out, row_sums):  # pragma: no cover
    """out[b, t, k // 4, r, k % 4] = A[b, t * MR + r, k] as uint8 (INT8 flipped by 128), zero
    padded; row_sums[b, m] = sum_k of those bytes."""
    tiles = out.shape[1]
    for task in prange(batches * tiles):
        bi = task // tiles
        t = task - bi * tiles
        o, _, _ = batch_offsets(bi, bsizes, ba, ba, ba)
        panel = out[bi, t]
        panel[...] = 0
        for r in range(min(MR, M - t * MR)):
            m = t * MR + r
            base = np.uint64(o + m * sm)
            total = np.int64(0)
            for k in range(K):
                v = np.uint8(np.uint8(a[base + np.uint64(k) * np.uint64(sk)]) ^ flip)
                panel[k >> 2, r, k & 3] = v
                total += np.int64(v)
            row_sums[bi, m] = total


@kernel
def pack_b(b, bsizes, bb, batches, K, N, sk, sn, flip, out, col_sums):  # pragma: no cover
    """out[b, t, k // 4, v, l, k % 4] = B[b, k, t * NR + 16 v + l] as int8 (UINT8 flipped by
    128), zero padded; col_sums[b, n] = sum_k of those values. Rows of B are read in order."""
    tiles = out.shape[1]
    for task in prange(batches * tiles):
        bi = task // tiles
        t = task - bi * tiles
        o, _, _ = batch_offsets(bi, bsizes, bb, bb, bb)
        panel = out[bi, t]
        panel[...] = 0
        width = min(NR, N - t * NR)
        sums = np.zeros(NR, np.int64)
        for k in range(K):
            row = np.uint64(o + k * sk + t * NR * sn)
            g = k >> 2
            q = k & 3
            for j in range(width):
                v = np.int8(np.uint8(b[row + np.uint64(j) * np.uint64(sn)]) ^ flip)
                panel[g, j >> 4, j & 15, q] = v
                sums[j] += np.int64(v)
        for j in range(width):
            col_sums[bi, t * NR + j] = sums[j]


@kernel
def gemm(ap, bp, acc):  # pragma: no cover
    """acc[b, m, n] (int32, padded to whole tiles) = sum_k of the packed byte products; K must
    fit one exact int32 block (4 * K4_BLOCK)."""
    batches = ap.shape[0]
    mtiles = ap.shape[1]
    groups = ap.shape[2]
    ntiles = bp.shape[1]
    ldc = acc.shape[2]
    flat_a = ap.reshape(-1)
    flat_b = bp.reshape(-1)
    flat_c = acc.reshape(-1)
    a_panel = groups * MR * 4
    b_panel = groups * NR * 4
    for task in prange(batches * mtiles * ntiles):
        bi = task // (mtiles * ntiles)
        r = task - bi * mtiles * ntiles
        mt = r // ntiles
        nt = r - mt * ntiles
        vnni_tile(flat_a, np.int64((bi * mtiles + mt) * a_panel), flat_b,
                  np.int64((bi * ntiles + nt) * b_panel), np.int64(groups), flat_c,
                  np.int64((bi * acc.shape[1] + mt * MR) * ldc + nt * NR), np.int64(ldc))
