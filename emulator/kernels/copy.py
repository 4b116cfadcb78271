"""Strided element copy: ``dst[dst_base + c·dst_strides] = src[src_base + c·src_strides]`` over
every coordinate ``c`` of ``sizes``. Serves SLICE, SLICE1 and any operator that is a pure copy.

Buffers are 1-D unsigned-integer views whose width is the element size, so one kernel serves every
data type bit-exactly (FLOAT16 NaN payloads included). Source strides may be negative (reversal)
or zero (broadcast). Dimensions arrive collapsed (see ``emulator.plan.collapse``); the innermost one
is split into chunks so that a few long rows still spread over all threads.
"""

from __future__ import annotations

import numpy as np

from .jit import kernel, prange

# Elements per work item: large enough to amortise the coordinate arithmetic, small enough to
# balance a handful of long rows across threads.
CHUNK = 16384


@kernel
def strided_copy(src, src_base, dst, dst_base, sizes, src_strides, dst_strides):  # pragma: no cover
    rank = sizes.shape[0]
    inner = sizes[rank - 1]
    s_step = src_strides[rank - 1]
    d_step = dst_strides[rank - 1]
    rows = np.int64(1)
    for k in range(rank - 1):
        rows *= sizes[k]
    chunks = (inner + CHUNK - 1) // CHUNK
    for task in prange(rows * chunks):
        row = task // chunks
        j0 = (task - row * chunks) * CHUNK
        s = src_base + j0 * s_step
        d = dst_base + j0 * d_step
        rem = row
        # Two stride sets inline (not index.offsets4's four): rows can be short and many, and
        # the extra sets measurably slowed the innermost-reverse benchmark (5.9 -> 6.9 ms).
        for k in range(rank - 2, -1, -1):
            c = rem % sizes[k]
            rem //= sizes[k]
            s += c * src_strides[k]
            d += c * dst_strides[k]
        # Element indices are unsigned from here: a signed index costs a negative-index fix-up
        # per element that stops LLVM from vectorising (4-6x slower). Negative steps wrap modulo
        # 2^64, which gives the exact index because every real index is non-negative.
        n = np.uint64(min(inner, j0 + CHUNK) - j0)
        su = np.uint64(s)
        du = np.uint64(d)
        if d_step == 1 and s_step == 1:
            for j in range(n):
                dst[du + j] = src[su + j]
        elif d_step == 1 and s_step == -1:
            for j in range(n):
                dst[du + j] = src[su - j]
        elif d_step == 1:
            ss = np.uint64(s_step)
            for j in range(n):
                dst[du + j] = src[su + j * ss]
        else:
            ss = np.uint64(s_step)
            ds = np.uint64(d_step)
            for j in range(n):
                dst[du + j * ds] = src[su + j * ss]
