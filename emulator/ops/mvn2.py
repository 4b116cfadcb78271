"""DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION2 (6_3): MVN1 with the mean and the variance each
optional, on MVN1's plan and kernel.

    Output = FusedActivation(Scale * (Input - Mean) / sqrt(Variance + Epsilon) + Bias)

Mean and Variance are over the elements sharing every coordinate outside ``Axes`` (the
population variance, about Mean). The page says "TBD" for UseMean and UseVariance, so these are
**decisions**, from how ONNX Runtime's DirectML provider uses the operator (LayerNormalization
with UseMean and UseVariance; SimplifiedLayerNormalization, the RMS normalization
x / sqrt(mean(x^2) + epsilon), with UseMean FALSE and UseVariance TRUE):

- UseMean FALSE: Mean is 0 (nothing is subtracted, and Variance is the mean of the squares);
- UseVariance FALSE: nothing is divided (Epsilon is unused);
- Epsilon inside the square root, as in MVN1 and both ONNX operators;
- Scale and Bias each optional (1 and 0 when absent), broadcast from any dimension of size 1.

Non-finite values and a zero variance follow the formula element by element, as for MVN1.
The rules are the support table's (``mean_variance_normalization2``); the fused activation's are
checked here.
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


def validate(ctx: Context, v: SimpleNamespace) -> None:
    v.fused = check_fused(ctx, v.FusedActivation)


def plan(v: SimpleNamespace) -> MVNPlan:
    return mvn1.mvn_plan(v, v.Axes, bool(v.UseVariance), bool(v.UseMean))


def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    x = inputs["InputTensor"]
    y = mvn1.normalize(x, v.Axes, inputs.get("ScaleTensor"), inputs.get("BiasTensor"),
                       bool(v.UseVariance), v.Epsilon, v.fused, use_mean=bool(v.UseMean))
    return {"OutputTensor": y.astype(x.dtype)}
