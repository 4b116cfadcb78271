"""Task kernels: one way to run work cut into independent tasks, on the worker pool
(``kernels/pool.py``) where it is available, else on Numba's ``prange``.

A task kernel is a C-callable function (``jit.c_kernel``) with the C signature

    void task(T *x, U *y, int64 *block, int64 task)

x and y typed per compiled variant (FLOAT32 as float32, FLOAT16 as uint16 bits, ...), ``block``
an int64 argument block: ``HEAD`` slots the launch fills (the addresses of x, y and two more
arrays w and z, the kernel's address, the task count), then the kernel's own fields (sizes,
strides, scalars). ``run`` calls it for tasks 0 .. n - 1:

- on the pool: thread t runs the t-th contiguous range of tasks (the same range in every launch
  of one shape, so a part of a tensor stays on one core's cache), one job for every task kernel
  (``_part``), compiled once;
- elsewhere: ``drive``, a ``prange`` loop over the tasks, compiled once (x and y as bytes).

Why: the reductions and the softmax family had a ``prange`` kernel (or driver) of their own, and
under Numba's TBB layer every launch builds a task arena (~100 us a launch on the 16-core Xeon,
26 us on the pool: docs/decisions.md, "Element-wise launches on an own worker pool"). A task's
result must not depend on which thread runs it, so the thread count never changes a byte.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir
from numba import carray, types
from numba.extending import intrinsic

from . import pool
from .jit import c_kernel, helper, inline, kernel, prange
from .strided import data_pointer, int64_pointer
from .strided import u8_pointer as _bytes

# Block slots: x, y, w and z addresses, the kernel, the task count, the next unclaimed task.
X, Y, W, Z, FN, TASKS, NEXT = range(7)
HEAD = 7
MIN_WORK = 16384  # elements a thread should have: smaller launches use fewer (waking one costs
# ~5 us; kernels/strided.py's MIN_PART)

_I64 = ir.IntType(64)
_PTR = ir.IntType(8).as_pointer()
_TASK_FN = ir.FunctionType(ir.VoidType(), [_PTR, _PTR, _PTR, _I64])


@intrinsic
def _call(typingctx, fn, x, y, block, task):  # pragma: no cover - code generation
    """Call the task kernel at address ``fn`` (x, y, block: int64 addresses)."""
    sig = types.void(types.int64, types.int64, types.int64, types.int64, types.int64)

    def codegen(context, builder, sig, args):
        ptrs = [builder.inttoptr(a, _PTR) for a in args[1:4]]
        builder.call(builder.inttoptr(args[0], _TASK_FN.as_pointer()), [*ptrs, args[4]])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _address(typingctx, ptr):  # pragma: no cover - code generation
    """A ``void*`` as an int64."""
    def codegen(context, builder, sig, args):
        return builder.ptrtoint(args[0], _I64)

    return types.int64(types.voidptr), codegen


def _part(block, part, parts):  # pragma: no cover - compiled
    """The pool's job: the part-th contiguous range of the block's tasks."""
    b = carray(int64_pointer(block), HEAD)
    n = b[TASKS]
    for task in range(n * part // parts, n * (part + 1) // parts):
        _call(b[FN], b[X], b[Y], block, task)


def _claim(block, part, parts):  # pragma: no cover - compiled
    """The pool's job for launches that claim: each thread takes the next unclaimed task until
    none is left (an atomic counter in the block)."""
    b = carray(int64_pointer(block), HEAD)
    n = b[TASKS]
    task = pool.fetch_add(b, NEXT, 1)
    while task < n:
        _call(b[FN], b[X], b[Y], block, task)
        task = pool.fetch_add(b, NEXT, 1)


@kernel
def drive(x, y, w, z, block):  # pragma: no cover
    """Every task of the block on Numba's threads (x, y, w, z: the arrays' bytes)."""
    xp = _address(data_pointer(x))
    yp = _address(data_pointer(y))
    block[W] = _address(data_pointer(w))
    block[Z] = _address(data_pointer(z))
    bp = _address(data_pointer(block))
    fn = block[FN]
    for task in prange(block[TASKS]):
        _call(fn, xp, yp, bp, np.int64(task))


_compiled: dict[tuple[Any, str, str], Any] = {}


def address(py_func: Any, x: str, y: str) -> int:
    """The address of the task kernel ``py_func(xp, yp, block, task)`` compiled for x and y of
    these Numba scalar types ("float32", "uint16" ...): compiled on first use, then from
    Numba's disk cache."""
    key = (py_func, x, y)
    c = _compiled.get(key)
    if c is None:
        sig = types.void(types.CPointer(getattr(types, x)), types.CPointer(getattr(types, y)),
                         types.CPointer(types.int64), types.int64)
        c = _compiled[key] = c_kernel(sig)(py_func)
    return int(c.address)


@helper
def _store_arrays(block, first, arrays):  # pragma: no cover
    for k in range(len(arrays)):
        block[first + 2 * k] = pool.address(arrays[k])
        block[first + 2 * k + 1] = arrays[k].size


def store_arrays(block: np.ndarray, first: int, *arrays: np.ndarray) -> None:
    """Put each array's data address and length in bytes into ``block[first:]``, two slots an
    array (contiguous arrays, alive for the launch; a task reads one back with
    ``byte_array``)."""
    _store_arrays(block, first, tuple(a.reshape(-1).view(np.uint8) for a in arrays))


@inline
def byte_array(pp, slot):  # pragma: no cover
    """In a task kernel: the bytes of the array ``store_arrays`` put at ``block[slot]``."""
    b = carray(pp, slot + 2)
    return carray(_bytes(b[slot]), b[slot + 1])


def block(fields) -> np.ndarray:
    """An argument block: HEAD empty slots, then ``fields`` (int64s)."""
    out = np.zeros(HEAD + len(fields), np.int64)
    out[HEAD:] = fields
    return out


def run(fn: int, block: np.ndarray, tasks: int, x: np.ndarray, y: np.ndarray,
        w: np.ndarray | None = None, z: np.ndarray | None = None, work: int | None = None,
        claim: bool = False) -> None:
    """Tasks 0 .. tasks - 1 of the task kernel at address ``fn`` over the arrays x and y (any
    contiguous 1-D arrays; w and z, if given, arrive as the block's W and Z addresses). ``work``
    (elements): at most one thread per MIN_WORK of them. ``claim``: on the pool, threads claim
    tasks one at a time instead of each running a fixed range (for long, compute-bound tasks, a
    few per thread: a core the machine slows down then holds up no more than its own task)."""
    if tasks <= 0:
        return
    block[FN] = fn
    block[TASKS] = tasks
    block[NEXT] = 0
    xb = x.reshape(-1).view(np.uint8)
    yb = y.reshape(-1).view(np.uint8)
    wb = xb if w is None else w.reshape(-1).view(np.uint8)
    zb = yb if z is None else z.reshape(-1).view(np.uint8)
    if pool.available():
        parts = tasks if work is None else max(1, min(tasks, work // MIN_WORK))
        pool.run(pool.job(_claim if claim else _part), block, parts, xb, yb, wb, zb)
    else:
        drive(xb, yb, wb, zb, block)
