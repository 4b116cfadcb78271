"""DML_OPERATOR_ADAM_OPTIMIZER: one Adam step, element by element, with three outputs.

The page's formula, read literally:

    M' = Beta1 * M + (1 - Beta1) * G
    V' = Beta2 * V + (1 - Beta2) * G * G
    Alpha = sqrt(1 - Beta2^T) / (1 - Beta1^T)
    X' = X - LearningRate * Alpha * M' / (sqrt(V') + Epsilon)

computed in float64 from the tensors' values and the FLOAT attributes, each output rounded once
to the tensors' type. T is TrainingStepTensor's one value (FLOAT32 or FLOAT16, as the page's
table says); the operator does not change it. T = 0 makes Alpha 0/0 = NaN, as the formula says
(docs/decisions.md): start counting at 1, or add 1 before the step.

Every result is computed before any output is written, so an output may alias any input but
the training step (the in-place execution the page allows).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from descriptors import DML_TENSOR_DATA_TYPE as T

from ..validation import Tensor

KERNEL_TYPES = (T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16)
INPUTS = ("InputParametersTensor", "InputFirstMomentTensor", "InputSecondMomentTensor",
          "GradientTensor")
OUTPUTS = ("OutputParametersTensor", "OutputFirstMomentTensor", "OutputSecondMomentTensor")


def step(x: np.ndarray, m: np.ndarray, v: np.ndarray, g: np.ndarray, t: float,
         lr: float, beta1: float, beta2: float, eps: float
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The formula on float64 arrays."""
    with np.errstate(all="ignore"):
        m = beta1 * m + (1.0 - beta1) * g
        v = beta2 * v + (1.0 - beta2) * g * g
        alpha = np.sqrt(1.0 - np.power(beta2, t)) / (1.0 - np.power(beta1, t))
        x = x - lr * alpha * m / (np.sqrt(v) + eps)
    return x, m, v


@dataclass(frozen=True, eq=False)
class AdamPlan:
    tensors: Mapping[str, Tensor]
    params: tuple[float, float, float, float]

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        x, m, v, g = (self.tensors[n].view(regions[n]).astype(np.float64) for n in INPUTS)
        step_t = self.tensors["TrainingStepTensor"]
        t = float(step_t.view(regions["TrainingStepTensor"]).reshape(-1)[0])
        results = step(x, m, v, g, t, *self.params)
        for name, r in zip(OUTPUTS, results):
            out = self.tensors[name]
            out.view(regions[name])[...] = r.astype(out.dtype)


def plan(v: SimpleNamespace) -> AdamPlan:
    names = (*INPUTS, "TrainingStepTensor", *OUTPUTS)
    return AdamPlan({n: getattr(v, n) for n in names},
                    (float(v.LearningRate), float(v.Beta1), float(v.Beta2), float(v.Epsilon)))


def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    x, m, s, g = (inputs[n].astype(np.float64) for n in INPUTS)
    t = float(inputs["TrainingStepTensor"].reshape(-1)[0])
    b1, b2 = float(v.Beta1), float(v.Beta2)
    with np.errstate(all="ignore"):
        m2 = b1 * m + (1 - b1) * g
        s2 = b2 * s + (1 - b2) * g * g
        alpha = np.sqrt(1 - np.float64(b2) ** t) / (1 - np.float64(b1) ** t)  # T = 0: 0/0
        x2 = x - float(v.LearningRate) * alpha * m2 / (np.sqrt(s2) + float(v.Epsilon))
    dtype = inputs["InputParametersTensor"].dtype
    return {"OutputParametersTensor": x2.astype(dtype), "OutputFirstMomentTensor": m2.astype(dtype),
            "OutputSecondMomentTensor": s2.astype(dtype)}
