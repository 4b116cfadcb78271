"""A persistent pool of worker threads for short launches that come back to back.

Why not Numba's ``prange``: the emulator runs on Numba's TBB layer (fork-safe, see
docs/decisions.md "Threading layer"), and Numba's TBB ``parallel_for`` builds a new task arena
for every launch. The workers join it late and the calling thread does most of a short launch
alone. Measured on the 16-core Xeon (a spike: 50 ADDs of [1024,1024] float32 back to back, the
arrays resident in L2): 100-113 us a launch under TBB, 33 us under OpenMP (not
fork-safe: libgomp kills a forked child), 26 us on this pool.

The pool:
- ``size - 1`` worker threads (plain Python threads, each inside one ``nogil`` Numba loop for its
  whole life) plus the calling thread, which does part 0 itself. ``size`` is Numba's thread
  count when the pool starts; a launch uses ``numba.get_num_threads()`` of them, so
  ``numba.set_num_threads`` is honoured.
- A launch is a *job*: the address of a C function ``void job(int64 block, int64 part, int64
  parts)`` and an int64 argument block. Thread ``t`` always runs part ``t``, so a tensor's same
  part stays on the same core from one launch to the next (its cache stays warm).
- The control word packs the generation and the part count in one atomic int64, so a worker
  never reads a part count of one launch with the job of another; the caller spins on the parts
  done, then yields its core (more threads than cores: a worker needs it). A worker spins on it (x86
  ``pause``) for about ``SPIN_CYCLES`` and then sleeps on a futex; a launch wakes sleepers.
- Fork: threads do not survive ``fork()``; the child starts its own pool at its first launch.
- Linux x86-64 only (futex, ``pause``); elsewhere ``available()`` is False and callers use their
  ``prange`` kernels. ``python tools/ab_levers.py pool`` measures the two side by side.
"""

from __future__ import annotations

import atexit
import functools
import os
import platform
import sys
import threading
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .jit import c_kernel, helper

# The control block (int64): the word (parts << 32 | generation), the job, its argument block,
# the parts done, the sleeping workers, the stop flag. The futex compares the word's low 32 bits,
# the generation alone: a sleeper's stale value can match only after 2**32 launches.
WORD, JOB, BLOCK, DONE, SLEEPERS, STOP = range(6)
SPIN_CYCLES = 1 << 18  # ~100 us at 2.5 GHz of spinning before a worker sleeps
_SYS_FUTEX = 202  # x86-64
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE = 128, 129

_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_JOB_FN = ir.FunctionType(ir.VoidType(), [_I64, _I64, _I64])


def _slot(context, builder, aryty, ary, idx):
    return builder.gep(context.make_array(aryty)(context, builder, ary).data, [idx])


@intrinsic
def _load(typingctx, arr, idx):  # pragma: no cover - code generation
    def codegen(context, builder, sig, args):
        return builder.load_atomic(_slot(context, builder, sig.args[0], *args), "seq_cst", 8)
    return types.int64(arr, idx), codegen


@intrinsic
def _store(typingctx, arr, idx, val):  # pragma: no cover - code generation
    def codegen(context, builder, sig, args):
        builder.store_atomic(args[2], _slot(context, builder, sig.args[0], *args[:2]), "seq_cst",
                             8)
        return context.get_dummy_value()
    return types.void(arr, idx, val), codegen


@intrinsic
def _add(typingctx, arr, idx, val):  # pragma: no cover - code generation
    def codegen(context, builder, sig, args):
        return builder.atomic_rmw("add", _slot(context, builder, sig.args[0], *args[:2]), args[2],
                                  "seq_cst")
    return types.int64(arr, idx, val), codegen


fetch_add = _add  # (array, slot, value) -> the slot's value before the atomic add


@intrinsic
def _pause(typingctx):  # pragma: no cover - code generation
    def codegen(context, builder, sig, args):
        fn = builder.module.declare_intrinsic("llvm.x86.sse2.pause",
                                              fnty=ir.FunctionType(ir.VoidType(), []))
        builder.call(fn, [])
        return context.get_dummy_value()
    return types.void(), codegen


@intrinsic
def _cycles(typingctx):  # pragma: no cover - code generation
    def codegen(context, builder, sig, args):
        fn = builder.module.declare_intrinsic("llvm.readcyclecounter", fnty=ir.FunctionType(_I64,
                                                                                            []))
        return builder.call(fn, [])
    return types.int64(), codegen


@intrinsic
def _futex(typingctx, arr, idx, op, val):  # pragma: no cover - code generation
    """``syscall(SYS_futex, &low 32 bits of arr[idx], op, val, NULL, NULL, 0)``, every argument
    passed as a full 64-bit register (the kernel reads the low 32 bits of op and val)."""
    def codegen(context, builder, sig, args):
        fnty = ir.FunctionType(_I64, [_I64], var_arg=True)
        fn = cgutils.get_or_insert_function(builder.module, fnty, "syscall")
        addr = builder.bitcast(_slot(context, builder, sig.args[0], *args[:2]), _I32.as_pointer())
        null = ir.Constant(_I64, 0)
        builder.call(fn, [ir.Constant(_I64, _SYS_FUTEX), builder.ptrtoint(addr, _I64),
                          args[2], args[3], null, null, null])
        return context.get_dummy_value()
    return types.void(arr, idx, types.int64, types.int64), codegen


@intrinsic
def _yield(typingctx):  # pragma: no cover - code generation
    """``sched_yield()``: give the core to a thread that has work (more threads than cores)."""
    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_I32, []),
                                            "sched_yield")
        builder.call(fn, [])
        return context.get_dummy_value()
    return types.void(), codegen


@intrinsic
def _call(typingctx, fn, block, part, parts):  # pragma: no cover - code generation
    def codegen(context, builder, sig, args):
        builder.call(builder.inttoptr(args[0], _JOB_FN.as_pointer()), list(args[1:]))
        return context.get_dummy_value()
    return types.void(types.int64, types.int64, types.int64, types.int64), codegen


@intrinsic
def address(typingctx, arr):  # pragma: no cover - code generation
    """The data address of an array, as an int64."""
    def codegen(context, builder, sig, args):
        return builder.ptrtoint(context.make_array(sig.args[0])(context, builder, args[0]).data,
                                _I64)
    return types.int64(arr), codegen


@helper
def barrier(arr, slot, parts, k):  # pragma: no cover - compiled
    """In a job of ``parts`` parts: wait until every part has arrived at the job's k-th barrier
    (k = 1, 2, ...); ``arr[slot]`` counts the arrivals (0 when the launch starts). Every part
    runs on a thread of its own, so all of them arrive; the atomics order each part's writes
    before the barrier against every part's reads after it."""
    _add(arr, slot, 1)
    target = parts * k
    start = _cycles()
    while _load(arr, slot) < target:
        if _cycles() - start < SPIN_CYCLES:
            _pause()
        else:  # more threads than cores: let the one that has not arrived run
            _yield()


@helper
def _worker(ctl, tid):  # pragma: no cover - compiled
    """Worker ``tid``'s life: wait for a new word, run part ``tid`` if the launch has that many
    parts, count it done; return when the stop flag is set."""
    seen = 0  # the word a new pool starts with (not read here: a launch may come first)
    while True:
        start = _cycles()
        while _load(ctl, WORD) == seen:
            if _cycles() - start < SPIN_CYCLES:
                _pause()
                continue
            _add(ctl, SLEEPERS, 1)
            if _load(ctl, WORD) == seen:  # a launch after this check changes the futex word
                _futex(ctl, WORD, _FUTEX_WAIT_PRIVATE, seen & 0xFFFFFFFF)
            _add(ctl, SLEEPERS, -1)
            start = _cycles()
        seen = _load(ctl, WORD)
        if _load(ctl, STOP) != 0:
            return
        parts = seen >> 32
        if tid < parts:  # the job and block stay as they are until this part is counted
            _call(_load(ctl, JOB), _load(ctl, BLOCK), tid, parts)
            _add(ctl, DONE, 1)


@helper
def _launch(ctl, job, block, parts, most, x, y, w, z):  # pragma: no cover - compiled
    """Run ``job`` on ``parts`` threads (this one included; at most ``most``) and wait for all of
    them. The data addresses of ``x, y, w, z`` go into ``block[0:4]`` first."""
    parts = max(min(parts, most), 1)
    block[0] = address(x)
    block[1] = address(y)
    block[2] = address(w)
    block[3] = address(z)
    at = address(block)
    if parts > 1:
        _store(ctl, JOB, job)
        _store(ctl, BLOCK, at)
        _store(ctl, DONE, 0)
        _store(ctl, WORD, parts << 32 | ((_load(ctl, WORD) + 1) & 0xFFFFFFFF))
        if _load(ctl, SLEEPERS) > 0:
            _futex(ctl, WORD, _FUTEX_WAKE_PRIVATE, 0x7FFFFFFF)
    _call(job, at, 0, parts)
    if parts > 1:
        start = _cycles()
        while _load(ctl, DONE) != parts - 1:
            if _cycles() - start < SPIN_CYCLES:
                _pause()
            else:  # a worker is waiting for a core (more threads than cores): let it have this one
                _yield()


@helper
def _stop(ctl):  # pragma: no cover - compiled
    """Set the stop flag and wake every worker (each then returns)."""
    _store(ctl, STOP, 1)
    _store(ctl, WORD, (_load(ctl, WORD) + 1) & 0xFFFFFFFF)
    _futex(ctl, WORD, _FUTEX_WAKE_PRIVATE, 0x7FFFFFFF)


class Pool:
    """The worker threads and their control block (one per process)."""

    def __init__(self, size: int) -> None:
        self.size = max(size, 1)
        self.ctl = np.zeros(8, np.int64)
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=_worker, args=(self.ctl, t), daemon=True,
                                         name=f"dml-emulator-{t}")
                        for t in range(1, self.size)]
        for t in self.threads:
            t.start()

    def run(self, job: int, block: np.ndarray, parts: int, *arrays: np.ndarray,
            most: int | None = None) -> None:
        """Run ``job`` in ``parts`` parts (at most the pool's size and ``most``)."""
        with self.lock:
            _launch(self.ctl, job, block, parts, min(self.size, most or self.size), *arrays)

    def stop(self) -> None:
        """Stop the workers; later launches (an atexit handler registered before this one's)
        run on the calling thread alone."""
        with self.lock:
            _stop(self.ctl)
            self.size = 1
        for t in self.threads:
            t.join(timeout=1.0)


ENABLED: bool | None = None  # None: where the platform allows it (tests force either path)
_pool: Pool | None = None
_start = threading.Lock()


@functools.cache
def _platform() -> bool:
    return (sys.platform == "linux" and platform.machine() in ("x86_64", "AMD64")
            and os.environ.get("DML_EMULATOR_POOL", "1") != "0")


def available() -> bool:
    """Whether launches go to the pool (Linux x86-64, unless ``ENABLED`` says otherwise or
    ``DML_EMULATOR_POOL=0``)."""
    return _platform() if ENABLED is None else ENABLED


def pool() -> Pool:
    """This process's pool, started at the first call (and again in a forked child)."""
    global _pool
    if _pool is None:
        with _start:
            if _pool is None:
                _pool = Pool(int(vars(numba.config)["NUMBA_NUM_THREADS"]))
    return _pool


@functools.cache
def job(py_func: Any) -> int:
    """The address of ``py_func(block, part, parts)`` compiled as a job (C-callable, all int64;
    compiled on first use, cached on disk)."""
    return int(c_kernel(types.void(types.int64, types.int64, types.int64))(py_func).address)


def run(job: int, block: Any, parts: int, *arrays: Any) -> None:
    """Run ``job(block, part, parts)`` for every part on the pool, on at most Numba's thread count
    (``numba.set_num_threads``) of parts; ``arrays`` (four 1-D uint8 arrays) give ``block[0:4]``
    their data addresses."""
    (_pool or pool()).run(job, block, parts, *arrays, most=numba.get_num_threads())


def _forget() -> None:
    """In a forked child: the workers did not come along; the next launch starts new ones."""
    global _pool, _start
    _pool = None
    _start = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget)


@atexit.register
def _shutdown() -> None:
    if _pool is not None:
        _pool.stop()
