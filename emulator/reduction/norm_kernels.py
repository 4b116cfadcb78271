"""Kernels of the normalization rows (``reduction/norms.py``): task kernels
(``kernels/tasks.py``), one per computation and storage type (float32 for FLOAT32, uint16 bits
for FLOAT16), compiled on first use and kept in Numba's disk cache, launched by ``launch`` on
the worker pool (or ``tasks.drive``).

Why this shape (measured on the 2-core dev box, cold cache): a parallel kernel per computation
and type cost 4-8 s of first compile each (46 s for the eight), because Numba links every
helper's code into its caller and optimises it again at each level of calls; a task kernel,
called by address from a driver compiled once for every kernel, is optimised once (1.6-2.4 s
each).

Every computation sees the same arrays: x1 (the task kernel's x) and y (its y) of the storage
type, then, as addresses in the argument block (``tasks.store_arrays``): x2 (the storage
type), a, b (int64 rows of collapsed sizes and strides), ints, reals (the computation's
scalar parameters), table, out (float64) and ``shapes`` (each array's length or shape, so that
the task sees NumPy arrays again). The computations:

- ``AFFINE`` (the batch-normalization family's per-element pass). Over the input's collapsed
  dimensions (``a``: sizes, then the strides of ``x1``, ``x2``, the output and of a float64
  parameter ``table`` of six columns ``(m1, a1, m2, a2, c, b)``, stride 0 where the parameters
  broadcast):

      y = act(((x1 - m1)*a1 + (x2 - m2)*a2)*c + b)     (``inside``: the x2 term inside the product)
      y = act(((x1 - m1)*a1)*c + b + (x2 - m2)*a2)     (otherwise; without x2 the term is absent)

  in float64, the fused activation on the float64 value (the shared activation kernel,
  ``strided.activation_address``), one rounding at the store. A task is a piece of at most
  ``norms.CHUNK`` elements of one row of the innermost dimension; a row whose parameters are
  constant (the per-channel case) without x2, contiguous, with no activation or RELU, runs one
  loop with the parameters in registers (the memory-bound BATCH_NORMALIZATION inference pass);
  everything else goes through a float64 buffer (parameters constant along the row still held
  in registers).
- ``MOMENTS``: per group (a parameter position) over the reduced elements (``a``: the groups'
  sizes and strides in x1, x2; ``b``: the reduced ones), four float64 sums of one or two inputs,
  for the statistics and the gradients' sums; a task is (group, block of reduced rows), with a
  number of rows per block fixed by the data, so the partial sums (added in order by the plan)
  do not depend on the thread count.
- ``LP``: LP_NORMALIZATION; a group is a line along Axis; one line per task (row mode) or, when
  Axis is not the contiguous dimension, a block of neighbouring lines summed side by side
  (column mode: contiguous inner loops).
- ``LRN``: LOCAL_RESPONSE_NORMALIZATION and its gradient over 4-D tensors. A task is a plane of
  ``A x B`` elements held in float64 scratch: channels x a block of columns (CrossChannel) or
  rows x columns of one channel (the window a box, summed one axis at a time).

Row sums use ``jit.reduction`` (reassociation only, so they vectorise); everything else is strict
IEEE.
"""

from __future__ import annotations

import math

import numpy as np
from numba import carray, types

from ..kernels.activation import IDENTITY, RELU
from ..kernels.floats import load64, store
from ..kernels.index import offsets4
from ..kernels.jit import helper, inline, reduction
from ..kernels.strided import call_activation, pointer_like, typed_pointer
from ..kernels.tasks import HEAD, address, block, run, store_arrays

AFFINE, MOMENTS, LP, LRN = 0, 1, 2, 3  # ``which`` (norms.py has the same numbers)
# The block's arrays (``tasks.store_arrays``: an address and a byte length each).
X2, A, B, INTS, REALS, TABLE, OUT, SHAPES = range(HEAD, HEAD + 16, 2)
ARRAYS = 16
_i64s = typed_pointer(types.int64)
_f64s = typed_pointer(types.float64)


def launch(fn: int, count: int, x1: np.ndarray, x2: np.ndarray, y: np.ndarray, a: np.ndarray,
           b: np.ndarray, ints: np.ndarray, reals: np.ndarray, table: np.ndarray,
           out: np.ndarray, shapes: np.ndarray, work: int) -> None:
    """``count`` tasks of the task kernel at ``fn`` (x1, x2, y: contiguous, of the kernel's
    storage types; the rest contiguous int64 or float64 arrays, alive for the call); ``work``:
    elements, for how many threads it is worth (``tasks.run``)."""
    blk = block([0] * ARRAYS)
    store_arrays(blk, HEAD, x2, a, b, ints, reals, table, out, shapes)
    run(fn, blk, count, x1, y, work=work)


@inline
def arrays(x1p, yp, pp):  # pragma: no cover
    """The task's arrays (x1, x2, y, a, b, ints, reals, table, out) from its pointers, the
    block's addresses and ``shapes``."""
    f = carray(pp, HEAD + ARRAYS)
    sh = carray(_i64s(f[SHAPES]), (14,))
    return (carray(x1p, (sh[0],)), carray(pointer_like(f[X2], x1p), (sh[1],)),
            carray(yp, (sh[2],)), carray(_i64s(f[A]), (sh[3], sh[4])),
            carray(_i64s(f[B]), (sh[5], sh[6])), carray(_i64s(f[INTS]), (sh[7],)),
            carray(_f64s(f[REALS]), (sh[8],)), carray(_f64s(f[TABLE]), (sh[9], sh[10])),
            carray(_f64s(f[OUT]), (sh[11], sh[12], sh[13])))


def _affine_entry(x1p, yp, pp, t):  # pragma: no cover
    x1, x2, y, a, _, ints, reals, table, _ = arrays(x1p, yp, pp)
    _affine_task(t, x1, x2, y, a, ints, reals, table)


def _moments_entry(x1p, yp, pp, t):  # pragma: no cover
    x1, x2, _, a, b, ints, _, table, out = arrays(x1p, yp, pp)
    _moments_task(t, x1, x2, a, b, ints, table, out)


def _lp_entry(x1p, yp, pp, t):  # pragma: no cover
    x, _, y, a, _, ints, reals, _, _ = arrays(x1p, yp, pp)
    _lp_task(t, x, y, a, ints, reals)


def _lrn_entry(x1p, yp, pp, t):  # pragma: no cover
    x, dy, y, _, _, ints, reals, _, _ = arrays(x1p, yp, pp)
    _lrn_task(t, x, dy, y, ints, reals)


_ENTRIES = (_affine_entry, _moments_entry, _lp_entry, _lrn_entry)


def task_address(which: int, storage: str) -> int:
    """The address of computation ``which``'s task kernel for ``storage`` ("float32" or
    "uint16"), compiled (or loaded from the disk cache) on first use."""
    return address(_ENTRIES[which], storage, storage)


# --- affine ---------------------------------------------------------------------------------
# Hot loops index with unsigned integers: a signed index makes Numba add the negative-index
# wraparound, which kept LLVM from vectorising (the BATCH_NORMALIZATION pass: 5.5 ms scalar,
# 1.6 ms vectorised, 1.2 ms for a plain copy, one thread, [32, 64, 56, 56] float32).

@inline
def _affine_task(t, x1, x2, y, a, ints, reals, table):  # pragma: no cover
    """ints: pieces per row, has_x2, inside, activation kind, piece length, the activation
    kernel's address; reals: p0, p1."""
    last = a.shape[1] - 1
    pieces = ints[0]
    chunk = ints[4]
    has_x2 = ints[1] != 0
    inside = ints[2] != 0
    kind = ints[3]
    r = t // pieces
    j0 = (t - r * pieces) * chunk
    n = np.uint64(min(a[0, last] - j0, chunk))
    o1, o2, oy, op = offsets4(r, a[0, :last], a[1], a[2], a[3], a[4])
    i1, i2, iy, ip = (np.uint64(a[1, last]), np.uint64(a[2, last]), np.uint64(a[3, last]),
                      np.uint64(a[4, last]))
    b1 = np.uint64(o1 + j0 * a[1, last])
    b2 = np.uint64(o2 + j0 * a[2, last])
    by = np.uint64(oy + j0 * a[3, last])
    bp = np.uint64(op + j0 * a[4, last])
    if ip == 0 and not has_x2 and i1 == 1 and iy == 1 and kind in (IDENTITY, RELU):
        m1 = table[bp, 0]
        a1 = table[bp, 1]
        c = table[bp, 4]
        b = table[bp, 5]
        if kind == RELU:
            for j in range(n):
                v = ((load64(x1, b1 + j) - m1) * a1) * c + b
                v = v if v > 0.0 else 0.0  # D3D's max(0, v): +0 for NaN and -0
                store(y, by + j, v)
        else:
            for j in range(n):
                store(y, by + j, ((load64(x1, b1 + j) - m1) * a1) * c + b)
        return
    buf = np.empty(n, np.float64)
    if ip == 0:  # the parameters constant along the row: in registers
        m1, a1, m2, a2, c, b = (table[bp, 0], table[bp, 1], table[bp, 2], table[bp, 3],
                                table[bp, 4], table[bp, 5])
        if not has_x2:
            for j in range(n):
                buf[j] = ((load64(x1, b1 + j * i1) - m1) * a1) * c + b
        elif inside:
            for j in range(n):
                buf[j] = ((load64(x1, b1 + j * i1) - m1) * a1
                          + (load64(x2, b2 + j * i2) - m2) * a2) * c + b
        else:
            for j in range(n):
                buf[j] = ((load64(x1, b1 + j * i1) - m1) * a1) * c + b \
                    + (load64(x2, b2 + j * i2) - m2) * a2
    else:
        for j in range(n):
            p = bp + j * ip
            v = (load64(x1, b1 + j * i1) - table[p, 0]) * table[p, 1]
            if not has_x2:
                v = v * table[p, 4] + table[p, 5]
            elif inside:
                v = (v + (load64(x2, b2 + j * i2) - table[p, 2]) * table[p, 3]) * table[p, 4] \
                    + table[p, 5]
            else:
                v = v * table[p, 4] + table[p, 5] \
                    + (load64(x2, b2 + j * i2) - table[p, 2]) * table[p, 3]
            buf[j] = v
    if kind != IDENTITY:
        call_activation(ints[5], buf, np.int64(n), kind, reals[0], reals[1])
    for j in range(n):
        store(y, by + j * iy, buf[j])


# --- moments --------------------------------------------------------------------------------

@reduction
def _row_moments(x1, x2, o1, o2, s1, s2, count, mode, has_x2, c, c2,
                 w):  # pragma: no cover
    """One row's sums. mode 0: (sum x1, 0, sum x2, 0); mode 1: (sum (x1 - c)^2,
    sum x2*(x1 - c), sum x2, sum (x2*(x1 - c2))*w)."""
    b1, b2, i1, i2, n = np.uint64(o1), np.uint64(o2), np.uint64(s1), np.uint64(s2), \
        np.uint64(count)
    s0 = 0.0
    t1 = 0.0
    t2 = 0.0
    t3 = 0.0
    if mode == 0 and has_x2:
        if i1 == 1 and i2 == 1:
            for j in range(n):
                s0 += load64(x1, b1 + j)
                t2 += load64(x2, b2 + j)
        else:
            for j in range(n):
                s0 += load64(x1, b1 + j * i1)
                t2 += load64(x2, b2 + j * i2)
    elif mode == 0:
        if i1 == 1:
            for j in range(n):
                s0 += load64(x1, b1 + j)
        else:
            for j in range(n):
                s0 += load64(x1, b1 + j * i1)
    elif not has_x2:
        if i1 == 1:
            for j in range(n):
                d = load64(x1, b1 + j) - c
                s0 += d * d
        else:
            for j in range(n):
                d = load64(x1, b1 + j * i1) - c
                s0 += d * d
    elif i1 == 1 and i2 == 1:
        for j in range(n):
            v = load64(x1, b1 + j)
            g = load64(x2, b2 + j)
            d = v - c
            s0 += d * d
            t1 += g * d
            t2 += g
            t3 += (g * (v - c2)) * w
    else:
        for j in range(n):
            v = load64(x1, b1 + j * i1)
            g = load64(x2, b2 + j * i2)
            d = v - c
            s0 += d * d
            t1 += g * d
            t2 += g
            t3 += (g * (v - c2)) * w
    return s0, t1, t2, t3


@inline
def _moments_task(t, x1, x2, a, b, ints, table, out):  # pragma: no cover
    """ints: blocks per group, rows per block, reduced rows, mode, has_x2; table rows: center,
    center2, weight; out[g, block] = the four sums."""
    blocks = ints[0]
    block_rows = ints[1]
    mode = ints[3]
    has_x2 = ints[4] != 0
    g = t // blocks
    k = t - g * blocks
    o1, o2, _, _ = offsets4(g, a[0], a[1], a[2], a[1], a[2])
    last = b.shape[1] - 1
    lead = b[0, :last]
    c, c2, w = table[0, g], table[1, g], table[2, g]
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    for r in range(k * block_rows, min(ints[2], (k + 1) * block_rows)):
        q1, q2, _, _ = offsets4(r, lead, b[1], b[2], b[1], b[2])
        e0, e1, e2, e3 = _row_moments(x1, x2, o1 + q1, o2 + q2, b[1, last], b[2, last],
                                      b[0, last], mode, has_x2, c, c2, w)
        s0 += e0
        s1 += e1
        s2 += e2
        s3 += e3
    out[g, k, 0] = s0
    out[g, k, 1] = s1
    out[g, k, 2] = s2
    out[g, k, 3] = s3


# --- LP_NORMALIZATION -----------------------------------------------------------------------

@reduction
def _lp_sum(x, base, step, count, p):  # pragma: no cover
    """sum |x|^p along one line (p 1 or 2)."""
    b, i, n = np.uint64(base), np.uint64(step), np.uint64(count)
    s = 0.0
    if p == 1:
        for k in range(n):
            s += abs(load64(x, b + k * i))
    elif i == 1:
        for k in range(n):
            v = load64(x, b + k)
            s += v * v
    else:
        for k in range(n):
            v = load64(x, b + k * i)
            s += v * v
    return s


@inline
def _lp_task(t, x, y, a, ints, reals):  # pragma: no cover
    """ints: n, ax, ay (the axis), p, block (0: row mode), pieces; a: the lines' sizes and
    strides in x and y; reals: epsilon. Column mode: ``block`` neighbouring lines along the
    last line dimension, summed side by side."""
    n, p, block = ints[0], ints[3], ints[4]
    ax, ay = np.uint64(ints[1]), np.uint64(ints[2])
    eps = reals[0]
    if block == 0:
        ox, oy, _, _ = offsets4(t, a[0], a[1], a[2], a[1], a[2])
        s = _lp_sum(x, ox, ints[1], n, p) + eps
        norm = math.sqrt(s) if p == 2 else s
        bx, by = np.uint64(ox), np.uint64(oy)
        for k in range(np.uint64(n)):
            store(y, by + k * ay, load64(x, bx + k * ax) / norm)
        return
    last = a.shape[1] - 1
    pieces = ints[5]
    r = t // pieces
    j0 = (t - r * pieces) * block
    m = np.uint64(min(block, a[0, last] - j0))
    cx, cy = np.uint64(a[1, last]), np.uint64(a[2, last])
    ox, oy, _, _ = offsets4(r, a[0, :last], a[1], a[2], a[1], a[2])
    bx = np.uint64(ox + j0 * a[1, last])
    by = np.uint64(oy + j0 * a[2, last])
    acc = np.zeros(m, np.float64)
    for k in range(np.uint64(n)):
        base = bx + k * ax
        if p == 1:
            for j in range(m):
                acc[j] += abs(load64(x, base + j * cx))
        else:
            for j in range(m):
                v = load64(x, base + j * cx)
                acc[j] += v * v
    for j in range(m):
        s = acc[j] + eps
        acc[j] = math.sqrt(s) if p == 2 else s
    for k in range(np.uint64(n)):
        rx = bx + k * ax
        ry = by + k * ay
        for j in range(m):
            store(y, ry + j * cy, load64(x, rx + j * cx) / acc[j])


# --- LOCAL_RESPONSE_NORMALIZATION(_GRAD) ----------------------------------------------------

@helper
def _window_rows(q, lo, hi):  # pragma: no cover
    """out[a, :] = the sum of q[k, :] for k in [a - lo, a + hi] (clipped), in order of k."""
    count, m = q.shape
    out = np.zeros((count, m), np.float64)
    for a in range(count):
        for k in range(max(a - lo, 0), min(a + hi + 1, count)):
            for j in range(m):
                out[a, j] += q[k, j]
    return out


@helper
def _window_columns(q, lo, hi):  # pragma: no cover
    """out[:, j] = the sum of q[:, k] for k in [j - lo, j + hi] (clipped), in order of k."""
    count, m = q.shape
    out = np.zeros((count, m), np.float64)
    for a in range(count):
        for j in range(m):
            s = 0.0
            for k in range(max(j - lo, 0), min(j + hi + 1, m)):
                s += q[a, k]
            out[a, j] = s
    return out


@inline
def _lrn_task(t, x, dy, y, ints, reals):  # pragma: no cover
    """ints: the two outer sizes, their strides in x, dy, y (pairs), then rows (count, steps in
    x, dy, y), columns (count, steps), block, lo, hi, spatial, grad, pieces; reals: Alpha /
    LocalSize, Beta, Bias, 2 * Alpha * Beta / LocalSize. The plane: ``na`` rows x ``m``
    columns; the window spans rows [i - lo, i + hi] and, ``spatial``, columns alike."""
    outer1 = ints[1]
    na = ints[8]
    ax, ad, ay = np.uint64(ints[9]), np.uint64(ints[10]), np.uint64(ints[11])
    cx, cd, cy = np.uint64(ints[13]), np.uint64(ints[14]), np.uint64(ints[15])
    block, lo, hi = ints[16], ints[17], ints[18]
    spatial = ints[19] != 0
    grad = ints[20] != 0
    pieces = ints[21]
    an, beta, bias, coef = reals[0], reals[1], reals[2], reals[3]
    plane = t // pieces
    j0 = (t - plane * pieces) * block
    i0 = plane // outer1
    i1 = plane - i0 * outer1
    bx = np.uint64(i0 * ints[2] + i1 * ints[3] + j0 * ints[13])
    bd = np.uint64(i0 * ints[4] + i1 * ints[5] + j0 * ints[14])
    by = np.uint64(i0 * ints[6] + i1 * ints[7] + j0 * ints[15])
    m = min(block, ints[12] - j0)
    q = np.empty((na, m), np.float64)
    for i in range(na):
        rx = bx + np.uint64(i) * ax
        for j in range(m):
            v = load64(x, rx + np.uint64(j) * cx)
            q[i, j] = v * v
    if spatial:
        q = _window_columns(q, lo, hi)
    s = _window_rows(q, lo, hi)
    for i in range(na):
        for j in range(m):
            s[i, j] = bias + an * s[i, j]
    if not grad:
        for i in range(na):
            rx = bx + np.uint64(i) * ax
            ry = by + np.uint64(i) * ay
            for j in range(m):
                store(y, ry + np.uint64(j) * cy,
                      load64(x, rx + np.uint64(j) * cx) / math.pow(s[i, j], beta))
        return
    # The gradient: dy * x * S^(-beta - 1) summed over the regions that hold each element
    # (the transposed window: lo and hi swapped).
    u = np.empty((na, m), np.float64)
    for i in range(na):
        rx = bx + np.uint64(i) * ax
        rd = bd + np.uint64(i) * ad
        for j in range(m):
            u[i, j] = load64(dy, rd + np.uint64(j) * cd) * load64(x, rx + np.uint64(j) * cx) \
                * math.pow(s[i, j], -beta - 1.0)
    if spatial:
        u = _window_columns(u, hi, lo)
    u = _window_rows(u, hi, lo)
    for i in range(na):
        rx = bx + np.uint64(i) * ax
        rd = bd + np.uint64(i) * ad
        ry = by + np.uint64(i) * ay
        for j in range(m):
            g = load64(dy, rd + np.uint64(j) * cd)
            v = load64(x, rx + np.uint64(j) * cx)
            store(y, ry + np.uint64(j) * cy,
                  g * math.pow(s[i, j], -beta) - coef * v * u[i, j])
