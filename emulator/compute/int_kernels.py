"""The exact 8-bit integer matrix product of the integer compute rows (``integer.py``), on
QUANTIZED_LINEAR_MATRIX_MULTIPLY's portable kernel pieces (``kernels/qgemm.py``, imported, not
changed): ``pack_b_tile`` / ``pack_a_row`` subtract the zero points into int16 panels, and
``madd_tile`` multiplies them with 16-bit pair dot products (pmaddwd on AVX2) in an MR x NC int32
register tile.

``isums_task`` (``_isums``) is QLMM's portable task kernel (tasks of batch x rows x column
tiles, the same geometry vector, batch table and argument block, ``qgemm.launch``: on the worker
pool, tasks claimed) with the requantization replaced by a store of the sums as INT32: exact
while K x 255 x 255 < 2**31 (one k block of KC = 2048 is always exact in int32; longer K is
summed in int64 per task), else wrapped modulo 2**32, which is what an INT32 output of
MATRIX_MULTIPLY_INTEGER / CONVOLUTION_INTEGER holds. The output is given as bytes and written as
int32 at element offsets (any strides), at the addressed elements only.

``isums_vnni_task`` (``_isums_vnni``) is the same product on QLMM's AVX512-VNNI micro-kernel
(``kernels/vnni.py``: ``vnni_tile``, its B packing ``pack_b_tile`` / ``pack_b``, imported
unchanged), QLMM's VNNI task with the requantization replaced by the exact correction in int64
and an INT32 store: with the packed values a' = a + a_shift (unsigned) and b' = b - b_shift
(signed), ``sum (a - za)(b - zb) = acc' - zb'(rowsum'[m] - K za') - za' colsum'[n]``. Taken where
the CPU has avx512vnni and K <= 4 x K4_BLOCK (one exact int32 accumulation); elsewhere
``vnni_tile`` is emitted as plain vector code, so the tests run it on any CPU.
"""

from __future__ import annotations

import numpy as np
from numba import carray

from ..kernels.index import offsets4
from ..kernels.jit import inline
from ..kernels.qgemm import (
    B_A,
    B_B,
    B_DISTINCT,
    B_O,
    B_SIZES,
    FIELDS,
    G_A_FLIP,
    G_A_SK,
    G_A_SM,
    G_AZ,
    G_B_FLIP,
    G_B_SK,
    G_B_SN,
    G_BZ,
    G_K,
    G_M,
    G_N,
    G_O_SM,
    G_O_SN,
    G_WORDS,
    KC,
    MR,
    NB,
    PREPACKED,
    ROWS,
    SPAN,
    madd_rows,
    pack_b_block,
    task_arrays,
    value,
    words32,
)
from ..kernels.tasks import HEAD
from ..kernels.vnni import BLOCK_ROWS, BLOCK_TILES, pack_a_block, vnni_tile
from ..kernels.vnni import MR as VMR
from ..kernels.vnni import NR as VNR
from ..kernels.vnni import pack_b_tile as vnni_pack_b_tile


def isums_task(ap, yp, pp, task):  # pragma: no cover - compiled
    """A task of ``_isums`` (QLMM's task block: ``qgemm.task_arrays``; scales unused)."""
    a, b, y, _, _, _, azp, bzp, _, batch, g, _, _ = task_arrays(ap, yp, pp)
    f = carray(pp, HEAD + FIELDS)
    _isums(task, a, b, y, azp, bzp, batch, g, f[ROWS], f[SPAN])


@inline
def _isums(task, a, b, y, azp, bzp, batch, g, rows, span):  # pragma: no cover
    """y (INT32 elements of the byte buffer) = sum_k (A - AZeroPoint)(B - BZeroPoint) for every
    batch, wrapped to 32 bits; one task per (batch, chunk of ``rows`` rows, ``span`` column
    tiles of NB). ``batch``: the int64 batch table (qgemm's B_* rows); ``g``: its geometry
    (G_*). A, B and the zero points are given as bytes."""
    size_m, size_k, size_n = g[G_M], g[G_K], g[G_N]
    a_sm, a_sk, b_sk, b_sn, o_sm, o_sn = g[G_A_SM], g[G_A_SK], g[G_B_SK], g[G_B_SN], g[G_O_SM], \
        g[G_O_SN]
    a_flip, b_flip = g[G_A_FLIP], g[G_B_FLIP]
    y32 = y[:y.size // 4 * 4].view(np.int32)
    sizes = batch[B_SIZES]
    tiles = (size_n + NB - 1) // NB
    spans = (tiles + span - 1) // span
    chunks = (size_m + rows - 1) // rows
    kc = min(KC, size_k + (size_k & 1))
    single = size_k <= kc  # one k block: its int32 sums are the totals
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
    for j in range(width):
        zb[j] = value(bzp, (n0 + j) * g[G_BZ], b_flip)
    for k0 in range(0, size_k, kc):
        count = min(kc, size_k - k0)
        pack_b_block(b, ob, k0, count, n0, width, t1 - t0, b_sk, b_sn, b_flip, zb, tile, kc)
        for r0 in range(m0, m1, MR):
            here = min(MR, m1 - r0)
            madd_rows(a, oa, r0, here, k0, count, a_sm, a_sk, a_flip, azp, g, apanel, lda,
                      tile, kc, width, t1 - t0, block, cols)
            if single:
                for i in range(here):
                    out = np.uint64(oo + (r0 + i) * o_sm + n0 * o_sn)
                    src = np.uint64(i * cols)
                    if o_sn == 1:
                        for j in range(np.uint64(width)):
                            y32[out + j] = block[src + j]
                    else:
                        for j in range(np.uint64(width)):
                            y32[out + j * np.uint64(o_sn)] = block[src + j]
                continue
            for i in range(here):
                at = np.uint64((r0 + i - m0) * cols)
                src = np.uint64(i * cols)
                for j in range(np.uint64(cols)):
                    acc[at + j] += block[src + j]
    if single:
        return
    for m in range(m0, m1):
        at = np.uint64((m - m0) * cols)
        out = np.uint64(oo + m * o_sm + n0 * o_sn)
        for j in range(np.uint64(width)):
            y32[out + j * np.uint64(o_sn)] = np.int32(acc[at + j])  # wraps


def isums_vnni_task(ap, yp, pp, task):  # pragma: no cover - compiled
    """A task of ``_isums_vnni``."""
    a, b, y, _, _, _, azp, bzp, _, batch, g, bp, cols = task_arrays(ap, yp, pp)
    f = carray(pp, HEAD + FIELDS)
    _isums_vnni(task, a, b, y, azp, bzp, batch, g, bp, cols, f[PREPACKED] != 0, f[ROWS],
                f[SPAN])


@inline
def _isums_vnni(task, a, b, y, azp, bzp, batch, g, bp, cols, prepacked, rows,
                span):  # pragma: no cover
    """``_isums`` on the VNNI tiles: one task per (batch, ``rows`` rows of A in blocks of
    BLOCK_ROWS, ``span`` column tiles of VNR). ``bp``/``cols``: the B panels and column sums of
    ``vnni.pack_b`` when ``prepacked``, else unused (each task packs its own). K <= 4 x K4_BLOCK:
    the caller checks."""
    size_m, size_k, size_n = g[G_M], g[G_K], g[G_N]
    a_sm, a_sk, o_sm, o_sn = g[G_A_SM], g[G_A_SK], g[G_O_SM], g[G_O_SN]
    a_flip = g[G_A_FLIP]  # INT8 A -> unsigned: the packed byte is byte ^ 128
    b_flip = 128 - g[G_B_FLIP]  # UINT8 B -> signed: the packed byte is byte ^ 128
    b_shift = np.int64(128 - g[G_B_FLIP])
    words = g[G_WORDS] != 0
    y32 = y[:y.size // 4 * 4].view(np.int32)
    sizes = batch[B_SIZES]
    groups = (size_k + 3) // 4
    panel_bytes = groups * VNR * 4
    a_panel = groups * VMR * 4
    ntiles = (size_n + VNR - 1) // VNR
    chunks = (size_m + rows - 1) // rows
    spans = (ntiles + span - 1) // span
    flip32 = np.uint32(a_flip) * np.uint32(0x01010101)
    flat_bp = bp.reshape(-1)
    flat_cols = cols.reshape(-1)
    a32 = words32(a)
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
        sbase = (od * ntiles + t0) * VNR
    else:
        panels = np.empty((t1 - t0) * panel_bytes, np.int8)
        sums = np.empty((t1 - t0) * VNR, np.int32)
        for t in range(t0, t1):
            at = (t - t0) * panel_bytes
            vnni_pack_b_tile(b, ob, size_k, size_n, g[G_B_SK], g[G_B_SN], b_flip, t,
                             panels[at:at + panel_bytes],
                             sums[(t - t0) * VNR:(t - t0 + 1) * VNR])
        pbase = 0
        sbase = 0
    n0 = t0 * VNR
    width = min(size_n, t1 * VNR) - n0
    nzb = np.empty(width, np.int64)  # -zb' per column
    for j in range(width):
        nzb[j] = -(np.int64(value(bzp, (n0 + j) * g[G_BZ], g[G_B_FLIP])) - b_shift)
    m_end = min(size_m, (c + 1) * rows)
    panel = np.empty(BLOCK_TILES * a_panel, np.uint8)
    panel32 = panel.view(np.uint32)
    i64 = np.empty(2 * BLOCK_ROWS, np.int64)
    row_terms = i64[:BLOCK_ROWS]  # rowsum' - K za'
    za = i64[BLOCK_ROWS:]  # za'
    block = np.empty(BLOCK_ROWS * VNR, np.int32)
    for m0 in range(c * rows, m_end, BLOCK_ROWS):
        count = min(BLOCK_ROWS, m_end - m0)
        tiles = pack_a_block(a, a32, panel, panel32, oa + m0 * a_sm, a_sm, a_sk, count, size_k,
                             a_flip, flip32, words, a_panel, row_terms)
        for i in range(count):
            m = m0 + i
            za[i] = np.int64(azp[np.uint64(m * g[G_AZ])]) ^ a_flip
            row_terms[i] -= size_k * za[i]  # rowsum' - K za'
        for t in range(t0, t1):
            for mt in range(tiles):
                vnni_tile(panel, np.int64(mt * a_panel), panels,
                          np.int64(pbase + (t - t0) * panel_bytes), np.int64(groups), block,
                          np.int64(mt * VMR * VNR), np.int64(VNR))
            j0 = np.uint64((t - t0) * VNR)
            w = np.uint64(min(VNR, size_n - t * VNR))
            for i in range(count):
                out = np.uint64(oo + (m0 + i) * o_sm + t * VNR * o_sn)
                at = np.uint64(i * VNR)
                rt = row_terms[i]
                nza = -za[i]
                for j in range(w):
                    exact = (np.int64(block[at + j]) + nzb[j0 + j] * rt
                             + nza * np.int64(sums[np.uint64(sbase) + j0 + j]))
                    y32[out + j * np.uint64(o_sn)] = np.int32(exact)  # wraps
