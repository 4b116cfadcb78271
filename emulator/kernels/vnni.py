"""An int8 GEMM micro-kernel on AVX512-VNNI (vpdpbusd), emitted as LLVM IR.

Numba has no vector types, and LLVM does not form vpdpbusd from scalar code (it stops at 16-bit
dot products), so ``vnni_tile`` is a Numba intrinsic that writes the loop itself: a 6 x 64 tile
of int32 accumulators held in 24 zmm registers, each 4-k step loading four 64-byte B vectors and
broadcasting 4 bytes of each A row. vpdpbusd multiplies unsigned bytes (A) by signed bytes (B)
and adds groups of four into int32 lanes, exactly.

Packing makes every INT8/UINT8 pair fit: an INT8 A is shifted to unsigned (a + 128) and a UINT8 B
to signed (b - 128); the shifts and the zero points are corrected exactly afterwards from the row
sums of A and the column sums of B (see ``gemm_requantize``). Used only where the CPU reports
avx512vnni (``HAS_VNNI``); ``qgemm.gemm`` is the portable path.
"""

from __future__ import annotations

import llvmlite.binding as llb
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .index import offsets4
from .jit import helper, kernel, prange
from .qgemm import quantize, row_factors

HAS_VNNI = "+avx512vnni" in llb.get_host_cpu_features().flatten().split(",")
MR = 6  # rows of A per tile
NV = 4  # 16-lane vectors of columns per tile
NR = 16 * NV  # columns per tile
K4_BLOCK = 16384  # 4-k groups per int32 accumulation: 255 * 128 * 65536 < 2^31
BLOCK_TILES = 8  # tiles of MR rows per task: A rows and their int32 results stay in cache


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


@helper
def pack_b_tile(b, o, K, N, sk, sn, flip, t, panel, sums):  # pragma: no cover
    """Pack column tile ``t`` of one B (element offset ``o``): panel[k // 4, v, l, k % 4] =
    B[k, t * NR + 16 v + l] as int8 (UINT8 flipped by 128), zero padded; sums[j] = its column
    sums."""
    panel[...] = 0
    if sn == 1:  # contiguous B rows: build each 4-k word of a column from 4 row reads
        words = panel.reshape(-1).view(np.uint32)
        width = np.uint64(max(0, min(NR, N - t * NR)))
        sums[:] = 0
        for k in range(K):
            base = np.uint64(o + k * sk + t * NR)
            at = np.uint64((k >> 2) * NR)
            shift = np.uint32(8 * (k & 3))
            for j in range(width):
                v = np.int8(np.uint8(b[base + j]) ^ flip)
                words[at + j] |= np.uint32(np.uint8(v)) << shift
                sums[j] += np.int64(v)
        return
    for j in range(NR):
        n = t * NR + j
        total = np.int64(0)
        if n < N:
            for k in range(K):
                v = np.int8(np.uint8(b[np.uint64(o + k * sk + n * sn)]) ^ flip)
                panel[k >> 2, j >> 4, j & 15, k & 3] = v
                total += np.int64(v)
        sums[j] = total


@kernel
def pack_b(b, bsizes, bb, batches, K, N, sk, sn, flip, out, col_sums):  # pragma: no cover
    """Pack every column tile of every B (see ``pack_b_tile``); col_sums[b, n]."""
    tiles = out.shape[1]
    for task in prange(batches * tiles):
        bi = task // tiles
        t = task - bi * tiles
        o, _, _, _ = offsets4(bi, bsizes, bb, bb, bb, bb)
        sums = np.empty(NR, np.int64)
        pack_b_tile(b, o, K, N, sk, sn, flip, t, out[bi, t], sums)
        for j in range(min(NR, N - t * NR)):
            col_sums[bi, t * NR + j] = sums[j]


@kernel
def gemm_requantize(a, a32, words, bsizes, ba, bo, batches, M, K, N, a_sm, a_sk, a_flip, bp,
                    cols, zbq,
                    bsc, ascale, as_step, oscale, os_step, ozp, oz_step, has_oz, azp, az_step,
                    has_az, a_shift, lo, hi, y, o_sm, o_sn):  # pragma: no cover
    """One task per block of BLOCK_TILES * MR rows of A: pack them (uint8, row sums), multiply
    by every packed B tile into a small int32 block, and requantize that block straight into
    the output, so nothing of size M x N is ever written but the output.

    Exact sum of (a - za)(b - zb) = acc - zb'·rows[m] - za'·cols[n] + K·za'·zb', with
    za' = za + a_shift and zb' (``zbq``) = zb - b_shift undoing the packing's shifts."""
    groups = bp.shape[2]
    ntiles = bp.shape[1]
    mtiles = (M + MR - 1) // MR
    blocks = (mtiles + BLOCK_TILES - 1) // BLOCK_TILES
    flat_b = bp.reshape(-1)
    b_panel = groups * NR * 4
    flip32 = np.uint32(a_flip) * np.uint32(0x01010101)
    for task in prange(batches * blocks):
        bi = task // blocks
        blk = task - bi * blocks
        t0 = blk * BLOCK_TILES
        tiles = min(BLOCK_TILES, mtiles - t0)
        oa, oo, _, _ = offsets4(bi, bsizes, ba, bo, bo, bo)
        panel = np.zeros(tiles * groups * MR * 4, np.uint8)
        panel32 = panel.view(np.uint32)
        rows = tiles * MR
        row_sums = np.zeros(rows, np.int64)
        ratio = np.empty(rows, np.float64)
        zo = np.empty(rows, np.float64)
        za = np.empty(rows, np.int64)
        for i in range(min(rows, M - t0 * MR)):
            m = t0 * MR + i
            t = i // MR
            r = i - t * MR
            base = np.uint64(oa + m * a_sm)
            total = np.int64(0)
            tile_base = np.uint64(t * groups * MR * 4 + r * 4)
            if words:  # contiguous, 4-byte aligned rows: move whole 4-k groups
                for k in range(np.uint64(K)):
                    total += np.int64(np.uint8(a[base + k]) ^ a_flip)
                w0 = base >> np.uint64(2)
                wt = tile_base >> np.uint64(2)
                for g in range(np.uint64(K >> 2)):
                    panel32[wt + g * np.uint64(MR)] = a32[w0 + g] ^ flip32
            else:
                for k in range(np.uint64(K)):
                    v = np.uint8(np.uint8(a[base + k * np.uint64(a_sk)]) ^ a_flip)
                    panel[tile_base + (k >> np.uint64(2)) * np.uint64(MR * 4)
                          + (k & np.uint64(3))] = v
                    total += np.int64(v)
            row_sums[i] = total
            ratio[i], zo[i] = row_factors(m, ascale, as_step, oscale, os_step, ozp, oz_step,
                                          has_oz)
            za[i] = np.int64(a_shift) + (np.int64(azp[np.uint64(m * az_step)]) if has_az else 0)
        block = np.empty(rows * NR, np.int32)
        for nt in range(ntiles):
            for t in range(tiles):
                vnni_tile(panel, np.int64(t * groups * MR * 4), flat_b,
                          np.int64((bi * ntiles + nt) * b_panel), np.int64(groups), block,
                          np.int64(t * MR * NR), np.int64(NR))
            width = min(NR, N - nt * NR)
            for i in range(min(rows, M - t0 * MR)):
                m = t0 * MR + i
                t1 = row_sums[i] - K * za[i]
                out = np.uint64(oo + m * o_sm + nt * NR * o_sn)
                col = cols[bi, nt * NR:nt * NR + width]
                zb = zbq[nt * NR:nt * NR + width]
                bs = bsc[nt * NR:nt * NR + width]
                acc = block[i * NR:i * NR + width]
                r_i, z_i, za_i = ratio[i], zo[i], za[i]
                if o_sn == 1:
                    for j in range(width):
                        total = np.int64(acc[j]) - zb[j] * t1 - za_i * col[j]
                        y[out + np.uint64(j)] = quantize(total, r_i * bs[j], z_i, lo, hi)
                else:
                    for j in range(width):
                        total = np.int64(acc[j]) - zb[j] * t1 - za_i * col[j]
                        y[out + np.uint64(j) * np.uint64(o_sn)] = quantize(total, r_i * bs[j],
                                                                           z_i, lo, hi)
