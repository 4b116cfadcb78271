"""The reduction family's normalizations (issue 15), side by side with PyTorch and ONNX Runtime
(one-node models), JIT excluded.

Workloads (issue 15): SOFTMAX1 float32 [64, 12, 512, 512] over the last axis;
MEAN_VARIANCE_NORMALIZATION2 as LayerNorm (per-column Scale and Bias) float32 and float16
[8192, 4096] over the last axis; BATCH_NORMALIZATION float32 [32, 64, 56, 56] (per-channel mean,
variance, scale, bias). PyTorch's results are copied into a preallocated output (its functions
allocate); ONNX Runtime allocates. ``--bench-scale`` scales the first dimension.

    NUMBA_NUM_THREADS=2 python -m pytest bench/test_bench_normalization.py -p no:cacheprovider \\
        -q --benchmark-max-time=0.5 --benchmark-warmup=on --benchmark-columns=min,median,rounds
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from descriptors import *

from .harness import Prepared

ONNX_TYPES = {np.dtype(np.float32): 1, np.dtype(np.float16): 10}


EPS = 1e-5


@dataclass(frozen=True)
class Norm:
    inputs: Callable[[np.random.Generator, float], list[np.ndarray]]
    desc: Callable[..., object]  # (inputs, out) -> the operator's struct
    torch_fn: Callable[..., object]  # (torch, tensors) -> a tensor
    onnx: tuple[str, dict]  # op type, attributes (inputs in order)
    expected: Callable[[list[np.ndarray]], np.ndarray]
    tolerance: float


def _layer_norm(xs):
    x, scale, bias = (a.astype(np.float64) for a in xs)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return ((x - mean) / np.sqrt(var + EPS) * scale + bias).astype(xs[0].dtype)


def _mvn2(dtype):
    def inputs(rng, scale):
        n = max(1, int(8192 * scale))
        return [rng.standard_normal((n, 4096)).astype(dtype),
                rng.standard_normal((1, 4096)).astype(dtype),
                rng.standard_normal((1, 4096)).astype(dtype)]

    return Norm(
        inputs,
        lambda xs, out: DML_MEAN_VARIANCE_NORMALIZATION2_OPERATOR_DESC(
            InputTensor=tensor_desc(xs[0]), ScaleTensor=tensor_desc(xs[1]),
            BiasTensor=tensor_desc(xs[2]), OutputTensor=tensor_desc(out), Axes=[1],
            UseMean=True, UseVariance=True, Epsilon=EPS),
        lambda t, ts: t.nn.functional.layer_norm(ts[0], (4096,), ts[1][0], ts[2][0], EPS),
        ("LayerNormalization", {"axis": -1, "epsilon": EPS}),
        _layer_norm, 2e-3 if dtype == np.float16 else 1e-4)


def _batch_norm_inputs(rng, scale):
    n = max(1, int(32 * scale))
    stats = [rng.standard_normal(64).astype(np.float32) for _ in range(4)]
    stats[1] = np.abs(stats[1]) + 0.5  # the variance
    return [rng.standard_normal((n, 64, 56, 56)).astype(np.float32), *stats]


def _batch_norm(xs):
    x, mean, var, scale, bias = (a.astype(np.float64) for a in xs)
    c = (1, 64, 1, 1)
    return ((x - mean.reshape(c)) / np.sqrt(var.reshape(c) + EPS) * scale.reshape(c)
            + bias.reshape(c)).astype(np.float32)


def _channel(a):
    return tensor_desc(a.reshape(1, -1, 1, 1))


NORMS = {
    "SOFTMAX1 f32 last": Norm(
        lambda rng, scale: [rng.standard_normal((max(1, int(64 * scale)), 12, 512, 512))
                            .astype(np.float32)],
        lambda xs, out: DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC(
            InputTensor=tensor_desc(xs[0]), OutputTensor=tensor_desc(out), Axes=[3]),
        lambda t, ts: t.softmax(ts[0], dim=-1),
        ("Softmax", {"axis": -1}),
        lambda xs: None, 1e-6),
    "MVN2 LayerNorm f32": _mvn2(np.float32),
    "MVN2 LayerNorm f16": _mvn2(np.float16),
    "BATCH_NORMALIZATION f32": Norm(
        _batch_norm_inputs,
        lambda xs, out: DML_BATCH_NORMALIZATION_OPERATOR_DESC(
            InputTensor=tensor_desc(xs[0]), MeanTensor=_channel(xs[1]),
            VarianceTensor=_channel(xs[2]), ScaleTensor=_channel(xs[3]),
            BiasTensor=_channel(xs[4]), OutputTensor=tensor_desc(out), Spatial=True,
            Epsilon=EPS),
        lambda t, ts: t.nn.functional.batch_norm(ts[0], ts[1], ts[2], ts[3], ts[4], False, 0.0,
                                                 EPS),
        ("BatchNormalization", {"epsilon": EPS}),
        _batch_norm, 1e-4),
}
NORM_NAMES = list(NORMS)


@pytest.fixture(scope="module")
def norm_data(scale):
    rng = np.random.default_rng(1)
    return {name: w.inputs(rng, scale) for name, w in NORMS.items()}


def _norm_check(w: Norm, got: np.ndarray, xs) -> None:
    want = w.expected(xs)
    if want is not None:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=w.tolerance, atol=w.tolerance)


@pytest.mark.parametrize("name", NORM_NAMES)
def test_emulator(benchmark, norm_data, name):
    w, xs = NORMS[name], norm_data[name]
    out = np.empty_like(xs[0])
    run = Prepared(DML_OPERATOR_DESC(Desc=w.desc(xs, out)), xs, [out], level="6_4")
    benchmark.group = f"reduction {name}"
    benchmark.extra_info["bytes_moved"] = sum(x.nbytes for x in xs) + out.nbytes
    benchmark(run)
    _norm_check(w, out, xs)


@pytest.mark.parametrize("name", NORM_NAMES)
def test_torch(benchmark, torch, norm_data, name):
    w, xs = NORMS[name], norm_data[name]
    ts = [torch.from_numpy(x) for x in xs]
    out = torch.from_numpy(np.empty_like(xs[0]))
    benchmark.group = f"reduction {name}"
    benchmark(lambda: out.copy_(w.torch_fn(torch, ts)))


@pytest.mark.parametrize("name", NORM_NAMES)
def test_onnxruntime(benchmark, ort, norm_data, name):
    w, xs = NORMS[name], norm_data[name]
    h = ort.onnx.helper
    op, attrs = w.onnx
    names = [f"x{i}" for i in range(len(xs))]
    feeds = dict(zip(names, xs))
    if op == "LayerNormalization":
        feeds = {"x0": xs[0], "x1": xs[1][0], "x2": xs[2][0]}
    node = h.make_node(op, names, ["y"], **attrs)
    graph = h.make_graph(
        [node], "bench",
        [h.make_tensor_value_info(n, ONNX_TYPES[a.dtype], a.shape) for n, a in feeds.items()],
        [h.make_tensor_value_info("y", ONNX_TYPES[xs[0].dtype], xs[0].shape)])
    sess = ort.session_from_model(h.make_model(graph, opset_imports=[h.make_opsetid("", 18)]))
    benchmark.group = f"reduction {name}"
    benchmark(sess.run, None, feeds)
