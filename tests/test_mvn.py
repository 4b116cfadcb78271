"""MEAN_VARIANCE_NORMALIZATION1 and MEAN_VARIANCE_NORMALIZATION: accuracy (unit-scale and large
offsets), every rank and axis set, broadcast and strided Scale/Bias, fused activations, groups
holding ±inf/NaN and constant groups (the formula element by element), and the feature-level
accept/reject matrix."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from descriptors import *
from emulator import DMLCreateDevice1, min_feature_level
from emulator.activations import ACTIVATIONS
from emulator.ops.mvn1 import normalize

from .helpers import SENTINEL, addressed_mask, check_level_case, desc, logical, strided_buffer
from .test_activations import PARAMS, ulps

F32, F16 = DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16
LEVELS = ["2_1", "3_0", "3_1", "4_0"]


def mvn1(i, o, axes, scale=None, bias=None, normalize_variance=True, eps=1e-5, fused=None):
    return DML_OPERATOR_DESC(Desc=DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC(
        InputTensor=i, ScaleTensor=scale, BiasTensor=bias, OutputTensor=o, Axes=list(axes),
        NormalizeVariance=normalize_variance, Epsilon=eps, FusedActivation=fused))


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="4_0")


def test_hand_computed_example(device):
    x = np.array([1, 2, 3, 4], np.float32)
    [y] = device.execute(mvn1(tensor_desc(x), tensor_desc(x), [0], eps=0.0), [x])
    np.testing.assert_allclose(y, (x - 2.5) / np.sqrt(1.25), rtol=1e-7)
    [y] = device.execute(mvn1(tensor_desc(x), tensor_desc(x), [0], normalize_variance=False), [x])
    np.testing.assert_array_equal(y, x - 2.5)


@pytest.mark.parametrize("shape,axes", [((2, 3, 5, 7), (2, 3)), ((2, 3, 5, 7), (1, 2, 3)),
                                        ((2, 3, 5, 7), (0, 2, 3)), ((6, 300), (1,)),
                                        ((3, 4000), (1,)), ((5, 2, 3, 2, 2, 3, 2, 2), (7, 1, 4))])
def test_float32_accuracy_unit_scale(device, shape, axes):
    rng = np.random.default_rng(len(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    s_shape = [shape[d] if d == 1 else 1 for d in range(len(shape))]
    scale = rng.standard_normal(s_shape).astype(np.float32)
    bias = rng.standard_normal(s_shape).astype(np.float32)
    [y] = device.execute(mvn1(tensor_desc(x), tensor_desc(x), axes, tensor_desc(scale),
                              tensor_desc(bias)), [x, scale, bias])
    want = normalize(x, axes, scale, bias, True, np.float32(1e-5), None)
    assert (np.abs(y - want) <= 1e-5 * (1 + np.abs(want))).all()


@pytest.mark.parametrize("shape,axes", [((4, 8, 9, 9), (2, 3)), ((2, 20000), (1,)),
                                        ((3, 4, 64, 64), (1, 2, 3))])
def test_float32_accuracy_with_a_large_common_offset(device, shape, axes):
    """Values near 1e4 with standard deviation 1: a float32 one-pass E[x²]-E[x]² fails this."""
    x = (1e4 + np.random.default_rng(0).standard_normal(shape)).astype(np.float32)
    [y] = device.execute(mvn1(tensor_desc(x), tensor_desc(x), axes), [x])
    want = normalize(x, axes, None, None, True, np.float32(1e-5), None)
    assert np.abs(y - want).max() <= 1e-3


def test_float16_within_one_ulp_of_the_correctly_rounded_result(device):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((4, 6, 17, 9)) * 3 + 1).astype(np.float16)
    scale = rng.standard_normal((1, 6, 1, 1)).astype(np.float16)
    bias = rng.standard_normal((1, 6, 1, 1)).astype(np.float16)
    [y] = device.execute(mvn1(tensor_desc(x), tensor_desc(x), (2, 3), tensor_desc(scale),
                              tensor_desc(bias)), [x, scale, bias])
    want = normalize(x, (2, 3), scale, bias, True, np.float32(1e-5), None).astype(np.float16)
    assert ulps(y, want).max() <= 1


def random_layout(rng, sizes, zero_ok=True):
    if rng.random() < 0.4:
        return None
    acc, strides = 1, []
    for s in reversed(sizes):
        strides.append(acc if s > 1 or not zero_ok or rng.random() < 0.5 else 0)
        acc *= s + int(rng.integers(0, 2))
    return list(reversed(strides))


def run_case(device, rng, dt, sizes, axes, with_scale, nv, fused_act=None):
    dtype = np.float32 if dt == F32 else np.float16
    rank = len(sizes)
    in_strides = random_layout(rng, sizes, zero_ok=False)
    out_strides = random_layout(rng, sizes, zero_ok=False)
    raw_in = strided_buffer(rng, dt, sizes, in_strides, fill=0)
    x = logical(raw_in, dtype, sizes, in_strides)
    x[...] = rng.standard_normal(sizes).astype(dtype) * 2 + 0.5
    inputs = [raw_in, None, None]
    scale = bias = None
    arrays = {}
    if with_scale:
        for k, name in ((1, "ScaleTensor"), (2, "BiasTensor")):
            s_sizes = [n if rng.random() < 0.5 else 1 for n in sizes]
            s_strides = random_layout(rng, s_sizes)
            raw = strided_buffer(rng, dt, s_sizes, s_strides, fill=0)
            logical(raw, dtype, s_sizes, s_strides)[...] = rng.standard_normal(s_sizes).astype(dtype)
            arrays[name] = logical(raw, dtype, s_sizes, s_strides)
            inputs[k] = raw
            d = desc(dt, s_sizes, s_strides)
            scale, bias = (d, bias) if k == 1 else (scale, d)
    raw_out = strided_buffer(rng, dt, sizes, out_strides, fill=SENTINEL)
    fused = None
    if fused_act is not None:
        cls = OPERATOR_DESC_CLASSES[fused_act.operator]
        fused = cls(**dict(zip(fused_act.params, PARAMS.get(fused_act.name, ()))))
    op = mvn1(desc(dt, sizes, in_strides), desc(dt, sizes, out_strides), axes, scale, bias, nv,
              fused=fused)
    device.execute(op, inputs, [raw_out])
    p32 = tuple(float(np.float32(p)) for p in PARAMS.get(fused_act.name, ())) if fused_act else ()
    want = normalize(np.ascontiguousarray(x), axes, arrays.get("ScaleTensor"),
                     arrays.get("BiasTensor"), nv, np.float32(1e-5),
                     (fused_act, p32) if fused_act else None)
    got = logical(raw_out, dtype, sizes, out_strides).astype(np.float64)
    if dt == F32:
        bad = np.abs(got - want) > 1e-5 * (1 + np.abs(want))
        bad &= ~(np.isnan(got) & np.isnan(want))
        assert not bad.any(), (sizes, axes, np.abs(got - want).max())
    else:
        assert ulps(got.astype(np.float16), want.astype(np.float16)).max() <= 1, (sizes, axes)
    untouched = ~addressed_mask(raw_out.size, np.dtype(dtype).itemsize, sizes, out_strides)
    assert (raw_out[untouched] == SENTINEL).all()
    assert rank == len(sizes)


@pytest.mark.parametrize("rank", range(1, 9))
@pytest.mark.parametrize("dt", [F32, F16], ids=["FLOAT32", "FLOAT16"])
def test_every_rank_axis_set_and_layout(device, dt, rank):
    rng = np.random.default_rng(rank * 10 + int(dt))
    for _ in range(4):
        sizes = [int(rng.integers(1, {1: 50, 2: 12, 3: 8, 4: 6}.get(rank, 3) + 1))
                 for _ in range(rank)]
        axes = list(rng.choice(rank, size=int(rng.integers(1, rank + 1)), replace=True))
        rng.shuffle(axes)  # any order, duplicates allowed
        run_case(device, rng, dt, sizes, axes, rng.random() < 0.7, rng.random() < 0.8)


FUSABLE = [a for a in ACTIVATIONS if a.fusable_from and a.fusable_from <= DML_FEATURE_LEVEL_4_0]


@pytest.mark.parametrize("act", FUSABLE, ids=lambda a: a.name)
def test_fused_activations(device, act):
    rng = np.random.default_rng(act.kind)
    run_case(device, rng, F32, [2, 3, 4, 5], [2, 3], True, True, act)
    run_case(device, rng, F16, [2, 3, 4, 5], [1, 2, 3], True, True, act)


def test_fused_activation_wrapped_or_bare(device):
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 3)).astype(np.float32)
    bare = DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC(Alpha=0.25)
    [a] = device.execute(mvn1(tensor_desc(x), tensor_desc(x), (2, 3), fused=bare), [x])
    [b] = device.execute(mvn1(tensor_desc(x), tensor_desc(x), (2, 3),
                              fused=DML_OPERATOR_DESC(Desc=bare)), [x])
    np.testing.assert_array_equal(a, b)
    assert (a[a < 0] != 0).all()


@pytest.mark.parametrize("cross_channel,axes", [(False, (0, 2, 3)), (True, (1, 2, 3))])
def test_mvn_v0_cross_channel(device, cross_channel, axes):
    x = np.random.default_rng(1).standard_normal((3, 4, 5, 6)).astype(np.float32)
    scale = np.full((1, 1, 1, 1), 2, np.float32)
    bias = np.full((1, 4, 1, 1), 0.5, np.float32)
    op = DML_OPERATOR_DESC(Desc=DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC(
        InputTensor=tensor_desc(x), ScaleTensor=tensor_desc(scale), BiasTensor=tensor_desc(bias),
        OutputTensor=tensor_desc(x), CrossChannel=cross_channel, NormalizeVariance=True,
        Epsilon=1e-5, FusedActivation=DML_ACTIVATION_RELU_OPERATOR_DESC()))
    [y] = device.execute(op, [x, scale, bias])
    want = np.maximum(normalize(x, axes, scale, bias, True, np.float32(1e-5), None), 0)
    assert (np.abs(y - want) <= 1e-5 * (1 + want)).all()
    assert DMLCreateDevice1(feature_level="1_0").CreateOperator(op) is not None


@pytest.mark.parametrize("eps", [1e-5, 0.0])
@pytest.mark.parametrize("dt", [F32, F16], ids=["FLOAT32", "FLOAT16"])
def test_a_constant_group_is_zero_over_the_root_of_epsilon(device, dt, eps):
    """(x - mean) / sqrt(0 + Epsilon): 0 with Epsilon > 0, 0/0 = NaN with Epsilon = 0."""
    dtype = np.float32 if dt == F32 else np.float16
    x = np.full((2, 3, 4, 4), 7.25, dtype)
    [y] = device.execute(mvn1(tensor_desc(x), tensor_desc(x), (2, 3), eps=eps), [x])
    want = normalize(x, (2, 3), None, None, True, eps, None)
    if eps:
        assert (y == 0).all() and (want == 0).all()
    else:
        assert np.isnan(y).all() and np.isnan(want).all()


NAN, INF = np.nan, np.inf
# Groups (rows, axes {1}) with non-finite values, and the formula's result per element.
INF_GROUPS = [  # (group, without NormalizeVariance, with NormalizeVariance)
    ([1.0, INF, 2.0, 3.0], [-INF, NAN, -INF, -INF], [NAN] * 4),   # mean +inf
    ([INF, 1.0, 2.0, 3.0], [NAN, -INF, -INF, -INF], [NAN] * 4),   # +inf first (the shift)
    ([-INF, 1.0, 2.0, 3.0], [NAN, INF, INF, INF], [NAN] * 4),     # mean -inf
    ([INF, INF, 2.0, 3.0], [NAN, NAN, -INF, -INF], [NAN] * 4),
    ([INF, -INF, 2.0, 3.0], [NAN] * 4, [NAN] * 4),                # mean NaN
    ([NAN, 1.0, 2.0, 3.0], [NAN] * 4, [NAN] * 4),
    ([1.0, 2.0, 3.0, 6.0], [-2.0, -1.0, 0.0, 3.0], [-2 / 3.5**0.5, -1 / 3.5**0.5, 0, 3 / 3.5**0.5]),
]


@pytest.mark.parametrize("nv", [False, True], ids=["plain", "NormalizeVariance"])
@pytest.mark.parametrize("dt", [F32, F16], ids=["FLOAT32", "FLOAT16"])
def test_groups_holding_infinities_follow_the_formula_element_by_element(device, dt, nv):
    dtype = np.float32 if dt == F32 else np.float16
    x = np.array([g[0] for g in INF_GROUPS], dtype)
    scale = np.full((1, 4), 2, dtype)
    bias = np.full((1, 4), 0.5, dtype)
    [y] = device.execute(mvn1(tensor_desc(x), tensor_desc(x), (1,), tensor_desc(scale),
                              tensor_desc(bias), normalize_variance=nv, eps=0.0), [x, scale, bias])
    want = normalize(x, (1,), scale, bias, nv, 0.0, None).astype(dtype)
    for k, group in enumerate(INF_GROUPS):
        expected = np.array(group[2 if nv else 1], np.float64) * 2 + 0.5
        np.testing.assert_allclose(y[k].astype(np.float64), expected, rtol=2e-3,
                                   err_msg=f"group {k}")
        np.testing.assert_allclose(want[k].astype(np.float64), expected, rtol=2e-3,
                                   err_msg=f"reference, group {k}")


@pytest.mark.parametrize("seed", range(6))
def test_kernel_and_reference_agree_on_random_non_finite_values(device, seed):
    """±inf and NaN sprinkled over random groups: element by element, the same NaN, ±inf and
    finite values as the reference, with and without NormalizeVariance."""
    rng = np.random.default_rng(seed)
    dt = (F32, F16)[seed % 2]
    dtype = np.float32 if dt == F32 else np.float16
    sizes = [3, 4, 5, 6]
    x = rng.standard_normal(sizes).astype(dtype)
    flat = x.reshape(-1)
    spots = rng.choice(flat.size, 6, replace=False)
    flat[spots] = rng.choice(np.array([np.inf, -np.inf, np.nan, np.inf], dtype), 6)
    scale = rng.uniform(0.5, 2, [1, 4, 1, 1]).astype(dtype)
    bias = rng.standard_normal([1, 4, 1, 1]).astype(dtype)
    nv, axes = bool(seed % 3), [(2, 3), (1, 3), (3,)][seed % 3]
    [y] = device.execute(mvn1(tensor_desc(x), tensor_desc(x), axes, tensor_desc(scale),
                              tensor_desc(bias), normalize_variance=nv), [x, scale, bias])
    want = normalize(x, axes, scale, bias, nv, np.float32(1e-5), None).astype(dtype)
    assert not np.isfinite(want).all()
    np.testing.assert_array_equal(np.isnan(y), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(y) * np.sign(y), np.isinf(want) * np.sign(want))
    finite = np.isfinite(want)
    if dt == F16:
        assert ulps(y[finite], want[finite]).max() <= 1
    else:
        np.testing.assert_allclose(y[finite], want[finite], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dt", [F32, F16], ids=["FLOAT32", "FLOAT16"])
def test_fused_activation_maps_a_nan_group_as_its_formula_says(device, dt):
    """A group holding NaN is NaN before the epilogue; RELU (the one-loop path), HARD_SIGMOID,
    THRESHOLDED_RELU, CELU and SHRINK then give their NaN result (0, 1, 0, 0, 0) and LEAKY_RELU
    keeps NaN."""
    dtype = np.float32 if dt == F32 else np.float16
    x = np.array([[NAN, 1, 2, 3], [1, 2, 3, 6]], dtype)
    fused = {DML_ACTIVATION_RELU_OPERATOR_DESC(): 0.0,
             DML_ACTIVATION_HARD_SIGMOID_OPERATOR_DESC(Alpha=0.2, Beta=0.5): 1.0,
             DML_ACTIVATION_THRESHOLDED_RELU_OPERATOR_DESC(Alpha=0.5): 0.0,
             DML_ACTIVATION_CELU_OPERATOR_DESC(Alpha=1.0): 0.0,
             DML_ACTIVATION_SHRINK_OPERATOR_DESC(Bias=0.1, Threshold=0.5): 0.0,
             DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC(Alpha=0.1): NAN}
    for act, nan_result in fused.items():
        [y] = device.execute(mvn1(tensor_desc(x), tensor_desc(x), (1,), fused=act), [x])
        np.testing.assert_array_equal(y[0], np.full(4, nan_result, dtype), err_msg=str(act))
        assert not np.isnan(y[1]).any()


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rank=st.integers(1, 6), half=st.booleans())
def test_property(seed, rank, half):
    rng = np.random.default_rng(seed)
    sizes = [int(rng.integers(1, 6)) for _ in range(rank)]
    axes = list(rng.choice(rank, size=int(rng.integers(1, rank + 1))))
    run_case(_DEVICE, rng, F16 if half else F32, sizes, axes, rng.random() < 0.5,
             rng.random() < 0.7)


_DEVICE = DMLCreateDevice1(feature_level="4_0")


# -- feature levels -------------------------------------------------------------------------------
def m(dims=4, dt=F32, scale_sizes=None, bias_sizes=None, axes=(2, 3), fused=None, **kw):
    sizes = [2, 3, 4, 5, 2, 2, 2, 2][:dims]
    s = desc(dt, scale_sizes) if scale_sizes else None
    b = desc(kw.pop("bias_dt", dt), bias_sizes) if bias_sizes else None
    o = desc(kw.pop("out_dt", dt), kw.pop("out_sizes", sizes))
    return mvn1(desc(dt, sizes), o, axes, s, b, fused=fused, **kw)


OK = None
PER_CHANNEL = [1, 3, 1, 1]
MATRIX = [
    ("4-D per channel", m(scale_sizes=PER_CHANNEL, bias_sizes=PER_CHANNEL), dict.fromkeys(LEVELS)),
    ("3-D", m(3, axes=(1, 2)), {"2_1": ("InputTensor.DimensionCount = 3",
                                        "DML_FEATURE_LEVEL_3_1 or later allows it"),
                                "3_0": ("DML_FEATURE_LEVEL_3_1",), "3_1": OK, "4_0": OK}),
    ("scalar scale", m(scale_sizes=[1, 1, 1, 1], bias_sizes=PER_CHANNEL), {
        "2_1": ("ScaleTensor.Sizes[1] = 1 is invalid",
                "before DML_FEATURE_LEVEL_4_0 the channel dimension must equal",
                "DML_FEATURE_LEVEL_4_0 or later allows it"),
        "3_0": ("DML_FEATURE_LEVEL_4_0 or later",), "3_1": ("DML_FEATURE_LEVEL_4_0",),
        "4_0": OK}),
    ("bad broadcast", m(scale_sizes=[1, 3, 2, 1], bias_sizes=PER_CHANNEL), dict.fromkeys(LEVELS, (
        "ScaleTensor.Sizes[2] = 2 is invalid", "must be 1 (broadcast) or InputTensor.Sizes[2] = 4"))),
    ("scale without bias", m(scale_sizes=PER_CHANNEL), dict.fromkeys(LEVELS, (
        "BiasTensor = null is invalid", "ScaleTensor is given, so BiasTensor is required",
        "DML_FEATURE_LEVEL_5_2 or later allows it"))),
    ("bias type", m(scale_sizes=PER_CHANNEL, bias_sizes=PER_CHANNEL, bias_dt=F16), dict.fromkeys(
        LEVELS, ("BiasTensor.DataType = DML_TENSOR_DATA_TYPE_FLOAT16 is invalid", "same DataType"))),
    ("output sizes", m(out_sizes=[2, 3, 4, 6]), dict.fromkeys(LEVELS, (
        "OutputTensor.Sizes = {2, 3, 4, 6} is invalid", "same Sizes"))),
    ("axis too big", m(axes=(2, 4)), dict.fromkeys(LEVELS, (
        "Axes[1] = 4 is invalid", "less than InputTensor.DimensionCount (4)"))),
    ("no axes", m(axes=()), dict.fromkeys(LEVELS, ("AxisCount = 0 is invalid",))),
    ("duplicate axes", m(axes=(3, 2, 3)), dict.fromkeys(LEVELS)),
    ("int input", m(dt=DML_TENSOR_DATA_TYPE_INT32), dict.fromkeys(LEVELS, (
        "InputTensor.DataType = DML_TENSOR_DATA_TYPE_INT32 is invalid",))),
    ("fused gelu", m(fused=DML_ACTIVATION_GELU_OPERATOR_DESC()), dict.fromkeys(LEVELS, (
        "FusedActivation.Type = DML_OPERATOR_ACTIVATION_GELU is invalid",
        "DML_FEATURE_LEVEL_5_1 or later allows it"))),
    ("fused celu", m(fused=DML_ACTIVATION_CELU_OPERATOR_DESC(Alpha=1.0)), {
        "2_1": ("FusedActivation.Type = DML_OPERATOR_ACTIVATION_CELU is invalid",
                "DML_FEATURE_LEVEL_3_0 or later allows it"), "3_0": OK, "3_1": OK, "4_0": OK}),
    ("fused softmax", m(fused=DML_ACTIVATION_SOFTMAX_OPERATOR_DESC()), dict.fromkeys(LEVELS, (
        "FusedActivation.Type = DML_OPERATOR_ACTIVATION_SOFTMAX is invalid",
        "the activations DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1 can fuse are"))),
    ("fused non-activation", m(fused=DML_OPERATOR_DESC(Type=DML_OPERATOR_SLICE1, Desc=None)),
     dict.fromkeys(LEVELS, ("FusedActivation.Type = DML_OPERATOR_SLICE1 is invalid",))),
    ("fused with tensors", m(fused=DML_ACTIVATION_RELU_OPERATOR_DESC(
        InputTensor=desc(F32, [2, 3, 4, 5]))), dict.fromkeys(LEVELS, (
            "FusedActivation.Desc.InputTensor", "a fused activation's tensors must be null"))),
    ("fused softplus", m(fused=DML_ACTIVATION_SOFTPLUS_OPERATOR_DESC(Steepness=0.25)),
     dict.fromkeys(LEVELS, ("FusedActivation.Desc.Steepness = 0.25 is invalid",))),
    ("fused shrink", m(fused=DML_ACTIVATION_SHRINK_OPERATOR_DESC(Bias=0.1, Threshold=0.2)),
     dict.fromkeys(LEVELS)),
]


@pytest.mark.parametrize("name,op,expect", MATRIX, ids=[x[0] for x in MATRIX])
@pytest.mark.parametrize("level", LEVELS)
def test_feature_level_matrix(name, op, expect, level):
    check_level_case(op, level, expect[level], "DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1")


def test_levels_of_both_versions():
    assert min_feature_level(m()) == DML_FEATURE_LEVEL_2_1
    assert min_feature_level(m(5, axes=(2,))) == DML_FEATURE_LEVEL_3_1
    assert min_feature_level(m(scale_sizes=[1, 1, 1, 1], bias_sizes=[1, 1, 1, 1])) == \
        DML_FEATURE_LEVEL_4_0
    assert min_feature_level(m(fused=DML_ACTIVATION_GELU_OPERATOR_DESC())) == DML_FEATURE_LEVEL_5_1
    v0 = DML_OPERATOR_DESC(Desc=DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC(
        InputTensor=desc(F32, [1, 2, 3, 4]), OutputTensor=desc(F32, [1, 2, 3, 4]),
        CrossChannel=False, NormalizeVariance=True, Epsilon=1e-5))
    assert min_feature_level(v0) == DML_FEATURE_LEVEL_1_0


def test_ieee_results_come_without_numpy_warnings(device):
    """A negative Epsilon over a constant group: sqrt(0 - 1) is NaN on the device and in the
    reference, which returns it as a result, not a RuntimeWarning."""
    import warnings

    from emulator.registry import validate_operator

    x = np.full((1, 2, 2, 2), 3.0, np.float32)
    op = mvn1(desc(F32, [1, 2, 2, 2]), desc(F32, [1, 2, 2, 2]), (2, 3), eps=-1.0)
    [y] = device.execute(op, [x])
    spec, v = validate_operator(op, device.feature_level)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        want = spec.module.reference(v.values, {"InputTensor": x})["OutputTensor"]
    assert np.isnan(want).all() and np.isnan(y).all()


@pytest.mark.parametrize("act", [None, "RELU"])
@pytest.mark.parametrize("dt", [F32, F16], ids=["FLOAT32", "FLOAT16"])
def test_layernorm_scale_and_bias_along_the_row(device, dt, act):
    """LayerNorm's shape: axes {1}, Scale/Bias [1, N] varying along the normalized row (the kernel's
    one-loop path). Within the reference's bound, and bit-identical to the general path (taken when
    the output has padded strides), which forms the same products."""
    dtype = np.float32 if dt == F32 else np.float16
    rng = np.random.default_rng(7)
    rows, n = 5, 3000
    x = (rng.standard_normal((rows, n)) * 3 + 1).astype(dtype)
    scale = rng.standard_normal((1, n)).astype(dtype)
    bias = rng.standard_normal((1, n)).astype(dtype)
    fused = DML_ACTIVATION_RELU_OPERATOR_DESC() if act else None
    packed = mvn1(tensor_desc(x), tensor_desc(x), (1,), tensor_desc(scale), tensor_desc(bias),
                  fused=fused)
    [y] = device.execute(packed, [x, scale, bias])
    raw = strided_buffer(rng, dt, [rows, n], [n + 3, 2], fill=SENTINEL)
    padded = mvn1(tensor_desc(x), desc(dt, [rows, n], [n + 3, 2]), (1,), tensor_desc(scale),
                  tensor_desc(bias), fused=fused)
    device.execute(padded, [x, scale, bias], [raw])
    general = logical(raw, dtype, [rows, n], [n + 3, 2])
    assert y.tobytes() == np.ascontiguousarray(general).tobytes()
    relu = next(a for a in ACTIVATIONS if a.name == "RELU")
    want = normalize(x, (1,), scale, bias, True, np.float32(1e-5), (relu, ()) if act else None)
    if dt == F32:
        assert (np.abs(y - want) <= 1e-5 * (1 + np.abs(want))).all()
    else:
        assert ulps(y, want.astype(np.float16)).max() <= 1
