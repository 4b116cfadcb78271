"""The kernels of multi-head attention (``attention.py``).

``attention_task``: the whole chain of one task, (batch item, query head, block of query rows),
as a task kernel (``kernels/tasks.py``) on the worker pool, tasks claimed one at a time. It
calls the BLAS NumPy links (``?gemm`` by address, single-threaded) for Scale * Q x K^T into a
FLOAT32 score block of its own, adds the RelativePositionBias and the mask, applies the key
range and the causal limit of past lengths, takes exp32(x - row maximum) (``kernels/vmath``,
within 1 ULP), calls ``?gemm`` again for P x V straight into the output block (row- or
column-major) and divides each row by its float64 sum. The row maximum is ``llvm.maxnum``
(NaN ignored; a NaN or inf - inf then makes that row's sum, hence all its outputs, NaN, as the
page's steps give); the loops over a row run on unsigned indices and vectorise.

Why (the lever ``python tools/ab_levers.py attention``, interleaved rounds in one process):
the tasks were Python functions on a thread pool, each making NumPy calls for the maxima, sums,
mask and division; at 16 threads they queued on the GIL (0.24x of PyTorch on the Xeon). On the
2-core AMD dev box, ms, kernel / Python tasks: MHA [8, 512, 12 x 64] 71.7 / 89.8, with a
boolean mask 77.2 / 127, a MHA1 decoding step over a 2,048-long KV cache 30.8 / 49.7; blocks of
512, 128 and 32 query rows (the score block 2^18, 2^16, 2^14 elements): 64.7, 74.3, 87.8 ms.
A boolean mask with MaskFilterValue -10,000 made 10 % of the shifted scores about -10,000: their
exp32 produced subnormal intermediates, which the Xeon takes through microcode assists (2
threads: 103 ms against 53 unmasked); shifts below -80 are now weight 0 without computing
them (exp(-80) is 2^-115 of the largest weight; the outputs move far less than the bound).
A compare-and-select maximum stayed scalar (Numba puts no fast-math flags on the select: 88 us
per 256K elements against 33 us for maxnum), and a float64 sum in the exp loop kept the exp
scalar (the MHA took 140 ms).

``exp_shifted(s, top)``: s[i, j] = exp32(s[i, j] - top[i]) in place, for the Python tasks that
remain for what the kernel does not take (KEY_QUERY_SEQUENCE_LENGTH_START_END, a FLOAT16
RelativePositionBias, no callable BLAS).
"""

from __future__ import annotations

import numpy as np
from numba import carray, types

from ..kernels.blas_calls import address, sgemm_at
from ..kernels.floats import bits_double, maxnum32
from ..kernels.jit import helper, reduction
from ..kernels.strided import typed_pointer
from ..kernels.tasks import HEAD, W, Z
from ..kernels.vmath import exp32


@helper
def exp_shifted(s, top):  # pragma: no cover - compiled
    rows, n = s.shape
    for i in range(rows):
        m = top[i, 0]
        row = s[i]
        for j in range(n):
            row[j] = exp32(row[j] - m)


# -- the whole attention of a block of query rows, as a task kernel -----------------------------
# ``attention_task`` (kernels/tasks.py) runs on the worker pool; task t is (batch b, query head
# h, block of query rows): t = (b * HQ + h) * BLOCKS + block. x: the query, y: the output, w: the
# keys, z: the values (FLOAT32 each; element strides {batch, head, row, column} in the block).
# Its argument block after HEAD (its own layout: the compiled kernel depends on no module outside
# kernels/ but this one, whose source keys its cache entry):
(GEMM, WIDE, HQ, GROUP, SEQ, ROWS, BLOCKS, DK, DV, SCALE, FILTER, MASK, CAUSAL, MASK_AT,
 RPB_AT, BATCH_AT) = range(HEAD, HEAD + 16)
QS, KS, VS, OS, MS, RS = range(HEAD + 16, HEAD + 40, 4)  # four element strides each
LAYOUT = HEAD + 40  # (transposed, leading dimension) of the query, key, value, output matrices
END = LAYOUT + 8
NO_MASK, BOOLEAN, KEY_RANGE = 0, 1, 2
# Shifted scores below this give weight 0: e^-80 < 2^-115 of the row maximum's weight (far
# inside the stated bound), and exp32 of them would make subnormal intermediates, which Intel
# cores take through ~100-cycle microcode assists (module doc).
FLOOR = np.float32(-80.0)
_f32s, _i32s, _i64s = (typed_pointer(t) for t in (types.float32, types.int32, types.int64))


@reduction
def _row_sum(row, n):  # pragma: no cover - compiled
    """The float64 sum of row[:n] (LLVM may reassociate it: lanes; the thread count never
    changes it)."""
    total = 0.0
    for j in range(np.uint64(n)):
        total += row[j]
    return total


def attention_task(xp, yp, pp, t):  # pragma: no cover - compiled
    """The task's scores = Scale * Q x K^T (one sgemm), + RelativePositionBias, the mask
    (BOOLEAN adds MaskFilterValue where the mask is 0; a key range sets it outside [lo, hi)),
    the causal limit (query row i sees keys up to n - seq + i), exp32(x - row max) (a NaN
    maximum leaves the row NaN), then O = P x V (one sgemm) divided by each row's sum (float64);
    a row that sees no key outputs 0. Per batch item (the BATCH table): lo, hi, n (the keys
    read: all, or with past lengths the item's valid ones)."""
    f = carray(pp, END)
    fn, wide = f[GEMM], f[WIDE] != 0
    hq, seq, rows, blocks, dk, dv = f[HQ], f[SEQ], f[ROWS], f[BLOCKS], f[DK], f[DV]
    part = t % blocks
    h = (t // blocks) % hq
    b = t // (blocks * hq)
    hk = h // f[GROUP]
    r0 = part * rows
    m = min(rows, seq - r0)
    bt = carray(_i64s(f[BATCH_AT]), (b + 1) * 3)
    lo, hi, n = bt[3 * b], bt[3 * b + 1], bt[3 * b + 2]
    scale = np.float32(bits_double(f[SCALE]))
    fv = np.float32(bits_double(f[FILTER]))
    q = address(xp) + 4 * (b * f[QS] + h * f[QS + 1] + r0 * f[QS + 2])
    k = f[W] + 4 * (b * f[KS] + hk * f[KS + 1])
    v = f[Z] + 4 * (b * f[VS] + hk * f[VS + 1])
    ob = b * f[OS] + h * f[OS + 1] + r0 * f[OS + 2]
    o = address(yp) + 4 * ob
    s = np.empty(m * n, np.float32)
    sgemm_at(wide, fn, f[LAYOUT], 1 - f[LAYOUT + 2], m, n, dk, scale, q, f[LAYOUT + 1], k,
             f[LAYOUT + 3], address(s), n, s)
    kind = f[MASK]
    sums = np.empty(m, np.float64)
    for i in range(m):
        row = s[i * n:(i + 1) * n]
        gi = r0 + i
        if f[RPB_AT] != 0:
            at = b * f[RS] + h * f[RS + 1] + gi * f[RS + 2]
            if f[RS + 3] == 1:  # unit stride: a loop LLVM vectorises
                bias = _f32s(f[RPB_AT] + 4 * at)
                for j in range(np.uint64(n)):
                    row[j] += bias[j]
            else:
                for j in range(n):
                    row[j] += _f32s(f[RPB_AT])[at + j * f[RS + 3]]
        if kind == BOOLEAN:  # + f where the mask is 0, + 0 elsewhere (the reference's sum)
            at = b * f[MS] + h * f[MS + 1] + gi * f[MS + 2]
            if f[MS + 3] == 1:
                keep = _i32s(f[MASK_AT] + 4 * at)
                for j in range(np.uint64(n)):
                    row[j] += fv if keep[j] == 0 else np.float32(0.0)
            else:
                for j in range(n):
                    row[j] += fv if _i32s(f[MASK_AT])[at + j * f[MS + 3]] == 0 \
                        else np.float32(0.0)
        elif kind == KEY_RANGE:
            for j in range(min(lo, n)):
                row[j] = fv
            for j in range(max(hi, 0), n):
                row[j] = fv
        limit = n
        if f[CAUSAL] != 0:
            limit = max(0, min(n, n - seq + gi + 1))
        if limit == 0:
            sums[i] = 0.0
            for j in range(n):
                row[j] = 0.0
            continue
        # The row maximum ignoring NaN (vectorised): a NaN score (or inf - inf) makes its exp
        # NaN, hence the row's sum and every output of the row NaN, as the page's steps do.
        top = row[0]
        for j in range(np.uint64(1), np.uint64(limit)):
            top = maxnum32(top, row[j])
        for j in range(np.uint64(limit)):  # exp of a shift below -80 taken as 0 (module doc)
            x = row[j] - top
            e = exp32(FLOOR if x < FLOOR else x)
            row[j] = np.float32(0.0) if x < FLOOR else e
        for j in range(np.uint64(limit), np.uint64(n)):
            row[j] = 0.0
        sums[i] = _row_sum(row, limit)
    if f[LAYOUT + 6] == 0:  # the output block row-major: O = P x V
        sgemm_at(wide, fn, 0, f[LAYOUT + 4], m, dv, n, np.float32(1.0), address(s), n, v,
                 f[LAYOUT + 5], o, f[LAYOUT + 7], s)
    else:  # column-major: O^T = V^T x P^T
        sgemm_at(wide, fn, 1 - f[LAYOUT + 4], 1, dv, m, n, np.float32(1.0), v, f[LAYOUT + 5],
                 address(s), n, o, f[LAYOUT + 7], s)
    out = _f32s(address(yp))
    for i in range(m):
        at = ob + i * f[OS + 2]
        if sums[i] == 0.0:
            for e in range(dv):
                out[at + e * f[OS + 3]] = 0.0
        else:
            total = np.float32(sums[i])
            for e in range(dv):
                out[at + e * f[OS + 3]] /= total
