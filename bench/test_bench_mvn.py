"""MVN1 with Scale/Bias and a fused RELU (issue 4), and plain LayerNorm (issue 12), side by side
with PyTorch and ONNX Runtime, FLOAT32 and FLOAT16.

Workloads: [32, 64, 56, 56] axes {2, 3} (instance norm) and axes {1, 2, 3} (group norm with one
group), per-channel Scale/Bias [1, 64, 1, 1]; [4096, 4096] axes {1} with Scale/Bias [1, 4096],
varying along the normalized axis as a fused LayerNorm has them, with RELU ("axes1") and without
("axes1 layernorm"). Peers: F.instance_norm / F.group_norm(1) / F.layer_norm, followed by an
in-place relu where the row has one; ONNX Runtime InstanceNormalization, MeanVarianceNormalization
(+ Mul, Add) and LayerNormalization, followed by Relu where the row has one.

    python -m pytest bench/test_bench_mvn.py --benchmark-group-by=group \
        --benchmark-columns=min,median,mean,rounds --benchmark-sort=mean --benchmark-warmup=on
"""

from __future__ import annotations

import numpy as np
import pytest

from descriptors import (
    DML_ACTIVATION_RELU_OPERATOR_DESC,
    DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC,
    DML_OPERATOR_DESC,
    tensor_desc,
)

from .harness import Prepared

WORKLOADS = {
    # name: (input sizes, axes, Scale/Bias sizes, fused RELU)
    "32x64x56x56 axes23": ((32, 64, 56, 56), (2, 3), (1, 64, 1, 1), True),
    "32x64x56x56 axes123": ((32, 64, 56, 56), (1, 2, 3), (1, 64, 1, 1), True),
    "4096x4096 axes1": ((4096, 4096), (1,), (1, 4096), True),
    "4096x4096 axes1 layernorm": ((4096, 4096), (1,), (1, 4096), False),
}
DTYPES = {"float32": np.float32, "float16": np.float16}


def case(name, dtype, scale_factor):
    shape, axes, s_shape, relu = WORKLOADS[name]
    shape = (max(1, int(shape[0] * scale_factor)), *shape[1:])
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    scale = rng.standard_normal(s_shape).astype(dtype)
    bias = rng.standard_normal(s_shape).astype(dtype)
    return x, scale, bias, axes, relu


@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("name", list(WORKLOADS))
def test_emulator(benchmark, scale, name, dt):
    x, s, b, axes, relu = case(name, DTYPES[dt], scale)
    y = np.empty_like(x)
    op = DML_OPERATOR_DESC(Desc=DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC(
        InputTensor=tensor_desc(x), ScaleTensor=tensor_desc(s), BiasTensor=tensor_desc(b),
        OutputTensor=tensor_desc(y), Axes=list(axes), NormalizeVariance=True, Epsilon=1e-5,
        FusedActivation=DML_ACTIVATION_RELU_OPERATOR_DESC() if relu else None))
    run = Prepared(op, [x, s, b], [y])
    benchmark.group = f"mvn {name} {dt}"
    benchmark.extra_info["GB/s at median"] = "see docs/benchmarks.md"
    benchmark(run)


@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("name", list(WORKLOADS))
def test_torch(benchmark, torch, scale, name, dt):
    x, s, b, axes, relu = case(name, DTYPES[dt], scale)
    F = torch.nn.functional
    tx, ts, tb = (torch.from_numpy(a) for a in (x, s, b))
    if axes == (2, 3):
        def norm():
            return F.instance_norm(tx, weight=ts.reshape(-1), bias=tb.reshape(-1), eps=1e-5)
    elif axes == (1, 2, 3):
        def norm():
            return F.group_norm(tx, 1, ts.reshape(-1), tb.reshape(-1), eps=1e-5)
    else:
        def norm():
            return F.layer_norm(tx, (x.shape[1],), ts.reshape(-1), tb.reshape(-1), eps=1e-5)

    def fn():
        return torch.relu_(norm()) if relu else norm()
    try:
        fn()
    except RuntimeError as e:  # e.g. a half kernel missing on the CPU
        pytest.skip(f"torch: {e}")
    benchmark.group = f"mvn {name} {dt}"
    benchmark(fn)


@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("name", list(WORKLOADS))
def test_onnxruntime(benchmark, ort, scale, name, dt):
    x, s, b, axes, relu = case(name, DTYPES[dt], scale)
    h, tp = ort.onnx.helper, ort.onnx.TensorProto
    et = tp.FLOAT if dt == "float32" else tp.FLOAT16
    nodes, inits = [], []
    if axes == (2, 3):
        inits = [h.make_tensor("S", et, [x.shape[1]], s.reshape(-1).tobytes(), raw=True),
                 h.make_tensor("B", et, [x.shape[1]], b.reshape(-1).tobytes(), raw=True)]
        nodes = [h.make_node("InstanceNormalization", ["X", "S", "B"], ["N"], epsilon=1e-5)]
    elif axes == (1, 2, 3):
        inits = [h.make_tensor("S", et, list(s.shape), s.tobytes(), raw=True),
                 h.make_tensor("B", et, list(b.shape), b.tobytes(), raw=True)]
        nodes = [h.make_node("MeanVarianceNormalization", ["X"], ["M"], axes=[1, 2, 3]),
                 h.make_node("Mul", ["M", "S"], ["MS"]), h.make_node("Add", ["MS", "B"], ["N"])]
    else:
        inits = [h.make_tensor("S", et, [x.shape[1]], s.reshape(-1).tobytes(), raw=True),
                 h.make_tensor("B", et, [x.shape[1]], b.reshape(-1).tobytes(), raw=True)]
        nodes = [h.make_node("LayerNormalization", ["X", "S", "B"], ["N"], axis=-1, epsilon=1e-5)]
    if relu:
        nodes.append(h.make_node("Relu", ["N"], ["Y"]))
    else:
        nodes[-1].output[0] = "Y"
    graph = h.make_graph(nodes, "mvn", [h.make_tensor_value_info("X", et, x.shape)],
                         [h.make_tensor_value_info("Y", et, None)], inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    try:
        sess = ort.session_from_model(model)
        sess.run(None, {"X": x})
    except Exception as e:
        pytest.skip(f"onnxruntime: {str(e)[:120]}")
    benchmark.group = f"mvn {name} {dt}"
    benchmark(sess.run, None, {"X": x})
