"""REDUCE, ARGMIN, ARGMAX, CUMULATIVE_SUMMATION and CUMULATIVE_PRODUCT: rows of the reduction
family, their plans over the shared layout (``layout.Layout``) and their NumPy references.

    REDUCE:  y = f(x_1, ..., x_N) over the N elements sharing every coordinate outside Axes:
             SUM x1 + ... + xN; AVERAGE the sum / N; MULTIPLY x1 * ... * xN; L1 |x1| + ...;
             L2 sqrt(x1^2 + ...); SUM_SQUARE x1^2 + ...; LOG_SUM log(x1 + ...);
             LOG_SUM_EXP log(exp(x1) + ...); MIN, MAX; ARGMIN, ARGMAX the index of the smallest
             (largest) element, its position in the row-major order of the reduced axes.
    ARGMIN / ARGMAX: the same index; AxisDirection INCREASING takes the first of equal extremes,
             DECREASING the last.
    CUMULATIVE_SUMMATION / _PRODUCT: along Axis (DECREASING: from the end), each output the sum
             (product) of the elements up to and including it (HasExclusive*: excluding it).

How each runs (``kernels.py``): float arithmetic in float64, rounded once when stored; integer
arithmetic modulo 2**64, which is the result wrapped at the type's width; MIN/MAX/ARG* through
order-preserving keys, so they are exact and their values are bit copies of an element.
**Decisions** (docs/decisions.md, Reductions): MIN/MAX skip NaN (Direct3D's min and max; a
group of NaNs gives its first NaN) and order -0 below +0 (MAX(-0, +0) = +0 whatever the order);
ARGMIN/ARGMAX skip NaN the same way (a group of NaNs gives its first index, DECREASING its last)
and treat -0 and +0 as equal values; LOG_SUM_EXP subtracts the group's maximum first (the
formula's value without overflow); integer SUM, MULTIPLY, L1 and SUM_SQUARE wrap (|INT_MIN| is
INT_MIN).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from descriptors import DML_AXIS_DIRECTION, DML_OPERATOR_TYPE, DML_REDUCE_FUNCTION

from ..family import Row
from ..ops.common import (
    FLOAT16,
    FLOAT32,
    INT8,
    INT16,
    INT32,
    INT64,
    UINT8,
    UINT16,
    UINT32,
    UINT64,
    ieee_reference,
)
from ..plan import float_view
from ..resources import typed_view
from ..validation import Tensor, packed_strides
from .layout import Layout

OP = DML_OPERATOR_TYPE
RF = DML_REDUCE_FUNCTION
DECREASING = DML_AXIS_DIRECTION.DML_AXIS_DIRECTION_DECREASING
TEN_TYPES = (FLOAT32, FLOAT16, INT64, INT32, INT16, INT8, UINT64, UINT32, UINT16, UINT8)
SIGNED_TYPES = (INT64, INT32, INT16, INT8)

# kernels.py's codes (repeated here so that a plan does not import Numba)
SUM, SQUARE, ABS, EXP, PRODUCT, MAXIMUM = 0, 1, 2, 3, 4, 5
UNSIGNED, SIGNED, FLOAT = 0, 1, 2

LANES = 64  # lines advancing together in a scan's columns mode
COLUMN_LANES = 1024  # groups advancing together in a reduction's columns mode
SCAN_LINES = 4  # lines a row apart scanned together (four running totals in registers)
MIN_TASKS = 64  # cut groups' elements into chunks until there are this many tasks
MIN_CHUNK = 4096  # ... but never into chunks shorter than this

# Each arithmetic function: (its term and fold, its finishing step on the float64 result).
ARITHMETIC = {
    RF.DML_REDUCE_FUNCTION_SUM: (SUM, None), RF.DML_REDUCE_FUNCTION_AVERAGE: (SUM, "mean"),
    RF.DML_REDUCE_FUNCTION_L1: (ABS, None), RF.DML_REDUCE_FUNCTION_L2: (SQUARE, "sqrt"),
    RF.DML_REDUCE_FUNCTION_SUM_SQUARE: (SQUARE, None),
    RF.DML_REDUCE_FUNCTION_LOG_SUM: (SUM, "log"),
    RF.DML_REDUCE_FUNCTION_LOG_SUM_EXP: (EXP, "log"),
    RF.DML_REDUCE_FUNCTION_MULTIPLY: (PRODUCT, None),
}
EXTREMES = {  # function: (is a minimum, returns the index)
    RF.DML_REDUCE_FUNCTION_MIN: (True, False), RF.DML_REDUCE_FUNCTION_MAX: (False, False),
    RF.DML_REDUCE_FUNCTION_ARGMIN: (True, True), RF.DML_REDUCE_FUNCTION_ARGMAX: (False, True),
}


def _unsigned(t: Tensor) -> str:
    return f"u{t.element_size}"


def _cut(layout: Layout) -> tuple[int, int]:
    """(lanes, chunks) for a layout: from the shape only, so results never depend on the
    thread count. Columns (groups that are neighbours in memory while a group's elements are
    not): blocks of up to COLUMN_LANES groups, each reading a contiguous stretch per element.
    Few blocks: each group's elements cut into chunks (of at least MIN_CHUNK elements of the
    block) until there are MIN_TASKS tasks."""
    g_sizes, g_in = layout.g[0], layout.g[1]
    r_in = layout.r[1]
    glast = int(g_sizes[-1])
    columns = g_in[-1] == 1 and r_in[-1] != 1 and glast > 1
    lanes = min(COLUMN_LANES, glast) if columns else 1
    blocks = layout.groups // glast * -(-glast // lanes)
    chunks = 1
    if blocks < MIN_TASKS:
        chunks = max(1, min(-(-MIN_TASKS // blocks), layout.count * lanes // MIN_CHUNK))
    return lanes, chunks


@dataclass(frozen=True, eq=False)
class ReducePlan:
    """One REDUCE / ARGMIN / ARGMAX: task kernels (``kernels.py``) write one float64 or uint64
    (and index) per group, which is finished in NumPy (mean, sqrt, log) and stored, through
    the output tensor's strides unless it is packed. The kernels' argument block is made here,
    once; a dispatch copies it."""

    x: Tensor
    y: Tensor
    layout: Layout
    lanes: int
    chunks: int
    function: RF
    backward: bool
    block: np.ndarray
    packed: bool  # the output's groups lie one after another (element g at offset g)

    @classmethod
    def build(cls, v: SimpleNamespace, function: RF, backward: bool = False) -> ReducePlan:
        from .kernels import fields

        x, y = v.InputTensor, v.OutputTensor
        layout = Layout.build(x.sizes, v.Axes, [x.strides])
        lanes, chunks = _cut(layout)
        parts = ((layout.g[0], layout.g[1]), (layout.r[0], layout.r[1]))
        common = {"xn": x.extent, "groups": layout.groups, "chunks": chunks, "lanes": lanes}
        if function in EXTREMES:
            minimum, index = EXTREMES[function]
            bits = 8 * x.element_size
            mask = (1 << bits) - 1
            kind = FLOAT if x.data_type in (FLOAT32, FLOAT16) else \
                SIGNED if x.data_type in SIGNED_TYPES else UNSIGNED
            blk = fields(*parts, **common, kind=kind, top=_signed64(1 << (bits - 1)),
                         mask=_signed64(mask), inf={FLOAT32: 0x7F800000, FLOAT16: 0x7C00}.get(
                             x.data_type, 0), flip=_signed64(mask if minimum else 0),
                         canon=index, backward=backward, index=index)
        elif x.data_type in (FLOAT32, FLOAT16):
            blk = fields(*parts, **common, op=ARITHMETIC[function][0])
        else:
            sign = 1 << (8 * x.element_size - 1) if x.data_type in SIGNED_TYPES else 0
            blk = fields(*parts, **common, op=ARITHMETIC[function][0], sign=_signed64(sign))
        packed = all(s == p for n, s, p in zip(y.sizes, y.strides, packed_strides(y.sizes))
                     if n > 1)
        return cls(x, y, layout, lanes, chunks, function, backward, blk, packed)

    @functools.cached_property
    def kernel(self) -> int:
        """The task kernel's address (compiled at the first dispatch): the keys, the float
        fold or the integer fold, for the input's storage type."""
        from ..kernels.tasks import address
        from . import kernels as k

        x = self.x
        if self.function in EXTREMES:
            return address(k.keys_task, np.dtype(_unsigned(x)).name, "uint64")
        if x.data_type in (FLOAT32, FLOAT16):
            return address(k.float_task, _float_storage(x), "float64")
        return address(k.int_task, np.dtype(_unsigned(x)).name, "uint64")

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        from . import kernels as k

        lay, x, fn = self.layout, self.x, self.function
        groups, chunks, lanes = lay.groups, self.chunks, self.lanes
        region = regions["InputTensor"]
        blk = self.block.copy()
        if fn in EXTREMES:
            xv = typed_view(region, _unsigned(x))
            parts = np.empty(2 * groups * chunks, np.uint64)  # keys, then indices
            outs = np.empty(2 * groups, np.uint64)  # the groups' bits, then indices
            k.run_phases(self.kernel, blk, xv, parts, parts, outs, lay, chunks, lanes)
            index = EXTREMES[fn][1]
            result = outs[groups:].view(np.int64) if index else \
                outs[:groups].astype(_unsigned(x)).view(x.dtype)
        elif x.data_type in (FLOAT32, FLOAT16):
            op, finish = ARITHMETIC[fn]
            shift = np.zeros(groups)
            acc = np.empty(groups)
            xv = float_view(region, x.element_size)
            part = acc if chunks == 1 else np.empty(groups * chunks)
            if op == EXP:  # the largest element first (NaN skipped; -inf if none)
                blk[k.HEAD + k.OP] = MAXIMUM
                k.run_phases(self.kernel, blk, xv, part, shift, acc, lay, chunks, lanes)
                shift = np.where(np.isfinite(acc), acc, 0.0)
                blk[k.HEAD + k.OP] = op
            k.run_phases(self.kernel, blk, xv, part, shift, acc, lay, chunks, lanes)
            with np.errstate(all="ignore"):
                if finish == "mean":
                    acc = acc / lay.count
                elif finish == "sqrt":
                    acc = np.sqrt(acc)
                elif finish == "log":
                    acc = np.log(acc) + shift
            result = acc
        else:
            acc = np.empty(groups, np.uint64)
            xv = typed_view(region, _unsigned(x))
            part = acc if chunks == 1 else np.empty(groups * chunks, np.uint64)
            k.run_phases(self.kernel, blk, xv, part, part, acc, lay, chunks, lanes)
            result = acc.astype(_unsigned(x)).view(x.dtype)
        y = self.y
        with np.errstate(over="ignore"):  # float64 beyond the type's range: ±inf
            if self.packed:
                typed_view(regions["OutputTensor"], y.dtype)[:groups] = result
            else:
                y.view(regions["OutputTensor"])[...] = result.astype(y.dtype).reshape(y.sizes)


def _signed64(v: int) -> int:
    """A 64-bit pattern as the int64 a block holds."""
    return v - (1 << 64) if v >= 1 << 63 else v


def _float_storage(t: Tensor) -> str:
    """How a FLOAT32 / FLOAT16 tensor reaches the kernels (``plan.float_view``)."""
    return "float32" if t.element_size == 4 else "uint16"


@dataclass(frozen=True, eq=False)
class ScanPlan:
    """CUMULATIVE_SUMMATION / CUMULATIVE_PRODUCT: every line along Axis, in parallel (task
    kernels; their argument block made once here)."""

    x: Tensor
    layout: Layout
    lanes: int
    block: np.ndarray
    tasks: int

    @classmethod
    def build(cls, v: SimpleNamespace, product: bool, exclusive: bool) -> ScanPlan:
        from .kernels import fields, scan_tasks

        x, y = v.InputTensor, v.OutputTensor
        layout = Layout.build(x.sizes, [v.Axis], [x.strides, y.strides])
        g_sizes, g_in, g_out = layout.g
        _, r_in, r_out = layout.r  # one dimension (size 1, stride 0, where Axis has size 1)
        # Neighbouring lines advance together (a loop across them that vectorises), else
        # SCAN_LINES lines a row apart (running totals in flight together).
        neighbours = g_in[-1] == 1 and g_out[-1] == 1
        lanes = min(LANES if neighbours else SCAN_LINES, int(g_sizes[-1]))
        blk = fields((g_sizes, g_in), (g_sizes, g_out), xn=x.extent, yn=y.extent, lanes=lanes,
                     n=layout.count, xs=r_in[0], ys=r_out[0], op=product, exclusive=exclusive,
                     backward=v.AxisDirection == DECREASING)
        return cls(x, layout, lanes, blk, scan_tasks(g_sizes, lanes))

    @functools.cached_property
    def kernel(self) -> int:
        """The task kernel's address (compiled at the first dispatch), for the storage type."""
        from ..kernels.tasks import address
        from . import kernels as k

        x = self.x
        if x.data_type in (FLOAT32, FLOAT16):
            return address(k.scan_float_task, _float_storage(x), _float_storage(x))
        storage = np.dtype(_unsigned(x)).name
        return address(k.scan_int_task, storage, storage)

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        from . import kernels as k

        x = self.x
        if x.data_type in (FLOAT32, FLOAT16):
            xv = float_view(regions["InputTensor"], x.element_size)
            yv = float_view(regions["OutputTensor"], x.element_size)
        else:
            xv = typed_view(regions["InputTensor"], _unsigned(x))
            yv = typed_view(regions["OutputTensor"], _unsigned(x))
        k.run(self.kernel, self.block.copy(), self.tasks, xv, yv, work=x.element_count)


# --- references: the pages' formulas, plainly ------------------------------------------------


def _grouped(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """x with the reduced axes moved last and flattened (row-major): (..., N)."""
    kept = [d for d in range(x.ndim) if d not in axes]
    moved = np.transpose(x, kept + list(axes))
    return moved.reshape(*[x.shape[d] for d in kept], -1)


def _back(r: np.ndarray, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """A per-group result back in the input's rank, reduced axes of size 1."""
    return r.reshape([1 if d in axes else n for d, n in enumerate(x.shape)])


def extreme_index(g: np.ndarray, minimum: bool, last: bool, signed_zero: bool) -> np.ndarray:
    """The index of the smallest/largest of each row of ``g`` (..., N): NaN skipped (a row of
    NaN: 0, or N-1 when ``last``), ties the first (``last``: the last); ``signed_zero``: -0 is
    below +0."""
    n = g.shape[-1]
    if g.dtype.kind == "f":
        nan = np.isnan(g)
        v = g.astype(np.float64)
        if signed_zero:  # -0 below +0: nudge them apart by less than any other gap
            v = np.where(v == 0, np.where(np.signbit(v), -1e-320, 1e-320), v)
        v = np.where(nan, np.inf if minimum else -np.inf, v)
        best = v.min(axis=-1, keepdims=True) if minimum else v.max(axis=-1, keepdims=True)
        hit = (v == best) & ~nan
        hit = np.where(hit.any(axis=-1, keepdims=True), hit, True)  # a row of NaN
    else:
        best = g.min(axis=-1, keepdims=True) if minimum else g.max(axis=-1, keepdims=True)
        hit = g == best
    if last:
        return n - 1 - np.argmax(hit[..., ::-1], axis=-1)
    return np.argmax(hit, axis=-1)


@ieee_reference
def reduce_values(x: np.ndarray, axes: tuple[int, ...], fn: RF, last: bool = False
                  ) -> np.ndarray:
    """REDUCE's functions as the enum page writes them (float64 for floats; integers modulo
    2**width), the reduced axes kept with size 1."""
    g = _grouped(x, axes)
    if fn in EXTREMES:
        minimum, index = EXTREMES[fn]
        i = extreme_index(g, minimum, last, signed_zero=not index)
        return _back(i if index else np.take_along_axis(g, i[..., None], -1), x, axes)
    if x.dtype.kind != "f":
        u = g.astype(np.uint64)  # two's complement bits, sign-extended: the same low bits
        if fn == RF.DML_REDUCE_FUNCTION_L1:
            u = np.where(g < 0, np.uint64(0) - u, u)
        elif fn == RF.DML_REDUCE_FUNCTION_SUM_SQUARE:
            u = u * u
        r = np.prod(u, axis=-1) if fn == RF.DML_REDUCE_FUNCTION_MULTIPLY else u.sum(axis=-1)
        return _back(r.astype(x.dtype), x, axes)
    v = g.astype(np.float64)
    if fn == RF.DML_REDUCE_FUNCTION_SUM:
        r = v.sum(axis=-1)
    elif fn == RF.DML_REDUCE_FUNCTION_AVERAGE:
        r = v.sum(axis=-1) / v.shape[-1]
    elif fn == RF.DML_REDUCE_FUNCTION_MULTIPLY:
        r = np.prod(v, axis=-1)
    elif fn == RF.DML_REDUCE_FUNCTION_L1:
        r = np.abs(v).sum(axis=-1)
    elif fn == RF.DML_REDUCE_FUNCTION_L2:
        r = np.sqrt((v * v).sum(axis=-1))
    elif fn == RF.DML_REDUCE_FUNCTION_SUM_SQUARE:
        r = (v * v).sum(axis=-1)
    elif fn == RF.DML_REDUCE_FUNCTION_LOG_SUM:
        r = np.log(v.sum(axis=-1))
    else:  # LOG_SUM_EXP: the largest element (NaN skipped) taken out first
        m = np.where(np.isnan(v), -np.inf, v).max(axis=-1, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        r = np.log(np.exp(v - m).sum(axis=-1)) + m[..., 0]
    return _back(r, x, axes)


def reduce_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                     ) -> dict[str, np.ndarray]:
    y = reduce_values(inputs["InputTensor"], tuple(sorted(set(v.Axes))), v.Function)
    with np.errstate(over="ignore"):
        return {"OutputTensor": y.astype(v.OutputTensor.dtype)}


def arg_reference(function: RF):
    def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                  ) -> dict[str, np.ndarray]:
        y = reduce_values(inputs["InputTensor"], tuple(sorted(set(v.Axes))), function,
                          last=v.AxisDirection == DECREASING)
        return {"OutputTensor": y.astype(v.OutputTensor.dtype)}
    return reference


def scan_reference(product: bool):
    @ieee_reference
    def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                  ) -> dict[str, np.ndarray]:
        x = inputs["InputTensor"]
        backward = v.AxisDirection == DECREASING
        exclusive = v.HasExclusiveProduct if product else v.HasExclusiveSum
        a = np.flip(x, v.Axis) if backward else x
        a = a.astype(np.float64) if x.dtype.kind == "f" else a.astype(np.uint64)
        if exclusive:  # the running total before each element: shift in the identity
            pad = np.ones_like(np.take(a, [0], axis=v.Axis)) if product else \
                np.zeros_like(np.take(a, [0], axis=v.Axis))
            a = np.concatenate([pad, np.delete(a, -1, axis=v.Axis)], axis=v.Axis)
        r = np.cumprod(a, axis=v.Axis) if product else np.cumsum(a, axis=v.Axis)
        if backward:
            r = np.flip(r, v.Axis)
        with np.errstate(over="ignore"):
            return {"OutputTensor": r.astype(x.dtype)}
    return reference


def _reduce_plan(v: SimpleNamespace) -> ReducePlan:
    return ReducePlan.build(v, v.Function)


def _arg_plan(function: RF):
    def plan(v: SimpleNamespace) -> ReducePlan:
        return ReducePlan.build(v, function, v.AxisDirection == DECREASING)
    return plan


ROWS = (
    Row(OP.DML_OPERATOR_REDUCE, _reduce_plan, reduce_reference, TEN_TYPES),
    Row(OP.DML_OPERATOR_ARGMIN, _arg_plan(RF.DML_REDUCE_FUNCTION_ARGMIN),
        arg_reference(RF.DML_REDUCE_FUNCTION_ARGMIN), TEN_TYPES),
    Row(OP.DML_OPERATOR_ARGMAX, _arg_plan(RF.DML_REDUCE_FUNCTION_ARGMAX),
        arg_reference(RF.DML_REDUCE_FUNCTION_ARGMAX), TEN_TYPES),
    Row(OP.DML_OPERATOR_CUMULATIVE_SUMMATION,
        lambda v: ScanPlan.build(v, False, bool(v.HasExclusiveSum)), scan_reference(False),
        TEN_TYPES),
    Row(OP.DML_OPERATOR_CUMULATIVE_PRODUCT,
        lambda v: ScanPlan.build(v, True, bool(v.HasExclusiveProduct)), scan_reference(True),
        TEN_TYPES),
)
