"""The sliding-window kernels that are not copies: FOLD's sums and MAX_UNPOOLING's scatter
(``movement/window.py`` has the plans; UNFOLD is a gather, ``movement.gather_index``).

FOLD: the output elements are independent sums. For every spatial position ``o`` of the output
(row-major over its spatial sizes) the plan lists, in window-position order (row-major over
WindowSizes), the element offsets of the columns that land on it: ``offsets[starts[o] …
starts[o + 1]]``, relative to the columns of channel ``c`` of batch ``n``. A work item is one
output element, so each is summed in that fixed order whatever the thread count:

``fold_sums``, its accumulator chosen by the type of ``zero``:

- float64 from +0 (float types), each term widened exactly (``load64``), the sum rounded once
  to the output's type (``store``: FLOAT16 from float64 in one rounding);
- uint64 (integer types): the elements' bits (unsigned views) summed modulo 2^64, the low bits
  stored: two's-complement wrapping, the same bits for signed and unsigned types.

MAX_UNPOOLING (``unpool_scatter``): every input element, in row-major order, is written at the
output element its index names (a number of the output's logical elements, row-major); an index
past the last element is dropped, and of repeated indices the last input element wins. The loop
is serial, which is what makes "last" well defined.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload

from .floats import load64, store, store_int
from .index import offsets4
from .jit import helper, kernel, prange


def widen(src, i, zero):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


@overload(widen, inline="always")
def _widen(src, i, zero):  # pragma: no cover - typing
    """A column element as the accumulator's type (``zero``'s): float64 exactly (FLOAT16 bits
    through ``load64``), or the integer's bits zero-extended to uint64."""
    if zero.dtype == types.float64:
        return lambda src, i, zero: load64(src, i)
    return lambda src, i, zero: np.uint64(src[i])


def put(dst, i, acc):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


@overload(put, inline="always")
def _put(dst, i, acc):  # pragma: no cover - typing
    """The sum into the output: a float rounded once (``store``), an integer's low bits."""
    if acc == types.float64:
        return lambda dst, i, acc: store(dst, i, acc)
    return lambda dst, i, acc: store_int(dst, i, acc)


@kernel
def fold_sums(src, dst, zero, batch, channels, src_n, src_c, dst_n, dst_c, dst_spatial, starts,
              offsets):  # pragma: no cover
    """Every output element (n, c, o): its columns' elements summed from ``zero[0]`` in the
    plan's order (float64 or uint64: the type of ``zero`` chooses)."""
    spatial = dst_spatial.shape[0]
    for task in prange(batch * channels * spatial):
        t = np.int64(task)
        nc = t // spatial
        o = t - nc * spatial
        n = nc // channels
        c = nc - n * channels
        base = n * src_n + c * src_c
        acc = zero[0]
        for e in range(starts[o], starts[o + 1]):
            acc += widen(src, np.uint64(base + offsets[e]), zero)
        put(dst, np.uint64(n * dst_n + c * dst_c + dst_spatial[o]), acc)


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
