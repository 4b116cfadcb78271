"""The matrix-multiply core of the float compute operators (GEMM now; the convolutions, attention
and the recurrent operators through it later):

    Output = epilogue(Alpha * op(A) x op(B) + Beta * C)      for every batch coordinate

- **Operands** are strided tensors of any float type: a matrix the BLAS can read as it lies (one
  unit stride, the other at least the row length) is passed as it is, transposes included; any
  other (FLOAT16, a broadcast row or column, two non-unit strides) is first packed into a dense
  copy of the compute type. Batch dimensions may broadcast (stride 0): a packed copy keeps one
  matrix for them.
- **The product** is one BLAS ``?gemm`` per batch (``blas.py``), computed in FLOAT32 for FLOAT32
  and FLOAT16 tensors (FLOAT64 in FLOAT64), into the target: the output itself when it is
  FLOAT32 in a layout the BLAS can write (padded rows or a transposed output included), else a
  dense scratch matrix.
- **Beta * C** is written into the target first (ELEMENT_WISE_IDENTITY's kernel with ScaleBias
  Beta, or CAST's for Beta 1: C broadcasts through its strides and 0 * NaN is NaN, as the formula
  says), and the BLAS adds to it.
- **The epilogue** is an element-wise plan from the target to the output: the fused activation's
  own standalone kernel, or CAST's (a copy, rounded once to FLOAT16); SOFTMAX/SOFTMAX1 (GEMM
  from 6_1) run after it, on the output in place.

Scratch (packed operands, the target) is taken by ``reserve`` before anything is written.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from descriptors import DML_OPERATOR_TYPE as OP
from descriptors import DML_TENSOR_DATA_TYPE as T

from ..plan import collapse
from ..resources import scratch, typed_view
from ..validation import packed_strides

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
DTYPE: dict[T, np.dtype] = {T.DML_TENSOR_DATA_TYPE_FLOAT32: F32,
                             T.DML_TENSOR_DATA_TYPE_FLOAT16: np.dtype(np.float16),
                             T.DML_TENSOR_DATA_TYPE_FLOAT64: F64}
COMPUTE = {T.DML_TENSOR_DATA_TYPE_FLOAT32: T.DML_TENSOR_DATA_TYPE_FLOAT32,
           T.DML_TENSOR_DATA_TYPE_FLOAT16: T.DML_TENSOR_DATA_TYPE_FLOAT32,
           T.DML_TENSOR_DATA_TYPE_FLOAT64: T.DML_TENSOR_DATA_TYPE_FLOAT64}
SOFTMAXES = (OP.DML_OPERATOR_ACTIVATION_SOFTMAX, OP.DML_OPERATOR_ACTIVATION_SOFTMAX1)


def blas_layout(rows: int, cols: int, rs: int, cs: int) -> tuple[bool, int] | None:
    """How a BLAS reads a rows x cols matrix with element strides (rs, cs): (transposed, leading
    dimension), or None when it cannot (it must be packed)."""
    if cs == 1 or cols == 1:  # row-major: rows of cols elements, ld apart
        ld = cols if rows == 1 else rs
        if ld >= cols:
            return False, ld
    if rs == 1 or rows == 1:  # column-major: the transpose of a row-major cols x rows
        ld = rows if cols == 1 else cs
        if ld >= rows:
            return True, ld
    return None


@dataclass(frozen=True)
class Operand:
    """A matrix operand as bound: its bind point, element type, logical (after any transpose)
    rows x cols with element strides (rs, cs), and its strides along the collapsed batch."""

    name: str
    dtype: np.dtype
    rows: int
    cols: int
    rs: int
    cs: int
    batch: tuple[int, ...]

    def layout(self, compute: np.dtype) -> tuple[bool, int] | None:
        """Its BLAS layout as bound, or None if it must be packed first."""
        if self.dtype != compute:
            return None
        return blas_layout(self.rows, self.cols, self.rs, self.cs)

    def packed_shape(self, sizes: Sequence[int]) -> tuple[int, ...]:
        """The dense copy: one matrix per batch coordinate along which it varies."""
        return (*(n if s else 1 for n, s in zip(sizes, self.batch)), self.rows, self.cols)

    def packer(self, compute: np.dtype, sizes: Sequence[int]) -> Any:
        """CAST's element-wise plan from the operand as bound to its dense copy (parallel, and
        FLOAT16 widened by the CPU's conversion instructions: NumPy's copy took 22 ms of a 2048^2
        FLOAT16 product's 150 at 2 threads)."""
        types = {d: t for t, d in DTYPE.items()}
        shape = self.packed_shape(sizes)
        source = SimpleNamespace(data_type=types[self.dtype], sizes=shape,
                                 strides=(*self.batch, self.rs, self.cs))
        dense = SimpleNamespace(data_type=types[compute], sizes=shape,
                                strides=packed_strides(shape))
        return _copy(SimpleNamespace(InputTensor=source, OutputTensor=dense))

    def view(self, region: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
        """The bound elements as a (batch..., rows, cols) array (a view; broadcast strides
        kept)."""
        data = typed_view(region, self.dtype)
        item = self.dtype.itemsize
        return np.lib.stride_tricks.as_strided(
            data, (*sizes, self.rows, self.cols),
            tuple(s * item for s in (*self.batch, self.rs, self.cs)), writeable=False)


class Spare:
    """One set of a plan's scratch arrays, kept for its next dispatch: a fresh array of many
    megabytes pays its page faults again at every dispatch (a ResNet layer's 58 MB im2col
    matrix). Two dispatches of one plan at once: the second allocates its own."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.kept: dict[str, np.ndarray] | None = None

    def take(self) -> dict[str, np.ndarray] | None:
        with self.lock:
            space, self.kept = self.kept, None
        return space

    def keep(self, space: dict[str, np.ndarray]) -> None:
        with self.lock:
            self.kept = space


@dataclass(frozen=True, eq=False)
class MatmulPlan:
    """Output = epilogue(alpha * A x B + beta * C) over every batch coordinate (module doc)."""

    operator: str  # for messages
    compute: np.dtype  # float32 or float64
    m: int
    n: int
    k: int
    sizes: tuple[int, ...]  # the collapsed batch
    a: Operand
    b: Operand
    out: Operand
    target: tuple[int, ...] | None  # the dense scratch target's batch strides; None: the output
    alpha: float
    prologue: Any  # an ElementWisePlan (C -> target) or None
    epilogue: Any  # an ElementWisePlan (target -> output) or None
    softmax: Any  # a SoftmaxPlan on the output, or None
    packers: dict[str, Any] = field(default_factory=dict)  # an operand's dense copy, by name
    spare: Spare = field(default_factory=Spare)

    @classmethod
    def build(cls, operator: str, a: Any, b: Any, out: Any, trans_a: bool, trans_b: bool,
              alpha: float, c: Any = None, beta: float = 1.0, fused: Any = None,
              names: tuple[str, str, str, str] = ("ATensor", "BTensor", "CTensor",
                                                   "OutputTensor")) -> MatmulPlan:
        """``a``, ``b``, ``c``, ``out``: validated tensors {batch.., rows, cols} with the same
        batch sizes (C and the output the same sizes); ``fused``: the validated FusedActivation
        or None."""
        from .. import elementwise

        compute_type = COMPUTE[out.data_type]
        compute = DTYPE[compute_type]
        rank = out.dim_count
        batch_sizes = out.sizes[:-2]
        m, n = out.sizes[-2:]
        k = a.sizes[-2] if trans_a else a.sizes[-1]
        direct = out.data_type == compute_type and \
            blas_layout(m, n, out.strides[-2], out.strides[-1]) is not None and \
            0 not in out.strides[-2:]
        target_strides = tuple(out.strides) if direct else packed_strides(out.sizes)

        def batch_strides(t: Any) -> tuple[int, ...]:
            return tuple(t.strides[:-2])

        sets = [batch_strides(a), batch_strides(b), batch_strides(out), target_strides[:-2]]
        sizes, *collapsed = collapse(batch_sizes or (1,), *[s or (0,) for s in sets])

        def operand(name: str, t: Any, trans: bool, batch: tuple[int, ...]) -> Operand:
            rs, cs = t.strides[-2:]
            rows, cols = t.sizes[-2:]
            if trans:
                rows, cols, rs, cs = cols, rows, cs, rs
            return Operand(name, DTYPE[t.data_type], rows, cols, rs, cs, batch)

        pa = operand(names[0], a, trans_a, collapsed[0])
        pb = operand(names[1], b, trans_b, collapsed[1])
        po = operand(names[3], out, False, collapsed[2])
        source = SimpleNamespace(data_type=compute_type, sizes=out.sizes, strides=target_strides)
        prologue = None
        if c is not None:
            v = SimpleNamespace(InputTensor=c, OutputTensor=source, FusedActivation=None,
                                fused=None, ScaleBias=SimpleNamespace(Scale=beta, Bias=0.0))
            prologue = (names[2], _copy(v) if beta == 1.0 else
                        elementwise.module(OP.DML_OPERATOR_ELEMENT_WISE_IDENTITY).plan(v))
        act = fused.operator if fused is not None else None
        epilogue = None
        elementwise_act = fused if act is not None and act not in SOFTMAXES else None
        if elementwise_act is not None or not direct:
            epilogue = activation_epilogue(elementwise_act, source, out)
        softmax = None
        if act in SOFTMAXES:
            from ..plan import SoftmaxPlan

            axes = tuple(fused.values.Axes) if act == OP.DML_OPERATOR_ACTIVATION_SOFTMAX1 \
                else (rank - 1,)
            softmax = SoftmaxPlan.build(out.element_size, out.sizes, axes, out.strides,
                                        out.strides, 0)
        packers = {op.name: op.packer(compute, tuple(sizes)) for op in (pa, pb)
                   if op.layout(compute) is None}
        return cls(operator, compute, m, n, k, tuple(sizes), pa, pb, po,
                   None if direct else tuple(collapsed[3]), float(alpha), prologue, epilogue,
                   softmax, packers)

    def reserve(self) -> dict[str, np.ndarray]:
        """Every scratch array of a dispatch (the last dispatch's, when kept)."""
        kept = self.spare.take()
        return kept if kept is not None else self.allocate()

    def allocate(self) -> dict[str, np.ndarray]:
        """Fresh scratch: packed operands and the dense target."""
        out: dict[str, np.ndarray] = {}
        for op in (self.a, self.b):
            if op.layout(self.compute) is None:
                out["packed " + op.name] = scratch(op.packed_shape(self.sizes), self.compute,
                                                   self.operator, f"{op.name} packed")
        if self.target is not None:
            out["product"] = scratch((*self.sizes, self.m, self.n), self.compute,
                                     self.operator, "the product before its epilogue")
        return out

    def run(self, regions: Mapping[str, np.ndarray],
            reserved: dict[str, np.ndarray] | None = None, keep: bool = True) -> None:
        """Execute; ``reserved``: what ``reserve`` returned for this dispatch; ``keep``: hand
        the scratch back for the next dispatch (a caller that owns it says False)."""
        import numba

        from . import blas

        space = reserved if reserved is not None else self.reserve()
        compute = self.compute
        operands = []
        for op in (self.a, self.b):
            as_bound = op.layout(compute)
            if as_bound is None:  # packed: a dense copy, one matrix per varying batch index
                dense = space["packed " + op.name]
                self.packers[op.name].run({"InputTensor": regions[op.name],
                                           "OutputTensor": dense.reshape(-1).view(np.uint8)})
                item = compute.itemsize
                strides = tuple(s // item if n > 1 else 0
                                for s, n in zip(dense.strides[:-2], dense.shape[:-2]))
                operands.append((dense.reshape(-1), strides, (False, op.cols)))
            else:
                operands.append((typed_view(regions[op.name], compute), op.batch, as_bound))
        if self.target is None:
            target = typed_view(regions[self.out.name], compute)
            t_batch, t_rs, t_cs = self.out.batch, self.out.rs, self.out.cs
        else:
            target = space["product"].reshape(-1)
            t_batch, t_rs, t_cs = self.target, self.n, 1
        target_bytes = target.view(np.uint8)
        beta = 0.0
        if self.prologue is not None:
            name, plan = self.prologue
            plan.run({"InputTensor": regions[name], "OutputTensor": target_bytes})
            beta = 1.0
        t_layout = blas_layout(self.m, self.n, t_rs, t_cs)
        assert t_layout is not None
        (a, a_batch, (a_t, lda)), (b, b_batch, (b_t, ldb)) = operands
        if blas.direct(compute):
            item = compute.itemsize
            pa, pb, pt = (x.__array_interface__["data"][0] for x in (a, b, target))
            calls = []
            for coord in np.ndindex(*self.sizes):
                oa = pa + sum(i * s for i, s in zip(coord, a_batch)) * item
                ob = pb + sum(i * s for i, s in zip(coord, b_batch)) * item
                ot = pt + sum(i * s for i, s in zip(coord, t_batch)) * item
                if t_layout[0]:  # a column-major target: its transpose is B^T x A^T
                    calls.append((not b_t, not a_t, self.n, self.m, self.k, self.alpha, ob, ldb,
                                  oa, lda, beta, ot, t_layout[1]))
                else:
                    calls.append((a_t, b_t, self.m, self.n, self.k, self.alpha, oa, lda, ob, ldb,
                                  beta, ot, t_layout[1]))
            blas.run(compute, calls, numba.get_num_threads())
        else:
            av = _matrices(a, a_batch, a_t, lda, self.sizes, self.m, self.k)
            bv = _matrices(b, b_batch, b_t, ldb, self.sizes, self.k, self.n)
            tv = _matrices(target, t_batch, t_layout[0], t_layout[1], self.sizes, self.m, self.n,
                           writeable=True)
            product = np.matmul(av, bv)
            if self.alpha != 1.0:
                product *= compute.type(self.alpha)
            if beta:
                product += tv
            tv[...] = product
        if self.epilogue is not None:
            self.epilogue.run({"InputTensor": target_bytes,
                               "OutputTensor": regions[self.out.name]})
        if self.softmax is not None:
            self.softmax.run({"InputTensor": regions[self.out.name],
                              "OutputTensor": regions[self.out.name]})
        if keep:
            self.spare.keep(space)


def activation_epilogue(fused: Any, source: Any, out: Any) -> Any:
    """The element-wise plan from ``source`` (a FLOAT32/FLOAT64 tensor) to ``out``: the fused
    activation's own standalone kernel (its attributes as validated), or CAST's rounding copy
    when there is none. (Not for SOFTMAX, which is not element-wise.)"""
    from .. import elementwise

    if fused is None:
        return _copy(SimpleNamespace(InputTensor=source, OutputTensor=out))
    v = SimpleNamespace(**vars(fused.values))
    v.InputTensor, v.OutputTensor, v.FusedActivation, v.fused, v.ScaleBias = \
        source, out, None, None, None
    return elementwise.module(fused.operator).plan(v)


def _copy(v: SimpleNamespace) -> Any:
    """CAST's plan from v.InputTensor to v.OutputTensor: a float copy, rounded once
    where the output is narrower (IDENTITY without ScaleBias copies bits, not values)."""
    from .. import elementwise

    return elementwise.module(OP.DML_OPERATOR_CAST).plan(v)


def _matrices(data: np.ndarray, batch: Sequence[int], trans: bool, ld: int,
              sizes: Sequence[int], rows: int, cols: int, writeable: bool = False) -> np.ndarray:
    """A (batch.., rows, cols) view of BLAS-laid-out matrices (the fallback path)."""
    item = data.dtype.itemsize
    rs, cs = (1, ld) if trans else (ld, 1)
    return np.lib.stride_tricks.as_strided(
        data, (*sizes, rows, cols), tuple(s * item for s in (*batch, rs, cs)),
        writeable=writeable)
