"""Quantized matrix multiply, the portable path: exact integer sums, one float64 requantization.

Every 8-bit tensor arrives as its raw bytes (uint8); ``flip`` (128 for INT8, 0 for UINT8) turns a
byte into its value as ``(byte ^ flip) - flip``, so one compiled kernel serves every INT8/UINT8
combination. A zero point absent from the desc is a one-byte zero array read with step 0.

``qlmm`` is one parallel pass. A task is (batch, column tile of NB columns, chunk of rows) and
holds only fixed-size scratch: one B tile of KC k-rows and MR rows of A at a time (zero points
subtracted, as int16, k in pairs) and the int64 sums of its rows. ``madd_tile`` multiplies them
with 16-bit pair dot products (pmaddwd where the CPU has AVX2; the same sums in plain vector code
elsewhere), an MR x 16 int32 tile held in registers. |value - zero point| <= 255, so a KC block's
int32 sums are exact; the blocks are summed in int64, so any K is. The task requantizes its rows
straight from those sums:

    Output = saturate(round_half_even(acc * ((AScale / OutputScale) * BScale)) + OutputZeroPoint)

in float64, the division once per row, a NaN giving OutputZeroPoint. Nothing is ever sized by
the batch count or by a broadcast (zero-stride) dimension.
"""

from __future__ import annotations

import llvmlite.binding as llb
import numpy as np
from llvmlite import ir
from numba import carray, types
from numba.core import cgutils
from numba.extending import intrinsic

from .index import offsets4
from .jit import helper, inline
from .tasks import HEAD, byte_array, run, store_arrays

NB = 64  # columns of B per tile
KC = 2048  # k rows per packed B tile: 256 KiB of int16; 255 * 255 * 2048 < 2^31 (exact int32)
MR = 6  # rows of A per register tile
NC = 16  # columns per register tile (two 8-lane int32 vectors: 12 accumulators)
HAS_AVX2 = "+avx2" in llb.get_host_cpu_features().flatten().split(",")

# The int64 geometry vector every QLMM kernel reads (built once by the plan).
G_M, G_K, G_N = 0, 1, 2
G_A_SM, G_A_SK, G_B_SK, G_B_SN, G_O_SM, G_O_SN = 3, 4, 5, 6, 7, 8
# Element steps of the scale and zero-point tensors along M (A, Output) or N (B); 0: per-tensor.
G_AS, G_AZ, G_BS, G_BZ, G_OS, G_OZ = 9, 10, 11, 12, 13, 14
G_A_FLIP, G_B_FLIP, G_O_FLIP = 15, 16, 17  # 128 for INT8, 0 for UINT8
G_LO, G_HI = 18, 19  # the output type's range
G_WORDS = 20  # 1: A rows are unit-stride, 4-byte aligned runs of K % 4 == 0 bytes
G_AMX = 21  # 1: the VNNI path's products on AMX tiles (kernels/amx.py; K % 64 == 0)
G_SIZE = 22
# Rows of the int64 batch table: collapsed batch sizes, then the element strides of A, B and
# Output, then each batch's index among the distinct B matrices (0 along B's broadcast dims).
B_SIZES, B_A, B_B, B_O, B_DISTINCT = 0, 1, 2, 3, 4


@inline
def value(x, i, flip):  # pragma: no cover
    """Element ``i`` of an 8-bit tensor given as bytes: its INT8 or UINT8 value as int32."""
    return (np.int32(x[np.uint64(i)]) ^ np.int32(flip)) - np.int32(flip)


@inline
def floats(x):  # pragma: no cover
    """The whole float32 elements of a byte buffer (a FLOAT32 scale tensor)."""
    return x[:x.size // 4 * 4].view(np.float32)


@inline
def words32(x):  # pragma: no cover
    """The whole 4-byte words of a byte buffer, as uint32."""
    return x[:x.size // 4 * 4].view(np.uint32)


@inline
def quantize(total, factor, z, lo, hi):  # pragma: no cover
    """saturate(round_half_even(total * factor) + z); a NaN gives z."""
    real = np.float64(total) * factor
    q = np.rint(real) + z
    q = z if real != real else q
    q = lo if q < lo else q
    return hi if q > hi else q


@inline
def to_byte(q):  # pragma: no cover
    """A saturated result (an integer in the output type's range, as float64) as its byte."""
    return np.uint8(np.int32(q) & np.int32(255))


@inline
def row_factors(m, ascale, as_step, oscale, os_step, ozp, oz_step, o_flip):  # pragma: no cover
    """(AScale / OutputScale, OutputZeroPoint) of output row m in float64: the division once
    per row."""
    ratio = np.float64(ascale[np.uint64(m * as_step)]) / np.float64(
        oscale[np.uint64(m * os_step)])
    return ratio, np.float64(value(ozp, m * oz_step, o_flip))


@helper
def pack_b_tile(b, o, k0, count, n0, width, sk, sn, flip, zb, tile):  # pragma: no cover
    """tile[k // 2, j, k % 2] = B[k0 + k, n0 + j] - zb[j] as int16 for k < count, j < width (k
    in pairs, each column's pair adjacent: what a 16-bit pair dot product reads). The rest is
    left as it was: columns past N give sums nobody reads, and the partner of an odd last k row
    meets the zero ``pack_a_row`` puts after A's row, so a narrow B costs no filling."""
    if sn == 1:  # unit-stride B rows: two rows at a time, interleaved (vectorised)
        for k2 in range(count >> 1):
            r0 = np.uint64(o + (k0 + 2 * k2) * sk + n0)
            r1 = r0 + np.uint64(sk)
            row = np.uint64(k2 * 2 * NB)
            for j in range(np.uint64(width)):
                tile[row + np.uint64(2) * j] = np.int16(value(b, r0 + j, flip) - zb[j])
                tile[row + np.uint64(2) * j + np.uint64(1)] = np.int16(
                    value(b, r1 + j, flip) - zb[j])
        if count & 1:
            r0 = np.uint64(o + (k0 + count - 1) * sk + n0)
            row = np.uint64((count >> 1) * 2 * NB)
            for j in range(np.uint64(width)):
                tile[row + np.uint64(2) * j] = np.int16(value(b, r0 + j, flip) - zb[j])
        return
    for j in range(width):  # e.g. a transposed B: unit stride along k
        base = np.uint64(o + (n0 + j) * sn + k0 * sk)
        for k in range(count):
            v = value(b, base + np.uint64(k * sk), flip) - zb[j]
            tile[np.uint64((k >> 1) * 2 * NB + 2 * j + (k & 1))] = np.int16(v)


@helper
def pack_a_row(a, base, step, flip, za, count, arow):  # pragma: no cover
    """arow[k] = A[base + k * step] - za as int16 for k < count, and a zero after an odd count."""
    if step == 1:  # unit stride: vectorised
        for k in range(np.uint64(count)):
            arow[k] = np.int16(value(a, np.uint64(base) + k, flip) - za)
    else:
        for k in range(np.uint64(count)):
            arow[k] = np.int16(value(a, np.uint64(base) + k * np.uint64(step), flip) - za)
    arow[count] = 0


def _address(context, builder, array_type, array, byte_offset):
    data = context.make_array(array_type)(context, builder, array).data
    return builder.add(builder.ptrtoint(data, ir.IntType(64)), byte_offset)


def _emit_tile_loop(builder, name, count, shape, b_loads, a_word, a_align, step, c_at, c_align,
                    element=None):
    """The k loop of a register tile, in LLVM IR: both quantized paths (``element`` i32, the
    default) and ``kernels/sgemm.py`` (float).

    ``shape`` = (rows, vectors, lanes): rows x vectors accumulators of <lanes x element> start at
    zero and stay in registers (phis) for all ``count`` steps. Step k loads the B vectors
    (``b_loads(k)``), broadcasts one element of A per row (from address ``a_word(k, r)``) and
    combines them: ``acc = step(acc, splat, b)``. Then accumulator (r, v) is stored at address
    ``c_at(r, v)`` (zero when ``count`` is 0)."""
    rows, vectors, lanes = shape
    i64, i32 = ir.IntType(64), ir.IntType(32)
    element = i32 if element is None else element
    vt = ir.VectorType(element, lanes)
    zero = ir.Constant(vt, [0.0 if isinstance(element, ir.FloatType) else 0] * lanes)
    lanes0 = ir.Constant(ir.VectorType(i32, lanes), [0] * lanes)  # the broadcast's mask
    entry = builder.block
    body = builder.append_basic_block(f"{name}.body")
    done = builder.append_basic_block(f"{name}.done")
    builder.cbranch(builder.icmp_signed(">", count, ir.Constant(i64, 0)), body, done)

    builder.position_at_end(body)
    k = builder.phi(i64)
    k.add_incoming(ir.Constant(i64, 0), entry)
    acc = [[builder.phi(vt) for _ in range(vectors)] for _ in range(rows)]
    for row in acc:
        for phi in row:
            phi.add_incoming(zero, entry)
    bv = b_loads(k)
    new = []
    for r in range(rows):
        word = builder.load(builder.inttoptr(a_word(k, r), element.as_pointer()),
                            align=a_align)
        splat = builder.shuffle_vector(
            builder.insert_element(ir.Constant(vt, ir.Undefined), word, ir.Constant(i32, 0)),
            ir.Constant(vt, ir.Undefined), lanes0)
        new.append([step(acc[r][v], splat, bv[v]) for v in range(vectors)])
    k_next = builder.add(k, ir.Constant(i64, 1))
    k.add_incoming(k_next, body)
    for r in range(rows):
        for v in range(vectors):
            acc[r][v].add_incoming(new[r][v], body)
    builder.cbranch(builder.icmp_signed("<", k_next, count), body, done)

    builder.position_at_end(done)
    finals = []
    for r in range(rows):  # every phi first: LLVM wants them at the top of the block
        for v in range(vectors):
            final = builder.phi(vt)
            final.add_incoming(zero, entry)
            final.add_incoming(new[r][v], body)
            finals.append((r, v, final))
    for r, v, final in finals:
        builder.store(final, builder.inttoptr(c_at(r, v), vt.as_pointer()), align=c_align)


@intrinsic
def madd_tile(typingctx, ap, a_off, a_ld, bp, b_off, pairs, c, c_off, ldc):  # pragma: no cover
    """c[c_off + r * ldc + j] = sum over k < 2 * pairs of ap[a_off + r * a_ld + k] *
    bp[b_off + (k // 2) * 2 * NB + 2 * j + k % 2] for r < MR, j < NC (int16 in, int32 out,
    overwritten): the accumulators stay in registers for the whole k loop."""
    sig = types.void(ap, a_off, a_ld, bp, b_off, pairs, c, c_off, ldc)

    def codegen(context, builder, signature, args):
        i64, i32, i16 = ir.IntType(64), ir.IntType(32), ir.IntType(16)
        v8, v16h = ir.VectorType(i32, 8), ir.VectorType(i16, 16)
        ap_t, _, _, bp_t, _, _, c_t, _, _ = signature.args
        two, four = ir.Constant(i64, 2), ir.Constant(i64, 4)
        a_base = _address(context, builder, ap_t, args[0], builder.mul(args[1], two))
        a_row = builder.mul(args[2], two)
        b_base = _address(context, builder, bp_t, args[3], builder.mul(args[4], two))
        c_base = _address(context, builder, c_t, args[6], builder.mul(args[7], four))
        c_row = builder.mul(args[8], four)
        if HAS_AVX2:
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(v8, [v16h, v16h]), "llvm.x86.avx2.pmadd.wd")

            def madd(x, y):
                return builder.call(fn, [x, y])
        else:
            even = ir.Constant(v8, list(range(0, 16, 2)))
            odd = ir.Constant(v8, list(range(1, 16, 2)))

            def madd(x, y):  # x[2i] * y[2i] + x[2i + 1] * y[2i + 1], exact in int32
                def half(v, lanes):
                    return builder.sext(builder.shuffle_vector(
                        v, ir.Constant(v16h, ir.Undefined), lanes), v8)

                return builder.add(builder.mul(half(x, even), half(y, even)),
                                   builder.mul(half(x, odd), half(y, odd)))

        def b_loads(k):
            at = builder.add(b_base, builder.mul(k, ir.Constant(i64, 2 * NB * 2)))
            return [builder.load(builder.inttoptr(builder.add(at, ir.Constant(i64, 32 * v)),
                                                  v16h.as_pointer()), align=2)
                    for v in range(NC // 8)]

        def a_word(k, r):
            return builder.add(builder.add(a_base, builder.mul(k, four)),
                               builder.mul(a_row, ir.Constant(i64, r)))

        def c_at(r, v):
            return builder.add(c_base, builder.add(builder.mul(c_row, ir.Constant(i64, r)),
                                                   ir.Constant(i64, 32 * v)))

        _emit_tile_loop(builder, "madd", args[5], (MR, NC // 8, 8), b_loads, a_word, 2,
                        lambda acc, splat, b: builder.add(acc, madd(builder.bitcast(splat, v16h),
                                                                    b)),
                        c_at, 4)
        return context.get_dummy_value()

    return sig, codegen


RQ = 8  # lanes of ``requantize8``


@intrinsic
def requantize8(typingctx, acc, acc_off, colterm, col_off, count, rowterm, factor, z, lo, hi, y,
                y_off, bounded):  # pragma: no cover
    """y[y_off + j] = byte of saturate(rint((acc[acc_off + j] + (rowterm + colterm[col_off + j]))
    * factor) + z) (a NaN gives z) for j < count, a multiple of RQ: the uniform case of the
    requantization, the same IEEE operations as ``qgemm.quantize`` in RQ float64 lanes (LLVM's
    own vectoriser stops at 4 where it prefers 256-bit vectors). ``bounded``: the caller proved
    |rint(real)| < 2^30 and no NaN (a finite factor, |factor| * max|total| < 2^30), so the
    rounded value becomes an int32 first and z and the saturation are integer operations (the
    same integers, cheaper)."""
    sig = types.void(acc, acc_off, colterm, col_off, count, rowterm, factor, z, lo, hi, y, y_off,
                     bounded)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        f64 = ir.DoubleType()
        vd = ir.VectorType(f64, RQ)
        vi = ir.VectorType(ir.IntType(32), RQ)
        vb = ir.VectorType(ir.IntType(8), RQ)
        acc_t, _, col_t, _, _, _, _, _, _, _, y_t, _, _ = signature.args
        a_base = _address(context, builder, acc_t, args[0],
                          builder.mul(args[1], ir.Constant(i64, 4)))
        c_base = _address(context, builder, col_t, args[2],
                          builder.mul(args[3], ir.Constant(i64, 8)))
        y_base = _address(context, builder, y_t, args[10], args[11])

        def splat(x):
            v = builder.insert_element(ir.Constant(vd, ir.Undefined), x, ir.Constant(i64, 0))
            return builder.shuffle_vector(v, ir.Constant(vd, ir.Undefined),
                                          ir.Constant(ir.VectorType(ir.IntType(32), RQ), [0] * RQ))

        rowterm, factor, z, lo, hi = (splat(x) for x in args[5:10])
        zi, loi, hii = (builder.fptosi(x, vi) for x in (z, lo, hi))
        rint = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vd, [vd]),
                                              f"llvm.rint.v{RQ}f64")
        count = args[4]
        done = builder.append_basic_block("rq.done")

        def loop(name, finish):
            """One loop over j; ``finish(real)`` gives the <RQ x i32> results."""
            entry = builder.block
            body = builder.append_basic_block(name)
            builder.branch(body)
            builder.position_at_end(body)
            j = builder.phi(i64)
            j.add_incoming(ir.Constant(i64, 0), entry)
            acc_v = builder.load(builder.inttoptr(
                builder.add(a_base, builder.mul(j, ir.Constant(i64, 4))), vi.as_pointer()),
                align=1)
            col_v = builder.load(builder.inttoptr(
                builder.add(c_base, builder.mul(j, ir.Constant(i64, 8))), vd.as_pointer()),
                align=1)
            total = builder.fadd(builder.sitofp(acc_v, vd), builder.fadd(rowterm, col_v))
            q = finish(builder.fmul(total, factor))
            builder.store(builder.trunc(q, vb),
                          builder.inttoptr(builder.add(y_base, j), vb.as_pointer()), align=1)
            j_next = builder.add(j, ir.Constant(i64, RQ))
            j.add_incoming(j_next, builder.block)
            builder.cbranch(builder.icmp_signed("<", j_next, count), body, done)

        def general(real):
            q = builder.fadd(builder.call(rint, [real]), z)
            q = builder.select(builder.fcmp_unordered("uno", real, real), z, q)
            q = builder.select(builder.fcmp_ordered("<", q, lo), lo, q)
            return builder.fptosi(builder.select(builder.fcmp_ordered(">", q, hi), hi, q), vi)

        def integer(real):
            q = builder.add(builder.fptosi(builder.call(rint, [real]), vi), zi)
            q = builder.select(builder.icmp_signed("<", q, loi), loi, q)
            return builder.select(builder.icmp_signed(">", q, hii), hii, q)

        start = builder.append_basic_block("rq.start")
        to_int = builder.append_basic_block("rq.to_int")
        to_float = builder.append_basic_block("rq.to_float")
        builder.cbranch(builder.icmp_signed(">", count, ir.Constant(i64, 0)), start, done)
        builder.position_at_end(start)
        builder.cbranch(args[12], to_int, to_float)
        builder.position_at_end(to_int)
        loop("rq.int", integer)
        builder.position_at_end(to_float)
        loop("rq.float", general)
        builder.position_at_end(done)
        return context.get_dummy_value()

    return sig, codegen


# The task kernels' argument block (kernels/tasks.py, after HEAD): the addresses and byte lengths
# of B, the three scales, the three zero points, the batch table, the geometry, then (VNNI) the
# packed B panels and their column sums, two slots each (``tasks.store_arrays``); then the
# lengths of A and Output, the rows and column tiles of a task, whether B is packed up front,
# and the batch table's columns.
ARRAYS = 11
AN, YN, ROWS, SPAN, PREPACKED, BATCH_COLS = range(HEAD + 2 * ARRAYS, HEAD + 2 * ARRAYS + 6)
FIELDS = 2 * ARRAYS + 6


@inline
def task_arrays(ap, yp, pp):  # pragma: no cover
    """The arrays of a QLMM task from its pointers and argument block: A, B, Output, AScale,
    BScale, OutputScale, the three zero points (bytes), the batch table, the geometry (int64),
    the B panels (int8) and column sums (int32)."""
    f = carray(pp, HEAD + FIELDS)
    return (carray(ap, f[AN]), byte_array(pp, HEAD), carray(yp, f[YN]),
            byte_array(pp, HEAD + 2), byte_array(pp, HEAD + 4), byte_array(pp, HEAD + 6),
            byte_array(pp, HEAD + 8), byte_array(pp, HEAD + 10), byte_array(pp, HEAD + 12),
            byte_array(pp, HEAD + 14).view(np.int64).reshape((5, f[BATCH_COLS])),
            byte_array(pp, HEAD + 16).view(np.int64), byte_array(pp, HEAD + 18).view(np.int8),
            byte_array(pp, HEAD + 20).view(np.int32))


def qlmm_task(ap, yp, pp, task):  # pragma: no cover - compiled
    """A task of the portable QLMM (``_qlmm``): A and Output as bytes."""
    a, b, y, ascale, bscale, oscale, azp, bzp, ozp, batch, g, _, _ = task_arrays(ap, yp, pp)
    f = carray(pp, HEAD + FIELDS)
    _qlmm(task, a, b, y, ascale, bscale, oscale, azp, bzp, ozp, batch, g, f[ROWS], f[SPAN])


def launch(fn: int, nb: int, a: np.ndarray, b: np.ndarray, y: np.ndarray,
           scales: tuple[np.ndarray, ...], zero_points: tuple[np.ndarray, ...],
           batch: np.ndarray, g: np.ndarray, bp: np.ndarray, cols: np.ndarray, rows: int,
           span: int, prepacked: bool) -> None:
    """Run the QLMM-shaped task kernel at ``fn`` (``qlmm_task``, ``vnni.qlmm_task`` or the
    integer rows' ``int_kernels`` tasks) over every (batch, chunk of ``rows`` rows, ``span``
    column tiles of ``nb`` columns), the tasks claimed one at a time: few and long, a slowed
    core holds up only its own. Tensors as bytes; three scales and three zero points."""
    blk = np.zeros(HEAD + FIELDS, np.int64)
    store_arrays(blk, HEAD, b, *scales, *zero_points, batch, g, bp, cols)
    blk[[AN, YN, ROWS, SPAN, PREPACKED, BATCH_COLS]] = (a.size, y.size, rows, span, prepacked,
                                                        batch.shape[1])
    tiles = -(-int(g[G_N]) // nb)
    count = int(np.prod(batch[B_SIZES])) * -(-int(g[G_M]) // rows) * -(-tiles // span)
    run(fn, blk, count, a, y, claim=CLAIM)


@inline
def pack_b_block(b, ob, k0, count, n0, width, ntiles, sk, sn, flip, zb, tile,
                 kc):  # pragma: no cover
    """The k-block [k0, k0 + count) of the task's ``ntiles`` column tiles of B into ``tile``
    (one region of kc x NB per tile, ``pack_b_tile``)."""
    for t in range(ntiles):
        w = min(NB, width - t * NB)
        pack_b_tile(b, ob, k0, count, n0 + t * NB, w, sk, sn, flip, zb[t * NB:(t + 1) * NB],
                    tile[t * kc * NB:(t + 1) * kc * NB])


@inline
def madd_rows(a, oa, r0, here, k0, count, a_sm, a_sk, a_flip, azp, g, apanel, lda, tile, kc,
              width, ntiles, block, cols):  # pragma: no cover
    """Rows r0 .. r0 + here - 1 of A over the k-block (``pack_a_row``, zero point subtracted)
    times every column tile packed in ``tile``: the int32 sums in ``block`` (MR x cols; the
    rows past ``here`` give unread sums)."""
    pairs = (count + 1) // 2
    for i in range(here):
        m = r0 + i
        za = value(azp, m * g[G_AZ], a_flip)
        pack_a_row(a, oa + m * a_sm + k0 * a_sk, a_sk, a_flip, za, count,
                   apanel[i * lda:(i + 1) * lda])
    for t in range(ntiles):
        for cg in range(0, min(NB, width - t * NB), NC):
            madd_tile(apanel, np.int64(0), np.int64(lda), tile, np.int64(t * kc * NB + 2 * cg),
                      np.int64(pairs), block, np.int64(t * NB + cg), np.int64(cols))


CLAIM = True  # threads claim tasks one at a time (kernels/tasks.py ``run``); tests switch it


@inline
def _qlmm(task, a, b, y, ascale, bscale, oscale, azp, bzp, ozp, batch, g, rows,
          span):  # pragma: no cover
    """Output = the requantized A x B of every batch; task ``task`` of (batch, chunk of ``rows``
    rows, ``span`` column tiles of NB). ``batch``: the int64 batch table (B_* rows); ``g``: the
    geometry (G_*). Every tensor is given as its bytes (uint8)."""
    size_m, size_k, size_n = g[G_M], g[G_K], g[G_N]
    a_sm, a_sk, b_sk, b_sn, o_sm, o_sn = g[G_A_SM], g[G_A_SK], g[G_B_SK], g[G_B_SN], g[G_O_SM], \
        g[G_O_SN]
    a_flip, b_flip, o_flip = g[G_A_FLIP], g[G_B_FLIP], g[G_O_FLIP]
    lo, hi = np.float64(g[G_LO]), np.float64(g[G_HI])
    ascale, bscale, oscale = floats(ascale), floats(bscale), floats(oscale)
    sizes = batch[B_SIZES]
    tiles = (size_n + NB - 1) // NB
    spans = (tiles + span - 1) // span
    chunks = (size_m + rows - 1) // rows
    kc = min(KC, size_k + (size_k & 1))
    single = size_k <= kc  # one k block: its int32 sums are the totals
    max_total = 255.0 * 255.0 * size_k  # |sum of (a - za)(b - zb)| never exceeds it
    zeros = np.zeros(span * NB, np.float64)  # no column term: zero points already subtracted
    uniform = g[G_BS] == 0 and o_sn == 1  # one factor per row, unit-stride output rows
    lda = kc + 2  # a packed A row: kc values, a zero, even
    bi = task // (chunks * spans)
    r = task - bi * chunks * spans
    c = r // spans
    t0 = (r - c * spans) * span
    t1 = min(tiles, t0 + span)
    m0 = c * rows
    m1 = min(size_m, m0 + rows)
    oa, ob, oo, _ = offsets4(bi, sizes, batch[B_A], batch[B_B], batch[B_O], batch[B_O])
    n0 = t0 * NB
    width = min(size_n, t1 * NB) - n0
    cols = (t1 - t0) * NB
    tile = np.empty((t1 - t0) * kc * NB, np.int16)  # one region of kc x NB per tile
    apanel = np.empty(MR * lda, np.int16)
    block = np.empty(MR * cols, np.int32)
    acc = np.zeros((m1 - m0) * cols if not single else 0, np.int64)
    zb = np.empty(cols, np.int32)
    bs = np.empty(cols, np.float64)
    for j in range(width):
        zb[j] = value(bzp, (n0 + j) * g[G_BZ], b_flip)
        bs[j] = np.float64(bscale[np.uint64((n0 + j) * g[G_BS])])
    for k0 in range(0, size_k, kc):
        count = min(kc, size_k - k0)
        pack_b_block(b, ob, k0, count, n0, width, t1 - t0, b_sk, b_sn, b_flip, zb, tile, kc)
        for r0 in range(m0, m1, MR):
            here = min(MR, m1 - r0)
            madd_rows(a, oa, r0, here, k0, count, a_sm, a_sk, a_flip, azp, g, apanel, lda,
                      tile, kc, width, t1 - t0, block, cols)
            if single:  # K in one block: requantize straight from the int32 sums
                for i in range(here):
                    m = r0 + i
                    ratio, z = row_factors(m, ascale, g[G_AS], oscale, g[G_OS], ozp,
                                           g[G_OZ], o_flip)
                    out = np.uint64(oo + m * o_sm + n0 * o_sn)
                    src = np.uint64(i * cols)
                    vec = np.uint64(0)
                    if uniform:
                        f = ratio * bs[0]
                        vec = np.uint64(width - width % RQ)
                        requantize8(block, np.int64(src), zeros, np.int64(0), np.int64(vec),
                                    0.0, f, z, lo, hi, y, np.int64(out),
                                    abs(f) * max_total < 2.0 ** 30)
                    for j in range(vec, np.uint64(width)):
                        q = quantize(block[src + j], ratio * bs[j], z, lo, hi)
                        y[out + j * np.uint64(o_sn)] = to_byte(q)
                continue
            for i in range(here):
                at = np.uint64((r0 + i - m0) * cols)
                src = np.uint64(i * cols)
                for j in range(np.uint64(cols)):
                    acc[at + j] += block[src + j]
    if single:
        return
    for m in range(m0, m1):
        ratio, z = row_factors(m, ascale, g[G_AS], oscale, g[G_OS], ozp, g[G_OZ], o_flip)
        at = np.uint64((m - m0) * cols)
        out = np.uint64(oo + m * o_sm + n0 * o_sn)
        for j in range(np.uint64(width)):
            q = quantize(acc[at + j], ratio * bs[j], z, lo, hi)
            y[out + j * np.uint64(o_sn)] = to_byte(q)
