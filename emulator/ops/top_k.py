"""DML_OPERATOR_TOP_K (DML_TOP_K_OPERATOR_DESC): TOP_K1 with DML_AXIS_DIRECTION_DECREASING.

Microsoft's page says this operator was introduced in DML_FEATURE_LEVEL_2_0 (4-D, FLOAT32 and
FLOAT16); 2_1 adds the integer types and 3_1 the dimension counts 1 to 8, as for TOP_K1.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace

import numpy as np

from ..plan import TopKPlan
from ..validation import Context
from . import top_k1

KERNEL_TYPES = top_k1.KERNEL_TYPES


def validate(ctx: Context, v: SimpleNamespace) -> None:
    top_k1.validate(ctx, v)


def plan(v: SimpleNamespace) -> TopKPlan:
    return top_k1.top_k_plan(v, decreasing=True)


def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    v1 = SimpleNamespace(**vars(v), AxisDirection=top_k1.DECREASING)
    return top_k1.reference(v1, inputs)
