"""The element-wise family: every operator is a row of ``table.ROWS``; this module turns a row into
the operator module the registry expects (KERNEL_TYPES, validate, plan, reference).

Data flow of one dispatch: the plan (``plan.py``) views each bound tensor in its storage type and
has ``kernels/strided.py``'s parallel driver call the row's generated chunk kernel
(``kernels/<operator>.py``, written by ``generate.py``): load → ScaleBias → the scalar function →
fused activation → store with one rounding.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import cast

import numpy as np

from descriptors import DML_OPERATOR_TYPE, NUMPY_DTYPE
from descriptors import DML_OPERATOR_TYPE as OP
from descriptors import DML_TENSOR_DATA_TYPE as T

from ..activations import BY_OPERATOR as ACTIVATIONS
from ..ops.activation import check_fused
from ..ops.common import ieee_reference
from ..validation import Context
from . import references as ref
from .plan import BITS, FLOAT_TYPES, INT_TYPES, STORAGE, ElementWisePlan
from .table import BY_OPERATOR, ROWS, Row

__all__ = ["BY_OPERATOR", "ROWS", "module"]


def module(op: DML_OPERATOR_TYPE) -> SimpleNamespace:
    row = BY_OPERATOR[op]
    kernel_types = _kernel_types(row)

    def validate(ctx: Context, v: SimpleNamespace) -> None:
        if row.rules is not None:
            row.rules(ctx, v)
        v.fused = check_fused(ctx, v.FusedActivation) if row.fused else None

    def plan(v: SimpleNamespace) -> ElementWisePlan:
        out = getattr(v, row.output_name)
        # The type that picks the computation: the output's, or for a flag (a comparison's
        # 0/1) the inputs'.
        kind_of = getattr(v, row.inputs[0]).data_type if row.output == "flag" or row.loads \
            else out.data_type
        p0, p1 = (*row.param_values(v), 0.0, 0.0)[:2]
        p2, p3, kind, aux = 1.0, 0.0, 0, 0
        storage = STORAGE
        if row.output == "pow":
            kinds = "".join(_letter(getattr(v, n).data_type) for n in row.inputs)
            sb = "_sb" if v.ScaleBias is not None else ""
            variant = f"pow_{kinds}{sb}"
            if sb:
                p2, p3 = v.ScaleBias.Scale, v.ScaleBias.Bias
        elif row.output == "cast":
            src = v.InputTensor.data_type
            variant = f"cast_{_letter(src)}{_letter(out.data_type)}"
            if src in FLOAT_TYPES:
                variant += "64" if src == T.DML_TENSOR_DATA_TYPE_FLOAT64 else "32"
        elif row.bitwise:
            variant, storage = "i", BITS
        elif kind_of not in FLOAT_TYPES:
            variant = "i_f" if row.int_as_float else "i"
        elif row.exact32 and kind_of != T.DML_TENSOR_DATA_TYPE_FLOAT64:
            variant = "f32"
        elif row.fast32 and kind_of != T.DML_TENSOR_DATA_TYPE_FLOAT64:
            variant = "v32"
        else:
            variant = "f64"
        if variant == "i" and row.int_params is not None:  # exact integers, as int64 bits
            kind, aux = (int(q) - (1 << 64) if q >= 1 << 63 else int(q)
                         for q in row.int_params(v))
        if row.scale_bias and v.ScaleBias is not None and row.output != "pow":
            variant = "f64_sb" if kind_of in FLOAT_TYPES else "i_sb"
            p2, p3, storage = v.ScaleBias.Scale, v.ScaleBias.Bias, STORAGE
        if row.fused and v.fused is not None:
            act, (p0, p1) = v.fused
            if variant == "f32" and act.operator == OP.DML_OPERATOR_ACTIVATION_RELU:
                variant = "f32_relu"
            else:
                from ..kernels.strided import activation_address  # (Numba: on first use)

                variant, kind, aux = "f64_act", act.kind, activation_address()
        return ElementWisePlan.build(
            f"{__name__}.kernels.{row.name}", variant,
            [(name, _type(t), t.strides if t is not None else None)
             for name, t in ((n, getattr(v, n)) for n in row.inputs)],
            (row.output_name, out.data_type, out.sizes, out.strides), (p0, p1, p2, p3, 0.0, 0.0),
            kind, aux, storage, [(name, _type(getattr(v, name))) for name in row.scalars],
            stream=row.ulp == 0)

    def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        names = row.inputs + row.scalars
        return {row.output_name: compute(row, v, [inputs.get(n) for n in names])}

    return SimpleNamespace(
        __name__=f"{__name__}[{row.name}]", __doc__=f"{op.name}: {__doc__}",
        KERNEL_TYPES=kernel_types, ROW=row, validate=validate,
        plan=plan, reference=reference)


def _type(tensor: SimpleNamespace | None) -> T | None:
    """A validated tensor's data type (None for an absent optional tensor)."""
    return tensor.data_type if tensor is not None else None


def _letter(data_type: T) -> str:
    """The kind of a data type in variant names: f (float) or i (integer)."""
    return "f" if data_type in FLOAT_TYPES else "i"


def _kernel_types(row: Row) -> tuple[T, ...]:
    """The data types the row's kernels handle, for any of its tensors (validation has already
    tied the tensors' types together as the page says)."""
    if row.bitwise or row.loads or row.output in ("cast", "pow"):
        return FLOAT_TYPES + INT_TYPES
    out: tuple[T, ...] = FLOAT_TYPES if row.float_body is not None else ()
    if row.int_body is not None or row.int_as_float or row.output == "flag":  # a flag: integer
        out += INT_TYPES
    return out


@ieee_reference
def compute(row: Row, v: SimpleNamespace, arrays: list[np.ndarray | None]) -> np.ndarray:
    """The row's formula on logical arrays, in the output's type: float tensors in float64
    (ScaleBias first, then the function, then the fused activation) rounded once; integers in
    their type (the reference computes as C, the output keeps its width); bitwise rows on each
    tensor's encoding."""
    out_dtype = np.dtype(NUMPY_DTYPE[getattr(v, row.output_name).data_type])
    params = row.param_values(v)
    if row.output == "cast" or row.loads:  # tensors of different kinds: the reference converts
        return np.asarray(row.reference(*arrays, *params, out_dtype))
    if row.output == "pow":
        return _pow(row, v, cast(list[np.ndarray], arrays), out_dtype)
    return _same_kind(row, v, cast(list[np.ndarray], arrays), out_dtype, params)


def _pow(row: Row, v: SimpleNamespace, arrays: list[np.ndarray], out_dtype: np.dtype) -> np.ndarray:
    """POW: two integer tensors exactly; else float64 (ScaleBias on the base), rounded once to a
    float output or converted as CAST converts to an integer one."""
    base, exponent = arrays
    if base.dtype.kind in "iu" and exponent.dtype.kind in "iu" and v.ScaleBias is None:
        y = row.reference(base, exponent)
        return np.array([int(q) % (1 << 64) for q in y.ravel()], np.uint64).reshape(
            y.shape).astype(out_dtype)  # the low bits, as the store keeps them
    x = _scale_bias(v, base.astype(np.float64))
    y = np.asarray(row.reference(x, exponent.astype(np.float64)), np.float64)
    return y.astype(out_dtype) if out_dtype.kind == "f" else ref.cast(y, out_dtype)


def _scale_bias(v: SimpleNamespace, x: np.ndarray) -> np.ndarray:
    """x·Scale + Bias in float64 when the desc has a ScaleBias (the first input only)."""
    return x if v.ScaleBias is None else x * v.ScaleBias.Scale + v.ScaleBias.Bias


def _same_kind(row: Row, v: SimpleNamespace, arrays: list[np.ndarray], out_dtype: np.dtype,
               params: tuple[float, ...]) -> np.ndarray:
    if row.bitwise and not (row.scale_bias and v.ScaleBias is not None):
        y = np.asarray(row.reference(*(a.view(f"u{a.dtype.itemsize}") for a in arrays), *params))
        if row.output == "flag":
            return y.astype(out_dtype)
        return y.astype(f"u{out_dtype.itemsize}").view(out_dtype)
    if arrays[-1].dtype.kind != "f" and row.int_as_float:  # float64, converted as CAST
        xs = [a.astype(np.float64) for a in arrays]
        if row.scale_bias:
            xs[0] = _scale_bias(v, xs[0])
        y = row.reference(*xs, *params)
        return ref.cast(np.asarray(y, np.float64), out_dtype)
    if arrays[-1].dtype.kind != "f" and row.scale_bias and v.ScaleBias is not None:
        x = _scale_bias(v, arrays[0].astype(np.float64))
        return ref.cast(np.asarray(row.reference(x, *params), np.float64), out_dtype)
    if arrays[-1].dtype.kind == "f":
        xs = [a.astype(np.float64) for a in arrays]
        if row.scale_bias:
            xs[0] = _scale_bias(v, xs[0])
        y = np.asarray(row.reference(*xs, *params), np.float64)
        if row.fused and v.fused is not None:
            act, p = v.fused
            y = ACTIVATIONS[act.operator].reference(y, *p[: len(act.params)])
        return y.astype(out_dtype)
    ints = row.param_values(v, integers=True)
    return np.asarray(row.reference(*arrays, *ints)).astype(out_dtype)
