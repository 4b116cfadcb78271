"""RANDOM_GENERATOR, NONZERO_COORDINATES, VALUE_SCALE_2D and DIAGONAL_MATRIX1: rows of the
data-movement family (``table.Row``).

DIAGONAL_MATRIX1 (the page's pseudocode): element (y, x) of every matrix takes Value where
``(End >= Begin) ^ (x - y >= Begin) ^ (x - y < End)``: the diagonals x - y in [Begin, End), or
for Begin > End every diagonal outside [End, Begin) (Begin == End: none); every other element is
InputTensor's or, without one, zero. Which of the two an element gets depends only on its
diagonal x - y, so the plan decides it once per diagonal (``band``, h + w - 1 entries):

- without InputTensor, the output is one ``IndexMap`` copy from a pattern of h + w - 1 elements
  (Value's bits on the band's diagonals, zeros elsewhere): element (y, x) reads pattern entry
  x - y + h - 1, a table per dimension (h - 1 - y, x), as DIAGONAL_MATRIX's row does with a map
  per diagonal;
- with InputTensor, an identity ``IndexMap`` copies it, then Value is written through the band
  viewed as an [h, w] mask (strides -1 and +1 over the diagonals), broadcast over the batch.

Value is the output type's element of the scalar union (``table.fill_bits``, bit-exact).

VALUE_SCALE_2D: ``Output[n, c, h, w] = Scale·Input[n, c, h, w] + Bias[c]``, each channel one run
of ELEMENT_WISE_IDENTITY's ScaleBias kernel (``elementwise.plan.ElementWisePlan``, variant
``f64_sb``) over that channel's slice: float64 math (the product of two float32 values is exact),
rounded once to FLOAT32 or FLOAT16. So VALUE_SCALE_2D equals ELEMENT_WISE_IDENTITY with ScaleBias
{Scale, Bias[c]} bit for bit (the page calls them similar), and differs from a correctly rounded
fused multiply-add only where rounding the float64 sum to the output type is a double rounding
(a tie after the first rounding): always within 0.5 ulp of the output type + 2^-53 relative.

NONZERO_COORDINATES: NumPy on the strided input: ``x != 0`` (so -0.0 is zero, as the page says,
and NaN is non-zero), ``np.nonzero`` (ascending element index), the last N coordinates of each
(the dimensions before them have size 1: N is at least the effective rank). The count goes to
OutputCountTensor, the coordinates to the first ``count`` rows of OutputCoordinatesTensor; the
rows after them are not written (the page: at most OutputCount rows are written, the rest are
undefined), so they keep what the buffer held. The reference shows them as 0, as the page's
example prints them: compare only the first ``count`` rows.

RANDOM_GENERATOR (Philox 4x32-10, ``kernels/special.py``): InputStateTensor's six UINT32 values in
their logical order are the counter's words, least significant first (elements 0 … 3), then the
key's (element 4 the low word). Output element i (row-major over OutputTensor's Sizes) is word
i mod 4 of the block of counter + floor(i / 4) (modulo 2^128) and the key, so one execution uses
ceil(n / 4) consecutive counters; OutputStateTensor, when bound, gets counter + ceil(n / 4)
(modulo 2^128) and the key unchanged, so the next execution continues the stream.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from descriptors import DML_OPERATOR_TYPE, NUMPY_DTYPE
from descriptors import DML_TENSOR_DATA_TYPE as T

from .. import elementwise
from ..elementwise.plan import ElementWisePlan
from ..validation import Tensor
from .plan import IndexMap, affine
from .table import FLOATS, Row, fill_bits, fill_element, identity_tables

OP = DML_OPERATOR_TYPE
UINT32 = T.DML_TENSOR_DATA_TYPE_UINT32
# NONZERO_COORDINATES' input types (the output tensors are UINT32).
NONZERO_TYPES = (T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16,
                 T.DML_TENSOR_DATA_TYPE_INT32, T.DML_TENSOR_DATA_TYPE_INT16,
                 T.DML_TENSOR_DATA_TYPE_INT8, UINT32, T.DML_TENSOR_DATA_TYPE_UINT16,
                 T.DML_TENSOR_DATA_TYPE_UINT8)


# --- DIAGONAL_MATRIX1 ----------------------------------------------------------------------------

PATTERN = "pattern"  # the bind-point name the no-input map reads its pattern from


def diagonal_band(h: int, w: int, begin: int, end: int) -> np.ndarray:
    """Whether each diagonal x - y (from -(h - 1) to w - 1) takes Value (the page's XOR)."""
    top_x = np.arange(-(h - 1), w, dtype=np.int64)
    return np.asarray((end >= begin) ^ (top_x >= begin) ^ (top_x < end), bool)


@dataclass(frozen=True, eq=False)
class DiagonalPlan:
    """``copy`` (the pattern without InputTensor, else InputTensor) into the output; with an input,
    then Value through the band (see the module docstring)."""

    copy: IndexMap
    pattern: np.ndarray | None  # the pattern's bytes (no InputTensor), else None
    band: np.ndarray  # per diagonal x - y + h - 1: takes Value
    output: Tensor
    value: int  # Value's bits

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        if self.pattern is not None:
            self.copy.run({**regions, PATTERN: self.pattern})
            return
        self.copy.run(regions)
        out = self.output
        *_, h, w = out.sizes
        mask = np.lib.stride_tricks.as_strided(self.band[h - 1:], shape=(h, w),
                                               strides=(-self.band.itemsize, self.band.itemsize))
        bits = out.view(regions["OutputTensor"]).view(f"u{out.element_size}")
        np.copyto(bits, np.array(self.value, np.uint64).astype(bits.dtype), where=mask)


def diagonal_matrix1_plan(v: SimpleNamespace) -> DiagonalPlan:
    out: Tensor = v.OutputTensor
    *batch, h, w = out.sizes
    size = out.element_size
    band = diagonal_band(h, w, v.DiagonalFillBegin, v.DiagonalFillEnd)
    value = fill_bits(v.Value, out.data_type)
    if v.InputTensor is not None:
        copy = IndexMap.build("InputTensor", "OutputTensor", size, out.sizes, out.strides,
                              identity_tables(v.InputTensor))
        return DiagonalPlan(copy, None, band, out, value)
    pattern = np.where(band, np.uint64(value), np.uint64(0)).astype(f"u{size}")
    tables = [affine(n, 0) for n in batch] + [affine(h, -1, h - 1), affine(w, 1)]
    copy = IndexMap.build(PATTERN, "OutputTensor", size, out.sizes, out.strides, tables)
    return DiagonalPlan(copy, pattern.view(np.uint8), band, out, value)


def diagonal_matrix1_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                               ) -> dict[str, np.ndarray]:
    """The page's pseudocode: topX = x - y; useValue = (End >= Begin) ^ (topX >= Begin) ^
    (topX < End); Value, else the input element, else 0."""
    out = v.OutputTensor
    dtype = np.dtype(NUMPY_DTYPE[out.data_type])
    *_, h, w = out.sizes
    y, x = np.indices((h, w))
    top_x = x - y
    begin, end = v.DiagonalFillBegin, v.DiagonalFillEnd
    use_value = (end >= begin) ^ (top_x >= begin) ^ (top_x < end)
    given = inputs.get("InputTensor")
    other = given if given is not None else np.zeros(out.sizes, dtype)
    value = np.array([fill_element(v.Value, out.data_type)])
    result = np.array(np.broadcast_to(other, out.sizes), dtype)
    bits = result.view(f"u{dtype.itemsize}")
    bits[..., use_value] = value.view(bits.dtype)[0]
    return {"OutputTensor": result}


# --- VALUE_SCALE_2D ------------------------------------------------------------------------------

IDENTITY_KERNELS = f"{elementwise.__name__}.kernels.element_wise_identity"


@dataclass(frozen=True, eq=False)
class ValueScalePlan:
    """One ELEMENT_WISE_IDENTITY ScaleBias run per channel, on the bound bytes from that channel's
    first element on (the channel's element offset · element size)."""

    channels: tuple[tuple[ElementWisePlan, int, int], ...]  # (run, input byte, output byte)

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        x, y = regions["InputTensor"], regions["OutputTensor"]
        for run, x_at, y_at in self.channels:
            run.run({"InputTensor": x[x_at:], "OutputTensor": y[y_at:]})


def value_scale_2d_plan(v: SimpleNamespace) -> ValueScalePlan:
    x: Tensor = v.InputTensor
    out: Tensor = v.OutputTensor
    n, _, h, w = out.sizes
    size = out.element_size
    channels = []
    for c in range(v.ChannelCount):
        run = ElementWisePlan.build(
            IDENTITY_KERNELS, "f64_sb", [("InputTensor", x.data_type, x.strides)],
            ("OutputTensor", out.data_type, (n, 1, h, w), out.strides),
            (0.0, 0.0, float(v.Scale), float(v.Bias[c]), 0.0, 0.0))
        channels.append((run, c * x.strides[1] * size, c * out.strides[1] * size))
    return ValueScalePlan(tuple(channels))


def value_scale_2d_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                             ) -> dict[str, np.ndarray]:
    """Output = Scale·Input + Bias[channel], in float64, rounded once to the output's type."""
    x = inputs["InputTensor"]
    bias = np.array(v.Bias, np.float64).reshape(1, -1, 1, 1)
    with np.errstate(all="ignore"):
        y = x.astype(np.float64) * np.float64(v.Scale) + bias
        return {"OutputTensor": y.astype(x.dtype)}


# --- NONZERO_COORDINATES -------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class NonzeroPlan:
    """np.nonzero on the strided input; the count, then the first ``count`` coordinate rows."""

    input: Tensor
    count: Tensor
    coordinates: Tensor

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        x = self.input.view(regions["InputTensor"])
        n = self.coordinates.sizes[-1]
        found = np.nonzero(x != 0)
        rows = np.stack(found[x.ndim - n:], axis=1)
        self.count.view(regions["OutputCountTensor"])[...] = found[0].size
        coords = self.coordinates.view(regions["OutputCoordinatesTensor"])
        coords[(0,) * (coords.ndim - 2)][: found[0].size] = rows


def nonzero_coordinates_plan(v: SimpleNamespace) -> NonzeroPlan:
    return NonzeroPlan(v.InputTensor, v.OutputCountTensor, v.OutputCoordinatesTensor)


def nonzero_coordinates_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                                  ) -> dict[str, np.ndarray]:
    """Count of elements other than ±0; the coordinates of each (its last N), in row-major
    order; the rows past the count shown as 0 (undefined: the plan leaves them unwritten)."""
    x = inputs["InputTensor"]
    coords_tensor = v.OutputCoordinatesTensor
    m, n = coords_tensor.sizes[-2:]
    found = np.argwhere(x != 0)  # row-major order
    coords = np.zeros((m, n), np.uint32)
    coords[: len(found)] = found[:, x.ndim - n:]
    return {"OutputCountTensor": np.full(v.OutputCountTensor.sizes, len(found), np.uint32),
            "OutputCoordinatesTensor": coords.reshape(coords_tensor.sizes)}


# --- RANDOM_GENERATOR ----------------------------------------------------------------------------

def state_words(t: Tensor, region: np.ndarray) -> list[int]:
    """The six UINT32 values of a Philox state tensor, in logical order."""
    return [int(w) for w in t.view(region).reshape(-1)]


def advanced(words: list[int], elements: int) -> np.ndarray:
    """A state's six words with the 128-bit counter (words 0 … 3, least significant first)
    advanced by ceil(elements / 4), modulo 2^128; the key words kept."""
    counter = sum(word << (32 * k) for k, word in enumerate(words[:4]))
    counter = (counter + -(-elements // 4)) % (1 << 128)
    return np.array([(counter >> (32 * k)) & 0xFFFFFFFF for k in range(4)] + words[4:],
                    np.uint32)


@dataclass(frozen=True, eq=False)
class PhiloxPlan:
    """The Philox 4x32-10 kernel into the output (directly when it is packed), then the advanced
    state."""

    state: Tensor
    output: Tensor
    next_state: Tensor | None

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        from ..kernels.special import philox4x32_10

        words = state_words(self.state, regions["InputStateTensor"])
        out = self.output.view(regions["OutputTensor"])
        dense = out.reshape(-1) if out.flags.c_contiguous else \
            np.empty(self.output.element_count, np.uint32)
        philox4x32_10(np.uint64(words[0] | words[1] << 32), np.uint64(words[2] | words[3] << 32),
                      np.uint64(words[4]), np.uint64(words[5]), dense)
        if not out.flags.c_contiguous:
            out[...] = dense.reshape(out.shape)
        if self.next_state is not None:
            self.next_state.view(regions["OutputStateTensor"])[...] = advanced(
                words, self.output.element_count).reshape(self.next_state.sizes)


def random_generator_plan(v: SimpleNamespace) -> PhiloxPlan:
    return PhiloxPlan(v.InputStateTensor, v.OutputTensor, v.OutputStateTensor)


def philox_blocks(counter: int, key: tuple[int, int], blocks: int) -> np.ndarray:
    """[blocks, 4] uint32: Philox 4x32-10 of counters counter … counter + blocks - 1 (modulo
    2^128) under ``key`` (Random123's philox4x32 with R = 10)."""
    mask = 0xFFFFFFFF
    ctrs = [(counter + b) % (1 << 128) for b in range(blocks)]
    c = np.array([[(k >> (32 * j)) & mask for j in range(4)] for k in ctrs], np.uint64)
    k0, k1 = key
    for _ in range(10):
        hi_lo0 = np.uint64(0xD2511F53) * c[:, 0]
        hi_lo1 = np.uint64(0xCD9E8D57) * c[:, 2]
        c = np.stack([(hi_lo1 >> np.uint64(32)) ^ c[:, 1] ^ np.uint64(k0),
                      hi_lo1 & np.uint64(mask),
                      (hi_lo0 >> np.uint64(32)) ^ c[:, 3] ^ np.uint64(k1),
                      hi_lo0 & np.uint64(mask)], axis=1)
        k0, k1 = (k0 + 0x9E3779B9) & mask, (k1 + 0xBB67AE85) & mask
    return c.astype(np.uint32)


def random_generator_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                               ) -> dict[str, np.ndarray]:
    """Output element i = word i mod 4 of Philox(counter + i // 4, key); the next state's counter
    is counter + ceil(n / 4)."""
    words = [int(w) for w in np.ravel(inputs["InputStateTensor"])]
    counter = sum(word << (32 * k) for k, word in enumerate(words[:4]))
    out = v.OutputTensor
    n = out.element_count
    values = philox_blocks(counter, (words[4], words[5]), (n + 3) // 4).ravel()[:n]
    result = {"OutputTensor": values.reshape(out.sizes)}
    if v.OutputStateTensor is not None:
        after = (counter + (n + 3) // 4) % (1 << 128)
        state = [(after >> (32 * k)) & 0xFFFFFFFF for k in range(4)] + words[4:]
        result["OutputStateTensor"] = np.array(state, np.uint32).reshape(
            v.OutputStateTensor.sizes)
    return result


ROWS: tuple[Row, ...] = (
    Row(OP.DML_OPERATOR_DIAGONAL_MATRIX1, diagonal_matrix1_plan, diagonal_matrix1_reference),
    Row(OP.DML_OPERATOR_VALUE_SCALE_2D, value_scale_2d_plan, value_scale_2d_reference, FLOATS),
    Row(OP.DML_OPERATOR_NONZERO_COORDINATES, nonzero_coordinates_plan,
        nonzero_coordinates_reference, NONZERO_TYPES),
    Row(OP.DML_OPERATOR_RANDOM_GENERATOR, random_generator_plan, random_generator_reference,
        (UINT32,)),
)
