"""Pooling (issue 17) side by side with PyTorch (max_pool2d / avg_pool2d) and ONNX Runtime (a
one-node MaxPool / AveragePool), JIT excluded, float32 NCHW.

Workloads: ResNet-50's stem pooling, MAX_POOLING2 3x3 stride 2 pad 1 on [8, 64, 112, 112]
(no indices), and AVERAGE_POOLING 3x3 stride 2 pad 1 (IncludePadding TRUE, PyTorch's and ONNX's
count_include_pad) on the same input. ``--bench-scale`` scales the batch. GB/s (input read once,
output written once) are in each benchmark's extra_info.

    NUMBA_NUM_THREADS=2 python -m pytest bench/test_bench_pooling.py -p no:cacheprovider -q \\
        --benchmark-max-time=0.5 --benchmark-warmup=on --benchmark-columns=min,median,rounds
"""

from __future__ import annotations

import numpy as np
import pytest

from descriptors import *

from .harness import Prepared

KINDS = ["max 3x3/2", "average 3x3/2"]


@pytest.fixture(scope="module")
def data(scale):
    batch = max(1, int(8 * scale))
    return np.random.default_rng(1).standard_normal((batch, 64, 112, 112)).astype(np.float32)


def _out(x: np.ndarray) -> np.ndarray:
    return np.empty((x.shape[0], x.shape[1], 56, 56), np.float32)


def _group(benchmark, kind, x):
    benchmark.group = f"pooling {kind}"
    benchmark.extra_info["bytes"] = x.nbytes + _out(x).nbytes


def _desc(kind: str, x: np.ndarray, out: np.ndarray):
    common = {"InputTensor": tensor_desc(x), "OutputTensor": tensor_desc(out),
              "DimensionCount": 2, "Strides": [2, 2], "WindowSize": [3, 3],
              "StartPadding": [1, 1], "EndPadding": [1, 1]}
    if kind.startswith("max"):
        return DML_MAX_POOLING2_OPERATOR_DESC(OutputIndicesTensor=None, Dilations=[1, 1],
                                              **common)
    return DML_AVERAGE_POOLING_OPERATOR_DESC(IncludePadding=True, **common)


def _torch_fn(torch, kind):
    f = torch.nn.functional
    return f.max_pool2d if kind.startswith("max") else f.avg_pool2d


@pytest.mark.parametrize("kind", KINDS)
def test_emulator(benchmark, torch, data, kind):
    x = data
    out = _out(x)
    outputs = [out, None] if kind.startswith("max") else [out]
    run = Prepared(DML_OPERATOR_DESC(Desc=_desc(kind, x, out)), [x], outputs, level="6_4")
    _group(benchmark, kind, x)
    benchmark(run)
    want = _torch_fn(torch, kind)(torch.from_numpy(x), 3, 2, 1).numpy()
    if kind.startswith("max"):
        np.testing.assert_array_equal(out, want)
    else:
        np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_torch(benchmark, torch, data, kind):
    tx = torch.from_numpy(data)
    _group(benchmark, kind, data)
    with torch.no_grad():
        benchmark(_torch_fn(torch, kind), tx, 3, 2, 1)


@pytest.mark.parametrize("kind", KINDS)
def test_onnxruntime(benchmark, ort, data, kind):
    h = ort.onnx.helper
    op = "MaxPool" if kind.startswith("max") else "AveragePool"
    extra = {} if kind.startswith("max") else {"count_include_pad": 1}
    node = h.make_node(op, ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                       **extra)
    sess = ort(node, [h.make_tensor_value_info("x", 1, data.shape)],
               [h.make_tensor_value_info("y", 1, _out(data).shape)])
    _group(benchmark, kind, data)
    benchmark(sess.run, None, {"x": data})
