"""Kernel plans: what an operator decides once at CreateOperator, so a dispatch only calls a kernel.

A plan holds integers and int64 arrays (sizes, strides, element offsets) and the names of the bind
points it reads and writes. ``run(regions)`` receives each bound tensor as the uint8 bytes of its
binding and calls a kernel; the kernels module is imported only then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from .resources import typed_view

if TYPE_CHECKING:
    from .reduction.layout import Layout


def element_view(region: np.ndarray, element_size: int) -> np.ndarray:
    """The bytes of a binding as unsigned integers of the element's width (bit-exact copies)."""
    return typed_view(region, f"u{element_size}")


def collapse(sizes: Sequence[int], *strides: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """Drop size-1 dimensions and merge neighbours that are contiguous in every stride set.

    Returns (sizes, strides_0, strides_1, ...) of the shortest equivalent iteration (rank ≥ 1).
    Dimension i merges into i-1 when, for every set, strides[i-1] == strides[i] * sizes[i]; this
    merges broadcast (zero-stride) runs too.
    """
    dims = [(n, *(s[i] for s in strides)) for i, n in enumerate(sizes) if n != 1]
    if not dims:
        dims = [(1, *(0 for _ in strides))]
    merged = [list(dims[0])]
    for n, *st in dims[1:]:
        prev = merged[-1]
        if all(prev[1 + k] == st[k] * n for k in range(len(st))):
            prev[0] *= n
            prev[1:] = st
        else:
            merged.append([n, *st])
    return tuple(tuple(d[k] for d in merged) for k in range(1 + len(strides)))


def int64s(values: Sequence[int]) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class CopyPlan:
    """dst[dst_base + c·dst_strides] = src[src_base + c·src_strides] for every coordinate c."""

    src: str
    dst: str
    element_size: int
    sizes: np.ndarray
    src_strides: np.ndarray
    dst_strides: np.ndarray
    src_base: int
    dst_base: int

    @classmethod
    def build(cls, src: str, dst: str, element_size: int, sizes: Sequence[int],
              src_strides: Sequence[int], dst_strides: Sequence[int], src_base: int = 0,
              dst_base: int = 0) -> CopyPlan:
        c_sizes, c_src, c_dst = collapse(sizes, src_strides, dst_strides)
        return cls(src, dst, element_size, int64s(c_sizes), int64s(c_src), int64s(c_dst),
                   src_base, dst_base)

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        from .kernels.copy import strided_copy

        strided_copy(element_view(regions[self.src], self.element_size), self.src_base,
                     element_view(regions[self.dst], self.element_size), self.dst_base,
                     self.sizes, self.src_strides, self.dst_strides)


# Top-K: the work split and strategy are decided per dispatch from the thread count.
TOPK_MIN_CHUNK = 4096  # never split a sequence into pieces shorter than this
TOPK_TILE = 64  # sequences advancing together in column mode
TOPK_HEAP_RATIO = 64  # the heap is used while K * 64 <= the chunk's length


@dataclass(frozen=True, eq=False)
class TopKPlan:
    """Top-K of ``n`` elements along an axis for every sequence (all other coordinates).

    ``seq_*``: collapsed sizes and element strides of the sequence dimensions in the input, value
    and index tensors; ``*_axis``: the axis strides; ``key_constants``: see kernels/topk.py.
    """

    element_size: int
    key_constants: np.ndarray
    k: int
    n: int
    seq_sizes: np.ndarray
    seq_in: np.ndarray
    seq_val: np.ndarray
    seq_idx: np.ndarray
    in_axis: int
    val_axis: int
    idx_axis: int
    index_size: int = 4  # UINT32 (4) or UINT64 (8) indices

    @classmethod
    def build(cls, element_size: int, key_constants: Sequence[int], k: int, axis: int,
              in_sizes: Sequence[int], in_strides: Sequence[int], val_strides: Sequence[int],
              idx_strides: Sequence[int], index_size: int = 4) -> TopKPlan:
        from .reduction.layout import Layout

        # The sequences are the reduction layout's groups (the axis is read by its strides).
        sizes, s_in, s_val, s_idx = Layout.build(in_sizes, [axis],
                                                 [in_strides, val_strides, idx_strides]).g
        keys = np.uint64 if element_size == 8 else np.uint32
        return cls(element_size, np.asarray(key_constants, keys), k, in_sizes[axis],
                   sizes, s_in, s_val, s_idx,
                   in_strides[axis], val_strides[axis], idx_strides[axis], index_size)

    @property
    def num_seq(self) -> int:
        return int(np.prod(self.seq_sizes))

    def strategy(self, threads: int) -> tuple[str, int]:
        """("rows" | "columns" | "radix", chunks): chosen so every thread has work."""
        lanes, lane_in = int(self.seq_sizes[-1]), int(self.seq_in[-1])
        # A heap while few elements get in (K <= n/64, measured); else an exact radix select.
        select_ok = TOPK_HEAP_RATIO * self.k <= self.n
        columns = select_ok and lanes >= 2 and 0 < lane_in < self.in_axis
        tasks = (self.num_seq // lanes) * -(-lanes // TOPK_TILE) if columns else self.num_seq
        want = -(-2 * threads // tasks) if tasks < 2 * threads else 1
        chunks = max(1, min(want, self.n // max(TOPK_HEAP_RATIO * self.k, TOPK_MIN_CHUNK)))
        if columns:
            return "columns", chunks
        return ("rows" if select_ok else "radix"), chunks

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        import numba

        from .kernels import topk

        x = element_view(regions["InputTensor"], self.element_size)
        values = element_view(regions["OutputValueTensor"], self.element_size)
        indices = element_view(regions["OutputIndexTensor"], self.index_size)
        if self.element_size == 8:  # 64-bit keys do not pack with an index: a stable sort
            topk.sort_rows(x, self.seq_sizes, self.seq_in, self.seq_val, self.seq_idx, self.n,
                           self.in_axis, self.k, self.key_constants, values, self.val_axis,
                           indices, self.idx_axis)
            return
        mode, chunks = self.strategy(numba.get_num_threads())
        part = np.empty((self.num_seq, chunks, self.k), np.uint64)
        common = (x, self.seq_sizes, self.seq_in, self.n, self.in_axis, chunks, self.k,
                  self.key_constants)
        if mode == "columns":
            topk.select_columns(*common, TOPK_TILE, part)
        elif mode == "rows":
            topk.select_rows(*common, part)
        else:
            topk.radix_rows(*common, part)
        topk.finalize(x, self.seq_sizes, self.seq_in, self.seq_val, self.seq_idx, self.in_axis,
                      values, self.val_axis, indices, self.idx_axis, part, self.k)


def float_view(region: np.ndarray, element_size: int) -> np.ndarray:
    """The storage type of a float tensor: float32 for FLOAT32, uint16 bits for FLOAT16
    (kernels/floats.py converts them)."""
    return typed_view(region, np.float32 if element_size == 4 else np.uint16)


_NO_TENSOR: dict[int, np.ndarray] = {4: np.zeros(1, np.float32), 2: np.zeros(1, np.uint16)}
# Collapsed sizes, then the input, output, scale and bias strides.
Layout5 = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True, eq=False)
class MVNPlan:
    """Normalize every group (coordinates outside ``axes``); see kernels/normalization.py.

    ``g_*``/``a_*``: collapsed sizes and strides of the group and axis dimensions in the input,
    output, scale and bias (zero strides where scale or bias broadcast). ``use_mean`` False
    (MVN2's UseMean): the mean is taken as 0, so the variance is the mean of the squares."""

    element_size: int
    g: Layout5
    a: Layout5
    count: int
    has_scale: bool
    has_bias: bool
    normalize_variance: bool
    epsilon: float
    kind: int
    p0: float
    p1: float
    use_mean: bool

    @classmethod
    def build(cls, element_size: int, sizes: Sequence[int], axes: Sequence[int],
              strides: Sequence[Sequence[int]], has_scale: bool, has_bias: bool,
              normalize_variance: bool, epsilon: float, kind: int, p0: float,
              p1: float, use_mean: bool = True) -> MVNPlan:
        """``strides``: input, output, scale, bias (zeros for an absent tensor)."""
        from .reduction.layout import Layout

        layout = Layout.build(sizes, axes, strides)
        g, a = layout.g, layout.r
        return cls(element_size, (g[0], g[1], g[2], g[3], g[4]), (a[0], a[1], a[2], a[3], a[4]),
                   layout.count, has_scale, has_bias, normalize_variance, epsilon, kind, p0, p1,
                   use_mean)

    @cached_property
    def launch(self) -> tuple[np.ndarray, int]:
        """The task kernel's argument block and task count (kernels/normalization.py
        ``mvn_block``)."""
        from .kernels.normalization import mvn_block

        return mvn_block(self.g, self.a, self.count, self.has_scale, self.has_bias,
                         self.use_mean, self.normalize_variance, self.epsilon, self.kind,
                         self.p0, self.p1, self.element_size)

    @cached_property
    def kernel(self) -> int:
        """The task kernel's address for the storage type."""
        from .kernels.normalization import mvn_task
        from .kernels.tasks import address

        storage = "float32" if self.element_size == 4 else "uint16"
        return address(mvn_task, storage, storage)

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        from .kernels import normalization as k
        from .kernels.tasks import HEAD, run

        def view(name: str, present: bool) -> np.ndarray:
            if not present:
                return _NO_TENSOR[self.element_size]
            return float_view(regions[name], self.element_size)

        arrays = (view("InputTensor", True), view("OutputTensor", True),
                  view("ScaleTensor", self.has_scale), view("BiasTensor", self.has_bias))
        template, tasks = self.launch
        blk = template.copy()
        blk[HEAD + k.XN:HEAD + k.BN + 1] = [a.size for a in arrays]
        run(self.kernel, blk, tasks, arrays[0], arrays[1], w=arrays[2], z=arrays[3],
            work=int(blk[HEAD + k.GROUPS]) * self.count)


# Softmax: the tile of groups advancing together in column mode (at most; narrower when that
# leaves too few tasks), and the tasks per thread in group mode.
SOFTMAX_TILE = 64
SOFTMAX_TASKS_PER_THREAD = 16


@dataclass(frozen=True, eq=False)
class SoftmaxPlan:
    """SOFTMAX (0), LOG_SOFTMAX (1) or HARDMAX (2) over the reduced axes of every group of the
    reduction layout (emulator/reduction/softmax_kernels.py); the version-0 operators reduce the
    last axis. ``columns``: the reduced dimension is strided and the innermost kept one is closer
    to contiguous, so neighbouring groups along it advance together."""

    element_size: int
    layout: Layout
    mode: int
    columns: bool
    params: np.ndarray  # the kernel's header (filled at dispatch) and the layout

    @classmethod
    def build(cls, element_size: int, sizes: Sequence[int], axes: Sequence[int],
              x: Sequence[int], y: Sequence[int], mode: int) -> SoftmaxPlan:
        from .reduction.layout import Layout

        layout = Layout.build(sizes, axes, [x, y])
        lanes, lane_x, reduced_x = int(layout.g[0][-1]), int(layout.g[1][-1]), int(layout.r[1][-1])
        columns = lanes >= 4 and abs(reduced_x) > 1 and abs(lane_x) < abs(reduced_x)
        g, r = layout.g, layout.r
        params = int64s([0] * 6 + [len(g[0]), len(r[0])] + [v for part in (g, r)
                                                               for a in part[:3] for v in a])
        return cls(element_size, layout, mode, columns, params)

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        import numba

        from .reduction import softmax_kernels

        g, threads = self.layout.g, numba.get_num_threads()
        if self.columns:
            lanes = int(g[0][-1])
            outer = self.layout.groups // lanes
            # A lane's result is the same at any width: as wide as keeps the whole group in the
            # tile's scratch (one strided pass over the input), narrower for enough tasks.
            width = SOFTMAX_TILE
            while width > 8 and (width * self.layout.count > softmax_kernels.TILE_SCRATCH
                                 or outer * -(-lanes // width) < 4 * threads):
                width //= 2
            tasks = outer * -(-lanes // width)
        else:
            width, tasks = 0, min(self.layout.groups, SOFTMAX_TASKS_PER_THREAD * threads)
        x = float_view(regions["InputTensor"], self.element_size)
        y = float_view(regions["OutputTensor"], self.element_size)
        params = self.params.copy()
        params[:6] = (x.size, y.size, self.layout.count, self.mode, tasks, width)
        softmax_kernels.launch(x, y, params, tasks)
