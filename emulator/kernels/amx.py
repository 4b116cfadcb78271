"""The int8 products of QLMM on AMX tiles (tdpbusd), emitted as LLVM intrinsics.

An AMX tile multiply (``tdpbusd``) adds to a 16 x 16 int32 tile the products of a 16 x 64-byte
tile of unsigned bytes (A: 16 rows, 64 k each) and a tile of signed bytes laid out as 16 groups
of 4 k (B: a row per group of 4 k, 16 columns x 4 bytes), in groups of four, exactly: the same
sums as ``vnni_tile``'s vpdpbusd, so the bytes are the VNNI path's. B's VNNI panels
(``vnni.pack_b_tile``: [K/4][64 columns][4] per column tile, rows of 256 bytes) are already in
that layout; A is packed row by row (``pack_a_rows``).

``block`` computes a 16 x 64 int32 block (four tiles, tmm0-3; A in tmm4, B in tmm5/6) over K
in steps of 64 and stores it with a row stride, after ``configure`` loaded the tile layout into
the thread (once per task; ``release`` at its end). Where the CPU has no AMX (or Linux refuses
the tile state) the same three names are plain Numba functions with the same sums, so the path
is tested on every machine and the plan only takes it where ``HAS_AMX``.

Linux hands out the tile state on request: ``arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA)`` once
per process, made here at import; a tile instruction without it is SIGILL.
"""

from __future__ import annotations

import ctypes
import platform
from typing import Any

import llvmlite.binding as llb
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .jit import inline
from .strided import typed_pointer

ROWS, K_STEP, COLS = 16, 64, 64  # a block: 16 rows x 64 columns, K consumed 64 at a time
_SYS_ARCH_PRCTL, _ARCH_REQ_XCOMP_PERM, _XFEATURE_XTILEDATA = 158, 0x1023, 18


def _tile_state() -> bool:
    """Whether this process may run tile instructions (asked for once, here)."""
    features = llb.get_host_cpu_features().flatten().split(",")
    if "+amx-tile" not in features or "+amx-int8" not in features:
        return False
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        granted = libc.syscall(ctypes.c_long(_SYS_ARCH_PRCTL), ctypes.c_long(_ARCH_REQ_XCOMP_PERM),
                               ctypes.c_long(_XFEATURE_XTILEDATA))
    except (OSError, AttributeError):
        return False
    return granted == 0


HAS_AMX = _tile_state()

# The tile layout (ldtilecfg's 64 bytes): palette 1; tiles 0-6 of 16 rows x 64 bytes.
CONFIG = np.zeros(64, np.uint8)
CONFIG[0] = 1
CONFIG[16:48].view(np.uint16)[:7] = 64
CONFIG[48:55] = 16

_I8, _I64, _VOID = ir.IntType(8), ir.IntType(64), ir.VoidType()
_P8 = _I8.as_pointer()
_u8s = typed_pointer(types.uint8)
_i8s = typed_pointer(types.int8)
_i32s = typed_pointer(types.int32)


def _declare(builder: Any, name: str, args: list) -> Any:
    try:
        return builder.module.get_global(name)
    except KeyError:
        return ir.Function(builder.module, ir.FunctionType(_VOID, args), name)


@intrinsic
def _configure_tiles(typingctx, cfg):  # pragma: no cover - code generation
    """ldtilecfg from the 64 bytes at address ``cfg``."""
    def codegen(context, builder, signature, args):
        builder.call(_declare(builder, "llvm.x86.ldtilecfg", [_P8]),
                     [builder.inttoptr(args[0], _P8)])
        return context.get_dummy_value()

    return types.void(types.int64), codegen


@intrinsic
def _release_tiles(typingctx):  # pragma: no cover - code generation
    """tilerelease: the tile state back to its initial (unused) state."""
    def codegen(context, builder, signature, args):
        builder.call(_declare(builder, "llvm.x86.tilerelease", []), [])
        return context.get_dummy_value()

    return types.void(), codegen


@intrinsic
def _block_tiles(typingctx, a, lda, b, steps, c, ldc):  # pragma: no cover - code generation
    """C[16 x 64] int32 (rows ``ldc`` bytes apart, overwritten) = A[16 x 64 steps] unsigned
    bytes (rows ``lda`` bytes apart) x B (one VNNI panel, rows of 256 bytes); addresses."""
    sig = types.void(*[types.int64] * 6)

    def codegen(context, builder, signature, args):
        a_, lda_, b_, steps_, c_, ldc_ = args
        load = _declare(builder, "llvm.x86.tileloadd64", [_I8, _P8, _I64])
        dot = _declare(builder, "llvm.x86.tdpbusd", [_I8, _I8, _I8])
        store = _declare(builder, "llvm.x86.tilestored64", [_I8, _P8, _I64])
        zero = _declare(builder, "llvm.x86.tilezero", [_I8])
        for t in range(4):
            builder.call(zero, [ir.Constant(_I8, t)])
        entry = builder.block
        body = builder.append_basic_block("amx.body")
        done = builder.append_basic_block("amx.done")
        builder.cbranch(builder.icmp_signed(">", steps_, ir.Constant(_I64, 0)), body, done)
        builder.position_at_end(body)
        k = builder.phi(_I64)
        k.add_incoming(ir.Constant(_I64, 0), entry)
        a_at = builder.add(a_, builder.mul(k, ir.Constant(_I64, K_STEP)))
        builder.call(load, [ir.Constant(_I8, 4), builder.inttoptr(a_at, _P8), lda_])
        b_row = builder.add(b_, builder.mul(k, ir.Constant(_I64, (K_STEP // 4) * COLS * 4)))
        for t in range(4):
            b_tile = ir.Constant(_I8, 5 + (t & 1))
            b_at = builder.inttoptr(builder.add(b_row, ir.Constant(_I64, 64 * t)), _P8)
            builder.call(load, [b_tile, b_at, ir.Constant(_I64, COLS * 4)])
            builder.call(dot, [ir.Constant(_I8, t), ir.Constant(_I8, 4), b_tile])
        k_next = builder.add(k, ir.Constant(_I64, 1))
        k.add_incoming(k_next, body)
        builder.cbranch(builder.icmp_signed("<", k_next, steps_), body, done)
        builder.position_at_end(done)
        for t in range(4):
            c_at = builder.inttoptr(builder.add(c_, ir.Constant(_I64, 64 * t)), _P8)
            builder.call(store, [ir.Constant(_I8, t), c_at, ldc_])
        return context.get_dummy_value()

    return sig, codegen


@inline
def _configure_plain(cfg):  # pragma: no cover - compiled
    """Nothing to configure without tiles."""


@inline
def _release_plain():  # pragma: no cover - compiled
    """Nothing to release without tiles."""


@inline
def _block_plain(a, lda, b, steps, c, ldc):  # pragma: no cover - compiled
    """``_block_tiles``'s sums in plain code (any CPU): c[r, j] = sum over k < 64 steps of
    a[r, k] (unsigned) x b[k // 4, j, k % 4] (signed), exact in int32."""
    pa, pb, pc = _u8s(a), _i8s(b), _i32s(c)
    for r in range(ROWS):
        for j in range(COLS):
            s = np.int32(0)
            for k in range(K_STEP * steps):
                s += np.int32(pa[r * lda + k]) * np.int32(pb[(k >> 2) * (COLS * 4) + j * 4
                                                              + (k & 3)])
            pc[(r * ldc >> 2) + j] = s


configure = _configure_tiles if HAS_AMX else _configure_plain
release = _release_tiles if HAS_AMX else _release_plain
block = _block_tiles if HAS_AMX else _block_plain


@inline
def pack_a_rows(a, panel, base0, a_sm, a_sk, count, size_k, a_flip, totals):  # pragma: no cover
    """Rows 0 .. count - 1 of a block of A (row i at byte ``base0 + i * a_sm``, elements
    ``a_sk`` apart; made unsigned by XOR ``a_flip``) into ``panel`` row by row (``size_k``
    bytes each), the rows after them up to a whole 16 zero; ``totals[i]``: row i's sum of its
    unsigned bytes."""
    k = np.uint64(size_k)
    for i in range(count):
        base = np.uint64(base0 + i * a_sm)
        at = np.uint64(i) * k
        total = np.int64(0)
        if a_sk == 1:
            for q in range(k):
                v = a[base + q] ^ np.uint8(a_flip)
                panel[at + q] = v
                total += np.int64(v)
        else:
            for q in range(k):
                v = a[base + q * np.uint64(a_sk)] ^ np.uint8(a_flip)
                panel[at + q] = v
                total += np.int64(v)
        totals[i] = total
    end = ((count + ROWS - 1) // ROWS) * ROWS
    for q in range(np.uint64(count) * k, np.uint64(end) * k):
        panel[q] = 0
