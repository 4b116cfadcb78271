"""ROI_POOLING, ROI_ALIGN, ROI_ALIGN1 and ROI_ALIGN_GRAD (emulator/movement/roi.py).

Random descs of every data type the last bands allow (FLOAT32, FLOAT16; batch indices UINT32 and
UINT64 where allowed), with padded and zero input strides and padded output strides whose gaps
must stay untouched, against the rows' float64 references:

- ROI_POOLING copies an input element (or writes 0): bit-exact.
- ROI_ALIGN, ROI_ALIGN1, ROI_ALIGN_GRAD compute in float64 and round once. Bound: every element
  within 1 ULP (of the output type, at the reference's magnitude) of the float64 reference,
  plus 2^-40 · (the magnitude of the terms summed) for the summation order (AVERAGE's mean, the
  GRAD's sums over regions and samples). Measured: no element ever differs by more than 0.5 ULP
  + 2^-49 · that magnitude over the random cases.

The pages' example (ROI_ALIGN_GRAD's, forward and backward) and hand-computed vectors are golden;
the edge cases (regions outside, empty, reversed; batch indices outside the input; NaN
coordinates and values) check the decisions in the module docstring.
"""

from __future__ import annotations

import zlib
from types import SimpleNamespace

import numpy as np
import pytest

from descriptors import *
from emulator import DMLCreateDevice1
from emulator.movement.roi import (
    ROWS,
    axis_samples,
    roi_align_float64,
    roi_align_grad_float64,
)
from emulator.registry import REGISTRY

from .helpers import SENTINEL, addressed_mask, desc, layout, logical, np_dtype, strided_buffer

T = DML_TENSOR_DATA_TYPE
OP = DML_OPERATOR_TYPE
F32, F16 = T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16
U32, U64 = T.DML_TENSOR_DATA_TYPE_UINT32, T.DML_TENSOR_DATA_TYPE_UINT64
AVERAGE = DML_REDUCE_FUNCTION.DML_REDUCE_FUNCTION_AVERAGE
MAXIMUM = DML_REDUCE_FUNCTION.DML_REDUCE_FUNCTION_MAX
LINEAR = DML_INTERPOLATION_MODE.DML_INTERPOLATION_MODE_LINEAR
NEAREST = DML_INTERPOLATION_MODE.DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR
SUM_BOUND = 2.0**-40  # times the magnitude of the summed terms
UINT_MAX = 2**32 - 1


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="6_4")


# --- random cases --------------------------------------------------------------------------

def band_types(op, tensor: str) -> list:
    band = REGISTRY[op].support[-1]
    return sorted(band.tensors[tensor][1])


def fill(rng, raw, dt, sizes, strides, values) -> np.ndarray:
    """Write ``values`` (logical, shaped by sizes) into the tensor's elements of ``raw``."""
    logical(raw, np_dtype(dt), sizes, strides)[...] = np.asarray(values).astype(np_dtype(dt))
    return np.array(logical(raw, np_dtype(dt), sizes, strides))


def random_corners(rng, count: int, extent: int, scale: float) -> np.ndarray:
    """Region corners (unscaled) for one axis: mostly inside, some outside, empty or reversed."""
    a = rng.uniform(-0.5, extent + 0.5, count)
    b = rng.uniform(-0.5, extent + 0.5, count)
    kind = rng.random(count)
    a = np.where(kind < 0.1, a - extent - 3, a)  # far outside
    b = np.where((kind >= 0.1) & (kind < 0.2), a, b)  # empty
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    reverse = (kind >= 0.2) & (kind < 0.3)
    first, second = np.where(reverse, hi, lo), np.where(reverse, lo, hi)
    return np.stack([first, second]) / scale


def make_case(rng, op, dt, index_dt):
    """(inputs {name: (dt, sizes, values)}, outputs {name: (dt, sizes)}, attributes)."""
    n, c = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    h, w = int(rng.integers(1, 7)), int(rng.integers(1, 7))
    rois = int(rng.integers(1, 5))
    oh, ow = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    x = rng.standard_normal((n, c, h, w)) * 4
    sx, sy = (float(rng.choice([1.0, 0.5, 2.0, 0.375])) for _ in range(2))
    xs, ys = random_corners(rng, rois, w, sx), random_corners(rng, rois, h, sy)
    batches = rng.integers(0, n, rois)
    if rng.random() < 0.4:  # an index outside the input: the region reads nothing
        batches[int(rng.integers(0, rois))] = rng.choice([n, n + 5, UINT_MAX])
    if op == OP.DML_OPERATOR_ROI_POOLING:
        ids = batches.astype(np.float64)
        ids[batches >= n] = rng.choice([-1.0, np.nan, float(n), 0.75 + n - 1], (batches >= n).sum())
        table = np.stack([ids, xs[0], ys[0], xs[1], ys[1]], axis=1)
        return {"InputTensor": (dt, [n, c, h, w], x), "ROITensor": (dt, [1, 1, rois, 5], table)}, \
            {"OutputTensor": (dt, [rois, c, oh, ow])}, \
            {"SpatialScale": sx, "PooledSize": DML_SIZE_2D(Width=ow, Height=oh)}
    table = np.stack([xs[0], ys[0], xs[1], ys[1]], axis=1)
    roi_sizes = [1] * int(rng.integers(0, 3)) + [rois, 4]
    index_sizes = [1] * int(rng.integers(0, 4)) + [rois]
    low = int(rng.integers(0, 3))
    high = UINT_MAX if rng.random() < 0.3 else int(rng.integers(max(low, 1), 4))
    attrs = {"ReductionFunction": rng.choice([AVERAGE, MAXIMUM]),
             "InterpolationMode": rng.choice([LINEAR, NEAREST]),
             "SpatialScaleX": sx, "SpatialScaleY": sy,
             "MinimumSamplesPerOutput": low, "MaximumSamplesPerOutput": high}
    if op != OP.DML_OPERATOR_ROI_ALIGN:
        attrs.update(InputPixelOffset=float(rng.choice([0.5, 0.0, 0.25])),
                     OutputPixelOffset=float(rng.choice([-0.5, 0.0, 0.3])),
                     AlignRegionsToCorners=bool(rng.random() < 0.4))
    ins = {"ROITensor": (dt, roi_sizes, table.reshape(roi_sizes)),
           "BatchIndicesTensor": (index_dt, index_sizes, batches.reshape(index_sizes))}
    if op != OP.DML_OPERATOR_ROI_ALIGN_GRAD:
        attrs["OutOfBoundsInputValue"] = float(rng.choice([0.0, -1.5, 2.25]))
        return {"InputTensor": (dt, [n, c, h, w], x), **ins}, \
            {"OutputTensor": (dt, [rois, c, oh, ow])}, attrs
    outs = {}
    want_grad = rng.random() < 0.7
    if want_grad:
        outs["OutputGradientTensor"] = (dt, [n, c, h, w])
    if not want_grad or rng.random() < 0.6:
        outs["OutputROIGradientTensor"] = (dt, roi_sizes)
    grads = {"InputGradientTensor": (dt, [rois, c, oh, ow], rng.standard_normal((rois, c, oh, ow)))}
    if "OutputROIGradientTensor" in outs or attrs["ReductionFunction"] == MAXIMUM \
            or rng.random() < 0.5:
        grads["InputTensor"] = (dt, [n, c, h, w], x)
    return {**grads, **ins}, outs, attrs


def within_bound(got: np.ndarray, want64: np.ndarray, magnitude: np.ndarray | float
                 ) -> np.ndarray:
    """1 ULP at the reference's magnitude (of got's type) + SUM_BOUND · magnitude; identical
    non-finite values match."""
    got = np.asarray(got)
    rounded = want64.astype(got.dtype)
    exact = (got == rounded) | (np.isnan(got) & np.isnan(want64))
    ulp = np.spacing(np.abs(rounded)).astype(np.float64)
    err = np.abs(got.astype(np.float64) - want64)
    return exact | (err <= ulp + SUM_BOUND * magnitude)


def ulps(got: np.ndarray, want64: np.ndarray) -> np.ndarray:
    """|got - want64| in ULPs of got's type at the reference's magnitude (the bound's measure)."""
    rounded = want64.astype(got.dtype)
    with np.errstate(invalid="ignore"):
        d = np.abs(got.astype(np.float64) - want64) / np.spacing(np.abs(rounded)).astype(float)
    return np.where((got == rounded) | np.isnan(want64), 0.0, d)


def run_case(device, rng, op, dt, index_dt, measure=None):
    ins, outs, attrs = make_case(rng, op, dt, index_dt)
    tensors, raws, inputs = {}, [], {}
    for name, (tdt, sizes, values) in ins.items():
        strides = layout(rng, sizes, name == "InputTensor")
        raw = strided_buffer(rng, tdt, sizes, strides)
        inputs[name] = fill(rng, raw, tdt, sizes, strides, values)
        tensors[name] = desc(tdt, sizes, strides)
        raws.append(raw)
    out_raws = {}
    for name, (tdt, sizes) in outs.items():
        strides = layout(rng, sizes, False)
        out_raws[name] = (sizes, strides, strided_buffer(rng, tdt, sizes, strides, fill=SENTINEL))
        tensors[name] = desc(tdt, sizes, strides)
    operator = DML_OPERATOR_DESC(Desc=OPERATOR_DESC_CLASSES[op](**tensors, **attrs))
    device.execute(operator, dict(zip(ins, raws)), {k: r for k, (_, _, r) in out_raws.items()})
    v = device.CreateOperator(operator).validated.values
    want = REGISTRY[op].module.reference(v, inputs)
    dtype = np_dtype(dt)
    if op == OP.DML_OPERATOR_ROI_ALIGN_GRAD:
        exact = roi_align_grad_float64(v, inputs)
        dy = np.abs(inputs["InputGradientTensor"].astype(np.float64)).max()
        x = inputs.get("InputTensor")
        xmax = 1.0 if x is None else np.abs(x.astype(np.float64)).max()
        # Magnitudes: the sum of |dy| over the regions (each spreads at most its dy); for the ROI
        # gradient, |dy| · 2 max|x| · the spatial scale, summed over every output of a region.
        magnitude = {"OutputGradientTensor": dy * inputs["InputGradientTensor"][:, 0].size,
                     "OutputROIGradientTensor": dy * 2 * xmax * max(attrs["SpatialScaleX"],
                                                                    attrs["SpatialScaleY"])
                     * inputs["InputGradientTensor"][0].size}
    elif op != OP.DML_OPERATOR_ROI_POOLING:
        exact = {"OutputTensor": roi_align_float64(v, inputs)}
        magnitude = {"OutputTensor": max(np.abs(inputs["InputTensor"].astype(float)).max(),
                                         abs(attrs["OutOfBoundsInputValue"]))}
    for name, (sizes, strides, raw) in out_raws.items():
        got = logical(raw, dtype, sizes, strides)
        expected = np.asarray(want[name])
        assert got.shape == expected.shape
        if op == OP.DML_OPERATOR_ROI_POOLING:
            same = got.view(f"u{dtype.itemsize}") == \
                np.ascontiguousarray(expected).view(f"u{dtype.itemsize}")
            assert same.all(), (attrs, inputs["ROITensor"], got[~same], expected[~same])
        else:
            want64 = exact[name].reshape(sizes)
            ok = within_bound(got, want64, magnitude[name])
            assert ok.all(), (name, attrs, got[~ok], want64[~ok])
            if measure is not None:
                measure.append((ulps(got, want64).max(), np.abs(
                    got.astype(np.float64) - want64).max() / magnitude[name]))
        untouched = ~addressed_mask(raw.size, dtype.itemsize, sizes, strides)
        assert (raw[untouched] == SENTINEL).all(), "a gap of the output was written"


def type_cases():
    out = []
    for row in ROWS:
        for dt in band_types(row.operator, "InputTensor" if row.operator !=
                             OP.DML_OPERATOR_ROI_ALIGN_GRAD else "InputGradientTensor"):
            indices = [None] if row.operator == OP.DML_OPERATOR_ROI_POOLING else \
                band_types(row.operator, "BatchIndicesTensor")
            out += [(row.operator, dt, i) for i in indices]
    return out


CASES = type_cases()


def test_every_band_type_is_covered():
    """FLOAT32 and FLOAT16 everywhere; UINT32 and UINT64 batch indices for ROI_ALIGN(1), UINT32
    for the GRAD (its band)."""
    assert {(op.name[13:], dt.name[21:], i and i.name[21:]) for op, dt, i in CASES} == {
        ("ROI_POOLING", "FLOAT32", None), ("ROI_POOLING", "FLOAT16", None),
        *((op, f, i) for op in ("ROI_ALIGN", "ROI_ALIGN1") for f in ("FLOAT32", "FLOAT16")
          for i in ("UINT32", "UINT64")),
        ("ROI_ALIGN_GRAD", "FLOAT32", "UINT32"), ("ROI_ALIGN_GRAD", "FLOAT16", "UINT32")}


@pytest.mark.parametrize("op,dt,index_dt", CASES,
                         ids=[f"{o.name[13:]}-{d.name[21:]}-{i.name[21:] if i else ''}"
                              for o, d, i in CASES])
def test_kernel_matches_the_reference(device, op, dt, index_dt):
    rng = np.random.default_rng(zlib.crc32(f"{op.name}{dt.name}{index_dt}".encode()))
    for _ in range(12):
        run_case(device, rng, op, dt, index_dt)


def test_the_bound_can_fail():
    """The comparison rejects a value 2 ULPs off, and accepts the value rounded once."""
    want = np.array([1.0 + 2.0**-30, 3.0])
    got = want.astype(np.float32)
    assert within_bound(got, want, 0.0).all()
    got[0] = np.nextafter(np.nextafter(got[0], np.float32(2)), np.float32(2))
    assert not within_bound(got, want, 0.0)[0]


# --- the pages' example and hand-computed vectors ---------------------------------------------

PAGE_INPUT = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
PAGE_ROIS = np.array([[0, 0, 2, 2], [2, 0, 4, 2], [0, 2, 2, 4], [2, 2, 4, 4]], np.float32)


def align1(x, rois, batches, out_sizes, **attrs):
    base = {"ReductionFunction": AVERAGE, "InterpolationMode": LINEAR, "SpatialScaleX": 1.0,
            "SpatialScaleY": 1.0, "InputPixelOffset": 0.5, "OutputPixelOffset": -0.5,
            "OutOfBoundsInputValue": 0.0, "MinimumSamplesPerOutput": 1,
            "MaximumSamplesPerOutput": 1, "AlignRegionsToCorners": False}
    base.update(attrs)
    dt = F16 if x.dtype == np.float16 else F32
    return DML_OPERATOR_DESC(Desc=DML_ROI_ALIGN1_OPERATOR_DESC(
        InputTensor=desc(dt, x.shape), ROITensor=desc(dt, rois.shape),
        BatchIndicesTensor=desc(U64 if batches.dtype == np.uint64 else U32, batches.shape),
        OutputTensor=desc(dt, out_sizes), **base))


def align(x, rois, batches, out_sizes, **attrs):
    base = {"ReductionFunction": AVERAGE, "InterpolationMode": LINEAR, "SpatialScaleX": 1.0,
            "SpatialScaleY": 1.0, "OutOfBoundsInputValue": 0.0, "MinimumSamplesPerOutput": 1,
            "MaximumSamplesPerOutput": 1}
    base.update(attrs)
    dt = F16 if x.dtype == np.float16 else F32
    return DML_OPERATOR_DESC(Desc=DML_ROI_ALIGN_OPERATOR_DESC(
        InputTensor=desc(dt, x.shape), ROITensor=desc(dt, rois.shape),
        BatchIndicesTensor=desc(U64 if batches.dtype == np.uint64 else U32, batches.shape),
        OutputTensor=desc(dt, out_sizes), **base))


def grad(x_sizes, dy, rois, batches, with_input=True, roi_gradient=True, **attrs):
    base = {"ReductionFunction": AVERAGE, "InterpolationMode": LINEAR, "SpatialScaleX": 1.0,
            "SpatialScaleY": 1.0, "InputPixelOffset": 0.5, "OutputPixelOffset": -0.5,
            "MinimumSamplesPerOutput": 1, "MaximumSamplesPerOutput": 1,
            "AlignRegionsToCorners": False}
    base.update(attrs)
    return DML_OPERATOR_DESC(Desc=DML_ROI_ALIGN_GRAD_OPERATOR_DESC(
        InputTensor=desc(F32, x_sizes) if with_input else None,
        InputGradientTensor=desc(F32, dy.shape), ROITensor=desc(F32, rois.shape),
        BatchIndicesTensor=desc(U32, batches.shape), OutputGradientTensor=desc(F32, x_sizes),
        OutputROIGradientTensor=desc(F32, rois.shape) if roi_gradient else None, **base))


@pytest.mark.parametrize("dt", [np.float32, np.float16])
def test_grad_page_example_forward(device, dt):
    """The ROI_ALIGN_GRAD page's forward ROI_ALIGN1: nearest neighbour, 1.5x wide, 0.5x high,
    one sample per element (0.5 and 2.5 lie halfway: the lower element)."""
    batches = np.zeros(4, np.uint32)
    for op in (align1, align):
        [y] = device.execute(op(PAGE_INPUT.astype(dt), PAGE_ROIS.astype(dt), batches,
                                (4, 1, 1, 3), InterpolationMode=NEAREST), [
            PAGE_INPUT.astype(dt), PAGE_ROIS.astype(dt), batches])
        assert y.reshape(4, 3).tolist() == [[1, 1, 2], [3, 3, 4], [9, 9, 10], [11, 11, 12]]


def test_grad_page_example_backward(device):
    dy = np.arange(1, 13, dtype=np.float32).reshape(4, 1, 1, 3)
    batches = np.zeros(4, np.uint32)
    for with_input in (True, False):
        op = grad((1, 1, 4, 4), dy, PAGE_ROIS, batches, with_input=with_input,
                  roi_gradient=with_input, InterpolationMode=NEAREST)
        ins = [PAGE_INPUT if with_input else None, dy, PAGE_ROIS, batches]
        dx = device.execute(op, ins)[0]
        assert dx.reshape(4, 4).tolist() == [[3, 3, 9, 6], [0, 0, 0, 0], [15, 9, 21, 12],
                                             [0, 0, 0, 0]]


def test_roi_align_bilinear_by_hand(device):
    """One 2x2 cell of [0.5, 0.5, 2.5, 2.5] over a 3x3 input (pixel centres at 0.5 + k):
    ROI_ALIGN's samples lie at index coordinates 0.5 and 1.5; with Maximum 1 each output is one
    bilinear sample, the mean of 4 elements; with Minimum 2 (2 samples per axis) they are at
    0.25, 0.75, 1.25, 1.75."""
    x = np.array([[0, 1, 2], [10, 11, 12], [20, 21, 22]], np.float32).reshape(1, 1, 3, 3)
    rois = np.array([[0.5, 0.5, 2.5, 2.5]], np.float32)
    batches = np.zeros(1, np.uint32)
    [y] = device.execute(align(x, rois, batches, (1, 1, 2, 2)), [x, rois, batches])
    assert y.reshape(2, 2).tolist() == [[5.5, 6.5], [15.5, 16.5]]
    # 2 samples per axis: the mean over {0.25, 0.75} of rows and columns is again 0.5.
    [y] = device.execute(align(x, rois, batches, (1, 1, 2, 2), MinimumSamplesPerOutput=2,
                               MaximumSamplesPerOutput=4), [x, rois, batches])
    assert y.reshape(2, 2).tolist() == [[5.5, 6.5], [15.5, 16.5]]
    # MAX of the 4 samples of the first cell: (0.75, 0.75) = 0.25·0 + ... = 7.5 + 0.75 = 8.25.
    [y] = device.execute(align(x, rois, batches, (1, 1, 2, 2), MinimumSamplesPerOutput=2,
                               MaximumSamplesPerOutput=4, ReductionFunction=MAXIMUM),
                         [x, rois, batches])
    assert y.reshape(2, 2).tolist() == [[8.25, 9.25], [18.25, 19.25]]


def test_roi_pooling_by_hand(device):
    """Region [1, 0, 3, 2] of a 4x5 input (batch 1), SpatialScale 1, pooled 2x2: RegionHeight 3,
    RegionWidth 3; rows [0, 2) and [1, 3), columns [1, 3) and [2, 4)."""
    x = np.zeros((2, 1, 4, 5), np.float32)
    x[1, 0] = np.arange(20).reshape(4, 5)
    rois = np.array([[1, 1, 0, 3, 2]], np.float32).reshape(1, 1, 1, 5)
    op = DML_OPERATOR_DESC(Desc=DML_ROI_POOLING_OPERATOR_DESC(
        InputTensor=desc(F32, x.shape), ROITensor=desc(F32, rois.shape),
        OutputTensor=desc(F32, (1, 1, 2, 2)), SpatialScale=1.0,
        PooledSize=DML_SIZE_2D(Width=2, Height=2)))
    [y] = device.execute(op, [x, rois])
    assert y.reshape(2, 2).tolist() == [[7, 8], [12, 13]]


def pool(device, x, rois, pooled, scale=1.0):
    op = DML_OPERATOR_DESC(Desc=DML_ROI_POOLING_OPERATOR_DESC(
        InputTensor=desc(F32, x.shape), ROITensor=desc(F32, rois.shape),
        OutputTensor=desc(F32, (rois.shape[2], x.shape[1], *pooled)), SpatialScale=scale,
        PooledSize=DML_SIZE_2D(Width=pooled[1], Height=pooled[0])))
    [y] = device.execute(op, [x, rois])
    return y


def test_roi_pooling_rounds_half_away_and_clamps(device):
    """x·0.5 = 1.5 rounds to 2 and -0.5 to -1 (half away from zero); the region [-1, 2] is
    clamped to the input: its first bin [-1, 1) reads only row and column 0."""
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    rois = np.array([[0, -1, -1, 3, 3]], np.float32).reshape(1, 1, 1, 5)
    y = pool(device, x, rois, (2, 2), scale=0.5)
    # Corners (-1, -1) and (2, 2): 4 wide, bins [-1, 1) → [0, 1) and [1, 3). (Half to even
    # would give corners (0, 0) and (2, 2), bins [0, 2) and [1, 3): 5 first.)
    assert y.reshape(2, 2).tolist() == [[0, 2], [8, 10]]


def test_roi_pooling_edge_regions(device):
    """Outside the input: every bin is empty (0); reversed: one element (x1, y1) (region size
    max(…, 1)); BatchID -1, 2 (= BatchCount), NaN: 0; BatchID 1.9: batch 1 (truncated); a NaN in
    a bin loses to the numbers; a NaN corner converts to 0."""
    x = np.arange(32, dtype=np.float32).reshape(2, 1, 4, 4)
    x[0, 0, 0, 0] = np.nan
    rows = [[0, 10, 10, 12, 12], [0, 3, 2, 1, 0], [-1, 0, 0, 3, 3], [2, 0, 0, 3, 3],
            [np.nan, 0, 0, 3, 3], [1.9, 0, 0, 0, 0], [0, 0, 0, 1, 0], [0, 1, 0, np.nan, 0]]
    rois = np.array(rows, np.float32).reshape(1, 1, -1, 5)
    y = pool(device, x, rois, (1, 1)).ravel()
    assert y.tolist() == [0, 11, 0, 0, 0, 16, 1, 1]


def test_roi_pooling_all_nan_bin_is_nan(device):
    x = np.full((1, 1, 2, 2), np.nan, np.float32)
    rois = np.array([[0, 0, 0, 1, 1]], np.float32).reshape(1, 1, 1, 5)
    assert np.isnan(pool(device, x, rois, (1, 1))).all()


# --- edge regions and batch indices (decisions) -------------------------------------------------

def test_outside_regions_and_batches_read_the_out_of_bounds_value(device):
    """A region far outside reads only OutOfBoundsInputValue; so does a region whose batch index
    is outside the input (UINT32 max, UINT64 max, BatchCount); a NaN corner makes every sample
    outside; a region overlapping the edge blends the value into its bilinear samples."""
    x = np.ones((2, 1, 4, 4), np.float32)
    rois = np.array([[10, 10, 12, 12], [0, 0, 4, 4], [0, 0, 4, 4], [np.nan, 0, 4, 4],
                     [-1, 1.5, 1, 2.5]], np.float32)
    for batches in (np.array([0, 2, 2**32 - 1, 0, 0], np.uint32),
                    np.array([0, 2**64 - 1, 7, 1, 1], np.uint64)):
        [y] = device.execute(align(x, rois, batches, (5, 1, 1, 1), OutOfBoundsInputValue=-3.0),
                             [x, rois, batches])
        # The last region's one sample at (x, y) = (-0.5, 1.5): half of it reads outside.
        assert y.ravel().tolist() == [-3, -3, -3, -3, -1]


def test_empty_and_reversed_regions(device):
    """An empty region: every output reads the one point; a reversed region: the output is
    mirrored."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
    batches = np.zeros(1, np.uint32)
    rois = np.array([[2.25, 1.5, 2.25, 1.5]], np.float32)
    [y] = device.execute(align1(x, rois, batches, (1, 2, 3, 3)), [x, rois, batches])
    assert (y.reshape(2, 9) == y.reshape(2, 9)[:, :1]).all()
    fwd = np.array([[0.5, 1.0, 4.5, 4.0]], np.float32)
    rev = np.array([[4.5, 4.0, 0.5, 1.0]], np.float32)
    for interp in (LINEAR, NEAREST):  # steps 1 and 1.5: exact, so the mirror is exact
        attrs = {"InterpolationMode": interp, "InputPixelOffset": 0.0, "OutputPixelOffset": 0.0,
                 "AlignRegionsToCorners": True}
        [a] = device.execute(align1(x, fwd, batches, (1, 2, 3, 5), **attrs), [x, fwd, batches])
        [b] = device.execute(align1(x, rev, batches, (1, 2, 3, 5), **attrs), [x, rev, batches])
        np.testing.assert_array_equal(np.asarray(b), np.asarray(a)[..., ::-1, ::-1])


def test_align_regions_to_corners_is_crop_and_resize(device):
    """TensorFlow's CropAndResize through ROI_ALIGN1 (SpatialScale = size - 1, offsets 0, corners
    aligned, one sample): the whole-image box reproduces the input; a 1x1 crop samples the
    centre."""
    x = np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4)
    batches = np.zeros(2, np.uint32)
    rois = np.array([[0, 0, 1, 1], [0, 0, 1, 1]], np.float32)
    attrs = {"SpatialScaleX": 3.0, "SpatialScaleY": 2.0, "InputPixelOffset": 0.0,
             "OutputPixelOffset": 0.0, "AlignRegionsToCorners": True}
    [y] = device.execute(align1(x, rois, batches, (2, 1, 3, 4), **attrs), [x, rois, batches])
    np.testing.assert_array_equal(np.asarray(y), np.concatenate([x, x]))
    [y] = device.execute(align1(x, rois, batches, (2, 1, 1, 1), **attrs), [x, rois, batches])
    assert y.ravel().tolist() == [5.5, 5.5]  # (1.5, 1) → row 1, columns 1 and 2


def test_sample_counts_follow_the_ratio_clamped():
    """S = clamp(ceil(size / OutputSize), Minimum, Maximum), at least 1; a NaN ratio takes
    Minimum; the samples of an output are out·S … out·S + S - 1."""
    v = SimpleNamespace(MinimumSamplesPerOutput=0, MaximumSamplesPerOutput=UINT_MAX,
                        InputPixelOffset=0.5, OutputPixelOffset=-0.5,
                        AlignRegionsToCorners=False)
    assert axis_samples(0.0, 5.0, 1.0, 2, v).positions.shape == (2, 3)  # ceil(2.5)
    assert axis_samples(0.0, 0.0, 1.0, 2, v).positions.shape == (2, 1)  # 0 → at least 1
    assert axis_samples(np.nan, 0.0, 1.0, 2, v).positions.shape == (2, 1)
    v.MaximumSamplesPerOutput = 2
    s = axis_samples(0.0, 5.0, 1.0, 2, v)
    assert s.positions.tolist() == [[0.125, 1.375], [2.625, 3.875]]  # (s + 0.5)·1.25 - 0.5


def test_nan_values_lose_in_max_and_spread_in_average(device):
    x = np.array([[np.nan, 1], [2, 3]], np.float32).reshape(1, 1, 2, 2)
    rois = np.array([[0, 0, 2, 2]], np.float32)
    batches = np.zeros(1, np.uint32)
    attrs = {"InterpolationMode": NEAREST, "MinimumSamplesPerOutput": 2,
             "MaximumSamplesPerOutput": 2}
    [y] = device.execute(align1(x, rois, batches, (1, 1, 1, 1), ReductionFunction=MAXIMUM,
                                **attrs), [x, rois, batches])
    assert y.ravel().tolist() == [3]
    [y] = device.execute(align1(x, rois, batches, (1, 1, 1, 1), **attrs), [x, rois, batches])
    assert np.isnan(y).all()


# --- the gradient ---------------------------------------------------------------------------

def test_input_gradient_is_the_adjoint_of_the_forward_pass(device):
    """<dy, ROI_ALIGN1(x)> = <OutputGradient, x> for AVERAGE and outside reads of 0 (the
    forward pass is linear in x), whatever the samples and regions."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    rois = np.array([[0.3, -0.7, 4.1, 3.9], [5.5, 4.2, 1.0, 0.5], [-2, -2, 8, 7]], np.float32)
    batches = np.array([1, 0, 1], np.uint32)
    dy = rng.standard_normal((3, 3, 2, 3)).astype(np.float32)
    for interp in (LINEAR, NEAREST):
        attrs = {"InterpolationMode": interp, "MinimumSamplesPerOutput": 1,
                 "MaximumSamplesPerOutput": 3, "InputPixelOffset": 0.25,
                 "OutputPixelOffset": -0.5}
        [y] = device.execute(align1(x, rois, batches, dy.shape, **attrs), [x, rois, batches])
        dx, _ = device.execute(grad(x.shape, dy, rois, batches, **attrs), [x, dy, rois, batches])
        lhs = float(np.sum(dy.astype(np.float64) * np.asarray(y, np.float64)))
        rhs = float(np.sum(np.asarray(dx, np.float64) * x.astype(np.float64)))
        assert abs(lhs - rhs) <= 1e-5 * np.abs(dy).sum() * np.abs(x).max()


def test_roi_gradient_is_the_derivative_of_the_forward_pass(device):
    """OutputROIGradientTensor against central differences of Σ dy · ROI_ALIGN1(x, regions)
    (float64 reference, bilinear, corners away from element centres so the sample counts and
    neighbours do not change), with and without corner alignment."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 6, 7)).astype(np.float32)
    rois = np.array([[0.61, 0.37, 4.83, 3.71], [5.13, 4.29, 1.07, 0.83]], np.float32)
    batches = np.zeros(2, np.uint32)
    dy = rng.standard_normal((2, 2, 2, 3)).astype(np.float32)
    for aligned, offsets in ((False, (0.5, -0.5)), (True, (0.0, 0.0))):
        attrs = {"MinimumSamplesPerOutput": 2, "MaximumSamplesPerOutput": 2,
                 "InputPixelOffset": offsets[0], "OutputPixelOffset": offsets[1],
                 "AlignRegionsToCorners": aligned, "SpatialScaleX": 1.25, "SpatialScaleY": 0.75}
        _, got = device.execute(grad(x.shape, dy, rois, batches, **attrs),
                                [x, dy, rois, batches])
        v = SimpleNamespace(OutputTensor=SimpleNamespace(sizes=dy.shape), OutOfBoundsInputValue=0.0,
                            ReductionFunction=AVERAGE, InterpolationMode=LINEAR, **attrs)

        def loss(r, v=v):
            y = roi_align_float64(v, {"InputTensor": x, "ROITensor": r,
                                      "BatchIndicesTensor": batches})
            return float(np.sum(y * dy))

        eps = 1e-6
        for r in range(2):
            for k in range(4):
                up, down = rois.astype(np.float64), rois.astype(np.float64)
                up[r, k] += eps
                down[r, k] -= eps
                numeric = (loss(up) - loss(down)) / (2 * eps)
                assert abs(got[r, k] - numeric) <= 1e-5 * (1 + abs(numeric)), (aligned, r, k)


def test_grad_regions_outside_the_batches_contribute_nothing(device):
    x = np.ones((1, 1, 3, 3), np.float32)
    dy = np.ones((2, 1, 1, 1), np.float32)
    rois = np.array([[0, 0, 3, 3], [0, 0, 3, 3]], np.float32)
    batches = np.array([0, 1], np.uint32)
    dx, droi = device.execute(grad(x.shape, dy, rois, batches), [x, dy, rois, batches])
    assert float(np.sum(dx)) == 1.0 and (droi[1] == 0).all()


def test_grad_max_sends_everything_to_the_maximum(device):
    """MAX: the whole gradient goes to the sample holding the maximum (here the element at
    (1, 1), read exactly by the nearest sample)."""
    x = np.array([[0, 1], [2, 9]], np.float32).reshape(1, 1, 2, 2)
    dy = np.full((1, 1, 1, 1), 4.0, np.float32)
    rois = np.array([[0, 0, 2, 2]], np.float32)
    batches = np.zeros(1, np.uint32)
    dx, _ = device.execute(grad(x.shape, dy, rois, batches, ReductionFunction=MAXIMUM,
                                InterpolationMode=NEAREST, MinimumSamplesPerOutput=2,
                                MaximumSamplesPerOutput=2), [x, dy, rois, batches])
    assert dx.reshape(2, 2).tolist() == [[0, 0], [0, 4]]


@pytest.mark.parametrize("function", [AVERAGE, MAXIMUM])
def test_a_huge_region_visits_only_its_samples_inside_the_input(device, function):
    """MaximumSamplesPerOutput = UINT_MAX (ONNX Runtime's adaptive sampling) with a corner at
    1e30: 2^32 - 1 samples per axis, almost all outside the input. Only those inside are visited
    (the rest read OutOfBoundsInputValue, counted, not iterated), so this returns at once: the
    average is the value, the maximum the larger of the value and the input's samples. A region
    twice the input's size is also checked against the sample-by-sample reference."""
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    batches = np.zeros(1, np.uint32)
    huge = np.array([[0, 0, 1e30, 1e30]], np.float32)
    op = align1(x, huge, batches, (1, 1, 1, 1), ReductionFunction=function,
                OutOfBoundsInputValue=-3.0, MaximumSamplesPerOutput=2**32 - 1)
    [y] = device.execute(op, [x, huge, batches])
    # The average of 1.8e19 samples, a handful inside: the value, after rounding to float32.
    # The maximum: the first sample (0.5 · 2.3e20 - 0.5 from the corner) lies outside too.
    assert y.ravel().tolist() == [-3.0]
    wide = np.array([[-4, -2, 4, 6]], np.float32)
    op = align1(x, wide, batches, (1, 1, 2, 2), ReductionFunction=function,
                OutOfBoundsInputValue=-3.0, MaximumSamplesPerOutput=2**32 - 1)
    [y] = device.execute(op, [x, wide, batches])
    v = device.CreateOperator(op).validated.values
    want = REGISTRY[OP.DML_OPERATOR_ROI_ALIGN1].module.reference(
        v, {"InputTensor": x, "ROITensor": wide, "BatchIndicesTensor": batches})["OutputTensor"]
    np.testing.assert_allclose(y, want, rtol=1e-6)
