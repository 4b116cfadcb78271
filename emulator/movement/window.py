"""UNFOLD, FOLD and MAX_UNPOOLING: the sliding-window rows of the data-movement family
(``table.Row``).

The column layout (both pages' examples, PyTorch's nn.Unfold / nn.Fold): the image
``{N, C, S_1 … S_d}`` and the columns ``{N, C·K, B}`` with K = ∏ WindowSizes and B = ∏
BlocksPerDimension; column row ``c·K + k`` (k row-major over the window position
(k_1 … k_d)) and column ``b`` (row-major over the block position (p_1 … p_d)) hold the image
element at spatial coordinates ``p_i·Strides[i] + k_i·Dilations[i] - StartPadding[i]``, or the
implicit zero padding outside the image.

- UNFOLD is a gather (``kernels/movement.gather_index``) over the output viewed as
  ``{N, C, k_1 … k_d, p_1 … p_d}``. An axis whose every (k_i, p_i) pair lands inside the image is
  affine in both coordinates (source strides Dilations·stride and Strides·stride); the pairs of
  the other axes ("padded" axes) are looked up in a plan-time table of element offsets, OUTSIDE
  where any coordinate falls in the padding (written as zero bits). Without padding the table is
  one entry and the gather is a strided copy.
- FOLD sums every column element into the image element it came from; elements that land in the
  padding are dropped. The plan lists, per spatial output position, the contributing column
  offsets in window-position order (a CSR table, made per axis and combined as an outer
  product); ``kernels/window.fold_sums`` sums each output element in that order
  (float64 from +0, rounded once; integers modulo 2^bits), so the result does not depend on
  threads; an element no block reaches is +0. The table holds one entry per column element that
  lands inside the image (at most K·B), as UNFOLD's holds at most K·B.
- MAX_UNPOOLING zero-fills the output (an index map with no source) and then writes every input
  element at the output element its index names, counting the output's logical elements
  row-major (the page: "a contiguous one-dimensional array"), serially
  (``kernels/window.unpool_scatter``): values are bit copies, an index past the output is
  dropped, and of repeated indices the last input element in row-major order wins.

Decisions where the pages are silent are in docs/decisions.md (FOLD, UNFOLD, MAX_UNPOOLING).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from descriptors import DML_OPERATOR_TYPE as OP
from descriptors import NUMPY_DTYPE

from ..plan import collapse, element_view
from ..resources import typed_view
from ..validation import Tensor, packed_strides
from .plan import OUTSIDE, STREAM_BYTES, IndexMap, work_items
from .table import Row, identity_tables

BOTH = (slice(None), slice(None))  # the batch and channel dimensions, whole (reference indexing)


def blocks_per_dimension(v: SimpleNamespace, spatial: Sequence[int]) -> list[int]:
    """The pages' BlocksPerDimension for the image's spatial sizes."""
    return [(n + a + b - d * (w - 1) - 1) // s + 1 for n, a, b, d, w, s in zip(
        spatial, v.StartPadding, v.EndPadding, v.Dilations, v.WindowSizes, v.Strides)]


def _coordinates(v: SimpleNamespace, i: int, blocks: int) -> np.ndarray:
    """Axis i's image coordinate of every (window position k, block position p): a (W, B)
    array (negative or past the image: padding)."""
    k = np.arange(v.WindowSizes[i], dtype=np.int64)[:, None]
    p = np.arange(blocks, dtype=np.int64)[None, :]
    return p * v.Strides[i] + k * v.Dilations[i] - v.StartPadding[i]


# --- UNFOLD -----------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class UnfoldPlan:
    """``dst[c] = src[c·src_strides + table[c·tab_strides]]`` over the output's
    {N, C, k…, p…} view (collapsed), zero where the table holds OUTSIDE."""

    element_size: int
    sizes: np.ndarray
    src_strides: np.ndarray
    dst_strides: np.ndarray
    tab_strides: np.ndarray
    table: np.ndarray

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        from ..kernels.movement import gather_index

        dst = element_view(regions["OutputTensor"], self.element_size)
        gather_index(element_view(regions["InputTensor"], self.element_size), dst,
                     np.zeros(1, dst.dtype), self.sizes, self.src_strides, self.dst_strides,
                     self.tab_strides, self.table, OUTSIDE, 1, 0,
                     int(np.prod(self.sizes)) * self.element_size >= STREAM_BYTES, work_items())


def unfold_plan(v: SimpleNamespace) -> UnfoldPlan:
    x, out = v.InputTensor, v.OutputTensor
    d = v.DimensionCount
    windows = list(v.WindowSizes)
    blocks = blocks_per_dimension(v, x.sizes[2:])
    och, ob = out.strides[1], out.strides[2]
    k_dst = [och * s for s in packed_strides(windows)]
    p_dst = [ob * s for s in packed_strides(blocks)]
    k_src, p_src = [0] * d, [0] * d
    table: np.ndarray = np.zeros((), np.int64)
    inside: np.ndarray = np.ones((), bool)
    padded = []
    for i in range(d):
        coords = _coordinates(v, i, blocks[i])
        valid = (coords >= 0) & (coords < x.sizes[2 + i])
        stride = x.strides[2 + i]
        if valid.all():  # P_i = 0 here, so the coordinate is k·D + p·S: affine in both
            k_src[i], p_src[i] = v.Dilations[i] * stride, v.Strides[i] * stride
            continue
        padded.append(i)
        table = np.add.outer(table, np.where(valid, coords * stride, 0))
        inside = np.logical_and.outer(inside, valid)
    table = np.where(inside, table, OUTSIDE).ravel()
    # The table's dimensions are (k_a, p_a) for each padded axis a, packed in that order.
    tab = packed_strides([n for a in padded for n in (windows[a], blocks[a])])
    k_tab, p_tab = [0] * d, [0] * d
    for j, a in enumerate(padded):
        k_tab[a], p_tab[a] = tab[2 * j], tab[2 * j + 1]
    sizes = [x.sizes[0], x.sizes[1], *windows, *blocks]
    c_sizes, c_src, c_dst, c_tab = (np.asarray(s, np.int64) for s in collapse(
        sizes, [x.strides[0], x.strides[1], *k_src, *p_src],
        [out.strides[0], math.prod(windows) * och, *k_dst, *p_dst], [0, 0, *k_tab, *p_tab]))
    return UnfoldPlan(x.element_size, c_sizes, c_src, c_dst, c_tab, table)


def unfold_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                     ) -> dict[str, np.ndarray]:
    """Zero-pad the image, then column (c, k), block p = image[c, p·Strides + k·Dilations]."""
    x = inputs["InputTensor"]
    n, c, *spatial = x.shape
    d = v.DimensionCount
    padded = np.pad(x, [(0, 0), (0, 0), *zip(v.StartPadding, v.EndPadding)])
    blocks = blocks_per_dimension(v, spatial)
    cols = np.zeros((n, c, *v.WindowSizes, *blocks), x.dtype)
    for k in itertools.product(*(range(w) for w in v.WindowSizes)):
        window = tuple(slice(k[i] * v.Dilations[i],
                             k[i] * v.Dilations[i] + (blocks[i] - 1) * v.Strides[i] + 1,
                             v.Strides[i]) for i in range(d))
        cols[BOTH + k] = padded[BOTH + window]
    return {"OutputTensor": cols.reshape(v.OutputTensor.sizes)}


# --- FOLD -------------------------------------------------------------------------------------

def _outer_csr(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
               ) -> tuple[np.ndarray, np.ndarray]:
    """Two ragged lists (counts per row, values) combined: row (r, s) of the result lists
    a[r][x] + b[s][y] for x, then y (row-major over (r, s); a's entries the slower)."""
    (ca, va), (cb, vb) = a, b
    sa, sb = np.cumsum(ca) - ca, np.cumsum(cb) - cb
    rows_a, rows_b = np.repeat(np.arange(ca.size), cb.size), np.tile(np.arange(cb.size), ca.size)
    counts = ca[rows_a] * cb[rows_b]
    row = np.repeat(np.arange(counts.size), counts)
    local = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts,
                                                                      counts)
    width = cb[rows_b][row]
    values = va[sa[rows_a][row] + local // width] + vb[sb[rows_b][row] + local % width]
    return counts, values


@dataclass(frozen=True, eq=False)
class FoldPlan:
    """Per output element (n, c, o): Σ over offsets[starts[o] … starts[o + 1]] of the column
    element at n·src_n + c·src_c + offset, in that order (``kernels/window.py``)."""

    input_type: np.dtype  # the array type the kernel reads (FLOAT16: uint16 bits)
    integer: bool
    batch: int
    channels: int
    src_n: int
    src_c: int
    dst_n: int
    dst_c: int
    dst_spatial: np.ndarray  # the output offset of each spatial position (row-major)
    starts: np.ndarray
    offsets: np.ndarray

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        from ..kernels.window import fold_sums

        fold_sums(typed_view(regions["InputTensor"], self.input_type),
                  typed_view(regions["OutputTensor"], self.input_type),
                  np.zeros(1, np.uint64 if self.integer else np.float64), self.batch,
                  self.channels, self.src_n, self.src_c, self.dst_n, self.dst_c,
                  self.dst_spatial, self.starts, self.offsets)


def fold_plan(v: SimpleNamespace) -> FoldPlan:
    x, out = v.InputTensor, v.OutputTensor
    spatial = out.sizes[2:]
    windows = list(v.WindowSizes)
    blocks = blocks_per_dimension(v, spatial)
    xch, xb = x.strides[1], x.strides[2]
    k_step = [xch * s for s in packed_strides(windows)]
    p_step = [xb * s for s in packed_strides(blocks)]
    lists = (np.ones(1, np.int64), np.zeros(1, np.int64))
    for i, size in enumerate(spatial):
        # Output coordinate o receives window position k from block p = (o + P - k·D) / S.
        o = np.arange(size, dtype=np.int64)[:, None]
        k = np.arange(windows[i], dtype=np.int64)[None, :]
        t = o + v.StartPadding[i] - k * v.Dilations[i]
        p = t // v.Strides[i]
        hit = (t >= 0) & (t % v.Strides[i] == 0) & (p < blocks[i])  # (o, k), row-major
        terms = np.broadcast_to(k * k_step[i], hit.shape) + p * p_step[i]
        lists = _outer_csr(lists, (hit.sum(axis=1), terms[hit]))
    counts, offsets = lists
    dst_spatial = np.zeros(1, np.int64)
    for size, stride in zip(spatial, out.strides[2:]):
        dst_spatial = np.add.outer(dst_spatial, np.arange(size, dtype=np.int64) * stride).ravel()
    integer = x.dtype.kind != "f"
    return FoldPlan(np.dtype(f"u{x.element_size}") if integer or x.element_size == 2
                    else x.dtype, integer, out.sizes[0], out.sizes[1], x.strides[0],
                    math.prod(windows) * xch, out.strides[0], out.strides[1], dst_spatial,
                    np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
                    offsets.astype(np.int64))


def fold_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                   ) -> dict[str, np.ndarray]:
    """Add every column element into the zero-padded image at p·Strides + k·Dilations, one
    window position k at a time (row-major: the sum order), then drop the padding. Floats
    accumulate in float64 from +0 and are rounded once; integers wrap in their own type."""
    out = v.OutputTensor
    x = inputs["InputTensor"]
    n, c, *spatial = out.sizes
    d = v.DimensionCount
    blocks = blocks_per_dimension(v, spatial)
    cols = x.reshape(n, c, *v.WindowSizes, *blocks)
    dtype = np.dtype(NUMPY_DTYPE[out.data_type])
    acc_type = np.float64 if dtype.kind == "f" else dtype
    padded = np.zeros((n, c, *(s + a + b for s, a, b in zip(spatial, v.StartPadding,
                                                            v.EndPadding))), acc_type)
    for k in itertools.product(*(range(w) for w in v.WindowSizes)):
        window = tuple(slice(k[i] * v.Dilations[i],
                             k[i] * v.Dilations[i] + (blocks[i] - 1) * v.Strides[i] + 1,
                             v.Strides[i]) for i in range(d))
        padded[BOTH + window] += cols[BOTH + k]
    image = padded[BOTH + tuple(slice(a, a + s) for a, s in zip(v.StartPadding, spatial))]
    return {"OutputTensor": image.astype(dtype)}


# --- MAX_UNPOOLING ----------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class UnpoolPlan:
    """The output zero-filled (an index map with no source), then the input scattered
    (``kernels/window.unpool_scatter``)."""

    zeros: IndexMap
    values: SimpleNamespace

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        from ..kernels.window import unpool_scatter

        v = self.values
        x, idx, out = v.InputTensor, v.IndicesTensor, v.OutputTensor
        self.zeros.run(regions)

        def i64(values: Sequence[int]) -> np.ndarray:
            return np.asarray(values, np.int64)

        unpool_scatter(element_view(regions["OutputTensor"], out.element_size),
                       element_view(regions["InputTensor"], x.element_size),
                       typed_view(regions["IndicesTensor"], idx.dtype), i64(x.sizes),
                       i64(x.strides), i64(idx.strides), i64(out.sizes), i64(out.strides))


def max_unpooling_plan(v: SimpleNamespace) -> UnpoolPlan:
    out: Tensor = v.OutputTensor
    return UnpoolPlan(IndexMap.build(None, "OutputTensor", out.element_size, out.sizes,
                                     out.strides, identity_tables(out)), v)


def max_unpooling_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                            ) -> dict[str, np.ndarray]:
    """Zeros; then, for every input element in row-major order, output.flat[index] = value
    (an index past the output is skipped; a later element overwrites an earlier one)."""
    x, idx = inputs["InputTensor"], inputs["IndicesTensor"]
    values = np.ascontiguousarray(x).view(f"u{x.dtype.itemsize}").ravel()  # (bits: NaNs kept)
    flat = np.zeros(math.prod(v.OutputTensor.sizes), values.dtype)
    for value, index in zip(values, idx.ravel().tolist()):
        if index < flat.size:
            flat[index] = value
    return {"OutputTensor": flat.view(x.dtype).reshape(v.OutputTensor.sizes)}


ROWS: tuple[Row, ...] = (
    Row(OP.DML_OPERATOR_UNFOLD, unfold_plan, unfold_reference),
    Row(OP.DML_OPERATOR_FOLD, fold_plan, fold_reference),
    Row(OP.DML_OPERATOR_MAX_UNPOOLING, max_unpooling_plan, max_unpooling_reference),
)
