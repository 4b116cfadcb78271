"""The element-wise family (issue 14), side by side with NumPy (``out=``), PyTorch (``out=``) and
ONNX Runtime (one-node models), JIT excluded.

Workloads (issue 14): ADD float32 16M elements; ADD [4096, 4096] + [1, 4096] and + [4096, 1]
(broadcast, zero strides); ADD1 with a fused RELU, float32 16M (peers: add, then an in-place
relu; ONNX Runtime: Add then Relu, which it fuses or not as it likes); MULTIPLY float16 16M; CAST
float32 → float16 and int32 → float32 16M; EXP, TANH, ERF float32 16M; LOGICAL_GREATER_THAN
float32 → uint8 16M; IDENTITY with transposing strides over [64, 64, 64, 64] (peers: a copy of a
transposed view).

    NUMBA_NUM_THREADS=2 python -m pytest bench/test_bench_elementwise.py -p no:cacheprovider -q \\
        --benchmark-max-time=0.5 --benchmark-warmup=on --benchmark-columns=min,median,rounds
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from descriptors import *

from .harness import Prepared

N = 1 << 24
SIDE = 4096
F32 = DML_TENSOR_DATA_TYPE_FLOAT32
PERM = (0, 2, 3, 1)  # the transposing IDENTITY: out[a, c, d, b] = in[a, b, c, d]


@dataclass(frozen=True)
class Workload:
    inputs: Callable[[np.random.Generator, float], list[np.ndarray]]
    out_dtype: type
    desc: Callable[..., object]  # (inputs, output) -> the operator's struct
    numpy: Callable[..., object]  # (inputs, out) -> None
    torch_fn: Callable[..., object] | None  # (torch, inputs, out) -> None
    onnx: tuple[str, ...]  # the ONNX op types of the peer graph (chained)
    expected: Callable[..., np.ndarray]
    out_shape: Callable[[list[np.ndarray]], tuple[int, ...]] = lambda xs: xs[0].shape
    onnx_attrs: dict | None = None


def _n(scale: float) -> int:
    return max(1024, int(N * scale))


def _side(scale: float) -> int:
    return max(64, int(SIDE * math.sqrt(scale)))


def unary(dtype=np.float32, low=-4.0, high=4.0):
    return lambda rng, s: [rng.uniform(low, high, _n(s)).astype(dtype)]


def binary(dtype=np.float32):
    return lambda rng, s: [rng.standard_normal(_n(s)).astype(dtype),
                           rng.standard_normal(_n(s)).astype(dtype)]


def broadcast(shape_b):
    def make(rng, s):
        side = _side(s)
        b = (1, side) if shape_b == "row" else (side, 1)
        return [rng.standard_normal((side, side)).astype(np.float32),
                rng.standard_normal(b).astype(np.float32)]
    return make


def broadcast_desc(xs, out):
    a, b = xs
    strides = [0 if nb == 1 else int(np.prod(b.shape[d + 1:])) for d, nb in enumerate(b.shape)]
    tb = tensor_desc(a.shape, F32, strides=strides)
    return DML_ELEMENT_WISE_ADD_OPERATOR_DESC(tensor_desc(a), tb, tensor_desc(out))


def transpose_inputs(rng, s):
    side = max(8, int(64 * s ** 0.25))
    return [rng.standard_normal((side,) * 4).astype(np.float32)]


def transpose_desc(xs, out):
    """IDENTITY reading the input through permuted strides: the output is the transpose."""
    (x,) = xs
    packed = [int(np.prod(x.shape[d + 1:])) for d in range(4)]
    sizes = [x.shape[p] for p in PERM]
    return DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC(
        tensor_desc(sizes, F32, strides=[packed[p] for p in PERM]), tensor_desc(out))


def _unary_desc(cls):
    return lambda xs, out: cls(tensor_desc(xs[0]), tensor_desc(out))


def _binary_desc(cls):
    return lambda xs, out: cls(tensor_desc(xs[0]), tensor_desc(xs[1]), tensor_desc(out))


def _erf(xs):
    return np.vectorize(math.erf, otypes=[np.float64])(xs[0].astype(np.float64)).astype(
        np.float32)


WORKLOADS: dict[str, Workload] = {
    "add f32 16M": Workload(
        binary(), np.float32, _binary_desc(DML_ELEMENT_WISE_ADD_OPERATOR_DESC),
        lambda xs, o: np.add(*xs, out=o), lambda t, xs, o: t.add(*xs, out=o), ("Add",),
        lambda xs: xs[0] + xs[1]),
    "add row broadcast": Workload(
        broadcast("row"), np.float32, broadcast_desc,
        lambda xs, o: np.add(*xs, out=o), lambda t, xs, o: t.add(*xs, out=o), ("Add",),
        lambda xs: xs[0] + xs[1]),
    "add column broadcast": Workload(
        broadcast("column"), np.float32, broadcast_desc,
        lambda xs, o: np.add(*xs, out=o), lambda t, xs, o: t.add(*xs, out=o), ("Add",),
        lambda xs: xs[0] + xs[1]),
    "add1 relu f32 16M": Workload(
        binary(), np.float32,
        lambda xs, o: DML_ELEMENT_WISE_ADD1_OPERATOR_DESC(
            tensor_desc(xs[0]), tensor_desc(xs[1]), tensor_desc(o),
            DML_ACTIVATION_RELU_OPERATOR_DESC()),
        lambda xs, o: (np.add(*xs, out=o), np.maximum(o, 0, out=o)),
        lambda t, xs, o: (t.add(*xs, out=o), t.relu_(o)), ("Add", "Relu"),
        lambda xs: np.maximum(xs[0] + xs[1], 0)),
    "multiply f16 16M": Workload(
        binary(np.float16), np.float16, _binary_desc(DML_ELEMENT_WISE_MULTIPLY_OPERATOR_DESC),
        lambda xs, o: np.multiply(*xs, out=o), lambda t, xs, o: t.mul(*xs, out=o), ("Mul",),
        lambda xs: xs[0] * xs[1]),
    "cast f32 to f16 16M": Workload(
        unary(), np.float16, _unary_desc(DML_CAST_OPERATOR_DESC),
        lambda xs, o: np.copyto(o, xs[0], casting="unsafe"), lambda t, xs, o: o.copy_(xs[0]),
        ("Cast",), lambda xs: xs[0].astype(np.float16), onnx_attrs={"to": 10}),
    "cast i32 to f32 16M": Workload(
        lambda rng, s: [rng.integers(-2**31, 2**31, _n(s), dtype=np.int32)], np.float32,
        _unary_desc(DML_CAST_OPERATOR_DESC),
        lambda xs, o: np.copyto(o, xs[0], casting="unsafe"), lambda t, xs, o: o.copy_(xs[0]),
        ("Cast",), lambda xs: xs[0].astype(np.float32), onnx_attrs={"to": 1}),
    "exp f32 16M": Workload(
        unary(), np.float32, _unary_desc(DML_ELEMENT_WISE_EXP_OPERATOR_DESC),
        lambda xs, o: np.exp(xs[0], out=o), lambda t, xs, o: t.exp(xs[0], out=o), ("Exp",),
        lambda xs: np.exp(xs[0].astype(np.float64)).astype(np.float32)),
    "tanh f32 16M": Workload(
        unary(), np.float32, _unary_desc(DML_ELEMENT_WISE_TANH_OPERATOR_DESC),
        lambda xs, o: np.tanh(xs[0], out=o), lambda t, xs, o: t.tanh(xs[0], out=o), ("Tanh",),
        lambda xs: np.tanh(xs[0].astype(np.float64)).astype(np.float32)),
    "erf f32 16M": Workload(
        unary(), np.float32, _unary_desc(DML_ELEMENT_WISE_ERF_OPERATOR_DESC),
        None, lambda t, xs, o: t.erf(xs[0], out=o), ("Erf",), _erf),
    "greater f32 to u8 16M": Workload(
        binary(), np.uint8, _binary_desc(DML_ELEMENT_WISE_LOGICAL_GREATER_THAN_OPERATOR_DESC),
        lambda xs, o: np.greater(*xs, out=o.view(bool)),
        lambda t, xs, o: t.gt(*xs, out=o), ("Greater",),
        lambda xs: (xs[0] > xs[1]).astype(np.uint8)),
    "identity transpose [64,64,64,64]": Workload(
        transpose_inputs, np.float32, transpose_desc,
        lambda xs, o: np.copyto(o, xs[0].transpose(PERM)),
        lambda t, xs, o: o.copy_(xs[0].permute(*PERM)), ("Transpose",),
        lambda xs: xs[0].transpose(PERM),
        out_shape=lambda xs: tuple(xs[0].shape[p] for p in PERM), onnx_attrs={"perm": PERM}),
}
NAMES = list(WORKLOADS)


@pytest.fixture(scope="module")
def data(scale):
    rng = np.random.default_rng(0)
    return {name: w.inputs(rng, scale) for name, w in WORKLOADS.items()}


def _out(w: Workload, xs) -> np.ndarray:
    return np.empty(w.out_shape(xs), w.out_dtype)


def _moved(xs, out) -> int:
    return sum(x.nbytes for x in xs if x.size == out.size) + out.nbytes


@pytest.mark.parametrize("name", NAMES)
def test_emulator(benchmark, data, name):
    w, xs = WORKLOADS[name], data[name]
    out = _out(w, xs)
    run = Prepared(DML_OPERATOR_DESC(Desc=w.desc(xs, out)), xs, [out], level="6_4")
    benchmark.group = f"elementwise {name}"
    benchmark.extra_info["bytes_moved"] = _moved(xs, out)
    benchmark(run)
    want = w.expected(xs)
    if name.startswith(("exp", "tanh", "erf")):  # float64 math rounded once: within 1 ULP
        np.testing.assert_array_max_ulp(out, want, 1)
    else:
        assert np.array_equal(out, want)


@pytest.mark.parametrize("name", NAMES)
def test_numpy(benchmark, data, name):
    w, xs = WORKLOADS[name], data[name]
    if w.numpy is None:
        pytest.skip("NumPy has no erf")
    out = _out(w, xs)
    benchmark.group = f"elementwise {name}"
    benchmark(w.numpy, xs, out)


@pytest.mark.parametrize("name", NAMES)
def test_torch(benchmark, torch, data, name):
    w, xs = WORKLOADS[name], data[name]
    ts = [torch.from_numpy(x) for x in xs]
    out = torch.from_numpy(_out(w, xs))
    benchmark.group = f"elementwise {name}"
    benchmark(w.torch_fn, torch, ts, out)


ONNX_TYPES = {np.float32: 1, np.uint8: 2, np.int32: 6, np.float16: 10, np.bool_: 9}


@pytest.mark.parametrize("name", NAMES)
def test_onnxruntime(benchmark, ort, data, name):
    w, xs = WORKLOADS[name], data[name]
    h = ort.onnx.helper
    names = [f"x{i}" for i in range(len(xs))]
    nodes, prev = [], names
    for k, op in enumerate(w.onnx):
        out_name = f"t{k}"
        nodes.append(h.make_node(op, prev, [out_name], **(w.onnx_attrs or {})))
        prev = [out_name]
    out_type = np.bool_ if name.startswith("greater") else w.out_dtype
    graph = h.make_graph(
        nodes, "bench",
        [h.make_tensor_value_info(n, ONNX_TYPES[x.dtype.type], x.shape) for n, x in zip(names, xs)],
        [h.make_tensor_value_info(prev[0], ONNX_TYPES[out_type], w.out_shape(xs))])
    sess = ort.session_from_model(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]))
    feeds = dict(zip(names, xs))
    benchmark.group = f"elementwise {name}"
    benchmark(sess.run, None, feeds)
