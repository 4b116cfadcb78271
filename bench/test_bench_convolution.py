"""CONVOLUTION (issue 17) side by side with PyTorch (conv2d / conv_transpose2d) and ONNX Runtime
(a one-node Conv / ConvTranspose), JIT excluded, float32 NCHW, batch 8.

Workloads (issue 17): ResNet-50 layers 3x3 64->64 on 56x56 (pad 1), 1x1 256->64 on 56x56,
7x7 stride 2 3->64 on 224x224 (pad 3), 3x3 depthwise 512 on 14x14 (pad 1), and the backward
(transposed) 3x3 64->64 on 56x56 (pad 1). ``--bench-scale`` scales the batch. GFLOP/s are in
each benchmark's extra_info (2 * output elements * input channels per group * taps).

    NUMBA_NUM_THREADS=2 python -m pytest bench/test_bench_convolution.py -p no:cacheprovider -q \\
        --benchmark-max-time=0.5 --benchmark-warmup=on --benchmark-columns=min,median,rounds
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from descriptors import *

from .harness import Prepared


@dataclass(frozen=True)
class Conv:
    c_in: int
    c_out: int
    size: int
    kernel: int
    stride: int
    pad: int
    groups: int = 1
    backward: bool = False

    def out_size(self) -> int:
        if self.backward:
            return (self.size - 1) * self.stride + self.kernel - 2 * self.pad
        return (self.size + 2 * self.pad - self.kernel) // self.stride + 1

    def filter_shape(self) -> tuple[int, ...]:
        if self.backward:
            return (self.c_in, self.c_out // self.groups, self.kernel, self.kernel)
        return (self.c_out, self.c_in // self.groups, self.kernel, self.kernel)


WORKLOADS = {
    "3x3 64->64 56x56": Conv(64, 64, 56, 3, 1, 1),
    "1x1 256->64 56x56": Conv(256, 64, 56, 1, 1, 0),
    "7x7/2 3->64 224x224": Conv(3, 64, 224, 7, 2, 3),
    "3x3 depthwise 512 14x14": Conv(512, 512, 14, 3, 1, 1, groups=512),
    "backward 3x3 64->64 56x56": Conv(64, 64, 56, 3, 1, 1, backward=True),
}
NAMES = list(WORKLOADS)


@pytest.fixture(scope="module")
def data(scale):
    rng = np.random.default_rng(1)
    batch = max(1, int(8 * scale))
    return {name: (rng.standard_normal((batch, w.c_in, w.size, w.size)).astype(np.float32),
                   rng.standard_normal(w.filter_shape()).astype(np.float32) * 0.1)
            for name, w in WORKLOADS.items()}


def _out(w: Conv, x: np.ndarray) -> np.ndarray:
    return np.empty((x.shape[0], w.c_out, w.out_size(), w.out_size()), np.float32)


def _group(benchmark, name, w: Conv, x: np.ndarray):
    benchmark.group = f"convolution {name}"
    per = (w.c_in // w.groups) * w.kernel ** 2
    if w.backward:
        benchmark.extra_info["gflop"] = 2.0 * x.size * w.c_out // w.groups * w.kernel ** 2 / 1e9
    else:
        benchmark.extra_info["gflop"] = 2.0 * _out(w, x).size * per / 1e9


@pytest.mark.parametrize("name", NAMES)
def test_emulator(benchmark, torch, data, name):
    w, (x, f) = WORKLOADS[name], data[name]
    out = _out(w, x)
    op = DML_CONVOLUTION_OPERATOR_DESC(
        InputTensor=tensor_desc(x), FilterTensor=tensor_desc(f), OutputTensor=tensor_desc(out),
        Mode=DML_CONVOLUTION_MODE_CROSS_CORRELATION,
        Direction=DML_CONVOLUTION_DIRECTION_BACKWARD if w.backward else
        DML_CONVOLUTION_DIRECTION_FORWARD, DimensionCount=2, Strides=[w.stride] * 2,
        Dilations=[1, 1], StartPadding=[w.pad] * 2, EndPadding=[w.pad] * 2,
        OutputPadding=[0, 0], GroupCount=w.groups)
    run = Prepared(DML_OPERATOR_DESC(Desc=op), [x, f, None], [out], level="6_4")
    _group(benchmark, name, w, x)
    benchmark(run)
    fn = torch.nn.functional.conv_transpose2d if w.backward else torch.nn.functional.conv2d
    want = fn(torch.from_numpy(x), torch.from_numpy(f), stride=w.stride, padding=w.pad,
              groups=w.groups).numpy()
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", NAMES)
def test_torch(benchmark, torch, data, name):
    w, (x, f) = WORKLOADS[name], data[name]
    tx, tf = torch.from_numpy(x), torch.from_numpy(f)
    fn = torch.nn.functional.conv_transpose2d if w.backward else torch.nn.functional.conv2d
    _group(benchmark, name, w, x)
    with torch.no_grad():
        benchmark(fn, tx, tf, stride=w.stride, padding=w.pad, groups=w.groups)


@pytest.mark.parametrize("name", NAMES)
def test_onnxruntime(benchmark, ort, data, name):
    w, (x, f) = WORKLOADS[name], data[name]
    h = ort.onnx.helper
    node = h.make_node("ConvTranspose" if w.backward else "Conv", ["x", "w"], ["y"],
                       strides=[w.stride] * 2, pads=[w.pad] * 4, group=w.groups)
    sess = ort(node, [h.make_tensor_value_info("x", 1, x.shape),
                      h.make_tensor_value_info("w", 1, f.shape)],
               [h.make_tensor_value_info("y", 1, _out(w, x).shape)])
    _group(benchmark, name, w, x)
    benchmark(sess.run, None, {"x": x, "w": f})
