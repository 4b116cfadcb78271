"""DML_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY: A {.., M, K} x B {.., K, N} -> Output {.., M, N},
each INT8 or UINT8, with FLOAT32 scales and optional zero points (0 when absent):

    acc = sum_k (A[m, k] - AZeroPoint) * (B[k, n] - BZeroPoint)            (exact, integers)
    Output[m, n] = saturate(round_half_even(acc * ((AScale / OutputScale) * BScale))
                            + OutputZeroPoint)                               (float64)

**Decision** (docs/decisions.md): one rounding, evaluated in float64 from the float32 scales in the
order written (the division once per row); a NaN result gives OutputZeroPoint.

Rules: A, B and Output share a DimensionCount and their batch sizes; B's K equals A's; Output is
{.., M, N}; each zero point has its tensor's DataType; all scale and zero-point tensors share a
DimensionCount; AScale, AZeroPoint, OutputScale and OutputZeroPoint are per-tensor {1, .., 1} or
per-row {1, .., M, 1}; BScale and BZeroPoint per-tensor or per-column {1, .., 1, N}. 4-D only
before 4_0; from 4_0 A/B/Output 2 to 4 dimensions and scales/zero points 1 to 4, shapes right-
aligned.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import SimpleNamespace
from typing import Any

import numpy as np

from .. import resources
from ..plan import collapse
from ..validation import Context, Tensor, fmt, same
from .common import FLOAT32, INT8, UINT8

MATRICES = ("ATensor", "BTensor", "OutputTensor")
ZERO_POINTS = ("AZeroPointTensor", "BZeroPointTensor", "OutputZeroPointTensor")
SCALES = ("AScaleTensor", "BScaleTensor", "OutputScaleTensor")
# Each scale or zero point: its matrix, and whether it may vary along rows (M) or columns (N).
ROLE = {"AScaleTensor": "row", "AZeroPointTensor": "row", "OutputScaleTensor": "row",
        "OutputZeroPointTensor": "row", "BScaleTensor": "column", "BZeroPointTensor": "column"}
I8 = (INT8, UINT8)


KERNEL_TYPES = (*I8, FLOAT32)  # INT8/UINT8 matrices and zero points, FLOAT32 scales


def validate(ctx: Context, v: SimpleNamespace) -> None:
    a, b, o = v.ATensor, v.BTensor, v.OutputTensor
    same(ctx, "ATensor", "BTensor", "DimensionCount", a.dim_count, b.dim_count)
    same(ctx, "ATensor", "OutputTensor", "DimensionCount", a.dim_count, o.dim_count)
    ctx.require(a.dim_count >= 2, "ATensor.DimensionCount", a.dim_count,
                "a matrix has at least 2 dimensions")
    m, k = a.sizes[-2:]
    ctx.require(b.sizes[-2] == k, "BTensor.Sizes", b.sizes,
                f"B's K (Sizes[{b.dim_count - 2}]) must equal A's K = {k}")
    n = b.sizes[-1]
    expected = (*a.sizes[:-2], m, n)
    ctx.require(b.sizes[:-2] == a.sizes[:-2], "BTensor.Sizes", b.sizes,
                f"the batch sizes must equal ATensor's {fmt(a.sizes[:-2])}")
    ctx.require(o.sizes == expected, "OutputTensor.Sizes", o.sizes,
                f"must be {{.., M, N}} = {fmt(expected)}")
    for zp, matrix in zip(ZERO_POINTS, MATRICES):
        t = getattr(v, zp)
        if t is not None:
            same(ctx, matrix, zp, "DataType", getattr(v, matrix).data_type, t.data_type)
    present = [(name, getattr(v, name)) for name in (*SCALES, *ZERO_POINTS)
               if getattr(v, name) is not None]
    first_name, first = present[0]
    for name, t in present[1:]:
        same(ctx, first_name, name, "DimensionCount", first.dim_count, t.dim_count)
    for name, t in present:
        check_quantization_shape(ctx, name, t, m, n)


def check_quantization_shape(ctx: Context, name: str, t: Tensor, m: int, n: int) -> None:
    """Per-tensor {1, .., 1}; per-row {1, .., M, 1}; per-column {1, .., 1, N} (right-aligned)."""
    ones = (1,) * t.dim_count
    if t.sizes == ones:
        return
    if ROLE[name] == "row":
        allowed = (*ones[:-2], m, 1) if t.dim_count >= 2 else None
        what = f"per-tensor {fmt(ones)} or per-row {{.., M, 1}} with M = {m}"
    else:
        allowed = (*ones[:-1], n)
        what = f"per-tensor {fmt(ones)} or per-column {{.., 1, N}} with N = {n}"
    ctx.require(t.sizes == allowed, f"{name}.Sizes", t.sizes, f"must be {what}")


def plan(v: SimpleNamespace) -> QLMMPlan:
    return QLMMPlan.build(v)


# The VNNI path is taken where the CPU has it; tests switch it off to check the portable path, or
# force it (its micro-kernel then runs as plain vector code) to check it on any machine.
USE_VNNI: bool | None = None  # None: where the CPU has avx512vnni
USE_AMX: bool | None = None  # None: where the CPU has AMX int8 tiles (kernels/amx.py)
# Scratch (see kernels/qgemm.py and kernels/vnni.py): each task holds fixed-size tiles; the VNNI
# path may also pack every distinct B once up front, when that takes at most PREPACK_LIMIT bytes.
# Nothing is sized by the batch count or by a broadcast dimension of A or B.
PREPACK_LIMIT = 256 << 20
PANEL_LIMIT = 2 << 20  # B panels packed by one VNNI task (at least one column tile)
FUSED_BLOCKS = 4  # up to this many row blocks of one batch in a task, B is packed in the task
PORTABLE_ROWS = 256  # rows of one portable task at most
PORTABLE_PANEL = 1 << 20  # bytes of packed B (and of int64 sums) one portable task holds
TASKS_PER_THREAD = 3  # enough tasks that uneven ones still balance
_ZERO = np.zeros(1, np.uint8)  # an absent zero point: 0, read with step 0
_NO_PANELS = (np.empty((0, 0, 0), np.int8), np.empty((0, 0, 0), np.int32))


def scratch(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """The packed B of a dispatch (``resources.scratch``: E_OUTOFMEMORY before any write)."""
    return resources.scratch(shape, dtype, "DML_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY",
                             "packed BTensor")


@dataclass(frozen=True, eq=False)
class QLMMPlan:
    """Quantized matmul over every batch (kernels/qgemm.py, kernels/vnni.py).

    ``dims``: M, K, N, the matrices' element strides, the scale/zero-point steps along M or N (0:
    per-tensor), the INT8 flips and the output range, by name (the kernels read them as one int64
    vector, ``geometry``); ``batch``: collapsed batch sizes, the A, B and Output batch strides, and
    each batch's index among the distinct B matrices; ``distinct``: the sizes and B strides of the
    batch dimensions along which B varies."""

    dims: dict
    batch: np.ndarray
    distinct: np.ndarray
    batches: int
    distinct_count: int
    present: frozenset  # the scale and zero-point bind points the desc has
    launches: dict = field(default_factory=dict)  # strategy per (threads, USE_VNNI)

    @classmethod
    def build(cls, v: Any) -> QLMMPlan:
        a, b, o = v.ATensor, v.BTensor, v.OutputTensor
        sizes, sa, sb, so = collapse(a.sizes[:-2] or (1,), a.strides[:-2] or (0,),
                                     b.strides[:-2] or (0,), o.strides[:-2] or (0,))
        # Index among the distinct B matrices: the dimensions where B's stride is 0 add nothing.
        index = [0] * len(sizes)
        count = 1
        for i in range(len(sizes) - 1, -1, -1):
            if sb[i] != 0:
                index[i] = count
                count *= sizes[i]
        kept = [i for i in range(len(sizes)) if sb[i] != 0]
        distinct = (np.array([[sizes[i] for i in kept], [sb[i] for i in kept]], np.int64)
                    if kept else np.array([[1], [0]], np.int64))
        m, k = a.sizes[-2:]
        dims = {"M": m, "K": k, "N": b.sizes[-1], "A_SM": a.strides[-2], "A_SK": a.strides[-1],
                "B_SK": b.strides[-2], "B_SN": b.strides[-1], "O_SM": o.strides[-2],
                "O_SN": o.strides[-1]}
        for name, key, along in (("AScaleTensor", "AS", -2), ("AZeroPointTensor", "AZ", -2),
                                 ("BScaleTensor", "BS", -1), ("BZeroPointTensor", "BZ", -1),
                                 ("OutputScaleTensor", "OS", -2),
                                 ("OutputZeroPointTensor", "OZ", -2)):
            t = getattr(v, name)
            dim = t.dim_count + along if t is not None else -1
            dims[key] = t.strides[dim] if t is not None and dim >= 0 and t.sizes[dim] > 1 else 0
        for t, key in ((a, "A_FLIP"), (b, "B_FLIP"), (o, "O_FLIP")):
            dims[key] = 128 if t.data_type == INT8 else 0
        info = np.iinfo(o.dtype)
        dims["LO"], dims["HI"] = int(info.min), int(info.max)
        dims["WORDS"] = int(a.strides[-1] == 1 and k % 4 == 0 and a.strides[-2] % 4 == 0
                            and all(s % 4 == 0 for s in sa))
        present = frozenset(name for name in (*SCALES, *ZERO_POINTS)
                            if getattr(v, name) is not None)
        batch = np.array([sizes, sa, sb, so, index], np.int64)
        return cls(dims, batch, distinct, math.prod(sizes), count, present)

    @property
    def m(self) -> int:
        return int(self.dims["M"])

    @property
    def k(self) -> int:
        return int(self.dims["K"])

    @property
    def n(self) -> int:
        return int(self.dims["N"])

    @cached_property
    def geometry(self) -> np.ndarray:
        """``dims`` as the kernels' int64 vector (built at the first dispatch: the slot numbers
        live with the kernels, whose module imports Numba)."""
        from ..kernels import qgemm

        g = np.zeros(qgemm.G_SIZE, np.int64)
        for key, value in self.dims.items():
            g[getattr(qgemm, "G_" + key)] = value
        return g

    def strategy(self, threads: int) -> tuple:
        """How to run at this thread count: ("portable", rows per task, column tiles per task)
        or ("vnni", pack every distinct B up front?, rows per task, column tiles per task, the
        products on AMX tiles?). Decided once per thread count (and test switches)."""
        key = (threads, USE_VNNI, USE_AMX)
        if key not in self.launches:
            vnni = _kernels()[1]
            wanted = vnni.HAS_VNNI if USE_VNNI is None else USE_VNNI
            if wanted and self.k <= 4 * vnni.K4_BLOCK:  # K within one exact int32 block
                tiles = vnni.amx.HAS_AMX if USE_AMX is None else USE_AMX
                self.launches[key] = ("vnni", *self.vnni_strategy(threads),
                                      bool(tiles) and self.k % vnni.amx.K_STEP == 0)
            else:
                self.launches[key] = ("portable", *self.portable_strategy(threads))
        return self.launches[key]

    def vnni_strategy(self, threads: int) -> tuple[bool, int, int]:
        """(pack every distinct B up front?, rows of A per task, column tiles per task).

        A task that holds every row of its batch packs its own B panels: one parallel pass, no
        B packed twice (the batched small GEMMs of attention). B is packed up front when it is
        shared by several batches, or when a batch's rows are many or must be split among
        tasks to keep every thread busy, as long as that takes at most PREPACK_LIMIT bytes."""
        from ..kernels.vnni import BLOCK_ROWS, NR

        target = TASKS_PER_THREAD * threads
        ntiles = -(-self.n // NR)
        panel = -(-self.k // 4) * NR * 4
        blocks = -(-self.m // BLOCK_ROWS)
        span_cap = max(1, PANEL_LIMIT // panel)
        spans = max(-(-ntiles // span_cap), min(ntiles, -(-target // self.batches)))
        prepack = (self.distinct_count * ntiles * (panel + 4 * NR) <= PREPACK_LIMIT
                   and (self.distinct_count < self.batches or blocks > FUSED_BLOCKS
                        or (self.batches * spans < target and blocks > 1)))
        rows = self.m
        if prepack or (self.batches * spans < target and blocks > 1):
            chunks = min(blocks, -(-target // self.batches))
            rows = BLOCK_ROWS * -(-blocks // chunks)
            chunks = -(-self.m // rows)
            spans = max(-(-ntiles // span_cap) if not prepack else 1,
                        min(ntiles, -(-target // (self.batches * chunks))))
        return prepack, rows, -(-ntiles // spans)

    def portable_strategy(self, threads: int) -> tuple[int, int]:
        """(rows per task, column tiles per task): all of a batch's rows (up to PORTABLE_ROWS)
        and columns (up to PORTABLE_PANEL bytes of packed B), split further where that leaves
        threads idle. A task packs each row of A once for all its columns."""
        qgemm = _kernels()[0]
        target = TASKS_PER_THREAD * threads
        ntiles = -(-self.n // qgemm.NB)
        kc = min(qgemm.KC, self.k + (self.k & 1))
        span_cap = max(1, PORTABLE_PANEL // (kc * qgemm.NB * 2))
        if self.k > kc:  # and the int64 sums of its rows stay within PORTABLE_PANEL
            span_cap = min(span_cap, max(1, PORTABLE_PANEL // (PORTABLE_ROWS * qgemm.NB * 8)))
        spans = -(-ntiles // span_cap)
        rows = min(self.m, PORTABLE_ROWS)
        chunks = -(-self.m // rows)
        if self.batches * chunks * spans < target:  # more column spans, then more row chunks
            spans = max(spans, min(ntiles, -(-target // (self.batches * chunks))))
        if self.batches * chunks * spans < target:
            chunks = min(-(-self.m // qgemm.MR), -(-target // (self.batches * spans)))
            rows = -(-self.m // chunks)
        return rows, -(-ntiles // spans)

    def reserve(self) -> tuple[np.ndarray, np.ndarray]:
        """The dispatch's scratch that grows with the data (every distinct B packed, at most
        PREPACK_LIMIT bytes; empty arrays when the strategy packs in the tasks), taken now: the
        caller may take every command's before running any (E_OUTOFMEMORY if it cannot)."""
        vnni, threads = _kernels()[1:]
        how = self.strategy(threads())
        if how[0] != "vnni" or not how[1]:
            return _NO_PANELS
        shape = (self.distinct_count, -(-self.n // vnni.NR), -(-self.k // 4) * vnni.NR * 4)
        return scratch(shape, np.int8), scratch((*shape[:2], vnni.NR), np.int32)

    def run(self, regions: Mapping[str, np.ndarray],
            reserved: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """Execute; ``reserved``: what ``reserve`` returned for this dispatch, if taken before."""
        # Every tensor goes to the kernels as its bytes: typed views are made there, for free.
        # Both paths are task kernels (kernels/tasks.py) on the worker pool.
        from ..kernels import tasks

        qgemm, vnni, threads = _kernels()
        present = self.present
        how = self.strategy(threads())
        if how[0] == "portable":
            prepack, (rows, span) = False, how[1:]
            bp, cols = _NO_PANELS
            fn, nb = tasks.address(qgemm.qlmm_task, "uint8", "uint8"), qgemm.NB
        else:
            _, prepack, rows, span, tiled = how
            self.geometry[qgemm.G_AMX] = int(tiled)
            bp, cols = reserved if reserved is not None else self.reserve()  # before any write
            if prepack:
                vnni.pack_b(regions["BTensor"], self.distinct, self.geometry, bp, cols)
            fn, nb = tasks.address(vnni.qlmm_task, "uint8", "uint8"), vnni.NR
        qgemm.launch(fn, nb, regions["ATensor"], regions["BTensor"], regions["OutputTensor"],
                     tuple(regions[n] for n in SCALES),
                     tuple(regions[n] if n in present else _ZERO for n in ZERO_POINTS),
                     self.batch, self.geometry, bp, cols, rows, span, prepack)


_KERNELS: tuple = ()


def _kernels() -> tuple:
    """(kernels.qgemm, kernels.vnni, numba.get_num_threads), imported at the first dispatch."""
    global _KERNELS
    if not _KERNELS:
        import numba

        from ..kernels import qgemm, vnni

        _KERNELS = (qgemm, vnni, numba.get_num_threads)
    return _KERNELS


def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The formula in NumPy: int64 matmul (exact), then float64, one rounding, saturation."""
    def arr(name: str, default: float = 0) -> np.ndarray:
        x = inputs.get(name)
        if x is None:
            return np.zeros((1, 1), np.int64)
        rank = v.ATensor.dim_count
        return x.reshape((1,) * (rank - x.ndim) + x.shape)  # right-aligned

    a = inputs["ATensor"].astype(np.int64) - arr("AZeroPointTensor").astype(np.int64)
    b = inputs["BTensor"].astype(np.int64) - arr("BZeroPointTensor").astype(np.int64)
    acc = np.matmul(a, b)
    out_dtype = np.int8 if v.OutputTensor.data_type == INT8 else np.uint8
    info = np.iinfo(out_dtype)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ratio = arr("AScaleTensor").astype(np.float64) / arr("OutputScaleTensor").astype(np.float64)
        real = acc.astype(np.float64) * (ratio * arr("BScaleTensor").astype(np.float64))
        q = np.rint(np.nan_to_num(real, nan=0.0, posinf=np.inf, neginf=-np.inf))
        q = q + arr("OutputZeroPointTensor").astype(np.float64)
        q = np.clip(q, info.min, info.max)
    return {"OutputTensor": q.astype(out_dtype)}
