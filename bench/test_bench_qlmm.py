"""QUANTIZED_LINEAR_MATRIX_MULTIPLY (issue 5), side by side with ONNX Runtime's QLinearMatMul
(B a runtime input), PyTorch's quantized linear (fbgemm) and NumPy float64 (exact).

Workloads, per-tensor scales and zero points: 1024^3 and 2048^3 uint8 x uint8 -> uint8;
[8,12,128,64] x [8,12,64,128] uint8 and int8; 1024^3 int8 x int8 -> int8.

    python -m pytest bench/test_bench_qlmm.py --benchmark-group-by=group \
        --benchmark-columns=min,median,mean,rounds --benchmark-sort=mean --benchmark-warmup=on
"""

from __future__ import annotations

import numpy as np
import pytest

from descriptors import (
    DML_OPERATOR_DESC,
    DML_QUANTIZED_LINEAR_MATRIX_MULTIPLY_OPERATOR_DESC,
    tensor_desc,
)

from .harness import Prepared

WORKLOADS = {
    "1024^3 u8": ((), 1024, 1024, 1024, np.uint8),
    "2048^3 u8": ((), 2048, 2048, 2048, np.uint8),
    "8x12x128x64x128 u8": ((8, 12), 128, 64, 128, np.uint8),
    "8x12x128x64x128 i8": ((8, 12), 128, 64, 128, np.int8),
    "1024^3 i8": ((), 1024, 1024, 1024, np.int8),
}
SCALES = (0.02, 0.03, 0.7)
ZEROS = {np.uint8: (120, 130, 128), np.int8: (-3, 5, 1)}


def case(name, scale):
    batch, m, k, n, dt = WORKLOADS[name]
    if scale < 1 and not batch:
        m, k, n = (max(64, int(v * scale)) for v in (m, k, n))
    info = np.iinfo(dt)
    rng = np.random.default_rng(0)
    a = rng.integers(info.min, int(info.max) + 1, (*batch, m, k)).astype(dt)
    b = rng.integers(info.min, int(info.max) + 1, (*batch, k, n)).astype(dt)
    return a, b, dt


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_emulator(benchmark, scale, name):
    a, b, dt = case(name, scale)
    rank = a.ndim
    one = (1,) * rank
    s = [np.full(one, v, np.float32) for v in SCALES]
    z = [np.full(one, v, dt) for v in ZEROS[dt]]
    out = np.empty((*a.shape[:-1], b.shape[-1]), dt)
    op = DML_OPERATOR_DESC(Desc=DML_QUANTIZED_LINEAR_MATRIX_MULTIPLY_OPERATOR_DESC(
        ATensor=tensor_desc(a), AScaleTensor=tensor_desc(s[0]), AZeroPointTensor=tensor_desc(z[0]),
        BTensor=tensor_desc(b), BScaleTensor=tensor_desc(s[1]), BZeroPointTensor=tensor_desc(z[1]),
        OutputScaleTensor=tensor_desc(s[2]), OutputZeroPointTensor=tensor_desc(z[2]),
        OutputTensor=tensor_desc(out)))
    run = Prepared(op, [a, s[0], z[0], b, s[1], z[1], s[2], z[2]], [out])
    benchmark.group = f"qlmm {name}"
    ops = 2 * a.shape[-2] * a.shape[-1] * b.shape[-1] * int(np.prod(a.shape[:-2]))
    benchmark.extra_info["ops"] = ops
    benchmark(run)


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_onnxruntime(benchmark, ort, scale, name):
    a, b, dt = case(name, scale)
    h, tp = ort.onnx.helper, ort.onnx.TensorProto
    et = tp.UINT8 if dt == np.uint8 else tp.INT8
    za, zb, zo = ZEROS[dt]
    inits = [h.make_tensor("as", tp.FLOAT, [], [SCALES[0]]), h.make_tensor("az", et, [], [za]),
             h.make_tensor("bs", tp.FLOAT, [], [SCALES[1]]), h.make_tensor("bz", et, [], [zb]),
             h.make_tensor("os", tp.FLOAT, [], [SCALES[2]]), h.make_tensor("oz", et, [], [zo])]
    node = h.make_node("QLinearMatMul", ["A", "as", "az", "B", "bs", "bz", "os", "oz"], ["Y"])
    graph = h.make_graph([node], "qlmm", [h.make_tensor_value_info("A", et, a.shape),
                                          h.make_tensor_value_info("B", et, b.shape)],
                         [h.make_tensor_value_info("Y", et, None)], inits)
    sess = ort.session_from_model(h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]))
    benchmark.group = f"qlmm {name}"
    benchmark(sess.run, None, {"A": a, "B": b})


@pytest.mark.parametrize("name", [n for n in WORKLOADS if "u8" in n and "x" not in n.split()[0]])
def test_torch_fbgemm(benchmark, torch, scale, name):
    """quantized::linear takes a prepacked weight (so B is not a runtime input here)."""
    a, b, dt = case(name, scale)
    za, _, zo = ZEROS[dt]
    qa = torch.quantize_per_tensor(torch.from_numpy((a.astype(np.float32) - za) * SCALES[0]),
                                   SCALES[0], za, torch.quint8)
    weight = ((b.astype(np.float32) - 128) * SCALES[1]).T.copy()
    w = torch.quantize_per_tensor(torch.from_numpy(weight), SCALES[1], 0, torch.qint8)
    packed = torch.ops.quantized.linear_prepack(w, None)
    benchmark.group = f"qlmm {name}"
    benchmark(torch.ops.quantized.linear, qa, packed, SCALES[2], zo)


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_numpy_float64(benchmark, scale, name):
    a, b, dt = case(name, scale)
    za, zb, zo = ZEROS[dt]
    info = np.iinfo(dt)

    def run():
        acc = (a.astype(np.float64) - za) @ (b.astype(np.float64) - zb)
        return np.clip(np.rint(acc * SCALES[0] * SCALES[1] / SCALES[2]) + zo, info.min,
                       info.max).astype(dt)

    benchmark.group = f"qlmm {name}"
    benchmark.pedantic(run, rounds=3, warmup_rounds=1)
