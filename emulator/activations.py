"""The activation table: one row per activation, shared by the standalone activation operators and
every operator that fuses one (MVN1, MVN).

Each row gives the operator, its attribute fields (passed to kernels as p0, p1) and a NumPy
reference that is the page's formula, read literally; the levels (standalone and fused) are read
from the support tables. ``KIND`` numbers the Numba epilogues in ``kernels/activation.py``.

Edge values (NaN, ±inf, ±0) follow the formula as written, evaluated with IEEE arithmetic: a
comparison with NaN is false (so "x if x > Alpha, 0 otherwise" gives 0 for NaN), -0 equals +0,
inf/inf and 0·inf are NaN. ``max``/``min`` are Direct3D's (the instructions DirectML's shaders
use): if one operand is NaN the other is returned, max(a, b) = a >= b ? a : b and
min(a, b) = a < b ? a : b. Where the formula's value is finite and defined, the result is that
value correctly rounded (exp(x) - 1 is computed as expm1, which differs only in the sign of a zero
that the formula then discards). docs/decisions.md lists the result per activation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from descriptors import DML_FEATURE_LEVEL, DML_OPERATOR_TYPE

OP = DML_OPERATOR_TYPE
FL = DML_FEATURE_LEVEL


def _softplus(z: np.ndarray) -> np.ndarray:
    """ln(1 + e^z) without overflow or cancellation."""
    return np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z)))


def _gelu(x: np.ndarray) -> np.ndarray:
    """0.5·x·(1 + erf(x/√2)); GELU(-inf) = -inf·0 = NaN, as the formula says."""
    import math

    erfc = np.vectorize(lambda v: math.erfc(float(v)), otypes=[np.float64])
    return 0.5 * x * erfc(-x / np.sqrt(x.dtype.type(2)))  # 1 + erf(t) = erfc(-t), no cancellation


def _max(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """Direct3D's max: a >= b ? a : b, and the other operand where one is NaN."""
    return np.where((a >= b) | np.isnan(b), a, b)


def _min(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """Direct3D's min: a < b ? a : b, and the other operand where one is NaN."""
    return np.where((a < b) | np.isnan(b), a, b)


@dataclass(frozen=True)
class Activation:
    operator: DML_OPERATOR_TYPE
    kind: int
    params: tuple[str, ...]
    formula: Callable[..., np.ndarray]

    @property
    def introduced(self) -> DML_FEATURE_LEVEL:
        """The standalone operator's level (its page's Availability, in the support tables)."""
        from .support.loader import SUPPORT

        return SUPPORT[self.operator].available

    @property
    def fusable_from(self) -> DML_FEATURE_LEVEL | None:
        """The level from which hosts may fuse it (support/fused_activations.json)."""
        from .fused import table

        entry = table().activations.get(self.operator)
        return entry[0] if entry else None

    @property
    def name(self) -> str:
        return self.operator.name.removeprefix("DML_OPERATOR_ACTIVATION_")

    def reference(self, x: np.ndarray, *params: float) -> np.ndarray:
        """The formula on x (any float dtype; float64 or longdouble for accuracy)."""
        with np.errstate(all="ignore"):
            p = [x.dtype.type(v) for v in params]
            return np.asarray(self.formula(x, *p), dtype=x.dtype)


def _a(op: OP, kind: int, params: tuple[str, ...],
       formula: Callable[..., np.ndarray]) -> Activation:
    return Activation(op, kind, params, formula)


# Elementwise activations (the pages' formulas, literally). Their levels, standalone and fused, are
# in the support tables (emulator/support/activations.json, fused_activations.json).
ACTIVATIONS: tuple[Activation, ...] = (
    _a(OP.DML_OPERATOR_ACTIVATION_IDENTITY, 0, (), lambda x: x),
    _a(OP.DML_OPERATOR_ACTIVATION_LINEAR, 1, ("Alpha", "Beta"), lambda x, a, b: a * x + b),
    _a(OP.DML_OPERATOR_ACTIVATION_SIGMOID, 2, (), lambda x: 1 / (1 + np.exp(-x))),
    _a(OP.DML_OPERATOR_ACTIVATION_HARD_SIGMOID, 3, ("Alpha", "Beta"),
       lambda x, a, b: _max(0, _min(a * x + b, 1))),
    _a(OP.DML_OPERATOR_ACTIVATION_TANH, 4, (), np.tanh),
    _a(OP.DML_OPERATOR_ACTIVATION_SCALED_TANH, 5, ("Alpha", "Beta"),
       lambda x, a, b: a * np.tanh(b * x)),
    _a(OP.DML_OPERATOR_ACTIVATION_RELU, 6, (), lambda x: _max(0, x)),
    _a(OP.DML_OPERATOR_ACTIVATION_LEAKY_RELU, 7, ("Alpha",),
       lambda x, a: np.where(x >= 0, x, a * x)),
    _a(OP.DML_OPERATOR_ACTIVATION_THRESHOLDED_RELU, 8, ("Alpha",),
       lambda x, a: np.where(x > a, x, 0)),
    _a(OP.DML_OPERATOR_ACTIVATION_ELU, 9, ("Alpha",),
       lambda x, a: np.where(x >= 0, x, a * np.expm1(x))),
    _a(OP.DML_OPERATOR_ACTIVATION_CELU, 10, ("Alpha",),
       lambda x, a: _max(0, x) + _min(0, a * np.expm1(x / a))),
    _a(OP.DML_OPERATOR_ACTIVATION_SCALED_ELU, 11, ("Alpha", "Gamma"),
       lambda x, a, g: np.where(x > 0, g * x, g * (a * np.expm1(x) + 0))),  # +0 at x = ±0
    _a(OP.DML_OPERATOR_ACTIVATION_SOFTPLUS, 12, ("Steepness",),
       lambda x, s: _softplus(s * x) / s),
    _a(OP.DML_OPERATOR_ACTIVATION_PARAMETRIC_SOFTPLUS, 13, ("Alpha", "Beta"),
       lambda x, a, b: a * _softplus(b * x)),
    _a(OP.DML_OPERATOR_ACTIVATION_SOFTSIGN, 14, (),
       lambda x: x / (1 + np.abs(x))),  # ±inf: inf/inf = NaN
    _a(OP.DML_OPERATOR_ACTIVATION_SHRINK, 15, ("Bias", "Threshold"),
       lambda x, b, t: np.where(x > t, x - b, np.where(x < -t, x + b, 0))),
    _a(OP.DML_OPERATOR_ACTIVATION_GELU, 16, (), _gelu),
    _a(OP.DML_OPERATOR_ACTIVATION_SWISH, 17, ("SigmoidInputScale",),
       lambda x, s: x * (1 / (1 + np.exp(-(s * x))))),
    _a(OP.DML_OPERATOR_ACTIVATION_HARD_SWISH, 18, ("Alpha", "Beta"),
       lambda x, a, b: x * _max(0, _min(a * x + b, 1))),
)

BY_OPERATOR: dict[DML_OPERATOR_TYPE, Activation] = {a.operator: a for a in ACTIVATIONS}


def params_of(act: Activation, values: object) -> tuple[float, float]:
    """(p0, p1) for the kernels from a validated desc's attribute values (missing ones: 0)."""
    p = [*(float(getattr(values, name)) for name in act.params), 0.0, 0.0]
    return p[0], p[1]
