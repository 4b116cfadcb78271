"""Top-K selection along one axis: exact, for every data type, any strides.

Ranking. Each element is read as an unsigned integer of its width ``u`` and mapped to an unsigned
key that orders elements the way TOP_K1 selects them (larger key = selected first):

    a = u & abs_mask;  u = nan_bits if a > inf_bits;  u = 0 if a == 0     (floats: one NaN, +0)
    key = u ^ (neg_xor if u & sign_bit else pos_xor) ^ dir_mask

The constants (``key_constants``) make this one branch-free formula serve floats (NaN above +inf,
-0 == +0), signed and unsigned integers, in both directions (INCREASING flips every bit). Ties go to
the lower index: elements are scanned in ascending index order and an equal key never displaces
one already held. The pair (key, index) is a total order, so every split of the work gives the
same bytes.

Layout. ``seq_*`` describe the sequences (every coordinate but the axis, collapsed) and ``n``,
``*_axis`` the axis. Partial results go to ``part_keys``/``part_idx`` shaped [sequence, chunk, K],
each chunk's K best in order; ``finalize`` merges the chunks and writes values (bit copies of
input elements) and UINT32 indices through the output strides.

Algorithms. ``select_rows``: one task per (sequence, chunk), a sorted K-buffer with a running
threshold, skipping whole blocks whose largest key cannot enter. ``select_columns``: when the axis
is not the fastest-varying dimension, a tile of neighbouring sequences advances row by row so reads
stay contiguous. ``sort_rows``: for large K, keys and indices packed in uint64, partitioned, sorted.
"""

from __future__ import annotations

import numpy as np

from .jit import helper, kernel, prange

BLOCK = 32  # elements whose max key is tested before any of them is looked at one by one


@helper
def element_key(u, kc):  # pragma: no cover
    a = u & kc[0]
    if a > kc[1]:
        u = kc[2]
    if a == 0:
        u = np.uint32(0)
    if u & kc[3]:
        return (u ^ kc[5]) ^ kc[6]
    return (u ^ kc[4]) ^ kc[6]


@helper
def sequence_offsets(s, seq_sizes, seq_in, seq_val, seq_idx):  # pragma: no cover
    """Element offsets of sequence ``s`` in the input, value and index tensors."""
    o_in = np.int64(0)
    o_val = np.int64(0)
    o_idx = np.int64(0)
    rem = np.int64(s)  # a prange index may be unsigned; mixed with int64 it would turn float
    for k in range(seq_sizes.shape[0] - 1, -1, -1):
        c = rem % seq_sizes[k]
        rem //= seq_sizes[k]
        o_in += c * seq_in[k]
        o_val += c * seq_val[k]
        o_idx += c * seq_idx[k]
    return o_in, o_val, o_idx


@helper
def insert(keys, idxs, count, k, i):  # pragma: no cover
    """Insert (k, i) into the sorted buffer of ``count`` entries (capacity len(keys))."""
    p = count if count < keys.shape[0] else keys.shape[0] - 1
    while p > 0 and keys[p - 1] < k:
        keys[p] = keys[p - 1]
        idxs[p] = idxs[p - 1]
        p -= 1
    keys[p] = k
    idxs[p] = i


@kernel
def select_rows(x, in_base, seq_sizes, seq_in, n, in_axis, chunks, K, kc,
                part_keys, part_idx):  # pragma: no cover
    num_seq = part_keys.shape[0]
    dummy = np.zeros(1, np.int64)
    for task in prange(num_seq * chunks):
        s = task // chunks
        c = task - s * chunks
        lo = c * n // chunks
        hi = (c + 1) * n // chunks
        o_in, _, _ = sequence_offsets(s, seq_sizes, seq_in, dummy, dummy)
        base = np.uint64(in_base + o_in)
        step = np.uint64(in_axis)
        keys = part_keys[s, c]
        idxs = part_idx[s, c]
        i = lo
        fill = lo + K
        while i < fill:
            insert(keys, idxs, i - lo, element_key(np.uint32(x[base + np.uint64(i) * step]), kc),
                   np.uint32(i))
            i += 1
        thr = keys[K - 1]
        while i < hi:
            end = min(hi, i + BLOCK)
            m = np.uint32(0)
            for j in range(i, end):
                kk = element_key(np.uint32(x[base + np.uint64(j) * step]), kc)
                m = max(m, kk)
            if m > thr:
                for j in range(i, end):
                    kk = element_key(np.uint32(x[base + np.uint64(j) * step]), kc)
                    if kk > thr:
                        insert(keys, idxs, K, kk, np.uint32(j))
                        thr = keys[K - 1]
            i = end


@kernel
def select_columns(x, in_base, seq_sizes, seq_in, n, in_axis, chunks, K, kc, tile,
                   part_keys, part_idx):  # pragma: no cover
    """Sequences along the last sequence dimension (``lanes``) advance together, row by row."""
    lanes = seq_sizes[seq_sizes.shape[0] - 1]
    lane_step = np.uint64(seq_in[seq_sizes.shape[0] - 1])
    groups = part_keys.shape[0] // lanes
    tiles = (lanes + tile - 1) // tile
    dummy = np.zeros(1, np.int64)
    for task in prange(groups * tiles * chunks):
        g = task // (tiles * chunks)
        r = task - g * tiles * chunks
        t = r // chunks
        c = r - t * chunks
        l0 = t * tile
        l1 = min(lanes, l0 + tile)
        lo = c * n // chunks
        hi = (c + 1) * n // chunks
        o_in, _, _ = sequence_offsets(g * lanes + l0, seq_sizes, seq_in, dummy, dummy)
        base = np.uint64(in_base + o_in)
        step = np.uint64(in_axis)
        thr = np.zeros(l1 - l0, np.uint32)
        for i in range(lo, hi):
            row = base + np.uint64(i) * step
            filling = i - lo < K
            for lane in range(l1 - l0):
                kk = element_key(np.uint32(x[row + np.uint64(lane) * lane_step]), kc)
                if filling or kk > thr[lane]:
                    s = g * lanes + l0 + lane
                    insert(part_keys[s, c], part_idx[s, c], min(i - lo, K), kk, np.uint32(i))
                    thr[lane] = part_keys[s, c, K - 1]


@kernel
def sort_rows(x, in_base, seq_sizes, seq_in, n, in_axis, chunks, K, kc,
              part_keys, part_idx):  # pragma: no cover
    """Pack (key, ~index) in uint64, partition out the K largest, sort them."""
    num_seq = part_keys.shape[0]
    dummy = np.zeros(1, np.int64)
    for task in prange(num_seq * chunks):
        s = task // chunks
        c = task - s * chunks
        lo = c * n // chunks
        hi = (c + 1) * n // chunks
        o_in, _, _ = sequence_offsets(s, seq_sizes, seq_in, dummy, dummy)
        base = np.uint64(in_base + o_in)
        step = np.uint64(in_axis)
        m = hi - lo
        packed = np.empty(m, np.uint64)
        for j in range(m):
            i = lo + j
            kk = element_key(np.uint32(x[base + np.uint64(i) * step]), kc)
            packed[j] = (np.uint64(kk) << np.uint64(32)) | np.uint64(0xFFFFFFFF - i)
        if m > K:
            packed = np.partition(packed, m - K)
        best = np.sort(packed[m - K:])
        for r in range(K):
            p = best[K - 1 - r]
            part_keys[s, c, r] = np.uint32(p >> np.uint64(32))
            part_idx[s, c, r] = np.uint32(0xFFFFFFFF - (p & np.uint64(0xFFFFFFFF)))


@kernel
def finalize(x, in_base, seq_sizes, seq_in, seq_val, seq_idx, in_axis,
             values, val_base, val_axis, indices, idx_base, idx_axis,
             part_keys, part_idx, K):  # pragma: no cover
    num_seq = part_keys.shape[0]
    chunks = part_keys.shape[1]
    for s in prange(num_seq):
        o_in, o_val, o_idx = sequence_offsets(s, seq_sizes, seq_in, seq_val, seq_idx)
        src = np.uint64(in_base + o_in)
        vb = val_base + o_val
        ib = idx_base + o_idx
        if chunks == 1:
            for r in range(K):
                i = part_idx[s, 0, r]
                values[vb + r * val_axis] = x[src + np.uint64(i) * np.uint64(in_axis)]
                indices[ib + r * idx_axis] = i
        else:
            packed = np.empty(chunks * K, np.uint64)
            for c in range(chunks):
                for r in range(K):
                    packed[c * K + r] = (np.uint64(part_keys[s, c, r]) << np.uint64(32)) | \
                        np.uint64(0xFFFFFFFF - part_idx[s, c, r])
            packed = np.sort(packed)
            for r in range(K):
                p = packed[chunks * K - 1 - r]
                i = np.uint32(0xFFFFFFFF - (p & np.uint64(0xFFFFFFFF)))
                values[vb + r * val_axis] = x[src + np.uint64(i) * np.uint64(in_axis)]
                indices[ib + r * idx_axis] = i
