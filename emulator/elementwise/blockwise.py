"""QUANTIZE and DEQUANTIZE (DML_FEATURE_LEVEL_6_3): linear quantization with per-tensor,
per-axis or blockwise scales and zero points, 8-bit or 4-bit.

The pages leave every field "TBD"; the semantics here are ELEMENT_WISE_QUANTIZE_LINEAR's and
ELEMENT_WISE_DEQUANTIZE_LINEAR's, with the quantization tensors given by QuantizationType
(``{scale}`` or ``{scale, zero point}``), as ONNX Runtime's DirectML provider builds them for
MatMulNBits (docs/decisions.md). A quantization tensor's size in each dimension divides the
data tensor's: size 1 is one value for the dimension, the data's size is one per element, and
anything between is blockwise, each value covering ``data size / size`` consecutive elements.

One mechanism covers all three: every dimension d of size N with a quantization size S is split
into (S, N/S), the outer with the data's stride * N/S and the quantization tensor's stride, the
inner with the data's stride and stride 0 (the value repeats across the block). The split tensors
run through the element-wise rows' own kernels (``kernels/element_wise_quantize_linear.py``,
``…dequantize_linear.py``); the plan's collapse merges the split dimensions back wherever it can.
4-bit tensors are unpacked to (or packed from) an int8/uint8 scratch copy around the kernel
(``emulator/nibbles.py``), the quantized result clamped to the 4-bit range first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from descriptors import DML_OPERATOR_TYPE, NUMPY_DTYPE
from descriptors import DML_TENSOR_DATA_TYPE as T

from .. import nibbles
from ..validation import Tensor, packed_strides
from . import references as ref
from .plan import ElementWisePlan

OP = DML_OPERATOR_TYPE
# The element-wise row whose kernel each operator runs.
ROW_OF = {OP.DML_OPERATOR_QUANTIZE: OP.DML_OPERATOR_ELEMENT_WISE_QUANTIZE_LINEAR,
          OP.DML_OPERATOR_DEQUANTIZE: OP.DML_OPERATOR_ELEMENT_WISE_DEQUANTIZE_LINEAR}
KERNEL_TYPES = (T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16,
                T.DML_TENSOR_DATA_TYPE_INT8, T.DML_TENSOR_DATA_TYPE_UINT8,
                T.DML_TENSOR_DATA_TYPE_INT4, T.DML_TENSOR_DATA_TYPE_UINT4)
# The 8-bit type a 4-bit tensor is computed in.
WIDE = {T.DML_TENSOR_DATA_TYPE_INT4: T.DML_TENSOR_DATA_TYPE_INT8,
        T.DML_TENSOR_DATA_TYPE_UINT4: T.DML_TENSOR_DATA_TYPE_UINT8}


def split(sizes: Sequence[int], block_sizes: Sequence[int]) -> tuple[int, ...]:
    """Each dimension N with a quantization size S as (S, N / S)."""
    return tuple(x for n, s in zip(sizes, block_sizes) for x in (s, n // s))


def data_strides(sizes: Sequence[int], block_sizes: Sequence[int], strides: Sequence[int]
                 ) -> tuple[int, ...]:
    """A data tensor's strides over the split dimensions."""
    return tuple(x for n, s, st in zip(sizes, block_sizes, strides) for x in (n // s * st, st))


def block_strides(strides: Sequence[int]) -> tuple[int, ...]:
    """A quantization tensor's strides over the split dimensions: the value repeats in a block."""
    return tuple(x for st in strides for x in (st, 0))


@dataclass(frozen=True)
class Side:
    """How one tensor reaches the kernel: its bind point and, for a 4-bit tensor, the desc it is
    unpacked from or packed into (the kernel then sees a packed int8/uint8 scratch array)."""

    bind_point: str
    four_bit: Tensor | None


@dataclass(frozen=True, eq=False)
class BlockwisePlan:
    inner: ElementWisePlan
    sides: Mapping[str, Side]  # the kernel's tensor names -> where their bytes come from

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        arrays: dict[str, np.ndarray] = {}
        packs = []
        for name, side in self.sides.items():
            region = regions.get(side.bind_point)
            t = side.four_bit
            if region is None:
                continue
            if t is None:
                arrays[name] = region
            elif name == self.inner.output:  # computed into scratch, packed afterwards
                scratch = np.empty(t.element_count, nibbles.LOGICAL[t.data_type])
                arrays[name] = scratch.view(np.uint8)
                packs.append((t, region, scratch))
            else:
                arrays[name] = nibbles.read(t.data_type, t.sizes, t.strides, region).reshape(
                    -1).view(np.uint8)
        self.inner.run(arrays)
        for t, region, scratch in packs:
            lo, hi = nibbles.RANGE[t.data_type]
            nibbles.write(t.data_type, t.sizes, t.strides, region, np.clip(scratch, lo, hi))


def module(op: DML_OPERATOR_TYPE) -> SimpleNamespace:
    from . import module as row_module

    row = row_module(ROW_OF[op])
    quantize = op == OP.DML_OPERATOR_QUANTIZE

    def plan(v: SimpleNamespace) -> BlockwisePlan:
        data = v.InputTensor
        scale, *zero = v.QuantizationTensors
        blocks = scale.sizes
        sides: dict[str, Side] = {}
        fake = SimpleNamespace(ScaleBias=None, FusedActivation=None)
        for name, bind, t, block in (
                ("InputTensor", "InputTensor", data, False),
                ("ScaleTensor", "QuantizationTensors[0]", scale, True),
                ("ZeroPointTensor", "QuantizationTensors[1]", zero[0] if zero else None, True),
                ("OutputTensor", "OutputTensor", v.OutputTensor, False)):
            if t is None:
                setattr(fake, name, None)
                continue
            four = t.data_type in nibbles.FOUR_BIT
            strides = packed_strides(t.sizes) if four else t.strides
            setattr(fake, name, SimpleNamespace(
                data_type=WIDE.get(t.data_type, t.data_type),
                sizes=split(data.sizes, blocks),
                strides=block_strides(strides) if block else data_strides(
                    data.sizes, blocks, strides)))
            sides[name] = Side(bind, t if four else None)
        return BlockwisePlan(row.plan(fake), sides)

    def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                  ) -> dict[str, np.ndarray]:
        """The linear formula with every quantization value repeated over its block. 4-bit
        tensors are logical int8/uint8 arrays of their values."""
        x = inputs["InputTensor"]
        scale = _expand(inputs["QuantizationTensors[0]"], x.shape)
        zp = inputs.get("QuantizationTensors[1]")
        zp = None if zp is None else _expand(zp, x.shape)
        out_type = v.OutputTensor.data_type
        dtype = nibbles.LOGICAL.get(out_type) or np.dtype(NUMPY_DTYPE[out_type])
        if not quantize:
            return {"OutputTensor": ref.dequantize_linear(x, scale, zp, dtype)}
        y = ref.quantize_linear(x, scale, zp, dtype)
        if out_type in nibbles.RANGE:
            y = np.clip(y, *nibbles.RANGE[out_type]).astype(dtype)
        return {"OutputTensor": y}

    return SimpleNamespace(
        __name__=f"{__name__}[{op.name}]", __doc__=f"{op.name}: {__doc__}",
        KERNEL_TYPES=KERNEL_TYPES, plan=plan, reference=reference)


def _expand(q: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """A quantization tensor repeated over its blocks to the data's shape."""
    for d, n in enumerate(shape):
        q = np.repeat(q, n // q.shape[d], axis=d)
    return q
