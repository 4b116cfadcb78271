"""The integer products (issue 17) side by side with ONNX Runtime (one-node MatMulInteger /
ConvInteger, zero points as initializers) and NumPy int64 (exact, the tests' reference form).

Workloads: MATRIX_MULTIPLY_INTEGER uint8 x int8 [8,12,128,64] x [8,12,64,128] -> INT32, per-tensor
zero points; CONVOLUTION_INTEGER uint8 x uint8 3x3 64->64 56x56, batch 1, pad 1, -> INT32.

    python -m pytest bench/test_bench_integer.py --benchmark-group-by=group \\
        --benchmark-columns=min,median,mean,rounds --benchmark-sort=mean --benchmark-warmup=on
"""

from __future__ import annotations

import numpy as np
import pytest

from descriptors import (
    DML_CONVOLUTION_INTEGER_OPERATOR_DESC,
    DML_MATRIX_MULTIPLY_INTEGER_OPERATOR_DESC,
    DML_OPERATOR_DESC,
    tensor_desc,
)

from .harness import Prepared

ZA, ZB = 120, 3  # MATRIX_MULTIPLY_INTEGER: A (uint8) and B (int8) zero points
ZX, ZW = 128, 127  # CONVOLUTION_INTEGER: input and filter (uint8) zero points
WORKLOADS = ("matmul 8x12x128x64x128 u8i8", "conv 3x3 64->64 56x56 u8")


def matmul_case():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (8, 12, 128, 64)).astype(np.uint8)
    b = rng.integers(-128, 128, (8, 12, 64, 128)).astype(np.int8)
    return a, b


def conv_case(scale):
    rng = np.random.default_rng(1)
    size = max(8, int(56 * scale))
    x = rng.integers(0, 256, (1, 64, size, size)).astype(np.uint8)
    w = rng.integers(0, 256, (64, 64, 3, 3)).astype(np.uint8)
    return x, w


@pytest.mark.parametrize("name", WORKLOADS)
def test_emulator(benchmark, scale, name):
    benchmark.group = f"integer {name}"
    if name.startswith("matmul"):
        a, b = matmul_case()
        za, zb = np.full((1, 1, 1, 1), ZA, np.uint8), np.full((1, 1, 1, 1), ZB, np.int8)
        out = np.empty((8, 12, 128, 128), np.int32)
        op = DML_OPERATOR_DESC(Desc=DML_MATRIX_MULTIPLY_INTEGER_OPERATOR_DESC(
            ATensor=tensor_desc(a), AZeroPointTensor=tensor_desc(za), BTensor=tensor_desc(b),
            BZeroPointTensor=tensor_desc(zb), OutputTensor=tensor_desc(out)))
        benchmark.extra_info["ops"] = 2 * 96 * 128 * 64 * 128
        benchmark(Prepared(op, [a, za, b, zb], [out]))
        return
    x, w = conv_case(scale)
    zx, zw = np.full((1, 1, 1, 1), ZX, np.uint8), np.full((1, 1, 1, 1), ZW, np.uint8)
    out = np.empty((1, 64, *x.shape[2:]), np.int32)
    op = DML_OPERATOR_DESC(Desc=DML_CONVOLUTION_INTEGER_OPERATOR_DESC(
        InputTensor=tensor_desc(x), InputZeroPointTensor=tensor_desc(zx),
        FilterTensor=tensor_desc(w), FilterZeroPointTensor=tensor_desc(zw),
        OutputTensor=tensor_desc(out), DimensionCount=2, Strides=[1, 1], Dilations=[1, 1],
        StartPadding=[1, 1], EndPadding=[1, 1], GroupCount=1))
    benchmark.extra_info["ops"] = 2 * 64 * 64 * 9 * x.shape[2] * x.shape[3]
    benchmark(Prepared(op, [x, zx, w, zw], [out]))


@pytest.mark.parametrize("name", WORKLOADS)
def test_onnxruntime(benchmark, ort, scale, name):
    h, tp = ort.onnx.helper, ort.onnx.TensorProto
    benchmark.group = f"integer {name}"
    if name.startswith("matmul"):
        a, b = matmul_case()
        inits = [h.make_tensor("za", tp.UINT8, [], [ZA]), h.make_tensor("zb", tp.INT8, [], [ZB])]
        node = h.make_node("MatMulInteger", ["A", "B", "za", "zb"], ["Y"])
        sess = ort(node, [h.make_tensor_value_info("A", tp.UINT8, a.shape),
                                  h.make_tensor_value_info("B", tp.INT8, b.shape)],
                           [h.make_tensor_value_info("Y", tp.INT32, None)], inits)
        benchmark(sess.run, None, {"A": a, "B": b})
        return
    x, w = conv_case(scale)
    inits = [h.make_tensor("zx", tp.UINT8, [], [ZX]), h.make_tensor("zw", tp.UINT8, [], [ZW])]
    node = h.make_node("ConvInteger", ["X", "W", "zx", "zw"], ["Y"], pads=[1, 1, 1, 1])
    sess = ort(node, [h.make_tensor_value_info("X", tp.UINT8, x.shape),
                              h.make_tensor_value_info("W", tp.UINT8, w.shape)],
                       [h.make_tensor_value_info("Y", tp.INT32, None)], inits)
    benchmark(sess.run, None, {"X": x, "W": w})


def test_numpy_int64(benchmark):
    """The exact matmul in NumPy int64 (no BLAS for integers): the naive baseline."""
    a, b = matmul_case()
    benchmark.group = f"integer {WORKLOADS[0]}"
    benchmark.pedantic(lambda: (a.astype(np.int64) - ZA) @ (b.astype(np.int64) - ZB),
                       rounds=3, warmup_rounds=1)
