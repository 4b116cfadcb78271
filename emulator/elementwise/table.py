"""The element-wise family table: one row per operator.

A row says what the operator computes, once, for everything that needs it:
- (the input and output bind points come from the schema: ``inputs``, ``output_name``);
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
- ``int_params``: for integer tensors, the parameters as exact integers (CLIP1's 64-bit union
  bounds), passed to the integer body instead of ``params``' floats;
- ``ulp``: the bound between kernel and reference for float tensors (0: bit-exact);
- ``fast32``: for FLOAT32 and FLOAT16 tensors, a vectorisable float32 version of the function
  (``kernels/vmath.py``: within 1 ULP of the exact value over every float32 input, proved by
  ``python -m emulator.kernels.vmath``);
- ``exact32``: the float function is exact or one IEEE operation, so computing FLOAT32 and FLOAT16
  tensors in float32 gives the same correctly rounded result as float64 (faster: no widening);
- ``output``: ``"same"`` (the output has the inputs' kind of type), ``"flag"`` (a 0/1 result in
  an integer output: comparisons, IS_NAN …), ``"cast"`` (any type to any: CAST) or ``"pow"``
  (POW: a float or integer base with a float or integer exponent);
- ``loads`` / ``store``: for operators whose tensors are of different kinds (QUANTIZE_LINEAR's
  float input, float scale and integer zero point): how each input is read (``"f"`` as a float,
  ``"i"`` as an integer, ``""`` as the computation's kind) and which store writes the result
  (``"store_saturated"``: rounded values into an integer type's range); their references take
  the raw arrays (an absent optional input: None) and return exact values;
- ``scalars``: 1-element tensors (QUANTIZED_LINEAR_ADD's scales and zero points) read when the
  operator runs, as the parameters p0, p1 … (an absent one is 0); the reference takes them after
  the inputs;
- ``bitwise``: the operator works on the native encoding, so every tensor is handled as the
  unsigned integer of its width (FLOAT16/32/64 included: bits are copied, never converted);
- ``scale_bias`` / ``fused``: whether the desc has ScaleBias (applied to each input before the
  function) or a FusedActivation (applied to the result);
- ``int_as_float``: integer tensors are computed with the float body in float64 and the result
  converted as CAST converts (CONSTANT_POW's FLOAT Exponent, SHRINK's FLOAT Bias and Threshold);
- ``rules``: the operator's own validation rules beyond its support entry (an activation's
  attribute rules), ``rules(ctx, v)``.

The standalone activations (ACTIVATION_*) are rows too, built from the activation table
(``emulator.activations``): their bodies call ``kernels/activation.py``'s scalar functions, the
ones every fused activation runs through.

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

from descriptors import DML_OPERATOR_TYPE, SCHEMA

from ..activations import ACTIVATIONS, Activation, _max, _min, params_of
from . import references as ref

OP = DML_OPERATOR_TYPE


@dataclass(frozen=True)
class Row:
    operator: DML_OPERATOR_TYPE
    float_body: str | None
    int_body: str | None
    reference: Callable[..., np.ndarray]
    params: Callable[[SimpleNamespace], tuple[float, ...]] | None = None
    int_params: Callable[[SimpleNamespace], tuple[int, ...]] | None = None
    ulp: int = 0
    fast32: str | None = None
    exact32: bool = False
    output: str = "same"
    loads: tuple[str, ...] = ()
    store: str | None = None
    bitwise: bool = False
    scalars: tuple[str, ...] = ()
    scale_bias: bool = False
    fused: bool = False
    int_as_float: bool = False
    rules: Callable[[Any, SimpleNamespace], None] | None = None

    @property
    def name(self) -> str:
        return self.operator.name.removeprefix("DML_OPERATOR_").lower()

    @property
    def inputs(self) -> tuple[str, ...]:
        """The element-wise inputs' bind points, in the desc's order (the schema's tensor inputs
        but the 1-element ``scalars``): a, b, c of the bodies."""
        return tuple(f.name for f in SCHEMA[self.operator].fields if f.kind == "input"
                     and f.type == "TENSOR_DESC" and f.name not in self.scalars)

    @property
    def output_name(self) -> str:
        """The output's bind point (OutputTensor, OutputGradientTensor for the gradients)."""
        (name,) = (f.name for f in SCHEMA[self.operator].fields
                   if f.kind == "output" and f.type == "TENSOR_DESC")
        return name

    @property
    def arity(self) -> int:
        return len(self.inputs)

    def param_values(self, v: SimpleNamespace, integers: bool = False) -> tuple[float, ...]:
        """The parameters (p0, p1); ``integers``: for an integer tensor (int_params if any)."""
        if integers and self.int_params is not None:
            return self.int_params(v)
        return self.params(v) if self.params is not None else ()


# libm function -> its vectorisable FLOAT32/FLOAT16 version (kernels/vmath.py)
VMATH = {"math.exp": "exp32(a)", "math.tanh": "tanh32(a)", "math.erf": "erf32(a)"}

# Direct3D's max and min (docs/decisions.md): a >= b ? a : b and a < b ? a : b, and the operand
# that is not NaN where one is.
D3D_MAX = "(a if (a >= b or b != b) else b)"
D3D_MIN = "(a if (a < b or b != b) else b)"


def _clip_params(v: SimpleNamespace) -> tuple[float, float]:
    return float(v.Min), float(v.Max)


def _int_bounds(v: SimpleNamespace) -> tuple[int, int]:
    return int(v.Min), int(v.Max)


def _clip1(x: np.ndarray, lo: Any, hi: Any) -> np.ndarray:
    """CLIP1's formula (sdk-api's page): max(Min, min(x, Max))."""
    return _max(lo, _min(x, hi))


ROWS: tuple[Row, ...] = (
    Row(OP.DML_OPERATOR_ELEMENT_WISE_IDENTITY, "a", "a", lambda a: a, scale_bias=True,
        exact32=True, bitwise=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_ABS, "abs(a)", "abs(a)", np.abs, scale_bias=True,
        exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_NEGATE, "-a", "-a", np.negative, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_ADD, "a + b", "a + b", np.add, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_ADD1, "a + b", None, np.add, fused=True, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_SUBTRACT, "a - b", "a - b", np.subtract, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_MULTIPLY, "a * b", "a * b", np.multiply, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_DIVIDE, "a / b", "trunc_div(a, b)", ref.trunc_div,
        exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_MAX, D3D_MAX, D3D_MAX, _max, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_MIN, D3D_MIN, D3D_MIN, _min, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_CLIP,
        "m = p0 if (p0 >= a or a != a) else a\n"  # max(Min, x)
        "return p1 if (p1 < m or m != m) else m",  # min(Max, that)
        "m = a if at_least(a, p0) else ceil_into(a, p0)\n"  # integers: exact, Min as ceil(Min)
        "return m if at_most(m, p1) else floor_into(a, p1)",
        ref.clip, _clip_params, scale_bias=True, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_CLIP1,
        "m = a if (a < p1 or p1 != p1) else p1\n"  # min(x, Max)
        "return p0 if (p0 >= m or m != m) else m",  # max(Min, that)
        "lo = as_type(a, p0)\nhi = as_type(a, p1)\nm = a if a < hi else hi\n"
        "return lo if lo >= m else m",
        _clip1, _clip_params, int_params=_int_bounds, scale_bias=True, exact32=True),
    *(Row(op, f"{fn}(a)", None, formula, ulp=1, scale_bias=True, fast32=VMATH.get(fn))
      for op, fn, formula in (
        (OP.DML_OPERATOR_ELEMENT_WISE_ACOS, "math.acos", np.arccos),
        (OP.DML_OPERATOR_ELEMENT_WISE_ASIN, "math.asin", np.arcsin),
        (OP.DML_OPERATOR_ELEMENT_WISE_ATAN, "math.atan", np.arctan),
        (OP.DML_OPERATOR_ELEMENT_WISE_COS, "math.cos", np.cos),
        (OP.DML_OPERATOR_ELEMENT_WISE_SIN, "math.sin", np.sin),
        (OP.DML_OPERATOR_ELEMENT_WISE_TAN, "math.tan", np.tan),
        (OP.DML_OPERATOR_ELEMENT_WISE_EXP, "math.exp", np.exp),
        (OP.DML_OPERATOR_ELEMENT_WISE_LOG, "math.log", np.log),
        (OP.DML_OPERATOR_ELEMENT_WISE_ERF, "math.erf", ref.erf),
        (OP.DML_OPERATOR_ELEMENT_WISE_SINH, "math.sinh", np.sinh),
        (OP.DML_OPERATOR_ELEMENT_WISE_COSH, "math.cosh", np.cosh),
        (OP.DML_OPERATOR_ELEMENT_WISE_TANH, "math.tanh", np.tanh),
        (OP.DML_OPERATOR_ELEMENT_WISE_ASINH, "math.asinh", np.arcsinh),
        (OP.DML_OPERATOR_ELEMENT_WISE_ACOSH, "math.acosh", np.arccosh),
        (OP.DML_OPERATOR_ELEMENT_WISE_ATANH, "math.atanh", np.arctanh))),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_SQRT, "math.sqrt(a)", None, np.sqrt,
        scale_bias=True, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_RECIP, "1.0 / a", None, np.reciprocal,
        scale_bias=True, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_CEIL, "np.ceil(a)", None, np.ceil, scale_bias=True,
        exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_FLOOR, "np.floor(a)", None, np.floor,
        scale_bias=True, exact32=True),
    # CONSTANT_POW on integers: float64 pow, converted as CAST converts (POW's rule for an integer
    # base with a float exponent).
    Row(OP.DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW, "math.pow(a, p0)", None, ref.pow_,
        lambda v: (float(v.Exponent),), ulp=1, scale_bias=True, int_as_float=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_THRESHOLD, D3D_MAX.replace("b", "p0"),
        "a if at_least(a, p0) else ceil_into(a, p0)", ref.threshold,
        lambda v: (float(v.Min),), scale_bias=True, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_SIGN, "1.0 if a > 0 else (-1.0 if a < 0 else 0.0)",
        "1 if a > 0 else (-1 if a < 0 else 0)", ref.sign, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_ROUND, "round_mode(a, p0)", None, ref.round_mode,
        lambda v: (float(v.RoundingMode),), exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_IS_NAN, "a != a", None, np.isnan, output="flag",
        exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_IS_INFINITY,
        "abs(a) == np.inf and (p0 == 0 or (p0 == 1 and a > 0) or (p0 == 2 and a < 0))", None,
        ref.is_infinity, lambda v: (float(v.InfinityMode),), output="flag", exact32=True),
    # Comparisons: 1 for true, 0 for false, in the output's integer type.
    *(Row(op, f"a {sym} b", f"a {sym} b", formula, output="flag", exact32=True)
      for op, sym, formula in (
          (OP.DML_OPERATOR_ELEMENT_WISE_LOGICAL_EQUALS, "==", np.equal),
          (OP.DML_OPERATOR_ELEMENT_WISE_LOGICAL_GREATER_THAN, ">", np.greater),
          (OP.DML_OPERATOR_ELEMENT_WISE_LOGICAL_LESS_THAN, "<", np.less),
          (OP.DML_OPERATOR_ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL, ">=", np.greater_equal),
          (OP.DML_OPERATOR_ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL, "<=", np.less_equal))),
    # Logical operators: any nonzero value is true; the result is 1 or 0.
    Row(OP.DML_OPERATOR_ELEMENT_WISE_LOGICAL_AND, None, "(a != 0) & (b != 0)",
        np.logical_and, output="flag"),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_LOGICAL_OR, None, "(a != 0) | (b != 0)",
        np.logical_or, output="flag"),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_LOGICAL_XOR, None, "(a != 0) != (b != 0)",
        np.logical_xor, output="flag"),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_LOGICAL_NOT, None, "a == 0", ref.logical_not,
        output="flag"),
    # Bitwise operators: on the encoding (floats included); shifts on unsigned integers.
    Row(OP.DML_OPERATOR_ELEMENT_WISE_BIT_AND, None, "a & b", np.bitwise_and,
        bitwise=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_BIT_OR, None, "a | b", np.bitwise_or, bitwise=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_BIT_XOR, None, "a ^ b", np.bitwise_xor,
        bitwise=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_BIT_NOT, None, "~a", np.invert, bitwise=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_BIT_COUNT, None, "popcount(a)", ref.bit_count,
        output="flag", bitwise=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_BIT_SHIFT_LEFT, None, "shift_left(a, b)",
        ref.shift_left),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_BIT_SHIFT_RIGHT, None, "shift_right(a, b)",
        ref.shift_right),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_IF, None,
        "b if a != 0 else c", ref.if_, bitwise=True),
    # Binary arithmetic beyond + - * /.
    Row(OP.DML_OPERATOR_ELEMENT_WISE_MEAN, "(a + b) / 2.0",
        "trunc_div(np.int64(a) + np.int64(b), 2)", ref.mean),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE, "(a - b) * (a - b)",
        "(np.int64(a) - np.int64(b)) * (np.int64(a) - np.int64(b))", ref.difference_square),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_ATAN_YX, "math.atan2(a, b)", None, np.arctan2,
        ulp=1),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_MODULUS_TRUNCATE, "np.fmod(a, b)",
        "trunc_mod(a, b)", ref.trunc_mod),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_MODULUS_FLOOR, "floor_mod(a, b)", "floor_mod(a, b)",
        ref.floor_mod),
    # Gradients (backward operators): the gradient passes where the forward operator was not flat.
    Row(OP.DML_OPERATOR_ACTIVATION_RELU_GRAD, "b if a > 0 else 0.0",
        "b if a > 0 else b - b", ref.relu_grad, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD, "0.0 if (a <= p0 or a >= p1) else b",
        "b - b if ((p0 == p0 and at_most(a, p0)) or (p1 == p1 and at_least(a, p1))) else b",
        ref.clip_grad, _clip_params, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1, "0.0 if (a <= p0 or a >= p1) else b",
        "lo = as_type(a, p0)\nhi = as_type(a, p1)\nreturn b - b if (a <= lo or a >= hi) else b",
        ref.clip_grad, _clip_params, int_params=_int_bounds, exact32=True),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_POW, "math.pow(a, b)", "int_pow(a, b)", ref.pow_, ulp=1,
        scale_bias=True, output="pow"),
    # Dequantize A and B, add, requantize (float64; round halves to even, saturate).
    Row(OP.DML_OPERATOR_ELEMENT_WISE_QUANTIZED_LINEAR_ADD, None,
        "return np.rint(((np.float64(a) - p1) * p0 + (np.float64(b) - p3) * p2) / p4) + p5",
        ref.quantized_linear_add, loads=("i", "i"), store="store_saturated",
        scalars=("AScaleTensor", "AZeroPointTensor", "BScaleTensor", "BZeroPointTensor",
                 "OutputScaleTensor", "OutputZeroPointTensor")),
    # CAST: the conversion is the store's (decisions: floats rounded once; to integers truncated
    # toward zero and saturated, NaN 0, as Direct3D converts; integers wrapped, as C).
    Row(OP.DML_OPERATOR_CAST, "a", "a", ref.cast, output="cast"),
    # Linear quantization: a float input divided by the scale in float32 (as ONNX's test vectors
    # need), an INT32 one in float64; the quotient rounded to nearest even, then saturated.
    # DEQUANTIZE in float64, rounded once to its float output. An absent zero point is 0.
    Row(OP.DML_OPERATOR_ELEMENT_WISE_QUANTIZE_LINEAR, "np.rint(np.float32(a) / np.float32(b)) + c",
        "np.rint(np.float64(a) / b) + c", ref.quantize_linear, loads=("", "f", "i"),
        store="store_saturated"),
    Row(OP.DML_OPERATOR_ELEMENT_WISE_DEQUANTIZE_LINEAR, None,
        "(np.float64(a) - np.float64(c)) * b", ref.dequantize_linear, loads=("i", "f", "i"),
        store="store"),
)



def _activation_row(act: Activation) -> Row:
    """A standalone activation as a row: its scalar function (kernels/activation.py), its
    parameters in table order, its formula as the reference, its attribute rules."""
    from ..ops.activation import check_attributes

    op = act.operator
    return Row(
        op, f"a_{act.name.lower()}(a, p0, p1)", _ACTIVATION_INT.get(op),
        lambda x, *p: act.reference(x, *p),
        lambda v: params_of(act, v)[: len(act.params)],
        ulp=0 if op in _ACTIVATION_EXACT else 1, exact32=op in _ACTIVATION_EXACT,
        fast32=_ACTIVATION_FAST.get(op), int_as_float=op in _ACTIVATION_INT_AS_FLOAT,
        rules=lambda ctx, v: check_attributes(ctx, act, v))


# Activations whose formula is exact (a select or a copy): FLOAT32/16 computed in float32.
_ACTIVATION_EXACT = {OP.DML_OPERATOR_ACTIVATION_IDENTITY, OP.DML_OPERATOR_ACTIVATION_RELU}
_ACTIVATION_FAST = {OP.DML_OPERATOR_ACTIVATION_TANH: "tanh32(a)"}
# Where the support tables admit integer tensors (5_1): RELU's max(0, x) exactly; SHRINK (FLOAT
# Bias and Threshold) in float64, converted as CAST converts.
_ACTIVATION_INT = {OP.DML_OPERATOR_ACTIVATION_RELU: "a if a > 0 else a - a"}
_ACTIVATION_INT_AS_FLOAT = {OP.DML_OPERATOR_ACTIVATION_SHRINK}

ROWS += (
    *(_activation_row(act) for act in ACTIVATIONS),
    # PARAMETERIZED_RELU: x where x >= 0 (or NaN), else Slope·x; integers wrap as C's product.
    Row(OP.DML_OPERATOR_ACTIVATION_PARAMETERIZED_RELU, "b * a if a < 0 else a",
        "b * a if a < 0 else a", lambda x, slope: np.where(x < 0, slope * x, x), exact32=True),
)

BY_OPERATOR: dict[DML_OPERATOR_TYPE, Row] = {r.operator: r for r in ROWS}
