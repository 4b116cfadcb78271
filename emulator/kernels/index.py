"""Index arithmetic shared by the kernels: from a flat coordinate number to element offsets."""

from __future__ import annotations

import numpy as np

from .jit import inline


@inline
def offsets4(index, sizes, s0, s1, s2, s3):  # pragma: no cover
    """Element offsets of coordinate number ``index`` of ``sizes`` (row-major) in four stride
    sets; pass a set twice when fewer are needed."""
    o0 = np.int64(0)
    o1 = np.int64(0)
    o2 = np.int64(0)
    o3 = np.int64(0)
    rem = np.int64(index)  # a prange index may be unsigned; mixed with int64 it would turn float
    for k in range(sizes.shape[0] - 1, -1, -1):
        c = rem % sizes[k]
        rem //= sizes[k]
        o0 += c * s0[k]
        o1 += c * s1[k]
        o2 += c * s2[k]
        o3 += c * s3[k]
    return o0, o1, o2, o3
