"""DML_OPERATOR_ACTIVATION_PARAMETERIZED_RELU: y = x if x >= 0 else slope * x, per element.

SlopeTensor has the input's sizes (broadcast it with zero strides); all three tensors share a
DataType (FLOAT32, FLOAT16). Dimension counts as for every activation; in-place allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace

import numpy as np

from ..plan import UnaryPlan
from ..validation import Context
from .activation import FLOATS, check_same_tensor
from .common import ieee_reference

KERNEL_TYPES = FLOATS  # the kernel's types; the tables (support/activations.json) admit more


def validate(ctx: Context, v: SimpleNamespace) -> None:
    check_same_tensor(ctx, v, "SlopeTensor")
    check_same_tensor(ctx, v)


def plan(v: SimpleNamespace) -> UnaryPlan:
    i = v.InputTensor
    return UnaryPlan.build(i.element_size, i.sizes, i.strides, v.OutputTensor.strides,
                           slope=v.SlopeTensor.strides, slope_name="SlopeTensor")


@ieee_reference
def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    x, slope = inputs["InputTensor"], inputs["SlopeTensor"]
    wide = x.astype(np.float64)
    y = np.where(wide >= 0, wide, slope.astype(np.float64) * wide)
    return {"OutputTensor": np.where(np.isnan(wide), wide, y).astype(x.dtype)}
