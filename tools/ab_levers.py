# ruff: noqa: F403, F405 - the DirectML names, as tests use them
"""Measure one lever A/B in one process: the same prepared dispatch, timed in interleaved rounds
with only the lever switched, so that a noisy machine's drift falls on both sides alike.

    NUMBA_NUM_THREADS=16 python tools/ab_levers.py pool     # own worker pool vs Numba's prange
    NUMBA_NUM_THREADS=16 python tools/ab_levers.py reduce   # the same, for the reductions
    NUMBA_NUM_THREADS=16 python tools/ab_levers.py claim    # QLMM tasks claimed vs fixed ranges
    NUMBA_NUM_THREADS=16 python tools/ab_levers.py stream   # streamed vs cached output stores
    NUMBA_NUM_THREADS=16 python tools/ab_levers.py tile     # tiled vs row-order transposes
    NUMBA_NUM_THREADS=16 python tools/ab_levers.py attention  # task kernel vs Python tasks
    NUMBA_NUM_THREADS=16 python tools/ab_levers.py small-gemm  # LSTM steps: own sgemm vs BLAS
    NUMBA_NUM_THREADS=16 python tools/ab_levers.py winograd  # 3x3 convolution: F(2x2,3x3) or direct
    NUMBA_NUM_THREADS=16 python tools/ab_levers.py winograd-gemm  # its products: own vs BLAS

``pool`` switches ``emulator.kernels.pool.ENABLED`` (element-wise ADD, JOIN, SPLIT, PADDING,
QUANTIZED_LINEAR_MATRIX_MULTIPLY, LSTM);
``reduce`` the same for issue 15's reduction workloads (task kernels, kernels/tasks.py: REDUCE,
ARGMAX, CUMULATIVE_SUMMATION, SOFTMAX1, MVN2, BATCH_NORMALIZATION);
``stream`` streams the element-wise output from 1 thread or never (ADD, broadcast ADDs, CAST
f32 -> f16, GREATER, EXP, TANH, ERF); ``attention`` switches
``emulator.compute.attention.KERNEL`` (MULTIHEAD_ATTENTION [8, 512, 12 x 64], with a boolean
mask, and MULTIHEAD_ATTENTION1 decoding one query over a KV cache of 2,048); ``tile``
switches the tiled order of an IDENTITY over a transposed input off (four transposes). Prints
the median ms of each side. These measured the decisions in docs/decisions.md ("Element-wise
launches on an own worker pool"), kernels/strided.py, compute/attention.py and
kernels/sgemm.py (``small-gemm`` switches ``emulator.compute.recurrent.SMALL_GEMM``: the
recurrent steps' products on the small-shape kernel or the BLAS; LSTM and GRU) and
compute/winograd.py (``winograd`` switches ``emulator.compute.winograd.ENABLED``: ResNet-50's
3x3 convolutions, forward and backward, by F(2x2, 3x3) or im2col tiles; ``winograd-gemm``
switches ``OWN_GEMM``: its 16 products per task on kernels/sgemm.py or the BLAS).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import Prepared
from descriptors import *
from emulator.compute import attention, recurrent, winograd
from emulator.kernels import pool, qgemm, strided

F32 = DML_TENSOR_DATA_TYPE_FLOAT32


def _elementwise() -> dict[str, tuple[Any, list[np.ndarray], list[np.ndarray]]]:
    rng = np.random.default_rng(0)
    n = 16 << 20
    x, y = (rng.random(n, np.float32) for _ in range(2))
    a = rng.random((4096, 4096), np.float32)
    t, o16, o8 = (tensor_desc((n,), d) for d in
                  (F32, DML_TENSOR_DATA_TYPE_FLOAT16, DML_TENSOR_DATA_TYPE_UINT8))
    sq = tensor_desc((4096, 4096), F32)

    def bcast(strides):
        return DML_TENSOR_DESC(Desc=DML_BUFFER_TENSOR_DESC(
            DataType=F32, Sizes=(4096, 4096), Strides=strides, TotalTensorSizeInBytes=4096 * 4))

    def op(d):
        return DML_OPERATOR_DESC(Desc=d)

    return {
        "ADD f32 16M": (op(DML_ELEMENT_WISE_ADD_OPERATOR_DESC(t, t, t)),
                        [x, y], [np.empty(n, np.float32)]),
        "ADD [4096,4096] + row": (op(DML_ELEMENT_WISE_ADD_OPERATOR_DESC(
            sq, bcast((0, 1)), sq)), [a, a[0].copy()], [np.empty_like(a)]),
        "ADD [4096,4096] + column": (op(DML_ELEMENT_WISE_ADD_OPERATOR_DESC(
            sq, bcast((1, 0)), sq)), [a, a[:, 0].copy()], [np.empty_like(a)]),
        "CAST f32 -> f16 16M": (op(DML_CAST_OPERATOR_DESC(t, o16)),
                                [x], [np.empty(n, np.float16)]),
        "GREATER f32 -> u8 16M": (op(DML_ELEMENT_WISE_LOGICAL_GREATER_THAN_OPERATOR_DESC(
            t, t, o8)), [x, y], [np.empty(n, np.uint8)]),
        **{f"{name} f32 16M": (op(cls(t, t)), [x * 8 - 4], [np.empty(n, np.float32)])
           for name, cls in (("EXP", DML_ELEMENT_WISE_EXP_OPERATOR_DESC),
                             ("TANH", DML_ELEMENT_WISE_TANH_OPERATOR_DESC),
                             ("ERF", DML_ELEMENT_WISE_ERF_OPERATOR_DESC))},
    }


def _transposes() -> dict[str, tuple[Any, list[np.ndarray], list[np.ndarray]]]:
    """IDENTITY reading its input through permuted strides (ONNX Runtime's Transpose)."""
    rng = np.random.default_rng(0)
    out = {}
    for shape, perm in (((64, 64, 64, 64), (0, 2, 3, 1)), ((32, 3, 224, 224), (0, 2, 3, 1)),
                        ((32, 224, 224, 3), (0, 3, 1, 2)), ((4096, 4096), (1, 0))):
        x = rng.random(shape, np.float32)
        packed = [int(np.prod(shape[d + 1:])) for d in range(len(shape))]
        sizes = [shape[p] for p in perm]
        desc = DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC(
            tensor_desc(sizes, F32, strides=[packed[p] for p in perm]), tensor_desc(sizes, F32))
        out[f"IDENTITY {list(shape)} perm {perm}"] = (
            DML_OPERATOR_DESC(Desc=desc), [x], [np.empty(sizes, np.float32)])
    return out


def _movement() -> dict[str, tuple[Any, list[np.ndarray], list[np.ndarray]]]:
    rng = np.random.default_rng(0)
    parts = [rng.standard_normal((32, 64, 56, 56)).astype(np.float32) for _ in range(4)]
    big = np.concatenate(parts, axis=1)
    return {
        "JOIN 4 x [32,64,56,56] axis 1": (DML_OPERATOR_DESC(Desc=DML_JOIN_OPERATOR_DESC(
            InputTensors=[tensor_desc(p) for p in parts], OutputTensor=tensor_desc(big),
            Axis=1)), parts, [np.empty_like(big)]),
        "SPLIT [32,256,56,56] in 4": (DML_OPERATOR_DESC(Desc=DML_SPLIT_OPERATOR_DESC(
            InputTensor=tensor_desc(big), OutputTensors=[tensor_desc(p) for p in parts],
            Axis=1)), [big], [np.empty_like(p) for p in parts]),
        "PADDING1 constant by 3": (DML_OPERATOR_DESC(Desc=DML_PADDING1_OPERATOR_DESC(
            InputTensor=tensor_desc(parts[0]),
            OutputTensor=tensor_desc((32, 64, 62, 62), F32),
            PaddingMode=DML_PADDING_MODE_CONSTANT, PaddingValueDataType=F32,
            PaddingValue=0.0, StartPadding=(0, 0, 3, 3), EndPadding=(0, 0, 3, 3))),
            [parts[0]], [np.empty((32, 64, 62, 62), np.float32)]),
    }


def _compute() -> dict[str, tuple[Any, list[np.ndarray], list[np.ndarray]]]:
    """QUANTIZED_LINEAR_MATRIX_MULTIPLY (task kernels, kernels/qgemm.py and kernels/vnni.py)."""
    rng = np.random.default_rng(0)
    u8 = DML_TENSOR_DATA_TYPE_UINT8
    scalar = tensor_desc((1, 1, 1, 1), F32)
    zero = tensor_desc((1, 1, 1, 1), u8)

    def qlmm(a_shape, b_shape):
        a = rng.integers(0, 256, a_shape, np.uint8)
        b = rng.integers(0, 256, b_shape, np.uint8)
        out = np.empty((*a_shape[:-1], b_shape[-1]), np.uint8)
        s, z = np.full((1, 1, 1, 1), 0.01, np.float32), np.full((1, 1, 1, 1), 7, np.uint8)
        return (DML_OPERATOR_DESC(Desc=DML_QUANTIZED_LINEAR_MATRIX_MULTIPLY_OPERATOR_DESC(
            ATensor=tensor_desc(a), AScaleTensor=scalar, AZeroPointTensor=zero,
            BTensor=tensor_desc(b), BScaleTensor=scalar, BZeroPointTensor=zero,
            OutputScaleTensor=scalar, OutputZeroPointTensor=zero, OutputTensor=tensor_desc(out))),
            [a, s, z, b, s, z, s, z], [out])

    # LSTM hidden 512, sequence 128, batch 16 (issue 17's): the loop as one pool job with a
    # barrier per step (compute/rnn_kernels.loop) or Numba's prange launch per step.
    x = rng.standard_normal((1, 128, 16, 512)).astype(np.float32)
    w, r = (rng.uniform(-0.04, 0.04, (1, 1, 2048, 512)).astype(np.float32) for _ in range(2))
    y = np.empty((128, 1, 16, 512), np.float32)
    acts = [DML_OPERATOR_DESC(Desc=d()) for d in (DML_ACTIVATION_SIGMOID_OPERATOR_DESC,
                                                  DML_ACTIVATION_TANH_OPERATOR_DESC,
                                                  DML_ACTIVATION_TANH_OPERATOR_DESC)]
    lstm = DML_OPERATOR_DESC(Desc=DML_LSTM_OPERATOR_DESC(
        InputTensor=tensor_desc(x), WeightTensor=tensor_desc(w), RecurrenceTensor=tensor_desc(r),
        OutputSequenceTensor=tensor_desc(y), ActivationDescs=acts,
        Direction=DML_RECURRENT_NETWORK_DIRECTION_FORWARD, ClipThreshold=0.0,
        UseClipThreshold=False, CoupleInputForget=False))
    return {"QLMM u8 [8,12,128,64] x [8,12,64,128]": qlmm((8, 12, 128, 64), (8, 12, 64, 128)),
            "QLMM u8 [1,1,1024,1024]^2": qlmm((1, 1, 1024, 1024), (1, 1, 1024, 1024)),
            "LSTM 512, seq 128, batch 16": (lstm, [x, w, r] + [None] * 5, [y, None, None])}


def _convolutions() -> dict[str, tuple[Any, list[np.ndarray], list[np.ndarray]]]:
    """ResNet-50's 3x3 convolutions (batch 8), forward and backward (stride 1)."""
    rng = np.random.default_rng(0)
    cases = {}
    for c, size in ((64, 56), (128, 28), (256, 14), (512, 7)):
        x = rng.standard_normal((8, c, size, size)).astype(np.float32)
        f = (rng.standard_normal((c, c, 3, 3)) * 0.05).astype(np.float32)
        y = np.empty_like(x)
        for direction, label in ((DML_CONVOLUTION_DIRECTION_FORWARD, ""),
                                 (DML_CONVOLUTION_DIRECTION_BACKWARD, "backward ")):
            if direction == DML_CONVOLUTION_DIRECTION_BACKWARD and c != 64:
                continue
            op = DML_CONVOLUTION_OPERATOR_DESC(
                InputTensor=tensor_desc(x), FilterTensor=tensor_desc(f),
                OutputTensor=tensor_desc(y), Mode=DML_CONVOLUTION_MODE_CROSS_CORRELATION,
                Direction=direction, DimensionCount=2, Strides=[1, 1], Dilations=[1, 1],
                StartPadding=[1, 1], EndPadding=[1, 1], OutputPadding=[0, 0], GroupCount=1)
            cases[f"{label}3x3 {c}->{c} {size}x{size}"] = (DML_OPERATOR_DESC(Desc=op),
                                                          [x, f, None], [y])
    return cases


def _reductions() -> dict[str, tuple[Any, list[np.ndarray], list[np.ndarray]]]:
    """Issue 15's workloads (the reduction family's task kernels, kernels/tasks.py)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4096, 4096)).astype(np.float32)
    h = a.astype(np.float16)
    s = rng.standard_normal((16, 12, 512, 512)).astype(np.float32)

    def reduce(fn, x, axes):
        out = np.empty([1 if d in axes else n for d, n in enumerate(x.shape)], x.dtype)
        return (DML_OPERATOR_DESC(Desc=DML_REDUCE_OPERATOR_DESC(
            Function=fn, InputTensor=tensor_desc(x), OutputTensor=tensor_desc(out),
            Axes=list(axes))), [x], [out])

    i64 = np.empty((4096, 1), np.int64)
    ln = rng.standard_normal((8192, 4096)).astype(np.float32)
    col = rng.standard_normal((1, 4096)).astype(np.float32)
    img = rng.standard_normal((32, 64, 56, 56)).astype(np.float32)
    ch = np.abs(rng.standard_normal((1, 64, 1, 1))).astype(np.float32) + 0.5
    return {
        "REDUCE SUM f32 last": reduce(DML_REDUCE_FUNCTION_SUM, a, (1,)),
        "REDUCE SUM f32 first": reduce(DML_REDUCE_FUNCTION_SUM, a, (0,)),
        "REDUCE SUM f32 all": reduce(DML_REDUCE_FUNCTION_SUM, a, (0, 1)),
        "REDUCE MAX f16 last": reduce(DML_REDUCE_FUNCTION_MAX, h, (1,)),
        "ARGMAX f32 last": (DML_OPERATOR_DESC(Desc=DML_ARGMAX_OPERATOR_DESC(
            InputTensor=tensor_desc(a), OutputTensor=tensor_desc(i64), Axes=[1],
            AxisDirection=DML_AXIS_DIRECTION_INCREASING)), [a], [i64]),
        "CUMULATIVE_SUMMATION f32 last": (DML_OPERATOR_DESC(
            Desc=DML_CUMULATIVE_SUMMATION_OPERATOR_DESC(
                InputTensor=tensor_desc(a), OutputTensor=tensor_desc(a), Axis=1,
                AxisDirection=DML_AXIS_DIRECTION_INCREASING, HasExclusiveSum=False)),
            [a], [np.empty_like(a)]),
        "SOFTMAX1 f32 [16,12,512,512]": (DML_OPERATOR_DESC(
            Desc=DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC(
                InputTensor=tensor_desc(s), OutputTensor=tensor_desc(s), Axes=[3])),
            [s], [np.empty_like(s)]),
        "MVN2 LayerNorm f32 [8192,4096]": (DML_OPERATOR_DESC(
            Desc=DML_MEAN_VARIANCE_NORMALIZATION2_OPERATOR_DESC(
                InputTensor=tensor_desc(ln), ScaleTensor=tensor_desc(col),
                BiasTensor=tensor_desc(col), OutputTensor=tensor_desc(ln), Axes=[1],
                UseMean=True, UseVariance=True, Epsilon=1e-5)),
            [ln, col, col], [np.empty_like(ln)]),
        "BATCH_NORMALIZATION f32 [32,64,56,56]": (DML_OPERATOR_DESC(
            Desc=DML_BATCH_NORMALIZATION_OPERATOR_DESC(
                InputTensor=tensor_desc(img), MeanTensor=tensor_desc(ch),
                VarianceTensor=tensor_desc(ch), ScaleTensor=tensor_desc(ch),
                BiasTensor=tensor_desc(ch), OutputTensor=tensor_desc(img), Spatial=True,
                Epsilon=1e-5)),
            [img, ch, ch, ch, ch], [np.empty_like(img)]),
    }


def _attention() -> dict[str, tuple[Any, list[np.ndarray], list[np.ndarray]]]:
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((8, 512, 768), np.float32) for _ in range(3))
    mask = (rng.random((8, 1, 1, 512)) < 0.9).astype(np.int32)
    t = tensor_desc(q)
    none = DML_MULTIHEAD_ATTENTION_MASK_TYPE_NONE

    def mha(mask_desc=None, kind=none):
        return DML_OPERATOR_DESC(Desc=DML_MULTIHEAD_ATTENTION_OPERATOR_DESC(
            QueryTensor=t, KeyTensor=t, ValueTensor=t, MaskTensor=mask_desc, OutputTensor=t,
            Scale=0.125, MaskFilterValue=-10000.0, HeadCount=12, MaskType=kind))

    masked = DML_TENSOR_DESC(Desc=DML_BUFFER_TENSOR_DESC(
        DataType=DML_TENSOR_DATA_TYPE_INT32, Sizes=(8, 12, 512, 512), Strides=(512, 0, 0, 1),
        TotalTensorSizeInBytes=mask.nbytes))
    b, cap, d = 4, 2048, 128  # one decoding step of 32 query heads on 8 key/value heads
    dq = rng.standard_normal((b, 1, 32 * d), np.float32)
    dk = rng.standard_normal((b, 1, 8 * d), np.float32)
    cache = [rng.standard_normal((b, 8, cap, d), np.float32) for _ in range(2)]
    lengths = np.full(b, cap - 1, np.int32)
    decode = DML_OPERATOR_DESC(Desc=DML_MULTIHEAD_ATTENTION1_OPERATOR_DESC(
        QueryTensor=tensor_desc(dq), KeyTensor=tensor_desc(dk), ValueTensor=tensor_desc(dk),
        PastSequenceLengthsTensor=tensor_desc(lengths), OutputTensor=tensor_desc(dq),
        OutputPresentKeyTensor=tensor_desc(cache[0]),
        OutputPresentValueTensor=tensor_desc(cache[1]), Scale=0.088, MaskFilterValue=-1e4,
        QueryHeadCount=32, KeyValueHeadCount=8, MaskType=none))
    return {
        "MHA [8,512,12x64]": (mha(), [q, k, v] + [None] * 8, [np.empty_like(q), None, None]),
        "MHA boolean mask": (mha(masked, DML_MULTIHEAD_ATTENTION_MASK_TYPE_BOOLEAN),
                             [q, k, v, None, None, None, None, mask, None, None, None],
                             [np.empty_like(q), None, None]),
        "MHA1 decode, cache 2048": (decode, [dq, dk, dk] + [None] * 8 + [lengths],
                                    [np.empty_like(dq), *cache]),
    }


def measure(run: Callable[[], None], switch: Callable[[bool], None], rounds: int,
            repeat: int) -> tuple[float, float]:
    """Median seconds of ``run`` with the lever on, then off (interleaved rounds)."""
    times: dict[bool, list[float]] = {True: [], False: []}
    for on in (True, False):
        switch(on)
        run()  # compile / warm both sides first
    for _ in range(rounds):
        for on in (True, False):
            switch(on)
            run()
            start = time.perf_counter()
            for _ in range(repeat):
                run()
            times[on].append((time.perf_counter() - start) / repeat)
    return float(np.median(times[True])), float(np.median(times[False]))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("lever", choices=["pool", "reduce", "claim", "stream", "tile", "attention",
                                     "small-gemm", "winograd", "winograd-gemm"])
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--only", default="", help="run the workloads whose name holds this text")
    args = p.parse_args()
    cases = {"pool": lambda: {**_elementwise(), **_movement(), **_compute()},
             "reduce": _reductions, "claim": _compute,
             "stream": _elementwise,
             "tile": _transposes, "attention": _attention, "winograd": _convolutions,
             "winograd-gemm": _convolutions,
             "small-gemm": lambda: {k: v for k, v in _compute().items() if "LSTM" in k}}[
        args.lever]()
    on, off = {"pool": ("pool", "prange"), "reduce": ("pool", "prange"),
               "claim": ("claimed", "ranges"),
               "stream": ("streamed", "cached"),
               "tile": ("tiled", "rows"), "attention": ("kernel", "python"),
               "small-gemm": ("own", "blas"), "winograd": ("F(2x2,3x3)", "direct"),
               "winograd-gemm": ("own", "blas")}[args.lever]
    print(f"{'workload':<32}{on:>12}{off:>12}  (median ms)")
    for name, (desc, ins, outs) in cases.items():
        if args.only not in name:
            continue
        prepared = Prepared(desc, ins, outs, level="6_4")

        plan = prepared.compiled.operator.plan
        tiling = int(plan.block[strided.TILE]) if args.lever == "tile" else -1

        def switch(value: bool, prepared: Prepared = prepared, outs: list = outs,
                   tiling: int = tiling) -> None:
            if args.lever in ("pool", "reduce"):
                pool.ENABLED = value
            elif args.lever == "claim":
                qgemm.CLAIM = value
            elif args.lever == "attention":
                attention.KERNEL = value
            elif args.lever == "small-gemm":
                recurrent.SMALL_GEMM = value
            elif args.lever == "winograd":
                winograd.ENABLED = value
            elif args.lever == "winograd-gemm":
                winograd.OWN_GEMM = value
            elif args.lever == "tile":
                prepared.compiled.operator.plan.block[strided.TILE] = tiling if value else -1
            else:
                block = prepared.compiled.operator.plan.block  # (streamable: 16M elements)
                block[strided.WIDTH] = outs[0].itemsize
                block[strided.STREAM_FROM] = 1 if value else 1 << 62

        a, b = measure(prepared, switch, args.rounds, args.repeat)
        print(f"{name:<32}{a * 1e3:>12.3f}{b * 1e3:>12.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
