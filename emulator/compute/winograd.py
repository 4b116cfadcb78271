"""A 3x3, stride-1 convolution by Winograd's minimal filtering F(2x2, 3x3) (Lavin and Gray,
"Fast Algorithms for Convolutional Neural Networks", 2016): each 2x2 block of outputs
("tile") of one channel is

    Y = Aᵀ [ Σ_c (G g_c Gᵀ) ⊙ (Bᵀ d_c B) ] A

with ``d_c`` the tile's 4x4 input patch of channel ``c`` and ``g_c`` its 3x3 filter (the packed,
compute-oriented filter of ``conv.py``: a cross-correlation), and

    Bᵀ = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]
    G  = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]]
    Aᵀ = [[1, 1, 1, 0], [0, 1, -1, -1]].

The sum over channels is 16 matrix products, one per element ξ of the 4x4 transformed tile:
``M_ξ [Cout/G, tiles] = U_ξ [Cout/G, Cin/G] x V_ξ [Cin/G, tiles]``: 16 multiplies per tile and
channel pair where the direct sum takes 36, so 2.25x fewer flops.

A task (one group, a run of the batch's rows of tiles, which may span images) transforms its
patches into its thread's buffers, makes its 16 single-threaded products (``kernels/sgemm.py``,
or the BLAS: ``OWN_GEMM``) and transforms them back, adding the bias, straight into the output
(positions at unit stride, as the tile path of ``conv.py``). Each thread runs one contiguous
range of tasks (``winograd_task`` on the worker pool, else ``conv_winograd`` on ``prange``);
which shapes take the path, and the task size, come from the shape alone (``rows``).

**Exactness.** The sums are not the direct path's sums; DirectML's drivers choose such
algorithms too (metacommands), and ``DML_EXECUTION_FLAG_DISABLE_META_COMMANDS`` turns this path
off. The bound (docs/decisions.md, "Convolution by Winograd's F(2x2, 3x3)") is the direct
bound's form over the transformed magnitudes. Non-finite values never take this path's
meaning: a filter with a non-finite value (or one whose transform overflows) makes the whole
dispatch direct, and a task whose outputs are not all finite recomputes them directly (an
infinity in a tile's patch but outside an output's window would otherwise reach that output as
inf - inf).
"""

from __future__ import annotations

import numpy as np
from numba import carray
from numba import types as numba_types

from descriptors import DML_EXECUTION_FLAGS

from ..kernels.blas_calls import address, sgemm_at
from ..kernels.floats import load32
from ..kernels.im2col import FIELDS, G_CG, G_G, G_N, direct_tile
from ..kernels.jit import execution_flags, inline, kernel, prange
from ..kernels.sgemm import NR, sgemm
from ..kernels.strided import typed_pointer
from ..kernels.tasks import HEAD, W, Z, byte_array

TILES = 64  # tiles a task transforms at least (its buffers: 16 x (Cin + Cout)/G x tiles floats)
OWN_GEMM = True  # the products on kernels/sgemm.py (else the BLAS): tools/ab_levers.py
ENABLED = True  # a lever (tools/ab_levers.py winograd)
DISABLE_META_COMMANDS = int(DML_EXECUTION_FLAGS.DML_EXECUTION_FLAG_DISABLE_META_COMMANDS)
MIN_CHANNELS = 8  # per group, in and out: below, the transforms cost more than they save
TASKS = 16  # tasks a dispatch is cut into at least, where it has rows of tiles enough
MIN_TILES = 24  # tiles a task at least
# winograd_task's block after HEAD: the lengths of x, y, u and w, the BLAS's address, wide?,
# own?, rows a task, the parts; then four arrays (address and byte length each)
WG_XN, WG_YN, WG_UN, WG_WN, WG_GEMM, WG_WIDE, WG_OWN, WG_ROWS, WG_PARTS = range(HEAD, HEAD + 9)
WG_XS, WG_GEO, WG_OS, WG_BIAS = HEAD + 9, HEAD + 11, HEAD + 13, HEAD + 15
WG_END = HEAD + 17
_f32s = typed_pointer(numba_types.float32)


def allowed() -> bool:
    """Whether this dispatch may take the path: its compiled form was not asked for
    DML_EXECUTION_FLAG_DISABLE_META_COMMANDS (and the lever is on)."""
    return ENABLED and not execution_flags() & DISABLE_META_COMMANDS


def rows(geo: np.ndarray, cog: int) -> int:
    """The rows of tiles per task where im2col's geometry (``kernels.py``) is a 2D 3x3
    cross-correlation at stride 1, dilation 1, on the input itself (not upsampled), with
    channels and tiles enough to gain; else 0. From the shape alone (never the thread count):
    ~TILES tiles a task, but tasks for TASKS threads where the batch has rows enough, and at
    least MIN_TILES a task (fewer: the products are too narrow to pay for the transforms)."""
    lead, r, c = 3, 3 + FIELDS, 3 + 2 * FIELDS
    if geo[lead] != 1 or geo[lead + 1] != 1 or geo[lead + 2] != 1 or geo[lead + 5] != 0:
        return 0
    for d in (r, c):  # kernel 3, stride 1, dilation 1, up 1
        if geo[d] != 3 or geo[d + 3] != 1 or geo[d + 4] != 1 or geo[d + 6] != 1:
            return 0
    if min(int(geo[G_CG]), cog) < MIN_CHANNELS:
        return 0
    tw = (int(geo[c + 1]) + 1) // 2
    units = int(geo[G_N]) * ((int(geo[r + 1]) + 1) // 2)
    count = max(1, min(-(-TILES // tw), -(-units // TASKS)))
    return count if min(count, units) * tw >= MIN_TILES else 0


def transform_filter(w: np.ndarray, groups: int, u: np.ndarray) -> bool:
    """The packed filter [G, Cout/G, Cin/G * 9] → ``u`` [G, 16, Cout/G, Cin/G] (G g Gᵀ in
    float64, rounded once to float32); False where a value is not finite (the direct path
    then)."""
    return bool(_transform_filter(w, groups, u))


@kernel
def _transform_filter(w, groups, u):  # pragma: no cover - compiled
    pairs = u.size // 16  # (group, output channel, input channel)
    per = pairs // groups
    cig = w.size // (pairs * 9) if pairs > 0 else 1
    cog = per // cig
    bad = 0
    for p in prange(pairs):
        grp = p // per
        co = (p // cig) % cog
        ci = p % cig
        at = (grp * cog + co) * cig * 9 + ci * 9
        # G g Gᵀ: the rows of G g (its columns transformed), then each row's transform
        g0 = (np.float64(w[at]), np.float64(w[at + 1]), np.float64(w[at + 2]))
        g1 = (np.float64(w[at + 3]), np.float64(w[at + 4]), np.float64(w[at + 5]))
        g2 = (np.float64(w[at + 6]), np.float64(w[at + 7]), np.float64(w[at + 8]))
        for i in range(4):
            if i == 0:
                a, b, c = g0
            elif i == 3:
                a, b, c = g2
            else:
                sign = 1.0 if i == 1 else -1.0
                a = 0.5 * (g0[0] + sign * g1[0] + g2[0])
                b = 0.5 * (g0[1] + sign * g1[1] + g2[1])
                c = 0.5 * (g0[2] + sign * g1[2] + g2[2])
            row = (a, 0.5 * (a + b + c), 0.5 * (a - b + c), c)
            for j in range(4):
                value = np.float32(row[j])
                if not np.isfinite(value):
                    bad += 1
                u[((grp * 16 + 4 * i + j) * cog + co) * cig + ci] = value
    return bad == 0


def tasks_of(geo: np.ndarray, rows: int) -> int:
    """How many tasks of ``rows`` rows of tiles a dispatch has."""
    th = (int(geo[4 + FIELDS]) + 1) // 2
    return int(geo[G_G]) * -(-int(geo[G_N]) * th // rows)


def run(x: np.ndarray, xs: np.ndarray, geo: np.ndarray, u: np.ndarray, w: np.ndarray,
        bias: np.ndarray, out: np.ndarray, os: np.ndarray, gemm: int, wide: bool, own: bool,
        rows: int) -> None:
    """``conv_winograd``'s ranges of tasks, one per thread, on the worker pool (the kernel
    ``winograd_task``), or on ``prange`` where the pool is unavailable."""
    import numba

    from ..kernels import pool, tasks

    parts = min(numba.get_num_threads(), tasks_of(geo, rows))
    if not pool.available():
        conv_winograd(x, xs, geo, u, w, bias, out, os, gemm, wide, own, rows, parts)
        return
    block = tasks.block([x.size, out.size, u.size, w.size, gemm, int(wide), int(own), rows,
                         parts, *[0] * 8])
    tasks.store_arrays(block, WG_XS, xs, geo, os, bias)
    fn = tasks.address(winograd_task, "float32", "float32")
    tasks.run(fn, block, parts, x, out, u, w)


@kernel
def conv_winograd(x, xs, geo, u, w, bias, out, os, gemm, wide, own, rows,
                  parts):  # pragma: no cover - compiled
    """The convolution of ``x`` (element strides ``xs``: n, c, then three spatial) by F(2x2,
    3x3) (module doc) into ``out`` (float32; element strides ``os``: image, channel; the
    positions at unit stride). ``u``: the transformed filter [G, 16, Cout/G, Cin/G]; ``w``:
    the packed filter [G, Cout/G, Cin/G * 9], for the direct recomputation; ``bias``: one per
    output channel, or empty; ``own``: the products on kernels/sgemm.py, else the BLAS at
    ``gemm`` (``wide``: 64-bit integers). A task: ``rows`` rows of tiles of one group, the
    batch's rows of tiles in order (so that a task of a small image spans images); ``parts``
    ranges of tasks run side by side, each in its own buffers (made once: a buffer made per
    task is paged in per task)."""
    for part in prange(parts):
        _winograd_part(part, parts, x, xs, geo, u, w, bias, out, os, gemm, wide, own, rows)


def winograd_task(xp, yp, pp, part):  # pragma: no cover - compiled
    """``conv_winograd``'s part ``part`` as a task kernel (``kernels/tasks.py``) on the worker
    pool: x the float32 input, y the float32 output, w the transformed filter, z the packed
    one; the block: their lengths, the BLAS's address, wide?, own?, rows a task, the parts,
    then the strides, geometry, output strides and bias arrays (``store_arrays``)."""
    f = carray(pp, WG_END)
    x = carray(xp, f[WG_XN])
    out = carray(yp, f[WG_YN])
    u = carray(_f32s(f[W]), f[WG_UN])
    w = carray(_f32s(f[Z]), f[WG_WN])
    xs = byte_array(pp, WG_XS).view(np.int64)
    geo = byte_array(pp, WG_GEO).view(np.int64)
    os = byte_array(pp, WG_OS).view(np.int64)
    bias = byte_array(pp, WG_BIAS).view(np.float32)
    _winograd_part(part, f[WG_PARTS], x, xs, geo, u, w, bias, out, os, f[WG_GEMM],
                   f[WG_WIDE] != 0, f[WG_OWN] != 0, f[WG_ROWS])


@inline
def _winograd_part(part, parts, x, xs, geo, u, w, bias, out, os, gemm, wide, own,
                   rows):  # pragma: no cover - compiled
    """The ``part``-th of ``parts`` contiguous ranges of tasks, in buffers made once."""
    n_count, groups, cig = geo[G_N], geo[G_G], geo[G_CG]
    o1, o2 = geo[4 + FIELDS], geo[4 + 2 * FIELDS]
    kc = cig * 9
    cog = w.size // (groups * kc)
    th, half = (o1 + 1) // 2, (o2 + 1) // 2 + 1
    blocks = (n_count * th + rows - 1) // rows
    tasks = groups * blocks
    most = -(-rows * half // NR) * NR  # a task's columns (_winograd_task)
    v = np.empty(16 * cig * most, np.float32)
    m = np.empty(16 * cog * most, np.float32)
    pe = np.empty(4 * (most + 1), np.float32)  # the patches' even and odd columns
    po = np.empty(4 * (most + 1), np.float32)
    te = np.empty(4 * (most + 1), np.float32)  # the same after Bᵀ (rows transformed)
    to = np.empty(4 * (most + 1), np.float32)
    y = np.empty(4 * most, np.float32)
    col = np.empty(kc * 2 * o2, np.float32)
    for task in range(part * tasks // parts, (part + 1) * tasks // parts):
        _winograd_task(task // blocks, (task % blocks) * rows, rows, x, xs, geo, u, w, bias,
                       out, os, gemm, wide, own, v, m, pe, po, te, to, y, col)


@inline
def _winograd_task(g, u0, rows, x, xs, geo, u, w, bias, out, os, gemm, wide, own, v, m, pe,
                   po, te, to, y, col):  # pragma: no cover - compiled
    """The rows of tiles [u0, u0 + rows) of group ``g`` in the thread's buffers. A row of
    tiles takes ``half`` = tiles + 1 columns of every buffer, so that each step below is one
    loop at unit stride over the whole task (they vectorise); the last column is unused, as
    are the columns after the last row up to a multiple of sgemm's tile width (whole tiles
    for the products)."""
    n_count, groups, cig = geo[G_N], geo[G_G], geo[G_CG]
    o1, o2 = geo[4 + FIELDS], geo[4 + 2 * FIELDS]
    in1, in2 = geo[5 + FIELDS], geo[5 + 2 * FIELDS]
    p1, p2 = geo[8 + FIELDS], geo[8 + 2 * FIELDS]
    kc = cig * 9
    cog = w.size // (groups * kc)
    th, tw = (o1 + 1) // 2, (o2 + 1) // 2
    half = tw + 1
    nr = min(rows, n_count * th - u0)
    used = nr * half
    cols = -(-used // NR) * NR
    stride = pe.size // 4  # of the four patch rows in pe, po, te, to
    # a patch row's columns k (input column k - p2) that lie inside the input: [lo, hi)
    lo = min(max(p2, 0), 2 * half)
    hi = min(max(in2 + p2, lo), 2 * half)
    sx = xs[4]
    plane = cig * cols
    rb = y  # a patch row, before its columns go apart (y is free until the products)
    # Every hot loop indexes on unsigned integers, all of them (Numba makes a float of a
    # signed and unsigned mix, and wraps negative signed indices, which LLVM cannot vectorise)
    one, two = np.uint64(1), np.uint64(2)
    uhalf, ucols, uused = np.uint64(half), np.uint64(cols), np.uint64(used)
    s1, s2, s3 = np.uint64(stride), np.uint64(2 * stride), np.uint64(3 * stride)
    uplane = np.uint64(plane)
    for c in range(cig):
        # the 4 x 4 patches of this channel, rows apart, even and odd columns apart
        for r in range(nr):
            n, ty = (u0 + r) // th, (u0 + r) % th
            base = n * xs[0] + (g * cig + c) * xs[1]
            for i in range(4):
                iy = 2 * ty - p1 + i
                at = np.uint64(i * stride + r * half)
                if iy < 0 or iy >= in1:
                    for j in range(uhalf):
                        pe[at + j] = np.float32(0.0)
                        po[at + j] = np.float32(0.0)
                    continue
                line = base + iy * xs[3] - p2 * sx
                for k in range(lo):
                    rb[k] = np.float32(0.0)
                if sx == 1:
                    src, dst = np.uint64(line + lo), np.uint64(lo)
                    for k in range(np.uint64(hi - lo)):
                        rb[dst + k] = load32(x, src + k)
                else:
                    for k in range(lo, hi):
                        rb[k] = load32(x, line + k * sx)
                for k in range(hi, 2 * half):
                    rb[k] = np.float32(0.0)
                for j in range(uhalf):
                    pe[at + j] = rb[two * j]
                    po[at + j] = rb[two * j + one]
        for i in range(4):
            for j in range(uused, ucols):
                pe[np.uint64(i) * s1 + j] = np.float32(0.0)
                po[np.uint64(i) * s1 + j] = np.float32(0.0)
        for j in range(ucols):  # Bᵀ d
            d0, d1, d2, d3 = pe[j], pe[s1 + j], pe[s2 + j], pe[s3 + j]
            te[j], te[s1 + j], te[s2 + j], te[s3 + j] = d0 - d2, d1 + d2, d2 - d1, d1 - d3
            d0, d1, d2, d3 = po[j], po[s1 + j], po[s2 + j], po[s3 + j]
            to[j], to[s1 + j], to[s2 + j], to[s3 + j] = d0 - d2, d1 + d2, d2 - d1, d1 - d3
        for i in range(4):  # (read by the unused column)
            te[i * stride + cols], to[i * stride + cols] = np.float32(0.0), np.float32(0.0)
        for a in range(4):  # (Bᵀ d) B: tile j's columns 2 j .. 2 j + 3 are te/to [j], [j + 1]
            q = np.uint64(4 * a * plane + c * cols)
            ra = np.uint64(a * stride)
            for j in range(ucols):
                ev0, od0 = te[ra + j], to[ra + j]
                ev1, od1 = te[ra + j + one], to[ra + j + one]
                v[q + j] = ev0 - ev1
                v[q + uplane + j] = od0 + ev1
                v[q + two * uplane + j] = ev1 - od0
                v[q + np.uint64(3) * uplane + j] = od0 - od1
    # the 16 products M_ξ = U_ξ x V_ξ
    u_at, v_at, m_at = address(u), address(v), address(m)
    for xi in range(16):
        if own:
            sgemm(cog, cols, cig, u_at + ((g * 16 + xi) * cog * cig) * 4, cig,
                  v_at + xi * plane * 4, cols, m_at + xi * cog * cols * 4, cols)
        else:
            sgemm_at(wide, gemm, 0, 0, cog, cols, cig, np.float32(1.0),
                     u_at + ((g * 16 + xi) * cog * cig) * 4, cig, v_at + xi * plane * 4, cols,
                     m_at + xi * cog * cols * 4, cols, v)
    # Aᵀ M A plus the bias, into the output
    plane = cog * cols
    p = np.uint64(plane)
    sick = 0  # 1 once an output is not finite (an integer: the loop still vectorises)
    for co in range(cog):
        bv = bias[g * cog + co] if bias.size > 0 else np.float32(0.0)
        at = np.uint64(co * cols)
        for j in range(ucols):
            e = at + j
            m0, m1, m2, m3 = m[e], m[e + p], m[e + two * p], m[e + np.uint64(3) * p]
            m4, m5 = m[e + np.uint64(4) * p], m[e + np.uint64(5) * p]
            m6, m7 = m[e + np.uint64(6) * p], m[e + np.uint64(7) * p]
            m8, m9 = m[e + np.uint64(8) * p], m[e + np.uint64(9) * p]
            m10, m11 = m[e + np.uint64(10) * p], m[e + np.uint64(11) * p]
            m12, m13 = m[e + np.uint64(12) * p], m[e + np.uint64(13) * p]
            m14, m15 = m[e + np.uint64(14) * p], m[e + np.uint64(15) * p]
            q00, q01, q02, q03 = m0 + m4 + m8, m1 + m5 + m9, m2 + m6 + m10, m3 + m7 + m11
            q10, q11 = m4 - m8 - m12, m5 - m9 - m13
            q12, q13 = m6 - m10 - m14, m7 - m11 - m15
            y00 = q00 + q01 + q02 + bv
            y01 = q01 - q02 - q03 + bv
            y10 = q10 + q11 + q12 + bv
            y11 = q11 - q12 - q13 + bv
            y[j], y[ucols + j], y[two * ucols + j], y[np.uint64(3) * ucols + j] = \
                y00, y01, y10, y11
            z = (y00 + y01 + y10 + y11) * np.float32(0.0)
            sick |= z != z
        for r in range(nr):
            n, ty = (u0 + r) // th, (u0 + r) % th
            for i in range(min(2, o1 - 2 * ty)):
                dst = np.uint64(n * os[0] + (g * cog + co) * os[1] + (2 * ty + i) * o2)
                src = np.uint64(2 * i * cols + r * half)
                for j in range(np.uint64(o2 // 2)):
                    out[dst + two * j] = y[src + j]
                    out[dst + two * j + one] = y[src + ucols + j]
                if o2 % 2 == 1:
                    out[dst + np.uint64(o2 - 1)] = y[src + np.uint64(tw - 1)]
    if sick == 0:
        return
    # not all finite: these rows' outputs as the direct path computes them
    for r in range(nr):
        n, ty = (u0 + r) // th, (u0 + r) % th
        direct_tile(x, xs, geo, w, bias, out, os, gemm, wide, n, g, 2 * ty * o2,
                    min(2, o1 - 2 * ty) * o2, col)
