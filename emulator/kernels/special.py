"""RANDOM_GENERATOR's Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
3", SC11; the Random123 definition).

One block maps a 128-bit counter (c0, c1, c2, c3; c0 least significant) and a 64-bit key (k0, k1)
to four 32-bit words through ten rounds of

    (c0, c1, c2, c3) <- (hi(M1·c2) ^ c1 ^ k0, lo(M1·c2), hi(M0·c0) ^ c3 ^ k1, lo(M0·c0))

with M0 = 0xD2511F53, M1 = 0xCD9E8D57 and the key bumped by the Weyl constants (0x9E3779B9,
0xBB67AE85) modulo 2^32 after every round. Block b uses the counter ``counter + b`` (modulo
2^128) and fills elements 4b … 4b + 3 of the output, the last block cut short. All arithmetic is
uint64 on 32-bit values (a 32x32-bit product fits), with every constant a uint64 (Numba would
otherwise widen uint64 with an int to float64).
"""

from __future__ import annotations

import numpy as np

from .jit import kernel, prange

M0 = np.uint64(0xD2511F53)
M1 = np.uint64(0xCD9E8D57)
W0 = np.uint64(0x9E3779B9)
W1 = np.uint64(0xBB67AE85)
LOW = np.uint64(0xFFFFFFFF)
S32 = np.uint64(32)
ROUNDS = 10


@kernel
def philox4x32_10(counter_lo, counter_hi, key0, key1, out):  # pragma: no cover
    """``out`` (uint32, 1-D) filled from the blocks of counter (counter_hi·2^64 + counter_lo)
    and key (key1·2^32 + key0); every argument but ``out`` a uint64."""
    n = out.shape[0]
    for b in prange((n + 3) // 4):
        lo = counter_lo + np.uint64(b)
        hi = counter_hi + np.uint64(1) if lo < counter_lo else counter_hi  # the carry
        c0 = lo & LOW
        c1 = lo >> S32
        c2 = hi & LOW
        c3 = hi >> S32
        k0 = key0
        k1 = key1
        for _ in range(ROUNDS):
            p0 = M0 * c0
            p1 = M1 * c2
            c0, c1, c2, c3 = (p1 >> S32) ^ c1 ^ k0, p1 & LOW, (p0 >> S32) ^ c3 ^ k1, p0 & LOW
            k0 = (k0 + W0) & LOW
            k1 = (k1 + W1) & LOW
        at = np.int64(b) * 4
        out[at] = np.uint32(c0)
        if at + 1 < n:
            out[at + 1] = np.uint32(c1)
        if at + 2 < n:
            out[at + 2] = np.uint32(c2)
        if at + 3 < n:
            out[at + 3] = np.uint32(c3)
