"""GEMM (issue 17) side by side with NumPy (the same OpenBLAS, through np.matmul), PyTorch and
ONNX Runtime (a one-node MatMul), JIT excluded; every peer at Numba's thread count (NumPy's BLAS
set to it through ``emulator.compute.blas``).

Workloads (issue 17): float32 1024^3 and 2048^3, the batched attention product
[8, 12, 512, 64] x [8, 12, 64, 512], float16 2048^3. ``--bench-scale`` scales M (the batch for
the batched case). GFLOP/s are in each benchmark's extra_info (2*M*N*K per matrix).

    NUMBA_NUM_THREADS=2 python -m pytest bench/test_bench_gemm.py -p no:cacheprovider -q \\
        --benchmark-max-time=0.5 --benchmark-warmup=on --benchmark-columns=min,median,rounds
"""

from __future__ import annotations

import numpy as np
import pytest

from descriptors import *

from .harness import Prepared

ONNX_TYPES = {np.dtype(np.float32): 1, np.dtype(np.float16): 10}
# name -> (A shape, B shape, dtype)
WORKLOADS = {
    "f32 1024^3": ((1024, 1024), (1024, 1024), np.float32),
    "f32 2048^3": ((2048, 2048), (2048, 2048), np.float32),
    "f32 batched [8,12,512,64]x[8,12,64,512]": ((8, 12, 512, 64), (8, 12, 64, 512), np.float32),
    "f16 2048^3": ((2048, 2048), (2048, 2048), np.float16),
}
NAMES = list(WORKLOADS)


@pytest.fixture(scope="module")
def data(scale):
    rng = np.random.default_rng(1)
    out = {}
    for name, (sa, sb, dtype) in WORKLOADS.items():
        sa = (max(1, int(sa[0] * scale)), *sa[1:])
        sb = (sa[0], *sb[1:]) if len(sb) > 2 else sb
        out[name] = (rng.standard_normal(sa).astype(dtype), rng.standard_normal(sb).astype(dtype))
    return out


def _flops(a: np.ndarray, b: np.ndarray) -> float:
    return 2.0 * a.size * b.shape[-1]


def _group(benchmark, name, a, b):
    benchmark.group = f"gemm {name}"
    benchmark.extra_info["gflop"] = _flops(a, b) / 1e9


@pytest.mark.parametrize("name", NAMES)
def test_emulator(benchmark, data, name):
    a, b = data[name]
    out = np.empty((*a.shape[:-1], b.shape[-1]), a.dtype)
    op = DML_GEMM_OPERATOR_DESC(ATensor=tensor_desc(a), BTensor=tensor_desc(b),
                                OutputTensor=tensor_desc(out), TransA=0, TransB=0, Alpha=1.0,
                                Beta=0.0)
    run = Prepared(DML_OPERATOR_DESC(Desc=op), [a, b, None], [out], level="6_4")
    _group(benchmark, name, a, b)
    benchmark(run)
    want = np.matmul(a.astype(np.float32), b.astype(np.float32))
    tol = 1e-4 if a.dtype == np.float32 else 1e-2
    scale = np.matmul(np.abs(a.astype(np.float32)), np.abs(b.astype(np.float32)))
    assert (np.abs(out.astype(np.float32) - want) <= tol * scale + 1e-3 * np.abs(want)).all()


@pytest.mark.parametrize("name", NAMES)
def test_numpy(benchmark, threads, data, name):
    from emulator.compute import blas

    a, b = data[name]
    if a.dtype != np.float32:
        pytest.skip("NumPy has no float16 BLAS (its float16 matmul is a scalar loop)")
    blas.use_threads(threads)
    out = np.empty((*a.shape[:-1], b.shape[-1]), a.dtype)
    _group(benchmark, name, a, b)
    benchmark(np.matmul, a, b, out=out)


@pytest.mark.parametrize("name", NAMES)
def test_torch(benchmark, torch, data, name):
    a, b = data[name]
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    out = torch.from_numpy(np.empty((*a.shape[:-1], b.shape[-1]), a.dtype))
    _group(benchmark, name, a, b)
    benchmark(torch.matmul, ta, tb, out=out)


@pytest.mark.parametrize("name", NAMES)
def test_onnxruntime(benchmark, ort, data, name):
    a, b = data[name]
    h = ort.onnx.helper
    t = ONNX_TYPES[a.dtype]
    sess = ort(h.make_node("MatMul", ["a", "b"], ["y"]),
                       [h.make_tensor_value_info("a", t, a.shape),
                        h.make_tensor_value_info("b", t, b.shape)],
                       [h.make_tensor_value_info("y", t, (*a.shape[:-1], b.shape[-1]))])
    _group(benchmark, name, a, b)
    benchmark(sess.run, None, {"a": a, "b": b})
