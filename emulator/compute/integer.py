"""The integer and quantized products (issue 17): rows of the compute family on one exact integer
matrix-multiply core, the convolutions as im2col feeding it.

    acc = sum_k (A[m, k] - AZeroPoint) * (B[k, n] - BZeroPoint)        (exact, integers)

- MATRIX_MULTIPLY_INTEGER (4_0): INT8/UINT8 A and B, AZeroPoint per tensor or per row (also a
  1-D {M}), BZeroPoint per tensor or per column; Output (INT32) = acc, wrapped to 32 bits.
- MATRIX_MULTIPLY_INTEGER_TO_FLOAT (6_2): A and B of any 8, 16 or 32-bit integer type, scales
  FLOAT32/FLOAT16 (per tensor, per row of A, per column of B), optional BiasTensor shaped like
  the output; Output = acc * (AScale * BScale) + Bias in float64, rounded once to FLOAT32 or
  FLOAT16 (acc rounded to float64 first, once, where it has more than 53 bits).
- CONVOLUTION_INTEGER (4_0): forward cross-correlation of (Input - InputZeroPoint) by (Filter -
  FilterZeroPoint[out channel]), groups, strides, dilations, padding; INT32 output, wrapped. A
  padded position holds the input zero point (contributes 0), as ONNX ConvInteger defines.
- QUANTIZED_LINEAR_CONVOLUTION (2_1): the same integer convolution plus the INT32 bias, then
  ``saturate(round_half_even((acc + Bias) * ((InputScale / OutputScale) * FilterScale[c]))
  + OutputZeroPoint)`` in float64 (a NaN gives OutputZeroPoint): QLMM's rule.

**The core**, two exact paths with the same results:

- *8-bit operands* (every operator's A/B or Input/Filter except the wider MMITF types):
  ``int_kernels.isums_task``, QLMM's portable int16 pair-dot-product tiles
  (``kernels/qgemm.py``), or ``int_kernels.isums_vnni_task``, its AVX512-VNNI tiles
  (``kernels/vnni.py``; where the CPU has them and K <= 65536, or ``USE_VNNI``), storing INT32
  sums, their geometry and task split from
  ``ops/qlmm.QLMMPlan`` (``KernelProduct``); it writes
  MATRIX_MULTIPLY_INTEGER's output in place (any strides) and CONVOLUTION_INTEGER's where the
  output's spatial dimensions are one strided run, else a dense INT32 scratch that NumPy copies
  out or requantizes. Used while the INT32 sums are the answer: always for the INT32 outputs
  (wrapped), for the others while K x 255 x 255 < 2**31.
- *the BLAS* (``products``; the 16 and 32-bit types, the rare longer K, grouped convolutions
  with a per-channel filter zero point, and ``USE_KERNEL = False``): every operand handed to a
  float ``?gemm`` is an integer of magnitude <= ``bound``, so every product and partial sum of a
  chunk of ``c`` k-steps is an integer <= ``c * bound**2``; below 2**24 (FLOAT32) or 2**53
  (FLOAT64) each is representable and the chunk's sum is exact in any order, blocking, threading
  or FMA. Chunks are added in float64 (while exact) or int64. 8-bit: FLOAT32 chunks of 258;
  16-bit: FLOAT64 chunks of 2**21; 32-bit (|a - za| < 2**33): 16-bit limbs
  ``d = h * 2**16 + l``, four FLOAT64 limb products carried into ``hi * 2**32 + lo`` and rounded
  once to float64 (``exact_float``; for K >= 2**19 a second rounding is possible).

The batch dimensions may broadcast (zero strides); every scale and zero point is read through
its strides; the output is written once, at its addressed elements only, after every scratch was
taken (a failure leaves it untouched). Decisions (padding with the input zero point, the INT32
wrap, the float64 evaluation): docs/decisions.md.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from descriptors import DML_CONVOLUTION_DIRECTION, DML_CONVOLUTION_MODE
from descriptors import DML_OPERATOR_TYPE as OP
from descriptors import DML_TENSOR_DATA_TYPE as T

from ..family import Row
from ..ops.common import ieee_reference
from ..ops.qlmm import QLMMPlan
from ..plan import collapse
from ..resources import scratch
from . import blas
from .table import convolve

INT8, UINT8, INT32 = T.DML_TENSOR_DATA_TYPE_INT8, T.DML_TENSOR_DATA_TYPE_UINT8, \
    T.DML_TENSOR_DATA_TYPE_INT32
FLOATS = (T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16)
INTEGERS = (INT32, T.DML_TENSOR_DATA_TYPE_INT16, INT8, T.DML_TENSOR_DATA_TYPE_UINT32,
            T.DML_TENSOR_DATA_TYPE_UINT16, UINT8)
FORWARD = DML_CONVOLUTION_DIRECTION.DML_CONVOLUTION_DIRECTION_FORWARD
CROSS = DML_CONVOLUTION_MODE.DML_CONVOLUTION_MODE_CROSS_CORRELATION
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
LIMB = 16  # bits of the low limb of a 32-bit difference
EXACT32 = 1 << 31  # INT32 sums are exact below this
USE_KERNEL = True  # the 8-bit kernel path where it applies (tests switch it off)
USE_VNNI: bool | None = None  # its VNNI variant: None where the CPU has avx512vnni; tests force
_ZERO = np.zeros(1, np.uint8)  # an absent zero point: 0, read with step 0
_NO_PANELS = (np.empty((0, 0, 0), np.int8), np.empty((0, 0, 0), np.int32))


# ----------------------------------------------------------------------------------------------
# The exact products on the BLAS


def chunking(bound: int) -> tuple[np.dtype, int]:
    """(float type, k-steps per chunk) that keep a chunk's sums of products of integers of
    magnitude <= ``bound`` exact: FLOAT32 where a chunk of at least 64 fits below 2**24."""
    c32 = (1 << 24) // (bound * bound)
    if c32 >= 64:
        return F32, c32
    return F64, (1 << 53) // (bound * bound)


def bound_of(dtype: np.dtype) -> int:
    """The largest |value - zero point| of an integer type (a zero point shares its type)."""
    info = np.iinfo(dtype)
    return int(info.max) - int(info.min)


def differences(x: np.ndarray, zero: np.ndarray | int, dtype: np.dtype, operator: str,
                what: str) -> np.ndarray:
    """x - zero (broadcast) as a dense array of ``dtype`` (exact: both fit)."""
    out = scratch(np.broadcast_shapes(np.shape(x), np.shape(zero)), dtype, operator, what)
    np.subtract(x, zero, out=out, dtype=dtype, casting="unsafe")
    return out


def products(a: np.ndarray, b: np.ndarray, pairs: Sequence[tuple[int, int]], bound: int,
             operator: str) -> np.ndarray:
    """The exact sums ``a[i] @ b[j]`` for each (i, j) of ``pairs``, [len(pairs), M, N]: the
    chunk's float array itself when K is one chunk, else the chunks added in float64 (while
    K * bound**2 < 2**53, so exact) or in int64. Every value is an exact integer either way.
    ``a`` [Ba, M, K] and ``b`` [Bb, K, N]: dense arrays of the chunking's float type holding
    integers of magnitude <= ``bound``."""
    dtype, chunk = chunking(bound)
    assert a.dtype == dtype and b.dtype == dtype and a.flags.c_contiguous and b.flags.c_contiguous
    _, m, k = a.shape
    n = b.shape[2]
    count = len(pairs)
    part = scratch((count, m, n), dtype, operator, "the product's chunk sums")
    if k <= chunk:
        _gemm(a, b, pairs, 0, k, part)
        return part
    wide = np.float64 if k * bound * bound < 1 << 53 else np.int64
    total = scratch((count, m, n), wide, operator, "the product's sums")
    for k0 in range(0, k, chunk):
        _gemm(a, b, pairs, k0, min(chunk, k - k0), part)
        if k0 == 0:
            total[...] = part
        else:
            np.add(total, part, out=total, casting="unsafe")
    return total


def wrap32(acc: np.ndarray, limit: int) -> np.ndarray:
    """Exact integer sums (any dtype, |values| <= ``limit``) as INT32, wrapped modulo 2**32 (a
    float array within the INT32 range converts directly, exactly)."""
    if limit < 1 << 31:
        return acc
    return acc.astype(np.int64).astype(np.int32)


def _gemm(a: np.ndarray, b: np.ndarray, pairs: Sequence[tuple[int, int]], k0: int, kc: int,
          out: np.ndarray) -> None:
    """out[p] = a[i, :, k0:k0 + kc] @ b[j, k0:k0 + kc, :] for p, (i, j) in pairs: the BLAS
    called directly on the dense arrays (its leading dimensions skip the other k-steps)."""
    dtype = a.dtype
    _, m, k = a.shape
    n = b.shape[2]
    if not blas.direct(dtype):
        for p, (i, j) in enumerate(pairs):
            np.matmul(a[i, :, k0:k0 + kc], b[j, k0:k0 + kc, :], out=out[p])
        return
    import numba

    size = dtype.itemsize
    pa, pb, po = a.ctypes.data, b.ctypes.data, out.ctypes.data
    calls = [(False, False, m, n, kc, 1.0, pa + (i * m * k + k0) * size, k,
              pb + (j * k * n + k0 * n) * size, n, 0.0, po + p * m * n * size, n)
             for p, (i, j) in enumerate(pairs)]
    blas.run(dtype, calls, numba.get_num_threads())


def limbs(d: np.ndarray, operator: str) -> tuple[np.ndarray, np.ndarray]:
    """(h, l) with d = h * 2**16 + l, 0 <= l < 2**16, as FLOAT64 (d: int64, |d| < 2**33)."""
    h = scratch(d.shape, F64, operator, "high limbs")
    low = scratch(d.shape, F64, operator, "low limbs")
    np.right_shift(d, LIMB, out=h, casting="unsafe")
    np.bitwise_and(d, (1 << LIMB) - 1, out=low, casting="unsafe")
    return h, low


def wide_products(a: np.ndarray, b: np.ndarray, pairs: Sequence[tuple[int, int]],
                  operator: str) -> np.ndarray:
    """The exact sums a[i] @ b[j] of int64 differences |d| < 2**33 (32-bit types), rounded once
    to float64 [len(pairs), M, N]: four limb products, carried, then ``exact_float``."""
    ah, al = limbs(a, operator)
    bh, bl = limbs(b, operator)
    bound = 1 << (LIMB + 1)
    hh = products(ah, bh, pairs, bound, operator).astype(np.int64)
    mid = products(ah, bl, pairs, bound, operator).astype(np.int64)
    mid += products(al, bh, pairs, bound, operator).astype(np.int64)
    ll = products(al, bl, pairs, bound, operator).astype(np.int64)
    # total = hh * 2**32 + mid * 2**16 + ll, carried to hi * 2**32 + lo, 0 <= lo < 2**32.
    hh += mid >> LIMB
    ll += (mid & ((1 << LIMB) - 1)) << LIMB
    hh += ll >> 32
    ll &= (1 << 32) - 1
    return exact_float(hh, ll)


def exact_float(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """hi * 2**32 + lo (0 <= lo < 2**32) as float64 with one rounding: hi is exact in float64
    while |hi| < 2**53 (always for K < 2**19: |total| <= K * 2**66), the product by 2**32 too,
    so the one addition rounds once. (Beyond, float(hi) may round first: two roundings.)"""
    return np.ldexp(hi.astype(np.float64), 32) + lo.astype(np.float64)


def columns(x: np.ndarray, groups: int, kernel: Sequence[int], strides: Sequence[int],
            dilations: Sequence[int], start: Sequence[int], end: Sequence[int],
            out_sizes: Sequence[int], fill: Any, operator: str,
            space: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
    """The im2col of ``x`` [N, C, spatial..], ``fill`` outside it: [N * G, C/G * taps, output
    positions], k ordered (channel, tap) like a filter [Cout, C/G, kernel..] flattened; one
    strided NumPy copy per filter tap. ``space``: the padded input and the column matrix
    (``column_space``) if taken before."""
    n, c = x.shape[:2]
    dims = len(kernel)
    space = space or column_space(x.shape, x.dtype, kernel, start, end, out_sizes, operator)
    padded, col = space["padded"], space["col"]
    padded.fill(fill)
    padded[(slice(None),) * 2 + tuple(slice(start[d], start[d] + x.shape[2 + d])
                                      for d in range(dims))] = x
    taps = math.prod(kernel)
    for t, tap in enumerate(itertools.product(*(range(k) for k in kernel))):
        window = tuple(slice(tap[d] * dilations[d],
                             tap[d] * dilations[d] + (out_sizes[d] - 1) * strides[d] + 1,
                             strides[d]) for d in range(dims))
        col[:, :, t] = padded[(slice(None),) * 2 + window]
    return col.reshape(n * groups, (c // groups) * taps, math.prod(out_sizes))


def column_space(shape: Sequence[int], dtype: Any, kernel: Sequence[int], start: Sequence[int],
                 end: Sequence[int], out_sizes: Sequence[int], operator: str
                 ) -> dict[str, np.ndarray]:
    """The scratch of ``columns`` for an input of ``shape``: the padded input, the columns."""
    n, c = shape[:2]
    dims = len(kernel)
    return {"padded": scratch((n, c, *(shape[2 + d] + start[d] + end[d] for d in range(dims))),
                              dtype, operator, "the padded input"),
            "col": scratch((n, c, math.prod(kernel), *out_sizes), dtype, operator,
                           "the im2col matrix")}


# ----------------------------------------------------------------------------------------------
# The 8-bit kernel path


def _tensor(data_type: T, sizes: Sequence[int], strides: Sequence[int]) -> SimpleNamespace:
    """What QLMMPlan.build reads of a tensor, for a matrix view or a scratch."""
    dtype = np.dtype(np.int32) if data_type == INT32 else np.dtype(
        np.int8 if data_type == INT8 else np.uint8)
    return SimpleNamespace(data_type=data_type, sizes=tuple(sizes), strides=tuple(strides),
                           dim_count=len(sizes), dtype=dtype)


def _step(t: Any) -> int:
    """A zero point's element step along its one non-1 dimension (0: per tensor or absent)."""
    if t is None:
        return 0
    return next((s for n, s in zip(t.sizes, t.strides) if n > 1), 0)


@dataclass(frozen=True, eq=False)
class KernelProduct:
    """``int_kernels.isums_task`` (or ``isums_vnni_task``) over A {batch.., M, K} x
    B {batch.., K, N} -> INT32 {batch.., M, N} (QLMM's geometry and task split, ``QLMMPlan``),
    zero points with element steps along M and N."""

    qlmm: QLMMPlan
    operator: str

    @classmethod
    def build(cls, operator: str, a: Any, b: Any, out: Any, az_step: int, bz_step: int
              ) -> KernelProduct:
        v = SimpleNamespace(ATensor=a, BTensor=b, OutputTensor=out, AScaleTensor=None,
                            BScaleTensor=None, OutputScaleTensor=None, AZeroPointTensor=None,
                            BZeroPointTensor=None, OutputZeroPointTensor=None)
        plan = QLMMPlan.build(v)
        plan.dims["AZ"], plan.dims["BZ"] = az_step, bz_step
        return cls(plan, operator)

    def how(self) -> tuple:
        """("vnni", pack B up front?, rows, span) where the CPU has avx512vnni (or USE_VNNI) and
        K fits one exact int32 accumulation, else ("portable", rows, span): QLMM's choices at
        the current thread count."""
        import numba

        from ..kernels import vnni

        threads = numba.get_num_threads()
        wanted = vnni.HAS_VNNI if USE_VNNI is None else USE_VNNI
        if wanted and self.qlmm.k <= 4 * vnni.K4_BLOCK:
            return ("vnni", *self.qlmm.vnni_strategy(threads))
        return ("portable", *self.qlmm.portable_strategy(threads))

    def reserve(self) -> tuple[np.ndarray, np.ndarray]:
        """Every distinct B packed up front (the VNNI path, when QLMM's strategy packs first),
        else empty arrays: taken before anything is written."""
        how = self.how()
        if how[0] != "vnni" or not how[1]:
            return _NO_PANELS
        from ..kernels.vnni import NR

        shape = (self.qlmm.distinct_count, -(-self.qlmm.n // NR), -(-self.qlmm.k // 4) * NR * 4)
        return (scratch(shape, np.int8, self.operator, "packed B panels"),
                scratch((*shape[:2], NR), np.int32, self.operator, "B column sums"))

    def run(self, a: np.ndarray, b: np.ndarray, y: np.ndarray, azp: np.ndarray | None,
            bzp: np.ndarray | None, panels: tuple[np.ndarray, np.ndarray] | None = None
            ) -> None:
        """Every array as its bytes (uint8, 1-D); an absent zero point None; ``panels``: what
        ``reserve`` returned, if taken before."""
        from ..kernels import qgemm, tasks, vnni
        from . import int_kernels

        zero_points = (_ZERO if azp is None else azp, _ZERO if bzp is None else bzp, _ZERO)
        plan = self.qlmm
        how = self.how()
        if how[0] == "portable":
            prepack, (rows, span) = False, how[1:]
            panels = _NO_PANELS
            fn, nb = tasks.address(int_kernels.isums_task, "uint8", "uint8"), qgemm.NB
        else:
            _, prepack, rows, span = how
            if panels is None or (prepack and panels[0].size == 0):
                panels = self.reserve()
            if prepack:
                vnni.pack_b(b, plan.distinct, plan.geometry, *panels)
            fn, nb = tasks.address(int_kernels.isums_vnni_task, "uint8", "uint8"), vnni.NR
        bp, cols = panels
        qgemm.launch(fn, nb, a, b, y, (_ZERO,) * 3, zero_points, plan.batch, plan.geometry, bp,
                     cols, rows, span, prepack)


def _bytes(x: np.ndarray) -> np.ndarray:
    return x.reshape(-1).view(np.uint8)


# ----------------------------------------------------------------------------------------------
# Matrix multiply


def _values(t: Any, region: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray | int:
    """A scale or zero point's elements in order, reshaped to ``shape`` (-1: its count, 1 or
    M/N/channels); 0 for an absent zero point."""
    if t is None or region is None:
        return 0
    return np.array(t.view(region)).reshape(shape)


@dataclass(frozen=True, eq=False)
class IntMatmulPlan:
    """MATRIX_MULTIPLY_INTEGER (``scaled`` False) and MATRIX_MULTIPLY_INTEGER_TO_FLOAT."""

    operator: str
    v: Any
    scaled: bool
    kernel: KernelProduct | None  # the 8-bit path, where it applies

    @classmethod
    def build(cls, operator: str, v: SimpleNamespace, scaled: bool) -> IntMatmulPlan:
        a, b, o = v.ATensor, v.BTensor, v.OutputTensor
        kernel = None
        if a.element_size == 1 and (not scaled or a.sizes[-1] * 255 * 255 < EXACT32):
            target = o if not scaled else _tensor(INT32, o.sizes, _packed(o.sizes))
            kernel = KernelProduct.build(operator, a, b, target, _step(v.AZeroPointTensor),
                                         _step(v.BZeroPointTensor))
        return cls(operator, v, scaled, kernel)

    @classmethod
    def integer(cls, v: SimpleNamespace) -> IntMatmulPlan:
        return cls.build("DML_OPERATOR_MATRIX_MULTIPLY_INTEGER", v, False)

    @classmethod
    def to_float(cls, v: SimpleNamespace) -> IntMatmulPlan:
        return cls.build("DML_OPERATOR_MATRIX_MULTIPLY_INTEGER_TO_FLOAT", v, True)

    def sums(self, regions: Mapping[str, np.ndarray]) -> np.ndarray:
        """acc over every batch on the BLAS, [batch.., M, N]: exact integers (8 and 16-bit
        types, see ``products``) or float64 rounded once (32-bit types)."""
        v, op = self.v, self.operator
        a_t, b_t = v.ATensor, v.BTensor
        m, k = a_t.sizes[-2:]
        n = b_t.sizes[-1]
        batch = a_t.sizes[:-2]
        count = math.prod(batch)
        za = _values(v.AZeroPointTensor, regions.get("AZeroPointTensor"), (-1, 1))
        zb = _values(v.BZeroPointTensor, regions.get("BZeroPointTensor"), (1, -1))
        a = a_t.view(regions["ATensor"])
        b = b_t.view(regions["BTensor"])
        bound = bound_of(a_t.dtype)
        pairs = [(i, i) for i in range(count)]
        if a_t.element_size == 4:
            ad = differences(a, za, np.dtype(np.int64), op, "A - AZeroPoint")
            bd = differences(b, zb, np.dtype(np.int64), op, "B - BZeroPoint")
            acc = wide_products(ad.reshape(count, m, k), bd.reshape(count, k, n), pairs, op)
        else:
            dtype = chunking(bound)[0]
            ad = differences(a, za, dtype, op, "A - AZeroPoint")
            bd = differences(b, zb, dtype, op, "B - BZeroPoint")
            acc = products(ad.reshape(count, m, k), bd.reshape(count, k, n), pairs, bound, op)
        return acc.reshape(*batch, m, n)

    def reserve(self) -> dict[str, Any] | None:
        """The 8-bit path's scratch that grows with the data (packed B panels where the VNNI
        path packs first; MATRIX_MULTIPLY_INTEGER_TO_FLOAT's INT32 sums), taken before any
        command list writes; the BLAS path takes its own in ``run``."""
        if self.kernel is None or not USE_KERNEL:
            return None
        space: dict[str, Any] = {"panels": self.kernel.reserve()}
        if self.scaled:
            space["acc"] = scratch(self.v.OutputTensor.sizes, np.int32, self.operator,
                                   "the INT32 sums")
        return space

    def run(self, regions: Mapping[str, np.ndarray], reserved: dict[str, Any] | None = None
            ) -> None:
        v = self.v
        out = v.OutputTensor.view(regions["OutputTensor"])
        k = v.ATensor.sizes[-1]
        if self.kernel is not None and USE_KERNEL:
            space = reserved or self.reserve()
            assert space is not None
            args = (regions["ATensor"], regions["BTensor"])
            zps = (regions.get("AZeroPointTensor"), regions.get("BZeroPointTensor"))
            if not self.scaled:
                self.kernel.run(*args, regions["OutputTensor"], *zps, space["panels"])
                return
            acc = space["acc"]
            self.kernel.run(*args, _bytes(acc), *zps, space["panels"])
        else:
            acc = self.sums(regions)
            if not self.scaled:
                out[...] = wrap32(acc, k * bound_of(v.ATensor.dtype) ** 2)
                return
        scale = (np.asarray(_values(v.AScaleTensor, regions["AScaleTensor"], (-1, 1)), F64)
                 * np.asarray(_values(v.BScaleTensor, regions["BScaleTensor"], (1, -1)), F64))
        with np.errstate(all="ignore"):
            y = acc.astype(np.float64) * scale
            if v.BiasTensor is not None:
                y += v.BiasTensor.view(regions["BiasTensor"]).astype(np.float64)
            out[...] = y.astype(out.dtype)


def _packed(sizes: Sequence[int]) -> tuple[int, ...]:
    return tuple(math.prod(sizes[i + 1:]) for i in range(len(sizes)))


def _matmul_acc(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    """The exact acc in Python integers (object arrays): no overflow for any type."""
    rank = v.ATensor.dim_count

    def zero(name: str, shape: tuple[int, int]) -> np.ndarray:
        z = inputs.get(name)
        return np.zeros((1, 1), object) if z is None else z.astype(object).reshape(shape)

    a = inputs["ATensor"].astype(object) - zero("AZeroPointTensor", (-1, 1))
    b = inputs["BTensor"].astype(object) - zero("BZeroPointTensor", (1, -1))
    assert a.ndim == rank
    return np.matmul(a, b)


def integer_matmul_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                             ) -> dict[str, np.ndarray]:
    """Output = sum_k (A - AZeroPoint)(B - BZeroPoint), exact, wrapped to INT32."""
    acc = _matmul_acc(v, inputs)
    wrapped = (acc + (1 << 31)) % (1 << 32) - (1 << 31)
    return {"OutputTensor": wrapped.astype(np.int32)}


@ieee_reference
def to_float_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                       ) -> dict[str, np.ndarray]:
    """Output = acc * (AScale * BScale) + Bias: the exact acc rounded once to float64, the rest
    in float64, rounded once to the output type."""
    acc = _matmul_acc(v, inputs).astype(np.float64)  # Python's float(int): one rounding
    scale = (inputs["AScaleTensor"].astype(np.float64).reshape(-1, 1)
             * inputs["BScaleTensor"].astype(np.float64).reshape(1, -1))
    y = acc * scale
    if inputs.get("BiasTensor") is not None:
        y = y + inputs["BiasTensor"].astype(np.float64)
    return {"OutputTensor": y.astype(inputs["AScaleTensor"].dtype)}


# ----------------------------------------------------------------------------------------------
# Convolution


@dataclass(frozen=True, eq=False)
class IntConvPlan:
    """CONVOLUTION_INTEGER (``quantized`` False) and QUANTIZED_LINEAR_CONVOLUTION: per batch item
    and group, acc = (Filter - FilterZeroPoint) x im2col(Input - InputZeroPoint).

    ``kernel``: the 8-bit path (None where it does not apply): A the filter packed dense
    [G, Cout/G, K], B the input's im2col in bytes, padded with the input zero point's byte,
    [N, G, K, positions]; ``direct``: it writes the output itself (INT32, spatial dimensions
    one strided run), else a dense INT32 [N, Cout, positions] scratch."""

    operator: str
    v: Any
    quantized: bool
    kernel: KernelProduct | None
    direct: bool

    @classmethod
    def build(cls, operator: str, v: SimpleNamespace, quantized: bool) -> IntConvPlan:
        x, w, o = v.InputTensor, v.FilterTensor, v.OutputTensor
        g = v.GroupCount
        n, cout = o.sizes[:2]
        k = math.prod(w.sizes[1:])
        positions = math.prod(o.sizes[2:])
        per_channel = _step(v.FilterZeroPointTensor) != 0
        if (quantized and k * 255 * 255 >= EXACT32) or (g > 1 and per_channel):
            return cls(operator, v, quantized, None, False)
        mg = cout // g
        sp_sizes, sp_strides = collapse(o.sizes[2:] or (1,), o.strides[2:] or (1,))
        direct = not quantized and len(sp_sizes) == 1
        if direct:
            out = _tensor(INT32, (n, g, mg, positions),
                          (o.strides[0], mg * o.strides[1], o.strides[1], sp_strides[0]))
        else:
            out = _tensor(INT32, (n, g, mg, positions),
                          (cout * positions, mg * positions, positions, 1))
        a = _tensor(w.data_type, (n, g, mg, k), (0, mg * k, k, 1))
        b = _tensor(x.data_type, (n, g, k, positions), (g * k * positions, k * positions,
                                                        positions, 1))
        return cls(operator, v, quantized, KernelProduct.build(operator, a, b, out,
                                                                  int(per_channel), 0),
                   direct)

    @classmethod
    def integer(cls, v: SimpleNamespace) -> IntConvPlan:
        return cls.build("DML_OPERATOR_CONVOLUTION_INTEGER", v, False)

    @classmethod
    def linear(cls, v: SimpleNamespace) -> IntConvPlan:
        return cls.build("DML_OPERATOR_QUANTIZED_LINEAR_CONVOLUTION", v, True)

    @property
    def limit(self) -> int:
        """The largest |acc|: K = Cin/G x taps products of at most 255 * 255."""
        w = self.v.FilterTensor
        return math.prod(w.sizes[1:]) * bound_of(w.dtype) ** 2

    def columns_of(self, x: np.ndarray, fill: Any,
                   space: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
        v = self.v
        return columns(x, v.GroupCount, v.FilterTensor.sizes[2:], v.Strides, v.Dilations,
                       v.StartPadding, v.EndPadding, v.OutputTensor.sizes[2:], fill,
                       self.operator, space)

    def reserve(self) -> dict[str, Any] | None:
        """The 8-bit path's scratch that grows with the data (the padded input, the im2col bytes,
        packed B panels where the VNNI path packs first, the INT32 sums unless written in
        place), taken before any command list writes; the BLAS path takes its own in ``run``."""
        if self.kernel is None or not USE_KERNEL:
            return None
        v = self.v
        x, o = v.InputTensor, v.OutputTensor
        space: dict[str, Any] = column_space(x.sizes, x.dtype, v.FilterTensor.sizes[2:],
                                             v.StartPadding, v.EndPadding, o.sizes[2:],
                                             self.operator)
        space["panels"] = self.kernel.reserve()
        if not self.direct:
            space["acc"] = scratch(o.sizes, np.int32, self.operator, "the INT32 sums")
        return space

    def kernel_sums(self, regions: Mapping[str, np.ndarray], out: np.ndarray,
                    space: dict[str, Any]) -> np.ndarray | None:
        """The 8-bit path: writes the output itself (returns None) or returns the INT32 sums
        [N, Cout, output spatial..]."""
        v = self.v
        assert self.kernel is not None
        x = v.InputTensor.view(regions["InputTensor"])
        zx = _values(v.InputZeroPointTensor, regions.get("InputZeroPointTensor"), (-1,))
        fill = np.asarray(zx).reshape(-1)[0] if v.InputZeroPointTensor is not None else 0
        col = self.columns_of(x, fill, space)
        w = np.ascontiguousarray(v.FilterTensor.view(regions["FilterTensor"]))
        zw = (None if v.FilterZeroPointTensor is None else
              _bytes(np.ascontiguousarray(_values(v.FilterZeroPointTensor,
                                                 regions["FilterZeroPointTensor"], (-1,)))))
        zxb = None if v.InputZeroPointTensor is None else _bytes(np.asarray(zx).reshape(-1)[:1])
        if self.direct:
            self.kernel.run(_bytes(w), _bytes(col), regions["OutputTensor"], zw, zxb,
                            space["panels"])
            return None
        acc = space["acc"]
        self.kernel.run(_bytes(w), _bytes(col), _bytes(acc), zw, zxb, space["panels"])
        return acc

    def sums(self, regions: Mapping[str, np.ndarray]) -> np.ndarray:
        """acc on the BLAS, exact integers (``products``) [N, Cout, output spatial..]."""
        v, op = self.v, self.operator
        x_t, w_t, o_t = v.InputTensor, v.FilterTensor, v.OutputTensor
        g = v.GroupCount
        n, cout = o_t.sizes[:2]
        k = math.prod(w_t.sizes[1:])
        bound = bound_of(x_t.dtype)
        dtype = chunking(bound)[0]
        zx = _values(v.InputZeroPointTensor, regions.get("InputZeroPointTensor"), (-1,))
        zw = _values(v.FilterZeroPointTensor, regions.get("FilterZeroPointTensor"),
                     (-1,) + (1,) * (w_t.dim_count - 1))
        xd = differences(x_t.view(regions["InputTensor"]), zx, dtype, op, "Input - ZeroPoint")
        wd = differences(w_t.view(regions["FilterTensor"]), zw, dtype, op, "Filter - ZeroPoint")
        col = self.columns_of(xd, 0)
        pairs = [(gi, ni * g + gi) for ni in range(n) for gi in range(g)]
        acc = products(wd.reshape(g, cout // g, k), col, pairs, bound, op)
        return acc.reshape(o_t.sizes)

    def run(self, regions: Mapping[str, np.ndarray],
            reserved: dict[str, Any] | None = None) -> None:
        v = self.v
        out = v.OutputTensor.view(regions["OutputTensor"])
        acc: np.ndarray | None
        if self.kernel is not None and USE_KERNEL:
            acc = self.kernel_sums(regions, out, reserved or self.reserve() or {})
            if acc is None:
                return
        else:
            acc = self.sums(regions)
        if not self.quantized:
            out[...] = wrap32(acc, self.limit)
            return
        channel = (-1,) + (1,) * (v.OutputTensor.dim_count - 2)
        if v.BiasTensor is not None:  # exact: |acc| + 2**31 < 2**53, or int64
            bias = _values(v.BiasTensor, regions["BiasTensor"], channel)
            acc = acc + np.asarray(bias, acc.dtype if acc.dtype == np.int64 else F64)
        out[...] = requantize(
            acc, _values(v.InputScaleTensor, regions["InputScaleTensor"], (-1,)),
            _values(v.FilterScaleTensor, regions["FilterScaleTensor"], channel),
            _values(v.OutputScaleTensor, regions["OutputScaleTensor"], (-1,)),
            _values(v.OutputZeroPointTensor, regions.get("OutputZeroPointTensor"), (-1,)),
            out.dtype)


def requantize(acc: np.ndarray, xs: Any, ws: Any, ys: Any, yz: Any, dtype: np.dtype
               ) -> np.ndarray:
    """saturate(round_half_even(acc * ((xs / ys) * ws)) + yz) in float64; a NaN gives yz."""
    info = np.iinfo(dtype)
    with np.errstate(all="ignore"):
        factor = (np.asarray(xs, np.float64) / np.asarray(ys, np.float64)
                  * np.asarray(ws, np.float64))
        real = acc.astype(np.float64) * factor
        z = np.asarray(yz, np.float64)
        q = np.where(np.isnan(real), z, np.rint(real) + z)
        return np.clip(q, info.min, info.max).astype(dtype)


def _conv_acc(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    """The page's integer convolution: (Input - InputZeroPoint) convolved (cross-correlation)
    with (Filter - FilterZeroPoint per output channel), zero (in that domain) outside the input;
    float64 sums of integer products far below 2**53, so exact."""
    w = inputs["FilterTensor"].astype(np.int64)
    x = inputs["InputTensor"].astype(np.int64)
    zx = inputs.get("InputZeroPointTensor")
    zw = inputs.get("FilterZeroPointTensor")
    if zx is not None:
        x = x - zx.astype(np.int64).reshape(())
    if zw is not None:
        w = w - zw.astype(np.int64).reshape((-1,) + (1,) * (w.ndim - 1))
    attrs = SimpleNamespace(GroupCount=v.GroupCount, DimensionCount=v.DimensionCount,
                            Mode=CROSS, Direction=FORWARD, Strides=v.Strides,
                            Dilations=v.Dilations, StartPadding=v.StartPadding,
                            EndPadding=v.EndPadding)
    return convolve(x.astype(np.float64), w.astype(np.float64), attrs).astype(np.int64)


def conv_integer_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                           ) -> dict[str, np.ndarray]:
    acc = _conv_acc(v, inputs)
    return {"OutputTensor": ((acc + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)}


def qlinear_conv_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                           ) -> dict[str, np.ndarray]:
    """Dequantize, convolve, add the bias (in the accumulator's scale), quantize: in integers
    then float64 with one rounding, as ``requantize`` states."""
    acc = _conv_acc(v, inputs)
    channel = (-1,) + (1,) * (acc.ndim - 2)
    bias = inputs.get("BiasTensor")
    if bias is not None:
        acc = acc + bias.astype(np.int64).reshape(channel)
    zy = inputs.get("OutputZeroPointTensor")
    dtype = np.dtype(np.int8 if v.OutputTensor.data_type == INT8 else np.uint8)
    q = requantize(acc, inputs["InputScaleTensor"].reshape(()),
                   inputs["FilterScaleTensor"].reshape(channel),
                   inputs["OutputScaleTensor"].reshape(()),
                   0 if zy is None else zy.reshape(()), dtype)
    return {"OutputTensor": q}


I8 = (INT8, UINT8)
ROWS = (
    Row(OP.DML_OPERATOR_MATRIX_MULTIPLY_INTEGER, IntMatmulPlan.integer,
        integer_matmul_reference, (*I8, INT32)),
    Row(OP.DML_OPERATOR_MATRIX_MULTIPLY_INTEGER_TO_FLOAT, IntMatmulPlan.to_float,
        to_float_reference, (*INTEGERS, *FLOATS)),
    Row(OP.DML_OPERATOR_CONVOLUTION_INTEGER, IntConvPlan.integer, conv_integer_reference,
        (*I8, INT32)),
    Row(OP.DML_OPERATOR_QUANTIZED_LINEAR_CONVOLUTION, IntConvPlan.linear,
        qlinear_conv_reference, (*I8, T.DML_TENSOR_DATA_TYPE_FLOAT32, INT32)),
)
