"""The data-movement family (issue 16), side by side with NumPy, PyTorch and ONNX Runtime (one-node
models), JIT excluded.

Workloads (issue 16): JOIN of four [32, 64, 56, 56] float32 on axis 1; SPLIT of [32, 256, 56, 56]
into 4 on axis 1; PADDING constant and reflection of [32, 64, 56, 56] by 3 on the spatial
dimensions; DEPTH_TO_SPACE [8, 256, 64, 64] block 2; GATHER of 8192 rows of a [32000, 4096]
float16 table; GATHER_ELEMENTS and SCATTER_ELEMENTS [4096, 4096] float32 on axis 1 (the
scatter's indices a permutation of each row); RESAMPLE3 linear x2 of [8, 64, 128, 128] float32
(pixel centres: PyTorch's ``interpolate(align_corners=False)``, ONNX ``half_pixel``). Peers
write into preallocated outputs where their API allows (NumPy ``concatenate(out=)``,
``copyto``; PyTorch ``cat(out=)``, ``copy_``); ``np.pad``, ``torch.nn.functional.pad`` and
ONNX Runtime allocate their outputs.

    NUMBA_NUM_THREADS=2 python -m pytest bench/test_bench_movement.py -p no:cacheprovider -q \\
        --benchmark-max-time=0.5 --benchmark-warmup=on --benchmark-columns=min,median,rounds
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from descriptors import *

from .harness import Prepared

F32 = DML_TENSOR_DATA_TYPE_FLOAT32
PAD = 3


def _shape(shape, scale):
    """The batch dimension scaled (at least 1)."""
    return (max(1, int(shape[0] * scale)), *shape[1:])


@dataclass(frozen=True)
class Workload:
    inputs: Callable[[np.random.Generator, float], list[np.ndarray]]
    outputs: Callable[[list[np.ndarray]], list[tuple[int, ...]]]
    desc: Callable[..., object]  # (inputs, outputs) -> the operator's struct
    numpy: Callable[..., object]  # (inputs, outputs) -> None
    torch_fn: Callable[..., object]  # (torch, inputs, outputs) -> None
    onnx: tuple[str, dict, list[str]]  # op type, attributes, extra constant inputs' names
    expected: Callable[[list[np.ndarray]], list[np.ndarray]]
    onnx_consts: Callable[[list[np.ndarray]], list[np.ndarray]] = lambda xs: []
    out_dtype: type = np.float32
    tolerance: float = 0.0  # 0: bit-exact against ``expected``; else rtol and atol


def _bilinear_x2(x: np.ndarray, dtype=np.float64) -> np.ndarray:
    """x2 on the last two dimensions at pixel centres, edges clamped: output 2k samples
    k - 0.25 (0.25 of x[k - 1], 0.75 of x[k]), 2k + 1 samples k + 0.25."""
    def along(a, axis):
        a = np.moveaxis(a, axis, -1).astype(dtype)
        lo = np.concatenate([a[..., :1], a[..., :-1]], axis=-1)
        hi = np.concatenate([a[..., 1:], a[..., -1:]], axis=-1)
        out = np.empty((*a.shape[:-1], 2 * a.shape[-1]), dtype)
        out[..., 0::2] = dtype(0.25) * lo + dtype(0.75) * a
        out[..., 1::2] = dtype(0.75) * a + dtype(0.25) * hi
        return np.moveaxis(out, -1, axis)
    return along(along(x, -1), -2)


def _pad_widths():
    return [(0, 0), (0, 0), (PAD, PAD), (PAD, PAD)]


def _padding_desc(mode):
    def make(xs, outs):
        return DML_PADDING1_OPERATOR_DESC(
            InputTensor=tensor_desc(xs[0]), OutputTensor=tensor_desc(outs[0]),
            PaddingMode=mode, PaddingValueDataType=F32, PaddingValue=0.0,
            StartPadding=(0, 0, PAD, PAD), EndPadding=(0, 0, PAD, PAD))
    return make


def _padded(xs):
    n, c, h, w = xs[0].shape
    return [(n, c, h + 2 * PAD, w + 2 * PAD)]


def _side(scale):
    return max(64, int(4096 * scale))


def _scattered(xs):
    out = xs[0].copy()
    np.put_along_axis(out, xs[1], xs[2], axis=1)
    return out


def _d2s(x, b=2):
    n, c, h, w = x.shape
    return x.reshape(n, b, b, c // 4, h, w).transpose(0, 3, 4, 1, 5, 2).reshape(
        n, c // 4, h * b, w * b)


WORKLOADS: dict[str, Workload] = {
    "join 4x[32,64,56,56] axis 1": Workload(
        lambda rng, s: [rng.standard_normal(_shape((32, 64, 56, 56), s)).astype(np.float32)
                        for _ in range(4)],
        lambda xs: [(xs[0].shape[0], 256, 56, 56)],
        lambda xs, outs: DML_JOIN_OPERATOR_DESC(
            InputTensors=[tensor_desc(x) for x in xs], OutputTensor=tensor_desc(outs[0]), Axis=1),
        lambda xs, outs: np.concatenate(xs, axis=1, out=outs[0]),
        lambda t, xs, outs: t.cat(xs, dim=1, out=outs[0]),
        ("Concat", {"axis": 1}, []),
        lambda xs: [np.concatenate(xs, axis=1)]),
    "split [32,256,56,56] in 4 axis 1": Workload(
        lambda rng, s: [rng.standard_normal(_shape((32, 256, 56, 56), s)).astype(np.float32)],
        lambda xs: [(xs[0].shape[0], 64, 56, 56)] * 4,
        lambda xs, outs: DML_SPLIT_OPERATOR_DESC(
            InputTensor=tensor_desc(xs[0]), OutputTensors=[tensor_desc(o) for o in outs], Axis=1),
        lambda xs, outs: [np.copyto(o, xs[0][:, 64 * i:64 * (i + 1)]) for i, o in enumerate(outs)],
        lambda t, xs, outs: [o.copy_(p) for o, p in zip(outs, t.split(xs[0], 64, dim=1))],
        ("Split", {"axis": 1, "num_outputs": 4}, []),
        lambda xs: np.split(xs[0], 4, axis=1)),
    "padding constant [32,64,56,56] by 3": Workload(
        lambda rng, s: [rng.standard_normal(_shape((32, 64, 56, 56), s)).astype(np.float32)],
        _padded, _padding_desc(DML_PADDING_MODE_CONSTANT),
        lambda xs, outs: np.copyto(outs[0], np.pad(xs[0], _pad_widths())),
        lambda t, xs, outs: outs[0].copy_(t.nn.functional.pad(xs[0], (PAD,) * 4)),
        ("Pad", {"mode": "constant"}, ["pads"]),
        lambda xs: [np.pad(xs[0], _pad_widths())],
        lambda xs: [np.array([0, 0, PAD, PAD, 0, 0, PAD, PAD], np.int64)]),
    "padding reflection [32,64,56,56] by 3": Workload(
        lambda rng, s: [rng.standard_normal(_shape((32, 64, 56, 56), s)).astype(np.float32)],
        _padded, _padding_desc(DML_PADDING_MODE_REFLECTION),
        lambda xs, outs: np.copyto(outs[0], np.pad(xs[0], _pad_widths(), mode="reflect")),
        lambda t, xs, outs: outs[0].copy_(t.nn.functional.pad(xs[0], (PAD,) * 4, mode="reflect")),
        ("Pad", {"mode": "reflect"}, ["pads"]),
        lambda xs: [np.pad(xs[0], _pad_widths(), mode="reflect")],
        lambda xs: [np.array([0, 0, PAD, PAD, 0, 0, PAD, PAD], np.int64)]),
    "depth_to_space [8,256,64,64] block 2": Workload(
        lambda rng, s: [rng.standard_normal(_shape((8, 256, 64, 64), s)).astype(np.float32)],
        lambda xs: [(xs[0].shape[0], 64, 128, 128)],
        lambda xs, outs: DML_DEPTH_TO_SPACE_OPERATOR_DESC(
            InputTensor=tensor_desc(xs[0]), OutputTensor=tensor_desc(outs[0]), BlockSize=2),
        lambda xs, outs: np.copyto(outs[0], _d2s(xs[0])),
        lambda t, xs, outs: outs[0].copy_(t.nn.functional.pixel_shuffle(
            xs[0].view(xs[0].shape[0], 2, 2, 64, 64, 64).transpose(1, 3).transpose(2, 3)
            .reshape(xs[0].shape[0], 256, 64, 64), 2)),
        ("DepthToSpace", {"blocksize": 2, "mode": "DCR"}, []),
        lambda xs: [_d2s(xs[0])]),
    "gather [32000,4096] f16 rows by 8192": Workload(
        lambda rng, s: [rng.standard_normal((max(64, int(32000 * s)), 4096)).astype(np.float16),
                        rng.integers(0, max(64, int(32000 * s)), 8192).astype(np.int32)],
        lambda xs: [(8192, 4096)],
        lambda xs, outs: DML_GATHER_OPERATOR_DESC(
            InputTensor=tensor_desc(xs[0]), IndicesTensor=tensor_desc(xs[1].reshape(1, 8192)),
            OutputTensor=tensor_desc(outs[0]), Axis=0, IndexDimensions=1),
        lambda xs, outs: np.take(xs[0], xs[1], axis=0, out=outs[0]),
        lambda t, xs, outs: t.index_select(xs[0], 0, xs[1], out=outs[0]),
        ("Gather", {"axis": 0}, []),
        lambda xs: [xs[0][xs[1]]], out_dtype=np.float16),
    "gather_elements [4096,4096] f32 axis 1": Workload(
        lambda rng, s: [rng.standard_normal((_side(s), 4096)).astype(np.float32),
                        rng.integers(0, 4096, (_side(s), 4096)).astype(np.int64)],
        lambda xs: [xs[1].shape],
        lambda xs, outs: DML_GATHER_ELEMENTS_OPERATOR_DESC(
            InputTensor=tensor_desc(xs[0]), IndicesTensor=tensor_desc(xs[1]),
            OutputTensor=tensor_desc(outs[0]), Axis=1),
        lambda xs, outs: np.copyto(outs[0], np.take_along_axis(xs[0], xs[1], axis=1)),
        lambda t, xs, outs: t.gather(xs[0], 1, xs[1], out=outs[0]),
        ("GatherElements", {"axis": 1}, []),
        lambda xs: [np.take_along_axis(xs[0], xs[1], axis=1)]),
    "scatter_elements [4096,4096] f32 axis 1": Workload(
        lambda rng, s: [rng.standard_normal((_side(s), 4096)).astype(np.float32),
                        np.argsort(rng.random((_side(s), 4096)), axis=1).astype(np.int64),
                        rng.standard_normal((_side(s), 4096)).astype(np.float32)],
        lambda xs: [xs[0].shape],
        lambda xs, outs: DML_SCATTER_ELEMENTS_OPERATOR_DESC(
            InputTensor=tensor_desc(xs[0]), IndicesTensor=tensor_desc(xs[1]),
            UpdatesTensor=tensor_desc(xs[2]), OutputTensor=tensor_desc(outs[0]), Axis=1),
        lambda xs, outs: (np.copyto(outs[0], xs[0]),
                          np.put_along_axis(outs[0], xs[1], xs[2], axis=1)),
        lambda t, xs, outs: (outs[0].copy_(xs[0]), outs[0].scatter_(1, xs[1], xs[2])),
        ("ScatterElements", {"axis": 1}, []),
        lambda xs: [_scattered(xs)]),
    "resample3 linear x2 [8,64,128,128]": Workload(
        lambda rng, s: [rng.standard_normal(_shape((8, 64, 128, 128), s)).astype(np.float32)],
        lambda xs: [(xs[0].shape[0], 64, 256, 256)],
        lambda xs, outs: DML_RESAMPLE3_OPERATOR_DESC(
            InputTensor=tensor_desc(xs[0]), OutputTensor=tensor_desc(outs[0]),
            InterpolationMode=DML_INTERPOLATION_MODE_LINEAR,
            RoundingDirection=DML_AXIS_DIRECTION_DECREASING, DimensionCount=4,
            Scales=(1.0, 1.0, 2.0, 2.0), InputPixelOffsets=(0.5,) * 4,
            OutputPixelOffsets=(-0.5,) * 4, Antialiased=False),
        lambda xs, outs: np.copyto(outs[0], _bilinear_x2(xs[0], np.float32)),
        lambda t, xs, outs: outs[0].copy_(t.nn.functional.interpolate(
            xs[0], scale_factor=2, mode="bilinear", align_corners=False)),
        ("Resize", {"mode": "linear", "coordinate_transformation_mode": "half_pixel"},
         ["roi", "scales"]),
        lambda xs: [_bilinear_x2(xs[0]).astype(np.float32)],
        lambda xs: [np.zeros(0, np.float32), np.array([1, 1, 2, 2], np.float32)],
        tolerance=1e-6),
}
NAMES = list(WORKLOADS)


@pytest.fixture(scope="module")
def data(scale):
    rng = np.random.default_rng(0)
    return {name: w.inputs(rng, scale) for name, w in WORKLOADS.items()}


def _outs(w: Workload, xs) -> list[np.ndarray]:
    return [np.empty(s, w.out_dtype) for s in w.outputs(xs)]


ONNX_TYPES = {np.dtype(np.float32): 1, np.dtype(np.float16): 10, np.dtype(np.int32): 6,
              np.dtype(np.int64): 7}


@pytest.mark.parametrize("name", NAMES)
def test_emulator(benchmark, data, name):
    w, xs = WORKLOADS[name], data[name]
    outs = _outs(w, xs)
    run = Prepared(DML_OPERATOR_DESC(Desc=w.desc(xs, outs)), xs, outs, level="6_4")
    benchmark.group = f"movement {name}"
    benchmark.extra_info["bytes_moved"] = sum(x.nbytes for x in xs) + sum(o.nbytes for o in outs)
    benchmark(run)
    _check(w, outs, w.expected(xs))


def _check(w: Workload, outs, wants) -> None:
    for got, want in zip(outs, wants):
        if w.tolerance:
            np.testing.assert_allclose(got, want, rtol=w.tolerance, atol=w.tolerance)
        else:
            assert np.array_equal(got, want)


@pytest.mark.parametrize("name", NAMES)
def test_numpy(benchmark, data, name):
    w, xs = WORKLOADS[name], data[name]
    outs = _outs(w, xs)
    benchmark.group = f"movement {name}"
    benchmark(w.numpy, xs, outs)


@pytest.mark.parametrize("name", NAMES)
def test_torch(benchmark, torch, data, name):
    w, xs = WORKLOADS[name], data[name]
    ts = [torch.from_numpy(x) for x in xs]
    outs = [torch.from_numpy(o) for o in _outs(w, xs)]
    benchmark.group = f"movement {name}"
    benchmark(w.torch_fn, torch, ts, outs)
    _check(w, [o.numpy() for o in outs], w.expected(xs))


@pytest.mark.parametrize("name", NAMES)
def test_onnxruntime(benchmark, ort, data, name):
    w, xs = WORKLOADS[name], data[name]
    h = ort.onnx.helper
    op, attrs, const_names = w.onnx
    names = [f"x{i}" for i in range(len(xs))]
    consts = w.onnx_consts(xs)
    shapes = w.outputs(xs)
    outs = [f"y{i}" for i in range(len(shapes))]
    node = h.make_node(op, names + const_names, outs, **attrs)
    inits = [ort.onnx.numpy_helper.from_array(c, n) for c, n in zip(consts, const_names)]
    graph = h.make_graph(
        [node], "bench",
        [h.make_tensor_value_info(n, ONNX_TYPES[x.dtype], x.shape) for n, x in zip(names, xs)],
        [h.make_tensor_value_info(n, ONNX_TYPES[np.dtype(w.out_dtype)], s)
         for n, s in zip(outs, shapes)], initializer=inits)
    sess = ort.session_from_model(h.make_model(graph, opset_imports=[h.make_opsetid("", 18)]))
    feeds = dict(zip(names, xs))
    benchmark.group = f"movement {name}"
    benchmark(sess.run, None, feeds)
