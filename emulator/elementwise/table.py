"""The element-wise family table: one row per operator.

A row says what the operator computes, once, for everything that needs it:
- the input bind points (OutputTensor is always the output);
- ``float_body`` / ``int_body``: the scalar function as a Numba expression (or statements ending
  in ``return``) over ``a``, ``b``, ``c`` (the inputs) and ``p0``, ``p1`` (the operator's
  parameters),
  for float tensors (computed in float64 and rounded once on store) and integer tensors
  (computed in the integer type: C's wrapping arithmetic). ``None``: the kernel does not
  handle that kind of type yet;
- ``reference``: the page's formula on NumPy arrays, read literally (float64 for float tensors,
  the tensor's own type for integers);
- ``params``: the operator's parameters (p0, p1) from its validated fields (None: it has none);
  the reference takes them after the inputs;
- ``ulp``: the bound between kernel and reference for float tensors (0: bit-exact);
- ``exact32``: the float function is exact or one IEEE operation, so computing FLOAT32 and FLOAT16
  tensors in float32 gives the same correctly rounded result as float64 (faster: no widening);
- ``output``: ``"same"`` (the output has the inputs' kind of type) or ``"flag"`` (a 0/1 result in
  an integer output: comparisons, IS_NAN …);
- ``scale_bias`` / ``fused``: whether the desc has ScaleBias (applied to each input before the
  function) or a FusedActivation (applied to the result).

``generate.py`` writes one kernel module per row from this table (``kernels/``), so adding an
operator is adding a row and regenerating. Semantics and page facts: docs/elementwise-pages.md;
decisions where the pages are silent: docs/decisions.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from descriptors import DML_OPERATOR_TYPE

from ..activations import _max, _min

OP = DML_OPERATOR_TYPE


@dataclass(frozen=True)
class Row:
    operator: DML_OPERATOR_TYPE
    inputs: tuple[str, ...]
    float_body: str | None
    int_body: str | None
    reference: Callable[..., np.ndarray]
    params: Callable[[SimpleNamespace], tuple[float, float]] | None = None
    ulp: int = 0
    exact32: bool = False
    output: str = "same"
    scale_bias: bool = False
    fused: bool = False

    @property
    def name(self) -> str:
        return self.operator.name.removeprefix("DML_OPERATOR_").lower()

    @property
    def arity(self) -> int:
        return len(self.inputs)

    def param_values(self, v: SimpleNamespace) -> tuple[float, ...]:
        return self.params(v) if self.params is not None else ()


UNARY = ("InputTensor",)
BINARY = ("ATensor", "BTensor")

# Direct3D's max and min (docs/decisions.md): a >= b ? a : b and a < b ? a : b, and the operand
# that is not NaN where one is.
D3D_MAX = "(a if (a >= b or b != b) else b)"
D3D_MIN = "(a if (a < b or b != b) else b)"


def _clip_params(v: SimpleNamespace) -> tuple[float, float]:
    return float(v.Min), float(v.Max)


def _clip(x: np.ndarray, lo: Any, hi: Any) -> np.ndarray:
    """CLIP's formula: min(Max, max(Min, x))."""
    return _min(hi, _max(lo, x))


def _clip1(x: np.ndarray, lo: Any, hi: Any) -> np.ndarray:
    """CLIP1's formula (sdk-api's page): max(Min, min(x, Max))."""
    return _max(lo, _min(x, hi))


ROWS: tuple[Row, ...] = (
    Row(OP.DML_OPERATOR_ELEMENT_WISE_IDENTITY, UNARY, "a", "a", lambda a: a, scale_bias=True,
        exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_ABS, UNARY, "abs(a)", "abs(a)", np.abs, scale_bias=True,
        exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_NEGATE, UNARY, "-a", "-a", np.negative, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_ADD, BINARY, "a + b", "a + b", np.add, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_ADD1, BINARY, "a + b", None, np.add, fused=True, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_SUBTRACT, BINARY, "a - b", "a - b", np.subtract, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_MULTIPLY, BINARY, "a * b", "a * b", np.multiply, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_DIVIDE, BINARY, "a / b", None, np.divide, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_MAX, BINARY, D3D_MAX, D3D_MAX, _max, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_MIN, BINARY, D3D_MIN, D3D_MIN, _min, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_CLIP, UNARY,
        "m = p0 if (p0 >= a or a != a) else a\n"  # max(Min, x)
        "return p1 if (p1 < m or m != m) else m",  # min(Max, that)
        None, _clip, _clip_params, scale_bias=True, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_CLIP1, UNARY,
        "m = a if (a < p1 or p1 != p1) else p1\n"  # min(x, Max)
        "return p0 if (p0 >= m or m != m) else m",  # max(Min, that)
        None, _clip1, _clip_params, scale_bias=True, exact32=True),
)

BY_OPERATOR: dict[DML_OPERATOR_TYPE, Row] = {r.operator: r for r in ROWS}
