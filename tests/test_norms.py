"""BATCH_NORMALIZATION, BATCH_NORMALIZATION_TRAINING, BATCH_NORMALIZATION_GRAD,
BATCH_NORMALIZATION_TRAINING_GRAD, LP_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION and
LOCAL_RESPONSE_NORMALIZATION_GRAD (``emulator/reduction/norms.py``).

Random descs of both data types of the last bands (FLOAT32, FLOAT16) and every rank those bands
allow (1 to 8; 4 for the LRN pair, the only rank of their band, and the rank of the earlier 4-D
bands), with padded and zero (broadcast) input strides, padded output strides whose gaps must stay
untouched (SENTINEL), inputs that must stay unchanged, broadcast parameter tensors, fused
activations, and edge values (NaN, +-inf, +-0, huge, subnormal) sprinkled in, against the rows'
float64 references (the pages' formulas, written plainly).

Bound, for every output element: the kernel's value is the float64 reference value rounded once
to the output type, except that a value within delta of a rounding boundary may round to either
neighbour; delta = 2^-40 * M, M the element's condition magnitude (the formula evaluated on the
absolute values of its terms, e.g. sum(|dy| * |x - Mean|) / r for a scale gradient; the
activation's slope, at most 2 for the activations tested, included). Why 2^-40: kernel and
reference both evaluate the formula in float64 but in different orders (sums reassociated and in
blocks, x * (1/r) for x / r), which differ by at most about (N + 4) * 2^-53 * M for sums of N
terms; these tests sum at most ~2,000 terms, so 2^-40 holds with margin while staying ~2^-17 of a
FLOAT32 ULP (and ~2^-30 of a FLOAT16 one) where M is about the result. A relative bound would not
do: a gradient or a centred value can be far smaller than its terms. Non-finite results match
exactly (NaN for NaN, infinities with their sign); zeros of the outputs whose last operation is
not a sum (the forward outputs, the means) carry the reference's sign. Measured
(``test_measured_error`` and a longer run of the same cases): of ~70,000 elements of every
operator and both types, 36 were not the correctly rounded value (all FLOAT32 gradients, where
terms cancel), off by at most 2^-56 * M before rounding; the test asserts at most 1 in 200 and
2^-50 * M.

The gradients are also checked against central finite differences of the forward references
(and the kernels' FLOAT32 results against those); hand-computed vectors pin the formulas (the
pages have no examples); edge tests pin the decisions (docs/decisions.md).
"""

from __future__ import annotations

import zlib
from types import SimpleNamespace

import numba
import numpy as np
import pytest

from descriptors import *
from emulator import DMLCreateDevice1
from emulator.kernels import tasks
from emulator.reduction import norm_kernels, norms
from emulator.registry import REGISTRY

from .helpers import (
    SENTINEL,
    addressed_mask,
    bits,
    check_level_case,
    desc,
    layout,
    logical,
    np_dtype,
    strided_buffer,
)

T = DML_TENSOR_DATA_TYPE
OP = DML_OPERATOR_TYPE
F32, F16 = T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16
BN = OP.DML_OPERATOR_BATCH_NORMALIZATION
TRAINING = OP.DML_OPERATOR_BATCH_NORMALIZATION_TRAINING
GRAD = OP.DML_OPERATOR_BATCH_NORMALIZATION_GRAD
TRAINING_GRAD = OP.DML_OPERATOR_BATCH_NORMALIZATION_TRAINING_GRAD
LP = OP.DML_OPERATOR_LP_NORMALIZATION
LRN = OP.DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION
LRN_GRAD = OP.DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION_GRAD
REL = 2.0 ** -40
FLOAT64 = {BN: norms.batch_normalization_float64, TRAINING: norms.training_float64,
           GRAD: norms.grad_float64, TRAINING_GRAD: norms.training_grad_float64,
           LP: norms.lp_float64, LRN: norms.lrn_float64, LRN_GRAD: norms.lrn_grad_float64}
# Outputs whose zeros must have the reference's sign (their last operation is not a sum of
# terms that may cancel in another order).
SIGNED_ZEROS = {"OutputTensor", "OutputMeanTensor"}
# Fused activations tried (slope at most 2 everywhere): (operator, attributes).
FUSED = [None, (OP.DML_OPERATOR_ACTIVATION_RELU, {}),
         (OP.DML_OPERATOR_ACTIVATION_LEAKY_RELU, {"Alpha": 0.25}),
         (OP.DML_OPERATOR_ACTIVATION_LINEAR, {"Alpha": 1.5, "Beta": -0.25}),
         (OP.DML_OPERATOR_ACTIVATION_ELU, {"Alpha": 1.25}),
         (OP.DML_OPERATOR_ACTIVATION_SIGMOID, {}), (OP.DML_OPERATOR_ACTIVATION_TANH, {})]


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="6_4")


def last_band(op):
    return REGISTRY[op].support[-1].tensors["InputTensor"]


# --- the bound ------------------------------------------------------------------------------

def within_bound(got: np.ndarray, want64: np.ndarray, magnitude) -> np.ndarray:
    """``got`` is ``want64`` rounded once, or (within 2^-40 * magnitude of a rounding boundary)
    its neighbour; non-finite values exactly."""
    got = np.asarray(got)
    want = np.broadcast_to(np.asarray(want64, np.float64), got.shape)
    delta = np.broadcast_to(REL * np.asarray(magnitude, np.float64), got.shape)
    delta = np.where(np.isfinite(delta), delta, 0.0)
    with np.errstate(all="ignore"):
        lo = (want - delta).astype(got.dtype).astype(np.float64)
        hi = (want + delta).astype(got.dtype).astype(np.float64)
    g = got.astype(np.float64)
    finite = (g >= lo) & (g <= hi)
    exact = (np.isnan(want) & np.isnan(g)) | (want == g)
    return np.where(np.isfinite(want), finite, exact)


def test_the_bound_can_fail():
    """Rounded once: accepted; one ULP off: refused (unless the value lies within delta of the
    boundary); NaN for a number, +inf for -inf: refused."""
    want = np.array([1.0 + 2.0**-30, 3.0, np.inf, np.nan, 1.0 + 2.0**-24])
    got = want.astype(np.float32)
    assert within_bound(got, want, 1.0).all()
    off = got.copy()
    off[0] = np.nextafter(off[0], np.float32(2))
    off[2], off[3] = -np.inf, 1.0
    assert within_bound(off, want, 1.0).tolist() == [False, True, False, False, True]
    tie = np.array([1.0 + 2.0**-24])  # exactly halfway: either neighbour within delta
    assert within_bound(np.array([np.float32(1) + np.float32(2.0**-23)]), tie, 1.0).all()
    assert not within_bound(np.array([np.float32(1) + np.float32(2.0**-22)]), tie, 1.0).all()


# --- random cases ---------------------------------------------------------------------------

MAX_SIZE = {1: 40, 2: 12, 3: 7, 4: 5, 5: 3, 6: 3, 7: 2, 8: 2}


def random_sizes(rng, rank):
    return [int(rng.integers(1, MAX_SIZE[rank] + 1)) for _ in range(rank)]


def random_values(rng, shape, dt, edges: bool, scale=3.0, offset=0.0):
    v = rng.standard_normal(shape) * scale + offset
    if edges:
        info = np.finfo(np_dtype(dt))
        pool = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, float(info.max) / 4,
                         -float(info.max) / 4, float(info.smallest_subnormal), 1e-30])
        special = rng.random(shape) < 0.08
        v[special] = rng.choice(pool, int(special.sum()))
    return v


def some_sizes(rng, sizes):
    """Per dimension 1 (broadcast) or the input's size."""
    return [n if rng.random() < 0.5 else 1 for n in sizes]


class Case:
    """The tensors of one desc: inputs written into strided buffers, outputs full of
    SENTINEL."""

    def __init__(self, rng, dt):
        self.rng, self.dt = rng, dt
        self.descs, self.raws, self.inputs, self.outputs = {}, {}, {}, {}

    def input(self, name, sizes, values, broadcast=True):
        strides = layout(self.rng, sizes, broadcast)
        raw = strided_buffer(self.rng, self.dt, sizes, strides)
        dtype = np_dtype(self.dt)
        with np.errstate(all="ignore"):
            logical(raw, dtype, sizes, strides)[...] = np.asarray(values).astype(dtype)
        self.descs[name], self.raws[name] = desc(self.dt, sizes, strides), raw
        self.inputs[name] = np.array(logical(raw, dtype, sizes, strides))

    def output(self, name, sizes):
        strides = layout(self.rng, sizes, False)
        raw = strided_buffer(self.rng, self.dt, sizes, strides, fill=SENTINEL)
        self.descs[name], self.raws[name] = desc(self.dt, sizes, strides), raw
        self.outputs[name] = (sizes, strides)


def fused_desc(fused):
    if fused is None:
        return None
    op, attrs = fused
    return OPERATOR_DESC_CLASSES[op](**attrs)


def make_case(rng, op, dt, rank):
    """(Case, attributes) of a random desc."""
    c = Case(rng, dt)
    edges = rng.random() < 0.3
    eps = float(rng.choice([1e-5, 0.0, 0.5, 1e-3]))
    if op in (LRN, LRN_GRAD):
        sizes = [int(rng.integers(1, 3)), int(rng.integers(1, 7)), int(rng.integers(1, 6)),
                 int(rng.integers(1, 6))]
    else:
        sizes = random_sizes(rng, rank)
    if op == BN:
        c.input("InputTensor", sizes, random_values(rng, sizes, dt, edges, offset=1.0))
        for name in ("MeanTensor", "VarianceTensor", "ScaleTensor", "BiasTensor"):
            p = some_sizes(rng, sizes)
            values = rng.random(p) * 3 if name == "VarianceTensor" else rng.standard_normal(p)
            if name == "VarianceTensor" and rng.random() < 0.2:
                values[rng.random(p) < 0.5] = 0.0  # with Epsilon 0: division by 0
            c.input(name, p, values)
        c.output("OutputTensor", sizes)
        fused = FUSED[int(rng.integers(0, len(FUSED)))]
        return c, {"Spatial": bool(rng.random() < 0.5), "Epsilon": eps,
                   "FusedActivation": fused_desc(fused)}
    if op == TRAINING:
        p = some_sizes(rng, sizes)
        c.input("InputTensor", sizes, random_values(rng, sizes, dt, edges, offset=2.0))
        c.input("ScaleTensor", p, rng.standard_normal(p))
        c.input("BiasTensor", p, rng.standard_normal(p))
        if rng.random() < 0.5:
            c.input("FusedAddTensor", sizes, random_values(rng, sizes, dt, edges))
        c.output("OutputTensor", sizes)
        c.output("OutputMeanTensor", p)
        c.output("OutputVarianceTensor", p)
        fused = FUSED[int(rng.integers(0, len(FUSED)))]
        return c, {"Epsilon": eps, "FusedActivation": fused_desc(fused)}
    if op in (GRAD, TRAINING_GRAD):
        p = some_sizes(rng, sizes)
        c.input("InputTensor", sizes, random_values(rng, sizes, dt, edges, offset=1.0))
        c.input("InputGradientTensor", sizes, random_values(rng, sizes, dt, edges))
        c.input("MeanTensor", p, rng.standard_normal(p) + 1.0)
        c.input("VarianceTensor", p, rng.random(p) * 3)
        c.input("ScaleTensor", p, rng.standard_normal(p))
        c.output("OutputGradientTensor", sizes)
        c.output("OutputScaleGradientTensor", p)
        c.output("OutputBiasGradientTensor", p)
        return c, {"Epsilon": eps}
    if op == LP:
        c.input("InputTensor", sizes, random_values(rng, sizes, dt, edges))
        c.output("OutputTensor", sizes)
        return c, {"Axis": int(rng.integers(0, rank)), "Epsilon": eps,
                   "P": int(rng.integers(1, 3))}
    c.input("InputTensor", sizes, random_values(rng, sizes, dt, edges))
    if op == LRN_GRAD:
        c.input("InputGradientTensor", sizes, random_values(rng, sizes, dt, edges))
        c.output("OutputGradientTensor", sizes)
    else:
        c.output("OutputTensor", sizes)
    local = int(rng.choice([1, 2, 3, 4, 5, 6, 2**32 - 1]))
    return c, {"CrossChannel": bool(rng.random() < 0.5), "LocalSize": local,
               "Alpha": float(rng.choice([1e-4, 0.5, 2.0])),
               "Beta": float(rng.choice([0.75, 0.5, 1.0, -0.5, 0.0])),
               "Bias": float(rng.choice([1.0, 2.0, 0.5, 0.0]))}


def slope(v) -> float:
    return 1.0 if getattr(v, "FusedActivation", None) is None else 2.0


def magnitudes(op, v, x: dict, want: dict) -> dict:
    """The condition magnitude M of every output element (see the module docstring)."""
    a = {k: np.abs(np.asarray(val, np.float64)) for k, val in x.items()}
    f = {k: np.asarray(val, np.float64) for k, val in x.items()}
    eps = float(getattr(v, "Epsilon", None) or 0.0)
    with np.errstate(all="ignore"):
        if op == BN:
            r = np.sqrt(np.abs(f["VarianceTensor"] + eps))
            m = np.abs(f["InputTensor"] - f["MeanTensor"]) * a["ScaleTensor"] / r \
                + a["BiasTensor"]
            return {"OutputTensor": slope(v) * m + np.abs(want["OutputTensor"])}
        if op == TRAINING:
            axes = norms._reduced(f["ScaleTensor"])
            ax = a["InputTensor"].mean(axis=axes, keepdims=True)
            spread = ((a["InputTensor"] + ax) ** 2).mean(axis=axes, keepdims=True)
            var = want["OutputVarianceTensor"]
            r = np.sqrt(np.abs(var + eps))
            centred = np.abs(f["InputTensor"] - want["OutputMeanTensor"])
            m = a["ScaleTensor"] / r * ((a["InputTensor"] + ax) + centred * spread
                                        / np.abs(var + eps)) + a["BiasTensor"] \
                + a.get("FusedAddTensor", 0.0)
            return {"OutputTensor": slope(v) * m + np.abs(want["OutputTensor"]),
                    "OutputMeanTensor": ax, "OutputVarianceTensor": spread}
        if op in (GRAD, TRAINING_GRAD):
            axes = norms._reduced(f["MeanTensor"])
            shifted = f["VarianceTensor"] + eps
            r = np.sqrt(np.abs(shifted))
            dy, xa = a["InputGradientTensor"], a["InputTensor"]
            out = {"OutputScaleGradientTensor": np.sum(
                       dy * np.abs(f["InputTensor"] - f["MeanTensor"]) / r, axis=axes,
                       keepdims=True),
                   "OutputBiasGradientTensor": np.sum(dy, axis=axes, keepdims=True)}
            if op == GRAD:
                out["OutputGradientTensor"] = dy * a["ScaleTensor"] / r
            else:
                ax = xa.mean(axis=axes, keepdims=True)
                ady = dy.mean(axis=axes, keepdims=True)
                coef = (dy * (xa + ax)).mean(axis=axes, keepdims=True) / np.abs(shifted)
                out["OutputGradientTensor"] = a["ScaleTensor"] / r * (
                    dy + ady + (xa + ax) * coef)
            return out
        if op == LP:
            return {"OutputTensor": 2 * np.abs(want["OutputTensor"])}
        beta = abs(float(v.Beta))
        if op == LRN:
            return {"OutputTensor": (2 + 2 * beta) * np.abs(want["OutputTensor"])}
        s = norms._lrn_base(v, f["InputTensor"])
        t = a["InputGradientTensor"] * a["InputTensor"] * np.abs(np.power(s, -beta - 1.0))
        spread = norms._region_sums(t, v, transposed=True)
        coef = 2.0 * abs(float(v.Alpha)) * beta / v.LocalSize
        return {"OutputGradientTensor": (1 + beta) * a["InputGradientTensor"]
                * np.abs(np.power(s, -float(v.Beta))) + (2 + beta) * coef * a["InputTensor"]
                * spread}


def run_case(device, rng, op, dt, rank, measure=None, **overrides):
    c, attrs = make_case(rng, op, dt, rank)
    attrs.update(overrides)
    operator = DML_OPERATOR_DESC(Desc=OPERATOR_DESC_CLASSES[op](**c.descs, **attrs))
    before = {k: c.raws[k].copy() for k in c.inputs}
    device.execute(operator, {k: c.raws[k] for k in c.inputs},
                   {k: c.raws[k] for k in c.outputs})
    for k in c.inputs:
        assert (c.raws[k] == before[k]).all(), f"input {k} changed"
    v = device.CreateOperator(operator).validated.values
    want = FLOAT64[op](v, c.inputs)
    rounded = REGISTRY[op].module.reference(v, c.inputs)
    magnitude = magnitudes(op, v, c.inputs, want)
    dtype = np_dtype(dt)
    for name, (sizes, strides) in c.outputs.items():
        raw = c.raws[name]
        got = logical(raw, dtype, sizes, strides)
        want64 = np.asarray(want[name], np.float64).reshape(sizes)
        with np.errstate(all="ignore"):
            assert (bits(rounded[name]) == bits(want64.astype(dtype))).all()
        ok = within_bound(got, want64, np.broadcast_to(magnitude[name], want64.shape))
        assert ok.all(), (name, attrs, sizes, got[~ok], want64[~ok])
        if name in SIGNED_ZEROS:  # a zero's sign too, where no sum decides it
            zero = (want64 == 0) & (got == 0)
            assert (np.signbit(got[zero]) == np.signbit(want64[zero])).all(), (name, attrs)
        untouched = ~addressed_mask(raw.size, dtype.itemsize, sizes, strides)
        assert (raw[untouched] == SENTINEL).all(), "a gap of the output was written"
        if measure is not None:
            with np.errstate(all="ignore"):
                finite = np.isfinite(want64)
                m = np.broadcast_to(magnitude[name], want64.shape)[finite]
                err = np.abs(got[finite].astype(np.float64) - want64[finite])
                exact = got[finite] == want64[finite].astype(dtype)
                measure.append((int((~exact).sum()), int(exact.size),
                                float(np.max(np.where(exact, 0.0, err / np.where(m > 0, m, 1)),
                                             initial=0.0))))


def random_case_ids():
    out = []
    for op in FLOAT64:
        dims, types = last_band(op)
        for dt in sorted(types):
            out += [(op, dt, rank) for rank in sorted(set(dims) | {4})]
    return out


CASES = random_case_ids()


def test_every_band_type_and_rank_is_covered():
    """FLOAT32 and FLOAT16 for all seven; ranks 1-8, and 4 for the LRN pair."""
    got = {(op.name[13:], dt.name[21:], r) for op, dt, r in CASES}
    wide = ["BATCH_NORMALIZATION", "BATCH_NORMALIZATION_TRAINING", "BATCH_NORMALIZATION_GRAD",
            "BATCH_NORMALIZATION_TRAINING_GRAD", "LP_NORMALIZATION"]
    assert got == {*((o, t, r) for o in wide for t in ("FLOAT32", "FLOAT16")
                     for r in range(1, 9)),
                   *((o, t, 4) for o in ("LOCAL_RESPONSE_NORMALIZATION",
                                         "LOCAL_RESPONSE_NORMALIZATION_GRAD")
                     for t in ("FLOAT32", "FLOAT16"))}


@pytest.mark.parametrize("op,dt,rank", CASES,
                         ids=[f"{o.name[13:]}-{d.name[21:]}-{r}D" for o, d, r in CASES])
def test_kernel_matches_the_reference(device, op, dt, rank):
    rng = np.random.default_rng(zlib.crc32(f"{op.name}{dt.name}{rank}".encode()))
    for _ in range(4 if rank != 4 else 12):
        run_case(device, rng, op, dt, rank)


def test_measured_error(device):
    """How close the kernels come: over random FLOAT32 cases of every operator, the share of
    elements not equal to the correctly rounded reference, and the largest error (over M) of
    those."""
    measure = []
    rng = np.random.default_rng(11)
    for op in FLOAT64:
        for _ in range(6):
            run_case(device, rng, op, F32, 4, measure)
    wrong = sum(m[0] for m in measure)
    total = sum(m[1] for m in measure)
    assert wrong <= total // 200, (wrong, total)
    assert max(m[2] for m in measure) <= 2.0**-50


# --- hand-computed vectors (the pages have no examples) -------------------------------------

def t4(a):
    return tensor_desc(np.asarray(a))


def test_batch_normalization_by_hand(device):
    """Channel 0: [1, 2], mean 1.5, variance 0.25, scale 2, bias 0 -> [-2, 2]; channel 1:
    [3, 4], mean 3.5, variance 0.25, scale 1, bias 10 -> [9, 11]; a fused RELU clips -2."""
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 1, 2)
    p = {k: np.array(v, np.float32).reshape(1, 2, 1, 1) for k, v in
         {"MeanTensor": [1.5, 3.5], "VarianceTensor": [0.25, 0.25], "ScaleTensor": [2, 1],
          "BiasTensor": [0, 10]}.items()}
    for fused, want in ((None, [-2, 2, 9, 11]),
                        (DML_ACTIVATION_RELU_OPERATOR_DESC(), [0, 2, 9, 11])):
        op = DML_OPERATOR_DESC(Desc=DML_BATCH_NORMALIZATION_OPERATOR_DESC(
            InputTensor=t4(x), **{k: t4(v) for k, v in p.items()}, OutputTensor=t4(x),
            Spatial=True, Epsilon=0.0, FusedActivation=fused))
        [y] = device.execute(op, {"InputTensor": x, **p})
        assert y.ravel().tolist() == want


def test_batch_normalization_training_by_hand(device):
    """[1, 2, 3, 4]: mean 2.5, population variance 1.25; FusedAdd added after Bias."""
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 1, 1, 4)
    one = np.ones((1, 1, 1, 1), np.float32)
    add = np.full_like(x, 0.5)
    op = DML_OPERATOR_DESC(Desc=DML_BATCH_NORMALIZATION_TRAINING_OPERATOR_DESC(
        InputTensor=t4(x), ScaleTensor=t4(one), BiasTensor=t4(one), FusedAddTensor=t4(add),
        OutputTensor=t4(x), OutputMeanTensor=t4(one), OutputVarianceTensor=t4(one), Epsilon=0.0))
    y, mean, var = device.execute(op, [x, one, one, add])
    assert mean.item() == 2.5 and var.item() == 1.25
    want = ((x.astype(np.float64) - 2.5) / np.sqrt(1.25) + 1.5).astype(np.float32)
    assert (y == want).all()


def test_batch_normalization_grads_by_hand(device):
    """x [1, 3] with Mean 2, Variance 1 (the batch's own), Scale 2, dy [1, 2], Epsilon 0:
    GRAD: dx = dy * 2 = [2, 4], scale gradient sum(dy * (x - 2)) = 1, bias gradient 3;
    TRAINING_GRAD: dx = 2 * ((dy - 1.5) - (x - 2) * mean(dy * (x - 2)) / 1) = [0, 0] (dy is
    the gradient of a constant plus the normalized x), same scale and bias gradients."""
    x = np.array([1, 3], np.float32).reshape(1, 2)
    dy = np.array([1, 2], np.float32).reshape(1, 2)
    one = lambda v: np.array([[v]], np.float32)  # noqa: E731
    for cls, want in ((DML_BATCH_NORMALIZATION_GRAD_OPERATOR_DESC, [2, 4]),
                      (DML_BATCH_NORMALIZATION_TRAINING_GRAD_OPERATOR_DESC, [0, 0])):
        op = DML_OPERATOR_DESC(Desc=cls(
            InputTensor=t4(x), InputGradientTensor=t4(dy), MeanTensor=t4(one(2)),
            VarianceTensor=t4(one(1)), ScaleTensor=t4(one(2)), OutputGradientTensor=t4(x),
            OutputScaleGradientTensor=t4(one(0)), OutputBiasGradientTensor=t4(one(0)),
            Epsilon=0.0))
        dx, ds, db = device.execute(op, [x, dy, one(2), one(1), one(2)])
        assert dx.ravel().tolist() == want and ds.item() == 1.0 and db.item() == 3.0


def test_lp_normalization_by_hand(device):
    """[[3, 4], [0, 5]] along axis 1: P 2 gives [[0.6, 0.8], [0, 1]], P 1 [[3/7, 4/7], [0, 1]]
    (Epsilon 0); along axis 0 with P 1: [[1, 4/9], [0, 5/9]]."""
    x = np.array([[3, 4], [0, 5]], np.float32)
    for axis, p, want in ((1, 2, [[0.6, 0.8], [0, 1]]), (1, 1, [[3 / 7, 4 / 7], [0, 1]]),
                          (0, 1, [[1, 4 / 9], [0, 5 / 9]])):
        op = DML_OPERATOR_DESC(Desc=DML_LP_NORMALIZATION_OPERATOR_DESC(
            InputTensor=t4(x), OutputTensor=t4(x), Axis=axis, Epsilon=0.0, P=p))
        [y] = device.execute(op, [x])
        assert (y == np.array(want, np.float64).astype(np.float32)).all()


def test_lp_normalization_epsilon_is_added_before_the_root(device):
    """[3, 4] with Epsilon 11: P 2 divides by sqrt(25 + 11) = 6, P 1 by 7 + 11 = 18."""
    x = np.array([3, 4], np.float32)
    for p, norm in ((2, 6.0), (1, 18.0)):
        op = DML_OPERATOR_DESC(Desc=DML_LP_NORMALIZATION_OPERATOR_DESC(
            InputTensor=t4(x), OutputTensor=t4(x), Axis=0, Epsilon=11.0, P=p))
        [y] = device.execute(op, [x])
        assert (y == (x.astype(np.float64) / norm).astype(np.float32)).all()


def lrn_desc(x, cross, local, alpha, beta, bias, dy=None):
    if dy is None:
        return DML_OPERATOR_DESC(Desc=DML_LOCAL_RESPONSE_NORMALIZATION_OPERATOR_DESC(
            InputTensor=t4(x), OutputTensor=t4(x), CrossChannel=cross, LocalSize=local,
            Alpha=alpha, Beta=beta, Bias=bias))
    return DML_OPERATOR_DESC(Desc=DML_LOCAL_RESPONSE_NORMALIZATION_GRAD_OPERATOR_DESC(
        InputTensor=t4(x), InputGradientTensor=t4(dy), OutputGradientTensor=t4(x),
        CrossChannel=cross, LocalSize=local, Alpha=alpha, Beta=beta, Bias=bias))


def test_lrn_cross_channel_by_hand(device):
    """Channels [1, 2, 3, 4], Alpha = LocalSize (so Alpha / LocalSize = 1), Beta 1, Bias 1.
    LocalSize 3: regions [c - 1, c + 1]: sums 5, 14, 29, 25 -> x / [6, 15, 30, 26].
    LocalSize 2 (even): regions [c, c + 1] (ONNX's placement): sums 5, 13, 25, 16 -> x / [6, 14,
    26, 17]."""
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 4, 1, 1)
    for local, base in ((3, [6, 15, 30, 26]), (2, [6, 14, 26, 17])):
        [y] = device.execute(lrn_desc(x, True, local, float(local), 1.0, 1.0), [x])
        assert (y.ravel() == (np.arange(1, 5) / np.array(base, np.float64))
                .astype(np.float32)).all()


def test_lrn_within_channel_by_hand(device):
    """A 3x3 plane of ones, LocalSize 2 (regions [i, i + 1] per axis, clipped), Alpha 2, Beta 1,
    Bias 0: the region sums are 4, 2, 2 / 2, 2, 1 ... so y = 1 / sums; a second channel is
    independent."""
    x = np.ones((1, 2, 3, 3), np.float32)
    x[0, 1] = 2
    [y] = device.execute(lrn_desc(x, False, 2, 2.0, 1.0, 0.0), [x])
    sums = np.array([[4, 4, 2], [4, 4, 2], [2, 2, 1]], np.float64)
    assert (y[0, 0] == (1 / sums).astype(np.float32)).all()
    assert (y[0, 1] == (2 / (4 * sums)).astype(np.float32)).all()


# --- gradients against finite differences -------------------------------------------------

def directional(f, x, u, h=1e-6):
    return (f(x + h * u) - f(x - h * u)) / (2 * h)


def bn_values(eps=1e-3):
    return SimpleNamespace(Epsilon=eps, FusedActivation=None)


def test_batch_normalization_grad_is_the_derivative_of_the_forward_pass(device):
    """GRAD's three outputs are d/dInput, d/dScale and d/dBias of sum(dy * BATCH_NORMALIZATION)
    (Mean and Variance fixed), in float64 (relative 1e-7) and from the kernel (FLOAT32, 1e-5)."""
    rng = np.random.default_rng(1)
    x, dy = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4))
    mean, var = rng.standard_normal((1, 3, 1)), rng.random((1, 3, 1)) + 0.5
    scale, bias = rng.standard_normal((1, 3, 1)), rng.standard_normal((1, 3, 1))
    v = bn_values()

    def loss(x_=x, s_=scale, b_=bias):
        y = norms.batch_normalization_float64(v, {"InputTensor": x_, "MeanTensor": mean,
                                                  "VarianceTensor": var, "ScaleTensor": s_,
                                                  "BiasTensor": b_})["OutputTensor"]
        return float(np.sum(dy * y))

    ins = {"InputTensor": x, "InputGradientTensor": dy, "MeanTensor": mean,
           "VarianceTensor": var, "ScaleTensor": scale}
    g = norms.grad_float64(v, ins)
    kernel = run_grad(device, DML_BATCH_NORMALIZATION_GRAD_OPERATOR_DESC, ins, v.Epsilon)
    check_directions(rng, loss, (x, scale, bias), g, kernel, 1e-7, 1e-5)


def check_directions(rng, loss, at, g, kernel, rtol, kernel_rtol):
    """In three random directions, the float64 gradients ``g`` (within ``rtol``) and the
    kernel's (within ``kernel_rtol``) against finite differences of ``loss`` with respect to
    Input, Scale and Bias (``at``: their values)."""
    x, scale, bias = at
    names = ("OutputGradientTensor", "OutputScaleGradientTensor", "OutputBiasGradientTensor")
    for _ in range(3):
        ux, us = rng.standard_normal(x.shape), rng.standard_normal(scale.shape)
        for k, (key, value, u) in enumerate((("x_", x, ux), ("s_", scale, us),
                                             ("b_", bias, us))):
            fd = directional(lambda t, key=key: loss(**{key: t}), value, u)
            assert np.isclose(np.sum(g[names[k]] * u), fd, rtol=rtol)
            assert np.isclose(np.sum(kernel[k] * u), fd, rtol=kernel_rtol)


def run_grad(device, cls, ins, eps):
    """The kernel's three outputs for float64 inputs (run in FLOAT32), as float64."""
    f32 = {k: np.ascontiguousarray(a, np.float32) for k, a in ins.items()}
    op = DML_OPERATOR_DESC(Desc=cls(
        **{k: t4(a) for k, a in f32.items()}, OutputGradientTensor=t4(f32["InputTensor"]),
        OutputScaleGradientTensor=t4(f32["MeanTensor"]),
        OutputBiasGradientTensor=t4(f32["MeanTensor"]),
        **({} if eps is None else {"Epsilon": eps})))
    return [a.astype(np.float64) for a in device.execute(op, f32)]


def test_batch_normalization_training_grad_is_the_derivative_of_training(device):
    """With Mean and Variance the batch's own (as the forward pass returns them),
    TRAINING_GRAD's outputs are d/dInput, d/dScale, d/dBias of sum(dy * Output) of
    BATCH_NORMALIZATION_TRAINING (whose mean and variance move with the input): float64
    (relative 1e-6) and the kernel (FLOAT32, 1e-4). Reduced over {0, 2}: NCHW-like."""
    rng = np.random.default_rng(2)
    x, dy = rng.standard_normal((3, 2, 5)) * 2 + 1, rng.standard_normal((3, 2, 5))
    scale, bias = rng.standard_normal((1, 2, 1)), rng.standard_normal((1, 2, 1))
    v = bn_values(1e-2)

    def forward(x_=x, s_=scale, b_=bias):
        return norms.training_float64(v, {"InputTensor": x_, "ScaleTensor": s_,
                                          "BiasTensor": b_})

    def loss(**kw):
        return float(np.sum(dy * forward(**kw)["OutputTensor"]))

    out = forward()
    ins = {"InputTensor": x, "InputGradientTensor": dy, "MeanTensor": out["OutputMeanTensor"],
           "VarianceTensor": out["OutputVarianceTensor"], "ScaleTensor": scale}
    g = norms.training_grad_float64(v, ins)
    kernel = run_grad(device, DML_BATCH_NORMALIZATION_TRAINING_GRAD_OPERATOR_DESC, ins, 1e-2)
    check_directions(rng, loss, (x, scale, bias), g, kernel, 1e-6, 1e-4)


def test_training_grad_computes_mean_input_itself(device):
    """The page's mean(Input) is computed: MeanTensor moves OutputScaleGradient (where the page
    writes Mean) but not OutputGradient."""
    rng = np.random.default_rng(3)
    x, dy = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    ins = {"InputTensor": x, "InputGradientTensor": dy, "MeanTensor": np.zeros((1, 3)),
           "VarianceTensor": np.ones((1, 3)), "ScaleTensor": np.ones((1, 3))}
    a = run_grad(device, DML_BATCH_NORMALIZATION_TRAINING_GRAD_OPERATOR_DESC, ins, 0.0)
    b = run_grad(device, DML_BATCH_NORMALIZATION_TRAINING_GRAD_OPERATOR_DESC,
                 {**ins, "MeanTensor": np.full((1, 3), 5.0)}, 0.0)
    assert (a[0] == b[0]).all() and not np.allclose(a[1], b[1]) and (a[2] == b[2]).all()


@pytest.mark.parametrize("cross", [True, False], ids=["cross", "within"])
@pytest.mark.parametrize("local", [1, 2, 3, 4])
def test_lrn_grad_is_the_derivative_of_lrn(device, cross, local):
    """OutputGradient = d/dInput of sum(dy * LRN(Input)), for odd and even (asymmetric)
    regions: float64 (relative 1e-6) and the kernel (FLOAT32, 1e-4)."""
    rng = np.random.default_rng(local + 10 * cross)
    x, dy = rng.standard_normal((2, 5, 3, 4)), rng.standard_normal((2, 5, 3, 4))
    v = SimpleNamespace(CrossChannel=cross, LocalSize=local, Alpha=0.8, Beta=0.75, Bias=1.0)

    def loss(t):
        return float(np.sum(dy * norms.lrn_float64(v, {"InputTensor": t})["OutputTensor"]))

    g = norms.lrn_grad_float64(v, {"InputTensor": x, "InputGradientTensor": dy})
    x32, dy32 = x.astype(np.float32), dy.astype(np.float32)
    [kernel] = device.execute(lrn_desc(x32, cross, local, 0.8, 0.75, 1.0, dy32), [x32, dy32])
    for _ in range(3):
        u = rng.standard_normal(x.shape)
        fd = directional(loss, x, u)
        assert np.isclose(np.sum(g["OutputGradientTensor"] * u), fd, rtol=1e-6)
        assert np.isclose(np.sum(kernel.astype(np.float64) * u), fd, rtol=1e-4)


# --- edge values: the formulas element by element -------------------------------------------

def test_batch_normalization_edges(device):
    """Variance + Epsilon = 0: x != Mean gives +-inf (the sign of (x - Mean) * Scale), x = Mean
    NaN; an infinite input gives +-inf, or NaN with Scale 0; a zero result keeps the sign the
    formula gives it: Scale * (+0 / r) + Bias is -0 for Scale -1 and Bias -0, +0 for Scale 1."""
    x = np.array([2, 1, 0, np.inf, np.inf, 1, 1], np.float32).reshape(1, 7)
    mean = np.array([1, 1, 1, 0, 0, 1, 1], np.float32).reshape(1, 7)
    var = np.array([0, 0, 0, 1, 1, 4, 4], np.float32).reshape(1, 7)
    scale = np.array([-1, 1, 1, 2, 0, -1, 1], np.float32).reshape(1, 7)
    bias = np.array([0, 0, 0, 0, 0, -0.0, -0.0], np.float32).reshape(1, 7)
    op = DML_OPERATOR_DESC(Desc=DML_BATCH_NORMALIZATION_OPERATOR_DESC(
        InputTensor=t4(x), MeanTensor=t4(mean), VarianceTensor=t4(var), ScaleTensor=t4(scale),
        BiasTensor=t4(bias), OutputTensor=t4(x), Spatial=True, Epsilon=0.0))
    [y] = device.execute(op, [x, mean, var, scale, bias])
    want = np.array([-np.inf, np.nan, -np.inf, np.inf, np.nan, -0.0, 0.0], np.float32)
    nan = np.isnan(want)
    assert (np.isnan(y.ravel()) == nan).all()
    assert (bits(y.ravel()[~nan]) == bits(want[~nan])).all()


@pytest.mark.parametrize("dt", [F32, F16], ids=["FLOAT32", "FLOAT16"])
def test_fused_relu_is_direct3d_max(device, dt):
    """A fused RELU gives +0 for NaN, -0 and negative values (Direct3D's max(0, v)), in the
    contiguous per-channel path (rows of 4 sharing their parameters) and the strided one."""
    dtype = np_dtype(dt)
    sizes = (6, 4)
    col = lambda values: np.array(values, dtype).reshape(6, 1)  # noqa: E731
    x = np.repeat(col([np.nan, 1, -5, 2, np.inf, -np.inf]), 4, axis=1)
    mean = col([0, 1, 0, 0, 0, 0])  # x = Mean, Scale -1, Bias -0: +0 * -1 + -0 = -0
    var, scale, bias = col([1] * 6), col([1, -1, 1, 1, 1, 1]), col([-0.0] * 6)
    want = np.repeat(np.array([0, 0, 0, 2, np.inf, 0], dtype).reshape(6, 1), 4, axis=1)
    for strides in (None, (8, 2)):
        xd = desc(dt, sizes, strides)
        raw = np.zeros(48 * dtype.itemsize, np.uint8)
        logical(raw, dtype, sizes, strides)[...] = x
        out = np.full(48 * dtype.itemsize, SENTINEL, np.uint8)
        op = DML_OPERATOR_DESC(Desc=DML_BATCH_NORMALIZATION_OPERATOR_DESC(
            InputTensor=xd, MeanTensor=t4(mean), VarianceTensor=t4(var), ScaleTensor=t4(scale),
            BiasTensor=t4(bias), OutputTensor=xd, Spatial=True, Epsilon=0.0,
            FusedActivation=DML_ACTIVATION_RELU_OPERATOR_DESC()))
        device.execute(op, [raw, mean, var, scale, bias], [out])
        assert (bits(logical(out, dtype, sizes, strides)) == bits(want)).all()


@pytest.mark.parametrize("dt", [F32, F16], ids=["FLOAT32", "FLOAT16"])
def test_batch_normalization_training_edges(device, dt):
    """A group holding +inf: mean +inf, variance NaN, output NaN; a constant group: variance 0,
    output Bias with Epsilon > 0 and NaN (0/0) with Epsilon 0."""
    dtype = np_dtype(dt)
    x = np.array([[1, np.inf, 3], [2, 2, 2]], dtype).T.copy()  # columns are the groups
    one, zero = np.ones((1, 2), dtype), np.zeros((1, 2), dtype)
    for eps, const in ((0.5, 1.0), (0.0, np.nan)):
        op = DML_OPERATOR_DESC(Desc=DML_BATCH_NORMALIZATION_TRAINING_OPERATOR_DESC(
            InputTensor=t4(x), ScaleTensor=t4(one), BiasTensor=t4(one), OutputTensor=t4(x),
            OutputMeanTensor=t4(zero), OutputVarianceTensor=t4(zero), Epsilon=eps))
        y, mean, var = device.execute(op, [x, one, one])
        assert mean.ravel()[0] == np.inf and np.isnan(var.ravel()[0])
        assert mean.ravel()[1] == 2 and var.ravel()[1] == 0
        assert np.isnan(y[:, 0]).all()
        assert np.array_equal(y[:, 1], np.full(3, const, dtype), equal_nan=True)


def test_lp_normalization_edges(device):
    """A zero line: 0/0 = NaN with Epsilon 0, 0 with Epsilon 1; a line holding inf: the norm is
    inf, its finite elements 0 (keeping their sign) and the inf NaN."""
    x = np.array([[0, 0], [-1, np.inf]], np.float32)
    for eps, first in ((0.0, [np.nan, np.nan]), (1.0, [0.0, 0.0])):
        op = DML_OPERATOR_DESC(Desc=DML_LP_NORMALIZATION_OPERATOR_DESC(
            InputTensor=t4(x), OutputTensor=t4(x), Axis=1, Epsilon=eps, P=2))
        [y] = device.execute(op, [x])
        assert np.array_equal(y[0], np.array(first, np.float32), equal_nan=True)
        assert y[1, 0] == 0 and np.signbit(y[1, 0]) and np.isnan(y[1, 1])


def test_lrn_edges(device):
    """A negative base to a fractional power is NaN; Beta 0 returns the input (pow(b, 0) = 1,
    even for NaN bases); Bias 0 on zeros: 0 / 0 = NaN."""
    x = np.array([1, 2, 0, 0], np.float32).reshape(1, 4, 1, 1)
    [y] = device.execute(lrn_desc(x, True, 1, 1.0, 0.75, -10.0), [x])
    assert np.isnan(y.ravel()[:2]).all()
    [y] = device.execute(lrn_desc(x, True, 1, 1.0, 0.0, -10.0), [x])
    assert (bits(y) == bits(x)).all()
    [y] = device.execute(lrn_desc(x, True, 1, 1.0, 0.75, 0.0), [x])
    assert np.isnan(y.ravel()[2:]).all()


def test_a_region_larger_than_the_tensor_is_clipped(device):
    """LocalSize UINT_MAX: every region is the whole channel range (or plane); the divisor stays
    LocalSize."""
    x = np.array([1, 2, 3], np.float32).reshape(1, 3, 1, 1)
    local = 2**32 - 1
    [y] = device.execute(lrn_desc(x, True, local, 1.0, 1.0, 1.0), [x])
    want = x.astype(np.float64) / (1.0 + (1.0 / local) * 14.0)
    assert (y == want.astype(np.float32)).all()


def test_grad_epsilon_left_out_is_zero(device):
    """BATCH_NORMALIZATION_GRAD's Epsilon is optional in the schema; left out, it is 0 (C's
    zero-initialised struct)."""
    rng = np.random.default_rng(4)
    ins = {"InputTensor": rng.standard_normal((3, 2)), "InputGradientTensor":
           rng.standard_normal((3, 2)), "MeanTensor": rng.standard_normal((1, 2)),
           "VarianceTensor": rng.random((1, 2)) + 0.5, "ScaleTensor": rng.standard_normal((1, 2))}
    with_zero = run_grad(device, DML_BATCH_NORMALIZATION_GRAD_OPERATOR_DESC, ins, 0.0)
    left_out = run_grad(device, DML_BATCH_NORMALIZATION_GRAD_OPERATOR_DESC, ins, None)
    assert all((a == b).all() for a, b in zip(with_zero, left_out))


@pytest.mark.parametrize("op", [BN, TRAINING])
def test_fused_activation_attributes_are_checked(op):
    """A fused SOFTPLUS with Steepness < 1 is refused before 6_4, as MVN1 refuses it (the
    activation's own rule; support/reduction.py)."""
    x = np.zeros((1, 2, 2, 2), np.float32)
    p = np.zeros((1, 2, 1, 1), np.float32)
    fused = DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC(Steepness=0.5)
    if op == BN:
        d = DML_BATCH_NORMALIZATION_OPERATOR_DESC(
            InputTensor=t4(x), MeanTensor=t4(p), VarianceTensor=t4(p), ScaleTensor=t4(p),
            BiasTensor=t4(p), OutputTensor=t4(x), Spatial=True, Epsilon=0.0,
            FusedActivation=fused)
    else:
        d = DML_BATCH_NORMALIZATION_TRAINING_OPERATOR_DESC(
            InputTensor=t4(x), ScaleTensor=t4(p), BiasTensor=t4(p), OutputTensor=t4(x),
            OutputMeanTensor=t4(p), OutputVarianceTensor=t4(p), Epsilon=0.0,
            FusedActivation=fused)
    check_level_case(DML_OPERATOR_DESC(Desc=d), "6_3", ["Steepness", "DML_FEATURE_LEVEL_6_4"],
                     op.name)
    check_level_case(DML_OPERATOR_DESC(Desc=d), "6_4", None, op.name)


# --- levels, layouts, threads, compile budget -----------------------------------------------

@pytest.mark.parametrize("op", [BN, LP, LRN])
def test_executes_at_the_first_level(op):
    """The 1_0 operators run on a 1_0 device (4-D, their first band)."""
    device = DMLCreateDevice1(feature_level="1_0")
    extra = {"Spatial": True, "FusedActivation": None} if op == BN else {}
    for seed in range(3):
        run_case(device, np.random.default_rng(seed), op, F32, 4, **extra)


def test_strided_channel_last_layouts(device):
    """NHWC-strided tensors (the channel the contiguous dimension): LP over the channel (column
    mode) and over the last logical dimension, BATCH_NORMALIZATION_TRAINING over N, H, W."""
    rng = np.random.default_rng(7)
    n, c, h, w = 2, 5, 3, 4
    strides = (h * w * c, 1, w * c, c)
    x = rng.standard_normal((n, h, w, c)).astype(np.float32)
    logical_x = x.transpose(0, 3, 1, 2)
    xd = desc(F32, (n, c, h, w), strides)
    for axis in (1, 3):
        out = np.zeros_like(x)
        op = DML_OPERATOR_DESC(Desc=DML_LP_NORMALIZATION_OPERATOR_DESC(
            InputTensor=xd, OutputTensor=xd, Axis=axis, Epsilon=0.0, P=2))
        device.execute(op, [x.view(np.uint8).ravel()], [out.view(np.uint8).ravel()])
        v = SimpleNamespace(Axis=axis, Epsilon=0.0, P=2)
        want = norms.lp_float64(v, {"InputTensor": logical_x})["OutputTensor"]
        assert within_bound(out.transpose(0, 3, 1, 2), want, 2 * np.abs(want)).all()
    p = np.ones((1, c, 1, 1), np.float32)
    y, m, var = np.zeros_like(x), np.zeros_like(p), np.zeros_like(p)
    op = DML_OPERATOR_DESC(Desc=DML_BATCH_NORMALIZATION_TRAINING_OPERATOR_DESC(
        InputTensor=xd, ScaleTensor=t4(p), BiasTensor=t4(p), OutputTensor=xd,
        OutputMeanTensor=t4(p), OutputVarianceTensor=t4(p), Epsilon=1e-5))
    device.execute(op, [x.view(np.uint8).ravel(), p, p], [y.view(np.uint8).ravel(), m, var])
    assert np.allclose(m.ravel(), logical_x.mean(axis=(0, 2, 3)), rtol=1e-6)
    assert np.allclose(var.ravel(), logical_x.astype(np.float64).var(axis=(0, 2, 3)), rtol=1e-6)


def test_results_do_not_depend_on_the_thread_count(device):
    """Identical bytes with 1 and 2 threads (the moments' blocks are fixed by the data)."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one thread only")
    rng = np.random.default_rng(9)
    x = rng.standard_normal((40, 3, 2000)).astype(np.float32)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    p = [rng.standard_normal((1, 3, 1)).astype(np.float32) for _ in range(3)]
    p[1] = np.abs(p[1])
    op = DML_OPERATOR_DESC(Desc=DML_BATCH_NORMALIZATION_TRAINING_GRAD_OPERATOR_DESC(
        InputTensor=t4(x), InputGradientTensor=t4(dy), MeanTensor=t4(p[0]),
        VarianceTensor=t4(p[1]), ScaleTensor=t4(p[2]), OutputGradientTensor=t4(x),
        OutputScaleGradientTensor=t4(p[0]), OutputBiasGradientTensor=t4(p[0]), Epsilon=1e-5))
    results = []
    previous = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            results.append(device.execute(op, [x, dy, *p]))
    finally:
        numba.set_num_threads(previous)
    for a, b in zip(*results):
        assert (bits(a) == bits(b)).all()


def test_kernel_signatures_stay_within_the_budget(device):
    """A task kernel per computation and storage type, eight in all, whatever ran; the
    fallback driver (``tasks.drive``, over byte arrays) has at most one signature."""
    rng = np.random.default_rng(13)
    for op in FLOAT64:
        for dt in (F32, F16):
            run_case(device, rng, op, dt, 4)
    entries = norm_kernels._ENTRIES
    assert {k for k in tasks._compiled if k[0] in entries} == \
        {(e, s, s) for e in entries for s in ("float32", "uint16")}
    assert len(tasks.drive.signatures) <= 1

