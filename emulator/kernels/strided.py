"""One parallel strided driver for element-wise work, and per-operator chunk kernels it calls.

Compile time is the design constraint: an element-wise family of ~90 operators times their data
types is ~1,000 kernel signatures. Measured on 2 cores, cold cache: a ``parallel=True`` driver per
operator and type costs 1.3-3.5 s to compile (the parfor passes alone ~0.9 s); a serial kernel for
one chunk of a row costs 0.3-0.8 s. So:

- ``drive`` (here, compiled once for the whole family, over byte arrays) splits the output's
  coordinates into tasks of at most ``CHUNK`` elements along the last dimension, in parallel
  (``prange``), and for each task calls the operator's chunk kernel through its address;
- a chunk kernel (``chunk_kernel``) is a C-callable ``numba.cfunc`` for one operator and one
  combination of storage types, compiled on first use and kept in Numba's disk cache. It runs
  ``n`` elements from element offsets ``xo, yo, wo, zo`` with element strides ``xt, yt, wt, zt``.

Every chunk kernel has one C signature (``SIGNATURE``): up to three inputs (x, y, w) and the
output z, each as (pointer, offset, stride); ``n``; six float parameters ``p0 … p5``; an integer
``kind`` and an address ``aux`` (the fused-activation kernel, for kernels that apply one). The
indirect call costs one call per task (≤ 16,384 elements).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .activation import activate
from .jit import c_kernel, kernel, prange

CHUNK = 16384  # elements per task (as kernels/copy.py): long rows still spread over threads

_I64 = ir.IntType(64)
_PTR = ir.IntType(8).as_pointer()
_DBL = ir.DoubleType()
_CHUNK_FN = ir.FunctionType(ir.VoidType(), [_PTR, _I64, _I64] * 4 + [_I64] + [_DBL] * 6 +
                            [_I64, _I64])
_ACT_FN = ir.FunctionType(ir.VoidType(), [_PTR, _I64, _I64, _DBL, _DBL])


def signature(storage: Sequence[str]) -> Any:
    """The chunk kernels' C signature for (input storage types ..., output storage type)."""
    *ins, out = storage
    ptrs = [types.CPointer(getattr(types, t)) for t in ins]
    ptrs += [types.CPointer(types.uint8)] * (3 - len(ins)) + [types.CPointer(getattr(types, out))]
    args: list[types.Type] = []
    for p in ptrs:
        args += [p, types.int64, types.int64]
    return types.void(*args, types.int64, *[types.float64] * 6, types.int64, types.int64)


_compiled: dict[tuple[Callable[..., None], tuple[str, ...]], object] = {}


def chunk_kernel(py_func: Callable[..., None], storage: Sequence[str]) -> int:
    """The address of ``py_func`` compiled for these storage types (inputs, then the output)."""
    key = (py_func, tuple(storage))
    c = _compiled.get(key)
    if c is None:
        c = c_kernel(signature(storage))(py_func)
        _compiled[key] = c
    return int(c.address)  # type: ignore[attr-defined]


@intrinsic
def data_pointer(typingctx, arr):  # pragma: no cover - code generation
    """The data pointer of an array, as ``void*``."""
    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        return builder.bitcast(ary.data, _PTR)

    return types.voidptr(arr), codegen


@intrinsic
def call_chunk(typingctx, fn, xp, xo, xt, yp, yo, yt, wp, wo, wt, zp, zo, zt, n,
               p0, p1, p2, p3, p4, p5, kind, aux):  # pragma: no cover - code generation
    """Call the chunk kernel at address ``fn``."""
    sig = types.void(types.int64, *([types.voidptr, types.int64, types.int64] * 4), types.int64,
                     *([types.float64] * 6), types.int64, types.int64)

    def codegen(context, builder, sig, args):
        builder.call(builder.inttoptr(args[0], _CHUNK_FN.as_pointer()), args[1:])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def call_activation(typingctx, fn, buf, n, kind, p0, p1):  # pragma: no cover - code generation
    """Apply the fused activation ``kind`` to the float64 array ``buf[:n]`` through the kernel at
    ``fn`` (``activation_address()``)."""
    sig = types.void(types.int64, buf, types.int64, types.int64, types.float64, types.float64)

    def codegen(context, builder, sig, args):
        f, b, *rest = args
        data = builder.bitcast(context.make_array(sig.args[1])(context, builder, b).data, _PTR)
        builder.call(builder.inttoptr(f, _ACT_FN.as_pointer()), [data, *rest])
        return context.get_dummy_value()

    return sig, codegen


def _activation(buf, n, kind, p0, p1):  # pragma: no cover - compiled
    activate(kind, buf, n, p0, p1)


_act: list[object] = []


def activation_address() -> int:
    """The address of the fused-activation kernel (one for every operator; compiled on first
    use): ``kernels.activation.activate`` on ``n`` float64 values."""
    if not _act:
        sig = types.void(types.CPointer(types.float64), types.int64, types.int64, types.float64,
                         types.float64)
        _act.append(c_kernel(sig)(_activation))
    return int(_act[0].address)  # type: ignore[attr-defined]


@kernel
def drive(fn, x, xb, y, yb, w, wb, z, zb, sizes, xs, ys, ws, zs, p0, p1, p2, p3, p4, p5, kind,
          aux):  # pragma: no cover
    """``z[c] = f(x[c], y[c], w[c])`` for every coordinate c of ``sizes``: the tensors are byte
    arrays; ``*b`` and ``*s`` are element offsets and strides (one per dimension)."""
    rank = sizes.shape[0]
    inner = sizes[rank - 1]
    rows = np.int64(1)
    for k in range(rank - 1):
        rows *= sizes[k]
    chunks = (inner + CHUNK - 1) // CHUNK
    xp = data_pointer(x)
    yp = data_pointer(y)
    wp = data_pointer(w)
    zp = data_pointer(z)
    xl = xs[rank - 1]
    yl = ys[rank - 1]
    wl = ws[rank - 1]
    zl = zs[rank - 1]
    for task in prange(rows * chunks):
        row = np.int64(task) // chunks
        j0 = (np.int64(task) - row * chunks) * CHUNK
        xo = xb + j0 * xl
        yo = yb + j0 * yl
        wo = wb + j0 * wl
        zo = zb + j0 * zl
        rem = row
        for k in range(rank - 2, -1, -1):
            c = rem % sizes[k]
            rem //= sizes[k]
            xo += c * xs[k]
            yo += c * ys[k]
            wo += c * ws[k]
            zo += c * zs[k]
        n = min(inner, j0 + CHUNK) - j0
        call_chunk(fn, xp, xo, xl, yp, yo, yl, wp, wo, wl, zp, zo, zl, n, p0, p1, p2, p3, p4, p5,
                   kind, aux)
