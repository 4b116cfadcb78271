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


@inline
def taps_at(line, lo, last_col, last_wt, o3, k):  # pragma: no cover
    """Output coordinate o3's sum of its last-dimension taps from the blended line."""
    acc = np.float32(0)
    for t in range(k):
        acc += term(last_wt[o3, t], line[np.uint64(last_col[o3, t] - lo)])
    return acc


@kernel
def resample_rows(src, dst, sizes, dst_strides, ptr, off, wt, last_col, last_wt, last_stride,
                  line_lo, line_n, blend, pattern_col, pattern_wt, period_in, block_lo,
                  block_hi, tasks):  # pragma: no cover
    """``sizes``/``dst_strides``: the output's (rank ≥ 2); ``ptr``/``off``/``wt``: the outer
    dimensions' taps (row ``d`` of ``ptr``, ``sizes[d] + 1`` long, indexes ``off``/``wt``: source
    element offsets and weights); ``last_col``/``last_wt``: the last dimension's taps, k per
    output coordinate (input coordinates, read at ``col · last_stride``; padded with weight 0);
    ``line_lo``/``line_n``: the input coordinates the last dimension's taps span (the blended
    line). ``pattern_*``: where the last dimension's taps repeat (blend only): output
    coordinates b·P + p for blocks b in [block_lo, block_hi) read line positions
    b·period_in + pattern_col[p, t] with weights pattern_wt[p, t] (all non-zero)."""
    outer = sizes.shape[0] - 1
    n3 = sizes[outer]
    k = last_col.shape[1]
    period = pattern_col.shape[0]
    ds = dst_strides[outer]
    rows = np.int64(1)
    most = np.int64(1)
    for d in range(outer):
        rows *= sizes[d]
        widest = np.int64(0)
        for o in range(sizes[d]):
            widest = max(widest, ptr[d, o + 1] - ptr[d, o])
        most *= widest
    per_task = (rows + tasks - 1) // tasks
    q = np.uint64(period_in)
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
            # Unsigned element indices in the loops below (as kernels/copy.py): no negative-index
            # fix-up, so they vectorise.
            dst_row = np.uint64(d_at)
            if not blend:
                for o3 in range(n3):
                    acc = np.float32(0)
                    for p in range(pairs):
                        part = np.float32(0)
                        for t in range(k):
                            part += term(last_wt[o3, t], load32(src, np.uint64(
                                pair_off[p] + last_col[o3, t] * last_stride)))
                        acc += pair_wt[p] * part
                    store_result(dst, np.uint64(d_at + o3 * ds), acc)
                continue
            step = np.uint64(last_stride)
            if pairs == 0:  # a gradient coordinate that no output read
                line[:] = 0
            elif pairs == 1:
                base = np.uint64(pair_off[0] + line_lo * last_stride)
                w = pair_wt[0]
                for j in range(line_n):
                    line[np.uint64(j)] = w * load32(src, base + np.uint64(j) * step)
            else:
                base = np.uint64(pair_off[0] + line_lo * last_stride)
                more = np.uint64(pair_off[1] + line_lo * last_stride)
                w, w1 = pair_wt[0], pair_wt[1]
                for j in range(line_n):
                    u = np.uint64(j)
                    line[u] = w * load32(src, base + u * step) + w1 * load32(src, more + u * step)
            for p in range(2, pairs):
                base = np.uint64(pair_off[p] + line_lo * last_stride)
                w = pair_wt[p]
                for j in range(line_n):
                    u = np.uint64(j)
                    line[u] += w * load32(src, base + u * step)
            # The coordinates before and after the repeating blocks, tap by tap.
            first, last = block_lo * period, block_hi * period
            for o3 in range(first):
                store_result(dst, np.uint64(d_at + o3 * ds),
                             taps_at(line, line_lo, last_col, last_wt, o3, k))
            for o3 in range(last, n3):
                store_result(dst, np.uint64(d_at + o3 * ds),
                             taps_at(line, line_lo, last_col, last_wt, o3, k))
            if block_hi <= block_lo:
                continue
            # The repeating blocks: fixed offsets and weights per phase, so the loads are
            # contiguous (or strided by period_in) and the loops vectorise.
            if ds == 1 and period == 1 and k == 2:
                c0, c1 = np.uint64(pattern_col[0, 0]), np.uint64(pattern_col[0, 1])
                w0, w1 = pattern_wt[0, 0], pattern_wt[0, 1]
                for b in range(block_lo, block_hi):
                    u = np.uint64(b)
                    store_result(dst, dst_row + u, w0 * line[u * q + c0] + w1 * line[u * q + c1])
            elif ds == 1 and period == 2 and k == 2:
                c0, c1 = np.uint64(pattern_col[0, 0]), np.uint64(pattern_col[0, 1])
                e0, e1 = np.uint64(pattern_col[1, 0]), np.uint64(pattern_col[1, 1])
                w0, w1 = pattern_wt[0, 0], pattern_wt[0, 1]
                v0, v1 = pattern_wt[1, 0], pattern_wt[1, 1]
                two = np.uint64(2)
                for b in range(block_lo, block_hi):
                    u = np.uint64(b)
                    store_result(dst, dst_row + two * u,
                                 w0 * line[u * q + c0] + w1 * line[u * q + c1])
                    store_result(dst, dst_row + two * u + np.uint64(1),
                                 v0 * line[u * q + e0] + v1 * line[u * q + e1])
            else:
                for b in range(block_lo, block_hi):
                    u = np.uint64(b)
                    for ph in range(period):
                        acc = np.float32(0)
                        for t in range(k):
                            acc += pattern_wt[ph, t] * line[u * q + np.uint64(pattern_col[ph, t])]
                        store_result(dst, np.uint64(d_at + (b * period + ph) * ds), acc)
