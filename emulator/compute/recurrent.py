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

**How it runs** (the kernel): the input projection of every step is one FLOAT32 BLAS ``sgemm``
per direction up front (X·Wᵀ for all seq_length x batch_size rows, ``blas.py``), the two biases
added to it once; then per step one small ``sgemm`` H·Rᵀ into the step's gates (GRU's default
form: a second one for (r⊙H)·Rhᵀ) and the gate math in NumPy on FLOAT32 arrays, the activations
evaluated by the activation table's formulas (``emulator/activations.py``; ELEMENT_WISE_CLIP by
CLIP's reference). FLOAT16 tensors are widened exactly, the states carried from step to step in
FLOAT32, and the outputs rounded once on store.
Every input is read (copied to FLOAT32) before any output is written, and outputs are written only
at their addressed elements. No Numba kernel: nothing is compiled (a parallel Numba cell kernel
measured slower than these NumPy passes: docs/decisions.md).

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

    @classmethod
    def build(cls, op: OP, v: SimpleNamespace) -> RecurrentPlan:
        _, seq, batch, inputs = v.InputTensor.sizes
        hidden = v.RecurrenceTensor.sizes[3]
        back = tuple(directions(v))
        return cls(op, v, seq, batch, inputs, hidden, back,
                   tuple(activation(a) for a in v.ActivationDescs))

    def _read(self, regions: Mapping[str, np.ndarray], name: str, shape: tuple[int, ...]
              ) -> np.ndarray | None:
        """An input's logical elements as a dense FLOAT32 array of ``shape`` (None if absent)."""
        t = getattr(self.v, name, None)
        if t is None:
            return None
        out = scratch(shape, F32, self.op.name, name + " in FLOAT32")
        np.copyto(out, t.view(regions[name]).reshape(shape), casting="unsafe")
        return out

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        v, seq, batch, hs = self.v, self.seq, self.batch, self.hidden
        nd, g = len(self.back), GATES[self.op]
        gh = g * hs
        what = self.op.name
        x = self._read(regions, "InputTensor", (seq * batch, self.inputs))
        w = self._read(regions, "WeightTensor", (nd, gh, self.inputs))
        r = self._read(regions, "RecurrenceTensor", (nd, gh, hs))
        bias = self._read(regions, "BiasTensor", (nd, 2, gh))
        h0 = self._read(regions, "HiddenInitTensor", (nd, batch, hs))
        c0 = self._read(regions, "CellMemInitTensor", (nd, batch, hs))
        peep = self._read(regions, "PeepholeTensor", (nd, 3, hs))
        lens_t = v.SequenceLengthsTensor
        lens = lengths(None if lens_t is None else
                       np.array(lens_t.view(regions["SequenceLengthsTensor"])), seq, batch)
        assert x is not None and w is not None and r is not None
        xw = scratch((seq, batch, gh), F32, what, "the input projection X·Wᵀ")
        ys = scratch((seq, nd, batch, hs), F32, what, "the output sequence")
        y_h = scratch((nd, batch, hs), F32, what, "the last hidden state")
        y_c = scratch((nd, batch, hs), F32, what, "the last cell state")
        ys[...] = 0
        k = PER_DIRECTION[self.op]
        for d, backward in enumerate(self.back):
            _gemm(x, w[d], xw.reshape(seq * batch, gh), 0.0)
            rb_h = None
            if bias is not None:
                both = bias[d, 0] + bias[d, 1]
                if self.op == OP.DML_OPERATOR_GRU and v.LinearBeforeReset:
                    both[2 * hs:] = bias[d, 0, 2 * hs:]  # Rbh goes inside r⊙(H·Rhᵀ + Rbh)
                    rb_h = bias[d, 1, 2 * hs:]
                xw += both
            self._direction(d, backward, xw, r[d], rb_h, lens,
                            None if h0 is None else h0[d], None if c0 is None else c0[d],
                            None if peep is None else peep[d], self.acts[d * k:(d + 1) * k],
                            ys[:, d], y_h[d], y_c[d])
        out = {"OutputSequenceTensor": ys.reshape(seq, nd, batch, hs),
               "OutputSingleTensor": y_h.reshape(1, nd, batch, hs),
               "OutputCellSingleTensor": y_c.reshape(1, nd, batch, hs)}
        for name, values in out.items():
            t = getattr(v, name, None)
            if t is not None:
                np.copyto(t.view(regions[name]), values, casting="unsafe")

    def _direction(self, d: int, backward: bool, xw: np.ndarray, r: np.ndarray,
                   rb_h: np.ndarray | None, lens: np.ndarray, h0: np.ndarray | None,
                   c0: np.ndarray | None, peep: np.ndarray | None, acts: tuple,
                   ys: np.ndarray, y_h: np.ndarray, y_c: np.ndarray) -> None:
        """One direction's loop: ys (seq, batch, hidden) receives each step's H, y_h and y_c
        the last state of each batch item."""
        v, batch, hs, op = self.v, self.batch, self.hidden, self.op
        h = np.zeros((batch, hs), F32) if h0 is None else h0.copy()
        c = np.zeros((batch, hs), F32) if c0 is None else c0.copy()
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
        y_h[...] = np.where((lens > 0)[:, None], h, 0)
        y_c[...] = np.where((lens > 0)[:, None], c, 0)


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
