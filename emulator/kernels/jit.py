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

import contextlib
import threading

import numba
import numpy as np

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


# Numba's workqueue threading layer (used where neither OpenMP nor TBB is available) aborts the
# process when parallel kernels are launched from several Python threads at once. The first
# launch tells which layer Numba chose; under workqueue, launches are serialised.
_LAUNCH = threading.Lock()
_serial: bool | None = None


@numba.njit(parallel=True, cache=True)
def _probe(x):  # pragma: no cover
    for i in numba.prange(x.shape[0]):
        x[i] = i


def launch_guard() -> contextlib.AbstractContextManager:
    """The context every kernel launch runs in: a lock only if the threading layer needs one."""
    global _serial
    if _serial is None:
        with _LAUNCH:
            if _serial is None:
                _probe(np.zeros(2, np.int64))
                _serial = numba.threading_layer() == "workqueue"
    return _LAUNCH if _serial else contextlib.nullcontext()
