"""The separable interpolation of the resampling operators: every output element is a weighted
sum of input elements, and the weights are a product over dimensions.

    out[o] = Σ_{t_0 … t_3} w_0[o_0, t_0] · … · w_3[o_3, t_3] · src[off_0[t_0] + … + off_3[t_3]]

Each dimension's taps are compressed rows (CSR): output coordinate ``o`` of dimension ``d`` has
taps ``ptr[d][o] … ptr[d][o + 1]``, each a source offset (element offset for the outer
dimensions, input coordinate for the last) and a float32 weight. Only taps of non-zero weight are
listed, so an element that does not contribute never propagates a NaN or an infinity into the
output. Dimensions arrive padded to rank 4 (leading dimensions of one tap of weight 1).

A task is a run of output rows (all coordinates but the last). For each row the outer taps
combine into a short list of (offset, weight) pairs; then either

- ``blend`` (the input row is not much longer than the taps that read it): the pairs are blended
  into a float32 line of the input's last dimension (contiguous, vectorised), and each output
  element sums its last-dimension taps from that line (bilinear x2: 2 + 4 operations per output
  instead of 8);
- or each output element sums every pair x last-dimension tap from the source directly.

The order of every sum is fixed by the tables, so results do not depend on the thread count.
The gradients (RESAMPLE_GRAD, RESAMPLE_GRAD1) run the same kernel on the transposed taps.
Integer outputs (INT8, UINT8) are rounded to nearest, ties to even, then saturated.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload

from .floats import load32, store, store_saturated
from .jit import inline, kernel, prange


@inline
def term(w, v):  # pragma: no cover
    """One tap's contribution: none at all where the weight is 0 (a padded tap: its element,
    NaN or infinite, must not turn the sum into NaN)."""
    return w * v if w != 0 else np.float32(0)


def store_result(y, i, v):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


@overload(store_result, inline="always")
def _store_result(y, i, v):  # pragma: no cover - typing
    """A float32 sum into the output: FLOAT32/FLOAT16 rounded to nearest even; INT8/UINT8
    rounded to the nearest integer (ties to even), then saturated."""
    if isinstance(y.dtype, types.Integer) and y.dtype.bitwidth == 8:
        return lambda y, i, v: store_saturated(y, i, np.rint(v))
    return lambda y, i, v: store(y, i, v)


@kernel
def resample_rows(src, dst, sizes, dst_strides, ptr, off, wt, last_col, last_wt, last_stride,
                  line_lo, line_n, blend, tasks):  # pragma: no cover
    """``sizes``/``dst_strides``: the output's (rank ≥ 2); ``ptr``/``off``/``wt``: the outer
    dimensions' taps (row ``d`` of ``ptr``, ``sizes[d] + 1`` long, indexes ``off``/``wt``: source
    element offsets and weights); ``last_col``/``last_wt``: the last dimension's taps, k per
    output coordinate (input coordinates, read at ``col · last_stride``; padded with weight 0);
    ``line_lo``/``line_n``: the input coordinates the last dimension's taps span (the blended
    line)."""
    outer = sizes.shape[0] - 1
    n3 = sizes[outer]
    k = last_col.shape[1]
    rows = np.int64(1)
    most = np.int64(1)
    for d in range(outer):
        rows *= sizes[d]
        widest = np.int64(0)
        for o in range(sizes[d]):
            widest = max(widest, ptr[d, o + 1] - ptr[d, o])
        most *= widest
    per_task = (rows + tasks - 1) // tasks
    for task in prange(tasks):
        pair_off = np.empty(max(most, 1), np.int64)
        pair_wt = np.empty(max(most, 1), np.float32)
        line = np.empty(line_n if blend else 1, np.float32)
        coord = np.empty(outer, np.int64)
        tap = np.empty(outer, np.int64)
        for row in range(task * per_task, min(rows, (task + 1) * per_task)):
            rem = row
            d_at = np.int64(0)
            empty = False
            for d in range(outer - 1, -1, -1):
                coord[d] = rem % sizes[d]
                rem //= sizes[d]
                d_at += coord[d] * dst_strides[d]
                tap[d] = ptr[d, coord[d]]
                empty |= tap[d] == ptr[d, coord[d] + 1]
            # The outer taps' (offset, weight) pairs of this row: an odometer over the taps.
            pairs = 0
            while not empty:
                o_sum = np.int64(0)
                w_prod = np.float32(1)
                for d in range(outer):
                    o_sum += off[tap[d]]
                    w_prod *= wt[tap[d]]
                pair_off[pairs] = o_sum
                pair_wt[pairs] = w_prod
                pairs += 1
                d = outer - 1
                while d >= 0:
                    tap[d] += 1
                    if tap[d] < ptr[d, coord[d] + 1]:
                        break
                    tap[d] = ptr[d, coord[d]]
                    d -= 1
                empty = d < 0
            if blend:
                if pairs == 0:  # a gradient coordinate that no output read
                    line[:] = 0
                elif pairs == 1:
                    base = pair_off[0] + line_lo * last_stride
                    w = pair_wt[0]
                    for j in range(line_n):
                        line[j] = w * load32(src, base + j * last_stride)
                else:
                    base = pair_off[0] + line_lo * last_stride
                    more = pair_off[1] + line_lo * last_stride
                    w, w1 = pair_wt[0], pair_wt[1]
                    for j in range(line_n):
                        line[j] = w * load32(src, base + j * last_stride) + \
                            w1 * load32(src, more + j * last_stride)
                for p in range(2, pairs):
                    base = pair_off[p] + line_lo * last_stride
                    w = pair_wt[p]
                    for j in range(line_n):
                        line[j] += w * load32(src, base + j * last_stride)
                if k == 2:
                    for o3 in range(n3):
                        acc = term(last_wt[o3, 0], line[last_col[o3, 0] - line_lo]) + \
                            term(last_wt[o3, 1], line[last_col[o3, 1] - line_lo])
                        store_result(dst, d_at + o3 * dst_strides[outer], acc)
                else:
                    for o3 in range(n3):
                        acc = np.float32(0)
                        for t in range(k):
                            acc += term(last_wt[o3, t], line[last_col[o3, t] - line_lo])
                        store_result(dst, d_at + o3 * dst_strides[outer], acc)
            else:
                for o3 in range(n3):
                    acc = np.float32(0)
                    for p in range(pairs):
                        part = np.float32(0)
                        for t in range(k):
                            part += term(last_wt[o3, t],
                                         load32(src, pair_off[p] + last_col[o3, t] * last_stride))
                        acc += pair_wt[p] * part
                    store_result(dst, d_at + o3 * dst_strides[outer], acc)
