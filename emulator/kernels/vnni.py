"""The int8 GEMM of QLMM on AVX512-VNNI (vpdpbusd), its micro-kernel emitted as LLVM IR.

Numba has no vector types, and LLVM does not form vpdpbusd from scalar code (it stops at 16-bit
dot products), so ``vnni_tile`` is a Numba intrinsic that writes the loop itself: a 6 x 64 tile
of int32 accumulators held in 24 zmm registers, each 4-k step loading four 64-byte B vectors and
broadcasting 4 bytes of each A row. vpdpbusd multiplies unsigned bytes (A) by signed bytes (B)
and adds groups of four into int32 lanes, exactly. Where the CPU has no avx512vnni the same
arithmetic is emitted as plain LLVM vector code (exact too, slower): the kernels stay testable on
every machine, and ``qgemm.qlmm`` remains the path the plan takes there.

Packing makes every INT8/UINT8 pair fit: an INT8 A is shifted to unsigned (a + 128) and a UINT8 B
to signed (b - 128); the shifts and the zero points are corrected exactly afterwards from the row
sums of A and the column sums of B (see ``qlmm``).

Where the CPU has AMX int8 tiles and K is a multiple of 64 (the plan's ``G_AMX``), the products
are ``kernels/amx.py``'s 16 x 64 blocks instead of ``vnni_tile``: A packed row by row, the same B
panels (already AMX's layout), the same int32 block and requantization, the same bytes.

``qlmm`` is one parallel pass over tasks of (batch, rows of A, span of column tiles). A task packs
its B panels itself (unless ``pack_b`` packed every distinct B beforehand, for large matrices
whose rows are split among several tasks), then for each block of BLOCK_TILES * MR rows packs A
and requantizes every int32 tile straight into the output. Scratch is per task and bounded (see
ops/qlmm.py), never sized by the batch count or a broadcast dimension.
"""

from __future__ import annotations

import llvmlite.binding as llb
import numpy as np
from llvmlite import ir
from numba import carray, types
from numba.core import cgutils
from numba.extending import intrinsic

from . import amx
from .index import offsets4
from .jit import helper, inline
from .qgemm import (
    B_A,
    B_B,
    B_DISTINCT,
    B_O,
    B_SIZES,
    FIELDS,
    G_A_FLIP,
    G_A_SK,
    G_A_SM,
    G_AMX,
    G_AS,
    G_AZ,
    G_B_FLIP,
    G_B_SK,
    G_B_SN,
    G_BS,
    G_BZ,
    G_HI,
    G_K,
    G_LO,
    G_M,
    G_N,
    G_O_FLIP,
    G_O_SM,
    G_O_SN,
    G_OS,
    G_OZ,
    G_WORDS,
    PREPACKED,
    ROWS,
    RQ,
    SPAN,
    _address,
    _emit_tile_loop,
    floats,
    quantize,
    requantize8,
    row_factors,
    task_arrays,
    to_byte,
    value,
    words32,
)
from .tasks import HEAD, address, byte_array, run, store_arrays

HAS_VNNI = "+avx512vnni" in llb.get_host_cpu_features().flatten().split(",")
MR = 6  # rows of A per tile
NV = 4  # 16-lane vectors of columns per tile
NR = 16 * NV  # columns per tile
K4_BLOCK = 16384  # 4-k groups per int32 accumulation: 255 * 128 * 65536 < 2^31
BLOCK_TILES = 8  # tiles of MR rows per block: A rows and their int32 results stay in cache
BLOCK_ROWS = BLOCK_TILES * MR


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
        if HAS_VNNI:
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(v16, [v16, v16, v16]),
                "llvm.x86.avx512.vpdpbusd.512")

            def dot4(acc, a, b):
                return builder.call(fn, [acc, a, b])
        else:
            def dot4(acc, a, b):  # the same sums in plain vector IR (any CPU)
                v64b, v64 = ir.VectorType(ir.IntType(8), 64), ir.VectorType(i32, 64)
                prod = builder.mul(builder.zext(builder.bitcast(a, v64b), v64),
                                   builder.sext(builder.bitcast(b, v64b), v64))
                for q in range(4):
                    lanes = ir.Constant(v16, [4 * lane + q for lane in range(16)])
                    acc = builder.add(acc, builder.shuffle_vector(
                        prod, ir.Constant(v64, ir.Undefined), lanes))
                return acc
        def b_loads(k):
            at = builder.add(b_base, builder.mul(k, ir.Constant(i64, NV * 64)))
            return [builder.load(builder.inttoptr(builder.add(at, ir.Constant(i64, 64 * v)),
                                                  v16.as_pointer()), align=1) for v in range(NV)]

        def a_word(k, r):
            return builder.add(builder.add(a_base, builder.mul(k, ir.Constant(i64, MR * 4))),
                               ir.Constant(i64, 4 * r))

        def c_at(r, v):
            return builder.add(builder.add(c_base, builder.mul(row_bytes, ir.Constant(i64, r))),
                               ir.Constant(i64, 4 * 16 * v))

        _emit_tile_loop(builder, "vnni", count, (MR, NV, 16), b_loads, a_word, 1, dot4, c_at, 1)
        return context.get_dummy_value()

    return sig, codegen


@helper
def pack_b_tile(b, o, K, N, sk, sn, flip, t, panel, sums):  # pragma: no cover
    """Pack column tile ``t`` of one B (element offset ``o``): word (g, j) of ``panel`` (int8,
    groups x NR words) holds B[4 g + q, t * NR + j] in byte q, as int8 (a UINT8 B flipped by
    128: ``flip``); sums[j] (int32) = the column sums of the packed values. Bytes past K and
    columns past N are left as they were: A's panel is zero past K, and the sums of columns past
    N are never read."""
    words = panel.view(np.uint32)
    groups = words.size // NR
    n0 = t * NR
    width = max(0, min(NR, N - n0))
    f = np.uint8(flip)
    sums[:] = 0
    if sn == 1:  # unit-stride B rows: four row reads build each column's word (vectorised)
        for gi in range(groups):
            k = 4 * gi
            out = np.uint64(gi * NR)
            r0 = np.uint64(o + k * sk + n0)
            if k + 4 <= K:
                r1 = r0 + np.uint64(sk)
                r2 = r1 + np.uint64(sk)
                r3 = r2 + np.uint64(sk)
                for j in range(np.uint64(width)):
                    v0 = b[r0 + j] ^ f
                    v1 = b[r1 + j] ^ f
                    v2 = b[r2 + j] ^ f
                    v3 = b[r3 + j] ^ f
                    words[out + j] = (np.uint32(v0) | (np.uint32(v1) << np.uint32(8))
                                      | (np.uint32(v2) << np.uint32(16))
                                      | (np.uint32(v3) << np.uint32(24)))
                    sums[j] += (np.int32(np.int8(v0)) + np.int32(np.int8(v1))
                                + np.int32(np.int8(v2)) + np.int32(np.int8(v3)))
            else:  # the last, partial group of 1 to 3 k rows
                for j in range(np.uint64(width)):
                    words[out + j] = 0
                for q in range(K - k):
                    at = r0 + np.uint64(q * sk)
                    shift = np.uint32(8 * q)
                    for j in range(np.uint64(width)):
                        v = b[at + j] ^ f
                        words[out + j] |= np.uint32(v) << shift
                        sums[j] += np.int32(np.int8(v))
        return
    for j in range(width):  # any other layout (a transposed B: unit stride along k)
        base = np.uint64(o + (n0 + j) * sn)
        total = np.int32(0)
        for k in range(K):
            v = np.int8(b[base + np.uint64(k * sk)] ^ f)
            panel[np.uint64((k >> 2) * NR * 4 + j * 4 + (k & 3))] = v
            total += np.int32(v)
        sums[j] = total


# pack_b_task's argument block (after HEAD): the distinct table, the geometry and the column
# sums (``tasks.store_arrays``), then the lengths of B and of the panels, the distinct table's
# columns, the column tiles of a B and the bytes of a panel.
P_BN, P_ON, P_DCOLS, P_TILES, P_PANEL = range(HEAD + 6, HEAD + 11)


def pack_b_task(bp, op, pp, task):  # pragma: no cover - compiled
    """Column tile ``task % tiles`` of distinct B ``task // tiles`` (``pack_b_tile``)."""
    f = carray(pp, HEAD + 11)
    b, out = carray(bp, f[P_BN]), carray(op, f[P_ON])
    distinct = byte_array(pp, HEAD).view(np.int64).reshape((2, f[P_DCOLS]))
    g = byte_array(pp, HEAD + 2).view(np.int64)
    cols = byte_array(pp, HEAD + 4).view(np.int32)
    ntiles, panel = f[P_TILES], f[P_PANEL]
    d = task // ntiles
    t = task - d * ntiles
    o, _, _, _ = offsets4(d, distinct[0], distinct[1], distinct[1], distinct[1], distinct[1])
    pack_b_tile(b, o, g[G_K], g[G_N], g[G_B_SK], g[G_B_SN], 128 - g[G_B_FLIP], t,
                out[task * panel:(task + 1) * panel], cols[task * NR:(task + 1) * NR])


def pack_b(b: np.ndarray, distinct: np.ndarray, g: np.ndarray, out: np.ndarray,
           cols: np.ndarray) -> None:
    """Pack every column tile of every distinct B (see ``pack_b_tile``): out[d, t] and
    cols[d, t], a task each on the worker pool. ``distinct``: the sizes and B strides of the
    batch dimensions along which B is not broadcast."""
    blk = np.zeros(HEAD + 11, np.int64)
    store_arrays(blk, HEAD, distinct, g, cols)
    blk[[P_BN, P_ON, P_DCOLS, P_TILES, P_PANEL]] = (b.size, out.size, distinct.shape[1],
                                                    out.shape[1], out.shape[2])
    run(address(pack_b_task, "uint8", "int8"), blk, out.shape[0] * out.shape[1], b, out)


def qlmm_task(ap, yp, pp, task):  # pragma: no cover - compiled
    """A task of the VNNI QLMM (``_qlmm``): A and Output as bytes."""
    a, b, y, ascale, bscale, oscale, azp, bzp, ozp, batch, g, bp, cols = task_arrays(ap, yp, pp)
    f = carray(pp, HEAD + FIELDS)
    _qlmm(task, a, b, y, ascale, bscale, oscale, azp, bzp, ozp, batch, g, bp, cols,
          f[PREPACKED] != 0, f[ROWS], f[SPAN])


@inline
def pack_a_block(a, a32, panel, panel32, base0, a_sm, a_sk, count, size_k, a_flip, flip32,
                 words, a_panel, totals):  # pragma: no cover
    """Rows 0 .. count - 1 of a block of A (row i at byte ``base0 + i * a_sm``, elements
    ``a_sk`` apart; made unsigned by XOR ``a_flip``) into ``panel``: MR-row tiles of ``a_panel``
    bytes, each 4-k group of its rows side by side (zero past the last row); ``totals[i]``: row
    i's sum of its unsigned bytes. Returns the tile count. Shared by QLMM and
    MATRIX_MULTIPLY_INTEGER's VNNI paths."""
    tiles = (count + MR - 1) // MR
    panel[:tiles * a_panel] = 0
    for i in range(count):
        base = np.uint64(base0 + i * a_sm)
        total = np.int64(0)
        tile_base = np.uint64((i // MR) * a_panel + (i % MR) * 4)
        if words:  # contiguous, 4-byte aligned rows: move whole 4-k groups
            for k in range(np.uint64(size_k)):
                total += np.int64(a[base + k] ^ np.uint8(a_flip))
            w0 = base >> np.uint64(2)
            wt = tile_base >> np.uint64(2)
            for gi in range(np.uint64(size_k >> 2)):
                panel32[wt + gi * np.uint64(MR)] = a32[w0 + gi] ^ flip32
        else:
            for k in range(np.uint64(size_k)):
                v = a[base + k * np.uint64(a_sk)] ^ np.uint8(a_flip)
                panel[tile_base + (k >> np.uint64(2)) * np.uint64(MR * 4)
                      + (k & np.uint64(3))] = v
                total += np.int64(v)
        totals[i] = total
    return tiles


@inline
def _qlmm(task, a, b, y, ascale, bscale, oscale, azp, bzp, ozp, batch, g, bp, cols, prepacked,
          rows, span):  # pragma: no cover
    """Output = the requantized A x B of every batch: task ``task``. A task: one batch, ``rows``
    rows of A (in blocks of BLOCK_ROWS) and ``span`` column tiles. ``bp``/``cols``: the B
    panels and column sums of ``pack_b`` when ``prepacked``, else unused (each task packs its
    own). Tensors are bytes (uint8), as in ``qgemm._qlmm``.

    Exact sum over k of (a - za)(b - zb) = acc - zb'·(rowsum[m] - K·za') - za'·colsum[n], with
    the packed values a' = a + a_shift, b' = b - b_shift, za' = za + a_shift and zb' = zb -
    b_shift; every term is an integer below 2^53, so it is summed exactly in float64 before the
    one rounding."""
    size_m, size_k, size_n = g[G_M], g[G_K], g[G_N]
    a_sm, a_sk, o_sm, o_sn = g[G_A_SM], g[G_A_SK], g[G_O_SM], g[G_O_SN]
    a_flip = g[G_A_FLIP]  # INT8 A -> unsigned: the packed byte is byte ^ 128
    b_flip = 128 - g[G_B_FLIP]  # UINT8 B -> signed: the packed byte is byte ^ 128
    b_shift = 128 - g[G_B_FLIP]
    lo, hi = np.float64(g[G_LO]), np.float64(g[G_HI])
    words = g[G_WORDS] != 0
    sizes = batch[B_SIZES]
    groups = (size_k + 3) // 4
    panel_bytes = groups * NR * 4
    a_panel = groups * MR * 4
    ntiles = (size_n + NR - 1) // NR
    chunks = (size_m + rows - 1) // rows
    spans = (ntiles + span - 1) // span
    flip32 = np.uint32(a_flip) * np.uint32(0x01010101)
    flat_bp = bp.reshape(-1)
    flat_cols = cols.reshape(-1)
    a32 = words32(a)
    ascale, bscale, oscale = floats(ascale), floats(bscale), floats(oscale)
    # Per-tensor zero points and B scale: the column term is the same for every row.
    uniform = g[G_AZ] == 0 and g[G_BZ] == 0 and g[G_BS] == 0
    max_total = 255.0 * 255.0 * size_k  # |sum of (a - za)(b - zb)| never exceeds it
    bi = task // (chunks * spans)
    r = task - bi * chunks * spans
    c = r // spans
    t0 = (r - c * spans) * span
    t1 = min(ntiles, t0 + span)
    oa, ob, oo, od = offsets4(bi, sizes, batch[B_A], batch[B_B], batch[B_O],
                              batch[B_DISTINCT])
    if prepacked:
        panels = flat_bp
        pbase = (od * ntiles + t0) * panel_bytes
        sums = flat_cols
        sbase = (od * ntiles + t0) * NR
    else:
        panels = np.empty((t1 - t0) * panel_bytes, np.int8)
        sums = np.empty((t1 - t0) * NR, np.int32)
        for t in range(t0, t1):
            at = (t - t0) * panel_bytes
            pack_b_tile(b, ob, size_k, size_n, g[G_B_SK], g[G_B_SN], b_flip, t,
                        panels[at:at + panel_bytes], sums[(t - t0) * NR:(t - t0 + 1) * NR])
        pbase = 0
        sbase = 0
    # Column factors of the span, in float64: -zb', BScale, the column sums, -za'·sums.
    n0 = t0 * NR
    width = min(size_n, t1 * NR) - n0
    f64 = np.empty(4 * width + 2 * BLOCK_ROWS, np.float64)  # one allocation, carved
    nzb = f64[:width]
    bsf = f64[width:2 * width]
    colf = f64[2 * width:3 * width]
    colterm = f64[3 * width:4 * width]
    ratio = f64[4 * width:4 * width + BLOCK_ROWS]
    zo = f64[4 * width + BLOCK_ROWS:]
    za0 = np.float64(np.int64(azp[0]) ^ a_flip)
    for j in range(width):
        n = n0 + j
        nzb[j] = -np.float64(value(bzp, n * g[G_BZ], g[G_B_FLIP]) - b_shift)
        bsf[j] = np.float64(bscale[np.uint64(n * g[G_BS])])
        colf[j] = np.float64(sums[sbase + j])
        colterm[j] = -za0 * colf[j]
    m_end = min(size_m, (c + 1) * rows)
    tiled = g[G_AMX] != 0  # AMX tiles (K % 64 == 0): A packed row by row, not in MR-row tiles
    panel = np.empty(BLOCK_ROWS * size_k if tiled else BLOCK_TILES * a_panel, np.uint8)
    panel32 = panel.view(np.uint32)
    i64 = np.empty(2 * BLOCK_ROWS, np.int64)
    row_sums = i64[:BLOCK_ROWS]
    za = i64[BLOCK_ROWS:]
    block = np.empty(BLOCK_ROWS * NR, np.int32)
    if tiled:
        amx.configure(amx.CONFIG.ctypes.data)
    tiles = 0
    for m0 in range(c * rows, m_end, BLOCK_ROWS):
        count = min(BLOCK_ROWS, m_end - m0)
        if tiled:
            amx.pack_a_rows(a, panel, oa + m0 * a_sm, a_sm, a_sk, count, size_k, a_flip,
                            row_sums)
        else:
            tiles = pack_a_block(a, a32, panel, panel32, oa + m0 * a_sm, a_sm, a_sk, count,
                                 size_k, a_flip, flip32, words, a_panel, row_sums)
        for i in range(count):
            m = m0 + i
            ratio[i], zo[i] = row_factors(m, ascale, g[G_AS], oscale, g[G_OS], ozp, g[G_OZ],
                                          g[G_O_FLIP])
            za[i] = np.int64(azp[np.uint64(m * g[G_AZ])]) ^ a_flip
        for t in range(t0, t1):
            if tiled:
                at_b = panels.ctypes.data + pbase + (t - t0) * panel_bytes
                for r16 in range(0, count, amx.ROWS):
                    amx.block(panel.ctypes.data + r16 * size_k, size_k, at_b,
                              size_k // amx.K_STEP, block.ctypes.data + r16 * NR * 4, NR * 4)
            else:
                for mt in range(tiles):
                    vnni_tile(panel, np.int64(mt * a_panel), panels,
                              np.int64(pbase + (t - t0) * panel_bytes), np.int64(groups),
                              block, np.int64(mt * MR * NR), np.int64(NR))
            j0 = np.uint64((t - t0) * NR)  # unsigned indices: no wrap-around fix-up,
            w = np.uint64(min(NR, size_n - t * NR))  # which turned these loads into gathers
            for i in range(count):
                out = np.uint64(oo + (m0 + i) * o_sm + t * NR * o_sn)
                t1f = np.float64(row_sums[i] - size_k * za[i])
                at = np.uint64(i * NR)
                r_i, z_i = ratio[i], zo[i]
                if uniform and o_sn == 1:  # the common case: RQ lanes, then one by one
                    rowterm = nzb[0] * t1f
                    f = r_i * bsf[0]
                    vec = w - w % np.uint64(RQ)
                    requantize8(block, np.int64(at), colterm, np.int64(j0), np.int64(vec),
                                rowterm, f, z_i, lo, hi, y, np.int64(out),
                                abs(f) * max_total < 2.0 ** 30)
                    for j in range(vec, w):
                        total = np.float64(block[at + j]) + (rowterm + colterm[j0 + j])
                        y[out + j] = to_byte(quantize(total, f, z_i, lo, hi))
                else:
                    nza = -np.float64(za[i])
                    for j in range(w):
                        total = np.float64(block[at + j]) + (nzb[j0 + j] * t1f
                                                             + nza * colf[j0 + j])
                        y[out + j * np.uint64(o_sn)] = to_byte(
                            quantize(total, r_i * bsf[j0 + j], z_i, lo, hi))
    if tiled:
        amx.release()
