"""The window engine of the pooling rows (``compute/pooling.py``): ``pool`` walks every output
element's window over the strided input and reduces it to a maximum (with the flattened index of
the chosen element), an average, an LP norm or a plain sum.

The geometry arrives collapsed by the plan into one int64 array ``g`` (``GEOMETRY`` names its
slots): batch and channel counts, per spatial dimension (depth, height, width; a 2-D pooling has
depth 1) the input size, output size, window size, stride, dilation and start padding, then the
input's and the output's element strides, IncludePadding, whether indices are wanted, and the
rows per task. An input coordinate along a dimension is ``o * Stride - StartPadding +
k * Dilation``; taps outside [0, size) are padding and hold no element.

A task is a block of output rows (batch, channel, depth, height; about 2,048 outputs, so that
its buffers are allocated once: a task per row spent more on allocating than on a 3x3 window).
Per row the valid window rows along depth and height are found once; per window column ``kw``
the range of output columns whose tap lies inside the input is known from the geometry, so the
inner loop runs along the output row with no bounds test and unsigned offsets (a signed index
made LLVM keep NumPy's negative-index wraparound and stay scalar, as the normalization kernels
found). Buffers are indexed, never sliced or swapped: each array view costs an atomic reference
count, which took a third of a 3x3 window's time.

Two task kernels (``kernels/tasks.py``, on the worker pool; no parallel kernel of their own)
over float32 inputs, each compiled on first use and kept in Numba's disk cache:

- ``MAX`` (FLOAT32 as it lies; FLOAT16 widened exactly by the plan into a dense float32 copy;
  the integer types' maximum is NumPy's, in the plan), writing float32. Each output starts from
  its window's first valid element (in window order: depth, height, width) and takes a later
  element ``v`` when ``v > best``, or when ``best`` is NaN and ``v`` is not: NaN is skipped
  unless the window holds nothing else, ties keep the first (the lowest input index), -0 and
  +0 tie. A window with no valid element gives -inf and index -1. With indices, or strided
  along the width, a row goes tap by tap in that order (``_row_max``): the running maxima live
  in two rows, one read and one written per window tap (updated in place, LLVM made the select
  a masked store, vmaskmovps, 3x slower on the AMD EPYC dev box than plain stores). Without
  indices (ResNet's 3x3/2 stem pooling), separably (``_row_fast``): the plain maximum (one
  vmaxps) of the window's input rows, column by column over whole input rows, then along that
  row of column maxima per window column. That is the window-order maximum wherever no NaN and
  no zero is involved (the plain maximum keeps a NaN that comes first, and ties -0 and +0 in
  another order), so a row whose column maxima hold a NaN is done tap by tap, and an output
  that came out ±0 again in window order (``_exact_one``). It took the 3x3/2 on
  [8, 64, 112, 112] from 10 to about 4.5 ms on one thread of the dev box.
- ``SUM`` (FLOAT32 as it lies; FLOAT16 and the quantized 8-bit inputs widened exactly): float64
  sums in window order (strides 1 and 2 specialised so they vectorise; the common windows, as
  MAX's, one pass per window row), then the average (divided by the window size, passed as
  ``p``, or by the number of valid taps without IncludePadding: 0/0 = NaN for a window of
  padding only), the P-th root of the sum of |x|^P (P 1 and 2 exactly, others through
  ``pow``), or the plain sum, into a dense float64 scratch that the plan rounds once to the
  output's type.

Why this shape (2-core dev box, cold cache): one task kernel per storage type holding every
computation (float32, uint16 bits for FLOAT16, int64) cost 12-29 s each under load; the MAX and
SUM kernels apart, float32 only (FLOAT16 widened, integers in NumPy): about 10-12 s (MAX) and
3-6 s (SUM) of CPU time.
"""

from __future__ import annotations

import math

import numpy as np
from numba import carray

from ..kernels.floats import bits_double
from ..kernels.jit import inline
from ..kernels.tasks import HEAD, address, block, byte_array, run, store_arrays

# The task kernels' argument block (kernels/tasks.py), after HEAD: the indices and the geometry
# (``store_arrays``: an address and a byte length each), the lengths of x and y, the kind and
# P (float64 bits). Its own layout, so that the compiled kernels depend on no module outside
# ``kernels/`` (whose sources key the disk cache, ``jit.cache_root``).
IND, GEO = HEAD, HEAD + 2
XN, YN, KIND, P = range(HEAD + 4, HEAD + 8)
FIELDS = 8

AVERAGE, LP, MAXIMUM, SUM = 0, 1, 2, 3
# Slots of the geometry array ``g``.
N, C = 0, 1
DIM = 2          # per spatial dimension d (0 depth, 1 height, 2 width): DIM + 6 * d + field
SIZE, OUT, WINDOW, STRIDE, DILATION, PAD = range(6)  # WINDOW, PAD: of the live taps (the plan)
XSTRIDES = 20    # input strides n, c, d, h, w
YSTRIDES = 25    # output strides n, c, d, h, w
INCLUDE_PADDING = 30
WANT_INDEX = 31
BLOCK = 32       # output rows per task
GEOMETRY = 33


@inline
def _valid(o, stride, pad, window, dilation, size):  # pragma: no cover
    """The window taps [lo, hi) of output coordinate ``o`` that fall inside [0, size) (no
    division when undilated: a row's divisions cost as much as a 3x3 window's work on it)."""
    start = o * stride - pad
    last = size - 1 - start
    if dilation == 1:
        lo = max(0, -start)
        hi = min(window, last + 1)
    else:
        lo = 0 if start >= 0 else (-start + dilation - 1) // dilation
        hi = 0 if last < 0 else min(window, last // dilation + 1)
    return lo, max(lo, hi)


ONE = np.uint64(1)
TWO = np.uint64(2)
FAST_WIDTH = 1 << 16  # input elements a row of ``_row_fast``'s column maxima may hold


@inline
def _lp_term(v, p):  # pragma: no cover
    """|v|^P (P = 1 and 2 exactly, others through pow)."""
    a = abs(v)
    if p == 1.0:
        return a
    if p == 2.0:
        return a * a
    return math.pow(a, p)


@inline
def _larger(v, cur):  # pragma: no cover
    """The running maximum after element ``v``: ``v`` when larger, or when ``cur`` is NaN and
    ``v`` is not (a select, no branch)."""
    return v if (v > cur) | ((cur != cur) & (v == v)) else cur


@inline
def _start(g, r, q):  # pragma: no cover
    """q = the coordinates (batch, channel, depth, height) of output row ``r``."""
    q[3] = r % g[DIM + 6 + 1]
    t = r // g[DIM + 6 + 1]
    q[2] = t % g[DIM + 1]
    t = t // g[DIM + 1]
    q[1] = t % g[C]
    q[0] = t // g[C]


@inline
def _advance(g, q):  # pragma: no cover
    """q = the coordinates of the next output row (no division: a row's divisions cost more
    than a 3x3 window's work on it)."""
    q[3] += 1
    if q[3] == g[DIM + 6 + 1]:
        q[3] = 0
        q[2] += 1
        if q[2] == g[DIM + 1]:
            q[2] = 0
            q[1] += 1
            if q[1] == g[C]:
                q[1] = 0
                q[0] += 1


@inline
def _place(g, q):  # pragma: no cover
    """Where the output row at coordinates ``q`` starts: the input offset of its (batch,
    channel) plane, the output offset of the row, the valid window rows [kd0, kd1) and
    [kh0, kh1), the first input depth and height of its window, its flat plane number."""
    d_in, d_k, d_s, d_l, d_p = g[2], g[4], g[5], g[6], g[7]
    h_in, h_k, h_s, h_l, h_p = g[8], g[10], g[11], g[12], g[13]
    n, c, od, oh = q[0], q[1], q[2], q[3]
    xb = n * g[XSTRIDES] + c * g[XSTRIDES + 1]
    yb = np.uint64(n * g[YSTRIDES] + c * g[YSTRIDES + 1] + od * g[YSTRIDES + 2]
                   + oh * g[YSTRIDES + 3])
    kd0, kd1 = _valid(od, d_s, d_p, d_k, d_l, d_in)
    kh0, kh1 = _valid(oh, h_s, h_p, h_k, h_l, h_in)
    return xb, yb, kd0, kd1, kh0, kh1, od * d_s - d_p, oh * h_s - h_p, n * g[C] + c


@inline
def _row_max(x, y, ind, g, r, q, jlo, jhi, buf, ibuf):  # pragma: no cover
    """MAX over output row ``r`` in window order, with indices when wanted; jlo, jhi: the column
    ranges (``_columns``); buf, ibuf: the task's two rows of running maxima and of their
    indices. Each window tap reads one row and writes the other: updated in place, LLVM made
    the select a masked store (vmaskmovps), 3x slower on AMD EPYC than plain stores. Plain
    indices into the task's buffers, no views: a
    view of an array (or swapping two) costs an atomic reference count, which took a third of
    the time of a 3x3 window."""
    d_in, d_l = g[2], g[6]
    h_in, h_l = g[8], g[12]
    w_in, w_out, w_k, w_s, w_l, w_p = g[14], g[15], g[16], g[17], g[18], g[19]
    xb, yb, kd0, kd1, kh0, kh1, d0, h0, plane = _place(g, q)
    ysw = np.uint64(g[YSTRIDES + 4])
    sxw = g[XSTRIDES + 4]
    step = np.uint64(w_s * sxw)
    ow = np.uint64(w_out)
    want = g[WANT_INDEX] != 0
    low = np.float32(-np.inf)  # the maximum of a window with no element
    src = 0
    for j in range(w_out):
        buf[0, j] = low
    if want:
        for j in range(w_out):
            ibuf[0, j] = -1
    if kd1 > kd0 and kh1 > kh0:
        # Start from each window's first valid element: the first valid (depth, height) row,
        # its smallest valid kw (written last).
        rx = xb + (d0 + kd0 * d_l) * g[XSTRIDES + 2] + (h0 + kh0 * h_l) * g[XSTRIDES + 3]
        ri = (plane * d_in + d0 + kd0 * d_l) * h_in + h0 + kh0 * h_l
        for kw in range(w_k - 1, -1, -1):
            lo = np.uint64(jlo[kw])
            m = np.uint64(jhi[kw]) - lo
            col = jlo[kw] * w_s - w_p + kw * w_l
            off = np.uint64(rx + col * sxw)
            for j in range(m):
                buf[0, lo + j] = x[off + j * step]
            if want:
                i0 = ri * w_in + col
                for j in range(m):
                    ibuf[0, lo + j] = i0 + np.int64(j) * w_s
        for kd in range(kd0, kd1):
            for kh in range(kh0, kh1):
                rx = xb + (d0 + kd * d_l) * g[XSTRIDES + 2] \
                    + (h0 + kh * h_l) * g[XSTRIDES + 3]
                ri = (plane * d_in + d0 + kd * d_l) * h_in + h0 + kh * h_l
                for kw in range(w_k):
                    dst = 1 - src
                    hi = jhi[kw]
                    lo = np.uint64(jlo[kw])
                    m = np.uint64(hi) - lo
                    col = jlo[kw] * w_s - w_p + kw * w_l
                    off = np.uint64(rx + col * sxw)
                    for j in range(jlo[kw]):  # the columns this tap misses keep their values
                        buf[dst, j] = buf[src, j]
                    for j in range(hi, w_out):
                        buf[dst, j] = buf[src, j]
                    if want:
                        for j in range(jlo[kw]):
                            ibuf[dst, j] = ibuf[src, j]
                        for j in range(hi, w_out):
                            ibuf[dst, j] = ibuf[src, j]
                        i0 = ri * w_in + col
                        for j in range(m):
                            v = x[off + j * step]
                            bj = buf[src, lo + j]
                            take = (v > bj) | ((bj != bj) & (v == v))
                            buf[dst, lo + j] = v if take else bj
                            ibuf[dst, lo + j] = i0 + np.int64(j) * w_s if take \
                                else ibuf[src, lo + j]
                    else:
                        for j in range(m):
                            buf[dst, lo + j] = _larger(x[off + j * step], buf[src, lo + j])
                    src = dst
    if ysw == 1:
        for j in range(ow):
            y[yb + j] = buf[src, j]
    else:
        for j in range(ow):
            y[yb + j * ysw] = buf[src, j]
    if want:
        ib0 = r * w_out
        for j in range(w_out):
            ind[ib0 + j] = ibuf[src, j]


@inline
def _plain(v, cur):  # pragma: no cover
    """``v`` when larger, else ``cur``: one vmaxps (a NaN ``cur`` stays, a NaN ``v`` is
    skipped)."""
    return v if v > cur else cur


@inline
def _vfirst(x, m, r0, r1, r2, rows, n):  # pragma: no cover
    """m[0, :n] = the plain maximum, column by column, of ``rows`` (1 to 3) contiguous input
    rows at offsets r0, r1, r2."""
    if rows == 3:
        for k in range(n):
            m[0, k] = _plain(x[r2 + k], _plain(x[r1 + k], x[r0 + k]))
    elif rows == 2:
        for k in range(n):
            m[0, k] = _plain(x[r1 + k], x[r0 + k])
    else:
        for k in range(n):
            m[0, k] = x[r0 + k]


@inline
def _vmore(x, m, dst, r0, r1, rows, n):  # pragma: no cover
    """m[dst, :n] = the plain maximum of m[1 - dst] and ``rows`` (1 or 2) more contiguous input
    rows at offsets r0, r1. A new row is written, never one updated in place (a masked store,
    see ``_row_max``)."""
    src = ONE - dst
    if rows == 2:
        for k in range(n):
            m[dst, k] = _plain(x[r1 + k], _plain(x[r0 + k], m[src, k]))
    else:
        for k in range(n):
            m[dst, k] = _plain(x[r0 + k], m[src, k])


@inline
def _hpass(m, hb, y, yb, jlo, jhi, j0, j1, w_k, w_s, w_p, w_l, w_out, low):  # pragma: no cover
    """y[yb + j] = the plain maximum of m[0] over output column j's window taps: the columns
    [j0, j1), whose every tap is inside, in vectorised passes (constant offsets for the common
    undilated windows, else one pass per tap through the rows of ``hb``), the others tap by
    tap (-inf where none is)."""
    n = np.uint64(j1 - j0)
    y0 = yb + np.uint64(j0)
    base = np.uint64(j0 * w_s - w_p)
    if w_l == 1 and w_k == 3 and w_s == 2:
        for j in range(n):
            o = base + j * TWO
            y[y0 + j] = _plain(m[0, o + TWO], _plain(m[0, o + ONE], m[0, o]))
    elif w_l == 1 and w_k == 3 and w_s == 1:
        for j in range(n):
            o = base + j
            y[y0 + j] = _plain(m[0, o + TWO], _plain(m[0, o + ONE], m[0, o]))
    elif w_l == 1 and w_k == 2 and w_s == 2:
        for j in range(n):
            o = base + j * TWO
            y[y0 + j] = _plain(m[0, o + ONE], m[0, o])
    else:
        step = np.uint64(w_s)
        for j in range(n):
            hb[0, j] = m[0, base + j * step]
        h = np.uint64(0)
        for kw in range(1, w_k):
            o = base + np.uint64(kw * w_l)
            for j in range(n):
                hb[ONE - h, j] = _plain(m[0, o + j * step], hb[h, j])
            h = ONE - h
        for j in range(n):
            y[y0 + j] = hb[h, j]
    for e in range(j0 + w_out - j1):  # the border columns: [0, j0) and [j1, w_out)
        j = e if e < j0 else j1 + e - j0
        cur = low
        start = True
        for kw in range(w_k):
            if jlo[kw] <= j < jhi[kw]:
                v = m[0, np.uint64(j * w_s - w_p + kw * w_l)]
                cur = v if start else _plain(v, cur)
                start = False
        y[yb + np.uint64(j)] = cur


@inline
def _exact_one(x, g, xb, kd0, kd1, kh0, kh1, d0, h0, jlo, jhi, j, low):  # pragma: no cover
    """The maximum of output column ``j``'s window in window order (``_larger``): the first
    valid element, then each later one."""
    d_l, h_l = g[6], g[12]
    w_k, w_s, w_l, w_p = g[16], g[17], g[18], g[19]
    cur = low
    start = True
    for kd in range(kd0, kd1):
        for kh in range(kh0, kh1):
            rx = xb + (d0 + kd * d_l) * g[XSTRIDES + 2] + (h0 + kh * h_l) * g[XSTRIDES + 3]
            for kw in range(w_k):
                if jlo[kw] <= j < jhi[kw]:
                    v = x[np.uint64(rx + (j * w_s - w_p + kw * w_l) * g[XSTRIDES + 4])]
                    cur = v if start else _larger(v, cur)
                    start = False
    return cur


@inline
def _row_fast(x, y, g, q, jlo, jhi, j0, j1, m, hb):  # pragma: no cover
    """MAX without indices over the output row at ``q`` (unit input and output strides along
    the width), separably: the plain maximum (``_plain``) of the window's valid input rows,
    column by column over the whole input row, into a row of ``m``; then along that row, window
    column by window column. The plain maximum is the window-order one (``_row_max``) except
    where a NaN or a zero is involved: a NaN stays when it comes first, and ±0 tie in another
    order. So an output that came out ±0 is done again by ``_exact_one``, and a row whose
    column maxima hold a NaN is left to ``_row_max``: False is returned, and the row is
    unwritten."""
    d_l, h_l = g[6], g[12]
    w_in, w_out, w_k, w_s, w_l, w_p = g[14], g[15], g[16], g[17], g[18], g[19]
    xb, yb, kd0, kd1, kh0, kh1, d0, h0, _ = _place(g, q)
    low = np.float32(-np.inf)
    if kd1 <= kd0 or kh1 <= kh0:
        for j in range(np.uint64(w_out)):
            y[yb + j] = low
        return True
    n = np.uint64(w_in)
    # The rows of m by unsigned numbers (a signed one kept its wraparound test, and LLVM could
    # not bound the loops' accesses: they stayed scalar); the first pass, which is all the
    # common windows (3 rows or fewer) take, into the constant row 0.
    hs = np.uint64(h_l * g[XSTRIDES + 3])
    cnt = kh1 - kh0
    s = np.uint64(0)
    for kd in range(kd0, kd1):
        rb = np.uint64(xb + (d0 + kd * d_l) * g[XSTRIDES + 2] + (h0 + kh0 * h_l) * g[XSTRIDES + 3])
        i = 0
        while i < cnt:
            r = rb + np.uint64(i) * hs
            if kd == kd0 and i == 0:
                take = min(cnt, 3)
                _vfirst(x, m, r, r + hs, r + hs + hs, take, n)
            else:
                take = min(cnt - i, 2)
                s = ONE - s
                _vmore(x, m, s, r, r + hs, take, n)
            i += take
    if s != 0:  # (windows of more than 3 rows) back into row 0: a constant row vectorises
        for k in range(n):
            m[0, k] = m[1, k]
    nans = 0  # integer counts: a float sum would be one serial chain of adds
    zeros = 0
    for k in range(n):
        v = m[0, k]
        nans += np.int64(v != v)
        zeros += np.int64(v == 0.0)
    if nans != 0:
        return False
    _hpass(m, hb, y, yb, jlo, jhi, j0, j1, w_k, w_s, w_p, w_l, w_out, low)
    if zeros != 0:
        for j in range(w_out):
            if y[yb + np.uint64(j)] == 0.0:
                y[yb + np.uint64(j)] = _exact_one(x, g, xb, kd0, kd1, kh0, kh1, d0, h0, jlo,
                                                  jhi, j, low)
    return True


@inline
def _row_sum(x, y, g, kind, p, r, q, jlo, jhi, j0, j1, acc):  # pragma: no cover
    """AVERAGE, LP or SUM over output row ``r`` into ``y`` (element strides YSTRIDES): a dense
    float64 scratch, or a FLOAT32 output itself (each value rounded once as it is stored)."""
    d_l, h_l = g[6], g[12]
    w_out, w_k, w_s, w_l, w_p = g[15], g[16], g[17], g[18], g[19]
    xb, yb, kd0, kd1, kh0, kh1, d0, h0, _ = _place(g, q)
    ysw = np.uint64(g[YSTRIDES + 4])
    step = np.uint64(w_s * g[XSTRIDES + 4])
    ow = np.uint64(w_out)
    for j in range(ow):
        acc[j] = 0.0
    fused = (kind != LP and w_l == 1 and g[XSTRIDES + 4] == 1 and j1 > j0
             and ((w_k == 3 and w_s <= 2) or (w_k == 2 and w_s == 2)))
    for kd in range(kd0, kd1):
        for kh in range(kh0, kh1):
            rx = xb + (d0 + kd * d_l) * g[XSTRIDES + 2] + (h0 + kh * h_l) * g[XSTRIDES + 3]
            if fused:
                # The columns whose every tap is inside, all taps in one pass (added in window
                # order, as the loops below would), then the border columns tap by tap.
                n = np.uint64(j1 - j0)
                base = np.uint64(rx + j0 * w_s - w_p)
                c0 = np.uint64(j0)
                if w_k == 3 and w_s == 2:
                    for j in range(n):
                        o = base + j * TWO
                        acc[c0 + j] = ((acc[c0 + j] + np.float64(x[o])) + np.float64(
                            x[o + ONE])) + np.float64(x[o + TWO])
                elif w_k == 3:
                    for j in range(n):
                        o = base + j
                        acc[c0 + j] = ((acc[c0 + j] + np.float64(x[o])) + np.float64(
                            x[o + ONE])) + np.float64(x[o + TWO])
                else:
                    for j in range(n):
                        o = base + j * TWO
                        acc[c0 + j] = (acc[c0 + j] + np.float64(x[o])) + np.float64(x[o + ONE])
                for e in range(j0 + w_out - j1):
                    j = e if e < j0 else j1 + e - j0
                    for kw in range(w_k):
                        if jlo[kw] <= j < jhi[kw]:
                            acc[j] += np.float64(x[np.uint64(rx + j * w_s - w_p + kw)])
                continue
            for kw in range(w_k):
                lo = np.uint64(jlo[kw])
                m = np.uint64(jhi[kw]) - lo
                off = np.uint64(rx + (jlo[kw] * w_s - w_p + kw * w_l) * g[XSTRIDES + 4])
                if kind == LP:
                    for j in range(m):
                        acc[lo + j] += _lp_term(np.float64(x[off + j * step]), p)
                elif step == 1:
                    for j in range(m):
                        acc[lo + j] += np.float64(x[off + j])
                elif step == 2:
                    for j in range(m):
                        acc[lo + j] += np.float64(x[off + j * TWO])
                else:
                    for j in range(m):
                        acc[lo + j] += np.float64(x[off + j * step])
    if kind == SUM:
        for j in range(ow):
            y[yb + j * ysw] = acc[j]
    elif kind == LP:
        for j in range(ow):
            s = acc[j]
            if p == 2.0:
                s = math.sqrt(s)
            elif p != 1.0:
                s = math.pow(s, 1.0 / p)
            y[yb + j * ysw] = s
    elif g[INCLUDE_PADDING] != 0:
        div = p  # the window size (the plan's: the geometry holds the live taps only)
        if ysw == 1:
            for j in range(ow):
                y[yb + j] = acc[j] / div
        else:
            for j in range(ow):
                y[yb + j * ysw] = acc[j] / div
    else:
        rows = np.float64((kd1 - kd0) * (kh1 - kh0))
        for j in range(w_out):
            cnt = 0
            for kw in range(w_k):
                if jlo[kw] <= j < jhi[kw]:
                    cnt += 1
            y[yb + np.uint64(j) * ysw] = acc[j] / (rows * cnt)


@inline
def _columns(g):  # pragma: no cover
    """For each window column kw, the output columns [jlo, jhi) whose tap lies in the input;
    [j0, j1) the columns where all do."""
    w_in, w_out, w_k, w_s, w_l, w_p = g[14], g[15], g[16], g[17], g[18], g[19]
    jlo = np.empty(w_k, np.int64)
    jhi = np.empty(w_k, np.int64)
    for kw in range(w_k):
        a = kw * w_l - w_p  # the input column of output column 0
        lo = 0 if a >= 0 else (-a + w_s - 1) // w_s
        hi = 0 if w_in - 1 - a < 0 else min(w_out, (w_in - 1 - a) // w_s + 1)
        jlo[kw] = lo
        jhi[kw] = max(lo, hi)
    j0 = 0
    j1 = w_out
    for kw in range(w_k):  # the columns whose every tap is inside: [j0, j1)
        j0 = max(j0, jlo[kw])
        j1 = min(j1, jhi[kw])
    return jlo, jhi, j0, j1


# A task is ``g[BLOCK]`` output rows with one set of buffers: a task per row spent more on
# allocating them than on a 3x3 window's work.

def _max_entry(xp, yp, pp, t):  # pragma: no cover
    """The MAX task kernel (``kernels/tasks.py``): task ``t``."""
    f = carray(pp, HEAD + FIELDS)
    x, y = carray(xp, f[XN]), carray(yp, f[YN])
    ind = byte_array(pp, IND).view(np.int64)
    g = byte_array(pp, GEO).view(np.int64)
    w_in, w_out = g[DIM + 12], g[DIM + 12 + 1]
    want = g[WANT_INDEX] != 0
    # Without indices, unit strides along the width: the separable ``_row_fast``; its buffers
    # hold input rows, so a row wider than FAST_WIDTH keeps the tap-by-tap path's (output rows).
    fast = (not want and g[XSTRIDES + 4] == 1 and g[YSTRIDES + 4] == 1
            and w_in <= FAST_WIDTH)
    jlo, jhi, j0, j1 = _columns(g)
    j1 = max(j0, j1)
    buf = np.empty((2, w_out), np.float32)
    ibuf = np.empty((2, w_out if want else 1), np.int64)
    m = np.empty((2, w_in if fast else 1), np.float32)
    hb = np.empty((2, max(1, j1 - j0) if fast else 1), np.float32)
    rows = g[N] * g[C] * g[DIM + 1] * g[DIM + 6 + 1]
    q = np.empty(4, np.int64)
    _start(g, t * g[BLOCK], q)
    for r in range(t * g[BLOCK], min(rows, (t + 1) * g[BLOCK])):
        if not (fast and _row_fast(x, y, g, q, jlo, jhi, j0, j1, m, hb)):
            _row_max(x, y, ind, g, r, q, jlo, jhi, buf, ibuf)
        _advance(g, q)


def _sum_entry(xp, yp, pp, t):  # pragma: no cover
    """The SUM task kernel: kind AVERAGE, LP or SUM, and P."""
    f = carray(pp, HEAD + FIELDS)
    x, y = carray(xp, f[XN]), carray(yp, f[YN])
    g = byte_array(pp, GEO).view(np.int64)
    kind, p = f[KIND], bits_double(f[P])
    jlo, jhi, j0, j1 = _columns(g)
    acc = np.empty(g[DIM + 12 + 1], np.float64)
    rows = g[N] * g[C] * g[DIM + 1] * g[DIM + 6 + 1]
    q = np.empty(4, np.int64)
    _start(g, t * g[BLOCK], q)
    for r in range(t * g[BLOCK], min(rows, (t + 1) * g[BLOCK])):
        _row_sum(x, y, g, kind, p, r, q, jlo, jhi, j0, j1, acc)
        _advance(g, q)


def task_address(is_max: bool, y: str = "float64") -> int:
    """The address of the MAX or the SUM task kernel (SUM writing ``y``: "float64" into a
    dense scratch, "float32" into a FLOAT32 output), compiled (or loaded from the disk cache)
    on first use."""
    return address(_max_entry if is_max else _sum_entry, "float32",
                   "float32" if is_max else y)


def pool(x: np.ndarray, y: np.ndarray, ind: np.ndarray, g: np.ndarray, kind: int,
         p: float) -> None:
    """Every output row of the pooling described by ``g`` (``GEOMETRY`` slots); x: float32
    1-D (the bound input or a dense copy). MAXIMUM: y float32 (the bound output or a dense
    scratch); ind: int64 indices, dense in the output's row-major order (written when
    ``g[WANT_INDEX]``). AVERAGE (``p``: the window size), LP (P = ``p``), SUM: y float64
    (dense), or for AVERAGE and LP the FLOAT32 output itself."""
    rows = int(g[N] * g[C] * g[DIM + 1] * g[DIM + 6 + 1])
    blk = block([0] * FIELDS)
    store_arrays(blk, HEAD, ind, g)
    blk[[XN, YN, KIND, P]] = x.size, y.size, kind, np.float64(p).view(np.int64)
    run(task_address(kind == MAXIMUM, str(y.dtype)), blk, -(-rows // int(g[BLOCK])), x, y,
        work=max(x.size, y.size))
