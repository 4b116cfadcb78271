"""The compute family's own kernels (outside ``kernels/`` so that editing them does not re-key
every cached kernel): ``im2col``, which lays out the input windows of a convolution as the B
matrix of the matrix-multiply core, the convolution tiles, depthwise, and the batched products'
calls. The window reading itself (``fill_tile``, ``direct_tile``) is ``kernels/im2col.py``'s,
because ``compute/winograd.py`` inlines it too.

One mechanism serves both directions: a convolution reads, for output position ``o`` and filter
tap ``k`` along each spatial dimension, the virtual coordinate ``v = o * stride - pad + k *
dilation`` of its input *upsampled* by ``up`` (``up - 1`` zeros between elements): the element
``v / up`` where ``v`` is a multiple of ``up`` inside the input, 0 elsewhere. A forward
convolution has ``up = 1``; a backward (transposed) one is the forward convolution of the input
upsampled by its Strides, with stride 1 and ``pad = (kernel - 1) * dilation - StartPadding``
(plan in ``conv.py``).

``geo`` (int64): N, G, Cg, then per spatial dimension (three, leading ones of size 1): kernel,
output size, input size, stride, dilation, pad, up. The column matrix is dense float32
[N, G, Cg * kernel taps, output positions], rows in (channel, tap) order, taps row-major.
"""

from __future__ import annotations

import numpy as np
from numba import carray, types

from ..kernels.blas_calls import (
    gemm_row_d32,
    gemm_row_d64,
    gemm_row_s32,
    gemm_row_s64,
)
from ..kernels.floats import load32
from ..kernels.im2col import FIELDS, G_CG, G_G, G_N, direct_tile, fill_tile
from ..kernels.jit import inline, kernel, prange
from ..kernels.strided import typed_pointer
from ..kernels.tasks import HEAD, W, Z, byte_array

IM2COL_BLOCK = 1024  # output positions per im2col task
# depthwise_task's block after HEAD: the lengths of x, y, the filter and the bias, then three
# arrays (address and byte length each: tasks.store_arrays).
DW_XN, DW_YN, DW_WN, DW_BN, DW_XS, DW_GEO, DW_OS = (HEAD, HEAD + 1, HEAD + 2, HEAD + 3,
                                                    HEAD + 4, HEAD + 6, HEAD + 8)
DW_PLANES = HEAD + 10  # planes per task
DW_END = HEAD + 11
# conv_tiles_task's block after HEAD: the lengths of x, y, the filter and the bias, the BLAS's
# address, wide?, positions a tile, the parts; then three arrays (address, byte length each)
CT_XN, CT_YN, CT_WN, CT_BN, CT_GEMM, CT_WIDE, CT_BLOCK, CT_PARTS = range(HEAD, HEAD + 8)
CT_XS, CT_GEO, CT_OS = HEAD + 8, HEAD + 10, HEAD + 12
CT_END = HEAD + 14
_f32s = typed_pointer(types.float32)


@kernel
def im2col(x, xs, geo, col):  # pragma: no cover - compiled
    """``col`` [N, G, Cg * taps, positions] from ``x`` (element strides ``xs``: n, c, then the
    three spatial dimensions'), in tasks of (image, group, block of positions)."""
    n_count, groups, cg = geo[G_N], geo[G_G], geo[G_CG]
    kc = cg * geo[3] * geo[3 + FIELDS] * geo[3 + 2 * FIELDS]
    positions = geo[4] * geo[4 + FIELDS] * geo[4 + 2 * FIELDS]
    blocks = (positions + IM2COL_BLOCK - 1) // IM2COL_BLOCK
    for task in prange(n_count * groups * blocks):
        part = task % blocks
        image = task // blocks  # (n, g) as one number
        first = part * IM2COL_BLOCK
        count = min(IM2COL_BLOCK, positions - first)
        fill_tile(x, xs, geo, image // groups, (image % groups) * cg, first, count, col,
                   image * kc * positions + first, positions)


@inline
def _depthwise_plane(task, x, xs, geo, w, bias, out, os, plane,
                     acc):  # pragma: no cover - compiled
    """Plane ``task`` = (n, c) of ``depthwise`` (whose doc says how), in the caller's buffers
    (``_depthwise_buffers``: allocated once for many planes, an allocation costing as much as
    a small plane's work)."""
    channels = geo[G_G]
    k0, k1, k2 = geo[3], geo[3 + FIELDS], geo[3 + 2 * FIELDS]
    o0, o1, o2 = geo[4], geo[4 + FIELDS], geo[4 + 2 * FIELDS]
    e0 = (o0 - 1) * geo[6] + (k0 - 1) * geo[7] + 1  # the padded window's extents
    e1 = (o1 - 1) * geo[6 + FIELDS] + (k1 - 1) * geo[7 + FIELDS] + 1
    e2 = (o2 - 1) * geo[6 + 2 * FIELDS] + (k2 - 1) * geo[7 + 2 * FIELDS] + 1
    in0, in1, in2 = geo[5], geo[5 + FIELDS], geo[5 + 2 * FIELDS]
    p0, p1, p2 = geo[8], geo[8 + FIELDS], geo[8 + 2 * FIELDS]
    taps = k0 * k1 * k2
    lo2, hi2 = min(max(p2, 0), e2), min(max(p2 + in2, 0), e2)  # the input's part of a line
    unit = geo[6] == 1 and geo[6 + FIELDS] == 1 and geo[6 + 2 * FIELDS] == 1
    channel = task % channels
    n = task // channels
    base = n * xs[0] + channel * xs[1]
    for c in range(np.uint64(e0 * e1 * e2)):  # the padding (one loop: short rows' loops cost
        plane[c] = np.float32(0.0)             # more in their set-up than in their work)
    for v0 in range(max(p0, 0), min(p0 + in0, e0)):
        i0 = v0 - p0
        for v1 in range(max(p1, 0), min(p1 + in1, e1)):
            i1 = v1 - p1
            row = np.uint64((v0 * e1 + v1) * e2)
            line = base + i0 * xs[2] + i1 * xs[3] - p2 * xs[4]
            if xs[4] == 1:  # (a unit-stride line vectorises)
                first = np.uint64(line + lo2)
                for c in range(np.uint64(hi2 - lo2)):
                    plane[row + np.uint64(lo2) + c] = load32(x, first + c)
            else:
                for c in range(lo2, hi2):
                    plane[row + np.uint64(c)] = load32(x, line + c * xs[4])
    b0 = bias[channel]
    if unit:  # every tap is one shifted line over the whole plane (see above)
        length = np.uint64(((o0 - 1) * e1 + (o1 - 1)) * e2 + o2)
        if o0 == 1 and k0 == 1 and k1 == 3 and k2 == 3:  # 3x3: the nine taps in one pass,
            wb = channel * 9                               # added in the loop's tap order
            w0, w1, w2, w3, w4, w5 = w[wb], w[wb + 1], w[wb + 2], w[wb + 3], w[wb + 4], w[wb + 5]
            w6, w7, w8 = w[wb + 6], w[wb + 7], w[wb + 8]
            d1 = np.uint64(geo[7 + FIELDS] * e2)
            d2 = np.uint64(geo[7 + 2 * FIELDS])
            for j in range(length):
                acc[j] = ((((((((b0 + w0 * plane[j]) + w1 * plane[j + d2])
                              + w2 * plane[j + d2 + d2]) + w3 * plane[j + d1])
                            + w4 * plane[j + d1 + d2]) + w5 * plane[j + d1 + d2 + d2])
                          + w6 * plane[j + d1 + d1]) + w7 * plane[j + d1 + d1 + d2]) \
                    + w8 * plane[j + d1 + d1 + d2 + d2]
        else:
            for j in range(length):
                acc[j] = b0
            for t0 in range(k0):
                for t1 in range(k1):
                    for t2 in range(k2):
                        wt = w[channel * taps + (t0 * k1 + t1) * k2 + t2]
                        shift = np.uint64((t0 * geo[7] * e1 + t1 * geo[7 + FIELDS]) * e2
                                          + t2 * geo[7 + 2 * FIELDS])
                        for j in range(length):
                            acc[j] += wt * plane[shift + j]
        for a in range(o0):
            for b in range(o1):
                o = n * os[0] + channel * os[1] + a * os[2] + b * os[3]
                r = np.uint64((a * e1 + b) * e2)
                if os[4] == 1:
                    for c in range(np.uint64(o2)):
                        out[np.uint64(o) + c] = acc[r + c]
                else:
                    for c in range(o2):
                        out[o + c * os[4]] = acc[r + np.uint64(c)]
        return
    st2, d2 = np.uint64(geo[6 + 2 * FIELDS]), np.uint64(geo[7 + 2 * FIELDS])
    for a in range(o0):
        for b in range(o1):
            for c in range(np.uint64(o2)):
                acc[c] = b0
            for t0 in range(k0):
                for t1 in range(k1):
                    r0 = a * geo[6] + t0 * geo[7]
                    r1 = b * geo[6 + FIELDS] + t1 * geo[7 + FIELDS]
                    row = np.uint64((r0 * e1 + r1) * e2)
                    tap = channel * taps + (t0 * k1 + t1) * k2
                    for t2 in range(k2):
                        wt = w[tap + t2]
                        start = row + np.uint64(t2) * d2
                        for c in range(np.uint64(o2)):
                            acc[c] += wt * plane[start + c * st2]
            o = n * os[0] + channel * os[1] + a * os[2] + b * os[3]
            for c in range(o2):
                out[o + c * os[4]] = acc[c]


@inline
def _depthwise_buffers(geo):  # pragma: no cover - compiled
    """The zero-padded plane and the accumulator row ``_depthwise_plane`` works in."""
    o0, o1, o2 = geo[4], geo[4 + FIELDS], geo[4 + 2 * FIELDS]
    e0 = (o0 - 1) * geo[6] + (geo[3] - 1) * geo[7] + 1
    e1 = (o1 - 1) * geo[6 + FIELDS] + (geo[3 + FIELDS] - 1) * geo[7 + FIELDS] + 1
    e2 = (o2 - 1) * geo[6 + 2 * FIELDS] + (geo[3 + 2 * FIELDS] - 1) * geo[7 + 2 * FIELDS] + 1
    length = ((o0 - 1) * e1 + (o1 - 1)) * e2 + o2  # the shifted line of a unit-stride plane
    return np.empty(e0 * e1 * e2, np.float32), np.empty(max(length, o2), np.float32)


@kernel
def depthwise(x, xs, geo, w, bias, out, os):  # pragma: no cover - compiled
    """A convolution whose groups each hold one input and one output channel, directly:
    ``out`` (element strides ``os``: n, c, then the three spatial dimensions') = bias[c] + the
    sum over taps (row-major order) of w[c, tap] x the input element the tap reads (``geo`` as
    for im2col, every ``up`` 1).

    A task is one (n, c) plane: the input window it reads, zero-padded, is first copied into a
    dense float32 plane (each input element loaded once, FLOAT16 converted once), so a tap reads
    it with no bounds tests. At stride 1 every tap is then one shifted line over the whole plane
    (an output's wide index ``(a * e1 + b) * e2 + c`` reads the plane at that index plus the
    tap's offset; the columns past the output's width are computed and dropped), long enough to
    vectorise where the output's own rows (14 elements in a ResNet/MobileNet layer) are not;
    at other strides each output row sums its taps' strided lines."""
    for task in prange(geo[G_N] * geo[G_G]):
        plane, acc = _depthwise_buffers(geo)
        _depthwise_plane(task, x, xs, geo, w, bias, out, os, plane, acc)


def depthwise_task(xp, yp, pp, task):  # pragma: no cover - compiled
    """``depthwise`` as a task kernel (``kernels/tasks.py``) on the worker pool, a task a block
    of DW_PLANES planes sharing one set of buffers: x the input (its type per variant), y the
    float32 output, w the packed filter, z the bias; the block: the input's, output's, filter's
    and bias's lengths, the strides and geometry arrays (``store_arrays``), the planes a
    task."""
    f = carray(pp, DW_END)
    x = carray(xp, f[DW_XN])
    out = carray(yp, f[DW_YN])
    w = carray(_f32s(f[W]), f[DW_WN])
    bias = carray(_f32s(f[Z]), f[DW_BN])
    xs = byte_array(pp, DW_XS).view(np.int64)
    geo = byte_array(pp, DW_GEO).view(np.int64)
    os = byte_array(pp, DW_OS).view(np.int64)
    plane, acc = _depthwise_buffers(geo)
    planes = geo[G_N] * geo[G_G]
    for p in range(task * f[DW_PLANES], min(planes, (task + 1) * f[DW_PLANES])):
        _depthwise_plane(p, x, xs, geo, w, bias, out, os, plane, acc)


# -- im2col and the product in one parallel loop ---------------------------------------------------


@kernel
def conv_tiles(x, xs, geo, w, bias, out, os, gemm, wide, block,
               parts):  # pragma: no cover - compiled
    """A convolution as tiles of (image, group, block of output positions), each on one
    thread: the tile's column matrix [Cg * taps, block] is laid out in the thread's own buffer
    (it stays in its cache), then one single-threaded CBLAS sgemm at address ``gemm`` (``wide``:
    64-bit integers) adds filter [Cout/G, Cg * taps] x columns to the tile of ``out`` (float32;
    element strides ``os``: image, channel; positions at unit stride), which holds the bias
    first (``bias``: one per output channel, or empty). ``w``: the dense packed filter.
    ``parts`` contiguous ranges of tiles run side by side, each with its buffer made once (a
    buffer made per tile is paged in per tile); ``conv_tiles_task`` is the same on the pool."""
    for part in prange(parts):
        _tiles_part(part, parts, x, xs, geo, w, bias, out, os, gemm, wide, block)


def conv_tiles_task(xp, yp, pp, part):  # pragma: no cover - compiled
    """``conv_tiles``'s part ``part`` as a task kernel (``kernels/tasks.py``): x the float32
    input, y the float32 output, w the packed filter, z the bias; the block: the lengths of x,
    y, w and z, the BLAS's address, wide?, the positions a tile, the parts, then the strides,
    geometry and output strides arrays (``store_arrays``)."""
    f = carray(pp, CT_END)
    x = carray(xp, f[CT_XN])
    out = carray(yp, f[CT_YN])
    w = carray(_f32s(f[W]), f[CT_WN])
    bias = carray(_f32s(f[Z]), f[CT_BN])
    xs = byte_array(pp, CT_XS).view(np.int64)
    geo = byte_array(pp, CT_GEO).view(np.int64)
    os = byte_array(pp, CT_OS).view(np.int64)
    _tiles_part(part, f[CT_PARTS], x, xs, geo, w, bias, out, os, f[CT_GEMM], f[CT_WIDE] != 0,
                f[CT_BLOCK])


def tile_count(geo: np.ndarray, block: int) -> int:
    """The tiles of ``conv_tiles``."""
    positions = int(geo[4] * geo[4 + FIELDS] * geo[4 + 2 * FIELDS])
    return int(geo[G_N] * geo[G_G]) * -(-positions // block)


@inline
def _tiles_part(part, parts, x, xs, geo, w, bias, out, os, gemm, wide,
                block):  # pragma: no cover - compiled
    """The ``part``-th of ``parts`` contiguous ranges of tiles, in one buffer."""
    n_count, groups, cg = geo[G_N], geo[G_G], geo[G_CG]
    taps = geo[3] * geo[3 + FIELDS] * geo[3 + 2 * FIELDS]
    positions = geo[4] * geo[4 + FIELDS] * geo[4 + 2 * FIELDS]
    kc = cg * taps
    blocks = (positions + block - 1) // block
    tasks = n_count * groups * blocks
    col = np.empty(kc * min(block, positions), np.float32)
    for task in range(part * tasks // parts, (part + 1) * tasks // parts):
        first = (task % blocks) * block
        direct_tile(x, xs, geo, w, bias, out, os, gemm, wide, task // (blocks * groups),
                    (task // blocks) % groups, first, min(block, positions - first), col)


FN, WIDE, DOUBLE, CALLS = range(HEAD, HEAD + 4)  # gemm_task's argument block, after HEAD


def gemm_task(ip, rp, pp, i):  # pragma: no cover - compiled
    """Call ``i`` of independent single-threaded ``?gemm`` calls side by side (a task kernel,
    ``kernels/tasks.py``; ``ip``: the int64 rows [calls, 11], ``rp``: the float64 rows
    [calls, 2], see the intrinsic; the block: the ``?gemm`` address, 64-bit integers?, double?,
    the call count). Run from the worker pool, the calls need no Python thread per call and no
    hand-off."""
    f = carray(pp, HEAD + 4)
    fn = f[FN]
    ints = carray(ip, (f[CALLS], 11))
    reals = carray(rp, (f[CALLS], 2))
    if f[DOUBLE] != 0:
        if f[WIDE] != 0:
            gemm_row_d64(fn, ints, reals, i)
        else:
            gemm_row_d32(fn, ints, reals, i)
    elif f[WIDE] != 0:
        gemm_row_s64(fn, ints, reals, i)
    else:
        gemm_row_s32(fn, ints, reals, i)
