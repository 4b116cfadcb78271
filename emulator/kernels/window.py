"""The sliding-window kernels that are not copies: FOLD's sums and MAX_UNPOOLING's scatter
(``movement/window.py`` has the plans; UNFOLD is a gather, ``movement.gather_index``).

FOLD: the output elements are independent sums. For every spatial position ``o`` of the output
(row-major over its spatial sizes) the plan lists, in window-position order (row-major over
WindowSizes), the element offsets of the columns that land on it: ``offsets[starts[o] …
starts[o + 1]]``, relative to the columns of channel ``c`` of batch ``n``. A work item is one
output element, so each is summed in that fixed order whatever the thread count:

- ``fold_float``: float64 accumulator from +0, each term widened exactly (``load64``), the sum
  rounded once to the output's type (``store``: FLOAT16 from float64 in one rounding);
- ``fold_int``: the elements' bits (unsigned views) summed modulo 2^64, the low bits stored:
  two's-complement wrapping, the same bits for signed and unsigned types.

MAX_UNPOOLING (``unpool_scatter``): every input element, in row-major order, is written at the
output element its index names (a number of the output's logical elements, row-major); an index
past the last element is dropped, and of repeated indices the last input element wins. The loop
is serial, which is what makes "last" well defined.
"""

from __future__ import annotations

import numpy as np

from .floats import load64, store, store_int
from .index import offsets4
from .jit import helper, kernel, prange


@kernel
def fold_float(src, dst, batch, channels, src_n, src_c, dst_n, dst_c, dst_spatial, starts,
               offsets):  # pragma: no cover
    spatial = dst_spatial.shape[0]
    for task in prange(batch * channels * spatial):
        t = np.int64(task)
        nc = t // spatial
        o = t - nc * spatial
        n = nc // channels
        c = nc - n * channels
        base = n * src_n + c * src_c
        acc = 0.0
        for e in range(starts[o], starts[o + 1]):
            acc += load64(src, np.uint64(base + offsets[e]))
        store(dst, np.uint64(n * dst_n + c * dst_c + dst_spatial[o]), acc)


@kernel
def fold_int(src, dst, batch, channels, src_n, src_c, dst_n, dst_c, dst_spatial, starts,
             offsets):  # pragma: no cover
    spatial = dst_spatial.shape[0]
    for task in prange(batch * channels * spatial):
        t = np.int64(task)
        nc = t // spatial
        o = t - nc * spatial
        n = nc // channels
        c = nc - n * channels
        base = n * src_n + c * src_c
        acc = np.uint64(0)
        for e in range(starts[o], starts[o + 1]):
            acc += np.uint64(src[np.uint64(base + offsets[e])])
        store_int(dst, np.uint64(n * dst_n + c * dst_c + dst_spatial[o]), acc)


@helper
def unpool_scatter(dst, src, indices, sizes, src_strides, index_strides, out_sizes,
                   out_strides):  # pragma: no cover
    count = np.int64(1)
    for k in range(sizes.shape[0]):
        count *= sizes[k]
    total = np.uint64(1)
    for k in range(out_sizes.shape[0]):
        total *= np.uint64(out_sizes[k])
    for j in range(count):
        s, t, _, _ = offsets4(j, sizes, src_strides, index_strides, src_strides, src_strides)
        i = np.uint64(indices[np.uint64(t)])
        if i < total:
            d, _, _, _ = offsets4(np.int64(i), out_sizes, out_strides, out_strides, out_strides,
                                  out_strides)
            dst[np.uint64(d)] = src[np.uint64(s)]
