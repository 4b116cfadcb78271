"""The normalization rows of the reduction family: BATCH_NORMALIZATION,
BATCH_NORMALIZATION_TRAINING, BATCH_NORMALIZATION_GRAD, BATCH_NORMALIZATION_TRAINING_GRAD,
LP_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION_GRAD (kernels:
``reduction/norm_kernels.py``; every type the bands allow, FLOAT32 and FLOAT16).

Everything is computed in float64 from the tensors' values and rounded once to the output type
(FLOAT16 included); the references below are the pages' formulas in float64, written plainly.
Direct3D's arithmetic: NaN and infinities follow the formula element by element.

**BATCH_NORMALIZATION**: ``FusedActivation(Scale * ((Input - Mean) / sqrt(Variance + Epsilon)) +
Bias)``; Mean, Variance, Scale and Bias each broadcast (a dimension of size 1), each with its
own sizes. The plan turns them into one float64 parameter table over their joint sizes, per
position (m1 = Mean, a1 = 1/sqrt(Variance + Epsilon), c = Scale, b = Bias), and one pass computes
``((x - m1)*a1)*c + b`` (for the per-channel case: one contiguous loop per row, memory-bound).
``(x - m)*(1/r)`` has the same NaN/inf/zero-sign cases as ``(x - m)/r`` (r = sqrt(...) is never
small or large enough for an f64 over- or underflow with FLOAT32 data). Spatial is a validation
rule only (and ignored from 4_0); it changes nothing here.

**BATCH_NORMALIZATION_TRAINING**: the same with Mean and Variance of the input over the
dimensions where Scale (and Bias) have size 1: the mean, and the population variance (divide by
N, two passes: mean((x - mean)^2)), both float64 and unrounded in the normalization;
OutputMeanTensor and OutputVarianceTensor receive them rounded. FusedAdd is added after Bias,
before the activation.

**BATCH_NORMALIZATION_GRAD** (the page's outputs, with r = sqrt(Variance + Epsilon)):
OutputGradient = InputGradient * (Scale / r); OutputScaleGradient = sum(InputGradient * (Input -
Mean) / r); OutputBiasGradient = sum(InputGradient), the sums over the dimensions where
MeanTensor has size 1. Epsilon absent (the schema marks it optional) is 0.

**BATCH_NORMALIZATION_TRAINING_GRAD**: the page's pseudo-code, its ``InputCentered =
InputCentered - mean(InputCentered)`` read as ``Input - mean(Input)``; ``mean(...)`` is over the
dimensions where MeanTensor has size 1 and is computed (``mean(Input)`` from the input, as
``mean(InputGradient)`` and ``mean(Coef1)`` are); MeanTensor is used where the page writes
``Mean`` (OutputScaleGradient). OutputGradient = (Scale * Coef0) * ((dy - mean(dy)) -
(x - mean(x)) * mean(dy * (x - mean(x))) / (Variance + Epsilon)), Coef0 = 1/sqrt(Variance +
Epsilon); the scale and bias gradients as BATCH_NORMALIZATION_GRAD's.

**LP_NORMALIZATION** (the page gives no formula): ``Output = Input / (sum(|Input|^P) +
Epsilon)^(1/P)`` along Axis: for P = 2, ``x / sqrt(sum(x^2) + Epsilon)``, for P = 1,
``x / (sum(|x|) + Epsilon)``: Epsilon added to the accumulated sum before the root, as the
family's other Epsilons (MVN, batch normalization) are added to the variance.

**LOCAL_RESPONSE_NORMALIZATION**: ``Output = Input / (Bias + (Alpha / LocalSize) * S)^Beta``, S
the sum of the squares over the local region, clipped to the tensor (elements outside count 0;
the divisor stays LocalSize). The region of coordinate i along a windowed dimension is [i - lo,
i + hi] with lo = floor((LocalSize - 1)/2), hi = LocalSize - 1 - lo (ONNX's LRN, which ONNX
Runtime maps onto this operator: an even LocalSize reaches one further forward). CrossChannel
TRUE: the window runs along the channels (1 x 1 spatially); FALSE: a LocalSize x LocalSize
window over Height and Width of the same channel. ``pow`` is C's (NumPy's) pow.

**LOCAL_RESPONSE_NORMALIZATION_GRAD** (the page gives no formula): the exact gradient of that
forward pass, ``OutputGradient_j = dy_j * S_j^(-Beta) - (2 * Alpha * Beta / LocalSize) * x_j *
sum over the regions i holding j of dy_i * x_i * S_i^(-Beta - 1)``, with S here the whole base
``Bias + (Alpha / LocalSize) * sum``; the regions holding j are [j - hi, j + lo] (the transposed
window).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from descriptors import DML_OPERATOR_TYPE
from descriptors import DML_TENSOR_DATA_TYPE as T

from ..activations import BY_OPERATOR, params_of
from ..family import Row
from ..ops.common import ieee_reference
from ..plan import collapse, int64s
from ..validation import Tensor
from .layout import Layout

OP = DML_OPERATOR_TYPE
FLOATS = (T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16)
IDENTITY = 0  # activation kinds (emulator.activations)
AFFINE, MOMENTS, LP, LRN = 0, 1, 2, 3  # the computations of norm_kernels
CHUNK = 16384  # the most elements of one affine task
# The affine pass's stores stay cached (MVN streams its large FLOAT32 outputs): on the 16-core
# Xeon, BATCH_NORMALIZATION f32 [32, 64, 56, 56] (25.7 MB out), ms at 16 / 2 threads, streamed
# 0.71 / 2.32 against 0.60 / 1.83 cached; with nothing measured in its favour, the streamed
# variant was taken out again (it cost ~1 s of first compile).
MOMENT_BLOCK = 32768  # reduced elements per moments task (fixed: results independent of threads)
LRN_BLOCK = 64  # columns per CrossChannel LRN task
LP_BLOCK = 256  # lines per column-mode LP_NORMALIZATION task
_NO_BYTES = np.zeros(8, np.uint8)
_NO_DIMS = np.zeros((1, 1), np.int64)
_NO_TABLE = np.zeros((1, 1), np.float64)
_NO_OUT = np.zeros((1, 1, 1), np.float64)


def _launch(which: int, count: int, element_size: int, x1: np.ndarray | None,
            x2: np.ndarray | None = None, y: np.ndarray | None = None,
            a: np.ndarray = _NO_DIMS, b: np.ndarray = _NO_DIMS, ints: Sequence[int] = (),
            reals: Sequence[float] = (), table: np.ndarray = _NO_TABLE,
            out: np.ndarray = _NO_OUT) -> None:
    """Run ``count`` tasks of one computation (``norm_kernels.launch``); x1, x2, y are the bound
    bytes of the tensors (None: absent)."""
    from .norm_kernels import launch, task_address

    x1, x2, y = (_NO_BYTES if r is None else r for r in (x1, x2, y))
    int_args = np.asarray([*ints, 0], np.int64)
    real_args = np.asarray([*reals, 0.0], np.float64)
    shapes = np.array([x1.size // element_size, x2.size // element_size, y.size // element_size,
                       *a.shape, *b.shape, int_args.size, real_args.size, *table.shape,
                       *out.shape], np.int64)
    launch(task_address(which, "float32" if element_size == 4 else "uint16"), count, x1, x2, y,
           a, b, int_args, real_args, table, out, shapes, max(x1.size, y.size) // element_size)


def _rows(parts: Sequence[np.ndarray]) -> np.ndarray:
    """Collapsed sizes and stride sets as the rows of one int64 array."""
    return np.ascontiguousarray(np.stack(parts), np.int64)


def _f64(t: Tensor, region: np.ndarray) -> np.ndarray:
    """A tensor's logical values as float64 (exact)."""
    return np.asarray(t.view(region), np.float64)


def _write(t: Tensor, region: np.ndarray, values: np.ndarray) -> None:
    """Round float64 values once to the tensor's type and write its addressed elements only."""
    with np.errstate(all="ignore"):
        t.view(region)[...] = np.asarray(values, np.float64).reshape(t.sizes).astype(t.dtype)


def _param_strides(sizes: Sequence[int]) -> list[int]:
    """Packed strides of a parameter table over ``sizes``, 0 where it broadcasts (size 1)."""
    out, acc = [], 1
    for s in reversed(sizes):
        out.append(acc if s > 1 else 0)
        acc *= s
    return list(reversed(out))


def _fused(v: SimpleNamespace) -> tuple[int, float, float]:
    """The fused activation's kind and (p0, p1) for the kernel (IDENTITY when there is none)."""
    f = getattr(v, "FusedActivation", None)
    if f is None:
        return IDENTITY, 0.0, 0.0
    act = BY_OPERATOR[f.operator]
    return (act.kind, *params_of(act, f.values))


def _activate(v: SimpleNamespace, y: np.ndarray) -> np.ndarray:
    f = getattr(v, "FusedActivation", None)
    if f is None:
        return y
    act = BY_OPERATOR[f.operator]
    return act.reference(y, *params_of(act, f.values)[: len(act.params)])


def _epsilon(v: SimpleNamespace) -> float:
    return 0.0 if v.Epsilon is None else float(v.Epsilon)


# --- the batch-normalization family: one affine pass over a parameter table -----------------

def _table(rows: int, **columns: np.ndarray | float) -> np.ndarray:
    """The affine kernel's table: one row per parameter position, columns (m1, a1, m2, a2, c,
    b); a column not given is m 0, a 1, c 1, b -0 (so that it changes nothing, zero signs
    included)."""
    table = np.empty((rows, 6), np.float64)
    defaults = {"m1": 0.0, "a1": 1.0, "m2": 0.0, "a2": 1.0, "c": 1.0, "b": -0.0}
    for k, name in enumerate(defaults):
        table[:, k] = np.ravel(columns.get(name, defaults[name]))
    return table


@dataclass(frozen=True, eq=False)
class Affine:
    """``y = act(((x1 - m1)*a1 [+ x2 term])*c + b [+ x2 term])`` over the input's elements
    (norm_kernels AFFINE); ``p_sizes``: the table's sizes over the input's dimensions."""

    element_size: int
    dims: np.ndarray  # collapsed sizes, strides of x1, x2, y and the table
    pieces: int
    count: int

    @classmethod
    def build(cls, x1: Tensor, x2: Tensor | None, y: Tensor, p_sizes: Sequence[int]) -> Affine:
        s2 = x2.strides if x2 is not None else [0] * len(x1.sizes)
        dims = _rows([int64s(a) for a in collapse(x1.sizes, x1.strides, s2, y.strides,
                                                  _param_strides(p_sizes))])
        pieces = -(-int(dims[0, -1]) // CHUNK)
        return cls(x1.element_size, dims, pieces, int(np.prod(dims[0, :-1])) * pieces)

    def run(self, x1: np.ndarray, x2: np.ndarray | None, y: np.ndarray, table: np.ndarray,
            inside: bool, v: SimpleNamespace) -> None:
        kind, p0, p1 = _fused(v)
        activation = 0
        if kind != IDENTITY:
            from ..kernels.strided import activation_address  # (Numba: on first use)

            activation = activation_address()
        _launch(AFFINE, self.count, self.element_size, x1, x2, y, self.dims,
                ints=(self.pieces, x2 is not None, inside, kind, CHUNK, activation),
                reals=(p0, p1), table=table)


@dataclass(frozen=True, eq=False)
class Moments:
    """Per parameter position (a group), sums over the reduced elements of x1 and x2
    (norm_kernels MOMENTS)."""

    element_size: int
    count: int  # elements per group
    groups: int
    g: np.ndarray
    r: np.ndarray
    rows: int
    block_rows: int
    blocks: int

    @classmethod
    def build(cls, x1: Tensor, x2: Tensor | None, p_sizes: Sequence[int]) -> Moments:
        axes = [d for d, s in enumerate(p_sizes) if s == 1]
        s2 = x2.strides if x2 is not None else [0] * len(x1.sizes)
        layout = Layout.build(x1.sizes, axes, [x1.strides, s2])
        inner = int(layout.r[0][-1])
        rows = layout.count // inner
        block_rows = max(1, MOMENT_BLOCK // inner)
        return cls(x1.element_size, layout.count, layout.groups, _rows(layout.g),
                   _rows(layout.r), rows, block_rows, -(-rows // block_rows))

    def sums(self, x1: np.ndarray, x2: np.ndarray | None, mode: int,
             center: np.ndarray | None = None, center2: np.ndarray | None = None,
             weight: np.ndarray | None = None) -> np.ndarray:
        """(groups, 4) float64: mode 0 (sum x1, 0, sum x2, 0); mode 1 (sum (x1 - center)^2,
        sum x2*(x1 - center), sum x2, sum (x2*(x1 - center2))*weight)."""
        zero = np.zeros(self.groups)
        table = np.ascontiguousarray(np.stack([zero if c is None else np.ravel(c)
                                               for c in (center, center2, weight)]), np.float64)
        out = np.empty((self.groups, self.blocks, 4))
        _launch(MOMENTS, self.groups * self.blocks, self.element_size, x1, x2, None, self.g,
                self.r, ints=(self.blocks, self.block_rows, self.rows, mode, x2 is not None),
                table=table, out=out)
        return out.sum(axis=1)


@dataclass(frozen=True, eq=False)
class BatchNormPlan:
    values: SimpleNamespace
    affine: Affine
    p_sizes: tuple[int, ...]

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        v = self.values
        with np.errstate(all="ignore"):
            p = {name: np.broadcast_to(_f64(getattr(v, name), regions[name]), self.p_sizes)
                 for name in ("MeanTensor", "VarianceTensor", "ScaleTensor", "BiasTensor")}
            table = _table(int(np.prod(self.p_sizes)), m1=p["MeanTensor"],
                           a1=1.0 / np.sqrt(p["VarianceTensor"] + _epsilon(v)),
                           c=p["ScaleTensor"], b=p["BiasTensor"])
        self.affine.run(regions["InputTensor"], None, regions["OutputTensor"], table, False, v)


def batch_normalization_plan(v: SimpleNamespace) -> BatchNormPlan:
    sizes = v.InputTensor.sizes
    p_sizes = tuple(max(getattr(v, n).sizes[d] for n in ("MeanTensor", "VarianceTensor",
                                                         "ScaleTensor", "BiasTensor"))
                    for d in range(len(sizes)))
    return BatchNormPlan(v, Affine.build(v.InputTensor, None, v.OutputTensor, p_sizes), p_sizes)


@dataclass(frozen=True, eq=False)
class TrainingPlan:
    values: SimpleNamespace
    moments: Moments
    affine: Affine

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        v = self.values
        x = regions["InputTensor"]
        count = self.moments.count
        mean = self.moments.sums(x, None, 0)[:, 0] / count
        var = self.moments.sums(x, None, 1, mean)[:, 0] / count
        with np.errstate(all="ignore"):
            table = _table(mean.size, m1=mean, a1=1.0 / np.sqrt(var + _epsilon(v)),
                           c=_f64(v.ScaleTensor, regions["ScaleTensor"]),
                           b=_f64(v.BiasTensor, regions["BiasTensor"]), m2=0.0, a2=1.0)
        _write(v.OutputMeanTensor, regions["OutputMeanTensor"], mean)
        _write(v.OutputVarianceTensor, regions["OutputVarianceTensor"], var)
        add = regions["FusedAddTensor"] if v.FusedAddTensor is not None else None
        self.affine.run(x, add, regions["OutputTensor"], table, False, v)


def training_plan(v: SimpleNamespace) -> TrainingPlan:
    p_sizes = v.ScaleTensor.sizes
    return TrainingPlan(v, Moments.build(v.InputTensor, None, p_sizes),
                        Affine.build(v.InputTensor, v.FusedAddTensor, v.OutputTensor, p_sizes))


@dataclass(frozen=True, eq=False)
class GradPlan:
    values: SimpleNamespace
    training: bool
    moments: Moments
    affine: Affine

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        v = self.values
        x, dy = regions["InputTensor"], regions["InputGradientTensor"]
        count = self.moments.count
        mean = _f64(v.MeanTensor, regions["MeanTensor"]).ravel()
        scale = _f64(v.ScaleTensor, regions["ScaleTensor"]).ravel()
        with np.errstate(all="ignore"):
            shifted = _f64(v.VarianceTensor, regions["VarianceTensor"]).ravel() + _epsilon(v)
            inv = 1.0 / np.sqrt(shifted)
            if not self.training:
                sums = self.moments.sums(x, dy, 1, mean, mean, inv)
                table = _table(mean.size, a1=scale / np.sqrt(shifted))  # dy * (Scale / r)
            else:
                first = self.moments.sums(x, dy, 0)
                x_mean, dy_mean = first[:, 0] / count, first[:, 2] / count
                sums = self.moments.sums(x, dy, 1, x_mean, mean, inv)
                coef1_mean = sums[:, 1] / count
                table = _table(mean.size, m1=dy_mean, a1=1.0, m2=x_mean,
                               a2=-(coef1_mean / shifted), c=scale * inv)
        _write(v.OutputScaleGradientTensor, regions["OutputScaleGradientTensor"], sums[:, 3])
        _write(v.OutputBiasGradientTensor, regions["OutputBiasGradientTensor"], sums[:, 2])
        self.affine.run(dy, x if self.training else None, regions["OutputGradientTensor"], table,
                        True, v)


def _grad_plan(v: SimpleNamespace, training: bool) -> GradPlan:
    p_sizes = v.MeanTensor.sizes
    return GradPlan(v, training, Moments.build(v.InputTensor, v.InputGradientTensor, p_sizes),
                    Affine.build(v.InputGradientTensor, v.InputTensor if training else None,
                                 v.OutputGradientTensor, p_sizes))


def grad_plan(v: SimpleNamespace) -> GradPlan:
    return _grad_plan(v, False)


def training_grad_plan(v: SimpleNamespace) -> GradPlan:
    return _grad_plan(v, True)


# The references: the pages' formulas in float64, with NumPy's broadcasting.

def _inputs64(inputs: Mapping[str, np.ndarray], *names: str) -> list[np.ndarray]:
    return [np.asarray(inputs[n], np.float64) for n in names]


@ieee_reference
def _rounded(v: SimpleNamespace, values: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    out = {}
    for name, y in values.items():
        t = getattr(v, name)
        out[name] = np.asarray(y, np.float64).reshape(t.sizes).astype(t.dtype)
    return out


def _reduced(p: np.ndarray) -> tuple[int, ...]:
    """The dimensions a per-parameter tensor broadcasts along (size 1)."""
    return tuple(d for d, s in enumerate(p.shape) if s == 1)


@ieee_reference
def batch_normalization_float64(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                                ) -> dict[str, np.ndarray]:
    x, mean, var, scale, bias = _inputs64(inputs, "InputTensor", "MeanTensor", "VarianceTensor",
                                          "ScaleTensor", "BiasTensor")
    return {"OutputTensor": _activate(v, scale * ((x - mean) / np.sqrt(var + _epsilon(v)))
                                      + bias)}


@ieee_reference
def training_float64(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                     ) -> dict[str, np.ndarray]:
    x, scale, bias = _inputs64(inputs, "InputTensor", "ScaleTensor", "BiasTensor")
    axes = _reduced(scale)
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = scale * ((x - mean) / np.sqrt(var + _epsilon(v))) + bias
    if inputs.get("FusedAddTensor") is not None:
        y = y + np.asarray(inputs["FusedAddTensor"], np.float64)
    return {"OutputTensor": _activate(v, y), "OutputMeanTensor": mean,
            "OutputVarianceTensor": var}


@ieee_reference
def grad_float64(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    x, dy, mean, var, scale = _inputs64(inputs, "InputTensor", "InputGradientTensor",
                                        "MeanTensor", "VarianceTensor", "ScaleTensor")
    axes = _reduced(mean)
    r = np.sqrt(var + _epsilon(v))
    return {"OutputGradientTensor": dy * (scale / r),
            "OutputScaleGradientTensor": np.sum(dy * (x - mean) / r, axis=axes, keepdims=True),
            "OutputBiasGradientTensor": np.sum(dy, axis=axes, keepdims=True)}


@ieee_reference
def training_grad_float64(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                          ) -> dict[str, np.ndarray]:
    x, dy, mean, var, scale = _inputs64(inputs, "InputTensor", "InputGradientTensor",
                                        "MeanTensor", "VarianceTensor", "ScaleTensor")
    axes = _reduced(mean)

    def mean_of(a: np.ndarray) -> np.ndarray:
        return a.mean(axis=axes, keepdims=True)

    eps = _epsilon(v)
    coef0 = 1.0 / np.sqrt(var + eps)
    coef1 = dy * (x - mean_of(x))
    dy_centered = dy - mean_of(dy)
    x_centered = x - mean_of(x)
    grad = scale * coef0 * (dy_centered - x_centered * mean_of(coef1) / (var + eps))
    out = grad_float64(v, inputs)
    out["OutputGradientTensor"] = grad
    return out


Reference = Callable[[SimpleNamespace, Mapping[str, np.ndarray]], dict[str, np.ndarray]]


def _reference(f64: Reference) -> Reference:
    """The row's reference: the float64 formula, rounded once to each output's type."""
    def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return _rounded(v, f64(v, inputs))
    return reference


# --- LP_NORMALIZATION -----------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class LpPlan:
    element_size: int
    g: np.ndarray  # the lines' collapsed sizes, strides in x and y
    count: int
    ints: tuple[int, ...]
    epsilon: float

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        _launch(LP, self.count, self.element_size, regions["InputTensor"], None,
                regions["OutputTensor"], self.g, ints=self.ints, reals=(self.epsilon,))


def lp_plan(v: SimpleNamespace) -> LpPlan:
    x, y, axis = v.InputTensor, v.OutputTensor, v.Axis
    layout = Layout.build(x.sizes, [axis], [x.strides, y.strides])
    g = _rows(layout.g)
    # Column mode where the axis is not the contiguous dimension and lines sit side by side.
    column = x.strides[axis] != 1 and x.sizes[axis] > 1 and int(g[0, -1]) > 1
    block = LP_BLOCK if column else 0
    pieces = -(-int(g[0, -1]) // block) if column else 1
    count = int(np.prod(g[0, :-1])) * pieces if column else layout.groups
    return LpPlan(x.element_size, g, count, (x.sizes[axis], x.strides[axis], y.strides[axis],
                                              int(v.P), block, pieces), float(v.Epsilon))


@ieee_reference
def lp_float64(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    x = np.asarray(inputs["InputTensor"], np.float64)
    s = np.sum(np.abs(x) ** v.P, axis=v.Axis, keepdims=True) + float(v.Epsilon)
    return {"OutputTensor": x / (np.sqrt(s) if v.P == 2 else s)}


# --- LOCAL_RESPONSE_NORMALIZATION(_GRAD) ----------------------------------------------------

def _window(local_size: int) -> tuple[int, int]:
    """(lo, hi): the region of coordinate i is [i - lo, i + hi]."""
    lo = (local_size - 1) // 2
    return lo, local_size - 1 - lo


@dataclass(frozen=True, eq=False)
class LrnPlan:
    values: SimpleNamespace
    grad: bool

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        v = self.values
        x = v.InputTensor
        out = v.OutputGradientTensor if self.grad else v.OutputTensor
        dy = v.InputGradientTensor if self.grad else None
        w = x.sizes[3]
        sx, sy = x.strides, out.strides
        sd = dy.strides if dy is not None else (0, 0, 0, 0)
        lo, hi = _window(v.LocalSize)
        # A task's plane: channels x a block of columns per (batch, row) with CrossChannel, else
        # rows x columns per (batch, channel); (outer dimensions, plane rows, block).
        (o0, o1), a, block = ((0, 2), 1, LRN_BLOCK) if v.CrossChannel else ((0, 1), 2, w)
        pieces = -(-w // block)
        alpha, beta, local = float(v.Alpha), float(v.Beta), float(v.LocalSize)
        ints = (x.sizes[o0], x.sizes[o1], sx[o0], sx[o1], sd[o0], sd[o1], sy[o0], sy[o1],
                x.sizes[a], sx[a], sd[a], sy[a], w, sx[3], sd[3], sy[3], block, lo, hi,
                not v.CrossChannel, self.grad, pieces)
        _launch(LRN, x.sizes[o0] * x.sizes[o1] * pieces, x.element_size, regions["InputTensor"],
                regions["InputGradientTensor"] if self.grad else None,
                regions["OutputGradientTensor" if self.grad else "OutputTensor"], ints=ints,
                reals=(alpha / local, beta, float(v.Bias), 2.0 * alpha * beta / local))


def lrn_plan(v: SimpleNamespace) -> LrnPlan:
    return LrnPlan(v, False)


def lrn_grad_plan(v: SimpleNamespace) -> LrnPlan:
    return LrnPlan(v, True)


def _region(index: tuple[int, ...], v: SimpleNamespace, transposed: bool = False) -> tuple:
    """The local region of the element at ``index`` (clipped at the tensor's start; NumPy clips
    its end): the channel window, or the spatial one (``transposed``: the elements whose region
    holds it)."""
    lo, hi = _window(v.LocalSize)
    if transposed:
        lo, hi = hi, lo
    box: list = list(index)
    for d in (1,) if v.CrossChannel else (2, 3):
        box[d] = slice(max(index[d] - lo, 0), index[d] + hi + 1)
    return tuple(box)


def _region_sums(q: np.ndarray, v: SimpleNamespace, transposed: bool = False) -> np.ndarray:
    """For every element, the sum of q over its local region (``transposed``: over the
    elements whose region holds it), elements outside the tensor contributing nothing."""
    out = np.zeros_like(q)
    for index in np.ndindex(*q.shape):
        out[index] = q[_region(index, v, transposed)].sum()
    return out


def _lrn_base(v: SimpleNamespace, x: np.ndarray) -> np.ndarray:
    """Bias + (Alpha / LocalSize) * the sum of the squares over each element's region."""
    return float(v.Bias) + (float(v.Alpha) / v.LocalSize) * _region_sums(x * x, v)


@ieee_reference
def lrn_float64(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    x = np.asarray(inputs["InputTensor"], np.float64)
    return {"OutputTensor": x / np.power(_lrn_base(v, x), float(v.Beta))}


@ieee_reference
def lrn_grad_float64(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                     ) -> dict[str, np.ndarray]:
    x, dy = _inputs64(inputs, "InputTensor", "InputGradientTensor")
    beta = float(v.Beta)
    s = _lrn_base(v, x)
    # Each region i gives every element j it holds dy_i * x_i * S_i^(-beta-1) (a scatter: the
    # kernel gathers the same sums through the transposed window).
    t = dy * x * np.power(s, -beta - 1.0)
    spread = np.zeros_like(t)
    for index in np.ndindex(*t.shape):
        spread[_region(index, v)] += t[index]
    coef = 2.0 * float(v.Alpha) * beta / v.LocalSize
    return {"OutputGradientTensor": dy * np.power(s, -beta) - coef * x * spread}


ROWS: tuple[Row, ...] = (
    Row(OP.DML_OPERATOR_BATCH_NORMALIZATION, batch_normalization_plan,
        _reference(batch_normalization_float64), FLOATS),
    Row(OP.DML_OPERATOR_BATCH_NORMALIZATION_TRAINING, training_plan,
        _reference(training_float64), FLOATS),
    Row(OP.DML_OPERATOR_BATCH_NORMALIZATION_GRAD, grad_plan, _reference(grad_float64), FLOATS),
    Row(OP.DML_OPERATOR_BATCH_NORMALIZATION_TRAINING_GRAD, training_grad_plan,
        _reference(training_grad_float64), FLOATS),
    Row(OP.DML_OPERATOR_LP_NORMALIZATION, lp_plan, _reference(lp_float64), FLOATS),
    Row(OP.DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION, lrn_plan, _reference(lrn_float64),
        FLOATS),
    Row(OP.DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION_GRAD, lrn_grad_plan,
        _reference(lrn_grad_float64), FLOATS),
)
