"""The recurrent networks: RNN, LSTM and GRU, one layer each, as rows of the compute family.

Every operator runs its loop over the sequence once per direction (FORWARD, BACKWARD, or both
for BIDIRECTIONAL, the backward direction reading each batch item's sequence from its own last
step), with the pages' equations (ONNX's, gate order i, o, f, c for LSTM and z, r, h for GRU):

    RNN:   H = f(X·Wᵀ + H·Rᵀ + Wb + Rb)
    LSTM:  i = f(X·Wiᵀ + H·Riᵀ + Pi⊙C + Wbi + Rbi)      (f = 1 - i with CoupleInputForget)
           f = f(X·Wfᵀ + H·Rfᵀ + Pf⊙C + Wbf + Rbf)
           c = g(X·Wcᵀ + H·Rcᵀ + Wbc + Rbc)
           C = f⊙C + i⊙c
           o = f(X·Woᵀ + H·Roᵀ + Po⊙C + Wbo + Rbo)     (the new C)
           H = o⊙h(C)
    GRU:   z = f(X·Wzᵀ + H·Rzᵀ + Wbz + Rbz)
           r = f(X·Wrᵀ + H·Rrᵀ + Wbr + Rbr)
           h = g(X·Whᵀ + (r⊙H)·Rhᵀ + Rbh + Wbh)         (LinearBeforeReset: r⊙(H·Rhᵀ + Rbh))
           H = (1 - z)⊙h + z⊙H

LSTM's ClipThreshold (UseClipThreshold) clamps every activation's input (the gates' sums, and C
before h; the state C itself is not clamped) to [-ClipThreshold, ClipThreshold]; a NaN stays NaN.

**SequenceLengthsTensor** (docs/decisions.md, "Recurrent networks"; ONNX Runtime's semantics):
a batch item of length L (clamped to seq_length) runs steps 0..L-1 (backward: L-1 down to 0);
OutputSequenceTensor holds zeros at its steps from L on; OutputSingleTensor (and LSTM's
OutputCellSingleTensor) holds the state after its last step, zeros for L = 0.

**How it runs**: every input is read (FLOAT16 widened exactly) before any output is written
(the kernel reads dense FLOAT32 X, W and R in place: it writes no output before it ends).
Where CBLAS ``sgemm`` is called directly (``blas.direct``), each direction is one call of the
Numba kernel ``rnn_kernels.run``: the hidden units cut into tasks of ``block()`` units, each
with its own packed blocks of Wᵀ and Rᵀ (packed by the tasks themselves), the tasks run
side by side over Numba's threads, per task one single-threaded ``sgemm`` for the input
projection of every step and one per step for H·Rᵀ (GRU's default form: a second one for
(r⊙H)·Rhᵀ), then the task's gate math in FLOAT32 (the module doc there). Otherwise (no direct
BLAS, or ``KERNEL`` off to compare) the same loop in NumPy: one product X·Wᵀ per direction, the
biases added once, per step H·Rᵀ and the gate math on (batch, hidden) FLOAT32 blocks with the
activation table's formulas (``emulator/activations.py``; ELEMENT_WISE_CLIP by CLIP's
reference). Both carry the states from step to step in FLOAT32 and round each output once on
store, written only at its addressed elements.

The references (``*_reference``) are the same equations in float64, one batch item at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from descriptors import DML_OPERATOR_TYPE as OP
from descriptors import DML_RECURRENT_NETWORK_DIRECTION as DIR
from descriptors import DML_TENSOR_DATA_TYPE

from ..activations import BY_OPERATOR as ACTIVATIONS
from ..activations import params_of
from ..elementwise.references import clip as d3d_clip
from ..family import Row
from ..ops.common import ieee_reference
from ..resources import scratch
from .table import FLOATS

F32 = np.dtype(np.float32)
# The float tensors' types, and SequenceLengthsTensor's.
KERNEL_TYPES = (*FLOATS, DML_TENSOR_DATA_TYPE.DML_TENSOR_DATA_TYPE_UINT32)
BACKWARD = DIR.DML_RECURRENT_NETWORK_DIRECTION_BACKWARD
BIDIRECTIONAL = DIR.DML_RECURRENT_NETWORK_DIRECTION_BIDIRECTIONAL
GATES = {OP.DML_OPERATOR_RNN: 1, OP.DML_OPERATOR_GRU: 3, OP.DML_OPERATOR_LSTM: 4}
PER_DIRECTION = {OP.DML_OPERATOR_RNN: 1, OP.DML_OPERATOR_GRU: 2, OP.DML_OPERATOR_LSTM: 3}
# The steps' products H·Rᵀ (M = the batch) on kernels/sgemm.py instead of the BLAS
# (tools/ab_levers.py small-gemm measures the two).
SMALL_GEMM: bool = True
KERNEL: bool = True  # the loop in rnn_kernels.py where sgemm is called directly; False: NumPy's
# (the tests and the benchmark script compare them)


def activation(fused: Any) -> Callable[[np.ndarray], np.ndarray]:
    """A validated activation desc as a function on arrays (computed in the array's type): the
    activation table's formula with the desc's attributes, or CLIP's (Direct3D's max and min)."""
    if fused.operator == OP.DML_OPERATOR_ELEMENT_WISE_CLIP:
        lo, hi = fused.values.Min, fused.values.Max

        def clip(x: np.ndarray) -> np.ndarray:
            with np.errstate(all="ignore"):
                return np.asarray(d3d_clip(x, x.dtype.type(lo), x.dtype.type(hi)), x.dtype)
        return clip
    act = ACTIVATIONS[fused.operator]
    params = [float(getattr(fused.values, name)) for name in act.params]
    return lambda x: act.reference(x, *params)


def kernel_activation(fused: Any) -> tuple[int, float, float]:
    """A validated activation desc as the kernel's (kind, p0, p1): the activation table's kind
    and parameters, or ``rnn_kernels.CLIP`` with Min and Max rounded to FLOAT32 (as CLIP's
    formula compares them on FLOAT32 values)."""
    from .rnn_kernels import CLIP

    if fused.operator == OP.DML_OPERATOR_ELEMENT_WISE_CLIP:
        return (CLIP, float(np.float32(fused.values.Min)), float(np.float32(fused.values.Max)))
    act = ACTIVATIONS[fused.operator]
    return (act.kind, *params_of(act, fused.values))


MIN_TASK_FLOPS = 1 << 21  # the least product work of one task of the kernel per step


def block(hidden: int, gates: int, batch: int) -> int:
    """The hidden units of one task of the kernel (``rnn_kernels.run``): enough for a task's
    product (2·batch·gates·blk·hidden flops per step) to outweigh a call's overhead, else as
    few as give 16 tasks (one per thread of a 16-core host); a multiple of 8 (the sgemm
    kernels' width), at most 128 and at most hidden. A function of the shape only, so that the
    bytes do not depend on the thread count."""
    least = -(-MIN_TASK_FLOPS // (2 * batch * gates * hidden))
    b = max(-(-hidden // 16), least)
    return min(max(-(-b // 8) * 8, 8), 128, hidden)


def directions(v: SimpleNamespace) -> list[bool]:
    """Per direction index: whether it runs backward."""
    if v.Direction == BIDIRECTIONAL:
        return [False, True]
    return [v.Direction == BACKWARD]


def lengths(lens: np.ndarray | None, seq: int, batch: int) -> np.ndarray:
    """Each batch item's sequence length, clamped to seq_length (all seq_length if absent)."""
    if lens is None:
        return np.full(batch, seq, np.int64)
    return np.minimum(lens.reshape(batch).astype(np.int64), seq)


# ----------------------------------------------------------------------------------------------
# The references: the pages' equations in float64, one batch item and one step at a time


def _cell(op: OP, v: SimpleNamespace, acts: list, x: np.ndarray, h: np.ndarray, c: np.ndarray,
          w: np.ndarray, r: np.ndarray, b: np.ndarray | None, p: np.ndarray | None
          ) -> tuple[np.ndarray, np.ndarray]:
    """One step of one batch item in float64: (H, C) from X and the previous (H, C)."""
    hs = r.shape[1]
    wb = b[: b.size // 2] if b is not None else np.zeros(w.shape[0])
    rb = b[b.size // 2:] if b is not None else np.zeros(w.shape[0])

    def part(k: int) -> slice:
        return slice(k * hs, (k + 1) * hs)
    if op == OP.DML_OPERATOR_RNN:
        return acts[0](x @ w.T + h @ r.T + wb + rb), c
    if op == OP.DML_OPERATOR_GRU:
        f, g = acts
        z = f(x @ w[part(0)].T + h @ r[part(0)].T + wb[part(0)] + rb[part(0)])
        rr = f(x @ w[part(1)].T + h @ r[part(1)].T + wb[part(1)] + rb[part(1)])
        if v.LinearBeforeReset:
            hh = g(x @ w[part(2)].T + rr * (h @ r[part(2)].T + rb[part(2)]) + wb[part(2)])
        else:
            hh = g(x @ w[part(2)].T + (rr * h) @ r[part(2)].T + rb[part(2)] + wb[part(2)])
        return (1 - z) * hh + z * h, c
    f, g, hact = acts
    pi, po, pf = (p[part(0)], p[part(1)], p[part(2)]) if p is not None else (0.0, 0.0, 0.0)

    def clipped(y: np.ndarray) -> np.ndarray:
        return np.clip(y, -v.ClipThreshold, v.ClipThreshold) if v.UseClipThreshold else y

    def pre(k: int) -> np.ndarray:
        return x @ w[part(k)].T + h @ r[part(k)].T + wb[part(k)] + rb[part(k)]
    i = f(clipped(pre(0) + pi * c))
    fg = 1 - i if v.CoupleInputForget else f(clipped(pre(2) + pf * c))
    cc = g(clipped(pre(3)))
    c = fg * c + i * cc
    o = f(clipped(pre(1) + po * c))
    return o * hact(clipped(c)), c


@ieee_reference
def _reference(op: OP, v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
               ) -> dict[str, np.ndarray]:
    x = inputs["InputTensor"]
    dtype = x.dtype
    _, seq, batch, _ = x.shape

    def get(name: str) -> np.ndarray | None:
        a = inputs.get(name)
        return None if a is None else a.astype(np.float64)
    xs, w, r = (inputs[n].astype(np.float64)[0]
                for n in ("InputTensor", "WeightTensor", "RecurrenceTensor"))
    bias, h0, c0, peep = get("BiasTensor"), get("HiddenInitTensor"), \
        get("CellMemInitTensor"), get("PeepholeTensor")
    hs = r.shape[-1]
    back = directions(v)
    lens = lengths(inputs.get("SequenceLengthsTensor"), seq, batch)
    k = PER_DIRECTION[op]
    acts = [activation(a) for a in v.ActivationDescs]
    y = np.zeros((seq, len(back), batch, hs))
    y_h = np.zeros((1, len(back), batch, hs))
    y_c = np.zeros((1, len(back), batch, hs))
    for d, backward in enumerate(back):
        for n in range(batch):
            h = h0[0, d, n] if h0 is not None else np.zeros(hs)
            c = c0[0, d, n] if c0 is not None else np.zeros(hs)
            steps = range(lens[n] - 1, -1, -1) if backward else range(lens[n])
            for t in steps:
                h, c = _cell(op, v, acts[d * k:(d + 1) * k], xs[t, n], h, c, w[d], r[d],
                             bias[0, 0, d] if bias is not None else None,
                             peep[0, 0, d] if peep is not None else None)
                y[t, d, n] = h
            if lens[n]:
                y_h[0, d, n], y_c[0, d, n] = h, c
    out = {"OutputSequenceTensor": y.astype(dtype), "OutputSingleTensor": y_h.astype(dtype)}
    if op == OP.DML_OPERATOR_LSTM:
        out["OutputCellSingleTensor"] = y_c.astype(dtype)
    return out


def rnn_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """RNN's equation in float64 (module doc), every output, rounded once."""
    return _reference(OP.DML_OPERATOR_RNN, v, inputs)


def lstm_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                   ) -> dict[str, np.ndarray]:
    """LSTM's equations in float64 (module doc), every output, rounded once."""
    return _reference(OP.DML_OPERATOR_LSTM, v, inputs)


def gru_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """GRU's equations in float64 (module doc), every output, rounded once."""
    return _reference(OP.DML_OPERATOR_GRU, v, inputs)


# ----------------------------------------------------------------------------------------------
# The kernel


def _gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray, beta: float) -> None:
    """c = a·bᵀ + beta·c on FLOAT32 matrices with unit column strides (rows may be padded),
    threaded by the BLAS at Numba's thread count. (Splitting a step's few-row product by columns
    into single-threaded calls side by side, as ``blas.run`` does for batches, measured slower:
    114 against 90 ms for the benchmark's LSTM at 2 threads, 114 against 43 at 16.)"""
    from . import blas

    m, k = a.shape
    n = b.shape[0]
    if m == 0 or n == 0:
        return
    if blas.direct(F32) and k > 0:
        import numba

        item = F32.itemsize
        blas.run(F32, [(False, True, m, n, k, 1.0, a.ctypes.data, a.strides[0] // item,
                        b.ctypes.data, b.strides[0] // item, beta, c.ctypes.data,
                        c.strides[0] // item)], numba.get_num_threads())
    elif beta:
        c += a @ b.T
    else:
        np.matmul(a, b.T, out=c)


@dataclass(frozen=True)
class RecurrentPlan:
    """One RNN/LSTM/GRU operator's loop (module doc)."""

    op: OP
    v: SimpleNamespace
    seq: int
    batch: int
    inputs: int
    hidden: int
    back: tuple[bool, ...]
    acts: tuple[Callable[[np.ndarray], np.ndarray], ...]
    kinds: tuple[tuple[int, float, float], ...]  # the kernel's (kind, p0, p1) per activation

    @classmethod
    def build(cls, op: OP, v: SimpleNamespace) -> RecurrentPlan:
        _, seq, batch, inputs = v.InputTensor.sizes
        hidden = v.RecurrenceTensor.sizes[3]
        back = tuple(directions(v))
        return cls(op, v, seq, batch, inputs, hidden, back,
                   tuple(activation(a) for a in v.ActivationDescs),
                   tuple(kernel_activation(a) for a in v.ActivationDescs))

    def _read(self, regions: Mapping[str, np.ndarray], name: str, shape: tuple[int, ...],
              share: bool = False) -> np.ndarray | None:
        """An input's logical elements as a dense FLOAT32 array of ``shape`` (None if absent):
        a copy, or with ``share`` the tensor's own elements where they are one already."""
        t = getattr(self.v, name, None)
        if t is None:
            return None
        view = t.view(regions[name]).reshape(shape)
        flags = view.flags
        if share and view.dtype == F32 and flags.c_contiguous and flags.writeable and \
                flags.aligned:
            return view  # (a read-only or unaligned array is another type to Numba: a compile)
        out = scratch(shape, F32, self.op.name, name + " in FLOAT32")
        np.copyto(out, view, casting="unsafe")
        return out

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        from . import blas

        v, seq, batch, hs = self.v, self.seq, self.batch, self.hidden
        nd, g = len(self.back), GATES[self.op]
        gh = g * hs
        what = self.op.name
        fast = KERNEL and blas.direct(F32)  # the kernel (rnn_kernels.py) calls sgemm itself
        # The kernel only reads X, W and R, and writes no output before it ends: dense FLOAT32
        # tensors are passed as they are.
        x = self._read(regions, "InputTensor", (seq * batch, self.inputs), fast)
        w = self._read(regions, "WeightTensor", (nd, gh, self.inputs), fast)
        r = self._read(regions, "RecurrenceTensor", (nd, gh, hs), fast)
        bias = self._read(regions, "BiasTensor", (nd, 2, gh))
        h0 = self._read(regions, "HiddenInitTensor", (nd, batch, hs))
        c0 = self._read(regions, "CellMemInitTensor", (nd, batch, hs))
        peep = self._read(regions, "PeepholeTensor", (nd, 3, hs))
        lens_t = v.SequenceLengthsTensor
        lens = lengths(None if lens_t is None else
                       np.array(lens_t.view(regions["SequenceLengthsTensor"])), seq, batch)
        assert x is not None and w is not None and r is not None
        ys = scratch((nd, seq, batch, hs), F32, what, "the output sequence")
        y_h = scratch((nd, batch, hs), F32, what, "the last hidden state")
        y_c = scratch((nd, batch, hs), F32, what, "the last cell state")
        if not (lens == seq).all():
            ys[...] = 0  # the steps past an item's length
        k = PER_DIRECTION[self.op]
        lbr = self.op == OP.DML_OPERATOR_GRU and v.LinearBeforeReset
        xw = None
        for d, backward in enumerate(self.back):
            both = np.zeros(gh, F32) if bias is None else bias[d, 0] + bias[d, 1]
            rb_h = None
            if bias is not None and lbr:
                both[2 * hs:] = bias[d, 0, 2 * hs:]  # Rbh goes inside r⊙(H·Rhᵀ + Rbh)
                rb_h = bias[d, 1, 2 * hs:]
            h = np.zeros((batch, hs), F32) if h0 is None else h0[d].copy()
            c = np.zeros((batch, hs), F32) if c0 is None else c0[d].copy()
            p = None if peep is None else peep[d]
            if fast:
                h = self._kernel(backward, x, w[d], r[d], both, rb_h, lens, h, c, p,
                                 self.kinds[d * k:(d + 1) * k], ys[d])
            else:
                if xw is None:
                    xw = scratch((seq, batch, gh), F32, what, "the input projection X·Wᵀ")
                _gemm(x, w[d], xw.reshape(seq * batch, gh), 0.0)
                xw += both
                self._direction(backward, xw, r[d], rb_h, lens, h, c, p,
                                self.acts[d * k:(d + 1) * k], ys[d])
            live = (lens > 0)[:, None]
            y_h[d] = np.where(live, h, 0)
            y_c[d] = np.where(live, c, 0)
        out = {"OutputSequenceTensor": ys.transpose(1, 0, 2, 3),
               "OutputSingleTensor": y_h.reshape(1, nd, batch, hs),
               "OutputCellSingleTensor": y_c.reshape(1, nd, batch, hs)}
        for name, values in out.items():
            t = getattr(v, name, None)
            if t is not None:
                np.copyto(t.view(regions[name]), values, casting="unsafe")

    def _by_task(self, bias: np.ndarray, g: int, blk: int) -> np.ndarray:
        """The biases [G·hidden] in the tasks' column order [tasks, G·blk] (zero past
        hidden)."""
        hs = self.hidden
        tasks = -(-hs // blk)
        out = np.zeros((tasks * blk, g), F32)
        out[:hs] = bias.reshape(g, hs).T
        return np.ascontiguousarray(out.reshape(tasks, blk, g).transpose(0, 2, 1)).reshape(-1)

    def _kernel(self, backward: bool, x: np.ndarray, w: np.ndarray, r: np.ndarray,
                bias: np.ndarray, rb_h: np.ndarray | None, lens: np.ndarray, h: np.ndarray,
                c: np.ndarray, peep: np.ndarray | None, kinds: tuple, ys: np.ndarray
                ) -> np.ndarray:
        """One direction's loop by ``rnn_kernels.run`` (W, R, the biases: the direction's
        dense FLOAT32 arrays): ``h``, ``c`` (batch, hidden) the initial state (``c`` left
        holding the last), ys (seq, batch, hidden) receives each live step's H; returns the
        last H."""
        from ..kernels import pool
        from . import blas, rnn_kernels

        v, seq, batch, hs, op = self.v, self.seq, self.batch, self.hidden, self.op
        g = GATES[op]
        blk = block(hs, g, batch)
        tasks = -(-hs // blk)
        lbr = op == OP.DML_OPERATOR_GRU and bool(v.LinearBeforeReset)
        lstm = op == OP.DML_OPERATOR_LSTM
        mode = {OP.DML_OPERATOR_RNN: rnn_kernels.RNN, OP.DML_OPERATOR_GRU: rnn_kernels.GRU,
                OP.DML_OPERATOR_LSTM: rnn_kernels.LSTM}[op]
        what = op.name
        empty = np.zeros(0, F32)
        rth = scratch((tasks * hs * blk,), F32, what, "Rhᵀ by task") \
            if op == OP.DML_OPERATOR_GRU and not lbr else empty
        rbh = (np.zeros(hs, F32) if rb_h is None else rb_h) if lbr else empty
        simple = (rnn_kernels.IDENTITY, rnn_kernels.SIGMOID, rnn_kernels.TANH, rnn_kernels.CLIP)
        fn = 0
        if any(kind not in simple for kind, _, _ in kinds):
            from ..kernels.strided import activation_address  # (Numba: on first use)

            fn = activation_address()
        gemm, wide = blas.address(F32)
        h2 = scratch((2, batch, hs), F32, what, "the hidden state")
        h2[0] = h
        # The direction's activations as three (RNN: f, f, f; GRU: f, g, g; LSTM: f, g, h).
        acts = [*kinds, *[kinds[-1]] * (3 - len(kinds))]
        ints = np.array([mode, int(backward), blk, batch, hs, seq, self.inputs,
                         int(lstm and bool(v.UseClipThreshold)),
                         int(lstm and bool(v.CoupleInputForget)), int(lbr), int(peep is not None),
                         gemm, int(wide), fn, rnn_kernels.activation32_address(),
                         *(kind for kind, _, _ in acts), int(SMALL_GEMM)], np.int64)
        reals = np.array([float(v.ClipThreshold) if lstm else 0.0,
                          *(q for _, p0, p1 in acts for q in (p0, p1))], np.float64)
        longest = int(lens.max()) if batch else 0
        phases = 2 if mode == rnn_kernels.GRU and not lbr else 1
        rec = scratch((batch * hs,), F32, what, "a step's (r⊙H)")
        rec[...] = 0  # (the rows of ended sequences are multiplied too)
        args = (
            rnn_kernels.task_address(), tasks, longest, phases, x.reshape(-1),
            scratch((tasks * self.inputs * g * blk,), F32, what, "Wᵀ by task"),
            self._by_task(bias, g, blk), scratch((tasks * hs * g * blk,), F32, what, "Rᵀ by task"),
            rth, rbh, h2.reshape(-1), c.reshape(-1),
            empty if peep is None else peep.reshape(-1), ys.reshape(-1),
            scratch((tasks * seq * batch * g * blk,), F32, what, "the input projection X·Wᵀ"),
            scratch((tasks * batch * g * blk,), F32, what, "a step's gates"),
            rec,
            scratch((tasks * blk,), F32, what, "an activation's row"),
            w.reshape(-1), r.reshape(-1),
            scratch((tasks * 2 * blk,), np.dtype(np.float64), what, "an activation's row"),
            lens, ints, reals)
        with blas.single_threaded_calls():  # one single-threaded sgemm per task and step
            if pool.available():
                blk_ = np.zeros(rnn_kernels.LOOP_BLOCK, np.int64)
                blk_[rnn_kernels.LOOP_FN:rnn_kernels.ARRIVED] = args[:4]
                blk_[rnn_kernels.POINTERS:] = [a.__array_interface__["data"][0]
                                               for a in args[4:]]
                data = x.reshape(-1).view(np.uint8)
                pool.run(pool.job(rnn_kernels.loop), blk_, tasks, data, data, data, data)
            else:
                rnn_kernels.run(*args)
        last = longest % 2
        return h2[last]

    def _direction(self, backward: bool, xw: np.ndarray, r: np.ndarray,
                   rb_h: np.ndarray | None, lens: np.ndarray, h_state: np.ndarray,
                   c_state: np.ndarray, peep: np.ndarray | None, acts: tuple,
                   ys: np.ndarray) -> None:
        """One direction's loop in NumPy (where sgemm is not called directly): ``xw`` holds
        X·Wᵀ plus the biases; ``h_state``, ``c_state`` the initial state, left holding the
        last; ys (seq, batch, hidden) receives each live step's H."""
        v, batch, hs, op = self.v, self.batch, self.hidden, self.op
        h, c = h_state.copy(), c_state.copy()
        rows = np.arange(batch)
        longest = int(lens.max()) if batch else 0
        every = bool((lens == longest).all())
        step_gates = np.empty((batch, GATES[op] * hs), F32)
        rec = np.empty((batch, hs), F32) if op == OP.DML_OPERATOR_GRU else None
        clip = float(v.ClipThreshold) if op == OP.DML_OPERATOR_LSTM and v.UseClipThreshold \
            else None

        def clipped(y: np.ndarray) -> np.ndarray:
            return np.clip(y, -clip, clip, out=y) if clip is not None else y
        with np.errstate(all="ignore"):
            for s in range(longest):
                # The time index each batch item reads at step s (its own last step first when
                # backward); items whose sequence has ended compute on and are not kept.
                if every:  # the step's products are added to its input projection in place
                    times = np.full(batch, longest - 1 - s if backward else s)
                    gates = xw[times[0]]
                else:
                    times = np.where(lens > s, lens - 1 - s if backward else s, 0)
                    gates = step_gates
                    gates[...] = xw[times, rows]
                if op == OP.DML_OPERATOR_GRU:
                    assert rec is not None
                    f, g = acts
                    _gemm(h, r[: 2 * hs], gates[:, : 2 * hs], 1.0)
                    z = f(gates[:, :hs])
                    rr = f(gates[:, hs: 2 * hs])
                    if v.LinearBeforeReset:
                        _gemm(h, r[2 * hs:], rec, 0.0)
                        if rb_h is not None:
                            rec += rb_h
                        new_h = g(gates[:, 2 * hs:] + rr * rec)
                    else:
                        np.multiply(rr, h, out=rec)
                        _gemm(rec, r[2 * hs:], gates[:, 2 * hs:], 1.0)
                        new_h = g(gates[:, 2 * hs:])
                    new_h = (1 - z) * new_h + z * h
                    new_c = c
                elif op == OP.DML_OPERATOR_LSTM:
                    f, g, hact = acts
                    _gemm(h, r, gates, 1.0)
                    gi, go, gf, gc = (gates[:, j * hs:(j + 1) * hs] for j in range(4))
                    if peep is not None:
                        gi += peep[0] * c
                        gf += peep[2] * c
                    i = f(clipped(gi))
                    fg = 1 - i if v.CoupleInputForget else f(clipped(gf))
                    new_c = fg * c + i * g(clipped(gc))
                    if peep is not None:
                        go += peep[1] * new_c
                    new_h = f(clipped(go)) * hact(clipped(new_c.copy()))
                else:
                    _gemm(h, r, gates, 1.0)
                    new_h = np.array(acts[0](gates))  # IDENTITY returns gates itself
                    new_c = c
                if every:
                    h, c = new_h.astype(F32, copy=False), new_c.astype(F32, copy=False)
                    ys[times[0]] = h
                else:
                    live = lens > s
                    h = np.where(live[:, None], new_h, h).astype(F32, copy=False)
                    c = np.where(live[:, None], new_c, c).astype(F32, copy=False)
                    ys[times[live], rows[live]] = h[live]
        h_state[...] = h
        c_state[...] = c


def rnn_plan(v: SimpleNamespace) -> RecurrentPlan:
    return RecurrentPlan.build(OP.DML_OPERATOR_RNN, v)


def lstm_plan(v: SimpleNamespace) -> RecurrentPlan:
    return RecurrentPlan.build(OP.DML_OPERATOR_LSTM, v)


def gru_plan(v: SimpleNamespace) -> RecurrentPlan:
    return RecurrentPlan.build(OP.DML_OPERATOR_GRU, v)


ROWS: tuple[Row, ...] = (
    Row(OP.DML_OPERATOR_RNN, rnn_plan, rnn_reference, KERNEL_TYPES),
    Row(OP.DML_OPERATOR_LSTM, lstm_plan, lstm_reference, KERNEL_TYPES),
    Row(OP.DML_OPERATOR_GRU, gru_plan, gru_reference, KERNEL_TYPES),
)
