"""The element-wise family (issue 14), side by side with NumPy (``out=``) and PyTorch (``out=``).

Workloads: ADD float32 16M elements; ADD [4096, 4096] + [1, 4096] and + [4096, 1] (broadcast,
zero strides); ADD1 with a fused RELU, float32 16M (peers: add then an in-place relu); MULTIPLY
float16 16M.

    NUMBA_NUM_THREADS=2 python -m pytest bench/test_bench_elementwise.py -p no:cacheprovider -q \\
        --benchmark-max-time=0.5 --benchmark-warmup=on --benchmark-columns=min,median,rounds
"""

from __future__ import annotations

import numpy as np
import pytest

from descriptors import (
    DML_ACTIVATION_RELU_OPERATOR_DESC,
    DML_ELEMENT_WISE_ADD1_OPERATOR_DESC,
    DML_ELEMENT_WISE_ADD_OPERATOR_DESC,
    DML_ELEMENT_WISE_MULTIPLY_OPERATOR_DESC,
    DML_OPERATOR_DESC,
    DML_TENSOR_DATA_TYPE_FLOAT32,
    tensor_desc,
)

from .harness import Prepared

N = 1 << 24
SIDE = 4096
# name: (A shape, B shape, dtype)
WORKLOADS = {
    "add f32 16M": ((N,), (N,), np.float32),
    "add row broadcast": ((SIDE, SIDE), (1, SIDE), np.float32),
    "add column broadcast": ((SIDE, SIDE), (SIDE, 1), np.float32),
    "add1 relu f32 16M": ((N,), (N,), np.float32),
    "multiply f16 16M": ((N,), (N,), np.float16),
}


def _scaled(shape, scale):
    return tuple(max(1, int(s * scale)) if s > 1 else 1 for s in shape)


@pytest.fixture(scope="module")
def data(scale):
    rng = np.random.default_rng(0)
    out = {}
    for name, (a_shape, b_shape, dtype) in WORKLOADS.items():
        a = rng.standard_normal(_scaled(a_shape, scale)).astype(dtype)
        b_full = _scaled(b_shape, scale)
        b = rng.standard_normal(b_full).astype(dtype)
        out[name] = (a, b)
    return out


def emulator_case(name, a, b):
    out = np.empty_like(a)
    t = tensor_desc(a)
    strides = [0 if nb == 1 and na > 1 else None for na, nb in zip(a.shape, b.shape)]
    if any(s == 0 for s in strides):  # broadcast through zero strides
        packed = [int(np.prod(b.shape[d + 1:])) for d in range(b.ndim)]
        st = [0 if s == 0 else p for s, p in zip(strides, packed)]
        tb = tensor_desc(a.shape, DML_TENSOR_DATA_TYPE_FLOAT32, strides=st)
    else:
        tb = tensor_desc(b)
    if name.startswith("add1"):
        desc = DML_ELEMENT_WISE_ADD1_OPERATOR_DESC(t, tb, t, DML_ACTIVATION_RELU_OPERATOR_DESC())
    elif name.startswith("multiply"):
        desc = DML_ELEMENT_WISE_MULTIPLY_OPERATOR_DESC(t, tb, t)
    else:
        desc = DML_ELEMENT_WISE_ADD_OPERATOR_DESC(t, tb, t)
    return Prepared(DML_OPERATOR_DESC(Desc=desc), [a, b], [out], level="6_4"), out


def expected(name, a, b):
    y = a * b if name.startswith("multiply") else a + b
    return np.maximum(y, 0) if name.startswith("add1") else y


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_emulator(benchmark, data, name):
    a, b = data[name]
    run, out = emulator_case(name, a, b)
    benchmark.group = f"elementwise {name}"
    benchmark.extra_info["bytes_moved"] = 3 * a.nbytes
    benchmark(run)
    assert np.array_equal(out, expected(name, a, b))


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_numpy(benchmark, data, name):
    a, b = data[name]
    out = np.empty_like(a)
    benchmark.group = f"elementwise {name}"
    if name.startswith("add1"):
        def fn():
            np.add(a, b, out=out)
            np.maximum(out, 0, out=out)
        benchmark(fn)
    else:
        benchmark(np.multiply if name.startswith("multiply") else np.add, a, b, out=out)


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_torch(benchmark, torch, data, name):
    a, b = (torch.from_numpy(x) for x in data[name])
    out = torch.empty_like(a)
    benchmark.group = f"elementwise {name}"
    if name.startswith("add1"):
        def fn():
            torch.add(a, b, out=out)
            torch.relu_(out)
        benchmark(fn)
    else:
        benchmark(torch.mul if name.startswith("multiply") else torch.add, a, b, out=out)
