"""Kernel plans: what an operator decides once at CreateOperator, so a dispatch only calls a kernel.

A plan holds integers and int64 arrays (sizes, strides, element offsets) and the names of the bind
points it reads and writes. ``run(regions)`` receives each bound tensor as the uint8 bytes of its
binding and calls a kernel; the kernels module is imported only then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .resources import typed_view


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

    @classmethod
    def build(cls, element_size: int, key_constants: Sequence[int], k: int, axis: int,
              in_sizes: Sequence[int], in_strides: Sequence[int], val_strides: Sequence[int],
              idx_strides: Sequence[int]) -> TopKPlan:
        def others(seq: Sequence[int]) -> list[int]:
            return [v for d, v in enumerate(seq) if d != axis]

        sizes, s_in, s_val, s_idx = collapse(others(in_sizes), others(in_strides),
                                             others(val_strides), others(idx_strides))
        return cls(element_size, np.asarray(key_constants, np.uint32), k, in_sizes[axis],
                   int64s(sizes), int64s(s_in), int64s(s_val), int64s(s_idx),
                   in_strides[axis], val_strides[axis], idx_strides[axis])

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
        indices = element_view(regions["OutputIndexTensor"], 4)
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
    output, scale and bias (zero strides where scale or bias broadcast)."""

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

    @classmethod
    def build(cls, element_size: int, sizes: Sequence[int], axes: Sequence[int],
              strides: Sequence[Sequence[int]], has_scale: bool, has_bias: bool,
              normalize_variance: bool, epsilon: float, kind: int, p0: float,
              p1: float) -> MVNPlan:
        """``strides``: input, output, scale, bias (zeros for an absent tensor)."""
        axis_set = sorted(set(axes))
        group_dims = [d for d in range(len(sizes)) if d not in axis_set]

        def part(dims: list[int]) -> Layout5:
            c = collapse([sizes[d] for d in dims], *[[s[d] for d in dims] for s in strides])
            return int64s(c[0]), int64s(c[1]), int64s(c[2]), int64s(c[3]), int64s(c[4])

        count = int(np.prod([sizes[d] for d in axis_set], dtype=np.int64))
        return cls(element_size, part(group_dims), part(axis_set), count, has_scale, has_bias,
                   normalize_variance, epsilon, kind, p0, p1)

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        from .kernels.normalization import mvn

        def view(name: str, present: bool) -> np.ndarray:
            if not present:
                return _NO_TENSOR[self.element_size]
            return float_view(regions[name], self.element_size)

        mvn(view("InputTensor", True), view("OutputTensor", True),
            view("ScaleTensor", self.has_scale), view("BiasTensor", self.has_bias), *self.g,
            *self.a, self.count, self.has_scale, self.has_bias, self.normalize_variance,
            self.epsilon, self.kind, self.p0, self.p1)


@dataclass(frozen=True, eq=False)
class SoftmaxPlan:
    """SOFTMAX (0), LOG_SOFTMAX (1) or HARDMAX (2) along the last dimension of every row."""

    element_size: int
    lead_sizes: np.ndarray
    x_lead: np.ndarray
    y_lead: np.ndarray
    width: int
    x_step: int
    y_step: int
    mode: int

    @classmethod
    def build(cls, element_size: int, sizes: Sequence[int], x: Sequence[int], y: Sequence[int],
              mode: int) -> SoftmaxPlan:
        lead, lx, ly = collapse(sizes[:-1], x[:-1], y[:-1]) if len(sizes) > 1 else ((1,), (0,),
                                                                                     (0,))
        return cls(element_size, int64s(lead), int64s(lx), int64s(ly), sizes[-1], x[-1], y[-1],
                   mode)

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        from .kernels.activation import softmax_rows

        softmax_rows(float_view(regions["InputTensor"], self.element_size),
                     float_view(regions["OutputTensor"], self.element_size), self.lead_sizes,
                     self.x_lead, self.y_lead, self.width, self.x_step, self.y_step, self.mode)
