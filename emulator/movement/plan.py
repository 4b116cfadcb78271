"""The data-movement plan: a list of index-map copies (``kernels/movement.py``), built once at
CreateOperator.

An operator describes each copy by output dimension: the output's sizes and element strides (any
view of it: DEPTH_TO_SPACE splits its height into (height, block)), and per dimension a table of
source element offsets, ``FILL`` where the coordinate lies outside the source. ``build`` then

1. drops size-1 dimensions (their entry joins the base offsets);
2. merges neighbouring dimensions whose tables are affine and contiguous with each other in both
   the source and the output (a JOIN of packed tensors becomes one long copy per input);
3. cuts the last dimension's table into pieces: runs of fill, affine runs (a unit, reversed,
   broadcast or any constant step) and, where runs are short on average, gathers through the
   table; each piece at most ``CHUNK`` elements.

A copy with no source (``src`` None) writes its fill value everywhere (FILL_VALUE_CONSTANT).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..kernels.pieces import AFFINE, CHUNK, FILL, FILL_PIECE, GATHER
from ..plan import collapse, element_view
from ..validation import Tensor

SHORT_RUNS = 8  # below this mean run length the last dimension is gathered through its table
SHORT_INNER = 16  # a last dimension shorter than this merges with its outer neighbours ...
MERGED_TABLE = 4096  # ... into a table of at most this many entries
ROWS_PER_THREAD = 8  # with this many rows per thread, a task is a whole row
STREAM_BYTES = 16 << 20  # a copy writing this much uses non-temporal stores (kernels/stream.py)
OUTSIDE = np.iinfo(np.int64).max  # a tuple offset past every input (the gather writes 0)


def work_items() -> int:
    """How many work items a movement kernel cuts its tasks into: 8 per thread (a streamed item
    fences once, kernels/stream.py)."""
    import numba

    return 8 * numba.get_num_threads()


def affine(size: int, step: int, base: int = 0) -> np.ndarray:
    """The table of an affine dimension: base + c·step for c in [0, size)."""
    return base + step * np.arange(size, dtype=np.int64)


def _step(table: np.ndarray) -> int | None:
    """The constant step of a table without FILL entries, or None."""
    if table.size == 0 or (table < 0).any():
        return None
    if table.size == 1:
        return 0
    d = np.diff(table)
    return int(d[0]) if (d == d[0]).all() else None


@dataclass(frozen=True)
class _Dim:
    """A dimension while ``IndexMap.build`` merges: its table, or (affine) its step and base."""

    n: int
    stride: int  # the output's
    table: np.ndarray | None  # None: affine, base + c·step
    step: int | None
    base: int

    def values(self) -> np.ndarray:
        return self.table if self.table is not None else affine(self.n, self.step or 0,
                                                                 self.base)


@dataclass(frozen=True, eq=False)
class IndexMap:
    """One copy: dst[dst_base + c·dst_strides] = src[Σ tables[d][c_d]] or the fill value."""

    src: str | None
    dst: str
    element_size: int
    outer: np.ndarray  # sizes of the outer dimensions (may be empty)
    dst_strides: np.ndarray  # the outer dimensions' output strides
    tables: np.ndarray  # the outer dimensions' tables, concatenated
    starts: np.ndarray  # where each outer dimension's table begins in ``tables``
    pieces: np.ndarray  # (start, length, kind, offset, step) along the last dimension
    inner: np.ndarray  # the last dimension's table (read by GATHER pieces; affine: unused)
    inner_size: int  # the last dimension's length
    inner_stride: int
    src_base: int
    dst_base: int
    fill: int  # the fill value's bits (the element's width)

    @classmethod
    def build(cls, src: str | None, dst: str, element_size: int, sizes: Sequence[int],
              dst_strides: Sequence[int], tables: Sequence[np.ndarray], dst_base: int = 0,
              src_base: int = 0, fill: int = 0) -> IndexMap:
        dims: list[_Dim] = []
        for n, stride, table in zip(sizes, dst_strides, tables, strict=True):
            table = np.asarray(table, np.int64)
            assert table.shape == (n,), "one table entry per output coordinate"
            if src is None:
                table = np.full(n, FILL, np.int64)
            if n == 1 and table[0] >= 0:
                src_base += int(table[0])  # one coordinate: its offset joins the base
                continue
            step = _step(table)
            dims.append(_Dim(n, int(stride), None if step is not None else table, step,
                             int(table[0])))
        merged: list[_Dim] = []
        for d in dims:
            if merged:
                p = merged[-1]
                if d.step is not None and p.step is not None and p.stride == d.stride * d.n \
                        and p.step == d.step * d.n:
                    # Affine neighbours merge into one affine dimension, kept as (step, base):
                    # a packed 4096 x 4096 copy is one dimension of 16M, never a 16M table.
                    merged[-1] = _Dim(p.n * d.n, d.stride, None, d.step, p.base + d.base)
                    continue
            merged.append(d)
        if not merged:
            merged = [_Dim(1, 1, None, 0, 0)]
        # A short last dimension (DEPTH_TO_SPACE's block, a nearest-neighbour scale) takes its
        # output-contiguous neighbours in, as one table: long pieces instead of many tiny rows.
        while len(merged) > 1 and merged[-1].n < SHORT_INNER:
            p, d = merged[-2:]
            if p.stride != d.stride * d.n or p.n * d.n > MERGED_TABLE:
                break
            ptable, table = p.values(), d.values()
            both = np.add.outer(ptable, table).ravel()
            outside = np.logical_or.outer(ptable < 0, table < 0).ravel()
            merged[-2:] = [_Dim(p.n * d.n, d.stride, np.where(outside, FILL, both), None, 0)]
        *outer, last = merged
        outer_tables = [d.values() for d in outer]
        starts = np.cumsum([0] + [t.size for t in outer_tables[:-1]], dtype=np.int64)
        if last.table is None:  # affine: its pieces are CHUNK-long runs, no table to gather from
            step = last.step or 0
            pieces = np.array([(c, min(CHUNK, last.n - c), AFFINE, last.base + c * step, step)
                               for c in range(0, last.n, CHUNK)], np.int64)
            inner = np.zeros(1, np.int64)
        else:
            pieces, inner = _pieces(last.table), last.table
        # (int64 and contiguous: the pool's copy job reads these arrays by address)
        joined = np.concatenate(outer_tables) if outer_tables else np.zeros(1, np.int64)
        return cls(src, dst, element_size, np.array([d.n for d in outer], np.int64),
                   np.array([d.stride for d in outer], np.int64),
                   np.ascontiguousarray(joined, np.int64),
                   starts if outer_tables else np.zeros(0, np.int64),
                   np.ascontiguousarray(pieces, np.int64), np.ascontiguousarray(inner, np.int64),
                   last.n, last.stride, src_base, dst_base, fill)

    def run(self, regions: Mapping[str, np.ndarray], fill_value: np.ndarray | None = None) -> None:
        """``fill_value``: a 1-element array of the element's width read at dispatch (ONE_HOT's
        OffValue), instead of the plan's fill bits."""
        import numba

        from ..kernels import movement, pool

        dst = element_view(regions[self.dst], self.element_size)
        src = element_view(regions[self.src], self.element_size) if self.src is not None \
            else dst[:1]
        fill = np.array([self.fill], np.uint64).astype(dst.dtype) if fill_value is None \
            else fill_value
        rows = int(np.prod(self.outer))
        written = rows * self.inner_size * self.element_size
        threads = numba.get_num_threads()
        per_row, stream, groups = rows >= ROWS_PER_THREAD * threads, written >= STREAM_BYTES, \
            work_items()
        if not pool.available():
            movement.map_copy(src, self.src_base, dst, self.dst_base, fill, self.outer,
                              self.dst_strides, self.tables, self.starts, self.pieces,
                              self.inner, self.inner_stride, per_row, stream, groups)
            return
        # The same work items on kernels/pool.py (a part is a run of them): the plan's arrays
        # by address (they live as long as the plan), src/dst/fill written at launch.
        m = movement
        block = np.zeros(m.BLOCK, np.int64)
        for slot, value in ((m.SRC_LEN, src.size), (m.DST_LEN, dst.size),
                            (m.SRC_BASE, self.src_base), (m.DST_BASE, self.dst_base),
                            (m.RANK, self.outer.size), (m.COUNT, self.pieces.shape[0]),
                            (m.INNER_STRIDE, self.inner_stride), (m.PER_ROW, per_row),
                            (m.STREAM, stream), (m.GROUPS, groups),
                            (m.OUTER, self.outer.ctypes.data),
                            (m.DST_STRIDES, self.dst_strides.ctypes.data),
                            (m.TABLES, self.tables.ctypes.data), (m.TABLES_LEN, self.tables.size),
                            (m.STARTS, self.starts.ctypes.data), (m.STARTS_LEN, self.starts.size),
                            (m.PIECES, self.pieces.ctypes.data), (m.INNER, self.inner.ctypes.data),
                            (m.INNER_LEN, self.inner.size)):
            block[slot] = value
        pool.run(movement.copy_job(self.element_size), block, threads,
                 *(a.view(np.uint8) for a in (src, dst, fill, fill)))


def _pieces(table: np.ndarray) -> np.ndarray:
    """The last dimension as pieces (see kernels/movement.py), each at most CHUNK elements."""
    n = table.size
    outside = table < 0
    # Runs of fill and of copied elements.
    edges = np.flatnonzero(np.diff(outside.astype(np.int8))) + 1
    bounds = np.concatenate([[0], edges, [n]]).astype(np.int64)
    out: list[tuple[int, int, int, int, int]] = []
    for a, b in itertools.pairwise(bounds):
        if outside[a]:
            out.append((int(a), int(b - a), FILL_PIECE, 0, 0))
            continue
        seg = table[a:b]
        # Greedy affine runs: a run continues while the step stays the one of its first pair.
        changes = int(np.count_nonzero(np.diff(np.diff(seg)))) if seg.size > 2 else 0
        if changes * SHORT_RUNS > seg.size:
            out.append((int(a), int(b - a), GATHER, 0, 0))
            continue
        diffs = np.diff(seg)
        # diffs is constant between these points, so a run starting at k ends at the first
        # change after k (or at the end).
        changes_at = np.flatnonzero(np.diff(diffs) != 0) + 1
        k, m = 0, seg.size
        while k < m:
            if k + 1 == m:
                out.append((int(a + k), 1, AFFINE, int(seg[k]), 0))
                break
            c = int(np.searchsorted(changes_at, k, side="right"))
            end = int(changes_at[c]) + 1 if c < changes_at.size else m
            out.append((int(a + k), end - k, AFFINE, int(seg[k]), int(diffs[k])))
            k = end
    split = []
    for start, length, kind, offset, step in out:
        for c in range(0, length, CHUNK):
            split.append((start + c, min(CHUNK, length - c), kind,
                          offset + c * step if kind == AFFINE else 0, step))
    return np.array(split, np.int64).reshape(-1, 5)


@dataclass(frozen=True, eq=False)
class MovePlan:
    """The copies of one operator, run in order (later ones may overwrite earlier ones)."""

    maps: tuple[IndexMap, ...]

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        for m in self.maps:
            m.run(regions)


def signed_indices(region: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, int]:
    """An index tensor's bytes as signed integers of its width, and the kernels' ``wrap`` (how
    to read a negative value; kernels/movement.py ``_position``): one compiled index kernel per
    width serves both signednesses, halving the signatures a cold cache compiles."""
    from ..resources import typed_view

    dt = np.dtype(dtype)
    if dt.kind != "u":
        return typed_view(region, dt), 0
    bits = 8 * dt.itemsize
    return typed_view(region, np.dtype(f"int{bits}")), (1 << bits) if bits < 64 else -1


def offset_table(index: Tensor, region: np.ndarray, size: int, stride: int,
                 tuple_part: int | None = None) -> np.ndarray:
    """The element offsets (position · stride) of an index tensor's values along an axis of
    ``size`` elements, packed in its logical row-major order (``kernels/movement.index_table``):
    negative values of a signed index type count from the end (from 3_0, the pages say); a value
    still outside [0, size) gives FILL (docs/decisions.md). ``tuple_part``: read only component
    k of the index tuples along the tensor's last dimension (the ND operators)."""
    from ..kernels.movement import index_table

    sizes, strides, base = index.sizes, index.strides, 0
    if tuple_part is not None:
        sizes, strides = sizes[:-1] or (1,), strides[:-1] or (0,)
        base = tuple_part * index.strides[-1]
    table = np.empty(int(np.prod(sizes)), np.int64)
    indices, wrap = signed_indices(region, index.dtype)
    index_table(indices, base, np.asarray(sizes, np.int64), np.asarray(strides, np.int64), size,
                stride, wrap, table)
    return table


def tuple_table(index: Tensor, region: np.ndarray, axes: Sequence[tuple[int, int]]
                ) -> np.ndarray:
    """The source offset of each index tuple (the index tensor's last dimension): the sum of its
    components' offsets along ``axes`` ((size, stride) each); FILL if any component is outside."""
    parts = [offset_table(index, region, size, stride, k) for k, (size, stride) in
             enumerate(axes)]
    table = np.sum(parts, axis=0)
    return np.where(np.any(np.array(parts) < 0, axis=0), FILL, table)


@dataclass(frozen=True, eq=False)
class GatherPlan:
    """``dst[c] = src[c·src_strides + offset(c)]`` (0 where the index is outside): GATHER and
    GATHER_ELEMENTS read the index at ``c·tab_strides`` in the index tensor and scale it by the
    axis' stride in the kernel (``gather_index``); the ND gathers sum each tuple's component
    offsets into a table at dispatch (``tuple_table``), which the same kernel reads."""

    src: str
    dst: str
    index_name: str
    index: Tensor
    axes: tuple[tuple[int, int], ...]  # (size, stride) of the axes an index (tuple) addresses
    tuples: bool  # the index tensor's last dimension holds tuples (GATHER_ND)
    element_size: int
    sizes: np.ndarray
    src_strides: np.ndarray
    dst_strides: np.ndarray
    tab_strides: np.ndarray  # per output dimension: the index tensor's stride (one index per
    # element, read in the kernel) or the tuple table's (the ND gathers)

    @classmethod
    def build(cls, src: str, dst: str, index_name: str, index: Tensor,
              axes: Sequence[tuple[int, int]], tuples: bool, element_size: int,
              sizes: Sequence[int], src_strides: Sequence[int], dst_strides: Sequence[int],
              tab_strides: Sequence[int]) -> GatherPlan:
        c = collapse(sizes, src_strides, dst_strides, tab_strides)
        return cls(src, dst, index_name, index, tuple(axes), tuples, element_size,
                   *(np.asarray(x, np.int64) for x in c))

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        from ..kernels.movement import gather_index

        region = regions[self.index_name]
        if self.tuples:  # one element offset per tuple: positions along a unit stride
            indices = tuple_table(self.index, region, self.axes)
            indices[indices < 0] = OUTSIDE
            size, stride, wrap = OUTSIDE, 1, 0
        else:  # one index per element: the index tensor itself, read in the kernel
            indices, wrap = signed_indices(region, self.index.dtype)
            size, stride = self.axes[0]
        dst = element_view(regions[self.dst], self.element_size)
        gather_index(element_view(regions[self.src], self.element_size), dst,
                     np.zeros(1, dst.dtype), self.sizes, self.src_strides, self.dst_strides,
                     self.tab_strides, indices, size, stride, wrap,
                     int(np.prod(self.sizes)) * self.element_size >= STREAM_BYTES, work_items())
