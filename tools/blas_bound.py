# ruff: noqa: F403, F405 - the DirectML names, as tests use them
"""GEMM and CONVOLUTION against their BLAS bound and PyTorch, interleaved in one process.

    NUMBA_NUM_THREADS=16 python tools/blas_bound.py

Each contender runs in turn (three rounds of seven timed calls each, 0.3 s parked between so a
peer's spinning threads do not steal cores): the emulator's prepared dispatch, ``np.matmul``
on the same OpenBLAS (at the emulator's thread count), ``torch.matmul`` / ``conv2d``; for the
3x3 convolution also eight whole-image products [64 x 576] x [576 x 3136] (the product without
im2col, the bound of the BLAS itself), and one tile's single-threaded sgemm (64 x 227 x 576,
what ``compute/kernels.conv_tiles`` calls) in GFLOP/s. Prints median ms. Needs PyTorch.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numba
import torch

from bench.harness import Prepared
from descriptors import *
from emulator.compute import blas

THREADS = numba.get_num_threads()


def median_ms(f: Callable[[], object], rounds: int = 7, reps: int = 3) -> float:
    f()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            f()
        times.append((time.perf_counter() - t0) / reps)
    return float(np.median(times) * 1e3)


def row(name: str, contenders: dict[str, Callable[[], object]]) -> None:
    res: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(3):
        for k, f in contenders.items():
            time.sleep(0.3)
            res[k].append(median_ms(f))
    print(f"{name:<40}" + "  ".join(f"{k} {np.median(v):8.3f}" for k, v in res.items()),
          flush=True)


def main() -> int:
    torch.set_num_threads(THREADS)
    rng = np.random.default_rng(1)
    for n in (1024, 2048):
        a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
        out, o2 = np.empty((n, n), np.float32), np.empty((n, n), np.float32)
        op = DML_GEMM_OPERATOR_DESC(ATensor=tensor_desc(a), BTensor=tensor_desc(b),
                                    OutputTensor=tensor_desc(out), TransA=0, TransB=0,
                                    Alpha=1.0, Beta=0.0)
        emu = Prepared(DML_OPERATOR_DESC(Desc=op), [a, b, None], [out], level="6_4")
        ta, tb, to = torch.from_numpy(a), torch.from_numpy(b), torch.empty(n, n)

        def npm(a=a, b=b, o2=o2) -> None:
            blas.use_threads(THREADS)
            np.matmul(a, b, out=o2)

        row(f"GEMM {n}^3 ({2 * n ** 3 / 1e9:.2f} GFLOP)",
            {"emu": emu, "numpy": npm,
             "torch": lambda ta=ta, tb=tb, to=to: torch.matmul(ta, tb, out=to)})
    x = rng.standard_normal((8, 64, 56, 56)).astype(np.float32)
    w = (rng.standard_normal((64, 64, 3, 3)) * 0.1).astype(np.float32)
    out = np.empty((8, 64, 56, 56), np.float32)
    conv = DML_CONVOLUTION_OPERATOR_DESC(
        InputTensor=tensor_desc(x), FilterTensor=tensor_desc(w), BiasTensor=None,
        OutputTensor=tensor_desc(out), Mode=1, Direction=0, DimensionCount=2, Strides=[1, 1],
        Dilations=[1, 1], StartPadding=[1, 1], EndPadding=[1, 1], OutputPadding=[0, 0],
        GroupCount=1, FusedActivation=None)
    emu = Prepared(DML_OPERATOR_DESC(Desc=conv), [x, w, None], [out], level="6_4")
    xt, wt = torch.from_numpy(x), torch.from_numpy(w)
    filt = w.reshape(64, 576)
    cols = rng.standard_normal((8, 576, 3136)).astype(np.float32)
    prod = np.empty((8, 64, 3136), np.float32)

    def bound() -> None:
        blas.use_threads(THREADS)
        for i in range(8):
            np.matmul(filt, cols[i], out=prod[i])

    row("CONV 3x3 64->64 56x56 b8 (1.85 GFLOP)",
        {"emu": emu, "torch": lambda: torch.nn.functional.conv2d(xt, wt, padding=1),
         "sgemm8": bound})
    tile, tile_out = rng.standard_normal((576, 227)).astype(np.float32), \
        np.empty((64, 227), np.float32)

    def tiles() -> None:
        blas.use_threads(1)
        for _ in range(100):
            np.matmul(filt, tile, out=tile_out)

    t = median_ms(tiles) / 100 / 1e3
    print(f"one tile's sgemm 64 x 227 x 576, one thread: {t * 1e6:.1f} us = "
          f"{2 * 64 * 227 * 576 / t / 1e9:.1f} GFLOP/s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
