"""The recurrent rows' kernel (``recurrent.py``): the whole loop of one direction of an RNN,
LSTM or GRU (``mode``) in one launch that calls one serial, C-callable task kernel by address
(``task_address``; compiled once, not again inside each parallel loop): ``loop``, one job on the
worker pool (``kernels/pool.py``) whose parts each own a fixed range of tasks for the whole
loop and meet at a barrier after every phase (``pool.barrier``), or, where the pool is not
available, ``run``, a ``prange`` launch per step and phase.

**Tasks of hidden units.** The hidden units are cut into tasks of ``blk`` units
(``recurrent.block``: about 16 tasks, a function of the shape only). A task owns, for every
gate, the columns of its units: its own packed blocks of Wᵀ and Rᵀ (a few hundred KB, which stay
in its core's cache from step to step) and its own part of the gates. The driver runs, side by
side over Numba's threads: the input projection (per task one single-threaded CBLAS ``sgemm``
X·Wᵀ of its columns for every step), then per step one phase (GRU without LinearBeforeReset:
two, since (r⊙H)·Rhᵀ needs every unit's r) in which each task computes its product H·Rᵀ (one
single-threaded ``sgemm`` by address through ``compute/kernels.py``'s intrinsic, the arrays
themselves as arguments) and then the gate math of its units for every live batch row, in
FLOAT32 loops that vectorise (unsigned indices): the input projection and the biases added, the
peepholes, LSTM's clip, the activations, the state update. H is double-buffered (``h2``: the
state read at a step and the one written, since every task's product reads all of H); C and the
outputs are written by the task that owns the units.

Why not the BLAS's own threads around a serial kernel (measured, docs/decisions.md): a product
threaded by OpenBLAS synchronises its threads at every step and gave other bytes at 1 and 2
threads (OpenBLAS 0.3.31); here every product is one single-threaded call whose operands do not
depend on the thread count, so the bytes do not either, and the only synchronisation per step
is the end of the parallel loop.

Activations: SIGMOID as 1 / (1 + exp(-x)) in FLOAT32 with ``vmath.exp32`` (a few ULP), TANH by
``vmath.tanh32`` (within 1 ULP), ELEMENT_WISE_CLIP with Direct3D's max/min (all three in
``_activate32``, a C-callable kernel called by address), IDENTITY as nothing; every other one
through the shared activation kernel (``strided.activation_address``) on a float64 copy of the
row's gate, so each formula is written once (``kernels/activation.py``).

Gate order: LSTM i, o, f, c; GRU z, r, h (the pages'). Layouts below, at the task kernel.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import carray, types
from numba.extending import intrinsic

from ..kernels.blas_calls import address, sgemm32, sgemm64
from ..kernels.jit import c_kernel, helper, kernel, prange
from ..kernels.pool import barrier
from ..kernels.sgemm import sgemm as small_sgemm
from ..kernels.strided import call_activation, data_pointer, int64_pointer
from ..kernels.vmath import exp32, tanh32

RNN, GRU, LSTM = 0, 1, 2  # modes
IDENTITY, SIGMOID, TANH = 0, 2, 4  # activation kinds (numbered as in emulator.activations)
CLIP = 100  # ELEMENT_WISE_CLIP (not in the activation table): p0 = Min, p1 = Max
_ONE = np.float32(1.0)


@helper
def _product(gemm, wide, m, n, k, a, lda, b, ldb, c, c_at, ldc):  # pragma: no cover
    """c[.., c_at bytes on] = a·b (row-major, FLOAT32): the BLAS at address ``gemm``, or with
    ``gemm`` 0 the small-shape kernel ``kernels/sgemm.py``."""
    if gemm == 0:
        small_sgemm(m, n, k, address(a), lda, address(b), ldb, address(c) + c_at, ldc)
    elif wide:
        sgemm64(gemm, m, n, k, a, 0, lda, b, ldb, np.float32(0.0), c, c_at, ldc)
    else:
        sgemm32(gemm, m, n, k, a, 0, lda, b, ldb, np.float32(0.0), c, c_at, ldc)


def _activate32(bufp, n, kind, p0, p1):  # pragma: no cover - compiled
    """The FLOAT32 activations (C-callable, ``activation32_address``): buf[:n] = f(buf[:n])
    for SIGMOID, TANH or CLIP, one vectorised loop each."""
    buf = carray(bufp, (n,))
    if kind == SIGMOID:
        for j in range(np.uint64(n)):
            buf[j] = _ONE / (_ONE + exp32(-buf[j]))
    elif kind == TANH:
        for j in range(np.uint64(n)):
            buf[j] = tanh32(buf[j])
    elif kind == CLIP:  # min(Max, max(Min, x)), Direct3D's: a NaN operand gives the other
        lo, hi = np.float32(p0), np.float32(p1)
        for j in range(np.uint64(n)):
            v = buf[j]
            m = lo if (lo >= v or v != v) else v
            buf[j] = hi if (hi < m or m != m) else m


@helper
def _activate(kind, p0, p1, buf, start, n, wbuf, fn, fn32):  # pragma: no cover
    """buf[start:start + n] = f(buf[start:start + n]) for activation ``kind``: through the
    FLOAT32 kernel at ``fn32`` (SIGMOID, TANH, CLIP), or on a float64 copy through the shared
    activation kernel at ``fn``. (Calls by address: the loops are compiled once, not at every
    call site.)"""
    if kind == IDENTITY:
        return
    s = np.int64(start)
    if kind in (SIGMOID, TANH, CLIP):
        call_activation(fn32, buf[s:s + n], n, kind, p0, p1)
        return
    u = np.uint64(s)
    for j in range(np.uint64(n)):
        wbuf[j] = np.float64(buf[u + j])
    call_activation(fn, wbuf, n, kind, p0, p1)
    for j in range(np.uint64(n)):
        buf[u + j] = np.float32(wbuf[j])


@helper
def _clip(buf, start, n, bound):  # pragma: no cover
    """Clamp buf[start:start + n] to [-bound, bound]; NaN stays NaN."""
    s = np.uint64(start)
    hi = np.float32(bound)
    lo = -hi
    for j in range(np.uint64(n)):
        v = buf[s + j]
        v = hi if v > hi else v
        buf[s + j] = lo if v < lo else v


@helper
def _add_input(gates, row, xw, xrow, bias, n):  # pragma: no cover
    """gates[row:row + n] += xw[xrow:xrow + n] + bias[:n]."""
    for j in range(np.uint64(n)):
        gates[row + j] += xw[xrow + j] + bias[j]


@helper
def _gru_state(gates, rz, rh, h, h_next, ys, hrow, yrow, n):  # pragma: no cover
    """GRU's new state from its gates: H' = (1 - z) * h~ + z * H, into the next state and the
    output sequence (both forms, after h~ is activated)."""
    for j in range(n):
        z = gates[rz + j]
        v = (_ONE - z) * gates[rh + j] + z * h[hrow + j]
        h_next[hrow + j] = v
        ys[yrow + j] = v


# -- the loop as tasks of hidden units ---------------------------------------------------------
# Packed layouts (``_pack``, in the first phase): a task owns ``blk`` hidden units u0 … u0 + blk - 1
# (the last task's units past hidden are zero padding) and, for each gate k, the columns
# k·blk + j of its own matrices: ``wt`` [tasks, inputs, G·blk] (Wᵀ), ``rt`` [tasks, hidden,
# G·blk] (Rᵀ), ``rth`` [tasks, hidden, blk] (Rhᵀ, GRU without LinearBeforeReset), ``bp``
# [tasks, G·blk] (the W and R biases added; GRU's LinearBeforeReset: the h part only W's, R's in
# ``rbh`` [hidden]), ``xw`` [tasks, seq·batch, G·blk] and
# ``gates`` [tasks, batch, G·blk] scratch, ``tmp`` [tasks, blk] float32 and ``wbuf`` [tasks,
# 2·blk] float64 scratch. ``h2`` [2, batch, hidden]: the state read at a step and the one
# written (a task's product reads every unit of H while other tasks write theirs); ``c``
# [batch, hidden] the cell state, ``rec`` [batch, hidden] (r⊙H), ``x`` [seq·batch, inputs],
# ``ys`` [seq, batch, hidden] (each live row's H at its time index; others untouched).


@helper
def _pack(task, src, dst, g, hs, kk, blk):  # pragma: no cover
    """dst[task] [kk, g·blk] from src [g·hs, kk] (dense): column k·blk + j is src's row
    k·hs + u0 + j, zero past hidden."""
    gb = g * blk
    base = task * kk * gb
    for k in range(g):
        for j in range(blk):
            u = task * blk + j
            col = base + k * blk + j
            if u < hs:
                row = (k * hs + u) * kk
                for q in range(kk):
                    dst[col + q * gb] = src[row + q]
            else:
                for q in range(kk):
                    dst[col + q * gb] = np.float32(0.0)


@helper
def _project(task, x, wt, xw, rows, inputs, gb, gemm, wide):  # pragma: no cover
    """xw[task] = X·Wᵀ[task] (every step's input projection of the task's columns)."""
    _product(gemm, wide, rows, gb, inputs, x, inputs,
             wt[task * inputs * gb:(task + 1) * inputs * gb], gb,
             xw[task * rows * gb:(task + 1) * rows * gb], 0, gb)


@helper
def _task_step(task, s, phase, mode, backward, blk, hc, hn, c, xw, bp, rt, rth, rbh, lens,
               peep, kinds, params, clip, use_clip, couple, lbr, ys, gates, rec, tmp, wbuf,
               gemm, wide, fn, fn32):  # pragma: no cover
    """One step of one task: phase 0 its product H·Rᵀ (GRU without LinearBeforeReset: of z and
    r only) and gate math, phase 1 (that GRU only) the product (r⊙H)·Rhᵀ and the rest."""
    batch = lens.size
    hs = c.size // batch
    g = 1 if mode == RNN else (3 if mode == GRU else 4)
    gb = g * blk
    seq_rows = xw.size // (((hs + blk - 1) // blk) * gb)
    u0 = task * blk
    width = min(blk, hs - u0)
    ub, uw = np.uint64(blk), np.uint64(width)
    ub2 = ub + ub
    ub3 = ub2 + ub
    gt = gates[task * batch * gb:(task + 1) * batch * gb]
    xt = xw[task * seq_rows * gb:(task + 1) * seq_rows * gb]
    bt = bp[task * gb:(task + 1) * gb]
    tt = tmp[task * blk:(task + 1) * blk]
    wt = wbuf[task * 2 * blk:(task + 1) * 2 * blk]
    kf, kg, kh = kinds[0], kinds[1], kinds[2]
    f0, f1, g0, g1, h0, h1 = params[0], params[1], params[2], params[3], params[4], params[5]
    hu = np.uint64(u0)
    if phase == 0:
        first = 2 * blk if (mode == GRU and not lbr) else gb
        _product(gemm, wide, batch, first, hs, hc, hs, rt[task * hs * gb:(task + 1) * hs * gb],
                 gb, gt, 0, gb)
    else:
        _product(gemm, wide, batch, blk, hs, rec, hs,
                 rth[task * hs * blk:(task + 1) * hs * blk], blk, gt, 2 * blk * 4, gb)
    for n in range(batch):
        hrow = np.uint64(n * hs) + hu  # the task's units of row n of H, C, rec
        if lens[n] <= s:  # the sequence has ended: the state is kept
            for j in range(uw):
                hn[hrow + j] = hc[hrow + j]
            continue
        t = lens[n] - 1 - s if backward else s
        row = np.uint64(n * gb)
        xrow = np.uint64((t * batch + n) * gb)
        yrow = np.uint64((t * batch + n) * hs) + hu
        if phase == 1:  # GRU without LinearBeforeReset: h, then the state
            rz, rh = row, row + ub2
            for j in range(uw):
                gt[rh + j] += xt[xrow + ub2 + j] + bt[ub2 + j]
            _activate(kg, g0, g1, gt, rh, width, wt, fn, fn32)
            _gru_state(gt, rz, rh, hc, hn, ys, hrow, yrow, uw)
            continue
        if mode == RNN:
            _add_input(gt, row, xt, xrow, bt, width)
            _activate(kf, f0, f1, gt, row, width, wt, fn, fn32)
            for j in range(uw):
                v = gt[row + j]
                hn[hrow + j] = v
                ys[yrow + j] = v
        elif mode == LSTM:  # gates i, o, f, c
            ri, ro, rf, rc = row, row + ub, row + ub2, row + ub3
            for k in range(4):
                o = np.uint64(k * blk)
                _add_input(gt, row + o, xt, xrow + o, bt[k * blk:], width)
            if peep.size > 0:
                for j in range(uw):
                    gt[ri + j] += peep[hu + j] * c[hrow + j]
                for j in range(uw):
                    gt[rf + j] += peep[np.uint64(2 * hs) + hu + j] * c[hrow + j]
            if use_clip:
                _clip(gt, ri, width, clip)
                _clip(gt, rf, width, clip)
                _clip(gt, rc, width, clip)
            _activate(kf, f0, f1, gt, ri, width, wt, fn, fn32)
            if couple:
                for j in range(uw):
                    gt[rf + j] = _ONE - gt[ri + j]
            else:
                _activate(kf, f0, f1, gt, rf, width, wt, fn, fn32)
            _activate(kg, g0, g1, gt, rc, width, wt, fn, fn32)
            for j in range(uw):  # the new cell state
                c[hrow + j] = gt[rf + j] * c[hrow + j] + gt[ri + j] * gt[rc + j]
            if peep.size > 0:
                for j in range(uw):
                    gt[ro + j] += peep[np.uint64(hs) + hu + j] * c[hrow + j]
            if use_clip:
                _clip(gt, ro, width, clip)
            _activate(kf, f0, f1, gt, ro, width, wt, fn, fn32)
            for j in range(uw):
                tt[j] = c[hrow + j]
            if use_clip:
                _clip(tt, np.uint64(0), width, clip)
            _activate(kh, h0, h1, tt, np.uint64(0), width, wt, fn, fn32)
            for j in range(uw):
                v = gt[ro + j] * tt[j]
                hn[hrow + j] = v
                ys[yrow + j] = v
        else:  # GRU, gates z, r, h
            rz, rr, rh = row, row + ub, row + ub2
            _add_input(gt, rz, xt, xrow, bt, width)
            _add_input(gt, rr, xt, xrow + ub, bt[blk:], width)
            _activate(kf, f0, f1, gt, rz, width, wt, fn, fn32)
            _activate(kf, f0, f1, gt, rr, width, wt, fn, fn32)
            if lbr:
                for j in range(uw):
                    gt[rh + j] = (xt[xrow + ub2 + j] + bt[ub2 + j]) + \
                        gt[rr + j] * (gt[rh + j] + rbh[hu + j])
                _activate(kg, g0, g1, gt, rh, width, wt, fn, fn32)
                _gru_state(gt, rz, rh, hc, hn, ys, hrow, yrow, uw)
            else:
                for j in range(uw):
                    rec[hrow + j] = gt[rr + j] * hc[hrow + j]


@helper
def _sizes(ints):  # pragma: no cover
    """mode, G, blk, tasks, batch, hidden, seq, inputs from ``ints``."""
    mode, blk, batch, hs, seq, inputs = ints[0], ints[2], ints[3], ints[4], ints[5], ints[6]
    g = 1 if mode == RNN else (3 if mode == GRU else 4)
    return mode, g, blk, (hs + blk - 1) // blk, batch, hs, seq, inputs


def _entry(task, s, phase, xp, wtp, bpp, rtp, rthp, rbhp, h2p, cp, peepp, ysp, xwp, gatesp,
           recp, tmpp, wp, rdp, wbufp, lensp, ip, rp):  # pragma: no cover - compiled
    """The task kernel (C-callable): phase 0 and 1 of step ``s`` (``_task_step``), or 2: the
    input projection. ``ints`` (INTS): mode, backward, blk, batch, hidden, seq, inputs,
    use_clip, couple, lbr, has_peep, gemm, wide, fn, fn32, the three activation kinds, and
    whether the steps' products take the small-shape kernel (``kernels/sgemm.py``);
    ``reals``: clip, then the activations' (p0, p1) each."""
    ints = carray(ip, (INTS,))
    reals = carray(rp, (7,))
    mode, g, blk, count, batch, hs, seq, inputs = _sizes(ints)
    gb = g * blk
    rows = seq * batch
    lbr = ints[9]
    gemm, wide = ints[11], ints[12]
    x = carray(xp, (rows * inputs,))
    xw = carray(xwp, (count * rows * gb,))
    n_rth = count * hs * blk if (mode == GRU and lbr == 0) else 0
    rth = carray(rthp, (n_rth,))
    rt = carray(rtp, (count * hs * gb,))
    if phase == 2:  # the task's packed blocks of Wᵀ, Rᵀ (and Rhᵀ), then its projection
        wt = carray(wtp, (count * inputs * gb,))
        rd = carray(rdp, (g * hs * hs,))
        _pack(task, carray(wp, (g * hs * inputs,)), wt, g, hs, inputs, blk)
        _pack(task, rd, rt, g, hs, hs, blk)
        if n_rth:
            _pack(task, rd[2 * hs * hs:], rth, 1, hs, hs, blk)
        _project(task, x, wt, xw, rows, inputs, gb, gemm, wide)
        return
    size = batch * hs
    h2 = carray(h2p, (2 * size,))
    cur = s & 1  # the step's H is h2[cur], the next one h2[1 - cur]
    hc = h2[cur * size:(cur + 1) * size]
    hn = h2[(1 - cur) * size:(2 - cur) * size]
    n_rbh = hs if lbr else 0
    n_peep = 3 * hs if ints[10] else 0
    rbh = carray(rbhp, (n_rbh,))
    peep = carray(peepp, (n_peep,))
    c = carray(cp, (size,))
    bp = carray(bpp, (count * gb,))
    lens = carray(lensp, (batch,))
    ys = carray(ysp, (rows * hs,))
    gates = carray(gatesp, (count * batch * gb,))
    rec = carray(recp, (size,))
    tmp = carray(tmpp, (count * blk,))
    wbuf = carray(wbufp, (count * 2 * blk,))
    kinds = ints[15:18]
    params = reals[1:7]
    step_gemm = 0 if ints[18] != 0 else gemm  # 0: the small-shape kernel
    _task_step(task, s, phase, mode, ints[1], blk, hc, hn, c, xw, bp, rt, rth, rbh, lens, peep,
               kinds, params, reals[0], ints[7], ints[8], lbr, ys, gates, rec, tmp, wbuf,
               step_gemm, wide, ints[13], ints[14])


INTS = 19
_F32P, _F64P, _I64P = (types.CPointer(t) for t in (types.float32, types.float64, types.int64))
_TASK_SIG = types.void(types.int64, types.int64, types.int64, *([_F32P] * 16), _F64P, _I64P,
                       _I64P, _F64P)
_TASK_FN = ir.FunctionType(ir.VoidType(),
                           [ir.IntType(64)] * 3 + [ir.IntType(8).as_pointer()] * 20)
_compiled: list[object] = []


def task_address() -> int:
    """The address of the task kernel, compiled (or loaded from the disk cache) on first use."""
    if not _compiled:
        _compiled.append(c_kernel(_TASK_SIG)(_entry))
    return int(_compiled[0].address)  # type: ignore[attr-defined]


_compiled32: list[object] = []


def activation32_address() -> int:
    """The address of the FLOAT32 activation kernel (``_activate32``), compiled on first use."""
    if not _compiled32:
        _compiled32.append(c_kernel(types.void(_F32P, types.int64, types.int64, types.float64,
                                               types.float64))(_activate32))
    return int(_compiled32[0].address)  # type: ignore[attr-defined]


@intrinsic
def _call(typingctx, fn, task, s, phase, pointers):  # pragma: no cover - code generation
    """Call the task kernel at ``fn`` with the 20 data pointers of the tuple ``pointers``."""
    sig = types.void(types.int64, types.int64, types.int64, types.int64, pointers)

    def codegen(context, builder, sig, args):
        fn, task, s, phase, tup = args
        ptrs = [builder.extract_value(tup, i) for i in range(20)]
        builder.call(builder.inttoptr(fn, _TASK_FN.as_pointer()), [task, s, phase, *ptrs])
        return context.get_dummy_value()

    return sig, codegen


# The pool's job (``loop``): its block after the pool's four address slots: the task kernel,
# the task count, the steps, the phases a step, the barrier's arrivals, then the 20 arrays'
# addresses in ``_entry``'s order.
LOOP_FN, LOOP_COUNT, LOOP_LONGEST, LOOP_PHASES, ARRIVED, POINTERS = 4, 5, 6, 7, 8, 9
LOOP_BLOCK = POINTERS + 20


@intrinsic
def _call_at(typingctx, fn, task, s, phase, block):  # pragma: no cover - code generation
    """Call the task kernel at ``fn`` with the 20 data addresses at ``block[POINTERS:]``
    (``block``: the int64 block's address)."""
    sig = types.void(types.int64, types.int64, types.int64, types.int64, types.int64)

    def codegen(context, builder, sig, args):
        fn, task, s, phase, block = args
        slots = builder.inttoptr(block, ir.IntType(64).as_pointer())
        ptrs = [builder.inttoptr(builder.load(builder.gep(slots, [ir.Constant(
            ir.IntType(64), POINTERS + i)])), ir.IntType(8).as_pointer()) for i in range(20)]
        builder.call(builder.inttoptr(fn, _TASK_FN.as_pointer()), [task, s, phase, *ptrs])
        return context.get_dummy_value()

    return sig, codegen


def loop(block, part, parts):  # pragma: no cover - compiled
    """The whole loop of one direction as one job on the worker pool: part p owns the tasks
    [count p / parts, count (p + 1) / parts) from the packing to the last step (their packed
    blocks stay in its core's cache), and the parts meet at a barrier after each phase instead
    of one parallel launch per step and phase (``run``)."""
    b = carray(int64_pointer(block), LOOP_BLOCK)
    fn, count = b[LOOP_FN], b[LOOP_COUNT]
    first, end = count * part // parts, count * (part + 1) // parts
    for task in range(first, end):
        _call_at(fn, task, 0, 2, block)
    k = 1
    barrier(b, ARRIVED, parts, k)
    for s in range(b[LOOP_LONGEST]):
        for phase in range(b[LOOP_PHASES]):
            for task in range(first, end):
                _call_at(fn, task, s, phase, block)
            k += 1
            barrier(b, ARRIVED, parts, k)


@kernel
def run(fn, count, longest, phases, x, wt, bp, rt, rth, rbh, h2, c, peep, ys, xw, gates, rec,
        tmp, w, r, wbuf, lens, ints, reals):  # pragma: no cover
    """One direction: the packing of W [G·hidden, inputs] and R [G·hidden, hidden] (dense) into
    the tasks' blocks and the input projection, then ``longest`` steps of ``phases`` phases,
    each phase ``count`` tasks of the task kernel at ``fn`` (``task_address``) side by side.
    The last H is in h2's half ``longest % 2``."""
    p = (data_pointer(x), data_pointer(wt), data_pointer(bp), data_pointer(rt),
         data_pointer(rth), data_pointer(rbh), data_pointer(h2), data_pointer(c),
         data_pointer(peep), data_pointer(ys), data_pointer(xw), data_pointer(gates),
         data_pointer(rec), data_pointer(tmp), data_pointer(w), data_pointer(r),
         data_pointer(wbuf), data_pointer(lens), data_pointer(ints), data_pointer(reals))
    for task in prange(count):
        _call(fn, task, 0, 2, p)
    for s in range(longest):
        for phase in range(phases):
            for task in prange(count):
                _call(fn, task, s, phase, p)
