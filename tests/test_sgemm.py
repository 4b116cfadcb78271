"""The small-shape FLOAT32 product ``kernels/sgemm.sgemm`` (the recurrent steps' H·Rᵀ): every
row-tile size (6, 4, 2, 1) and column remainder (whole tiles, one vector, single columns),
leading dimensions wider than the matrices (C's gaps untouched), k = 0, against float64 with
the classical bound |C - AB| <= k * 2**-24 * (|A| |B|) (one FMA rounding per step)."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from emulator.kernels import sgemm as small


@numba.njit
def _call(m, n, k, a, lda, b, ldb, c, ldc):
    small.sgemm(m, n, k, a.ctypes.data, lda, b.ctypes.data, ldb, c.ctypes.data, ldc)


@pytest.mark.parametrize("m", [1, 2, 3, 5, 6, 7, 12, 16, 17])
@pytest.mark.parametrize("n", [1, small.LANES - 1, small.LANES, small.NR, small.NR + small.LANES + 3, 3 * small.NR])
def test_every_tile_and_remainder_against_float64(m, n):
    rng = np.random.default_rng(m * 100 + n)
    k = 37
    lda, ldb, ldc = k + 3, n + 5, n + 2
    a = rng.standard_normal((m, lda)).astype(np.float32)
    b = rng.standard_normal((k, ldb)).astype(np.float32)
    c = np.full((m, ldc), 7.0, np.float32)
    _call(m, n, k, a, lda, b, ldb, c, ldc)
    want = a[:, :k].astype(np.float64) @ b[:, :n].astype(np.float64)
    bound = k * 2.0 ** -24 * (np.abs(a[:, :k]).astype(np.float64) @ np.abs(b[:, :n]))
    assert (np.abs(c[:, :n] - want) <= bound).all()
    assert (c[:, n:] == 7.0).all()  # the gaps of C


def test_k_zero_gives_zeros_and_specials_propagate():
    a = np.ones((6, 4), np.float32)
    b = np.ones((4, small.NR), np.float32)
    c = np.full((6, small.NR), 5.0, np.float32)
    _call(6, small.NR, 0, a, 4, b, small.NR, c, small.NR)
    assert (c == 0).all()
    a[2, 1] = np.nan
    b[3, 0] = np.inf
    _call(6, small.NR, 4, a, 4, b, small.NR, c, small.NR)
    assert np.isnan(c[2]).all() and np.isinf(c[[0, 1, 3, 4, 5], 0]).all()
    assert (c[[0, 1, 3, 4, 5], 1:] == 4).all()


@pytest.mark.parametrize("k", [5, small.PACK_MOST // small.NR, small.PACK_MOST // small.NR + 1])
def test_packed_panels_give_the_bytes_of_b_read_in_place(k):
    """From two 6-row tiles on (m >= 12) a panel of B small enough for L1 is copied into a dense
    buffer first; one row at a time it is read in place. Every element keeps its own k order
    (one FMA per step), so both give the same bytes, packed or not (k at the bound and past
    it)."""
    rng = np.random.default_rng(k)
    m, n = 13, 2 * small.NR + small.LANES + 1
    lda, ldb = k + 1, 4 * small.NR  # a power-of-two row length: the case packing is for
    a = rng.standard_normal((m, lda)).astype(np.float32)
    b = rng.standard_normal((k, ldb)).astype(np.float32)
    whole = np.zeros((m, n), np.float32)
    _call(m, n, k, a, lda, b, ldb, whole, n)
    rows = np.zeros((m, n), np.float32)
    for r in range(m):
        _call(1, n, k, a[r:], lda, b, ldb, rows[r:], n)
    assert whole.tobytes() == rows.tobytes()
