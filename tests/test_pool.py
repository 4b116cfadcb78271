"""The worker pool (emulator/kernels/pool.py): every part of a launch runs once, on any number of
parts and after the workers slept; the element-wise engine writes the same bytes on the pool and
on Numba's ``prange`` driver; Numba's thread count is honoured; the pool stops cleanly. (A forked
child starting its own pool: test_robustness.)"""

from __future__ import annotations

import time

import numba
import numpy as np
import pytest

from descriptors import *
from emulator import DMLCreateDevice1
from emulator.kernels import pool, qgemm, strided, vnni
from emulator.kernels.strided import int64_pointer
from emulator.ops import qlmm
from emulator.pythonic import run

from .helpers import desc

F32, F16, U8, I32 = (DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16,
                     DML_TENSOR_DATA_TYPE_UINT8, DML_TENSOR_DATA_TYPE_INT32)

needs_pool = pytest.mark.skipif(not pool.available(), reason="the pool runs on Linux x86-64 only")


def _count(block, part, parts):  # pragma: no cover - compiled
    b = numba.carray(int64_pointer(block), 64)
    b[8 + part] += 1  # each part is its own slot: no two threads write one
    b[4] = parts


_job: list[int] = []


def count_job() -> int:
    if not _job:
        sig = numba.types.void(numba.types.int64, numba.types.int64, numba.types.int64)
        _job.append(int(numba.cfunc(sig, nopython=True)(_count).address))
    return _job[0]


@needs_pool
def test_every_part_runs_once_also_after_the_workers_slept():
    p = pool.Pool(4)
    dummy = np.zeros(8, np.uint8)
    try:
        for rnd in range(40):
            parts = 1 + rnd % 4
            block = np.zeros(64, np.int64)
            p.run(count_job(), block, parts, dummy, dummy, dummy, dummy)
            assert block[4] == parts
            assert block[8:8 + parts].tolist() == [1] * parts
            assert not block[8 + parts:].any()
            if rnd % 8 == 7:
                time.sleep(0.02)  # the workers spin ~0.1 ms, then sleep on the futex
    finally:
        p.stop()
    assert not any(t.is_alive() for t in p.threads)


@needs_pool
def test_a_launch_after_the_pool_stopped_runs_on_the_caller():
    """atexit handlers registered before the pool's run after it: their launches must not wait
    for workers that are gone."""
    p = pool.Pool(3)
    dummy = np.zeros(8, np.uint8)
    p.stop()
    block = np.zeros(64, np.int64)
    p.run(count_job(), block, 3, dummy, dummy, dummy, dummy)
    assert block[4] == 1 and block[8:10].tolist() == [1, 0]


def _ops():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 1000)).astype(np.float32)
    row = rng.standard_normal(1000).astype(np.float32)
    h = rng.standard_normal((3, 5, 7, 11, 2, 3, 4, 5)).astype(np.float16)
    cube = rng.standard_normal((32, 32, 32)).astype(np.float32)
    a = rng.integers(0, 256, (64, 1000)).astype(np.uint8)
    b = rng.integers(0, 256, (64, 1000)).astype(np.uint8)
    one = np.ones((1, 1), np.float32)
    img = rng.standard_normal((2, 8, 32, 32)).astype(np.float32)
    chan = rng.random((1, 8, 1, 1)).astype(np.float32) + 0.5
    z = np.full((1, 1), 3, np.uint8)
    return {
        "ADD1 + broadcast row + RELU": (DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_ADD1_OPERATOR_DESC(
            ATensor=desc(F32, x.shape), BTensor=desc(F32, x.shape, (0, 1)),
            OutputTensor=desc(F32, x.shape),
            FusedActivation=DML_ACTIVATION_RELU_OPERATOR_DESC())), [x, row]),
        "MULTIPLY f16 rank 8": (DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_MULTIPLY_OPERATOR_DESC(
            ATensor=desc(F16, h.shape), BTensor=desc(F16, h.shape),
            OutputTensor=desc(F16, h.shape))), [h, h]),
        "IDENTITY transposing": (DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC(
            InputTensor=desc(F32, cube.shape, (1, 32, 1024)),
            OutputTensor=desc(F32, cube.shape))), [cube]),
        "QUANTIZED_LINEAR_ADD (scalars)": (DML_OPERATOR_DESC(
            Desc=DML_ELEMENT_WISE_QUANTIZED_LINEAR_ADD_OPERATOR_DESC(
                ATensor=desc(U8, a.shape), AScaleTensor=desc(F32, (1, 1)),
                AZeroPointTensor=desc(U8, (1, 1)), BTensor=desc(U8, b.shape),
                BScaleTensor=desc(F32, (1, 1)), BZeroPointTensor=desc(U8, (1, 1)),
                OutputScaleTensor=desc(F32, (1, 1)), OutputZeroPointTensor=desc(U8, (1, 1)),
                OutputTensor=desc(U8, a.shape))),
            [a, one * 0.02, z, b, one * 0.03, z, one * 0.05, z]),
        "tiny ADD": (DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_ADD_OPERATOR_DESC(
            ATensor=desc(F32, (16,)), BTensor=desc(F32, (16,)), OutputTensor=desc(F32, (16,)))),
            [row[:16], row[16:32]]),
        # The movement family's index-map copy (kernels/movement.py): affine and reversed runs,
        # fill pieces, gathered short runs, every element width.
        "JOIN f16 axis 1": (DML_OPERATOR_DESC(Desc=DML_JOIN_OPERATOR_DESC(
            InputTensors=[desc(F16, (3, 5, 7, 11, 2, 3, 4, 5)), desc(F16, (3, 2, 7, 11, 2, 3, 4, 5))],
            OutputTensor=desc(F16, (3, 7, 7, 11, 2, 3, 4, 5)), Axis=1)),
            [h, h[:, :2].copy()]),
        "PADDING1 reflection u8": (DML_OPERATOR_DESC(Desc=DML_PADDING1_OPERATOR_DESC(
            InputTensor=desc(U8, (1, 64, 1000)), OutputTensor=desc(U8, (1, 70, 1013)),
            PaddingMode=DML_PADDING_MODE_REFLECTION, PaddingValueDataType=U8, PaddingValue=0,
            StartPadding=(0, 3, 5), EndPadding=(0, 3, 8))), [a[None]]),
        "PADDING1 constant f32": (DML_OPERATOR_DESC(Desc=DML_PADDING1_OPERATOR_DESC(
            InputTensor=desc(F32, (64, 1000)), OutputTensor=desc(F32, (70, 1013)),
            PaddingMode=DML_PADDING_MODE_CONSTANT, PaddingValueDataType=F32, PaddingValue=2.5,
            StartPadding=(3, 5), EndPadding=(3, 8))), [x]),
        "DEPTH_TO_SPACE1 f32": (DML_OPERATOR_DESC(Desc=DML_DEPTH_TO_SPACE1_OPERATOR_DESC(
            InputTensor=desc(F32, (2, 16, 32, 32)), OutputTensor=desc(F32, (2, 4, 64, 64)),
            BlockSize=2, Order=DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW)), [cube.reshape(2, 16, 32, 32)]),
        # The reduction family's task kernels (kernels/tasks.py): a group at a time, groups cut
        # into chunks folded in a second phase, keys, integer folds, scans, softmax groups.
        "SOFTMAX1 f32 last axis": (DML_OPERATOR_DESC(Desc=DML_ACTIVATION_SOFTMAX1_OPERATOR_DESC(
            InputTensor=desc(F32, x.shape), OutputTensor=desc(F32, x.shape), Axes=[1])), [x]),
        "REDUCE SUM f32 first axis (chunks)": (DML_OPERATOR_DESC(Desc=DML_REDUCE_OPERATOR_DESC(
            Function=DML_REDUCE_FUNCTION_SUM, InputTensor=desc(F32, x.shape),
            OutputTensor=desc(F32, (1, 1000)), Axes=[0])), [x]),
        "REDUCE LOG_SUM_EXP f16 all": (DML_OPERATOR_DESC(Desc=DML_REDUCE_OPERATOR_DESC(
            Function=DML_REDUCE_FUNCTION_LOG_SUM_EXP, InputTensor=desc(F16, (3, 5, 7, 11)),
            OutputTensor=desc(F16, (1, 1, 1, 1)), Axes=[0, 1, 2, 3])), [h[:, :, :, :, 0, 0, 0, 0].copy()]),
        "ARGMAX u8 last axis": (DML_OPERATOR_DESC(Desc=DML_ARGMAX_OPERATOR_DESC(
            InputTensor=desc(U8, a.shape), OutputTensor=desc(DML_TENSOR_DATA_TYPE_INT64, (64, 1)),
            Axes=[1], AxisDirection=DML_AXIS_DIRECTION_DECREASING)), [a]),
        "REDUCE MULTIPLY i32": (DML_OPERATOR_DESC(Desc=DML_REDUCE_OPERATOR_DESC(
            Function=DML_REDUCE_FUNCTION_MULTIPLY, InputTensor=desc(I32, a.shape),
            OutputTensor=desc(I32, (64, 1)), Axes=[1])), [a.astype(np.int32) - 128]),
        "CUMULATIVE_SUMMATION i32 exclusive decreasing": (DML_OPERATOR_DESC(
            Desc=DML_CUMULATIVE_SUMMATION_OPERATOR_DESC(
                InputTensor=desc(I32, a.shape), OutputTensor=desc(I32, a.shape), Axis=1,
                AxisDirection=DML_AXIS_DIRECTION_DECREASING, HasExclusiveSum=True)),
            [a.astype(np.int32)]),
        # The normalization rows' task kernels (reduction/norm_kernels.py), the window engine's
        # (compute/pool_kernels.py) and MVN's (kernels/normalization.py).
        "BATCH_NORMALIZATION f32 + RELU": (DML_OPERATOR_DESC(
            Desc=DML_BATCH_NORMALIZATION_OPERATOR_DESC(
                InputTensor=desc(F32, img.shape), MeanTensor=desc(F32, chan.shape),
                VarianceTensor=desc(F32, chan.shape), ScaleTensor=desc(F32, chan.shape),
                BiasTensor=desc(F32, chan.shape), OutputTensor=desc(F32, img.shape), Spatial=True,
                Epsilon=1e-5, FusedActivation=DML_ACTIVATION_RELU_OPERATOR_DESC())),
            [img, chan, chan * chan, chan + 1, chan - 1]),
        "BATCH_NORMALIZATION_TRAINING f16": (DML_OPERATOR_DESC(
            Desc=DML_BATCH_NORMALIZATION_TRAINING_OPERATOR_DESC(
                InputTensor=desc(F16, img.shape), ScaleTensor=desc(F16, chan.shape),
                BiasTensor=desc(F16, chan.shape), FusedAddTensor=None,
                OutputTensor=desc(F16, img.shape), OutputMeanTensor=desc(F16, chan.shape),
                OutputVarianceTensor=desc(F16, chan.shape), Epsilon=1e-3, FusedActivation=None)),
            [img.astype(np.float16), chan.astype(np.float16), chan.astype(np.float16)]),
        "LP_NORMALIZATION f32 axis 0": (DML_OPERATOR_DESC(Desc=DML_LP_NORMALIZATION_OPERATOR_DESC(
            InputTensor=desc(F32, x.shape), OutputTensor=desc(F32, x.shape), Axis=0,
            Epsilon=1e-5, P=2)), [x]),
        "LOCAL_RESPONSE_NORMALIZATION f32 cross-channel": (DML_OPERATOR_DESC(
            Desc=DML_LOCAL_RESPONSE_NORMALIZATION_OPERATOR_DESC(
                InputTensor=desc(F32, img.shape), OutputTensor=desc(F32, img.shape),
                CrossChannel=True, LocalSize=3, Alpha=1e-2, Beta=0.75, Bias=1.0)), [img]),
        "MAX_POOLING2 f32 with indices": (DML_OPERATOR_DESC(Desc=DML_MAX_POOLING2_OPERATOR_DESC(
            InputTensor=desc(F32, img.shape), OutputTensor=desc(F32, (2, 8, 16, 16)),
            OutputIndicesTensor=desc(DML_TENSOR_DATA_TYPE_UINT32, (2, 8, 16, 16)),
            DimensionCount=2, Strides=[2, 2], WindowSize=[3, 3], StartPadding=[1, 1],
            EndPadding=[1, 1], Dilations=[1, 1])), [img]),
        "AVERAGE_POOLING1 f32": (DML_OPERATOR_DESC(Desc=DML_AVERAGE_POOLING1_OPERATOR_DESC(
            InputTensor=desc(F32, img.shape), OutputTensor=desc(F32, (2, 8, 30, 30)),
            DimensionCount=2, Strides=[1, 1], WindowSize=[3, 3], StartPadding=[0, 0],
            EndPadding=[0, 0], Dilations=[1, 1], IncludePadding=False)), [img]),
        "MEAN_VARIANCE_NORMALIZATION2 f16 per-column scale and bias": (DML_OPERATOR_DESC(
            Desc=DML_MEAN_VARIANCE_NORMALIZATION2_OPERATOR_DESC(
                InputTensor=desc(F16, x.shape), ScaleTensor=desc(F16, (1, 1000)),
                BiasTensor=desc(F16, (1, 1000)), OutputTensor=desc(F16, x.shape), AxisCount=1,
                Axes=[1], UseMean=True, UseVariance=True, Epsilon=1e-5, FusedActivation=None)),
            [x.astype(np.float16), row[None].astype(np.float16), row[None].astype(np.float16)]),
        # QUANTIZED_LINEAR_MATRIX_MULTIPLY's task kernels (kernels/qgemm.py, kernels/vnni.py):
        # batched, per-column B zero points (run on both paths by the test).
        "QLMM u8 batched": (DML_OPERATOR_DESC(
            Desc=DML_QUANTIZED_LINEAR_MATRIX_MULTIPLY_OPERATOR_DESC(
                ATensor=desc(U8, (4, 3, 40, 64)), AScaleTensor=desc(F32, (1, 1, 1, 1)),
                AZeroPointTensor=desc(U8, (1, 1, 1, 1)), BTensor=desc(U8, (4, 3, 64, 72)),
                BScaleTensor=desc(F32, (1, 1, 1, 1)), BZeroPointTensor=desc(U8, (1, 1, 1, 72)),
                OutputScaleTensor=desc(F32, (1, 1, 1, 1)),
                OutputZeroPointTensor=desc(U8, (1, 1, 1, 1)),
                OutputTensor=desc(U8, (4, 3, 40, 72)))),
            [a.reshape(-1)[:4 * 3 * 40 * 64].reshape(4, 3, 40, 64), one.reshape(1, 1, 1, 1) * 0.02,
             z.reshape(1, 1, 1, 1), b.reshape(-1)[:4 * 3 * 64 * 72].reshape(4, 3, 64, 72),
             one.reshape(1, 1, 1, 1) * 0.03, np.arange(72, dtype=np.uint8).reshape(1, 1, 1, 72),
             one.reshape(1, 1, 1, 1) * 0.5, z.reshape(1, 1, 1, 1)]),
        # Batched GEMM: independent single-threaded sgemm calls as claimed tasks
        # (compute/kernels.gemm_task), where the batch is at least four calls a thread.
        "GEMM f32 batched": (DML_OPERATOR_DESC(Desc=DML_GEMM_OPERATOR_DESC(
            ATensor=desc(F32, (4, 16, 24, 40)), BTensor=desc(F32, (4, 16, 40, 8)), CTensor=None,
            OutputTensor=desc(F32, (4, 16, 24, 8)), TransA=DML_MATRIX_TRANSFORM_NONE,
            TransB=DML_MATRIX_TRANSFORM_NONE, Alpha=1.0, Beta=0.0)),
            [x.reshape(-1)[:4 * 16 * 24 * 40].reshape(4, 16, 24, 40),
             x.reshape(-1)[-4 * 16 * 40 * 8:].reshape(4, 16, 40, 8), None]),
        # The recurrent loop (compute/rnn_kernels.loop: one job, its parts meeting at a barrier
        # per phase); GRU's default form has two phases a step. Tasks of 64 hidden units.
        "LSTM bidirectional": (DML_OPERATOR_DESC(Desc=DML_LSTM_OPERATOR_DESC(
            InputTensor=desc(F32, (1, 5, 16, 24)), WeightTensor=desc(F32, (1, 2, 1024, 24)),
            RecurrenceTensor=desc(F32, (1, 2, 1024, 256)), BiasTensor=None, HiddenInitTensor=None,
            CellMemInitTensor=None, SequenceLengthsTensor=None, PeepholeTensor=None,
            OutputSequenceTensor=desc(F32, (5, 2, 16, 256)), OutputSingleTensor=None,
            OutputCellSingleTensor=None, ActivationDescs=[
                DML_OPERATOR_DESC(Desc=d()) for d in (
                    DML_ACTIVATION_SIGMOID_OPERATOR_DESC, DML_ACTIVATION_TANH_OPERATOR_DESC,
                    DML_ACTIVATION_TANH_OPERATOR_DESC) * 2],
            Direction=DML_RECURRENT_NETWORK_DIRECTION_BIDIRECTIONAL, ClipThreshold=0.0,
            UseClipThreshold=False, CoupleInputForget=False)),
            [x.reshape(-1)[:5 * 16 * 24].reshape(1, 5, 16, 24),
             rng.uniform(-0.05, 0.05, (1, 2, 1024, 24)).astype(np.float32),
             rng.uniform(-0.05, 0.05, (1, 2, 1024, 256)).astype(np.float32)]),
        "GRU two phases": (DML_OPERATOR_DESC(Desc=DML_GRU_OPERATOR_DESC(
            InputTensor=desc(F32, (1, 4, 8, 24)), WeightTensor=desc(F32, (1, 1, 768, 24)),
            RecurrenceTensor=desc(F32, (1, 1, 768, 256)), BiasTensor=None, HiddenInitTensor=None,
            SequenceLengthsTensor=None, OutputSequenceTensor=desc(F32, (4, 1, 8, 256)),
            OutputSingleTensor=None, ActivationDescs=[
                DML_OPERATOR_DESC(Desc=d()) for d in (
                    DML_ACTIVATION_SIGMOID_OPERATOR_DESC, DML_ACTIVATION_TANH_OPERATOR_DESC)],
            Direction=DML_RECURRENT_NETWORK_DIRECTION_FORWARD, LinearBeforeReset=False)),
            [x.reshape(-1)[:4 * 8 * 24].reshape(1, 4, 8, 24),
             rng.uniform(-0.05, 0.05, (1, 1, 768, 24)).astype(np.float32),
             rng.uniform(-0.05, 0.05, (1, 1, 768, 256)).astype(np.float32)]),
        # The depthwise convolution's planes (compute/kernels.depthwise_task), stride 1 and 2.
        "CONVOLUTION depthwise": (DML_OPERATOR_DESC(Desc=DML_CONVOLUTION_OPERATOR_DESC(
            InputTensor=desc(F32, img.shape), FilterTensor=desc(F32, (8, 1, 3, 3)),
            BiasTensor=desc(F32, (1, 8, 1, 1)), OutputTensor=desc(F32, (2, 8, 32, 32)),
            Mode=DML_CONVOLUTION_MODE_CROSS_CORRELATION,
            Direction=DML_CONVOLUTION_DIRECTION_FORWARD, DimensionCount=2, Strides=[1, 1],
            Dilations=[1, 1], StartPadding=[1, 1], EndPadding=[1, 1], OutputPadding=[0, 0],
            GroupCount=8, FusedActivation=None)),
            [img, x.reshape(-1)[:72].reshape(8, 1, 3, 3), chan]),
        "CONVOLUTION depthwise stride 2": (DML_OPERATOR_DESC(Desc=DML_CONVOLUTION_OPERATOR_DESC(
            InputTensor=desc(F32, img.shape), FilterTensor=desc(F32, (8, 1, 3, 3)),
            BiasTensor=None, OutputTensor=desc(F32, (2, 8, 16, 16)),
            Mode=DML_CONVOLUTION_MODE_CONVOLUTION, Direction=DML_CONVOLUTION_DIRECTION_FORWARD,
            DimensionCount=2, Strides=[2, 2], Dilations=[1, 1], StartPadding=[1, 1],
            EndPadding=[0, 0], OutputPadding=[0, 0], GroupCount=8, FusedActivation=None)),
            [img, x.reshape(-1)[:72].reshape(8, 1, 3, 3), None]),
        # Attention's task kernel (compute/attention_kernels.attention_task), claimed tasks.
        "MULTIHEAD_ATTENTION boolean mask": (DML_OPERATOR_DESC(
            Desc=DML_MULTIHEAD_ATTENTION_OPERATOR_DESC(
                QueryTensor=desc(F32, (2, 40, 64)), KeyTensor=desc(F32, (2, 40, 64)),
                ValueTensor=desc(F32, (2, 40, 64)), MaskTensor=desc(I32, (2, 4, 40, 40),
                                                                     (40, 0, 0, 1)),
                OutputTensor=desc(F32, (2, 40, 64)), Scale=0.25, MaskFilterValue=-1e4,
                HeadCount=4, MaskType=DML_MULTIHEAD_ATTENTION_MASK_TYPE_BOOLEAN)),
            [x.reshape(-1)[k * 5120:(k + 1) * 5120].reshape(2, 40, 64) for k in range(3)] +
            [None, None, None, None,
             (rng.random((2, 40)) < 0.8).astype(np.int32)]),
        "SLICE1 reversed f64": (DML_OPERATOR_DESC(Desc=DML_SLICE1_OPERATOR_DESC(
            InputTensor=desc(DML_TENSOR_DATA_TYPE_FLOAT64, (64, 1000)),
            OutputTensor=desc(DML_TENSOR_DATA_TYPE_FLOAT64, (64, 500)),
            InputWindowOffsets=[0, 0], InputWindowSizes=[64, 1000],
            InputWindowStrides=[1, -2])), [x.astype(np.float64)]),
    }


@pytest.fixture
def restore():
    enabled, threads = pool.ENABLED, numba.get_num_threads()
    yield
    pool.ENABLED = enabled
    numba.set_num_threads(threads)


@pytest.mark.parametrize("name", list(_ops()))
def test_the_pool_and_the_prange_driver_write_the_same_bytes(name, restore, monkeypatch):
    op, inputs = _ops()[name]
    dev = DMLCreateDevice1()
    results = []
    for enabled in (False, True, None):
        pool.ENABLED = enabled
        results.append([o.copy() for o in dev.execute(op, inputs)])
    if name.startswith("QLMM"):  # the other path (VNNI where the CPU lacks it, or portable),
        monkeypatch.setattr(qlmm, "USE_VNNI", not vnni.HAS_VNNI)  # tasks claimed or in ranges
        for enabled, claim in ((False, True), (True, True), (True, False)):
            pool.ENABLED = enabled
            monkeypatch.setattr(qgemm, "CLAIM", claim)
            results.append([o.copy() for o in dev.execute(op, inputs)])
        a32, b32 = (inputs[k].astype(np.int64) for k in (0, 3))
        acc = (a32 - 3) @ (b32 - np.arange(72))
        want = np.clip(np.round(acc * (0.02 * 0.03 / 0.5)) + 3, 0, 255)
        # (a sanity check; test_qlmm has the exact reference)
        assert np.abs(results[0][0].astype(np.int64) - want).max() <= 1
    for other in results[1:]:
        for got, want in zip(other, results[0]):
            np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    if name.startswith("ADD1"):
        np.testing.assert_array_equal(results[1][0], np.maximum(inputs[0] + inputs[1], 0))
    if name.startswith("IDENTITY"):
        np.testing.assert_array_equal(results[1][0], inputs[0].transpose(2, 1, 0))
    if name.startswith("JOIN"):
        np.testing.assert_array_equal(results[1][0], np.concatenate(inputs, axis=1))
    if name.startswith("PADDING1 constant"):
        np.testing.assert_array_equal(results[1][0], np.pad(inputs[0], ((3, 3), (5, 8)),
                                                             constant_values=2.5))
    if name.startswith("REDUCE SUM"):
        np.testing.assert_allclose(results[1][0], inputs[0].sum(axis=0, keepdims=True),
                                   rtol=1e-5, atol=1e-5)
    if name.startswith("ARGMAX"):
        last = inputs[0].shape[1] - 1 - np.argmax(inputs[0][:, ::-1], axis=1)
        np.testing.assert_array_equal(results[1][0][:, 0], last)
    if name.startswith("CUMULATIVE"):
        rev = np.cumsum(inputs[0][:, ::-1], axis=1)[:, ::-1] - inputs[0]
        np.testing.assert_array_equal(results[1][0], rev)
    if name.startswith("MAX_POOLING2"):
        padded = np.pad(inputs[0], ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
        want = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
        np.testing.assert_array_equal(results[1][0], want[:, :, ::2, ::2].max(axis=(4, 5)))
    if name.startswith("LP_NORMALIZATION"):
        want = inputs[0] / np.sqrt((inputs[0].astype(np.float64) ** 2).sum(axis=0) + 1e-5)
        np.testing.assert_allclose(results[1][0], want, rtol=1e-6)
    if name == "CONVOLUTION depthwise":
        padded = np.pad(inputs[0], ((0, 0), (0, 0), (1, 1), (1, 1)))
        win = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
        want = np.einsum("ncijkl,ckl->ncij", win, inputs[1][:, 0]) + inputs[2]
        np.testing.assert_allclose(results[1][0], want, rtol=1e-5, atol=1e-5)
    if name.startswith("GEMM"):
        np.testing.assert_allclose(results[1][0], inputs[0] @ inputs[1], rtol=1e-4, atol=1e-4)
    if name.startswith("SLICE1"):
        np.testing.assert_array_equal(results[1][0], inputs[0][:, ::-2])


def test_the_thread_count_numba_is_told_is_the_pools(restore):
    op, inputs = _ops()["ADD1 + broadcast row + RELU"]
    dev = DMLCreateDevice1()
    want = np.maximum(inputs[0] + inputs[1], 0)
    for threads in range(1, int(vars(numba.config)["NUMBA_NUM_THREADS"]) + 1):
        numba.set_num_threads(threads)
        [y] = dev.execute(op, inputs)
        np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("enabled", [True, False])
def test_outputs_past_16_mib_are_streamed_with_their_gaps_untouched(enabled, restore):
    """Outputs of at least STREAM_BYTES with a unit innermost stride go through a buffer and
    non-temporal stores (kernels/strided.py): rows of odd length (unaligned heads and tails) in
    a padded output, with a fused activation and a broadcast input."""
    from emulator import Buffer

    pool.ENABLED = enabled
    rows, cols, pitch = 2049, 2051, 2053
    rng = np.random.default_rng(3)
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    col = rng.standard_normal((rows, 1)).astype(np.float32)
    out = desc(F32, (rows, cols), (pitch, 1))
    assert out.Desc.TotalTensorSizeInBytes >= 16 << 20
    op = DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_ADD1_OPERATOR_DESC(
        ATensor=desc(F32, a.shape), BTensor=desc(F32, a.shape, (1, 0)), OutputTensor=out,
        FusedActivation=DML_ACTIVATION_RELU_OPERATOR_DESC()))
    dev = DMLCreateDevice1()
    compiled = dev.CompileOperator(dev.CreateOperator(op))
    block = compiled.operator.plan.block
    assert block[strided.WIDTH] == 4
    assert block[strided.STREAM_FROM] == 1  # 4-byte outputs stream on any thread count
    dst = Buffer(out.Desc.TotalTensorSizeInBytes)
    raw = dst.numpy(np.float32)
    raw[:] = 7.0
    run(dev, compiled, [a, col], [dst.numpy()], "ADD1")
    view = np.lib.stride_tricks.as_strided(raw, (rows, cols), (pitch * 4, 4))
    np.testing.assert_array_equal(view, np.maximum(a + col, 0))
    gaps = raw[:(rows - 1) * pitch].reshape(rows - 1, pitch)[:, cols:]
    assert (gaps == 7.0).all()
    # FLOAT16 output (2-byte elements), contiguous.
    h = rng.standard_normal((4096, 2048)).astype(np.float16)
    cast = dev.CompileOperator(dev.CreateOperator(DML_OPERATOR_DESC(Desc=DML_CAST_OPERATOR_DESC(
        InputTensor=desc(F32, h.shape), OutputTensor=desc(F16, h.shape)))))
    assert cast.operator.plan.block[strided.STREAM_FROM] == strided.STREAM_THREADS
    cast.operator.plan.block[strided.STREAM_FROM] = 1  # (2-byte outputs: from 8 threads)
    [y] = run(dev, cast, [h.astype(np.float32)], None, "CAST")
    np.testing.assert_array_equal(y.view(np.uint16), h.view(np.uint16))
