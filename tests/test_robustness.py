"""Robustness: 64-bit addressing, several Python threads sharing one device, identical bytes
whatever the thread count, and flat memory over many operators."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from descriptors import *
from emulator import Buffer, DMLCreateDevice1

from .helpers import desc

U8 = DML_TENSOR_DATA_TYPE_UINT8
ROOT = Path(__file__).parent.parent


def test_byte_offsets_past_two_gibibytes_are_read_and_written():
    """UINT8 sizes {2, 1} with strides {2^31, 1}: the second element lies past 2^31 bytes."""
    dev = DMLCreateDevice1()
    big = desc(U8, [2, 1], [2**31, 1])
    src = Buffer(big.Desc.TotalTensorSizeInBytes)  # zero pages are mapped lazily
    raw = src.numpy()
    raw[0], raw[2**31] = 7, 9
    op = DML_OPERATOR_DESC(Desc=DML_SLICE1_OPERATOR_DESC(
        InputTensor=big, OutputTensor=desc(U8, [2, 1]), InputWindowOffsets=[0, 0],
        InputWindowSizes=[2, 1], InputWindowStrides=[-1, 1]))
    [y] = dev.execute(op, [raw])
    assert y.ravel().tolist() == [9, 7]
    topk = DML_OPERATOR_DESC(Desc=DML_TOP_K1_OPERATOR_DESC(
        InputTensor=big, OutputValueTensor=desc(U8, [1, 1]),
        OutputIndexTensor=desc(DML_TENSOR_DATA_TYPE_UINT32, [1, 1]), Axis=0, K=1,
        AxisDirection=DML_AXIS_DIRECTION_DECREASING))
    [v, i] = dev.execute(topk, [raw])
    assert (v.item(), i.item()) == (9, 1)
    dst = Buffer(big.Desc.TotalTensorSizeInBytes)
    write = DML_OPERATOR_DESC(Desc=DML_SLICE1_OPERATOR_DESC(
        InputTensor=desc(U8, [2, 1]), OutputTensor=big, InputWindowOffsets=[0, 0],
        InputWindowSizes=[2, 1], InputWindowStrides=[1, 1]))
    dev.execute(write, [np.array([[3], [4]], np.uint8)], [dst.numpy()])
    out = dst.numpy()
    assert (out[0], out[2**31]) == (3, 4)
    assert not out[1:4096].any() and not out[2**31 - 4096:2**31].any()


def workloads(seed: int):
    """(operator desc, inputs) of each family, on data of their own."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((4, 6, 33)).astype(np.float32)
    a = rng.integers(0, 256, (2, 9, 20)).astype(np.uint8)
    b = rng.integers(-128, 128, (2, 20, 11)).astype(np.int8)
    one = np.ones((1, 1, 1), np.float32)
    long = rng.integers(-3, 4, (1, 40_000)).astype(np.float16)  # many ties
    g = rng.standard_normal((2, 4, 24, 24)).astype(np.float32)
    wide = rng.standard_normal((50, 2000)).astype(np.float32)
    return [
        (DML_OPERATOR_DESC(Desc=DML_SLICE1_OPERATOR_DESC(
            InputTensor=tensor_desc(x), OutputTensor=tensor_desc((4, 3, 11), DML_TENSOR_DATA_TYPE_FLOAT32),
            InputWindowOffsets=[0, 0, 0], InputWindowSizes=[4, 6, 33],
            InputWindowStrides=[1, -2, 3])), [x]),
        (DML_OPERATOR_DESC(Desc=DML_TOP_K1_OPERATOR_DESC(
            InputTensor=tensor_desc(x), OutputValueTensor=tensor_desc((4, 6, 5), DML_TENSOR_DATA_TYPE_FLOAT32),
            OutputIndexTensor=tensor_desc((4, 6, 5), DML_TENSOR_DATA_TYPE_UINT32), Axis=2, K=5,
            AxisDirection=DML_AXIS_DIRECTION_INCREASING)), [x]),
        # One long sequence: how TOP_K splits it across threads depends on the thread count.
        (DML_OPERATOR_DESC(Desc=DML_TOP_K1_OPERATOR_DESC(
            InputTensor=tensor_desc(long), OutputValueTensor=tensor_desc((1, 7), DML_TENSOR_DATA_TYPE_FLOAT16),
            OutputIndexTensor=tensor_desc((1, 7), DML_TENSOR_DATA_TYPE_UINT32), Axis=1, K=7,
            AxisDirection=DML_AXIS_DIRECTION_DECREASING)), [long]),
        (DML_OPERATOR_DESC(Desc=DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC(
            InputTensor=tensor_desc(x), OutputTensor=tensor_desc(x), Axes=[1, 2],
            NormalizeVariance=True, Epsilon=1e-5,
            FusedActivation=DML_ACTIVATION_ELU_OPERATOR_DESC(Alpha=0.5))), [x]),
        (DML_OPERATOR_DESC(Desc=DML_QUANTIZED_LINEAR_MATRIX_MULTIPLY_OPERATOR_DESC(
            ATensor=tensor_desc(a), AScaleTensor=tensor_desc(one * 0.02), BTensor=tensor_desc(b),
            BScaleTensor=tensor_desc(one * 0.03), OutputScaleTensor=tensor_desc(one * 0.5),
            OutputTensor=tensor_desc((2, 9, 11), DML_TENSOR_DATA_TYPE_UINT8))),
         [a, one * 0.02, None, b, one * 0.03, None, one * 0.5, None]),
        # A batch of 8 products: side by side on the BLAS's pool, one per thread.
        (DML_OPERATOR_DESC(Desc=DML_GEMM_OPERATOR_DESC(
            ATensor=tensor_desc(g), BTensor=tensor_desc(g), OutputTensor=tensor_desc(g),
            TransA=DML_MATRIX_TRANSFORM_NONE, TransB=DML_MATRIX_TRANSFORM_TRANSPOSE, Alpha=0.5,
            Beta=0.0, FusedActivation=DML_ACTIVATION_TANH_OPERATOR_DESC())), [g, g, None]),
        # Element-wise: large enough to run on several of the pool's threads.
        (DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_ADD1_OPERATOR_DESC(
            ATensor=tensor_desc(wide), BTensor=tensor_desc(wide), OutputTensor=tensor_desc(wide),
            FusedActivation=DML_ACTIVATION_RELU_OPERATOR_DESC())), [wide, wide[::-1].copy()]),
    ]


def run_all(device, seed):
    return [[o.copy() for o in device.execute(op, inputs)] for op, inputs in workloads(seed)]


def test_threads_sharing_one_device_match_serial_results():
    device = DMLCreateDevice1()
    seeds = list(range(8))
    serial = {s: run_all(device, s) for s in seeds}
    results: dict[int, list] = {}
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        try:
            for _ in range(3):
                results[seed] = run_all(device, seed)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in seeds]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    for s in seeds:
        for got, want in zip(results[s], serial[s]):
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))


DIGEST = """
import hashlib, json, sys
sys.path.insert(0, {root!r})
from emulator import DMLCreateDevice1
from tests.test_robustness import run_all
outs = run_all(DMLCreateDevice1(), 3)
print(json.dumps([hashlib.sha256(b"".join(o.tobytes() for o in op)).hexdigest() for op in outs]))
"""


def test_identical_bytes_for_any_thread_count():
    """NUMBA_NUM_THREADS changes how work is split (TOP_K chunks, parallel loops), never the
    bytes. 16 threads on a small machine still splits the work 16 ways (also checked on a 16-core
    machine)."""
    digests = []
    for threads in ("1", "2", "16"):
        env = dict(os.environ, NUMBA_NUM_THREADS=threads)
        r = subprocess.run([sys.executable, "-c", DIGEST.format(root=str(ROOT))],
                           capture_output=True, text=True, env=env, check=False)
        assert r.returncode == 0, r.stderr
        digests.append(json.loads(r.stdout.splitlines()[-1]))
    assert digests[0] == digests[1] == digests[2]


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_memory_stays_flat_over_ten_thousand_operators():
    device = DMLCreateDevice1()
    x = np.arange(64, dtype=np.float32)

    def one(i: int) -> None:
        op = DML_OPERATOR_DESC(Desc=DML_SLICE1_OPERATOR_DESC(
            InputTensor=tensor_desc(x), OutputTensor=tensor_desc((8,), DML_TENSOR_DATA_TYPE_FLOAT32),
            InputWindowOffsets=[i % 8], InputWindowSizes=[56], InputWindowStrides=[7]))
        device.execute(op, [x])

    for i in range(500):  # warm up: kernels compiled or loaded, allocator pools filled
        one(i)
    gc.collect()
    before = rss_mb()
    for i in range(10_000):
        one(i)
    gc.collect()
    assert rss_mb() - before < 20, f"grew by {rss_mb() - before:.1f} MB"


def test_threads_are_safe_under_the_workqueue_layer_too():
    """Numba's workqueue layer aborts on concurrent launches; the emulator serialises them."""
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
            "from tests.test_robustness import test_threads_sharing_one_device_match_serial_results as t; "
            "t(); print('ok')")
    env = dict(os.environ, NUMBA_THREADING_LAYER="workqueue")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       check=False, timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-2000:]


def test_float_kernels_address_past_two_gibibytes():
    """An activation and MVN read and write FLOAT32 elements 2^31 bytes apart."""
    dev = DMLCreateDevice1()
    f32 = DML_TENSOR_DATA_TYPE_FLOAT32
    big = desc(f32, [2, 1], [2**29, 1])  # the second element starts at byte 2^31
    src = Buffer(big.Desc.TotalTensorSizeInBytes)
    x = src.numpy(np.float32)
    x[0], x[2**29] = -2.0, 3.0
    relu = DML_OPERATOR_DESC(Desc=DML_ACTIVATION_RELU_OPERATOR_DESC(InputTensor=big,
                                                                    OutputTensor=big))
    dst = Buffer(big.Desc.TotalTensorSizeInBytes)
    dev.execute(relu, [src.numpy()], [dst.numpy()])
    y = dst.numpy(np.float32)
    assert (y[0], y[2**29]) == (0.0, 3.0)
    mvn = DML_OPERATOR_DESC(Desc=DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC(
        InputTensor=big, OutputTensor=big, Axes=[0], NormalizeVariance=False, Epsilon=0.0))
    dev.execute(mvn, [src.numpy()], [dst.numpy()])
    assert (y[0], y[2**29]) == (-2.5, 2.5)


FORK = """
import os, sys
sys.path.insert(0, {root!r})
import numba
from emulator import DMLCreateDevice1
from tests.test_robustness import run_all
first = run_all(DMLCreateDevice1(), 5)
pid = os.fork()
if pid == 0:
    again = run_all(DMLCreateDevice1(), 5)
    same = all(a.tobytes() == b.tobytes() for x, y in zip(first, again) for a, b in zip(x, y))
    os._exit(0 if same else 3)
_, status = os.waitpid(pid, 0)
print(numba.threading_layer(), os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() on this platform")
def test_a_forked_child_dispatches_after_the_parent_did():
    """Numba's default GNU OpenMP layer kills a child forked after a parallel launch; the emulator
    asks for a fork-safe layer (TBB, else workqueue) unless the user chose one."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}
    r = subprocess.run([sys.executable, "-c", FORK.format(root=str(ROOT))], capture_output=True,
                       text=True, env=env, check=False, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    layer, child = r.stdout.split()[-2:]
    assert layer in ("tbb", "workqueue"), layer
    assert child == "0", f"the forked child failed (exit {child}): {r.stderr[-2000:]}"


def test_the_users_threading_layer_wins():
    code = ("import numba, emulator.kernels.jit as j; print(numba.config.THREADING_LAYER)")
    env = dict(os.environ, NUMBA_THREADING_LAYER="workqueue")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       check=True, cwd=ROOT)
    assert r.stdout.strip() == "workqueue"
