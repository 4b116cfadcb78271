"""TOP_K1 on float32 (issue 3), side by side with ONNX Runtime's TopK, torch.topk and NumPy.

Workloads: [64, 32768] axis 1 K=16; [4096, 1024] axis 1 K=100 in both directions;
[1, 1, 1, 2^24] axis 3 K=8; [32768, 64] axis 0 K=16.

    python -m pytest bench/test_bench_topk.py --benchmark-group-by=group \
        --benchmark-columns=min,median,mean,rounds --benchmark-sort=mean --benchmark-warmup=on
"""

from __future__ import annotations

import numpy as np
import pytest

from descriptors import (
    DML_AXIS_DIRECTION_DECREASING,
    DML_AXIS_DIRECTION_INCREASING,
    DML_OPERATOR_DESC,
    DML_TENSOR_DATA_TYPE_UINT32,
    DML_TOP_K1_OPERATOR_DESC,
    tensor_desc,
)

from .harness import Prepared

WORKLOADS = {
    # name: (shape, axis, K, largest)
    "64x32768 axis1 k16": ((64, 32768), 1, 16, True),
    "4096x1024 axis1 k100 dec": ((4096, 1024), 1, 100, True),
    "4096x1024 axis1 k100 inc": ((4096, 1024), 1, 100, False),
    "1x1x1x2^24 axis3 k8": ((1, 1, 1, 1 << 24), 3, 8, True),
    "32768x64 axis0 k16": ((32768, 64), 0, 16, True),
}


def scaled(name, scale):
    shape, axis, k, largest = WORKLOADS[name]
    shape = tuple(max(k, int(s * scale)) if i == axis else s for i, s in enumerate(shape))
    return shape, axis, k, largest


@pytest.fixture(scope="module")
def inputs(scale):
    rng = np.random.default_rng(0)
    return {name: rng.standard_normal(scaled(name, scale)[0], dtype=np.float32)
            for name in WORKLOADS}


def expected(x, axis, k, largest):
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis=axis), idx


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_emulator(benchmark, inputs, scale, name):
    x = inputs[name]
    _, axis, k, largest = scaled(name, scale)
    o = [k if d == axis else s for d, s in enumerate(x.shape)]
    values, indices = np.empty(o, np.float32), np.empty(o, np.uint32)
    op = DML_OPERATOR_DESC(Desc=DML_TOP_K1_OPERATOR_DESC(
        InputTensor=tensor_desc(x), OutputValueTensor=tensor_desc(values),
        OutputIndexTensor=tensor_desc(o, DML_TENSOR_DATA_TYPE_UINT32), Axis=axis, K=k,
        AxisDirection=DML_AXIS_DIRECTION_DECREASING if largest else DML_AXIS_DIRECTION_INCREASING))
    run = Prepared(op, [x], [values, indices])
    benchmark.group = f"top_k {name}"
    benchmark(run)
    ev, ei = expected(x, axis, k, largest)
    np.testing.assert_array_equal(indices, ei)
    np.testing.assert_array_equal(values, ev)


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_onnxruntime(benchmark, ort, inputs, scale, name):
    x = inputs[name]
    _, axis, k, largest = scaled(name, scale)
    h, tp = ort.onnx.helper, ort.onnx.TensorProto
    node = h.make_node("TopK", ["X", "K"], ["V", "I"], axis=axis, largest=int(largest), sorted=1)
    sess = ort(node, [h.make_tensor_value_info("X", tp.FLOAT, x.shape)],
               [h.make_tensor_value_info("V", tp.FLOAT, None),
                h.make_tensor_value_info("I", tp.INT64, None)],
               [h.make_tensor("K", tp.INT64, [1], [k])])
    benchmark.group = f"top_k {name}"
    v, _ = benchmark(sess.run, None, {"X": x})
    np.testing.assert_array_equal(v, expected(x, axis, k, largest)[0])


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_torch(benchmark, torch, inputs, scale, name):
    x = torch.from_numpy(inputs[name])
    _, axis, k, largest = scaled(name, scale)
    o = [k if d == axis else s for d, s in enumerate(x.shape)]
    out = (torch.empty(o), torch.empty(o, dtype=torch.int64))
    benchmark.group = f"top_k {name}"
    benchmark(torch.topk, x, k, dim=axis, largest=largest, sorted=True, out=out)


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_numpy(benchmark, inputs, scale, name):
    x = inputs[name]
    _, axis, k, largest = scaled(name, scale)

    def topk():
        y = -x if largest else x
        part = np.argpartition(y, k - 1, axis=axis)
        idx = np.take(part, np.arange(k), axis=axis)
        order = np.argsort(np.take_along_axis(y, idx, axis=axis), axis=axis, kind="stable")
        return np.take_along_axis(idx, order, axis=axis)

    benchmark.group = f"top_k {name}"
    benchmark.pedantic(topk, rounds=5, warmup_rounds=1)
