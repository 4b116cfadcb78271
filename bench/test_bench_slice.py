"""SLICE1 on float32 [32, 64, 128, 128] (issue 2), side by side with NumPy and PyTorch.

Workloads: window strides {1,1,-2,2} (reverse + subsample); the contiguous sub-block
[:, 16:48, 32:96, :]; innermost reverse {1,1,1,-1}. Each peer writes a preallocated output where
it can (NumPy's copyto); PyTorch, which has no negative strides, uses torch.flip.

    python -m pytest bench/test_bench_slice.py --benchmark-group-by=group \
        --benchmark-columns=min,median,mean,rounds
"""

from __future__ import annotations

import numpy as np
import pytest

from descriptors import DML_OPERATOR_DESC, DML_SLICE1_OPERATOR_DESC, tensor_desc

from .harness import Prepared

WORKLOADS = {
    # name: (window offsets, window sizes, window strides) over [32, 64, 128, W]
    "reverse_subsample": lambda w: ([0, 0, 0, 0], [32, 64, 128, w], [1, 1, -2, 2]),
    "sub_block": lambda w: ([0, 16, 32, 0], [32, 32, 64, w], [1, 1, 1, 1]),
    "inner_reverse": lambda w: ([0, 0, 0, 0], [32, 64, 128, w], [1, 1, 1, -1]),
}


def numpy_view(x, name):
    if name == "reverse_subsample":
        return x[:, :, ::-2, ::2]
    if name == "sub_block":
        return x[:, 16:48, 32:96, :]
    return x[:, :, :, ::-1]


def torch_op(torch, x, name):
    if name == "reverse_subsample":
        return lambda: torch.flip(x[:, :, 1::2, ::2], [2])
    if name == "sub_block":
        out = torch.empty((32, 32, 64, x.shape[3]), dtype=x.dtype)
        return lambda: out.copy_(x[:, 16:48, 32:96, :])
    return lambda: torch.flip(x, [3])


@pytest.fixture(scope="module")
def data(scale):
    w = max(2, int(128 * scale))
    return np.random.default_rng(0).standard_normal((32, 64, 128, w), dtype=np.float32)


def emulator_case(x, name):
    offsets, sizes, strides = WORKLOADS[name](x.shape[3])
    out_shape = [1 + (s - 1) // abs(t) for s, t in zip(sizes, strides)]
    out = np.empty(out_shape, np.float32)
    op = DML_OPERATOR_DESC(Desc=DML_SLICE1_OPERATOR_DESC(
        InputTensor=tensor_desc(x), OutputTensor=tensor_desc(out), InputWindowOffsets=offsets,
        InputWindowSizes=sizes, InputWindowStrides=strides))
    return Prepared(op, [x], [out]), out


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_emulator(benchmark, data, name):
    run, out = emulator_case(data, name)
    benchmark.group = f"slice1 {name}"
    benchmark.extra_info["bytes_moved"] = 2 * out.nbytes
    benchmark(run)
    np.testing.assert_array_equal(out, numpy_view(data, name))


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_numpy(benchmark, data, name):
    view = numpy_view(data, name)
    out = np.empty(view.shape, np.float32)
    benchmark.group = f"slice1 {name}"
    benchmark(np.copyto, out, view)


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_torch(benchmark, torch, data, name):
    x = torch.from_numpy(data)
    fn = torch_op(torch, x, name)
    benchmark.group = f"slice1 {name}"
    result = benchmark(fn)
    np.testing.assert_array_equal(result.numpy(), numpy_view(data, name))
