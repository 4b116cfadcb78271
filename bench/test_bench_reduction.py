"""The reduction family (issue 15), side by side with NumPy, PyTorch and ONNX Runtime (one-node
models), JIT excluded.

Workloads (issue 15): REDUCE SUM float32 [4096, 4096] over the last axis, over the first, and over
all 16M elements; REDUCE MAX float16 [4096, 4096] over the last axis; ARGMAX float32 [4096, 4096]
over the last axis (INT64 indices); CUMULATIVE_SUMMATION float32 [4096, 4096] along the last axis.
The normalizations are in ``test_bench_normalization.py``. Peers write into preallocated
outputs where their API allows (NumPy ``out=``, PyTorch ``out=``); ONNX Runtime allocates its
outputs. ``--bench-scale`` scales the first dimension.

    NUMBA_NUM_THREADS=2 python -m pytest bench/test_bench_reduction.py -p no:cacheprovider -q \\
        --benchmark-max-time=0.5 --benchmark-warmup=on --benchmark-columns=min,median,rounds
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from descriptors import *

from .harness import Prepared

SUM, MAX = DML_REDUCE_FUNCTION_SUM, DML_REDUCE_FUNCTION_MAX


@dataclass(frozen=True)
class Workload:
    dtype: type
    axes: tuple[int, ...]  # () for the cumulative sum (its axis is the last)
    desc: Callable[..., object]  # (x, out) -> the operator's struct
    numpy: Callable[..., object]  # (x, out) -> None
    torch_fn: Callable[..., object]  # (torch, x, out) -> None
    onnx: tuple[str, dict, list[np.ndarray]]  # op type, attributes, constant inputs
    expected: Callable[[np.ndarray], np.ndarray]
    out_dtype: type | None = None  # None: the input's
    tolerance: float = 0.0  # 0: exact


def _shape(scale: float) -> tuple[int, int]:
    return (max(1, int(4096 * scale)), 4096)


def _kept(x: np.ndarray, axes) -> tuple[int, ...]:
    return tuple(1 if d in axes else n for d, n in enumerate(x.shape))


def _reduce(fn, axes):
    def make(x, out):
        return DML_REDUCE_OPERATOR_DESC(Function=fn, InputTensor=tensor_desc(x),
                                        OutputTensor=tensor_desc(out), Axes=axes)
    return make


def _sum_workload(axes, flat=False) -> Workload:
    dims = tuple(axes)
    return Workload(
        np.float32, dims, _reduce(SUM, list(axes)),
        lambda x, out: np.sum(x, axis=dims, keepdims=True, out=out),
        lambda t, x, out: t.sum(x, dim=dims, keepdim=True, out=out),
        ("ReduceSum", {"keepdims": 1}, [np.array(dims, np.int64)]),
        lambda x: np.sum(x.astype(np.float64), axis=dims, keepdims=True).astype(np.float32),
        tolerance=1e-5)


WORKLOADS = {
    "REDUCE SUM f32 last": _sum_workload((1,)),
    "REDUCE SUM f32 first": _sum_workload((0,)),
    "REDUCE SUM f32 all": _sum_workload((0, 1)),
    "REDUCE MAX f16 last": Workload(
        np.float16, (1,), _reduce(MAX, [1]),
        lambda x, out: np.max(x, axis=1, keepdims=True, out=out),
        lambda t, x, out: t.amax(x, dim=1, keepdim=True, out=out),
        ("ReduceMax", {"keepdims": 1}, [np.array([1], np.int64)]),
        lambda x: np.max(x, axis=1, keepdims=True)),
    "ARGMAX f32 last": Workload(
        np.float32, (1,),
        lambda x, out: DML_ARGMAX_OPERATOR_DESC(
            InputTensor=tensor_desc(x), OutputTensor=tensor_desc(out), Axes=[1],
            AxisDirection=DML_AXIS_DIRECTION_INCREASING),
        lambda x, out: np.argmax(x, axis=1, keepdims=True, out=out),
        lambda t, x, out: t.argmax(x, dim=1, keepdim=True, out=out),
        ("ArgMax", {"axis": 1, "keepdims": 1}, []),
        lambda x: np.argmax(x, axis=1, keepdims=True), out_dtype=np.int64),
    "CUMULATIVE_SUMMATION f32 last": Workload(
        np.float32, (),
        lambda x, out: DML_CUMULATIVE_SUMMATION_OPERATOR_DESC(
            InputTensor=tensor_desc(x), OutputTensor=tensor_desc(out), Axis=1,
            AxisDirection=DML_AXIS_DIRECTION_INCREASING, HasExclusiveSum=False),
        lambda x, out: np.cumsum(x, axis=1, out=out),
        lambda t, x, out: t.cumsum(x, dim=1, out=out),
        ("CumSum", {}, [np.array(1, np.int64)]),
        lambda x: np.cumsum(x.astype(np.float64), axis=1).astype(np.float32), tolerance=1e-4),
}
NAMES = list(WORKLOADS)
ONNX_TYPES = {np.dtype(np.float32): 1, np.dtype(np.float16): 10, np.dtype(np.int64): 7}


@pytest.fixture(scope="module")
def data(scale):
    rng = np.random.default_rng(0)
    return {name: rng.standard_normal(_shape(scale)).astype(w.dtype)
            for name, w in WORKLOADS.items()}


def _out(w: Workload, x: np.ndarray) -> np.ndarray:
    shape = _kept(x, w.axes) if w.axes else x.shape
    return np.empty(shape, w.out_dtype or w.dtype)


def _check(w: Workload, got: np.ndarray, x: np.ndarray) -> None:
    want = w.expected(x)
    if w.tolerance:
        np.testing.assert_allclose(got, want, rtol=w.tolerance, atol=w.tolerance * 64)
    else:
        assert np.array_equal(got, want)


@pytest.mark.parametrize("name", NAMES)
def test_emulator(benchmark, data, name):
    w, x = WORKLOADS[name], data[name]
    out = _out(w, x)
    run = Prepared(DML_OPERATOR_DESC(Desc=w.desc(x, out)), [x], [out], level="6_4")
    benchmark.group = f"reduction {name}"
    benchmark.extra_info["bytes_moved"] = x.nbytes + out.nbytes
    benchmark(run)
    _check(w, out, x)


@pytest.mark.parametrize("name", NAMES)
def test_numpy(benchmark, data, name):
    w, x = WORKLOADS[name], data[name]
    out = _out(w, x)
    benchmark.group = f"reduction {name}"
    benchmark(w.numpy, x, out)


@pytest.mark.parametrize("name", NAMES)
def test_torch(benchmark, torch, data, name):
    w, x = WORKLOADS[name], data[name]
    out = _out(w, x)
    t_out = torch.from_numpy(out)
    benchmark.group = f"reduction {name}"
    benchmark(w.torch_fn, torch, torch.from_numpy(x), t_out)
    _check(w, out, x)


@pytest.mark.parametrize("name", NAMES)
def test_onnxruntime(benchmark, ort, data, name):
    w, x = WORKLOADS[name], data[name]
    h = ort.onnx.helper
    op, attrs, consts = w.onnx
    const_names = [f"c{i}" for i in range(len(consts))]
    out_shape = _out(w, x).shape
    node = h.make_node(op, ["x", *const_names], ["y"], **attrs)
    graph = h.make_graph(
        [node], "bench", [h.make_tensor_value_info("x", ONNX_TYPES[x.dtype], x.shape)],
        [h.make_tensor_value_info("y", ONNX_TYPES[np.dtype(w.out_dtype or w.dtype)],
                                  out_shape)],
        initializer=[ort.onnx.numpy_helper.from_array(c, n) for c, n in zip(consts,
                                                                              const_names)])
    sess = ort.session_from_model(h.make_model(graph, opset_imports=[h.make_opsetid("", 18)]))
    benchmark.group = f"reduction {name}"
    benchmark(sess.run, None, {"x": x})

