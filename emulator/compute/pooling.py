"""The pooling rows of the compute family: AVERAGE_POOLING(1), LP_POOLING(1), MAX_POOLING(1, 2),
QUANTIZED_LINEAR_AVERAGE_POOLING, AVERAGE_POOLING_GRAD and MAX_POOLING_GRAD, on one window engine
(``pool_kernels.pool``).

Every forward row slides a window of ``WindowSize`` taps, ``Dilations`` apart (1 for the versions
without them), by ``Strides`` over the input padded with ``StartPadding``/``EndPadding`` along
its 2 or 3 spatial dimensions; output coordinate ``o`` of a dimension covers the input
coordinates ``o * Stride - StartPadding + k * Dilation``, ``k`` in [0, WindowSize). Padding holds
no element:

- AVERAGE: the sum of the window's elements divided by the window size (IncludePadding TRUE: the
  padding counts as zeros) or by the number of its elements (FALSE); float64, rounded once.
- LP: ``(sum |x|^P)^(1/P)`` over the window's elements; float64, rounded once.
- MAX: the largest element; ``OutputIndicesTensor`` (MAX_POOLING1, 2) receives its index in the
  input read as a contiguous one-dimensional array (its logical row-major position, whatever its
  strides); ties keep the first element met in window order (the lowest index). Bit exact for
  every type.
- QUANTIZED_LINEAR_AVERAGE_POOLING: AVERAGE on the dequantized input ``(x - InputZeroPoint) *
  InputScale`` (padding is the real value 0), then ``round_half_even(avg / OutputScale) +
  OutputZeroPoint`` saturated to the output type; scales and zero points per tensor or per
  channel.
- AVERAGE_POOLING_GRAD: each input-gradient element, divided by its window's divisor (as
  AVERAGE), is added to every output-gradient element under its window.
- MAX_POOLING_GRAD: each input-gradient element is added to the element that MAX_POOLING2 of
  InputTensor chose for its window (ties: the lowest index); elements chosen by no window are 0.

docs/decisions.md ("Pooling") records what the pages leave open: NaN, empty windows, |x| in LP.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from descriptors import DML_OPERATOR_TYPE as OP
from descriptors import DML_TENSOR_DATA_TYPE as T

from ..family import Row
from ..ops.common import ieee_reference
from ..resources import scratch, typed_view
from ..validation import Tensor

F32, F16 = T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16
FLOATS = (F32, F16)
INTEGERS = (T.DML_TENSOR_DATA_TYPE_INT64, T.DML_TENSOR_DATA_TYPE_INT32,
            T.DML_TENSOR_DATA_TYPE_INT16, T.DML_TENSOR_DATA_TYPE_INT8,
            T.DML_TENSOR_DATA_TYPE_UINT64, T.DML_TENSOR_DATA_TYPE_UINT32,
            T.DML_TENSOR_DATA_TYPE_UINT16, T.DML_TENSOR_DATA_TYPE_UINT8)
BYTES = (T.DML_TENSOR_DATA_TYPE_INT8, T.DML_TENSOR_DATA_TYPE_UINT8)
AVERAGE, LP, MAXIMUM, SUM = 0, 1, 2, 3  # pool_kernels' kinds
_NO_INDEX = np.zeros(1, np.int64)
_SIGN = np.uint64(1 << 63)


# --- geometry ---------------------------------------------------------------------------------

class Window:
    """The window of a pooling desc per spatial dimension, as three-dimensional lists (a 2-D
    pooling gets depth 1): window size, stride, dilation, start and end padding."""

    def __init__(self, v: SimpleNamespace) -> None:
        dims = v.DimensionCount
        lead = [1] * (3 - dims)
        dil = getattr(v, "Dilations", None) or (1,) * dims
        self.dims = dims
        self.k = lead + [int(a) for a in v.WindowSize]
        self.s = lead + [int(a) for a in v.Strides]
        self.l = lead + [int(a) for a in dil]
        self.p = [0] * (3 - dims) + [int(a) for a in v.StartPadding]
        self.e = [0] * (3 - dims) + [int(a) for a in v.EndPadding]
        self.include_padding = bool(getattr(v, "IncludePadding", False))

    def spatial(self, sizes: Sequence[int]) -> list[int]:
        return [1] * (3 - self.dims) + list(sizes[2:])

    def live(self, d: int, size: int, out: int) -> tuple[int, int]:
        """The taps [lo, hi) of dimension ``d`` that some output's window has inside the input
        (a hull: taps between may still miss). A window far larger than the input (a huge
        padding makes it valid) then costs what its live taps cost."""
        k, s, dil, p = self.k[d], self.s[d], self.l[d], self.p[d]
        lo = max(0, -((-(p - (out - 1) * s)) // dil))  # ceil((p - (out - 1) * s) / dil)
        hi = min(k, (size - 1 + p) // dil + 1)
        return (lo, hi) if hi > lo else (0, 1)

    def ranges(self, d: int, size: int, out: int) -> list[tuple[int, int, int]]:
        """Per live tap of dimension ``d``: the outputs [olo, ohi) whose tap lies inside the
        input, and the input coordinate of output ``olo``'s tap (AVERAGE_POOLING_GRAD)."""
        s, dil, p = self.s[d], self.l[d], self.p[d]
        result = []
        for k in range(*self.live(d, size, out)):
            a = k * dil - p  # the coordinate of output 0's tap
            olo = 0 if a >= 0 else -(a // s)
            ohi = 0 if size - 1 - a < 0 else min(out, (size - 1 - a) // s + 1)
            result.append((olo, max(olo, ohi), olo * s + a))
        return result

    def counts(self, in_sizes: Sequence[int], out_sizes: Sequence[int]) -> np.ndarray:
        """The number of taps of each output element's window inside the input, [D, H, W]."""
        per = []
        for d, (i, o) in enumerate(zip(self.spatial(in_sizes), self.spatial(out_sizes))):
            lo, hi = self.live(d, i, o)
            pos = (np.arange(o)[:, None] * self.s[d] - self.p[d]
                   + np.arange(lo, hi)[None, :] * self.l[d])
            per.append(((pos >= 0) & (pos < i)).sum(axis=1))
        return (per[0][:, None, None] * per[1][None, :, None] * per[2][None, None, :]).astype(
            np.float64)

    def geometry(self, x_sizes: Sequence[int], x_strides: Sequence[int],
                 y_sizes: Sequence[int], y_strides: Sequence[int], want_index: bool
                 ) -> np.ndarray:
        """The kernel's ``g`` array (``pool_kernels.GEOMETRY`` slots): the live taps only, the
        start padding shifted to match (AVERAGE's divisor, the whole window, is passed apart)."""
        xs, ys = self.spatial(x_sizes), self.spatial(y_sizes)
        xst = [*x_strides[:2], *([0] * (3 - self.dims)), *x_strides[2:]]
        yst = [*y_strides[:2], *([0] * (3 - self.dims)), *y_strides[2:]]
        g = [x_sizes[0], x_sizes[1]]
        for d in range(3):
            lo, hi = self.live(d, xs[d], ys[d])
            g += [xs[d], ys[d], hi - lo, self.s[d], self.l[d], self.p[d] - lo * self.l[d]]
        g += xst + yst + [int(self.include_padding), int(want_index)]
        # Rows per task: about 2,048 outputs, so a task's buffers and loop set-up are paid
        # rarely while a large tensor still gives every thread many tasks.
        g.append(max(1, 2048 // max(1, ys[2])))
        return np.asarray(g, np.int64)


def _at(position: Sequence[int] | Sequence[slice]) -> tuple[Any, ...]:
    """Every batch item and channel at a spatial position (or slices)."""
    return (slice(None), slice(None), *position)


def _packed(sizes: Sequence[int]) -> list[int]:
    return [math.prod(sizes[i + 1:]) for i in range(len(sizes))]


def _launch(x: np.ndarray, y: np.ndarray, ind: np.ndarray, g: np.ndarray, kind: int,
            p: float) -> None:
    from .pool_kernels import pool

    pool(x, y, ind, g, kind, p)


def _keys(values: np.ndarray) -> np.ndarray:
    """Integers as order-preserving int64 keys (UINT64 with its top bit flipped)."""
    if values.dtype == np.uint64:
        return (values ^ _SIGN).view(np.int64)
    return values.astype(np.int64)


def _from_keys(keys: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """int64 keys back to ``dtype``; an empty window's lowest key becomes the type's lowest."""
    if dtype == np.uint64:
        return keys.view(np.uint64) ^ _SIGN
    return np.maximum(keys, np.iinfo(dtype).min).astype(dtype)


# --- plans ------------------------------------------------------------------------------------

class PoolPlan:
    """AVERAGE, LP or MAX pooling of InputTensor into OutputTensor (and OutputIndicesTensor).
    FLOAT32 is read and written as it lies (AVERAGE and LP round each float64 result once as
    they store it); FLOAT16 is widened into a dense float32 copy (exact), and AVERAGE and LP
    into FLOAT16 write dense float64 results, rounded once to the output's type as they are
    stored through its strides. The integer types' MAX runs in NumPy
    (``_run_integers``)."""

    def __init__(self, name: str, kind: int, v: SimpleNamespace) -> None:
        self.name, self.kind = name, kind
        self.w = Window(v)
        self.x, self.y = v.InputTensor, v.OutputTensor
        self.ind: Tensor | None = getattr(v, "OutputIndicesTensor", None)
        # LP's P; AVERAGE's divisor with IncludePadding (the whole window, live taps or not)
        self.p = float(getattr(v, "P", 0)) if kind == LP else float(math.prod(self.w.k))
        self.x_direct = self.x.data_type == F32
        # FLOAT32 results straight into the output (AVERAGE and LP rounded once as stored; a
        # float64 scratch and a single-threaded NumPy pass over it took most of AVERAGE's time)
        self.y_direct = kind in (MAXIMUM, AVERAGE, LP) and self.y.data_type == F32
        self.integers = self.x.data_type not in FLOATS
        self.g = self.w.geometry(
            self.x.sizes, self.x.strides if self.x_direct else _packed(self.x.sizes),
            self.y.sizes, self.y.strides if self.y_direct else _packed(self.y.sizes),
            self.ind is not None)

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        # Every scratch array first: E_OUTOFMEMORY before anything is written.
        ind = _NO_INDEX
        if self.ind is not None:
            ind = scratch((self.y.element_count,), np.int64, self.name, "the indices")
        if self.integers:
            self._run_integers(regions, ind)
            return
        if self.x_direct:
            x = typed_view(regions["InputTensor"], np.float32)
        else:
            x = scratch(self.x.sizes, np.float32, self.name, "the widened input")
        if self.y_direct:
            y = typed_view(regions["OutputTensor"], np.float32)
        else:
            y = scratch((self.y.element_count,),
                        np.float32 if self.kind == MAXIMUM else np.float64, self.name,
                        "the results")
        if not self.x_direct:
            x[...] = self.x.view(regions["InputTensor"])
        _launch(x.reshape(-1), y, ind, self.g, self.kind, self.p)
        if not self.y_direct:
            # one pass: rounded once to the output's type as it is stored through its strides
            np.copyto(self.y.view(regions["OutputTensor"]), y.reshape(self.y.sizes),
                      casting="unsafe")
        self._store_indices(regions, ind)

    def _run_integers(self, regions: Mapping[str, np.ndarray], ind: np.ndarray) -> None:
        """MAX over an integer type, in NumPy on int64 keys (not a third kernel to compile):
        per live window tap, in window order, the outputs whose tap lies inside the input
        take the element where none was taken yet or where it is larger."""
        w = self.w
        ins, outs = w.spatial(self.x.sizes), w.spatial(self.y.sizes)
        n, c = self.x.sizes[:2]
        keys = scratch((n, c, *ins), np.int64, self.name, "the input as int64")
        best = scratch((n, c, *outs), np.int64, self.name, "the maxima")
        have = scratch(best.shape, np.bool_, self.name, "the maxima")
        flat = None
        if self.ind is not None:
            flat = scratch(keys.shape, np.int64, self.name, "the input's indices")
            flat[...] = np.arange(keys.size, dtype=np.int64).reshape(keys.shape)
        keys[...] = _keys(self.x.view(regions["InputTensor"])).reshape(keys.shape)
        best[...] = np.iinfo(np.int64).min
        have[...] = False
        idx = ind.reshape(best.shape) if self.ind is not None else None
        if idx is not None:
            idx[...] = -1
        for tap in itertools.product(*(w.ranges(d, ins[d], outs[d]) for d in range(3))):
            if any(ohi <= olo for olo, ohi, _ in tap):
                continue
            dst = _at(tuple(slice(olo, ohi) for olo, ohi, _ in tap))
            src = _at(tuple(slice(i0, i0 + (ohi - olo - 1) * w.s[d] + 1, w.s[d])
                            for d, (olo, ohi, i0) in enumerate(tap)))
            v, b = keys[src], best[dst]
            take = ~have[dst] | (v > b)
            best[dst] = np.where(take, v, b)
            if idx is not None and flat is not None:
                idx[dst] = np.where(take, flat[src], idx[dst])
            have[dst] = True
        np.copyto(self.y.view(regions["OutputTensor"]),
                  _from_keys(best, self.y.dtype).reshape(self.y.sizes))
        self._store_indices(regions, ind)

    def _store_indices(self, regions: Mapping[str, np.ndarray], ind: np.ndarray) -> None:
        if self.ind is not None:
            self.ind.view(regions["OutputIndicesTensor"])[...] = ind.reshape(
                self.ind.sizes).astype(self.ind.dtype)


def _per_channel(values: np.ndarray | None, channels: int, spatial: int) -> np.ndarray:
    """A per-tensor or per-channel scale / zero point (its logical values) as float64, shaped to
    broadcast over {N, C, spatial...} (absent: 0)."""
    if values is None:
        return np.zeros((1,) * (2 + spatial))
    flat = np.asarray(values, np.float64).reshape(-1)
    count = channels if flat.size == channels and channels > 1 else 1
    return flat[:count].reshape(1, count, *(1,) * spatial)


QUANTIZATION = ("InputScaleTensor", "InputZeroPointTensor", "OutputScaleTensor",
                "OutputZeroPointTensor")


class QuantizedAveragePlan:
    """QUANTIZED_LINEAR_AVERAGE_POOLING: the engine's window sums of the 8-bit input (widened to
    float32, summed in float64: exact), then the dequantize - average - requantize arithmetic
    in float64 (NumPy)."""

    def __init__(self, v: SimpleNamespace) -> None:
        self.v, self.w = v, Window(v)
        self.x, self.y = v.InputTensor, v.OutputTensor
        self.g = self.w.geometry(self.x.sizes, _packed(self.x.sizes), self.y.sizes,
                                 _packed(self.y.sizes), False)
        counts = self.w.counts(self.x.sizes, self.y.sizes)
        self.counts = counts.reshape(1, 1, *self.y.sizes[2:])
        self.divisor = float(math.prod(self.w.k)) if self.w.include_padding else self.counts

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        name = "DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING"
        x = scratch(self.x.sizes, np.float32, name, "the input as float32")
        sums = scratch((self.y.element_count,), np.float64, name, "the window sums")
        x[...] = self.x.view(regions["InputTensor"])
        _launch(x.reshape(-1), sums, _NO_INDEX, self.g, SUM, 0.0)
        params = {name: getattr(self.v, name).view(regions[name]) for name in QUANTIZATION
                  if getattr(self.v, name) is not None}
        q = requantize(self.v, params, sums.reshape(self.y.sizes),
                       self.counts, self.divisor)
        self.y.view(regions["OutputTensor"])[...] = q


def requantize(v: SimpleNamespace, params: Mapping[str, np.ndarray], sums: np.ndarray,
               counts: np.ndarray, divisor: Any) -> np.ndarray:
    """From the integer sums of the windows' elements (and their element counts): the average of
    the dequantized elements, quantized to the output type (round half to even, + zero point,
    saturated; NaN gives 0). ``params``: the scales and zero points present (logical arrays)."""
    c, spatial = v.InputTensor.sizes[1], v.DimensionCount
    sx, zx, sy, zy = (_per_channel(params.get(name), c, spatial) for name in QUANTIZATION)
    info = np.iinfo(v.OutputTensor.dtype)
    with np.errstate(all="ignore"):
        avg = (sums - counts * zx) * sx / divisor
        q = np.rint(avg / sy) + zy
        q = np.clip(np.where(np.isnan(q), 0.0, q), info.min, info.max)
    return q.astype(v.OutputTensor.dtype)


class AverageGradPlan:
    """AVERAGE_POOLING_GRAD in NumPy: per window tap (in window order, the live ones), the
    scaled input gradient of the outputs whose tap lies inside the input added to a float64
    output gradient through a strided view (the positions one tap reaches are distinct),
    rounded once."""

    def __init__(self, v: SimpleNamespace) -> None:
        self.w = Window(v)
        self.dy, self.dx = v.InputGradientTensor, v.OutputGradientTensor

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        name = "DML_OPERATOR_AVERAGE_POOLING_GRAD"
        w = self.w
        ins, outs = w.spatial(self.dx.sizes), w.spatial(self.dy.sizes)
        n, c = self.dx.sizes[:2]
        dx = scratch((n, c, *ins), np.float64, name, "the gradient")
        dx[...] = 0.0
        dy = np.asarray(self.dy.view(regions["InputGradientTensor"]), np.float64).reshape(
            n, c, *outs)
        with np.errstate(all="ignore"):
            if w.include_padding:
                g = dy / float(math.prod(w.k))
            else:
                g = dy / w.counts(self.dx.sizes, self.dy.sizes)
            per = [w.ranges(d, ins[d], outs[d]) for d in range(3)]
            for tap in itertools.product(*per):  # window order; padding taps add nothing
                if any(ohi <= olo for olo, ohi, _ in tap):
                    continue
                src = tuple(slice(olo, ohi) for olo, ohi, _ in tap)
                dst = tuple(slice(i0, i0 + (ohi - olo - 1) * w.s[d] + 1, w.s[d])
                            for d, (olo, ohi, i0) in enumerate(tap))
                dx[_at(dst)] += g[_at(src)]
        self.dx.view(regions["OutputGradientTensor"])[...] = dx.reshape(self.dx.sizes).astype(
            self.dx.dtype)


class MaxGradPlan:
    """MAX_POOLING_GRAD: the engine's maximum with indices over InputTensor (FLOAT16 widened
    into a dense float32 copy; the values into a dense scratch), then every input-gradient
    element added in float64 to the chosen element (in the input gradient's row-major order),
    rounded once."""

    def __init__(self, v: SimpleNamespace) -> None:
        self.w = Window(v)
        self.x, self.dy, self.dx = v.InputTensor, v.InputGradientTensor, v.OutputGradientTensor
        self.direct = self.x.data_type == F32
        self.g = self.w.geometry(self.x.sizes,
                                 self.x.strides if self.direct else _packed(self.x.sizes),
                                 self.dy.sizes, _packed(self.dy.sizes), True)

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        name = "DML_OPERATOR_MAX_POOLING_GRAD"
        count = self.dy.element_count
        ind = scratch((count,), np.int64, name, "the indices")
        values = scratch((count,), np.float32, name, "the maxima")
        if self.direct:
            x = typed_view(regions["InputTensor"], np.float32)
        else:
            x = scratch(self.x.sizes, np.float32, name, "the input as float32")
            x[...] = self.x.view(regions["InputTensor"])
        _launch(x.reshape(-1), values, ind, self.g, MAXIMUM, 0.0)
        dy = np.asarray(self.dy.view(regions["InputGradientTensor"]), np.float64).reshape(-1)
        keep = ind >= 0
        dx = np.bincount(ind[keep], weights=dy[keep], minlength=self.x.element_count)
        with np.errstate(all="ignore"):
            self.dx.view(regions["OutputGradientTensor"])[...] = dx.reshape(
                self.dx.sizes).astype(self.dx.dtype)


# --- references (float64 NumPy, read from the pages; independent of the engine) ---------------

def _windows(w: Window, in_sizes: Sequence[int], out_sizes: Sequence[int]
             ) -> list[tuple[tuple[int, ...], list[tuple[int, ...]], int]]:
    """For each spatial output position: its valid input positions in window order and the
    window's size."""
    ins, outs = w.spatial(in_sizes), w.spatial(out_sizes)
    result = []
    for o in itertools.product(*(range(a) for a in outs)):
        taps = []
        for k in itertools.product(*(range(a) for a in w.k)):
            pos = tuple(o[d] * w.s[d] - w.p[d] + k[d] * w.l[d] for d in range(3))
            if all(0 <= pos[d] < ins[d] for d in range(3)):
                taps.append(pos)
        result.append((o, taps, math.prod(w.k)))
    return result


def _as3(a: np.ndarray, w: Window) -> np.ndarray:
    return a.reshape(*a.shape[:2], *w.spatial(a.shape))


def _elements(x3: np.ndarray, taps: list[tuple[int, ...]]) -> np.ndarray:
    """The window's elements, [N, C, taps]."""
    if not taps:
        return np.zeros((*x3.shape[:2], 0), x3.dtype)
    return np.stack([x3[_at(t)] for t in taps], axis=-1)


@ieee_reference
def _reference_pool(v: SimpleNamespace, x: np.ndarray, kind: int, out_sizes: Sequence[int]
                    ) -> tuple[np.ndarray, np.ndarray]:
    """float64 results (or the maxima in the input's type) and the maxima's flat indices."""
    w = Window(v)
    x3 = _as3(x, w)
    n, c = x.shape[:2]
    y = np.zeros((n, c, *w.spatial(out_sizes)), np.float64 if kind != MAXIMUM else x.dtype)
    idx = np.full(y.shape, -1, np.int64)
    for o, taps, size in _windows(w, x.shape, out_sizes):
        e = _elements(x3, taps)
        at = _at(o)
        if kind == MAXIMUM:
            if not taps:
                y[at] = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
                continue
            flat = np.array([np.ravel_multi_index(t, x3.shape[2:]) for t in taps])
            ef = e.astype(np.float64) if x.dtype.kind == "f" else e
            nan = np.isnan(ef) if x.dtype.kind == "f" else np.zeros(e.shape, bool)
            # The first of the largest non-NaN elements; the first element if all are NaN.
            masked = np.where(nan, -np.inf, ef) if x.dtype.kind == "f" else ef
            top = masked.max(axis=-1, keepdims=True)
            hit = (masked == top) & ~nan
            first = np.where(hit.any(axis=-1), hit.argmax(axis=-1), 0)
            y[at] = np.take_along_axis(e, first[..., None], -1)[..., 0]
            plane = (np.arange(n)[:, None] * c + np.arange(c)[None, :]) * math.prod(x3.shape[2:])
            idx[at] = plane + flat[first]
            continue
        e = e.astype(np.float64)
        if kind == LP:
            s = np.zeros((n, c))
            for i in range(e.shape[-1]):
                s = s + np.abs(e[..., i]) ** v.P
            y[at] = s if v.P == 1 else np.sqrt(s) if v.P == 2 else s ** (1.0 / v.P)
        else:
            s = np.zeros((n, c))
            for i in range(e.shape[-1]):
                s = s + e[..., i]
            y[at] = s / (size if w.include_padding else len(taps))
    return y.reshape(n, c, *out_sizes[2:]), idx.reshape(n, c, *out_sizes[2:])


def _pool_reference(kind: int) -> Callable[[SimpleNamespace, Mapping[str, np.ndarray]],
                                          dict[str, np.ndarray]]:
    def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        x = inputs["InputTensor"]
        y, idx = _reference_pool(v, x, kind, v.OutputTensor.sizes)
        out = {"OutputTensor": y.astype(x.dtype)}
        ind = getattr(v, "OutputIndicesTensor", None)
        if ind is not None:
            out["OutputIndicesTensor"] = idx.astype(ind.dtype)
        return out
    reference.__doc__ = "The page's window reduction in float64, rounded once (max: exact)."
    return reference


@ieee_reference
def quantized_average_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                                ) -> dict[str, np.ndarray]:
    """Dequantize, average over the window (padding the real 0), requantize."""
    x = inputs["InputTensor"].astype(np.int64)
    w = Window(v)
    x3 = _as3(x, w)
    n, c = x.shape[:2]
    sums = np.zeros((n, c, *w.spatial(v.OutputTensor.sizes)))
    counts = np.zeros((1, 1, *sums.shape[2:]))
    for o, taps, _ in _windows(w, x.shape, v.OutputTensor.sizes):
        sums[_at(o)] = _elements(x3, taps).sum(axis=-1)
        counts[0, 0][tuple(o)] = len(taps)
    shape = tuple(v.OutputTensor.sizes)
    sums, counts = sums.reshape(shape), counts.reshape(1, 1, *shape[2:])
    divisor = float(math.prod(w.k)) if w.include_padding else counts
    return {"OutputTensor": requantize(v, inputs, sums, counts, divisor)}


@ieee_reference
def average_grad_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                           ) -> dict[str, np.ndarray]:
    """Each forward output's gradient, divided by its window's divisor, added to every element
    of its window (in output order)."""
    dy = inputs["InputGradientTensor"].astype(np.float64)
    w = Window(v)
    sizes = v.OutputGradientTensor.sizes
    dx = np.zeros((*sizes[:2], *w.spatial(sizes)))
    dy3 = _as3(dy, w)
    for o, taps, size in _windows(w, sizes, dy.shape):
        g = dy3[_at(o)] / (size if w.include_padding else len(taps))
        for t in taps:
            dx[_at(t)] += g
    return {"OutputGradientTensor": dx.reshape(sizes).astype(inputs["InputGradientTensor"].dtype)}


@ieee_reference
def max_grad_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                       ) -> dict[str, np.ndarray]:
    """The forward maximum's indices (ties: the lowest), the gradients summed at them."""
    x, dy = inputs["InputTensor"], inputs["InputGradientTensor"].astype(np.float64)
    _, idx = _reference_pool(v, x, MAXIMUM, dy.shape)
    dx = np.zeros(x.size)
    np.add.at(dx, idx[idx >= 0], dy[idx >= 0])
    return {"OutputGradientTensor": dx.reshape(x.shape).astype(x.dtype)}


def _plan(kind: int, name: str) -> Callable[[SimpleNamespace], PoolPlan]:
    return lambda v: PoolPlan(name, kind, v)


MAX_TYPES = FLOATS + INTEGERS
ROWS = (
    Row(OP.DML_OPERATOR_AVERAGE_POOLING, _plan(AVERAGE, "DML_OPERATOR_AVERAGE_POOLING"),
        _pool_reference(AVERAGE), FLOATS),
    Row(OP.DML_OPERATOR_AVERAGE_POOLING1, _plan(AVERAGE, "DML_OPERATOR_AVERAGE_POOLING1"),
        _pool_reference(AVERAGE), FLOATS),
    Row(OP.DML_OPERATOR_LP_POOLING, _plan(LP, "DML_OPERATOR_LP_POOLING"), _pool_reference(LP),
        FLOATS),
    Row(OP.DML_OPERATOR_LP_POOLING1, _plan(LP, "DML_OPERATOR_LP_POOLING1"), _pool_reference(LP),
        FLOATS),
    Row(OP.DML_OPERATOR_MAX_POOLING, _plan(MAXIMUM, "DML_OPERATOR_MAX_POOLING"),
        _pool_reference(MAXIMUM), MAX_TYPES),
    Row(OP.DML_OPERATOR_MAX_POOLING1, _plan(MAXIMUM, "DML_OPERATOR_MAX_POOLING1"),
        _pool_reference(MAXIMUM), MAX_TYPES),
    Row(OP.DML_OPERATOR_MAX_POOLING2, _plan(MAXIMUM, "DML_OPERATOR_MAX_POOLING2"),
        _pool_reference(MAXIMUM), MAX_TYPES),
    Row(OP.DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING, QuantizedAveragePlan,
        quantized_average_reference, (*BYTES, F32)),
    Row(OP.DML_OPERATOR_AVERAGE_POOLING_GRAD, AverageGradPlan, average_grad_reference, FLOATS),
    Row(OP.DML_OPERATOR_MAX_POOLING_GRAD, MaxGradPlan, max_grad_reference, FLOATS),
)
