"""One row per data-movement operator: the index maps its plan is made of, and its reference.

Every row's plan is a list of ``plan.IndexMap`` copies, each described per output dimension by a
table of source element offsets (``FILL`` outside the source):

- JOIN: one identity map per input, into its window of the output; SPLIT: one per output, from
  its window of the input;
- PADDING / PADDING1: one map, each dimension's table folding the output coordinate into the
  input by the padding mode (constant: FILL, edge: clamped, reflection: period 2(n-1), symmetric:
  period 2n, wrap: modulo n);
- TILE: coordinate modulo the input size;
- DEPTH_TO_SPACE(1) / SPACE_TO_DEPTH(1): the space dimensions split into (position, block)
  views of the output, so each is one affine map;
- SLICE_GRAD: the window positions copy the gradient, every other element is FILL (zero);
- FILL_VALUE_CONSTANT: a map with no source; DIAGONAL_MATRIX: one for the zeros, one along the
  diagonal (a view whose stride is the sum of the last two).

FILL_VALUE_SEQUENCE computes its values (``SequencePlan``). GATHER, GATHER_ELEMENTS and
GATHER_ND(1) are one ``plan.GatherPlan`` each: every output element's source offset plus its
index's (its index tuple's) offset along the gathered axis (axes). SCATTER_ELEMENTS copies the
input (an index map), then writes the updates line by line along Axis (``ScatterPlan``);
ONE_HOT fills OffValue and writes each sequence's OnValue the same way (``OneHotPlan``);
REVERSE_SUBSEQUENCES is a gather through a table made from the sequence lengths
(``ReversePlan``); SCATTER_ND copies, then writes each update block at its tuple's offset
(``ScatterNDPlan``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from descriptors import DML_OPERATOR_TYPE, NUMPY_DTYPE
from descriptors import DML_TENSOR_DATA_TYPE as T

from ..elementwise import references as elementwise_ref
from ..family import Row
from ..kernels.pieces import FILL
from ..plan import element_view
from ..resources import typed_view
from ..validation import Tensor, packed_strides
from . import references as ref
from .plan import (
    GatherPlan,
    IndexMap,
    MovePlan,
    affine,
    signed_indices,
    tuple_table,
    work_items,
)

OP = DML_OPERATOR_TYPE
FLOATS = (T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16)


def identity_tables(t: Tensor, sizes: Sequence[int] | None = None) -> list[np.ndarray]:
    """Each dimension's table for reading ``t`` (the first ``sizes`` of it): coordinate · stride."""
    return [affine(n, s) for n, s in zip(t.sizes if sizes is None else sizes, t.strides)]


def fill_element(value: Any, data_type: T) -> np.generic:
    """``value`` as an element of ``data_type``: floats rounded to nearest, a float value for an
    integer type converted as CAST converts (truncated, saturated, NaN 0), an integer wrapped."""
    dtype = np.dtype(NUMPY_DTYPE[data_type])
    if dtype.kind == "f" or isinstance(value, int):
        with np.errstate(over="ignore"):  # beyond FLOAT16's range: ±inf, as rounding gives
            element = np.array([value]).astype(dtype) if dtype.kind == "f" else \
                np.array([int(value) % (1 << 64)], np.uint64).astype(
                    f"u{dtype.itemsize}").view(dtype)
    else:
        with np.errstate(invalid="ignore"):
            element = elementwise_ref.cast(np.array([value], np.float64), dtype)
    return element[0]


def fill_bits(value: Any, data_type: T) -> int:
    """The bits of ``fill_element(value, data_type)`` (an index map's fill value)."""
    element = np.array([fill_element(value, data_type)])
    return int(element.view(f"u{element.itemsize}")[0])


# --- JOIN / SPLIT ---------------------------------------------------------------------------

def _windows(parts: Sequence[Tensor], axis: int) -> list[int]:
    return [0, *np.cumsum([p.sizes[axis] for p in parts]).tolist()][:-1]


def join_plan(v: SimpleNamespace) -> MovePlan:
    out: Tensor = v.OutputTensor
    return MovePlan(tuple(
        IndexMap.build(f"InputTensors[{i}]", "OutputTensor", out.element_size, t.sizes,
                       out.strides, identity_tables(t), dst_base=at * out.strides[v.Axis])
        for i, (t, at) in enumerate(zip(v.InputTensors, _windows(v.InputTensors, v.Axis)))))


def join_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    parts = [inputs[f"InputTensors[{i}]"] for i in range(len(v.InputTensors))]
    return {"OutputTensor": ref.join(parts, v.Axis)}


def split_plan(v: SimpleNamespace) -> MovePlan:
    x: Tensor = v.InputTensor
    return MovePlan(tuple(
        IndexMap.build("InputTensor", f"OutputTensors[{i}]", x.element_size, t.sizes, t.strides,
                       identity_tables(x, t.sizes), src_base=at * x.strides[v.Axis])
        for i, (t, at) in enumerate(zip(v.OutputTensors, _windows(v.OutputTensors, v.Axis)))))


def split_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    parts = ref.split(inputs["InputTensor"], [t.sizes[v.Axis] for t in v.OutputTensors], v.Axis)
    return {f"OutputTensors[{i}]": p for i, p in enumerate(parts)}


# --- PADDING ------------------------------------------------------------------------------

def fold(mode: str, out_size: int, start: int, n: int) -> np.ndarray:
    """The input coordinate each output coordinate of one dimension reads (FILL: the constant).
    **Decision**: REFLECTION of a 1-element dimension repeats that element (its period
    2(n - 1) is 0)."""
    k = np.arange(out_size, dtype=np.int64) - start
    if mode == "DML_PADDING_MODE_CONSTANT":
        return np.where((k >= 0) & (k < n), k, FILL)
    if mode == "DML_PADDING_MODE_EDGE" or (mode == "DML_PADDING_MODE_REFLECTION" and n == 1):
        return np.clip(k, 0, n - 1)
    if mode == "DML_PADDING_MODE_REFLECTION":
        m = k % (2 * (n - 1))
        return np.where(m < n, m, 2 * (n - 1) - m)
    if mode == "DML_PADDING_MODE_SYMMETRIC":
        m = k % (2 * n)
        return np.where(m < n, m, 2 * n - 1 - m)
    return k % n  # WRAP


def padding_plan(v: SimpleNamespace) -> MovePlan:
    x, out = v.InputTensor, v.OutputTensor
    tables = []
    for d, (n, stride) in enumerate(zip(x.sizes, x.strides)):
        c = fold(v.PaddingMode.name, out.sizes[d], v.StartPadding[d], n)
        tables.append(np.where(c >= 0, c * stride, FILL))
    return MovePlan((IndexMap.build("InputTensor", "OutputTensor", x.element_size, out.sizes,
                                    out.strides, tables,
                                    fill=fill_bits(v.PaddingValue, out.data_type)),))


def padding_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                      ) -> dict[str, np.ndarray]:
    value = fill_element(v.PaddingValue, v.OutputTensor.data_type)
    return {"OutputTensor": ref.padding(inputs["InputTensor"], ref.PAD_MODES[v.PaddingMode.name],
                                        value, v.StartPadding, v.EndPadding)}


# --- TILE, UPSAMPLE_2D (nearest) ------------------------------------------------------------

def tile_plan(v: SimpleNamespace) -> MovePlan:
    x, out = v.InputTensor, v.OutputTensor
    tables = [np.arange(m, dtype=np.int64) % n * s for m, n, s in zip(out.sizes, x.sizes,
                                                                       x.strides)]
    return MovePlan((IndexMap.build("InputTensor", "OutputTensor", x.element_size, out.sizes,
                                    out.strides, tables),))


def tile_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {"OutputTensor": ref.tile(inputs["InputTensor"], v.Repeats)}


# --- DEPTH_TO_SPACE / SPACE_TO_DEPTH --------------------------------------------------------

DCR = "DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW"


def _order(v: SimpleNamespace) -> str:
    order = getattr(v, "Order", None)
    return DCR if order is None else order.name


def depth_to_space_plan(v: SimpleNamespace) -> MovePlan:
    """The output as [N, C', H, b1, W, b2] (height and width split into position and block);
    the input channel is (b1·B + b2)·C' + c (DCR) or c·B² + b1·B + b2 (CRD)."""
    x, out = v.InputTensor, v.OutputTensor
    b = v.BlockSize
    n, c, h, w = out.sizes[0], out.sizes[1], x.sizes[2], x.sizes[3]
    on, oc, oh, ow = out.strides
    xn, xc, xh, xw = x.strides
    if _order(v) == DCR:
        c_step, b1_step, b2_step = xc, b * c * xc, c * xc
    else:
        c_step, b1_step, b2_step = b * b * xc, b * xc, xc
    sizes = (n, c, h, b, w, b)
    strides = (on, oc, b * oh, oh, b * ow, ow)
    tables = [affine(n, xn), affine(c, c_step), affine(h, xh), affine(b, b1_step),
              affine(w, xw), affine(b, b2_step)]
    return MovePlan((IndexMap.build("InputTensor", "OutputTensor", x.element_size, sizes,
                                    strides, tables),))


def space_to_depth_plan(v: SimpleNamespace) -> MovePlan:
    """The output channel split into (b1, b2, c) (DCR) or (c, b1, b2) (CRD); each reads input
    (c, h·B + b1, w·B + b2)."""
    x, out = v.InputTensor, v.OutputTensor
    b = v.BlockSize
    n, c, h, w = x.sizes[0], x.sizes[1], out.sizes[2], out.sizes[3]
    on, oc, oh, ow = out.strides
    xn, xc, xh, xw = x.strides
    if _order(v) == DCR:
        sizes = (n, b, b, c, h, w)
        strides = (on, b * c * oc, c * oc, oc, oh, ow)
        tables = [affine(n, xn), affine(b, xh), affine(b, xw), affine(c, xc)]
    else:
        sizes = (n, c, b, b, h, w)
        strides = (on, b * b * oc, b * oc, oc, oh, ow)
        tables = [affine(n, xn), affine(c, xc), affine(b, xh), affine(b, xw)]
    tables += [affine(h, b * xh), affine(w, b * xw)]
    return MovePlan((IndexMap.build("InputTensor", "OutputTensor", x.element_size, sizes,
                                    strides, tables),))


def depth_to_space_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                             ) -> dict[str, np.ndarray]:
    return {"OutputTensor": ref.depth_to_space(inputs["InputTensor"], v.BlockSize, _order(v))}


def space_to_depth_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                             ) -> dict[str, np.ndarray]:
    return {"OutputTensor": ref.space_to_depth(inputs["InputTensor"], v.BlockSize, _order(v))}


# --- SLICE_GRAD ----------------------------------------------------------------------------

def slice_grad_plan(v: SimpleNamespace) -> MovePlan:
    dy, out = v.InputGradientTensor, v.OutputGradientTensor
    tables = []
    for d, (off, size, step) in enumerate(zip(v.InputWindowOffsets, v.InputWindowSizes,
                                             v.InputWindowStrides)):
        first = off + (size - 1 if step < 0 else 0)
        table = np.full(out.sizes[d], FILL, np.int64)
        k = np.arange(dy.sizes[d], dtype=np.int64)
        table[first + step * k] = k * dy.strides[d]
        tables.append(table)
    return MovePlan((IndexMap.build("InputGradientTensor", "OutputGradientTensor",
                                    out.element_size, out.sizes, out.strides, tables),))


def slice_grad_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                         ) -> dict[str, np.ndarray]:
    return {"OutputGradientTensor": ref.slice_grad(
        inputs["InputGradientTensor"], v.OutputGradientTensor.sizes, v.InputWindowOffsets,
        v.InputWindowSizes, v.InputWindowStrides)}


# --- FILL_VALUE_CONSTANT / FILL_VALUE_SEQUENCE ------------------------------------------------

def fill_constant_plan(v: SimpleNamespace) -> MovePlan:
    out = v.OutputTensor
    return MovePlan((IndexMap.build(None, "OutputTensor", out.element_size, out.sizes,
                                    out.strides, identity_tables(out),
                                    fill=fill_bits(v.Value, out.data_type)),))


def fill_constant_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                            ) -> dict[str, np.ndarray]:
    out = v.OutputTensor
    return {"OutputTensor": np.full(out.sizes, v.Value).astype(NUMPY_DTYPE[out.data_type])}


@dataclass(frozen=True, eq=False)
class SequencePlan:
    """FILL_VALUE_SEQUENCE: element i (row-major) = ValueStart + i·ValueDelta, computed as the
    reference defines it (floats in float64 rounded once; integers modulo 2^64, then the low
    bits)."""

    output: Tensor
    start: float | int
    delta: float | int

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        out = self.output
        i = np.arange(out.element_count, dtype=np.uint64)
        if out.dtype.kind == "f":
            values = (i.astype(np.float64) * float(self.delta) + float(self.start)).astype(
                out.dtype)
        else:
            start = np.uint64(int(self.start) % (1 << 64))
            delta = np.uint64(int(self.delta) % (1 << 64))
            values = (start + i * delta).astype(f"u{out.element_size}").view(out.dtype)
        out.view(regions["OutputTensor"])[...] = values.reshape(out.sizes)


def fill_sequence_plan(v: SimpleNamespace) -> SequencePlan:
    return SequencePlan(v.OutputTensor, v.ValueStart, v.ValueDelta)


def fill_sequence_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                            ) -> dict[str, np.ndarray]:
    out = v.OutputTensor
    return {"OutputTensor": ref.fill_sequence(out.sizes, v.ValueStart, v.ValueDelta,
                                              np.dtype(NUMPY_DTYPE[out.data_type]))}


# --- GATHER, GATHER_ELEMENTS, SCATTER_ELEMENTS --------------------------------------------------

def gather_plan(v: SimpleNamespace) -> GatherPlan:
    """Output coordinates are {Input[..Axis], Indices[last IndexDimensions], Input[Axis+1..]},
    right-aligned to the output's rank: the first and last groups step through the input, the
    middle one through the index table."""
    x, idx, out = v.InputTensor, v.IndicesTensor, v.OutputTensor
    axis, q = v.Axis, v.IndexDimensions
    lead = idx.dim_count - q
    roles: list[tuple[int, int]] = []  # (source stride, index stride) of each expected dim
    for e in range(axis):
        roles.append((x.strides[e], 0))
    for k in range(q):
        roles.append((0, idx.strides[lead + k]))
    for e in range(axis + 1, x.dim_count):
        roles.append((x.strides[e], 0))
    shift = out.dim_count - len(roles)  # > 0: leading 1s prepended; < 0: leading 1s cropped
    aligned = [(0, 0)] * max(shift, 0) + roles[max(-shift, 0):]
    return GatherPlan.build("InputTensor", "OutputTensor", "IndicesTensor", idx,
                            [(x.sizes[axis], x.strides[axis])], False, x.element_size, out.sizes,
                            [r[0] for r in aligned], out.strides, [r[1] for r in aligned])


def _normalized(indices: np.ndarray, size: int) -> np.ndarray:
    """Index values as int64 positions along an axis of ``size``: negative ones of a signed type
    from the end; -1 where the value stays outside [0, size)."""
    signed = indices.dtype.kind == "i"
    v = indices.astype(np.int64) if signed else indices.astype(np.uint64)
    if signed:
        v = np.where(v < 0, v + size, v)
        return np.where((v >= 0) & (v < size), v, -1)
    return np.where(v < np.uint64(size), v.astype(np.int64), -1)


def _take(x: np.ndarray, positions: np.ndarray, axis: int) -> np.ndarray:
    """x's elements at ``positions`` along ``axis`` (np.take), 0 where a position is -1."""
    y = np.take(x, np.maximum(positions, 0), axis=axis)
    shape = [1] * axis + list(positions.shape) + [1] * (x.ndim - axis - 1)
    return np.where(positions.reshape(shape) < 0, np.zeros((), x.dtype), y)


def gather_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                     ) -> dict[str, np.ndarray]:
    """The page: the entries of Input's Axis dimension named by the indices, in the output of rank
    q + r - 1 (the IndexDimensions last index dimensions), right-aligned to OutputTensor."""
    x, idx = inputs["InputTensor"], inputs["IndicesTensor"]
    q = v.IndexDimensions
    positions = _normalized(idx.reshape(idx.shape[idx.ndim - q:]), x.shape[v.Axis])
    y = _take(x, positions, v.Axis)
    return {"OutputTensor": y.reshape(v.OutputTensor.sizes)}


def gather_elements_plan(v: SimpleNamespace) -> GatherPlan:
    x, idx, out = v.InputTensor, v.IndicesTensor, v.OutputTensor
    src = list(x.strides)
    src[v.Axis] = 0
    return GatherPlan.build("InputTensor", "OutputTensor", "IndicesTensor", idx,
                            [(x.sizes[v.Axis], x.strides[v.Axis])], False, x.element_size,
                            out.sizes, src, out.strides, idx.strides)


def gather_elements_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                              ) -> dict[str, np.ndarray]:
    """output[i, j, k] = input[i, index[i, j, k], k] (Axis = 1), 0 for an index outside."""
    x, idx = inputs["InputTensor"], inputs["IndicesTensor"]
    positions = _normalized(idx, x.shape[v.Axis])
    y = np.take_along_axis(x, np.maximum(positions, 0), axis=v.Axis)
    return {"OutputTensor": np.where(positions < 0, np.zeros((), x.dtype), y)}


def scatter_along(regions: Mapping[str, np.ndarray], axis: int, idx: Tensor, out: Tensor,
                  updates: np.ndarray, update_strides: Sequence[int]) -> None:
    """``kernels/movement.scatter_lines`` over the index tensor's lines along ``axis``: each
    writes its updates (element strides ``update_strides``) at its indices' positions of the
    output's line (SCATTER_ELEMENTS; ONE_HOT with one OnValue, strides 0)."""
    from ..kernels.movement import scatter_lines

    others = [d for d in range(idx.dim_count) if d != axis]

    def pick(values: Sequence[int]) -> np.ndarray:
        return np.array([values[d] for d in others], np.int64)

    indices, wrap = signed_indices(regions["IndicesTensor"], idx.dtype)
    scatter_lines(element_view(regions["OutputTensor"], out.element_size), updates,
                  pick(idx.sizes), pick(out.strides), pick(update_strides), pick(idx.strides),
                  idx.sizes[axis], update_strides[axis], idx.strides[axis], indices,
                  out.sizes[axis], out.strides[axis], wrap)


@dataclass(frozen=True, eq=False)
class ScatterPlan:
    """SCATTER_ELEMENTS: the input copied to the output (an index map), then each line along
    Axis writes its updates in order (``kernels/movement.scatter_lines``). An update whose index
    lies outside is dropped; where several updates name one element, the last in row-major
    order of UpdatesTensor wins (docs/decisions.md)."""

    copy: IndexMap
    values: SimpleNamespace

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        self.copy.run(regions)
        v = self.values
        upd = v.UpdatesTensor
        scatter_along(regions, v.Axis, v.IndicesTensor, v.OutputTensor,
                      element_view(regions["UpdatesTensor"], upd.element_size), upd.strides)


def scatter_elements_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                               ) -> dict[str, np.ndarray]:
    """output = input; output[i, index[i, j, k], k] = updates[i, j, k] (Axis = 1)."""
    x, idx, upd = inputs["InputTensor"], inputs["IndicesTensor"], inputs["UpdatesTensor"]
    out = np.array(x, order="C")  # (order "K" would keep a broadcast input's zero strides)
    positions = _normalized(idx, x.shape[v.Axis])
    coords = list(np.indices(idx.shape))
    coords[v.Axis] = positions
    keep = (positions >= 0).ravel()
    target = np.ravel_multi_index([np.maximum(c, 0).ravel() for c in coords], x.shape)[keep]
    values = np.asarray(upd).ravel()[keep]
    # The last update of each target: the first occurrence in the reversed order.
    _, last = np.unique(target[::-1], return_index=True)
    chosen = target.size - 1 - last
    out.reshape(-1)[target[chosen]] = values[chosen]
    return {"OutputTensor": out}


def scatter_elements_plan(v: SimpleNamespace) -> ScatterPlan:
    x, out = v.InputTensor, v.OutputTensor
    copy = IndexMap.build("InputTensor", "OutputTensor", x.element_size, out.sizes, out.strides,
                          identity_tables(x))
    return ScatterPlan(copy, v)


# --- ONE_HOT, REVERSE_SUBSEQUENCES ---------------------------------------------------------------

def on_off(values: np.ndarray) -> tuple[np.generic, np.generic]:
    """ONE_HOT's (OffValue, OnValue): ValuesTensor's element 0, and its element 1 along the
    fastest-changing dimension of size > 1 (the page)."""
    inner = max(d for d in range(values.ndim) if values.shape[d] > 1)
    at = [0] * values.ndim
    off = values[tuple(at)]
    at[inner] = 1
    return off, values[tuple(at)]


@dataclass(frozen=True, eq=False)
class OneHotPlan:
    """The output filled with OffValue (an index map with no source), then each sequence's
    OnValue written at its index (``scatter_lines`` with one update per line)."""

    fill: IndexMap
    values: SimpleNamespace

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        v = self.values
        out = v.OutputTensor
        off, on = (np.array([x]).view(f"u{out.element_size}") for x in
                   on_off(v.ValuesTensor.view(regions["ValuesTensor"])))
        self.fill.run(regions, off)
        scatter_along(regions, v.Axis, v.IndicesTensor, out, on, (0,) * out.dim_count)


def one_hot_plan(v: SimpleNamespace) -> OneHotPlan:
    out = v.OutputTensor
    return OneHotPlan(IndexMap.build(None, "OutputTensor", out.element_size, out.sizes,
                                     out.strides, identity_tables(out)), v)


def one_hot_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                      ) -> dict[str, np.ndarray]:
    """Every sequence along Axis: OnValue at its index (negative from the end; an index outside
    leaves the whole sequence OffValue), OffValue elsewhere."""
    idx = inputs["IndicesTensor"]
    off, on = on_off(inputs["ValuesTensor"])
    n = v.OutputTensor.sizes[v.Axis]
    positions = _normalized(idx, n)  # size 1 along Axis
    shape = [1] * idx.ndim
    shape[v.Axis] = n
    j = np.arange(n).reshape(shape)
    return {"OutputTensor": np.where(j == positions, on, off)}


def reverse_subsequences_plan(v: SimpleNamespace) -> ReversePlan:
    return ReversePlan(v)


@dataclass(frozen=True, eq=False)
class ReversePlan:
    """REVERSE_SUBSEQUENCES as a gather: the positions, made at dispatch from the sequence
    lengths, map element j of a sequence of length L to L - 1 - j (j < L) or j."""

    values: SimpleNamespace

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        from ..kernels.movement import gather_index

        v = self.values
        x, out, axis = v.InputTensor, v.OutputTensor, v.Axis
        n = x.sizes[axis]
        lengths = np.minimum(v.SequenceLengthsTensor.view(regions["SequenceLengthsTensor"])
                             .astype(np.uint64), n).astype(np.int64)  # (clamped: decisions)
        shape = [1] * x.dim_count
        shape[axis] = n
        j = np.arange(n, dtype=np.int64).reshape(shape)
        positions = np.ascontiguousarray(np.where(j < lengths, lengths - 1 - j, j))
        src = list(x.strides)
        src[axis] = 0
        size = x.element_size
        dst = element_view(regions["OutputTensor"], size)
        gather_index(element_view(regions["InputTensor"], size), dst, np.zeros(1, dst.dtype),
                     np.asarray(out.sizes, np.int64), np.asarray(src, np.int64),
                     np.asarray(out.strides, np.int64),
                     np.asarray(packed_strides(positions.shape), np.int64), positions.ravel(),
                     n, x.strides[axis], 0, False, work_items())


def reverse_subsequences_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                                   ) -> dict[str, np.ndarray]:
    """Each sequence along Axis has its first SequenceLength elements reversed, the rest kept;
    a length beyond the axis reverses the whole sequence (decisions)."""
    x, lengths = inputs["InputTensor"], inputs["SequenceLengthsTensor"]
    out = np.array(x, order="C")
    moved = np.moveaxis(out, v.Axis, -1)
    source = np.moveaxis(x, v.Axis, -1)
    flat_lengths = np.moveaxis(lengths, v.Axis, -1)
    for at in np.ndindex(moved.shape[:-1]):
        k = int(min(int(flat_lengths[at][0]), moved.shape[-1]))
        moved[at][:k] = source[at][:k][::-1]
    return {"OutputTensor": out}


# --- GATHER_ND, GATHER_ND1, SCATTER_ND --------------------------------------------------------

def _nd_shape(v: SimpleNamespace) -> tuple[int, int, int, int, int]:
    """(batch dims b, first meaningful input dim, first meaningful index dim, meaningful index
    dims n, tuple size t) of an ND gather or scatter."""
    x, idx = v.InputTensor, v.IndicesTensor
    n = v.IndicesDimensionCount
    return (int(getattr(v, "BatchDimensionCount", 0)), x.dim_count - v.InputDimensionCount,
            idx.dim_count - n, n, idx.sizes[-1])


def gather_nd_plan(v: SimpleNamespace) -> GatherPlan:
    """Output coordinates: the meaningful index dimensions but the last (the first b are batch
    dimensions, shared with the input), then the input dimensions after the tuple's; the index
    tuple addresses the t input dimensions after the batch ones."""
    x, idx, out = v.InputTensor, v.IndicesTensor, v.OutputTensor
    b, x0, i0, n, t = _nd_shape(v)
    packed = packed_strides(idx.sizes[:-1] or (1,))
    roles = [(x.strides[x0 + e] if e < b else 0, packed[i0 + e]) for e in range(n - 1)]
    roles += [(x.strides[k], 0) for k in range(x0 + b + t, x.dim_count)]
    shift = out.dim_count - len(roles)
    aligned = [(0, 0)] * max(shift, 0) + roles[max(-shift, 0):]
    axes = [(x.sizes[x0 + b + j], x.strides[x0 + b + j]) for j in range(t)]
    return GatherPlan.build("InputTensor", "OutputTensor", "IndicesTensor", idx, axes, True,
                            x.element_size, out.sizes, [r[0] for r in aligned], out.strides,
                            [r[1] for r in aligned])


def _tuple_position(values: np.ndarray, sizes: Sequence[int]) -> tuple[int, ...] | None:
    """An index tuple's input coordinates (negative components from the end), or None if one
    lies outside."""
    out = []
    for value, size in zip(values.tolist(), sizes):
        k = int(value) + (size if int(value) < 0 else 0)
        if not 0 <= k < size:
            return None
        out.append(k)
    return tuple(out)


def gather_nd_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                        ) -> dict[str, np.ndarray]:
    """For each index tuple (batch coordinates first): the input block at (batch, tuple), zeros
    for a tuple outside the input; the blocks in the meaningful index shape, right-aligned to
    OutputTensor."""
    b, _, _, n, t = _nd_shape(v)
    x = inputs["InputTensor"]
    x = x.reshape(x.shape[x.ndim - v.InputDimensionCount:])
    idx = inputs["IndicesTensor"]
    idx = idx.reshape(idx.shape[idx.ndim - n:])
    block = x.shape[b + t:]
    blocks = []
    for p in np.ndindex(idx.shape[:-1]):
        at = _tuple_position(idx[p], x.shape[b:b + t])
        blocks.append(x[p[:b] + at] if at is not None else np.zeros(block, x.dtype))
    y = np.array(blocks, x.dtype).reshape(idx.shape[:-1] + block)
    return {"OutputTensor": y.reshape(v.OutputTensor.sizes)}


@dataclass(frozen=True, eq=False)
class ScatterNDPlan:
    """SCATTER_ND: the input copied to the output (an index map), then every update block
    written at its tuple's offset (NumPy on the output's elements). A tuple outside the input is
    dropped; where tuples repeat, the last in row-major order wins (as SCATTER_ELEMENTS)."""

    copy: IndexMap
    values: SimpleNamespace

    def run(self, regions: Mapping[str, np.ndarray]) -> None:

        v = self.values
        out, idx, upd = v.OutputTensor, v.IndicesTensor, v.UpdatesTensor
        _, x0, _, _, t = _nd_shape(v)
        axes = [(out.sizes[x0 + j], out.strides[x0 + j]) for j in range(t)]
        table = tuple_table(idx, regions["IndicesTensor"], axes)  # (allocated before any write)
        trailing = out.sizes[x0 + t:]
        block = np.zeros(1, np.int64)
        for size, stride in zip(trailing, out.strides[x0 + t:]):
            block = (block[:, None] + np.arange(size, dtype=np.int64) * stride).ravel()
        updates = np.ascontiguousarray(upd.view(regions["UpdatesTensor"])).reshape(
            table.size, block.size)
        keep = np.flatnonzero(table >= 0)
        _, last = np.unique(table[keep][::-1], return_index=True)
        chosen = keep[keep.size - 1 - last]
        targets = (table[chosen][:, None] + block[None, :]).ravel()
        values = updates[chosen].ravel()
        self.copy.run(regions)
        flat = typed_view(regions["OutputTensor"], out.dtype)
        flat[targets] = values


def scatter_nd_plan(v: SimpleNamespace) -> ScatterNDPlan:
    x, out = v.InputTensor, v.OutputTensor
    return ScatterNDPlan(IndexMap.build("InputTensor", "OutputTensor", x.element_size, out.sizes,
                                        out.strides, identity_tables(x)), v)


def scatter_nd_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                         ) -> dict[str, np.ndarray]:
    """output = input; then, for each index tuple in row-major order, output[tuple] = its update
    block (a tuple outside the input is skipped)."""
    _, _, _, n, t = _nd_shape(v)
    x = inputs["InputTensor"]
    out = np.array(x, order="C")
    meaningful = out.reshape(out.shape[out.ndim - v.InputDimensionCount:])
    idx = inputs["IndicesTensor"]
    idx = idx.reshape(idx.shape[idx.ndim - n:])
    upd = np.asarray(inputs["UpdatesTensor"]).reshape(idx.shape[:-1] + meaningful.shape[t:])
    for p in np.ndindex(idx.shape[:-1]):
        at = _tuple_position(idx[p], meaningful.shape[:t])
        if at is not None:
            meaningful[at] = upd[p]
    return {"OutputTensor": out}


# --- DIAGONAL_MATRIX ------------------------------------------------------------------------------

def diagonal_matrix_plan(v: SimpleNamespace) -> MovePlan:
    """Zeros everywhere (a map with no source), then Value along the diagonal x = y + Offset of
    every matrix: one map over the diagonal's elements, its stride the sum of the last two."""
    out = v.OutputTensor
    *batch, h, w = out.sizes
    *batch_strides, sh, sw = out.strides
    zeros = IndexMap.build(None, "OutputTensor", out.element_size, out.sizes, out.strides,
                           identity_tables(out))
    first = max(0, -v.Offset)
    length = min(h, w - v.Offset) - first
    if length <= 0:
        return MovePlan((zeros,))
    sizes = [*batch, length]
    diagonal = IndexMap.build(None, "OutputTensor", out.element_size, sizes,
                              [*batch_strides, sh + sw], [affine(n, 0) for n in sizes],
                              dst_base=first * sh + (first + v.Offset) * sw,
                              fill=fill_bits(v.Value, out.data_type))
    return MovePlan((zeros, diagonal))


def diagonal_matrix_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                              ) -> dict[str, np.ndarray]:
    """OutputTensor[..., y, x] = Value if y + Offset == x else 0 (Value as CAST converts it for
    an integer type: 10.6 becomes 10, the page says)."""
    out = v.OutputTensor
    dtype = np.dtype(NUMPY_DTYPE[out.data_type])
    value = fill_element(v.Value, out.data_type)
    *_, h, w = out.sizes
    y, x = np.indices((h, w))
    return {"OutputTensor": np.broadcast_to(np.where(y + v.Offset == x, value, dtype.type(0)),
                                            out.sizes).astype(dtype)}


# --- the table ------------------------------------------------------------------------------

ROWS = (
    Row(OP.DML_OPERATOR_JOIN, join_plan, join_reference),
    Row(OP.DML_OPERATOR_SPLIT, split_plan, split_reference),
    Row(OP.DML_OPERATOR_PADDING, padding_plan, padding_reference),
    Row(OP.DML_OPERATOR_PADDING1, padding_plan, padding_reference),
    Row(OP.DML_OPERATOR_TILE, tile_plan, tile_reference),
    Row(OP.DML_OPERATOR_DEPTH_TO_SPACE, depth_to_space_plan, depth_to_space_reference),
    Row(OP.DML_OPERATOR_DEPTH_TO_SPACE1, depth_to_space_plan, depth_to_space_reference),
    Row(OP.DML_OPERATOR_SPACE_TO_DEPTH, space_to_depth_plan, space_to_depth_reference),
    Row(OP.DML_OPERATOR_SPACE_TO_DEPTH1, space_to_depth_plan, space_to_depth_reference),
    Row(OP.DML_OPERATOR_SLICE_GRAD, slice_grad_plan, slice_grad_reference),
    Row(OP.DML_OPERATOR_FILL_VALUE_CONSTANT, fill_constant_plan, fill_constant_reference),
    Row(OP.DML_OPERATOR_FILL_VALUE_SEQUENCE, fill_sequence_plan, fill_sequence_reference),
    Row(OP.DML_OPERATOR_GATHER, gather_plan, gather_reference),
    Row(OP.DML_OPERATOR_GATHER_ELEMENTS, gather_elements_plan, gather_elements_reference),
    Row(OP.DML_OPERATOR_SCATTER_ELEMENTS, scatter_elements_plan, scatter_elements_reference),
    Row(OP.DML_OPERATOR_ONE_HOT, one_hot_plan, one_hot_reference),
    Row(OP.DML_OPERATOR_REVERSE_SUBSEQUENCES, reverse_subsequences_plan,
        reverse_subsequences_reference),
    Row(OP.DML_OPERATOR_GATHER_ND, gather_nd_plan, gather_nd_reference),
    Row(OP.DML_OPERATOR_GATHER_ND1, gather_nd_plan, gather_nd_reference),
    Row(OP.DML_OPERATOR_SCATTER_ND, scatter_nd_plan, scatter_nd_reference),
    Row(OP.DML_OPERATOR_DIAGONAL_MATRIX, diagonal_matrix_plan, diagonal_matrix_reference),
)
BY_OPERATOR = {row.operator: row for row in ROWS}  # this table's rows
