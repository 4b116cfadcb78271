"""The matrix-multiply engine of the float compute operators: the BLAS that NumPy itself links
(OpenBLAS in NumPy's wheels), called directly through its CBLAS ``?gemm``, with its thread count
following the emulator's (Numba's ``get_num_threads``).

Why a BLAS and not our own micro-kernels (docs/decisions.md, "Compute"): NumPy's OpenBLAS reaches
~172 GFLOP/s on 1024^3 float32 at 2 threads on the dev box (PyTorch 131), with packing, cache
blocking and a hand-written AVX-512 / AVX2 kernel per CPU family; a Numba micro-kernel would have
to rebuild all of that to match. It adds no dependency: NumPy brings the library, and
``threadpoolctl`` (a small, well-kept package of the scikit-learn maintainers) finds it among the
loaded libraries and sets its threads, for OpenBLAS, MKL or BLIS alike.

The direct call gives ``alpha`` and ``beta`` for free and writes straight into a padded or
transposed output; where no CBLAS entry point is found (an unusual NumPy build), ``np.matmul``
does the product and NumPy the scaling (``DIRECT`` switches the path off for the tests).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112  # CBLAS's enum values
DIRECT: bool = True  # call ?gemm directly where found (tests switch it off)


@dataclass(frozen=True)
class Library:
    """The BLAS NumPy loaded: its ``?gemm`` entry points by dtype (empty where not callable),
    and how to set its threads."""

    gemm: dict[np.dtype, Any]
    set_threads: Any  # callable(int) or None
    name: str
    int64: bool = True  # its integers are 64-bit (NumPy's OpenBLAS), else 32-bit
    path: str = ""  # the shared library's file


@functools.cache
def library() -> Library:
    """Found once, at the first float matmul."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - a declared dependency
        return Library({}, None, "numpy.matmul")
    blas = [c for c in ThreadpoolController().lib_controllers if c.user_api == "blas"]
    if not blas:  # pragma: no cover - NumPy without a BLAS
        return Library({}, None, "numpy.matmul")
    # NumPy's own (its wheels keep it beside the package), not one another package loaded
    # first: PyTorch brings MKL, whose threads NumPy's matmul would then not follow.
    home = os.path.dirname(os.path.dirname(np.__file__))
    lib = next((c for c in blas if os.path.basename(os.path.dirname(c.filepath)).startswith(
        ("numpy", ".dylibs")) or c.filepath.startswith(os.path.join(home, "numpy"))), blas[0])
    found: dict[np.dtype, Any] = {}
    dll = ctypes.CDLL(lib.filepath)
    # OpenBLAS as NumPy's wheels build it: "scipy_" prefix, "64_" suffix and 64-bit integers;
    # a plain OpenBLAS, MKL or BLIS: "cblas_?gemm" with 32-bit integers.
    for prefix, suffix, int_t in (("scipy_", "64_", ctypes.c_int64), ("", "64_", ctypes.c_int64),
                                  ("scipy_", "", ctypes.c_int32), ("", "", ctypes.c_int32)):
        for letter, dtype, real in (("s", np.float32, ctypes.c_float),
                                    ("d", np.float64, ctypes.c_double)):
            fn = getattr(dll, f"{prefix}cblas_{letter}gemm{suffix}", None)
            if fn is None or np.dtype(dtype) in found:
                continue
            fn.restype = None
            fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, int_t, int_t, int_t, real,
                           ctypes.c_void_p, int_t, ctypes.c_void_p, int_t, real,
                           ctypes.c_void_p, int_t]
            found[np.dtype(dtype)] = fn
        if found:
            break
    wide = bool(found) and found[next(iter(found))].argtypes[3] is ctypes.c_int64
    return Library(found, lib.set_num_threads, f"{lib.internal_api} {lib.version}", wide,
                   lib.filepath)


_threads = [0]


@contextlib.contextmanager
def single_threaded_calls() -> Iterator[None]:
    """The BLAS on one thread while a kernel runs single-threaded products side by side on
    Numba's threads; then back to Numba's count, so a user's own NumPy products are not left
    on one thread."""
    import numba

    use_threads(1)
    try:
        yield
    finally:
        use_threads(numba.get_num_threads())


def use_threads(n: int) -> None:
    """The BLAS's thread count for the next calls (set only when it changes)."""
    lib = library()
    if lib.set_threads is not None and _threads[0] != n:
        lib.set_threads(n)
        _threads[0] = n


def gemm(dtype: np.dtype, trans_a: bool, trans_b: bool, m: int, n: int, k: int, alpha: float,
         a: int, lda: int, b: int, ldb: int, beta: float, c: int, ldc: int) -> None:
    """Row-major ``C = alpha * op(A) @ op(B) + beta * C`` on raw addresses (elements of
    ``dtype``; op(X) is X or its transpose; ld*: the row strides in elements)."""
    fn = library().gemm[dtype]
    fn(ROW_MAJOR, TRANS if trans_a else NO_TRANS, TRANS if trans_b else NO_TRANS, m, n, k,
       alpha, a, lda, b, ldb, beta, c, ldc)




def run(dtype: np.dtype, calls: list[tuple], threads: int) -> None:
    """Every ``gemm`` call of a dispatch (``calls``: its arguments after ``dtype``). Many
    independent products (a batch at least as large as the thread count) run side by side, one
    single-threaded ``?gemm`` per task claimed by the worker pool's threads
    (``kernels.gemm_task``, ``kernels/tasks.py``): a BLAS
    threads one small product poorly ([8,12,512,64] x [8,12,64,512] at 16 threads on the Xeon:
    4.5 ms so, 6.3 with a Python thread per share of the batch, more threaded call by call).
    Otherwise the calls run in turn, each threaded by the BLAS. Side by side, the bytes do
    not depend on the thread count; one product threaded by OpenBLAS may differ in its last
    bits between thread counts (its threaded path sums some tiles in another order)."""
    batch = len(calls)
    if threads > 1 and batch >= threads and (batch % threads == 0 or batch >= 4 * threads):
        from . import kernels

        fn, wide = address(dtype)
        ints = np.array([(TRANS if ta else NO_TRANS, TRANS if tb else NO_TRANS, m, n, k, a, lda,
                          b, ldb, c, ldc)
                         for ta, tb, m, n, k, _, a, lda, b, ldb, _, c, ldc in calls], np.int64)
        reals = np.array([(call[5], call[10]) for call in calls], np.float64)  # alpha, beta
        from ..kernels import tasks

        blk = tasks.block([fn, wide, np.dtype(dtype) == np.float64, batch])
        with single_threaded_calls():
            tasks.run(tasks.address(kernels.gemm_task, "int64", "float64"), blk, batch, ints,
                      reals, claim=True)
        return
    use_threads(threads)
    for args in calls:
        gemm(dtype, *args)


def library_path() -> str:
    """The file of the BLAS the emulator calls (what ``threadpoolctl`` reports it as)."""
    return library().path


def address(dtype: np.dtype) -> tuple[int, bool]:
    """The address of ``?gemm`` for ``dtype`` and whether its integers are 64-bit, for kernels
    that call it themselves (``compute/kernels.conv_tiles``)."""
    lib = library()
    return int(ctypes.cast(lib.gemm[np.dtype(dtype)], ctypes.c_void_p).value or 0), lib.int64


def direct(dtype: np.dtype) -> bool:
    """Whether ?gemm for ``dtype`` is called directly."""
    return DIRECT and dtype in library().gemm
