"""Quantized matrix multiply: exact integer accumulation, one float64 requantization.

1. ``pack_a``/``pack_b``: subtract the zero points while packing into int16 (|a - za| <= 255, so
   products fit int32 and sums stay exact for K up to 33,025 per accumulation block). B is packed
   in column tiles of NB columns, two k rows at a time, so the GEMM's inner loop is a unit-stride
   run the compiler vectorises. Every INT8/UINT8 combination becomes the same int16 problem.
2. ``gemm``: int32 accumulators per (row, column tile); K is split into blocks whose partial sums
   are added in int64, so any K is exact.
3. ``requantize``: acc * ((AScale / OutputScale) * BScale) in float64, round half to even, add
   the output zero point, saturate (the division happens once per row). The VNNI path
   (``vnni.py``) does the same per block with ``quantize``.
"""

from __future__ import annotations

import numpy as np

from .index import offsets4
from .jit import helper, inline, kernel, prange

NB = 64  # columns of B per tile (four 16-lane int32 vectors)
MB = 8  # rows of A that share one B tile in a task
KBLOCK = 32768  # k per exact int32 accumulation (255 * 255 * 32768 < 2^31)


@kernel
def pack_a(a, bsizes, ba, batches, M, K, sm, sk, zp, zp_step, has_zp, out):  # pragma: no cover
    """out[b, m, k] = a[b, m, k] - zp[m] as int16 (out is [batches, M, Kp], zero-padded)."""
    kp = out.shape[2]
    for task in prange(batches * M):
        bi = task // M
        m = task - bi * M
        o, _, _, _ = offsets4(bi, bsizes, ba, ba, ba, ba)
        z = np.int16(zp[np.uint64(m * zp_step)]) if has_zp else np.int16(0)
        base = np.uint64(o + m * sm)
        row = out[bi, m]
        for k in range(np.uint64(K)):
            row[k] = np.int16(np.int16(a[base + k * np.uint64(sk)]) - z)
        for k in range(K, kp):
            row[k] = 0


@kernel
def pack_b(b, bsizes, bb, batches, K, N, sk, sn, zp, zp_step, has_zp, out):  # pragma: no cover
    """out[b, t, k // 2, k % 2, j] = b[b, k, t * NB + j] - zp[n] (zero-padded in k and n)."""
    tiles = out.shape[1]
    half = out.shape[2]
    for task in prange(batches * tiles):
        bi = task // tiles
        t = task - bi * tiles
        o, _, _, _ = offsets4(bi, bsizes, bb, bb, bb, bb)
        tile = out[bi, t]
        for k2 in range(half):
            for h in range(2):
                k = 2 * k2 + h
                for j in range(NB):
                    n = t * NB + j
                    if n < N and k < K:
                        z = np.int16(zp[np.uint64(n * zp_step)]) if has_zp else np.int16(0)
                        v = b[np.uint64(o + n * sn) + np.uint64(k) * np.uint64(sk)]
                        tile[k2, h, j] = np.int16(np.int16(v) - z)
                    else:
                        tile[k2, h, j] = 0


@helper
def row_times_tile(arow, tile, part, half):  # pragma: no cover
    """part[j] += sum_k arow[k] * tile[k // 2, k % 2, j] over one column tile (flat views)."""
    for k2 in range(np.uint64(half)):
        a0 = np.int32(arow[np.uint64(2) * k2])
        a1 = np.int32(arow[np.uint64(2) * k2 + np.uint64(1)])
        base = k2 * np.uint64(2 * NB)
        for j in range(np.uint64(NB)):
            part[j] = np.int32(part[j] + a0 * np.int32(tile[base + j])
                               + a1 * np.int32(tile[base + np.uint64(NB) + j]))


@kernel
def gemm(ap, bp, acc):  # pragma: no cover
    """acc[b, m, n] = sum_k ap[b, m, k] * bp[b, n // NB, k // 2, k % 2, n % NB] (int64 out)."""
    batches = ap.shape[0]
    rows = ap.shape[1]
    kp = ap.shape[2]
    tiles = bp.shape[1]
    mblocks = (rows + MB - 1) // MB
    for task in prange(batches * mblocks * tiles):
        bi = task // (mblocks * tiles)
        r = task - bi * mblocks * tiles
        mb = r // tiles
        t = r - mb * tiles
        tile = bp[bi, t].ravel()
        part = np.empty(NB, np.int32)
        for m in range(mb * MB, min(rows, (mb + 1) * MB)):
            arow = ap[bi, m]
            for j in range(NB):
                acc[bi, m, t * NB + j] = 0
            for k0 in range(0, kp, KBLOCK):  # exact int32 blocks, summed in int64
                k1 = min(kp, k0 + KBLOCK)
                for j in range(NB):
                    part[j] = 0
                row_times_tile(arow[k0:k1], tile[k0 * NB:k1 * NB], part, (k1 - k0) // 2)
                for j in range(NB):
                    acc[bi, m, t * NB + j] += part[j]


@inline
def quantize(total, factor, z, lo, hi):  # pragma: no cover
    """saturate(round_half_even(total * factor) + z); a NaN gives z."""
    real = np.float64(total) * factor
    q = np.rint(real) + z
    q = z if real != real else q
    q = lo if q < lo else q
    return hi if q > hi else q


@inline
def row_factors(m, ascale, as_step, oscale, os_step, ozp, oz_step, has_oz):  # pragma: no cover
    """(AScale / OutputScale, OutputZeroPoint) of output row m in float64: the division once
    per row."""
    ratio = np.float64(ascale[np.uint64(m * as_step)]) / np.float64(
        oscale[np.uint64(m * os_step)])
    z = 0.0
    if has_oz:
        z = np.float64(ozp[np.uint64(m * oz_step)])
    return ratio, z


@kernel
def requantize(acc, bsizes, bo, batches, M, N, sm, sn, ascale, as_step, bsc, oscale, os_step,
               ozp, oz_step, has_oz, lo, hi, y):  # pragma: no cover
    """Output = saturate(rint(acc * ((AScale / OutputScale) * BScale)) + OutputZeroPoint), for
    an ``acc`` that already holds the exact sums of (a - za)(b - zb). ``bsc``: BScale per column
    as float64."""
    for task in prange(batches * M):
        bi = task // M
        m = task - bi * M
        o, _, _, _ = offsets4(bi, bsizes, bo, bo, bo, bo)
        ratio, z = row_factors(m, ascale, as_step, oscale, os_step, ozp, oz_step, has_oz)
        row = acc[bi, m]
        base = np.uint64(o + m * sm)
        step = np.uint64(sn)
        for n in range(np.uint64(N)):
            y[base + n * step] = quantize(row[n], ratio * bsc[n], z, lo, hi)
