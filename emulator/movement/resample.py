"""The resampling operators: RESAMPLE, RESAMPLE1, RESAMPLE2, RESAMPLE3, RESAMPLE_GRAD,
RESAMPLE_GRAD1 and UPSAMPLE_2D, rows of the data-movement family (``table.Row``).

Every one is, per dimension, a map from output coordinates to input coordinates. The pages give
the relation ``OutputX = (InputX + InputPixelOffset) · Scale + OutputPixelOffset``, so output
coordinate ``o`` samples the input at

    x = (o - OutputPixelOffset) / Scale - InputPixelOffset

(in float64 from the desc's float32 values). RESAMPLE and UPSAMPLE_2D have no offset fields:
they are RESAMPLE1 with InputPixelOffset 0.5 and OutputPixelOffset -0.5 (pixel centres), as the
RESAMPLE1 page says; UPSAMPLE_2D's scales are 1 but for height and width.

- **Nearest neighbour** picks one input coordinate per output coordinate: ``floor(x)``
  (RoundingDirection DECREASING), ``ceil(x)`` (INCREASING), or, for the operators without a
  RoundingDirection, the nearest, ties toward decreasing coordinates (``ceil(x - 0.5)``, as
  the RESAMPLE_GRAD page's example needs); clamped to the input ("the output edges are
  clamped"). A bit copy: an ``IndexMap``, every
  data type exact.
- **Linear** weighs the two neighbours ``floor(x)`` and ``floor(x) + 1`` by ``1 - f`` and ``f``
  (``f = x - floor(x)``), each clamped to the input; the weights of a dimension multiply
  (bilinear … quadrilinear). RESAMPLE3 with Antialiased stretches the triangle filter by
  ``1 / Scale`` along a dimension whose ``1 / Scale > 2`` (the page's condition), normalised to
  sum 1.
- The gradients are the transposed maps: each input coordinate sums the incoming gradient of the
  output coordinates that read it, with the same weights.

Taps of zero weight are dropped and taps that clamp to one coordinate merge, so an element that
does not contribute never turns a result into NaN. ``kernels/resample.resample_rows`` runs every
interpolating plan (float32 sums, rounded once to the output type).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from descriptors import DML_OPERATOR_TYPE, NUMPY_DTYPE
from descriptors import DML_TENSOR_DATA_TYPE as T

from ..resources import typed_view
from ..validation import Tensor
from .plan import IndexMap, MovePlan, work_items
from .table import FLOATS, Row

OP = DML_OPERATOR_TYPE
RESAMPLE_TYPES = (*FLOATS, T.DML_TENSOR_DATA_TYPE_INT8, T.DML_TENSOR_DATA_TYPE_UINT8)

NEAREST = "DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR"
# Nearest-neighbour rounding of the input coordinate.
FLOOR, CEIL, NEAREST_DOWN = "floor", "ceil", "nearest (ties down)"


@dataclass(frozen=True)
class Resampling:
    """What every resampling desc says, normalised: names, mode, per-dimension transform."""

    src: str
    dst: str
    linear: bool
    rounding: str  # FLOOR, CEIL or NEAREST_DOWN (nearest neighbour only)
    scales: tuple[float, ...]
    input_offsets: tuple[float, ...]
    output_offsets: tuple[float, ...]
    antialiased: bool
    gradient: bool

    def forward_sizes(self, v: SimpleNamespace) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(input sizes, output sizes) of the forward resampling."""
        a, b = getattr(v, self.src).sizes, getattr(v, self.dst).sizes
        return (b, a) if self.gradient else (a, b)


def resampling(v: SimpleNamespace, op: DML_OPERATOR_TYPE) -> Resampling:
    gradient = op in (OP.DML_OPERATOR_RESAMPLE_GRAD, OP.DML_OPERATOR_RESAMPLE_GRAD1)
    src, dst = ("InputGradientTensor", "OutputGradientTensor") if gradient else \
        ("InputTensor", "OutputTensor")
    linear = v.InterpolationMode.name != NEAREST
    if op == OP.DML_OPERATOR_UPSAMPLE_2D:
        rank = v.InputTensor.dim_count
        scales = (1.0,) * (rank - 2) + (float(v.ScaleSize.Height), float(v.ScaleSize.Width))
    else:
        rank = len(v.Scales)
        scales = tuple(v.Scales)
    if op in (OP.DML_OPERATOR_RESAMPLE, OP.DML_OPERATOR_UPSAMPLE_2D):
        inputs, outputs = (0.5,) * rank, (-0.5,) * rank
    else:
        inputs, outputs = tuple(v.InputPixelOffsets), tuple(v.OutputPixelOffsets)
    direction = getattr(v, "RoundingDirection", None)
    rounding = NEAREST_DOWN if direction is None else \
        CEIL if direction.name == "DML_AXIS_DIRECTION_INCREASING" else FLOOR
    return Resampling(src, dst, linear, rounding, scales, inputs, outputs,
                      bool(getattr(v, "Antialiased", False)) and linear, gradient)


# --- per-dimension taps -------------------------------------------------------------------------

def input_coordinates(n_out: int, scale: float, input_offset: float, output_offset: float
                      ) -> np.ndarray:
    """Where each output coordinate samples the input: (o - OutputPixelOffset) / Scale -
    InputPixelOffset."""
    return (np.arange(n_out, dtype=np.float64) - output_offset) / scale - input_offset


def nearest_coordinates(x: np.ndarray, rounding: str, n_in: int) -> np.ndarray:
    picked = np.floor(x) if rounding == FLOOR else np.ceil(x) if rounding == CEIL else \
        np.ceil(x - 0.5)
    return np.clip(picked, 0, n_in - 1).astype(np.int64)


@dataclass(frozen=True)
class Taps:
    """One dimension's taps in compressed rows: output coordinate ``o`` reads input coordinates
    ``col[ptr[o]:ptr[o + 1]]`` (ascending, distinct) with weights ``weight[...]`` (non-zero)."""

    ptr: np.ndarray
    col: np.ndarray
    weight: np.ndarray
    n_in: int

    @classmethod
    def from_dense(cls, cols: np.ndarray, weights: np.ndarray, n_in: int) -> Taps:
        """From (n_out, k) candidate input coordinates (clamped) and weights: taps that clamp to
        one coordinate merge (their weights add), zero weights are dropped."""
        n_out = cols.shape[0]
        keys = (np.arange(n_out, dtype=np.int64)[:, None] * n_in + cols).ravel()
        unique, inverse = np.unique(keys, return_inverse=True)
        sums = np.bincount(inverse.ravel(), weights=weights.ravel(), minlength=unique.size)
        keep = sums != 0
        unique, sums = unique[keep], sums[keep]
        rows = unique // n_in
        ptr = np.searchsorted(rows, np.arange(n_out + 1, dtype=np.int64)).astype(np.int64)
        return cls(ptr, unique - rows * n_in, sums, n_in)

    def dense(self, pad: int) -> tuple[np.ndarray, np.ndarray]:
        """(n_out, k) input coordinates and float32 weights, k the most taps of a coordinate;
        the rest padded with weight 0 at the coordinate's first tap (``pad`` if it has none)."""
        counts = np.diff(self.ptr)
        k = max(int(counts.max(initial=0)), 1)
        slot = np.arange(k)[None, :]
        within = slot < counts[:, None]
        at = np.minimum(self.ptr[:-1, None] + slot, self.ptr[1:, None] - 1)
        first = self.col[np.minimum(self.ptr[:-1], max(self.col.size - 1, 0))] \
            if self.col.size else np.full(counts.size, pad)
        cols = np.where(within, self.col[np.maximum(at, 0)] if self.col.size else pad,
                        np.where(counts > 0, first, pad)[:, None])
        weights = np.where(within, self.weight[np.maximum(at, 0)] if self.col.size else 0, 0)
        return cols.astype(np.int64), weights.astype(np.float32)

    def transposed(self) -> Taps:
        """The gradient's taps: each input coordinate reads the output coordinates that read
        it, with the same weights."""
        n_out = self.ptr.size - 1
        rows = np.repeat(np.arange(n_out, dtype=np.int64), np.diff(self.ptr))
        order = np.lexsort((rows, self.col))
        cols = self.col[order]
        ptr = np.searchsorted(cols, np.arange(self.n_in + 1, dtype=np.int64)).astype(np.int64)
        return Taps(ptr, rows[order], self.weight[order], n_out)


def linear_weights(x: np.ndarray, n_in: int, scale: float, antialiased: bool
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(n_out, k) clamped input coordinates and weights of the linear filter at ``x``: the two
    neighbours, or with antialiasing (where 1 / scale > 2) the triangle of half-width 1 / scale
    around ``x``, normalised to sum 1."""
    base = np.floor(x)
    frac = x - base
    if antialiased and 1.0 / scale > 2.0:
        first = int(np.floor(-1.0 / scale)) + 1
        if 2 - 2 * first > n_in + 2:  # wider than the input: the input's taps and two tails
            return _wide_triangle(x, n_in, scale, base + first, base + 1 - first)
        steps = np.arange(first, 2 - first, dtype=np.float64)
        weights = np.clip(1.0 - np.abs(steps[None, :] - frac[:, None]) * scale, 0.0, 1.0)
        weights /= weights.sum(axis=1, keepdims=True)
    else:
        steps = np.array([0.0, 1.0])
        weights = np.stack([1.0 - frac, frac], axis=1)
    cols = np.clip(base[:, None] + steps[None, :], 0, n_in - 1).astype(np.int64)
    return cols, weights


def _wide_triangle(x: np.ndarray, n_in: int, scale: float, lo: np.ndarray, hi: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The antialiasing triangle when its window [lo, hi] is wider than the input (a tiny
    Scale): a tap per input element, and the window's parts beyond either edge (which clamp to
    the edge elements) summed in closed form, so the plan is O(n_out · n_in), never
    O(n_out / Scale)."""
    i = np.arange(n_in, dtype=np.float64)
    weights = np.clip(1.0 - np.abs(i[None, :] - x[:, None]) * scale, 0.0, 1.0)
    weights[:, 0] += _triangle_sum(lo, np.minimum(hi, -1.0), x, scale)
    weights[:, -1] += _triangle_sum(np.maximum(lo, float(n_in)), hi, x, scale)
    weights /= weights.sum(axis=1, keepdims=True)
    return np.broadcast_to(np.arange(n_in, dtype=np.int64), weights.shape), weights


def _triangle_sum(a: np.ndarray, b: np.ndarray, x: np.ndarray, scale: float) -> np.ndarray:
    """Σ max(0, 1 - |i - x|·scale) over the integers i in [a, b] (element-wise): the rising side
    (i <= x) and the falling side (i > x), each an arithmetic series."""
    half = 1.0 / scale
    lo_up = np.maximum(a, np.floor(x - half) + 1)
    hi_up = np.minimum(b, np.floor(x))
    lo_down = np.maximum(a, np.floor(x) + 1)
    hi_down = np.minimum(b, np.ceil(x + half) - 1)
    up = np.maximum(hi_up - lo_up + 1, 0)
    down = np.maximum(hi_down - lo_down + 1, 0)
    return (up * (1 - x * scale) + scale * (lo_up + hi_up) * up / 2
            + down * (1 + x * scale) - scale * (lo_down + hi_down) * down / 2)


def axis_taps(r: Resampling, d: int, n_in: int, n_out: int) -> Taps:
    """Dimension ``d``'s forward taps."""
    x = input_coordinates(n_out, r.scales[d], r.input_offsets[d], r.output_offsets[d])
    if not r.linear:
        return Taps.from_dense(nearest_coordinates(x, r.rounding, n_in)[:, None],
                               np.ones((n_out, 1)), n_in)
    cols, weights = linear_weights(x, n_in, r.scales[d], r.antialiased)
    return Taps.from_dense(cols, weights, n_in)


# --- the plan -----------------------------------------------------------------------------------

PERIODS = range(1, 9)  # the repeat lengths (in output coordinates) a last dimension is tried for


@dataclass(frozen=True, eq=False)
class Pattern:
    """Where the last dimension's taps repeat: output coordinate b·P + p, for the blocks b in
    [block_lo, block_hi), reads line positions b·step + col[p, t] with weights weight[p, t]
    (x2 bilinear: P = 2, step 1; x0.5: P = 1, step 2). The kernel runs those blocks with fixed
    offsets and weights, so its loads are contiguous and the loop vectorises; the coordinates
    outside them (the clamped edges) go tap by tap. Only weights that are all non-zero repeat
    (a zero weight must add nothing, not 0 · NaN)."""

    col: np.ndarray  # (P, k) line positions of block 0
    weight: np.ndarray  # (P, k) float32
    step: int
    block_lo: int
    block_hi: int

    @classmethod
    def none(cls, cols: np.ndarray) -> Pattern:
        k = cols.shape[1]
        return cls(np.zeros((1, k), np.int64), np.zeros((1, k), np.float32), 0, 0, 0)

    @classmethod
    def find(cls, cols: np.ndarray, weights: np.ndarray) -> Pattern:
        """The shortest period whose regular blocks cover at least half of the coordinates."""
        n, k = cols.shape
        for period in PERIODS:
            blocks = n // period
            if blocks < 4:
                break
            c = cols[: blocks * period].reshape(blocks, period, k)
            w = weights[: blocks * period].reshape(blocks, period, k)
            mid = blocks // 2
            step = int(c[mid + 1, 0, 0] - c[mid, 0, 0])
            if step < 0 or not (w[mid] != 0).all():
                continue
            expected = c[mid][None] + step * (np.arange(blocks) - mid)[:, None, None]
            regular = (c == expected).all(axis=(1, 2)) & (w == w[mid][None]).all(axis=(1, 2))
            lo, hi = mid, mid + 1
            while lo > 0 and regular[lo - 1]:
                lo -= 1
            while hi < blocks and regular[hi]:
                hi += 1
            if 2 * (hi - lo) * period >= n:
                return cls(c[mid] - step * mid, w[mid].astype(np.float32), step, lo, hi)
        return cls.none(cols)


@dataclass(frozen=True, eq=False)
class InterpolationPlan:
    """out[o] = Σ Π_d weight_d · src[Σ_d offset_d] over every dimension's taps
    (``kernels/resample.resample_rows``)."""

    src: Tensor
    dst: Tensor
    src_name: str
    dst_name: str
    sizes: np.ndarray
    dst_strides: np.ndarray
    ptr: np.ndarray
    off: np.ndarray
    wt: np.ndarray
    last_col: np.ndarray
    last_wt: np.ndarray
    last_stride: int
    line_lo: int
    line_n: int
    blend: bool
    pattern: Pattern

    @classmethod
    def build(cls, src: Tensor, dst: Tensor, src_name: str, dst_name: str,
              taps: Sequence[Taps]) -> InterpolationPlan:
        sizes, dst_strides, src_strides = list(dst.sizes), list(dst.strides), list(src.strides)
        taps = list(taps)
        if len(taps) == 1:  # the kernel reads at least one outer dimension
            taps.insert(0, Taps(np.array([0, 1]), np.zeros(1, np.int64), np.ones(1), 1))
            sizes.insert(0, 1)
            dst_strides.insert(0, 0)
            src_strides.insert(0, 0)
        *outer, last = taps
        width = max(len(t.ptr) for t in outer)
        ptr = np.zeros((len(outer), width), np.int64)
        at = 0
        for d, t in enumerate(outer):
            ptr[d, : t.ptr.size] = t.ptr + at
            at += t.col.size
        off = np.concatenate([t.col * s for t, s in zip(outer, src_strides)]).astype(np.int64)
        wt = np.concatenate([t.weight for t in outer]).astype(np.float32)
        lo = int(last.col.min()) if last.col.size else 0
        line_n = int(last.col.max()) + 1 - lo if last.col.size else 0
        pairs = int(np.prod([max(np.diff(t.ptr).max(initial=0), 1) for t in outer]))
        last_col, last_wt = last.dense(lo)
        pattern = Pattern.find(last_col - lo, last_wt)
        # Blend the outer taps into a line first where the last dimension's taps repeat (its
        # loops then vectorise) or where that is fewer operations than reading every pair.
        blend = pattern.block_hi > pattern.block_lo or (
            pairs > 1 and line_n * pairs + last.col.size < pairs * last.col.size)
        return cls(src, dst, src_name, dst_name, np.asarray(sizes, np.int64),
                   np.asarray(dst_strides, np.int64), ptr, off, wt, last_col, last_wt,
                   src_strides[-1], lo, line_n, blend, pattern)

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        from ..kernels.resample import resample_rows

        rows = int(np.prod(self.sizes[:-1]))
        resample_rows(storage(regions[self.src_name], self.src),
                      storage(regions[self.dst_name], self.dst), self.sizes, self.dst_strides,
                      self.ptr, self.off, self.wt, self.last_col, self.last_wt,
                      self.last_stride, self.line_lo, self.line_n, self.blend,
                      self.pattern.col, self.pattern.weight, self.pattern.step,
                      self.pattern.block_lo, self.pattern.block_hi,
                      max(1, min(rows, work_items())))


def storage(region: np.ndarray, t: Tensor) -> np.ndarray:
    """The kernel's view of a bound buffer: FLOAT16 as its uint16 bits (kernels/floats.py)."""
    return typed_view(region, np.uint16 if t.data_type == T.DML_TENSOR_DATA_TYPE_FLOAT16
                      else t.dtype)


def resample_plan(op: DML_OPERATOR_TYPE):
    def plan(v: SimpleNamespace) -> MovePlan | InterpolationPlan:
        r = resampling(v, op)
        src, dst = getattr(v, r.src), getattr(v, r.dst)
        n_in, n_out = r.forward_sizes(v)
        taps = [axis_taps(r, d, a, b) for d, (a, b) in enumerate(zip(n_in, n_out))]
        if not r.linear and not r.gradient:  # one source element per output: a bit copy
            tables = [t.col * s for t, s in zip(taps, src.strides)]
            return MovePlan((IndexMap.build(r.src, r.dst, src.element_size, dst.sizes,
                                            dst.strides, tables),))
        if r.gradient:
            taps = [t.transposed() for t in taps]
        return InterpolationPlan.build(src, dst, r.src, r.dst, taps)
    return plan


# --- the reference ------------------------------------------------------------------------------

def reference_matrix(r: Resampling, d: int, n_in: int, n_out: int) -> np.ndarray:
    """Dimension d's forward map as a dense (n_out, n_in) float64 matrix, from the pages'
    formulas one output coordinate at a time."""
    m = np.zeros((n_out, n_in))
    scale = r.scales[d]
    for o in range(n_out):
        x = (o - r.output_offsets[d]) / scale - r.input_offsets[d]
        if not r.linear:
            pick = {FLOOR: np.floor(x), CEIL: np.ceil(x),
                    NEAREST_DOWN: np.ceil(x - 0.5)}[r.rounding]
            m[o, min(max(int(pick), 0), n_in - 1)] = 1.0
        elif r.antialiased and 1 / scale > 2:
            # The triangle filter stretched by 1/scale: weight max(0, 1 - |i - x|·scale) for
            # every integer position i it covers, positions outside clamped to the edge.
            lo, hi = int(np.floor(x - 1 / scale)), int(np.ceil(x + 1 / scale))
            total = 0.0
            for i in range(lo, hi + 1):
                w = max(0.0, 1.0 - abs(i - x) * scale)
                m[o, min(max(i, 0), n_in - 1)] += w
                total += w
            m[o] /= total
        else:
            i0 = int(np.floor(x))
            f = x - i0
            m[o, min(max(i0, 0), n_in - 1)] += 1 - f
            m[o, min(max(i0 + 1, 0), n_in - 1)] += f
    return m


def apply_along(x: np.ndarray, m: np.ndarray, axis: int) -> np.ndarray:
    """y[..., o, ...] = Σ_i m[o, i] · x[..., i, ...] over the non-zero entries only (a zero
    weight does not turn an infinite or NaN element into NaN)."""
    moved = np.moveaxis(x, axis, -1)
    out = np.zeros((*moved.shape[:-1], m.shape[0]))
    for o in range(m.shape[0]):
        (nz,) = np.nonzero(m[o])
        if nz.size:
            out[..., o] = np.sum(moved[..., nz] * m[o, nz], axis=-1)
    return np.moveaxis(out, -1, axis)


def resample_values(v: SimpleNamespace, op: DML_OPERATOR_TYPE, x: np.ndarray) -> np.ndarray:
    """The float64 result before rounding to the output type (nearest neighbour forward: the
    picked elements themselves, of the input's type)."""
    r = resampling(v, op)
    n_in, n_out = r.forward_sizes(v)
    if not r.linear and not r.gradient:
        for d in range(x.ndim):
            x = np.take(x, reference_matrix(r, d, n_in[d], n_out[d]).argmax(axis=1), axis=d)
        return x
    y = np.asarray(x, np.float64)
    for d in range(y.ndim):
        m = reference_matrix(r, d, n_in[d], n_out[d])
        y = apply_along(y, m.T if r.gradient else m, d)
    return y


def to_type(y: np.ndarray, data_type: T) -> np.ndarray:
    dtype = np.dtype(NUMPY_DTYPE[data_type])
    if dtype.kind == "f":
        return y.astype(dtype)
    info = np.iinfo(dtype)
    return np.clip(np.nan_to_num(np.rint(y)), info.min, info.max).astype(dtype)


def resample_reference(op: DML_OPERATOR_TYPE):
    def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        r = resampling(v, op)
        with np.errstate(invalid="ignore", over="ignore"):
            y = resample_values(v, op, inputs[r.src])
            return {r.dst: y if y.dtype == inputs[r.src].dtype else
                    to_type(y, getattr(v, r.dst).data_type)}
    return reference


def _row(op: DML_OPERATOR_TYPE, types: tuple[T, ...]) -> Row:
    return Row(op, resample_plan(op), resample_reference(op), types)


ROWS: tuple[Row, ...] = (
    _row(OP.DML_OPERATOR_UPSAMPLE_2D, FLOATS),
    _row(OP.DML_OPERATOR_RESAMPLE, RESAMPLE_TYPES),
    _row(OP.DML_OPERATOR_RESAMPLE1, RESAMPLE_TYPES),
    _row(OP.DML_OPERATOR_RESAMPLE2, RESAMPLE_TYPES),
    _row(OP.DML_OPERATOR_RESAMPLE3, RESAMPLE_TYPES),
    _row(OP.DML_OPERATOR_RESAMPLE_GRAD, FLOATS),
    _row(OP.DML_OPERATOR_RESAMPLE_GRAD1, FLOATS),
)
