"""DML_OPERATOR_SLICE (DML_SLICE_OPERATOR_DESC), the feature level 1_0 slice:

    Output[c] = Input[Offsets + Strides * c],   with Sizes == OutputTensor.Sizes

Strides are unsigned; every copied element must lie inside the input. **Decision**: a stride of 0
is rejected, as in SLICE1 (the page defines a stride as the step between copied elements).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace

import numpy as np

from ..plan import CopyPlan
from ..validation import Context
from . import slice1
from .common import ELEVEN_TYPES

_T = ("InputTensor", "OutputTensor")
KERNEL_TYPES = ELEVEN_TYPES  # a copy moves bytes: every type up to 64 bits


def validate(ctx: Context, v: SimpleNamespace) -> None:
    slice1.check_tensors_and_count(ctx, v)
    in_sizes, out_sizes = v.InputTensor.sizes, v.OutputTensor.sizes
    for i, (off, size, stride) in enumerate(zip(v.Offsets, v.Sizes, v.Strides)):
        ctx.require(size == out_sizes[i], f"Sizes[{i}]", size,
                    f"the slice's Sizes must match OutputTensor.Sizes[{i}] = {out_sizes[i]}")
        ctx.require(stride != 0, f"Strides[{i}]", stride, "strides may not be 0")
        last = off + (size - 1) * stride
        ctx.require(last < in_sizes[i], f"Offsets[{i}] + (Sizes[{i}] - 1) * Strides[{i}]", last,
                    f"every copied element must lie inside InputTensor.Sizes[{i}] = {in_sizes[i]}")


def plan(v: SimpleNamespace) -> CopyPlan:
    return slice1.copy_plan(v, v.Offsets, v.Strides)


def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {"OutputTensor": slice1.gather(inputs["InputTensor"], v.Offsets, v.Strides, v.Sizes)}
