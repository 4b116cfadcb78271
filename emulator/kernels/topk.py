"""Top-K selection along one axis: exact, for every data type, any strides.

Ranking. Each element is read as an unsigned integer of its width ``u`` and mapped to an unsigned
key that orders elements the way TOP_K1 selects them (larger key = selected first):

    a = u & abs_mask;  u = nan_bits if a > inf_bits;  u = 0 if a == 0     (floats: one NaN, +0)
    key = u ^ (neg_xor if u & sign_bit else pos_xor) ^ dir_mask

The constants (``key_constants`` in ops/top_k1.py) make this one branch-free formula serve floats
(NaN above +inf, -0 == +0), signed and unsigned integers, in both directions (INCREASING flips every
bit). A candidate is packed as ``key << 32 | (0xFFFFFFFF - index)``: a larger packed value is a
better element, ties going to the lower index, and no two elements of a sequence pack alike — a
total order, so every split of the work gives the same bytes.

Layout. ``seq_*`` describe the sequences (every coordinate but the axis, collapsed) and ``n``,
``*_axis`` the axis. Partial results go to ``part`` shaped [sequence, chunk, K], each chunk's K best
packed candidates in descending order; ``finalize`` merges the chunks and writes values (bit copies
of input elements) and UINT32 indices through the output strides.

Algorithms. ``select_rows``: one task per (sequence, chunk), a min-heap of the K best so far whose
root is the threshold, skipping whole blocks whose largest key cannot enter (a vectorised pass);
ideal when K is a small part of the sequence.
``select_columns``: when the axis is not the fastest-varying dimension, a tile of neighbouring
sequences advances row by row so reads stay contiguous. ``radix_rows``: when K is a larger part of
the sequence (the heap would take most elements in), an exact radix select of the K-th largest key,
then the K winners sorted.
"""

from __future__ import annotations

import numpy as np

from .index import offsets4
from .jit import helper, inline, kernel, prange

BLOCK = 64  # elements whose largest key is found (vectorised) before any is looked at alone
SUB = 8  # after a block's maximum gets in, sub-blocks of this size are tested the same way
LOW = np.uint64(0xFFFFFFFF)
SHIFT = np.uint64(32)


@inline
def element_key(u, kc):  # pragma: no cover
    a = u & kc[0]
    if a > kc[1]:
        u = kc[2]
    if a == 0:
        u = np.uint32(0)
    if u & kc[3]:
        return (u ^ kc[5]) ^ kc[6]
    return (u ^ kc[4]) ^ kc[6]


@inline
def pack(k, i):  # pragma: no cover
    return (np.uint64(k) << SHIFT) | (LOW - np.uint64(i))


@inline
def unpack_index(p):  # pragma: no cover
    return np.uint32(LOW - (p & LOW))


@helper
def heap_push(h, count, v):  # pragma: no cover
    """Add v to the min-heap h[:count]."""
    p = count
    while p > 0:
        parent = (p - 1) >> 1
        if h[parent] <= v:
            break
        h[p] = h[parent]
        p = parent
    h[p] = v


@helper
def heap_replace_root(h, count, v):  # pragma: no cover
    """Replace the smallest element of the min-heap h[:count] by v (v > h[0]). Floyd's way: the
    hole goes down to a leaf along the smaller children (no data-dependent branch), then v climbs
    from there (it is usually large, so a level or two)."""
    p = 0
    c = 1
    while c + 1 < count:
        c += np.int64(h[c + 1] < h[c])
        h[p] = h[c]
        p = c
        c = 2 * p + 1
    if c < count:
        h[p] = h[c]
        p = c
    # heap_push's loop, written out: calling heap_push here measured ~7% slower (k100 TOP_K).
    while p > 0:
        parent = (p - 1) >> 1
        if h[parent] <= v:
            break
        h[p] = h[parent]
        p = parent
    h[p] = v


@helper
def heap_sort_descending(h, count):  # pragma: no cover
    """Turn the min-heap h[:count] into an array sorted largest first."""
    for end in range(count - 1, 0, -1):
        smallest = h[0]
        last = h[end]
        h[end] = smallest
        heap_replace_root(h[:end], end, last)


@kernel
def select_rows(x, seq_sizes, seq_in, n, in_axis, chunks, K, kc, part):  # pragma: no cover
    num_seq = part.shape[0]
    for task in prange(num_seq * chunks):
        s = task // chunks
        c = task - s * chunks
        lo = c * n // chunks
        hi = (c + 1) * n // chunks
        o_in, _, _, _ = offsets4(s, seq_sizes, seq_in, seq_in, seq_in, seq_in)
        base = np.uint64(o_in)
        step = np.uint64(in_axis)
        h = part[s, c]
        kb = np.empty(BLOCK, np.uint32)
        for i in range(lo, lo + K):
            heap_push(h, i - lo, pack(element_key(np.uint32(x[base + np.uint64(i) * step]), kc), i))
        thr = np.uint32(h[0] >> SHIFT)
        i = lo + K
        while i < hi:
            width = min(hi - i, BLOCK)
            first = base + np.uint64(i) * step
            m = np.uint32(0)
            # The block's keys and their maximum in one pass the compiler vectorises.
            if step == 1:
                for j in range(np.uint64(width)):
                    kk = element_key(np.uint32(x[first + j]), kc)
                    kb[j] = kk
                    m = max(m, kk)
            else:
                for j in range(np.uint64(width)):
                    kk = element_key(np.uint32(x[first + j * step]), kc)
                    kb[j] = kk
                    m = max(m, kk)
            if m > thr:  # look closer, SUB elements at a time
                for j0 in range(0, width, SUB):
                    j1 = min(width, j0 + SUB)
                    sm = np.uint32(0)
                    for j in range(j0, j1):
                        sm = max(sm, kb[j])
                    if sm > thr:
                        for j in range(j0, j1):
                            if kb[j] > thr:
                                heap_replace_root(h, K, pack(kb[j], i + j))
                                thr = np.uint32(h[0] >> SHIFT)
            i += width
        heap_sort_descending(h, K)


@kernel
def select_columns(x, seq_sizes, seq_in, n, in_axis, chunks, K, kc, tile,
                   part):  # pragma: no cover
    """Sequences along the last sequence dimension (lanes) advance together, row by row."""
    lanes = seq_sizes[seq_sizes.shape[0] - 1]
    lane_step = np.uint64(seq_in[seq_sizes.shape[0] - 1])
    groups = part.shape[0] // lanes
    tiles = (lanes + tile - 1) // tile
    for task in prange(groups * tiles * chunks):
        g = task // (tiles * chunks)
        r = task - g * tiles * chunks
        t = r // chunks
        c = r - t * chunks
        l0 = t * tile
        width = min(lanes, l0 + tile) - l0
        lo = c * n // chunks
        hi = (c + 1) * n // chunks
        first = g * lanes + l0
        o_in, _, _, _ = offsets4(first, seq_sizes, seq_in, seq_in, seq_in, seq_in)
        base = np.uint64(o_in)
        step = np.uint64(in_axis)
        thr = np.empty(width, np.uint32)
        keys = np.empty(width, np.uint32)
        for i in range(lo, lo + K):
            row = base + np.uint64(i) * step
            for lane in range(width):
                kk = element_key(np.uint32(x[row + np.uint64(lane) * lane_step]), kc)
                heap_push(part[first + lane, c], i - lo, pack(kk, i))
        for lane in range(width):
            thr[lane] = np.uint32(part[first + lane, c, 0] >> SHIFT)
        for i in range(lo + K, hi):
            row = base + np.uint64(i) * step
            hit = False
            for lane in range(width):  # vectorised: keys of the row and "does any lane enter?"
                kk = element_key(np.uint32(x[row + np.uint64(lane) * lane_step]), kc)
                keys[lane] = kk
                hit |= kk > thr[lane]
            if hit:
                for lane in range(width):
                    if keys[lane] > thr[lane]:
                        h = part[first + lane, c]
                        heap_replace_root(h, K, pack(keys[lane], i))
                        thr[lane] = np.uint32(h[0] >> SHIFT)
        for lane in range(width):
            heap_sort_descending(part[first + lane, c], K)


@helper
def radix_threshold(keys, count, K, spare):  # pragma: no cover
    """(t, ties): t is the K-th largest of keys[:count]; the K best are the keys above t and the
    first ``ties`` keys equal to t. Four 8-bit histogram levels, each over the previous level's
    chosen bin only."""
    hist = np.zeros(256, np.int64)
    need = K
    prefix = np.uint32(0)
    src = keys
    for level in range(4):
        shift = np.uint32(24 - 8 * level)
        hist[:] = 0
        for j in range(count):
            hist[(src[j] >> shift) & np.uint32(255)] += 1
        b = 255
        while hist[b] < need:
            need -= hist[b]
            b -= 1
        prefix |= np.uint32(b) << shift
        if level < 3:
            kept = 0
            for j in range(count):  # branch-free compaction of the chosen bin
                v = src[j]
                spare[kept] = v
                kept += np.int64(((v >> shift) & np.uint32(255)) == np.uint32(b))
            src = spare
            count = kept
    return prefix, need


@kernel
def radix_rows(x, seq_sizes, seq_in, n, in_axis, chunks, K, kc, part):  # pragma: no cover
    """Keys of the whole chunk, the exact K-th largest by radix select, then the K winners
    collected in index order (so ties keep the lower indices) and sorted."""
    num_seq = part.shape[0]
    for task in prange(num_seq * chunks):
        s = task // chunks
        c = task - s * chunks
        lo = c * n // chunks
        hi = (c + 1) * n // chunks
        o_in, _, _, _ = offsets4(s, seq_sizes, seq_in, seq_in, seq_in, seq_in)
        first = np.uint64(o_in) + np.uint64(lo) * np.uint64(in_axis)
        step = np.uint64(in_axis)
        m = hi - lo
        keys = np.empty(m, np.uint32)
        spare = np.empty(m, np.uint32)
        if step == 1:
            for j in range(np.uint64(m)):
                keys[j] = element_key(np.uint32(x[first + j]), kc)
        else:
            for j in range(np.uint64(m)):
                keys[j] = element_key(np.uint32(x[first + j * step]), kc)
        t, ties = radix_threshold(keys, m, K, spare)
        best = np.empty(K, np.uint64)
        got = 0
        for j in range(m):
            k = keys[j]
            if k > t or (k == t and ties > 0):
                ties -= np.int64(k == t)
                best[got] = pack(k, lo + j)
                got += 1
        best = np.sort(best)
        for r in range(K):
            part[s, c, r] = best[K - 1 - r]


@kernel
def finalize(x, seq_sizes, seq_in, seq_val, seq_idx, in_axis, values, val_axis, indices,
             idx_axis, part, K):  # pragma: no cover
    num_seq = part.shape[0]
    chunks = part.shape[1]
    for s in prange(num_seq):
        o_in, o_val, o_idx, _ = offsets4(s, seq_sizes, seq_in, seq_val, seq_idx, seq_idx)
        best = part[s, 0]
        if chunks > 1:  # merge: the K best of all chunks' K best
            merged = np.sort(part[s].ravel())
            best = merged[merged.shape[0] - K:][::-1]
        for r in range(K):
            i = unpack_index(best[r])
            values[o_val + r * val_axis] = x[np.uint64(o_in) + np.uint64(i) * np.uint64(in_axis)]
            indices[o_idx + r * idx_axis] = i


@kernel
def sort_rows(x, seq_sizes, seq_in, seq_val, seq_idx, n, in_axis, K, kc, values, val_axis,
              indices, idx_axis):  # pragma: no cover
    """64-bit values (INT64, UINT64: no float has 64 bits in the bands): a sequence's keys
    (``u ^ kc[4] ^ kc[6]``, the sign flip and the direction) complemented, so that a stable
    ascending sort puts the selected first with ties by ascending index; then the first K."""
    num_seq = np.int64(1)
    for k in range(seq_sizes.shape[0]):
        num_seq *= seq_sizes[k]
    flip = ~(kc[4] ^ kc[6])
    step = np.uint64(in_axis)
    for s in prange(num_seq):
        o_in, o_val, o_idx, _ = offsets4(s, seq_sizes, seq_in, seq_val, seq_idx, seq_idx)
        base = np.uint64(o_in)
        keys = np.empty(n, np.uint64)
        for j in range(n):
            keys[j] = x[base + np.uint64(j) * step] ^ flip
        order = np.argsort(keys, kind="mergesort")
        for r in range(K):
            i = order[r]
            values[o_val + r * val_axis] = x[base + np.uint64(i) * step]
            indices[o_idx + r * idx_axis] = i
