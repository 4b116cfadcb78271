"""The index-map copy of the data-movement family: every output element is either a copy of one
source element or a fill value, and which one is separable by output dimension.

    offset(c) = src_base + Σ_d table_d[c_d]   (the element is the fill value if any entry is FILL)

The outer dimensions (all but the last) look their entry up in ``tables`` (``starts[d]`` is where
dimension d's table begins); the last dimension is described by ``pieces``, rows of
``(start, length, kind, offset, step)``:

- ``kind == FILL_PIECE``: elements ``start … start + length`` are the fill value;
- ``kind == AFFINE``: element ``start + j`` copies source offset ``offset + j·step`` (step may be
  negative or zero; a unit step into a packed output row of a large copy streams, see
  ``stream.py``);
- ``kind == GATHER``: element ``start + j`` copies source offset ``inner[start + j]`` (a short-run
  map such as nearest-neighbour upsampling or wrapping a tiny dimension).

Buffers are 1-D unsigned-integer views of the element's width (bit-exact for every type). A work
item is a whole row where there are rows enough to share out (``per_row``), else one (row, piece)
pair, pieces split to at most ``CHUNK`` elements at plan time, so a few long rows still spread
over every thread.
"""

from __future__ import annotations

import numpy as np
from numba import carray

from . import pool
from .index import offsets4
from .jit import inline, kernel, prange
from .pieces import AFFINE, CHUNK, FILL, FILL_PIECE
from .stream import store_fence, stream_copy
from .strided import int64_pointer, u8_pointer, u16_pointer, u32_pointer, u64_pointer

# A streamed run is at least this many elements: a padded row's short runs streamed one by one
# were 10x slower than cached stores.
STREAM_RUN = 4096


@inline
def _group(group, per_group, tasks, src, src_base, dst, dst_base, fv, outer, dst_strides, tables,
           starts, pieces, inner, inner_stride, per_row, stream):  # pragma: no cover - compiled
    """Work item ``group`` (its tasks ``group·per_group …``), fenced once if it streamed."""
    rank = outer.shape[0]
    count = pieces.shape[0]
    streamed = False
    for task in range(group * per_group, min(tasks, (group + 1) * per_group)):
        if per_row:
            row = np.int64(task)
            first = np.int64(0)
            last = count
        else:
            row = np.int64(task) // count
            first = np.int64(task) - row * count
            last = first + 1
        s = np.int64(src_base)
        d = np.int64(dst_base)
        outside = False
        rem = row
        for k in range(rank - 1, -1, -1):
            c = rem % outer[k]
            rem //= outer[k]
            t = tables[starts[k] + c]
            outside |= t < 0
            s += t
            d += c * dst_strides[k]
        for p in range(first, last):
            n = np.uint64(pieces[p, 1])
            kind = pieces[p, 2]
            # Unsigned element indices from here (as kernels/copy.py): no negative-index
            # fix-up, so the loops vectorise; a negative step wraps modulo 2^64 to the exact
            # index.
            du = np.uint64(d + pieces[p, 0] * inner_stride)
            ds = np.uint64(inner_stride)
            if outside or kind == FILL_PIECE:
                if inner_stride == 1:
                    for j in range(n):
                        dst[du + j] = fv
                else:
                    for j in range(n):
                        dst[du + j * ds] = fv
            elif kind == AFFINE:
                su = np.uint64(s + pieces[p, 3])
                step = pieces[p, 4]
                if inner_stride == 1 and step == 1 and stream and n >= STREAM_RUN:
                    stream_copy(dst, du, src, su, n)
                    streamed = True
                elif inner_stride == 1 and step == 1:
                    for j in range(n):
                        dst[du + j] = src[su + j]
                elif inner_stride == 1 and step == -1:
                    for j in range(n):
                        dst[du + j] = src[su - j]
                elif inner_stride == 1 and step == 0:
                    v = src[su]
                    for j in range(n):
                        dst[du + j] = v
                else:
                    ss = np.uint64(step)
                    for j in range(n):
                        dst[du + j * ds] = src[su + j * ss]
            else:
                su = np.uint64(s)
                at = np.uint64(pieces[p, 0])
                for j in range(n):
                    dst[du + j * ds] = src[su + np.uint64(inner[at + j])]
    if streamed:
        store_fence()


@kernel
def map_copy(src, src_base, dst, dst_base, fill, outer, dst_strides, tables, starts, pieces,
             inner, inner_stride, per_row, stream, groups):  # pragma: no cover
    """The copy on Numba's threads (where kernels/pool.py is not available)."""
    tasks, per_group, items = _split(outer, pieces, per_row, groups)
    fv = fill[0]
    for group in prange(items):
        _group(group, per_group, tasks, src, src_base, dst, dst_base, fv, outer, dst_strides,
               tables, starts, pieces, inner, inner_stride, per_row, stream)


@inline
def _split(outer, pieces, per_row, groups):  # pragma: no cover - compiled
    """(tasks, tasks per work item, work items): a task is a whole row (all its pieces: one
    offset computation for many short pieces) when there are rows enough to share out, else one
    piece of a row; a work item is a run of at most ``groups`` of them."""
    rows = np.int64(1)
    for k in range(outer.shape[0]):
        rows *= outer[k]
    tasks = rows if per_row else rows * pieces.shape[0]
    per_group = (tasks + groups - 1) // groups
    return tasks, per_group, (tasks + per_group - 1) // per_group


# The pool's jobs (kernels/pool.py), one per element width: the argument block holds the data
# addresses (src, dst, fill: written at launch), the lengths, scalars and the plan's arrays.
SRC_LEN, DST_LEN, SRC_BASE, DST_BASE, RANK, COUNT, INNER_STRIDE, PER_ROW, STREAM, GROUPS, \
    OUTER, DST_STRIDES, TABLES, TABLES_LEN, STARTS, STARTS_LEN, PIECES, INNER, INNER_LEN, \
    BLOCK = range(4, 24)


@inline
def _copy_part(b, src, dst, fill, part, parts):  # pragma: no cover - compiled
    rank = b[RANK]
    outer = carray(int64_pointer(b[OUTER]), rank)
    dst_strides = carray(int64_pointer(b[DST_STRIDES]), rank)
    tables = carray(int64_pointer(b[TABLES]), b[TABLES_LEN])
    starts = carray(int64_pointer(b[STARTS]), b[STARTS_LEN])
    pieces = carray(int64_pointer(b[PIECES]), (b[COUNT], 5))
    inner = carray(int64_pointer(b[INNER]), b[INNER_LEN])
    per_row = b[PER_ROW] != 0
    tasks, per_group, items = _split(outer, pieces, per_row, b[GROUPS])
    for group in range(items * part // parts, items * (part + 1) // parts):
        _group(group, per_group, tasks, src, b[SRC_BASE], dst, b[DST_BASE], fill[0], outer,
               dst_strides, tables, starts, pieces, inner, b[INNER_STRIDE], per_row,
               b[STREAM] != 0)


def _copy_part1(block, part, parts):  # pragma: no cover - compiled
    b = carray(int64_pointer(block), BLOCK)
    _copy_part(b, carray(u8_pointer(b[0]), b[SRC_LEN]), carray(u8_pointer(b[1]), b[DST_LEN]),
               carray(u8_pointer(b[2]), 1), part, parts)


def _copy_part2(block, part, parts):  # pragma: no cover - compiled
    b = carray(int64_pointer(block), BLOCK)
    _copy_part(b, carray(u16_pointer(b[0]), b[SRC_LEN]), carray(u16_pointer(b[1]), b[DST_LEN]),
               carray(u16_pointer(b[2]), 1), part, parts)


def _copy_part4(block, part, parts):  # pragma: no cover - compiled
    b = carray(int64_pointer(block), BLOCK)
    _copy_part(b, carray(u32_pointer(b[0]), b[SRC_LEN]), carray(u32_pointer(b[1]), b[DST_LEN]),
               carray(u32_pointer(b[2]), 1), part, parts)


def _copy_part8(block, part, parts):  # pragma: no cover - compiled
    b = carray(int64_pointer(block), BLOCK)
    _copy_part(b, carray(u64_pointer(b[0]), b[SRC_LEN]), carray(u64_pointer(b[1]), b[DST_LEN]),
               carray(u64_pointer(b[2]), 1), part, parts)


_JOBS = {1: _copy_part1, 2: _copy_part2, 4: _copy_part4, 8: _copy_part8}


def copy_job(width: int) -> int:
    """The address of the pool job copying elements of ``width`` bytes (compiled on first use)."""
    return pool.job(_JOBS[width])


@kernel
def scatter_lines(dst, upd, sizes, dst_strides, upd_strides, index_strides, n, upd_step,
                  index_step, indices, size, stride, wrap):  # pragma: no cover
    """For every line (a coordinate of ``sizes``: all dimensions but the scatter axis), its
    ``n`` updates in order: ``dst[line·dst_strides + position·stride] = upd[line·upd_strides +
    j·upd_step]``, the position read from the index tensor at ``line·index_strides +
    j·index_step`` (negative from the end; outside [0, size): the update is dropped). A line's
    updates only reach that line of the output, so lines run in parallel and, inside one, the
    last update of an element wins."""
    rank = sizes.shape[0]
    lines = np.int64(1)
    for k in range(rank):
        lines *= sizes[k]
    for line in prange(lines):
        d, u, t, _ = offsets4(line, sizes, dst_strides, upd_strides, index_strides, index_strides)
        for j in range(n):
            p = _position(indices[np.uint64(t + j * index_step)], size, wrap)
            if p >= 0:
                dst[np.uint64(d + p * stride)] = upd[np.uint64(u + j * upd_step)]


@kernel
def index_table(indices, base, sizes, strides, size, stride, wrap, table):  # pragma: no cover
    """``table[k] = position · stride`` for the k-th index (row-major over ``sizes``; read at
    ``base + k·strides``): a negative value of a signed type counts from the end; a position
    outside [0, size) gives FILL."""
    rank = sizes.shape[0]
    inner = sizes[rank - 1]
    rows = np.int64(1)
    for k in range(rank - 1):
        rows *= sizes[k]
    step = np.uint64(strides[rank - 1])
    for row in prange(rows):
        offset = base
        rem = np.int64(row)
        for k in range(rank - 2, -1, -1):
            offset += (rem % sizes[k]) * strides[k]
            rem //= sizes[k]
        at = np.uint64(offset)
        out = np.uint64(row * inner)
        for j in range(np.uint64(inner)):
            p = _position(indices[at + j * step], size, wrap)
            table[out + j] = p * stride if p >= 0 else FILL


@kernel
def gather_index(src, dst, fill, sizes, src_strides, dst_strides, index_strides, indices,
                 size, stride, wrap, stream, groups):  # pragma: no cover
    """``dst[c] = src[c·src_strides + position(c)·stride]``, the position read from the index
    tensor at ``c·index_strides`` (a negative value of a signed type counts from the end; one
    outside [0, size) writes the fill value): every gather. GATHER and GATHER_ELEMENTS pass
    the index tensor itself; the ND gathers a table of tuple offsets (positions along a unit
    ``stride``), REVERSE_SUBSEQUENCES a table of positions."""
    rank = sizes.shape[0]
    inner = sizes[rank - 1]
    outer = sizes[:rank - 1]
    rows = np.int64(1)
    for k in range(rank - 1):
        rows *= sizes[k]
    chunks = (inner + CHUNK - 1) // CHUNK
    fv = fill[0]
    sl = np.uint64(src_strides[rank - 1])
    dl = np.uint64(dst_strides[rank - 1])
    il = np.uint64(index_strides[rank - 1])
    tasks = rows * chunks
    per_group = (tasks + groups - 1) // groups
    for group in prange((tasks + per_group - 1) // per_group):
        streamed = False
        for task in range(group * per_group, min(tasks, (group + 1) * per_group)):
            row = np.int64(task) // chunks
            j0 = (np.int64(task) - row * chunks) * CHUNK
            # (the row's coordinates over every dimension but the last: the first rank - 1)
            s, d, t, _ = offsets4(row, outer, src_strides, dst_strides, index_strides,
                                  index_strides)
            su = np.uint64(s + j0 * src_strides[rank - 1])
            du = np.uint64(d + j0 * dst_strides[rank - 1])
            tu = np.uint64(t + j0 * index_strides[rank - 1])
            n = np.uint64(min(inner, j0 + CHUNK) - j0)
            if il == 0:  # one index for the whole row (GATHER's rows): a plain copy
                p = _position(indices[tu], size, wrap)
                if p < 0:
                    for j in range(n):
                        dst[du + j * dl] = fv
                elif sl == 1 and dl == 1 and stream and n >= STREAM_RUN:
                    stream_copy(dst, du, src, su + np.uint64(p * stride), n)
                    streamed = True
                else:
                    so = su + np.uint64(p * stride)
                    for j in range(n):
                        dst[du + j * dl] = src[so + j * sl]
            elif dl == 1 and il == 1:
                # Packed output and indices (GATHER_ELEMENTS along the last axis): branch-free,
                # an index outside reads position 0 (always in the tensor) and writes the fill,
                # so the loop vectorises into gathers.
                for j in range(n):
                    p = _position(indices[tu + j], size, wrap)
                    v = src[su + j * sl + np.uint64(max(p, 0) * stride)]
                    dst[du + j] = v if p >= 0 else fv
            else:
                for j in range(n):
                    p = _position(indices[tu + j * il], size, wrap)
                    if p < 0:
                        dst[du + j * dl] = fv
                    else:
                        dst[du + j * dl] = src[su + j * sl + np.uint64(p * stride)]
        if streamed:
            store_fence()


@inline
def _position(v, size, wrap):  # pragma: no cover
    """An index value's position along an axis of ``size``, or -1 outside. Index tensors arrive
    as signed integers of their width (one compiled kernel serves a signed and an unsigned type);
    ``wrap`` says what a negative value is: 0, a signed index counting from the end; 2**32, a
    UINT32 index above 2**31 (its value is v + 2**32); -1, a UINT64 index of 2**63 or more,
    outside any axis."""
    p = np.int64(v)
    if p < 0:
        if wrap == 0:
            p += size
        elif wrap > 0:
            p += wrap
        else:
            p = -1
    return p if 0 <= p < size else np.int64(-1)
