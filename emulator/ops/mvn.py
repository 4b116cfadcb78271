"""DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION (version 0): MVN1 over fixed axes of a 4-D input.

CrossChannel FALSE normalizes over axes {0, 2, 3}, TRUE over {1, 2, 3} (the
MVN1 page; the v0 page's prose says {2, 3} for FALSE, which this project does not follow). 4-D at
every level; Scale and Bias may broadcast any dimension; otherwise as MVN1.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace

import numpy as np

from ..plan import MVNPlan
from ..validation import Context
from . import mvn1
from .activation import check_fused

KERNEL_TYPES = mvn1.KERNEL_TYPES


def axes(v: SimpleNamespace) -> tuple[int, ...]:
    return (1, 2, 3) if v.CrossChannel else (0, 2, 3)


def validate(ctx: Context, v: SimpleNamespace) -> None:
    mvn1.check_common(ctx, v, channel_rule=False)
    v.fused = check_fused(ctx, v.FusedActivation)


def plan(v: SimpleNamespace) -> MVNPlan:
    return mvn1.mvn_plan(v, axes(v), bool(v.NormalizeVariance))


def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return mvn1.mvn_reference(v, inputs, axes(v))
