"""Activation operators: accuracy against a long-double reference (every FLOAT16 input within 1 ULP,
FLOAT32 within 4 ULP), edge values (NaN, ±inf, ±0) as each page's formula gives them, the softmax
family (rows with infinities included), PARAMETERIZED_RELU, in-place execution and the
feature-level accept/reject matrix."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from descriptors import *
from emulator import (
    Buffer,
    DMLCreateDevice1,
    min_feature_level,
)
from emulator.activations import ACTIVATIONS, BY_OPERATOR
from emulator.kernels.activation import activate
from emulator.ops.softmax import row_function

from .helpers import check_level_case, desc, initialize_and_dispatch

F32, F16 = DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16

# Representative attributes (as float32, which is what a C FLOAT holds).
PARAMS = {
    "LINEAR": (1.5, -0.25), "HARD_SIGMOID": (0.2, 0.5), "SCALED_TANH": (1.7159, 0.6667),
    "LEAKY_RELU": (0.01,), "THRESHOLDED_RELU": (0.3,), "ELU": (1.3,), "CELU": (0.7,),
    "SCALED_ELU": (1.6732632, 1.0507010), "SOFTPLUS": (2.0,), "PARAMETRIC_SOFTPLUS": (0.8, 1.7),
    "SHRINK": (0.5, 1.0), "SWISH": (1.0,), "HARD_SWISH": (1 / 6, 0.5),
}
EXECUTABLE = list(ACTIVATIONS)


def params(act):
    return tuple(float(np.float32(p)) for p in PARAMS.get(act.name, ()))


def activation_op(act, i, o=None):
    cls = OPERATOR_DESC_CLASSES[act.operator]
    fields = dict(zip(act.params, params(act)))
    return DML_OPERATOR_DESC(Desc=cls(InputTensor=i, OutputTensor=o or i, **fields))


def ordered(bits: np.ndarray, width: int) -> np.ndarray:
    """Float bit patterns mapped to integers whose order is the floats' order (-0 == +0)."""
    i = bits.astype(np.int64)
    sign = 1 << (width - 1)
    return np.where(i >= sign, sign - i, i)


def ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    width = got.dtype.itemsize * 8
    g = ordered(got.view(f"u{got.dtype.itemsize}"), width)
    w = ordered(want.view(f"u{want.dtype.itemsize}"), width)
    d = np.abs(g - w)
    both_nan = np.isnan(got) & np.isnan(want)
    return np.where(both_nan, 0, np.where(np.isnan(got) | np.isnan(want), 1 << 40, d))


def correctly_rounded(act, x, dtype):
    with np.errstate(over="ignore", invalid="ignore"):
        return act.reference(x.astype(np.longdouble), *params(act)).astype(dtype)


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="6_4")


ALL_HALVES = np.arange(65536, dtype=np.uint16).view(np.float16)


@pytest.mark.parametrize("act", EXECUTABLE, ids=lambda a: a.name)
def test_every_float16_input_within_one_ulp(device, act):
    [y] = device.execute(activation_op(act, tensor_desc(ALL_HALVES)), [ALL_HALVES])
    err = ulps(y, correctly_rounded(act, ALL_HALVES, np.float16))
    assert err.max() <= 1, f"{act.name}: {err.max()} ULP at x={ALL_HALVES[err.argmax()]}"


def float32_samples() -> np.ndarray:
    rng = np.random.default_rng(7)
    random_bits = rng.integers(0, 2**32, 120_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    dense = rng.uniform(-30, 30, 60_000).astype(np.float32)
    tiny = (rng.standard_normal(20_000) * 1e-6).astype(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3.4e38, -3.4e38, 88.7,
                        -88.7, 103.9, -103.9, 1.0, -1.0], np.float32)
    return np.concatenate([random_bits, dense, tiny, special])


F32_SAMPLES = float32_samples()


@pytest.mark.parametrize("act", EXECUTABLE, ids=lambda a: a.name)
def test_float32_within_four_ulp(device, act):
    x = F32_SAMPLES
    [y] = device.execute(activation_op(act, tensor_desc(x)), [x])
    err = ulps(y, correctly_rounded(act, x, np.float32))
    assert err.max() <= 4, f"{act.name}: {err.max()} ULP at x={x[err.argmax()]!r}"


# The page's formula, read literally (docs/decisions.md), at x = NaN, +inf, -inf, +0, -0 with the
# attributes of PARAMS: comparisons with NaN are false, Direct3D's max/min return the operand that
# is not NaN (max(0, -0) = +0), inf/inf and 0·inf are NaN.
EDGE_INPUTS = [np.nan, np.inf, -np.inf, 0.0, -0.0]
NAN, INF, LN2 = np.nan, np.inf, float(np.log(2))
EDGES = {
    "IDENTITY": [NAN, INF, -INF, 0.0, -0.0],
    "LINEAR": [NAN, INF, -INF, -0.25, -0.25],                   # 1.5·x - 0.25
    "SIGMOID": [NAN, 1.0, 0.0, 0.5, 0.5],
    "HARD_SIGMOID": [1.0, 1.0, 0.0, 0.5, 0.5],                  # min(NaN, 1) = 1
    "TANH": [NAN, 1.0, -1.0, 0.0, -0.0],
    "SCALED_TANH": [NAN, 1.7159, -1.7159, 0.0, -0.0],
    "RELU": [0.0, INF, 0.0, 0.0, 0.0],                          # max(0, NaN) = 0, max(0, -0) = +0
    "LEAKY_RELU": [NAN, INF, -INF, 0.0, -0.0],                  # -0 >= 0; NaN: Alpha·NaN
    "THRESHOLDED_RELU": [0.0, INF, 0.0, 0.0, 0.0],              # NaN > Alpha is false
    "ELU": [NAN, INF, -1.3, 0.0, -0.0],
    "CELU": [0.0, INF, -0.7, 0.0, 0.0],                         # max(0, NaN) + min(0, NaN)
    "SCALED_ELU": [NAN, INF, -1.6732632 * 1.0507010, 0.0, 0.0],  # Gamma·(Alpha - Alpha) = +0
    "SOFTPLUS": [NAN, INF, 0.0, LN2 / 2, LN2 / 2],
    "PARAMETRIC_SOFTPLUS": [NAN, INF, 0.0, 0.8 * LN2, 0.8 * LN2],
    "SOFTSIGN": [NAN, NAN, NAN, 0.0, -0.0],                     # inf/(1 + inf) = NaN
    "SHRINK": [0.0, INF, -INF, 0.0, 0.0],                       # "0, otherwise", NaN included
    "GELU": [NAN, INF, NAN, 0.0, -0.0],                         # -inf·(1 + erf(-inf)) = -inf·0
    "SWISH": [NAN, INF, NAN, 0.0, -0.0],                        # -inf·sigmoid(-inf) = -inf·0
    "HARD_SWISH": [NAN, INF, NAN, 0.0, -0.0],                   # NaN·1; -inf·max(0, -inf)
}


def assert_edges(got: np.ndarray, want, what: str) -> None:
    """NaN where ``want`` is NaN; elsewhere the same sign bit and within 1 ULP."""
    want = np.asarray(want, np.float64).astype(got.dtype)
    assert (np.isnan(got) == np.isnan(want)).all(), (what, got, want)
    both = ~np.isnan(want)
    assert (np.signbit(got[both]) == np.signbit(want[both])).all(), (what, got, want)
    assert ulps(got, want).max() <= 1, (what, got, want)


def test_every_activation_has_its_edge_values():
    assert set(EDGES) == {a.name for a in ACTIVATIONS}


@pytest.mark.parametrize("act", ACTIVATIONS, ids=lambda a: a.name)
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["FLOAT32", "FLOAT16"])
def test_edge_values_follow_the_formula(act, dtype):
    x = np.array(EDGE_INPUTS, dtype)
    [y] = DMLCreateDevice1().execute(activation_op(act, tensor_desc(x)), [x])  # GELU needs 5_1
    assert_edges(y, EDGES[act.name], f"{act.name} kernel")
    assert_edges(correctly_rounded(act, x, dtype), EDGES[act.name], f"{act.name} reference")


def test_mvn_epilogue_has_the_same_edge_values():
    """The float32 epilogue inside MVN runs the same loops: x is NaN, +inf, -inf, ±0."""
    x = np.array(EDGE_INPUTS, np.float32)
    for act in ACTIVATIONS:
        buf, (p0, p1) = x.copy(), (*params(act), 0.0, 0.0)[:2]
        activate(act.kind, buf, buf.size, p0, p1)
        assert_edges(buf, EDGES[act.name], f"{act.name} float32 epilogue")


def test_parameterized_relu_edge_values(device):
    """x if x >= 0, slope·x otherwise: NaN stays NaN (slope·NaN), -0 stays -0, 0·-inf is NaN."""
    for dtype, dt in ((np.float32, F32), (np.float16, F16)):
        x = np.array([*EDGE_INPUTS, -np.inf], dtype)
        slope = np.array([0.5, 0.5, 0.5, 0.5, 0.5, 0.0], dtype)
        op = DML_OPERATOR_DESC(Desc=DML_ACTIVATION_PARAMETERIZED_RELU_OPERATOR_DESC(
            InputTensor=tensor_desc(x), SlopeTensor=tensor_desc(slope),
            OutputTensor=tensor_desc(x)))
        [y] = device.execute(op, [x, slope])
        assert_edges(y, [NAN, INF, -INF, 0.0, -0.0, NAN], f"PARAMETERIZED_RELU {dt}")


def test_strided_layouts(device):
    # Padded input, broadcast (zero-stride) input, padded output.
    act = BY_OPERATOR[DML_OPERATOR_ACTIVATION_ELU]
    raw = np.arange(40, dtype=np.float32) / 7 - 3
    out = np.full(24, 99, np.float32)
    op = activation_op(act, desc(F32, [3, 4], [10, 2]), desc(F32, [3, 4], [8, 1]))
    device.execute(op, [raw], [out])
    x = np.lib.stride_tricks.as_strided(raw, (3, 4), (40, 8))
    want = correctly_rounded(act, np.ascontiguousarray(x), np.float32)
    np.testing.assert_array_equal(out.reshape(3, 8)[:, :4], want)
    assert (out.reshape(3, 8)[:, 4:] == 99).all()
    op = activation_op(act, desc(F32, [3, 4], [0, 1]), desc(F32, [3, 4]))
    [y] = device.execute(op, [raw[:4].copy()])
    np.testing.assert_array_equal(y, np.broadcast_to(correctly_rounded(act, raw[:4], np.float32),
                                                     (3, 4)))


def test_in_place_execution_is_allowed_for_activations():
    dev = DMLCreateDevice1()
    act = BY_OPERATOR[DML_OPERATOR_ACTIVATION_SIGMOID]
    x = np.linspace(-4, 4, 16).astype(np.float32)
    buf = Buffer.from_array(x)
    op = dev.CompileOperator(dev.CreateOperator(activation_op(act, tensor_desc(x))))
    table = dev.CreateBindingTable(DML_BINDING_TABLE_DESC(Dispatchable=op, SizeInDescriptors=2))
    binding = DML_BINDING_DESC(Type=DML_BINDING_TYPE_BUFFER, Desc=DML_BUFFER_BINDING(Buffer=buf))
    table.BindInputs([binding])
    table.BindOutputs([binding])
    initialize_and_dispatch(dev, op, table)
    np.testing.assert_array_equal(buf.numpy(np.float32), correctly_rounded(act, x, np.float32))


# -- softmax, log-softmax, hardmax ------------------------------------------------------------------
SOFTMAXES = [(DML_ACTIVATION_SOFTMAX_OPERATOR_DESC, 0), (DML_ACTIVATION_LOG_SOFTMAX_OPERATOR_DESC, 1),
             (DML_ACTIVATION_HARDMAX_OPERATOR_DESC, 2)]


@pytest.mark.parametrize("cls,mode", SOFTMAXES, ids=["SOFTMAX", "LOG_SOFTMAX", "HARDMAX"])
@pytest.mark.parametrize("dt", [F32, F16], ids=["FLOAT32", "FLOAT16"])
def test_softmax_family(device, cls, mode, dt):
    rng = np.random.default_rng(mode)
    dtype = np.float32 if dt == F32 else np.float16
    x = (rng.standard_normal((1, 1, 5, 37)) * 4).astype(dtype)
    x[0, 0, 1, 3] = x[0, 0, 1, 7] = 30  # a tie for HARDMAX: the first wins
    x[0, 0, 2, 5] = np.nan
    x[0, 0, 3, 1] = np.inf
    x[0, 0, 3, 9] = np.inf
    x[0, 0, 4, :] = 2.5
    [y] = device.execute(DML_OPERATOR_DESC(Desc=cls(InputTensor=tensor_desc(x),
                                                    OutputTensor=tensor_desc(x))), [x])
    want = row_function(x.astype(np.longdouble).astype(np.float64), mode).astype(dtype)
    assert ulps(y, want).max() <= (2 if mode < 2 else 0)
    if mode == 2:
        assert y[0, 0, 1, 3] == 1 and y[0, 0, 1, 7] == 0 and y[0, 0, 2, 5] == 1
    if mode == 0:
        np.testing.assert_allclose(y.astype(np.float64).sum(axis=-1)[0, 0, [0, 1, 4]], 1,
                                   rtol=1e-2 if dt == F16 else 1e-6)
    if mode < 2:  # the NaN row and the +inf row
        assert np.isnan(y[0, 0, 2:4]).all()


# Rows with infinities: the formula exp(x_i) / sum_j exp(x_j) where it is defined, NaN where it
# is inf/inf (a +inf in the row) or 0/0 (a row of -inf).
INF_ROWS = [  # (row, SOFTMAX, LOG_SOFTMAX, HARDMAX)
    ([np.inf, 1.0, 2.0, 3.0], [NAN] * 4, [NAN] * 4, [1, 0, 0, 0]),
    ([0.0, np.inf, -1.0, np.inf], [NAN] * 4, [NAN] * 4, [0, 1, 0, 0]),
    ([np.inf, -np.inf, 0.0, 0.0], [NAN] * 4, [NAN] * 4, [1, 0, 0, 0]),
    ([-np.inf] * 4, [NAN] * 4, [NAN] * 4, [1, 0, 0, 0]),
    ([-np.inf, 0.0, -np.inf, 0.0], [0.0, 0.5, 0.0, 0.5], [-INF, -LN2, -INF, -LN2], [0, 1, 0, 0]),
    ([-np.inf, 1.0, 1.0, 1.0], [0.0, 1 / 3, 1 / 3, 1 / 3], [-INF] + [-float(np.log(3))] * 3,
     [0, 1, 0, 0]),
]


@pytest.mark.parametrize("cls,mode", SOFTMAXES, ids=["SOFTMAX", "LOG_SOFTMAX", "HARDMAX"])
@pytest.mark.parametrize("dt", [F32, F16], ids=["FLOAT32", "FLOAT16"])
def test_softmax_rows_with_infinities(device, cls, mode, dt):
    dtype = np.float32 if dt == F32 else np.float16
    x = np.array([r[0] for r in INF_ROWS], dtype)
    [y] = device.execute(DML_OPERATOR_DESC(Desc=cls(InputTensor=tensor_desc(x),
                                                    OutputTensor=tensor_desc(x))), [x])
    reference = row_function(x.astype(np.float64), mode).astype(dtype)
    for k, row in enumerate(INF_ROWS):
        assert_edges(y[k], row[1 + mode], f"{cls.__name__} row {k}")
        assert_edges(reference[k], row[1 + mode], f"reference row {k}")


def test_softmax_matches_a_plain_formula(device):
    x = np.random.default_rng(0).standard_normal((3, 11)).astype(np.float32)
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_ACTIVATION_SOFTMAX_OPERATOR_DESC(
        InputTensor=tensor_desc(x), OutputTensor=tensor_desc(x))), [x])
    e = np.exp(x.astype(np.float64))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=3e-7)  # 2 ULP


def test_parameterized_relu_with_broadcast_slope(device):
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    slope = np.array([0.1, 0.2, 0.3], np.float32)
    op = DML_OPERATOR_DESC(Desc=DML_ACTIVATION_PARAMETERIZED_RELU_OPERATOR_DESC(
        InputTensor=tensor_desc(x), SlopeTensor=desc(F32, [2, 3, 4], [0, 1, 0]),
        OutputTensor=tensor_desc(x)))
    [y] = device.execute(op, [x, slope])
    want = np.where(x >= 0, x, slope[None, :, None] * x)
    np.testing.assert_array_equal(y, want.astype(np.float32))
    half = x.astype(np.float16)
    op16 = DML_OPERATOR_DESC(Desc=DML_ACTIVATION_PARAMETERIZED_RELU_OPERATOR_DESC(
        InputTensor=tensor_desc(half), SlopeTensor=desc(F16, [2, 3, 4], [0, 1, 0]),
        OutputTensor=tensor_desc(half)))
    [y16] = device.execute(op16, [half, slope.astype(np.float16)])
    want16 = np.where(half >= 0, half.astype(np.float64),
                      slope.astype(np.float16).astype(np.float64)[None, :, None] * half)
    assert ulps(y16, want16.astype(np.float16)).max() == 0


# -- feature levels -------------------------------------------------------------------------------
def act_op(name, dims=4, dt=F32, o_dt=None, o_sizes=None, **fields):
    act = next(a for a in ACTIVATIONS if a.name == name) if name in {a.name for a in ACTIVATIONS} \
        else None
    op = getattr(DML_OPERATOR_TYPE, f"DML_OPERATOR_ACTIVATION_{name}")
    cls = OPERATOR_DESC_CLASSES[op]
    defaults = dict(zip(act.params, params(act))) if act else {}
    defaults.update(fields)
    sizes = [2] * dims
    return DML_OPERATOR_DESC(Desc=cls(InputTensor=desc(dt, sizes),
                                      OutputTensor=desc(o_dt or dt, o_sizes or sizes), **defaults))


OK = None
MATRIX = [
    ("relu 4-D", act_op("RELU"), {"1_0": OK, "2_0": OK, "3_0": OK, "4_0": OK}),
    ("relu 5-D", act_op("RELU", 5), {"1_0": ("InputTensor.DimensionCount = 5",
                                             "DML_FEATURE_LEVEL_2_0 or later allows it"),
                                     "2_0": OK, "3_0": OK, "4_0": OK}),
    ("tanh 2-D", act_op("TANH", 2), {"1_0": ("DML_FEATURE_LEVEL_3_0",), "2_0": ("3_0",),
                                     "3_0": OK, "4_0": OK}),
    ("elu 8-D float16", act_op("ELU", 8, F16), {"1_0": ("3_0",), "2_0": ("3_0",), "3_0": OK,
                                                "4_0": OK}),
    ("shrink", act_op("SHRINK"), {"1_0": ("DML_OPERATOR_ACTIVATION_SHRINK was introduced in "
                                          "DML_FEATURE_LEVEL_2_0",), "2_0": OK, "3_0": OK,
                                  "4_0": OK}),
    ("celu", act_op("CELU"), {"1_0": ("introduced in DML_FEATURE_LEVEL_3_0",),
                              "2_0": ("introduced in DML_FEATURE_LEVEL_3_0",), "3_0": OK,
                              "4_0": OK}),
    ("gelu", act_op("GELU"), dict.fromkeys(["1_0", "2_0", "3_0", "4_0"], (
        "DML_OPERATOR_ACTIVATION_GELU was introduced in DML_FEATURE_LEVEL_5_1",))),
    ("softplus steepness", act_op("SOFTPLUS", Steepness=0.5), dict.fromkeys(
        ["1_0", "2_0", "3_0", "4_0"], ("Steepness = 0.5 is invalid", "must be at least 1",
                                       "DML_FEATURE_LEVEL_6_4 or later allows it"))),
    ("int32", act_op("RELU", dt=DML_TENSOR_DATA_TYPE_INT32), dict.fromkeys(
        ["1_0", "2_0", "3_0", "4_0"], ("InputTensor.DataType = DML_TENSOR_DATA_TYPE_INT32",
                                       "supported data types here are FLOAT32, FLOAT16"))),
    ("type mismatch", act_op("SIGMOID", o_dt=F16), dict.fromkeys(["1_0", "2_0", "3_0", "4_0"], (
        "OutputTensor.DataType = DML_TENSOR_DATA_TYPE_FLOAT16 is invalid", "same DataType"))),
    ("size mismatch", act_op("SIGMOID", o_sizes=[2, 2, 2, 3]), dict.fromkeys(
        ["1_0", "2_0", "3_0", "4_0"], ("OutputTensor.Sizes = {2, 2, 2, 3} is invalid",
                                       "same Sizes"))),
    ("softmax rank 3", DML_OPERATOR_DESC(Desc=DML_ACTIVATION_SOFTMAX_OPERATOR_DESC(
        InputTensor=desc(F32, [1, 2, 3, 4]), OutputTensor=desc(F32, [1, 2, 3, 4]))), dict.fromkeys(
        ["1_0", "2_0", "3_0", "4_0"], ("InputTensor.Sizes = {1, 2, 3, 4} is invalid",
                                       "effective rank", "is 3"))),
    ("hardmax rank 2", DML_OPERATOR_DESC(Desc=DML_ACTIVATION_HARDMAX_OPERATOR_DESC(
        InputTensor=desc(F32, [1, 1, 3, 4]), OutputTensor=desc(F32, [1, 1, 3, 4]))),
     dict.fromkeys(["1_0", "2_0", "3_0", "4_0"], OK)),
    ("missing attribute", act_op("ELU", Alpha=None), dict.fromkeys(
        ["1_0", "2_0", "3_0", "4_0"], ("Alpha = null is invalid: this field is required",))),
]


@pytest.mark.parametrize("name,op,expect", MATRIX, ids=[m[0] for m in MATRIX])
@pytest.mark.parametrize("level", ["1_0", "2_0", "3_0", "4_0"])
def test_feature_level_matrix(name, op, expect, level):
    check_level_case(op, level, expect[level], "DML_OPERATOR_ACTIVATION_")


def test_min_feature_levels():
    assert min_feature_level(act_op("RELU")) == DML_FEATURE_LEVEL_1_0
    assert min_feature_level(act_op("RELU", 5)) == DML_FEATURE_LEVEL_2_0
    assert min_feature_level(act_op("RELU", 3)) == DML_FEATURE_LEVEL_3_0
    assert min_feature_level(act_op("CELU")) == DML_FEATURE_LEVEL_3_0
    assert min_feature_level(act_op("GELU")) == DML_FEATURE_LEVEL_5_1
    assert min_feature_level(act_op("SOFTPLUS", Steepness=0.5)) == DML_FEATURE_LEVEL_6_4


def test_every_activation_desc_is_registered():
    from emulator import REGISTRY

    for act in ACTIVATIONS:
        spec = REGISTRY[act.operator]
        assert spec.module is not None
        # In place as DirectML's schema says: all but SWISH and HARD_SWISH (whose pages say
        # otherwise; the schema, which the device follows, marks them not in place).
        assert spec.in_place == (act.name not in ("SWISH", "HARD_SWISH"))
    assert dataclasses.is_dataclass(DML_ACTIVATION_RELU_OPERATOR_DESC)


def test_float16_overflow_is_inf_without_numpy_warnings():
    """LINEAR past FLOAT16's range gives ±inf on the device and in the reference, which returns
    it as a result, not a RuntimeWarning."""
    import warnings

    from emulator.registry import validate_operator

    dev = DMLCreateDevice1()
    x = np.array([1000, -1000, 1, 0], np.float16)
    op = DML_OPERATOR_DESC(Desc=DML_ACTIVATION_LINEAR_OPERATOR_DESC(
        InputTensor=tensor_desc(x), OutputTensor=tensor_desc(x), Alpha=1000.0, Beta=0.0))
    [y] = dev.execute(op, [x])
    spec, v = validate_operator(op, dev.feature_level)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        want = spec.module.reference(v.values, {"InputTensor": x})["OutputTensor"]
    np.testing.assert_array_equal(want, [np.inf, -np.inf, 1000, 0])
    np.testing.assert_array_equal(y, want)


def test_kernel_kind_constants_match_the_table():
    """The kinds kernels special-case by name carry the activation table's numbers."""
    from emulator.kernels import activation as kernels

    assert BY_OPERATOR[DML_OPERATOR_ACTIVATION_IDENTITY].kind == kernels.IDENTITY
    assert BY_OPERATOR[DML_OPERATOR_ACTIVATION_RELU].kind == kernels.RELU
