"""The one place where JIT flags are set.

- ``cache=True``: compiled machine code is stored on disk, so a new process pays no compile time.
- ``parallel=True``: kernels use ``numba.prange`` over independent work items.
- ``nogil=True``: Python threads sharing a device can run kernels concurrently.
- ``fastmath=False``: results must match the NumPy references bit for bit or within stated ULPs;
  reassociation or flush-to-zero would break that.
- ``boundscheck=False``: every index is proven in range by validation before a kernel runs
  (the robustness tests check this with guard bytes instead).
- ``error_model="numpy"``: no Python exception machinery inside the hot loops.
"""

from __future__ import annotations

import numba

kernel = numba.njit(parallel=True, cache=True, nogil=True, fastmath=False, boundscheck=False,
                    error_model="numpy")
helper = numba.njit(cache=True, nogil=True, fastmath=False, boundscheck=False, error_model="numpy")
# Per-element helpers called inside hot loops: inlined in Numba's IR so that LLVM sees one loop
# body it can vectorise (a call left in the loop made the top-k scan 4x slower).
inline = numba.njit(cache=True, nogil=True, fastmath=False, boundscheck=False,
                    error_model="numpy", inline="always")
# Sums whose order no result promises (MVN statistics): LLVM may reassociate them, and only that
# (no NaN/inf/zero-sign shortcuts), so they vectorise (4x faster). For one build the machine code
# is fixed, so results do not depend on the thread count; lanes also make the sum more accurate.
reduction = numba.njit(cache=True, nogil=True, boundscheck=False, error_model="numpy",
                       fastmath={"reassoc"})
prange = numba.prange
