"""DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1: normalize over a set of axes.

    Output = FusedActivation(Scale * (Input - Mean) / sqrt(Variance + Epsilon) + Bias)
    (without NormalizeVariance: FusedActivation(Scale * (Input - Mean) + Bias))

Mean and Variance are over the elements sharing every coordinate outside ``Axes``; the variance is
the population variance (divide by N), Epsilon inside the square root. Absent Scale is 1, absent
Bias 0. Rules (Microsoft's DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC page): all tensors share
DataType and DimensionCount; Output has the input's Sizes; Scale and Bias both present or both
absent (before 5_2); before 4_0 their sizes are {1 or N, C, 1 or H, 1 or W} (the channel must
match), from 4_0 any dimension may be 1 and broadcast. **Decisions**: Axes are a set (any order,
duplicates accepted), AxisCount >= 1, each axis < DimensionCount. Non-finite values follow the
formula element by element: a group holding +inf has mean +inf, so without NormalizeVariance a
finite element gives -inf and a +inf element NaN (a group with both infinities, or a NaN, is NaN);
with NormalizeVariance such a group's variance is NaN and so is the group. With Epsilon 0 a constant
group is 0/0 = NaN (with Epsilon > 0, 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace

import numpy as np

from descriptors import DML_OPERATOR_TYPE

from ..activations import BY_OPERATOR
from ..plan import MVNPlan
from ..validation import Context, Tensor, same
from .activation import check_fused
from .common import FL, FLOAT16, FLOAT32, ieee_reference

TENSORS = ("InputTensor", "ScaleTensor", "BiasTensor", "OutputTensor")
KERNEL_TYPES = (FLOAT32, FLOAT16)


def check_common(ctx: Context, v: SimpleNamespace, channel_rule: bool) -> None:
    """The rules MVN and MVN1 share. ``channel_rule``: before 4_0, MVN1's Scale/Bias must match
    the input's channel dimension (MVN broadcasts any dimension at every level)."""
    i = v.InputTensor
    for name in TENSORS[1:]:
        t = getattr(v, name)
        if t is not None:
            same(ctx, "InputTensor", name, "DataType", i.data_type, t.data_type)
            same(ctx, "InputTensor", name, "DimensionCount", i.dim_count, t.dim_count)
    same(ctx, "InputTensor", "OutputTensor", "Sizes", i.sizes, v.OutputTensor.sizes)
    if (v.ScaleTensor is None) != (v.BiasTensor is None) and ctx.level < FL.DML_FEATURE_LEVEL_5_2:
        present = "ScaleTensor" if v.ScaleTensor is not None else "BiasTensor"
        absent = "BiasTensor" if present == "ScaleTensor" else "ScaleTensor"
        ctx.fail(absent, None, f"{present} is given, so {absent} is required too (before "
                 "DML_FEATURE_LEVEL_5_2)", FL.DML_FEATURE_LEVEL_5_2)
    for name in ("ScaleTensor", "BiasTensor"):
        t = getattr(v, name)
        if t is None:
            continue
        for d, (s, n) in enumerate(zip(t.sizes, i.sizes)):
            if channel_rule and d == 1 and ctx.level < FL.DML_FEATURE_LEVEL_4_0 and s != n:
                ctx.fail(f"{name}.Sizes[1]", s, "before DML_FEATURE_LEVEL_4_0 the channel "
                         f"dimension must equal InputTensor.Sizes[1] = {n}",
                         FL.DML_FEATURE_LEVEL_4_0 if s == 1 else None)
            if s not in (1, n):
                ctx.fail(f"{name}.Sizes[{d}]", s, f"must be 1 (broadcast) or "
                         f"InputTensor.Sizes[{d}] = {n}")


def validate(ctx: Context, v: SimpleNamespace) -> None:
    check_common(ctx, v, channel_rule=True)
    ctx.require(v.AxisCount >= 1, "AxisCount", v.AxisCount, "at least one axis is needed")
    for k, a in enumerate(v.Axes):
        ctx.require(a < v.InputTensor.dim_count, f"Axes[{k}]", a,
                    f"must be less than InputTensor.DimensionCount ({v.InputTensor.dim_count})")
    v.fused = check_fused(ctx, v.FusedActivation)


def broadcast_strides(t: Tensor | None, sizes: Sequence[int]) -> list[int]:
    """A scale or bias tensor's strides over the input's coordinates (0 where it broadcasts)."""
    if t is None:
        return [0] * len(sizes)
    return [0 if s == 1 else st for s, st in zip(t.sizes, t.strides)]


def mvn_plan(v: SimpleNamespace, axes: Sequence[int], normalize_variance: bool,
             use_mean: bool = True) -> MVNPlan:
    """The plan of MVN, MVN1 and MVN2 (``use_mean`` False: MVN2 without UseMean)."""
    i = v.InputTensor
    act, (p0, p1) = v.fused if v.fused else (BY_OPERATOR_IDENTITY, (0.0, 0.0))
    return MVNPlan.build(i.element_size, i.sizes, axes,
                         [i.strides, v.OutputTensor.strides,
                          broadcast_strides(v.ScaleTensor, i.sizes),
                          broadcast_strides(v.BiasTensor, i.sizes)],
                         v.ScaleTensor is not None, v.BiasTensor is not None,
                         normalize_variance, float(v.Epsilon), act.kind, p0, p1, use_mean)


def plan(v: SimpleNamespace) -> MVNPlan:
    return mvn_plan(v, v.Axes, bool(v.NormalizeVariance))


@ieee_reference
def normalize(x: np.ndarray, axes: Sequence[int], scale: np.ndarray | None,
              bias: np.ndarray | None, normalize_variance: bool, epsilon: float,
              fused: tuple | None, use_mean: bool = True) -> np.ndarray:
    """The page's formula in float64 (population variance, epsilon inside the root); without
    ``use_mean`` (MVN2) the mean is 0, so the variance is the mean of the squares."""
    x64 = x.astype(np.float64)
    ax = tuple(sorted(set(axes)))
    mean = x64.mean(axis=ax, keepdims=True) if use_mean else np.zeros_like(x64)
    y = x64 - mean
    if normalize_variance:
        y = y / np.sqrt(((x64 - mean) ** 2).mean(axis=ax, keepdims=True) + np.float64(epsilon))
    if scale is not None:
        y = y * scale.astype(np.float64)
    # An absent Bias is 0 and is added (as the kernel does): -0 + 0 = +0.
    y = y + (0.0 if bias is None else bias.astype(np.float64))
    if fused:
        act, params = fused
        y = act.reference(y, *params[: len(act.params)])
    return y


@ieee_reference
def mvn_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray],
                  axes: Sequence[int]) -> dict[str, np.ndarray]:
    """The reference of MVN and MVN1, over the given axes."""
    x = inputs["InputTensor"]
    y = normalize(x, axes, inputs.get("ScaleTensor"), inputs.get("BiasTensor"),
                  v.NormalizeVariance, v.Epsilon, v.fused)
    return {"OutputTensor": y.astype(x.dtype)}


def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return mvn_reference(v, inputs, v.Axes)


BY_OPERATOR_IDENTITY = BY_OPERATOR[DML_OPERATOR_TYPE.DML_OPERATOR_ACTIVATION_IDENTITY]
