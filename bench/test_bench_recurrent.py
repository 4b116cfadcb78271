"""LSTM (issue 17) side by side with PyTorch (``torch.nn.LSTM`` under ``torch.no_grad``) and ONNX
Runtime (a one-node LSTM, the weights as initializers), every peer at Numba's thread count.

Workload (issue 17): one forward LSTM layer, FLOAT32, hidden 512, sequence 128, batch 16,
input 512, with biases; the outputs are the whole sequence and the last hidden and cell states.
``--bench-scale`` scales the sequence length. GFLOP/s in extra_info count the two products
(2 * seq * batch * 4 * hidden * (input + hidden)); the gate math is not counted.

The emulator runs its Numba loop (``compute/rnn_kernels.py``: 16 tasks of 32 hidden units side
by side over Numba's threads, each product a single-threaded sgemm); setting
``emulator.compute.recurrent.KERNEL = False`` runs the NumPy loop instead, for comparison.

    NUMBA_NUM_THREADS=2 python -m pytest bench/test_bench_recurrent.py -p no:cacheprovider -q \\
        --benchmark-max-time=0.5 --benchmark-warmup=on --benchmark-columns=min,median,rounds
"""

from __future__ import annotations

import numpy as np
import pytest

from descriptors import *

from .harness import Prepared

HIDDEN, SEQ, BATCH, INPUT = 512, 128, 16, 512
GROUP = f"lstm f32 hidden {HIDDEN} seq {SEQ} batch {BATCH} input {INPUT}"
TORCH_ORDER = [0, 2, 3, 1]  # DirectML's and ONNX's gates i, o, f, c as PyTorch's i, f, c(g), o


@pytest.fixture(scope="module")
def data(scale):
    rng = np.random.default_rng(1)
    seq = max(1, int(SEQ * scale))
    k = 1 / np.sqrt(HIDDEN)

    def uniform(*shape):
        return rng.uniform(-k, k, shape).astype(np.float32)
    return {"x": rng.standard_normal((1, seq, BATCH, INPUT)).astype(np.float32),
            "w": uniform(1, 1, 4 * HIDDEN, INPUT), "r": uniform(1, 1, 4 * HIDDEN, HIDDEN),
            "b": uniform(1, 1, 1, 8 * HIDDEN)}


def _group(benchmark, data):
    seq = data["x"].shape[1]
    benchmark.group = GROUP
    benchmark.extra_info["gflop"] = 2.0 * seq * BATCH * 4 * HIDDEN * (INPUT + HIDDEN) / 1e9


def expected(data):
    """The page's equations in float64, the batch at once (sigmoid, tanh, tanh)."""
    x, w, r, b = (data[n].astype(np.float64) for n in ("x", "w", "r", "b"))
    w, r, b = w[0, 0], r[0, 0], b[0, 0, 0, :4 * HIDDEN] + b[0, 0, 0, 4 * HIDDEN:]
    h = np.zeros((BATCH, HIDDEN))
    c = np.zeros((BATCH, HIDDEN))
    ys = []
    for t in range(x.shape[1]):
        g = x[0, t] @ w.T + h @ r.T + b
        i, o, f, cc = (g[:, j * HIDDEN:(j + 1) * HIDDEN] for j in range(4))
        sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
        c = sig(f) * c + sig(i) * np.tanh(cc)
        h = sig(o) * np.tanh(c)
        ys.append(h)
    return np.stack(ys), h, c


def test_emulator(benchmark, data):
    x = data["x"]
    seq = x.shape[1]
    y = np.empty((seq, 1, BATCH, HIDDEN), np.float32)
    y_h = np.empty((1, 1, BATCH, HIDDEN), np.float32)
    y_c = np.empty((1, 1, BATCH, HIDDEN), np.float32)
    op = DML_LSTM_OPERATOR_DESC(
        InputTensor=tensor_desc(x), WeightTensor=tensor_desc(data["w"]),
        RecurrenceTensor=tensor_desc(data["r"]), BiasTensor=tensor_desc(data["b"]),
        OutputSequenceTensor=tensor_desc(y), OutputSingleTensor=tensor_desc(y_h),
        OutputCellSingleTensor=tensor_desc(y_c),
        ActivationDescs=[DML_ACTIVATION_SIGMOID_OPERATOR_DESC(),
                         DML_ACTIVATION_TANH_OPERATOR_DESC(), DML_ACTIVATION_TANH_OPERATOR_DESC()],
        Direction=DML_RECURRENT_NETWORK_DIRECTION.DML_RECURRENT_NETWORK_DIRECTION_FORWARD,
        ClipThreshold=0.0, UseClipThreshold=False, CoupleInputForget=False)
    run = Prepared(DML_OPERATOR_DESC(Desc=op),
                   [x, data["w"], data["r"], data["b"], None, None, None, None],
                   [y, y_h, y_c], level="6_4")
    _group(benchmark, data)
    benchmark(run)
    want_y, want_h, want_c = expected(data)
    assert np.abs(y[:, 0] - want_y).max() < 1e-4
    assert np.abs(y_h[0, 0] - want_h).max() < 1e-4 and np.abs(y_c[0, 0] - want_c).max() < 1e-3


def test_torch(benchmark, torch, data):
    lstm = torch.nn.LSTM(INPUT, HIDDEN)

    def gates(a):  # rows of four gates, reordered
        return torch.from_numpy(a.reshape(4, HIDDEN, *a.shape[1:])[TORCH_ORDER]
                                .reshape(a.shape).copy())
    b = data["b"][0, 0, 0]
    with torch.no_grad():
        lstm.weight_ih_l0.copy_(gates(data["w"][0, 0]))
        lstm.weight_hh_l0.copy_(gates(data["r"][0, 0]))
        lstm.bias_ih_l0.copy_(gates(b[:4 * HIDDEN]))
        lstm.bias_hh_l0.copy_(gates(b[4 * HIDDEN:]))
    x = torch.from_numpy(data["x"][0])

    def run():
        with torch.no_grad():
            return lstm(x)
    _group(benchmark, data)
    y, _ = benchmark(run)
    assert np.abs(y.numpy() - expected(data)[0]).max() < 1e-4


def test_onnxruntime(benchmark, ort, data):
    h = ort.onnx.helper
    f32 = ort.onnx.TensorProto.FLOAT
    x = data["x"][0]
    seq = x.shape[0]
    inits = [ort.onnx.numpy_helper.from_array(data["w"][0], "w"),
             ort.onnx.numpy_helper.from_array(data["r"][0], "r"),
             ort.onnx.numpy_helper.from_array(data["b"][0, 0], "b")]
    sess = ort(h.make_node("LSTM", ["x", "w", "r", "b"], ["y", "y_h", "y_c"],
                           hidden_size=HIDDEN),
               [h.make_tensor_value_info("x", f32, x.shape)],
               [h.make_tensor_value_info("y", f32, (seq, 1, BATCH, HIDDEN)),
                h.make_tensor_value_info("y_h", f32, (1, BATCH, HIDDEN)),
                h.make_tensor_value_info("y_c", f32, (1, BATCH, HIDDEN))], inits)
    _group(benchmark, data)
    y, _, _ = benchmark(sess.run, None, {"x": x})
    assert np.abs(y[:, 0] - expected(data)[0]).max() < 1e-4
