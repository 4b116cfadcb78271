"""RNN, LSTM and GRU (``emulator/compute/recurrent.py``): random descs of both data types in every
direction, with and without each optional tensor (bias, hidden and cell init, peephole, sequence
lengths including 0 and lengths past seq_length), every output present or absent, LSTM's clip and
coupled input/forget gates, GRU's LinearBeforeReset, every activation a recurrent operator
accepts; inputs in random padded and zero-stride layouts, outputs in padded layouts whose gaps
must stay untouched; hand-computed steps that pin the gate order; NaN and inf; the BLAS path and
the NumPy fallback.

**The bound** (docs/decisions.md, "Recurrent networks"): the kernel computes in FLOAT32 (FLOAT16
widened exactly), the reference in float64. One step's error is that of FLOAT32 dot products of
K = input_size + hidden_size terms plus the biases ((K + 2) * 2**-24 times the sum of the terms'
magnitudes, the GEMM bound) and a few ULP from each activation and gate product. The tests draw
weights in [-1/K, 1/K], so one step's map from (H, C) to the next is not expanding for
activations of slope at most 1 (each row of R sums to at most 1 in magnitude) and the errors of
the steps add up instead of growing; an activation of larger slope s multiplies them by at most s
per step. Hence, with A = max(1, the largest |value| of the reference's outputs and inputs):

    |Output - reference| <= seq_length * (K + 16) * 2**-24 * A * S**seq_length

(S = 1, or the activations' slope bound) plus one ULP of the output type for the rounding on
store (half an ULP, and the error may move a value across a rounding boundary).
"""

from __future__ import annotations

import numpy as np
import pytest

from descriptors import *
from emulator import DMLCreateDevice1
from emulator.activations import ACTIVATIONS
from emulator.compute import blas, recurrent
from emulator.registry import REGISTRY

from .helpers import SENTINEL, addressed_mask, desc, layout, logical, strided_buffer
from .test_activations import PARAMS

T = DML_TENSOR_DATA_TYPE
OP = DML_OPERATOR_TYPE
DIR = DML_RECURRENT_NETWORK_DIRECTION
F32, F16, U32 = T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16, \
    T.DML_TENSOR_DATA_TYPE_UINT32
DTYPES = {F32: np.float32, F16: np.float16}
U = 2.0 ** -24
GATES = {OP.DML_OPERATOR_RNN: 1, OP.DML_OPERATOR_GRU: 3, OP.DML_OPERATOR_LSTM: 4}
PER_DIRECTION = {OP.DML_OPERATOR_RNN: 1, OP.DML_OPERATOR_GRU: 2, OP.DML_OPERATOR_LSTM: 3}
DEFAULT_ACTS = {OP.DML_OPERATOR_RNN: ["TANH"], OP.DML_OPERATOR_GRU: ["SIGMOID", "TANH"],
                OP.DML_OPERATOR_LSTM: ["SIGMOID", "TANH", "TANH"]}
DESCS = {OP.DML_OPERATOR_RNN: DML_RNN_OPERATOR_DESC, OP.DML_OPERATOR_GRU: DML_GRU_OPERATOR_DESC,
         OP.DML_OPERATOR_LSTM: DML_LSTM_OPERATOR_DESC}
OUTPUTS = {OP.DML_OPERATOR_RNN: ("OutputSequenceTensor", "OutputSingleTensor"),
           OP.DML_OPERATOR_GRU: ("OutputSequenceTensor", "OutputSingleTensor"),
           OP.DML_OPERATOR_LSTM: ("OutputSequenceTensor", "OutputSingleTensor",
                                  "OutputCellSingleTensor")}
RECURRENT_ACTS = [a for a in ACTIVATIONS if a.fusable_from] + ["CLIP"]


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="6_4")


def act_desc(name):
    """(an activation desc by name, the bound on its slope)."""
    if name == "CLIP":
        return DML_ELEMENT_WISE_CLIP_OPERATOR_DESC(Min=-0.75, Max=0.5), 1.0
    act = next(a for a in ACTIVATIONS if a.name == name)
    params = PARAMS.get(name, ())
    cls = OPERATOR_DESC_CLASSES[act.operator]
    slope = 1.0 if name in ("SIGMOID", "TANH") else \
        2.0 * float(np.prod([1.0 + abs(p) for p in params])) if params else 2.0
    return cls(**dict(zip(act.params, params))), slope


def dispatch(device, rng, op, dt, seq, batch, inputs, hidden, directions, *, bias=False,
             h0=False, c0=False, peephole=False, lens=None, outputs=None, acts=None,
             values=None, **attributes):
    """One dispatch through random layouts: returns ({output: (got, want)}, the inputs' logical
    arrays as float64, the activations' slope bound)."""
    nd = 2 if directions == DIR.DML_RECURRENT_NETWORK_DIRECTION_BIDIRECTIONAL else 1
    g = GATES[op]
    if op == OP.DML_OPERATOR_GRU:
        attributes.setdefault("LinearBeforeReset", False)
    if op == OP.DML_OPERATOR_LSTM:
        for name, value in (("ClipThreshold", 0.0), ("UseClipThreshold", False),
                            ("CoupleInputForget", False)):
            attributes.setdefault(name, value)
    k = inputs + hidden
    scale = 1.0 / k
    dtype = DTYPES[dt]
    sizes = {"InputTensor": (1, seq, batch, inputs), "WeightTensor": (1, nd, g * hidden, inputs),
             "RecurrenceTensor": (1, nd, g * hidden, hidden)}
    if bias:
        sizes["BiasTensor"] = (1, 1, nd, 2 * g * hidden)
    if h0:
        sizes["HiddenInitTensor"] = (1, nd, batch, hidden)
    if c0:
        sizes["CellMemInitTensor"] = (1, nd, batch, hidden)
    if peephole:
        sizes["PeepholeTensor"] = (1, 1, nd, 3 * hidden)
    fields, raws, arrays = {}, {}, {}
    for name, s in sizes.items():
        given = values is not None and name in values
        strides = layout(rng, s, not given or np.ndim(values[name]) == 0)  # no aliasing of
        # distinct given values
        raw = strided_buffer(rng, dt, s, strides, fill=0)
        view = logical(raw, dtype, s, strides)
        if given:
            data = values[name]
        elif name in ("WeightTensor", "RecurrenceTensor", "PeepholeTensor"):
            data = rng.uniform(-scale, scale, s)
        else:
            data = rng.standard_normal(s)
        view[...] = np.broadcast_to(np.asarray(data, np.float64), s).astype(dtype)
        fields[name], raws[name], arrays[name] = desc(dt, s, strides), raw, np.array(view)
    if lens is not None:
        raw = np.asarray(lens, np.uint32).view(np.uint8).copy()
        fields["SequenceLengthsTensor"], raws["SequenceLengthsTensor"] = \
            desc(U32, [1, 1, 1, batch]), raw
        arrays["SequenceLengthsTensor"] = np.asarray(lens, np.uint32).reshape(1, 1, 1, batch)
    names = acts or DEFAULT_ACTS[op] * nd
    descs = [act_desc(a) for a in names]
    slope = max(s for _, s in descs)
    out_sizes = {"OutputSequenceTensor": (seq, nd, batch, hidden),
                 "OutputSingleTensor": (1, nd, batch, hidden),
                 "OutputCellSingleTensor": (1, nd, batch, hidden)}
    wanted = outputs if outputs is not None else OUTPUTS[op]
    out_raws, out_strides = {}, {}
    for name in wanted:
        out_strides[name] = layout(rng, out_sizes[name], False)
        out_raws[name] = strided_buffer(rng, dt, out_sizes[name], out_strides[name],
                                        fill=SENTINEL)
        fields[name] = desc(dt, out_sizes[name], out_strides[name])
    op_desc = DESCS[op](**fields, ActivationDescs=[d for d, _ in descs], Direction=directions,
                        **attributes)
    snapshot = {n: r.copy() for n, r in raws.items()}
    device.execute(op_desc, raws, out_raws)
    for n, r in raws.items():
        assert (r == snapshot[n]).all(), f"input {n} was changed"
    v = device.CreateOperator(op_desc).validated.values
    want = REGISTRY[op].module.reference(v, arrays)
    result = {}
    for name in wanted:
        s, strides = out_sizes[name], out_strides[name]
        untouched = ~addressed_mask(out_raws[name].size, np.dtype(dtype).itemsize, s, strides)
        assert (out_raws[name][untouched] == SENTINEL).all(), f"a gap of {name} was written"
        got = np.array(logical(out_raws[name], dtype, s, strides)).astype(np.float64)
        result[name] = (got, want[name].astype(np.float64))
    return result, {n: a.astype(np.float64) for n, a in arrays.items()}, slope


def check(result, arrays, seq, k, dt, slope=1.0):
    """Every output within the stated bound (module doc); NaN where the reference has NaN."""
    finite = [np.abs(a[np.isfinite(a)]) for a in arrays.values()] + \
        [np.abs(w[np.isfinite(w)]) for _, w in result.values()]
    magnitude = max([1.0] + [float(f.max()) for f in finite if f.size])
    bound = max(seq, 1) * (k + 16) * U * magnitude * slope ** seq
    dtype = None
    for name, (got, want) in result.items():
        dtype = np.float16 if got.dtype == np.float16 else dtype
        ulp = np.spacing(np.abs(want).astype(np.float16 if dt == F16 else np.float32))
        with np.errstate(invalid="ignore"):
            ok = (np.abs(got - want) <= bound + ulp.astype(np.float64)) | (got == want) | \
                (np.isnan(got) & np.isnan(want))
        assert ok.all(), (name, got[~ok], want[~ok], bound)


DIRECTIONS = list(DIR.__members__.values())


@pytest.mark.parametrize("op", list(GATES))
@pytest.mark.parametrize("dt", [F32, F16])
@pytest.mark.parametrize("direction", DIRECTIONS, ids=lambda d: d.name.split("_")[-1])
def test_random_descs_agree_with_the_reference(device, op, dt, direction):
    rng = np.random.default_rng([int(op), int(dt), int(direction)])
    for case in range(6):
        seq, batch = int(rng.integers(1, 6)), int(rng.integers(1, 4))
        inputs, hidden = int(rng.integers(1, 6)), int(rng.integers(1, 5))
        lens = None
        if case % 2:
            lens = rng.integers(0, seq + 2, batch)  # 0 and past seq_length included
        extra = {}
        if op == OP.DML_OPERATOR_LSTM:
            extra = {"c0": bool(rng.integers(2)), "peephole": bool(rng.integers(2)),
                     "UseClipThreshold": bool(rng.integers(2)), "ClipThreshold": 0.75,
                     "CoupleInputForget": bool(rng.integers(2))}
        elif op == OP.DML_OPERATOR_GRU:
            extra = {"LinearBeforeReset": bool(case % 3 == 0)}
        outputs = [n for n in OUTPUTS[op] if rng.random() < 0.8] or [OUTPUTS[op][0]]
        result, arrays, _ = dispatch(device, rng, op, dt, seq, batch, inputs, hidden, direction,
                                     bias=bool(rng.integers(2)), h0=bool(rng.integers(2)),
                                     lens=lens, outputs=outputs, **extra)
        check(result, arrays, seq, inputs + hidden, dt)


@pytest.mark.parametrize("act", RECURRENT_ACTS, ids=lambda a: a if isinstance(a, str) else a.name)
def test_every_recurrent_activation(device, act):
    name = act if isinstance(act, str) else act.name
    rng = np.random.default_rng(list(name.encode()))
    bi = DIR.DML_RECURRENT_NETWORK_DIRECTION_BIDIRECTIONAL
    for op in GATES:  # the activation as each operator's every function, in both directions
        result, arrays, slope = dispatch(device, rng, op, F32, 3, 2, 3, 3, bi, bias=True,
                                         h0=True, acts=[name] * (2 * PER_DIRECTION[op]))
        check(result, arrays, 3, 6, F32, slope)


def test_hand_computed_lstm_steps_pin_the_gate_order(device):
    # Zero weights: each gate is its bias alone. Biases (W and R halves add) in the order i, o, f,
    # c: sigmoid(ln 3) = 0.75, sigmoid(0) = 0.5, sigmoid(-ln 3) = 0.25, tanh(atanh 0.5) = 0.5.
    # From C0 = 1: C1 = 0.25 * 1 + 0.75 * 0.5 = 0.625, H1 = 0.5 * tanh(0.625);
    # C2 = 0.25 * 0.625 + 0.375 = 0.53125, H2 = 0.5 * tanh(0.53125).
    b = np.array([np.log(3) / 2, 0, -np.log(3) / 2, np.arctanh(0.5) / 2] * 2)
    values = {"WeightTensor": 0.0, "RecurrenceTensor": 0.0, "BiasTensor": b,
              "CellMemInitTensor": 1.0, "InputTensor": 7.0}
    result, _, _ = dispatch(device, np.random.default_rng(1), OP.DML_OPERATOR_LSTM, F32, 2, 1, 1,
                            1, DIR.DML_RECURRENT_NETWORK_DIRECTION_FORWARD, bias=True, c0=True,
                            values=values)
    seq_got = result["OutputSequenceTensor"][0].ravel()
    np.testing.assert_allclose(seq_got, [0.5 * np.tanh(0.625), 0.5 * np.tanh(0.53125)],
                               rtol=1e-6)
    assert result["OutputCellSingleTensor"][0].ravel() == pytest.approx([0.53125], rel=1e-6)
    assert result["OutputSingleTensor"][0].ravel() == pytest.approx(seq_got[-1:], rel=1e-6)


def test_hand_computed_gru_and_rnn_steps(device):
    # GRU, zero weights: z = sigmoid(ln 3) = 0.75, h = tanh(atanh 0.5) = 0.5, so
    # H = 0.25 * 0.5 + 0.75 * H: from H0 = 2, 1.625 then 1.34375 (z, r, h order).
    b = np.array([np.log(3), 5.0, np.arctanh(0.5), 0, 0, 0])
    values = {"WeightTensor": 0.0, "RecurrenceTensor": 0.0, "BiasTensor": b,
              "HiddenInitTensor": 2.0}
    for lbr in (False, True):
        result, _, _ = dispatch(device, np.random.default_rng(2), OP.DML_OPERATOR_GRU, F32, 2, 1,
                                1, 1, DIR.DML_RECURRENT_NETWORK_DIRECTION_FORWARD, bias=True,
                                h0=True, values=values, LinearBeforeReset=lbr)
        np.testing.assert_allclose(result["OutputSequenceTensor"][0].ravel(), [1.625, 1.34375],
                                   rtol=1e-6)
    # RNN backward with lengths {2, 0, 1}: H = tanh(X * 0.5 + H * 0.25), X[t, n] = t + 1 + 10n;
    # the backward direction starts at each item's last step; steps past a length are zeros, and
    # an empty sequence's last state is zero.
    x = (np.arange(3)[:, None] + 1 + 10 * np.arange(3)).reshape(1, 3, 3, 1)
    values = {"InputTensor": x, "WeightTensor": 0.5, "RecurrenceTensor": 0.25}
    result, _, _ = dispatch(device, np.random.default_rng(3), OP.DML_OPERATOR_RNN, F32, 3, 3, 1,
                            1, DIR.DML_RECURRENT_NETWORK_DIRECTION_BACKWARD, lens=[2, 0, 1],
                            values=values)
    h1 = np.tanh(2 * 0.5)  # item 0: t = 1 first, then t = 0
    h0 = np.tanh(1 * 0.5 + h1 * 0.25)
    h2 = np.tanh(21 * 0.5)  # item 2: t = 0 only
    want = np.zeros((3, 1, 3, 1))
    want[1, 0, 0], want[0, 0, 0], want[0, 0, 2] = h1, h0, h2
    np.testing.assert_allclose(result["OutputSequenceTensor"][0], want, rtol=1e-6)
    np.testing.assert_allclose(result["OutputSingleTensor"][0].ravel(), [h0, 0, h2], rtol=1e-6)


def test_clip_and_coupled_forget_gate(device):
    # One unit, zero weights, biases i: 4, o: 0, f: ignored (coupled: f = 1 - i), c: 3 (both
    # halves add); clipped at 1: i = sigmoid(1), c = tanh(1), C1 = (1 - i) * C0 + i * c, and
    # h's input C1 clipped too (C0 = 5 keeps C1 above 1), so H1 = sigmoid(0) * tanh(1).
    b = np.array([2, 0, 100, 1.5] * 2)
    values = {"WeightTensor": 0.0, "RecurrenceTensor": 0.0, "BiasTensor": b,
              "CellMemInitTensor": 5.0}
    result, _, _ = dispatch(device, np.random.default_rng(4), OP.DML_OPERATOR_LSTM, F32, 1, 1, 1,
                            1, DIR.DML_RECURRENT_NETWORK_DIRECTION_FORWARD, bias=True, c0=True,
                            values=values, UseClipThreshold=True, ClipThreshold=1.0,
                            CoupleInputForget=True)
    i = 1 / (1 + np.exp(-1.0))
    c1 = (1 - i) * 5 + i * np.tanh(1.0)
    assert result["OutputCellSingleTensor"][0].ravel() == pytest.approx([c1], rel=1e-6)
    assert result["OutputSingleTensor"][0].ravel() == pytest.approx([0.5 * np.tanh(1.0)],
                                                                    rel=1e-6)


def test_non_finite_inputs_stay_in_their_batch_item(device):
    # NaN in item 0's first step, inf in item 1's: NaN spreads through item 0's later steps
    # only; tanh(inf) = 1 and sigmoid(inf) = 1 keep item 1 finite, as the formulas say.
    x = np.ones((1, 3, 3, 2))
    x[0, 0, 0, 0], x[0, 0, 1, 1] = np.nan, np.inf
    fwd = DIR.DML_RECURRENT_NETWORK_DIRECTION_FORWARD
    rng = np.random.default_rng(5)
    for op in GATES:
        result, arrays, _ = dispatch(device, rng, op, F32, 3, 3, 2, 2, fwd, bias=True,
                                     values={"InputTensor": x})
        got, _want = result["OutputSequenceTensor"]
        assert np.isnan(got[:, 0, 0]).all() and not np.isnan(got[:, 0, 2]).any()
        check(result, arrays, 3, 4, F32)
        # ELEMENT_WISE_CLIP as every activation: Direct3D's max gives Min for NaN, so nothing
        # stays NaN.
        result, arrays, _ = dispatch(device, rng, op, F32, 3, 3, 2, 2, fwd, bias=True,
                                     values={"InputTensor": x},
                                     acts=["CLIP"] * PER_DIRECTION[op])
        assert not np.isnan(result["OutputSequenceTensor"][0]).any()
        check(result, arrays, 3, 4, F32)


KERNEL_CASES = [  # (op, attributes): each form of each operator's gate math
    (OP.DML_OPERATOR_RNN, {}),
    (OP.DML_OPERATOR_GRU, {"LinearBeforeReset": False}),
    (OP.DML_OPERATOR_GRU, {"LinearBeforeReset": True}),
    (OP.DML_OPERATOR_LSTM, {"peephole": True, "c0": True}),
    (OP.DML_OPERATOR_LSTM, {"peephole": True, "UseClipThreshold": True, "ClipThreshold": 0.5,
                            "CoupleInputForget": True}),
]


@pytest.mark.parametrize("op, extra", KERNEL_CASES, ids=lambda c: getattr(c, "name", "")[13:]
                         or "-".join(k for k, val in c.items() if val is True) or "plain")
def test_the_kernel_and_the_numpy_loops_agree(device, monkeypatch, op, extra):
    # The Numba loop (rnn_kernels.py, here in three tasks of 8, 8 and 4 hidden units), the
    # NumPy loop over direct sgemm calls, and the NumPy loop over np.matmul (no direct BLAS):
    # each within the bound of the reference, so within twice the bound of each other.
    monkeypatch.setattr(recurrent, "MIN_TASK_FLOPS", 0)
    assert recurrent.block(20, GATES[op], 3) == 8
    case = {"op": op, "dt": F32, "seq": 6, "batch": 3, "inputs": 5, "hidden": 20,
            "directions": DIR.DML_RECURRENT_NETWORK_DIRECTION_BIDIRECTIONAL, "bias": True,
            "h0": True, "lens": [6, 2, 0], **extra}
    results = []
    for kernel, direct in ((True, True), (False, True), (False, False)):
        monkeypatch.setattr(recurrent, "KERNEL", kernel)
        monkeypatch.setattr(blas, "DIRECT", direct)
        result, arrays, _ = dispatch(device, np.random.default_rng(6), **case)
        check(result, arrays, 6, 25, F32)
        results.append(result)
    bound = 6 * (25 + 16) * U * max(1.0, *(float(np.abs(w).max()) for _, w in results[0].values()),
                                    *(float(np.abs(a).max()) for a in arrays.values()))
    for name, (got, want) in results[0].items():
        for other in results[1:]:
            np.testing.assert_array_equal(want, other[name][1])
            assert np.abs(got - other[name][0]).max() <= 2 * bound + 2 * np.spacing(
                np.float32(np.abs(want).max())), name


def test_the_kernel_gives_the_same_bytes_at_any_thread_count(device, monkeypatch):
    # Four tasks of 64 hidden units (16 x 256 x 256 per task and step), each product one
    # single-threaded sgemm: which thread runs a task does not change its bytes. (A product
    # threaded by the BLAS itself does: OpenBLAS 0.3.31 gave other bytes at 1 and 2 threads.)
    import numba

    assert recurrent.block(256, 4, 16) == 64
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 4, 16, 16)).astype(np.float32)
    w = rng.uniform(-1 / 272, 1 / 272, (1, 2, 1024, 16)).astype(np.float32)
    r = rng.uniform(-1 / 272, 1 / 272, (1, 2, 1024, 256)).astype(np.float32)
    b = rng.standard_normal((1, 1, 2, 2048)).astype(np.float32)

    def run():
        y = np.zeros((4, 2, 16, 256), np.float32)
        y_c = np.zeros((1, 2, 16, 256), np.float32)
        device.execute(DML_LSTM_OPERATOR_DESC(
            InputTensor=tensor_desc(x), WeightTensor=tensor_desc(w),
            RecurrenceTensor=tensor_desc(r), BiasTensor=tensor_desc(b),
            OutputSequenceTensor=tensor_desc(y), OutputCellSingleTensor=tensor_desc(y_c),
            ActivationDescs=[act_desc(a)[0] for a in DEFAULT_ACTS[OP.DML_OPERATOR_LSTM] * 2],
            Direction=DIR.DML_RECURRENT_NETWORK_DIRECTION_BIDIRECTIONAL, ClipThreshold=0.0,
            UseClipThreshold=False, CoupleInputForget=False), [x, w, r, b], [y, None, y_c])
        return y, y_c

    before = numba.get_num_threads()
    try:
        results = []
        for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS), before}):
            numba.set_num_threads(threads)
            results.append(run())
    finally:
        numba.set_num_threads(before)
    for got in results[1:]:
        for a, b_ in zip(got, results[0]):
            assert (a.view(np.uint32) == b_.view(np.uint32)).all()
    # (dense FLOAT32 X, W and R, which the kernel reads in place) and within twice the bound of
    # the NumPy loop's results
    monkeypatch.setattr(recurrent, "KERNEL", False)
    numpy_loop = run()
    bound = 4 * (272 + 16) * U * max(1.0, *(float(np.abs(a).max()) for a in (x, b, *numpy_loop)))
    for a, want in zip(results[0], numpy_loop):
        assert np.abs(a - want).max() <= 2 * bound + 2 * np.spacing(np.float32(np.abs(want).max()))


def test_a_longer_sequence_stays_within_the_bound(device):
    # 64 steps, hidden 32: the errors of the steps add up (module doc), they do not grow.
    rng = np.random.default_rng(7)
    for op in GATES:
        result, arrays, _ = dispatch(device, rng, op, F32, 64, 4, 16, 32,
                                     DIR.DML_RECURRENT_NETWORK_DIRECTION_BIDIRECTIONAL,
                                     bias=True, h0=True)
        check(result, arrays, 64, 48, F32)
