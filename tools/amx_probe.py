"""Probe: does this machine run ``emulator/kernels/amx.py``'s AMX int8 tiles, and how fast?

    python tools/amx_probe.py        # on an Intel CPU with amx-tile and amx-int8 (Linux)

It reports whether the module got the tile state (``HAS_AMX``: the CPU's amx-tile and amx-int8,
and Linux's arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA)), then runs the module's ``block`` (a
16 x 64 int32 block by ldtilecfg / tileloadd64 / tdpbusd / tilestored64 as LLVM intrinsics; B
packed [K/4][64 columns][4] per 64-column tile, the layout ``vnni.pack_b_tile`` makes) over a
naive blocking (A reloaded per block, the tiles stored straight into C) and checks it against
NumPy's int64 product bit for bit. Without AMX it runs the module's plain code instead.

Measured on the 16-core Xeon (Emerald Rapids VM, LLVM 22 in llvmlite), one thread, exact, four
runs (the first three with the probe's own copy of the intrinsic, the last through the module):
1024^3 at 494-705 GOPS and 2048^3 at 521-813, against ~345 GOPS a thread for the VNNI path (QLMM
1024^3 at 2 threads: 3.1 ms) and fbgemm's ~570 a thread. The emulator's own
path is ``emulator/kernels/amx.py`` (QLMM, K a multiple of 64); this probe checks a machine.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from emulator.kernels import amx


@njit(nogil=True)
def gemm(a, bp, c, m, n, k):  # pragma: no cover - compiled
    """C[m x n] int32 = A[m x k] uint8 x B, every size a multiple of the blocks (16, 64, 64)."""
    amx.configure(amx.CONFIG.ctypes.data)
    for j in range(n // amx.COLS):
        for i in range(m // amx.ROWS):
            amx.block(a.ctypes.data + i * amx.ROWS * k, k,
                      bp.ctypes.data + j * (k // 4) * amx.COLS * 4, k // amx.K_STEP,
                      c.ctypes.data + 4 * (i * amx.ROWS * n + j * amx.COLS), 4 * n)
    amx.release()


def pack(b: np.ndarray) -> np.ndarray:
    """B [K x N] int8 -> per 64-column tile [K/4][64][4]."""
    k, n = b.shape
    return np.ascontiguousarray(b.reshape(k // 4, 4, n // 64, 64).transpose(2, 0, 3, 1)).reshape(-1)


def main() -> None:
    print("tiles (HAS_AMX):", amx.HAS_AMX)
    rng = np.random.default_rng(0)
    shapes = [(16, 64, 64), (64, 128, 256), (1024, 1024, 1024), (2048, 2048, 2048)]
    for m, n, k in shapes if amx.HAS_AMX else shapes[:2]:
        a = rng.integers(0, 256, (m, k), dtype=np.uint8)
        b = rng.integers(-128, 128, (k, n), dtype=np.int8)
        bp = pack(b)
        c = np.zeros(m * n, np.int32)
        gemm(a.reshape(-1), bp, c, m, n, k)
        exact = np.array_equal(c.reshape(m, n), a.astype(np.int64) @ b.astype(np.int64))
        start, calls = time.perf_counter(), 0
        while time.perf_counter() - start < 0.5:
            gemm(a.reshape(-1), bp, c, m, n, k)
            calls += 1
        dt = (time.perf_counter() - start) / calls
        print(f"{m} x {n} x {k}: {'exact' if exact else 'WRONG'}, {dt * 1e6:.1f} us, "
              f"{2 * m * n * k / dt / 1e9:.0f} GOPS (one thread)")


if __name__ == "__main__":
    main()
