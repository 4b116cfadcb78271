"""The index-map copy of the data-movement family: every output element is either a copy of one
source element or a fill value, and which one is separable by output dimension.

    offset(c) = src_base + Σ_d table_d[c_d]   (the element is the fill value if any entry is FILL)

The outer dimensions (all but the last) look their entry up in ``tables`` (``starts[d]`` is where
dimension d's table begins); the last dimension is described by ``pieces``, rows of
``(start, length, kind, offset, step)``:

- ``kind == FILL_PIECE``: elements ``start … start + length`` are the fill value;
- ``kind == AFFINE``: element ``start + j`` copies source offset ``offset + j·step`` (step may be
  negative or zero);
- ``kind == GATHER``: element ``start + j`` copies source offset ``inner[start + j]`` (a short-run
  map such as nearest-neighbour upsampling or wrapping a tiny dimension).

Buffers are 1-D unsigned-integer views of the element's width (bit-exact for every type). A work
item is a whole row where there are rows enough to share out (``per_row``), else one (row, piece)
pair, pieces split to at most ``CHUNK`` elements at plan time, so a few long rows still spread
over every thread.
"""

from __future__ import annotations

import numpy as np

from .jit import kernel, prange

FILL = -1  # a table entry: this coordinate is outside the source (the fill value)
FILL_PIECE, AFFINE, GATHER = 0, 1, 2
CHUNK = 16384


@kernel
def map_copy(src, src_base, dst, dst_base, fill, outer, dst_strides, tables, starts, pieces,
             inner, inner_stride, per_row):  # pragma: no cover
    rank = outer.shape[0]
    rows = np.int64(1)
    for k in range(rank):
        rows *= outer[k]
    count = pieces.shape[0]
    fv = fill[0]
    # A task is a whole row (all its pieces: one offset computation for many short pieces) when
    # there are rows enough to share out, else one piece of a row.
    tasks = rows if per_row else rows * count
    for task in prange(tasks):
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
                if inner_stride == 1 and step == 1:
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
