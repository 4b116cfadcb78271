"""Probe: AMX int8 tiles (tdpbusd) from Numba, through the same LLVM-IR route as kernels/vnni.py.

    python tools/amx_probe.py        # on an Intel CPU with amx-tile and amx-int8 (Linux)

It asks the kernel for the tile state once (arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA)), emits
ldtilecfg / tilezero / tileloadd64 / tdpbusd / tilestored64 as LLVM intrinsics on fixed tile
registers (C: tmm0-3, 16 x 16 int32 each; A: tmm4, 16 rows x 64 k bytes; B: tmm5-6, 16 k-groups
x 16 columns x 4 bytes, i.e. B packed [K/4][64 columns][4] per 64-column tile, the layout
``vnni.pack_b_tile`` already makes), and checks a naive 16 x 64 blocking (A reloaded per block,
the tiles stored straight into C) against NumPy's int64 product bit for bit.

Measured on the 16-core Xeon (Emerald Rapids VM, LLVM 22 in llvmlite), one thread, exact,
three runs: 1024^3 at 494-705 GOPS and 2048^3 at 595-813, against ~345 GOPS a thread for the
VNNI path (QLMM 1024^3 at 2 threads: 3.1 ms) and fbgemm's ~570 a thread. The emulator's own
path is ``emulator/kernels/amx.py`` (QLMM, K a multiple of 64); this probe checks a machine.
"""

from __future__ import annotations

import ctypes
import time
from typing import Any

import llvmlite.binding as llb
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

I8, I64, VOID = ir.IntType(8), ir.IntType(64), ir.VoidType()
P8 = I8.as_pointer()
SYS_ARCH_PRCTL, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA = 158, 0x1023, 18


def _declare(builder: Any, name: str, args: list) -> Any:
    try:
        return builder.module.get_global(name)
    except KeyError:
        return ir.Function(builder.module, ir.FunctionType(VOID, args), name)


@intrinsic
def amx_block(typingctx, cfg, a, lda, bp, kblocks, c, ldc):  # pragma: no cover - codegen
    """C[16 x 64] int32 (rows ldc bytes apart) = A[16 x 64 kblocks] uint8 (rows lda bytes apart)
    x B int8 (one 64-column tile packed [K/4][64][4], rows of 256 bytes)."""
    sig = types.void(*[types.int64] * 7)

    def codegen(context, builder, signature, args):
        cfg_, a_, lda_, bp_, kb_, c_, ldc_ = args
        tile = _declare(builder, "llvm.x86.tileloadd64", [I8, P8, I64])
        dot = _declare(builder, "llvm.x86.tdpbusd", [I8, I8, I8])
        store = _declare(builder, "llvm.x86.tilestored64", [I8, P8, I64])
        zero = _declare(builder, "llvm.x86.tilezero", [I8])
        builder.call(_declare(builder, "llvm.x86.ldtilecfg", [P8]), [builder.inttoptr(cfg_, P8)])
        for t in range(4):
            builder.call(zero, [ir.Constant(I8, t)])
        entry = builder.block
        body = builder.append_basic_block("amx.body")
        done = builder.append_basic_block("amx.done")
        builder.cbranch(builder.icmp_signed(">", kb_, ir.Constant(I64, 0)), body, done)
        builder.position_at_end(body)
        kk = builder.phi(I64)
        kk.add_incoming(ir.Constant(I64, 0), entry)
        a_at = builder.add(a_, builder.mul(kk, ir.Constant(I64, 64)))
        builder.call(tile, [ir.Constant(I8, 4), builder.inttoptr(a_at, P8), lda_])
        b_row = builder.add(bp_, builder.mul(kk, ir.Constant(I64, 16 * 256)))
        for t in range(4):
            b_at = builder.inttoptr(builder.add(b_row, ir.Constant(I64, 64 * t)), P8)
            b_tile = ir.Constant(I8, 5 + (t & 1))
            builder.call(tile, [b_tile, b_at, ir.Constant(I64, 256)])
            builder.call(dot, [ir.Constant(I8, t), ir.Constant(I8, 4), b_tile])
        k_next = builder.add(kk, ir.Constant(I64, 1))
        kk.add_incoming(k_next, body)
        builder.cbranch(builder.icmp_signed("<", k_next, kb_), body, done)
        builder.position_at_end(done)
        for t in range(4):
            c_at = builder.inttoptr(builder.add(c_, ir.Constant(I64, 64 * t)), P8)
            builder.call(store, [ir.Constant(I8, t), c_at, ldc_])
        return context.get_dummy_value()

    return sig, codegen


@njit(nogil=True)
def gemm(cfg, a, bp, c, m, n, k):  # pragma: no cover - compiled
    """C[m x n] int32 = A[m x k] uint8 x B, every size a multiple of the tiles (16, 64, 64)."""
    for j in range(n // 64):
        for i in range(m // 16):
            amx_block(cfg.ctypes.data, a.ctypes.data + i * 16 * k, k,
                      bp.ctypes.data + j * (k // 4) * 256, k // 64,
                      c.ctypes.data + 4 * (i * 16 * n + j * 64), 4 * n)


def pack(b: np.ndarray) -> np.ndarray:
    """B [K x N] int8 -> per 64-column tile [K/4][64][4]."""
    k, n = b.shape
    return np.ascontiguousarray(b.reshape(k // 4, 4, n // 64, 64).transpose(2, 0, 3, 1)).reshape(-1)


def main() -> None:
    features = [f for f in llb.get_host_cpu_features().flatten().split(",") if "amx" in f]
    print("LLVM", llb.llvm_version_info, "AMX features:", features)
    if "+amx-int8" not in features or "+amx-tile" not in features:
        print("no AMX int8 on this CPU")
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    granted = libc.syscall(ctypes.c_long(SYS_ARCH_PRCTL), ctypes.c_long(ARCH_REQ_XCOMP_PERM),
                           ctypes.c_long(XFEATURE_XTILEDATA))
    print("arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA):", granted, ctypes.get_errno())
    cfg = np.zeros(64, np.uint8)  # palette 1; tiles 0-6: 16 rows of 64 bytes
    cfg[0] = 1
    cfg[16:48].view(np.uint16)[:7] = 64
    cfg[48:55] = 16
    rng = np.random.default_rng(0)
    for m, n, k in [(16, 64, 64), (64, 128, 256), (1024, 1024, 1024), (2048, 2048, 2048)]:
        a = rng.integers(0, 256, (m, k), dtype=np.uint8)
        b = rng.integers(-128, 128, (k, n), dtype=np.int8)
        bp = pack(b)
        c = np.zeros(m * n, np.int32)
        gemm(cfg, a.reshape(-1), bp, c, m, n, k)
        exact = np.array_equal(c.reshape(m, n), a.astype(np.int64) @ b.astype(np.int64))
        start, calls = time.perf_counter(), 0
        while time.perf_counter() - start < 0.5:
            gemm(cfg, a.reshape(-1), bp, c, m, n, k)
            calls += 1
        dt = (time.perf_counter() - start) / calls
        print(f"{m} x {n} x {k}: {'exact' if exact else 'WRONG'}, {dt * 1e6:.1f} us, "
              f"{2 * m * n * k / dt / 1e9:.0f} GOPS (one thread)")


if __name__ == "__main__":
    main()
