"""Kernels of REDUCE, ARGMIN, ARGMAX and the cumulative operators, over the reduction layout.

Every reduce kernel walks tasks = (block of groups) x (chunk of the group's elements):

- **rows** (``lanes == 1``): one group per block; the chunk is a range of the group's flat
  element numbers, walked row by row (a row: the last reduced dimension), each row folded by a
  loop that vectorises where the row is contiguous;
- **columns** (``lanes > 1``, where neighbouring groups are neighbours in memory and a group's
  elements are not): ``lanes`` groups along the last kept dimension advance together, one
  element of each per step, each in its own accumulator (a loop across groups that vectorises,
  each group still summed in its own order).

Partial results per (group, chunk) are folded in chunk order. How a shape is cut (lanes,
chunks) depends on the shape only, never on the thread count, so results are identical at any
thread count. Element offsets are unsigned (``np.uint64``): with signed indices Numba's
negative-index fix-up keeps LLVM from vectorising.

Three folds:
- ``reduce_float``: FLOAT32/FLOAT16 read as float64 and summed (of x, x*x, |x|, exp(x - shift)),
  multiplied, or maximised (NaN skipped) in float64; LLVM may reassociate the sums (``reduction``).
- ``reduce_int``: 32/64-bit integers read as their unsigned bits, summed (of x, x*x, |x|) or
  multiplied modulo 2**64; the low bits are the wrapped result at the type's width.
- ``reduce_keys``: MIN, MAX, ARGMIN, ARGMAX of any type through order-preserving unsigned keys
  (float: sign-magnitude to offset binary; signed: the sign bit flipped; MIN: every key bit
  flipped, so that it is a maximum too). A NaN's key is 0, below every number's, so a NaN never
  wins; a group of NaNs gives its first (last, DECREASING) element.

``scan``: the cumulative operators along one axis, blocks of lines in parallel, float64
(integers: modulo 2**64) running totals, each output rounded once.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import carray
from numba.core import types
from numba.extending import intrinsic, overload

from ..kernels.floats import load64, store, store_int, wide_vectors
from ..kernels.index import offsets4
from ..kernels.jit import helper, inline, reduction
from ..kernels.strided import int64_pointer, typed_pointer
from ..kernels.tasks import HEAD, TASKS, W, Z, block, run

# reduce_float / reduce_int ops
SUM, SQUARE, ABS, EXP, PRODUCT, MAXIMUM = 0, 1, 2, 3, 4, 5
# reduce_keys kinds
UNSIGNED, SIGNED, FLOAT = 0, 1, 2

SEGMENT = 512  # elements whose largest key is found at once, before the index is searched
SCAN_CHUNK = 512  # elements of each of four lines a row apart scanned at once (4 x 4 KiB)

U0 = np.uint64(0)
U1 = np.uint64(1)
U2 = np.uint64(2)
U3 = np.uint64(3)
U4 = np.uint64(4)


# The task kernels' argument block (kernels/tasks.py): HEAD slots, then FIELDS int64 fields,
# then the kept part's sizes and strides and the reduced part's (``GR`` and ``RR`` each; the
# scan's second "kept" stride set is its output's).
XN, YN, GROUPS, CHUNKS, LANES, PHASE, GR, RR, OP, SIGN, KIND, TOP, MASK, INF, FLIP, CANON, \
    BACKWARD, INDEX, N, XS, YS, EXCLUSIVE = range(22)
FIELDS = 22

_floats = typed_pointer(types.float64)
_u64s = typed_pointer(types.uint64)


@intrinsic
def _addr(typingctx, ptr):  # pragma: no cover - code generation
    """A typed pointer as an int64 address."""
    if not isinstance(ptr, types.CPointer):
        return None

    def codegen(context, builder, sig, args):
        return builder.ptrtoint(args[0], ir.IntType(64))

    return types.int64(ptr), codegen


@inline
def _fields(pp):  # pragma: no cover
    """(the fields, then the two parts' arrays: sizes and strides of the first, of the second)."""
    h = carray(pp, HEAD + FIELDS)[HEAD:]
    gr, rr = h[GR], h[RR]
    p = carray(pp, HEAD + FIELDS + 2 * gr + 2 * rr)[HEAD + FIELDS:]
    return h, p[:gr], p[gr:2 * gr], p[2 * gr:2 * gr + rr], p[2 * gr + rr:]


@inline
def _tasks_of(pp):  # pragma: no cover
    return carray(pp, HEAD)[TASKS]


@inline
def _w(pp):  # pragma: no cover
    """The address of the launch's w array."""
    return carray(pp, HEAD)[W]


@inline
def _z(pp):  # pragma: no cover
    """The address of the launch's z array."""
    return carray(pp, HEAD)[Z]


@inline
def _share(n, task, tasks):  # pragma: no cover
    """Task ``task``'s contiguous range of n items."""
    return n * task // tasks, n * (task + 1) // tasks


def fields(first, second, **values) -> np.ndarray:
    """A task block: the named fields (the rest 0) and the two parts (sizes, strides) after."""
    f = [0] * FIELDS
    f[GR], f[RR] = len(first[0]), len(second[0])
    for name, v in values.items():
        f[globals()[name.upper()]] = int(v)
    return block([*f, *first[0], *first[1], *second[0], *second[1]])


def reduce_tasks(groups: int, chunks: int, lanes: int, glast: int) -> int:
    """Phase 0's tasks: (block of ``lanes`` groups) x chunk."""
    return groups // glast * -(-glast // lanes) * chunks


def run_phases(fn: int, blk: np.ndarray, x: np.ndarray, part: np.ndarray, w: np.ndarray,
               z: np.ndarray, layout, chunks: int, lanes: int) -> None:
    """Phase 0 into ``part``; where a group is cut into chunks, phase 1 folds them into ``z``.
    ``w``: the kernel's other array (the float fold's shifts)."""
    groups, glast = layout.groups, int(layout.g[0][-1])
    blk[HEAD + PHASE] = 0
    run(fn, blk, reduce_tasks(groups, chunks, lanes, glast), x, part, w, z,
        work=groups * layout.count)
    if chunks > 1:
        blk[HEAD + PHASE] = 1
        run(fn, blk, min(groups, COMBINE_TASKS), x, part, w, z, work=groups * chunks)


COMBINE_TASKS = 64


@inline
def _count(sizes):  # pragma: no cover
    n = np.int64(1)
    for k in range(sizes.shape[0]):
        n *= sizes[k]
    return n


@inline
def _task(task, chunks, lanes, g_sizes, g_in, r_sizes):  # pragma: no cover
    """A task's first group, groups in its block, first and end element, chunk number, and the
    first group's input offset."""
    glast = g_sizes[g_sizes.shape[0] - 1]
    count = _count(r_sizes)
    per_line = (glast + lanes - 1) // lanes
    block = task // chunks
    c = task - block * chunks
    line = block // per_line
    t0 = (block - line * per_line) * lanes
    width = min(lanes, glast - t0)
    per = (count + chunks - 1) // chunks
    lo = min(count, c * per)
    hi = min(count, lo + per)
    g0 = line * glast + t0
    gi, _, _, _ = offsets4(g0, g_sizes, g_in, g_in, g_in, g_in)
    return g0, width, lo, hi, c, np.uint64(gi)


@inline
def _run(e, hi, limit, r_sizes, r_in):  # pragma: no cover
    """From a group's element number ``e``: how many elements (at most ``limit``, not past
    ``hi``) follow in the same row (the last reduced dimension), and the offset of ``e`` in the
    group."""
    last = r_sizes.shape[0] - 1
    inner = r_sizes[last]
    row = e // inner
    j = e - row * inner
    ro, _, _, _ = offsets4(row, r_sizes[:last], r_in, r_in, r_in, r_in)
    return min(inner - j, hi - e, limit), np.uint64(ro) + np.uint64(j) * np.uint64(r_in[last])


@inline
def _tasks(groups, chunks, lanes, glast):  # pragma: no cover
    return (groups // glast) * ((glast + lanes - 1) // lanes) * chunks


@inline
def _offset(e, r_sizes, r_in):  # pragma: no cover
    o, _, _, _ = offsets4(e, r_sizes, r_in, r_in, r_in, r_in)
    return np.uint64(o)


# -- floats ----------------------------------------------------------------------------------


@inline
def _identity(op):  # pragma: no cover
    if op == PRODUCT:
        return 1.0
    if op == MAXIMUM:
        return -math.inf
    return 0.0


@inline
def _fold(a, b, op):  # pragma: no cover
    if op == PRODUCT:
        return a * b
    if op == MAXIMUM:
        return b if b > a else a
    return a + b


@inline
def _term(v, op, s):  # pragma: no cover
    if op == SQUARE:
        return v * v
    if op == ABS:
        return abs(v)
    if op == EXP:
        return math.exp(v - s)
    return v


@reduction
def _float_row(x, base, step, n, op, s):  # pragma: no cover
    """One row of ``n`` elements folded by ``op`` (the branches outside the loops, so each loop
    vectorises where it can; with the CPU's widest vectors, ``floats.wide_vectors``)."""
    wide_vectors()
    if op == PRODUCT:
        p = 1.0
        for j in range(n):
            p *= load64(x, base + j * step)
        return p
    if op == MAXIMUM:
        m = -math.inf
        for j in range(n):
            v = load64(x, base + j * step)
            if v > m:
                m = v
        return m
    acc = 0.0
    if step == 1:
        if op == SUM:
            for j in range(n):
                acc += load64(x, base + j)
        elif op == SQUARE:
            for j in range(n):
                v = load64(x, base + j)
                acc += v * v
        elif op == ABS:
            for j in range(n):
                acc += abs(load64(x, base + j))
        else:
            for j in range(n):
                acc += math.exp(load64(x, base + j) - s)
    else:
        for j in range(n):
            acc += _term(load64(x, base + j * step), op, s)
    return acc


@helper
def _float_block(x, g_sizes, g_in, r_sizes, r_in, lanes, chunks, op, shift, part,
                 task):  # pragma: no cover
    """One task of reduce_float: its block of groups over its chunk of elements, into part."""
    g0, width, lo, hi, c, base = _task(task, chunks, lanes, g_sizes, g_in, r_sizes)
    if lanes == 1:
        s = shift[g0]
        rstep = np.uint64(r_in[r_in.shape[0] - 1])
        acc = _identity(op)
        e = lo
        while e < hi:
            n, o = _run(e, hi, hi, r_sizes, r_in)
            acc = _fold(acc, _float_row(x, base + o, rstep, np.uint64(n), op, s), op)
            e += n
        part[g0, c] = acc
        return
    # Columns: the block's groups are neighbours in memory (unit stride, the plan's rule).
    acc_l = np.full(width, _identity(op))
    if op == SUM:
        for e in range(lo, hi):
            b = base + _offset(e, r_sizes, r_in)
            for t in range(np.uint64(width)):
                acc_l[t] += load64(x, b + np.uint64(t))
    else:
        for e in range(lo, hi):
            b = base + _offset(e, r_sizes, r_in)
            for t in range(np.uint64(width)):
                acc_l[t] = _fold(acc_l[t], _term(load64(x, b + np.uint64(t)), op,
                                                 shift[g0 + t]), op)
    for t in range(np.uint64(width)):
        part[g0 + t, c] = acc_l[t]


def float_task(xp, yp, pp, task):  # pragma: no cover - compiled
    """A task of the float fold (x: FLOAT32 or FLOAT16 bits; y: the float64 partial results,
    groups x chunks): phase 0 one (block of groups, chunk) task, ``_float_block``; phase 1
    a range of groups, their partial results folded in chunk order into z (w: the shifts
    subtracted before exp)."""
    h, g_sizes, g_in, r_sizes, r_in = _fields(pp)
    groups, chunks, op = h[GROUPS], h[CHUNKS], h[OP]
    part = carray(_floats(_addr(yp)), (groups, chunks))
    if h[PHASE] == 0:
        _float_block(carray(xp, h[XN]), g_sizes, g_in, r_sizes, r_in, h[LANES], chunks, op,
                     carray(_floats(_w(pp)), groups), part, task)
    else:
        out = carray(_floats(_z(pp)), groups)
        lo, hi = _share(groups, task, _tasks_of(pp))
        for g in range(lo, hi):
            out[g] = _float_combine(part, g, op)


@helper
def _float_combine(part, g, op):  # pragma: no cover
    acc = part[g, 0]
    for c in range(1, part.shape[1]):
        acc = _fold(acc, part[g, c], op)
    return acc


# -- integers --------------------------------------------------------------------------------


@inline
def _iterm(u, op, sign):  # pragma: no cover
    """The term of an element's bits ``u`` (zero-extended): modulo 2**64, exact in the low
    bits. ``sign``: the type's sign bit (0 for unsigned types)."""
    if op == SQUARE:
        return u * u
    if op == ABS and (u & sign) != U0:
        return U0 - u
    return u


@helper
def _int_row(x, base, step, n, op, sign):  # pragma: no cover
    wide_vectors()
    if op == PRODUCT:
        p = U1
        for j in range(n):
            p *= np.uint64(x[base + j * step])
        return p
    acc = U0
    if step == 1 and op == SUM:
        for j in range(n):
            acc += np.uint64(x[base + j])
    else:
        for j in range(n):
            acc += _iterm(np.uint64(x[base + j * step]), op, sign)
    return acc


@helper
def _int_block(x, g_sizes, g_in, r_sizes, r_in, lanes, chunks, op, sign, part,
               task):  # pragma: no cover
    """One task of reduce_int: its block of groups over its chunk of elements, into part."""
    g0, width, lo, hi, c, base = _task(task, chunks, lanes, g_sizes, g_in, r_sizes)
    if lanes == 1:
        rstep = np.uint64(r_in[r_in.shape[0] - 1])
        acc = U1 if op == PRODUCT else U0
        e = lo
        while e < hi:
            n, o = _run(e, hi, hi, r_sizes, r_in)
            r = _int_row(x, base + o, rstep, np.uint64(n), op, sign)
            acc = acc * r if op == PRODUCT else acc + r
            e += n
        part[g0, c] = acc
        return
    # Columns: the block's groups are neighbours in memory (unit stride, the plan's rule).
    acc_l = np.full(width, U1 if op == PRODUCT else U0)
    for e in range(lo, hi):
        b = base + _offset(e, r_sizes, r_in)
        if op == PRODUCT:
            for t in range(np.uint64(width)):
                acc_l[t] *= np.uint64(x[b + np.uint64(t)])
        else:
            for t in range(np.uint64(width)):
                acc_l[t] += _iterm(np.uint64(x[b + np.uint64(t)]), op, sign)
    for t in range(np.uint64(width)):
        part[g0 + t, c] = acc_l[t]


def int_task(xp, yp, pp, task):  # pragma: no cover - compiled
    """A task of the integer fold (x: the elements' unsigned bits; y: the uint64 partial
    results, groups x chunks), in the two phases of ``float_task``."""
    h, g_sizes, g_in, r_sizes, r_in = _fields(pp)
    groups, chunks, op = h[GROUPS], h[CHUNKS], h[OP]
    part = carray(_u64s(_addr(yp)), (groups, chunks))
    if h[PHASE] == 0:
        _int_block(carray(xp, h[XN]), g_sizes, g_in, r_sizes, r_in, h[LANES], chunks, op,
                   np.uint64(h[SIGN]), part, task)
    else:
        out = carray(_u64s(_z(pp)), groups)
        lo, hi = _share(groups, task, _tasks_of(pp))
        for g in range(lo, hi):
            acc = part[g, 0]
            for c in range(1, chunks):
                acc = acc * part[g, c] if op == PRODUCT else acc + part[g, c]
            out[g] = acc


# -- MIN, MAX, ARGMIN, ARGMAX ----------------------------------------------------------------


@inline
def _key(u, kind, top, mask, inf, flip, canon):  # pragma: no cover
    """The order-preserving key of an element's bits ``u`` (``top``: the sign bit, ``mask``:
    every bit of the width, ``inf``: +inf's bits); 0 for a NaN; ``canon``: -0 keyed as +0.
    Selects only, so a loop over elements vectorises."""
    if kind == FLOAT:
        a = u & (mask ^ top)
        k = u ^ (mask if (u & top) != U0 else top)
        k = top if (canon and a == U0) else k
        return (k ^ flip) if a <= inf else U0
    if kind == SIGNED:
        return (u ^ top) ^ flip
    return u ^ flip


@inline
def _bits(k, kind, top, mask, flip):  # pragma: no cover
    """The element's bits of a key (not 0: a NaN's)."""
    k = k ^ flip
    if kind == FLOAT:
        return k ^ (top if (k & top) != U0 else mask)
    if kind == SIGNED:
        return k ^ top
    return k


def _narrow(x, v):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


@overload(_narrow, inline="always")
def _narrow_overload(x, v):  # pragma: no cover - typing
    """``v`` as ``x``'s element type: Numba widens bitwise operations to 64 bits, and a key
    kept at the element's width vectorises with 2 to 8 times the lanes."""
    dt = x.dtype
    return lambda x, v: dt(v)


@intrinsic
def _float_key(typingctx, u, low, inf, flip, zero, canon):  # pragma: no cover - code generation
    """``_key`` of a float's bits u, in IR of u's own width (Numba promotes a comparison of
    16- or 32-bit integers to 64 bits, and a loop of 64-bit selects ran at a quarter of the
    lanes): the sign spread by an arithmetic shift flips a negative value's bits, the sign
    bit of a positive one; ``flip`` after; ``zero`` (the key of +0) for ±0 where ``canon``;
    0 for a NaN (magnitude ``u & low`` above ``inf``). low, inf, flip, zero: u's type."""
    if not (isinstance(u, types.Integer) and not u.signed and low == inf == flip == zero == u):
        return None

    def codegen(context, builder, sig, args):
        x, lo, inf_v, fl, zr, can = args
        t = x.type
        w = t.width
        top = ir.Constant(t, 1 << (w - 1))
        k = builder.xor(x, builder.or_(builder.ashr(x, ir.Constant(t, w - 1)), top))
        k = builder.xor(k, fl)
        a = builder.and_(x, lo)
        is_zero = builder.and_(builder.icmp_unsigned("==", a, ir.Constant(t, 0)),
                               builder.trunc(can, ir.IntType(1)) if can.type.width != 1 else can)
        k = builder.select(is_zero, zr, k)
        return builder.select(builder.icmp_unsigned(">", a, inf_v), ir.Constant(t, 0), k)

    return u(u, u, u, u, u, types.boolean), codegen


@helper
def _key_max(x, base, step, n, kind, top, mask, inf, flip, canon):  # pragma: no cover
    """The largest key of a row, computed at the element's width (the branch on the kind
    outside the loops, so each vectorises; with the CPU's widest vectors)."""
    wide_vectors()
    top_n = _narrow(x, top)
    flip_n = _narrow(x, flip)
    m = _narrow(x, U0)
    if kind == FLOAT:
        low = _narrow(x, mask ^ top)
        inf_n = _narrow(x, inf)
        zero = _narrow(x, top ^ flip)  # +0's key
        if step == 1:  # (contiguous loads; a strided loop would gather)
            for j in range(n):
                m = max(m, _float_key(x[base + j], low, inf_n, flip_n, zero, canon))
        else:
            for j in range(n):
                m = max(m, _float_key(x[base + j * step], low, inf_n, flip_n, zero, canon))
    elif kind == SIGNED:
        for j in range(n):
            m = max(m, _narrow(x, _narrow(x, x[base + j * step] ^ top_n) ^ flip_n))
    else:
        for j in range(n):
            m = max(m, _narrow(x, x[base + j * step] ^ flip_n))
    return np.uint64(m)


@helper
def _find(x, base, step, n, target, either_zero, low, backward):  # pragma: no cover
    """The first (``backward``: last) j < n holding the bits ``target`` (``either_zero``: any
    zero, -0 or +0, under the magnitude mask ``low``); -1 if none."""
    if backward:
        for k in range(n):
            j = n - 1 - k
            u = np.uint64(x[base + np.uint64(j) * step])
            if u == target or (either_zero and (u & low) == U0):
                return j
    else:
        for j in range(n):
            u = np.uint64(x[base + np.uint64(j) * step])
            if u == target or (either_zero and (u & low) == U0):
                return j
    return -1


@helper
def _keys_block(x, g_sizes, g_in, r_sizes, r_in, lanes, chunks, kind, top, mask, inf, flip,
                canon, backward, index, part_k, part_i, task):  # pragma: no cover
    """One task of reduce_keys: the largest key of each group of its block over its chunk, and
    (``index``) the position of its first (``backward``: last) holder."""
    g0, width, lo, hi, c, base = _task(task, chunks, lanes, g_sizes, g_in, r_sizes)
    if lanes == 1:
        # Segments of at most SEGMENT elements (for an index; else whole rows): the largest key
        # of each (a loop that vectorises), and the first (backward: last) segment holding the
        # largest, where the index is then searched.
        rstep = np.uint64(r_in[r_in.shape[0] - 1])
        best = U0
        seg_base = base
        seg_start = lo
        seg_n = np.int64(0)
        e = lo
        while e < hi:
            n, o = _run(e, hi, SEGMENT if index else hi, r_sizes, r_in)
            b = base + o
            m = _key_max(x, b, rstep, np.uint64(n), kind, top, mask, inf, flip, canon)
            if m > best or (backward and m == best) or seg_n == 0:
                best = m
                seg_base = b
                seg_start = e
                seg_n = n
            e += n
        part_k[g0, c] = best
        if not index:
            return
        found = seg_start + seg_n - 1 if backward else seg_start  # also: no number (all NaN)
        if best != U0 or kind != FLOAT:
            target = _bits(best, kind, top, mask, flip)
            either_zero = kind == FLOAT and canon and (target & (mask ^ top)) == U0
            found = seg_start + _find(x, seg_base, rstep, seg_n, target, either_zero,
                                      mask ^ top, backward)
        part_i[g0, c] = found
        return
    # Columns: the block's groups are neighbours in memory (unit stride, the plan's rule).
    bk = np.zeros(width, np.uint64)
    bi = np.full(width, lo, np.int64)
    for e in range(lo, hi):
        b = base + _offset(e, r_sizes, r_in)
        if not index:
            for t in range(np.uint64(width)):
                bk[t] = max(bk[t], _key(np.uint64(x[b + np.uint64(t)]), kind, top, mask, inf,
                                        flip, canon))
        else:
            for t in range(np.uint64(width)):
                k = _key(np.uint64(x[b + np.uint64(t)]), kind, top, mask, inf, flip, canon)
                better = (k >= bk[t]) if backward else (k > bk[t])
                bi[t] = e if better else bi[t]
                bk[t] = k if better else bk[t]
    for t in range(np.uint64(width)):
        part_k[g0 + t, c] = bk[t]
        part_i[g0 + t, c] = bi[t]


def keys_task(xp, yp, pp, task):  # pragma: no cover - compiled
    """A task of MIN, MAX, ARGMIN, ARGMAX (x: the elements' unsigned bits; y: the uint64 keys,
    groups x chunks, then the int64 indices as many): phase 0 ``_keys_block``, phase 1 a range
    of groups finished by ``_keys_finish`` into z (the bits of each group's element, then the
    indices); groups in one chunk are finished in phase 0."""
    h, g_sizes, g_in, r_sizes, r_in = _fields(pp)
    groups, chunks = h[GROUPS], h[CHUNKS]
    x = carray(xp, h[XN])
    part_k = carray(_u64s(_addr(yp)), (groups, chunks))
    part_i = carray(int64_pointer(_addr(yp) + 8 * groups * chunks), (groups, chunks))
    kind, top, mask, inf = h[KIND], np.uint64(h[TOP]), np.uint64(h[MASK]), np.uint64(h[INF])
    flip, canon, backward, index = np.uint64(h[FLIP]), h[CANON] != 0, h[BACKWARD] != 0, \
        h[INDEX] != 0
    count = _count(r_sizes)
    out_bits = carray(_u64s(_z(pp)), groups)
    out_index = carray(int64_pointer(_z(pp) + 8 * groups), groups)
    if h[PHASE] == 0:
        _keys_block(x, g_sizes, g_in, r_sizes, r_in, h[LANES], chunks, kind, top, mask, inf,
                    flip, canon, backward, index, part_k, part_i, task)
        if chunks > 1:
            return
        # A group in one chunk is finished by the task that reduced it (no second launch).
        g0, width, _, _, _, _ = _task(task, chunks, h[LANES], g_sizes, g_in, r_sizes)
        lo, hi = g0, g0 + width
    else:
        lo, hi = _share(groups, task, _tasks_of(pp))
    for g in range(lo, hi):
        _keys_finish(x, g_sizes, g_in, r_sizes, r_in, chunks, count, kind, top, mask, flip,
                     backward, index, part_k, part_i, out_index, out_bits, g)


@helper
def _keys_finish(x, g_sizes, g_in, r_sizes, r_in, chunks, count, kind, top, mask, flip,
                 backward, index, part_k, part_i, out_index, out_bits, g):  # pragma: no cover
    per = (count + chunks - 1) // chunks
    best = part_k[g, 0]
    found = part_i[g, 0]
    for c in range(1, chunks):
        if c * per >= count:  # an empty chunk
            break
        k = part_k[g, c]
        if k > best or (backward and k == best):
            best = k
            found = part_i[g, c]
    if best != U0 or kind != FLOAT:
        out_bits[g] = _bits(best, kind, top, mask, flip)
    else:  # no number in the group
        found = count - 1 if backward else 0
        gi, _, _, _ = offsets4(g, g_sizes, g_in, g_in, g_in, g_in)
        out_bits[g] = np.uint64(x[np.uint64(gi) + _offset(found, r_sizes, r_in)])
    out_index[g] = found


# -- cumulative ------------------------------------------------------------------------------


@inline
def _step(acc, v, product):  # pragma: no cover
    return acc * v if product else acc + v


@helper
def _scan_block(x, y, gx0, gy0, gx, gy, width, n, xs, ys, product, exclusive, backward,
                start):  # pragma: no cover
    """``width`` lines (first at gx0/gy0, the next ``gx``/``gy`` further) advancing together,
    one element of each per step; each output the running total before (``exclusive``) or
    after its element. The accumulators' type is ``start``'s (float64, or uint64 wrapping).
    Neighbouring lines (unit ``gx`` and ``gy``): a loop across them that vectorises; else four
    lines at a time through buffers (below)."""
    if gx == 1 and gy == 1:
        acc = np.full(width, start)
        for k in range(n):
            j = np.uint64(n - 1 - k) if backward else np.uint64(k)
            bx = gx0 + j * xs
            by = gy0 + j * ys
            for t in range(np.uint64(width)):
                a = acc[t]
                v = _load(x, bx + t, start)
                new = a * v if product else a + v
                w = a if exclusive else new
                _put(y, by + t, w, start)
                acc[t] = new
        return
    # Lines a row apart: chunks of SCAN_CHUNK elements of four lines at a time, each chunk
    # read into a buffer of the accumulators' type (a loop that vectorises where the line is
    # contiguous), scanned there with the four running totals interleaved (their latencies
    # overlap), and written back the same way: the conversions run in vector loops, not once
    # per element between two adds. Fewer than four lines left: the spare chains run on
    # buffers that are not written back.
    bufs = np.full((4, min(n, SCAN_CHUNK)), start)
    b0, b1, b2, b3 = bufs[0], bufs[1], bufs[2], bufs[3]
    t = U0
    wu = np.uint64(width)
    while t < wu:
        lines = min(U4, wu - t)
        ox = gx0 + t * gx
        oy = gy0 + t * gy
        a0 = a1 = a2 = a3 = start
        for c0 in range(0, n, SCAN_CHUNK):
            m = min(SCAN_CHUNK, n - c0)
            s0 = np.uint64(n - c0 - m if backward else c0)  # the chunk's first element
            mu = np.uint64(m)
            for q in range(lines):
                _read(x, ox + q * gx + s0 * xs, xs, mu, bufs[q], start)
            for k in range(mu):
                j = mu - U1 - k if backward else k  # (unsigned: no negative-index fix-up)
                v0 = b0[j]
                v1 = b1[j]
                v2 = b2[j]
                v3 = b3[j]
                n0 = a0 * v0 if product else a0 + v0
                n1 = a1 * v1 if product else a1 + v1
                n2 = a2 * v2 if product else a2 + v2
                n3 = a3 * v3 if product else a3 + v3
                b0[j] = a0 if exclusive else n0
                b1[j] = a1 if exclusive else n1
                b2[j] = a2 if exclusive else n2
                b3[j] = a3 if exclusive else n3
                a0, a1, a2, a3 = n0, n1, n2, n3
            for q in range(lines):
                _write(y, oy + q * gy + s0 * ys, ys, mu, bufs[q], start)
        t += lines


@inline
def _read(x, base, step, m, buf, like):  # pragma: no cover
    """buf[:m] = m elements of x from ``base`` at ``step`` (as ``like``'s type)."""
    if step == U1:
        for j in range(m):
            buf[j] = _load(x, base + j, like)
    else:
        for j in range(m):
            buf[j] = _load(x, base + j * step, like)


@inline
def _write(y, base, step, m, buf, like):  # pragma: no cover
    """m elements of y from ``base`` at ``step`` = buf[:m], each rounded (or truncated) once."""
    if step == U1:
        for j in range(m):
            _put(y, base + j, buf[j], like)
    else:
        for j in range(m):
            _put(y, base + j * step, buf[j], like)


def _load(x, i, like):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


def _put(y, i, v, like):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


@overload(_load, inline="always")
def _load_overload(x, i, like):  # pragma: no cover - typing
    if isinstance(like, types.Float):
        return lambda x, i, like: load64(x, i)
    return lambda x, i, like: np.uint64(x[i])


@overload(_put, inline="always")
def _put_overload(y, i, v, like):  # pragma: no cover - typing
    if isinstance(like, types.Float):
        return lambda y, i, v, like: store(y, i, v)
    return lambda y, i, v, like: store_int(y, i, v)


@inline
def _scan_task(xp, yp, pp, task, start):  # pragma: no cover - compiled
    """One block of ``LANES`` lines of the cumulative operators (``start``: the accumulators'
    first value, float64 or uint64)."""
    h, g_sizes, g_in, _, g_out = _fields(pp)
    last = g_sizes.shape[0] - 1
    glast = g_sizes[last]
    lanes = h[LANES]
    per_line = (glast + lanes - 1) // lanes
    line = task // per_line
    t0 = (task - line * per_line) * lanes
    gi, go, _, _ = offsets4(line * glast + t0, g_sizes, g_in, g_out, g_in, g_in)
    _scan_block(carray(xp, h[XN]), carray(yp, h[YN]), np.uint64(gi), np.uint64(go),
                np.uint64(g_in[last]), np.uint64(g_out[last]), min(lanes, glast - t0), h[N],
                np.uint64(h[XS]), np.uint64(h[YS]), h[OP] != 0, h[EXCLUSIVE] != 0,
                h[BACKWARD] != 0, start)


def scan_float_task(xp, yp, pp, task):  # pragma: no cover - compiled
    """Running sums (products) of FLOAT32/FLOAT16 lines in float64, each output rounded once."""
    h = carray(pp, HEAD + FIELDS)[HEAD:]
    _scan_task(xp, yp, pp, task, 1.0 if h[OP] != 0 else 0.0)


def scan_int_task(xp, yp, pp, task):  # pragma: no cover - compiled
    """Running sums (products) of 8- to 64-bit integer lines modulo 2**64, stored truncated
    (the wrapped result at the type's width)."""
    h = carray(pp, HEAD + FIELDS)[HEAD:]
    _scan_task(xp, yp, pp, task, U1 if h[OP] != 0 else U0)


def scan_tasks(g_sizes, lanes: int) -> int:
    """The scan's tasks: blocks of ``lanes`` neighbouring lines along the last kept dimension."""
    glast = int(g_sizes[-1])
    return int(np.prod(g_sizes)) // glast * -(-glast // lanes)
