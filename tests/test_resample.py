"""The resampling rows (emulator/movement/resample.py): every row and data type its kernel runs,
random descs (ranks 1-4 or 4-5, up- and down-scales, arbitrary pixel offsets, both rounding
directions, antialiasing, padded and zero strides, untouched output gaps) against the float64
reference of the pages' formulas; the pages' examples; the forward and gradient maps being
adjoint; what a zero weight must not propagate.

Bounds (the float64 reference y, and m = the same map applied to |x|):
- nearest neighbour: bit copies (a NaN stays NaN);
- FLOAT32: |got - y| ≤ 2^-20 · m (float32 weights and sums);
- FLOAT16: |got - y| ≤ one FLOAT16 ULP of y + 2^-20 · m (float32 math, rounded once);
- INT8/UINT8: the nearest integer of y (ties to even), or its neighbour where y lies within
  2^-16 · m of a tie.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from descriptors import *
from emulator import DMLCreateDevice1
from emulator.movement import resample
from emulator.registry import REGISTRY

from .helpers import SENTINEL, addressed_mask, bits, desc, layout, logical, np_dtype, strided_buffer

T = DML_TENSOR_DATA_TYPE
OP = DML_OPERATOR_TYPE
F32, F16 = T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16
U8 = T.DML_TENSOR_DATA_TYPE_UINT8
NEAREST = DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR
LINEAR = DML_INTERPOLATION_MODE_LINEAR
GRADS = (OP.DML_OPERATOR_RESAMPLE_GRAD, OP.DML_OPERATOR_RESAMPLE_GRAD1)


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="6_4")


def random_fields(rng, op, dt):
    """(input sizes, output sizes, the desc's other fields) of a random valid desc."""
    if op == OP.DML_OPERATOR_UPSAMPLE_2D:
        rank = int(rng.integers(4, 6))
        sizes = [int(rng.integers(1, 4)) for _ in range(rank)]
        h, w = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        out = [*sizes[:-2], sizes[-2] * h, sizes[-1] * w]
        return sizes, out, {"ScaleSize": DML_SIZE_2D(Width=w, Height=h),
                            "InterpolationMode": LINEAR if rng.random() < 0.7 else NEAREST}
    rank = int(rng.integers(1, 5))
    sizes = [int(rng.integers(1, 7)) for _ in range(rank)]
    scales, out = [], []
    for n in sizes:
        scale = float(np.float32(rng.choice([1.0, 2.0, 3.0, 0.5, 0.25, 1.5, 0.3,
                                             rng.uniform(0.1, 4)])))
        scales.append(scale)
        # Usually the size the scale gives, sometimes a cropped or clamped one.
        m = max(1, round(n * scale) + (int(rng.integers(-1, 2)) if rng.random() < 0.3
                                            else 0))
        out.append(m)
    fields = {"InterpolationMode": LINEAR if rng.random() < 0.6 else NEAREST}
    if op == OP.DML_OPERATOR_RESAMPLE:
        fields.update(ScaleCount=rank, Scales=tuple(scales))
    else:
        fields.update(DimensionCount=rank, Scales=tuple(scales))
        offsets = [0.5, -0.5, 0.0, 0.25, 1.0, -1.0, 0.7]
        fields["InputPixelOffsets"] = tuple(float(np.float32(rng.choice(offsets)))
                                            for _ in range(rank))
        fields["OutputPixelOffsets"] = tuple(float(np.float32(rng.choice(offsets)))
                                             for _ in range(rank))
        if op in (OP.DML_OPERATOR_RESAMPLE2, OP.DML_OPERATOR_RESAMPLE3,
                  OP.DML_OPERATOR_RESAMPLE_GRAD1):
            fields["RoundingDirection"] = (DML_AXIS_DIRECTION_INCREASING,
                                           DML_AXIS_DIRECTION_DECREASING)[int(rng.integers(0, 2))]
        if op == OP.DML_OPERATOR_RESAMPLE3:
            fields["Antialiased"] = bool(rng.random() < 0.6)
    if op in GRADS:
        return out, sizes, fields  # the gradient runs from the forward output to its input
    return sizes, out, fields


def values(rng, dt, shape, edges: bool):
    """Moderate random values of the type; ``edges``: a few ±inf, NaN and ±0 among them."""
    dtype = np_dtype(dt)
    if dtype.kind == "f":
        x = (rng.standard_normal(shape) * 8).astype(dtype)
        if edges and x.size:
            flat = x.reshape(-1)
            picks = rng.integers(0, flat.size, max(1, flat.size // 12))
            flat[picks] = rng.choice(np.array([np.inf, -np.inf, np.nan, 0.0, -0.0], dtype),
                                     picks.size)
        return x
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, shape).astype(dtype)


def check(op, dt, v, x, got, linear):
    """``got`` against the reference within the module's bounds."""
    dtype = np_dtype(dt)
    if not linear and op not in GRADS:  # a bit copy
        want = resample.resample_values(v, op, x)
        assert (bits(got) == bits(want)).all(), (got, want)
        return
    with np.errstate(invalid="ignore", over="ignore"):
        y = resample.resample_values(v, op, x.astype(np.float64))
        m = resample.resample_values(v, op, np.abs(x.astype(np.float64)))
        want = resample.to_type(y, dt)
    if dtype.kind == "f":
        g = got.astype(np.float64)
        special = ~np.isfinite(y) | ~np.isfinite(m)
        assert (np.isnan(g) == np.isnan(want.astype(np.float64)))[special].all(), (got, want)
        inf = special & np.isinf(want)
        assert (g[inf] == want[inf]).all(), (got[inf], want[inf])
        fine = ~special
        with np.errstate(invalid="ignore"):
            ulp = np.spacing(np.abs(want)).astype(np.float64) if dt == F16 else 0
            bound = 2.0 ** -20 * m + ulp
            err = np.abs(g - y)
        assert (err[fine] <= np.broadcast_to(bound, err.shape)[fine]).all(), \
            (op.name, dt.name, v, g[fine][err[fine] > bound[fine]], y[fine][err[fine] > bound[fine]])
    else:
        near_tie = np.abs(np.abs(y - np.floor(y)) - 0.5) <= 2.0 ** -16 * np.maximum(m, 1)
        ok = (got == want) | (near_tie & (np.abs(got.astype(np.int64) - want) <= 1))
        assert ok.all(), (got[~ok], y[~ok])


def run_case(device, rng, op, dt, edges=False):
    n_in, n_out, fields = random_fields(rng, op, dt)
    src, dst = ("InputGradientTensor", "OutputGradientTensor") if op in GRADS else \
        ("InputTensor", "OutputTensor")
    in_strides = layout(rng, n_in, True)
    raw = strided_buffer(rng, dt, n_in, in_strides)
    logical(raw, np_dtype(dt), n_in, in_strides)[...] = values(rng, dt, n_in, edges)
    x = np.array(logical(raw, np_dtype(dt), n_in, in_strides))
    out_strides = layout(rng, n_out, False)
    out_raw = strided_buffer(rng, dt, n_out, out_strides, fill=SENTINEL)
    struct = OPERATOR_DESC_CLASSES[op](**{src: desc(dt, n_in, in_strides),
                                          dst: desc(dt, n_out, out_strides)}, **fields)
    operator = DML_OPERATOR_DESC(Desc=struct)
    device.execute(operator, [raw], [out_raw])
    v = device.CreateOperator(operator).validated.values
    got = logical(out_raw, np_dtype(dt), n_out, out_strides)
    check(op, dt, v, x, got, fields["InterpolationMode"] == LINEAR)
    untouched = ~addressed_mask(out_raw.size, np_dtype(dt).itemsize, n_out, out_strides)
    assert (out_raw[untouched] == SENTINEL).all(), "a gap of the output was written"


def type_cases():
    out = []
    for row in resample.ROWS:
        band = REGISTRY[row.operator].support[-1]
        types = set.intersection(*(set(t) for _, t in band.tensors.values()))
        out += [(row.operator, t) for t in sorted(types & set(row.kernel_types))]
    return out


CASES = type_cases()


@pytest.mark.parametrize("op,dt", CASES, ids=[f"{o.name[13:]}-{t.name[21:]}" for o, t in CASES])
def test_kernel_matches_the_reference(device, op, dt):
    rng = np.random.default_rng(zlib.crc32(f"{op.name}{dt.name}".encode()))
    for i in range(16):
        run_case(device, rng, op, dt, edges=i % 4 == 3)


def test_every_resampling_operator_executes_every_type_of_its_last_band():
    assert {op for op, _ in CASES} == {row.operator for row in resample.ROWS}
    assert len(CASES) == 2 * 3 + 4 * 4  # UPSAMPLE_2D and the GRADs: floats; the rest: +INT8/UINT8


# --- the pages' examples and decisions ---------------------------------------------------------

def run(device, struct, x, out_sizes, dt=F32):
    source = getattr(struct, "InputTensor", None) or struct.InputGradientTensor
    x = np.asarray(x, np_dtype(dt)).reshape(source.Desc.Sizes)
    out = device.execute(DML_OPERATOR_DESC(Desc=struct), [x])[0]
    assert out.shape == tuple(out_sizes)
    return out


def test_upsample_2d_bilinear_is_dxdispatchs_model(device):
    """dml_upsample_2d: [[1, 2], [3, 4]] x2 bilinear, pixel centres, edges clamped."""
    s = DML_UPSAMPLE_2D_OPERATOR_DESC(InputTensor=desc(F32, [1, 1, 2, 2]),
                                      OutputTensor=desc(F32, [1, 1, 4, 4]),
                                      ScaleSize=DML_SIZE_2D(Width=2, Height=2),
                                      InterpolationMode=LINEAR)
    got = run(device, s, [1, 2, 3, 4], [1, 1, 4, 4])
    np.testing.assert_array_equal(got[0, 0], [[1, 1.25, 1.75, 2], [1.5, 1.75, 2.25, 2.5],
                                              [2.5, 2.75, 3.25, 3.5], [3, 3.25, 3.75, 4]])


def resample_grad(interpolation, scales, n_in, n_out, input_offsets=None, output_offsets=None):
    k = len(scales)
    return DML_RESAMPLE_GRAD_OPERATOR_DESC(
        InputGradientTensor=desc(F32, n_in), OutputGradientTensor=desc(F32, n_out),
        InterpolationMode=interpolation, DimensionCount=k, Scales=tuple(scales),
        InputPixelOffsets=input_offsets or (0.5,) * k,
        OutputPixelOffsets=output_offsets or (-0.5,) * k)


def test_resample_grad_page_example(device):
    """The page: nearest x1.5 wide, x0.5 high: [[1, 2], [3, 4]] → [1, 1, 2]; so the gradient
    [4, 5, 6] → [[9, 6], [0, 0]]."""
    fwd = DML_RESAMPLE1_OPERATOR_DESC(InputTensor=desc(F32, [2, 2]),
                                      OutputTensor=desc(F32, [1, 3]), InterpolationMode=NEAREST,
                                      DimensionCount=2, Scales=(0.5, 1.5),
                                      InputPixelOffsets=(0.5, 0.5),
                                      OutputPixelOffsets=(-0.5, -0.5))
    np.testing.assert_array_equal(run(device, fwd, [1, 2, 3, 4], [1, 3]), [[1, 1, 2]])
    grad = run(device, resample_grad(NEAREST, (0.5, 1.5), [1, 3], [2, 2]), [4, 5, 6], [2, 2])
    np.testing.assert_array_equal(grad, [[9, 6], [0, 0]])


@pytest.mark.parametrize("direction,rounded", [
    (DML_AXIS_DIRECTION_DECREASING, [0, 0, 0, 1, 1, 2]),   # floor(x), -1 clamped
    (DML_AXIS_DIRECTION_INCREASING, [0, 1, 1, 2, 2, 3]),   # ceil(x)
])
def test_resample2_rounding_direction(device, direction, rounded):
    """x = (o - 0) / 2 - 0.25: -0.25, 0.25, 0.75, … rounded down or up, clamped."""
    s = DML_RESAMPLE2_OPERATOR_DESC(InputTensor=desc(F32, [4]), OutputTensor=desc(F32, [6]),
                                    InterpolationMode=NEAREST, RoundingDirection=direction,
                                    DimensionCount=1, Scales=(2.0,), InputPixelOffsets=(0.25,),
                                    OutputPixelOffsets=(0.0,))
    np.testing.assert_array_equal(run(device, s, [10, 11, 12, 13], [6]),
                                  [10 + min(r, 3) for r in rounded])


def test_resample1_nearest_is_the_pixel_centre_rounded_ties_down(device):
    """The centre of output o lies at x = (o + 0.5) / scale - 0.5 in the input; RESAMPLE1 picks
    the nearest element, ties toward the lower one (the RESAMPLE_GRAD page's example has ties
    at x = 0.5 rounding to 0): x3 repeats each element three times; x0.5 of 4 elements samples
    x = 0.5 and 2.5 → elements 0 and 2; x = 0.7 (x0.625... ) rounds to 1."""
    def resample1(n_in, n_out, scale):
        return DML_RESAMPLE1_OPERATOR_DESC(InputTensor=desc(F32, [n_in]),
                                           OutputTensor=desc(F32, [n_out]),
                                           InterpolationMode=NEAREST, DimensionCount=1,
                                           Scales=(scale,), InputPixelOffsets=(0.5,),
                                           OutputPixelOffsets=(-0.5,))
    np.testing.assert_array_equal(run(device, resample1(3, 9, 3.0), [1, 2, 3], [9]),
                                  [1, 1, 1, 2, 2, 2, 3, 3, 3])
    np.testing.assert_array_equal(run(device, resample1(4, 2, 0.5), [1, 2, 3, 4], [2]), [1, 3])
    # scale 2.5: x = (o + 0.5) / 2.5 - 0.5 = -0.3, 0.1, 0.5, 0.9, 1.3 → 0, 0, 0 (tie), 1, 1
    np.testing.assert_array_equal(run(device, resample1(2, 5, 2.5), [1, 2], [5]), [1, 1, 1, 2, 2])


def test_resample3_antialiasing_stretches_the_triangle_only_beyond_a_factor_2(device):
    """1 / scale = 4 > 2: each output is the normalised triangle of half-width 4 around its
    centre; 1 / scale = 2 is plain linear (the page's condition), as is Antialiased = FALSE."""
    x = np.arange(16, dtype=np.float32) ** 2

    def resample3(scale, n_out, antialiased):
        return DML_RESAMPLE3_OPERATOR_DESC(
            InputTensor=desc(F32, [16]), OutputTensor=desc(F32, [n_out]),
            InterpolationMode=LINEAR, RoundingDirection=DML_AXIS_DIRECTION_DECREASING,
            DimensionCount=1, Scales=(scale,), InputPixelOffsets=(0.5,),
            OutputPixelOffsets=(-0.5,), Antialiased=antialiased)

    got = run(device, resample3(0.25, 4, True), x, [4])
    want = []
    for o in range(4):
        centre = (o + 0.5) * 4 - 0.5
        taps = np.arange(int(centre) - 4, int(centre) + 6)
        w = np.clip(1 - np.abs(taps - centre) / 4, 0, None)
        want.append(np.sum(w * x[np.clip(taps, 0, 15)]) / np.sum(w))
    np.testing.assert_allclose(got, want, rtol=2e-7)
    plain = run(device, resample3(0.25, 4, False), x, [4])
    np.testing.assert_allclose(plain, [(x[1] + x[2]) / 2, (x[5] + x[6]) / 2,
                                       (x[9] + x[10]) / 2, (x[13] + x[14]) / 2], rtol=1e-7)
    np.testing.assert_array_equal(run(device, resample3(0.5, 8, True), x, [8]),
                                  run(device, resample3(0.5, 8, False), x, [8]))


def test_a_zero_weight_does_not_propagate_nan_or_inf(device):
    """Scale 1 with pixel-centre offsets samples exactly on the input: only the element itself
    contributes, so a NaN or an infinity stays where it is."""
    x = np.array([1, np.nan, 3, np.inf, 5], np.float32)
    s = DML_RESAMPLE1_OPERATOR_DESC(InputTensor=desc(F32, [5]), OutputTensor=desc(F32, [5]),
                                    InterpolationMode=LINEAR, DimensionCount=1, Scales=(1.0,),
                                    InputPixelOffsets=(0.5,), OutputPixelOffsets=(-0.5,))
    got = run(device, s, x, [5])
    np.testing.assert_array_equal(got, x)


def test_uint8_linear_rounds_to_nearest_even_and_saturates_nothing(device):
    """[0, 255] x2: 0, 63.75, 191.25, 255 → 0, 64, 191, 255; [0, 1] x4 samples 0.375 / 0.625
    / 0.125 … → ties: [1, 2] x2 has 1.25, 1.75; [0, 1, 2, 3] x0.5 samples 0.5 and 2.5 → 0, 2."""
    def up(n_in, n_out, scale):
        return DML_RESAMPLE_OPERATOR_DESC(InputTensor=desc(U8, [n_in]),
                                          OutputTensor=desc(U8, [n_out]),
                                          InterpolationMode=LINEAR, ScaleCount=1,
                                          Scales=(scale,))
    np.testing.assert_array_equal(run(device, up(2, 4, 2.0), [0, 255], [4], U8), [0, 64, 191, 255])
    np.testing.assert_array_equal(run(device, up(4, 2, 0.5), [0, 1, 2, 3], [2], U8), [0, 2])


@pytest.mark.parametrize("interpolation", [NEAREST, LINEAR])
def test_the_gradient_is_the_adjoint_of_the_forward_map(device, interpolation):
    """<resample(x), g> = <x, resample_grad(g)> for the same scales and offsets."""
    rng = np.random.default_rng(7)
    n_in, n_out, scales = [3, 5, 4], [6, 2, 7], (2.0, 0.4, 1.75)
    offsets = {"input_offsets": (0.5, 0.25, 0.0), "output_offsets": (-0.5, 0.0, 0.3)}
    x = rng.standard_normal(n_in).astype(np.float32)
    g = rng.standard_normal(n_out).astype(np.float32)
    fwd = DML_RESAMPLE1_OPERATOR_DESC(InputTensor=desc(F32, n_in), OutputTensor=desc(F32, n_out),
                                      InterpolationMode=interpolation, DimensionCount=3,
                                      Scales=scales, InputPixelOffsets=offsets["input_offsets"],
                                      OutputPixelOffsets=offsets["output_offsets"])
    y = run(device, fwd, x, n_out)
    dx = run(device, resample_grad(interpolation, scales, n_out, n_in,
                                   offsets["input_offsets"], offsets["output_offsets"]), g, n_in)
    assert np.isclose(np.vdot(y.astype(np.float64), g), np.vdot(x, dx.astype(np.float64)),
                      rtol=1e-5)


def test_integer_types_are_valid_from_6_2_only_for_resample():
    s = DML_RESAMPLE_OPERATOR_DESC(InputTensor=desc(U8, [1, 1, 2, 2]),
                                   OutputTensor=desc(U8, [1, 1, 4, 4]), InterpolationMode=LINEAR,
                                   ScaleCount=4, Scales=(1.0, 1.0, 2.0, 2.0))
    got = DMLCreateDevice1(feature_level="6_2").execute(DML_OPERATOR_DESC(Desc=s),
                                                        [np.array([0, 10, 20, 30], np.uint8)])[0]
    assert got.dtype == np.uint8 and got[0, 0, 0, 0] == 0 and got[0, 0, 3, 3] == 30


@pytest.mark.parametrize("dt", [F32, F16, U8])
@pytest.mark.parametrize("scales,n_out", [((2.0, 2.0), (14, 22)), ((0.5, 0.5), (4, 6)),
                                          ((3.0, 0.25), (21, 8)), ((1.0, 1.5), (7, 17))])
def test_repeating_taps_run_the_fixed_pattern_path(device, dt, scales, n_out):
    """Rows long enough for the last dimension's taps to repeat (x2: period 2, x0.5: period 1
    reading every other element, x1.5: period 3), edges clamped, with NaN and infinities in the
    input for the float types: the same bounds as any other case."""
    rng = np.random.default_rng(11)
    n_in = (7, 11) if scales != (0.5, 0.5) else (8, 12)
    if scales == (3.0, 0.25):
        n_in = (7, 32)
    x = values(rng, dt, n_in, edges=True)
    s = DML_RESAMPLE2_OPERATOR_DESC(InputTensor=desc(dt, n_in), OutputTensor=desc(dt, n_out),
                                    InterpolationMode=LINEAR,
                                    RoundingDirection=DML_AXIS_DIRECTION_DECREASING,
                                    DimensionCount=2, Scales=scales, InputPixelOffsets=(0.5, 0.5),
                                    OutputPixelOffsets=(-0.5, -0.5))
    op = DML_OPERATOR_DESC(Desc=s)
    got = device.execute(op, [x])[0]
    plan = device.CreateOperator(op).plan
    assert plan.blend and plan.pattern.block_hi > plan.pattern.block_lo
    check(OP.DML_OPERATOR_RESAMPLE2, dt, device.CreateOperator(op).validated.values, x, got,
          True)


@pytest.mark.parametrize("scale", [1e-3, 1e-8, 1e-30])
def test_antialiasing_a_tiny_scale_costs_the_input_not_one_over_the_scale(device, scale):
    """The triangle is wider than the input: its taps beyond the edges (which clamp to the edge
    elements) are summed in closed form, so the plan has one tap per input element, not 2 /
    Scale (1e-30 asked for 2e30 taps). The result is the normalised weighted mean: against the
    reference's tap-by-tap loop where that loop is affordable, else within the input's range."""
    x = np.array([1.0, 5.0, -2.0, 7.0], np.float32)
    s = DML_RESAMPLE3_OPERATOR_DESC(
        InputTensor=desc(F32, [4]), OutputTensor=desc(F32, [3]), InterpolationMode=LINEAR,
        RoundingDirection=DML_AXIS_DIRECTION_DECREASING, DimensionCount=1, Scales=(scale,),
        InputPixelOffsets=(0.5,), OutputPixelOffsets=(-0.5,), Antialiased=True)
    op = DML_OPERATOR_DESC(Desc=s)
    got = device.execute(op, [x])[0]
    if scale >= 1e-3:
        check(OP.DML_OPERATOR_RESAMPLE3, F32, device.CreateOperator(op).validated.values, x, got,
              True)
    assert np.isfinite(got).all() and (got >= x.min()).all() and (got <= x.max()).all()
