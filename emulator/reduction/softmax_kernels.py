"""SOFTMAX, LOG_SOFTMAX and HARDMAX over the reduction layout (``layout.Layout``: groups x
elements), for the version-0 operators (the last axis) and the version-1 ones (an axis set).

Mode 0 SOFTMAX, 1 LOG_SOFTMAX, 2 HARDMAX, with the group maximum m subtracted:

    SOFTMAX     y = e / s,                 e = exp(x - m), s = the sum of e over the group
    LOG_SOFTMAX y = (x - m) - log1p(t),    t = s - 1, summed without the ones (below)
    HARDMAX     y = 1 at the first largest element (logical row-major order of the reduced axes;
                NaN ranks highest), else 0

A group whose maximum is NaN or +inf, or which holds only -inf, is NaN (the formula's NaN,
inf/inf and 0/0); a -inf beside finite values gives exp = 0 (LOG_SOFTMAX -inf). exp is
``vmath.exp64`` (relative error below 2**-44; it vectorises). exp(0) is exactly 1, so LOG_SOFTMAX
sums the terms that are not 1, adds the count of ones less one and takes log1p: a group dominated
by one element keeps the small log of its sum to full precision (1 + t rounded would lose it).

Two modes, chosen by the plan from the layout (never from the thread count):

Precision (docs/decisions.md, "Softmax family accuracy"): SOFTMAX in group mode computes in
float32 (``_group32``: the maximum through int32 keys, ``vmath.exp_difference`` with x - m kept
exact, the sum in float64, each exp times 1/sum rounded once: within 2 ULP); everything else in
float64 (within 1 ULP).

- group mode: a task owns a range of groups and takes them one at a time, in three passes
  (maximum, sums, outputs) over blocks of at most ``BLOCK`` elements, each gathered into a
  buffer (``_gather``; float32 for SOFTMAX, float64 otherwise) from the rows of the innermost
  collapsed reduced dimension (the other reduced dimensions through ``offsets4``). A group of
  one block is loaded once and SOFTMAX keeps its exps; a longer one is read again in each pass,
  exp computed twice. A block's sums are
  reassociated (``jit.reduction``) so they vectorise; block sums are added in order.
- column mode: when the reduced dimension is strided and the innermost kept dimension is
  closer to contiguous (axis 1 of [64, 512, 512]), a task owns a tile of neighbouring groups
  along it: per reduced element, one load of the tile's lanes into a scratch of at most
  ``TILE_SCRATCH`` values, each lane's maximum and sums kept in reduced order, so the tile width
  (chosen per dispatch) changes no result. Measured on the 2-core dev box, FLOAT32
  [64, 512, 512], 2 threads: the last axis in 50 ms, axis 1 in 49 ms (a group at a time along
  the strided axis: 85 ms; tiles reading the input again in each pass: 150 ms).

Every group is owned by one task, so the bytes do not depend on the thread count. Compile time:
only the loads and stores depend on the storage type; the math is in float64 helpers on float64
buffers, compiled once for FLOAT32 and FLOAT16 alike (one parallel kernel with everything inlined
took 34 s to compile per storage type; this layout 11 s for the first, 6.5 s for the second).
"""

from __future__ import annotations

import math

import numpy as np
from numba import carray

from ..kernels.floats import bits_float, load64, store, wide_vectors
from ..kernels.index import offsets4
from ..kernels.jit import helper, inline, reduction
from ..kernels.tasks import HEAD, address, block, run
from ..kernels.vmath import exp64, exp_difference

BLOCK = 2048  # elements of a group held at once (float64: 16 KiB, stays in L1/L2)
TILE_SCRATCH = 16384  # column mode: lanes x reduced elements held at once (float64: 128 KiB)


# -- float64 helpers (one compiled signature each) ----------------------------------------------


@helper
def scan(src, n, k0, m, nan, best, mode):  # pragma: no cover
    """Fold src[:n] (elements k0.. of a group) into the running maximum ``m``: HARDMAX tracks
    the first largest (``best``, NaN ranking highest); the others the largest ignoring NaN,
    with ``nan`` recording one. Four compare-select chains so their latencies overlap. The
    first block (k0 = 0) starts from its first element."""
    if k0 == 0:
        m = src[0]
    if mode == 2:
        for j in range(n):
            v = src[j]
            if (v != v and m == m) or v > m:
                m = v
                best = k0 + j
        return m, nan, best
    m0 = m
    m1 = m
    m2 = m
    m3 = m
    j = 0
    while j + 4 <= n:
        a = src[j]
        b = src[j + 1]
        c = src[j + 2]
        d = src[j + 3]
        m0 = a if a > m0 else m0
        m1 = b if b > m1 else m1
        m2 = c if c > m2 else m2
        m3 = d if d > m3 else m3
        j += 4
    while j < n:
        a = src[j]
        m0 = a if a > m0 else m0
        j += 1
    m0 = m1 if m1 > m0 else m0
    m2 = m3 if m3 > m2 else m2
    m0 = m2 if m2 > m0 else m0
    nans = 0
    for k in range(n):
        nans += src[k] != src[k]
    return m0, nan or nans > 0, best


@reduction
def _sums(e, n):  # pragma: no cover
    """(the sum of e[:n], the sum of its terms that are not exactly 1, how many are 1), as
    selects so the loop vectorises (a branch on the 1s kept it scalar: 10x slower)."""
    s = 0.0
    t = 0.0
    ones = 0.0
    for j in range(n):
        v = e[j]
        one = 1.0 if v == 1.0 else 0.0
        s += v
        t += v - one
        ones += one
    return s, t, ones


@helper
def exp_sums(e, src, n, m):  # pragma: no cover
    """e[:n] = exp(src[:n] - m); returns ``_sums`` of them."""
    for j in range(n):
        e[j] = exp64(src[j] - m)
    return _sums(e, n)


@helper
def outputs(buf, src, n, k0, m, scale, best, mode):  # pragma: no cover
    """buf[:n] = the outputs of src[:n] (elements k0.. of the group): LOG_SOFTMAX (x - m) -
    scale, HARDMAX 1 at ``best``. ``m`` NaN: the group is NaN."""
    if mode == 2:
        for j in range(n):
            buf[j] = 0.0
        if k0 <= best < k0 + n:
            buf[best - k0] = 1.0
    elif m != m:
        for j in range(n):
            buf[j] = math.nan
    else:
        for j in range(n):
            buf[j] = (src[j] - m) - scale


@inline
def _defined(m, nan, mode):  # pragma: no cover
    """The maximum to subtract: NaN where the group's result is undefined (a NaN, +inf, or
    only -inf), so every output of the group is NaN."""
    return math.nan if mode != 2 and (nan or not math.isfinite(m)) else m


@inline
def _scale(s, t, ones, mode):  # pragma: no cover
    """SOFTMAX divides by the sum; LOG_SOFTMAX subtracts log(sum) = log1p(t + ones - 1)."""
    return math.log1p(t + (ones - 1.0)) if mode == 1 else s


@helper
def lanes_scan(v, n, w, k0, m, nans, best, mode):  # pragma: no cover
    """Column mode: fold elements k0 .. k0 + n - 1 of ``w`` lanes (v[k * w + lane]) into the
    lanes' maxima (element 0 starts them)."""
    for kk in range(n):
        at = kk * w
        if k0 + kk == 0:
            for lane in range(w):
                m[lane] = v[lane]
        if mode == 2:
            for lane in range(w):
                a = v[at + lane]
                b = m[lane]
                first = (a != a and b == b) or a > b  # selects: the lane loop vectorises
                m[lane] = a if first else b
                best[lane] = k0 + kk if first else best[lane]
        else:
            for lane in range(w):
                a = v[at + lane]
                m[lane] = a if a > m[lane] else m[lane]
                nans[lane] += a != a


@helper
def lanes_sum(v, n, w, m, s, t, ones, keep):  # pragma: no cover
    """Column mode: add the exps of n elements of every lane to the lanes' sums (``keep``:
    v keeps the exps)."""
    for kk in range(n):
        at = kk * w
        for lane in range(w):
            e = exp64(v[at + lane] - m[lane])
            one = 1.0 if e == 1.0 else 0.0
            s[lane] += e
            t[lane] += e - one
            ones[lane] += one
            if keep:
                v[at + lane] = e


@helper
def lanes_out(v, n, w, k0, m, scale, best, mode):  # pragma: no cover
    """Column mode: v = the outputs of elements k0 .. k0 + n - 1 of every lane (mode 3:
    SOFTMAX with the exps in v)."""
    for kk in range(n):
        at = kk * w
        if mode == 2:
            for lane in range(w):
                a = 0.0
                if best[lane] == k0 + kk:
                    a = 1.0
                v[at + lane] = a
        elif mode == 1:
            for lane in range(w):
                v[at + lane] = (v[at + lane] - m[lane]) - scale[lane]
        elif mode == 3:
            for lane in range(w):
                v[at + lane] = v[at + lane] / scale[lane]
        else:
            for lane in range(w):
                v[at + lane] = exp64(v[at + lane] - m[lane]) / scale[lane]


# -- SOFTMAX in float32 (group mode) --------------------------------------------------------------


@helper
def scan32(src, n):  # pragma: no cover
    """(the largest of src[:n], whether one is NaN): the maximum of int32 keys ordered as the
    floats (the magnitude bits of a negative value flipped), a loop that vectorises where a
    float comparison's select does not; a NaN's key is meaningless (its group is NaN anyway)."""
    wide_vectors()
    u = src.view(np.int32)
    m = np.int32(-2 ** 31)
    nans = 0
    for j in range(n):
        a = u[j]
        m = np.int32(max(m, np.int32(a ^ np.int32(np.int32(a >> np.int32(31)) &
                                                  np.int32(0x7FFFFFFF)))))
        v = src[j]
        nans += v != v
    m = np.int32(m ^ np.int32(np.int32(m >> np.int32(31)) & np.int32(0x7FFFFFFF)))
    return bits_float(m), nans > 0


@reduction
def _sum64(e, n):  # pragma: no cover
    """The sum of the float32 e[:n] in float64 (its order free: ``jit.reduction``)."""
    wide_vectors()
    s = 0.0
    for j in range(n):
        s += np.float64(e[j])
    return s


@helper
def exps32(src, e, n, m):  # pragma: no cover
    """e[:n] = exp(src[:n] - m) (``vmath.exp_difference``: the difference kept exact); returns
    their sum in float64 (a separate loop: summed in the same one, the float64 lanes halved
    the float32 ones)."""
    for j in range(n):
        e[j] = exp_difference(src[j], m)
    return _sum64(e, n)


@helper
def scale32(e, n, inv):  # pragma: no cover
    """e[:n] = e[:n] · inv, the float64 product rounded once to float32."""
    wide_vectors()
    for j in range(n):
        e[j] = np.float32(np.float64(e[j]) * inv)


# -- the storage-type kernel: loads, stores and the walk -----------------------------------------


@inline
def _load_row(x, base, xs, n, buf, at):  # pragma: no cover
    """buf[at:at + n] = n elements from ``base`` at stride ``xs``. Unsigned indices (DirectML's
    strides are UINT): a signed index carries NumPy's negative-index select, which kept these
    loops from vectorising."""
    b = np.uint64(base)
    a = np.uint64(at)
    if xs == 1:
        for j in range(np.uint64(n)):
            buf[a + j] = load64(x, b + j)
    else:
        st = np.uint64(xs)
        for j in range(np.uint64(n)):
            buf[a + j] = load64(x, b + j * st)


@inline
def _store_row(y, base, ys, n, buf, at):  # pragma: no cover
    b = np.uint64(base)
    a = np.uint64(at)
    if ys == 1:
        for j in range(np.uint64(n)):
            store(y, b + j, buf[a + j])
    else:
        st = np.uint64(ys)
        for j in range(np.uint64(n)):
            store(y, b + j * st, buf[a + j])


@inline
def _gather(x, gx, lead, r_x, inner, k0, n, buf):  # pragma: no cover
    """buf[:n] = elements k0 .. k0 + n - 1 of the group at gx, from the rows of the innermost
    reduced dimension."""
    last = r_x.shape[0] - 1
    r = k0 // inner
    j = k0 - r * inner
    at = 0
    while at < n:
        take = min(inner - j, n - at)
        rx, _, _, _ = offsets4(r, lead, r_x, r_x, r_x, r_x)
        _load_row(x, gx + rx + j * r_x[last], r_x[last], take, buf, at)
        at += take
        r += 1
        j = 0


@inline
def _scatter(y, gy, lead, r_y, inner, k0, n, buf):  # pragma: no cover
    """The inverse of ``_gather``: buf[:n] into the group's elements k0 .. k0 + n - 1."""
    last = r_y.shape[0] - 1
    r = k0 // inner
    j = k0 - r * inner
    at = 0
    while at < n:
        take = min(inner - j, n - at)
        ry, _, _, _ = offsets4(r, lead, r_y, r_y, r_y, r_y)
        _store_row(y, gy + ry + j * r_y[last], r_y[last], take, buf, at)
        at += take
        r += 1
        j = 0


@helper
def _group(x, y, gx, gy, lead, r_x, r_y, inner, count, mode, buf, src):  # pragma: no cover
    """One LOG_SOFTMAX or HARDMAX group (SOFTMAX's is ``_group32``) in three passes (maximum,
    sums, outputs) over blocks of at most BLOCK elements in row-major order (``_gather``); a
    group of one block is loaded once."""
    single = count <= BLOCK
    m = 0.0
    nan = np.bool_(False)
    best = np.int64(0)
    s = 0.0
    t = 0.0
    ones = 0.0
    scale = 0.0
    for p in range(3):
        if p == 1 and (mode == 2 or m != m):
            continue  # HARDMAX and an undefined group need no sums
        for k0 in range(0, count, BLOCK):
            n = min(BLOCK, count - k0)
            if p == 0 or not single:
                _gather(x, gx, lead, r_x, inner, k0, n, src)
            if p == 0:
                m, nan, best = scan(src, n, k0, m, nan, best, mode)
            elif p == 1:
                sb, tb, ob = exp_sums(buf, src, n, m)
                s += sb
                t += tb
                ones += ob
            else:
                outputs(buf, src, n, k0, m, scale, best, mode)
                _scatter(y, gy, lead, r_y, inner, k0, n, buf)
        if p == 0:
            m = _defined(m, nan, mode)
        elif p == 1:
            scale = _scale(s, t, ones, mode)


@helper
def _group32(x, y, gx, gy, lead, r_x, r_y, inner, count, src, e):  # pragma: no cover
    """SOFTMAX of one group in float32 (``src``, ``e``: float32 buffers of BLOCK): the maximum,
    the float64 sum of exp(x - m), then every exp times 1/sum, each block gathered as
    ``_group`` does (a group of one block once, its exps kept). Stores are not streamed: A/B
    on the 16-core Xeon ([16,12,512,512], streamed vs cached, ms) FLOAT32 10.06 vs 10.01 at 16
    threads, 67.7 vs 66.3 at 2; FLOAT16 7.70 vs 6.29, 55.0 vs 46.0."""
    single = count <= BLOCK
    m = np.float32(0.0)
    nan = False
    for k0 in range(0, count, BLOCK):
        n = min(BLOCK, count - k0)
        _gather(x, gx, lead, r_x, inner, k0, n, src)
        mb, nb = scan32(src, n)
        m = mb if k0 == 0 or mb > m else m
        nan = nan or nb
    if nan or not math.isfinite(m):  # a NaN, +inf, or only -inf: the group is NaN
        for j in range(min(count, BLOCK)):
            e[j] = np.float32(math.nan)
        for k0 in range(0, count, BLOCK):
            _scatter(y, gy, lead, r_y, inner, k0, min(BLOCK, count - k0), e)
        return
    s = 0.0
    if single:
        s = exps32(src, e, count, m)
    else:
        for k0 in range(0, count, BLOCK):
            n = min(BLOCK, count - k0)
            _gather(x, gx, lead, r_x, inner, k0, n, src)
            s += exps32(src, e, n, m)
    inv = 1.0 / s
    for k0 in range(0, count, BLOCK):
        n = min(BLOCK, count - k0)
        if not single:
            _gather(x, gx, lead, r_x, inner, k0, n, src)
            exps32(src, e, n, m)
        scale32(e, n, inv)
        _scatter(y, gy, lead, r_y, inner, k0, n, e)


@helper
def _tile(x, y, bx, by, lx, ly, w, lead, r_x, r_y, inner, count, mode):  # pragma: no cover
    """Column mode: ``w`` neighbouring groups (lanes at strides lx, ly) in three passes over
    chunks of reduced elements gathered into a float64 scratch (element-major: one strided
    load of the w lanes per element); a group of one chunk is loaded once, and SOFTMAX keeps
    its exps there."""
    last = r_x.shape[0] - 1
    chunk = max(1, TILE_SCRATCH // w)
    single = count <= chunk
    v = np.empty(min(count, chunk) * w, np.float64)
    m = np.empty(w, np.float64)
    s = np.zeros(w, np.float64)
    t = np.zeros(w, np.float64)
    ones = np.zeros(w, np.float64)
    nans = np.zeros(w, np.int64)
    best = np.zeros(w, np.int64)
    for p in range(3):
        if p == 1 and mode == 2:
            continue
        for k0 in range(0, count, chunk):
            n = min(chunk, count - k0)
            if p == 0 or not single:
                for kk in range(n):
                    r = (k0 + kk) // inner
                    rx, _, _, _ = offsets4(r, lead, r_x, r_x, r_x, r_x)
                    j = k0 + kk - r * inner
                    _load_row(x, bx + rx + j * r_x[last], lx, w, v, kk * w)
            if p == 0:
                lanes_scan(v, n, w, k0, m, nans, best, mode)
            elif p == 1:
                lanes_sum(v, n, w, m, s, t, ones, mode == 0 and single)
            else:
                lanes_out(v, n, w, k0, m, s, best, 3 if mode == 0 and single else mode)
                for kk in range(n):
                    r = (k0 + kk) // inner
                    ry, _, _, _ = offsets4(r, lead, r_y, r_y, r_y, r_y)
                    j = k0 + kk - r * inner
                    _store_row(y, by + ry + j * r_y[last], ly, w, v, kk * w)
        if p == 0 and mode != 2:
            for lane in range(w):
                m[lane] = _defined(m[lane], nans[lane] > 0, mode)
        elif p == 1:
            for lane in range(w):
                s[lane] = _scale(s[lane], t[lane], ones[lane], mode)


# -- the task kernel ------------------------------------------------------------------------------
# Numba re-optimises every function a parallel kernel links in, several times over: a prange
# kernel calling _group and _tile compiled in 9 s per storage type where a serial one took 2 s.
# So the task (one range of groups, or one tile) is a C-callable kernel per storage type, run
# by kernels/tasks.py (on the worker pool, or a prange driver compiled once).

HEADER = 8  # params: x and y element counts, count, mode, tasks, width, kept rank, reduced rank


@inline
def _decode(xp, yp, pp):  # pragma: no cover
    """The block's params (``tasks.HEAD`` slots, then HEADER, the kept sizes, x and y strides,
    the reduced sizes, x and y strides) as (header, x, y, kept sizes, x and y strides, the
    reduced part's leading sizes, x and y strides, its innermost size)."""
    h = carray(pp, HEAD + HEADER)[HEAD:]
    gr, rr = h[6], h[7]
    p = carray(pp, HEAD + HEADER + 3 * gr + 3 * rr)[HEAD:]
    o = HEADER + 3 * gr
    r_sizes = p[o:o + rr]
    return (h, carray(xp, h[0]), carray(yp, h[1]), p[HEADER:HEADER + gr],
            p[HEADER + gr:HEADER + 2 * gr], p[HEADER + 2 * gr:HEADER + 3 * gr],
            r_sizes[:rr - 1], p[o + rr:o + 2 * rr], p[o + 2 * rr:o + 3 * rr], r_sizes[rr - 1])


@inline
def _groups(h, g_sizes, task):  # pragma: no cover
    """Task ``task``'s range of groups (group mode)."""
    groups = np.int64(1)
    for k in range(g_sizes.shape[0]):
        groups *= g_sizes[k]
    per = (groups + h[4] - 1) // h[4]
    return task * per, min(groups, task * per + per)


def _task32(xp, yp, pp, task):  # pragma: no cover - compiled
    """One task of SOFTMAX in group mode (a contiguous range of groups, in float32): a kernel
    of its own, so that its first use does not also compile the float64 paths."""
    h, x, y, g_sizes, g_x, g_y, lead, r_x, r_y, inner = _decode(xp, yp, pp)
    count = h[2]
    src = np.empty(min(count, BLOCK), np.float32)
    e = np.empty(min(count, BLOCK), np.float32)
    lo, hi = _groups(h, g_sizes, task)
    for g in range(lo, hi):
        gx, gy, _, _ = offsets4(g, g_sizes, g_x, g_y, g_y, g_y)
        _group32(x, y, gx, gy, lead, r_x, r_y, inner, count, src, e)


def _task(xp, yp, pp, task):  # pragma: no cover - compiled
    """One task of the float64 paths: with ``width`` 0, a contiguous range of groups
    (LOG_SOFTMAX, HARDMAX); else a tile of ``width`` lanes along the last kept dimension (any
    mode)."""
    h, x, y, g_sizes, g_x, g_y, lead, r_x, r_y, inner = _decode(xp, yp, pp)
    count, mode, width = h[2], h[3], h[5]
    gr = g_sizes.shape[0]
    if width == 0:
        buf = np.empty(min(count, BLOCK), np.float64)
        src = np.empty(min(count, BLOCK), np.float64)
        lo, hi = _groups(h, g_sizes, task)
        for g in range(lo, hi):
            gx, gy, _, _ = offsets4(g, g_sizes, g_x, g_y, g_y, g_y)
            _group(x, y, gx, gy, lead, r_x, r_y, inner, count, mode, buf, src)
    else:
        lanes = g_sizes[gr - 1]
        tiles = (lanes + width - 1) // width
        l0 = (task % tiles) * width
        ox, oy, _, _ = offsets4(task // tiles, g_sizes[:gr - 1], g_x, g_y, g_y, g_y)
        _tile(x, y, ox + l0 * g_x[gr - 1], oy + l0 * g_y[gr - 1], g_x[gr - 1], g_y[gr - 1],
              min(width, lanes - l0), lead, r_x, r_y, inner, count, mode)


def task_address(storage: str, float32: bool = False) -> int:
    """The task kernel for FLOAT32 ("float32") or FLOAT16 ("uint16") storage (``float32``:
    SOFTMAX's group mode), compiled on first use."""
    return address(_task32 if float32 else _task, storage, storage)


def launch(x: np.ndarray, y: np.ndarray, params: np.ndarray, tasks: int) -> None:
    """Run the softmax of ``params`` (HEADER and layout, see ``_decode``) over the typed views
    x and y (float32, or uint16 for FLOAT16)."""
    float32 = params[3] == 0 and params[5] == 0  # SOFTMAX, group mode
    run(task_address(x.dtype.name, float32), block(params), tasks, x, y, work=y.size)
