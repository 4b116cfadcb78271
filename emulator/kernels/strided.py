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

import numba
import numpy as np
from llvmlite import ir
from numba import carray, types
from numba.extending import intrinsic

from . import pool
from .activation import activate
from .jit import c_kernel, inline, kernel, prange
from .stream import store_fence, stream_copy

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


# The argument block of a launch (int64): the four data addresses (written at launch), the
# chunk kernel, the rank, kind, aux, p0 … p5 (float64 bits), the parts to cut it into (one per
# MIN_PART elements, at most the threads there are), the output element's bytes if it may be
# streamed (else 0) and from how many threads it is, the tiling (below: the dimension, or -1,
# the tile's two lengths and the output element's bytes), then sizes, x, y, w and z strides
# (``rank`` each). One format for the pool's job and the ``prange`` driver.
ADDRESSES, FN, RANK, KIND, AUX, PARAMS, PARTS, WIDTH, STREAM_FROM = 0, 4, 5, 6, 7, 8, 14, 15, 16
TILE, TILE_I, TILE_J, OUT_BYTES, HEAD = 17, 18, 19, 20, 21
MIN_PART = 8192  # elements: smaller launches use fewer threads (waking one costs ~5 us)
# An output of at least STREAM_BYTES with a unit innermost stride is written through a small
# buffer (STREAM_RUN elements, in L1) and streamed out with non-temporal stores: it cannot stay
# cached anyway, and ordinary stores would first read every output line (a quarter of ADD's
# traffic). The same threshold as the movement family's (kernels/stream.py).
# Measured A/B in one process (Xeon, 16M elements, streamed vs cached stores, ms at 2 / 4 / 8 /
# 16 threads): ADD f32 7.10/7.85, 2.82/3.30, 2.10/2.56, 1.13/1.30 (streaming wins everywhere);
# CAST f32 -> f16 3.26/2.70, 1.60/1.37, 1.02/1.15, 0.65/0.66 and GREATER f32 -> u8 4.33/3.92,
# 1.96/1.84, 1.58/1.66, 0.91/0.91: a narrow output is a small part of the traffic, and below 8
# threads the extra pass through the buffer costs more than the saved reads. So outputs of 4 or
# more bytes stream from one thread, narrower ones from STREAM_THREADS. A compute-bound row
# (EXP, TANH, ERF …: its function is not exact) does not stream at all: computing a buffer and
# then streaming it runs the arithmetic and the memory traffic one after the other, where
# ordinary stores overlap them. Same A/B, streamed vs cached, 16 / 2 threads (vmath in float32,
# 512-bit): EXP 1.62/0.92, 7.47/5.26; TANH 1.65/1.24, 8.13/5.85; ERF 1.91/1.46, 11.2/9.20.
STREAM_BYTES = 16 << 20
STREAM_RUN = 2048
STREAM_THREADS = 8
# Transposed input, tiled: where the output's rows are contiguous but the first input reads
# them with a stride, and is contiguous along another dimension k instead (IDENTITY with
# permuted strides: ONNX Runtime's Transpose), tasks are tiles of TILE_I elements along k by
# TILE_J along the row. A tile is computed column by column along k (contiguous reads) into an
# L1 buffer, then written out row by row (contiguous writes): both sides move whole cache
# lines. In row order the reads of a row are a stride apart, 16 KiB for a [64,64,64,64]
# transpose (one L1 set for all of them), and each row of 64 is one kernel call. Only where the
# row's reads are at least TILE_MIN elements apart (each in its own cache line) and k is at
# least TILE_MIN long (a kernel call per column of the tile): NHWC -> NCHW with C = 3 reads its
# rows 3 apart, and tiles 3 long ran 11x slower than rows. Measured A/B in one process
# (``tools/ab_levers.py tile``, ms, rows -> tiled [64 x 64]), IDENTITY of float32 through
# permuted strides: [64,64,64,64] (0,2,3,1) 36.3 -> 15.7 on the 2-core AMD (2 threads), 20.4 ->
# 19.4 and 4.12 -> 2.77 on the Xeon (2 / 16 threads); [32,3,224,224] (0,2,3,1) 39.9 -> 7.9,
# 51.0 -> 7.7, 7.93 -> 1.16; [4096,4096] (1,0) 69.6 -> 21.8, 58.8 -> 38.7, 9.64 -> 3.34. Tiles
# of 256 x 16 (a cache line of float32 per output row, 16 calls per tile) then beat 64 x 64,
# 128 x 32 and 512 x 8 or tied, on the Xeon: 17.1, 7.1, 28.5 ms at 2 threads and 1.97, 1.14,
# 2.32 at 16 (64 x 64: 17.0, 8.5, 35.6 and 1.98, 1.27, 2.39). Tiles do not stream: writing
# each 64-byte row with non-temporal stores ran 3-4x slower (16.3 -> 52.4 ms, 2.25 -> 9.67).
TILE_ELEMENTS = 4096
TILE_ROW = 16
TILE_MIN = 16


def _tiling(sizes: np.ndarray, strides: Sequence[np.ndarray]) -> tuple[int, int, int]:
    """(k, tile length along k, tile length along the row), k = -1 for no tiling."""
    rank = len(sizes)
    x, z = strides[0], strides[3]
    if rank < 2 or z[-1] != 1 or abs(x[-1]) < TILE_MIN:
        return -1, 0, 0
    for k in range(rank - 2, -1, -1):
        if x[k] == 1 and sizes[k] >= TILE_MIN:
            j = min(int(sizes[-1]), TILE_ROW)
            return k, min(int(sizes[k]), TILE_ELEMENTS // j), j
    return -1, 0, 0


def pack(fn: int, sizes: np.ndarray, strides: Sequence[np.ndarray], params: Sequence[float],
         kind: int, aux: int, width: int, stream: bool = True) -> np.ndarray:
    """The argument block for ``run`` (``strides``: x, y, w, z element strides; ``width``: the
    output element's bytes; ``stream``: whether a large output may be streamed)."""
    rank = len(sizes)
    block = np.zeros(HEAD + 5 * rank, np.int64)
    block[FN], block[RANK], block[KIND], block[AUX] = fn, rank, kind, aux
    block[PARAMS:PARAMS + 6].view(np.float64)[:] = params
    elements = int(np.prod(sizes))
    block[PARTS] = -(-elements // MIN_PART)
    block[TILE], block[TILE_I], block[TILE_J] = _tiling(sizes, strides)
    block[OUT_BYTES] = width
    streams = stream and block[TILE] < 0 and elements * width >= STREAM_BYTES and \
        strides[3][-1] == 1 and sizes[-1] >= STREAM_RUN
    block[WIDTH] = width if streams else 0
    block[STREAM_FROM] = 1 if width >= 4 else STREAM_THREADS
    for k, a in enumerate((sizes, *strides)):
        block[HEAD + k * rank:HEAD + (k + 1) * rank] = a
    return block


@intrinsic
def _pointer(typingctx, addr):  # pragma: no cover - code generation
    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], _PTR)

    return types.voidptr(types.int64), codegen


def typed_pointer(element: Any) -> Any:
    """An intrinsic: an int64 address as a pointer to ``element`` (a Numba scalar type), for
    ``numba.carray`` in jobs that receive their arrays as addresses."""
    @intrinsic
    def pointer(typingctx, addr):  # pragma: no cover - code generation
        def codegen(context, builder, sig, args):
            return builder.inttoptr(args[0], context.get_value_type(element).as_pointer())

        return types.CPointer(element)(types.int64), codegen

    return pointer


@intrinsic
def pointer_like(typingctx, addr, like):  # pragma: no cover - code generation
    """An int64 address as a pointer of ``like``'s type (a task kernel's arrays of its x's
    type that arrive as addresses)."""
    if not isinstance(like, types.CPointer):
        return None

    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], context.get_value_type(like))

    return like(types.int64, like), codegen


# Pointers to unsigned words of each width (kernels/movement.py's copy jobs use them too).
u8_pointer, u16_pointer, u32_pointer, u64_pointer = (
    typed_pointer(t) for t in (types.uint8, types.uint16, types.uint32, types.uint64))
int64_pointer = typed_pointer(types.int64)
_floats = typed_pointer(types.float64)


@inline
def _tasks(b):  # pragma: no cover - compiled
    """(tasks, chunks per row) of the block ``b``: a task is at most CHUNK elements of a row, or
    (tiled) one tile."""
    rank = b[RANK]
    tile = b[TILE]
    rows = np.int64(1)
    for k in range(rank - 1):
        if k == tile:
            rows *= (b[HEAD + k] + b[TILE_I] - 1) // b[TILE_I]
        else:
            rows *= b[HEAD + k]
    size = b[HEAD + rank - 1]
    chunks = (size + CHUNK - 1) // CHUNK if tile < 0 else (size + b[TILE_J] - 1) // b[TILE_J]
    return rows * chunks, chunks


@inline
def _origin(b, task, chunks, run):  # pragma: no cover - compiled
    """Where task ``task`` of the block ``b`` starts (``chunks`` tasks per row, each ``run``
    elements along the last dimension): (j0, its first element along the row; xo, yo, wo, zo,
    the element offsets of its first element; its length along the tiled dimension, 0 for a
    block without tiles)."""
    rank = b[RANK]
    last = rank - 1
    tile = b[TILE]
    row = task // chunks
    j0 = (task - row * chunks) * run
    xo = j0 * b[HEAD + rank + last]
    yo = j0 * b[HEAD + 2 * rank + last]
    wo = j0 * b[HEAD + 3 * rank + last]
    zo = j0 * b[HEAD + 4 * rank + last]
    rem = row
    m = np.int64(0)
    for d in range(rank - 2, -1, -1):
        size = b[HEAD + d]
        if d == tile:
            tiles = (size + b[TILE_I] - 1) // b[TILE_I]
            c = (rem % tiles) * b[TILE_I]
            rem //= tiles
            m = min(size, c + b[TILE_I]) - c
        else:
            c = rem % size
            rem //= size
        xo += c * b[HEAD + rank + d]
        yo += c * b[HEAD + 2 * rank + d]
        wo += c * b[HEAD + 3 * rank + d]
        zo += c * b[HEAD + 4 * rank + d]
    return j0, xo, yo, wo, zo, m


@inline
def _tile_task(b, f, task, chunks, buf):  # pragma: no cover - compiled
    """Run tile ``task`` of the block ``b``: computed into ``buf`` along the tile dimension k
    (one chunk call per column), then copied out row by row."""
    rank = b[RANK]
    xs = HEAD + rank
    ys = HEAD + 2 * rank
    ws = HEAD + 3 * rank
    zs = HEAD + 4 * rank
    last = rank - 1
    k = b[TILE]
    j0, xo, yo, wo, zo, mi = _origin(b, task, chunks, b[TILE_J])
    mj = min(b[HEAD + last], j0 + b[TILE_J]) - j0
    for j in range(mj):
        call_chunk(b[FN], _pointer(b[0]), xo + j * b[xs + last], b[xs + k], _pointer(b[1]),
                   yo + j * b[ys + last], b[ys + k], _pointer(b[2]), wo + j * b[ws + last],
                   b[ws + k], data_pointer(buf), j, mj, mi, f[PARAMS], f[PARAMS + 1],
                   f[PARAMS + 2], f[PARAMS + 3], f[PARAMS + 4], f[PARAMS + 5], b[KIND], b[AUX])
    # Copied out in the elements' own width (a byte loop ran 1.1-1.9x slower: Xeon, 2 / 16
    # threads, ms, bytes -> words: [64,64,64,64] 19.4 -> 17.0 / 2.19 -> 1.88; [32,3,224,224]
    # 8.41 -> 4.57 / 1.37 -> 0.72; [4096,4096] 32.2 / 2.32 either way).
    width = b[OUT_BYTES]
    src = pool.address(buf)
    for i in range(mi):
        dst = b[3] + (zo + i * b[zs + k]) * width
        at = i * mj
        if width == 4:
            _copy_words(carray(u32_pointer(dst), mj), carray(u32_pointer(src), at + mj), at)
        elif width == 2:
            _copy_words(carray(u16_pointer(dst), mj), carray(u16_pointer(src), at + mj), at)
        elif width == 8:
            _copy_words(carray(u64_pointer(dst), mj), carray(u64_pointer(src), at + mj), at)
        else:
            _copy_words(carray(u8_pointer(dst), mj), carray(u8_pointer(src), at + mj), at)


@inline
def _copy_words(dst, src, at):  # pragma: no cover - compiled
    """dst[:] = src[at:at + len(dst)]."""
    for q in range(dst.size):
        dst[q] = src[at + q]


@inline
def _task(b, f, task, chunks, width, buf):  # pragma: no cover - compiled
    """Run task ``task`` of the block ``b`` (``f``: the same block as float64). ``width``: the
    output element's bytes if the output is streamed (else 0) through ``buf``, a byte scratch of
    STREAM_RUN elements."""
    rank = b[RANK]
    xs = HEAD + rank
    ys = HEAD + 2 * rank
    ws = HEAD + 3 * rank
    zs = HEAD + 4 * rank
    last = rank - 1
    j0, xo, yo, wo, zo, _ = _origin(b, task, chunks, CHUNK)
    n = min(b[HEAD + last], j0 + CHUNK) - j0
    if width == 0:
        call_chunk(b[FN], _pointer(b[0]), xo, b[xs + last], _pointer(b[1]), yo, b[ys + last],
                   _pointer(b[2]), wo, b[ws + last], _pointer(b[3]), zo, b[zs + last], n,
                   f[PARAMS], f[PARAMS + 1], f[PARAMS + 2], f[PARAMS + 3], f[PARAMS + 4],
                   f[PARAMS + 5], b[KIND], b[AUX])
        return
    # Streamed (the output's innermost stride is 1): runs computed into buf, then stored out.
    for k in range(0, n, STREAM_RUN):
        m = min(n - k, STREAM_RUN)
        call_chunk(b[FN], _pointer(b[0]), xo + k * b[xs + last], b[xs + last], _pointer(b[1]),
                   yo + k * b[ys + last], b[ys + last], _pointer(b[2]), wo + k * b[ws + last],
                   b[ws + last], data_pointer(buf), 0, 1, m, f[PARAMS], f[PARAMS + 1],
                   f[PARAMS + 2], f[PARAMS + 3], f[PARAMS + 4], f[PARAMS + 5], b[KIND], b[AUX])
        out = carray(u8_pointer(b[3] + (zo + k) * width), m * width)
        stream_copy(out, np.uint64(0), buf, np.uint64(0), np.uint64(m * width))


def _part(block, part, parts):  # pragma: no cover - compiled
    """The pool's job: part ``part`` of ``parts`` of the block's tasks (contiguous, so a part
    covers the same elements in every launch of the same shape)."""
    b = carray(int64_pointer(block), HEAD)
    b = carray(int64_pointer(block), HEAD + 5 * b[RANK])
    f = carray(_floats(block), HEAD)
    width = b[WIDTH] if parts >= b[STREAM_FROM] else 0
    tasks, chunks = _tasks(b)
    buf = np.empty(STREAM_RUN * 8 if width else 8, np.uint8)
    for task in range(tasks * part // parts, tasks * (part + 1) // parts):
        _task(b, f, task, chunks, width, buf)
    if width:
        store_fence()


def _tile_part(block, part, parts):  # pragma: no cover - compiled
    """``_part`` for a tiled block (a job of its own, so that only the first tiled operator
    compiles the tiles: ~1.6 s cold on the 2-core box)."""
    b = carray(int64_pointer(block), HEAD)
    b = carray(int64_pointer(block), HEAD + 5 * b[RANK])
    f = carray(_floats(block), HEAD)
    tasks, chunks = _tasks(b)
    buf = np.empty(TILE_ELEMENTS * 8, np.uint8)
    for task in range(tasks * part // parts, tasks * (part + 1) // parts):
        _tile_task(b, f, task, chunks, buf)


@inline
def _with_addresses(block, x, y, w, z):  # pragma: no cover - compiled
    """A copy of the block (the caller's is shared by threads running the same plan) with the
    data addresses written in."""
    b = block.copy()
    b[0] = pool.address(x)
    b[1] = pool.address(y)
    b[2] = pool.address(w)
    b[3] = pool.address(z)
    return b


@kernel
def drive(block, x, y, w, z, threads):  # pragma: no cover
    """``z[c] = f(x[c], y[c], w[c])`` for every coordinate c of the block's sizes, on Numba's
    ``threads`` threads (where the pool is not available): the tensors are byte arrays."""
    b = _with_addresses(block, x, y, w, z)
    f = b.view(np.float64)
    width = b[WIDTH] if threads >= b[STREAM_FROM] else 0
    tasks, chunks = _tasks(b)
    for task in prange(tasks):
        buf = np.empty(STREAM_RUN * 8 if width else 8, np.uint8)
        _task(b, f, np.int64(task), chunks, width, buf)
        if width:
            store_fence()


@kernel
def drive_tiles(block, x, y, w, z):  # pragma: no cover
    """``drive`` for a tiled block."""
    b = _with_addresses(block, x, y, w, z)
    f = b.view(np.float64)
    tasks, chunks = _tasks(b)
    for task in prange(tasks):
        tile = np.empty(TILE_ELEMENTS * 8, np.uint8)
        _tile_task(b, f, np.int64(task), chunks, tile)


def run(block: np.ndarray, x: np.ndarray, y: np.ndarray, w: np.ndarray, z: np.ndarray) -> None:
    """Run the block (``pack``) over the byte arrays x, y, w (inputs; any unused one a small
    dummy) and z (output): on the pool where it is available, else with ``drive``."""
    tiled = block[TILE] >= 0
    if not pool.available():
        if tiled:
            drive_tiles(block, x, y, w, z)
        else:
            drive(block, x, y, w, z, numba.get_num_threads())
        return
    pool.run(pool.job(_tile_part if tiled else _part), block, block[PARTS], x, y, w, z)
